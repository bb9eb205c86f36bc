"""The kernel package's own pieces against NumPy, SciPy or plain-Python twins: partition layout,
sum tables, dealing, the second marginal's moves, cell notes, prefetch hints, its cache."""

from __future__ import annotations

import os
import subprocess
import sys

import numba as nb
import numpy as np
import numpy.testing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import digamma

from depstat.count import kernels
from depstat.count.counting import jackknife_blocks
from depstat.tokenize.stream import TokenStream
from tests import naive
from tests.helpers import streams


@settings(max_examples=100, deadline=None)
@given(
    counts=st.lists(st.integers(1, 500), min_size=1, max_size=700).map(lambda c: sorted(c, reverse=True)),
    part_tokens=st.integers(1, 3000),
)
def test_partitions_cover_the_tokens_in_order(counts: list[int], part_tokens: int) -> None:
    """Consecutive token ids, at most 256 a partition, over the target only when one token is."""
    code, widths = kernels.partition_tokens(np.asarray(counts, dtype=np.int64), part_tokens)
    part, xloc = code >> kernels.XLOC_BITS, code & kernels.XLOC_MASK
    npt.assert_array_equal(np.bincount(part), widths)
    npt.assert_array_equal(xloc, np.concatenate([np.arange(w) for w in widths]))
    assert (widths <= 1 << kernels.XLOC_BITS).all()
    sizes = np.bincount(part, weights=counts)
    assert ((sizes <= part_tokens) | (widths == 1)).all()
    # a partition stops early only when the next token would not fit or it is full
    nxt = np.asarray(counts)[np.cumsum(widths)[:-1]]
    assert ((sizes[:-1] + nxt > part_tokens) | (widths[:-1] == 1 << kernels.XLOC_BITS)).all()


def test_grassberger_table_and_asymptotic_series_match_scipy() -> None:
    n = np.array([1, 2, 3, 7, 100, 65535, 65536, 65537, 10**6, 10**6 + 1, 2**40 + 3])
    got = np.array([kernels.common._cell_sums(int(k), kernels.SUM_TABLES) for k in n])  # (n ln n, n G(n))
    npt.assert_allclose(got[:, 1], n * naive.grassberger_g(n), rtol=1e-13)
    npt.assert_allclose(got[:, 0], n * np.log(n.astype(float)), rtol=1e-13)
    # Grassberger (2003): G(1) = -gamma - ln 2 and G(2) = G(1) + 2.
    g1 = digamma(1) - np.log(2)
    assert abs(kernels.common._cell_sums(1, kernels.SUM_TABLES)[1] - g1) < 1e-14
    assert abs(kernels.common._cell_sums(2, kernels.SUM_TABLES)[1] / 2 - (g1 + 2)) < 1e-14


def assert_dealt_once_each_and_balanced(deal: np.ndarray, sizes: list[int]) -> list[int]:
    """Every item in exactly one bin, each bin's items before its -1s, no bin over its share
    plus the largest item (greedy on the largest first); returns the bins' loads."""
    assert sorted(deal[deal >= 0]) == list(range(len(sizes)))
    for row in deal:
        assert (row[: (row >= 0).sum()] >= 0).all() and (row[(row >= 0).sum() :] < 0).all()
    loads = [sum(sizes[g] for g in row if g >= 0) for row in deal]
    assert max(loads) <= sum(sizes) / len(deal) + max(sizes)
    return loads


@given(st.lists(st.integers(0, 10**6), max_size=300), st.integers(1, 70))
def test_deal_equals_its_naive_twin(sizes: list[int], n_bins: int) -> None:
    """The heap's deal is the rule's: the same bin for every item, in the same order (ties included)."""
    npt.assert_array_equal(kernels.common._deal(np.array(sizes, dtype=np.int64), n_bins), naive.deal(sizes, n_bins))


@given(st.lists(st.integers(1, 1000), min_size=1, max_size=30), st.integers(1, 8))
def test_blocks_are_dealt_once_each_and_balanced(sizes: list[int], n_workers: int) -> None:
    assert_dealt_once_each_and_balanced(kernels.common._deal_blocks(np.cumsum([0, *sizes]), n_workers), sizes)


@given(st.lists(st.integers(0, 5000), min_size=1, max_size=200), st.integers(1, 8))
def test_partitions_are_dealt_to_fixed_chunks_then_to_workers(sizes: list[int], n_workers: int) -> None:
    """Each partition in one chunk whatever the worker count (the chunks' sums are added in
    chunk order), each chunk to one worker, both balanced by pairs."""
    region = np.cumsum([0, *sizes[:-1]])[:, None]
    fill_end = region + np.asarray(sizes)[:, None]
    chunks, workers = kernels.common._deal_partitions(region, fill_end, n_workers)
    assert chunks.shape[0] == kernels.N_CHUNKS
    loads = assert_dealt_once_each_and_balanced(chunks, sizes)
    assert_dealt_once_each_and_balanced(workers, loads)
    npt.assert_array_equal(chunks, kernels.common._deal_partitions(region, fill_end, 1)[0])


@settings(max_examples=80, deadline=None)
@given(
    stream=streams(max_len=60),
    offsets=st.lists(st.integers(1, 50), min_size=1, max_size=8, unique=True),
    n_blocks=st.integers(1, 5),
    follow=st.booleans(),
)
def test_partner_moves_follow_the_second_marginal(
    stream: TokenStream, offsets: list[int], n_blocks: int, follow: bool,
) -> None:
    """The real pairs' per-block second marginal moved from no pairs to each ascending offset
    in turn (``partner_runs``, ``move_partners``; blocks of whole documents or cutting them)
    equals its twin, and its sums, followed through the moves or taken again, equal the
    twin's."""
    block_starts, _ = jackknife_blocks(stream.doc_lengths, n_blocks)
    doc_ends = np.cumsum(stream.doc_lengths)
    tokens = stream.tokens.astype(np.uint16)  # the partitioned kernels' tokens
    rows = np.zeros((len(block_starts) - 1, stream.vocab_size), dtype=np.int32)
    sums, deltas = np.zeros(3), np.zeros((len(rows), 3))
    before, pairs = -1, np.zeros(len(rows), dtype=np.int64)
    for j, r in enumerate(sorted(offsets)):
        runs = kernels.partner_runs(doc_ends, block_starts, before, r)
        pairs = pairs + kernels.move_partners(tokens, runs, rows, kernels.SUM_TABLES, True, follow and j > 0,
                                              sums, deltas)
        want = naive.second_marginal(stream.tokens, stream.doc_lengths, block_starts, r, stream.vocab_size)
        npt.assert_array_equal(rows, want)
        npt.assert_array_equal(pairs, want.sum(axis=1))
        if not (follow and j > 0):
            sums, deltas = (a[0] for a in kernels.row_sums(rows[None], kernels.SUM_TABLES, True))
        want_sums, want_deltas = naive.row_sums(want)
        npt.assert_allclose(sums, want_sums, rtol=1e-10, atol=1e-8)
        npt.assert_allclose(deltas, want_deltas, rtol=1e-10, atol=1e-8)
        before = r


def test_a_cell_past_note_pairs_in_one_block_is_counted_block_by_block() -> None:
    """A token's pairs are taken pair by pair only while the note can count them: a cell
    of more than NOTE_PAIRS pairs in one block, in a token under LISTED_PAIRS x blocks
    pairs, goes block by block and its deletion deltas stay exact."""
    n_blocks, big, small = 2000, kernels.NOTE_PAIRS + 5000, 10
    assert big + small < kernels.LISTED_PAIRS * n_blocks
    src = np.r_[np.zeros(big), np.ones(small)].astype(np.uint16)  # cell 0 in block 5, cell 1 in block 7
    blk = np.r_[np.full(big, 5), np.full(small, 7)].astype(np.uint16)
    cell = np.zeros(3, dtype=np.int64)  # two partner tokens and the sentinel's cell
    hit, touched = np.empty(3, dtype=np.uint16), np.empty(3, dtype=np.uint16)
    jk = np.zeros((n_blocks, kernels.N_SUMS))
    assert not kernels.partition._pair_by_pair(src.size, n_blocks)
    assert kernels.partition._pair_by_pair(kernels.NOTE_PAIRS - 1, n_blocks)
    n_t = kernels.partition._count_cells(src, 0, src.size, cell, touched, 0)
    kernels.partition._block_runs(src, blk, 0, src.size, cell, hit, kernels.SUM_TABLES, jk)
    assert n_t == 2 and (cell[:2] & kernels.CELL_TOTAL).tolist() == [big, small]
    both = naive.sums_of(np.array([big, small]))
    want = np.zeros_like(jk)
    want[5] = naive.sums_of(np.array([0, small])) - both
    want[7] = naive.sums_of(np.array([big, 0])) - both
    npt.assert_allclose(jk, want, rtol=1e-12, atol=1e-6)


@nb.njit
def _fill_with_hints(out: np.ndarray, ahead: int) -> None:
    for i in range(out.shape[0]):
        out[i] = i
        kernels.common._prefetch_write(out, i + ahead)


@pytest.mark.parametrize("ahead", [kernels.PREFETCH_AHEAD, 1 << 40, -(1 << 40)])
def test_prefetch_hints_change_nothing_even_far_past_the_array(ahead: int) -> None:
    """emit_pairs asks for lines past a partition's end (and past the buffer's): the hint
    must neither fault nor write."""
    out = np.zeros(300, dtype=np.uint16)
    _fill_with_hints(out, ahead)
    npt.assert_array_equal(out, np.arange(300))


def test_a_change_to_any_kernel_file_drops_the_package_cache(tmp_path) -> None:
    """Numba checks only a kernel's own file against its cache; the package keeps a digest of all its
    files beside the cache and drops every cached kernel of its modules when the digest differs."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    run = [sys.executable, "-c", "import depstat.count.kernels"]
    subprocess.run(run, env=env, check=True)
    (folder,) = [p.parent for p in tmp_path.rglob("depstat-kernels.digest")]
    digest = (folder / "depstat-kernels.digest").read_text()
    kept_aside, current = folder / "other.helper-1.py311.nbi", folder / "emit.kernel-1.py311.nbi"
    for path in (kept_aside, current):
        path.write_bytes(b"")
    subprocess.run(run, env=env, check=True)
    assert current.exists() and kept_aside.exists()  # same sources: the cache stands
    (folder / "depstat-kernels.digest").write_text("an older version")
    subprocess.run(run, env=env, check=True)
    assert not current.exists() and kept_aside.exists()  # another package's cache is not touched
    assert (folder / "depstat-kernels.digest").read_text() == digest
