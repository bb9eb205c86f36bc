"""The RoPE base and the extension config: rules checked against their definitions, the config
against the frequencies transformers builds, and the command line that prints them."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from depstat.analysis.dependency import DecayFit, Width
from depstat.analysis.recommend import (
    MEN_FIT,
    base_for,
    critical_dimension,
    extended_frequencies,
    frequencies,
    liu_extension_base,
    men_lower_bound,
    recommend,
    three_digits_up,
    yarn_betas,
)
from depstat.analysis.selfsim import SelfSimilarity
from depstat.cli import main
from depstat.errors import DepstatError
from depstat.report.document import FIGURES
from depstat.synth import arithmetic_jsonl, markov_text, write_jsonl

COMPOSITE = DecayFit("composite", 1.0, 1.3, 0.3, 0.65, 0.01, 0.0, 28)


def _width(kind: str, W: float | None = None, crossover: float | None = None, fit: DecayFit = COMPOSITE) -> Width:
    lo_hi = (0.9 * W, 1.1 * W) if W else (None, None)
    return Width("g", kind, W, *lo_hi, 0.65, (0.6, 0.7), 0.01, (0.0, 0.02), fit.model, 2048.0, 4.0, "test",
                 {fit.model: fit}, crossover=crossover)


def _similarity(verdict: str, onset: float | None = None) -> SelfSimilarity:
    return SelfSimilarity(verdict, ("test",), "g", 0.25, onset_tokens=onset)


def test_base_puts_the_slowest_band_margin_below_theta_star() -> None:
    theta_star = math.pi / 300
    b = base_for(theta_star, 64, 2.0)
    assert frequencies(b, 64)[-1] == pytest.approx(theta_star / 2.0, rel=1e-12)


def test_men_bound_is_the_smallest_base_keeping_the_cosine_sum_nonnegative() -> None:
    r = np.arange(1, 2049)
    bound = men_lower_bound(128, 2048)

    def min_sum(base: float) -> float:
        return float(sum(np.cos(r * t) for t in frequencies(base, 128)).min())

    assert min_sum(bound) >= 0 > min_sum(0.97 * bound)
    # Men et al.'s published fit lies within a factor of two of the strict computation
    assert 0.5 <= MEN_FIT[0] * 2048 ** MEN_FIT[1] / bound <= 2


def test_liu_rules_match_their_published_example() -> None:
    assert critical_dimension(10_000.0, 128, 4096) == 92  # LLaMA 2 (Liu et al. 2023)
    assert liu_extension_base(10_000.0, 4096, 4096) == pytest.approx(10_000.0)
    assert liu_extension_base(10_000.0, 4096, 16384) > 10_000.0


def test_a_characteristic_length_sets_the_base_and_others_leave_it_to_men() -> None:
    """W = 30 tokens: the larger of b_A and Men et al.'s bound for 2 W, far below the bound for
    L_train; a composite or scale-free kernel: Men et al.'s bound for L_train, said as such."""
    own = recommend(_width("characteristic", 30.0, fit=DecayFit("exponential", 1, 13.0, 0, 0, 0.01, 0, 28)),
                    _similarity("not self-similar"), 128, 2048)
    assert own.bound == "data" and own.rope_theta == three_digits_up(max(own.base_from_data, men_lower_bound(128, 60)))
    assert own.rope_theta < own.base_men and "your data set the base" in own.reasons[2]
    assert own.rope_theta_interval[0] <= own.rope_theta <= own.rope_theta_interval[1]
    for kind in ("composite", "scale-free", "periodic", "none"):
        rec = recommend(_width(kind, 3.0 if kind == "composite" else None, 3.8), _similarity("inconclusive"), 128, 2048)
        assert rec.bound == "Men et al." and rec.rope_theta == three_digits_up(rec.base_men)
        assert rec.base_men == men_lower_bound(128, 2048)
        assert "your data do not constrain the base" in rec.reasons[-1]


def test_betas_follow_the_local_reach_and_the_profile_reach() -> None:
    """beta_fast = L / (2 pi r_local): the onset, W or the crossover, at least s; beta_slow = L / (2 r_reach),
    at most beta_fast / 2. The extension is YaRN from one corpus, PI only where data dilate."""
    cases = [
        (_width("composite", 3.0, 3.8), _similarity("self-similar", 3.8), 4.0),  # the onset is within s
        (_width("composite", 3.0, 3.8), _similarity("self-similar", 12.0), 12.0),  # an onset moved past a break
        (_width("characteristic", 30.0, fit=DecayFit("exponential", 1, 13.0, 0, 0, 0.01, 0, 28)),
         _similarity("not self-similar"), 30.0),
        (_width("composite", 3.0, 9.0), _similarity("inconclusive"), 9.0),  # the crossover
    ]
    for width, similarity, local in cases:
        fast, slow, why = yarn_betas(width, similarity, 2048, 4.0)
        assert fast == pytest.approx(2048 / (2 * math.pi * local)) and slow == pytest.approx(min(0.5, fast / 2)), why
        ext = recommend(width, similarity, 128, 2048, 8192).extension
        assert ext.method == "yarn" and (ext.beta_fast, ext.beta_slow) == (fast, slow)
    periodic = Width("g", "periodic", None, None, None, None, None, 0.0, None, "composite", 1600.0, 4.0, "t",
                     {"composite": COMPOSITE}, period=7)
    fast, slow, _ = yarn_betas(periodic, _similarity("not self-similar"), 2048, 4.0)
    assert fast == pytest.approx(2048 / (2 * math.pi * 1600)) and slow == pytest.approx(fast / 2)  # every measured band kept
    rec = recommend(cases[0][0], cases[0][1], 128, 2048, 8192)
    turns = 2048 * frequencies(rec.rope_theta, 128) / (2 * math.pi)
    assert rec.extension.bands_kept == int((turns > 2048 / (8 * math.pi)).sum()) >= 1
    assert rec.rope_parameters["rope_parameters"]["beta_fast"] == pytest.approx(2048 / (8 * math.pi))


WIDTHS = st.one_of(
    st.builds(lambda w: ("characteristic", w), st.floats(1.0, 5000.0)),
    st.just(("scale-free", None)), st.just(("none", None)), st.just(("composite", 3.0)),
)


@settings(max_examples=40, deadline=None)
@given(WIDTHS, st.sampled_from([32, 64, 128]), st.sampled_from([256, 1024, 2048, 4096]),
       st.sampled_from(["self-similar", "not self-similar", "inconclusive"]), st.floats(1.0, 30.0))
def test_the_base_is_never_below_a_men_bound_and_betas_stay_ordered(width: tuple, head_dim: int, train: int,
                                                                    verdict: str, onset: float) -> None:
    kind, w = width
    fit = COMPOSITE if kind != "characteristic" else DecayFit("exponential", 1, (w or 1) / 2.3, 0, 0, 0.01, 0, 28)
    rec = recommend(_width(kind, w, onset if kind == "composite" else None, fit),
                    _similarity(verdict, onset if verdict == "self-similar" else None), head_dim, train, 4 * train)
    reach = train if rec.bound == "Men et al." else math.ceil(2 * w)
    assert rec.rope_theta >= men_lower_bound(head_dim, reach) * (1 - 1e-12)
    assert rec.rope_parameters["rope_parameters"]["rope_theta"] == rec.rope_theta == rec.legacy_config["rope_theta"]
    if rec.extension.method == "yarn":
        assert 0 < rec.extension.beta_slow < rec.extension.beta_fast


def test_the_config_builds_the_frequencies_transformers_would() -> None:
    transformers = pytest.importorskip("transformers")
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    for similarity in (_similarity("self-similar", 3.8), _similarity("not self-similar")):
        rec = recommend(_width("composite", 3.0, 3.8), similarity, 64, 2048, 8192)
        if int(transformers.__version__.split(".")[0]) >= 5:
            config = transformers.LlamaConfig(hidden_size=1024, num_attention_heads=16, head_dim=64,
                                              **rec.rope_parameters)
        else:
            config = transformers.LlamaConfig(hidden_size=1024, num_attention_heads=16, head_dim=64,
                                              **rec.legacy_config)
        kind = rec.rope_parameters["rope_parameters"]["rope_type"]
        inv_freq, attention = ROPE_INIT_FUNCTIONS[kind](config, None)
        ours, got = frequencies(rec.rope_theta, 64), inv_freq.numpy()
        turns = 2048 * ours / (2 * math.pi)
        kept, slow = turns > rec.extension.beta_fast, turns < rec.extension.beta_slow
        np.testing.assert_allclose(got[kept], ours[kept], rtol=1e-5)
        np.testing.assert_allclose(got[slow], ours[slow] / 4, rtol=1e-5)
        np.testing.assert_allclose(got, extended_frequencies(rec.rope_theta, 64, rec.extension, 2048), rtol=1e-5)
        assert attention == pytest.approx(rec.extension.attention_factor)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--head-dim", "63"], "even"),
        (["--target-length", "100", "--train-length", "512"], "shorter than the training length"),
        (["--margin", "0"], "margin must be at least 1"),
        (["--similarity-margin", "0"], "--similarity-margin must be positive"),
    ],
)
def test_bad_advice_parameters_get_one_line_before_any_work(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                            args: list[str], message: str) -> None:
    path = write_jsonl(tmp_path / "m.jsonl", markov_text(4, 300, seed=2))
    assert main(["profile", str(path), "-g", "bytes", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and "Traceback" not in err[0]


def test_bad_settings_in_the_api() -> None:
    with pytest.raises(DepstatError, match="even"):
        recommend(_width("composite", 3.0, 3.8), _similarity("inconclusive"), 63, 2048)


def test_short_documents_still_get_a_verdict_and_advice(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Documents of 60-600 bytes, default options: the advice works from what is measured."""
    path = arithmetic_jsonl(tmp_path / "short.jsonl", 400, seed=2, doc_chars=60)
    assert max(len(json.loads(line)["text"]) for line in path.read_text().splitlines()) < 700
    out = tmp_path / "out"
    assert main(["profile", str(path), "-g", "bytes", "-g", "bpe-1k", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["self_similarity"]["verdict"] in ("self-similar", "not self-similar", "inconclusive")
    rec = summary["recommendation"]
    assert rec["rope_theta"] > 0 and any("documents are shorter" in r for r in rec["reasons"])
    capsys.readouterr()
    assert main(["recommend", str(out), "--train-length", "8192", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["train_length"] == 8192


def test_cli_profile_writes_analysis_and_commands_reuse_it(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = write_jsonl(tmp_path / "m.jsonl", markov_text(60, 3000, seed=2))
    out = tmp_path / "out"
    rc = main(["profile", str(path), "-g", "bytes", "-g", "bpe-512", "--max-offset", "512",
               "--head-dim", "64", "--train-length", "512", "--target-length", "2048", "--out", str(out), "--report"])
    assert rc == 0
    assert (out / "report.html").read_text().count("data:image/png;base64,") == len(FIGURES)
    assert (out / "report.md").is_file() and (out / "figures" / "kernel.png").is_file()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["self_similarity"]["verdict"] == "not self-similar"
    assert summary["recommendation"]["rope_parameters"]["rope_parameters"]["rope_type"] == "yarn"
    assert summary["W"]["bytes"]["kind"] in ("characteristic", "local")
    capsys.readouterr()
    assert main(["recommend", str(out), "--head-dim", "64", "--train-length", "512", "--target-length", "2048",
                 "--format", "json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["rope_theta"] == pytest.approx(summary["recommendation"]["rope_theta"])
    assert main(["selfsim", str(out)]) == 0
    assert "not self-similar" in capsys.readouterr().out
    assert main(["recommend", str(out), "--head-dim", "63"]) == 2
    assert "even" in capsys.readouterr().err


@given(st.floats(1e-3, 1e12))
def test_three_digits_up_never_undercuts_and_keeps_three_digits(base: float) -> None:
    up = three_digits_up(base)
    assert base * (1 - 1e-9) <= up <= base * 1.01 + 1e-12
    assert float(f"{up:.3g}") == pytest.approx(up, rel=1e-12)


def test_extended_frequencies_keep_the_fast_bands_and_divide_the_slow_ones() -> None:
    """Without transformers (CI): PI divides every band by s; YaRN keeps the bands with more than beta_fast
    turns within L_train, divides those with fewer than beta_slow by s, and moves monotonically between."""
    rec = recommend(_width("composite", 3.0, 3.8), _similarity("self-similar", 3.8), 64, 2048, 8192)
    ext, theta = rec.extension, frequencies(rec.rope_theta, 64)
    got = extended_frequencies(rec.rope_theta, 64, ext, 2048)
    turns = 2048 * theta / (2 * math.pi)
    kept, slow = turns > ext.beta_fast, turns < ext.beta_slow
    assert ext.method == "yarn" and kept.any() and slow.any()
    np.testing.assert_allclose(got[kept], theta[kept], rtol=1e-12)
    np.testing.assert_allclose(got[slow], theta[slow] / 4, rtol=1e-12)
    ratio = got / theta
    assert np.all(np.diff(ratio) <= 1e-12) and np.all((ratio >= 0.25 - 1e-12) & (ratio <= 1 + 1e-12))
    pi = dataclasses.replace(ext, method="pi")
    np.testing.assert_allclose(extended_frequencies(rec.rope_theta, 64, pi, 2048), theta / 4, rtol=1e-12)
