"""Numba counting kernels: the sums over count tables that every MI estimator needs.

The corpus is one concatenated token array ``tok`` with per-position metadata. For an
offset ``r`` the pairs are ``(tok[p], partner(p))`` for every position ``p`` whose
document still has ``r`` tokens after it (``rem[p] >= r``). Instead of building the
(possibly V x V) joint table, positions are grouped once by their first token
(a counting sort); for each group the partner tokens are counted in a small dense array
of length V, the table sums are taken, and the array is reset. Memory is O(N + V) and
the joint table never exists.

For each table the kernels return three sums, from which all estimators are built:
``sum n ln n`` (plug-in), ``sum n G(n)`` (Grassberger 2003) and the number of occupied
cells (Miller-Madow). Alongside, for each jackknife block ``g`` they return how much each
sum changes when the pairs whose first position lies in ``g`` are deleted, so a
delete-one-block jackknife costs one more sweep instead of G re-counts.

Partners: ``MODE_REAL`` is ``tok[p + r]``; ``MODE_ROTATE`` is
``tok[(p + r + shift + jitter) % N]``, a partner from far away in the corpus that keeps the
partner stream's own autocorrelation (the null used for bias correction). The jitter, a
random 0..4095 redrawn every 4096 positions, keeps documents of equal length and a fixed
layout from lining up with their partners at the same position (which would give the null
real information and over-correct); ``MODE_IID`` draws the partner
position by a hash of ``(p, seed)``, an i.i.d. null kept for comparison.
"""

from __future__ import annotations

import numba as nb
import numpy as np
from scipy.special import digamma

MODE_REAL = 0
MODE_ROTATE = 1
MODE_IID = 2

N_SUMS = 3  # sum n ln n, sum n G(n), occupied cells
TABLE_SIZE = 1 << 16
N_CHUNKS = 64  # fixed work split: results do not depend on the thread count
ROTATE_RUN_BITS = 12  # the rotation null jumps by a random 0..4095 every 4096 positions
ROTATE_SEED = 0x5EED


def _grassberger_table(size: int) -> np.ndarray:
    """n * G(n) for n < size, with G(n) = psi(n) + (-1)^n (psi((n+1)/2) - psi(n/2)) / 2."""
    n = np.arange(size, dtype=np.float64)
    out = np.zeros(size)
    m = n[1:]
    sign = np.where(m % 2 == 0, 1.0, -1.0)
    out[1:] = m * (digamma(m) + 0.5 * sign * (digamma((m + 1) / 2) - digamma(m / 2)))
    return out


NG_TABLE = _grassberger_table(TABLE_SIZE)
# Row 0: n ln n, row 1: n G(n); looking them up avoids a log per table cell.
SUM_TABLES = np.stack([np.arange(TABLE_SIZE) * np.log(np.maximum(np.arange(TABLE_SIZE), 1)), NG_TABLE])


@nb.njit(cache=True, inline="always")
def n_log_n(n: int) -> float:
    return n * np.log(n) if n > 0 else 0.0


@nb.njit(cache=True, inline="always")
def n_g_n(n: int, table: np.ndarray) -> float:
    """n G(n) from the table, or from the asymptotic series beyond it (error < 1e-12)."""
    if n < table.shape[0]:
        return table[n]
    x = float(n)
    psi = np.log(x) - 1.0 / (2 * x) - 1.0 / (12 * x * x) + 1.0 / (120 * x**4)
    half_diff = 1.0 / x + 1.0 / (2 * x * x) - 1.0 / (4 * x**4)  # psi((n+1)/2) - psi(n/2)
    sign = 1.0 if n % 2 == 0 else -1.0
    return x * (psi + 0.5 * sign * half_diff)


@nb.njit(cache=True)
def group_by_token(tok: np.ndarray, vocab: int) -> tuple[np.ndarray, np.ndarray]:
    """Stable counting sort: ``order[starts[v]:starts[v+1]]`` are the positions of token v, ascending.

    ``order`` is int32: a stream is below 2^31 tokens (``PairCounter`` checks).
    """
    counts = np.zeros(vocab + 1, dtype=np.int64)
    for i in range(tok.shape[0]):
        counts[tok[i] + 1] += 1
    starts = np.cumsum(counts)
    fill = starts[:-1].copy()
    order = np.empty(tok.shape[0], dtype=np.int32)
    for i in range(tok.shape[0]):
        v = tok[i]
        order[fill[v]] = i
        fill[v] += 1
    return order, starts


@nb.njit(cache=True)
def grouped_layout(
    order: np.ndarray, doc_ends: np.ndarray, block_starts: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """For each position in grouped order: the room left in its document and its block (int32)."""
    room = np.empty(order.shape[0], dtype=np.int32)
    block = np.empty(order.shape[0], dtype=np.int32)
    for k in range(order.shape[0]):
        p = order[k]
        room[k] = doc_ends[np.searchsorted(doc_ends, p, side="right")] - p - 1
        block[k] = np.searchsorted(block_starts, p, side="right") - 1
    return room, block


@nb.njit(cache=True)
def chunk_bounds(starts: np.ndarray, n_chunks: int) -> np.ndarray:
    """Split the token groups into n_chunks runs of roughly equal position counts."""
    vocab = starts.shape[0] - 1
    total = starts[vocab]
    bounds = np.empty(n_chunks + 1, dtype=np.int64)
    bounds[0] = 0
    v = 0
    for c in range(1, n_chunks):
        target = total * c // n_chunks
        while v < vocab and starts[v] < target:
            v += 1
        bounds[c] = v
    bounds[n_chunks] = vocab
    return bounds


@nb.njit(cache=True, inline="always")
def _mix(key: int, seed: int) -> np.uint64:
    """A 64-bit hash of (key, seed) (splitmix-style finaliser)."""
    h = np.uint64(key) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(seed)
    h ^= h >> np.uint64(31)
    h *= np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(29)
    return h


@nb.njit(cache=True, inline="always")
def _rotation_base(p: int, shift: int, n: int) -> int:
    """Where the rotation null's partner of position p lies at offset 0: (p + shift + jitter) mod n."""
    jitter = np.int64(_mix(p >> ROTATE_RUN_BITS, ROTATE_SEED) % np.uint64(1 << ROTATE_RUN_BITS))
    return (p + shift + jitter) % n


@nb.njit(cache=True, inline="always")
def _partner(p: int, base: int, r: int, mode: int, n: int, seed: int) -> int:
    """Partner position of p at offset r; ``base`` is ``_rotation_base(p)`` (r < n, so one wrap)."""
    if mode == MODE_REAL:
        return p + r
    if mode == MODE_ROTATE:
        q = base + r
        return q - n if q >= n else q
    return np.int64(_mix(p, seed) % np.uint64(n))


@nb.njit(cache=True, inline="always")
def _add_sums(out: np.ndarray, n: int, tables: np.ndarray, sign: float) -> None:
    if n < tables.shape[1]:
        out[0] += sign * tables[0, n]
        out[1] += sign * tables[1, n]
    else:
        out[0] += sign * n_log_n(n)
        out[1] += sign * n_g_n(n, tables[1])
    out[2] += sign * (1.0 if n > 0 else 0.0)


@nb.njit(cache=True, inline="always")
def _add_delta(out: np.ndarray, total: int, part: int, tables: np.ndarray) -> None:
    """Change of the sums when a cell of ``total`` counts loses ``part`` of them."""
    _add_sums(out, total - part, tables, 1.0)
    _add_sums(out, total, tables, -1.0)


# Per-cell state while a token group is counted: total, (last run + 1), count in that run.
TOTAL, LAST_RUN, RUN_COUNT, STATE_WIDTH = 0, 1, 2, 4


@nb.njit(cache=True, inline="always")
def _sweep_group(
    tok, order, rem_s, run_starts, run_block, r0, r1, slot_r, slot_mode, slot_seed, shift, rotate,
    vocab, tables, state, touched, n_touched, nx_runs, track_runs, totals_known, buf, n_buf,
    joint_jk,
):
    """Count the partners of one token group, run by run, for every slot.

    Slots are sorted by offset, so a position stops at the first slot its document cannot
    reach. ``state[cell]`` keeps the cell's total and, with ``track_runs``, the last run that
    hit it and its count there: when a later run hits the cell, the earlier run's count is
    final. It then goes to ``buf`` while the group's totals are still growing, or straight
    into the jackknife deltas when ``totals_known`` (a recount after the buffer overflowed).
    Returns ``(n_touched, n_buf)``; ``n_buf`` is -1 once the buffer has overflowed.
    """
    n = tok.shape[0]
    n_slots = slot_r.shape[0]
    for i in range(r0, r1):
        nx_run = nx_runs[i - r0]
        for k in range(run_starts[i], run_starts[i + 1]):
            p = order[k]
            room = rem_s[k]
            base = _rotation_base(p, shift, n) if rotate else 0
            for s in range(n_slots):
                r = slot_r[s]
                if r > room:
                    break
                cell = s * vocab + tok[_partner(p, base, r, slot_mode[s], n, slot_seed[s])]
                st = cell * STATE_WIDTH
                if not totals_known:
                    if state[st + TOTAL] == 0:
                        touched[n_touched] = cell
                        n_touched += 1
                    state[st + TOTAL] += 1
                    nx_run[s] += 1
                if track_runs:
                    last = state[st + LAST_RUN]
                    if last != i + 1:
                        if last != 0:
                            if totals_known:
                                _add_delta(joint_jk[s, run_block[last - 1]], state[st + TOTAL],
                                           state[st + RUN_COUNT], tables)
                            elif 0 <= n_buf < buf.shape[0]:
                                buf[n_buf, 0] = cell
                                buf[n_buf, 1] = last - 1
                                buf[n_buf, 2] = state[st + RUN_COUNT]
                                n_buf += 1
                            else:
                                n_buf = -1
                        state[st + LAST_RUN] = i + 1
                        state[st + RUN_COUNT] = 1
                    else:
                        state[st + RUN_COUNT] += 1
    return n_touched, n_buf


@nb.njit(cache=True, parallel=True)
def joint_sums(
    tok: np.ndarray,
    order: np.ndarray,
    starts: np.ndarray,
    rem_s: np.ndarray,
    run_starts: np.ndarray,
    run_block: np.ndarray,
    n_blocks: int,
    slot_r: np.ndarray,
    slot_mode: np.ndarray,
    slot_seed: np.ndarray,
    shift: int,
    tables: np.ndarray,
    jackknife: bool,
    buffer_cells: int,
    n_workers: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Sums of the joint table and of the first-token marginal for every slot (offset, partner).

    ``rem_s[k]`` is the room left in the document of position ``order[k]``. The grouped
    positions are cut into runs (``run_starts``) that never straddle a token group or a
    jackknife block; ``run_block`` gives each run's block. One sweep over a group gives its
    table and, per run, the count of every cell it hit, from which the change of the sums
    when a block is deleted follows once the group's totals are known. A group whose
    run counts overflow the buffer (``buffer_cells`` per chunk) is swept a second time.

    Returns ``(joint, first, joint_jk, first_jk, block_pairs)`` with a leading slot axis.
    """
    vocab = starts.shape[0] - 1
    n_slots = slot_r.shape[0]
    width = n_slots * vocab
    rotate = (slot_mode == MODE_ROTATE).any()
    bounds = chunk_bounds(starts, N_CHUNKS)
    group_run = np.searchsorted(run_starts, starts)
    joint_c = np.zeros((N_CHUNKS, n_slots, N_SUMS))
    first_c = np.zeros((N_CHUNKS, n_slots, N_SUMS))
    joint_jk_c = np.zeros((N_CHUNKS, n_slots, n_blocks, N_SUMS))
    first_jk_c = np.zeros((N_CHUNKS, n_slots, n_blocks, N_SUMS))
    pairs_c = np.zeros((N_CHUNKS, n_slots, n_blocks), dtype=np.int64)
    for w in nb.prange(n_workers):  # scratch arrays per worker, results per chunk
        state = np.zeros(width * STATE_WIDTH, dtype=np.int32)
        touched = np.empty(width, dtype=np.int32)
        buf = np.empty((buffer_cells if jackknife else 0, 3), dtype=np.int64)
        nx = np.zeros(n_slots, dtype=np.int64)
        nx_runs = np.zeros((n_blocks, n_slots), dtype=np.int64)
        for c in range(w, N_CHUNKS, n_workers):
            jk = joint_jk_c[c]
            for v in range(bounds[c], bounds[c + 1]):
                r0, r1 = group_run[v], group_run[v + 1]
                if r0 == r1:
                    continue
                nx_runs[: r1 - r0] = 0
                n_touched, n_buf = _sweep_group(
                    tok, order, rem_s, run_starts, run_block, r0, r1, slot_r, slot_mode, slot_seed,
                    shift, rotate, vocab, tables, state, touched, 0, nx_runs, jackknife, False, buf, 0,
                    jk,
                )
                nx[:] = 0
                for i in range(r0, r1):
                    for s in range(n_slots):
                        m = nx_runs[i - r0, s]
                        nx[s] += m
                        pairs_c[c, s, run_block[i]] += m
                for s in range(n_slots):
                    if nx[s] > 0:
                        _add_sums(first_c[c, s], nx[s], tables, 1.0)
                if jackknife:
                    for i in range(r0, r1):
                        for s in range(n_slots):
                            if nx_runs[i - r0, s] > 0:
                                _add_delta(first_jk_c[c, s, run_block[i]], nx[s], nx_runs[i - r0, s], tables)
                    if n_buf < 0:  # sweep again with the totals known, from a clean run state
                        for j in range(n_touched):
                            state[touched[j] * STATE_WIDTH + LAST_RUN] = 0
                        _sweep_group(
                            tok, order, rem_s, run_starts, run_block, r0, r1, slot_r, slot_mode,
                            slot_seed, shift, rotate, vocab, tables, state, touched, n_touched,
                            nx_runs, True, True, buf, 0, jk,
                        )
                    else:
                        for j in range(n_buf):
                            cell = buf[j, 0]
                            total = state[cell * STATE_WIDTH + TOTAL]
                            _add_delta(jk[cell // vocab, run_block[buf[j, 1]]], total, buf[j, 2], tables)
                for j in range(n_touched):
                    cell = touched[j]
                    st = cell * STATE_WIDTH
                    total = state[st + TOTAL]
                    s = cell // vocab
                    _add_sums(joint_c[c, s], total, tables, 1.0)
                    if jackknife:  # the last run that hit the cell
                        block = run_block[state[st + LAST_RUN] - 1]
                        if state[st + RUN_COUNT] == total:  # deleting the block empties the cell
                            _add_sums(jk[s, block], total, tables, -1.0)
                        else:
                            _add_delta(jk[s, block], total, state[st + RUN_COUNT], tables)
                    for q in range(STATE_WIDTH):
                        state[st + q] = 0
    joint = np.zeros((n_slots, N_SUMS))
    first = np.zeros((n_slots, N_SUMS))
    joint_jk = np.zeros((n_slots, n_blocks, N_SUMS))
    first_jk = np.zeros((n_slots, n_blocks, N_SUMS))
    block_pairs = np.zeros((n_slots, n_blocks), dtype=np.int64)
    for c in range(N_CHUNKS):
        joint += joint_c[c]
        first += first_c[c]
        joint_jk += joint_jk_c[c]
        first_jk += first_jk_c[c]
        block_pairs += pairs_c[c]
    return joint, first, joint_jk, first_jk, block_pairs


@nb.njit(cache=True, parallel=True)
def second_sums(
    tok: np.ndarray,
    seg_starts: np.ndarray,
    seg_doc_end: np.ndarray,
    block_segs: np.ndarray,
    vocab: int,
    slot_r: np.ndarray,
    slot_mode: np.ndarray,
    slot_seed: np.ndarray,
    shift: int,
    tables: np.ndarray,
    jackknife: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """Sums of the second-token marginal of every slot and their jackknife deltas.

    Positions are cut into segments that lie in one document and one block (segment i is
    ``seg_starts[i]:seg_starts[i+1]``, its document ends at ``seg_doc_end[i]``); block g is
    segments ``block_segs[g]:block_segs[g+1]``. The blocks of a slot are counted in
    parallel, each into its own row.
    """
    n = tok.shape[0]
    n_blocks = block_segs.shape[0] - 1
    n_slots = slot_r.shape[0]
    sums = np.zeros((n_slots, N_SUMS))
    deltas = np.zeros((n_slots, n_blocks, N_SUMS))
    per_block = np.zeros((n_blocks, vocab), dtype=np.int64)
    total = np.zeros(vocab, dtype=np.int64)
    for s in range(n_slots):
        r, mode, seed = slot_r[s], slot_mode[s], slot_seed[s]
        for g in nb.prange(n_blocks):
            row = per_block[g]
            row[:] = 0
            for i in range(block_segs[g], block_segs[g + 1]):
                end = min(seg_starts[i + 1], seg_doc_end[i] - r)
                for p in range(seg_starts[i], end):
                    base = _rotation_base(p, shift, n) if mode == MODE_ROTATE else 0
                    row[tok[_partner(p, base, r, mode, n, seed)]] += 1
        total[:] = 0
        for g in range(n_blocks):
            total += per_block[g]
        for y in range(vocab):
            _add_sums(sums[s], total[y], tables, 1.0)
        for g in nb.prange(n_blocks if jackknife else 0):
            row = per_block[g]
            for y in range(vocab):
                if row[y] > 0:
                    _add_delta(deltas[s, g], total[y], row[y], tables)
    return sums, deltas


@nb.njit(cache=True, parallel=True)
def dense_pair_sums(
    tok: np.ndarray,
    doc_ends: np.ndarray,
    block_starts: np.ndarray,
    slot_r: np.ndarray,
    slot_mode: np.ndarray,
    slot_seed: np.ndarray,
    shift: int,
    tables: np.ndarray,
    jackknife: bool,
    vocab: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``joint_sums`` and ``second_sums`` at once for small vocabularies: whole V x V tables.

    Each block's pairs go into its own dense table (one per slot), read and written in
    cache; partners are read almost sequentially. The sums and the delete-one-block deltas
    then come from the block tables and their total, cell by cell. Blocks run in parallel;
    the tables are integers and the sums are taken in a fixed order, so the result does
    not depend on the thread count. Memory: blocks x slots x V^2 int32.
    """
    n = tok.shape[0]
    n_blocks = block_starts.shape[0] - 1
    n_slots = slot_r.shape[0]
    counts = np.zeros((n_blocks, n_slots, vocab, vocab), dtype=np.int32)
    for g in nb.prange(n_blocks):
        lo, hi = block_starts[g], block_starts[g + 1]
        d = np.searchsorted(doc_ends, lo, side="right")
        table = counts[g]
        p = lo
        while p < hi:
            end = min(doc_ends[d], hi)
            for s in range(n_slots):
                r, mode, seed = slot_r[s], slot_mode[s], slot_seed[s]
                last = min(end, doc_ends[d] - r)  # first positions whose partner stays in the document
                cells = table[s]
                if mode == MODE_REAL:
                    for q in range(p, last):
                        cells[tok[q], tok[q + r]] += 1
                elif mode == MODE_ROTATE:
                    base = 0
                    for q in range(p, last):
                        if q == p or (q & ((1 << ROTATE_RUN_BITS) - 1)) == 0:
                            base = _rotation_base(q, shift, n)
                        else:
                            base = base + 1 if base + 1 < n else 0
                        y = base + r
                        cells[tok[q], tok[y - n if y >= n else y]] += 1
                else:
                    for q in range(p, last):
                        cells[tok[q], tok[_partner(q, 0, r, mode, n, seed)]] += 1
            p = end
            d += 1
    joint = np.zeros((n_slots, N_SUMS))
    first = np.zeros((n_slots, N_SUMS))
    second = np.zeros((n_slots, N_SUMS))
    joint_jk = np.zeros((n_slots, n_blocks, N_SUMS))
    first_jk = np.zeros((n_slots, n_blocks, N_SUMS))
    second_jk = np.zeros((n_slots, n_blocks, N_SUMS))
    block_pairs = np.zeros((n_slots, n_blocks), dtype=np.int64)
    for s in nb.prange(n_slots):
        total = np.zeros((vocab, vocab), dtype=np.int64)
        for g in range(n_blocks):
            total += counts[g, s]
        rows = total.sum(axis=1)
        cols = total.sum(axis=0)
        active = np.flatnonzero(rows)  # text uses few of the 256 byte values
        for x in range(vocab):
            _add_sums(first[s], rows[x], tables, 1.0)
            _add_sums(second[s], cols[x], tables, 1.0)
        for x in active:
            for y in range(vocab):
                if total[x, y] > 0:
                    _add_sums(joint[s], total[x, y], tables, 1.0)
        col = np.zeros(vocab, dtype=np.int64)
        for g in range(n_blocks):
            part = counts[g, s]
            block_pairs[s, g] = part.sum()
            if not jackknife:
                continue
            col[:] = 0
            for x in active:
                row = 0
                for y in range(vocab):
                    m = part[x, y]
                    if m > 0:
                        _add_delta(joint_jk[s, g], total[x, y], m, tables)
                        row += m
                        col[y] += m
                if row > 0:
                    _add_delta(first_jk[s, g], rows[x], row, tables)
            for y in range(vocab):
                if col[y] > 0:
                    _add_delta(second_jk[s, g], cols[y], col[y], tables)
    return joint, first, second, joint_jk, first_jk, second_jk, block_pairs


@nb.njit(cache=True)
def partner_positions(p: np.ndarray, r: int, mode: int, shift: int, n: int, seed: int) -> np.ndarray:
    """Partner positions of the first positions ``p`` at offset r (the kernels' definition)."""
    out = np.empty(p.shape[0], dtype=np.int64)
    for i in range(p.shape[0]):
        base = _rotation_base(p[i], shift, n) if mode == MODE_ROTATE else 0
        out[i] = _partner(p[i], base, r, mode, n, seed)
    return out


@nb.njit(cache=True)
def count_sums(counts: np.ndarray, tables: np.ndarray) -> np.ndarray:
    """The N_SUMS sums of a vector of counts."""
    out = np.zeros(N_SUMS)
    for i in range(counts.shape[0]):
        _add_sums(out, counts[i], tables, 1.0)
    return out


@nb.njit(cache=True)
def count_deltas(totals: np.ndarray, parts: np.ndarray, tables: np.ndarray) -> np.ndarray:
    """Change of the sums when each cell of ``totals`` loses ``parts`` of its counts."""
    out = np.zeros(N_SUMS)
    for i in range(totals.shape[0]):
        _add_delta(out, totals[i], parts[i], tables)
    return out


@nb.njit(cache=True, inline="always")
def _sort_small(a: np.ndarray, n: int) -> None:
    """Sort a[:n] in place: insertion sort for the short runs most token groups give."""
    if n > 32:
        a[:n].sort()
        return
    for i in range(1, n):
        v = a[i]
        j = i - 1
        while j >= 0 and a[j] > v:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v


@nb.njit(cache=True, inline="always")
def _grow(a: np.ndarray, used: int, size: int) -> np.ndarray:
    """A larger copy of a[:used]."""
    out = np.empty(size, dtype=a.dtype)
    out[:used] = a[:used]
    return out


@nb.njit(cache=True)
def range_tables(
    tok: np.ndarray, lo: int, hi: int, doc_ends: np.ndarray, slot_r: np.ndarray,
    slot_mode: np.ndarray, slot_seed: np.ndarray, shift: int, vocab: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pair tables of the positions lo:hi for every slot: sorted keys ``x * vocab + y`` and counts.

    ``doc_ends`` are the ends of the documents overlapping the range. The positions are
    grouped by first token once (a counting sort); for each slot, each group's partners
    are counted in a dense array and emitted in token order, so the keys come out sorted
    without a global sort. Slot s's table is ``keys[bounds[s]:bounds[s+1]]``.
    """
    n = tok.shape[0]
    size = hi - lo
    room = np.empty(size, dtype=np.int64)
    d = 0
    for i in range(size):
        while doc_ends[d] <= lo + i:
            d += 1
        room[i] = doc_ends[d] - (lo + i) - 1
    starts = np.zeros(vocab + 1, dtype=np.int64)
    for i in range(size):
        starts[tok[lo + i] + 1] += 1
    for v in range(vocab):
        starts[v + 1] += starts[v]
    fill = starts[:-1].copy()
    order = np.empty(size, dtype=np.int64)
    for i in range(size):
        v = tok[lo + i]
        order[fill[v]] = i
        fill[v] += 1
    n_slots = slot_r.shape[0]
    keys = np.empty(max(size, 1), dtype=np.int64)  # grown by doubling: memory ~ the tables' size
    counts = np.empty(max(size, 1), dtype=np.int64)
    bounds = np.zeros(n_slots + 1, dtype=np.int64)
    cnt = np.zeros(vocab, dtype=np.int64)
    touched = np.empty(vocab, dtype=np.int64)
    m = 0
    for s in range(n_slots):
        r, mode, seed = slot_r[s], slot_mode[s], slot_seed[s]
        for x in range(vocab):
            n_t = 0
            for k in range(starts[x], starts[x + 1]):
                i = order[k]
                if room[i] < r:
                    continue
                p = lo + i
                base = _rotation_base(p, shift, n) if mode == MODE_ROTATE else 0
                y = tok[_partner(p, base, r, mode, n, seed)]
                if cnt[y] == 0:
                    touched[n_t] = y
                    n_t += 1
                cnt[y] += 1
            _sort_small(touched, n_t)
            if m + n_t > keys.shape[0]:
                grown = max(2 * keys.shape[0], m + n_t)
                keys = _grow(keys, m, grown)
                counts = _grow(counts, m, grown)
            for j in range(n_t):
                y = touched[j]
                keys[m] = x * vocab + y
                counts[m] = cnt[y]
                cnt[y] = 0
                m += 1
        bounds[s + 1] = m
    return keys[:m].copy(), counts[:m].copy(), bounds
