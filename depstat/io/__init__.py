"""Reading corpora: Documents from files, datasets and token ids (corpus), each format opened and checked (formats), seeded samples (sampling)."""
