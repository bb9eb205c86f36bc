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

import functools
from collections.abc import Sequence
from dataclasses import dataclass, fields

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
    deleted; ``block_pairs[g]`` the pairs in block g. ``first`` and ``first_jk`` are NaN
    where the counter skipped the first marginal (``first_marginal=False``; see
    ``needs_first_marginal``).
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


def _entropy(s: TableSums, table: str, kind: str) -> np.ndarray:
    """Entropy in nats of one of the sums' tables (``first``, ``second``, ``joint``) by a base
    estimator (an array for stacked sums)."""
    n = np.asarray(s.n_pairs, dtype=float)
    t = getattr(s, table)
    if kind == "grassberger":
        return np.log(n) - t[..., 1] / n
    h = np.log(n) - t[..., 0] / n
    return h + (t[..., 2] - 1.0) / (2.0 * n) if kind == "miller-madow" else h


def base_mi(s: TableSums, kind: str) -> float | np.ndarray:
    """MI in bits of one table by a base estimator (plugin, miller-madow, grassberger).

    Stacked sums (``deleted_each``) give one value per row; a table without pairs gives NaN.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        hx, hy, hxy = (_entropy(s, table, kind) for table in ("first", "second", "joint"))
        mi = np.where(np.asarray(s.n_pairs) > 0, (hx + hy - hxy) / LN2, np.nan)
    return float(mi) if mi.ndim == 0 else mi


def needs_first_marginal(name: str) -> bool:
    """Whether the named estimator reads the first marginal's sums. A null-corrected one does
    not: it is a difference of two tables over the same first positions (a null's partners
    replace the real ones), in which H(first) cancels, so a counter may skip them."""
    return name not in NULL_ESTIMATORS


def _given_second(s: TableSums, kind: str) -> np.ndarray:
    """H(first | second) = H(joint) - H(second) in nats by a base estimator: MI is H(first) less this."""
    return _entropy(s, "joint", kind) - _entropy(s, "second", kind)


def stacked(sums: Sequence[TableSums]) -> TableSums:
    """Several tables' sums stacked on a first axis, so that the estimators take them at once."""
    return TableSums(*(np.array([getattr(s, f.name) for s in sums]) for f in fields(TableSums)))


def estimate(name: str, real: TableSums, nulls: dict[str, TableSums]) -> float | np.ndarray:
    """Point estimate of MI (bits) by the named estimator (one per row for stacked sums)."""
    if name in BASE_ESTIMATORS:
        return base_mi(real, name)
    if name == "jackknife":
        reps, used = block_replicates(name, real, nulls)  # the plug-in's, one level
        g = used.sum(axis=-1)
        out = g * base_mi(real, "plugin") - (g - 1) * _mean_over(reps, used)
        return float(out) if np.ndim(out) == 0 else out
    kind, null = NULL_ESTIMATORS[name]
    with np.errstate(divide="ignore", invalid="ignore"):  # H(first) cancels: its sums are not read
        mi = (_given_second(nulls[null], kind) - _given_second(real, kind)) / LN2
        mi = np.where(np.asarray(real.n_pairs) > 0, mi, np.nan)
    return float(mi) if mi.ndim == 0 else mi


def block_replicates(name: str, real: TableSums, nulls: dict[str, TableSums]) -> tuple[np.ndarray, np.ndarray]:
    """The named estimator with each block deleted in turn, for every block (last axis), and
    which blocks hold pairs: only those are replicates. For the ``jackknife`` estimator, the
    plug-in's replicates: one level of jackknife for the interval; re-jackknifing costs G^2."""
    blocks = np.arange(real.block_pairs.shape[-1])
    each = real.deleted_each(blocks)
    if name == "jackknife":
        reps = base_mi(each, "plugin")
    else:
        reps = estimate(name, each, {k: v.deleted_each(blocks) for k, v in nulls.items()})
    return np.asarray(reps), real.block_pairs > 0


def replicates(name: str, real: TableSums, nulls: dict[str, TableSums]) -> np.ndarray:
    """Delete-one-block jackknife replicates of the named estimator for one table (blocks with pairs only)."""
    reps, used = block_replicates(name, real, nulls)
    return reps[used]


def _mean_over(values: np.ndarray, used: np.ndarray) -> np.ndarray:
    """Mean of ``values`` over the ``used`` entries of the last axis."""
    return np.where(used, values, 0.0).sum(axis=-1) / used.sum(axis=-1)


@functools.lru_cache(maxsize=256)
def _t_quantile(q: float, dof: int) -> float:
    """Student-t quantile, cached: every offset of a profile asks for the same one, and
    ``stats.t.ppf`` costs tens of microseconds a call."""
    return float(stats.t.ppf(q, dof))


def jackknife_intervals(
    points: np.ndarray, reps: np.ndarray, used: np.ndarray, confidence: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(standard error, low, high) of delete-one-block jackknifes, Student-t with G-1 df, one per
    row of ``reps`` (the replicates over the last axis where ``used``); NaN under 2 replicates."""
    points = np.asarray(points, dtype=float)
    g = used.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = np.where(used, reps - _mean_over(reps, used)[..., None], 0.0)
        se = np.sqrt((g - 1) / g * np.sum(spread**2, axis=-1))
    quantile = np.array([_t_quantile(0.5 + confidence / 2, int(d)) if d >= 1 else np.nan for d in np.ravel(g - 1)])
    se = np.where((g >= 2) & np.isfinite(points), se, np.nan)
    half = quantile.reshape(np.shape(g)) * se
    return se, points - half, points + half


def jackknife_interval(point: float, reps: np.ndarray, confidence: float) -> tuple[float, float, float]:
    """(standard error, low, high) of one delete-one-block jackknife, Student-t with G-1 df."""
    out = jackknife_intervals(np.array(point), np.asarray(reps), np.ones(len(reps), dtype=bool), confidence)
    return tuple(float(v) for v in out)


def nulls_needed(name: str) -> tuple[str, ...]:
    """Which null partner processes an estimator needs ('iid', 'rotate')."""
    if name not in ESTIMATORS:
        raise KeyError(name)
    return (NULL_ESTIMATORS[name][1],) if name in NULL_ESTIMATORS else ()
