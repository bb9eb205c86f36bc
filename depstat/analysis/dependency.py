"""The dependency kernel of one granularity: which decay describes I(r), and the lengths it implies.

Three nested models, each with a floor c (what reaches every offset alike: leftover estimator
bias, or information a whole document shares), are fitted to I(r) by weighted least squares
(weights 1 / max(se, 2 % of I)), as Sainburg et al. (2019) fit mutual-information decay:

- exponential, A e^(-(r-1)/xi) + c: a characteristic length xi;
- power, B r^-alpha + c: no length of its own;
- composite, A e^(-(r-1)/xi) + B r^-alpha + c: a local part on top of a scale-free tail.

A richer model is chosen only where it fits better beyond its error and has the smaller AICc:
a parametric bootstrap rejects the simpler model at 5 % (draws of the simpler model's fit plus
noise with the profile's covariance across offsets, from its jackknife replicates; both models
refitted on each). The exponential needs that against the power law, the composite against
both. A profile without replicates (an exact one) goes by AICc alone. Every model is also
refitted on each replicate, which gives every parameter its interval.

``Width.kind`` says what the chosen model shows: ``local`` (90 % of the kernel within
``LOCAL_TOKENS``), ``characteristic`` (an exponential whose q90 width W = xi ln 10 lies well
inside the profile), ``scale-free`` (a power law, or an exponential too long to measure),
``composite`` (a local part of width W, then a power-law tail from the crossover r_x, the offset
beyond which the tail carries most of I above the floor), ``periodic`` (peaks above both
neighbours, beyond their error, at multiples of one period) or ``none``. Every parameter has a
replicate interval, and ``chi2_dof`` says whether the chosen model describes the data.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property

import numpy as np
import polars as pl
from scipy import optimize, special, stats

from depstat.estimate import estimators as est

LOCAL_TOKENS = 8.0
MIN_DOCS = 20  # documents an offset needs to be used (or half the corpus's, for small corpora)
REL_SE_FLOOR = 0.02  # relative error floor of a point's weight, so one tiny-se point cannot dominate
MODELS = ("exponential", "power", "composite")
N_PARAMS = {"exponential": 3, "power": 3, "composite": 5}
CONFIDENCE = 0.95  # a richer model is chosen where its bootstrap test rejects the simpler at 1 - CONFIDENCE
NULL_DRAWS = 59  # bootstrap draws of one model-choice test: p can reach 1 / 60
MIN_PEAKS = 3  # peaks beyond their error a periodic kernel needs
FITS_WELL = 2.0  # chi2/dof above which the report says the chosen model does not describe the data


@dataclass(frozen=True)
class Curve:
    """One granularity's profile over its well-populated offsets, with its jackknife replicates.

    ``replicates[i, g]`` is I(offsets[i]) without document group g; ``weights[g]`` the pairs group
    g holds; ``bias[i]`` the estimator's bias bound (zero when unknown). ``round_trips``: its tokens
    give back the text they span, so it sees the text itself, dilated."""

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
        weights = np.array(rows["group_pairs"].to_list(), dtype=float).sum(axis=0)
        reps = np.where(np.isfinite(reps), reps, mi[:, None])
    else:
        reps, weights = np.zeros((rows.height, 0)), np.zeros(0)
    bias = np.nan_to_num(rows["bias_bound"].to_numpy().astype(float)) if "bias_bound" in rows.columns else None
    return Curve(name, rows["offset"].to_numpy().astype(float), mi, np.nan_to_num(rows["se"].to_numpy().astype(float)),
                 rows["significant"].to_numpy(), reps, weights, bytes_per_token, bias, round_trips)


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
    """One model fitted to I(r): local amplitude and length (A, xi), tail amplitude and exponent
    (B, alpha), floor, and the weighted chi2 over ``n_points`` offsets. Unused parts are zero."""

    model: str
    A: float
    xi: float
    B: float
    alpha: float
    floor: float
    chi2: float
    n_points: int

    def local(self, r: np.ndarray) -> np.ndarray:
        """The exponential part A e^(-(r-1)/xi)."""
        return self.A * np.exp(-(np.asarray(r, float) - 1) / self.xi) if self.A > 0 else np.zeros(np.shape(r))

    def tail(self, r: np.ndarray) -> np.ndarray:
        """The power-law part B r^-alpha."""
        return self.B * np.asarray(r, float) ** -self.alpha if self.B > 0 else np.zeros(np.shape(r))

    def predict(self, r: np.ndarray) -> np.ndarray:
        return self.local(r) + self.tail(r) + self.floor

    @property
    def dof(self) -> int:
        return max(self.n_points - N_PARAMS[self.model], 1)

    @property
    def aicc(self) -> float:
        k, n = N_PARAMS[self.model], self.n_points
        return self.chi2 + 2 * k + (2 * k * (k + 1) / (n - k - 1) if n > k + 1 else math.inf)

    def crossover(self) -> float | None:
        """The offset beyond which the tail exceeds the local part for good (1 where it does from the
        start); None without a tail."""
        if self.B <= 0:
            return None
        if self.A <= 0:
            return 1.0

        def gap(r: float) -> float:  # log local - log tail: rises until r = alpha xi, then falls for good
            return math.log(self.A) - (r - 1) / self.xi - math.log(self.B) + self.alpha * math.log(r)

        top = max(1.0, self.alpha * self.xi)
        if gap(top) <= 0:
            return 1.0
        hi = top * 2
        while gap(hi) > 0:
            hi *= 2
        return float(optimize.brentq(gap, top, hi))


def _unpack(model: str, p: np.ndarray) -> tuple[float, float, float, float, float]:
    """(A, xi, B, alpha, floor) from a model's free parameters (amplitudes and xi in logs)."""
    if model == "exponential":
        return math.exp(p[0]), math.exp(p[1]), 0.0, 0.0, p[2]
    if model == "power":
        return 0.0, 1.0, math.exp(p[0]), p[1], p[2]
    return math.exp(p[0]), math.exp(p[1]), math.exp(p[2]), p[3], p[4]


def _pack(f: DecayFit) -> list[float]:
    """The free parameters of a fit, to start another fit of the same model from."""
    tiny = 1e-12
    if f.model == "exponential":
        return [math.log(max(f.A, tiny)), math.log(f.xi), f.floor]
    if f.model == "power":
        return [math.log(max(f.B, tiny)), f.alpha, f.floor]
    return [math.log(max(f.A, tiny)), math.log(f.xi), math.log(max(f.B, tiny)), f.alpha, f.floor]


def fit_errors(mi: np.ndarray, se: np.ndarray) -> np.ndarray:
    """Each offset's error in the fits: its standard error, at least REL_SE_FLOOR of I (so that no
    tiny-se point dominates) and 1e-4 of the peak."""
    mi = np.asarray(mi, float)
    return np.maximum(np.maximum(np.nan_to_num(se), REL_SE_FLOOR * np.abs(mi)), 1e-4 * max(float(mi.max()), 1e-12))


def floor_cap(mi: np.ndarray) -> float:
    """The highest floor a fit may take: the profile's lower decile (at least zero)."""
    return max(float(np.quantile(mi, 0.1)), 0.0) + 1e-12


def fit_decay(r: np.ndarray, mi: np.ndarray, se: np.ndarray, model: str,
              starts: list[list[float]] | None = None, cap: float | None = None) -> DecayFit | None:
    """Weighted least-squares fit of one model with a floor at most ``cap`` (default: ``floor_cap``
    of ``mi``), from ``starts`` (free parameters; by default a few spread guesses); the lowest
    chi2 of them, or None when none can be fitted."""
    r, y = np.asarray(r, float), np.asarray(mi, float)
    if r.size < N_PARAMS[model] + 1 or not np.any(y > 0):
        return None
    peak = float(max(y.max(), 1e-12))
    sigma = fit_errors(y, se)
    c_max = floor_cap(y) if cap is None else cap
    amp = (math.log(peak) - 20, math.log(peak) + 10)
    length = (math.log(0.05), math.log(1e3 * r.max()) if model == "exponential" else math.log(r.max()))
    lo, hi = {"exponential": ([amp[0], length[0], 0.0], [amp[1], length[1], c_max]),
              "power": ([amp[0], 0.0, 0.0], [amp[1], 5.0, c_max]),
              "composite": ([amp[0], length[0], amp[0], 0.0, 0.0], [amp[1], length[1], amp[1], 5.0, c_max])}[model]
    if starts is None:
        pos = y > 0
        slope = -np.polyfit(np.log(r[pos]), np.log(y[pos]), 1)[0] if pos.sum() >= 2 else 0.5
        below = np.nonzero(y < y[0] / math.e)[0]
        xi0 = float(r[below[0]]) if below.size else float(r.max())
        starts = {"exponential": [[math.log(peak), math.log(max(xi0, 0.2)), 0.0]],
                  "power": [[math.log(peak), float(np.clip(slope, 0.01, 4.9)), 0.0]],
                  "composite": [[math.log(peak / 2), 0.0, math.log(peak / 2), a, 0.0] for a in (0.3, 0.8)]
                  + [[math.log(peak), math.log(2.0), math.log(peak / 10), 0.5, 0.0]]}[model]

    log_r = np.log(r)

    def residual(p: np.ndarray) -> np.ndarray:
        a, xi, b, alpha, c = _unpack(model, p)
        return (a * np.exp(-(r - 1) / xi) + b * r**-alpha + c - y) / sigma

    def jacobian(p: np.ndarray) -> np.ndarray:
        a, xi, b, alpha, c = _unpack(model, p)
        local, tail = a * np.exp(-(r - 1) / xi), b * r**-alpha
        parts = {"exponential": (local, local * (r - 1) / xi), "power": (tail, -tail * log_r),
                 "composite": (local, local * (r - 1) / xi, tail, -tail * log_r)}[model]
        return np.column_stack([*parts, np.ones_like(r)]) / sigma[:, None]

    best = None
    for x0 in starts:
        try:
            res = optimize.least_squares(residual, np.clip(x0, lo, hi), jac=jacobian, bounds=(lo, hi), x_scale="jac")
        except (ValueError, FloatingPointError):
            continue
        if best is None or res.cost < best.cost:
            best = res
    if best is None:
        return None
    return DecayFit(model, *_unpack(model, best.x), float(2 * best.cost), int(r.size))


def fits_of(r: np.ndarray, mi: np.ndarray, se: np.ndarray, near: dict[str, DecayFit] | None = None) -> dict[str, DecayFit]:
    """Every model fitted to one profile (models that could not be fitted left out); a replicate's
    fits start from ``near``, the point profile's, and from the default guesses."""
    out = {}
    for m in MODELS:
        starts = None
        if near and m in near:
            starts = [_pack(near[m])]
            if m == "composite":
                starts += [_pack(replace(near[s], model=m)) for s in ("exponential", "power") if s in near]
        f = fit_decay(r, mi, se, m, starts)
        if f is not None:
            out[m] = f
    if "composite" in out:  # a composite is never worse than the models it nests
        out["composite"] = min([out["composite"]] + [replace(out[s], model="composite") for s in ("exponential", "power")
                                                     if s in out], key=lambda f: f.chi2)
    return out


@dataclass(frozen=True)
class Evidence:
    """How much better a richer model fits: its chi2 gain, the test's p-value ((1 + draws whose
    gain reaches it) / (1 + draws), from parametric-bootstrap draws of the simpler model's fit;
    None where no draw was made: no replicates, or the AICc already prefers the simpler), the
    draws made, and the AICc difference (richer minus simpler)."""

    richer: str
    simpler: str
    gain: float
    p_value: float | None
    draws: int
    aicc_change: float

    @property
    def shown(self) -> bool:
        """The richer model fits better beyond its error (or, without replicates, at all), and by AICc."""
        beyond = self.p_value <= 1 - CONFIDENCE if self.p_value is not None else self.gain > 0
        return self.aicc_change < 0 and beyond


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


def null_test(c: Curve, fits: dict[str, DecayFit], richer: str, simpler: str, gain: float) -> tuple[int, int]:
    """A parametric-bootstrap test of ``richer`` against ``simpler``: (draws whose chi2 gain
    reaches ``gain``, draws made); (0, 0) with fewer than two groups of replicates. Each draw is
    the simpler model's fit plus noise of the profile's covariance (random signs on the
    replicates' jackknife deviations, and independent noise for what se holds beyond them),
    both models refitted from the data's fits; a draw that cannot be fitted counts as reaching
    the gain. The draws stop once the gain cannot be shown (Besag and Clifford 1991)."""
    if c.replicates.shape[1] < 2 or (c.weights > 0).sum() < 2:
        return 0, 0
    reps = est.Replicates(c.mi, c.replicates, np.broadcast_to(c.weights, c.replicates.shape))
    noise = est.jackknife_deviations(reps)
    rest = np.sqrt(np.maximum(c.se**2 - (noise**2).sum(axis=1), 0.0))  # e.g. the null draws' error
    rest[rest <= 1e-6 * c.se] = 0.0  # rounding, where se is the jackknife's alone
    base, cap = fits[simpler].predict(c.offsets), floor_cap(c.mi)  # the models' space is the profile's
    seed = zlib.crc32(np.ascontiguousarray(c.mi).tobytes() + f"{richer}>{simpler}".encode())
    signs, normal = np.random.default_rng(seed), np.random.default_rng(seed + 1)
    allowed = round((1 - CONFIDENCE) * (NULL_DRAWS + 1)) - 1  # hits beyond this and p exceeds 1 - CONFIDENCE
    nested = richer == "composite"  # the composite nests both others: never worse than the simpler's fit
    hits = 0
    for draw in range(1, NULL_DRAWS + 1):
        y = base + noise @ signs.choice((-1.0, 1.0), noise.shape[1]) + rest * normal.standard_normal(rest.size)
        s, r = (fit_decay(c.offsets, y, c.se, m, [_pack(fits[m])], cap) for m in (simpler, richer))
        hits += s is None or r is None or s.chi2 - (min(r.chi2, s.chi2) if nested else r.chi2) >= gain
        if hits > allowed:
            return hits, draw
    return hits, NULL_DRAWS


@dataclass(frozen=True)
class Fitted:
    """A Curve with every model fitted to its point profile and to each replicate."""

    curve: Curve
    fits: dict[str, DecayFit]
    replicate_fits: tuple[dict[str, DecayFit], ...]

    def evidence(self, richer: str, simpler: str) -> Evidence | None:
        """The chi2 gain of ``richer`` over ``simpler`` with its bootstrap test; None without both fits."""
        if richer not in self.fits or simpler not in self.fits:
            return None
        key = (richer, simpler)
        if key not in self._tests:
            fit = self.fits[richer]
            gain = self.fits[simpler].chi2 - fit.chi2
            hits, draws = (0, 0) if fit.aicc >= self.fits[simpler].aicc else null_test(self.curve, self.fits, richer,
                                                                                      simpler, gain)
            self._tests[key] = Evidence(richer, simpler, gain, (1 + hits) / (1 + draws) if draws else None, draws,
                                        fit.aicc - self.fits[simpler].aicc)
        return self._tests[key]

    @cached_property
    def _tests(self) -> dict[tuple[str, str], Evidence]:
        return {}

    @cached_property
    def model(self) -> str | None:
        """The chosen model: the power law unless the exponential fits better beyond its error,
        then the composite where its tail is measured and it fits better than both beyond its error
        (tested first against the simpler model chosen, and no further once a test fails)."""
        if not self.fits:
            return None
        simple = "power" if "power" in self.fits else "exponential" if "exponential" in self.fits else None
        exp_over_power = self.evidence("exponential", "power")
        if exp_over_power is not None and exp_over_power.shown:
            simple = "exponential"
        if not self.tail_measured():
            return simple
        for against in (simple, *(m for m in ("exponential", "power") if m != simple)):  # the likelier to fail first
            e = self.evidence("composite", against)
            if e is None or not e.shown:
                return simple
        return "composite"

    def tests_made(self) -> tuple[Evidence, ...]:
        """The model tests run so far, in order: those the choice needed, and any asked for since."""
        return tuple(self._tests.values())

    def tail_measured(self) -> bool:
        """Whether the composite's tail is the slow part: above twice its error at some offset
        beyond the crossover (else its power law only shapes the first offsets of a faster decay)."""
        f, c = self.fits.get("composite"), self.curve
        if f is None or f.crossover() is None:
            return False
        beyond = c.offsets >= f.crossover()
        return bool(np.any(f.tail(c.offsets[beyond]) > 2 * fit_errors(c.mi, c.se)[beyond]))

    def interval(self, stat: callable, confidence: float) -> tuple[float, float, float]:
        """(point, low, high) of a statistic of the chosen model's fit, over the replicates."""
        point = stat(self.fits[self.model])
        values = np.array([stat(fs[self.model]) if self.model in fs else np.nan for fs in self.replicate_fits],
                          dtype=float)
        _, lo, hi = replicate_interval(point, values, self.curve.weights, confidence)
        return point, (lo if np.isfinite(lo) else point), (hi if np.isfinite(hi) else point)


def fitted(c: Curve) -> Fitted:
    """Fit every model to a curve and to each of its replicates (those from the point fits)."""
    point = fits_of(c.offsets, c.mi, c.se)
    reps = tuple(fits_of(c.offsets, c.replicate(g), c.se, point) for g in range(c.replicates.shape[1]))
    return Fitted(c, point, reps)


def peaks(c: Curve, confidence: float = CONFIDENCE) -> list[int]:
    """Offsets where I exceeds both neighbours beyond their error (one-sided replicate bound,
    Bonferroni over the offsets tried): what no decay has."""
    if c.offsets.size < 3 or c.replicates.shape[1] < 2:
        return []
    level = 1 - (1 - confidence) / (c.offsets.size - 2)
    out = []
    for i in range(1, c.offsets.size - 1):
        rise = c.mi[i] - max(c.mi[i - 1], c.mi[i + 1])
        if rise > 0:
            reps = c.replicates[i] - np.maximum(c.replicates[i - 1], c.replicates[i + 1])
            if replicate_interval(rise, reps, c.weights, 2 * level - 1)[1] > 0:
                out.append(int(c.offsets[i]))
    return out


def period(c: Curve, confidence: float = CONFIDENCE) -> int | None:
    """A dominant period: with at least ``MIN_PEAKS`` peaks, the peak offset P >= 2 of which the most
    peaks are multiples, weighed by P (chance makes every P-th offset a multiple); None otherwise."""
    found = peaks(c, confidence)
    if len(found) < MIN_PEAKS:
        return None
    score = {p: p * sum(q % p == 0 for q in found) for p in found if p >= 2}
    score = {p: s for p, s in score.items() if s >= 2 * p}  # at least one other peak at a multiple
    return max(score, key=lambda p: (score[p], -p)) if score else None


Interval = tuple[float, float]


@dataclass(frozen=True)
class Width:
    """What one granularity's profile says about the reach of its dependencies.

    ``W`` (tokens, q90 of the exponential part) and its interval are set where the kernel has a
    length of its own (``local``, ``characteristic``, ``composite``); ``xi`` is that part's
    e-folding length, ``alpha`` the tail's exponent, ``crossover`` the offset beyond which the tail
    carries most of I above the floor (``composite``; 1 for a power law), ``chi2_dof`` the chosen
    model's fit, ``period`` the period of a ``periodic`` kernel."""

    granularity: str
    kind: str
    W: float | None
    ci_low: float | None
    ci_high: float | None
    alpha: float | None
    alpha_ci: Interval | None
    floor: float | None
    floor_ci: Interval | None
    preferred_model: str | None
    r_max: float
    bytes_per_token: float | None
    reason: str
    fits: dict[str, DecayFit] = field(default_factory=dict)
    xi: float | None = None
    xi_ci: Interval | None = None
    crossover: float | None = None
    crossover_ci: Interval | None = None
    chi2_dof: float | None = None
    period: int | None = None
    evidence: tuple[Evidence, ...] = ()

    @property
    def W_bytes(self) -> float | None:
        return self.W * self.bytes_per_token if self.W is not None and self.bytes_per_token else None

    @property
    def fits_data(self) -> bool:
        """Whether the chosen model describes the data (chi2/dof at most FITS_WELL)."""
        return self.chi2_dof is not None and self.chi2_dof <= FITS_WELL

    def to_dict(self) -> dict:
        out = asdict(self)
        out["W_bytes"] = self.W_bytes
        return out


def _log_interval(f: Fitted, stat: callable, confidence: float) -> tuple[float, float, float]:
    """A positive statistic's interval, computed on its log."""
    point, lo, hi = f.interval(lambda fit: math.log(max(stat(fit), 1e-12)), confidence)
    return math.exp(point), math.exp(lo), math.exp(hi)


def kernel_width(f: Fitted, confidence: float = 0.95) -> Width:
    """The kind of one granularity's dependencies, with its lengths and their replicate intervals."""
    c = f.curve
    base = dict(granularity=c.name, r_max=c.r_max, bytes_per_token=c.bytes_per_token)
    empty = dict(W=None, ci_low=None, ci_high=None, alpha=None, alpha_ci=None, floor=None, floor_ci=None,
                 preferred_model=None)
    if not c.significant.any() or f.model is None:
        return Width(**base, **empty, kind="none", reason="no offset has mutual information distinguishable from zero")
    model, fit = f.model, f.fits[f.model]
    chi2_dof = fit.chi2 / fit.dof
    evidence = f.tests_made()
    _, f_lo, f_hi = f.interval(lambda x: x.floor, confidence)
    common = dict(floor=fit.floor, floor_ci=(f_lo, f_hi), preferred_model=model, fits=f.fits, chi2_dof=chi2_dof,
                  evidence=evidence)
    quality = "" if chi2_dof <= FITS_WELL else (
        f"; the {model} model does not describe the data (chi2/dof = {chi2_dof:.1f}): read its figures as a summary")
    p = period(c, confidence)
    if p is not None:
        return Width(**base, **{**empty, **common}, kind="periodic", period=p,
                     reason=f"I(r) peaks above its neighbours, beyond their error, at {len(peaks(c, confidence))} "
                            f"offsets, most at multiples of {p} tokens: a period of its own, which no decay describes")
    alpha = alpha_ci = xi = xi_ci = W = w_ci = cross = cross_ci = None
    if model in ("power", "composite"):
        alpha, a_lo, a_hi = f.interval(lambda x: x.alpha, confidence)
        alpha_ci = (a_lo, a_hi)
    if model in ("exponential", "composite"):
        xi, lo, hi = _log_interval(f, lambda x: x.xi, confidence)
        xi_ci = (lo, hi)
        W, w_ci = exponential_width(xi), (exponential_width(lo), exponential_width(hi))
    common.update(alpha=alpha, alpha_ci=alpha_ci, xi=xi, xi_ci=xi_ci)
    if model == "composite":
        cross, lo, hi = _log_interval(f, lambda x: x.crossover() or 1.0, confidence)
        cross_ci = (max(lo, 1.0), hi)  # offsets start at 1
        reason = (f"a local part (90 % within {W:.1f} tokens [{w_ci[0]:.1f}, {w_ci[1]:.1f}]) on a power-law tail "
                  f"(alpha = {alpha:.2f} [{alpha_ci[0]:.2f}, {alpha_ci[1]:.2f}]) that carries most of I above the "
                  f"floor from r = {cross:.1f} [{cross_ci[0]:.1f}, {hi:.1f}]")
        return Width(**base, **common, kind="composite", W=W, ci_low=w_ci[0], ci_high=w_ci[1], crossover=cross,
                     crossover_ci=cross_ci, reason=reason + quality)
    if model == "exponential":
        if w_ci[1] < c.r_max / 2:
            kind = "local" if w_ci[1] <= LOCAL_TOKENS else "characteristic"
            reason = (f"I(r) decays exponentially above a floor: 90 % of the kernel lies within {W:.1f} tokens "
                      f"[{w_ci[0]:.1f}, {w_ci[1]:.1f}], well inside the {c.r_max:.0f} profiled")
            return Width(**base, **common, kind=kind, W=W, ci_low=w_ci[0], ci_high=w_ci[1], reason=reason + quality)
        return Width(**base, **common, kind="scale-free", W=None, ci_low=None, ci_high=None,
                     reason=f"the exponential's width ({W:.0f} tokens, up to {w_ci[1]:.0f}) reaches past half of the "
                            f"{c.r_max:.0f} profiled: no length of its own within the profiled range" + quality)
    w, (w_lo, w_hi) = power_width(alpha), (power_width(alpha_ci[1]), power_width(alpha_ci[0]))
    if w_hi <= LOCAL_TOKENS:
        return Width(**base, **common, kind="local", W=w, ci_low=w_lo, ci_high=w_hi, crossover=1.0,
                     reason=f"dependencies end within {math.ceil(w_hi)} tokens: I(r) falls as a steep power law "
                            f"(alpha = {alpha:.2f}) whose kernel holds 90 % of its mass within {w:.1f} tokens" + quality)
    return Width(**base, **common, kind="scale-free", W=None, ci_low=None, ci_high=None, crossover=1.0,
                 crossover_ci=(1.0, 1.0),
                 reason=f"a power law with a floor (alpha = {alpha:.2f} [{alpha_ci[0]:.2f}, {alpha_ci[1]:.2f}]) from "
                        f"the first offset: no length of its own up to r = {c.r_max:.0f}" + quality)
