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
    """Stable counting sort: ``order[starts[v]:starts[v+1]]`` are the positions of token v, ascending."""
    counts = np.zeros(vocab + 1, dtype=np.int64)
    for i in range(tok.shape[0]):
        counts[tok[i] + 1] += 1
    starts = np.cumsum(counts)
    fill = starts[:-1].copy()
    order = np.empty(tok.shape[0], dtype=np.int64)
    for i in range(tok.shape[0]):
        v = tok[i]
        order[fill[v]] = i
        fill[v] += 1
    return order, starts


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
def _partner(p: int, r: int, mode: int, shift: int, n: int, seed: int) -> int:
    if mode == MODE_REAL:
        return p + r
    if mode == MODE_ROTATE:
        jitter = np.int64(_mix(p >> ROTATE_RUN_BITS, ROTATE_SEED) % np.uint64(1 << ROTATE_RUN_BITS))
        return (p + r + shift + jitter) % n
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


@nb.njit(cache=True, parallel=True)
def joint_sums(
    tok: np.ndarray,
    order: np.ndarray,
    starts: np.ndarray,
    rem: np.ndarray,
    block: np.ndarray,
    n_blocks: int,
    r: int,
    mode: int,
    shift: int,
    seed: int,
    tables: np.ndarray,
    jackknife: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Sums of the joint table and of the first-token marginal at offset ``r``.

    Returns ``(joint, first, joint_jk, first_jk, block_pairs)``: the N_SUMS sums of each
    table, ``*_jk[g]`` the change of those sums when the pairs whose first position lies
    in block g are deleted, and ``block_pairs[g]`` the number of pairs in block g.
    With ``jackknife`` False the second sweep is skipped and the deltas stay zero (the
    pair count of each block is still returned). Chunks of token groups run in parallel;
    their results are added in a fixed order.
    """
    n = tok.shape[0]
    vocab = starts.shape[0] - 1
    bounds = chunk_bounds(starts, N_CHUNKS)
    joint_c = np.zeros((N_CHUNKS, N_SUMS))
    first_c = np.zeros((N_CHUNKS, N_SUMS))
    joint_jk_c = np.zeros((N_CHUNKS, n_blocks, N_SUMS))
    first_jk_c = np.zeros((N_CHUNKS, n_blocks, N_SUMS))
    pairs_c = np.zeros((N_CHUNKS, n_blocks), dtype=np.int64)
    for c in nb.prange(N_CHUNKS):
        cnt = np.zeros(vocab, dtype=np.int64)
        cnt_blk = np.zeros(vocab, dtype=np.int64)
        touched = np.empty(vocab, dtype=np.int64)
        touched_blk = np.empty(vocab, dtype=np.int64)
        for v in range(bounds[c], bounds[c + 1]):
            n_touched = 0
            n_x = 0
            for k in range(starts[v], starts[v + 1]):
                p = order[k]
                if rem[p] < r:
                    continue
                y = tok[_partner(p, r, mode, shift, n, seed)]
                if cnt[y] == 0:
                    touched[n_touched] = y
                    n_touched += 1
                cnt[y] += 1
                n_x += 1
                if not jackknife:
                    pairs_c[c, block[p]] += 1
            if n_x == 0:
                continue
            for i in range(n_touched):
                _add_sums(joint_c[c], cnt[touched[i]], tables, 1.0)
            _add_sums(first_c[c], n_x, tables, 1.0)
            # Jackknife: positions ascend and blocks are contiguous position ranges, so
            # each block's pairs form one run inside this group.
            k = starts[v]
            end = starts[v + 1] if jackknife else starts[v]
            while k < end:
                g = block[order[k]]
                n_t = 0
                n_g = 0
                while k < end and block[order[k]] == g:
                    p = order[k]
                    k += 1
                    if rem[p] < r:
                        continue
                    y = tok[_partner(p, r, mode, shift, n, seed)]
                    if cnt_blk[y] == 0:
                        touched_blk[n_t] = y
                        n_t += 1
                    cnt_blk[y] += 1
                    n_g += 1
                for i in range(n_t):
                    y = touched_blk[i]
                    _add_sums(joint_jk_c[c, g], cnt[y] - cnt_blk[y], tables, 1.0)
                    _add_sums(joint_jk_c[c, g], cnt[y], tables, -1.0)
                    cnt_blk[y] = 0
                if n_g > 0:
                    _add_sums(first_jk_c[c, g], n_x - n_g, tables, 1.0)
                    _add_sums(first_jk_c[c, g], n_x, tables, -1.0)
                    pairs_c[c, g] += n_g
            for i in range(n_touched):
                cnt[touched[i]] = 0
    joint = np.zeros(N_SUMS)
    first = np.zeros(N_SUMS)
    joint_jk = np.zeros((n_blocks, N_SUMS))
    first_jk = np.zeros((n_blocks, N_SUMS))
    block_pairs = np.zeros(n_blocks, dtype=np.int64)
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
    rem: np.ndarray,
    block_starts: np.ndarray,
    vocab: int,
    r: int,
    mode: int,
    shift: int,
    seed: int,
    tables: np.ndarray,
    jackknife: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """Sums of the second-token marginal at offset ``r`` and their jackknife deltas.

    Block g covers positions ``block_starts[g]:block_starts[g+1]`` (of the first token);
    blocks are counted in parallel, each into its own row.
    """
    n = tok.shape[0]
    n_blocks = block_starts.shape[0] - 1
    per_block = np.zeros((n_blocks, vocab), dtype=np.int64)
    for g in nb.prange(n_blocks):
        row = per_block[g]
        for p in range(block_starts[g], block_starts[g + 1]):
            if rem[p] >= r:
                row[tok[_partner(p, r, mode, shift, n, seed)]] += 1
    total = np.zeros(vocab, dtype=np.int64)
    for g in range(n_blocks):
        total += per_block[g]
    sums = np.zeros(N_SUMS)
    for y in range(vocab):
        _add_sums(sums, total[y], tables, 1.0)
    deltas = np.zeros((n_blocks, N_SUMS))
    for g in nb.prange(n_blocks if jackknife else 0):
        row = per_block[g]
        for y in range(vocab):
            if row[y] > 0:
                _add_sums(deltas[g], total[y] - row[y], tables, 1.0)
                _add_sums(deltas[g], total[y], tables, -1.0)
    return sums, deltas
