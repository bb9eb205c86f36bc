"""Counting on a Dask cluster: shards of the stream become count tables on the workers.

The stream is written once as a ``.npy`` file that every worker memory-maps (a local directory
for an embedded ``LocalCluster``; storage all workers share for ``--scheduler``). For each batch
of offsets: (1) a task per shard counts the pairs whose first position lies in it, one table
per slot cut into first-token ranges (``tables.shard_tables``; the rotation null, whose partner
does not depend on the offset, at the batch's smallest offset only, then just the pairs each
larger offset drops); (2) with several ranges, a piece task per (shard, range); (3) each
block's pieces merged by a tree of tasks of about MERGE_FAN_IN tables (``tables.merge``);
(4) a task per (slot, range) takes that range's sums and jackknife deltas token by token
(``tables.range_sums``; the null's at every offset of the batch, ``tables.swept_range_sums``);
(5) a task per slot adds the ranges (``tables.combine``): only these ``TableSums`` travel back.
Shards hold 4M to 64M positions (``graph_plan``), sized by a probe where memory binds them
(``DaskCounter.probe``); docs/scale.md walks through the graph.

Shards never straddle a block, tasks are pure, and integer counts are added before any float
sum, in a fixed order: the result does not depend on the number of workers, on which ran what,
or on a task rerun. Tasks call the kernels on their own thread (``kernels.emit_block``).

The documents are tokenized on the workers too (``depstat.tokenize.workers``);
``depstat.engine`` sets both up for a profile.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from depstat.cluster import failing_tasks
from depstat.count import kernels
from depstat.count.counting import (
    jackknife_blocks,
    pairs_layout,
    slot_arrays,
    split_rotation,
)
from depstat.count.sums import TableSums
from depstat.count.tables import (
    CountTable,
    PartialSums,
    combine,
    merge,
    range_sums,
    shard_tables,
    split,
    swept_range_sums,
)
from depstat.files import atomic_write
from depstat.tokenize.stream import TokenStream

SHARD_TOKENS = 1 << 22  # positions per shard task, at least
MAX_SHARD_TOKENS = 1 << 26  # at most
SHARDS_PER_THREAD = 4  # a batch's shards per worker thread, where the stream allows
# A vocabulary of up to 256 is counted in dense V x V tables (``kernels.dense_range_tables``):
# a shard's table then holds at most V^2 cells a slot whatever its size, so its shards are as
# large as the cluster's threads allow, its tables are not cut into first-token ranges, and a
# merge task takes more tables. A larger vocabulary's table can hold an entry (16 bytes) per
# pair and slot, so its shards also stay within a share of a worker thread's memory.
ENTRY_BYTES = 16  # an int64 key and an int64 count
SHARD_MEMORY_SHARE = 4  # a shard's tables at most 1/this of a worker thread's memory, at one entry a pair
# Where memory binds, ``DaskCounter.sweep`` counts PROBE_SHARDS shards of the widest batch first
# and sizes the shards for PROBE_SAFETY times the table entries a position they held (a
# shard holds 0.08-0.14 entries a pair, not 1: graph.txt, removed since: `git show
# 74b70dc:benchmarks/output/graph.txt`).
PROBE_SHARDS = 4
PROBE_SAFETY = 2
DENSE_MERGE_FAN_IN = 256  # dense tables a merge task holds: at most 65,536 cells (1 MiB) each
WRITE_CHUNK = 1 << 22  # tokens the client hashes and writes at a time (_write_tokens)
OFFSETS_PER_BATCH = 4  # tables of a batch: at most 4 offsets x partners per distinct pair
RANGE_TOKENS = 1 << 24  # one first-token range per this many tokens (each range costs tasks)
MAX_KEY_RANGES = 16
MERGE_FAN_IN = 32  # tables a merge task holds (lists of a batch's slots, this // slots of them, at least 2): its memory


def shards(doc_lengths: np.ndarray, block_starts: np.ndarray, size: int) -> np.ndarray:
    """Shard boundaries: every block cut into runs of about ``size`` positions, at document ends if possible."""
    ends = np.cumsum(doc_lengths)
    cuts = [block_starts]
    for lo, hi in zip(block_starts[:-1], block_starts[1:]):
        targets = np.arange(lo + size, hi, size)
        at_doc = ends[np.minimum(np.searchsorted(ends, targets), len(ends) - 1)]
        cuts.append(np.where(at_doc <= hi, at_doc, targets))
    return np.unique(np.concatenate(cuts)).astype(np.int64)


class DaskCounter:
    """``PairCounter``'s interface, with the pairs counted by Dask tasks on shards of the stream."""

    def __init__(
        self, stream: TokenStream, client: object, n_blocks: int = 20, seed: int = 0,
        shard_tokens: int | None = None, shared_dir: str | os.PathLike | None = None,
        key_ranges: int | None = None,
    ) -> None:
        self.stream = stream
        self.client = client
        self.seed = seed
        self.block_starts, self.block_unit = jackknife_blocks(stream.doc_lengths, n_blocks, stream.doc_groups)
        self.n_blocks = len(self.block_starts) - 1
        self.threads = sum(client.nthreads().values())
        self.thread_memory = thread_memory(client)
        self.shard_tokens, ranges, self.merge_tables = graph_plan(
            stream.n_tokens, int(stream.vocab_size), shard_tokens, self.threads, self.thread_memory)
        self._cut(self.shard_tokens)
        # the worst case of one entry a pair binds the shards: sweep measures the entries first
        self.entries: float | None = None  # table entries a position, where measured
        self.probing = shard_tokens is None and self.thread_memory is not None and len(self.bounds) > 2 and (
            graph_plan(stream.n_tokens, int(stream.vocab_size), None, self.threads, 1 << 62)[0] > self.shard_tokens)
        self.doc_ends = np.cumsum(stream.doc_lengths)
        self.shift = max(stream.n_tokens // 2, 1)
        self.path = stream.source_file or _write_tokens(stream, Path(shared_dir or tempfile.gettempdir()))
        self.key_edges = first_token_edges(stream, max(key_ranges or ranges, 1))
        self.tasks = 0  # tasks submitted so far: the size of the graphs the scheduler is given

    @property
    def plan(self) -> dict:
        """The graph's shape and the tasks submitted so far, for the run record."""
        return {"shard_tokens": int(self.shard_tokens), "shards": len(self.bounds) - 1,
                "first_token_ranges": len(self.key_edges) - 1, "merge_tables": self.merge_tables,
                "thread_memory": self.thread_memory, "entries_a_position": self.entries, "tasks": self.tasks}

    def _cut(self, shard_tokens: int) -> None:
        """Shard boundaries for shards of about ``shard_tokens`` positions, and each block's shards."""
        self.bounds = shards(self.stream.doc_lengths, self.block_starts, shard_tokens)
        shard_block = np.searchsorted(self.block_starts, self.bounds[:-1], side="right") - 1
        self.block_shards = [np.flatnonzero(shard_block == g) for g in range(self.n_blocks)]  # shards never straddle blocks

    def probe(self, batch: Sequence[int], partners: Sequence[str]) -> None:
        """Where the workers' memory binds the shards (``probing``), count the tables of
        PROBE_SHARDS shards spread over the stream for ``batch`` (the widest: its tables hold
        the most entries) and size the shards for PROBE_SAFETY times the most entries a
        position any held, not for one a pair and slot (``graph_plan``'s ``entries``). A
        shard holds fewer entries a position the larger it is, so the measure errs on the
        safe side; the sums do not depend on the shards."""
        if not self.probing or self.entries is not None:
            return
        spec = batch_spec(batch, partners, self.seed)[1]
        layout = self._layout(spec)
        vocab = int(self.stream.vocab_size)
        picks = np.unique(np.linspace(0, len(self.bounds) - 2, PROBE_SHARDS).round().astype(np.int64))
        futures = []
        for i in picks:
            lo, hi = int(self.bounds[i]), int(self.bounds[i + 1])
            self.tasks += 1
            futures.append(self.client.submit(
                _shard_entries, str(self.path), lo, hi, self._doc_ends_of(lo, hi), spec, self.shift, vocab, layout,
                key=f"depstat-probe-{i}-{self.path.stem}-{_spec_key([spec, self.shift, self.block_starts.tolist()])}"))
        with failing_tasks(self._memory_hint()):
            held = self.client.gather(futures)
        self.entries = max(n / (int(self.bounds[i + 1]) - int(self.bounds[i])) for i, n in zip(picks, held))
        self.shard_tokens = graph_plan(self.stream.n_tokens, vocab, None, self.threads, self.thread_memory,
                                       self.entries)[0]
        self._cut(self.shard_tokens)

    def _memory_hint(self) -> str:
        """What to change when the workers run out of memory: the shard size, or their memory."""
        return (f"pass a smaller --shard-tokens (this run: {int(self.shard_tokens):,} positions a shard), or give "
                "the workers more memory a thread; docs/scale.md says what each task holds")

    def _layout(self, spec: list[tuple[int, int, int, int]]) -> object:
        """The slots' ``kernels.Slots.layout`` (``pairs_layout``), scattered to the workers once
        where a slot rotates the pair list (an array of every document's start)."""
        layout = pairs_layout(self.stream.doc_lengths, np.array([s[0] for s in spec]), np.array([s[1] for s in spec]))
        return self.client.scatter(layout, broadcast=True) if layout.size else layout

    def _doc_ends_of(self, lo: int, hi: int) -> np.ndarray:
        """The ends of the documents overlapping positions lo:hi."""
        return self.doc_ends[np.searchsorted(self.doc_ends, lo, side="right"):
                             np.searchsorted(self.doc_ends, hi, side="left") + 1]

    def batches(self, offsets: Sequence[int], n_partners: int = 1) -> list[list[int]]:
        """The offsets, ascending, in batches whose tables are counted together."""
        offsets = sorted({int(r) for r in offsets})
        return [offsets[i : i + OFFSETS_PER_BATCH] for i in range(0, len(offsets), OFFSETS_PER_BATCH)]

    def sweep(
        self, offsets: Sequence[int], partners: Sequence[str] = ("real",), jackknife: bool = True,
        first_marginal: bool = True,
    ) -> Iterator[tuple[list[int], dict[tuple[str, int], TableSums]]]:
        """``sums_at`` batch by batch (``batches``), for progress: yields ``(batch, sums)``;
        first, where memory binds the shards, sizes them by the widest batch's tables (``probe``).
        The rotation null rotates the pair list where documents end (``split_rotation``)."""
        yield from split_rotation(self._sweep, self.stream.doc_lengths, offsets, partners, jackknife, first_marginal)

    def _sweep(
        self, offsets: Sequence[int], partners: Sequence[str], jackknife: bool, first_marginal: bool,
    ) -> Iterator[tuple[list[int], dict[tuple[str, int], TableSums]]]:
        """``sweep`` over the offsets of one kind of rotation null."""
        batches = self.batches(offsets, len(partners))
        if batches:
            self.probe(batches[-1], partners)
        for batch in batches:
            yield batch, self._sums_at(batch, partners, jackknife, first_marginal)

    def sums_at(
        self, offsets: Sequence[int], partners: Sequence[str] = ("real",), jackknife: bool = True,
        first_marginal: bool = True,
    ) -> dict[tuple[str, int], TableSums]:
        """Table sums for every (partner, offset), from per-shard tables summed per first-token
        range, one graph for each kind of rotation null (``split_rotation``); without
        ``first_marginal`` the first marginal's sums are left out (NaN), for an estimator in
        which they cancel (``estimators.Estimator.first_marginal``)."""
        out: dict[tuple[str, int], TableSums] = {}
        for _, sums in split_rotation(lambda o, p, *a: iter([(o, self._sums_at(o, p, *a))]), self.stream.doc_lengths,
                                      offsets, partners, jackknife, first_marginal):
            out.update(sums)
        return out

    def _sums_at(
        self, offsets: Sequence[int], partners: Sequence[str], jackknife: bool, first_marginal: bool,
    ) -> dict[tuple[str, int], TableSums]:
        """``sums_at`` in one graph, for one kind of rotation null."""
        slots, spec, base_of = batch_spec(offsets, partners, self.seed)
        layout = self._layout(spec)
        vocab = int(self.stream.vocab_size)
        # a key names one computation: the null's shift and the blocks are part of it
        tag = f"{self.path.stem}-{_spec_key([spec, self.shift, self.block_starts.tolist(), jackknife, first_marginal])}"
        n_ranges, n_slots = len(self.key_edges) - 1, len(slots)

        def submit(*args, key: str):
            self.tasks += 1
            return self.client.submit(*args, key=f"depstat-{key}-{tag}")

        per_shard = []  # per shard and range, every slot's tables: with one range, the whole shard result
        for i, (lo, hi) in enumerate(zip(self.bounds[:-1], self.bounds[1:])):
            shard = submit(_count_shard, str(self.path), int(lo), int(hi), self._doc_ends_of(lo, hi), spec,
                           self.shift, vocab, self.key_edges, layout, key=f"shard-{i}")
            per_shard.append([shard] if n_ranges == 1 else
                             [submit(_piece, shard, q, key=f"piece-{i}-{q}") for q in range(n_ranges)])
        # a tree of merges per (range, block): no task holds more than about merge_tables tables
        fan_in = max(2, self.merge_tables // n_slots)
        pick = 0 if n_ranges == 1 else None  # the range to take from a whole shard result
        top = [[None] * self.n_blocks for _ in range(n_ranges)]
        for q in range(n_ranges):
            for g in range(self.n_blocks):
                level, ins = 0, [per_shard[i][q] for i in self.block_shards[g]]
                while len(ins) > 1:
                    ins = [submit(_block_task, vocab, pick if level == 0 else None, *ins[k : k + fan_in],
                                  key=f"block-{q}-{g}-{level}-{k}")
                           for k in range(0, len(ins), fan_in)]
                    level += 1
                top[q][g] = (ins[0], pick if level == 0 else None)

        def block_table(s: int, q: int, g: int) -> tuple[object, tuple[int, int | None] | None]:
            """Slot s's table of range q and block g, and what a range task picks from it: with one
            range, the whole result (little data); with several, a task picks it where it lies."""
            result, rng = top[q][g]
            if n_ranges == 1:
                return result, (s, rng)
            return submit(_slot_table, result, s, rng, key=f"pick-{s}-{q}-{g}"), None

        # the null's larger offsets are swept by the range and combine tasks of its smallest: one
        # range task a range and one combine task for all of them
        swept = {s: [s] + sorted((i for i in base_of if base_of[i] == s), key=lambda i: slots[i][0])
                 for s in set(base_of.values())}
        futures, owners = [], []
        for s in range(n_slots):
            if s in base_of:
                continue
            group = swept.get(s, [s])
            parts = []
            for q in range(n_ranges):
                tables, picks = [], []
                for i in group:
                    for g in range(self.n_blocks):
                        table, at = block_table(i, q, g)
                        tables.append(table)
                        picks.append(at)
                parts.append(submit(_range_task, self.n_blocks, vocab, jackknife, first_marginal, len(group), picks,
                                    *tables, key=f"range-{s}-{q}"))
            futures.append(submit(_combine_task, parts, len(group), jackknife, key=f"combine-{s}"))
            owners.append(group)
        results = {}
        with failing_tasks(self._memory_hint()):
            gathered = self.client.gather(futures)
        for group, result in zip(owners, gathered):
            results.update(zip(group, result))
        return {(p, r): results[i] for i, (r, _, p) in enumerate(slots)}


def batch_spec(
    offsets: Sequence[int], partners: Sequence[str], seed: int,
) -> tuple[list, list[tuple[int, int, int, int]], dict[int, int]]:
    """A batch's slots (``counting.slot_arrays``), what a shard task counts for each
    (``shard_tables``' (r, mode, seed, upto)), and for each of the rotation null's larger
    offsets the slot of its smallest.

    The rotation null's partner does not depend on the offset: at each larger offset of the
    batch its table is the one at the next smaller less the pairs of the positions that
    offset drops (partners at that smaller offset, none at ``upto``), so only those are
    counted, and the smallest offset's range tasks change only the cells they touch
    (``swept_range_sums``).
    """
    slots, slot_r, slot_mode, slot_seed = slot_arrays(offsets, partners, seed)
    rotate = sorted((int(r), i) for i, (r, m) in enumerate(zip(slot_r, slot_mode)) if m == kernels.MODE_ROTATE)
    base_of = {i: rotate[0][1] for _, i in rotate[1:]}
    before = {i: smaller for (smaller, _), (_, i) in zip(rotate, rotate[1:])}
    spec = [(before[i], int(m), int(sd), int(r)) if i in base_of else (int(r), int(m), int(sd), 0)
            for i, (r, m, sd) in enumerate(zip(slot_r, slot_mode, slot_seed))]
    return slots, spec, base_of


def graph_plan(
    n_tokens: int, vocab: int, shard_tokens: int | None = None, threads: int = 1, memory: int | None = None,
    entries: float | None = None,
) -> tuple[int, int, int]:
    """The Dask graph's shape for a stream: (positions a shard task counts, first-token
    ranges, tables a merge task holds), for a cluster of ``threads`` worker threads with
    ``memory`` bytes each (None: not known).

    Shards are as large as still leave SHARDS_PER_THREAD a batch to each thread, from
    SHARD_TOKENS to MAX_SHARD_TOKENS positions: fewer, larger tasks for the scheduler. A
    table of a vocabulary up to 256 is dense, at most V^2 cells a slot whatever the shard:
    one range, DENSE_MERGE_FAN_IN tables a merge. A larger vocabulary's table can hold an
    entry per pair and slot, so its shards also keep a batch's tables (2 partners x
    OFFSETS_PER_BATCH slots, ENTRY_BYTES an entry) within 1/SHARD_MEMORY_SHARE of
    ``memory`` (SHARD_TOKENS where it is not known), one range per RANGE_TOKENS of stream
    (at most MAX_KEY_RANGES) so that a range task holds a part of every block's table, and
    MERGE_FAN_IN tables a merge. With ``entries``, the table entries a position that a
    batch's tables were measured to hold (``DaskCounter.probe``), the shards keep PROBE_SAFETY
    times that within the share instead of the worst case (never more entries than it, so
    never smaller shards).
    ``shard_tokens`` overrides the shard size.
    """
    spread = min(max(n_tokens // (SHARDS_PER_THREAD * max(threads, 1)), SHARD_TOKENS), MAX_SHARD_TOKENS)
    if vocab * vocab <= kernels.DENSE_RANGE_CELLS:
        return shard_tokens or spread, 1, DENSE_MERGE_FAN_IN
    worst = 2 * OFFSETS_PER_BATCH  # entries a position: one a pair and slot
    per_position = worst if entries is None else min(max(PROBE_SAFETY * entries, 1e-6), worst)
    held = int(memory // (SHARD_MEMORY_SHARE * per_position * ENTRY_BYTES)) if memory else 0
    planned = max(min(spread, held), SHARD_TOKENS)
    return shard_tokens or planned, min(MAX_KEY_RANGES, max(1, -(-n_tokens // RANGE_TOKENS))), MERGE_FAN_IN


def thread_memory(client: object) -> int | None:
    """The least memory a worker thread of the cluster may use (a worker's limit over its
    threads), or None where a worker sets no limit."""
    workers = client.scheduler_info().get("workers", {}).values()
    per_thread = [w.get("memory_limit") and w["memory_limit"] // max(w.get("nthreads", 1), 1) for w in workers]
    return min(per_thread) if per_thread and all(per_thread) else None


def first_token_edges(stream: TokenStream, n_ranges: int) -> np.ndarray:
    """Key boundaries (``x * vocab``) of first-token ranges holding about equal numbers of positions."""
    vocab = int(stream.vocab_size)
    cum = np.cumsum(kernels.token_counts(stream.tokens, vocab))  # np.bincount would copy the stream to int64
    targets = cum[-1] * np.arange(1, n_ranges) / max(n_ranges, 1) if cum.size else []
    edges = np.unique(np.r_[0, np.searchsorted(cum, targets, side="right"), vocab])
    return edges.astype(np.int64) * vocab


def _count_shard(
    path: str, lo: int, hi: int, doc_ends: np.ndarray, spec: list, shift: int, vocab: int,
    key_edges: np.ndarray, layout: np.ndarray,
) -> list[list[CountTable]]:
    """Worker task: the tables of one shard, per slot and first-token range (memory-mapped stream)."""
    tokens = np.load(path, mmap_mode="r")
    return [split(t, key_edges) for t in shard_tables(tokens, lo, hi, doc_ends, spec, shift, vocab, layout=layout)]


def _shard_entries(
    path: str, lo: int, hi: int, doc_ends: np.ndarray, spec: list, shift: int, vocab: int, layout: np.ndarray,
) -> int:
    """Worker task: the table entries of one shard, all slots (``DaskCounter.probe``)."""
    tokens = np.load(path, mmap_mode="r")
    return sum(len(t.keys) for t in shard_tables(tokens, lo, hi, doc_ends, spec, shift, vocab, layout=layout))


def _piece(shard: list[list[CountTable]], part: int) -> list[CountTable]:
    """Worker task: every slot's table of one first-token range of a shard."""
    return [tables[part] for tables in shard]


def _slot_table(result: list, slot: int, part: int | None) -> CountTable:
    """One slot's table from a task's result: a shard's (``[slot][range]``, with ``part`` the
    range) or a piece's or block task's (``[slot]``, ``part`` None)."""
    return result[slot] if part is None else result[slot][part]


def _block_task(vocab: int, part: int | None, *inputs: list) -> list[CountTable]:
    """Worker task: the tables of some of one block's shards (all slots, one first-token range:
    whole shard results with ``part``, pieces or merges without) merged, one table per slot."""
    n_slots = len(inputs[0])
    return [merge([_slot_table(x, s, part) for x in inputs], vocab) for s in range(n_slots)]


@dataclass(frozen=True)
class SweptParts:
    """A swept range task's partial sums, one a slot, as one object: Dask would send a list's
    items apart, and with them the blocks x vocab second-token counts they share once each."""

    parts: list[PartialSums]


def _range_task(
    n_blocks: int, vocab: int, jackknife: bool, first_marginal: bool, n_slots: int,
    picks: list[tuple[int, int | None] | None], *tables: CountTable | list,
) -> PartialSums | SweptParts:
    """Worker task: one first-token range of a slot, from its table of every block, as partial
    sums; with ``n_slots`` > 1, of the rotation null at a batch's smallest offset and, after
    it, of each larger offset, from the tables of the pairs it drops (``swept_range_sums``).
    ``picks`` gives, for an input that holds several slots' tables, the (slot, range) to
    take (``_slot_table``); without ``first_marginal`` the first marginal's sums are NaN."""
    chosen = [t if at is None else _slot_table(t, *at) for t, at in zip(tables, picks)]
    if n_slots == 1:
        return range_sums(chosen, list(range(n_blocks)), n_blocks, vocab, jackknife, first_marginal=first_marginal)
    per_slot = [chosen[k * n_blocks : (k + 1) * n_blocks] for k in range(n_slots)]
    return SweptParts(swept_range_sums(per_slot[0], per_slot[1:], vocab, jackknife, first_marginal))


def _combine_task(parts: list, n_slots: int, jackknife: bool) -> list[TableSums]:
    """Worker task: ``combine`` of the ranges' partial sums of one slot, or with ``n_slots`` > 1
    of each slot's entry in the ranges' ``SweptParts`` (``_range_task``): one TableSums a slot."""
    if n_slots == 1:
        return [combine(parts, jackknife)]
    return [combine([p.parts[k] for p in parts], jackknife) for k in range(n_slots)]


def _spec_key(spec: list) -> str:
    return hashlib.sha1(repr(spec).encode()).hexdigest()[:12]


def _write_tokens(stream: TokenStream, directory: Path) -> Path:
    """The stream's tokens as a .npy named by their content, written atomically once.

    Hashed and written WRITE_CHUNK tokens at a time: a copy of them all (the narrowed array, or
    its bytes for the hash) would put the whole stream in this process's memory, which a
    memory-mapped stream (a reordered sample, ``TokenStream.reordered``) keeps out of it."""
    directory.mkdir(parents=True, exist_ok=True)
    dtype = np.min_scalar_type(max(int(stream.vocab_size) - 1, 0))
    chunks = [slice(a, a + WRITE_CHUNK) for a in range(0, stream.n_tokens, WRITE_CHUNK)]
    digest = hashlib.sha1()
    for chunk in chunks:
        digest.update(np.ascontiguousarray(stream.tokens[chunk], dtype=dtype))
    path = directory / f"depstat-tokens-{digest.hexdigest()[:20]}.npy"

    def write(tmp: str) -> None:
        out = np.lib.format.open_memmap(tmp, mode="w+", dtype=dtype, shape=(stream.n_tokens,))
        for chunk in chunks:
            out[chunk] = stream.tokens[chunk]
        out.flush()
        del out

    if not path.exists():
        atomic_write(path, write)
    return path
