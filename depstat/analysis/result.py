"""From a Profile to decisions: the kind and width of each granularity's kernel, the
self-similarity verdict, and the RoPE advice, as one typed, frozen result."""

from __future__ import annotations

import html
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import polars as pl

from depstat.analysis.dependency import Curve, Width, curve, fitted, kernel_width
from depstat.analysis.recommend import (
    DEFAULT_MARGIN,
    PAPER_C,
    Recommendation,
    check_settings,
    recommend,
)
from depstat.analysis.selfsim import (
    MARGIN,
    DilationTest,
    SelfSimilarity,
    dilation_test,
    distinct,
    self_similarity,
)
from depstat.errors import DepstatError
from depstat.estimate.profile import Profile
from depstat.tokenize.granularity import bpe_vocab_size

if TYPE_CHECKING:  # matplotlib is imported where a figure is drawn, not with depstat
    from matplotlib.figure import Figure

DEFAULT_TRAIN_LENGTH = 2048
DEFAULT_HEAD_DIM = 128
MODEL_SETTINGS = ("head_dim", "train_length")  # what the advice is for, which only the user can know


@dataclass(frozen=True)
class Settings:
    """What the advice is for: the model's head dimension and context lengths, and the rules' knobs."""

    head_dim: int = DEFAULT_HEAD_DIM
    train_length: int = DEFAULT_TRAIN_LENGTH
    target_length: int | None = None
    granularity: str | None = None
    c: float = PAPER_C
    margin: float = DEFAULT_MARGIN
    similarity_margin: float = MARGIN
    confidence: float | None = None  # of W's and the verdict's intervals; default: the profile's
    defaults: tuple[str, ...] = ()  # the model's settings nobody gave (head_dim, train_length): said beside the advice

    @property
    def factor(self) -> float | None:
        """The extension factor s: target / train (None without a target)."""
        return self.target_length / self.train_length if self.target_length else None


@dataclass(frozen=True)
class Analysis:
    """Widths per granularity, the verdict and the recommendation for one profile and settings."""

    settings: Settings
    granularity: str
    widths: dict[str, Width]
    self_similarity: SelfSimilarity
    recommendation: Recommendation
    curves: dict[str, Curve] = field(default_factory=dict, repr=False, compare=False)  # the data the fits rest on

    def __repr__(self) -> str:
        rec, w = self.recommendation, self.widths[self.granularity]
        extension = f", {rec.extension.method} by {rec.extension.factor:g}" if rec.extension else ""
        return (f"Analysis({self.granularity}: {w.kind} kernel; {self.self_similarity.verdict}; rope_theta "
                f"{rec.rope_theta:,.6g} ({'set by the data' if rec.bound == 'data' else 'Men et al.'}){extension}; "
                f"head_dim {rec.head_dim}, L_train {rec.train_length})")

    def plot(self, profile: Profile | None = None) -> Figure:
        """The model granularity's kernel: its data above the floor, the fit, r_x, W and L_train (with
        ``profile``, every offset of it, those left out of the fit hollow)."""
        from depstat.analysis.plot import kernel_figure

        if profile is not None:
            t = profile.table.filter(pl.col("granularity") == self.granularity).sort("offset")
            r, mi, se = t["offset"].to_numpy().astype(float), t["mi_bits"].to_numpy(), t["se"].to_numpy()
        else:
            c = self.curves[self.granularity]
            r, mi, se = c.offsets.astype(float), c.mi, c.se
        return kernel_figure(self.widths[self.granularity], self.recommendation.train_length, r, mi, se)

    def _repr_html_(self) -> str:
        from depstat.estimate.plot import figure_html

        reasons = "".join(f"<li>{html.escape(r)}</li>" for r in self.self_similarity.reasons[:3])
        return (f"<p><code>{html.escape(repr(self))}</code></p>{self.width_table._repr_html_()}"
                f"<ul>{reasons}</ul>{figure_html(self.plot())}")

    @property
    def uninformed(self) -> str | None:
        """Why the advice is not informed by the data: the model granularity shows no dependence, or a scale-free
        tail whose exponent's interval reaches 0 (no decay with distance beyond the error); None otherwise."""
        w = self.widths[self.granularity]
        flat = w.kind == "scale-free" and w.alpha_ci is not None and w.alpha_ci[0] <= 0
        if w.kind != "none" and not flat:
            return None
        shown = "no dependence" if w.kind == "none" else "no decay of dependence with distance"
        return (f"your data show {shown} beyond their error at {self.granularity}: the advice below is not "
                "informed by them; if the corpus is small, profile more text (the intervals narrow as "
                "1/sqrt(tokens))")

    @property
    def width_table(self) -> pl.DataFrame:
        """One row per granularity: kind, W with interval, xi, alpha with interval, r_x, floor, chi2/dof, r_max."""
        return pl.DataFrame([{
            "granularity": w.granularity, "kind": w.kind, "W": w.W, "W_low": w.ci_low, "W_high": w.ci_high,
            "W_bytes": w.W_bytes, "xi": w.xi, "alpha": w.alpha, "alpha_low": w.alpha_ci[0] if w.alpha_ci else None,
            "alpha_high": w.alpha_ci[1] if w.alpha_ci else None, "crossover": w.crossover, "floor_bits": w.floor,
            "chi2_dof": w.chi2_dof, "period": w.period, "model": w.preferred_model, "r_max": w.r_max,
        } for w in self.widths.values()], schema_overrides={c: pl.Float64 for c in (
            "W", "W_low", "W_high", "W_bytes", "xi", "alpha", "alpha_low", "alpha_high", "crossover", "floor_bits",
            "chi2_dof")} | {"period": pl.Int64})

    def to_dict(self) -> dict:
        """The ``settings``, ``W``, ``self_similarity`` and ``recommendation`` sections of summary.json."""
        return {
            "settings": {**asdict(self.settings), "granularity": self.granularity, "factor": self.settings.factor},
            "W": {k: w.to_dict() for k, w in self.widths.items()},
            "self_similarity": self.self_similarity.to_dict(),
            "recommendation": self.recommendation.to_dict(),
        }


def model_granularity(profile: Profile, wanted: str | None) -> str:
    """The granularity the advice is read at: the one asked for, else a user tokenizer, else the
    largest BPE vocabulary, else token ids, words or bytes."""
    names = list(profile.granularities)
    if wanted is not None:
        if wanted not in names:
            raise DepstatError(f"granularity {wanted!r} is not in this profile", hint="choose one of " + ", ".join(names))
        return wanted
    tokenizers = [n for n, f in profile.granularities.items() if f.tokenizer]
    if tokenizers:
        return tokenizers[0]
    bpe = [n for n in names if bpe_vocab_size(n)]
    if bpe:
        return max(bpe, key=lambda n: profile.granularities[n].vocab_size or bpe_vocab_size(n))
    for name in ("ids", "words", "bytes"):
        if name in names:
            return name
    return names[0]


def granularity_curve(profile: Profile, name: str) -> Curve:
    """Granularity ``name``'s Curve, with its bytes per token and whether its tokens give back their
    text (``granularity.round_trips``, measured when it was tokenized; where it was not measured,
    every granularity but ``words``)."""
    facts = profile.granularities[name]
    measured = facts.round_trips  # None: not measured (token ids without text, older profiles)
    return curve(profile.table, name, facts.bytes_per_token, name != "words" if measured is None else measured)


def analyze(profile: Profile, settings: Settings | None = None, **kwargs: object) -> Analysis:
    """Analyse a profile: ``analyze(p, head_dim=128, train_length=2048, target_length=8192)``, or
    with a Settings. The profile is not changed."""
    if settings is None:
        defaults = tuple(name for name in MODEL_SETTINGS if name not in kwargs)
        settings = Settings(**kwargs, defaults=defaults)  # type: ignore[arg-type]
    check_settings(settings.head_dim, settings.train_length, settings.target_length, settings.c, settings.margin)
    if not settings.similarity_margin > 0:
        raise DepstatError(f"the self-similarity margin must be positive, got {settings.similarity_margin}")
    if not profile.has_replicates:
        raise DepstatError(
            "this profile has no jackknife replicates, which W's intervals and the verdict refit",
            hint="profile it again (replicates.parquet is saved beside profile.parquet)",
        )
    name = model_granularity(profile, settings.granularity)
    names, duplicates = distinct(profile.table)
    if name not in names:
        name = duplicates[name]
    confidence = settings.confidence or profile.confidence
    fits = {n: fitted(granularity_curve(profile, n)) for n in names}
    widths = {n: kernel_width(f, confidence) for n, f in fits.items()}
    verdict = self_similarity(fits, widths, name, settings.similarity_margin, confidence, duplicates)
    rec = recommend(widths[name], verdict, settings.head_dim, settings.train_length,
                    settings.target_length, settings.c, settings.margin)
    return Analysis(settings, name, widths, verdict, rec, {n: f.curve for n, f in fits.items()})


def compare_lengths(train: Analysis, target: Analysis) -> tuple[str, DilationTest]:
    """The extension method ("pi" or "yarn") for going from ``train``'s data to ``target``'s, and the test
    behind it: PI when the kernel dilates with the context, YaRN when it stays fixed, else the verdict's choice.

    ``train`` must be analysed with a target length (it holds the self-similarity advice); ``target``
    is the data the extended model will see, analysed at the same granularity.
    """
    ext = train.recommendation.extension
    if ext is None:
        raise DepstatError("the training analysis has no target length", hint="analyse it with target_length")
    test = dilation_test(train.widths[train.granularity], target.widths[train.granularity], ext.factor,
                         train.settings.confidence or 0.95)
    method = {"dilated": "pi", "fixed": "yarn"}.get(test.verdict, ext.method)
    return method, test
