"""Count tables of token pairs that add up across shards: the distributed engine's unit of work.

A table holds one slot's pairs (one offset, one partner process) from a range of positions,
as int64 keys ``x * V + y`` grouped by first token x, with their counts. Tables of shards add
up cell by cell; from the tables of all shards, ``range_sums`` (per first-token range) and
``combine`` give the same ``TableSums`` that the in-memory kernels compute, so every
estimator applies unchanged. Memory is that of the tables: at most one entry per distinct pair in each shard.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from depstat.count import kernels
from depstat.count.sums import TableSums

# A merge or range task hands its tables to the kernels end to end a first-token range of
# about CHUNK_ENTRIES entries (64 MiB) at a time: a copy of all of them at once would double
# the memory of a task that holds gigabytes at 10^11 tokens (docs/scale.md).
CHUNK_ENTRIES = 1 << 22


@dataclass(frozen=True)
class CountTable:
    """Pair counts of one slot: ``keys = x * vocab + y`` (grouped by x, ascending; each cell once) and ``counts``."""

    keys: np.ndarray
    counts: np.ndarray


def shard_tables(
    tokens: np.ndarray, lo: int, hi: int, doc_ends: np.ndarray, slots: Sequence[tuple[int, ...]],
    shift: int, vocab: int, part: int | None = None, layout: np.ndarray = kernels.NO_LAYOUT,
) -> list[CountTable]:
    """Tables of the pairs whose first position lies in ``lo:hi``, one per slot (r, mode, seed)
    or (r, mode, seed, upto): with ``upto`` > 0, only the pairs that offset ``upto`` drops
    (positions with a partner r on in their document but not ``upto`` on).

    ``tokens`` is the whole stream (typically memory-mapped: only this range and its partners
    are read); ``doc_ends`` are the end positions of the documents overlapping the range;
    by default a vocabulary of up to 256 is counted in a dense table, a larger one in
    partitions of first tokens of SHARD_PART positions (``part`` asks for partitions of that
    many positions whatever the vocabulary): the slots that count every pair share one pass
    (``_emitted_tables``), and each slot of dropped pairs has a pass over its few positions.
    ``layout`` is the slots' ``kernels.Slots.layout`` over the whole stream
    (``counting.pairs_layout``), for slots that rotate the pair list.
    """
    tokens = np.asarray(tokens)  # a plain view of a memory map: only the pages read are loaded
    full = np.array([tuple(slot) + (0,) * (4 - len(slot)) for slot in slots], dtype=np.int64).reshape(-1, 4)
    r, mode, seed, upto = full.T.copy()  # (r, mode, seed) slots count every pair: upto 0
    if part is None and vocab * vocab <= kernels.DENSE_RANGE_CELLS:
        keys, counts, bounds = kernels.dense_range_tables(tokens, lo, hi, doc_ends, r, mode, seed, upto, shift, layout,
                                                            vocab)
        return [CountTable(keys[a:b], counts[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
    tables: list[CountTable] = [CountTable(np.zeros(0, np.int64), np.zeros(0, np.int64))] * len(full)
    if hi <= lo:
        return tables
    part = kernels.SHARD_PART if part is None else part
    code, widths = kernels.partition_tokens(kernels.token_counts(tokens[lo:hi], vocab), part)
    block = np.array([lo, hi], dtype=np.int64)  # one block: the shard
    source = kernels.Source(tokens, code, doc_ends, block, kernels.partition_layout(tokens, code, block, len(widths)))
    whole = np.flatnonzero(upto == 0)
    passes = [(whole[np.argsort(r[whole], kind="stable")], 0)] if whole.size else []  # smallest offset first
    passes += [(np.array([s]), int(upto[s])) for s in np.flatnonzero(upto > 0)]
    for chosen, drops in passes:
        rows = layout[np.concatenate(([0], 1 + chosen))] if layout.size else layout
        slots_of = kernels.Slots(r[chosen], mode[chosen], seed[chosen], shift, drops, rows)
        for s, table in zip(chosen, _emitted_tables(source, slots_of, widths, vocab)):
            tables[s] = table
    return tables


def _emitted_tables(source: kernels.Source, slots: kernels.Slots, widths: np.ndarray, vocab: int) -> list[CountTable]:
    """The tables of ``slots`` from the local engine's pass over the shard ``source`` describes:
    ``kernels.emit_block`` writes every slot's partners, read in position order, into
    partitions of consecutive first tokens, and ``kernels.partition_tables`` sorts each
    partition once for all slots and counts it."""
    room = int(source.block_starts[1] - source.block_starts[0])
    xloc = np.empty(room, dtype=np.uint8)
    ys = np.empty((len(slots.r), room), dtype=np.min_scalar_type(vocab))  # partners, or vocab where dropped
    fill_end = np.empty_like(source.region)
    no_marginal = np.empty((len(slots.r), 1, 0), dtype=np.int32)
    none = np.empty(0, dtype=np.uint8)
    kernels.emit_block(source, slots, kernels.Emitted(xloc, ys, fill_end, no_marginal, no_marginal, none, none),
                       vocab, -1, False, 0)  # one thread: a Dask task's
    keys, counts, ends = kernels.partition_tables(xloc, ys, source.region, fill_end, widths, vocab)
    return [CountTable(keys[s * room:end], counts[s * room:end]) for s, end in enumerate(ends)]


def merge(tables: Sequence[CountTable], vocab: int, chunk: int = CHUNK_ENTRIES) -> CountTable:
    """One table with the counts of all of them added cell by cell (``kernels.merge_pieces``),
    ``chunk`` entries at a time."""
    if len(tables) == 1:
        return tables[0]
    n = sum(len(t.keys) for t in tables)
    keys, counts = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)  # only the pages written are resident
    m, edges = 0, _edges(tables, vocab, chunk)
    cuts = _cuts_of(tables, edges)
    for c in range(len(edges) + 1):
        m = kernels.merge_pieces(*_chunk(tables, cuts, c), vocab, keys, counts, m)
    return CountTable(keys[:m], counts[:m])


def _cuts(keys: np.ndarray, key_edges: np.ndarray) -> np.ndarray:
    """Where the first tokens of ``key_edges // vocab`` (edges ``x * vocab``) start in ``keys``.

    Keys are grouped by x in ascending order but not sorted within a group; a binary search
    still finds an edge, since ``key < x * vocab`` holds for every group before x and for
    none from x on."""
    return np.searchsorted(keys, key_edges)


def _edges(tables: Sequence[CountTable], vocab: int, chunk: int) -> np.ndarray:
    """Key edges ``x * vocab`` that cut the tables into first-token ranges of about ``chunk``
    entries in all, taken from the widest table (the tables of one range are alike)."""
    sizes = [len(t.keys) for t in tables]
    n = -(-sum(sizes) // max(chunk, 1))
    if n <= 1:
        return np.zeros(0, dtype=np.int64)
    widest = tables[int(np.argmax(sizes))].keys
    return np.unique(widest[len(widest) * np.arange(1, n) // n] // vocab) * vocab


def _cuts_of(tables: Sequence[CountTable], key_edges: np.ndarray) -> np.ndarray:
    """Where each table's first-token ranges between ``key_edges`` start (and the last ends):
    row i for table i. Built without a small array per table: a merge of small tables is
    called thousands of times."""
    cuts = np.zeros((len(tables), len(key_edges) + 2), dtype=np.int64)
    cuts[:, -1] = [len(t.keys) for t in tables]
    if len(key_edges):  # a table of one part (the usual case) has no inner cuts to search for
        for i, t in enumerate(tables):
            cuts[i, 1:-1] = _cuts(t.keys, key_edges)
    return cuts


def _chunk(
    tables: Sequence[CountTable], cuts: np.ndarray, c: int, signs: Sequence[int] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The tables' entries of first-token range c (``_cuts_of``) end to end, counts times
    ``signs`` (one a table), and where each table's part starts (and the last ends). Callers
    pass it straight to a kernel, so that no range's copy outlives its call."""
    if not tables:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(1, np.int64)
    signs = [1] * len(tables) if signs is None else signs
    lo, hi = cuts[:, c], cuts[:, c + 1]
    starts = np.zeros(len(tables) + 1, dtype=np.int64)
    np.cumsum(hi - lo, out=starts[1:])
    return (np.concatenate([t.keys[a:b] for t, a, b in zip(tables, lo, hi)]),
            np.concatenate([t.counts[a:b] * sign if sign != 1 else t.counts[a:b]
                            for t, a, b, sign in zip(tables, lo, hi, signs)]),
            starts)


@dataclass(frozen=True)
class PartialSums:
    """The sums of the cells whose first token lies in one range: they add up across ranges.

    The second-token marginal is not additive over first tokens, so its counts per block
    (``second_counts[g, y]``) are kept and summed before its sums are taken, less the pairs
    of ``second_taken`` (keys ``g * vocab + y``, counts): the rotation null's larger offsets
    of one range share their smallest's ``second_counts`` and take out the pairs they drop,
    instead of each holding a copy of blocks x vocab counts.
    """

    joint: np.ndarray
    first: np.ndarray
    joint_jk: np.ndarray
    first_jk: np.ndarray
    second_counts: np.ndarray
    second_taken: CountTable | None = None


def split(table: CountTable, key_edges: np.ndarray) -> list[CountTable]:
    """The table cut into first-token ranges: ``key_edges`` are ``x * vocab`` boundaries from 0 to vocab^2."""
    cuts = _cuts(table.keys, key_edges)
    return [CountTable(table.keys[a:b], table.counts[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]


def range_sums(
    pieces: Sequence[CountTable], piece_blocks: Sequence[int], n_blocks: int, vocab: int, jackknife: bool = True,
    taken_out: Sequence[bool] | None = None, first_marginal: bool = True, chunk: int = CHUNK_ENTRIES,
) -> PartialSums:
    """Sums and delete-one-block deltas of one first-token range, from its pieces (tables of
    shards, or of whole blocks, piece i of jackknife block ``piece_blocks[i]``), less the
    pairs of the pieces ``taken_out`` marks (which the others must hold).

    The pieces are taken first token by first token (``kernels.piece_sums``), those taken
    out last: each cell's total is counted in a dense array and each block's part of it in
    another, so no table is merged, sorted or looked up. The kernel takes the pieces end to
    end, ``chunk`` entries at a time. Without ``first_marginal`` the first marginal's sums
    are left out (NaN), for an estimator in which they cancel.
    """
    blocks = np.asarray(piece_blocks, dtype=np.int64)
    out = np.zeros(len(pieces), dtype=bool) if taken_out is None else np.asarray(taken_out, dtype=bool)
    order = np.lexsort((blocks, out))
    chosen, signs, blocks = [pieces[i] for i in order], np.where(out[order], -1, 1), blocks[order]
    first, second = _marginal_counts(n_blocks, vocab, first_marginal)
    joint, joint_jk = np.zeros(kernels.N_SUMS), np.zeros((n_blocks, kernels.N_SUMS))
    edges = _edges(chosen, vocab, chunk)
    cuts = _cuts_of(chosen, edges)
    for c in range(len(edges) + 1):
        sums, deltas = kernels.piece_sums(*_chunk(chosen, cuts, c, signs), blocks, n_blocks, vocab,
                                          kernels.SUM_TABLES, jackknife, first, second)
        joint += sums
        joint_jk += deltas
    return _partial(joint, joint_jk, first, second, jackknife, first_marginal)


def _marginal_counts(n_blocks: int, vocab: int, first_marginal: bool) -> tuple[np.ndarray, np.ndarray]:
    """Zeroed per-block counts of first tokens (n_blocks x 0 without ``first_marginal``) and of second tokens."""
    return (np.zeros((n_blocks, vocab if first_marginal else 0), dtype=np.int64),
            np.zeros((n_blocks, vocab), dtype=np.int64))


def _partial(
    joint: np.ndarray, joint_jk: np.ndarray, first_blocks: np.ndarray, second_blocks: np.ndarray, jackknife: bool,
    first_marginal: bool, second_taken: CountTable | None = None,
) -> PartialSums:
    """PartialSums from the joint sums and the per-block first- and second-token counts (the
    first marginal's sums NaN without ``first_marginal``)."""
    sums_tables = kernels.SUM_TABLES
    n_blocks = first_blocks.shape[0]
    if not first_marginal:
        return PartialSums(joint, np.full(kernels.N_SUMS, np.nan), joint_jk,
                           np.full((n_blocks, kernels.N_SUMS), np.nan), second_blocks, second_taken)
    first = first_blocks.sum(axis=0)
    first_jk = np.zeros((n_blocks, kernels.N_SUMS))
    for g in range(n_blocks if jackknife else 0):
        hit = first_blocks[g] > 0
        first_jk[g] = kernels.count_deltas(first[hit], first_blocks[g][hit], sums_tables)
    return PartialSums(joint, kernels.count_sums(first, sums_tables), joint_jk, first_jk, second_blocks,
                       second_taken)


def swept_range_sums(
    tables: Sequence[CountTable], drops: Sequence[Sequence[CountTable]], vocab: int, jackknife: bool = True,
    first_marginal: bool = True, chunk: int = CHUNK_ENTRIES,
) -> list[PartialSums]:
    """The rotation null's partial sums of one first-token range at a batch's smallest offset,
    from its table of every block (``tables[g]``), then at each larger offset k, less the
    pairs that offset drops: ``drops[k][g]`` holds those that offset k drops and offset
    k - 1 keeps (pairs ``tables[g]`` holds), so each pair is in at most one of them.

    ``kernels.swept_piece_sums`` sums the tables once and takes the dropped pairs out offset
    by offset with the local engine's sweep step, changing only the cells they touch; the
    marginals lose the dropped pairs' counts (the first's sums NaN without
    ``first_marginal``); the larger offsets' partial sums share the smallest's second-token
    counts and list the pairs they drop in ``second_taken``. The kernel takes the tables end
    to end, ``chunk`` entries at a time (and the dropped pairs of the same first tokens).
    """
    if any(len(group) != len(tables) for group in drops):
        raise ValueError("every larger offset needs one table of dropped pairs per block")
    n_blocks = len(tables)
    first, second = _marginal_counts(n_blocks, vocab, first_marginal)
    joint, joint_jk = np.zeros((len(drops) + 1, kernels.N_SUMS)), np.zeros((len(drops) + 1, n_blocks, kernels.N_SUMS))
    edges = _edges(tables, vocab, chunk)
    dropped = [t for group in drops for t in group]
    cuts, dcuts = _cuts_of(tables, edges), _cuts_of(dropped, edges)
    for c in range(len(edges) + 1):
        sums, deltas = kernels.swept_piece_sums(*_chunk(tables, cuts, c), *_chunk(dropped, dcuts, c), len(drops),
                                                vocab, kernels.SUM_TABLES, jackknife, first, second)
        joint += sums
        joint_jk += deltas
    out = [_partial(joint[0], joint_jk[0], first, second, jackknife, first_marginal)]
    first_k = first.copy()  # n_blocks x 0 without the first marginal; loses each offset's drops in turn
    taken_keys, taken_counts = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for k, group in enumerate(drops):
        for g, t in enumerate(group if first_marginal else []):
            np.subtract.at(first_k[g], t.keys // vocab, t.counts)
        taken_keys += [g * vocab + t.keys % vocab for g, t in enumerate(group)]
        taken_counts += [t.counts for t in group]
        taken = CountTable(np.concatenate(taken_keys), np.concatenate(taken_counts))
        out.append(_partial(joint[k + 1], joint_jk[k + 1], first_k, second, jackknife, first_marginal, taken))
    return out


def combine(parts: Sequence[PartialSums], jackknife: bool = True) -> TableSums:
    """TableSums of the whole table from the partial sums of its first-token ranges."""
    sums_tables = kernels.SUM_TABLES
    second_blocks = sum(p.second_counts for p in parts)  # a new array: second_counts may be shared
    for p in parts:
        if p.second_taken is not None:
            np.subtract.at(second_blocks.reshape(-1), p.second_taken.keys, p.second_taken.counts)
    second = second_blocks.sum(axis=0)
    second_jk = np.zeros((second_blocks.shape[0], kernels.N_SUMS))
    for g in range(second_blocks.shape[0] if jackknife else 0):
        hit = second_blocks[g] > 0
        second_jk[g] = kernels.count_deltas(second[hit], second_blocks[g][hit], sums_tables)
    block_pairs = second_blocks.sum(axis=1).astype(np.int64)
    return TableSums(
        int(block_pairs.sum()),
        sum(p.joint for p in parts),
        sum(p.first for p in parts),
        kernels.count_sums(second, sums_tables),
        sum(p.joint_jk for p in parts),
        sum(p.first_jk for p in parts),
        second_jk,
        block_pairs,
    )
