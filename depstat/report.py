"""depstat.report: an HTML and a Markdown report of an analysed Profile, with figures.

``build_report(profile, out_dir)`` writes ``report.html`` (self-contained: figures inline
as base64 PNG, inline CSS, no external resources) and ``report.md`` (figures as PNG files
in ``figures/``, referenced relatively). Both render the same blocks: corpus and
sampling, the granularities, the self-similarity verdict, the RoPE recommendation.

Figures are drawn on ``matplotlib.figure.Figure`` objects and saved with the Agg
renderer, so the module needs no pyplot backend and leaves the caller's untouched.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from depstat import __version__
from depstat.dependency import kernel, shrink
from depstat.errors import DepstatError
from depstat.profile import Profile
from depstat.recommend import frequencies

DPI = 150
FIGURE_DIR = "figures"
EXTENSION_NAMES = {"pi": "position interpolation (PI)", "yarn": "YaRN"}
CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; color: #1f2328;
       max-width: 62rem; margin: 2rem auto; padding: 0 1rem; line-height: 1.5; }
h1 { font-size: 1.6rem; border-bottom: 1px solid #d0d7de; padding-bottom: .3rem; }
h2 { font-size: 1.25rem; margin-top: 2.2rem; border-bottom: 1px solid #eaeef2; }
table { border-collapse: collapse; margin: .8rem 0; font-size: .92rem; }
th, td { border: 1px solid #d0d7de; padding: .3rem .6rem; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
pre { background: #f6f8fa; padding: .8rem; overflow-x: auto; font-size: .88rem; }
figure { margin: 1.2rem 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #eaeef2; }
figcaption { font-size: .9rem; color: #57606a; margin-top: .3rem; }
"""


@dataclass(frozen=True)
class Para:
    """A paragraph of plain text."""

    text: str


@dataclass(frozen=True)
class Items:
    """A bulleted list."""

    items: list[str]


@dataclass(frozen=True)
class Table:
    """A table with a header row."""

    header: list[str]
    rows: list[list[str]]


@dataclass(frozen=True)
class Code:
    """A preformatted code block."""

    text: str
    language: str = ""


@dataclass(frozen=True)
class Fig:
    """A figure by name (a key of FIGURES and FIGURE_TEXT)."""

    name: str


Block = Para | Items | Table | Code | Fig
Section = tuple[str, list[Block]]


def build_report(profile: Profile, out_dir: str | Path) -> dict[str, Path]:
    """Write report.html, report.md and figures/*.png into ``out_dir``; return their paths.

    Keys: ``html``, ``markdown`` and one per figure (``mi_profile``, ``collapse``,
    ``local_slope``, ``kernel``, ``rope_grid``).
    """
    if profile.analysis is None:
        raise DepstatError(
            "this profile has no analysis (W, self-similarity, recommendation)",
            hint="run depstat.analysis.analyze(profile, Settings(...)) and store it in profile.analysis first",
        )
    out = Path(out_dir)
    (out / FIGURE_DIR).mkdir(parents=True, exist_ok=True)
    images = {name: _png(draw(profile)) for name, draw in FIGURES.items()}
    paths: dict[str, Path] = {}
    for name, data in images.items():
        paths[name] = out / FIGURE_DIR / f"{name}.png"
        paths[name].write_bytes(data)
    title = f"depstat report: {profile.corpus.get('spec', 'corpus')}"
    sections = _sections(profile)
    paths["html"] = out / "report.html"
    paths["html"].write_text(_html_document(title, sections, images), encoding="utf-8")
    paths["markdown"] = out / "report.md"
    paths["markdown"].write_text(_markdown_document(title, sections), encoding="utf-8")
    return paths


# ---------------------------------------------------------------- text sections


def _sections(profile: Profile) -> list[Section]:
    """The report's sections in order."""
    return [
        ("Summary", _summary(profile)),
        ("Corpus and sampling", _corpus(profile)),
        ("Granularities", _granularities(profile)),
        ("Self-similarity", _self_similarity(profile)),
        ("Recommendation", _recommendation(profile)),
        ("About", [Para(f"Made with depstat {__version__}; MI estimator: {profile.estimator}.")]),
    ]


def _summary(profile: Profile) -> list[Block]:
    """Three lines: the base, the verdict, the extension."""
    a = profile.analysis
    rec, w = a["recommendation"], a["recommendation"]["W"]
    ext = rec["extension"]
    items = [
        f"rope_theta = {rec['rope_theta']:.4g} for head dimension {rec['head_dim']} and L_train = "
        f"{rec['train_length']} (W = {_num(w['W'])} tokens at {rec['granularity']}, "
        f"θ* = {rec['theta_star']:.3g} rad/token)",
        f"self-similarity: {a['self_similarity']['verdict']}",
    ]
    if ext:
        method = EXTENSION_NAMES.get(ext["method"], ext["method"])
        items.append(f"context extension to {rec['target_length']} tokens: {method}, factor {ext['factor']:g}")
    return [Items(items)]


def _corpus(profile: Profile) -> list[Block]:
    """Where the documents came from, how they were sampled, how MI was estimated."""
    c, s = profile.corpus, profile.sampling
    offsets = profile.table["offset"]
    rows = [
        ["corpus", str(c.get("spec", "–"))],
        ["kind / format", f"{c.get('kind', '–')} / {', '.join(c.get('formats', [])) or '–'}"],
        ["files", _num(c.get("file_count"))],
        ["documents read", _num(c.get("documents_read"))],
        ["skipped bad records / empty documents",
         f"{_num(c.get('skipped_bad_records'))} / {_num(c.get('empty_documents'))}"],
        ["sampling", s.get("rule", "–")],
        ["token unit of the budget", s.get("token_unit", "–")],
    ]
    if s.get("tokenizer_training"):
        rows.append(["tokenizer training", s["tokenizer_training"]])
    rows += [
        ["offsets", f"{offsets.n_unique()} from {offsets.min()} to {offsets.max()} tokens"],
        ["estimator", profile.estimator],
        ["interval", f"delete-one-block jackknife, Student t, {profile.confidence:.0%} confidence; "
                     "noise floor = half-width of the interval"],
    ]
    return [Table(["field", "value"], rows)]


def _granularities(profile: Profile) -> list[Block]:
    """Facts, W, decay model and curvature per granularity, with the profile figures."""
    a = profile.analysis
    ga, ss = a["granularity_analysis"], a["self_similarity"]
    rows, notes = [], []
    for name in _order(profile):
        facts, g = profile.granularities[name], ga.get(name, {})
        w = g.get("W") or {}
        if g.get("W_note"):
            notes.append(f"{name}: no W: {g['W_note']}")
        alpha = ss["power_law_exponents"].get(name)
        curv = ss["curvature"].get(name)
        rows.append([
            name,
            _num(facts.get("vocab_size")),
            _num(facts.get("n_tokens")),
            f"{facts['bytes_per_token']:.2f}" if facts.get("bytes_per_token") else "–",
            _interval(w["W"], w["ci_low"], w["ci_high"]) if w else "–",
            _num(g.get("W_bytes")),
            g.get("decay_model_preferred") or "–",
            _interval(alpha["alpha"], *alpha["ci"]) if alpha else "–",
            _interval(curv["curvature"], *curv["ci"]) + (" (cutoff)" if curv["cutoff"] else "") if curv else "–",
        ])
    definition = a["settings"]["width"]
    return [
        Table(
            ["granularity", "vocab", "tokens", "bytes/token", f"W (tokens, {definition}) [interval]",
             "W (bytes)", "decay model (AIC)", "power-law α [CI]", "curvature [CI]"],
            rows,
        ),
        Para(
            f"W is the kernel width within L_train = {a['settings']['train_length']} tokens. α is the "
            "exponent of I(r) ∝ r^-α fitted to the significant offsets; the curvature is the "
            "coefficient of (log r)² in log I, negative with its interval below zero for a cutoff."
        ),
        *([Items(notes)] if notes else []),
        Fig("mi_profile"),
        Fig("local_slope"),
    ]


def _self_similarity(profile: Profile) -> list[Block]:
    """The verdict, its reasons and the pairwise collapse diagnostics."""
    ss = profile.analysis["self_similarity"]
    blocks: list[Block] = [Para(f"Verdict: {ss['verdict']}."), Items(list(ss["reasons"]))]
    if ss["pairs"]:
        blocks.append(Para(
            "Collapse diagnostics: misfit of the coarser profile against the finer one in token and "
            "byte units; score = log10(token misfit / byte misfit), positive when only byte units fit."
        ))
        blocks.append(Table(
            ["fine", "coarse", "ρ (bytes ratio)", "misfit, tokens", "misfit, bytes", "score [CI]", "best dilation"],
            [[p["fine"], p["coarse"], _num(p["rho"]), _num(p["misfit_token"]), _num(p["misfit_byte"]),
              _interval(p["score"], *p["score_ci"]), _num(p["dilation"])] for p in ss["pairs"]],
        ))
    blocks.append(Fig("collapse"))
    return blocks


def _recommendation(profile: Profile) -> list[Block]:
    """The base in words, the settings, the reasons, the figures and the HF config."""
    rec = profile.analysis["recommendation"]
    st = profile.analysis["settings"]
    return [
        Para(
            f"Recommended rope_theta = {rec['rope_theta']:.4g} (θ* = {rec['theta_star']:.3g} rad/token, "
            f"W read at granularity {rec['granularity']})."
        ),
        Table(["setting", "value"], [
            ["head dimension", _num(rec["head_dim"])],
            ["training length L_train", _num(rec["train_length"])],
            ["target length", _num(rec["target_length"])],
            ["width definition", st["width"]],
            ["c (θ* = c / W)", _num(rec["c"])],
            ["margin", _num(rec["margin"])],
        ]),
        Items(list(rec["reasons"])),
        Fig("kernel"),
        Fig("rope_grid"),
        Para("Hugging Face config:"),
        Code(json.dumps(rec["hf_config"], indent=2), "json"),
    ]


FIGURE_TEXT = {  # name: (title, caption)
    "mi_profile": ("MI profiles", (
        "MI profile I(r), one panel per granularity. Filled points are distinguishable from zero, "
        "hollow ones are not; bands are the confidence intervals; dashed lines are the noise floors. "
        "Values at or below the axis floor (including negative estimates) are drawn at the floor as "
        "triangles."
    )),
    "local_slope": ("Local slopes", (
        "Local log-log slope d log I / d log r between consecutive positive significant offsets. "
        "A power law is flat at −α (dashed, over the fitted range); a characteristic length makes it fall."
    )),
    "collapse": ("Collapse in token and byte units", (
        "Profiles normalised at a common reference offset (dotted), in token units (left) and byte "
        "units (right), significant positive points only. A scale-free (power-law) profile collapses "
        "in both; a length fixed in bytes collapses only in byte units."
    )),
    "kernel": ("Dependency kernel", (
        "Dependency kernel K(r) of the recommended granularity over the training length (top): MI "
        "interpolated in log r, negative estimates kept, normalised to unit mass; its cumulative "
        "mass (bottom), with W and its interval."
    )),
    "rope_grid": ("RoPE frequency grid", (
        "RoPE band frequencies θ_m = b^(−2m/d) for the recommended base and the alternatives, "
        "with the target frequency θ* = c / W and the frequency that turns once within L_train."
    )),
}


# ---------------------------------------------------------------- figures


def _fig_mi_profile(profile: Profile) -> Figure:
    """I(r) on log-log axes, one panel per granularity, the others in grey for comparison."""
    names, colours, labels = _order(profile), _colours(profile), _labels(profile)
    ncols = min(len(names), 3)
    nrows = math.ceil(len(names) / ncols)
    fig = _figure((max(3.9 * ncols + 0.6, 7.0), 3.1 * nrows + 0.9))
    axes = fig.subplots(nrows, ncols, sharex=True, sharey=True, squeeze=False).ravel()
    floor = _axis_floor(profile.table)
    for i, (ax, name) in enumerate(zip(axes, names)):
        for other in names:
            if other != name:
                t = _rows(profile, other)
                ax.plot(t["offset"], np.maximum(t["mi_bits"].to_numpy(), floor), color="0.85", lw=0.9)
        _draw_profile(ax, _rows(profile, name), colours[name], floor)
        ax.set(xscale="log", yscale="log", title=labels[name])
        ax.set_ylim(bottom=floor / 1.6)
        ax.grid(True, which="major", alpha=0.3)
        if i + ncols >= len(names):
            ax.xaxis.set_tick_params(labelbottom=True)
    for ax in axes[len(names):]:
        ax.remove()
    fig.supxlabel("offset r (tokens)")
    fig.supylabel("mutual information I(r) (bits)")
    handles = [
        Line2D([], [], color="0.3", marker="o", ms=4, label="significant"),
        Line2D([], [], color="0.3", marker="o", mfc="white", ls="", ms=4, label="not significant"),
        Line2D([], [], color="0.3", ls="--", lw=0.9, label="noise floor"),
        Patch(color="0.3", alpha=0.2, label=f"{profile.confidence:.0%} interval"),
    ]
    if (profile.table["mi_bits"] <= floor).any():
        handles.insert(2, Line2D([], [], color="0.3", marker="v", mfc="white", ls="", ms=5,
                                 label=f"≤ {floor:.1e} bits (incl. negative), drawn there"))
    if len(names) > 1:
        handles.append(Line2D([], [], color="0.85", lw=0.9, label="other granularities"))
    fig.legend(handles=handles, loc="outside upper center", ncols=3, fontsize=8, frameon=False)
    return fig


def _draw_profile(ax: Axes, t: pl.DataFrame, colour: str, floor: float) -> None:
    """One granularity's interval band, noise floor, line and points, clipped at ``floor``."""
    r, mi = t["offset"].to_numpy(), t["mi_bits"].to_numpy()
    lo, hi = t["ci_low"].to_numpy(), t["ci_high"].to_numpy()
    sig, noise = t["significant"].to_numpy(), t["noise_floor"].to_numpy()
    ax.fill_between(r, np.maximum(lo, floor), np.maximum(hi, floor), color=colour, alpha=0.2, lw=0)
    ax.plot(r, np.where(noise > 0, noise, np.nan), "--", color=colour, lw=0.9)
    ax.plot(r, np.maximum(mi, floor), color=colour, lw=1.2)
    ax.plot(r[sig], mi[sig], "o", color=colour, ms=4)
    weak = ~sig & (mi > floor)
    ax.plot(r[weak], mi[weak], "o", mfc="white", mec=colour, ms=4)
    low = mi <= floor
    ax.plot(r[low], np.full(low.sum(), floor), "v", mfc="white", mec=colour, ms=5)


def _fig_collapse(profile: Profile) -> Figure:
    """Normalised profiles in token units and in byte units, side by side."""
    fig = _figure((11, 4.8))
    ax_tok, ax_byte = fig.subplots(1, 2, sharey=True)
    colours = _colours(profile)
    curves = {n: _signal(profile, n) for n in colours}
    curves = {n: c for n, c in curves.items() if c[0].size >= 2}
    bpt = {n: profile.granularities[n].get("bytes_per_token") for n in curves}
    in_bytes = {n: (r * bpt[n], mi) for n, (r, mi) in curves.items() if bpt[n]}
    panels = (
        (ax_tok, curves, "token", "offset r (tokens)"),
        (ax_byte, in_bytes, "byte", "offset r × bytes/token (bytes)"),
    )
    for ax, data, unit, xlabel in panels:
        if not data:
            _empty(ax, "no significant profile" if unit == "token" else "no byte lengths (tokenized input)")
            continue
        ref = max(float(x.min()) for x, _ in data.values())
        for name, (x, mi) in data.items():
            ax.plot(x, mi / _log_interp(x, mi, ref), "o-", color=colours[name], ms=3.5, lw=1.2)
        ax.axvline(ref, color="0.5", ls=":", lw=1)
        plural = "" if ref == 1 else "s"
        title = f"{unit} units: r_ref = {ref:.3g} {unit}{plural} (dotted)"
        ax.set(xscale="log", yscale="log", xlabel=xlabel, title=title)
        ax.grid(True, which="major", alpha=0.3)
    ax_tok.set_ylabel("I(r) / I(r_ref)")
    labels = _labels(profile)
    handles = [Line2D([], [], color=colours[n], marker="o", ms=3.5, label=labels[n]) for n in curves]
    if handles:
        fig.legend(handles=handles, loc="outside right upper", fontsize=8, frameon=False)
    return fig


def _fig_local_slope(profile: Profile) -> Figure:
    """Local log-log slope per granularity with the fitted power-law slope −α."""
    fig = _figure((9.5, 5))
    ax = fig.subplots()
    ga = profile.analysis["granularity_analysis"]
    colours = _colours(profile)
    drawn = []
    for name, colour in colours.items():
        g = ga.get(name, {})
        x, y = g.get("local_slope", {}).get("offset", []), g.get("local_slope", {}).get("slope", [])
        if not x:
            continue
        drawn.append(name)
        ax.plot(x, y, "o-", color=colour, ms=3.5, lw=1.2)
        power = g.get("decay_fits", {}).get("power")
        if power:
            ax.hlines(-power["parameter"], min(x), max(x), color=colour, ls="--", lw=0.9)
    if not drawn:
        _empty(ax, "fewer than two positive significant offsets in every granularity")
        return fig
    ax.axhline(0, color="0.5", lw=0.8, ls=":")
    ax.set(xscale="log", xlabel="offset r (tokens, geometric mid-point)", ylabel="local slope d log I / d log r")
    ax.set_xlim(left=1)
    ax.grid(True, which="major", alpha=0.3)
    labels = _labels(profile)
    handles = [Line2D([], [], color=colours[n], marker="o", ms=3.5, label=labels[n]) for n in drawn]
    handles.append(Line2D([], [], color="0.3", ls="--", lw=0.9, label="−α (power-law fit)"))
    fig.legend(handles=handles, loc="outside right upper", fontsize=8, frameon=False)
    return fig


def _fig_kernel(profile: Profile) -> Figure:
    """K(r) over 1..L_train and its cumulative mass, with W and its interval."""
    rec = profile.analysis["recommendation"]
    w, length = rec["W"], rec["train_length"]
    t = _rows(profile, rec["granularity"])
    r, k = kernel(t["offset"].to_numpy(), shrink(t["mi_bits"].to_numpy(), t["se"].to_numpy()), length)
    fig = _figure((9.5, 6.2))
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=[3, 2])
    top.plot(r, k, color="C0", lw=1.3, label=f"K(r), {rec['granularity']}")
    bottom.plot(r, np.cumsum(k), color="C0", lw=1.3)
    quantile = {"q90": 0.9, "q50": 0.5}.get(w["definition"])
    if quantile:
        level = bottom.axhline(quantile, color="0.4", ls=":", lw=1, label=f"{quantile:.0%} of the mass")
        bottom.legend(handles=[level], loc="upper left", fontsize=8)
    for ax in (top, bottom):
        if math.isfinite(w["ci_low"]) and math.isfinite(w["ci_high"]):
            ax.axvspan(w["ci_low"], w["ci_high"], color="C3", alpha=0.12, lw=0, label="W interval")
        ax.axvline(w["W"], color="C3", lw=1.5, label=f"W = {w['W']:.0f} tokens ({w['definition']})")
        ax.grid(True, which="major", alpha=0.3)
    top.set(xscale="log", ylabel="K(r): share of max(I − se, 0)",
            title=f"dependency kernel over L_train = {length} tokens")
    bottom.set(xlabel="offset r (tokens)", ylabel="cumulative mass")
    top.legend(loc="upper right", fontsize=8)
    return fig


def _fig_rope_grid(profile: Profile) -> Figure:
    """Band frequencies of the recommended base and the alternatives, with θ*."""
    rec = profile.analysis["recommendation"]
    d = rec["head_dim"]
    fig = _figure((9.5, 5))
    ax = fig.subplots()
    bands = np.arange(d // 2)
    labels = {
        "recommended": "recommended",
        "standard_10000": "standard",
        "base_equals_L_train": "b = L_train",
        "men_lower_bound": f"Men et al. bound for {rec['target_length'] or rec['train_length']} tokens",
    }
    for (key, label), marker in zip(labels.items(), "osD^", strict=True):
        base = rec["grid_comparison"][key]["base"]
        if math.isfinite(base):
            ax.plot(bands, frequencies(base, d), marker=marker, ms=3, lw=1.2, markevery=4,
                    label=f"{label} (b = {_num(base)})")
    ax.axhline(rec["theta_star"], color="k", ls="--", lw=1.2, label=f"θ* = c/W = {rec['theta_star']:.3g} rad/token")
    ax.axhline(2 * math.pi / rec["train_length"], color="0.5", ls=":", lw=1.2,
               label=f"one turn within L_train = {rec['train_length']}")
    ax.set(yscale="log", xlabel=f"band index m (0 = fastest; head dim d = {d})",
           ylabel="frequency θ_m (rad/token)", xlim=(0, d // 2 - 1))
    ax.grid(True, which="major", alpha=0.3)
    ax.secondary_yaxis("right", functions=(_wavelength, _wavelength)).set_ylabel("wavelength 2π/θ_m (tokens)")
    ax.legend(loc="lower left", fontsize=8)
    return fig


FIGURES: dict[str, Callable[[Profile], Figure]] = {
    "mi_profile": _fig_mi_profile,
    "local_slope": _fig_local_slope,
    "collapse": _fig_collapse,
    "kernel": _fig_kernel,
    "rope_grid": _fig_rope_grid,
}


def _figure(size: tuple[float, float]) -> Figure:
    """An empty figure with constrained layout at the report's resolution."""
    return Figure(figsize=size, dpi=DPI, layout="constrained")


def _png(fig: Figure) -> bytes:
    """The figure as PNG bytes (no metadata, so no URLs hide in the image)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    return buf.getvalue()


def _empty(ax: Axes, text: str) -> None:
    """Mark a panel that has nothing to draw."""
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="0.4")
    ax.tick_params(which="both", left=False, bottom=False, labelleft=False, labelbottom=False)


def _order(profile: Profile) -> list[str]:
    """Granularity names from the finest to the coarsest (no byte length last)."""
    return sorted(profile.granularities, key=lambda n: profile.granularities[n].get("bytes_per_token") or math.inf)


def _colours(profile: Profile) -> dict[str, str]:
    """One colour per granularity, the same in every figure."""
    return {name: f"C{i % 10}" for i, name in enumerate(_order(profile))}


def _labels(profile: Profile) -> dict[str, str]:
    """Legend labels; a granularity with the same profile as a finer one says so (its lines coincide)."""
    seen: dict[tuple, str] = {}
    out = {}
    for name in _order(profile):
        t = _rows(profile, name)
        key = (tuple(t["offset"].to_list()), tuple(t["mi_bits"].to_list()))
        out[name] = f"{name} (= {seen[key]})" if key in seen else name
        seen.setdefault(key, name)
    return out


def _rows(profile: Profile, name: str) -> pl.DataFrame:
    """The profile rows of one granularity, by offset."""
    return profile.table.filter(pl.col("granularity") == name).sort("offset")


def _signal(profile: Profile, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, MI) of the significant positive points of one granularity."""
    t = _rows(profile, name).filter(pl.col("significant") & (pl.col("mi_bits") > 0))
    return t["offset"].to_numpy().astype(float), t["mi_bits"].to_numpy()


def _axis_floor(table: pl.DataFrame) -> float:
    """Bottom of a log MI axis: half the smallest significant MI or noise floor."""
    mi, noise = table["mi_bits"].to_numpy(), table["noise_floor"].to_numpy()
    positive = np.concatenate([mi[table["significant"].to_numpy() & (mi > 0)], noise[noise > 0]])
    return float(positive.min() / 2) if positive.size else 1e-6


def _wavelength(theta: np.ndarray) -> np.ndarray:
    """Tokens per turn of a frequency, and back (the map is its own inverse)."""
    with np.errstate(divide="ignore"):
        return 2 * np.pi / np.asarray(theta, dtype=float)


def _log_interp(x: np.ndarray, y: np.ndarray, at: float) -> float:
    """y at ``at``, interpolated linearly in log-log (clamped to the ends)."""
    return float(np.exp(np.interp(math.log(at), np.log(x), np.log(y))))


# ---------------------------------------------------------------- number formats


def _num(x: float | int | None) -> str:
    """A number for text: whole numbers from 100 up (separators from 10,000), else 3 significant digits."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if isinstance(x, float) and math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if isinstance(x, int) or 100 <= abs(x) < 1e7:
        return f"{x:,.0f}" if abs(x) >= 10_000 else f"{x:.0f}"
    return f"{x:.3g}"


def _interval(value: float | None, low: float | None, high: float | None) -> str:
    """``value [low, high]``."""
    return f"{_num(value)} [{_num(low)}, {_num(high)}]"


# ---------------------------------------------------------------- renderers


def _html_document(title: str, sections: list[Section], images: dict[str, bytes]) -> str:
    """A self-contained HTML page."""
    body = [f"<h1>{html.escape(title)}</h1>"]
    for heading, blocks in sections:
        body.append(f"<h2>{html.escape(heading)}</h2>")
        body += [_html_block(b, images) for b in blocks]
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n"
        + "\n".join(body)
        + "\n</main>\n</body>\n</html>\n"
    )


def _html_block(block: Block, images: dict[str, bytes]) -> str:
    """One block as HTML, every text escaped."""
    e = html.escape
    match block:
        case Para(text):
            return f"<p>{e(text)}</p>"
        case Items(items):
            return "<ul>\n" + "\n".join(f"<li>{e(i)}</li>" for i in items) + "\n</ul>"
        case Table(header, rows):
            head = "".join(f"<th>{e(h)}</th>" for h in header)
            body = "\n".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in rows)
            return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>"
        case Code(text, language):
            return f'<pre><code class="language-{e(language)}">{e(text)}</code></pre>'
        case Fig(name):
            title, caption = FIGURE_TEXT[name]
            data = base64.b64encode(images[name]).decode("ascii")
            return (f'<figure><img src="data:image/png;base64,{data}" alt="{e(title)}">'
                    f"<figcaption>{e(caption)}</figcaption></figure>")
    raise TypeError(f"not a report block: {block!r}")


def _markdown_document(title: str, sections: list[Section]) -> str:
    """The report as Markdown with figures under FIGURE_DIR."""
    parts = [f"# {_md(title)}"]
    for heading, blocks in sections:
        parts.append(f"## {_md(heading)}")
        parts += [_markdown_block(b) for b in blocks]
    return "\n\n".join(parts) + "\n"


def _markdown_block(block: Block) -> str:
    """One block as Markdown."""
    match block:
        case Para(text):
            return _md(text)
        case Items(items):
            return "\n".join(f"- {_md(i)}" for i in items)
        case Table(header, rows):
            lines = ["| " + " | ".join(_md(h) for h in header) + " |", "|" + "---|" * len(header)]
            return "\n".join(lines + ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows])
        case Code(text, language):
            return f"```{language}\n{text}\n```"
        case Fig(name):
            title, caption = FIGURE_TEXT[name]
            return f"![{_md(title)}]({FIGURE_DIR}/{name}.png)\n\n*{_md(caption)}*"
    raise TypeError(f"not a report block: {block!r}")


def _md(text: str) -> str:
    """Text with Markdown's inline markup characters escaped."""
    for ch in "\\`*_|<[]":
        text = text.replace(ch, "\\" + ch)
    return text
