"""Count tables of token pairs that add up across shards: the distributed engine's unit of work.

A table holds one slot's pairs (one offset, one partner process) from a range of positions,
as sorted int64 keys ``x * V + y`` with their counts. Tables of shards merge by adding
counts; from the merged tables of each jackknife block, ``range_sums`` (per first-token range)
and ``combine`` give the same ``TableSums`` that the in-memory kernels compute, so every
estimator applies unchanged. Memory is that of the tables: at most one entry per distinct pair in each block.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from depstat import kernels
from depstat.estimators import TableSums


@dataclass(frozen=True)
class CountTable:
    """Pair counts of one slot: sorted unique ``keys = x * vocab + y`` and their ``counts``."""

    keys: np.ndarray
    counts: np.ndarray


def merge(tables: Sequence[CountTable]) -> CountTable:
    """One table with the counts of all of them added cell by cell."""
    if len(tables) == 1:
        return tables[0]
    keys = np.concatenate([t.keys for t in tables]) if tables else np.zeros(0, np.int64)
    counts = np.concatenate([t.counts for t in tables]) if tables else np.zeros(0, np.int64)
    order = np.argsort(keys, kind="stable")
    keys, counts = keys[order], counts[order]
    if keys.size == 0:
        return CountTable(keys, counts)
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    return CountTable(keys[starts], np.add.reduceat(counts, starts))


def shard_tables(
    tokens: np.ndarray, lo: int, hi: int, doc_ends: np.ndarray, slots: Sequence[tuple[int, int, int]],
    shift: int, vocab: int,
) -> list[CountTable]:
    """Tables of the pairs whose first position lies in ``lo:hi``, one per slot (r, mode, seed).

    ``tokens`` is the whole stream (typically memory-mapped: only this range and its partners
    are read); ``doc_ends`` are the end positions of the documents overlapping the range.
    """
    tokens = np.asarray(tokens)  # a plain view of a memory map: only the pages read are loaded
    r, mode, seed = (np.array([slot[i] for slot in slots], dtype=np.int64) for i in range(3))
    keys, counts, bounds = kernels.range_tables(tokens, lo, hi, doc_ends, r, mode, seed, shift, vocab)
    return [CountTable(keys[a:b], counts[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]


@dataclass(frozen=True)
class PartialSums:
    """The sums of the cells whose first token lies in one range: they add up across ranges.

    The second-token marginal is not additive over first tokens, so its counts per block
    (``second_counts[g, y]``) are kept and summed before its sums are taken.
    """

    joint: np.ndarray
    first: np.ndarray
    joint_jk: np.ndarray
    first_jk: np.ndarray
    second_counts: np.ndarray


def split(table: CountTable, key_edges: np.ndarray) -> list[CountTable]:
    """The table cut at sorted key boundaries (``key_edges`` from 0 to vocab^2)."""
    cuts = np.searchsorted(table.keys, key_edges)
    return [CountTable(table.keys[a:b], table.counts[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]


def range_sums(
    pieces: Sequence[CountTable], piece_blocks: Sequence[int], n_blocks: int, vocab: int, jackknife: bool = True,
) -> PartialSums:
    """Sums and delete-one-block deltas of one first-token range, from its pieces of every shard.

    The pieces (each from a shard of jackknife block ``piece_blocks[i]``) are merged block by
    block, so a cell counted in many shards is held once per block; the blocks' tables are
    then sorted by key together, stably, so equal keys keep block order, and one pass
    (``kernels.merged_sums``) adds each cell's counts and takes the sums and deltas: no
    total table is built and no total is looked up.
    """
    sums_tables = kernels.SUM_TABLES
    blocks = [merge([p for p, b in zip(pieces, piece_blocks) if b == g]) for g in range(n_blocks)]
    keys = np.concatenate([t.keys for t in blocks])
    counts = np.concatenate([t.counts for t in blocks])
    block_of = np.repeat(np.arange(n_blocks, dtype=np.int64), [len(t.keys) for t in blocks])
    by_key = np.argsort(keys, kind="stable")
    joint, joint_jk, first_blocks, second_blocks = kernels.merged_sums(
        keys[by_key], counts[by_key], block_of[by_key], n_blocks, vocab, sums_tables, jackknife,
    )
    first = first_blocks.sum(axis=0)
    first_jk = np.zeros((n_blocks, kernels.N_SUMS))
    for g in range(n_blocks if jackknife else 0):
        hit = first_blocks[g] > 0
        first_jk[g] = kernels.count_deltas(first[hit], first_blocks[g][hit], sums_tables)
    return PartialSums(joint, kernels.count_sums(first, sums_tables), joint_jk, first_jk, second_blocks)


def combine(parts: Sequence[PartialSums], jackknife: bool = True) -> TableSums:
    """TableSums of the whole table from the partial sums of its first-token ranges."""
    sums_tables = kernels.SUM_TABLES
    second_blocks = sum(p.second_counts for p in parts)
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
