"""Synthetic generators with a known dependency scale: latent blocks, arithmetic, Markov text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from depstat.errors import DepstatError
from depstat.estimate.profile import mi_profile
from depstat.io.synth import (
    MODULUS,
    TEXT_ALPHABET,
    arithmetic_jsonl,
    arithmetic_problems,
    block_exact_mi,
    block_sequences,
    markov_text,
    text_chain,
    write_jsonl,
)
from depstat.tokenize.stream import TokenStream

SMALL = {"vocab": 64, "states": 8}  # 4096 joint cells: estimates settle with ~300k pairs

LET_CONST = re.compile(r"Let ([a-z]+) = (\d+)\.")
LET_OP = re.compile(r"Let ([a-z]+) = ([a-z]+) ([-+*]) ([a-z]+|\d+)\.")
QUESTION = re.compile(r"What is ([a-z]+)\? Answer: (\d+)\.")


def test_block_sequences_shape_dtype_vocab_and_name() -> None:
    s = block_sequences(7, 100, block=8, vocab=64, states=8, seed=3)
    assert isinstance(s, TokenStream)
    assert s.name == "blocks-B8"
    assert s.tokens.dtype == np.uint8 and s.n_tokens == 700  # the smallest type for 64 ids
    assert s.doc_lengths.tolist() == [100] * 7
    assert s.tokens.min() >= 0 and s.tokens.max() < 64 and s.vocab_size == 64
    assert s.info["true_scale"] == 8


def test_block_sequences_is_deterministic_in_seed() -> None:
    a, b, c = (block_sequences(5, 200, 16, seed=k) for k in (1, 1, 2))
    assert np.array_equal(a.tokens, b.tokens)
    assert not np.array_equal(a.tokens, c.tokens)


def test_block_sequences_short_documents_and_block_one() -> None:
    s = block_sequences(3, 5, block=1, vocab=16, states=4)
    assert s.n_tokens == 15
    assert block_sequences(2, 3, block=50).n_tokens == 6


@pytest.mark.parametrize(
    "kwargs", [{"block": 0}, {"states": 0}, {"states": 300}, {"copy": 1.5}, {"noise": -0.1}]
)
def test_block_sequences_rejects_bad_parameters(kwargs: dict) -> None:
    args = {"block": 4, **kwargs}
    with pytest.raises(DepstatError):
        block_sequences(2, 10, **args)


def test_block_exact_mi_is_a_function_of_r_over_b_and_zero_from_2b() -> None:
    assert np.allclose(block_exact_mi(4, [1, 2, 4, 6]), block_exact_mi(16, [4, 8, 16, 24]))
    assert np.all(block_exact_mi(8, [16, 17, 40, 1000]) == 0)
    mi = block_exact_mi(8, np.arange(1, 16))
    assert mi[7] > mi[6] and mi[7] > mi[8]  # the copy spike at r = B
    assert np.all(np.diff(mi[:7]) < 0) and np.all(np.diff(mi[8:]) < 0)


def test_block_exact_mi_without_copies_has_no_spike() -> None:
    mi = block_exact_mi(8, [7, 8, 9], copy=0.0)
    assert mi[0] > 0 and mi[1] == 0 and mi[2] == 0


@pytest.mark.parametrize("block", [4, 16])
def test_block_profile_matches_exact_mi_and_vanishes_beyond_2b(block: int) -> None:
    stream = block_sequences(300, 1024, block, seed=1, **SMALL)
    offsets = [1, block // 2, block, 3 * block // 2, 3 * block, 4 * block]
    table, skipped = mi_profile(stream, offsets, interval=False)
    assert skipped == []
    mi = dict(zip(table["offset"].to_list(), table["mi_bits"].to_list()))
    exact = dict(zip(offsets, block_exact_mi(block, offsets, **SMALL)))
    assert mi[block] > 0.5
    for r in offsets:
        assert abs(mi[r] - exact[r]) < 0.02, (r, mi[r], exact[r])
    assert abs(mi[3 * block]) < 0.01 and abs(mi[4 * block]) < 0.01


def _check_problem(line: str) -> int:
    """Re-evaluate one problem mod 23 from its text; return its number of operations."""
    sentences = re.findall(r"Let [^.]*\.|What is [^.]*\.", line)
    assert " ".join(sentences) == line
    first = LET_CONST.fullmatch(sentences[0])
    assert first is not None
    values = {first[1]: int(first[2])}
    previous = first[1]
    for sentence in sentences[1:-1]:
        m = LET_OP.fullmatch(sentence)
        assert m is not None, sentence
        name, left, op, right = m.groups()
        assert name not in values and left == previous
        a, b = values[left], values[right] if right.isalpha() else int(right)
        assert 0 <= b < MODULUS
        values[name] = {"+": a + b, "-": a - b, "*": a * b}[op] % MODULUS
        previous = name
    q = QUESTION.fullmatch(sentences[-1])
    assert q is not None and q[1] == previous
    assert int(q[2]) == values[previous]
    return len(sentences) - 2


def test_arithmetic_answers_are_exact_and_op_counts_in_range() -> None:
    docs = arithmetic_problems(4, seed=5, n_ops=(3, 7), doc_chars=3000)
    counts = [_check_problem(line) for doc in docs for line in doc.split("\n")]
    assert min(counts) >= 3 and max(counts) <= 7
    assert set(counts) == set(range(3, 8))
    assert all(len(doc) >= 3000 and doc.isascii() for doc in docs)


def test_arithmetic_is_deterministic_and_rejects_bad_ranges() -> None:
    assert arithmetic_problems(2, seed=1) == arithmetic_problems(2, seed=1)
    assert arithmetic_problems(2, seed=1) != arithmetic_problems(2, seed=2)
    for bad in [(0, 3), (5, 4), (2, 26)]:
        with pytest.raises(DepstatError):
            arithmetic_problems(1, n_ops=bad)


def test_markov_text_uses_its_alphabet_and_seed() -> None:
    docs = markov_text(3, 500, seed=2)
    assert [len(d) for d in docs] == [500] * 3
    assert set("".join(docs)) <= set(TEXT_ALPHABET)
    assert docs == markov_text(3, 500, seed=2) and docs != markov_text(3, 500, seed=3)


def test_markov_text_byte_profile_is_the_chain_exact_mi() -> None:
    docs = markov_text(200, 1000, seed=0)
    tokens = np.frombuffer("".join(docs).encode("ascii"), dtype=np.uint8)
    stream = TokenStream("bytes", tokens, np.full(200, 1000), vocab_size=256)
    offsets = [1, 8, 64, 256]
    table, _ = mi_profile(stream, offsets, interval=False)
    assert np.allclose(table["mi_bits"].to_numpy(), text_chain().exact_mi(offsets), atol=0.03)


def test_jsonl_round_trip(tmp_path: Path) -> None:
    texts = markov_text(2, 50) + ['quote " slash \\ newline\n', "é"]
    path = write_jsonl(tmp_path / "t.jsonl", texts)
    assert [json.loads(line)["text"] for line in path.read_text("utf-8").splitlines()] == texts
    path = arithmetic_jsonl(tmp_path / "a.jsonl", 3, seed=4, doc_chars=500)
    records = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    assert [r["text"] for r in records] == arithmetic_problems(3, seed=4, doc_chars=500)
