"""Synthetic generators with a known dependency scale: latent blocks, arithmetic, Markov text, tree text."""

from __future__ import annotations

import collections
import json
import re
from pathlib import Path

import numpy as np
import pytest

from depstat.errors import DepstatError
from depstat.estimate.profile import mi_profile
from depstat.synth import (
    MODULUS,
    TEXT_ALPHABET,
    TREE_ALPHABET,
    TREE_WINDOW_LEVELS,
    arithmetic_jsonl,
    arithmetic_problems,
    block_exact_mi,
    block_sequences,
    markov_text,
    text_chain,
    tree_exact_mi,
    tree_text,
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


def test_tree_text_uses_its_alphabet_length_and_seed() -> None:
    docs = tree_text(3, depth=8, seed=2)
    assert [len(d) for d in docs] == [256] * 3
    assert set("".join(docs)) <= set(TREE_ALPHABET)
    assert docs == tree_text(3, depth=8, seed=2) and docs != tree_text(3, depth=8, seed=3)
    for bad in ({"depth": 0}, {"keep": 1.5}, {"favourite": 1.0}):
        with pytest.raises(DepstatError):
            tree_text(1, **bad)
    for offsets, keep in (([0], 0.9), ([4096], 0.9), ([1], 1.5)):
        with pytest.raises(DepstatError):
            tree_exact_mi(np.array(offsets), keep=keep)


def _tree_mi_by_enumeration(d: int, depth: int, keep: float) -> float:
    """The MI of characters d apart, every window start and position enumerated, from the joint
    distribution built level by level: the symbol of every node as a distribution over its
    ancestor's (a second way to the answer)."""
    size, n, leaves = len(TREE_ALPHABET), 1 << depth, 1 << (depth + TREE_WINDOW_LEVELS)
    step = keep * np.eye(size) + (1 - keep) / size  # one level down
    down = {0: np.eye(size)}  # down[h]: P(symbol at a node h levels below | its ancestor's)
    for h in range(1, depth + TREE_WINDOW_LEVELS + 1):
        down[h] = down[h - 1] @ step
    heights = collections.Counter(((s + p) ^ (s + p + d)).bit_length()
                                  for s in range(leaves - n + 1) for p in range(n - d))
    joint = sum(k * down[h].T @ np.diag(np.full(size, 1 / size)) @ down[h] for h, k in heights.items())
    joint /= joint.sum()
    indep = np.outer(joint.sum(1), joint.sum(0))
    return float(np.sum(joint * np.log2(joint / indep)))


@pytest.mark.parametrize("d", [1, 3, 8, 50])
def test_tree_exact_mi_matches_the_joint_built_level_by_level(d: int) -> None:
    assert tree_exact_mi(np.array([d]), depth=7, keep=0.8)[0] == pytest.approx(
        _tree_mi_by_enumeration(d, 7, 0.8), rel=1e-9)


def test_tree_exact_mi_is_a_power_law_by_construction() -> None:
    offsets = np.unique(np.geomspace(4, 1024, 25).astype(int))
    mi = tree_exact_mi(offsets)
    slopes = -np.diff(np.log(mi)) / np.diff(np.log(offsets))
    quarters = [slopes[i : i + 6].mean() for i in range(0, len(slopes) - 5, 6)]
    assert 0.35 < min(quarters) and max(quarters) < 0.6 and max(quarters) - min(quarters) < 0.12


def test_tree_text_byte_profile_is_its_exact_mi_and_the_favourite_adds_a_floor() -> None:
    offsets = [1, 4, 16, 64, 256, 1024]
    profiles = []
    for favourite in (0.0, 0.3):
        docs = tree_text(150, favourite=favourite, seed=4)
        tokens = np.frombuffer("".join(docs).encode("ascii"), dtype=np.uint8)
        stream = TokenStream("bytes", tokens, np.full(150, 4096), vocab_size=256)
        table, _ = mi_profile(stream, offsets)
        profiles.append(table)
    mi, low, high = (profiles[0][c].to_numpy() for c in ("mi_bits", "ci_low", "ci_high"))
    exact = tree_exact_mi(np.array(offsets))
    assert np.all((low - 0.005 <= exact) & (exact <= high + 0.005)), (mi, exact)
    # a document-wide favourite symbol: every pair of a document shares it, far pairs too
    assert profiles[1]["mi_bits"].to_numpy()[-1] > mi[-1] + 0.05


def test_cli_writes_tree_text_and_rejects_a_length_that_is_not_a_power_of_two(tmp_path: Path, capsys) -> None:
    from depstat.cli import main

    out = tmp_path / "tree.jsonl"
    assert main(["synth", "tree-text", str(out), "--docs", "3", "--doc-len", "256", "--seed", "5"]) == 0
    texts = [json.loads(line)["text"] for line in out.read_text("utf-8").splitlines()]
    assert texts == tree_text(3, depth=8, seed=5)
    assert main(["synth", "tree-text", str(tmp_path / "bad.jsonl"), "--doc-len", "1000"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err and "power of two" in err[0] and "Traceback" not in "".join(err)
    assert not (tmp_path / "bad.jsonl").exists()
