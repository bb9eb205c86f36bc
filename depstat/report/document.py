"""depstat.report.document: an HTML and a Markdown report of a Profile and its Analysis, with figures.

``build_report(profile, analysis, out_dir)`` writes ``report.html`` (self-contained: figures inline
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

from depstat.analysis.recommend import extended_frequencies, frequencies
from depstat.analysis.result import Analysis
from depstat.estimate.profile import Profile
from depstat.files import atomic_write
from depstat.groups import Groups
from depstat.report.console import base_headline, base_text
from depstat.version import __version__

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


def build_report(profile: Profile, analysis: Analysis, out_dir: str | Path, groups: Groups | None = None,
                 ) -> dict[str, Path]:
    """Write report.html, report.md and figures/*.png into ``out_dir``; return their paths.

    Keys: ``html``, ``markdown`` and one per figure (``mi_profile``, ``support``, ``byte_axis``,
    ``slopes``, ``kernel``, ``rope_grid``, ``bases``; ``groups`` with ``groups``: the table and figure across groups).
    """
    out = Path(out_dir)
    (out / FIGURE_DIR).mkdir(parents=True, exist_ok=True)
    images = {name: _png(draw(profile, analysis)) for name, draw in FIGURES.items()}
    if groups is not None and any(g.analysis is not None for g in groups.groups):
        images["groups"] = _png(groups.figure())
    paths: dict[str, Path] = {}
    for name, data in images.items():
        paths[name] = atomic_write(out / FIGURE_DIR / f"{name}.png", lambda tmp: Path(tmp).write_bytes(data))
    title = f"depstat report: {profile.corpus.get('spec', 'corpus')}"
    sections = _sections(profile, analysis)
    if groups is not None:
        sections.insert(-1, (f"Groups by {groups.field}", _groups(groups, "groups" in images)))
    html, markdown = _html_document(title, sections, images), _markdown_document(title, sections)
    paths["html"] = atomic_write(out / "report.html", lambda tmp: Path(tmp).write_text(html, encoding="utf-8"))
    paths["markdown"] = atomic_write(out / "report.md", lambda tmp: Path(tmp).write_text(markdown, encoding="utf-8"))
    return paths


# ---------------------------------------------------------------- text sections


def _sections(profile: Profile, a: Analysis) -> list[Section]:
    """The report's sections in order."""
    return [
        ("Summary", _summary(a)),
        ("Corpus and sampling", _corpus(profile)),
        ("Granularities", _granularities(profile, a)),
        ("Self-similarity", _self_similarity(a)),
        ("Recommendation", _recommendation(a)),
        ("About", [Para(f"Made with depstat {__version__}; MI estimator: {profile.estimator}.")]),
    ]


def _groups(groups: Groups, figure: bool) -> list[Block]:
    """One row per group (each profiled and analysed on its share of the sample), and the profiles overlaid."""
    header = ["group", "docs", "granularity", "kernel", "W", "verdict", "onset", "rope_theta", "extension", "note"]
    rows = []
    for g in groups.groups:
        r = g.row()
        rows.append([str(r["group"]), str(r["docs"]), r.get("granularity") or "", r.get("kernel") or "", _num(r.get("W")),
                     r.get("verdict") or "", _num(r.get("onset")), _num(r.get("rope_theta")), r.get("extension") or "",
                     r.get("note") or ""])
    blocks: list[Block] = [Para("Each group is profiled and analysed on its share of the sample, with the same "
                                "offsets, granularities and settings as the whole corpus."), Table(header, rows)]
    return blocks + [Fig("groups")] if figure else blocks


def _summary(a: Analysis) -> list[Block]:
    """Three lines: the base, the verdict, the extension."""
    rec = a.recommendation
    w = a.widths[a.granularity]
    ss = a.self_similarity
    width = f"{w.kind}, W = {_num(w.W)} tokens" if w.W is not None else w.kind
    source = "set by the data" if rec.bound == "data" else "the data do not constrain the base: Men et al.'s bound"
    items = [f"Note: {a.uninformed}"] if a.uninformed else []
    items += [
        f"rope_theta = {base_text(rec.rope_theta)} for head dimension {rec.head_dim} and L_train = {rec.train_length} "
        f"({width} at {rec.granularity}; {source})",
        f"self-similarity: {ss.verdict}" + (f" from r = {ss.onset_tokens:.1f} tokens" if ss.verdict == "self-similar"
                                            else ""),
    ]
    if rec.extension:
        method = EXTENSION_NAMES.get(rec.extension.method, rec.extension.method)
        items.append(f"context extension to {rec.target_length} tokens: {method}, factor {rec.extension.factor:g}")
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
        ["interval", f"weighted delete-a-group jackknife over random document groups, Student t, "
                     f"{profile.confidence:.0%} confidence; noise floor = half-width of the interval"],
    ]
    return [Table(["field", "value"], rows)]


def _granularities(profile: Profile, a: Analysis) -> list[Block]:
    """Facts, the kind of kernel, W, α and the floor per granularity, with the profile figure."""
    rows = []
    for name in _order(profile):
        facts, w = profile.granularities[name], a.widths.get(name)
        rows.append([
            name,
            _num(facts.vocab_size),
            _num(facts.n_tokens),
            f"{facts.bytes_per_token:.2f}" if facts.bytes_per_token else "–",
            (w.kind + (f" {w.period}" if w.period else "")) if w else "(duplicate)",
            _interval(w.W, w.ci_low, w.ci_high) if w and w.W is not None else "–",
            _interval(w.alpha, *w.alpha_ci) if w and w.alpha_ci else "–",
            _interval(w.crossover, *w.crossover_ci) if w and w.crossover_ci else "–",
            _num(w.floor) if w else "–",
            _num(w.chi2_dof) if w else "–",
        ])
    return [
        Table(["granularity", "vocab", "tokens", "bytes/token", "kernel", "W (tokens) [interval]",
               "tail α [CI]", "r_x (tokens) [CI]", "floor (bits)", "χ²/dof"], rows),
        Para(
            "Each profile is fitted by an exponential, a power law and their sum, each with a floor (weighted "
            "least squares on I); a richer model is chosen where its lower AICc is also beyond the profile's error "
            "(a parametric bootstrap of its χ² gain, p ≤ 0.05). "
            "'composite': a local part of width W on a power-law tail that takes over at r_x; 'characteristic' "
            "or 'local': a length of its own; 'periodic': peaks at multiples of a period. χ²/dof above 2: the "
            "model does not describe the data. Intervals come from the fits repeated on each jackknife replicate."
        ),
        Items([f"{w.granularity}: {w.reason}" for w in a.widths.values()]),
        Fig("mi_profile"),
        Fig("support"),
    ]


def _self_similarity(a: Analysis) -> list[Block]:
    """The verdict, its reasons and the tail exponents behind it."""
    ss = a.self_similarity
    blocks: list[Block] = [Para(f"Verdict: {ss.verdict}."), Items(list(ss.reasons))]
    if ss.exponents:
        blocks.append(Table(
            ["granularity", "tail α [CI]", "onset (bytes)"],
            [[e.granularity, _interval(e.alpha, *e.interval), _num(e.onset_bytes)] for e in ss.exponents],
        ))
    blocks += [Fig("byte_axis"), Fig("slopes")]
    return blocks


def _default_note(a: Analysis, name: str) -> str:
    """The note beside a model setting nobody gave (depstat's default)."""
    return " (depstat's default, not your model's)" if name in a.settings.defaults else ""


def _recommendation(a: Analysis) -> list[Block]:
    """The base in words, the settings, the reasons, the rules side by side, the figures and configs."""
    rec = a.recommendation
    head = base_headline(rec)
    return [
        Para(f"{head[0].upper()}{head[1:]}; θ* = {rec.theta_star:.3g} rad/token from {rec.theta_star_from}."),
        Table(["setting", "value"], [
            ["head dimension", _num(rec.head_dim) + _default_note(a, "head_dim")],
            ["training length L_train", _num(rec.train_length) + _default_note(a, "train_length")],
            ["target length", _num(rec.target_length)],
            ["c (θ* = c / W)", _num(rec.c)],
            ["margin", _num(rec.margin)],
            ["critical dimension (Liu et al.)", _num(rec.critical_dimension)],
        ]),
        Items(list(rec.reasons)),
        Table(["rule", "base", "source", "θ* band", "bands slower"],
              [[g.rule, base_text(g.base), g.source, str(g.theta_star_band), str(g.bands_slower)]
               for g in (rec.recommended, *rec.alternatives)]),
        Fig("kernel"),
        Fig("rope_grid"),
        Fig("bases"),
        Para("transformers ≥ 5 config:"),
        Code(json.dumps(rec.rope_parameters, indent=2), "json"),
        Para("transformers 4.x config:"),
        Code(json.dumps(rec.legacy_config, indent=2), "json"),
    ]


FIGURE_TEXT = {  # name: (title, caption)
    "groups": ("Profiles by group", (
        "Each analysed group's MI profile at its model granularity, overlaid, with its kernel and verdict in the "
        "legend; bands are the confidence intervals.")),
    "mi_profile": ("MI profiles", (
        "MI profile I(r), one panel per granularity. Filled points are distinguishable from zero, "
        "hollow ones are not; bands are the confidence intervals; the dashed black line is the preferred "
        "decay model with its floor. Values at or below the axis floor (including negative estimates) are "
        "drawn at the floor as triangles."
    )),
    "support": ("Documents and pairs per offset", (
        "How many documents reach each offset and how many token pairs it rests on: where the documents "
        "thin out, the profile there describes fewer, longer documents, and its intervals widen."
    )),
    "byte_axis": ("Every granularity on one byte axis", (
        "I(r) of every granularity against offset × bytes per token: self-similar text gives curves of one "
        "shape beyond the onset (dashed), shifted in height; a granularity that bends differently there "
        "sees other structure."
    )),
    "slopes": ("Tails on a byte axis", (
        "Each granularity's tail (I minus its floor and local part, points) with its fitted power law "
        "(line) on the byte axis: self-similar data give parallel lines beyond the onset, the exponents in "
        "the legend."
    )),
    "kernel": ("Dependency kernel", (
        "The model granularity's profile above its fitted floor (points with ± one standard error; hollow: "
        "offsets left out of the fit) and the chosen decay model (line) with its local part and tail: read "
        "where the local part gives way to the tail (r_x), W with its interval when the kernel has a length "
        "of its own, and L_train."
    )),
    "rope_grid": ("RoPE frequency grid", (
        "RoPE band frequencies θ_m = b^(−2m/d) for the recommended base (thick) and three alternatives, with "
        "θ* and the frequency that turns once within L_train; under an extension, the recommended bands "
        "after it (dashed) and one turn within the target: bands above β_fast keep their frequency."
    )),
    "bases": ("Bases side by side", (
        "The recommended base against the other rules and the published configs of well-known models "
        "(their training length in brackets)."
    )),
}


# ---------------------------------------------------------------- figures


def _fig_mi_profile(profile: Profile, a: Analysis) -> Figure:
    """I(r) on log-log axes, one panel per granularity, the others in grey, the fitted model dashed."""
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
        t = _rows(profile, name)
        _draw_profile(ax, t, colours[name], floor)
        w = a.widths.get(name)
        if w and w.preferred_model:
            r = np.geomspace(1, t["offset"].max(), 200)
            ax.plot(r, np.maximum(w.fits[w.preferred_model].predict(r), floor), "--", color="k", lw=0.9)
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
        Line2D([], [], color="k", ls="--", lw=0.9, label="decay model + floor"),
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
    """One granularity's interval band, line and points, clipped at ``floor``."""
    r, mi = t["offset"].to_numpy(), t["mi_bits"].to_numpy()
    lo, hi = t["ci_low"].to_numpy(), t["ci_high"].to_numpy()
    sig = t["significant"].to_numpy()
    ax.fill_between(r, np.maximum(lo, floor), np.maximum(hi, floor), color=colour, alpha=0.2, lw=0)
    ax.plot(r, np.maximum(mi, floor), color=colour, lw=1.2)
    ax.plot(r[sig], mi[sig], "o", color=colour, ms=4)
    weak = ~sig & (mi > floor)
    ax.plot(r[weak], mi[weak], "o", mfc="white", mec=colour, ms=4)
    low = mi <= floor
    ax.plot(r[low], np.full(low.sum(), floor), "v", mfc="white", mec=colour, ms=5)


def _fig_slopes(profile: Profile, a: Analysis) -> Figure:
    """Each granularity's tail (I minus its floor and local part) on the byte axis, with its fitted power law."""
    fig = _figure((9.5, 5))
    ax = fig.subplots()
    colours = _colours(profile)
    ss = a.self_similarity
    shown = [w for w in a.widths.values() if w.alpha is not None and w.preferred_model in ("power", "composite")]
    if not shown:
        _empty(ax, "no granularity has a power-law tail: " + ss.reasons[0][:80])
        return fig
    for w in shown:
        t = _rows(profile, w.granularity)
        f = w.fits[w.preferred_model]
        r = t["offset"].to_numpy().astype(float)
        x, tail = r * (w.bytes_per_token or 1.0), t["mi_bits"].to_numpy() - f.floor - f.local(r)
        keep = tail > 0
        colour = colours.get(w.granularity, "0.3")
        ax.plot(x[keep], tail[keep], "o", color=colour, ms=3.5,
                label=f"{w.granularity}: α = {w.alpha:.2f}" + (" (model)" if w.granularity == a.granularity else ""))
        ax.plot(x, f.tail(r), "-", color=colour, lw=1)
    if ss.onset_bytes is not None:
        ax.axvline(ss.onset_bytes, color="k", ls="--", lw=1, label=f"onset, {ss.onset_bytes:.0f} bytes")
    ax.set(xscale="log", yscale="log", xlabel="offset × bytes per token (bytes)",
           ylabel="I(r) − floor − local part (bits)", title=f"tails on one byte axis; verdict: {ss.verdict}")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="lower left", fontsize=8)
    return fig


def _fig_rope_grid(profile: Profile, a: Analysis) -> Figure:
    """Band frequencies of the recommended base and the alternatives, with θ*."""
    rec = a.recommendation
    d = rec.head_dim
    fig = _figure((9.5, 5))
    ax = fig.subplots()
    bands = np.arange(d // 2)
    ax.plot(bands, frequencies(rec.rope_theta, d), color="C3", lw=6, alpha=0.35, solid_capstyle="round", zorder=1,
            label=f"recommended (b = {base_text(rec.rope_theta)})")
    for g, marker, colour in zip(rec.alternatives[:3], "sD^", ("C0", "C1", "C2"), strict=True):
        if math.isfinite(g.base):
            ax.plot(bands, frequencies(g.base, d), marker=marker, ms=3, lw=1.0, markevery=4, color=colour, zorder=2,
                    label=g.rule if base_text(g.base) in g.rule else f"{g.rule} (b = {base_text(g.base)})")
    ext = rec.extension
    if ext is not None:
        ax.plot(bands, extended_frequencies(rec.rope_theta, d, ext, rec.train_length), color="C3", ls="--", lw=1.4,
                zorder=3, label=f"recommended after {EXTENSION_NAMES.get(ext.method, ext.method)} by s = {ext.factor:g}")
    ax.axhline(rec.theta_star, color="k", ls="--", lw=1.2, label=f"θ* = {rec.theta_star:.3g} rad/token")
    ax.axhline(2 * math.pi / rec.train_length, color="0.5", ls=":", lw=1.2,
               label=f"one turn within L_train = {rec.train_length}")
    if rec.target_length:
        ax.axhline(2 * math.pi / rec.target_length, color="0.5", ls="-.", lw=1.2,
                   label=f"one turn within the target {rec.target_length}")
    ax.set(yscale="log", xlabel=f"band index m (0 = fastest; head dim d = {d})",
           ylabel="frequency θ_m (rad/token)", xlim=(0, d // 2 - 1))
    ax.grid(True, which="major", alpha=0.3)
    ax.secondary_yaxis("right", functions=(_wavelength, _wavelength)).set_ylabel("wavelength 2π/θ_m (tokens)")
    ax.legend(loc="lower left", fontsize=8)
    return fig


def _fig_byte_axis(profile: Profile, a: Analysis) -> Figure:
    """Every granularity's I(r) on one byte axis (offset x bytes per token): what the verdict compares."""
    fig = _figure((9.5, 5))
    ax = fig.subplots()
    colours, floor = _colours(profile), _axis_floor(profile.table)
    for name in _order(profile):
        per_token = profile.granularities[name].bytes_per_token
        if not per_token:
            continue
        t = _rows(profile, name)
        x = t["offset"].to_numpy() * per_token
        ax.plot(x, np.maximum(t["mi_bits"].to_numpy(), floor), "o-", color=colours[name], ms=3, lw=1,
                label=f"{name} ({per_token:.2f} bytes/token)")
    ss = a.self_similarity
    if ss.onset_bytes is not None:
        ax.axvline(ss.onset_bytes, color="k", ls="--", lw=1, label=f"onset, {ss.onset_bytes:.0f} bytes")
    ax.set(xscale="log", yscale="log", xlabel="offset × bytes per token (bytes)", ylabel="I(r) (bits)",
           title=f"every granularity on the byte axis; verdict: {ss.verdict}")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="lower left", fontsize=8)
    return fig


def _fig_support(profile: Profile, a: Analysis) -> Figure:
    """Documents and token pairs behind each offset, per granularity."""
    fig = _figure((9.5, 4.2))
    docs_ax, pairs_ax = fig.subplots(1, 2)
    colours = _colours(profile)
    for name in _order(profile):
        t = _rows(profile, name)
        docs_ax.plot(t["offset"], t["n_docs"], "o-", color=colours[name], ms=3, lw=1, label=name)
        pairs_ax.plot(t["offset"], t["n_pairs"], "o-", color=colours[name], ms=3, lw=1, label=name)
    docs_ax.set(xscale="log", yscale="log", xlabel="offset r (tokens)", ylabel="documents longer than r")
    pairs_ax.set(xscale="log", yscale="log", xlabel="offset r (tokens)", ylabel="token pairs r apart")
    for ax in (docs_ax, pairs_ax):
        ax.grid(True, which="major", alpha=0.3)
    docs_ax.legend(loc="lower left", fontsize=8)
    return fig


def _fig_bases(profile: Profile, a: Analysis) -> Figure:
    """Every rule's base on one log axis, the recommended one highlighted."""
    rec = a.recommendation
    grids = [g for g in (rec.recommended, *rec.alternatives) if math.isfinite(g.base)]
    fig = _figure((9.5, 0.35 * len(grids) + 1.4))
    ax = fig.subplots()
    y = np.arange(len(grids))[::-1]
    ax.barh(y, [g.base for g in grids], color=["C3" if g is rec.recommended else "C0" for g in grids], alpha=0.8)
    ax.set_yticks(y, [g.rule for g in grids], fontsize=8)
    ax.set(xscale="log", xlabel="RoPE base b", title=f"head dim {rec.head_dim}, L_train {rec.train_length}")
    ax.grid(True, which="major", axis="x", alpha=0.3)
    return fig


FIGURES: dict[str, Callable[[Profile, Analysis], Figure]] = {
    "mi_profile": _fig_mi_profile,
    "support": _fig_support,
    "byte_axis": _fig_byte_axis,
    "slopes": _fig_slopes,
    "kernel": lambda profile, a: a.plot(profile),
    "rope_grid": _fig_rope_grid,
    "bases": _fig_bases,
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
    return sorted(profile.granularities, key=lambda n: profile.granularities[n].bytes_per_token or math.inf)


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


def _axis_floor(table: pl.DataFrame) -> float:
    """Bottom of a log MI axis: half the smallest significant MI or noise floor."""
    mi, noise = table["mi_bits"].to_numpy(), table["noise_floor"].to_numpy()
    positive = np.concatenate([mi[table["significant"].to_numpy() & (mi > 0)], noise[noise > 0]])
    return float(positive.min() / 2) if positive.size else 1e-6


def _wavelength(theta: np.ndarray) -> np.ndarray:
    """Tokens per turn of a frequency, and back (the map is its own inverse)."""
    with np.errstate(divide="ignore"):
        return 2 * np.pi / np.asarray(theta, dtype=float)


# ---------------------------------------------------------------- number formats


def _num(x: float | None) -> str:
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
