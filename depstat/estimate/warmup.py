"""A first run's second compiler: ``python -m depstat.estimate.warmup ESTIMATOR BLOCKS DRAWS ORDER POPULATION``.

Counts a synthetic stream of 16-bit tokens as ``profile()`` counts a BPE granularity, so that
Numba compiles (and caches) the partitioned kernels in this process while the first run reads,
tokenizes and compiles the dense ones for bytes (``pipeline.kernels_compiled_beside`` starts it).
The first run, once its own kernels are done, compiles the real pairs' kernels itself
(``real_pairs``), which this process then loads from the cache instead of compiling them.
"""

from __future__ import annotations

import sys

import numpy as np

from depstat.count.counting import PairCounter
from depstat.estimate import estimators as est
from depstat.estimate.profile import log_offsets, mi_profile
from depstat.tokenize.stream import TokenStream

VOCAB = 1024  # used tokens: more than a dense table takes, 16-bit ids as every BPE up to 65,536
DOCS, DOC_TOKENS = 16, 4096  # documents long enough that every offset of the default grid has pairs


def synthetic() -> TokenStream:
    """The warm-up's stream: random 16-bit tokens in equal documents."""
    tokens = np.random.default_rng(0).integers(0, VOCAB, DOCS * DOC_TOKENS).astype(np.uint16)
    return TokenStream("warm-up", tokens, np.full(DOCS, DOC_TOKENS, dtype=np.int64), VOCAB)


def main(estimator: str, n_blocks: int, null_draws: int, order: str, population: str, max_offset: int) -> None:
    """Profile the synthetic stream at the default grid with the run's counting options."""
    mi_profile(synthetic(), log_offsets(max_offset), estimator, n_blocks=n_blocks, null_draws=null_draws, order=order,
               population=population)


def real_pairs(estimator: str, n_blocks: int) -> None:
    """Count the synthetic stream's real pairs alone as a profile counts them (pair emission, the
    followed second marginal, partition sums), compiling those kernels where they are not cached."""
    PairCounter(synthetic(), n_blocks=n_blocks).sums_at([1, 2], ("real",), jackknife=True,
                                                        first_marginal=est.get(estimator).first_marginal)


if __name__ == "__main__":
    est_name, blocks, draws, order_name, population_name, offset = sys.argv[1:7]
    main(est_name, int(blocks), int(draws), order_name, population_name, int(offset))
