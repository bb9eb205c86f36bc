"""Count tables of token pairs that add up across shards: the distributed engine's unit of work.

A table holds one slot's pairs (one offset, one partner process) from a range of positions,
as sorted int64 keys ``x * V + y`` with their counts. Tables of shards merge by adding
counts; from the merged table of each jackknife block, ``table_sums`` gives the same
``TableSums`` that the in-memory kernels compute, so every estimator applies unchanged.
Memory is that of the tables: at most one entry per distinct pair in each block.
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

    @classmethod
    def of_keys(cls, keys: np.ndarray) -> CountTable:
        """The table of a vector of pair keys (with repeats)."""
        uniq, counts = np.unique(keys, return_counts=True)
        return cls(uniq.astype(np.int64), counts.astype(np.int64))


def merge(tables: Sequence[CountTable]) -> CountTable:
    """One table with the counts of all of them added cell by cell."""
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


def table_sums(blocks: Sequence[CountTable], vocab: int, jackknife: bool = True) -> TableSums:
    """Table sums and delete-one-block deltas from the merged table of every block."""
    sums_tables = kernels.SUM_TABLES
    total = merge(blocks)
    n_blocks = len(blocks)
    joint_jk, first_jk, second_jk = (np.zeros((n_blocks, kernels.N_SUMS)) for _ in range(3))
    margins = [_margins(t, vocab) for t in blocks]
    first = sum((m[0] for m in margins), np.zeros(vocab, np.int64))
    second = sum((m[1] for m in margins), np.zeros(vocab, np.int64))
    for g, t in enumerate(blocks if jackknife else ()):
        totals = total.counts[np.searchsorted(total.keys, t.keys)]
        joint_jk[g] = kernels.count_deltas(totals, t.counts, sums_tables)
        for jk, whole, part in ((first_jk, first, margins[g][0]), (second_jk, second, margins[g][1])):
            hit = part > 0
            jk[g] = kernels.count_deltas(whole[hit], part[hit], sums_tables)
    return TableSums(
        int(total.counts.sum()),
        kernels.count_sums(total.counts, sums_tables),
        kernels.count_sums(first, sums_tables),
        kernels.count_sums(second, sums_tables),
        joint_jk, first_jk, second_jk,
        np.array([int(t.counts.sum()) for t in blocks], dtype=np.int64),
    )


def _margins(table: CountTable, vocab: int) -> tuple[np.ndarray, np.ndarray]:
    """Counts of the first and of the second token of a table."""
    first = np.bincount(table.keys // vocab, weights=table.counts, minlength=vocab)
    second = np.bincount(table.keys % vocab, weights=table.counts, minlength=vocab)
    return first.astype(np.int64), second.astype(np.int64)
