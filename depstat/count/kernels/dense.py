"""The dense path for small vocabularies (bytes): whole A x A block tables counted
(``dense_counts``) and summed (``dense_table_sums``)."""

from __future__ import annotations

import numba as nb
import numpy as np

from depstat.count.kernels.common import (
    MODE_REAL,
    N_SUMS,
    _cell_sums,
    _deal_blocks,
    _sums_change,
    copy_1d,
    kernel,
    run_workers,
)
from depstat.count.kernels.emit import _partner_run


@kernel(inline="always")
def _count_two(tok, p, last, r, cells, last2, r2, cells2):
    """Real pairs at two offsets counted in one pass from p: r into ``cells`` up to ``last``,
    r2 into ``cells2`` up to ``last2``. Each first token is read once, and the two tables'
    increments, independent, overlap."""
    both = min(last, last2)
    for i in range(p, both):
        x = tok[i]
        cells[x, tok[i + r]] += 1
        cells2[x, tok[i + r2]] += 1
    for i in range(max(p, both), last):
        cells[tok[i], tok[i + r]] += 1
    for i in range(max(p, both), last2):
        cells2[tok[i], tok[i + r2]] += 1


@kernel(inline="always")
def dense_block(
    tok: np.ndarray, doc_ends: np.ndarray, lo: int, hi: int, slot_r: np.ndarray, slot_mode: np.ndarray,
    slot_seed: np.ndarray, slot_upto: np.ndarray, shift: int, layout: np.ndarray, table: np.ndarray,
) -> None:
    """Add to ``table[s]`` (V x V) slot s's pairs of first positions lo:hi, for small vocabularies:
    the dense counter of both engines (``dense_counts``' blocks, ``dense_range_tables``' ranges).

    A slot counts the positions with a partner ``slot_r[s]`` on in their document and, where
    ``slot_upto[s]`` > 0, only those without one ``slot_upto[s]`` on (the pairs a larger offset
    drops). Partners are read as runs (``_partner_run``), real pairs two slots a pass
    (``_count_two``), on the calling thread.
    """
    n = tok.shape[0]
    n_slots = slot_r.shape[0]
    d = np.searchsorted(doc_ends, lo, side="right")
    p = lo
    while p < hi and d < doc_ends.shape[0]:
        end = min(doc_ends[d], hi)
        s = 0
        while s < n_slots:
            r, mode, seed, upto = slot_r[s], slot_mode[s], slot_seed[s], slot_upto[s]
            last = min(end, doc_ends[d] - r)  # first positions whose partner stays in the document
            cells = table[s]
            if (mode == MODE_REAL and upto == 0 and s + 1 < n_slots and slot_mode[s + 1] == MODE_REAL
                    and slot_upto[s + 1] == 0):
                _count_two(tok, p, last, r, cells, min(end, doc_ends[d] - slot_r[s + 1]), slot_r[s + 1],
                           table[s + 1])
                s += 2
                continue
            q = max(p, doc_ends[d] - upto) if upto > 0 else p
            while q < last:
                stop, off = _partner_run(q, last, r, mode, seed, shift, n, layout, s)
                for i in range(q, stop):
                    cells[tok[i], tok[i + off]] += 1
                q = stop
            s += 1
        p = end
        d += 1


def dense_counts(
    tok: np.ndarray, doc_ends: np.ndarray, block_starts: np.ndarray, slot_r: np.ndarray, slot_mode: np.ndarray,
    slot_seed: np.ndarray, shift: int, layout: np.ndarray, counts: np.ndarray, n_workers: int,
) -> None:
    """Count each block's pairs of every slot into whole V x V tables (``dense_block``).

    ``counts`` (blocks x slots x V x V int32, any contents) gets block g's table of slot s
    at ``counts[g, s]``; each block's tables are read and written in cache, and the partners
    are read almost sequentially. Blocks run in parallel, dealt to ``n_workers`` workers
    (``_deal_blocks``). The caller keeps ``counts`` for the next batch, and
    ``dense_table_sums`` takes the sums.
    """
    deal = _deal_blocks(block_starts, n_workers)
    run_workers(_dense_worker, deal.shape[0], deal, tok, doc_ends, block_starts, slot_r, slot_mode, slot_seed, shift,
                layout, counts)


@kernel()
def _dense_worker(w, deal, tok, doc_ends, block_starts, slot_r, slot_mode, slot_seed, shift, layout, counts):
    """``dense_counts``' blocks dealt to worker w."""
    upto = np.zeros(slot_r.shape[0], dtype=np.int64)
    for g in deal[w]:
        if g < 0:
            break
        table = counts[g]
        table[:] = 0
        dense_block(tok, doc_ends, block_starts[g], block_starts[g + 1], slot_r, slot_mode, slot_seed, upto,
                    shift, layout, table)


def dense_table_sums(
    counts: np.ndarray, tables: np.ndarray, jackknife: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The sums of every slot's table (``dense_counts``' block tables added) and its
    delete-one-block deltas, cell by cell over the occupied cells; slots run in parallel.

    Tables are integers and the sums are taken in a fixed order, so the result does not
    depend on the thread count. Returns joint, first, second, their deltas, block pairs.
    """
    n_blocks, n_slots = counts.shape[0], counts.shape[1]
    joint = np.zeros((n_slots, N_SUMS))
    first = np.zeros((n_slots, N_SUMS))
    second = np.zeros((n_slots, N_SUMS))
    joint_jk = np.zeros((n_slots, n_blocks, N_SUMS))
    first_jk = np.zeros((n_slots, n_blocks, N_SUMS))
    second_jk = np.zeros((n_slots, n_blocks, N_SUMS))
    block_pairs = np.zeros((n_slots, n_blocks), dtype=np.int64)
    n_workers = min(nb.get_num_threads(), n_slots)
    run_workers(_dense_sums_worker, n_workers, n_workers, counts, tables, jackknife, joint, first, second, joint_jk,
                first_jk, second_jk, block_pairs)
    return joint, first, second, joint_jk, first_jk, second_jk, block_pairs


@kernel()
def _dense_sums_worker(worker, n_workers, counts, tables, jackknife, joint, first, second, joint_jk, first_jk,
                       second_jk, block_pairs):
    """``dense_table_sums``' slots worker, worker + n_workers, ..., each into its rows of the results."""
    n_blocks, n_slots, vocab = counts.shape[0], counts.shape[1], counts.shape[2]
    n_cells, n_tabled = vocab * vocab, tables.shape[1]
    # Plain loops, not NumPy's functions (sum over an axis, flatnonzero, masks, concatenate):
    # each of those compiles an implementation of its own, seconds of a first run in all.
    for s in range(worker, n_slots, n_workers):
        total = np.zeros(n_cells, dtype=np.int64)
        block_rows = np.zeros((n_blocks, vocab), dtype=np.int64)  # each block's marginals
        block_cols = np.zeros((n_blocks, vocab), dtype=np.int64)
        rows = np.zeros(vocab, dtype=np.int64)
        cols = np.zeros(vocab, dtype=np.int64)
        for g in range(n_blocks):  # one read of each block table gives the total and the block's marginals
            part = counts[g, s]
            pairs = 0
            for x in range(vocab):
                row = 0
                for y in range(vocab):
                    m = part[x, y]
                    total[x * vocab + y] += m
                    row += m
                    block_cols[g, y] += m
                block_rows[g, x] = row
                rows[x] += row
                pairs += row
            block_pairs[s, g] = pairs
            for y in range(vocab):
                cols[y] += block_cols[g, y]
        copy_1d(first[s], count_sums(rows, tables))
        copy_1d(second[s], count_sums(cols, tables))
        n_occ, n_held = 0, 0  # the blocks' deltas need only the occupied cells,
        for cell in range(n_cells):
            n_occ += total[cell] > 0
            n_held += 0 < total[cell] < n_tabled
        occupied = np.empty(n_occ, dtype=np.int64)  # first those whose every lookup is in the tables
        a, b = 0, n_held
        for cell in range(n_cells):
            if 0 < total[cell] < n_tabled:
                occupied[a] = cell
                a += 1
            elif total[cell] > 0:
                occupied[b] = cell
                b += 1
        before = np.empty((n_occ, 2))
        s0, s1 = 0.0, 0.0
        for k in range(n_occ):
            before[k, 0], before[k, 1] = _cell_sums(total[occupied[k]], tables)
            s0 += before[k, 0]
            s1 += before[k, 1]
        joint[s, 0], joint[s, 1], joint[s, 2] = s0, s1, n_occ
        for g in range(n_blocks if jackknife else 0):
            part = counts[g, s].reshape(n_cells)
            d0, d1, emptied = 0.0, 0.0, 0
            for k in range(n_held):  # a cell the block misses (m = 0) adds 0: no branch, a plain lookup
                cell = occupied[k]
                m, t = part[cell], total[cell]
                d0 += tables[0, t - m] - before[k, 0]
                d1 += tables[1, t - m] - before[k, 1]
                emptied += m == t
            for k in range(n_held, n_occ):
                cell = occupied[k]
                m, t = part[cell], total[cell]
                after0, after1 = _cell_sums(t - m, tables)
                d0 += after0 - before[k, 0]
                d1 += after1 - before[k, 1]
                emptied += m == t
            joint_jk[s, g, 0], joint_jk[s, g, 1], joint_jk[s, g, 2] = d0, d1, -emptied
            copy_1d(first_jk[s, g], count_deltas(rows, block_rows[g], tables))
            copy_1d(second_jk[s, g], count_deltas(cols, block_cols[g], tables))


@kernel()
def count_sums(counts: np.ndarray, tables: np.ndarray) -> np.ndarray:
    """The N_SUMS sums of a vector of counts."""
    s0, s1, occupied = 0.0, 0.0, 0
    for i in range(counts.shape[0]):
        v0, v1 = _cell_sums(counts[i], tables)
        s0 += v0
        s1 += v1
        occupied += counts[i] > 0
    return np.array([s0, s1, 1.0 * occupied])


@kernel()
def count_deltas(totals: np.ndarray, parts: np.ndarray, tables: np.ndarray) -> np.ndarray:
    """Change of the sums when each cell of ``totals`` loses ``parts`` of its counts (cells
    with no part change nothing)."""
    d0, d1, d2 = 0.0, 0.0, 0.0
    for i in range(totals.shape[0]):
        e0, e1, e2 = _sums_change(totals[i], parts[i], tables)
        d0 += e0
        d1 += e1
        d2 += e2
    return np.array([d0, d1, d2])
