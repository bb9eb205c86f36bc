"""The HTML and Markdown report of an analysed profile: contents, figures, self-containment."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import depstat
from depstat.cli import main
from depstat.report.console import base_text
from depstat.report.document import (
    FIGURE_TEXT,
    FIGURES,
    Items,
    Para,
    Table,
    _html_document,
    build_report,
)
from tests.conftest import Analysed


@pytest.fixture(scope="module")
def paths(analysed: Analysed, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return build_report(*analysed, tmp_path_factory.mktemp("report"))


def test_html_states_verdict_base_and_config(analysed: Analysed, paths: dict[str, Path]) -> None:
    page = paths["html"].read_text(encoding="utf-8")
    rec = analysed.analysis.recommendation
    assert f"Verdict: {analysed.analysis.self_similarity.verdict}." in page
    assert f"rope_theta = {base_text(rec.rope_theta)}" in page
    assert json.dumps(rec.rope_theta) in page  # the value, in the config blocks
    assert "Men et al." in page and "Llama 3 8B" in page  # the other rules side by side
    assert "bpe-512" in page and analysed.profile.estimator in page and depstat.__version__ in page


def test_html_embeds_every_figure_and_loads_nothing_external(paths: dict[str, Path]) -> None:
    page = paths["html"].read_text(encoding="utf-8")
    assert page.count("data:image/png;base64,") == len(FIGURES) == 7
    assert "http://" not in page and "https://" not in page
    assert not re.search(r"""(src|href)\s*=\s*["'](?!data:)""", page)


def test_markdown_references_figure_files_that_exist(paths: dict[str, Path]) -> None:
    text = paths["markdown"].read_text(encoding="utf-8")
    refs = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert len(refs) == len(FIGURES)
    for ref in refs:
        assert not Path(ref).is_absolute()
        figure = paths["markdown"].parent / ref
        assert figure.is_file() and figure.read_bytes().startswith(b"\x89PNG")
    assert "```json" in text


def test_text_is_escaped_in_html() -> None:
    hostile = "<script>alert(1)</script>"
    page = _html_document(hostile, [(hostile, [Para(hostile), Items([hostile]), Table([hostile], [[hostile]])])], {})
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_options_of_a_new_profile_are_refused_on_a_saved_one(analysed: Analysed, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture) -> None:
    saved = analysed.profile.save(tmp_path / "p")
    assert main(["recommend", str(saved), "--max-offset", "10", "-g", "bytes"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (f"depstat: error: {saved}: --granularity, --max-offset do not apply to a saved profile, "
                           "which is analysed as it was profiled (drop them, or profile the corpus again with them)")
    assert main(["recommend", str(saved), "--head-dim", "64", "--train-length", "256"]) == 0
    out = capsys.readouterr().out
    assert "head_dim 64, L_train 256" in out and "note:" not in out
    assert main(["recommend", str(saved), "--head-dim", "64"]) == 0
    out = capsys.readouterr().out
    assert "note: L_train 2048 is depstat's default, not your model's: set --train-length" in out
    assert '"rope_theta": ' + f"{float(out.split('rope_theta ')[1].split()[0].replace(',', '')):.1f}" in out


def test_profile_and_analysis_show_themselves_in_a_notebook(analysed: Analysed) -> None:
    """A short repr, an HTML repr with the summary table and the main figure, and ``plot()``."""
    profile, analysis = analysed
    assert repr(profile).startswith("Profile(") and "bpe-512 (" in repr(profile) and len(repr(profile)) < 300
    assert repr(analysis).startswith("Analysis(bpe-512: ") and "head_dim 64, L_train 256" in repr(analysis)
    for obj in (profile, analysis):
        page = obj._repr_html_()
        assert page.count("<img src=\"data:image/png;base64,") == 1 and "<table" in page
    ax = profile.plot().axes[0]
    assert ax.get_legend_handles_labels()[1] == ["bytes", "bpe-512"]
    t = profile.table.filter(pl.col("granularity") == "bytes").sort("offset")
    np.testing.assert_allclose(ax.lines[0].get_ydata(), np.maximum(t["mi_bits"].to_numpy(), 1e-4))  # the profile drawn
    w, curve = analysis.widths[analysis.granularity], analysis.curves[analysis.granularity]
    points = analysis.plot().axes[0].lines[0]  # the fitted offsets above the floor, from the analysis alone
    above = curve.mi - w.floor
    keep = (above > 0) & (curve.offsets <= w.r_max)
    np.testing.assert_allclose(points.get_xdata(), curve.offsets[keep])
    np.testing.assert_allclose(points.get_ydata(), above[keep])
    assert len(analysis.plot(profile).axes[0].lines) >= len(analysis.plot().axes[0].lines)


def test_the_report_of_a_saved_profile_holds_every_figure(analysed: Analysed, tmp_path: Path) -> None:
    saved = analysed.profile.save(tmp_path / "p")
    assert main(["report", str(saved), "--out", str(tmp_path / "r"), "--head-dim", "64", "--train-length", "256",
                 "--target-length", "1024"]) == 0
    page = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    assert page.count("data:image/png;base64,") == len(FIGURES)
    for name in FIGURES:
        assert (tmp_path / "r" / "figures" / f"{name}.png").stat().st_size > 1000, name
        assert html.escape(FIGURE_TEXT[name][1]) in page, name  # each figure with its caption saying what to read
