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

Verdict (thresholds in ``THRESHOLDS``, measured in docs/selfsim.md):
``self-similar`` when the power law beats the exponential for most granularities and the
collapse score's upper bound is below ``score_max``; ``not self-similar`` when the
exponential wins for most granularities or the score's lower bound is above
``score_max``; otherwise ``inconclusive`` with the reason.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import polars as pl

from depstat.dependency import fit_decay, preferred_model

THRESHOLDS = {
    "score_max": 0.5,  # log10 misfit ratio: token units may fit at most ~3x worse than bytes
    "min_points": 4,  # overlapping significant offsets needed to compare two profiles
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
    pairs: list[PairCollapse] = field(default_factory=list)
    thresholds: dict = field(default_factory=lambda: dict(THRESHOLDS))

    def to_dict(self) -> dict:
        return {
            "verdict": self.verdict,
            "reasons": self.reasons,
            "decay_model_preferred": self.preferred,
            "power_law_exponents": self.exponents,
            "pairs": [asdict(p) for p in self.pairs],
            "thresholds": self.thresholds,
        }


def _curve(rows: pl.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(offsets, log I, standard error of log I) over the significant offsets of one profile."""
    rows = rows.sort("offset").filter(pl.col("significant") & (pl.col("mi_bits") > 0))
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
    ci = tuple(np.quantile(draws, [0.025, 0.975]).tolist()) if draws.size else (float("nan"), float("nan"))
    fits = np.asarray([misfit(o_g, y_g, o_h, y_h, lam)[0] for lam in DILATIONS])
    dilation = float(DILATIONS[np.nanargmin(fits)]) if np.isfinite(fits).any() else float("nan")
    return PairCollapse(name_g, name_h, rho, tok, byt, point, ci, dilation, n)


def self_similarity(table: pl.DataFrame, bytes_per_token: dict[str, float | None], seed: int = 0) -> SelfSimilarity:
    """Verdict on a profile table with several granularities and their bytes per token."""
    names = [n for n in table["granularity"].unique(maintain_order=True) if bytes_per_token.get(n)]
    curves = {n: _curve(table.filter(pl.col("granularity") == n)) for n in names}
    exponents, preferred = {}, {}
    for n, (o, y, s) in curves.items():
        fits = fit_decay(o, np.exp(y), s * np.exp(y))
        preferred[n] = preferred_model(fits)
        if "power" in fits:
            f = fits["power"]
            exponents[n] = {"alpha": f.parameter, "ci": [f.ci_low, f.ci_high], "aic_power": f.aic,
                            "aic_exponential": fits["exponential"].aic}
    if len(names) < 2:
        return SelfSimilarity(
            "inconclusive", ["needs at least two text granularities with a known bytes-per-token ratio"],
            exponents, preferred,
        )
    order = sorted(names, key=lambda n: bytes_per_token[n])
    pairs = []
    for i, g in enumerate(order):
        for h in order[i + 1:]:
            rho = bytes_per_token[h] / bytes_per_token[g]
            if rho < 1.2:
                continue  # too close in scale for the test to tell the units apart
            pairs.append(pair_collapse(g, curves[g], h, curves[h], rho, seed))
    pairs = [p for p in pairs if np.isfinite(p.score)]
    return _verdict(exponents, preferred, pairs)


def _verdict(exponents: dict, preferred: dict, pairs: list[PairCollapse]) -> SelfSimilarity:
    models = [m for m in preferred.values() if m]
    n_power = sum(m == "power" for m in models)
    reasons = [f"power law preferred for {n_power} of {len(models)} granularities (AIC)"]
    if not pairs:
        reasons.append("no pair of granularities overlaps on enough significant offsets (too few tokens?)")
        return SelfSimilarity("inconclusive", reasons, exponents, preferred, pairs)
    lo = float(np.median([p.score_ci[0] for p in pairs]))
    hi = float(np.median([p.score_ci[1] for p in pairs]))
    mid = float(np.median([p.score for p in pairs]))
    limit = THRESHOLDS["score_max"]
    reasons.append(f"collapse score (log10 token/byte misfit) median {mid:.2f} [{lo:.2f}, {hi:.2f}], limit {limit}")
    power_wins = n_power > len(models) / 2
    if power_wins and hi <= limit:
        verdict = "self-similar"
    elif (models and not power_wins) or lo > limit:
        verdict = "not self-similar"
    else:
        verdict = "inconclusive"
        reasons.append("the collapse score's interval straddles the limit: profile more tokens")
    return SelfSimilarity(verdict, reasons, exponents, preferred, pairs)
