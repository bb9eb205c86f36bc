"""Mutual-information estimators built from count-table sums, with jackknife intervals.

Every estimator here is a function of the sums that ``depstat.kernels`` returns for the
real pairs and, for the null-corrected ones, for pairs whose partner comes from a null
process. Because the kernels also return how each sum changes when one block of the
corpus is deleted, every estimator gets delete-one-block jackknife replicates for free.

Estimators (MI in bits):

- ``plugin``: maximum-likelihood entropies. Biased upward by roughly
  (K_xy - K_x - K_y + 1) / (2 N ln 2); reference only.
- ``miller-madow``: plug-in entropies plus (K - 1) / 2N each. Under-corrects when the
  joint table is undersampled.
- ``grassberger``: Grassberger's (2003) entropy estimator, H = ln N - sum n G(n) / N.
- ``jackknife``: delete-one-block jackknife bias correction of the plug-in value.
- ``shuffle``: plug-in minus the plug-in MI of an i.i.d. null (partner drawn at random).
- ``rotation``: plug-in minus the plug-in MI of a rotation null (partner taken half the
  corpus away), which keeps the autocorrelation of the partner stream.
- ``grassberger-rotation`` (default): Grassberger minus Grassberger of the rotation
  null. See docs/estimators.md for the measurements behind the choice.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

LN2 = np.log(2.0)

DEFAULT_ESTIMATOR = "grassberger-rotation"
BASE_ESTIMATORS = ("plugin", "miller-madow", "grassberger")
NULL_ESTIMATORS = {
    "shuffle": ("plugin", "iid"),
    "rotation": ("plugin", "rotate"),
    "grassberger-rotation": ("grassberger", "rotate"),
}
ESTIMATORS = BASE_ESTIMATORS + ("jackknife",) + tuple(NULL_ESTIMATORS)


@dataclass(frozen=True)
class TableSums:
    """Kernel output for one offset and one partner process.

    ``joint``, ``first``, ``second`` hold (sum n ln n, sum n G(n), occupied cells) of the
    joint table and the two marginals; ``*_jk[g]`` the change of each when block g is
    deleted; ``block_pairs[g]`` the pairs in block g.
    """

    n_pairs: int
    joint: np.ndarray
    first: np.ndarray
    second: np.ndarray
    joint_jk: np.ndarray
    first_jk: np.ndarray
    second_jk: np.ndarray
    block_pairs: np.ndarray

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


def _entropies(s: TableSums, kind: str) -> tuple[float, float, float]:
    """(H_first, H_second, H_joint) in nats for one base estimator."""
    n = float(s.n_pairs)
    if kind == "grassberger":
        return tuple(np.log(n) - t[1] / n for t in (s.first, s.second, s.joint))
    h = [np.log(n) - t[0] / n for t in (s.first, s.second, s.joint)]
    if kind == "miller-madow":
        h = [hi + (t[2] - 1.0) / (2.0 * n) for hi, t in zip(h, (s.first, s.second, s.joint))]
    return tuple(h)


def base_mi(s: TableSums, kind: str) -> float:
    """MI in bits of one table by a base estimator (plugin, miller-madow, grassberger)."""
    if s.n_pairs <= 0:
        return float("nan")
    hx, hy, hxy = _entropies(s, kind)
    return float((hx + hy - hxy) / LN2)


def estimate(name: str, real: TableSums, nulls: dict[str, TableSums]) -> float:
    """Point estimate of MI (bits) by the named estimator."""
    if name in BASE_ESTIMATORS:
        return base_mi(real, name)
    if name == "jackknife":
        reps = [base_mi(real.deleted(g), "plugin") for g in _used_blocks(real)]
        g = len(reps)
        return float(g * base_mi(real, "plugin") - (g - 1) * np.mean(reps))
    kind, null = NULL_ESTIMATORS[name]
    return base_mi(real, kind) - base_mi(nulls[null], kind)


def _used_blocks(s: TableSums) -> list[int]:
    return [g for g in range(len(s.block_pairs)) if s.block_pairs[g] > 0]


def replicates(name: str, real: TableSums, nulls: dict[str, TableSums]) -> np.ndarray:
    """Delete-one-block jackknife replicates of the named estimator (blocks with pairs only)."""
    out = []
    for g in _used_blocks(real):
        r = real.deleted(g)
        if name == "jackknife":
            # One level of jackknife for the interval; re-jackknifing costs G^2.
            out.append(base_mi(r, "plugin"))
            continue
        out.append(estimate(name, r, {k: v.deleted(g) for k, v in nulls.items()}))
    return np.asarray(out)


def jackknife_interval(
    point: float, reps: np.ndarray, confidence: float
) -> tuple[float, float, float]:
    """(standard error, low, high) of a delete-one-block jackknife, Student-t with G-1 df."""
    g = len(reps)
    if g < 2 or not np.isfinite(point):
        return float("nan"), float("nan"), float("nan")
    se = float(np.sqrt((g - 1) / g * np.sum((reps - reps.mean()) ** 2)))
    half = float(stats.t.ppf(0.5 + confidence / 2, g - 1)) * se
    return se, point - half, point + half


def nulls_needed(name: str) -> tuple[str, ...]:
    """Which null partner processes an estimator needs ('iid', 'rotate')."""
    if name not in ESTIMATORS:
        raise KeyError(name)
    return (NULL_ESTIMATORS[name][1],) if name in NULL_ESTIMATORS else ()
