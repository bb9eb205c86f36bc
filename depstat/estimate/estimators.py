"""Mutual-information estimators built from count-table sums, with jackknife intervals.

Every estimator here is a function of the sums that ``depstat.count.kernels`` returns for the
real pairs and, for the null-corrected ones, for pairs whose partner comes from a null
process. Because the kernels also return how each sum changes when one block of the
corpus is deleted, every estimator gets delete-a-group jackknife replicates for free (weighted by
the groups' pairs, ``jackknife_se``).

Estimators (MI in bits):

- ``plugin``: maximum-likelihood entropies. Biased upward by roughly
  (K_xy - K_x - K_y + 1) / (2 N ln 2); reference only.
- ``miller-madow``: plug-in entropies plus (K - 1) / 2N each. Under-corrects when the
  joint table is undersampled.
- ``grassberger``: Grassberger's (2003) entropy estimator, H = ln N - sum n G(n) / N.
- ``jackknife``: delete-a-group jackknife bias correction of the plug-in value.
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
from typing import Literal

import numpy as np
from scipy import stats

from depstat.count.sums import TableSums
from depstat.errors import DepstatError

LN2 = np.log(2.0)

DEFAULT_ESTIMATOR = "grassberger-rotation"


@dataclass(frozen=True)
class Estimator:
    """An MI estimator, and what it needs counted: the counting layer asks it, by these fields,
    instead of decoding its name."""

    name: str
    entropy: str  # the entropy estimate: "plugin", "miller-madow" or "grassberger"
    null: str | None = None  # the null partner process whose MI is subtracted: "iid", "rotate" or None
    jackknifed: bool = False  # corrected by the delete-a-group jackknife (needs every block's deltas)

    @property
    def partners(self) -> tuple[str, ...]:
        """The null partner processes to count beside the real pairs."""
        return (self.null,) if self.null else ()

    @property
    def first_marginal(self) -> bool:
        """Whether it reads the first marginal's sums. A null-corrected one does not: it is a
        difference of two tables over the same first positions (a null's partners replace the
        real ones), in which H(first) cancels, so a counter may skip them."""
        return self.null is None


ESTIMATOR_LIST = (
    Estimator("plugin", "plugin"),
    Estimator("miller-madow", "miller-madow"),
    Estimator("grassberger", "grassberger"),
    Estimator("jackknife", "plugin", jackknifed=True),
    Estimator("shuffle", "plugin", "iid"),
    Estimator("rotation", "plugin", "rotate"),
    Estimator("grassberger-rotation", "grassberger", "rotate"),
)
ESTIMATORS = tuple(e.name for e in ESTIMATOR_LIST)
EstimatorName = Literal["plugin", "miller-madow", "grassberger", "jackknife", "shuffle", "rotation",
                        "grassberger-rotation"]  # ESTIMATORS, for type checkers
_BY_NAME = {e.name: e for e in ESTIMATOR_LIST}


def get(name: str) -> Estimator:
    """The estimator of that name, or one clear error listing the names."""
    if name not in _BY_NAME:
        raise DepstatError(f"unknown estimator {name!r}", hint="choose one of " + ", ".join(ESTIMATORS))
    return _BY_NAME[name]


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


def _given_second(s: TableSums, kind: str) -> np.ndarray:
    """H(first | second) = H(joint) - H(second) in nats by a base estimator: MI is H(first) less this."""
    return _entropy(s, "joint", kind) - _entropy(s, "second", kind)


def stacked(sums: Sequence[TableSums]) -> TableSums:
    """Several tables' sums stacked on a first axis, so that the estimators take them at once."""
    return TableSums(*(np.array([getattr(s, f.name) for s in sums]) for f in fields(TableSums)))


def estimate(name: str, real: TableSums, nulls: dict[str, TableSums]) -> float | np.ndarray:
    """Point estimate of MI (bits) by the named estimator (one per row for stacked sums)."""
    return _estimate(get(name), real, nulls)


def _estimate(e: Estimator, real: TableSums, nulls: dict[str, TableSums]) -> float | np.ndarray:
    """Point estimate of MI (bits) by an estimator (``estimate`` by name)."""
    name = e.name
    if e.jackknifed:
        reps, _ = block_replicates(name, real, nulls)  # the plug-in's, one level
        out = weighted_jackknife_estimate(Replicates(base_mi(real, "plugin"), reps, np.asarray(real.block_pairs)))
        return float(out) if np.ndim(out) == 0 else out
    if e.null is None:
        return base_mi(real, e.entropy)
    kind, null = e.entropy, e.null
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
    if get(name).jackknifed:
        reps = base_mi(each, "plugin")
    else:
        reps = estimate(name, each, {k: v.deleted_each(blocks) for k, v in nulls.items()})
    return np.asarray(reps), real.block_pairs > 0


def replicates(name: str, real: TableSums, nulls: dict[str, TableSums]) -> np.ndarray:
    """Delete-one-block jackknife replicates of the named estimator for one table (blocks with pairs only)."""
    reps, used = block_replicates(name, real, nulls)
    return reps[used]


@dataclass(frozen=True)
class Replicates:
    """Delete-a-group jackknife replicates of an estimate, one row per offset (stacked sums).

    ``values[..., g]`` is the estimate without group g's pairs, ``full`` the same estimator
    on every pair (the plug-in for the ``jackknife`` estimator, whose replicates are the
    plug-in's), ``pairs[..., g]`` the pairs group g holds; only groups with pairs are replicates.
    """

    full: np.ndarray
    values: np.ndarray
    pairs: np.ndarray

    @property
    def used(self) -> np.ndarray:
        return self.pairs > 0


def estimate_draws(
    name: str, real: TableSums, draws: Sequence[dict[str, TableSums]],
) -> tuple[np.ndarray, Replicates, np.ndarray]:
    """The named estimator averaged over null draws: (points, replicates, standard error of the
    draw average). Each draw is a dict of null sums (one empty dict for an estimator without a
    null); the estimators are linear in the null's sums' entropies, so the average of the draws'
    estimates, and of their replicates, is the estimate against the average null. The draw
    average's standard error is the draws' spread / sqrt(draws) (0 with one draw)."""
    draws = list(draws) or [{}]
    points = np.array([np.asarray(estimate(name, real, nulls), dtype=float) for nulls in draws])
    values = np.mean([block_replicates(name, real, nulls)[0] for nulls in draws], axis=0)
    point = points.mean(axis=0)
    full = np.asarray(base_mi(real, "plugin"), dtype=float) if get(name).jackknifed else point
    draw_se = points.std(axis=0, ddof=1) / np.sqrt(len(draws)) if len(draws) > 1 else np.zeros_like(point)
    return point, Replicates(full, values, np.asarray(real.block_pairs)), draw_se


def _pseudo_values(reps: Replicates) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(h, groups used, pseudo-values, their mean) of the weighted delete-a-group jackknife;
    h = n / m_g is infinite for a group without pairs."""
    used = reps.used
    m = np.where(used, reps.pairs, 0).astype(float)
    n = m.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = np.where(used, n / m, np.inf)
        full = np.asarray(reps.full, dtype=float)[..., None]
        theta_j = used.sum(axis=-1) * full[..., 0] - np.sum(np.where(used, (1 - m / n) * reps.values, 0.0), axis=-1)
        pseudo = h * full - (h - 1) * reps.values
    return h, used.sum(axis=-1), pseudo, theta_j


def jackknife_se(reps: Replicates) -> np.ndarray:
    """Standard error of the weighted delete-a-group jackknife (Busing, Meijer and van der
    Leeden 1999), groups weighted by their pairs; with equal groups it is the usual
    sqrt((G-1)/G sum (theta_-g - mean)^2). NaN under 2 groups with pairs."""
    h, g, pseudo, theta_j = _pseudo_values(reps)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(reps.used & (h > 1), (pseudo - theta_j[..., None]) ** 2 / (h - 1), 0.0)
        se = np.sqrt(terms.sum(axis=-1) / g)
    return np.where(g >= 2, se, np.nan)


def jackknife_deviations(reps: Replicates) -> np.ndarray:
    """Each group's signed share of the weighted jackknife's error: d[..., g] with
    sum_g d[..., g]**2 = jackknife_se(reps)**2 and the covariance across rows kept, so random
    signs on the groups draw noise of the estimate's covariance. Zero for groups without pairs."""
    h, g, pseudo, theta_j = _pseudo_values(reps)
    with np.errstate(divide="ignore", invalid="ignore"):
        d = (pseudo - theta_j[..., None]) / np.sqrt(g[..., None] * (h - 1))
    return np.where(reps.used & (h > 1), d, 0.0)


def weighted_jackknife_estimate(reps: Replicates) -> np.ndarray:
    """The weighted delete-a-group jackknife's bias-corrected estimate,
    G theta - sum_g (1 - m_g / n) theta_-g (the usual G theta - (G-1) mean with equal groups)."""
    used = reps.used
    m = np.where(used, reps.pairs, 0).astype(float)
    n = m.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lost = np.sum(np.where(used, (1 - m / n[..., None]) * reps.values, 0.0), axis=-1)
    return used.sum(axis=-1) * np.asarray(reps.full, dtype=float) - lost



@functools.lru_cache(maxsize=256)
def _t_quantile(q: float, dof: int) -> float:
    """Student-t quantile, cached: every offset of a profile asks for the same one, and
    ``stats.t.ppf`` costs tens of microseconds a call."""
    return float(stats.t.ppf(q, dof))


def intervals(
    points: np.ndarray, reps: Replicates, confidence: float, draw_se: np.ndarray | float = 0.0,
    bias: np.ndarray | float = 0.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(standard error, low, high) per row: the weighted jackknife's error and the null draws'
    (``draw_se``) added in quadrature, Student-t with G-1 df; NaN under 2 replicates. A
    ``bias`` bound (``bias_bound``) is added to the half-width in quadrature."""
    points = np.asarray(points, dtype=float)
    g = reps.used.sum(axis=-1)
    se = np.sqrt(jackknife_se(reps) ** 2 + np.asarray(draw_se, dtype=float) ** 2)
    quantile = np.array([_t_quantile(0.5 + confidence / 2, int(d)) if d >= 1 else np.nan for d in np.ravel(g - 1)])
    se = np.where((g >= 2) & np.isfinite(points), se, np.nan)
    half = np.hypot(quantile.reshape(np.shape(g)) * se, np.asarray(bias, dtype=float))
    return se, points - half, points + half


def entropy_correction(name: str, real: TableSums, draws: Sequence[dict[str, TableSums]]) -> np.ndarray:
    """|estimate - the same estimator with plug-in entropies| (the same null, averaged over the
    draws): how far the entropy estimator's correction moved the estimate, 0 for the plug-in
    ones. Where the joint table is undersampled the correction is of the order of the bias it
    leaves, whose sign the jackknife can miss (docs/estimators.md, "The bias bound")."""
    e = get(name)
    draws = list(draws) or [{}]
    if e.entropy == "plugin":
        return np.zeros(np.shape(np.asarray(real.n_pairs)))
    plugin = Estimator(f"{name} with plug-in entropies", "plugin", e.null)
    moved = [np.asarray(_estimate(e, real, nulls)) - np.asarray(_estimate(plugin, real, nulls)) for nulls in draws]
    return np.abs(np.mean(moved, axis=0))


def bias_bound(
    name: str, points: np.ndarray, reps: Replicates, real: TableSums, draws: Sequence[dict[str, TableSums]],
) -> np.ndarray:
    """The bias bound of the interval: the larger of ``jackknife_bias`` and ``entropy_correction``."""
    return np.maximum(jackknife_bias(name, points, reps), entropy_correction(name, real, draws))


def jackknife_bias(name: str, points: np.ndarray, reps: Replicates) -> np.ndarray:
    """|estimate - its weighted jackknife bias correction|: the bias the jackknife sees left in
    the estimate, a bound for the interval (0 for the ``jackknife`` estimator, already corrected).
    At short offsets of sticky chains the null-corrected estimators keep a bias of several
    standard errors, which the jackknife over-corrects by a similar amount (docs/estimators.md)."""
    if get(name).jackknifed:
        return np.zeros(np.shape(points))
    return np.abs(np.asarray(points, dtype=float) - weighted_jackknife_estimate(reps))
