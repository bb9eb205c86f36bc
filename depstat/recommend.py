"""RoPE base and context-extension advice from a measured kernel width and self-similarity.

RoPE rotates band m at frequency theta_m = b^(-2m/d), m = 0 .. d/2-1 (d the head
dimension). Paper A: the best frequency for dependencies of width W is theta* = c / W
(c = pi in theory, 3.02 fitted), the highest frequency whose half-turn still covers W.
The recommended base puts the slowest band ``margin`` times below theta*, so theta* sits
inside the grid with room for dependencies up to margin x W:

    b = (margin / theta*)^(d / (d - 2)).

Context extension from L_train to L_target (factor s): position interpolation (PI)
divides every frequency by s, which is safe when the dependencies dilate with the
context (self-similar data). When they do not, PI blurs the local resolution the data
need; YaRN / NTK-by-parts keep the fast bands (more than beta_fast turns within L_train)
unscaled and interpolate only the slow ones, or one trains at the longer length.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from depstat.dependency import Width
from depstat.errors import DepstatError

PAPER_C = math.pi
DEFAULT_MARGIN = 2.0
YARN_BETA_FAST = 32.0
YARN_BETA_SLOW = 1.0


def frequencies(base: float, head_dim: int) -> np.ndarray:
    """RoPE band frequencies theta_m = base^(-2m/d), fastest first."""
    return base ** (-2.0 * np.arange(head_dim // 2) / head_dim)


def base_for(theta_star: float, head_dim: int, margin: float = DEFAULT_MARGIN) -> float:
    """Base whose slowest band is theta_star / margin."""
    return float((margin / theta_star) ** (head_dim / (head_dim - 2)))


def men_lower_bound(head_dim: int, context: int) -> float:
    """Smallest base with sum_m cos(r theta_m) >= 0 for every r <= context (Men et al., 2024).

    Found by bisection on log b over a dense check of r = 1 .. context.
    """
    r = np.arange(1, context + 1, dtype=np.float64)

    def ok(base: float) -> bool:
        theta = frequencies(base, head_dim)
        total = np.zeros_like(r)
        for t in theta:
            total += np.cos(r * t)
        return bool(total.min() >= 0)

    lo, hi = 1.0, 10.0
    while not ok(hi):
        lo, hi = hi, hi * 10
        if hi > 1e15:
            return float("inf")
    for _ in range(40):
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def band_report(base: float, head_dim: int, theta_star: float, train_length: int) -> dict:
    """Where theta* falls on a base's grid: nearest band, its wavelength and turns within L."""
    theta = frequencies(base, head_dim)
    m = int(np.argmin(np.abs(np.log(theta / theta_star))))
    return {
        "base": float(base),
        "slowest_wavelength": float(2 * np.pi / theta[-1]),
        "band_nearest_theta_star": m,
        "theta_of_that_band": float(theta[m]),
        "theta_star_inside_grid": bool(theta[-1] <= theta_star <= theta[0]),
        "bands_slower_than_theta_star": int((theta < theta_star).sum()),
        "turns_within_L_of_slowest_band": float(train_length * theta[-1] / (2 * np.pi)),
    }


@dataclass
class Recommendation:
    """A RoPE base and (optionally) an extension method, with the reasons in words."""

    granularity: str
    head_dim: int
    train_length: int
    target_length: int | None
    W: dict
    c: float
    margin: float
    theta_star: float
    rope_theta: float
    rope_theta_interval: list[float]  # bases at the ends of W's interval
    grid_comparison: dict
    extension: dict | None
    rope_scaling: dict | None
    hf_config: dict
    reasons: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def recommend(
    width: Width,
    verdict: str,
    head_dim: int,
    train_length: int,
    target_length: int | None = None,
    granularity: str = "",
    c: float = PAPER_C,
    margin: float = DEFAULT_MARGIN,
) -> Recommendation:
    """Recommend rope_theta for training at ``train_length`` and, given a target, an extension."""
    if head_dim < 4 or head_dim % 2:
        raise DepstatError(f"the head dimension must be even and at least 4, got {head_dim}")
    if train_length < 2:
        raise DepstatError(f"the training length must be at least 2, got {train_length}")
    if target_length is not None and target_length < train_length:
        raise DepstatError(
            f"the target length {target_length} is shorter than the training length {train_length}",
            hint="give --target-length at least --train-length, or leave it out",
        )
    if c <= 0 or margin < 1:
        raise DepstatError(f"need c > 0 and margin >= 1, got c={c}, margin={margin}")
    if width.training_length != train_length:
        raise DepstatError("the width was measured for another training length")
    if not np.isfinite(width.W) or width.W <= 0:
        raise DepstatError(
            "the dependency kernel is empty (no mutual information above zero within the training length)",
            hint="profile more tokens or check the corpus",
        )
    theta_star = c / width.W
    base = base_for(theta_star, head_dim, margin)
    if base < 2:
        raise DepstatError(
            f"W = {width.W:.1f} tokens is too short for a RoPE base (it would be {base:.2f}): "
            "the dependencies are local at this granularity",
            hint="read W at a coarser granularity (--model-granularity) or lower --margin",
        )
    men = men_lower_bound(head_dim, target_length or train_length)
    grid = {
        "recommended": band_report(base, head_dim, theta_star, train_length),
        "standard_10000": band_report(10_000.0, head_dim, theta_star, train_length),
        "base_equals_L_train": band_report(float(train_length), head_dim, theta_star, train_length),
        "men_lower_bound": band_report(men, head_dim, theta_star, train_length),
    }
    reasons = [
        f"W = {width.W:.0f} tokens ({width.definition}, interval {width.ci_low:.0f}-{width.ci_high:.0f}) "
        f"for L_train = {train_length}: theta* = c/W = {theta_star:.3g} rad/token (c = {c:.3g})",
        f"base {base:.4g} puts the slowest band at theta*/{margin:g} "
        f"(wavelength {grid['recommended']['slowest_wavelength']:.0f} tokens)",
    ]
    lo_base = base_for(c / max(width.ci_low, 1e-9), head_dim, margin)
    hi_base = base_for(c / max(width.ci_high, 1e-9), head_dim, margin)
    if np.isfinite(width.ci_high) and width.ci_high > 4 * max(width.ci_low, 1e-9):
        reasons.append(
            f"W is poorly determined (interval {width.ci_low:.0f}-{width.ci_high:.0f} tokens), so the base "
            f"could lie anywhere from {lo_base:.3g} to {hi_base:.3g}: profile more tokens before relying on it"
        )
    if not grid["standard_10000"]["theta_star_inside_grid"]:
        reasons.append("theta* lies outside the b = 10,000 grid")
    else:
        reasons.append(
            f"with b = 10,000, {grid['standard_10000']['bands_slower_than_theta_star']} of {head_dim // 2} "
            "bands are slower than theta* (positional capacity spent beyond the measured dependencies)"
        )
    if base < men:
        reasons.append(
            f"the recommended base is below Men et al.'s lower bound {men:.3g} for "
            f"{target_length or train_length} tokens: long-range retrieval of similar tokens may suffer; "
            "raise the base towards the bound if the task needs it"
        )
    extension, scaling = None, None
    if target_length is not None and target_length > train_length:
        extension, scaling = _extension(verdict, base, head_dim, train_length, target_length, theta_star)
        reasons.append(extension["why"])
    hf = {"rope_theta": base, "max_position_embeddings": target_length or train_length}
    if scaling is not None:
        hf["rope_scaling"] = scaling
    hf["rope_parameters"] = {"rope_theta": base, **(scaling or {"rope_type": "default"})}
    return Recommendation(
        granularity, head_dim, train_length, target_length, width.to_dict(), c, margin,
        theta_star, base, [lo_base, hi_base], grid, extension, scaling, hf, reasons,
    )


def _extension(verdict: str, base: float, head_dim: int, train: int, target: int, theta_star: float) -> tuple[dict, dict]:
    """PI for self-similar data, YaRN (fast bands unscaled) otherwise."""
    s = target / train
    turns = train * frequencies(base, head_dim) / (2 * np.pi)
    kept = int((turns > YARN_BETA_FAST).sum())
    interpolated = int((turns < YARN_BETA_SLOW).sum())
    star_turns = train * theta_star / (2 * np.pi)
    if verdict == "self-similar":
        return (
            {"method": "pi", "factor": s, "why": (
                f"the data are self-similar: dependencies dilate with the context, so position "
                f"interpolation by s = {s:g} keeps their shape (PI)"
            )},
            {"rope_type": "linear", "factor": s},
        )
    star_fate = "kept unscaled" if star_turns > YARN_BETA_FAST else (
        "interpolated like PI" if star_turns < YARN_BETA_SLOW else "partly scaled (YaRN ramp)")
    status = "not self-similar" if verdict == "not self-similar" else "not shown to be self-similar"
    why = (
        f"the data are {status}: PI by s = {s:g} would divide every frequency, including the "
        f"theta* band ({star_turns:.1f} turns within L_train), and blur the local resolution the data "
        f"need. YaRN keeps the {kept} bands with more than {YARN_BETA_FAST:g} turns unscaled, "
        f"interpolates the {interpolated} slowest, ramps between, and scales attention by "
        f"{0.1 * math.log(s) + 1:.3f}; the theta* band is {star_fate} there. Alternatively train at "
        f"{target} tokens"
    )
    return (
        {"method": "yarn", "factor": s, "bands_kept": kept, "bands_interpolated": interpolated,
         "theta_star_turns_within_L": star_turns, "why": why},
        {"rope_type": "yarn", "factor": s, "original_max_position_embeddings": train,
         "beta_fast": YARN_BETA_FAST, "beta_slow": YARN_BETA_SLOW},
    )
