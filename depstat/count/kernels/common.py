"""What every kernel shares: the ``kernel`` decorator and its worker threads, the partner
processes (``MODE_*``), the sum tables (n ln n, n G(n)) and the dealing of work to workers."""

from __future__ import annotations

import heapq
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic
from scipy.special import digamma


def kernel(**options: object):
    """``nb.njit`` as every kernel here is compiled: cached on disk, releasing the GIL (``run_workers``
    runs them on threads), with NumPy's error model.

    Under Python's error model a division may raise ZeroDivisionError, and Numba then kept
    reference counting around each call of a helper inlined into a loop that divides (as
    ``_n_g_n_series`` does past the tables), even when that branch never runs: a cost paid per
    (first token, partner process) in ``partition_sums`` (benchmarks/bench_versions.py
    measures what removing it gained). Nothing here divides by zero: the inputs are
    checked before they reach the kernels.
    """
    return nb.njit(cache=True, error_model="numpy", nogil=True, **options)


_POOLS: dict[int, ThreadPoolExecutor] = {}


def run_workers(body: Callable[..., None], n_workers: int, *args: object) -> None:
    """Run the kernel ``body(worker, *args)`` for each of ``n_workers`` workers, each on its own thread.

    The kernels release the GIL, so the workers run at once. Numba's parallel loops would do
    the same, but compiling them took most of a first run's time.
    """
    if n_workers <= 1:
        body(0, *args)
        return
    pool = _POOLS.get(n_workers)
    if pool is None:
        pool = _POOLS[n_workers] = ThreadPoolExecutor(n_workers, thread_name_prefix="depstat-kernel")
    for done in [pool.submit(body, w, *args) for w in range(n_workers)]:
        done.result()


@intrinsic
def _prefetch_write(typingctx, arr, idx):
    """Ask the cache for ``arr[idx]``'s line, to be written (LLVM's prefetch: a hint that
    never faults, even past the array's end).

    ``emit_pairs`` appends to a few hundred partitions at once, each a stream far larger
    than the cache, and each new line of a stream waited for memory; fetched a few lines
    ahead, it is there when the stream reaches it.
    """
    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        at = context.cast(builder, args[1], signature.args[1], types.intp)
        ptr = builder.bitcast(builder.gep(data, [at]), ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [ptr.type, i32, i32, i32])
        fn = builder.module.declare_intrinsic("llvm.prefetch", [ptr.type], fnty)
        builder.call(fn, [ptr, ir.Constant(i32, 1), ir.Constant(i32, 3), ir.Constant(i32, 1)])  # write, keep, data
        return context.get_dummy_value()

    return types.void(arr, idx), codegen


PREFETCH_AHEAD = 64  # places ahead of each partition's next append that emit_pairs asks the cache for


MODE_REAL = 0


MODE_ROTATE = 1


MODE_IID = 2


MODE_PAIRS = 3  # the rotation null of the pair list at one offset: partners are other pairs' second tokens


NO_LAYOUT = np.zeros((0, 0), dtype=np.int64)  # ``Slots.layout`` of a pass with no MODE_PAIRS slot


N_SUMS = 3  # sum n ln n, sum n G(n), occupied cells


TABLE_SIZE = 1 << 16


N_CHUNKS = 64  # fixed work split: results do not depend on the thread count


ROTATE_RUN_BITS = 12  # the rotation null jumps by a random 0..4095 every 4096 positions


ROTATE_SEED = 0x5EED


# The pair-list rotation's jitter: runs of PAIRS_RUN pairs swapped within aligned groups of
# PAIRS_GROUP runs, a permutation, so the null keeps the real pairs' second tokens exactly
# (docs/estimators.md). A fixed layout (documents of equal length, a period in each) keeps one
# phase between a pair and its partner over a run, so runs are short; a prime run length
# moves the phase of any period that is not a multiple of it.
PAIRS_RUN = 251


PAIRS_GROUP = 16


DENSE_RANGE_CELLS = 1 << 16  # vocabularies up to 256: a shard's pairs counted in a dense V x V table


SHARD_PART = 1 << 16  # positions of a partition of first tokens in a shard's tables: its sort stays in cache


def _grassberger_table(size: int) -> np.ndarray:
    """n * G(n) for n < size, with G(n) = psi(n) + (-1)^n (psi((n+1)/2) - psi(n/2)) / 2."""
    n = np.arange(size, dtype=np.float64)
    out = np.zeros(size)
    m = n[1:]
    sign = np.where(m % 2 == 0, 1.0, -1.0)
    out[1:] = m * (digamma(m) + 0.5 * sign * (digamma((m + 1) / 2) - digamma(m / 2)))
    return out


NG_TABLE = _grassberger_table(TABLE_SIZE)


_N_LOG_N = np.arange(TABLE_SIZE) * np.log(np.maximum(np.arange(TABLE_SIZE), 1))


# Rows 0 and 1: n ln n and n G(n); rows 2 and 3: their change when a cell of n loses one
# (``_drop_one``). Looking them up avoids a log per table cell.
SUM_TABLES = np.stack([
    _N_LOG_N, NG_TABLE,
    np.concatenate([[0.0], _N_LOG_N[:-1] - _N_LOG_N[1:]]), np.concatenate([[0.0], NG_TABLE[:-1] - NG_TABLE[1:]]),
])


@kernel(inline="always")
def n_log_n(n: int) -> float:
    return n * np.log(n) if n > 0 else 0.0


@kernel(inline="always")
def _n_g_n_series(n: int) -> float:
    """n G(n) from the asymptotic series (error < 1e-12 past the table)."""
    x = float(n)
    psi = np.log(x) - 1.0 / (2 * x) - 1.0 / (12 * x * x) + 1.0 / (120 * x**4)
    half_diff = 1.0 / x + 1.0 / (2 * x * x) - 1.0 / (4 * x**4)  # psi((n+1)/2) - psi(n/2)
    sign = 1.0 if n % 2 == 0 else -1.0
    return x * (psi + 0.5 * sign * half_diff)


@kernel(inline="always")
def _mix(key: int, seed: int) -> np.uint64:
    """A 64-bit hash of (key, seed) (splitmix-style finaliser)."""
    h = np.uint64(key) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(seed)
    h ^= h >> np.uint64(31)
    h *= np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(29)
    return h


@kernel(inline="always")
def _rotation_base(p: int, shift: int, n: int) -> int:
    """Where the rotation null's partner of position p lies, at every offset: (p + shift + jitter) mod n."""
    jitter = np.int64(_mix(p >> ROTATE_RUN_BITS, ROTATE_SEED) % np.uint64(1 << ROTATE_RUN_BITS))
    return (p + shift + jitter) % n


@kernel(inline="always")
def _partner(p: int, base: int, r: int, mode: int, n: int, seed: int) -> int:
    """Partner position of p at offset r; ``base`` is ``_rotation_base(p)``."""
    if mode == MODE_REAL:
        return p + r
    if mode == MODE_ROTATE:
        return base
    return np.int64(_mix(p, seed) % np.uint64(n))


# The helpers below return scalars, which their callers add up in locals and write out once,
# rather than adding into an array they are passed at every call, which kept the loops that
# called them slow (range_tasks.txt, removed since: `git show 74b70dc:benchmarks/output/range_tasks.txt`,
# the range tasks before and after).
@kernel(inline="always")
def _sums_change(total: int, part: int, tables: np.ndarray) -> tuple[float, float, float]:
    """Change of (n ln n, n G(n), occupied) when a cell of ``total`` counts loses ``part`` of them."""
    a0, a1 = _cell_sums(total - part, tables)
    b0, b1 = _cell_sums(total, tables)
    return a0 - b0, a1 - b1, (1.0 if total - part > 0 else 0.0) - (1.0 if total > 0 else 0.0)


@kernel(inline="always")
def _delta_change(t: int, c: int, t2: int, c2: int, tables: np.ndarray) -> tuple[float, float, float]:
    """Change of a cell's delete-block delta f(t - c) - f(t) when its total goes from t to t2
    and the block's part of it from c to c2."""
    a0, a1, a2 = _sums_change(t2, c2, tables)
    b0, b1, b2 = _sums_change(t, c, tables)
    return a0 - b0, a1 - b1, a2 - b2


# Arrays are copied by these loops, not by NumPy's slice assignment: Numba compiles that (its
# broadcasting) into seconds of a first run, again for each pair of array types it meets.
@kernel(inline="always")
def copy_1d(out: np.ndarray, values: np.ndarray) -> None:
    """out[:n] = values (n = len(values))."""
    for i in range(values.shape[0]):
        out[i] = values[i]


@kernel(inline="always")
def copy_2d(out: np.ndarray, values: np.ndarray) -> None:
    """out[:] = values for 2-D arrays of one shape."""
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            out[i, j] = values[i, j]


@kernel(inline="always")
def copy_3d(out: np.ndarray, values: np.ndarray) -> None:
    """out[:] = values for 3-D arrays of one shape."""
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            for k in range(values.shape[2]):
                out[i, j, k] = values[i, j, k]


@kernel()
def token_counts(tok: np.ndarray, vocab: int) -> np.ndarray:
    """How often each token id occurs (np.bincount without its int64 copy of the stream)."""
    counts = np.zeros(vocab, dtype=np.int64)
    for i in range(tok.shape[0]):
        counts[tok[i]] += 1
    return counts


@kernel()
def relabel(tok: np.ndarray, rank: np.ndarray, out: np.ndarray) -> None:
    """out[i] = rank[tok[i]] (fancy indexing without its int64 copy of the indices)."""
    for i in range(tok.shape[0]):
        out[i] = rank[tok[i]]


def _deal(sizes: np.ndarray, n_bins: int) -> np.ndarray:
    """Items dealt to bins, largest first, each to the least loaded bin (ties to the lowest):
    bin b takes ``deal[b]`` up to its first -1. Plain Python, not a kernel: it deals at most a
    few thousand items a call, and compiling it cost a first run seconds."""
    deal = np.full((n_bins, len(sizes)), -1, dtype=np.int64)
    taken = [0] * n_bins
    heap = [(0, b) for b in range(n_bins)]  # (load, bin): the least loaded first, then the lowest
    for i in np.argsort(-np.asarray(sizes, dtype=np.int64), kind="mergesort").tolist():
        load, b = heapq.heappop(heap)
        deal[b, taken[b]] = i
        taken[b] += 1
        heapq.heappush(heap, (load + int(sizes[i]), b))
    return deal


def _deal_blocks(block_starts: np.ndarray, n_workers: int) -> np.ndarray:
    """Jackknife blocks dealt to workers (``_deal``). Blocks of whole documents can be very
    unequal (one long document), and a parallel loop over blocks would leave a thread idle."""
    return _deal(np.diff(block_starts), n_workers)


def _deal_partitions(region: np.ndarray, fill_end: np.ndarray, n_workers: int) -> tuple[np.ndarray, np.ndarray]:
    """Partitions dealt to N_CHUNKS chunks by their pairs, and the chunks to ``n_workers``
    workers (``_deal``): ``(chunks, workers)``. The chunks' sums are added in chunk order and
    depend on the pair counts only, not on the thread count. Partitions come in order of
    frequency, largest first: taking every other one gave one of two threads the larger of
    each pair of partitions."""
    sizes = (fill_end - region).sum(axis=1)
    chunks = _deal(sizes, N_CHUNKS)
    loads = np.array([sizes[row[row >= 0]].sum() for row in chunks], dtype=np.int64)
    return chunks, _deal(loads, n_workers)


@kernel(inline="always")
def _cell_sums(n: int, tables: np.ndarray) -> tuple[float, float]:
    """(n ln n, n G(n)) from the tables, or computed beyond them."""
    if n < tables.shape[1]:
        return tables[0, n], tables[1, n]
    return _sums_beyond(np.int64(n))


@kernel()
def _sums_beyond(n: int) -> tuple[float, float]:
    """(n ln n, n G(n)) computed, for a count past the tables: called, not inlined, as that branch
    is rare and inlining it into every kernel's loops cost a first run seconds of compilation."""
    return n_log_n(n), _n_g_n_series(n)


@kernel(inline="always")
def _drop_one(n: int, tables: np.ndarray) -> tuple[float, float]:
    """Change of (n ln n, n G(n)) when a cell of n counts loses one, from the tables or computed beyond them."""
    if n < tables.shape[1]:
        return tables[2, n], tables[3, n]
    after = tables[1, n - 1] if n - 1 < tables.shape[1] else _n_g_n_series(n - 1)
    return n_log_n(n - 1) - n_log_n(n), after - _n_g_n_series(n)
