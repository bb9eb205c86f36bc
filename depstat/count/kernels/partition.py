"""Partitioned counting's second step: each partition's cells counted in a dense row and summed,
with the jackknife's per-block deltas (``partition_sums``)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from depstat.count.kernels.common import (
    N_CHUNKS,
    N_SUMS,
    _cell_sums,
    _deal_partitions,
    _drop_one,
    copy_2d,
    copy_3d,
    kernel,
    run_workers,
)
from depstat.count.kernels.emit import XLOC_MASK

# A token with this many pairs a block or more has its jackknife deltas taken over listed
# cells, a lookup per (cell, block); a rarer one pair by pair, a lookup per pair
# (``_pair_by_pair``). In draft timings of partition_sums at 1M and 10M tokens of BPE-8k and 32k:
# 32 to 256 alike, 4 slower at 10M, pair by pair for every token slower at 10M.
LISTED_PAIRS = 64


# The partitioned kernel keeps each partner's cell in one int64: its total over all blocks in
# the low 32 bits and, above them, what the jackknife's second pass counts: ``_pair_deltas``'
# note (the block + 1 in 15 bits, the cell's pairs so far in that block in 16) or
# ``_block_deltas``' count of the block's pairs. One random access a pair where there were
# two or three arrays (totals, notes, block counts), and one write to reset a cell.
CELL_BITS = 32


CELL_TOTAL = (1 << CELL_BITS) - 1


NOTE_BLOCKS = (1 << 15) - 1  # blocks the note holds


NOTE_PAIRS = (1 << 16) - 1  # pairs of a cell in one block the note holds


@kernel(inline="always")
def _count_cells(src, a, b, counts, listed, n_listed, shift=0):
    """counts[y] += 1 << shift for each y in src[a:b], listing each y whose count above bit
    ``shift`` leaves 0; returns the list's length."""
    for i in range(a, b):
        y = src[i]
        m = counts[y]
        listed[n_listed] = y
        n_listed += (m >> shift) == 0  # the slot is overwritten unless y is new: no branch
        counts[y] = m + (1 << shift)
    return n_listed


@kernel(inline="always")
def _block_deltas(src, a, b, g, cell, hit, tables, jk):
    """Add to ``jk[g]`` the change of the joint sums when block g's pairs ``src[a:b]`` are deleted.

    ``cell`` holds the token's cell totals over all blocks in its low bits (CELL_TOTAL);
    the block's pairs of each cell are counted above them, each cell then looked up once
    and its count taken off again.
    """
    n_hit = _count_cells(src, a, b, cell, hit, 0, CELL_BITS)  # the block's pairs, above the totals
    sentinel = cell.shape[0] - 1  # dropped pairs' cell, not a table cell
    d0, d1, emptied = 0.0, 0.0, 0
    for h in range(n_hit):
        y = hit[h]
        c = cell[y]
        m = c >> CELL_BITS
        t = c & CELL_TOTAL
        cell[y] = t
        if y == sentinel:
            continue
        after0, after1 = _cell_sums(t - m, tables)
        before0, before1 = _cell_sums(t, tables)
        d0 += after0 - before0
        d1 += after1 - before1
        emptied += m == t
    jk[g, 0] += d0
    jk[g, 1] += d1
    jk[g, 2] -= emptied


@kernel(inline="always")
def _pair_deltas(src, blk, a, b, cell, tables, jk):
    """Add to ``jk`` the change of the joint sums when each block is deleted, pair by pair,
    for one token's partners ``src[a:b]`` (fewer than NOTE_PAIRS) in block order (``blk``
    gives each one's block, under NOTE_BLOCKS).

    A cell with m of its t pairs in block g changes by f(t - m) - f(t) when g is deleted:
    the sum, over its k-th pair in the block (k = 1 .. m), of the change when a cell of
    t - k + 1 loses one, which one lookup gives. ``cell[y]`` holds t in its low 32 bits and
    the note ``((g + 1) << 16) | k`` above them (0 before the token's first pair; the caller
    resets the cell). No list of a block's cells and no branch where the block changes:
    the way for a rare token, with few pairs per block.
    """
    sentinel = cell.shape[0] - 1
    for i in range(a, b):
        y = src[i]
        if y == sentinel:
            continue
        g = np.int64(blk[i])
        c = cell[y]
        t = c & CELL_TOTAL
        note = c >> CELL_BITS
        k = (note & NOTE_PAIRS) * ((note >> 16) == g + 1) + 1  # the cell's pairs in block g so far, this one too
        cell[y] = ((((g + 1) << 16) | k) << CELL_BITS) | t
        v0, v1 = _drop_one(t - k + 1, tables)
        jk[g, 0] += v0
        jk[g, 1] += v1
        jk[g, 2] -= k == t


@kernel()
def _count_token(src, lo, hi, cell, hit, touched, tables, jk, jackknife):
    """Count one first token's partners, ``src[lo[g]:hi[g]]`` for each block g, into ``cell``
    (all zero before; the totals go to its low bits, CELL_TOTAL).

    With ``jackknife``, a second pass counts each block's cells (``_block_deltas``): with the
    totals known, each (cell, block) gives at once the change of the joint sums when the
    block is deleted, added to ``jk``. Returns the number of cells touched (listed in
    ``touched``, whose totals the caller reads, and cells it resets to zero).
    """
    n_t = 0
    for g in range(lo.shape[0]):
        n_t = _count_cells(src, lo[g], hi[g], cell, touched, n_t)
    if not jackknife:
        return n_t
    for g in range(lo.shape[0]):
        if lo[g] < hi[g]:
            _block_deltas(src, lo[g], hi[g], g, cell, hit, tables, jk)
    return n_t


@kernel(inline="always")
def _pair_by_pair(n_pairs: int, n_blocks: int) -> int:
    """Whether a token of ``n_pairs`` pairs (kept in block order) has its jackknife deltas
    taken pair by pair (``_pair_deltas``, a lookup per pair) rather than block by block
    (``_block_runs``, a lookup per (cell, block)): under LISTED_PAIRS pairs a block, and
    under NOTE_PAIRS, which the note can count. Either way only the blocks the token occurs
    in are visited, so a rare token costs O(its pairs), not O(blocks)."""
    return n_pairs < min(LISTED_PAIRS * n_blocks, NOTE_PAIRS)


@kernel()
def _block_runs(src, blk, a, b, cell, hit, tables, jk):
    """``_block_deltas`` for each block's run of one token's partners ``src[a:b]`` (block order, ``blk``)."""
    i = a
    while i < b:
        g = blk[i]
        j = i + 1
        while j < b and blk[j] == g:
            j += 1
        _block_deltas(src, i, j, g, cell, hit, tables, jk)
        i = j


@kernel(inline="always")
def _sort_partition(xloc, ys, life, region, fill_end, q, w, srt, lsrt, blk, starts, pos):
    """Counting sort of partition q's pairs by first token (w tokens), keeping block order.

    Token x's pairs go to ``srt[s, starts[x]:starts[x + 1]]`` for each process s, each
    pair's block to ``blk`` and, when ``life`` is not empty, its life to ``lsrt``.
    """
    n_blocks = region.shape[1]
    n_slots = ys.shape[0]
    starts[: w + 1] = 0
    for g in range(n_blocks):
        for i in range(region[q, g], fill_end[q, g]):
            starts[xloc[i] + 1] += 1
    for x in range(w):
        starts[x + 1] += starts[x]
    for x in range(w):
        pos[x] = starts[x]
    for g in range(n_blocks):
        for i in range(region[q, g], fill_end[q, g]):
            x = xloc[i]
            to = pos[x]
            pos[x] = to + 1
            blk[to] = g
            for s in range(n_slots):
                srt[s, to] = ys[s, i]
            if life.shape[0] > 0:
                lsrt[to] = life[i]


@kernel(inline="always")
def _largest_partition(region: np.ndarray, fill_end: np.ndarray) -> int:
    """Pairs in the largest partition (at least 1): the size of a worker's sort buffers."""
    largest = 1
    for q in range(region.shape[0]):
        largest = max(largest, fill_end[q, region.shape[1] - 1] - region[q, 0])
    return largest


class SumScratch(NamedTuple):
    """A worker's scratch arrays in ``partition_sums``: each partner's cell total (and jackknife
    note), the cells a token hit and touched, the partition's pairs sorted by first token with
    each pair's block, and the counting sort's starts and places."""

    cell: np.ndarray
    hit: np.ndarray
    touched: np.ndarray
    srt: np.ndarray
    blk: np.ndarray
    starts: np.ndarray
    pos: np.ndarray


@kernel()
def _partition_sums(xloc, ys, region, fill_end, w, q, tables, jackknife, scratch, sums, jk):
    """Add partition q's joint sums for every partner process to ``sums[s]``, its delete-one-block changes to ``jk[s]``.

    The partition holds w tokens; ``scratch`` is the worker's (``SumScratch``). A partition of
    one token is read in place, block by block; a wider one is first sorted by token with
    a counting sort that keeps block order and notes each pair's block in ``blk``.
    """
    cell, hit, touched, srt, blk, starts, pos = scratch
    n_slots = ys.shape[0]
    if w == 1:
        for s in range(n_slots):
            n_t = _count_token(ys[s], region[q], fill_end[q], cell, hit, touched, tables, jk[s], jackknife)
            _add_touched(sums[s], cell, touched, n_t, tables)
        return
    _sort_partition(xloc, ys, ys[0, :0], region, fill_end, q, w, srt, srt[0, :0], blk, starts, pos)
    for s in range(n_slots):
        src, slot_jk, slot_sums = srt[s], jk[s], sums[s]
        for x in range(w):  # calls only what Numba inlines, but _block_runs for frequent tokens: see ``kernel``
            a, b = starts[x], starts[x + 1]
            n_t = _count_cells(src, a, b, cell, touched, 0)
            if jackknife:
                if _pair_by_pair(b - a, jk.shape[1]):
                    _pair_deltas(src, blk, a, b, cell, tables, slot_jk)  # the cells are reset below
                else:
                    _block_runs(src, blk, a, b, cell, hit, tables, slot_jk)
            _add_touched(slot_sums, cell, touched, n_t, tables)


@kernel(inline="always")
def _add_touched(sums, cell, touched, n_t, tables):
    """Add the joint sums of the cells ``touched[:n_t]`` (totals in ``cell``'s low bits) to
    ``sums`` and reset them; the dropped pairs' cell (the sentinel, ``vocab``) is left out."""
    s0, s1, cells = 0.0, 0.0, n_t
    for j in range(n_t):
        y = touched[j]
        if y == cell.shape[0] - 1:
            cells -= 1
        else:
            v0, v1 = _cell_sums(cell[y] & CELL_TOTAL, tables)
            s0 += v0
            s1 += v1
        cell[y] = 0
    sums[0] += s0
    sums[1] += s1
    sums[2] += cells


def _chunk_totals(sums_c: np.ndarray, jk_c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The fixed chunks' sums and deltas added in chunk order (so the thread count changes nothing)."""
    sums, jk = np.zeros(sums_c.shape[1:]), np.zeros(jk_c.shape[1:])
    for c in range(sums_c.shape[0]):
        sums += sums_c[c]
        jk += jk_c[c]
    return sums, jk


def partition_sums(
    xloc: np.ndarray, ys: np.ndarray, region: np.ndarray, fill_end: np.ndarray, widths: np.ndarray,
    vocab: int, tables: np.ndarray, jackknife: bool, n_workers: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Sums of the joint table of each slot, and their change when each block is deleted.

    A partition of one token is read where ``emit_pairs`` left it (its pairs are already in
    block order); a wider one is first sorted by first token with a counting sort that
    keeps block order, once for all slots. Each token's partners are then counted in a
    dense array of length ``vocab`` + 1 and reset; the last cell takes the pairs a slot
    dropped (partner ``vocab``, see ``emit_pairs``) and is left out of the sums. Partitions
    are dealt to N_CHUNKS chunks whose results are added in order, so the sums do not
    depend on the thread count, and the chunks to ``n_workers`` workers, each with its own
    scratch arrays (``_deal_partitions``). Returns ``(joint[s], joint_jk[s])`` for each slot s.
    """
    n_blocks = region.shape[1]
    n_slots = ys.shape[0]
    chunks, workers = _deal_partitions(region, fill_end, n_workers)
    joint_c = np.zeros((N_CHUNKS, n_slots, N_SUMS))
    joint_jk_c = np.zeros((N_CHUNKS, n_slots, n_blocks, N_SUMS))
    run_workers(_partition_worker, n_workers, chunks, workers, xloc, ys, region, fill_end, widths, vocab, tables,
                jackknife, joint_c, joint_jk_c)
    return _chunk_totals(joint_c, joint_jk_c)


@kernel()
def _partition_worker(worker, chunks, workers, xloc, ys, region, fill_end, widths, vocab, tables, jackknife,
                      joint_c, joint_jk_c):
    """``partition_sums``' chunks dealt to ``worker``, each chunk's sums into ``joint_c[c]`` and ``joint_jk_c[c]``."""
    n_blocks = region.shape[1]
    n_slots = ys.shape[0]
    largest = _largest_partition(region, fill_end)
    scratch = SumScratch(
        np.zeros(vocab + 1, dtype=np.int64),  # + the sentinel's; see CELL_TOTAL
        np.empty(vocab + 1, dtype=ys.dtype),
        np.empty(vocab + 1, dtype=ys.dtype),  # lists of partner tokens, in their own dtype
        np.empty((n_slots, largest), dtype=ys.dtype),
        np.empty(largest, dtype=np.uint16),  # the block of each sorted pair
        np.empty(XLOC_MASK + 2, dtype=np.int64),  # token x's pairs are srt[:, starts[x]:starts[x + 1]]
        np.empty(XLOC_MASK + 2, dtype=np.int64),
    )
    for c in workers[worker]:
        if c < 0:
            break
        sums = np.zeros((n_slots, N_SUMS))  # the chunk's, away from other workers' cache lines
        jk = np.zeros((n_slots, n_blocks, N_SUMS))
        for q in chunks[c]:
            if q < 0:
                break
            _partition_sums(xloc, ys, region, fill_end, widths[q], q, tables, jackknife, scratch, sums, jk)
        copy_2d(joint_c[c], sums)
        copy_3d(joint_jk_c[c], jk)
