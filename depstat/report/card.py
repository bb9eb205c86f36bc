"""depstat.report.card: a Markdown data card of a Profile and its Analysis, with the MI-profile figure.

``write_card(profile, analysis, out_path, command)`` writes ``out_path`` (Markdown) and
``<stem>.png`` beside it. The card says what the corpus is (source, size, documents, and
a free-text description where one is given), how it was sampled and tokenized, shows the
profile figure, W per granularity with intervals, the decay fits, the self-similarity
verdict, the RoPE recommendation with its config snippet, and the depstat version and
command that produced it.

Every number in the card comes from one dict, ``card_data(profile, analysis)``, written into the
card as a fenced ``json depstat-card`` block; ``card_numbers(text)`` reads it back, so a
regenerated card can be compared with a committed one number by number. Floats there
are rounded to 6 significant digits; values that are not finite or not available are
``null``.

Command line::

    depstat card CORPUS_OR_PROFILE_DIR --out CARD.md [--title T] [--description D]
        [every corpus, granularity, estimation and advice option of depstat profile]
"""

from __future__ import annotations

import json
import math
import platform
import re
import shlex
from collections.abc import Sequence
from numbers import Integral
from pathlib import Path

import numpy as np
import polars as pl

from depstat.analysis.result import Analysis
from depstat.errors import DepstatError
from depstat.estimate.profile import MIN_PAIRS, Profile
from depstat.files import atomic_write
from depstat.version import __version__

SCHEMA = "depstat-card/2"
FENCE = "json depstat-card"
DIGITS = 6  # significant digits of the floats in the machine-readable block
EXTENSION_NAMES = {"pi": "position interpolation (PI)", "yarn": "YaRN"}
_BLOCK = re.compile(r"^```" + re.escape(FENCE) + r"[ \t]*\n(.*?)\n```[ \t]*$", re.DOTALL | re.MULTILINE)


# ---------------------------------------------------------------- the numbers


def card_data(profile: Profile, analysis: Analysis) -> dict:
    """The card's numbers: corpus size, per-granularity kernels, verdict, recommendation."""
    rec, st = analysis.recommendation, analysis.settings
    facts = profile.granularities
    first = next(iter(facts.values()))
    n_bytes = next((f.n_bytes for f in facts.values() if f.n_bytes), None)
    ext = rec.extension
    ss = analysis.self_similarity
    data = {
        "schema": SCHEMA,
        "corpus": profile.corpus.get("spec"),
        "n_documents": first.n_docs,
        "n_bytes": n_bytes,
        "settings": {
            "head_dim": st.head_dim, "train_length": st.train_length, "target_length": st.target_length,
            "c": st.c, "margin": st.margin, "similarity_margin": st.similarity_margin,
            "model_granularity": analysis.granularity,
        },
        "granularities": {name: _granularity_numbers(profile, analysis, name) for name in _order(profile)},
        "verdict": ss.verdict,
        "onset_tokens": ss.onset_tokens,
        "onset_bytes": ss.onset_bytes,
        "exponent_spread": ss.exponent_spread,
        "exponent_spread_bounds": ss.exponent_spread_bounds,
        "rope_theta": rec.rope_theta,
        "rope_theta_bound": rec.bound,
        "base_from_data": rec.base_from_data,
        "base_men": rec.base_men,
        "theta_star": rec.theta_star,
        "extension": {"method": ext.method, "factor": ext.factor, "beta_fast": ext.beta_fast,
                      "beta_slow": ext.beta_slow} if ext else None,
        "software": software(),
    }
    return _clean(data)


def software() -> dict[str, str]:
    """Versions that decide the numbers: depstat, Python (the stdlib card's content) and tokenizers."""
    try:
        import tokenizers

        tok = tokenizers.__version__
    except ImportError:  # pragma: no cover - a dependency
        tok = "not installed"
    return {"depstat": __version__, "python": platform.python_version(), "tokenizers": tok}


def _granularity_numbers(profile: Profile, analysis: Analysis, name: str) -> dict:
    """Tokens, and the kind, W and fits of one granularity's kernel."""
    facts, w = profile.granularities[name], analysis.widths.get(name)
    return {
        "vocab_size": facts.vocab_size,
        "n_tokens": facts.n_tokens,
        "n_docs": facts.n_docs,
        "bytes_per_token": facts.bytes_per_token,
        "kind": w.kind if w else None,
        "W": w.W if w else None,
        "W_interval": [w.ci_low, w.ci_high] if w and w.W is not None else None,
        "W_bytes": w.W_bytes if w else None,
        "decay_model": w.preferred_model if w else None,
        "alpha": w.alpha if w else None,
        "alpha_interval": list(w.alpha_ci) if w and w.alpha_ci else None,
        "xi": w.xi if w else None,
        "crossover": w.crossover if w else None,
        "crossover_interval": list(w.crossover_ci) if w and w.crossover_ci else None,
        "chi2_dof": w.chi2_dof if w else None,
        "period": w.period if w else None,
        "floor_bits": w.floor if w else None,
    }


def _clean(value: object) -> object:
    """JSON-safe copy: floats rounded to DIGITS significant digits, non-finite ones to None."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if isinstance(value, bool | str) or value is None:
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, Integral):
        return int(value)
    x = float(value)
    return float(f"{x:.{DIGITS}g}") if math.isfinite(x) else None


def card_numbers(markdown_text: str) -> dict:
    """The numbers of a card: the ``json depstat-card`` block parsed back into a dict."""
    found = _BLOCK.findall(markdown_text)
    if len(found) != 1:
        raise DepstatError(f"expected one ```{FENCE} block in the card, found {len(found)}")
    return json.loads(found[0])


# ---------------------------------------------------------------- writing


def write_card(
    profile: Profile,
    analysis: Analysis,
    out_path: str | Path,
    command: str,
    title: str | None = None,
    description: str | None = None,
) -> Path:
    """Write the Markdown card to ``out_path`` and its MI-profile figure to ``<stem>.png``."""
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    figure = out.with_suffix(".png")
    numbers = card_data(profile, analysis)
    _save_figure(profile, analysis, figure)
    text = render_card(profile, analysis, numbers, command, title, description, figure.name)
    return atomic_write(out, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))


def _save_figure(profile: Profile, analysis: Analysis, path: Path) -> None:
    """The report's MI-profile figure (one panel per granularity) as a PNG without metadata."""
    from depstat.report.document import DPI, FIGURES

    fig = FIGURES["mi_profile"](profile, analysis)
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=DPI, metadata={"Software": None}))


def render_card(
    profile: Profile, analysis: Analysis, numbers: dict, command: str, title: str | None,
    description: str | None, figure: str,
) -> str:
    """The card's Markdown; every number in it is read from ``numbers``."""
    parts = [f"# {title or 'Data card: ' + str(numbers['corpus'])}"]
    if description:
        parts.append(description.strip())
    parts += [
        "## Corpus", _corpus(profile, numbers),
        "## Sampling and tokenization", _sampling(profile, numbers),
        "## MI profile", _figure(figure),
        "## Dependency kernels", _widths(analysis, numbers),
        "## Self-similarity", _selfsim(analysis, numbers),
        "## Recommendation", _recommendation(analysis, numbers),
        "## Provenance", _provenance(numbers, command),
        "## Numbers", _numbers_block(numbers),
    ]
    return "\n\n".join(parts) + "\n"


def _corpus(profile: Profile, n: dict) -> str:
    """Source, format, files, documents and size."""
    c = profile.corpus
    rows = [
        ["source", _code(n["corpus"])],
        ["kind / format", f"{c.get('kind', '–')} / {', '.join(c.get('formats', [])) or '–'}"],
        ["files", _fmt(c.get("file_count"))],
        ["documents profiled", _fmt(n["n_documents"])],
        ["size", f"{_fmt(n['n_bytes'])} bytes (UTF-8)" if n["n_bytes"] else "– (tokenized input)"],
        ["skipped bad records / empty documents",
         f"{_fmt(c.get('skipped_bad_records'))} / {_fmt(c.get('empty_documents'))}"],
    ]
    return _table(["field", "value"], rows)


def _sampling(profile: Profile, n: dict) -> str:
    """Sampling rule, tokenizers, the offsets and the estimator, then the granularity table."""
    s, t = profile.sampling, profile.table
    lines = [
        f"- sampling: {s.get('rule', '–')} (budget unit: {s.get('token_unit', '–')})",
        *([f"- tokenization: {s['tokenizer_training']}"] if s.get("tokenizer_training") else []),
        f"- offsets: {t['offset'].n_unique()} from {t['offset'].min()} to {t['offset'].max()} tokens",
        f"- MI estimator: {profile.estimator}; weighted delete-a-group jackknife intervals over random "
        "document groups, Student t, "
        f"{profile.confidence:.0%} confidence",
        *([f"- the rotation null rotates the list of pairs from offset {', '.join(nulls)}, where documents end"]
          if (nulls := [f"{g.pair_list_null_from} ({name})" for name, g in profile.granularities.items()
                        if g.pair_list_null_from is not None]) else []),
    ]
    rows = [
        [name, _fmt(g["vocab_size"]), _fmt(g["n_tokens"]), _fmt(g["n_docs"]),
         f"{g['bytes_per_token']:.2f}" if g["bytes_per_token"] else "–",
         str(profile.granularities[name].jackknife_unit or "–")]
        for name, g in n["granularities"].items()
    ]
    table = _table(["granularity", "vocabulary", "tokens", "documents", "bytes/token", "jackknife unit"], rows)
    notes = _granularity_notes(profile)
    return "\n".join(lines) + "\n\n" + table + ("\n\n" + "\n".join(f"- {x}" for x in notes) if notes else "")


def _granularity_notes(profile: Profile) -> list[str]:
    """BPE vocabularies smaller than asked, granularities identical to a finer one, skipped offsets."""
    notes, seen = [], {}
    for name in _order(profile):
        facts = profile.granularities[name]
        asked = facts.requested_vocab_size
        if asked and facts.vocab_size < asked:
            notes.append(f"{name}: the BPE trainer ran out of merges at {facts.vocab_size:,} of the "
                         f"{asked:,} tokens asked for")
        rows = profile.table.filter(pl.col("granularity") == name).sort("offset")
        key = (tuple(rows["offset"].to_list()), tuple(rows["mi_bits"].to_list()))
        if key in seen:
            notes.append(f"{name} tokenizes this corpus exactly as {seen[key]} does: their profiles coincide")
        seen.setdefault(key, name)
        skipped = profile.skipped_offsets.get(name) or []
        if skipped:
            mean = facts.n_tokens / max(facts.n_docs, 1)
            notes.append(f"{name}: {len(skipped)} offsets from {min(skipped):,} on were not estimated (fewer "
                         f"than {MIN_PAIRS} pairs; documents average {mean:,.0f} tokens)")
    return notes


def _figure(name: str) -> str:
    """The profile figure with its caption."""
    return (
        f"![MI profile I(r) per granularity]({name})\n\n"
        "*I(r) in bits on log-log axes, one panel per granularity (the others in grey). Filled points "
        "are distinguishable from zero, hollow ones are not; bands are the confidence intervals; the dashed "
        "black line is the preferred decay model with its floor; triangles mark values at or below the axis "
        "floor.*"
    )


def _widths(analysis: Analysis, n: dict) -> str:
    """The kind of each granularity's kernel, W with interval, alpha and the floor."""
    rows = [[
        name + (" (model)" if name == n["settings"]["model_granularity"] else ""), g["kind"] or "(duplicate)",
        _ival(g["W"], g["W_interval"]), _fmt(g["xi"]), _ival(g["alpha"], g["alpha_interval"]),
        _ival(g["crossover"], g["crossover_interval"]), _fmt(g["floor_bits"]), _fmt(g["chi2_dof"]),
    ] for name, g in n["granularities"].items()]
    head = ["granularity", "kernel", "W, tokens (q90) [interval]", "ξ, tokens", "tail α [CI]", "r_x, tokens [CI]",
            "floor, bits", "χ²/dof"]
    text = (
        "Each profile is fitted by an exponential, a power law and their sum, each with a floor (weighted least "
        "squares on I); a richer model is chosen where its lower AICc is also beyond the profile's error (a "
        "parametric bootstrap of its χ² gain, p ≤ 0.05). The kernel is "
        "*composite* (a local part of width W on a power-law tail that takes over at r_x), *scale-free*, "
        "*characteristic* or *local* (a length of its own), *periodic* or *none*; χ²/dof says whether the model "
        "describes the data. Intervals: the fits repeated on each jackknife replicate."
    )
    reasons = "\n".join(f"- {w.granularity}: {w.reason}" for w in analysis.widths.values())
    return text + "\n\n" + _table(head, rows) + "\n\n" + reasons


def _selfsim(analysis: Analysis, n: dict) -> str:
    """The verdict and its reasons."""
    onset = (f" from r = {_fmt(n['onset_tokens'])} tokens of {n['settings']['model_granularity']}"
             if n["verdict"] == "self-similar" else "")
    return f"Verdict: **{n['verdict']}**{onset}.\n\n" + "\n".join(f"- {r}" for r in analysis.self_similarity.reasons)


def _recommendation(analysis: Analysis, n: dict) -> str:
    """The base with its bounds, the extension, the reasons, the other rules and the configs."""
    rec, st = analysis.recommendation, n["settings"]
    source = (f"set by the data: the larger of b_A (θ* = {n['theta_star']:.3g} rad/token inside the grid) and Men "
              "et al.'s bound for the data's reach" if n["rope_theta_bound"] == "data"
              else "the data do not constrain the base: Men et al.'s bound for L_train")
    lines = [f"- rope_theta = **{_fmt(n['rope_theta'])}** for head dimension {st['head_dim']} and L_train = "
             f"{st['train_length']}, read at {st['model_granularity']}: {source}"]
    if n["extension"]:
        e = n["extension"]
        betas = (f", beta_fast {_fmt(e['beta_fast'])}, beta_slow {_fmt(e['beta_slow'])}"
                 if e["beta_fast"] is not None else "")
        lines.append(f"- extension to {st['target_length']} tokens: {EXTENSION_NAMES.get(e['method'], e['method'])}, "
                     f"factor {e['factor']:g}{betas}")
    lines += [f"- {r}" for r in rec.reasons]
    rules = _table(["rule", "base", "θ* band", "bands slower"],
                   [[g.rule, _fmt(_clean(g.base)), str(g.theta_star_band), str(g.bands_slower)]
                    for g in (rec.recommended, *rec.alternatives)])
    snippet = json.dumps(_clean(rec.rope_parameters), indent=2)
    legacy = json.dumps(_clean(rec.legacy_config), indent=2)
    return ("\n".join(lines) + "\n\n" + rules + "\n\ntransformers ≥ 5 config:\n\n```json\n" + snippet
            + "\n```\n\ntransformers 4.x config:\n\n```json\n" + legacy + "\n```")


def _provenance(n: dict, command: str) -> str:
    """depstat, Python and tokenizers versions and the command that wrote the card."""
    rows = [["depstat", n["software"]["depstat"]], ["Python", n["software"]["python"]],
            ["tokenizers", n["software"]["tokenizers"]]]
    return _table(["software", "version"], rows) + "\n\nCommand:\n\n```bash\n" + command + "\n```"


def _numbers_block(numbers: dict) -> str:
    """The machine-readable block that ``card_numbers`` parses."""
    return (
        f"Machine-readable (`depstat.report.card.card_numbers`; floats to {DIGITS} significant digits, "
        "null where not finite or not available):\n\n"
        f"```{FENCE}\n{_compact_json(numbers)}\n```"
    )


def _compact_json(value: object, depth: int = 0) -> str:
    """JSON with one key per line and lists (of numbers) kept on one line."""
    if not isinstance(value, dict) or not value:
        return json.dumps(value, ensure_ascii=False)
    pad = " " * (depth + 1)
    items = [f"{pad}{json.dumps(k)}: {_compact_json(v, depth + 1)}" for k, v in value.items()]
    return "{\n" + ",\n".join(items) + "\n" + " " * depth + "}"


# ---------------------------------------------------------------- formats


def _order(profile: Profile) -> list[str]:
    """Granularities from the finest to the coarsest (tokenized input last)."""
    return sorted(profile.granularities, key=lambda k: profile.granularities[k].bytes_per_token or math.inf)


def _fmt(x: float | None) -> str:
    """A number for text: integers with separators, floats from 100 up whole, else 3 significant digits."""
    if x is None:
        return "–"
    if isinstance(x, int) and not isinstance(x, bool):
        return f"{x:,}"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def _ival(value: float | None, interval: list | None) -> str:
    """``value [low, high]``, or – when there is no value."""
    if value is None:
        return "–"
    lo, hi = interval or (None, None)
    return f"{_fmt(value)} [{_fmt(lo)}, {_fmt(hi)}]"


def _code(text: object) -> str:
    """Inline code (for paths and globs, whose * and _ Markdown would eat)."""
    return f"`{text}`"


def _table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table; pipes in cells escaped."""
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"
    return "\n".join([line(header), "|" + "---|" * len(header), *(line(r) for r in rows)])


def command_line(prog: str, argv: Sequence[str]) -> str:
    """The command as one shell line: ``prog`` and the arguments, quoted where needed."""
    return f"{prog} {shlex.join(argv)}".strip()
