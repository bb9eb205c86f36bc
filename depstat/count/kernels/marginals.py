"""Marginal rows: the real pairs' second marginal followed from offset to offset
(``partner_runs``, ``move_partners``) and rows of counts summed (``row_sums``)."""

from __future__ import annotations

import numba as nb
import numpy as np

from depstat.count.kernels.common import (
    N_CHUNKS,
    N_SUMS,
    _cell_sums,
    kernel,
    run_workers,
)
from depstat.count.kernels.partition import _chunk_totals


@kernel()
def partner_runs(doc_ends: np.ndarray, block_starts: np.ndarray, r_from: int, r_to: int) -> np.ndarray:
    """Runs ``(block, start, stop, sign)`` of partner positions that the real pairs' per-block
    second marginal gains (sign 1) or loses (-1) from offset ``r_from`` to ``r_to``
    (>= r_from; ``r_from`` < 0: from no pairs at all).

    Block g's partners at offset r are the positions r after those of g that keep a partner in
    their document: where a document meets g in [a, b), positions [a + r, min(b + r, end)). A
    larger offset loses the first of them and, where a block cuts the document, gains as
    many past the cut: O(documents + blocks) runs a step.
    """
    n_blocks = block_starts.shape[0] - 1
    runs = np.empty((2 * (doc_ends.shape[0] + n_blocks), 4), dtype=np.int64)
    k = 0
    g = 0
    start = 0
    for d in range(doc_ends.shape[0]):
        end = doc_ends[d]
        while g < n_blocks - 1 and block_starts[g + 1] <= start:
            g += 1
        h = g
        while h < n_blocks and block_starts[h] < end:
            a, b = max(start, block_starts[h]), min(end, block_starts[h + 1])
            new_lo, new_hi = a + r_to, min(b + r_to, end)
            old_lo, old_hi = a + r_from, min(b + r_from, end)
            if r_from < 0:
                old_lo, old_hi = new_lo, new_lo
            if old_lo < min(old_hi, new_lo):
                k = _put_run(runs, k, h, old_lo, min(old_hi, new_lo), -1)
            if max(new_lo, old_hi) < new_hi:
                k = _put_run(runs, k, h, max(new_lo, old_hi), new_hi, 1)
            h += 1
        start = end
    return runs[:k]


@kernel(inline="always")
def _put_run(runs: np.ndarray, k: int, block: int, start: int, stop: int, sign: int) -> int:
    """Write run k, element by element (a tuple assigned to a row compiles a shape check and its
    message: seconds of a first run); returns k + 1."""
    runs[k, 0], runs[k, 1], runs[k, 2], runs[k, 3] = block, start, stop, sign
    return k + 1


@kernel()
def move_partners(
    tok: np.ndarray, runs: np.ndarray, rows: np.ndarray, tables: np.ndarray, jackknife: bool, follow: bool,
    sums: np.ndarray, deltas: np.ndarray,
) -> np.ndarray:
    """Add each run's tokens (``partner_runs``) to their block's row of ``rows`` (blocks x A)
    with the run's sign; returns the change of each block's pairs. With ``follow``, ``sums``
    and ``deltas`` (``row_sums``' of ``rows``) follow: each column the runs touch has its part
    taken out before and put back after, O(positions moved x blocks) against O(A x blocks)
    to take the sums again."""
    change = np.zeros(rows.shape[0], dtype=np.int64)
    mark = np.zeros(rows.shape[1] if follow else 0, dtype=np.bool_)
    listed = np.empty(rows.shape[1] if follow else 0, dtype=np.int64)
    n_listed = 0
    for i in range(runs.shape[0] if follow else 0):  # the columns the runs touch, each listed once
        for p in range(runs[i, 1], runs[i, 2]):
            y = tok[p]
            if not mark[y]:
                mark[y] = True
                listed[n_listed] = y
                n_listed += 1
    _columns_sums(rows, listed[:n_listed], tables, -1.0, sums, deltas, jackknife)
    for i in range(runs.shape[0]):
        g, sign = runs[i, 0], runs[i, 3]
        change[g] += sign * (runs[i, 2] - runs[i, 1])
        for p in range(runs[i, 1], runs[i, 2]):
            rows[g, tok[p]] += sign
    _columns_sums(rows, listed[:n_listed], tables, 1.0, sums, deltas, jackknife)
    return change


@kernel()
def _columns_sums(rows, columns, tables, sign, sums, deltas, jackknife):
    """Add ``sign`` x the part of ``row_sums``' sums and deltas that each of ``columns`` of the
    per-block count rows ``rows`` (blocks x A) holds: one call for all the columns a step
    touches (see ``kernel``)."""
    n_blocks = rows.shape[0]
    for y in columns:
        t = 0
        for g in range(n_blocks):
            t += rows[g, y]
        if t > 0:
            before0, before1 = _cell_sums(t, tables)
            sums[0] += sign * before0
            sums[1] += sign * before1
            sums[2] += sign
            for g in range(n_blocks if jackknife else 0):
                m = rows[g, y]
                if m > 0:
                    after0, after1 = _cell_sums(t - m, tables)
                    deltas[g, 0] += sign * (after0 - before0)
                    deltas[g, 1] += sign * (after1 - before1)
                    deltas[g, 2] -= sign * (m == t)


ROW_COLUMNS = 256  # columns row_sums takes at a time: their totals and sums stay in L1


def row_sums(rows: np.ndarray, tables: np.ndarray, jackknife: bool) -> tuple[np.ndarray, np.ndarray]:
    """Sums of the column totals of per-block count rows ``rows[k]`` (blocks x A) for each k,
    and their change when each block is deleted: ``(sums[k], deltas[k])``.

    ROW_COLUMNS columns at a time: their totals, then each block's row read in order, every
    column looked up whether the block holds it or not (none changes by 0: no branch, and
    the block's deltas add up in registers; a plain lookup, with no test of the table's
    end, when every total of the columns is in the tables). The columns are cut into N_CHUNKS fixed ranges
    run in parallel and added in order, so the result does not depend on the thread count.
    """
    n_rows, n_blocks = rows.shape[:2]
    sums_c = np.zeros((N_CHUNKS, n_rows, N_SUMS))
    deltas_c = np.zeros((N_CHUNKS, n_rows, n_blocks, N_SUMS))
    n_workers = nb.get_num_threads()
    run_workers(_rows_worker, n_workers, n_workers, rows, tables, jackknife, sums_c, deltas_c)
    return _chunk_totals(sums_c, deltas_c)


@kernel()
def _rows_worker(worker, n_workers, rows, tables, jackknife, sums_c, deltas_c):
    """``row_sums``' chunks worker, worker + n_workers, ..., each chunk's sums into ``sums_c[c]`` and ``deltas_c[c]``."""
    n_rows, n_blocks, vocab = rows.shape
    for c in range(worker, N_CHUNKS, n_workers):
        total = np.empty(ROW_COLUMNS, dtype=np.int64)
        before = np.empty((2, ROW_COLUMNS))
        lo, hi = c * vocab // N_CHUNKS, (c + 1) * vocab // N_CHUNKS
        for k in range(n_rows):
            sums, deltas = sums_c[c, k], deltas_c[c, k]
            for y0 in range(lo, hi, ROW_COLUMNS):
                w = min(ROW_COLUMNS, hi - y0)
                total[:w] = 0
                for g in range(n_blocks):
                    for j in range(w):
                        total[j] += rows[k, g, y0 + j]
                s0, s1, occupied = 0.0, 0.0, 0
                for j in range(w):
                    before[0, j], before[1, j] = _cell_sums(total[j], tables)
                    s0 += before[0, j]
                    s1 += before[1, j]
                    occupied += total[j] > 0
                sums[0] += s0
                sums[1] += s1
                sums[2] += occupied
                in_tables = True  # every total, so every total less a block's count, is in the tables
                for j in range(w):
                    in_tables &= total[j] < tables.shape[1]
                for g in range(n_blocks if jackknife else 0):
                    d0, d1, emptied = 0.0, 0.0, 0
                    row = rows[k, g, y0 : y0 + w]
                    if in_tables:  # a plain lookup: no branch a cell
                        for j in range(w):
                            m, t = row[j], total[j]
                            d0 += tables[0, t - m] - before[0, j]
                            d1 += tables[1, t - m] - before[1, j]
                            emptied += (m == t) & (m > 0)
                    else:
                        for j in range(w):
                            m, t = row[j], total[j]
                            after0, after1 = _cell_sums(t - m, tables)
                            d0 += after0 - before[0, j]
                            d1 += after1 - before[1, j]
                            emptied += (m == t) & (m > 0)
                    deltas[g, 0] += d0
                    deltas[g, 1] += d1
                    deltas[g, 2] -= emptied
