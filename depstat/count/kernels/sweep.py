"""The rotation null counted once and followed through the pairs each larger offset drops at
document ends (``null_sweep_sums``, ``drop_positions``, ``drop_sums``)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from depstat.count.kernels.common import (
    N_CHUNKS,
    N_SUMS,
    _cell_sums,
    _deal_partitions,
    _delta_change,
    _rotation_base,
    _sums_change,
    copy_2d,
    copy_3d,
    kernel,
    run_workers,
)
from depstat.count.kernels.emit import XLOC_MASK
from depstat.count.kernels.marginals import _columns_sums
from depstat.count.kernels.partition import (
    CELL_TOTAL,
    _block_runs,
    _chunk_totals,
    _count_cells,
    _largest_partition,
    _pair_by_pair,
    _pair_deltas,
    _sort_partition,
)


class SweepScratch(NamedTuple):
    """A worker's scratch arrays in ``null_sweep_sums``: each cell's total (and jackknife note),
    a cell's drops at one offset, the dying pairs in offset order, the cells a token touched,
    each dying cell's row, the dying cells, the dying pairs, and the counting sort's bins."""

    cell: np.ndarray
    run: np.ndarray
    order: np.ndarray
    touched: np.ndarray
    slot: np.ndarray
    cells: np.ndarray
    dying: np.ndarray
    bins: np.ndarray


@kernel()
def _sweep_partition(src, blk, life, starts, w, n_life, scratch, cb, tables, diff, jk_diff, jackknife):
    """The null pairs of one partition's w tokens, token x's in ``src[starts[x]:starts[x + 1]]``
    (block order): each token's joint sums at the first offset into ``diff[0]``/``jk_diff[0]``,
    then the deletion of the pairs whose life ends at each offset index j into
    ``diff[j]``/``jk_diff[j]`` (``_sweep_dying``). Returns ``cb``, grown if it had to be.
    The loop over tokens calls nothing Numba does not inline but ``_block_runs`` and
    ``_sweep_dying``, and those only for tokens that need them (see ``kernel``)."""
    cell, order, touched, slot, cells, dying = (scratch.cell, scratch.order, scratch.touched, scratch.slot,
                                                scratch.cells, scratch.dying)
    first, first_jk = diff[0], jk_diff[0]
    for x in range(w):
        a, b = starts[x], starts[x + 1]
        n_t = _count_cells(src, a, b, cell, touched, 0)
        if jackknife:
            if _pair_by_pair(b - a, jk_diff.shape[1]):
                _pair_deltas(src, blk, a, b, cell, tables, first_jk)
            else:
                _block_runs(src, blk, a, b, cell, order, tables, first_jk)
        _add_cells(first, cell, touched, n_t, tables)
        n_d, n_c = _dying_pairs(src, life, a, b, n_life, slot, cells, dying)
        if n_d > 0:
            cb = _sweep_dying(src, blk, life, a, b, n_d, n_c, n_life, scratch, cb, tables, diff, jk_diff, jackknife)
        for j in range(n_t):
            cell[touched[j]] = 0
    return cb


@kernel(inline="always")
def _add_cells(sums, cell, touched, n_t, tables):
    """Add the joint sums of the cells ``touched[:n_t]`` (totals in ``cell``'s low bits) to ``sums``."""
    s0, s1 = 0.0, 0.0
    for j in range(n_t):
        v0, v1 = _cell_sums(cell[touched[j]] & CELL_TOTAL, tables)
        s0 += v0
        s1 += v1
    sums[0] += s0
    sums[1] += s1
    sums[2] += n_t


@kernel(inline="always")
def _dying_pairs(src, life, a, b, n_life, slot, cells, dying):
    """List in ``dying`` the pairs of ``src[a:b]`` whose life ends before the last offset, and
    in ``cells`` their cells, each once (``slot[y]``: its number); returns the two counts."""
    n_d, n_c = np.int64(0), np.int64(0)  # not literal 0s: the caller compiles _sweep_dying once
    for i in range(a, b):
        if life[i] < n_life:
            dying[n_d] = i
            n_d += 1
            y = src[i]
            if slot[y] < 0:
                slot[y] = n_c
                cells[n_c] = y
                n_c += 1
    return n_d, n_c


class Leaving(NamedTuple):
    """The null sweep's state for one first token, both engines': each cell's ``total``, its
    pairs leaving at the offset being swept (``run``), the cells with such pairs (``listed``),
    and for each cell the sweep changes, its row (``slot``) of per-block ``parts`` and of
    ``pending``, its block's leaving pairs (rows of the blocks' count, both empty without
    the jackknife)."""

    total: np.ndarray
    run: np.ndarray
    listed: np.ndarray
    slot: np.ndarray
    parts: np.ndarray
    pending: np.ndarray


@kernel(inline="always")
def _take_out(y, g, c, n_blocks, at, n_p, jackknife):
    """The null sweep's step, both engines' (with ``_apply_drops``): ``c`` pairs of cell y, of
    block g, leave at the offset being swept (``at``, a ``Leaving``); a cell new at this
    offset is listed after the ``n_p`` listed. Returns their number."""
    if at.run[y] == 0:
        at.listed[n_p] = y
        n_p += 1
    at.run[y] += c
    if jackknife:
        at.pending[at.slot[y] * n_blocks + g] += c
    return n_p


@kernel(inline="always")
def _apply_drops(j, at, n_p, tables, diff, jk_diff, jackknife):
    """The cells ``at.listed[:n_p]`` lose the pairs ``_take_out`` gathered, at offset index j:
    the change of the joint sums goes to ``diff[j]`` (``_sums_change``) and, for each block g
    holding part c of a cell and d of its leaving pairs, the change of g's delete delta to
    ``jk_diff[j, g]`` (``_delta_change``); totals and parts go down, ``run`` and ``pending``
    back to zero."""
    total, run, listed, slot, parts, pending = at
    n_blocks = jk_diff.shape[1]
    for h in range(n_p):
        y = listed[h]
        t = total[y]
        t2 = t - run[y]
        run[y] = 0
        e0, e1, e2 = _sums_change(t, t - t2, tables)
        diff[j, 0] += e0
        diff[j, 1] += e1
        diff[j, 2] += e2
        total[y] = t2
        if not jackknife:
            continue
        k = slot[y] * n_blocks
        for g in range(n_blocks):
            c = parts[k + g]
            if c > 0:
                c2 = c - pending[k + g]
                e0, e1, e2 = _delta_change(t, c, t2, c2, tables)
                jk_diff[j, g, 0] += e0
                jk_diff[j, g, 1] += e1
                jk_diff[j, g, 2] += e2
                parts[k + g] = c2
                pending[k + g] = 0


@kernel()
def _sweep_dying(src, blk, life, a, b, n_d, n_c, n_life, scratch, cb, tables, diff, jk_diff, jackknife):
    """The deletion of one token's dying pairs (``_dying_pairs``: ``dying[:n_d]``, in the cells
    ``cells[:n_c]``) at the offset index where each one's life ends, all of a cell's there at
    once (``_take_out``, ``_apply_drops``), into ``diff[j]``/``jk_diff[j]``; the cells' totals
    in ``cell`` go down with them. Returns ``cb``, grown if it had to be; ``slot`` is reset."""
    cell, run, order, slot, cells, dying, bins = (scratch.cell, scratch.run, scratch.order, scratch.slot,
                                                  scratch.cells, scratch.dying, scratch.bins)
    n_blocks = jk_diff.shape[1]
    for e in range(n_c):  # the dying cells' totals, without the jackknife's notes
        cell[cells[e]] &= CELL_TOTAL
    if jackknife:  # the dying cells' pairs per block, and room for their drops at one offset
        if 2 * n_c * n_blocks > cb.shape[0]:
            cb = np.empty(4 * n_c * n_blocks, dtype=np.int32)
        cb[: 2 * n_c * n_blocks] = 0
        for i in range(a, b):
            k = slot[src[i]]
            if k >= 0:
                cb[k * n_blocks + blk[i]] += 1
    bins[: n_life + 1] = 0  # the dying pairs in order of their offset index: a counting sort
    for e in range(n_d):
        bins[life[dying[e]] + 1] += 1
    for j in range(n_life):
        bins[j + 1] += bins[j]
    for e in range(n_d):
        i = dying[e]
        to = bins[life[i]]
        bins[life[i]] = to + 1
        order[to] = i
    at = Leaving(cell, run, dying, slot, cb[: n_c * n_blocks], cb[n_c * n_blocks : 2 * n_c * n_blocks])
    e = 0
    while e < n_d:  # one offset index at a time; dying, read, now lists the cells
        j = life[order[e]]
        n_p = 0
        while e < n_d and life[order[e]] == j:
            i = order[e]
            n_p = _take_out(src[i], blk[i], 1, n_blocks, at, n_p, jackknife)
            e += 1
        _apply_drops(j, at, n_p, tables, diff, jk_diff, jackknife)
    for e in range(n_c):
        slot[cells[e]] = -1
    return cb


def null_sweep_sums(
    xloc: np.ndarray, ys: np.ndarray, life: np.ndarray, region: np.ndarray, fill_end: np.ndarray,
    widths: np.ndarray, vocab: int, n_life: int, tables: np.ndarray, jackknife: bool, n_workers: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Joint sums of one null process at ``n_life`` ascending offsets, counted once.

    ``emit_pairs`` at the first offset wrote the pairs (``ys`` one process whose partner
    does not depend on the offset) and each pair's ``life``: the number of the offsets at
    which its position still has a partner in its document. The table at offset index j is
    the first one less the pairs with ``life <= j``, so each first token's partners are
    counted once, and every pair dropped later changes the sums (and each block's delete
    delta, from the dropped cell's pairs per block) at its offset index: O(pairs + dropped
    pairs x blocks) for all offsets, against O(pairs x offsets) for counting each. Returns
    ``(joint[j], joint_jk[j])`` for each offset index j; partitions are dealt to fixed
    chunks as in ``partition_sums``, so the result does not depend on the thread count.
    """
    n_blocks = region.shape[1]
    chunks, workers = _deal_partitions(region, fill_end, n_workers)
    diff_c = np.zeros((N_CHUNKS, n_life, N_SUMS))
    jk_c = np.zeros((N_CHUNKS, n_life, n_blocks, N_SUMS))
    run_workers(_sweep_worker, n_workers, chunks, workers, xloc, ys, life, region, fill_end, widths, vocab, n_life,
                tables, jackknife, diff_c, jk_c)
    joint, joint_jk = _chunk_totals(diff_c, jk_c)
    return np.cumsum(joint, axis=0), np.cumsum(joint_jk, axis=0)  # changes -> values, added in offset order


@kernel()
def _sweep_worker(worker, chunks, workers, xloc, ys, life, region, fill_end, widths, vocab, n_life, tables,
                  jackknife, diff_c, jk_c):
    """``null_sweep_sums``' chunks dealt to ``worker``, each chunk's changes into ``diff_c[c]`` and ``jk_c[c]``."""
    n_blocks = region.shape[1]
    largest = _largest_partition(region, fill_end)
    scratch = SweepScratch(
        np.zeros(vocab + 1, dtype=np.int64),  # cell: as in partition_sums (no sentinel is written here)
        np.zeros(vocab + 1, dtype=np.int32),  # run
        np.empty(largest, dtype=np.int64),  # order: the dying pairs in offset order
        np.empty(vocab + 1, dtype=ys.dtype),  # touched
        np.full(vocab, -1, dtype=np.int32),  # slot: a dying cell's row in cb
        np.empty(vocab, dtype=np.int64),  # cells
        np.empty(largest, dtype=np.int64),  # dying
        np.empty(n_life + 1, dtype=np.int64),  # bins
    )
    cb = np.empty(0, dtype=np.int32)
    srt = np.empty((1, largest), dtype=ys.dtype)
    lsrt = np.empty(largest, dtype=life.dtype)
    blk = np.empty(largest, dtype=np.uint16)
    starts = np.empty(XLOC_MASK + 2, dtype=np.int64)
    pos = np.empty(XLOC_MASK + 2, dtype=np.int64)
    for c in workers[worker]:
        if c < 0:
            break
        diff = np.zeros((n_life, N_SUMS))
        jk_diff = np.zeros((n_life, n_blocks, N_SUMS))
        for q in chunks[c]:
            if q < 0:
                break
            w = widths[q]
            _sort_partition(xloc, ys, life, region, fill_end, q, w, srt, lsrt, blk, starts, pos)
            cb = _sweep_partition(srt[0], blk, lsrt, starts, w, n_life, scratch, cb, tables, diff, jk_diff,
                                  jackknife)
        copy_2d(diff_c[c], diff)
        copy_3d(jk_c[c], jk_diff)


@kernel()
def drop_positions(
    tok: np.ndarray, doc_ends: np.ndarray, block_starts: np.ndarray, r_from: int, r_to: int, shift: int,
    first: np.ndarray, second: np.ndarray, table: np.ndarray,
) -> np.ndarray:
    """Take the rotation null's pairs of the positions that have a partner at offset
    ``r_from`` but not at ``r_to`` (> r_from) out of the per-block marginals ``first`` and
    ``second`` and out of the per-block dense ``table``, each unless it is empty. Returns
    the number of positions dropped in each block.

    The caller takes the sums again (``row_sums``, ``dense_table_sums``), or follows them
    through the dropped positions with ``drop_sums`` when few positions drop.
    """
    n = tok.shape[0]
    dropped = np.zeros(block_starts.shape[0] - 1, dtype=np.int64)
    g = 0
    start = 0
    for d in range(doc_ends.shape[0]):
        end = doc_ends[d]
        for p in range(max(start, end - r_to), max(start, end - r_from)):
            while block_starts[g + 1] <= p:
                g += 1
            dropped[g] += 1
            x, y = tok[p], tok[_rotation_base(p, shift, n)]
            if table.shape[0] > 0:
                table[g, x, y] -= 1
            if first.shape[0] > 0:
                first[g, x] -= 1
            if second.shape[0] > 0:
                second[g, y] -= 1
        start = end
    return dropped


@kernel()
def drop_sums(
    tok: np.ndarray, doc_ends: np.ndarray, block_starts: np.ndarray, r_from: int, r_to: int, shift: int,
    first: np.ndarray, second: np.ndarray, table: np.ndarray, tables: np.ndarray, jackknife: bool,
    sums: np.ndarray, deltas: np.ndarray,
) -> np.ndarray:
    """``drop_positions`` (it returns what that returns), following the sums of what it
    changes: ``sums[m]`` and ``deltas[m]`` are ``row_sums``' of the first (m = 0, unless it
    is empty) and second (m = 1) marginal and, unless ``table`` (blocks x A x A,
    C-contiguous) is empty, the joint sums of ``dense_table_sums`` (m = 2).

    Each column (marginal) or cell (table) a dropped position touches has its part taken
    out before the drops and put back after: O(dropped positions x blocks) against
    O(A x blocks) (O(A^2 x blocks) for the table) to take the sums again, so the caller
    picks this when few positions drop.
    """
    n = tok.shape[0]
    vocab = second.shape[1]
    cells = table.reshape((table.shape[0], table.shape[1] * table.shape[2]))
    parts = (first, second, cells)
    n_parts = 3 if table.shape[0] > 0 else 2
    size = max(vocab, cells.shape[1])
    listed = np.empty((n_parts, size), dtype=np.int64)
    n_listed = np.zeros(n_parts, dtype=np.int64)
    mark = np.zeros((n_parts, size), dtype=np.bool_)
    start = 0
    for d in range(doc_ends.shape[0]):  # the columns and cells the dropped positions touch, each listed once
        end = doc_ends[d]
        for p in range(max(start, end - r_to), max(start, end - r_from)):
            x, y = tok[p], tok[_rotation_base(p, shift, n)]
            for m in range(n_parts):
                k = x if m == 0 else (y if m == 1 else x * vocab + y)
                if parts[m].shape[0] > 0 and not mark[m, k]:
                    mark[m, k] = True
                    listed[m, n_listed[m]] = k
                    n_listed[m] += 1
    for m in range(n_parts):  # their parts taken out before the drops, put back after
        _columns_sums(parts[m], listed[m, : n_listed[m]], tables, -1.0, sums[m], deltas[m], jackknife)
    dropped = drop_positions(tok, doc_ends, block_starts, r_from, r_to, shift, first, second, table)
    for m in range(n_parts):
        _columns_sums(parts[m], listed[m, : n_listed[m]], tables, 1.0, sums[m], deltas[m], jackknife)
    return dropped
