"""PairCounter: prepares a TokenStream once and returns the table sums at any offset."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numba
import numpy as np

from depstat.count import kernels
from depstat.count.sums import TableSums
from depstat.errors import DepstatError
from depstat.tokenize.stream import TokenStream, file_backed

PARTNER_MODES = {"real": kernels.MODE_REAL, "rotate": kernels.MODE_ROTATE, "iid": kernels.MODE_IID,
                 "pairs": kernels.MODE_PAIRS}
# Where more than this share of a stream's positions has no partner at an offset, the
# rotation null rotates the pair list there (``split_rotation``).
PAIRS_DROPPED = 0.01
# Below this much work a kernel runs faster on one thread: waking the second thread for
# every parallel region costs more than the work it takes over. Work is tokens, for
# partition_sums tokens x partner processes counted in the call, for row_sums count cells
# (benchmarks/bench_phases.py --tokens 300000 / 1000000, removed since: `git show
# 74b70dc:benchmarks/bench_phases.py`, compared each phase on one and two threads; an earlier run at 1M tokens had one thread faster for the real pairs alone,
# two for real pairs and a null counted with them, with the jackknife). The row_sums switch
# is set, not measured: about where a parallel region's start-up and the work are alike.
PARALLEL_MIN_WORK = {
    "dense_counts": 1_000_000, "emit_pairs": 1_000_000, "partition_sums": 2_000_000,
    "null_sweep_sums": 1_000_000, "row_sums": 100_000,
}
# Target positions per partition of the partitioned kernel. Fewer, larger partitions mean
# fewer write streams in emit_pairs: on 10M tokens of BPE-8k, real pairs + rotation null,
# emit_pairs took 2.7 ns per pair with 2^17 against 4.5 with 2^15, partition_sums 6.4-8.0
# against 6.0 (bench_phases.py --part-tokens 32768,131072, 2 threads; removed since: `git show
# 74b70dc:benchmarks/bench_phases.py`).
# BPE-32k's rare tokens fill partitions of 256 ids first, so its partitions barely change.
PART_TOKENS = 1 << 17
MAX_PARTS = 1024  # partitions are made larger on long streams to keep the write streams few
DENSE_MAX_VOCAB = 256
# Dense tables of one batch of offsets (4 bytes a cell), sized to stay in a core's L2 cache
# (1 MiB here). In draft timings at 1M bytes of text (29 offsets), 1 MiB (batches of 15
# slots, 864 KiB of tables) was about 5% faster than 256 KiB (4 slots), and alike at 10M.
DENSE_BATCH_BYTES = 1 << 20
# Offsets of the rotation null whose dense tables are summed together (in parallel).
NULL_BATCH = 4
# The null's sums follow the positions an offset drops (``kernels.drop_sums``) when
# DROP_SUMS_RATIO x the positions dropped is under the tokens in use (the marginals on
# partitions) or the occupied cells (dense tables), and are taken again (``row_sums``,
# ``dense_table_sums``) otherwise. Set from draft timings on the speed benchmark's streams
# at 1M and 10M tokens (29 offsets), ratios 0.25 to 8: for BPE's ``null_marginals`` 1 to 2
# were best or within the noise, following every offset the slowest at 10M tokens; for
# bytes' ``_dense_nulls`` 1 and 2 alike, 1.2-1.4x as fast as summing every offset again.
DROP_SUMS_RATIO = 2
# Offsets per sweep of the rotation null: a pair's life (offsets it lasts) is kept in a byte.
MAX_SWEEP = 255
# Offsets the partitioned kernel counts in one pass: they share the first tokens' partitions
# and their sort, and each adds a partner buffer (2 bytes a token for BPE), so 4 costs 8
# bytes a token. Vocabularies over PASS_MAX_VOCAB tokens in use (words) take one offset at
# a time when the pass counts marginals (each slot's are blocks x A x 4 bytes); when it
# counts none (the real pairs' second marginal followed, the first not needed or taken from
# the null) they take OFFSETS_PER_PASS, for 4 x 4 bytes a token: the end-to-end benchmark's
# words (11M tokens, A = 1.5M) were counted in 7.1 s against 9.2 one offset a pass
# (benchmarks/output/end_to_end.txt at 04f3cc9 and b6d24bc). A stream whose buffers for
# SHORT_PASS_OFFSETS offsets fit in SHORT_PASS_BYTES takes that many: in draft timings of the
# speed benchmark's profile at 1M tokens, 8 offsets a pass were 1.06-1.10x as fast as 4
# (6, 10 and 16 no faster than 8), at 10M equal for BPE-8k and 1.08x for BPE-32k, where they
# would double the buffers (17 bytes a token against 9).
OFFSETS_PER_PASS = 4
SHORT_PASS_OFFSETS = 8
SHORT_PASS_BYTES = 64 << 20
PASS_MAX_VOCAB = 1 << 16


@contextmanager
def threads_for(work: int, kernel: str) -> Iterator[None]:
    """Run a kernel (a key of PARALLEL_MIN_WORK) on one thread for little work, on all threads otherwise."""
    before = numba.get_num_threads()
    numba.set_num_threads(before if work >= PARALLEL_MIN_WORK[kernel] else 1)
    try:
        yield
    finally:
        numba.set_num_threads(before)


def partner_seed(seed: int, r: int) -> int:
    """Seed of the i.i.d. null at offset r (different offsets draw different partners)."""
    return seed * 1_000_003 + r


def slot_arrays(
    offsets: Sequence[int], partners: Sequence[str], seed: int
) -> tuple[list[tuple[int, int, str]], np.ndarray, np.ndarray, np.ndarray]:
    """Slots (offset, mode, partner) sorted by offset, and their offset, mode and seed arrays."""
    slots = sorted((int(r), PARTNER_MODES[p], p) for r in offsets for p in partners)
    return (
        slots,
        np.array([s[0] for s in slots], dtype=np.int64),
        np.array([s[1] for s in slots], dtype=np.int64),
        np.array([partner_seed(seed, s[0]) for s in slots], dtype=np.int64),
    )


def pairs_from(doc_lengths: np.ndarray, offsets: Sequence[int]) -> int:
    """Index of the first of the ascending ``offsets`` at which more than PAIRS_DROPPED of the
    positions have no partner in their document: from there on the rotation null rotates
    the pair list (``split_rotation``)."""
    lengths = np.asarray(doc_lengths, dtype=np.int64)
    n = max(int(lengths.sum()), 1)
    dropped = [int(np.minimum(lengths, r).sum()) / n for r in offsets]
    return int(np.searchsorted(dropped, PAIRS_DROPPED, side="right"))


def split_rotation(
    sweep: Callable[..., Iterator[tuple[list[int], dict]]], doc_lengths: np.ndarray, offsets: Sequence[int],
    partners: Sequence[str], *args: object,
) -> Iterator[tuple[list[int], dict[tuple[str, int], TableSums]]]:
    """A counter's ``sweep`` with the rotation null ("rotate") counted as the stream's rotation
    before ``pairs_from`` and as the pair list's ("pairs", reported as "rotate") from there on.

    The stream's rotation takes each partner from anywhere in the stream, the real pairs'
    second tokens come only from r or more tokens into a document: where many positions
    have no partner (documents not much longer than r) the two marginals differ, and so do
    the two tables' estimator biases, which the null is there to cancel. The pair list's
    rotation pairs each first token with another pair's second token: the same marginals.
    """
    offsets = sorted({int(r) for r in offsets})
    cut = pairs_from(doc_lengths, offsets) if "rotate" in partners else len(offsets)
    if cut:
        yield from sweep(offsets[:cut], partners, *args)
    if cut < len(offsets):
        listed = tuple(dict.fromkeys("pairs" if p == "rotate" else p for p in partners))
        for batch, sums in sweep(offsets[cut:], listed, *args):
            out = {key: v for key, v in sums.items() if key[0] != "pairs" or "pairs" in partners}
            yield batch, out | {("rotate", r): v for (p, r), v in sums.items() if p == "pairs"}


def pairs_layout(doc_lengths: np.ndarray, slot_r: np.ndarray, slot_mode: np.ndarray) -> np.ndarray:
    """``kernels.Slots.layout`` of a pass: the documents' starts (and the end), then for each
    slot that rotates the pair list (``MODE_PAIRS``) its pairs before each document (and in
    all); 0 x 0 when no slot does."""
    lengths = np.asarray(doc_lengths, dtype=np.int64)
    if not (np.asarray(slot_mode) == kernels.MODE_PAIRS).any():
        return kernels.NO_LAYOUT
    layout = np.zeros((1 + len(slot_r), len(lengths) + 1), dtype=np.int64)
    np.cumsum(lengths, out=layout[0, 1:])
    for s in np.flatnonzero(np.asarray(slot_mode) == kernels.MODE_PAIRS):
        np.cumsum(np.maximum(lengths - slot_r[s], 0), out=layout[1 + s, 1:])
    return layout


def jackknife_blocks(
    doc_lengths: np.ndarray, n_blocks: int, doc_groups: np.ndarray | None = None,
) -> tuple[np.ndarray, str]:
    """Start positions of contiguous jackknife blocks, and what a block is.

    With ``doc_groups`` (each document's group, non-decreasing) a block is a group of
    documents. Otherwise, with at least two documents per block the cuts fall on document
    boundaries, so a block is a set of whole documents; else the stream is cut into equal
    runs of tokens (a block jackknife, valid when dependence is short compared with a block).
    """
    ends = np.cumsum(doc_lengths)
    total = int(ends[-1]) if len(ends) else 0
    if doc_groups is not None and len(doc_groups) and len(np.unique(doc_groups)) >= 2:
        change = np.flatnonzero(np.diff(doc_groups)) + 1  # first document of each later group
        starts = np.unique(np.concatenate([[0], ends[change - 1], [total]])).astype(np.int64)
        return starts, "documents"
    targets = total * np.arange(1, n_blocks) // n_blocks
    if len(doc_lengths) >= 2 * n_blocks:
        cuts = ends[np.searchsorted(ends, targets)]
        unit = "documents"
    else:
        cuts = targets
        unit = "token blocks"
    starts = np.unique(np.concatenate([[0], cuts, [total]])).astype(np.int64)
    return starts, unit


class PairCounter:
    """Document and block layout of one stream, with its tokens relabelled, built once for all offsets.

    Token ids are replaced by their frequency rank among the tokens present (entropies and
    MI do not depend on the labels), so tables have A x A cells for the A tokens used and
    the most frequent ones share cache lines. With A at most ``DENSE_MAX_VOCAB`` (bytes)
    pairs are counted into whole A x A tables in position order (``kernels.dense_counts``);
    otherwise they are partitioned by first token (``kernels.emit_pairs``) and counted
    partition by partition (``kernels.partition_sums``), OFFSETS_PER_PASS offsets and their
    partner processes in one pass. ``dense`` forces either; ``part_tokens`` sets the
    partition size. The rotation null, whose partners do not depend on the offset, is
    counted once for all the offsets asked for, then follows the pairs each larger offset
    drops at document ends (dense tables, or ``kernels.null_sweep_sums`` on partitions).
    The kernels' buffers are kept between calls (1 + 2 x slots bytes per token for the
    partitioned kernel, the block tables for the dense one). With ``pair_memory`` (bytes),
    the partitions are counted in groups whose pair buffers fit in it, each group reading
    the whole stream: the buffers then hold at most ``pair_memory`` or one partition (a
    frequent token is a partition of its own), whatever the stream's length; and the
    relabelled copy is a memory-mapped temporary file (``stream.file_backed``).
    """

    def __init__(
        self, stream: TokenStream, n_blocks: int = 20, seed: int = 0, dense: bool | None = None,
        part_tokens: int = PART_TOKENS, pair_memory: int | None = None,
    ) -> None:
        self.stream = stream
        if pair_memory is not None and pair_memory <= 0:
            raise DepstatError(f"the pair buffers need a positive memory limit, got {pair_memory:,} bytes")
        self.pair_memory = pair_memory
        tok = stream.tokens
        n = tok.shape[0]
        if n >= 2**31:
            raise DepstatError(
                f"granularity {stream.name!r}: {n:,} tokens is more than one counter holds (2^31)",
                hint="profile a sample with --max-tokens",
            )
        counts = kernels.token_counts(tok, int(stream.vocab_size))  # TokenStream checked the range
        # the tokens in use by count, most frequent first (ties by id), token 0 if none: sorting
        # only these, not the vocabulary, keeps a large one (words: millions of types) cheap
        used = np.flatnonzero(counts)
        by_count = used[np.argsort(-counts[used], kind="stable")] if used.size else np.zeros(1, np.int64)
        self.vocab = len(by_count)
        self.dense = self.vocab <= DENSE_MAX_VOCAB if dense is None else dense
        # The partitioned kernels take 16- or 32-bit tokens, as BPE and word vocabularies need:
        # forced onto a small vocabulary (tests), they run the same compiled code, not one more.
        id_type = np.min_scalar_type(self.vocab - 1)
        rank = np.zeros(len(counts), dtype=id_type if self.dense else np.promote_types(id_type, np.uint16))
        rank[by_count] = np.arange(self.vocab)  # tokens that never occur keep 0
        # with a memory cap the relabelled copy, like the pair buffers, is not held by the process
        self.tokens = np.empty(n, dtype=rank.dtype) if pair_memory is None else file_backed(n, rank.dtype)
        kernels.relabel(tok, rank, self.tokens)
        # partners are kept in a type that also holds the dropped pairs' sentinel, ``vocab``
        self.partner_dtype = np.promote_types(rank.dtype, np.min_scalar_type(self.vocab))
        self.doc_ends = np.cumsum(stream.doc_lengths)
        if not 2 <= n_blocks <= kernels.NOTE_BLOCKS:  # the partitioned kernel notes a block in 15 bits
            raise DepstatError(f"the jackknife needs 2 to {kernels.NOTE_BLOCKS:,} blocks, got {n_blocks}")
        self.block_starts, self.block_unit = jackknife_blocks(stream.doc_lengths, n_blocks, stream.doc_groups)
        self.n_blocks = len(self.block_starts) - 1
        self.shift = max(n // 2, 1)
        self.seed = seed
        self._kept: tuple[np.ndarray, ...] | None = None
        if self.dense:
            return
        target = max(part_tokens, -(-n // MAX_PARTS))
        self.code, self.widths = kernels.partition_tokens(counts[by_count], target)
        self.region = kernels.partition_layout(self.tokens, self.code, self.block_starts, len(self.widths))

    def partner_seed(self, r: int) -> int:
        """Seed of the i.i.d. null at offset r."""
        return partner_seed(self.seed, r)

    def sums(self, r: int, partner: str = "real", jackknife: bool = True) -> TableSums:
        """Table sums and jackknife deltas of the pairs at offset r for a partner process."""
        return self.sums_at([r], (partner,), jackknife)[partner, r]

    def sums_at(
        self, offsets: Sequence[int], partners: Sequence[str] = ("real",), jackknife: bool = True,
        first_marginal: bool = True,
    ) -> dict[tuple[str, int], TableSums]:
        """Table sums for every (partner, offset)."""
        out = {}
        for _, sums in self.sweep(offsets, partners, jackknife, first_marginal):
            out.update(sums)
        return out

    def sweep(
        self, offsets: Sequence[int], partners: Sequence[str] = ("real",), jackknife: bool = True,
        first_marginal: bool = True,
    ) -> Iterator[tuple[list[int], dict[tuple[str, int], TableSums]]]:
        """``sums_at`` batch by batch (``batches``), for progress: yields ``(batch, sums)``; the
        rotation null rotates the pair list where documents end (``split_rotation``)."""
        yield from split_rotation(self._sweep, self.stream.doc_lengths, offsets, partners, jackknife, first_marginal)

    def _sweep(
        self, offsets: Sequence[int], partners: Sequence[str], jackknife: bool, first_marginal: bool,
    ) -> Iterator[tuple[list[int], dict[tuple[str, int], TableSums]]]:
        """``sweep`` over the offsets of one kind of rotation null.

        The rotation null of every offset is counted before the first batch, in one sweep, and
        so is the real pairs' second marginal when the real pairs are the only process counted
        offset by offset. Without ``first_marginal`` the partitioned kernel leaves the first
        marginal's sums out (NaN), for an estimator in which they cancel
        (``estimators.Estimator.first_marginal``).
        """
        offsets = sorted({int(r) for r in offsets})
        each = [p for p in partners if p != "rotate"]  # counted offset by offset
        skip_first = not first_marginal and not self.dense
        nulls = self._rotation_nulls(offsets, jackknife, skip_first) if "rotate" in partners else {}
        seconds = self._real_seconds(offsets, jackknife) if each == ["real"] and not self.dense else {}
        for batch in self.batches(offsets, len(each), any(_marginals_counted(nulls, seconds, skip_first))):
            out = {}
            if each and self.dense:
                out.update(self._dense_batch(batch, each, jackknife))
            elif each:
                out.update(self._partitioned_batch(batch, each, jackknife, nulls, seconds, skip_first))
            out.update({("rotate", r): nulls[r] for r in batch if nulls})
            yield batch, out

    def batches(self, offsets: Sequence[int], n_partners: int = 1, marginals: bool = True) -> list[list[int]]:
        """The offsets, ascending, cut into batches counted together (dense tables that fit in
        cache), as few as the batch size allows and of sizes differing by at most one (a
        last batch of one offset would run its parallel loop over slots on one thread).

        The partitioned kernel takes OFFSETS_PER_PASS offsets (with all their partner
        processes) in one pass, SHORT_PASS_OFFSETS when their buffers fit in
        SHORT_PASS_BYTES, or one at a time for vocabularies over PASS_MAX_VOCAB when the
        pass counts ``marginals``.
        """
        offsets = sorted({int(r) for r in offsets})
        if not self.dense:
            short = self.tokens.shape[0] * (1 + SHORT_PASS_OFFSETS * max(n_partners, 1) * self.partner_dtype.itemsize)
            size = SHORT_PASS_OFFSETS if short <= SHORT_PASS_BYTES else OFFSETS_PER_PASS
            size = size if self.vocab <= PASS_MAX_VOCAB or not marginals else 1
        else:
            cells = self.vocab * self.vocab * 4  # bytes of one slot's table
            size = max(1, DENSE_BATCH_BYTES // (cells * max(n_partners, 1)))
        return [part.tolist() for part in np.array_split(offsets, -(-len(offsets) // size))] if offsets else []

    def _dense_batch(
        self, offsets: Sequence[int], partners: Sequence[str], jackknife: bool
    ) -> dict[tuple[str, int], TableSums]:
        """Count every slot (offset, partner) of a batch in whole A x A tables."""
        slots, slot_r, slot_mode, slot_seed = slot_arrays(offsets, partners, self.seed)
        layout = pairs_layout(self.stream.doc_lengths, slot_r, slot_mode)
        counts = self._dense_tables(len(slots))
        with threads_for(self.stream.n_tokens, "dense_counts"):
            kernels.dense_counts(self.tokens, self.doc_ends, self.block_starts, slot_r, slot_mode, slot_seed,
                                 self.shift, layout, counts, numba.get_num_threads())
            return _by_slot(slots, *kernels.dense_table_sums(counts, kernels.SUM_TABLES, jackknife))

    def _dense_tables(self, n_slots: int) -> np.ndarray:
        """Block tables (blocks x slots x A x A int32) for the dense kernel, kept for the next batch.

        Fresh pages cost a fault and a zero-fill each, so every batch reuses them.
        """
        cells = self.n_blocks * n_slots * self.vocab * self.vocab
        if self._kept is None or self._kept[0].size < cells:
            self._kept = (np.empty(cells, dtype=np.int32),)
        return self._kept[0][:cells].reshape(self.n_blocks, n_slots, self.vocab, self.vocab)

    def groups(self, bytes_per_pair: int) -> list[tuple[int, int]]:
        """Runs ``[lo, hi)`` of consecutive partitions counted together: all of them, or with
        ``pair_memory`` as many as fit in it at ``bytes_per_pair`` (at least one each)."""
        n_parts = len(self.widths)
        if self.pair_memory is None:
            return [(0, n_parts)]
        start = np.append(self.region[:, 0], self.tokens.shape[0])  # each partition's first place, and the end
        fit = max(1, self.pair_memory // bytes_per_pair)
        out, lo = [], 0
        for hi in range(2, n_parts + 1):
            if start[hi] - start[lo] > fit:
                out.append((lo, hi - 1))
                lo = hi - 1
        out.append((lo, n_parts))
        return out

    def group_layout(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, int, int]:
        """``(code, region, spill, places)`` for ``emit_pairs`` to write partitions lo .. hi - 1 only.

        The group's regions start at 0; the tokens of other partitions go to partition
        ``spill`` = hi - lo, which ``emit_pairs`` skips (-1 when the group is every partition).
        """
        n_parts = len(self.widths)
        if (lo, hi) == (0, n_parts):
            return self.code, self.region, -1, self.tokens.shape[0]
        part = self.code >> kernels.XLOC_BITS
        spill = hi - lo
        code = np.where((part >= lo) & (part < hi), self.code - (lo << kernels.XLOC_BITS),
                        spill << kernels.XLOC_BITS).astype(self.code.dtype)
        base = self.region[lo, 0]
        end = self.region[hi, 0] if hi < n_parts else self.tokens.shape[0]
        return code, self.region[lo:hi] - base, spill, end - base

    def _buffers(
        self, n_slots: int, places: int, room: int | None = None, marginals: tuple[bool, bool] = (True, True),
    ) -> tuple[np.ndarray, ...]:
        """The partitioned kernel's buffers (xloc, ys, first, second) for ``places`` pairs, C-contiguous,
        in memory kept for the next batch and sized for ``room`` (default ``places``) pairs; a
        marginal not counted (``marginals``: first, second) gets blocks x 0 counts a slot.

        Fresh pages cost a fault and a zero-fill each, so every batch reuses them.
        """
        room = max(room or places, places)
        shapes = [(n_slots, self.n_blocks, self.vocab if counted else 0) for counted in marginals]
        kept = self._kept
        if kept is None or [kept[2].shape, kept[3].shape] != shapes or kept[0].shape[0] < room:
            self._kept = None  # let the old buffers go first
            self._kept = (
                np.empty(room, dtype=np.uint8), np.empty(n_slots * room, dtype=self.partner_dtype),
                *(np.empty(shape, dtype=np.int32) for shape in shapes),
            )
        xloc, ys, first, second = self._kept
        # a group's slice of a (slots, room) array would not be contiguous: another kernel signature
        return xloc[:places], ys[: n_slots * places].reshape(n_slots, places), first, second

    def _partitioned_batch(
        self, offsets: Sequence[int], partners: Sequence[str], jackknife: bool, nulls: dict[int, TableSums],
        seconds: dict[int, tuple[np.ndarray, ...]], skip_first: bool,
    ) -> dict[tuple[str, int], TableSums]:
        """Count every slot (offset, partner) of a batch in one partitioned pass per group of partitions.

        Every partner process at offset r has the same first positions, in the same blocks,
        as the rotation null: with the null's sums at r in ``nulls``, the first marginal's
        sums are taken from them, and the first marginal is not counted; with ``skip_first``
        it is not counted either, and its sums are NaN. With the real pairs' second
        marginal's sums and block pairs at r in ``seconds`` (``_real_seconds``; real pairs
        only), the second marginal is not counted either.
        """
        slots, slot_r, modes, seeds = slot_arrays(offsets, partners, self.seed)
        layout = pairs_layout(self.stream.doc_lengths, slot_r, modes)
        none = np.empty(0, dtype=np.uint8)
        table = kernels.SUM_TABLES
        n = self.stream.n_tokens
        width = self.partner_dtype.itemsize
        joint, joint_jk = 0.0, 0.0
        layouts = [(lo, hi, *self.group_layout(lo, hi)) for lo, hi in self.groups(1 + len(slots) * width)]
        most = max(places for *_, places in layouts)
        marginals = _marginals_counted(nulls, seconds, skip_first)
        for i, (lo, hi, code, region, spill, places) in enumerate(layouts):
            xloc, ys, first, second = self._buffers(len(slots), places, most, marginals)
            fill_end = np.empty_like(region)
            with threads_for(n, "emit_pairs"):
                kernels.emit_pairs(
                    kernels.Source(self.tokens, code, self.doc_ends, self.block_starts, region),
                    kernels.Slots(slot_r, modes, seeds, self.shift, 0, layout),
                    kernels.Emitted(xloc, ys, fill_end, first, second, none, none),
                    self.vocab, spill, i > 0, numba.get_num_threads(),
                )
            with threads_for(places * len(slots), "partition_sums"):
                part, part_jk = kernels.partition_sums(
                    xloc, ys, region, fill_end, self.widths[lo:hi], self.vocab, table,
                    jackknife, numba.get_num_threads(),
                )
            joint, joint_jk = joint + part, joint_jk + part_jk  # cells of different first tokens add up
        with threads_for(max(first.size, second.size), "row_sums"):  # the groups' passes added up the marginals
            if nulls:
                first_sums, first_jk = (np.array([getattr(nulls[r], name) for r, _, _ in slots])
                                        for name in ("first", "first_jk"))
            elif skip_first:
                first_sums, first_jk = np.full(joint.shape, np.nan), np.full(joint_jk.shape, np.nan)
            else:
                first_sums, first_jk = kernels.row_sums(first, table, jackknife)
            if seconds:
                second_sums, second_jk, block_pairs = (np.array([seconds[r][k] for r, _, _ in slots]) for k in (0, 1, 2))
            else:
                second_sums, second_jk = kernels.row_sums(second, table, jackknife)
                block_pairs = second.sum(axis=2, dtype=np.int64)
        return _by_slot(slots, joint, first_sums, second_sums, joint_jk, first_jk, second_jk, block_pairs)

    def _real_seconds(self, offsets: list[int], jackknife: bool) -> dict[int, tuple[np.ndarray, ...]]:
        """The real pairs' second marginal (blocks x A) at every offset (ascending), counted
        once and followed from offset to offset: ``row_sums``' ``(sums, deltas)`` and the
        pairs in each block, at each offset.

        Block g's partners at offset r are its positions' tokens r further on, so a larger
        offset loses the first tokens of each document and, where a block cuts a document,
        moves tokens over the cut (``kernels.partner_runs``). Where DROP_SUMS_RATIO x the
        positions moved is under A, the sums follow the moves (``kernels.move_partners``);
        otherwise they are taken again (``row_sums``).
        """
        table = kernels.SUM_TABLES
        rows = np.zeros((self.n_blocks, self.vocab), dtype=np.int32)
        sums, deltas = np.zeros(kernels.N_SUMS), np.zeros((self.n_blocks, kernels.N_SUMS))
        block_pairs = np.zeros(self.n_blocks, dtype=np.int64)
        out = {}
        for j, r in enumerate(offsets):
            runs = kernels.partner_runs(self.doc_ends, self.block_starts, offsets[j - 1] if j else -1, r)
            follow = j > 0 and (runs[:, 2] - runs[:, 1]).sum() * DROP_SUMS_RATIO < self.vocab
            block_pairs = block_pairs + kernels.move_partners(self.tokens, runs, rows, table, jackknife, follow,
                                                              sums, deltas)
            if not follow:
                with threads_for(rows.size, "row_sums"):
                    sums, deltas = (a[0] for a in kernels.row_sums(rows[None], table, jackknife))
            out[r] = (sums.copy(), deltas.copy(), block_pairs)
        return out

    def _rotation_nulls(self, offsets: list[int], jackknife: bool, skip_first: bool = False) -> dict[int, TableSums]:
        """The rotation null's sums at every offset (ascending), counted once and then followed
        through the pairs each larger offset drops (``_dense_nulls`` or ``_null_sweep``, which
        leaves out the first marginal's sums with ``skip_first``)."""
        if not offsets:
            return {}
        if self.dense:
            return self._dense_nulls(offsets, jackknife)
        out = {}
        for i in range(0, len(offsets), MAX_SWEEP):
            out.update(self._null_sweep(offsets[i : i + MAX_SWEEP], jackknife, skip_first))
        return out

    def _dense_nulls(self, offsets: list[int], jackknife: bool) -> dict[int, TableSums]:
        """The rotation null in dense block tables: counted and summed at the first offset, then
        each later offset's dropped pairs taken out.

        While DROP_SUMS_RATIO x the positions an offset drops is under the occupied cells, the
        sums follow the drops (``kernels.drop_sums``, with the per-block marginals). From the
        first offset where more drop, the tables of NULL_BATCH offsets at a time are copied
        side by side and summed together, so ``dense_table_sums`` runs them in parallel.
        """
        tables = kernels.SUM_TABLES
        work = np.empty((self.n_blocks, 1, self.vocab, self.vocab), dtype=np.int32)
        table = work[:, 0]
        mode = np.array([kernels.MODE_ROTATE], dtype=np.int64)
        with threads_for(self.stream.n_tokens, "dense_counts"):
            kernels.dense_counts(self.tokens, self.doc_ends, self.block_starts, np.array(offsets[:1]), mode,
                                 np.zeros(1, dtype=np.int64), self.shift, kernels.NO_LAYOUT, work, numba.get_num_threads())
            joint, first, second, joint_jk, first_jk, second_jk, block_pairs = (
                a[0] for a in kernels.dense_table_sums(work, tables, jackknife))
        sums, deltas = np.stack([first, second, joint]), np.stack([first_jk, second_jk, joint_jk])
        rows, cols = table.sum(axis=2, dtype=np.int32), table.sum(axis=1, dtype=np.int32)
        out = {}
        j = 0
        while True:
            out[offsets[j]] = TableSums(int(block_pairs.sum()), sums[2].copy(), sums[0].copy(), sums[1].copy(),
                                        deltas[2].copy(), deltas[0].copy(), deltas[1].copy(), block_pairs)
            j += 1
            if j == len(offsets):
                return out
            before, r = offsets[j - 1], offsets[j]
            if np.clip(self.stream.doc_lengths - before, 0, r - before).sum() * DROP_SUMS_RATIO >= sums[2, 2]:
                break
            block_pairs = block_pairs - kernels.drop_sums(
                self.tokens, self.doc_ends, self.block_starts, before, r, self.shift, rows, cols, table, tables,
                jackknife, sums, deltas)
        none = np.empty((0, 0), dtype=np.int32)
        with threads_for(self.stream.n_tokens, "dense_counts"):
            for i in range(j, len(offsets), NULL_BATCH):
                batch = offsets[i : i + NULL_BATCH]
                counts = self._dense_tables(len(batch))
                for k, r in enumerate(batch):
                    kernels.drop_positions(self.tokens, self.doc_ends, self.block_starts, offsets[i + k - 1], r,
                                           self.shift, none, none, table)
                    counts[:, k] = table
                slots = [(r, mode[0], "rotate") for r in batch]
                by_slot = _by_slot(slots, *kernels.dense_table_sums(counts, tables, jackknife))
                out.update({r: by_slot["rotate", r] for r in batch})
        return out

    def emit_null(
        self, offsets: list[int], group: tuple[int, int] | None = None, marginals: tuple[np.ndarray, ...] | None = None,
        first_marginal: bool = True,
    ) -> tuple[np.ndarray, ...]:
        """The rotation null's pairs at the first of ``offsets`` (ascending) in fresh partition
        buffers, each with its life, for the partitions of ``group`` (all by default):
        ``(xloc, ys, life, region, fill_end, first, second)``. The group's marginals are added
        to ``marginals`` (first, second) when given; without ``first_marginal`` a fresh
        ``first`` counts nothing (blocks x 0)."""
        code, region, spill, places = self.group_layout(*(group or (0, len(self.widths))))
        # life of a position d tokens before its document's end: the offsets r < d
        life_of = np.searchsorted(np.asarray(offsets), np.arange(offsets[-1] + 2), side="left").astype(np.uint8)
        xloc, life = np.empty(places, dtype=np.uint8), np.empty(places, dtype=np.uint8)
        ys = np.empty((1, places), dtype=self.tokens.dtype)
        fill_end = np.empty_like(region)
        add = marginals is not None
        first, second = marginals if add else (
            np.empty((1, self.n_blocks, self.vocab if counted else 0), dtype=np.int32) for counted in (first_marginal, True))
        with threads_for(self.tokens.shape[0], "emit_pairs"):
            kernels.emit_pairs(
                kernels.Source(self.tokens, code, self.doc_ends, self.block_starts, region),
                kernels.Slots(np.array(offsets[:1]), np.array([kernels.MODE_ROTATE]), np.zeros(1, dtype=np.int64),
                              self.shift, 0, kernels.NO_LAYOUT),
                kernels.Emitted(xloc, ys, fill_end, first, second, life_of, life),
                self.vocab, spill, add, numba.get_num_threads(),
            )
        return xloc, ys, life, region, fill_end, first, second

    def _null_sweep(self, offsets: list[int], jackknife: bool, skip_first: bool) -> dict[int, TableSums]:
        """``_rotation_nulls`` on partitions, for at most MAX_SWEEP ascending offsets.

        ``emit_pairs`` writes the null pairs of the first offset with each pair's life (how
        many of the offsets keep its position); ``null_sweep_sums`` counts them and follows
        the pairs dropped at document ends through the later offsets, group by group of
        partitions; the marginals follow the same positions (``null_marginals``; the first
        not with ``skip_first``: its sums are NaN).
        """
        table = kernels.SUM_TABLES
        joint, joint_jk = 0.0, 0.0
        first = second = None
        for lo, hi in self.groups(2 + self.tokens.dtype.itemsize):
            xloc, ys, life, region, fill_end, first, second = self.emit_null(
                offsets, (lo, hi), None if first is None else (first, second), not skip_first)
            with threads_for(xloc.shape[0], "null_sweep_sums"):
                part, part_jk = kernels.null_sweep_sums(
                    xloc, ys, life, region, fill_end, self.widths[lo:hi], self.vocab, len(offsets), table,
                    jackknife, numba.get_num_threads(),
                )
            joint, joint_jk = joint + part, joint_jk + part_jk
            del xloc, ys, life
        first = np.empty((0, 0), dtype=first.dtype) if skip_first else first[0]
        marginals = self.null_marginals(offsets, first, second[0], jackknife)
        return {
            r: TableSums(int(pairs.sum()), joint[j], f_sums, s_sums, joint_jk[j], f_jk, s_jk, pairs)
            for j, (r, (pairs, f_sums, s_sums, f_jk, s_jk)) in enumerate(zip(offsets, marginals))
        }

    def null_marginals(
        self, offsets: list[int], first: np.ndarray, second: np.ndarray, jackknife: bool,
    ) -> list[tuple[np.ndarray, ...]]:
        """The rotation null's marginals (blocks x A, at the first of the ascending ``offsets``;
        changed in place; an empty ``first`` is not followed and its sums are NaN) followed
        through the positions each later offset drops:
        ``(block_pairs, first_sums, second_sums, first_jk, second_jk)`` at every offset.

        Where DROP_SUMS_RATIO x the positions dropped is under A, the sums follow the drops
        (``kernels.drop_sums``, O(dropped x blocks)); otherwise they are taken again
        (``row_sums``, O(A x blocks)).
        """
        table = kernels.SUM_TABLES
        block_pairs = second.sum(axis=1, dtype=np.int64)
        sums = np.full((2, kernels.N_SUMS), np.nan)  # row_sums fills them in at the first offset
        deltas = np.full((2, self.n_blocks, kernels.N_SUMS), np.nan)
        no_table = np.empty((0, 0, 0), dtype=np.int32)
        out = []
        for j, r in enumerate(offsets):
            before = offsets[j - 1] if j else r
            step = (self.tokens, self.doc_ends, self.block_starts, before, r, self.shift, first, second, no_table)
            dropped = np.clip(self.stream.doc_lengths - before, 0, r - before).sum()
            if j and dropped * DROP_SUMS_RATIO < self.vocab:
                block_pairs = block_pairs - kernels.drop_sums(*step, table, jackknife, sums, deltas)
            else:
                if j:
                    block_pairs = block_pairs - kernels.drop_positions(*step)
                with threads_for(second.size, "row_sums"):  # each in place: a stacked copy is 2 x blocks x A
                    for m, marginal in enumerate((first, second)):
                        if marginal.size:  # an empty first stays NaN
                            m_sums, m_deltas = kernels.row_sums(marginal[None], table, jackknife)
                            sums[m], deltas[m] = m_sums[0], m_deltas[0]
            out.append((block_pairs, sums[0].copy(), sums[1].copy(), deltas[0].copy(), deltas[1].copy()))
        return out


def _marginals_counted(nulls: dict, seconds: dict, skip_first: bool) -> tuple[bool, bool]:
    """Whether a partitioned pass counts the (first, second) marginal. Not the first when the
    null has it or it is skipped (A x blocks of writes a slot), nor the second when it is
    followed (a random write a pair, out of L2 cache for 8 slots of a large A)."""
    return not (nulls or skip_first), not seconds


def _by_slot(
    slots: list[tuple[int, int, str]], joint: np.ndarray, first: np.ndarray, second: np.ndarray,
    joint_jk: np.ndarray, first_jk: np.ndarray, second_jk: np.ndarray, block_pairs: np.ndarray,
) -> dict[tuple[str, int], TableSums]:
    """The kernels' slot-indexed arrays as one TableSums per (partner, offset)."""
    return {
        (p, r): TableSums(
            int(block_pairs[i].sum()), joint[i], first[i], second[i], joint_jk[i], first_jk[i],
            second_jk[i], block_pairs[i],
        )
        for i, (r, _, p) in enumerate(slots)
    }
