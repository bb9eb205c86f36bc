"""The Dask engine's tables: a shard's pieces of pairs (``partition_tables``,
``dense_range_tables``) merged and summed (``piece_sums``, ``swept_piece_sums``)."""

from __future__ import annotations

import numpy as np

from depstat.count.kernels.common import N_SUMS, _cell_sums, kernel
from depstat.count.kernels.dense import dense_block
from depstat.count.kernels.emit import XLOC_MASK
from depstat.count.kernels.partition import (
    _count_cells,
    _largest_partition,
    _sort_partition,
)
from depstat.count.kernels.sweep import Leaving, _apply_drops, _take_out


# The pieces' loops visit only the first tokens that occur in them (``present``), found a
# run at a time, not every token of the vocabulary: most of a word vocabulary is absent
# from a range's tables.
@kernel(inline="always")
def _piece_marginals(keys, counts, a, b, vocab, first, second, present):
    """Add one piece's counts of first tokens (unless ``first`` is empty) and of second
    tokens, and mark its first tokens in ``present``; its keys are grouped by x, so x is
    divided out once a run."""
    x, end = 0, 0
    counted = first.shape[0] > 0
    for j in range(a, b):
        if keys[j] >= end:  # the next first token's run
            x = keys[j] // vocab
            end = (x + 1) * vocab
            present[x] = True
        if counted:
            first[x] += counts[j]
        second[keys[j] - end + vocab] += counts[j]


@kernel(inline="always")
def _mark_runs(keys, a, b, vocab, present):
    """Mark in ``present`` the first tokens of keys ``a:b``, grouped by first token."""
    end = 0
    for j in range(a, b):
        if keys[j] >= end:
            x = keys[j] // vocab
            end = (x + 1) * vocab
            present[x] = True


@kernel(inline="always")
def _gather_token(keys, counts, piece_starts, cur, stop, base, end, total, cells):
    """Add every piece's entries of one first token (keys in base:end, from ``cur``) to
    ``total``; list each new cell in ``cells`` and note where each piece's run ends in ``stop``.
    Returns the number of cells."""
    n_cells = 0
    for i in range(cur.shape[0]):
        j, last = cur[i], piece_starts[i + 1]
        while j < last and keys[j] < end:
            y = keys[j] - base
            cells[n_cells] = y  # kept only if new: no branch to mispredict
            n_cells += total[y] == 0
            total[y] += counts[j]
            j += 1
        stop[i] = j
    return n_cells


@kernel(inline="always")
def _count_part(keys, counts, a, b, base, part, in_block, n_in):
    """Add entries ``a:b`` (of the first token whose keys start at ``base``) to ``part``,
    listing each new cell in ``in_block`` after the ``n_in`` listed; returns the list's length."""
    for j in range(a, b):
        y = keys[j] - base
        in_block[n_in] = y
        n_in += part[y] == 0
        part[y] += counts[j]
    return n_in


@kernel(inline="always")
def _part_deltas(in_block, n_in, part, total, tables, jk, g, slot, parts, n_blocks):
    """Add to ``jk`` the change of the joint sums when block g's part of the listed cells is
    deleted, resetting ``part``. Unless ``slot`` is empty, each cell with a row in it (one
    a sweep changes) keeps its part in ``parts[slot[y] * n_blocks + g]``."""
    noting = slot.shape[0] > 0
    d0, d1, emptied = 0.0, 0.0, 0
    for c in range(n_in):
        y = in_block[c]
        m = part[y]
        part[y] = 0
        t = total[y]
        after0, after1 = _cell_sums(t - m, tables)
        before0, before1 = _cell_sums(t, tables)
        d0 += after0 - before0
        d1 += after1 - before1
        emptied += (m == t) & (t > 0)
        if noting and slot[y] >= 0:
            parts[slot[y] * n_blocks + g] = m
    jk[0] += d0
    jk[1] += d1
    jk[2] -= emptied


@kernel()
def merge_pieces(
    keys: np.ndarray, counts: np.ndarray, piece_starts: np.ndarray, vocab: int, out_keys: np.ndarray,
    out_counts: np.ndarray, m: int,
) -> int:
    """One table from pieces grouped by first token (as ``piece_sums`` takes them): each cell's
    counts added, first token by first token in a dense array, keys again grouped by x,
    written to ``out_keys/out_counts`` from entry ``m`` on. Returns where its entries end."""
    cur = piece_starts[:-1].copy()
    stop = piece_starts[:-1].copy()
    present = np.zeros(vocab, dtype=np.bool_)
    for i in range(piece_starts.shape[0] - 1):
        _mark_runs(keys, piece_starts[i], piece_starts[i + 1], vocab, present)
    total = np.zeros(vocab, dtype=np.int64)
    cells = np.empty(vocab, dtype=np.int64)
    for x in np.flatnonzero(present):
        base = x * vocab
        n_cells = _gather_token(keys, counts, piece_starts, cur, stop, base, base + vocab, total, cells)
        for k in range(n_cells):
            y = cells[k]
            out_keys[m] = base + y
            out_counts[m] = total[y]
            total[y] = 0
            m += 1
        cur[:] = stop
    return m


@kernel()
def piece_sums(
    keys: np.ndarray, counts: np.ndarray, piece_starts: np.ndarray, piece_block: np.ndarray, n_blocks: int,
    vocab: int, tables: np.ndarray, jackknife: bool, first: np.ndarray, second: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Sums of one table given as pieces: piece i is ``keys/counts[piece_starts[i]:piece_starts[i + 1]]``,
    pairs of jackknife block ``piece_block[i]``, its keys ``x * vocab + y`` grouped by first
    token x in ascending order, each cell once.

    First token by first token, every piece's run of x is counted into a dense array of
    totals; a second pass, block by block, gives each block's part of its cells and so the
    delete-one-block change. No sort and no merged table. A piece may take pairs out
    (negative counts: pairs that a larger offset drops) if it comes after the pieces that
    hold them: every cell's total then rises before it falls, and cells that end empty are
    left out. Returns ``(joint, joint_jk)``; the per-block counts of first and second tokens
    are added into ``first`` and ``second`` (n_blocks x vocab; ``first`` n_blocks x 0 leaves
    the first marginal out), which callers keep across calls on consecutive first tokens.
    """
    joint = np.zeros(N_SUMS)
    joint_jk = np.zeros((n_blocks, N_SUMS))
    n_pieces = piece_block.shape[0]
    cur = piece_starts[:-1].copy()
    stop = piece_starts[:-1].copy()
    by_block = np.argsort(piece_block, kind="mergesort")  # each block's pieces, in their order
    present = np.zeros(vocab, dtype=np.bool_)
    for i in range(n_pieces):  # the marginals, a piece at a time: one block's rows stay in cache
        _piece_marginals(keys, counts, piece_starts[i], piece_starts[i + 1], vocab, first[piece_block[i]],
                         second[piece_block[i]], present)
    total = np.zeros(vocab, dtype=np.int64)
    part = np.zeros(vocab, dtype=np.int64)
    cells = np.empty(vocab, dtype=np.int64)
    in_block = np.empty(vocab, dtype=np.int64)
    unswept, no_parts = np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int64)  # no cell's parts kept
    for x in np.flatnonzero(present):
        base, end = x * vocab, (x + 1) * vocab
        n_cells = _gather_token(keys, counts, piece_starts, cur, stop, base, end, total, cells)
        k = 0
        while jackknife and k < n_pieces:  # the pieces of one block, then that block's deltas
            g = piece_block[by_block[k]]
            n_in = 0
            while k < n_pieces and piece_block[by_block[k]] == g:
                i = by_block[k]
                n_in = _count_part(keys, counts, cur[i], stop[i], base, part, in_block, n_in)
                k += 1
            _part_deltas(in_block, n_in, part, total, tables, joint_jk[g], g, unswept, no_parts, n_blocks)
        s0, s1, empty = 0.0, 0.0, 0
        for c in range(n_cells):
            y = cells[c]
            v0, v1 = _cell_sums(total[y], tables)
            s0 += v0
            s1 += v1
            empty += total[y] == 0  # all its pairs taken out again
            total[y] = 0
        joint[0] += s0
        joint[1] += s1
        joint[2] += n_cells - empty
        for i in range(n_pieces):
            cur[i] = stop[i]
    return joint, joint_jk


@kernel(inline="always")
def _list_swept(dkeys, dcur, dstarts, dstop, base, end, slot, swept):
    """List the cells of first token ``base // vocab`` that the drops touch (``slot``: each one's row,
    ``swept``: the cells) and move each drop piece's stop past that token; returns how many."""
    n_c = 0
    for i in range(dcur.shape[0]):
        j, last = dcur[i], dstarts[i + 1]
        while j < last and dkeys[j] < end:
            y = dkeys[j] - base
            if slot[y] < 0:
                slot[y] = n_c
                swept[n_c] = y
                n_c += 1
            j += 1
        dstop[i] = j
    return n_c


@kernel(inline="always")
def _cells_sums(total, cells, n_cells, tables):
    """(sum n ln n, sum n G(n)) over the first ``n_cells`` listed cells of ``total``."""
    s0, s1 = 0.0, 0.0
    for c in range(n_cells):
        v0, v1 = _cell_sums(total[cells[c]], tables)
        s0 += v0
        s1 += v1
    return s0, s1


@kernel()
def swept_piece_sums(
    keys: np.ndarray, counts: np.ndarray, starts: np.ndarray, dkeys: np.ndarray, dcounts: np.ndarray,
    dstarts: np.ndarray, n_later: int, vocab: int, tables: np.ndarray, jackknife: bool, first: np.ndarray,
    second: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """``piece_sums`` of one table per block (piece g is block g's), and the same sums after
    each of ``n_later`` sets of its pairs leave in turn: drop piece ``k * blocks + g`` holds
    block g's pairs that set k takes out (the rotation null's pairs that the batch's k-th
    larger offset drops and the one before it keeps).

    First token by first token, the table's sums are taken as ``piece_sums`` takes them,
    keeping each block's part of every cell a set touches; then each set's pairs leave
    through the local engine's sweep step (``_take_out``, ``_apply_drops``), which changes
    only the cells they touch: O(table + dropped entries x blocks), not O(table x sets).
    Returns ``(joint, joint_jk)``: row 0 the table's, row k + 1 after set k; the per-block
    marginal counts of the table only are added into ``first`` and ``second`` as in ``piece_sums``.
    """
    n_blocks = starts.shape[0] - 1
    joint = np.zeros((n_later + 1, N_SUMS))
    joint_jk = np.zeros((n_later + 1, n_blocks, N_SUMS))
    present = np.zeros(vocab, dtype=np.bool_)
    for g in range(n_blocks):
        _piece_marginals(keys, counts, starts[g], starts[g + 1], vocab, first[g], second[g], present)
    for i in range(dstarts.shape[0] - 1):  # the drops' first tokens are the table's: marked all the same
        _mark_runs(dkeys, dstarts[i], dstarts[i + 1], vocab, present)
    cur, stop = starts[:-1].copy(), starts[:-1].copy()
    dcur, dstop = dstarts[:-1].copy(), dstarts[:-1].copy()
    total = np.zeros(vocab, dtype=np.int64)
    part = np.zeros(vocab, dtype=np.int64)
    cells = np.empty(vocab, dtype=np.int64)
    in_block = np.empty(vocab, dtype=np.int64)
    slot = np.full(vocab, -1, dtype=np.int32)  # a swept cell's row in cb
    swept = np.empty(vocab, dtype=np.int64)  # the swept cells
    run = np.zeros(vocab, dtype=np.int64)
    listed = np.empty(vocab, dtype=np.int64)
    cb = np.empty(0, dtype=np.int64)  # the swept cells' parts per block, then their pending drops
    for x in np.flatnonzero(present):
        base, end = x * vocab, (x + 1) * vocab
        n_cells = _gather_token(keys, counts, starts, cur, stop, base, end, total, cells)
        n_c = _list_swept(dkeys, dcur, dstarts, dstop, base, end, slot, swept)
        room = n_c * n_blocks if jackknife else 0
        if 2 * room > cb.shape[0]:
            cb = np.empty(4 * room, dtype=np.int64)
        cb[: 2 * room] = 0
        at = Leaving(total, run, listed, slot, cb[:room], cb[room : 2 * room])
        for g in range(n_blocks if jackknife else 0):
            n_in = _count_part(keys, counts, cur[g], stop[g], base, part, in_block, 0)
            _part_deltas(in_block, n_in, part, total, tables, joint_jk[0, g], g, slot, at.parts, n_blocks)
        s0, s1 = _cells_sums(total, cells, n_cells, tables)
        joint[0, 0] += s0
        joint[0, 1] += s1
        joint[0, 2] += n_cells
        for k in range(n_later if n_c > 0 else 0):
            n_p = 0
            for g in range(n_blocks):
                i = k * n_blocks + g
                for j in range(dcur[i], dstop[i]):
                    n_p = _take_out(dkeys[j] - base, g, dcounts[j], n_blocks, at, n_p, jackknife)
            _apply_drops(k + 1, at, n_p, tables, joint, joint_jk, jackknife)
        for c in range(n_cells):
            total[cells[c]] = 0
        for c in range(n_c):
            slot[swept[c]] = -1
        for i in range(dcur.shape[0]):
            dcur[i] = dstop[i]
        for g in range(n_blocks):
            cur[g] = stop[g]
    for k in range(1, n_later + 1):  # changes -> values
        joint[k] += joint[k - 1]
        joint_jk[k] += joint_jk[k - 1]
    return joint, joint_jk


@kernel()
def dense_range_tables(
    tok: np.ndarray, lo: int, hi: int, doc_ends: np.ndarray, slot_r: np.ndarray,
    slot_mode: np.ndarray, slot_seed: np.ndarray, slot_upto: np.ndarray, shift: int, layout: np.ndarray,
    vocab: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A shard's tables (``tables.shard_tables``) for a small vocabulary: each slot's pairs of
    positions lo:hi counted in one dense V x V table (``dense_block``), whose occupied cells
    are then read out in key order."""
    n_slots = slot_r.shape[0]
    table = np.zeros((n_slots, vocab, vocab), dtype=np.int64)
    dense_block(tok, doc_ends, lo, hi, slot_r, slot_mode, slot_seed, slot_upto, shift, layout, table)
    keys = np.empty(n_slots * min(hi - lo, vocab * vocab), dtype=np.int64)
    counts = np.empty(keys.shape[0], dtype=np.int64)
    bounds = np.zeros(n_slots + 1, dtype=np.int64)
    m = 0
    for s in range(n_slots):
        cells = table[s].ravel()
        for c in range(vocab * vocab):
            if cells[c] > 0:
                keys[m] = c
                counts[m] = cells[c]
                m += 1
        bounds[s + 1] = m
    return keys[:m], counts[:m], bounds


@kernel()
def partition_tables(
    xloc: np.ndarray, ys: np.ndarray, region: np.ndarray, fill_end: np.ndarray, widths: np.ndarray, vocab: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Count tables of pairs that ``emit_block`` wrote for one block: keys ``x * vocab + y``
    grouped by first token x in ascending order, each cell once, with its count.

    The partitions are runs of consecutive token ids (``code`` from ``partition_tokens`` on
    ids in their own order). Each is sorted by first token once for all slots (a counting
    sort that stays in cache), then each token's partners in each slot are counted in a
    dense array and emitted in the order first seen; partner ``vocab`` (a pair the slot's
    offset dropped) is left out. Slot s's table is ``keys[s * room:ends[s]]`` with ``room``
    = ``ys.shape[1]``: the buffers have room for every pair, and only the pages written
    become resident, so the tables are not copied together.
    """
    n_slots = ys.shape[0]
    room = ys.shape[1]
    largest = _largest_partition(region, fill_end)
    srt = np.empty((n_slots, largest), dtype=ys.dtype)
    blk = np.empty(largest, dtype=np.uint16)
    starts = np.empty(XLOC_MASK + 2, dtype=np.int64)
    pos = np.empty(XLOC_MASK + 2, dtype=np.int64)
    cnt = np.zeros(vocab + 1, dtype=np.int64)
    touched = np.empty(vocab + 1, dtype=ys.dtype)
    keys = np.empty(n_slots * room, dtype=np.int64)
    counts = np.empty(n_slots * room, dtype=np.int64)
    ends = np.arange(n_slots) * room
    x0 = 0
    for q in range(region.shape[0]):
        w = widths[q]
        _sort_partition(xloc, ys, ys[0, :0], region, fill_end, q, w, srt, srt[0, :0], blk, starts, pos)
        for s in range(n_slots):
            src = srt[s]
            m = ends[s]
            for j in range(w):
                n_t = _count_cells(src, starts[j], starts[j + 1], cnt, touched, 0)
                key = (x0 + j) * vocab
                for t in range(n_t):
                    y = touched[t]
                    c = cnt[y]
                    cnt[y] = 0
                    if y != vocab:
                        keys[m] = key + y
                        counts[m] = c
                        m += 1
            ends[s] = m
        x0 += w
    return keys, counts, ends
