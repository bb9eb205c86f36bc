"""Self-similarity in paper A's sense: does the dependency structure keep its shape under dilation?

A power law I(r) ∝ r^-alpha is the one profile whose shape a dilation r -> s r keeps, and a
granularity that packs rho times more bytes per token sees the same text dilated by rho. So
the test puts every granularity's offsets on one byte axis (r times its bytes per token) and
measures the local slope alpha(x) = -d log I / d log x in cells ``CELL`` times wide, from
``MIN_TOKENS`` model tokens up to the range the extension needs (s L_train) or the profile's
end. Self-similar data give one slope in every cell of every granularity.

Effect size: D = max over cells |alpha_cell - alpha_bar| (alpha_bar the cells' inverse-variance
mean), with its standard error from the whole-profile jackknife replicates (the same document
groups at every granularity, so the covariance across cells and granularities is kept). An
equivalence test against ``MARGIN`` (two one-sided tests at level 1 - confidence):

- ``not self-similar`` when the model granularity's kernel has a length of its own
  (``depstat.analysis.dependency``: an exponential decay well inside the profiled range), which a
  dilation moves, or when D's lower bound lies above the margin;
- ``self-similar`` when D's upper bound lies below the margin and there is no such length;
- ``inconclusive`` otherwise, with the reason.

A length fixed in bytes passes the cross-granularity comparison when the tokenizations are
close (a 2-byte BPE barely smooths a 20-byte kernel), which is why the kernel's kind decides
first.

A direct dilation check at the model granularity reports how much log I(s r) - log I(r) varies
over r (in slope units: divided by ln s); for a power law it is constant.

``dilation_test`` checks PI's premise on two corpora (data at the training length and data at
the target length): whether the kernel width grows by the extension factor.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np
import polars as pl
from scipy import stats

from depstat.analysis.dependency import Curve, Width, replicate_interval
from depstat.errors import DepstatError

MARGIN = 0.25  # slope units: how far granularities may disagree at one scale and still count as one shape
CELL = 4.0  # each slope cell spans offsets x .. CELL x (two octaves)
MIN_TOKENS = 4  # the test starts this many model tokens out (sub-token structure comes first)
CELL_SE_MAX = 0.25  # a cell whose slope is known to worse than this (the default margin) is left out
VERDICTS = ("self-similar", "not self-similar", "inconclusive")


@dataclass(frozen=True)
class SlopeCell:
    """The local slope of one granularity over one cell of the byte axis."""

    granularity: str
    x_low: float
    x_high: float
    slope: float
    se: float
    n_points: int


@dataclass(frozen=True)
class Dilation:
    """log I(s r) - log I(r) at the model granularity: its spread over r, in slope units."""

    granularity: str
    factor: float
    r_low: float
    r_high: float
    spread: float
    spread_se: float
    n_points: int


@dataclass(frozen=True)
class SelfSimilarity:
    """The verdict with its reasons, effect size and the cells and dilation check behind it."""

    verdict: str
    reasons: tuple[str, ...]
    effect: float | None
    effect_bounds: tuple[float, float] | None  # one-sided (1 - confidence) bounds of D
    margin: float
    alpha: float | None
    bytes_range: tuple[float, float] | None
    needed_tokens: float
    cells: tuple[SlopeCell, ...] = ()
    dilation: Dilation | None = None
    duplicates: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def _cell_slopes(c: Curve, x: np.ndarray, edges: np.ndarray, values: np.ndarray) -> list[tuple[int, float, int]]:
    """(cell index, OLS slope of -log I on log x, points) for cells with >= 2 points, all positive."""
    out = []
    for k in range(len(edges) - 1):
        inside = (x >= edges[k]) & (x < edges[k + 1])
        if inside.sum() < 2 or np.any(values[inside] <= 0):
            continue
        slope = np.polyfit(np.log(x[inside]), np.log(values[inside]), 1)[0]
        out.append((k, -float(slope), int(inside.sum())))
    return out


def _cells(curves: list[Curve], x_low: float, x_high: float) -> tuple[list[tuple], np.ndarray]:
    """Cells measurable on the point and every replicate: (curve, cell, x, slopes over replicates)."""
    n_edges = max(int(math.floor(math.log(max(x_high / x_low, 1.0)) / math.log(CELL) + 1e-9)), 0) + 1
    edges = x_low * CELL ** np.arange(n_edges)
    if edges[-1] < x_high * 0.999 and n_edges >= 1:  # a last, shorter cell up to x_high
        edges = np.append(edges, x_high * 1.0000001)
    found = []
    for c in curves:
        x = c.offsets * (c.bytes_per_token or 1.0)
        point = {k: (s, n) for k, s, n in _cell_slopes(c, x, edges, c.mi)}
        reps = [{k: s for k, s, _ in _cell_slopes(c, x, edges, c.replicate(g))} for g in range(c.replicates.shape[1])]
        for k, (s, n) in point.items():
            rep = np.array([r.get(k, np.nan) for r in reps])
            if np.all(np.isfinite(rep)):
                found.append((c, k, edges[k], min(edges[k + 1], x_high), s, rep, n))
    return found, edges


def _deviations(slopes: np.ndarray, se: np.ndarray, cell: np.ndarray) -> np.ndarray:
    """Each slope's distance from its cell's mean slope (weighted by the fixed cell errors); NaN
    in a cell that only one granularity measures."""
    w = 1 / np.maximum(se, 1e-3) ** 2
    out = np.full(slopes.shape, np.nan)
    for k in np.unique(cell):
        inside = cell == k
        if inside.sum() >= 2:
            out[inside] = slopes[inside] - np.sum(w[inside] * slopes[inside]) / np.sum(w[inside])
    return out


def dilation_check(c: Curve, factor: float, r_low: float, confidence: float = 0.95) -> Dilation | None:
    """Spread of log I(s r) - log I(r) over the offsets where both are measured, in slope units."""
    if factor <= 1:
        return None
    lr = np.log(c.offsets)
    r = c.offsets[(c.offsets >= r_low) & (c.offsets * factor <= c.r_max)]
    if r.size < 3:
        return None

    def spread(v: np.ndarray) -> float:
        if np.any(v <= 0):
            return np.nan
        ly = np.log(v)
        d = np.interp(np.log(r * factor), lr, ly) - np.interp(np.log(r), lr, ly)
        return float((d.max() - d.min()) / math.log(factor))

    point = spread(c.mi)
    vals = np.array([spread(c.replicate(g)) for g in range(c.replicates.shape[1])])
    se, _, _ = replicate_interval(point, vals, c.weights, confidence)
    return Dilation(c.name, float(factor), float(r.min()), float(r.max()), point, se, int(r.size))


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


def self_similarity(
    curves: dict[str, Curve],
    model: str,
    width: Width,
    needed_tokens: float,
    factor: float,
    margin: float = MARGIN,
    confidence: float = 0.95,
    duplicates: dict[str, str] | None = None,
) -> SelfSimilarity:
    """The verdict from each granularity's profile above its floor (``curves``): local slopes on a
    byte axis, equivalence-tested against ``margin``.

    ``model`` is the granularity the advice is for and ``width`` its kernel width; the test
    covers MIN_TOKENS .. ``needed_tokens`` model tokens, or up to the profile's end. Cells whose
    slope is known to worse than CELL_SE_MAX are left out (a fixed rule, so that the verdict moves
    monotonically with the margin)."""
    m = curves[model]
    unit = m.bytes_per_token or 1.0
    x_low, x_high = MIN_TOKENS * unit, min(needed_tokens, m.r_max) * unit
    reasons = [f"{dup} gives the same profile as {same} (the same tokenization) and is counted once"
               for dup, same in (duplicates or {}).items()]
    grs = [c for c in curves.values() if c.replicates.shape[1] == m.replicates.shape[1] and c.offsets.size]
    found = _cells(grs, x_low, x_high)[0] if x_high > x_low else []
    weights = m.weights
    cell_se = np.array([replicate_interval(f[4], f[5], weights, confidence)[0] for f in found])
    noisy = int(np.sum(~(cell_se <= CELL_SE_MAX))) if found else 0
    found = [f for f, e in zip(found, cell_se) if e <= CELL_SE_MAX]
    cell_se = cell_se[cell_se <= CELL_SE_MAX] if noisy else cell_se
    dil = dilation_check(m, factor, MIN_TOKENS, confidence)
    if m.r_max < needed_tokens:
        reasons.append(
            f"the profile reaches r = {m.r_max:.0f} {model} tokens, short of the {needed_tokens:.0f} an extension "
            f"by {factor:g} needs: the verdict holds for the profiled range only"
        )
    if noisy:
        reasons.append(f"{noisy} slope cells known to worse than ± {CELL_SE_MAX:g} were left out")
    if dil is not None and np.isfinite(dil.spread):
        reasons.append(
            f"dilation by {dil.factor:g} at {model}: log I({dil.factor:g}r) - log I(r) varies by {dil.spread:.2f} "
            f"± {dil.spread_se:.2f} (slope units) over r = {dil.r_low:.0f}-{dil.r_high:.0f}"
        )
    common = dict(margin=margin, needed_tokens=float(needed_tokens), dilation=dil, duplicates=duplicates or {})
    own_length = width.kind in ("local", "characteristic")
    if own_length:
        reasons.insert(0, f"{model} has a length of its own, which a dilation would move: {width.reason}")
    if not any(sum(g[1] == f[1] for g in found) >= 2 for f in found):
        if own_length:
            return SelfSimilarity("not self-similar", tuple(reasons), None, None, alpha=None,
                                  bytes_range=(x_low, x_high), **common)
        reasons.insert(0, f"fewer than two granularities have a measurable slope at a common scale between "
                          f"{x_low:.0f} and {x_high:.0f} bytes (I(r) above its floor throughout a cell, its slope "
                          f"known to ± {CELL_SE_MAX:g}): profile more tokens")
        return SelfSimilarity("inconclusive", tuple(reasons), None, None, alpha=None,
                              bytes_range=(x_low, x_high), **common)
    slopes = np.array([f[4] for f in found])
    reps = np.array([f[5] for f in found])  # cells x replicates
    cell = np.array([f[1] for f in found])
    dev = _deviations(slopes, cell_se, cell)
    d = float(np.nanmax(np.abs(dev)))
    w = 1 / np.maximum(cell_se, 1e-3) ** 2
    alpha = float(np.sum(w * slopes) / np.sum(w))
    d_reps = np.array([np.nanmax(np.abs(_deviations(reps[:, g], cell_se, cell))) for g in range(reps.shape[1])])
    d_se, _, _ = replicate_interval(d, d_reps, weights, confidence)
    z = stats.norm.ppf(confidence)
    lo, hi = d - z * d_se, d + z * d_se
    cells = tuple(SlopeCell(f[0].name, float(f[2]), float(f[3]), float(s), float(e), f[6])
                  for f, s, e in zip(found, slopes, cell_se))
    worst = cells[int(np.nanargmax(np.abs(dev)))]
    grans = sorted({cl.granularity for cl in cells})
    span = (min(cl.x_low for cl in cells), max(cl.x_high for cl in cells))
    text = (f"{len(cells)} cells of {', '.join(grans)} from {span[0]:.0f} to {span[1]:.0f} bytes: local slopes "
            f"above the floor agree across granularities within {d:.2f} [{max(lo, 0):.2f}, {hi:.2f}] at each "
            f"scale (mean alpha = {alpha:.2f}); the farthest from its scale's mean is {worst.granularity} at "
            f"{worst.x_low:.0f}-{worst.x_high:.0f} bytes ({worst.slope:.2f} ± {worst.se:.2f})")
    if lo > margin:
        verdict, why = "not self-similar", f"{text}: beyond the margin {margin:g}, so the shape changes with scale"
    elif own_length:
        verdict, why = "not self-similar", f"{text}; the granularities agree, but on a kernel of fixed length"
    elif hi < margin:
        verdict, why = "self-similar", (f"{text}: within the margin {margin:g}, and no length of its own, so a "
                                        "dilation keeps the profile's shape")
    else:
        verdict, why = "inconclusive", (f"{text}: the interval straddles the margin {margin:g}; "
                                        "profile more tokens to decide")
    reasons.insert(1 if own_length else 0, why)
    return SelfSimilarity(verdict, tuple(reasons), d, (float(lo), float(hi)), alpha=alpha,
                          bytes_range=span, cells=cells, **common)


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
