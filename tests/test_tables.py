"""The count-table engine (depstat.count.tables) against the NumPy twins, in one process."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import numpy.testing as npt
from hypothesis import given, settings
from hypothesis import strategies as st

from depstat.count import kernels
from depstat.count.counting import PARTNER_MODES, jackknife_blocks, partner_seed
from depstat.count.distributed import shards
from depstat.count.tables import (
    CountTable,
    combine,
    merge,
    range_sums,
    shard_tables,
    split,
    swept_range_sums,
)
from tests import naive
from tests.helpers import assert_sums_equal, streams


@settings(max_examples=60, deadline=None)
@given(
    stream=streams(),
    r=st.integers(1, 30),
    further=st.lists(st.integers(1, 40), min_size=1, max_size=3, unique=True),
    n_blocks=st.integers(2, 5),
    n_ranges=st.integers(1, 3),
    chunk=st.integers(1, 50),
)
def test_swept_null_equals_a_recount_at_each_offset(stream, r, further, n_blocks, n_ranges, chunk) -> None:
    """``swept_range_sums``: the null's sums at r from its tables, and at each larger offset
    by taking out, in turn, the pairs each drops, per first-token range (its tables
    handed to the kernel ``chunk`` entries at a time), equal a recount at every offset."""
    block_starts, _ = jackknife_blocks(stream.doc_lengths, n_blocks)
    ends = np.cumsum(stream.doc_lengths)
    shift, v, mode = max(stream.n_tokens // 2, 1), stream.vocab_size, PARTNER_MODES["rotate"]
    n_blocks = len(block_starts) - 1
    larger = [r + f for f in sorted(further)]  # each set: the pairs one offset drops and the one before keeps
    slots = [(r, mode, 0)] + [(u0, mode, 0, u) for u0, u in zip([r] + larger, larger)]
    per_block = [shard_tables(stream.tokens, lo, hi, ends, slots, shift, v) for lo, hi in
                 zip(block_starts[:-1], block_starts[1:])]
    edges = np.unique(np.linspace(0, v, n_ranges + 1).astype(np.int64)) * v
    cut = [[split(t, edges) for t in block] for block in per_block]  # [block][slot][range]
    parts = [swept_range_sums([cut[g][0][q] for g in range(n_blocks)],
                              [[cut[g][k][q] for g in range(n_blocks)] for k in range(1, len(slots))], v,
                              chunk=chunk)
             for q in range(len(edges) - 1)]
    for k, (_, _, _, *upto) in enumerate(slots):
        want = naive.naive_sums(stream.tokens, stream.doc_lengths, v, upto[0] if upto else r, "rotate",
                                block_starts, shift, 0)
        assert_sums_equal(combine([p[k] for p in parts]), want)
    point = swept_range_sums([cut[g][0][0] for g in range(n_blocks)],
                             [[cut[g][k][0] for g in range(n_blocks)] for k in range(1, len(slots))], v,
                             jackknife=False, chunk=chunk)  # point only: the same sums, no deltas
    for k, sums in enumerate(point):  # (a sum that cancels to 0 may differ by rounding: atol)
        npt.assert_allclose(sums.joint, parts[0][k].joint, rtol=1e-12, atol=1e-12)
        assert not sums.joint_jk.any() and not sums.first_jk.any()


@settings(max_examples=80, deadline=None)
@given(
    stream=streams(),
    r=st.integers(1, 45),
    partner=st.sampled_from(["real", "rotate", "iid"]),
    n_blocks=st.integers(2, 5),
    shard_size=st.integers(1, 60),
    part=st.one_of(st.none(), st.integers(1, 40)),
    chunk=st.integers(1, 50),
)
def test_sharded_tables_summed_per_range_match_naive(stream, r, partner, n_blocks, shard_size, part, chunk) -> None:
    """Shards of any size, in any order, give the sums and deltas of a direct recount, with
    the tables handed to the kernels whole or ``chunk`` entries at a time."""
    block_starts, _ = jackknife_blocks(stream.doc_lengths, n_blocks)
    bounds = shards(stream.doc_lengths, block_starts, shard_size)
    assert set(block_starts) <= set(bounds)
    ends = np.cumsum(stream.doc_lengths)
    shift = max(stream.n_tokens // 2, 1)
    seed = partner_seed(3, r)
    slot = (r, PARTNER_MODES[partner], seed)
    pieces, piece_blocks = [], []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        g = np.searchsorted(block_starts, lo, side="right") - 1
        assert hi <= block_starts[g + 1]  # a shard never straddles a block
        pieces += shard_tables(stream.tokens, lo, hi, ends, [slot], shift, stream.vocab_size, part)
        piece_blocks.append(g)
    order = np.random.default_rng(shard_size).permutation(len(pieces))  # pieces arrive in any order
    pieces, piece_blocks = [pieces[i] for i in order], [piece_blocks[i] for i in order]
    n_blocks = len(block_starts) - 1
    v = stream.vocab_size
    want = naive.naive_sums(stream.tokens, stream.doc_lengths, v, r, partner, block_starts, shift, seed)
    whole = range_sums(pieces, piece_blocks, n_blocks, v)
    assert_sums_equal(combine([whole]), want)
    assert_sums_equal(combine([range_sums(pieces, piece_blocks, n_blocks, v, chunk=chunk)]), want)
    # The same from first-token ranges counted apart (as Dask tasks do) and combined.
    edges = np.unique(np.r_[0, np.sort(np.random.default_rng(r).integers(0, v + 1, 3)), v]) * v
    cut = [split(p, edges) for p in pieces]
    parts = [range_sums([c[q] for c in cut], piece_blocks, n_blocks, v) for q in range(len(edges) - 1)]
    assert_sums_equal(combine(parts), want)
    # The same from one table per block, each merged from its shards' pieces (as the Dask graph does).
    merged = [merge([p for p, b in zip(pieces, piece_blocks) if b == g], v, chunk) for g in range(n_blocks)]
    assert_sums_equal(combine([range_sums(merged, list(range(n_blocks)), n_blocks, v)]), want)
    point = range_sums(pieces, piece_blocks, n_blocks, v, jackknife=False)  # point only: no deltas
    npt.assert_array_equal(point.joint, whole.joint)
    assert not point.joint_jk.any() and not point.first_jk.any()
    lean = range_sums(pieces, piece_blocks, n_blocks, v, first_marginal=False)  # the first marginal left out
    assert np.isnan(lean.first).all() and np.isnan(lean.first_jk).all()
    npt.assert_array_equal(lean.joint, whole.joint)
    npt.assert_array_equal(lean.joint_jk, whole.joint_jk)
    npt.assert_array_equal(lean.second_counts, whole.second_counts)


@settings(max_examples=60, deadline=None)
@given(
    stream=streams(),
    r=st.integers(1, 30),
    further=st.integers(1, 40),
    n_blocks=st.integers(2, 5),
    shard_size=st.integers(1, 60),
    part=st.one_of(st.none(), st.integers(1, 40)),
    chunk=st.integers(1, 50),
)
def test_null_at_a_larger_offset_is_its_table_less_the_dropped_pairs(stream, r, further, n_blocks, shard_size,
                                                                     part, chunk) -> None:
    """The rotation null at r + further from its tables at r less those of the pairs r + further
    drops (taken out per block, as the Dask graph does): the sums and deltas of a recount."""
    block_starts, _ = jackknife_blocks(stream.doc_lengths, n_blocks)
    bounds = shards(stream.doc_lengths, block_starts, shard_size)
    ends = np.cumsum(stream.doc_lengths)
    shift, v, mode = max(stream.n_tokens // 2, 1), stream.vocab_size, PARTNER_MODES["rotate"]
    n_blocks = len(block_starts) - 1
    held, dropped = [[] for _ in range(n_blocks)], [[] for _ in range(n_blocks)]
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        g = np.searchsorted(block_starts, lo, side="right") - 1
        table, drops = shard_tables(stream.tokens, lo, hi, ends, [(r, mode, 0), (r, mode, 0, r + further)], shift, v,
                                    part)
        held[g].append(table)
        dropped[g].append(drops)
    tables = [merge(t, v, chunk) for t in held] + [merge(t, v, chunk) for t in dropped]
    got = range_sums(tables, list(range(n_blocks)) * 2, n_blocks, v, taken_out=[False] * n_blocks + [True] * n_blocks,
                     chunk=chunk)
    want = naive.naive_sums(stream.tokens, stream.doc_lengths, v, r + further, "rotate", block_starts, shift, 0)
    assert_sums_equal(combine([got]), want)


@settings(max_examples=80, deadline=None)
@given(
    stream=streams(),
    r=st.integers(1, 45),
    partner=st.sampled_from(["real", "rotate", "iid"]),
    cut=st.tuples(st.floats(0, 1), st.floats(0, 1)),
    part=st.one_of(st.none(), st.integers(1, 80)),
    upto=st.one_of(st.just(0), st.integers(1, 60)),
)
def test_shard_table_holds_each_cell_once_grouped_by_first_token(stream, r, partner, cut, part, upto) -> None:
    """A shard's table against np.unique of its pairs, counted in a dense table (part None)
    or in partitions of any size: same cells and counts, x ascending. With ``upto``, the
    pairs at r of the positions that have no partner ``upto`` on (none when upto <= r)."""
    lo, hi = sorted(int(c * stream.n_tokens) for c in cut)
    shift, seed, v = max(stream.n_tokens // 2, 1), partner_seed(5, r), stream.vocab_size
    slot = (r, PARTNER_MODES[partner], seed, upto)
    (table,) = shard_tables(stream.tokens, lo, hi, np.cumsum(stream.doc_lengths), [slot], shift, v, part)
    assert_recount(table, stream, lo, hi, slot, shift)


@settings(max_examples=80, deadline=None)
@given(
    stream=streams(),
    offsets=st.lists(st.integers(1, 45), min_size=1, max_size=4, unique=True),
    partners=st.lists(st.sampled_from(["real", "rotate", "iid"]), min_size=1, max_size=3, unique=True),
    upto=st.lists(st.integers(1, 60), max_size=3),
    cut=st.tuples(st.floats(0, 1), st.floats(0, 1)),
    part=st.one_of(st.none(), st.integers(1, 80)),
)
def test_slots_counted_in_one_pass_equal_a_recount_of_each(stream, offsets, partners, upto, cut, part) -> None:
    """Several slots at once, in any order of offsets, in a dense table (part None: real slots
    two a pass) or in partitions of any size (the pass that every slot counting all its pairs
    shares, beside slots of dropped pairs only): each slot's table holds the cells and counts
    of a recount of that slot alone."""
    lo, hi = sorted(int(c * stream.n_tokens) for c in cut)
    shift, v = max(stream.n_tokens // 2, 1), stream.vocab_size
    slots = [(r, PARTNER_MODES[p], partner_seed(5, r)) for r in offsets for p in partners]
    slots += [(offsets[0], PARTNER_MODES["rotate"], 0, u) for u in upto]
    tables = shard_tables(stream.tokens, lo, hi, np.cumsum(stream.doc_lengths), slots, shift, v, part)
    assert len(tables) == len(slots)
    for slot, table in zip(slots, tables):
        assert_recount(table, stream, lo, hi, tuple(slot) + (0,) * (4 - len(slot)), shift)


def assert_recount(table: CountTable, stream, lo: int, hi: int, slot: tuple[int, int, int, int], shift: int) -> None:
    """``table`` holds np.unique of the slot's pairs of positions lo:hi, grouped by first token, ascending."""
    r, mode, seed, upto = slot
    partner = {m: name for name, m in PARTNER_MODES.items()}[mode]
    v = stream.vocab_size
    p = naive.pair_positions(stream.doc_lengths, r)
    if upto:
        p = np.setdiff1d(p, naive.pair_positions(stream.doc_lengths, upto))
    p = p[(p >= lo) & (p < hi)]
    y = stream.tokens[naive.partner_positions(p, r, partner, shift, stream.n_tokens, seed)]
    want_keys, want_counts = np.unique(stream.tokens[p].astype(np.int64) * v + y, return_counts=True)
    assert np.all(np.diff(table.keys // v) >= 0)
    order = np.argsort(table.keys)
    npt.assert_array_equal(table.keys[order], want_keys)
    npt.assert_array_equal(table.counts[order], want_counts)


@settings(max_examples=100, deadline=None)
@given(parts=st.lists(st.lists(st.integers(0, 6 * 7 - 1), max_size=40), min_size=1, max_size=5), seed=st.integers(0, 99))
def test_merge_adds_counts_cell_by_cell(parts: list[list[int]], seed: int) -> None:
    """Tables with their partners in any order within a first token merge to np.unique of all their pairs."""
    v = 7

    def table_of(keys: list[int]) -> CountTable:
        uniq, counts = np.unique(np.asarray(keys, dtype=np.int64), return_counts=True)
        order = np.lexsort((np.random.default_rng(seed).random(uniq.size), uniq // v))  # x ascending, y shuffled
        return CountTable(uniq[order], counts[order].astype(np.int64))

    got = merge([table_of(p) for p in parts], v)
    assert np.all(np.diff(got.keys // v) >= 0)
    want = table_of([k for p in parts for k in p])
    order = np.argsort(got.keys)
    npt.assert_array_equal(got.keys[order], np.sort(want.keys))
    npt.assert_array_equal(got.counts[order], want.counts[np.argsort(want.keys)])


@settings(max_examples=100, deadline=None)
@given(
    counts=st.lists(st.integers(0, 70_000), min_size=1, max_size=20),
    share=st.floats(0, 1),
)
def test_count_sums_and_deltas_match_numpy(counts: list[int], share: float) -> None:
    """The vector kernels behind table_sums, across the table/asymptotic boundary at 2^16."""
    totals = np.asarray(counts, dtype=np.int64)
    parts = np.floor(totals * share).astype(np.int64)
    npt.assert_allclose(kernels.count_sums(totals, kernels.SUM_TABLES), naive.sums_of(totals), rtol=1e-12)
    want = naive.sums_of(totals - parts) - naive.sums_of(totals)
    npt.assert_allclose(kernels.count_deltas(totals, parts, kernels.SUM_TABLES), want, rtol=1e-9, atol=1e-6)


def test_shards_cut_at_document_ends_inside_blocks() -> None:
    lengths = np.full(100, 50)
    block_starts, unit = jackknife_blocks(lengths, 5)
    assert unit == "documents"
    bounds = shards(lengths, block_starts, 120)
    ends = set(np.cumsum(lengths)) | {0}
    assert set(bounds) <= ends and set(block_starts) <= set(bounds)
    assert np.diff(bounds).max() <= 150


def test_many_slots_at_once_equal_one_at_a_time() -> None:
    """Twelve slots counted together in dense tables equal each counted alone in partitions of 7 positions."""
    rng = np.random.default_rng(7)
    lengths = rng.integers(1, 300, 40)
    tok = rng.integers(0, 50, int(lengths.sum())).astype(np.uint8)
    ends = np.cumsum(lengths)
    slots = [(r, mode, partner_seed(0, r)) for r in (1, 2, 5, 30, 100, 250) for mode in (0, 1)]
    lo, hi = int(ends[3]), int(ends[30])
    together = shard_tables(tok, lo, hi, ends, slots, len(tok) // 2, 50)  # one dense table a slot
    for slot, got in zip(slots, together):
        (want,) = shard_tables(tok, lo, hi, ends, [slot], len(tok) // 2, 50, part=7)
        order = np.argsort(want.keys)  # partitions list a first token's partners as first seen
        npt.assert_array_equal(got.keys, want.keys[order])
        npt.assert_array_equal(got.counts, want.counts[order])


THREADED_SHARDS = """
import threading
import os
import subprocess
import sys

import numpy as np
from depstat.count.tables import shard_tables
tok = np.random.default_rng(0).integers(0, 3000, 300_000).astype(np.uint16)
ends = np.cumsum(np.full(300, 1000))
spec = [(1, 0, 0), (2, 0, 0), (1, 1, 0), (1, 1, 0, 2)]  # real, rotation null, its dropped pairs
def tables(lo):
    return shard_tables(tok, lo, lo + 100_000, ends, spec, 150_000, 3000)
alone = {lo: tables(lo) for lo in (0, 100_000, 200_000)}  # one after another
same = []
def count(lo):
    for _ in range(5):
        same.append(all(np.array_equal(a.keys, b.keys) and np.array_equal(a.counts, b.counts)
                        for a, b in zip(tables(lo), alone[lo])))
threads = [threading.Thread(target=count, args=(lo,)) for lo in alone]
[t.start() for t in threads]
[t.join() for t in threads]
print(len(same), all(same), sum(len(t.keys) for ts in alone.values() for t in ts) > 0)
"""


def test_shard_tables_run_in_several_threads_at_once() -> None:
    """A Dask worker may run several shard tasks in threads at once: under Numba's workqueue
    threading layer, which aborts the process when two threads launch parallel kernels, they
    must still finish (the shard pass runs on the calling thread, ``kernels.emit_block``), each
    thread's tables equal to the same shards counted one after another."""
    env = {**os.environ, "NUMBA_THREADING_LAYER": "workqueue"}
    run = subprocess.run([sys.executable, "-c", THREADED_SHARDS], env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["15", "True", "True"]
