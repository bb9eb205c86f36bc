"""Tokenizing: granularities from bytes to BPE and words (granularity), the on-disk cache (cache), the token-stream type (stream)."""
