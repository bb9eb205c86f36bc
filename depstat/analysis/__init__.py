"""From a profile to advice: the kernel's kind and W (dependency), self-similarity (selfsim), the RoPE base and extension (recommend), the typed Analysis (result)."""
