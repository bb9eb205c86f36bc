"""The console report: a profile's facts and table, the kernels, the verdict and the advice, as text."""

from __future__ import annotations

import json

import polars as pl

from depstat.analysis.recommend import Recommendation, three_digits_up
from depstat.analysis.result import Analysis
from depstat.estimate.profile import FEW_DOCS_SHARE, Profile
from depstat.groups import Groups


def render_groups(groups: Groups) -> str:
    """The table across groups."""
    table = groups.table.with_columns(pl.col(pl.Float64).round(3))
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True,
                   fmt_str_lengths=60, tbl_width_chars=250):
        return f"groups by {groups.field!r} (each on its share of the sample):\n{table}"


def _vocabulary(facts: dict) -> str:
    """A granularity's vocabulary, with the size asked for where the BPE trainer ran out of merges short of it."""
    asked, same = facts.get("requested_vocab_size"), facts.get("same_tokens_as")
    notes = ([f"of {asked} asked: no more merges"] if asked and facts["vocab_size"] < asked else []) + (
        [f"the tokens of {same}: counted once"] if same else [])
    return f"{facts['vocab_size']} ({'; '.join(notes)})" if notes else str(facts["vocab_size"])


def render(result: Profile) -> str:
    """The console report: per-granularity facts, then the profile table."""
    summary = result.summary()
    c = summary["corpus"]
    field = f"; token ids from field {c['ids_field']!r}" if c.get("ids_field") else ""
    lines = [f"corpus: {c.get('spec')}  ({summary['sampling']['rule']}{field})"]
    if c.get("skipped_bad_records"):
        lines.append(f"skipped bad records: {c['skipped_bad_records']} {c['skipped_reasons']}")
    if c.get("skipped_files"):
        files = c["skipped_files"]
        listed = ", ".join(files[:5]) + (f" and {len(files) - 5} more (all in summary.json)" if len(files) > 5 else "")
        lines.append(f"skipped {len(files)} file{'s' if len(files) > 1 else ''} of no supported extension: {listed}")
    lines.append(f"estimator: {result.estimator}; {int(result.confidence * 100)}% jackknife intervals")
    lines.append("")
    facts = pl.DataFrame([
        {
            "granularity": k, "vocab": _vocabulary(g), "tokens": g["n_tokens"], "docs": g["n_docs"],
            "bytes/token": round(g["bytes_per_token"], 3) if g.get("bytes_per_token") else None,
            "zero from r=": g["first_offset_indistinguishable_from_zero"],
        }
        for k, g in summary["granularities"].items()
    ])
    wide = (
        result.table.with_columns(
            pl.format("{} [{}, {}]", *(pl.col(c).round(4) for c in ("mi_bits", "ci_low", "ci_high")))
            .alias("cell")
        )
        .pivot(on="granularity", index="offset", values="cell")
        .sort("offset")
    )
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True, fmt_str_lengths=80, tbl_width_chars=250):
        lines.append(str(facts))
        lines.append("")
        lines.append("I(r) in bits, point [interval low, high]:")
        lines.append(str(wide))
    for name, offsets in result.skipped_offsets.items():
        if offsets:
            lines.append(f"{name}: offsets {offsets} skipped (fewer than 64 pairs)")
    starts = [f"{name} {g['pair_list_null_from']}" for name, g in summary["granularities"].items()
              if g.get("pair_list_null_from") is not None]
    if starts:
        lines.append("where documents end (over 1% of the positions without a partner) the rotation null rotates the "
                     f"list of pairs, one draw, from offset: {', '.join(starts)} (docs/estimators.md)")
    for name, g in summary["granularities"].items():
        if g["few_documents_from_offset"] is not None:
            lines.append(
                f"{name}: offsets from {g['few_documents_from_offset']} rest on fewer than {FEW_DOCS_SHARE:.0%} of the "
                f"{g['n_docs']} documents ({g['documents_at_largest_offset']} at the largest): a change of population "
                "as well as of distance; --population fixed keeps only documents longer than the largest offset"
            )
    return "\n".join(lines)


def _num(x: float | None, fmt: str = ".1f") -> str:
    """A number for a table cell; blank for None and NaN."""
    return "" if x is None or x != x else format(x, fmt)


def _ci(x: float | None, ci: tuple[float, float] | None, fmt: str) -> str:
    """A value with its interval, blank for None."""
    return f"{_num(x, fmt)} [{_num(ci[0], fmt)}, {_num(ci[1], fmt)}]" if x is not None and ci else _num(x, fmt)


def render_widths(analysis: Analysis) -> str:
    """One line per granularity: the kind of its kernel, its lengths and exponent, the floor, the fit."""
    rows = [{
        "granularity": w.granularity, "kind": w.kind + (f" {w.period}" if w.period else ""),
        "W (tokens)": _ci(w.W, (w.ci_low, w.ci_high) if w.W is not None else None, ".1f"),
        "xi": _ci(w.xi, w.xi_ci, ".2f"), "alpha": _ci(w.alpha, w.alpha_ci, ".2f"),
        "r_x": _ci(w.crossover, w.crossover_ci, ".1f"), "floor (bits)": _num(w.floor, ".4f"),
        "chi2/dof": _num(w.chi2_dof, ".2f"), "r_max": f"{w.r_max:.0f}",
    } for w in analysis.widths.values()]
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True,
                   fmt_str_lengths=40, tbl_width_chars=200):
        table = str(pl.DataFrame(rows))
    notes = [f"  - {w.granularity}: the {w.preferred_model} model does not describe the data (chi2/dof "
             f"{w.chi2_dof:.1f} > 2)" for w in analysis.widths.values() if w.chi2_dof is not None and not w.fits_data]
    return ("dependency kernels (I = A e^(-(r-1)/xi) + B r^-alpha + floor, the parts the data show; W = q90 of the "
            "local part; r_x = where the tail takes over):\n" + table + "".join("\n" + n for n in notes))


def render_selfsim(analysis: Analysis) -> str:
    """Widths, then the verdict with its range and reasons."""
    ss = analysis.self_similarity
    where = (f" from r = {ss.onset_tokens:.1f} {ss.granularity} tokens" + (f" ({ss.onset_bytes:.0f} bytes)"
             if ss.onset_bytes is not None else "") + f" to {ss.r_max:.0f}") if ss.verdict == "self-similar" else ""
    lines = [render_widths(analysis), f"self-similarity: {ss.verdict}{where}"]
    lines += [f"  - {r}" for r in ss.reasons]
    return "\n".join(lines)


OPTION_OF = {"head_dim": "--head-dim", "train_length": "--train-length"}


def base_text(base: float) -> str:
    """A RoPE base as given when it is a whole number, else rounded up to 3 significant digits (as the
    recommendation is): 2,048, 15,400, 1e+06."""
    rounded = base if float(base).is_integer() else three_digits_up(base)
    return f"{rounded:,.0f}" if rounded < 1e6 else f"{rounded:.3g}"


def base_headline(rec: Recommendation) -> str:
    """The advice's first line: the base the data set, or that they set none and whose bound stands in."""
    setting = f"head_dim {rec.head_dim}, L_train {rec.train_length}, read at {rec.granularity}"
    if rec.bound == "data":
        return f"rope_theta set by your data: {base_text(rec.rope_theta)} ({setting})"
    return (f"your data do not constrain the base: Men et al.'s bound for L_train, rope_theta "
            f"{base_text(rec.rope_theta)} ({setting})")


def render_recommendation(analysis: Analysis) -> str:
    """The recommendation in words, the other rules side by side, and the config to paste."""
    rec = analysis.recommendation
    lines = [f"note: {uninformed}" for uninformed in [analysis.uninformed] if uninformed]
    lines.append(base_headline(rec))
    lines += [f"  - {r}" for r in rec.reasons]
    lines.append(f"  {'rule':<34} {'base':>10} {'theta* band':>12} {'bands slower':>13}")
    for g in (rec.recommended, *rec.alternatives):
        lines.append(f"  {g.rule:<34} {base_text(g.base):>10} {g.theta_star_band:>12} {g.bands_slower:>13}")
    lines.append("  theta*: the frequency matched to the kernel; theta* band: the band nearest it on a base's grid "
                 "(0 the fastest); bands slower: how many turn slower;")
    lines.append("  b_A: the base whose slowest band is --margin below theta*. Paper A: how training data shape RoPE "
                 "frequency usage; paper B: LeRoPE (docs/analysis.md's glossary)")
    defaults = analysis.settings.defaults
    if defaults:
        values = {"head_dim": f"head_dim {rec.head_dim}", "train_length": f"L_train {rec.train_length}"}
        lines.append(f"note: {' and '.join(values[n] for n in defaults)} {'are' if len(defaults) > 1 else 'is'} "
                     f"depstat's default{'s' * (len(defaults) > 1)}, not your model's: set "
                     f"{' and '.join(OPTION_OF[n] for n in defaults)}")
    lines.append("transformers >= 5 config:")
    lines.append(json.dumps(rec.rope_parameters, indent=2))
    lines.append("transformers 4.x config:")
    lines.append(json.dumps(rec.legacy_config, indent=2))
    return "\n".join(lines)


def render_analysis(analysis: Analysis) -> str:
    """Self-similarity and recommendation sections of the console report."""
    return render_selfsim(analysis) + "\n\n" + render_recommendation(analysis)
