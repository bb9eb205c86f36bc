"""Plain NumPy twins of depstat's Numba kernels and estimator sums: slow and obviously right."""

from __future__ import annotations

import numpy as np
from scipy.special import digamma

from depstat.count.sums import TableSums

M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def grassberger_g(n: np.ndarray) -> np.ndarray:
    """G(n) = psi(n) + (-1)^n (psi((n+1)/2) - psi(n/2)) / 2, straight from scipy."""
    n = np.asarray(n, dtype=np.float64)
    sign = np.where(n % 2 == 0, 1.0, -1.0)
    return digamma(n) + 0.5 * sign * (digamma((n + 1) / 2) - digamma(n / 2))


def sums_of(counts: np.ndarray) -> np.ndarray:
    """(sum n ln n, sum n G(n), occupied cells) of a vector of counts."""
    c = counts[counts > 0].astype(np.float64)
    return np.array([np.sum(c * np.log(c)), np.sum(c * grassberger_g(c)), float(c.size)])


def pair_positions(doc_lengths: np.ndarray, r: int) -> np.ndarray:
    """First positions p of every pair (p, p + r) inside one document."""
    out, start = [], 0
    for length in doc_lengths:
        out.append(np.arange(start, start + max(0, length - r)))
        start += length
    return np.concatenate(out).astype(np.int64) if out else np.zeros(0, np.int64)


def mix(key: np.ndarray, seed: int) -> np.ndarray:
    """The kernels' 64-bit hash of (key, seed), with NumPy's wrapping uint64 arithmetic."""
    with np.errstate(over="ignore"):
        h = key.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(seed)
        h ^= h >> np.uint64(31)
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(29)
    return h


def iid_partner(p: np.ndarray, seed: int, n: int) -> np.ndarray:
    """The i.i.d. null's partner position: a hash of (p, seed), modulo n."""
    return (mix(p, seed) % np.uint64(n)).astype(np.int64)


def rotate_partner(p: np.ndarray, shift: int, n: int) -> np.ndarray:
    """The rotation null's partner, the same at every offset: half the corpus away plus a
    jitter redrawn every 4096 positions."""
    jitter = (mix(p >> 12, 0x5EED) % np.uint64(4096)).astype(np.int64)
    return (p + shift + jitter) % n


def pairs_partner(p: np.ndarray, r: int, shift: int, n: int) -> np.ndarray:
    """The pair-list rotation's partner: the k pairs (p, p + r) numbered in position order,
    pair i takes the second position of pair j: u = (i + shift k / n) mod k, then in the
    whole groups of 16 runs of 251 pairs, run b of u's group swapped with run b XOR key, the
    key a hash of the group."""
    k = p.shape[0]
    u = (np.arange(k, dtype=np.int64) + shift * k // n) % k
    b = u // 251
    key = (mix(b // 16, 0x5EED) % np.uint64(16)).astype(np.int64)
    whole = k // (251 * 16) * (251 * 16)
    j = np.where(u < whole, (b ^ key) * 251 + u % 251, u)
    assert np.array_equal(np.sort(j), np.arange(k))  # a permutation of the pairs
    return p[j] + r


def null_kind(doc_lengths: np.ndarray, r: int) -> str:
    """The rotation null's kind at offset r: the pair list's where more than 1 % of the
    positions have no partner r on in their document, else the stream's."""
    return "pairs" if np.minimum(doc_lengths, r).sum() > 0.01 * doc_lengths.sum() else "rotate"


def partner_positions(p: np.ndarray, r: int, partner: str, shift: int, n: int, seed: int) -> np.ndarray:
    if partner == "real":
        return p + r
    if partner == "rotate":
        return rotate_partner(p, shift, n)
    if partner == "pairs":
        return pairs_partner(p, r, shift, n)
    return iid_partner(p, seed, n)


def table_sums(x: np.ndarray, y: np.ndarray, vocab: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sums of the joint table and both marginals of the pairs (x, y), via np.unique."""
    _, joint = np.unique(x.astype(np.int64) * vocab + y, return_counts=True)
    return sums_of(joint), sums_of(np.bincount(x, minlength=vocab)), sums_of(np.bincount(y, minlength=vocab))


def naive_sums(
    tokens: np.ndarray, doc_lengths: np.ndarray, vocab: int, r: int, partner: str,
    block_starts: np.ndarray, shift: int, seed: int,
) -> TableSums:
    """TableSums recomputed from scratch, the jackknife deltas by recounting without each block."""
    n = tokens.shape[0]
    p = pair_positions(doc_lengths, r)
    q = partner_positions(p, r, partner, shift, n, seed)
    x, y = tokens[p], tokens[q]
    joint, first, second = table_sums(x, y, vocab)
    block_of = np.searchsorted(block_starts, p, side="right") - 1
    g_count = len(block_starts) - 1
    jk = np.zeros((3, g_count, 3))
    for g in range(g_count):
        keep = block_of != g
        for i, s in enumerate(table_sums(x[keep], y[keep], vocab)):
            jk[i, g] = s - (joint, first, second)[i]
    pairs = np.bincount(block_of, minlength=g_count)
    return TableSums(len(p), joint, first, second, jk[0], jk[1], jk[2], pairs)


def counted_sums(
    tokens: np.ndarray, doc_lengths: np.ndarray, vocab: int, r: int, partner: str,
    block_starts: np.ndarray, shift: int, seed: int,
) -> TableSums:
    """``naive_sums`` of what a counter reports for ``partner``: its "rotate" is the pair
    list's rotation at the offsets ``null_kind`` says."""
    kind = null_kind(np.asarray(doc_lengths), r) if partner == "rotate" else partner
    return naive_sums(tokens, doc_lengths, vocab, r, kind, block_starts, shift, seed)


def second_marginal(tokens: np.ndarray, doc_lengths: np.ndarray, block_starts: np.ndarray, r: int, vocab: int) -> np.ndarray:
    """Per-block counts (blocks x vocab) of the real pairs' partner tokens at offset r, by the block of the first position."""
    p = pair_positions(doc_lengths, r)
    out = np.zeros((len(block_starts) - 1, vocab), dtype=np.int64)
    np.add.at(out, (np.searchsorted(block_starts, p, side="right") - 1, tokens[p + r]), 1)
    return out


def row_sums(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sums of the column totals of per-block rows (blocks x vocab), and their change when each block is deleted."""
    total = rows.sum(axis=0)
    sums = sums_of(total)
    return sums, np.array([sums_of(total - row) - sums for row in rows])


def plugin_mi_bits(x: np.ndarray, y: np.ndarray) -> float:
    """Plug-in MI (bits) from a dense joint histogram."""
    vx, vy = int(x.max()) + 1, int(y.max()) + 1
    joint = np.zeros((vx, vy))
    np.add.at(joint, (x, y), 1)
    pxy = joint / joint.sum()
    px, py = pxy.sum(1, keepdims=True), pxy.sum(0, keepdims=True)
    nz = pxy > 0
    return float(np.sum(pxy[nz] * np.log2(pxy[nz] / (px @ py)[nz])))


def deal(sizes: np.ndarray, n_bins: int) -> np.ndarray:
    """``kernels.common._deal`` by its rule, directly: largest first (stable), each to the first least-loaded bin."""
    out = np.full((n_bins, len(sizes)), -1, dtype=np.int64)
    load, taken = np.zeros(n_bins, dtype=np.int64), np.zeros(n_bins, dtype=np.int64)
    for i in np.argsort(-np.asarray(sizes, dtype=np.int64), kind="stable"):
        b = int(np.argmin(load))
        out[b, taken[b]] = i
        taken[b] += 1
        load[b] += sizes[i]
    return out
