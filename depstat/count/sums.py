"""What the counting kernels return for one offset and one partner process: the sums every MI
estimator is built from, and their change when a jackknife block is deleted."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TableSums:
    """Kernel output for one offset and one partner process.

    ``joint``, ``first``, ``second`` hold (sum n ln n, sum n G(n), occupied cells) of the
    joint table and the two marginals; ``*_jk[g]`` the change of each when block g is
    deleted; ``block_pairs[g]`` the pairs in block g. ``first`` and ``first_jk`` are NaN
    where the counter skipped the first marginal (``first_marginal=False``; see
    ``Estimator.first_marginal``).
    """

    n_pairs: int | np.ndarray  # an array for stacked sums (``deleted_each``)
    joint: np.ndarray
    first: np.ndarray
    second: np.ndarray
    joint_jk: np.ndarray
    first_jk: np.ndarray
    second_jk: np.ndarray
    block_pairs: np.ndarray

    def deleted_each(self, blocks: np.ndarray) -> TableSums:
        """The sums with each of ``blocks`` removed in turn, on a new axis after any stacking axis."""
        z = np.zeros((len(blocks), 1, 3))  # the deltas of a table with a block deleted: not kept
        return TableSums(
            np.asarray(self.n_pairs)[..., None] - self.block_pairs[..., blocks],
            self.joint[..., None, :] + self.joint_jk[..., blocks, :],
            self.first[..., None, :] + self.first_jk[..., blocks, :],
            self.second[..., None, :] + self.second_jk[..., blocks, :], z, z, z,
            np.zeros((len(blocks), 1), dtype=np.int64),
        )

    def deleted(self, g: int) -> TableSums:
        """The sums with block g removed."""
        z = np.zeros((1, 3))
        return TableSums(
            int(self.n_pairs - self.block_pairs[g]),
            self.joint + self.joint_jk[g],
            self.first + self.first_jk[g],
            self.second + self.second_jk[g],
            z, z, z, np.zeros(1, dtype=np.int64),
        )
