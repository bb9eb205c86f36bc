"""PairCounter: prepares a TokenStream once and returns the table sums at any offset."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numba
import numpy as np

from depstat import kernels
from depstat.errors import DepstatError
from depstat.estimators import TableSums
from depstat.stream import TokenStream

PARTNER_MODES = {"real": kernels.MODE_REAL, "rotate": kernels.MODE_ROTATE, "iid": kernels.MODE_IID}
# Below this many tokens one thread is faster: waking the second thread for every parallel
# region costs more than the work it takes over (benchmarks/bench_speed.py --threads 1 / 2
# before this switch: plug-in profile of 250k byte tokens 0.060 s on one thread, 0.327 s on
# two; at 1M BPE-8k tokens two threads won, 2.3 s against 4.5 s).
PARALLEL_MIN_TOKENS = 1_000_000
# Run counts buffered per worker for the one-sweep jackknife (3 int64 each: 24 MB).
BUFFER_CELLS = 1 << 20
# Per-cell counting state of one sweep (16 bytes a cell), sized to stay in a core's L2 cache.
STATE_BYTES = 1 << 19
DENSE_MAX_VOCAB = 256


@contextmanager
def threads_for(n_tokens: int) -> Iterator[None]:
    """Run the kernels on one thread for small streams, on all of Numba's threads otherwise."""
    before = numba.get_num_threads()
    numba.set_num_threads(before if n_tokens >= PARALLEL_MIN_TOKENS else 1)
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


def jackknife_blocks(doc_lengths: np.ndarray, n_blocks: int) -> tuple[np.ndarray, str]:
    """Start positions of contiguous jackknife blocks, and what a block is.

    With at least two documents per block the cuts fall on document boundaries, so a
    block is a set of whole documents; otherwise the stream is cut into equal runs of
    tokens (a block jackknife, valid when dependence is short compared with a block).
    """
    ends = np.cumsum(doc_lengths)
    total = int(ends[-1]) if len(ends) else 0
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
    """Document and block layout of one stream, and its token groups, built once for all offsets.

    Vocabularies of at most ``DENSE_MAX_VOCAB`` tokens (bytes) are counted into whole
    V x V tables in position order (``kernels.dense_pair_sums``); larger ones by token
    group (``kernels.joint_sums``), which needs the grouped layout. ``dense`` forces either.
    """

    def __init__(
        self, stream: TokenStream, n_blocks: int = 20, seed: int = 0, buffer_cells: int = BUFFER_CELLS,
        dense: bool | None = None,
    ) -> None:
        self.stream = stream
        self.buffer_cells = buffer_cells
        tok = stream.tokens
        n = tok.shape[0]
        if n >= 2**31:
            raise DepstatError(
                f"granularity {stream.name!r}: {n:,} tokens is more than one counter holds (2^31)",
                hint="profile a sample with --max-tokens",
            )
        # The partner reads are random: the smallest token type keeps more of them in cache.
        self.tokens = tok.astype(np.min_scalar_type(max(int(stream.vocab_size) - 1, 0)))
        self.doc_ends = ends = np.cumsum(stream.doc_lengths)
        doc_starts = ends - stream.doc_lengths
        self.block_starts, self.block_unit = jackknife_blocks(stream.doc_lengths, n_blocks)
        self.n_blocks = len(self.block_starts) - 1
        self.shift = max(n // 2, 1)
        self.seed = seed
        self.dense = int(stream.vocab_size) <= DENSE_MAX_VOCAB if dense is None else dense
        if self.dense:
            return
        self.order, self.starts = kernels.group_by_token(tok, int(stream.vocab_size))
        # Grouped order: the room left in each position's document, and runs of positions
        # that share a token group and a jackknife block.
        self.rem_sorted, block_sorted = kernels.grouped_layout(self.order, ends, self.block_starts)
        cuts = np.flatnonzero(block_sorted[1:] != block_sorted[:-1]) + 1
        self.run_starts = np.unique(np.concatenate([cuts, self.starts])).astype(np.int64)
        self.run_block = block_sorted[self.run_starts[:-1]].astype(np.int64) if n else np.zeros(0, np.int64)
        # Position order: segments inside one document and one block.
        self.seg_starts = np.unique(np.concatenate([doc_starts, self.block_starts])).astype(np.int64)
        self.seg_doc_end = ends[np.searchsorted(ends, self.seg_starts[:-1], side="right")]
        self.block_segs = np.searchsorted(self.seg_starts, self.block_starts).astype(np.int64)

    def partner_seed(self, r: int) -> int:
        """Seed of the i.i.d. null at offset r."""
        return partner_seed(self.seed, r)

    def sums(self, r: int, partner: str = "real", jackknife: bool = True) -> TableSums:
        """Table sums and jackknife deltas of the pairs at offset r for a partner process."""
        return self.sums_at([r], (partner,), jackknife)[partner, r]

    def sums_at(
        self, offsets: Sequence[int], partners: Sequence[str] = ("real",), jackknife: bool = True
    ) -> dict[tuple[str, int], TableSums]:
        """Table sums for every (partner, offset); offsets are swept together in cache-sized batches."""
        out = {}
        for batch in self.batches(offsets, len(partners)):
            out.update(self._sweep(batch, partners, jackknife))
        return out

    def batches(self, offsets: Sequence[int], n_partners: int = 1) -> list[list[int]]:
        """The offsets, ascending, cut into batches whose counting state fits in cache."""
        offsets = sorted({int(r) for r in offsets})
        vocab = int(self.stream.vocab_size)
        cells = vocab * vocab * 4 if self.dense else 16 * vocab  # bytes of counting state per slot
        size = max(1, STATE_BYTES // (cells * max(n_partners, 1)))
        return [offsets[i : i + size] for i in range(0, len(offsets), size)]

    def _sweep(
        self, offsets: Sequence[int], partners: Sequence[str], jackknife: bool
    ) -> dict[tuple[str, int], TableSums]:
        """One pass of the kernels over the slots (offset, partner), sorted by offset."""
        slots, slot_r, slot_mode, slot_seed = slot_arrays(offsets, partners, self.seed)
        vocab = int(self.stream.vocab_size)
        table = kernels.SUM_TABLES
        with threads_for(self.stream.n_tokens):
            if self.dense:
                sums = kernels.dense_pair_sums(
                    self.tokens, self.doc_ends, self.block_starts, slot_r, slot_mode, slot_seed,
                    self.shift, table, jackknife, vocab,
                )
                return _by_slot(slots, *sums)
            joint, first, joint_jk, first_jk, block_pairs = kernels.joint_sums(
                self.tokens, self.order, self.starts, self.rem_sorted, self.run_starts,
                self.run_block, self.n_blocks, slot_r, slot_mode, slot_seed, self.shift, table,
                jackknife, self.buffer_cells, numba.get_num_threads(),
            )
            second, second_jk = kernels.second_sums(
                self.tokens, self.seg_starts, self.seg_doc_end, self.block_segs, vocab,
                slot_r, slot_mode, slot_seed, self.shift, table, jackknife,
            )
        return _by_slot(slots, joint, first, second, joint_jk, first_jk, second_jk, block_pairs)


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
