"""A RoPE base and a context-extension config from the dependency kernel, with other rules beside it.

RoPE rotates band m at theta_m = b^(-2m/d) (d the head dimension); a band resolves offsets up to
half its wavelength. Paper A: the best frequency for dependencies of width W is theta* = c / W
(c = pi). The base:

- set by the data where the kernel has a characteristic length W (margin W inside L_train): the
  larger of b_A, whose slowest band lies ``margin`` times below theta*,
  b = (margin / theta*)^(d / (d - 2)), and Men et al.'s bound for the data's reach margin W;
- otherwise (a local, composite, scale-free or periodic kernel) the data do not constrain it, and
  the base is Men et al.'s bound for L_train: the smallest keeping sum_m cos(r theta_m) >= 0 for
  every r up to it. Liu et al.'s, published configs and the bound for the target are listed beside.

Extension from L_train to L_target (factor s): YaRN with betas from the kernel. The bands that
tell offsets apart within the local reach (an angle of at least one radian at r_local) keep their
frequency: more than beta_fast = L_train / (2 pi r_local) turns within L_train, r_local the tail's
onset for self-similar data, W for a characteristic length, the crossover otherwise, and at least
s (interpolation squeezes the first s offsets below one). The bands slower than the profile's
reach (capped at L_train) are interpolated: fewer than beta_slow = L_train / (2 r_reach) turns.
YaRN ramps between. PI, every band interpolated, is for data that dilate with the context, which takes
data at the target length to show (``result.compare_lengths``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from depstat.analysis.dependency import Width
from depstat.analysis.selfsim import SelfSimilarity
from depstat.errors import DepstatError

PAPER_C = math.pi
DEFAULT_MARGIN = 2.0
PAPER_B_WAVELENGTH = 2.2  # dominant band's wavelength in training lengths (LeRoPE, paper B)
YARN_BETA_FAST = 32.0
YARN_BETA_SLOW = 1.0
MEN_FIT = (0.0424, 1.628)  # Men et al.'s published fit b = 0.0424 L^1.628 (d = 128, L = 1k .. 1M)
# Published configs (config.json of each model; base, training length, rotary dimensions of a head).
MODEL_CONFIGS = (
    ("GPT-NeoX-20B", 10_000.0, 2048, 24),
    ("Llama 2 7B", 10_000.0, 4096, 128),
    ("Gemma 7B", 10_000.0, 8192, 256),
    ("Llama 3 8B", 500_000.0, 8192, 128),
    ("Code Llama 7B", 1_000_000.0, 16384, 128),
    ("Qwen2.5 7B", 1_000_000.0, 32768, 128),
)


def frequencies(base: float, head_dim: int) -> np.ndarray:
    """RoPE band frequencies theta_m = base^(-2m/d), fastest first."""
    return base ** (-2.0 * np.arange(head_dim // 2) / head_dim)


def extended_frequencies(base: float, head_dim: int, ext: Extension, train_length: int) -> np.ndarray:
    """The band frequencies after the extension: every band divided by s (PI), or YaRN's ramp between
    the bands kept (more than beta_fast turns within L_train) and those divided by s (fewer than
    beta_slow), linear in the band index between them, as transformers builds them."""
    theta = frequencies(base, head_dim)
    if ext.method == "pi":
        return theta / ext.factor

    def band(turns: float) -> float:  # the (fractional) band index that turns ``turns`` times within L_train
        return head_dim * math.log(train_length / (turns * 2 * math.pi)) / (2 * math.log(base))

    low = max(math.floor(band(ext.beta_fast)), 0)
    high = min(math.ceil(band(ext.beta_slow)), head_dim // 2 - 1)
    ramp = np.clip((np.arange(head_dim // 2) - low) / max(high - low, 1e-3), 0, 1)
    return theta / ext.factor * ramp + theta * (1 - ramp)


def base_for(theta_star: float, head_dim: int, margin: float = DEFAULT_MARGIN) -> float:
    """Base whose slowest band is theta_star / margin."""
    return float((margin / theta_star) ** (head_dim / (head_dim - 2)))


def men_lower_bound(head_dim: int, context: int) -> float:
    """Smallest base with sum_m cos(r theta_m) >= 0 for every r <= context (Men et al., 2024).

    Found by bisection on log b over a dense check of r = 1 .. context.
    """
    r = np.arange(1, context + 1, dtype=np.float64)

    def ok(base: float) -> bool:
        total = np.zeros_like(r)
        for t in frequencies(base, head_dim):
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


def critical_dimension(base: float, head_dim: int, train_length: int) -> int:
    """Liu et al. (2023): the rotary dimensions whose bands complete a period within L_train,
    2 ceil((d/2) log_b(L_train / 2 pi)); the slower ones never saw all their phases."""
    return int(min(head_dim, 2 * math.ceil(head_dim / 2 * math.log(train_length / (2 * math.pi)) / math.log(base))))


def liu_extension_base(base: float, train_length: int, target_length: int) -> float:
    """Liu et al. (2023): the base b^(log_{L/2pi}(T/2pi)) whose critical dimension covers T as b covers L."""
    return float(base ** (math.log(target_length / (2 * math.pi)) / math.log(train_length / (2 * math.pi))))


@dataclass(frozen=True)
class Grid:
    """One base's grid read against theta*: the band nearest it and the bands slower than it."""

    rule: str
    base: float
    source: str
    theta_star_band: int
    bands_slower: int
    theta_star_inside: bool
    slowest_wavelength: float


def grid(rule: str, base: float, head_dim: int, theta_star: float, source: str) -> Grid:
    """Where theta* falls on the grid of ``base``."""
    theta = frequencies(base, head_dim)
    return Grid(
        rule, float(base), source, int(np.argmin(np.abs(np.log(theta / theta_star)))),
        int((theta < theta_star).sum()), bool(theta[-1] <= theta_star <= theta[0]), float(2 * np.pi / theta[-1]),
    )


@dataclass(frozen=True)
class Extension:
    """How to go from L_train to L_target, and why."""

    method: str  # "pi" or "yarn"
    factor: float
    beta_fast: float | None
    beta_slow: float | None
    attention_factor: float | None
    bands_kept: int | None
    bands_interpolated: int | None
    why: str


@dataclass(frozen=True)
class Recommendation:
    """A RoPE base, its reasons, the other rules side by side, and the config to paste."""

    granularity: str
    head_dim: int
    train_length: int
    target_length: int | None
    attended_length: int
    width_kind: str
    W: float | None
    theta_star: float
    theta_star_from: str
    c: float
    margin: float
    base_from_data: float
    base_men: float
    rope_theta: float
    bound: str  # what sets rope_theta: "data" or "Men et al."
    rope_theta_interval: tuple[float, float] | None  # b_A at the ends of W's interval
    recommended: Grid
    alternatives: tuple[Grid, ...]
    critical_dimension: int
    extension: Extension | None
    rope_parameters: dict
    legacy_config: dict
    reasons: tuple[str, ...]

    def to_dict(self) -> dict:
        return asdict(self)


def check_settings(head_dim: int, train_length: int, target_length: int | None, c: float, margin: float) -> None:
    """One clear line for parameters the recommendation cannot use."""
    if head_dim < 4 or head_dim % 2:
        raise DepstatError(f"the head dimension must be even and at least 4, got {head_dim}",
                           hint="give --head-dim as the model's per-head dimension, e.g. 64 or 128")
    if train_length < 8:
        raise DepstatError(f"the training length must be at least 8, got {train_length}")
    if target_length is not None and target_length < train_length:
        raise DepstatError(
            f"the target length {target_length} is shorter than the training length {train_length}",
            hint="give --target-length at least --train-length, or leave it out",
        )
    if not c > 0:
        raise DepstatError(f"c must be positive, got {c}")
    if not margin >= 1:
        raise DepstatError(f"the margin must be at least 1 (theta* inside the grid), got {margin}",
                           hint="--margin 2 puts the slowest band at theta*/2")


def recommend(
    width: Width,
    similarity: SelfSimilarity,
    head_dim: int,
    train_length: int,
    target_length: int | None = None,
    c: float = PAPER_C,
    margin: float = DEFAULT_MARGIN,
) -> Recommendation:
    """rope_theta for training at ``train_length`` and, given a target, an extension config."""
    check_settings(head_dim, train_length, target_length, c, margin)
    attended = train_length  # PI and YaRN keep the slow bands' positions within L_train
    reasons = [f"{width.granularity}: {width.reason}"]
    own = width.kind in ("characteristic", "local") and width.W is not None
    if own:
        theta_star, source = c / width.W, f"c/W with W = {width.W:.1f} tokens"
        reasons.append(f"theta* = c/W = {theta_star:.3g} rad/token (c = {c:.3g})")
    else:
        theta_star = 2 * math.pi / (PAPER_B_WAVELENGTH * train_length)
        source = f"paper B's dominant band, wavelength {PAPER_B_WAVELENGTH:g} L_train"
        reasons.append(f"theta* = 2 pi / ({PAPER_B_WAVELENGTH:g} L_train) = {theta_star:.3g} rad/token ({source}), "
                       "as the kernel has no characteristic length of its own")
    if width.r_max < train_length:
        reasons.append(
            f"the profile ends at r = {width.r_max:.0f} tokens, inside L_train = {train_length}: documents are "
            "shorter than that (pairs never cross a document), so the kernel ends at document length; the model "
            f"still attends over {train_length} packed tokens"
        )
    b_data = base_for(theta_star, head_dim, margin)
    b_men = men_lower_bound(head_dim, attended)
    by_data = width.kind == "characteristic" and width.W is not None and margin * width.W < train_length
    interval = None
    if by_data:
        reach = math.ceil(margin * width.W)
        b_reach = men_lower_bound(head_dim, reach)
        base, bound = max(b_data, b_reach), "data"
        reasons.append(f"your data set the base: the larger of b_A = {b_data:.4g} (theta* inside the grid, slowest "
                       f"band at theta*/{margin:g}) and Men et al.'s bound for the data's reach, {margin:g} W = "
                       f"{reach} tokens, {b_reach:.4g}; Men et al.'s bound for all {attended} tokens, {b_men:.4g}, "
                       "is for a model that must retrieve beyond the data's kernel")
        if width.ci_low and width.ci_high:
            interval = tuple(max(base_for(c / w, head_dim, margin), men_lower_bound(head_dim, math.ceil(margin * w)))
                             for w in (width.ci_low, width.ci_high))
    else:
        base, bound = b_men, "Men et al."
        reasons.append(f"your data do not constrain the base (a {width.kind} kernel, no characteristic length inside "
                       f"L_train): Men et al.'s bound for L_train = {attended}, {b_men:.4g}; b_A = {b_data:.4g} beside")
    base = three_digits_up(base)  # the rules set no closer, and a bound is never undercut
    rec = grid("recommended", base, head_dim, theta_star, "this profile")
    alternatives = [
        grid("b = 10,000", 10_000.0, head_dim, theta_star, "original RoPE"),
        grid("b = L_train", float(train_length), head_dim, theta_star, "Oka et al. (ICLR 2026)"),
        grid("b_A (paper A)", b_data, head_dim, theta_star, "theta* inside the grid"),
        grid(f"Men et al., {attended} tokens", b_men, head_dim, theta_star, "Men et al. (2024), computed"),
        grid(f"Men et al. fit, {attended} tokens", MEN_FIT[0] * attended ** MEN_FIT[1], head_dim, theta_star,
             "Men et al. (2024), published fit 0.0424 L^1.628 (d = 128)"),
    ]
    extension = None
    if target_length and target_length > train_length:
        alternatives.append(grid(f"Men et al., {target_length} tokens", men_lower_bound(head_dim, target_length),
                                 head_dim, theta_star, "Men et al. (2024), to train at the target directly"))
        alternatives.append(grid(f"Liu et al., {train_length} -> {target_length}",
                                 liu_extension_base(base, train_length, target_length), head_dim, theta_star,
                                 "Liu et al. (2023), critical dimension kept for the target"))
        extension = _extension(width, similarity, base, head_dim, train_length, target_length)
        reasons.append(extension.why)
    alternatives += [grid(f"{name} ({length} tokens)", b, head_dim, theta_star, f"config.json, {dims} rotary dims")
                     for name, b, length, dims in MODEL_CONFIGS]
    params, legacy = configs(base, extension, train_length, target_length or train_length)
    return Recommendation(
        width.granularity, head_dim, train_length, target_length, attended, width.kind, width.W, theta_star,
        source, c, margin, b_data, b_men, base, bound, interval, rec, tuple(alternatives),
        critical_dimension(base, head_dim, train_length), extension, params, legacy, tuple(reasons),
    )


def yarn_betas(width: Width, similarity: SelfSimilarity, train_length: int,
               factor: float) -> tuple[float, float, str]:
    """(beta_fast, beta_slow, where they come from), in turns within L_train: the bands turning at least
    one radian within max(s, the kernel's local length) keep their frequency, the bands slower than
    the profile's reach (capped at L_train) are interpolated."""
    if width.kind == "none":
        fast = min(YARN_BETA_FAST, train_length / (4 * math.pi))
        return float(fast), float(min(YARN_BETA_SLOW, fast / 4)), "YaRN's defaults, as no offset shows dependence"
    reach = min(float(train_length), width.r_max or train_length)
    if width.kind == "periodic":
        local, what = reach, f"a period of {width.period} tokens, whose peaks recur to the profile's end"
    elif similarity.verdict == "self-similar" and similarity.onset_tokens is not None:
        local, what = similarity.onset_tokens, f"the tail's onset, r = {similarity.onset_tokens:.1f}"
    elif width.kind in ("characteristic", "local") and width.W is not None:
        local, what = width.W, f"the kernel's width W = {width.W:.1f}"
    else:
        local = width.crossover or 1.0
        what = f"the crossover r_x = {local:.1f}"
    if local < factor:
        local, what = factor, f"the first s = {factor:g} offsets, which interpolation would squeeze below one ({what})"
    fast = train_length / (2 * math.pi * local)
    return (float(fast), float(min(train_length / (2 * reach), fast / 2)),
            f"from the data: bands turning a radian within {what} keep their frequency; bands slower than the "
            f"{reach:.0f} tokens the profile reaches are interpolated")


def _extension(width: Width, similarity: SelfSimilarity, base: float, head_dim: int, train: int, target: int) -> Extension:
    """YaRN with the betas the data give (PI is for data that dilate: ``result.compare_lengths``)."""
    s = target / train
    fast, slow, source = yarn_betas(width, similarity, train, s)
    turns = train * frequencies(base, head_dim) / (2 * np.pi)
    kept, interpolated = int((turns > fast).sum()), int((turns < slow).sum())
    attention = 0.1 * math.log(s) + 1
    status = (f"self-similar from r = {similarity.onset_tokens:.1f}" if similarity.verdict == "self-similar"
              else "not self-similar" if similarity.verdict == "not self-similar" else "not shown to be self-similar")
    why = (f"the data are {status}; YaRN by s = {s:g} with beta_fast = {fast:.3g}, beta_slow = {slow:.3g} ({source}): "
           f"the {kept} bands with more turns within L_train than beta_fast keep their frequency, the {interpolated} "
           f"with fewer than beta_slow are interpolated, a ramp between; attention scaled by {attention:.3f}. PI "
           "(every band interpolated) only where the data at the target length are these data dilated "
           "(depstat.compare_lengths): on stationary text it loses the first offsets' resolution")
    return Extension("yarn", s, fast, slow, attention, kept, interpolated, why)


def three_digits_up(base: float) -> float:
    """``base`` rounded up to 3 significant digits: 15,300.29 -> 15,400."""
    step = 10.0 ** (math.floor(math.log10(base)) - 2)
    return round(math.ceil(base / step * (1 - 1e-12)) * step, 10)


def configs(base: float, ext: Extension | None, train: int, positions: int) -> tuple[dict, dict]:
    """(transformers >= 5 config keys, with rope_theta inside rope_parameters; the legacy form for 4.x)."""
    if ext is None:
        scaling: dict = {"rope_type": "default"}
    elif ext.method == "pi":
        scaling = {"rope_type": "linear", "factor": float(ext.factor)}
    else:
        scaling = {"rope_type": "yarn", "factor": float(ext.factor), "original_max_position_embeddings": train,
                   "beta_fast": ext.beta_fast, "beta_slow": ext.beta_slow, "attention_factor": ext.attention_factor}
    current = {"max_position_embeddings": positions, "rope_parameters": {**scaling, "rope_theta": float(base)}}
    legacy = {"max_position_embeddings": positions, "rope_theta": float(base)}
    if ext is not None:
        legacy["rope_scaling"] = scaling
    return current, legacy
