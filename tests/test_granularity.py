"""Granularities: one BPE training serves every vocabulary size of the ladder."""

from __future__ import annotations

import gzip
import json
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from depstat.io.corpus import Document
from depstat.tokenize.granularity import text_streams, train_bpe, truncate_bpe
from tests.conftest import EXAMPLE


def _docs_text(n: int) -> list[str]:
    with gzip.open(EXAMPLE, "rt", encoding="utf-8") as f:
        return [json.loads(line)["text"] for line, _ in zip(f, range(n))]


def test_a_cut_vocabulary_is_the_vocabulary_trained_at_that_size() -> None:
    texts = _docs_text(30)
    big = train_bpe(texts, 4096)
    for size in (257, 300, 1000, 2500, 4096):
        assert truncate_bpe(big, size).to_str() == train_bpe(texts, size).to_str()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), letters=st.integers(2, 6), small=st.integers(257, 400))
def test_cutting_matches_training_on_repetitive_text(seed: int, letters: int, small: int) -> None:
    """Few letters make merges that rebuild a token already made, and many ties in the counts."""
    rng = random.Random(seed)
    alphabet = "abcdef"[:letters] + " "
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(20, 400))) for _ in range(40)]
    big = train_bpe(texts, 600)
    assert truncate_bpe(big, small).to_str() == train_bpe(texts, small).to_str()


def test_a_ladder_trains_its_largest_bpe_only_and_encodes_as_separate_trainings(tmp_path) -> None:
    from depstat.tokenize.cache import TokenCache

    texts = _docs_text(25)
    docs = [Document(text=t, source="x", line=i + 1) for i, t in enumerate(texts)]
    cache = TokenCache(tmp_path / "cache")
    streams = {s.name: s for s in text_streams(lambda: iter(docs), ["bpe-300", "bpe-1k", "bpe-600"], cache=cache)}
    assert cache.counts["tokenizers_trained"] == 1
    for name, size in (("bpe-300", 300), ("bpe-600", 600), ("bpe-1k", 1024)):
        alone = next(text_streams(lambda: iter(docs), [name]))
        assert streams[name].vocab_size == size
        assert (streams[name].tokens == alone.tokens).all() and (streams[name].doc_lengths == alone.doc_lengths).all()
