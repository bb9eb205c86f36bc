"""PairCounter: prepares a TokenStream once and returns the table sums at any offset."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numba
import numpy as np

from depstat import kernels
from depstat.estimators import TableSums
from depstat.stream import TokenStream

PARTNER_MODES = {"real": kernels.MODE_REAL, "rotate": kernels.MODE_ROTATE, "iid": kernels.MODE_IID}
# Below this many tokens one thread is faster: waking the second thread for every parallel
# region costs more than the work it takes over (benchmarks/bench_speed.py --threads 1 / 2
# before this switch: plug-in profile of 250k byte tokens 0.060 s on one thread, 0.327 s on
# two; at 1M BPE-8k tokens two threads won, 2.3 s against 4.5 s).
PARALLEL_MIN_TOKENS = 1_000_000


@contextmanager
def threads_for(n_tokens: int) -> Iterator[None]:
    """Run the kernels on one thread for small streams, on all of Numba's threads otherwise."""
    before = numba.get_num_threads()
    numba.set_num_threads(before if n_tokens >= PARALLEL_MIN_TOKENS else 1)
    try:
        yield
    finally:
        numba.set_num_threads(before)


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
    """Token groups, remaining-length and block arrays for one stream, built once."""

    def __init__(self, stream: TokenStream, n_blocks: int = 20, seed: int = 0) -> None:
        self.stream = stream
        tok = stream.tokens
        self.order, self.starts = kernels.group_by_token(tok, int(stream.vocab_size))
        ends = np.cumsum(stream.doc_lengths)
        doc_of = np.repeat(np.arange(stream.n_docs), stream.doc_lengths)
        self.rem = (ends[doc_of] - np.arange(tok.shape[0]) - 1).astype(np.int32)
        self.block_starts, self.block_unit = jackknife_blocks(stream.doc_lengths, n_blocks)
        self.n_blocks = len(self.block_starts) - 1
        self.block = np.repeat(
            np.arange(self.n_blocks, dtype=np.int32), np.diff(self.block_starts)
        )
        self.shift = max(tok.shape[0] // 2, 1)
        self.seed = seed

    def partner_seed(self, r: int) -> int:
        """Seed of the i.i.d. null at offset r (different offsets draw different partners)."""
        return self.seed * 1_000_003 + r

    def sums(self, r: int, partner: str = "real", jackknife: bool = True) -> TableSums:
        """Table sums and jackknife deltas of the pairs at offset r for a partner process."""
        mode = PARTNER_MODES[partner]
        seed = self.partner_seed(r)
        table = kernels.SUM_TABLES
        s = self.stream
        with threads_for(s.n_tokens):
            joint, first, joint_jk, first_jk, block_pairs = kernels.joint_sums(
                s.tokens, self.order, self.starts, self.rem, self.block, self.n_blocks,
                r, mode, self.shift, seed, table, jackknife,
            )
            second, second_jk = kernels.second_sums(
                s.tokens, self.rem, self.block_starts, int(s.vocab_size), r, mode, self.shift,
                seed, table, jackknife,
            )
        return TableSums(
            int(block_pairs.sum()), joint, first, second, joint_jk, first_jk, second_jk,
            block_pairs,
        )
