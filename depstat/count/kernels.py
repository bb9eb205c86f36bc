"""Numba counting kernels: the sums over count tables that every MI estimator needs.

For an offset ``r`` the pairs of the concatenated tokens ``tok`` are ``(tok[p], partner(p))``
for every position ``p`` whose document has ``r`` tokens after it. Small vocabularies are counted
into whole V x V tables per jackknife block (``dense_counts``, ``dense_table_sums``); larger ones
write the pairs, in position order, into partitions of first tokens (``emit_pairs``) and count
each token's partners in a dense array of length V (``partition_sums``): memory O(N + V). The
Dask engine emits a shard's tables instead (``emit_block``, ``partition_tables``).

For each table the kernels return three sums, from which all estimators are built:
``sum n ln n`` (plug-in), ``sum n G(n)`` (Grassberger 2003) and the number of occupied
cells (Miller-Madow). Alongside, for each jackknife block ``g`` they return how much each
sum changes when the pairs whose first position lies in ``g`` are deleted, so a
delete-one-block jackknife costs one more pass instead of G re-counts.

Partners: ``MODE_REAL`` is ``tok[p + r]``; ``MODE_ROTATE`` is
``tok[(p + shift + jitter) % N]``, a partner from far away in the corpus that keeps the
partner stream's own autocorrelation (the null used for bias correction). It is the same
at every offset, so an offset's null table is the previous offset's less the pairs that offset
drops at document ends: ``null_sweep_sums`` counts it once and follows those deletions. The
jitter (a random 0..4095 redrawn every 4096 positions) keeps documents of equal length from
lining up with their partners, which would give the null real information; ``MODE_IID`` draws
the partner by a hash of ``(p, seed)``, an i.i.d. null kept for comparison.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable, NamedTuple

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


# Partitioned counting (vocabularies above DENSE_MAX_VOCAB). Token ids are frequency ranks
# (``PairCounter`` relabels), cut into partitions: runs of at most 2^XLOC_BITS consecutive
# ids holding about ``part_tokens`` positions. A position's pairs are stored as ``xloc``
# (the first token's index in its partition, one byte) and one partner token per partner
# process, in the dtype of the relabelled stream.
XLOC_BITS = 8
XLOC_MASK = (1 << XLOC_BITS) - 1


@kernel()
def partition_tokens(counts: np.ndarray, part_tokens: int) -> tuple[np.ndarray, np.ndarray]:
    """Cut token ids (sorted by count, descending) into partitions of about ``part_tokens`` positions.

    Returns ``code`` (``partition << XLOC_BITS | xloc`` per token) and each partition's width.
    """
    code = np.empty(counts.shape[0], dtype=np.int32)
    widths = np.empty(counts.shape[0] + 1, dtype=np.int64)
    q, w, size = 0, 0, 0
    for x in range(counts.shape[0]):
        if w > 0 and (w == XLOC_MASK + 1 or size + counts[x] > part_tokens):
            widths[q] = w
            q, w, size = q + 1, 0, 0
        code[x] = (q << XLOC_BITS) | w
        w += 1
        size += counts[x]
    widths[q] = w
    return code, widths[: q + 1].copy()


@kernel()
def partition_layout(tok: np.ndarray, code: np.ndarray, block_starts: np.ndarray, n_parts: int) -> np.ndarray:
    """Where the pairs of each (partition, block) start in the pair buffers: partition-major, blocks in order.

    Room is made for every position; offsets that lose the last positions of documents
    leave gaps, which ``emit_pairs`` reports through ``fill_end``.
    """
    n_blocks = block_starts.shape[0] - 1
    room = np.zeros((n_parts, n_blocks), dtype=np.int64)
    for g in range(n_blocks):
        for p in range(block_starts[g], block_starts[g + 1]):
            room[code[tok[p]] >> XLOC_BITS, g] += 1
    region = np.empty((n_parts, n_blocks), dtype=np.int64)
    total = 0
    for q in range(n_parts):
        for g in range(n_blocks):
            region[q, g] = total
            total += room[q, g]
    return region


@kernel(inline="always")
def _partner_run(
    q: int, last: int, r: int, mode: int, seed: int, shift: int, n: int, layout: np.ndarray, s: int,
) -> tuple[int, int]:
    """``(stop, off)``: positions q .. stop - 1 (stop <= last) have their partner at ``i + off``.

    The real partner is one run; the rotation null is a run up to the next jitter change
    or wrap-around; the i.i.d. null is a run of one position; the pair-list rotation
    (``_pairs_run``) a run up to a jitter change, wrap-around or its partners' document
    end. Inner loops then read the partners as a second sequential stream.
    """
    if mode == MODE_REAL:
        return last, r
    if mode == MODE_ROTATE:
        v = _rotation_base(q, shift, n)
        stop = min(last, (q | ((1 << ROTATE_RUN_BITS) - 1)) + 1, q + n - v)
        return stop, v - q
    if mode == MODE_PAIRS:
        return _pairs_run(q, last, r, shift, n, layout[0], layout[1 + s])
    return q + 1, _partner(q, 0, r, mode, n, seed) - q


@kernel(inline="always")
def _pairs_run(
    q: int, last: int, r: int, shift: int, n: int, starts: np.ndarray, pair_starts: np.ndarray,
) -> tuple[int, int]:
    """``_partner_run`` of the pair-list rotation at offset r: number the k pairs (p, p + r)
    in position order (``pair_starts[d]``: the pairs before document d, which starts at
    ``starts[d]``); pair i's partner is the second token of pair j: u = (i + shift k / n) mod k
    (the rotation null's shift scaled to the pairs), its run of PAIRS_RUN swapped with another
    of its aligned group of PAIRS_GROUP runs (a key drawn per group) where the group is whole."""
    k = pair_starts[pair_starts.shape[0] - 1]
    d = np.searchsorted(starts, q, side="right") - 1
    i = pair_starts[d] + q - starts[d]
    u = (i + shift * k // n) % k
    whole = k // (PAIRS_RUN * PAIRS_GROUP) * (PAIRS_RUN * PAIRS_GROUP)  # pairs in whole groups
    if u < whole:
        b = u // PAIRS_RUN
        key = np.int64(_mix(b // PAIRS_GROUP, ROTATE_SEED) % np.uint64(PAIRS_GROUP))
        j = (b ^ key) * PAIRS_RUN + u - b * PAIRS_RUN
        left = (b + 1) * PAIRS_RUN - u  # the run's pairs from u on
    else:
        j = u
        left = k - u
    e = np.searchsorted(pair_starts, j, side="right") - 1
    stop = min(last, q + left, q + pair_starts[e + 1] - j)
    return stop, starts[e] + j - pair_starts[e] + r - q


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
EMIT_RUN = 4096  # positions per run of emit_pairs: where the first slot's pairs went is kept for the others


@kernel(inline="always")
def _emit_lead(src, out, g, q, stop, off, fill, where, keep, dend, spill):
    """The first slot's pairs of positions q .. stop - 1 (block g's, into ``out``, an ``Emitted``);
    with ``keep``, ``where[i - q]`` keeps each pair's place.

    Positions whose first token is in partition ``spill`` (another group's) are skipped,
    with ``where`` -1. With a ``life`` buffer, each pair also gets ``life_of[d]`` for its position's distance d
    to the document end ``dend`` (capped at the table's end). An empty first or second marginal
    counts no such marginal.
    """
    tok, code = src.tok, src.code
    xloc, ys, life, life_of = out.xloc, out.ys[0], out.life, out.life_of
    first_row, second_row = out.first[0, g], out.second[0, g]
    cap = life_of.shape[0] - 1
    count_first = first_row.shape[0] > 0
    count_second = second_row.shape[0] > 0
    for i in range(q, stop):
        x = tok[i]
        c = code[x]
        k = c >> XLOC_BITS
        if k == spill:
            if keep:
                where[i - q] = -1
            continue
        at = fill[k]
        fill[k] = at + 1
        if keep:
            where[i - q] = at
        if cap >= 0:
            life[at] = life_of[min(dend - i, cap)]
            _prefetch_write(life, at + PREFETCH_AHEAD)
        xloc[at] = c & XLOC_MASK
        _prefetch_write(xloc, at + PREFETCH_AHEAD)
        _prefetch_write(ys, at + PREFETCH_AHEAD)
        if count_first:
            first_row[x] += 1
        y = tok[i + off]
        ys[at] = y
        if count_second:
            second_row[y] += 1


@kernel(inline="always")
def _emit_follow(tok, q, stop, off, where, ys, second_row):
    """Another slot's partners of positions q .. stop - 1, at the places the first slot took."""
    count_second = second_row.shape[0] > 0
    for i in range(q, stop):
        at = where[i - q]
        if at < 0:  # another group's
            continue
        y = tok[i + off]
        ys[at] = y
        _prefetch_write(ys, at + PREFETCH_AHEAD)
        if count_second:
            second_row[y] += 1


@kernel(inline="always")
def _emit_dropped(tok, q, stop, where, ys, sentinel, first_row):
    """Positions q .. stop - 1 have no partner at another slot's (larger) offset: its places get ``sentinel``
    and its first marginal (which ``emit_pairs`` takes from the first slot's; unless empty) loses them."""
    count_first = first_row.shape[0] > 0
    for i in range(q, stop):
        at = where[i - q]
        if at >= 0:
            ys[at] = sentinel
            if count_first:
                first_row[tok[i]] -= 1


@kernel()
def _deal(sizes: np.ndarray, n_bins: int) -> np.ndarray:
    """Items dealt to bins, largest first, each to the least loaded bin (ties to the lowest):
    bin b takes ``deal[b]`` up to its first -1."""
    deal = np.full((n_bins, sizes.shape[0]), -1, dtype=np.int64)
    load = np.zeros(n_bins, dtype=np.int64)
    taken = np.zeros(n_bins, dtype=np.int64)
    for i in np.argsort(-sizes, kind="mergesort"):
        b = np.argmin(load)
        deal[b, taken[b]] = i
        taken[b] += 1
        load[b] += sizes[i]
    return deal


@kernel()
def _deal_blocks(block_starts: np.ndarray, n_workers: int) -> np.ndarray:
    """Jackknife blocks dealt to workers (``_deal``). Blocks of whole documents can be very
    unequal (one long document), and a parallel loop over blocks would leave a thread idle."""
    return _deal(block_starts[1:] - block_starts[:-1], n_workers)


@kernel()
def _deal_partitions(region: np.ndarray, fill_end: np.ndarray, n_workers: int) -> tuple[np.ndarray, np.ndarray]:
    """Partitions dealt to N_CHUNKS chunks by their pairs, and the chunks to ``n_workers``
    workers (``_deal``): ``(chunks, workers)``. The chunks' sums are added in chunk order and
    depend on the pair counts only, not on the thread count. Partitions come in order of
    frequency, largest first: taking every other one gave one of two threads the larger of
    each pair of partitions."""
    sizes = (fill_end - region).sum(axis=1)
    chunks = _deal(sizes, N_CHUNKS)
    loads = np.zeros(N_CHUNKS, dtype=np.int64)
    for c in range(N_CHUNKS):
        for q in chunks[c]:
            if q < 0:
                break
            loads[c] += sizes[q]
    return chunks, _deal(loads, n_workers)


class Source(NamedTuple):
    """The positions ``emit_pairs`` reads: the tokens, each token's partition code (``XLOC_BITS``),
    the document ends, the jackknife blocks' starts, and where block g's pairs of partition q
    begin (``region[q, g]``)."""

    tok: np.ndarray
    code: np.ndarray
    doc_ends: np.ndarray
    block_starts: np.ndarray
    region: np.ndarray


class Slots(NamedTuple):
    """What a pass counts: slot s's offset ``r[s]``, partner process ``modes[s]`` (``MODE_*``) and
    seed ``seeds[s]`` (the i.i.d. null's; the pair-list rotation's shift), the rotation null's
    ``shift``, with ``upto`` > 0 only the positions without a partner ``upto`` on in their
    document (what that offset drops), and the pair-list rotation's ``layout``
    (``pairs_layout``; 0 x 0 when no slot is one)."""

    r: np.ndarray
    modes: np.ndarray
    seeds: np.ndarray
    shift: int
    upto: int
    layout: np.ndarray


class Emitted(NamedTuple):
    """Where ``emit_pairs`` writes: first tokens ``xloc``, partners ``ys[s]``, each region's end
    ``fill_end``, the marginals ``first[s, g]`` and ``second[s, g]``, and each pair's
    ``life`` (``life_of`` of its distance to its document's end; both empty for none)."""

    xloc: np.ndarray
    ys: np.ndarray
    fill_end: np.ndarray
    first: np.ndarray
    second: np.ndarray
    life_of: np.ndarray
    life: np.ndarray


def emit_pairs(src: Source, slots: Slots, out: Emitted, sentinel: int, spill: int, add: bool, n_workers: int) -> None:
    """Write the pairs of every slot (offset ``slots.r[s]``, partner process ``slots.modes[s]``),
    read in position order, into their partitions.

    The slots share their first positions, those of the smallest offset ``slot_r[0]``, so one
    pass serves them all: block g's pairs of partition q fill places
    ``region[q, g]:fill_end[q, g]`` of ``xloc`` (the first token) and of ``ys[s]`` (its
    partner in slot s, or ``sentinel`` where the slot's larger offset leaves the position
    no partner in its document). Reads are sequential and the writes go to one stream per
    partition, so little waits on memory. ``first[s, g]`` and ``second[s, g]`` count block
    g's first and partner tokens of slot s (the marginals; with ``add``, added to what they
    hold); a ``first`` or ``second`` of no tokens (its last axis empty) counts no such
    marginal, for a caller that has it from elsewhere (the rotation null's first, the second
    followed from offset to offset) or does not need it. Blocks run in parallel, dealt to
    ``n_workers`` workers (``_deal_blocks``), each into its own regions (``emit_block``).
    Unless ``life_of`` is empty, ``life`` gets each pair's ``life_of[distance to its
    document's end]`` (see ``null_sweep_sums``).

    To count a group of partitions at a time, ``code`` sends the tokens outside the group
    to partition ``spill`` (-1 when every partition is counted), whose positions are
    skipped: neither written nor added to the marginals.
    """
    deal = _deal_blocks(src.block_starts, n_workers)
    run_workers(_emit_worker, deal.shape[0], deal, src, slots, out, sentinel, spill, add)


@kernel()
def _emit_worker(w: int, deal: np.ndarray, src: Source, slots: Slots, out: Emitted, sentinel: int, spill: int,
                 add: bool) -> None:
    """``emit_pairs``' blocks dealt to worker w."""
    for g in deal[w]:
        if g < 0:
            break
        emit_block(src, slots, out, sentinel, spill, add, g)


@kernel(inline="always")
def emit_block(src: Source, slots: Slots, out: Emitted, sentinel: int, spill: int, add: bool, g: int) -> None:
    """``emit_pairs`` for block g alone, on the calling thread: for a caller that must not
    start Numba's threads (a Dask task: the workqueue threading layer aborts when two
    threads of a worker run parallel kernels at once)."""
    tok, doc_ends, block_starts, region = src.tok, src.doc_ends, src.block_starts, src.region
    slot_r, modes, seeds, shift, upto, layout = slots
    ys, fill_end, first, second = out.ys, out.fill_end, out.first, out.second
    n = tok.shape[0]
    n_slots = modes.shape[0]
    fill = region[:, g].copy()
    off = np.empty(n_slots, dtype=np.int64)
    keep = np.empty(n_slots, dtype=np.bool_)
    where = np.empty(EMIT_RUN if n_slots > 1 else 0, dtype=np.int32)  # places < n < 2^31
    if not add:
        first[:, g] = 0
        second[:, g] = 0
    base = np.empty(0, dtype=first.dtype)  # the first slot's counts before this pass, for the other slots
    if n_slots > 1:
        base = first[0, g].copy()
    lo, hi = block_starts[g], block_starts[g + 1]
    d = np.searchsorted(doc_ends, lo, side="right")
    p = lo
    while p < hi:
        end = min(doc_ends[d], hi)
        last = min(end, doc_ends[d] - slot_r[0])  # first positions whose partner stays in the document
        q = max(p, doc_ends[d] - upto) if upto > 0 else p
        while q < last:
            stop = min(last, q + EMIT_RUN)  # a run over which every slot's partner offset is constant
            for s in range(n_slots):
                kept = doc_ends[d] - slot_r[s]  # slot s's positions end here
                keep[s] = q < kept
                if keep[s]:
                    run_stop, off[s] = _partner_run(q, min(last, kept), slot_r[s], modes[s], seeds[s], shift, n,
                                                           layout, s)
                    stop = min(stop, run_stop)
                else:
                    stop = min(stop, last)
            _emit_lead(src, out, g, q, stop, off[0], fill, where, n_slots > 1, doc_ends[d], spill)
            for s in range(1, n_slots):
                if keep[s]:
                    _emit_follow(tok, q, stop, off[s], where, ys[s], second[s, g])
                else:
                    _emit_dropped(tok, q, stop, where, ys[s], sentinel, first[s, g])
            q = stop
        p = end
        d += 1
    fill_end[:, g] = fill
    for s in range(1, n_slots):  # the slots' first positions are the first slot's, less the dropped ones
        first[s, g] += first[0, g] - base


@kernel(inline="always")
def _cell_sums(n: int, tables: np.ndarray) -> tuple[float, float]:
    """(n ln n, n G(n)) from the tables, or computed beyond them."""
    if n < tables.shape[1]:
        return tables[0, n], tables[1, n]
    return n_log_n(n), _n_g_n_series(n)


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
def _drop_one(n: int, tables: np.ndarray) -> tuple[float, float]:
    """Change of (n ln n, n G(n)) when a cell of n counts loses one, from the tables or computed beyond them."""
    if n < tables.shape[1]:
        return tables[2, n], tables[3, n]
    after = tables[1, n - 1] if n - 1 < tables.shape[1] else _n_g_n_series(n - 1)
    return n_log_n(n - 1) - n_log_n(n), after - _n_g_n_series(n)


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
    pos[:w] = starts[:w]
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


@kernel()
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
        joint_c[c] = sums
        joint_jk_c[c] = jk


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
        diff_c[c] = diff
        jk_c[c] = jk_diff


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
                runs[k] = (h, old_lo, min(old_hi, new_lo), -1)
                k += 1
            if max(new_lo, old_hi) < new_hi:
                runs[k] = (h, max(new_lo, old_hi), new_hi, 1)
                k += 1
            h += 1
        start = end
    return runs[:k]


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
    for s in range(worker, n_slots, n_workers):
        total = np.zeros(vocab * vocab, dtype=np.int64)
        block_rows = np.zeros((n_blocks, vocab), dtype=np.int64)  # each block's marginals
        block_cols = np.zeros((n_blocks, vocab), dtype=np.int64)
        for g in range(n_blocks):  # one read of each block table gives the total and the block's marginals
            part = counts[g, s].ravel()
            col = block_cols[g]
            for x in range(vocab):
                row = 0
                for y in range(vocab):
                    m = part[x * vocab + y]
                    total[x * vocab + y] += m
                    row += m
                    col[y] += m
                block_rows[g, x] = row
            block_pairs[s, g] = block_rows[g].sum()
        rows = block_rows.sum(axis=0)
        cols = block_cols.sum(axis=0)
        first[s] = count_sums(rows, tables)
        second[s] = count_sums(cols, tables)
        occupied = np.flatnonzero(total)  # the blocks' deltas need only these cells,
        held = total[occupied] < tables.shape[1]  # first those whose every lookup is in the tables
        occupied = np.concatenate((occupied[held], occupied[~held]))
        n_held = np.count_nonzero(held)
        n_occ = occupied.shape[0]
        before = np.empty((n_occ, 2))
        for k in range(n_occ):
            before[k, 0], before[k, 1] = _cell_sums(total[occupied[k]], tables)
        joint[s, 0], joint[s, 1], joint[s, 2] = before[:, 0].sum(), before[:, 1].sum(), n_occ
        for g in range(n_blocks if jackknife else 0):
            part = counts[g, s].ravel()
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
            first_jk[s, g] = count_deltas(rows, block_rows[g], tables)
            second_jk[s, g] = count_deltas(cols, block_cols[g], tables)


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
        room = n_c * n_blocks if jackknife else 0
        if 2 * room > cb.shape[0]:
            cb = np.empty(4 * room, dtype=np.int64)
        cb[: 2 * room] = 0
        at = Leaving(total, run, listed, slot, cb[:room], cb[room : 2 * room])
        for g in range(n_blocks if jackknife else 0):
            n_in = _count_part(keys, counts, cur[g], stop[g], base, part, in_block, 0)
            _part_deltas(in_block, n_in, part, total, tables, joint_jk[0, g], g, slot, at.parts, n_blocks)
        s0, s1 = 0.0, 0.0
        for c in range(n_cells):
            v0, v1 = _cell_sums(total[cells[c]], tables)
            s0 += v0
            s1 += v1
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
