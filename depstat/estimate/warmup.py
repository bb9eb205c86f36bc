"""A first run's second compiler: ``python -m depstat.estimate.warmup ESTIMATOR BLOCKS DRAWS ORDER POPULATION``.

Counts a synthetic stream of 16-bit tokens as ``profile()`` counts a BPE granularity, so that
Numba compiles (and caches) the partitioned kernels in this process while the first run reads,
tokenizes and compiles the dense ones for bytes (``profile.kernels_compiled_beside`` starts it).
"""

from __future__ import annotations

import sys

import numpy as np

from depstat.estimate.profile import log_offsets, mi_profile
from depstat.tokenize.stream import TokenStream

VOCAB = 1024  # used tokens: more than a dense table takes, 16-bit ids as every BPE up to 65,536
DOCS, DOC_TOKENS = 16, 4096  # documents long enough that every offset of the default grid has pairs


def main(estimator: str, n_blocks: int, null_draws: int, order: str, population: str, max_offset: int) -> None:
    """Profile the synthetic stream at the default grid with the run's counting options."""
    tokens = np.random.default_rng(0).integers(0, VOCAB, DOCS * DOC_TOKENS).astype(np.uint16)
    stream = TokenStream("warm-up", tokens, np.full(DOCS, DOC_TOKENS, dtype=np.int64), VOCAB)
    mi_profile(stream, log_offsets(max_offset), estimator, n_blocks=n_blocks, null_draws=null_draws, order=order,
               population=population)


if __name__ == "__main__":
    est, blocks, draws, order, population, max_offset = sys.argv[1:7]
    main(est, int(blocks), int(draws), order, population, int(max_offset))
