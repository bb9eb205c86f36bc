"""The dependency kernel K(r) of one profile, its width W, and decay-model fits.

K(r) is the mutual information at distance r over the offsets a model of training length
L sees (1 <= r < L), each estimate shrunk towards zero by one standard error
(soft thresholding, max(I - se, 0)), interpolated linearly in log r between measured
offsets and normalised to sum to one. Shrinking removes the mass that noise would add
over hundreds of long offsets (plain clipping adds ~0.4 se per offset; keeping negative
values lets noise cancel real signal), while weak but consistent long-range
information, as in text, still counts; a hard significance cut would make W jump with
the sample size.
Its width W summarises how far the information reaches; paper A's rule θ* = c / W turns
it into a RoPE frequency.

Widths (``WIDTHS``):

- ``q90`` (default): the offset below which 90 % of the kernel mass lies. For a kernel
  concentrated at B it is B; it covers most of the information, which is what a frequency
  must not alias over.
- ``q50``: the median offset of the kernel mass.
- ``mean``: the mean offset sum r K(r).
- ``reach``: the last measured offset whose MI is distinguishable from zero.

Decay models, fitted by weighted least squares on log I over significant offsets:
power law I = A r^-alpha (scale-free: self-similar) and exponential I = A exp(-r / xi)
(a characteristic length), compared by AIC.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

from depstat.errors import DepstatError

WIDTHS = ("q90", "q50", "mean", "reach")
DEFAULT_WIDTH = "q90"
N_DRAWS = 400


@dataclass(frozen=True)
class Width:
    """Kernel width W with an interval propagated from the profile's intervals."""

    W: float
    ci_low: float
    ci_high: float
    definition: str
    training_length: int

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class DecayFit:
    """One decay model fitted to log I(r): its scale parameter with interval, and AIC."""

    model: str
    amplitude: float
    parameter: float  # alpha for the power law, xi (tokens) for the exponential
    ci_low: float
    ci_high: float
    aic: float
    n_points: int

    def to_dict(self) -> dict:
        return asdict(self)


def shrink(mi: np.ndarray, se: np.ndarray) -> np.ndarray:
    """Soft threshold: each MI estimate moved towards zero by one standard error."""
    return np.maximum(np.asarray(mi, float) - np.nan_to_num(np.asarray(se, float)), 0.0)


def kernel(offsets: np.ndarray, mi: np.ndarray, length: int) -> tuple[np.ndarray, np.ndarray]:
    """(r, K(r)) for r = 1 .. length-1 from (shrunken) MI at measured offsets, unit mass."""
    r = np.arange(1, length, dtype=np.float64)
    k = np.interp(np.log(r), np.log(offsets.astype(np.float64)), mi)
    total = k.sum()
    return r, (k / total if total > 0 else np.zeros_like(k))


def width_of(offsets: np.ndarray, mi: np.ndarray, length: int, definition: str) -> float:
    """W of one realisation of the profile (NaN when the kernel is empty)."""
    if definition == "reach":
        inside = (offsets < length) & (mi > 0)
        return float(offsets[inside].max()) if inside.any() else float("nan")
    r, k = kernel(offsets, mi, length)
    if k.sum() <= 0:
        return float("nan")
    if definition == "mean":
        return float(np.sum(r * k))
    q = {"q90": 0.9, "q50": 0.5}[definition]
    return float(r[min(np.argmax(np.cumsum(k) >= q), len(r) - 1)])


def kernel_width(
    offsets: np.ndarray,
    mi: np.ndarray,
    se: np.ndarray,
    significant: np.ndarray,
    length: int,
    definition: str = DEFAULT_WIDTH,
    confidence: float = 0.95,
    seed: int = 0,
) -> Width:
    """W of a profile for training length ``length``, with a parametric-bootstrap interval.

    The interval redraws each offset's MI from Normal(mi, se) (offsets treated as
    independent) and recomputes W. ``significant`` is used by the ``reach`` width only.
    Both the point and the redraws use the same shrunken kernel.
    """
    if definition not in WIDTHS:
        raise DepstatError(f"unknown width definition {definition!r}", hint="choose one of " + ", ".join(WIDTHS))
    offsets = np.asarray(offsets)
    if length < 2:
        raise DepstatError(f"the training length must be at least 2, got {length}")
    if offsets.max() < length - 1:
        raise DepstatError(
            f"the profile stops at offset {int(offsets.max())}, short of the training length {length}",
            hint=f"profile again with --max-offset {length} or more",
        )
    mi = np.asarray(mi, dtype=np.float64)
    se = np.nan_to_num(np.asarray(se, dtype=np.float64))
    floor = se * stats.norm.ppf(0.5 + confidence / 2)

    def shaped(m: np.ndarray, sig: np.ndarray) -> np.ndarray:
        return np.where(sig, m, 0.0) if definition == "reach" else shrink(m, se)

    point = width_of(offsets, shaped(mi, np.asarray(significant, bool)), length, definition)
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(N_DRAWS):
        m = mi + rng.standard_normal(mi.shape) * se
        draws.append(width_of(offsets, shaped(m, m > floor), length, definition))
    draws = np.asarray(draws)
    draws = draws[np.isfinite(draws)]
    lo, hi = (np.quantile(draws, [(1 - confidence) / 2, (1 + confidence) / 2]) if draws.size else (np.nan, np.nan))
    return Width(point, float(min(lo, point)), float(max(hi, point)), definition, int(length))


def fit_decay(offsets: np.ndarray, mi: np.ndarray, se: np.ndarray, confidence: float = 0.95) -> dict[str, DecayFit]:
    """Power-law and exponential fits of the significant part of a profile (needs >= 3 points)."""
    keep = (mi > 0) & np.isfinite(se)
    r, y = np.asarray(offsets, float)[keep], np.log(mi[keep])
    if r.size < 3:
        return {}
    # Weights 1 / var(log I) by the delta method, floored so one tiny-se point cannot dominate.
    rel = np.maximum(se[keep] / mi[keep], 0.02)
    w = 1.0 / rel**2
    out = {}
    for model, x in (("power", np.log(r)), ("exponential", r)):
        coef, cov, rss, _ = _wls(np.column_stack([x, np.ones_like(x)]), y, w)
        slope, intercept, slope_se = float(coef[0]), float(coef[1]), float(np.sqrt(cov[0, 0]))
        t = stats.t.ppf(0.5 + confidence / 2, r.size - 2)
        n = r.size
        aic = n * np.log(max(rss, 1e-300) / n) + 4
        if model == "power":
            par, lo, hi = -slope, -slope - t * slope_se, -slope + t * slope_se
        else:
            rate = -slope
            par = 1 / rate if rate > 0 else float("inf")
            lo_rate, hi_rate = rate + t * slope_se, rate - t * slope_se
            lo = 1 / lo_rate if lo_rate > 0 else float("inf")
            hi = 1 / hi_rate if hi_rate > 0 else float("inf")
        out[model] = DecayFit(model, float(np.exp(intercept)), float(par), float(lo), float(hi), float(aic), n)
    return out


def curvature(offsets: np.ndarray, log_mi: np.ndarray, se_log: np.ndarray, confidence: float = 0.95) -> tuple[float, float, float]:
    """Curvature c of log I = a + b log r + c (log r)^2 (weighted), with its interval.

    c < 0 means the local slope steepens: a characteristic length (cutoff).
    """
    x = np.log(np.asarray(offsets, float))
    X = np.column_stack([x**2, x, np.ones_like(x)])
    coef, cov, _, dof = _wls(X, log_mi, 1.0 / np.maximum(se_log, 0.02) ** 2)
    half = stats.t.ppf(0.5 + confidence / 2, dof) * np.sqrt(cov[0, 0])
    return float(coef[0]), float(coef[0] - half), float(coef[0] + half)


def preferred_model(fits: dict[str, DecayFit]) -> str | None:
    """The decay model with the lower AIC, or None without fits."""
    return min(fits.values(), key=lambda f: f.aic).model if fits else None


def local_slopes(offsets: np.ndarray, mi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(geometric-mid offsets, d log I / d log r) between consecutive positive points."""
    keep = mi > 0
    r, m = np.asarray(offsets, float)[keep], mi[keep]
    if r.size < 2:
        return np.zeros(0), np.zeros(0)
    return np.sqrt(r[1:] * r[:-1]), np.diff(np.log(m)) / np.diff(np.log(r))


def _wls(X: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, int]:
    """Weighted least squares of y on the columns of X: (coefficients, covariance, weighted RSS, dof)."""
    sw = np.sqrt(w)
    coef, *_ = np.linalg.lstsq(X * sw[:, None], y * sw, rcond=None)
    resid = (y - X @ coef) * sw
    rss = float(resid @ resid)
    dof = max(len(y) - X.shape[1], 1)
    cov = np.linalg.inv((X * w[:, None]).T @ X) * rss / dof
    return coef, cov, rss, dof
