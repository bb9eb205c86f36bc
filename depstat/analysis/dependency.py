"""The dependency kernel of one granularity: decay models with a floor, and the width W they imply.

Two models are fitted to I(r) over the well-populated offsets, by weighted least squares on
I itself (not log I, so offsets whose estimate is near zero or below keep their weight):

- power law with a floor, I = A r^-alpha + c (as the L2M code fits it, 0 <= c <= the
  profile's lower decile): no scale of its own;
- exponential with a floor, I = A exp(-(r - 1) / xi) + c: a characteristic length xi.

The floor takes up what reaches every offset alike (leftover estimator bias, or information
shared by a whole document), so that it does not count as long dependencies. The power law is
preferred unless the exponential fits better beyond its error (``Fitted.exponential_gain``: its
smaller weighted residual, the smaller AIC as both have three parameters, by more than a one-sided
t at ``MODEL_CONFIDENCE`` times the gain's jackknife error), as a length of its own is a claim the
data must make; a profile without replicates (an exact one) takes the smaller AIC. The
fits start where a model fits within its errors, past first offsets that are outliers of the
model fitted without them (``fit_start``): a tokenizer's first offsets can follow no smooth
decay, and a floor fitted across them would take up that misfit.

What the data say (``Width.kind``):

- ``characteristic``: the exponential is preferred (beyond its error) and its q90 width
  W = xi ln 10 (the offset within which 90 % of the kernel above the floor lies) is well inside
  the measured range;
- ``local``: W of at most ``LOCAL_TOKENS`` tokens: dependencies end within a few tokens (an
  exponential, or a power law so steep, alpha > 1, that its kernel's q90 is that short);
- ``scale-free``: the power law is preferred (or the exponential not beyond its error), or the
  exponential's width reaches past half of the largest offset: no length of its own shown up to
  ``r_max``;
- ``none``: no offset has mutual information distinguishable from zero.

Intervals come from the profile's whole-profile jackknife replicates: every fit is repeated on
each replicate (the profile without one random group of documents), so the interval keeps the
covariance across offsets.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from functools import cached_property

import numpy as np
import polars as pl
from scipy import optimize, special, stats

from depstat.estimate import estimators as est

LOCAL_TOKENS = 8.0
MIN_DOCS = 20  # documents an offset needs to be used (or half the corpus's, for small corpora)
REL_SE_FLOOR = 0.02  # relative error floor of a point's weight, so one tiny-se point cannot dominate
MODELS = ("power", "exponential")
FIT_STARTS = (1.0, 2.0, 4.0, 8.0)  # offsets (tokens) a decay fit may start from; see fit_start
MIN_FIT_POINTS = 8  # offsets distinguishable from zero that a later start must keep
MODEL_CONFIDENCE = 0.95  # one-sided: the exponential's gain over the power law must exceed t times its error


@dataclass(frozen=True)
class Curve:
    """One granularity's profile over its well-populated offsets, with its jackknife replicates.

    ``replicates[i, g]`` is I(offsets[i]) without document group g (the point where that group
    holds no pair there); ``weights[g]`` the pairs group g holds over all offsets; ``bias[i]`` the
    profile's bound on the estimator's bias at offsets[i] (``estimators.bias_bound``; zero when
    unknown), a systematic error that the replicates do not see. ``round_trips``: its tokens give
    back the text they span (``granularity.round_trips``), so it sees the text itself, dilated."""

    name: str
    offsets: np.ndarray
    mi: np.ndarray
    se: np.ndarray
    significant: np.ndarray
    replicates: np.ndarray
    weights: np.ndarray
    bytes_per_token: float | None = None
    bias: np.ndarray | None = None
    round_trips: bool = True
    moved: np.ndarray | None = None  # (2, offsets): see bias_moves

    @property
    def bias_bound(self) -> np.ndarray:
        """The bias bound at each offset, zeros when the profile has none."""
        return np.zeros_like(self.mi) if self.bias is None else self.bias

    @property
    def bias_moves(self) -> tuple[np.ndarray, np.ndarray]:
        """The curve with every point moved up, and down, by its bias bound: ``moved`` when set
        (an excess curve, whose floor is refitted to the moved profile), else mi +- bias."""
        if self.bias is None:
            return self.mi, self.mi
        if self.moved is not None:
            return self.moved[0], self.moved[1]
        return self.mi + self.bias, self.mi - self.bias

    @property
    def r_max(self) -> float:
        return float(self.offsets.max()) if self.offsets.size else 0.0

    def replicate(self, g: int) -> np.ndarray:
        return self.replicates[:, g]


def curve(table: pl.DataFrame, name: str, bytes_per_token: float | None = None, round_trips: bool = True) -> Curve:
    """The Curve of granularity ``name`` in a profile table (offsets resting on few documents left out)."""
    rows = table.filter(pl.col("granularity") == name).sort("offset")
    enough = min(MIN_DOCS, rows["n_docs"].max() / 2) if rows.height else 0
    rows = rows.filter(pl.col("n_docs") >= enough)
    if "bias_bound" in rows.columns:  # MI >= 0: an estimate below zero beyond its errors is the estimator failing
        error = (pl.col("se").fill_nan(0).fill_null(0) ** 2 + pl.col("bias_bound").fill_nan(0).fill_null(0) ** 2).sqrt()
        rows = rows.filter(~(pl.col("mi_bits") + 2 * error < 0))
    mi = rows["mi_bits"].to_numpy().astype(float)
    if "replicates" in rows.columns and rows.height and rows["replicates"].list.len().min() >= 2:
        reps = np.array(rows["replicates"].to_list(), dtype=float)
        pairs = np.array(rows["group_pairs"].to_list(), dtype=float)
        reps = np.where(np.isfinite(reps), reps, mi[:, None])
        weights = pairs.sum(axis=0)
    else:
        reps, weights = np.zeros((rows.height, 0)), np.zeros(0)
    return Curve(
        name, rows["offset"].to_numpy().astype(float), mi, np.nan_to_num(rows["se"].to_numpy().astype(float)),
        rows["significant"].to_numpy(), reps, weights, bytes_per_token,
        np.nan_to_num(rows["bias_bound"].to_numpy().astype(float)) if "bias_bound" in rows.columns else None,
        round_trips,
    )


def exact_curve(offsets: np.ndarray, mi: np.ndarray, name: str = "exact") -> Curve:
    """A Curve of a profile known exactly (a source's exact MI): no error and no replicates."""
    offsets, mi = np.asarray(offsets, float), np.asarray(mi, float)
    return Curve(name, offsets, mi, np.zeros_like(mi), mi > 0, np.zeros((mi.size, 0)), np.zeros(0))


def noisy_curve(
    offsets: np.ndarray, mi: np.ndarray, se: np.ndarray, name: str = "noisy", bytes_per_token: float | None = None,
    groups: int = 32, correlation: float = 0.8, seed: int = 0,
) -> Curve:
    """A Curve of a known profile ``mi`` measured with error ``se``: ``groups`` document groups
    whose Gaussian errors are correlated across neighbouring offsets, and their delete-a-group
    replicates. For calibrating the analysis on profiles whose answer is known."""
    offsets, mi = np.asarray(offsets, float), np.asarray(mi, float)
    rng = np.random.default_rng(seed)
    z = np.empty((groups, mi.size))
    z[:, 0] = rng.standard_normal(groups)
    for i in range(1, mi.size):
        z[:, i] = correlation * z[:, i - 1] + math.sqrt(1 - correlation**2) * rng.standard_normal(groups)
    per_group = mi + math.sqrt(groups) * np.asarray(se, float) * z
    point = per_group.mean(axis=0)
    reps = ((groups * point - per_group) / (groups - 1)).T  # offsets x groups
    jk_se = est.jackknife_se(est.Replicates(point, reps, np.ones_like(reps)))
    return Curve(name, offsets, point, jk_se, point > 2 * jk_se, reps.copy(), np.ones(groups), bytes_per_token)


def replicate_interval(
    point: float, values: np.ndarray, weights: np.ndarray, confidence: float,
) -> tuple[float, float, float]:
    """(standard error, low, high) of a whole-profile statistic from its values on the replicates
    (weighted delete-a-group jackknife, Student-t with G-1 df); NaN values are dropped."""
    ok = np.isfinite(values) & (weights > 0)
    if ok.sum() < 2 or not np.isfinite(point):
        return float("nan"), float("nan"), float("nan")
    reps = est.Replicates(np.array([point]), values[ok][None, :], weights[ok][None, :])
    se = float(est.jackknife_se(reps)[0])
    half = stats.t.ppf(0.5 + confidence / 2, int(ok.sum()) - 1) * se
    return se, point - half, point + half


@dataclass(frozen=True)
class DecayFit:
    """One decay model with a floor fitted to I(r): amplitude, shape parameter, floor, fit quality."""

    model: str
    amplitude: float
    parameter: float  # alpha for the power law, xi (tokens) for the exponential
    floor: float
    chi2: float
    n_points: int

    def predict(self, r: np.ndarray) -> np.ndarray:
        return _shape(self.model, np.asarray(r, float), self.amplitude, self.parameter) + self.floor

    @property
    def aic(self) -> float:
        return self.chi2 + 2 * 3


def _shape(model: str, r: np.ndarray, amplitude: float, parameter: float) -> np.ndarray:
    if model == "power":
        return amplitude * r ** (-parameter)
    return amplitude * np.exp(-(r - 1) / parameter)


def fit_decay(r: np.ndarray, mi: np.ndarray, se: np.ndarray, model: str) -> DecayFit | None:
    """Weighted least-squares fit of one model with a floor; None when it cannot be fitted."""
    r, y = np.asarray(r, float), np.asarray(mi, float)
    if r.size < 4 or not np.any(y > 0):
        return None
    peak = float(max(y.max(), 1e-12))
    sigma = np.maximum(np.maximum(np.nan_to_num(se), REL_SE_FLOOR * np.abs(y)), 1e-4 * peak)
    c_max = max(float(np.quantile(y, 0.1)), 0.0)
    if model == "power":
        pos = y > 0
        slope = np.polyfit(np.log(r[pos]), np.log(y[pos]), 1)[0] if pos.sum() >= 2 else -0.5
        x0 = [math.log(peak), float(np.clip(-slope, 0.01, 4.9)), 0.0]
        lo, hi = [math.log(peak) - 20, 0.0, 0.0], [math.log(peak) + 10, 5.0, c_max + 1e-12]
    else:
        below = np.nonzero(y < y[0] / math.e)[0]
        xi0 = float(r[below[0]]) if below.size else float(r.max())
        x0 = [math.log(peak), math.log(max(xi0, 0.2)), 0.0]
        lo, hi = [math.log(peak) - 20, math.log(0.05), 0.0], [math.log(peak) + 10, math.log(1e3 * r.max()), c_max + 1e-12]

    def residual(p: np.ndarray) -> np.ndarray:
        par = p[1] if model == "power" else math.exp(p[1])
        return (_shape(model, r, math.exp(p[0]), par) + p[2] - y) / sigma

    x0 = np.clip(x0, lo, hi)
    try:
        res = optimize.least_squares(residual, x0, bounds=(lo, hi), x_scale="jac")
    except (ValueError, FloatingPointError):
        return None
    p = res.x
    par = float(p[1]) if model == "power" else float(math.exp(p[1]))
    return DecayFit(model, float(math.exp(p[0])), par, float(p[2]), float(2 * res.cost), int(r.size))


def fit_start(r: np.ndarray, mi: np.ndarray, se: np.ndarray, significant: np.ndarray) -> float:
    """The offset the decay models are fitted from: the first of ``FIT_STARTS`` from which the
    better model fits within its errors (chi2/dof at most 1 + 3 sqrt(2/dof)), moved on to a later
    one from which it does too where the step to it from the start before it leaves out
    outliers (``_misfit``); the first offset when no start fits. A tokenizer's first offsets
    (within a word) can follow no smooth decay where the rest of the profile does; a floor fitted
    across them takes up that misfit rather than what reaches every offset. A kernel no model fits
    keeps all its offsets. The search ends, keeping the start chosen so far, at a start with
    fewer than ``MIN_FIT_POINTS`` offsets distinguishable from zero from it, or past the fitted
    kernel's own q90 width."""
    start = before = None
    for at in FIT_STARTS:
        keep = r >= at
        if int(np.count_nonzero(significant[keep])) < MIN_FIT_POINTS:
            break
        fit = best_fit(r[keep], mi[keep], se[keep])
        if fit is None or before is not None and model_width(fit) <= at:
            break
        dof = fit.n_points - 3
        if fit.chi2 / dof <= 1 + 3 * math.sqrt(2 / dof) and (start is None or _misfit(before, fit)):
            start = at
        before = fit
    return FIT_STARTS[0] if start is None else start


def best_fit(r: np.ndarray, mi: np.ndarray, se: np.ndarray) -> DecayFit | None:
    """The model with the smaller chi2, or None when neither can be fitted."""
    fits = fits_of(r, mi, se)
    return min(fits.values(), key=lambda f: f.chi2) if fits else None


def _misfit(before: DecayFit, after: DecayFit, level: float = 0.01) -> bool:
    """Whether the offsets in ``before``'s fit and not in ``after``'s (each the better model's
    fit) are outliers: their share of chi2 exceeds their number (beyond their own errors) and,
    per offset, the rest's chi2 per degree of freedom by an F test at ``level``. The second test
    holds with errors that are only known up to a factor (the relative floor of the weights,
    errors correlated across offsets), as the rest's own scatter sets the scale."""
    dropped, dof = before.n_points - after.n_points, after.n_points - 3
    gain = before.chi2 - after.chi2
    if dropped < 1 or dof < 1 or gain <= dropped:
        return False
    return gain / dropped > stats.f.ppf(1 - level, dropped, dof) * after.chi2 / dof


def fits_of(r: np.ndarray, mi: np.ndarray, se: np.ndarray) -> dict[str, DecayFit]:
    """Both decay models fitted to one profile (models that could not be fitted left out)."""
    out = {m: fit_decay(r, mi, se, m) for m in MODELS}
    return {m: f for m, f in out.items() if f is not None}


def preferred(fits: dict[str, DecayFit]) -> str | None:
    """The model with the smaller AIC, or None without fits."""
    return min(fits.values(), key=lambda f: f.aic).model if fits else None


def exponential_width(xi: float) -> float:
    """q90 of an exponential kernel exp(-(r-1)/xi) over r >= 1: the offsets holding 90 % of its mass."""
    return max(1.0, xi * math.log(10))


def power_width(alpha: float) -> float:
    """q90 of a power-law kernel r^-alpha over r >= 1 (infinite for alpha <= 1, whose mass diverges):
    the R with sum_{r > R} r^-alpha = 0.1 zeta(alpha), by bisection on the Hurwitz zeta function."""
    if alpha <= 1.0 + 1e-9:
        return math.inf
    tail = 0.1 * special.zeta(alpha)
    lo, hi = 0.0, 1.0
    while special.zeta(alpha, hi + 1) > tail:
        lo, hi = hi, hi * 2
        if hi > 1e12:
            return math.inf
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if special.zeta(alpha, mid + 1) > tail else (lo, mid)
    return max(1.0, hi)


def model_width(f: DecayFit) -> float:
    """q90 width (tokens) of one fitted kernel above its floor: exponential_width or power_width."""
    return exponential_width(f.parameter) if f.model == "exponential" else power_width(f.parameter)


@dataclass(frozen=True)
class Width:
    """What one granularity's profile says about the reach of its dependencies.

    ``W`` (tokens, q90 of the fitted kernel above its floor) and its interval are set for the
    kinds ``characteristic`` and ``local``, and are None otherwise; ``alpha`` is the power-law
    exponent (the profile's decay rate whatever the kind), ``floor`` the fitted floor in bits,
    ``r_max`` the largest well-populated offset; ``exponential_gain`` the evidence for the model
    (``Fitted.exponential_gain``: chi2 gain, its jackknife error, its one-sided lower bound)."""

    granularity: str
    kind: str
    W: float | None
    ci_low: float | None
    ci_high: float | None
    alpha: float | None
    alpha_ci: tuple[float, float] | None
    floor: float | None
    floor_ci: tuple[float, float] | None
    preferred_model: str | None
    exponential_share: float | None  # replicates whose smaller AIC is the exponential's (alike, so no test)
    r_max: float
    bytes_per_token: float | None
    reason: str
    fits: dict[str, DecayFit]
    fit_start: float = 1.0  # the offset the fits start from (fit_start)
    exponential_gain: tuple[float, float, float] | None = None

    @property
    def W_bytes(self) -> float | None:
        return self.W * self.bytes_per_token if self.W is not None and self.bytes_per_token else None

    def to_dict(self) -> dict:
        out = asdict(self)
        out["fits"] = {k: asdict(f) for k, f in self.fits.items()}
        out["W_bytes"] = self.W_bytes
        return out


@dataclass(frozen=True)
class Fitted:
    """A Curve with both decay models fitted to its point profile and to each replicate."""

    curve: Curve
    fits: dict[str, DecayFit]
    replicate_fits: tuple[dict[str, DecayFit], ...]
    start: float = 1.0  # the offset the fits start from (fit_start)

    @cached_property
    def exponential_gain(self) -> tuple[float, float, float] | None:
        """(chi2 of the power law - chi2 of the exponential, its jackknife standard error, its
        one-sided lower bound at MODEL_CONFIDENCE), or None without both fits or without two
        replicates that have both."""
        if set(self.fits) != set(MODELS):
            return None
        gain = self.fits["power"].chi2 - self.fits["exponential"].chi2
        values = np.array([fs["power"].chi2 - fs["exponential"].chi2 if set(fs) == set(MODELS) else np.nan
                           for fs in self.replicate_fits])
        se, low, _ = replicate_interval(gain, values, self.curve.weights, 2 * MODEL_CONFIDENCE - 1)
        return None if math.isnan(se) else (gain, se, low)

    @cached_property
    def model(self) -> str | None:
        """The preferred model: the exponential where it fits better than the power law beyond its
        error (``exponential_gain``; with replicates that show no spread, by any gain), else the
        power law; the smaller AIC for a profile without replicates or with one model fitted."""
        if set(self.fits) != set(MODELS) or not self.replicate_fits:
            return preferred(self.fits)
        gain = self.exponential_gain
        if gain is None:  # replicates, but too few with both models to measure the gain's error
            return "power"
        return "exponential" if gain[2] > 0 else "power"

    def excess(self) -> Curve:
        """The curve minus its fitted floor (the preferred model's), replicate by replicate. Its
        ``bias_moves`` refit the floor to the profile moved by its bias bound: a bias that reaches
        every offset alike goes into the floor, as the floor is there to take it up."""
        if self.model is None:
            return self.curve
        floor = self.fits[self.model].floor
        floors = np.array([f[self.model].floor if self.model in f else np.nan for f in self.replicate_fits])
        floors = np.where(np.isfinite(floors), floors, floor)
        c = self.curve
        moved = None
        if c.bias is not None:
            moved = []
            keep = c.offsets >= self.start
            for shifted in (c.mi + c.bias, c.mi - c.bias):
                refit = fit_decay(c.offsets[keep], shifted[keep], c.se[keep], self.model)
                moved.append(shifted - (refit.floor if refit is not None else floor))
            moved = np.array(moved)
        return replace(c, mi=c.mi - floor, replicates=c.replicates - floors[None, :], moved=moved)


def fitted(c: Curve, start: float | None = None) -> Fitted:
    """Fit both models to a curve and to each of its replicates, from offset ``start`` (by default
    the point profile's ``fit_start``)."""
    start = fit_start(c.offsets, c.mi, c.se, c.significant) if start is None else start
    k = c.offsets >= start
    reps = tuple(fits_of(c.offsets[k], c.replicate(g)[k], c.se[k]) for g in range(c.replicates.shape[1]))
    return Fitted(c, fits_of(c.offsets[k], c.mi[k], c.se[k]), reps, start)


def kernel_width(f: Fitted, confidence: float = 0.95) -> Width:
    """The kind and width of one granularity's dependencies, with replicate intervals."""
    c = f.curve
    base = dict(granularity=c.name, r_max=c.r_max, bytes_per_token=c.bytes_per_token, fit_start=f.start)
    if not c.significant.any() or not f.fits:
        return Width(**base, kind="none", W=None, ci_low=None, ci_high=None, alpha=None, alpha_ci=None,
                     floor=None, floor_ci=None, preferred_model=None, exponential_share=None, fits={},
                     reason="no offset has mutual information distinguishable from zero")
    fits, rep_fits, model = f.fits, f.replicate_fits, f.model

    def stat(fs: dict[str, DecayFit], what: str) -> float:
        if what == "W":
            return math.log(exponential_width(fs["exponential"].parameter)) if "exponential" in fs else np.nan
        if what == "power W":
            return math.log(min(power_width(fs["power"].parameter), 1e12)) if "power" in fs else np.nan
        if what == "alpha":
            return fs["power"].parameter if "power" in fs else np.nan
        return fs[model].floor if model in fs else np.nan

    def interval(what: str) -> tuple[float, float, float]:
        vals = np.array([stat(fs, what) for fs in rep_fits])
        return replicate_interval(stat(fits, what), vals, c.weights, confidence)

    _, a_lo, a_hi = interval("alpha")
    _, f_lo, f_hi = interval("floor")
    alpha = fits["power"].parameter if "power" in fits else None
    share = float(np.mean([preferred(fs) == "exponential" for fs in rep_fits])) if rep_fits else None
    start = (f" (fitted from r = {f.start:.0f}: the offsets before it do not follow the decay fitted to the rest)"
             if f.start > 1 else "")
    common = dict(alpha=alpha, alpha_ci=(a_lo, a_hi) if alpha is not None else None,
                  floor=fits[model].floor, floor_ci=(f_lo, f_hi),
                  preferred_model=model, exponential_share=share, fits=fits, exponential_gain=f.exponential_gain)
    if model == "exponential":
        w = exponential_width(fits["exponential"].parameter)
        _, lo, hi = interval("W")
        lo, hi = (math.exp(lo), math.exp(hi)) if np.isfinite(lo) else (w, w)
        if hi < c.r_max / 2:
            kind = "local" if hi <= LOCAL_TOKENS else "characteristic"
            reason = (f"I(r) decays exponentially above a floor: 90 % of the kernel lies within {w:.1f} tokens "
                      f"[{lo:.1f}, {hi:.1f}], well inside the {c.r_max:.0f} profiled")
            if kind == "local":
                reason = f"dependencies end within {math.ceil(hi)} tokens: " + reason
            return Width(**base, kind=kind, W=w, ci_low=lo, ci_high=hi, reason=reason + start, **common)
        reason = (f"the exponential's width ({w:.0f} tokens, up to {hi:.0f}) reaches past half of the "
                  f"{c.r_max:.0f} profiled: no length of its own within the profiled range")
    else:
        w = power_width(alpha)
        _, lo, hi = interval("power W")
        lo, hi = (math.exp(lo), math.exp(hi)) if np.isfinite(lo) else (w, w)
        if hi <= LOCAL_TOKENS:
            reason = (f"dependencies end within {math.ceil(hi)} tokens: I(r) falls as a steep power law (alpha = "
                      f"{alpha:.2f}) whose kernel holds 90 % of its mass within {w:.1f} tokens [{lo:.1f}, {hi:.1f}]")
            return Width(**base, kind="local", W=w, ci_low=lo, ci_high=hi, reason=reason + start, **common)
        if "exponential" not in fits:
            reason = (f"only a power law could be fitted (alpha = {alpha:.2f}): no length of its own up to "
                      f"r = {c.r_max:.0f}")
        elif fits["exponential"].chi2 < fits["power"].chi2:
            gain = f.exponential_gain
            evidence = (f"chi2 lower by {gain[0]:.1f} ± {gain[1]:.1f}, its one-sided 95 % bound {gain[2]:.1f}"
                        if gain is not None else "too few replicates fit both models to measure its error")
            reason = (f"an exponential fits no better than a power law beyond its error ({evidence}; alpha = "
                      f"{alpha:.2f}): no length of its own shown up to r = {c.r_max:.0f}")
        else:
            reason = (f"a power law fits better than an exponential (alpha = {alpha:.2f}): no length of its own "
                      f"up to r = {c.r_max:.0f}")
    return Width(**base, kind="scale-free", W=None, ci_low=None, ci_high=None, reason=reason + start, **common)


def local_slopes(offsets: np.ndarray, mi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(geometric-mid offsets, d log I / d log r) between consecutive positive points."""
    keep = mi > 0
    r, m = np.asarray(offsets, float)[keep], mi[keep]
    if r.size < 2:
        return np.zeros(0), np.zeros(0)
    return np.sqrt(r[1:] * r[:-1]), np.diff(np.log(m)) / np.diff(np.log(r))
