"""Self-similarity as a range: from which offset on does the dependency structure keep its shape
under a dilation r -> s r?

A power law I(r) = B r^-alpha is the one decay whose shape a dilation keeps. Natural text is a
local part on top of such a tail (``dependency``'s composite kernel), so it is self-similar
beyond a crossover r_x, not at every scale. The verdict reads the model granularity's kernel:

- ``self-similar`` from the onset to the profile's end, when the tail is shown beyond its error
  (the model with the tail fits better than the exponential alone, by its replicate bound) and a
  direct dilation check agrees: the data's tail (I minus the local part and a floor) fits a power
  law (chi2/dof at most ``dependency.FITS_WELL``) whose exponent over its first cell (offsets r
  to ``CELL`` r) and beyond differ by at most ``MARGIN``, over at least ``MIN_SPAN`` of offsets.
  The onset is the crossover r_x (the first offset for a power law), or the first later offset
  from which the check holds and no later start within ``MIN_SPAN`` of it refutes it (a change
  beyond the margin, shown nonzero over that family of starts): a range self-similar from r is
  so from every later r, and a broken power law is self-similar beyond its break;
- ``not self-similar`` when the kernel has a length of its own (``local``, ``characteristic``,
  ``periodic``), which a dilation moves, or when the tail's exponent changes beyond the margin
  by its one-sided bound and keeps no exponent from any later onset;
- ``inconclusive`` when the data cannot tell (no dependence, no tail told from an exponential,
  too few offsets measured, a change not told from the margin), with what would decide it.

The tail exponents of the other granularities whose tokens give back their text are shown beside
it, with their spread and its replicate interval, not required to agree: a coarser token pair is
another marginal of the same text (docs/analysis.md, "Exponents across granularities").
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

import numpy as np
import polars as pl
from scipy import stats

from depstat.analysis.dependency import (
    FITS_WELL,
    Fitted,
    Width,
    fit_decay,
    fitted,
    kernel_width,
    replicate_interval,
)
from depstat.errors import DepstatError

MARGIN = 0.25  # slope units: how much the tail's exponent may change across its range and still count as one shape
MIN_SPAN = 8.0  # a self-similar range spans offsets at least this factor wide: a first cell and its image under a dilation by 4
CELL = 2.0  # the tail's first cell spans offsets r .. CELL r, compared with the tail beyond it
MIN_HALF = 3  # offsets the first cell and the rest each need
VERDICTS = ("self-similar", "not self-similar", "inconclusive")
OWN_LENGTH = ("local", "characteristic", "periodic")


@dataclass(frozen=True)
class DilationCheck:
    """The data's tail (I minus the floor and the local part) over ``r_low``-``r_high`` tokens:
    its exponent over its first cell (r_low to CELL r_low) and beyond, their change (first minus
    beyond), the change's one-sided bounds and its standard error."""

    r_low: float
    r_split: float  # the first cell's last offset
    r_high: float
    alpha_low: float
    alpha_high: float
    change: float
    bounds: tuple[float, float]
    se: float
    n_points: tuple[int, int]
    chi2_dof: float  # of a power law with a floor fitted to the tail from r_low

    def within(self, margin: float) -> bool:
        """The change is within the margin and the power law fits the tail."""
        return abs(self.change) <= margin and self.chi2_dof <= FITS_WELL

    def refutes(self, margin: float, tests: int, confidence: float = 0.95) -> bool:
        """The change lies beyond the margin and is shown to be nonzero, two-sided at ``confidence``
        over a family of ``tests`` such checks (Bonferroni)."""
        z = stats.norm.ppf(1 - (1 - confidence) / (2 * max(tests, 1)))
        return abs(self.change) > margin and abs(self.change) > z * self.se

    def shown_beyond(self, margin: float) -> bool:
        """The change lies beyond the margin by its one-sided bound."""
        return min(abs(self.bounds[0]), abs(self.bounds[1])) > margin and self.bounds[0] * self.bounds[1] > 0


@dataclass(frozen=True)
class TailExponent:
    """One granularity's tail exponent with its interval, and where its tail starts on the byte axis."""

    granularity: str
    alpha: float
    interval: tuple[float, float]
    onset_bytes: float | None


@dataclass(frozen=True)
class SelfSimilarity:
    """The verdict with its reasons, the range it holds over and the evidence behind it."""

    verdict: str
    reasons: tuple[str, ...]
    granularity: str
    margin: float
    onset_tokens: float | None = None
    onset_bytes: float | None = None
    onset_interval: tuple[float, float] | None = None  # tokens
    r_max: float | None = None  # tokens: the end of the range the verdict holds over
    alpha: float | None = None
    dilation: DilationCheck | None = None
    exponents: tuple[TailExponent, ...] = ()
    exponent_spread: float | None = None
    exponent_spread_bounds: tuple[float, float] | None = None
    duplicates: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def _tail_alpha(r: np.ndarray, tail: np.ndarray) -> float:
    """The exponent of a tail over some offsets: minus the OLS slope of log tail on log r (NaN where not positive)."""
    if np.any(tail <= 0) or r.size < 2:
        return float("nan")
    return -float(np.polyfit(np.log(r), np.log(tail), 1)[0])


def dilation_check(f: Fitted, onset: float, confidence: float = 0.95) -> DilationCheck | None:
    """Whether the data's tail keeps one exponent from ``onset`` on. The tail is I minus the fitted
    local part, less a floor refitted with a power law to the offsets from ``onset`` (on the point
    profile and on each replicate), over the offsets where it lies above twice its error; its
    exponent over its first cell (up to ``CELL`` times its first offset, and at least MIN_HALF
    offsets) is compared with its exponent beyond. None with fewer than MIN_HALF offsets beyond."""
    c, model = f.curve, f.fits[f.model]
    at = c.offsets >= onset
    r = c.offsets[at]
    if r.size < 2 * MIN_HALF:
        return None
    point = c.mi[at] - model.local(r)
    power = fit_decay(r, point, c.se[at], "power")
    if power is None:
        return None
    keep = point - power.floor > 2 * c.se[at]
    rk = r[keep]
    if keep.sum() < 2 * MIN_HALF:
        return None
    low = (rk < CELL * rk[0]) | (np.arange(rk.size) < MIN_HALF)  # at least MIN_HALF offsets in the first cell
    if (~low).sum() < MIN_HALF:
        return None

    def change(t: np.ndarray) -> tuple[float, float, float]:
        a, b = _tail_alpha(rk[low], t[low]), _tail_alpha(rk[~low], t[~low])
        return a, b, a - b

    a_low, a_high, d = change((point - power.floor)[keep])
    reps = []
    for g, fs in enumerate(f.replicate_fits):
        y = c.replicate(g)[at] - fs.get(f.model, model).local(r)
        refit = fit_decay(r, y, c.se[at], "power", [[math.log(max(power.B, 1e-12)), power.alpha, power.floor]])
        reps.append(change((y - (refit.floor if refit else power.floor))[keep])[2])
    se, lo, hi = replicate_interval(d, np.array(reps), c.weights, 2 * confidence - 1)
    return DilationCheck(float(rk[0]), float(rk[low][-1]), float(rk[-1]), a_low, a_high, d, (lo, hi), se,
                         (int(low.sum()), int((~low).sum())),
                         power.chi2 / power.dof)


def tail_exponents(fits: dict[str, Fitted], widths: dict[str, Width],
                   confidence: float = 0.95) -> tuple[tuple[TailExponent, ...], float | None, tuple[float, float] | None]:
    """The tail exponent of every granularity with a tail whose tokens give back their text, and
    their spread (max - min) with its replicate interval (the same document groups at every
    granularity). The spread is None with fewer than two."""
    names = [n for n, w in widths.items() if w.alpha is not None and w.kind in ("scale-free", "composite", "local")
             and fits[n].curve.round_trips]
    out = tuple(TailExponent(n, widths[n].alpha, widths[n].alpha_ci,
                             (widths[n].crossover or 1.0) * (widths[n].bytes_per_token or 1.0)
                             if widths[n].crossover is not None else None) for n in names)
    groups = {fits[n].curve.replicates.shape[1] for n in names}
    if len(names) < 2 or len(groups) != 1:
        return out, None, None
    spread = max(e.alpha for e in out) - min(e.alpha for e in out)
    reps = np.array([[fs[fits[n].model].alpha if fits[n].model in fs else np.nan for fs in fits[n].replicate_fits]
                     for n in names])
    _, lo, hi = replicate_interval(spread, reps.max(axis=0) - reps.min(axis=0), fits[names[0]].curve.weights,
                                   confidence)
    return out, float(spread), (float(lo), float(hi))


def self_similarity(
    fits: dict[str, Fitted],
    widths: dict[str, Width],
    model: str,
    margin: float = MARGIN,
    confidence: float = 0.95,
    duplicates: dict[str, str] | None = None,
) -> SelfSimilarity:
    """The verdict at granularity ``model``: from which offset on its kernel is a power law that a
    dilation keeps, with the other granularities' tail exponents beside it. A self-similar verdict
    must survive the estimator's bias bound: refitted with every point moved up, and down, by its
    bound (a systematic error the replicates cannot see), it must stay self-similar."""
    found = _self_similarity(fits, widths, model, margin, confidence, duplicates)
    c = fits[model].curve
    if found.verdict != "self-similar" or c.bias is None or not np.any(c.bias > 0):
        return found
    moved = []
    for sign, way in ((1, "up"), (-1, "down")):
        shifted = fitted(replace(c, mi=c.mi + sign * c.bias, replicates=c.replicates + sign * c.bias[:, None]))
        ss = _self_similarity({model: shifted}, {model: kernel_width(shifted, confidence)}, model, margin, confidence,
                              None)
        moved.append((way, ss))
    text = "; ".join(f"moved {way}, {ss.verdict}" + (f" from r = {ss.onset_tokens:.1f} (alpha {ss.alpha:.2f})"
                                                       if ss.verdict == "self-similar" else "") for way, ss in moved)
    if all(ss.verdict == "self-similar" for _, ss in moved):
        return replace(found, reasons=(found.reasons[0], f"with every point of {model} moved by the estimator's bias "
                                       f"bound: {text}", *found.reasons[1:]))
    return replace(found, verdict="inconclusive", reasons=(
        f"{found.reasons[0]}; but the estimator's bias bound could undo it (every point of {model} moved by its "
        f"bound: {text}): profile more tokens to decide", *found.reasons[1:]))


def _self_similarity(fits: dict[str, Fitted], widths: dict[str, Width], model: str, margin: float,
                     confidence: float, duplicates: dict[str, str] | None) -> SelfSimilarity:
    """The verdict from the point profile and its replicates alone."""
    w, f = widths[model], fits[model]
    unit = w.bytes_per_token or 1.0
    exponents, spread, spread_ci = tail_exponents(fits, widths, confidence)
    reasons = _shared_reasons(exponents, spread, spread_ci, duplicates or {})
    common = dict(granularity=model, margin=margin, r_max=w.r_max, exponents=exponents, exponent_spread=spread,
                  exponent_spread_bounds=spread_ci, duplicates=duplicates or {})

    def verdict(name: str, why: str, **more: object) -> SelfSimilarity:
        return SelfSimilarity(name, (why, *reasons), **common, **more)

    if w.kind == "none":
        return verdict("inconclusive", f"{model}: no offset shows dependence; profile more tokens to decide")
    if w.kind in OWN_LENGTH:
        return verdict("not self-similar", f"{model} has a length of its own, which a dilation moves: {w.reason}")
    if w.preferred_model == "exponential":
        return verdict("inconclusive", f"{model}: {w.reason}; no power-law tail is measured: profile longer "
                                       "documents (or more tokens) to decide")
    tail_vs_exp = f.evidence(w.preferred_model, "exponential")
    if tail_vs_exp is None or not tail_vs_exp.shown:
        return verdict("inconclusive", f"{model}: a power-law tail is not told from an exponential beyond its error "
                                       "(the bootstrap test of its chi2 gain): profile more tokens to decide")
    onset = w.crossover or 1.0
    onset_ci = w.crossover_ci or (onset, onset)
    alpha = w.alpha
    where = dict(onset_tokens=onset, onset_bytes=onset * unit if w.bytes_per_token else None,
                 onset_interval=onset_ci, alpha=alpha)
    tail_text = (f"{model}'s tail, alpha = {alpha:.2f}, carries most of I above the floor from r = {onset:.1f} "
                 f"[{onset_ci[0]:.1f}, {onset_ci[1]:.1f}] tokens" + (f" ({onset * unit:.0f} bytes)" if w.bytes_per_token
                                                                      else ""))
    first = dilation_check(f, onset, confidence)
    if first is None:
        return verdict("inconclusive", f"{tail_text}, but it is measured above its error at fewer than {MIN_HALF} "
                                       f"offsets within {CELL:g}x of its start or beyond: profile more tokens (or "
                                       "longer documents) to check a dilation", **where)
    later = [float(r) for r in f.curve.offsets if r > onset and r * MIN_SPAN <= first.r_high]
    checks = {onset: first}

    def check_at(r: float) -> DilationCheck | None:
        if r not in checks:
            checks[r] = dilation_check(f, r, confidence)
        return checks[r]

    def refuted(r: float) -> DilationCheck | None:
        """Why an onset at r fails: its own check, or a later start within MIN_SPAN of it that refutes it
        (a range self-similar from r is so from every later r); None when it holds."""
        d = check_at(r)
        if d is None or not d.within(margin) or d.r_high < MIN_SPAN * d.r_low:
            return d or first
        family = [q for q in later if r < q < MIN_SPAN * r]
        return next((d for q in family if (d := check_at(q)) is not None and d.refutes(margin, len(family), confidence)),
                    None)

    start = next((r for r in [onset, *later] if refuted(r) is None), None)

    if start is not None:
        check, why = checks[start], refuted(onset)
        moved = (f"; from r = {why.r_low:.1f} {_change_text(why)}, so the onset moves to the first offset from which "
                 "the tail keeps one exponent at every later start" if start > onset else "")
        where.update(onset_tokens=start, onset_bytes=start * unit if w.bytes_per_token else None,
                     onset_interval=onset_ci if start == onset else (start, start), dilation=check)
        return verdict("self-similar", f"{tail_text}{moved}; from r = {start:.1f} {_change_text(check)}: within the "
                                       f"margin {margin:g}, so a dilation keeps the shape from r = {start:.1f} to "
                                       f"{w.r_max:.0f} tokens", **where)
    where["dilation"] = first
    if first.shown_beyond(margin):
        return verdict("not self-similar", f"{tail_text}; {_change_text(first)}: beyond the margin {margin:g} by its "
                                           "error, and from no later offset within it, so a dilation changes the "
                                           "shape", **where)
    return verdict("inconclusive", f"{tail_text}; {_change_text(first)}: {_undecided(first, refuted(onset), margin)}; "
                                   "profile more tokens (or longer documents) to decide", **where)


def _shared_reasons(exponents: tuple[TailExponent, ...], spread: float | None,
                    spread_ci: tuple[float, float] | None, duplicates: dict[str, str]) -> list[str]:
    """The reasons every verdict carries: granularities counted once, and the tail exponents on the byte axis."""
    reasons = [f"{dup} gives the same profile as {same} (the same tokenization) and is counted once"
               for dup, same in duplicates.items()]
    if len(exponents) >= 2:
        reasons.append("tail exponents on the byte axis: " + ", ".join(
            f"{e.granularity} {e.alpha:.2f} [{e.interval[0]:.2f}, {e.interval[1]:.2f}]" for e in exponents)
            + (f"; spread {spread:.2f} [{max(spread_ci[0], 0):.2f}, {spread_ci[1]:.2f}] (shown, not required to be "
               "zero: a coarser token pair is another marginal of the same text)" if spread is not None else ""))
    return reasons


def _undecided(first: DilationCheck, later: DilationCheck, margin: float) -> str:
    """Why the check from the tail's onset (``first``) decides nothing; ``later`` refuted that onset."""
    if first.within(margin) and first.r_high < MIN_SPAN * first.r_low:
        return f"within the margin {margin:g}, but measured over less than {MIN_SPAN:g}x of offsets"
    if first.within(margin):
        return (f"within the margin {margin:g}, but from r = {later.r_low:.1f} {_change_text(later)}, "
                f"beyond it, and from no later offset does the tail keep one exponent")
    return (f"not within the margin {margin:g} nor beyond it by its error, from this or any later offset that "
            f"leaves {MIN_SPAN:g}x of offsets")


def _change_text(d: DilationCheck) -> str:
    """A dilation check in words: the exponent before and after its split, the change, and the fit."""
    return (f"its exponent is {d.alpha_low:.2f} over r = {d.r_low:.0f}-{d.r_split:.0f} and "
            f"{d.alpha_high:.2f} beyond, up to {d.r_high:.0f}, a change of {d.change:+.2f} [{d.bounds[0]:+.2f}, "
            f"{d.bounds[1]:+.2f}]; a power law with a floor fits there with chi2/dof {d.chi2_dof:.2f}")


@dataclass(frozen=True)
class DilationTest:
    """PI's premise checked on two corpora: is the target-length data's kernel width s times the
    training data's? ``share`` = log(W_target / W_train) / log s: 1 a full dilation, 0 none."""

    factor: float
    W_train: float | None
    W_target: float | None
    share: float | None
    share_ci: tuple[float, float] | None
    verdict: str  # one of DILATION_VERDICTS
    reason: str

    def to_dict(self) -> dict:
        return asdict(self)


DILATION_VERDICTS = ("dilated", "fixed", "inconclusive", "no length")


def dilation_test(train: Width, target: Width, factor: float, confidence: float = 0.95) -> DilationTest:
    """Dilated when the share's interval lies above 1/2, fixed when below; "no length" when either
    kernel has no length of its own (then the self-similarity verdict decides)."""
    if factor <= 1:
        raise DepstatError(f"the dilation test needs a target longer than the training length, got s = {factor:g}")
    if train.W is None or target.W is None:
        kinds = f"{train.kind} at the training length, {target.kind} at the target length"
        return DilationTest(factor, train.W, target.W, None, None, "no length", f"no kernel length to compare ({kinds})")
    z = float(stats.norm.ppf(0.5 + confidence / 2))

    def log_se(w: Width) -> float:
        return (math.log(w.ci_high) - math.log(w.ci_low)) / (2 * z) if w.ci_low and w.ci_high else 0.0

    log_s = math.log(factor)
    share = math.log(target.W / train.W) / log_s
    h = z * math.hypot(log_se(train), log_se(target)) / log_s
    lo, hi = share - h, share + h
    verdict = "dilated" if lo > 0.5 else "fixed" if hi < 0.5 else "inconclusive"
    reason = (f"W grows {target.W / train.W:.2f}x for a {factor:g}x longer context (share of a full dilation "
              f"{share:.2f} [{lo:.2f}, {hi:.2f}])")
    return DilationTest(factor, train.W, target.W, share, (lo, hi), verdict, reason)


def distinct(table: pl.DataFrame) -> tuple[list[str], dict[str, str]]:
    """Granularities with distinct profiles, and each duplicate mapped to the one it repeats.

    A BPE trainer that runs out of merges gives two vocabulary sizes the same tokenization;
    counting both would give that tokenization two votes.
    """
    kept: list[str] = []
    duplicates: dict[str, str] = {}
    for name in table["granularity"].unique(maintain_order=True):
        rows = table.filter(pl.col("granularity") == name).sort("offset").select("offset", "mi_bits", "n_pairs")
        same = next((k for k in kept if rows.equals(
            table.filter(pl.col("granularity") == k).sort("offset").select("offset", "mi_bits", "n_pairs"))), None)
        if same is None:
            kept.append(name)
        else:
            duplicates[name] = same
    return kept, duplicates
