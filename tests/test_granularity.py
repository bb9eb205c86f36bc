"""Granularities: one BPE training serves every vocabulary size of the ladder."""

from __future__ import annotations

import gzip
import json
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from depstat.io.corpus import Document
from depstat.tokenize.granularity import (
    Refinement,
    encode_stream,
    round_trips,
    text_streams,
    train_bpe,
    train_words,
    truncate_bpe,
)
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
    assert cache.counts["shards_encoded"] == 1  # the largest only: the others are cut from its tokens
    for name, size in (("bpe-300", 300), ("bpe-600", 600), ("bpe-1k", 1024)):
        alone = next(text_streams(lambda: iter(docs), [name]))
        assert streams[name].vocab_size == size
        assert (streams[name].tokens == alone.tokens).all() and (streams[name].doc_lengths == alone.doc_lengths).all()


def test_round_trips_is_measured_on_the_texts_and_recorded_per_granularity() -> None:
    """Byte-level BPE and bytes give back every text; words drop whitespace (and map unseen words
    to [UNK]), so on text with runs of spaces or newlines they do not. A tokenizer that happens to
    give back these texts (single spaces, every word seen) is recorded as doing so."""
    texts = ["def f(x):\n    return  x\n", "a  b\n\nc", *_docs_text(10)]
    docs = [Document(text=t, source="x", line=i + 1) for i, t in enumerate(texts)]
    streams = {s.name: s for s in text_streams(lambda: iter(docs), ["bytes", "bpe-300", "words"])}
    assert streams["bytes"].info["round_trips"] and streams["bpe-300"].info["round_trips"]
    assert streams["words"].info["round_trips"] is False
    plain = ["one two three", "two three one"]
    assert round_trips(train_words(plain), plain) and not round_trips(train_words(plain), ["one four"])
    assert round_trips(train_bpe(texts, 300), ["unseen: ü ✓  \t\n"]) and round_trips(None, texts)


def test_a_model_tokenizer_is_checked_as_the_streams_encode_and_normalising_ones_fail(tmp_path) -> None:
    """A tokenizer.json whose post-processor adds a start token round-trips (the streams encode
    without special tokens, and so does the check); one that lower-cases its input does not."""
    from tokenizers import normalizers, processors

    texts = _docs_text(10)
    docs = [Document(text=t, source="x", line=i + 1) for i, t in enumerate(texts)]
    bos = train_bpe(texts, 300)
    bos.add_special_tokens(["<s>"])
    bos.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", bos.token_to_id("<s>"))])
    lower = train_bpe(texts, 300)
    lower.normalizer = normalizers.Lowercase()
    paths = []
    for name, tok in (("bos", bos), ("lower", lower)):
        path = tmp_path / name / "tokenizer.json"
        path.parent.mkdir()
        tok.save(str(path))
        paths.append(str(path))
    assert bos.encode(texts[0]).ids[0] == bos.token_to_id("<s>")  # the post-processor is there
    got = [s.info["round_trips"] for s in text_streams(lambda: iter(docs), [], paths)]
    assert got == [True, False]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(st.text(st.characters(codec="utf-8"), max_size=300), min_size=1, max_size=12),
       seed=st.integers(0, 2**31), small=st.integers(257, 500))
def test_a_smaller_bpe_cut_from_a_larger_ones_tokens_equals_encoding_the_text(texts: list[str], seed: int,
                                                                              small: int) -> None:
    """Refinement: the larger BPE's stream split token by token equals the smaller BPE's own
    encoding, on any UTF-8 text (empty documents included), for vocabularies trained on other text."""
    rng = random.Random(seed)
    training = _docs_text(5) + ["".join(rng.choice("ab cé€😀\n") for _ in range(200)) for _ in range(5)]
    big = train_bpe(training, 700)
    fine = truncate_bpe(big, small)
    derived = Refinement(big, fine).stream("bpe", encode_stream("big", texts, big), chunk_docs=3)
    direct = encode_stream("bpe", texts, fine)
    assert derived.vocab_size == direct.vocab_size and derived.tokens.dtype == direct.tokens.dtype
    assert (derived.tokens == direct.tokens).all() and (derived.doc_lengths == direct.doc_lengths).all()
    assert derived.n_bytes == direct.n_bytes
