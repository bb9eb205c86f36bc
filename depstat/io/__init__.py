"""Reading corpora: files, datasets and token ids (corpus), seeded samples (sampling), sources of known structure (synth)."""
