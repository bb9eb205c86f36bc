"""Self-similarity of the dependency structure across granularities, and the verdict.

A granularity h that packs rho times more bytes per token than g sees the same text
dilated by rho. If the profile is a power law, I_h(r) and I_g(r) have the same shape in
token units (a dilation only shifts log I): the profiles *collapse in token units*. If
the source has a characteristic length fixed in bytes (a Markov chain, arithmetic
problems), the shapes match only after converting offsets to bytes: they *collapse in
byte units* and not in token units.

For each pair of granularities the module measures the misfit of log I_h(r) against
log I_g(lambda r) (free vertical shift) for lambda = 1 (token units) and lambda = rho
(byte units), and the lambda that fits best (the dilation factor). The collapse score is
log10(misfit_token / misfit_byte): about 0 or below when token units fit as well as byte
units, positive when only byte units fit. Intervals come from redrawing each profile
point from Normal(mi, se).

Verdict. A scale-free (power-law) profile is straight on log-log axes; a process with a
characteristic length bends down (its local slope steepens) once offsets pass that
length. For each granularity with at least ``min_points`` significant offsets, log I is
fitted by weighted least squares as a quadratic in log r; a curvature whose 95 % interval
lies below zero is a *cutoff*, and so is a profile that rises significantly (by more
than ``rise_sigma`` standard errors) at ``min_rises`` or more places, the mark of a layout
repeating at fixed distances. ``not self-similar`` when at least half of the granularities
show a cutoff; ``self-similar`` when at most ``max_cutoff_share`` of them do (and at least
two were tested); otherwise, or with fewer than two testable granularities,
``inconclusive`` with the reason. The collapse scores and dilation factors are reported
beside the verdict as diagnostics. Measurements behind the rule: docs/analysis.md.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import polars as pl

from depstat.dependency import curvature, fit_decay, preferred_model

THRESHOLDS = {
    "min_points": 5,  # significant offsets needed to test a profile or compare two
    "min_docs": 20,  # documents that must contribute to an offset for it to be used
    "rise_sigma": 3.0,  # an increase of I between neighbouring offsets beyond this many SE is significant
    "min_rises": 2,  # this many significant rises mark structure at fixed distances
    "max_cutoff_share": 1 / 3,  # self-similar only if at most this share of granularities bends down
}
N_DRAWS = 200
DILATIONS = np.exp(np.linspace(np.log(1 / 4), np.log(64), 121))


@dataclass(frozen=True)
class PairCollapse:
    """Collapse of granularity ``coarse`` onto ``fine`` (rho = bytes/token ratio)."""

    fine: str
    coarse: str
    rho: float
    misfit_token: float
    misfit_byte: float
    score: float
    score_ci: tuple[float, float]
    dilation: float
    n_points: int


@dataclass
class SelfSimilarity:
    """Per-granularity decay fits, pairwise collapses, and the verdict with its reasons."""

    verdict: str
    reasons: list[str]
    exponents: dict[str, dict]
    preferred: dict[str, str | None]
    curvatures: dict[str, dict] = field(default_factory=dict)
    pairs: list[PairCollapse] = field(default_factory=list)
    thresholds: dict = field(default_factory=lambda: dict(THRESHOLDS))

    def to_dict(self) -> dict:
        return {
            "verdict": self.verdict,
            "reasons": self.reasons,
            "decay_model_preferred": self.preferred,
            "power_law_exponents": self.exponents,
            "curvature": self.curvatures,
            "pairs": [asdict(p) for p in self.pairs],
            "thresholds": self.thresholds,
        }


def _curve(rows: pl.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(offsets, log I, standard error of log I) over the significant, well-populated offsets.

    Offsets where fewer than ``min_docs`` documents (or half of them, for small corpora)
    contribute are left out: there the few longest documents decide the value.
    """
    rows = rows.sort("offset")
    enough = min(THRESHOLDS["min_docs"], rows["n_docs"].max() / 2)
    rows = rows.filter(pl.col("significant") & (pl.col("mi_bits") > 0) & (pl.col("n_docs") >= enough))
    mi = rows["mi_bits"].to_numpy()
    return rows["offset"].to_numpy().astype(float), np.log(mi), np.nan_to_num(rows["se"].to_numpy()) / mi


def misfit(o_g: np.ndarray, y_g: np.ndarray, o_h: np.ndarray, y_h: np.ndarray, lam: float) -> tuple[float, int]:
    """Mean squared residual of log I_h(r) - a - log I_g(lam r) over the common offset range."""
    if o_g.size < 2:
        return float("nan"), 0
    lg = np.log(o_g)
    x = np.log(o_h * lam)
    inside = (x >= lg.min()) & (x <= lg.max())
    n = int(inside.sum())
    if n < THRESHOLDS["min_points"]:
        return float("nan"), n
    resid = y_h[inside] - np.interp(x[inside], lg, y_g)
    return float(np.mean((resid - resid.mean()) ** 2)), n


def pair_collapse(name_g: str, g: tuple, name_h: str, h: tuple, rho: float, seed: int = 0) -> PairCollapse:
    """Token- versus byte-unit collapse of one pair of profiles, with a redraw interval.

    Redraws perturb each log I by its standard error (delta method) on the same offsets.
    """
    (o_g, y_g, s_g), (o_h, y_h, s_h) = g, h

    def score(yg: np.ndarray, yh: np.ndarray) -> tuple[float, float, float, int]:
        tok, n = misfit(o_g, yg, o_h, yh, 1.0)
        byt, _ = misfit(o_g, yg, o_h, yh, rho)
        return tok, byt, float(np.log10(max(tok, 1e-12) / max(byt, 1e-12))), n

    tok, byt, point, n = score(y_g, y_h)
    rng = np.random.default_rng(seed)
    draws = np.asarray([
        score(y_g + rng.standard_normal(y_g.shape) * s_g, y_h + rng.standard_normal(y_h.shape) * s_h)[2]
        for _ in range(N_DRAWS)
    ])
    draws = draws[np.isfinite(draws)]
    # Redrawing adds noise to both curves, which pulls the score towards zero: re-centre the
    # spread of the redraws on the point estimate.
    draws = draws - np.median(draws) + point if draws.size else draws
    ci = tuple(np.quantile(draws, [0.025, 0.975]).tolist()) if draws.size else (float("nan"), float("nan"))
    fits = np.asarray([misfit(o_g, y_g, o_h, y_h, lam)[0] for lam in DILATIONS])
    dilation = float(DILATIONS[np.nanargmin(fits)]) if np.isfinite(fits).any() else float("nan")
    return PairCollapse(name_g, name_h, rho, tok, byt, point, ci, dilation, n)


def self_similarity(table: pl.DataFrame, bytes_per_token: dict[str, float | None], seed: int = 0) -> SelfSimilarity:
    """Verdict on a profile table with several granularities and their bytes per token."""
    names, duplicates = _distinct(table)
    curves = {n: _curve(table.filter(pl.col("granularity") == n)) for n in names}
    exponents, preferred, curvatures = {}, {}, {}
    for n, (o, y, s) in curves.items():
        fits = fit_decay(o, np.exp(y), s * np.exp(y))
        preferred[n] = preferred_model(fits)
        if "power" in fits:
            f = fits["power"]
            exponents[n] = {"alpha": f.parameter, "ci": [f.ci_low, f.ci_high], "aic_power": f.aic,
                            "aic_exponential": fits["exponential"].aic}
        if o.size >= THRESHOLDS["min_points"]:
            c, lo, hi = curvature(o, y, s)
            rises = significant_rises(table.filter(pl.col("granularity") == n))
            curvatures[n] = {
                "curvature": c, "ci": [lo, hi], "n_points": int(o.size), "significant_rises": rises,
                "cutoff": bool(hi < 0 or rises >= THRESHOLDS["min_rises"]),
            }
    text = [n for n in names if bytes_per_token.get(n)]
    order = sorted(text, key=lambda n: bytes_per_token[n])
    pairs = []
    for i, g in enumerate(order):
        for h in order[i + 1:]:
            rho = bytes_per_token[h] / bytes_per_token[g]
            if rho >= 1.2:  # closer scales cannot tell token from byte units apart
                pairs.append(pair_collapse(g, curves[g], h, curves[h], rho, seed))
    pairs = [p for p in pairs if np.isfinite(p.score)]
    verdict, reasons = _verdict(curvatures)
    for dup, same in duplicates.items():
        reasons.append(f"{dup} gives the same profile as {same} (the same tokenization) and is counted once")
    return SelfSimilarity(verdict, reasons, exponents, preferred, curvatures, pairs)


def significant_rises(rows: pl.DataFrame) -> int:
    """How often I(r) rises significantly from one offset to the next (well-populated offsets).

    Text decays (within noise) as r grows; templated or periodic data rise again at the
    distances their layout repeats, which is a characteristic length too.
    """
    rows = rows.sort("offset")
    enough = min(THRESHOLDS["min_docs"], rows["n_docs"].max() / 2)
    rows = rows.filter(pl.col("n_docs") >= enough)
    mi, se = rows["mi_bits"].to_numpy(), np.nan_to_num(rows["se"].to_numpy())
    jump = np.diff(mi) - THRESHOLDS["rise_sigma"] * np.hypot(se[1:], se[:-1])
    return int((jump > 0).sum())


def _distinct(table: pl.DataFrame) -> tuple[list[str], dict[str, str]]:
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


def _verdict(curvatures: dict[str, dict]) -> tuple[str, list[str]]:
    tested = len(curvatures)
    cut = [n for n, c in curvatures.items() if c["cutoff"]]
    reasons = [
        f"{len(cut)} of {tested} granularities bend down on log-log axes or rise again at larger offsets "
        "(a characteristic length)"
        + (f": {', '.join(cut)}" if cut else "")
    ]
    if tested < 2:
        reasons.append(
            f"fewer than two granularities have {THRESHOLDS['min_points']} significant offsets: profile more tokens"
        )
        return "inconclusive", reasons
    if len(cut) >= tested / 2:
        return "not self-similar", reasons
    if len(cut) <= THRESHOLDS["max_cutoff_share"] * tested:
        rest = "the other granularities" if cut else "the profiles"
        reasons.append(f"{rest} stay straight or bend up on log-log axes: no characteristic length within the profiled range")
        return "self-similar", reasons
    reasons.append("a minority shows a cutoff: the data are mixed")
    return "inconclusive", reasons
