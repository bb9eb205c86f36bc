"""From a Profile to decisions: W and decay fits per granularity, self-similarity, RoPE advice."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import polars as pl

from depstat.dependency import DEFAULT_WIDTH, Width, fit_decay, kernel_width, local_slopes, preferred_model
from depstat.errors import DepstatError
from depstat.profile import Profile
from depstat.recommend import DEFAULT_MARGIN, PAPER_C, recommend
from depstat.selfsim import self_similarity

MODEL_GRANULARITY_ORDER = ("bpe-32k", "bpe-8k", "bpe-1k", "words", "bytes", "ids")


@dataclass(frozen=True)
class Settings:
    """What the recommendation is for: the model's head dimension and context lengths."""

    head_dim: int = 128
    train_length: int = 2048
    target_length: int | None = None
    granularity: str | None = None
    width: str = DEFAULT_WIDTH
    c: float = PAPER_C
    margin: float = DEFAULT_MARGIN


def model_granularity(profile: Profile, wanted: str | None) -> str:
    """The granularity W is read at: the one asked for, else a user tokenizer, else the largest BPE."""
    names = list(profile.granularities)
    if wanted is not None:
        if wanted not in names:
            raise DepstatError(f"granularity {wanted!r} is not in this profile", hint="choose one of " + ", ".join(names))
        return wanted
    tokenizers = [n for n, f in profile.granularities.items() if f.get("tokenizer")]
    if tokenizers:
        return tokenizers[0]
    for name in MODEL_GRANULARITY_ORDER:
        if name in names:
            return name
    return names[0]


def per_granularity(profile: Profile, settings: Settings) -> dict[str, dict]:
    """W (in tokens and bytes), decay fits and local slopes for each granularity."""
    out = {}
    for name, facts in profile.granularities.items():
        rows = profile.table.filter(pl.col("granularity") == name).sort("offset")
        o, m, se, sig = (rows[c].to_numpy() for c in ("offset", "mi_bits", "se", "significant"))
        try:
            width = kernel_width(o, m, se, sig, settings.train_length, settings.width, profile.confidence)
        except DepstatError as err:  # e.g. a coarse granularity whose documents are too short
            width, note = None, str(err)
            skipped = [r for r in profile.skipped_offsets.get(name, []) if r < settings.train_length]
            if skipped:
                note = (f"documents are too short at this granularity: offsets from {min(skipped)} on had "
                        f"fewer than 64 pairs, so the kernel cannot reach L = {settings.train_length}")
        fits = fit_decay(o[sig], m[sig], se[sig], profile.confidence)
        mid, slope = local_slopes(o[sig], m[sig])
        bpt = facts.get("bytes_per_token")
        out[name] = {
            "W": width.to_dict() if width else None,
            "W_note": None if width else note,
            "W_bytes": width.W * bpt if width and bpt else None,
            "decay_fits": {k: f.to_dict() for k, f in fits.items()},
            "decay_model_preferred": preferred_model(fits),
            "local_slope": {"offset": mid.tolist(), "slope": slope.tolist()},
        }
    return out


def default_train_length(profile: Profile) -> int:
    """2048, or the profile's largest offset when the profile is shorter."""
    return int(min(2048, profile.table["offset"].max()))


def analyze(profile: Profile, settings: Settings) -> dict:
    """The ``W``, ``self_similarity`` and ``recommendation`` sections of summary.json."""
    grans = per_granularity(profile, settings)
    bpt = {k: v.get("bytes_per_token") for k, v in profile.granularities.items()}
    selfsim = self_similarity(profile.table, bpt)
    name = model_granularity(profile, settings.granularity)
    if grans[name]["W"] is None:
        raise DepstatError(f"granularity {name!r}: {grans[name]['W_note']}")
    rec = recommend(
        Width(**grans[name]["W"]), selfsim.verdict, settings.head_dim, settings.train_length,
        settings.target_length, name, settings.c, settings.margin,
    )
    return {
        "settings": {**asdict(settings), "granularity": name},
        "W": {k: v["W"] for k, v in grans.items()},
        "granularity_analysis": grans,
        "self_similarity": selfsim.to_dict(),
        "recommendation": rec.to_dict(),
    }


def attach(profile: Profile, settings: Settings) -> Profile:
    """Run the analysis and store it in ``profile.analysis`` (saved into summary.json)."""
    profile.analysis = analyze(profile, settings)
    return profile
