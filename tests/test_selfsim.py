"""The self-similarity verdict as a range: onset, dilation check and the exponents beside it, on
profiles of known shape and on generated corpora of known kind."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import depstat
from depstat.analysis.dependency import Width, fitted, kernel_width
from depstat.analysis.known import noisy_curve
from depstat.analysis.result import Settings, analyze
from depstat.analysis.selfsim import (
    MARGIN,
    DilationCheck,
    dilation_check,
    dilation_test,
    self_similarity,
)
from depstat.errors import DepstatError
from depstat.estimate.profile import log_offsets
from depstat.synth import arithmetic_jsonl, markov_text, tree_text, write_jsonl

OFFSETS = log_offsets(2048).astype(float)
SHAPES = {
    "power law": lambda r: 0.8 * r**-0.6 + 0.01,
    "composite": lambda r: np.exp(-(r - 1) / 2.0) + 0.3 * r**-0.6 + 0.01,
    "broken": lambda r: np.where(r < 16, 2.0 * r**-1.2, 2.0 * 16**-1.2 * (r / 16) ** -0.6) + 0.01,
    "exponential": lambda r: np.exp(-(r - 1) / 20) + 0.01,
    "curving": lambda r: 0.5 * np.exp(-np.log(r) ** 2 / (2 * 1.5**2)) + 0.001,
}


def _verdict(kind: str, rel: float = 0.03, seed: int = 0):
    mi = SHAPES[kind](OFFSETS)
    f = fitted(noisy_curve(OFFSETS, mi, rel * mi + 0.002, "g", 1.0, seed=seed))
    return self_similarity({"g": f}, {"g": kernel_width(f)}, "g")


@pytest.mark.parametrize("seed", range(3))
def test_a_power_law_is_self_similar_from_the_first_offset(seed: int) -> None:
    ss = _verdict("power law", seed=seed)
    assert ss.verdict == "self-similar" and ss.onset_tokens == 1.0, ss.reasons
    assert abs(ss.dilation.change) <= MARGIN and ss.alpha == pytest.approx(0.6, abs=0.1)


@pytest.mark.parametrize("seed", range(3))
def test_a_composite_is_self_similar_beyond_its_crossover(seed: int) -> None:
    ss = _verdict("composite", seed=seed)
    assert ss.verdict == "self-similar", ss.reasons
    assert 5.44 / 2 <= ss.onset_tokens <= 5.44 * 2  # the true crossover, 5.44 tokens
    assert ss.onset_interval[0] <= ss.onset_tokens <= ss.onset_interval[1]


@pytest.mark.parametrize("seed", range(3))
def test_a_broken_power_law_is_self_similar_beyond_its_break(seed: int) -> None:
    """Slope 1.2 below 16 tokens and 0.6 beyond: the onset moves past the first offsets to within
    2x of the break, and the reasons say why it moved."""
    ss = _verdict("broken", rel=0.01, seed=seed)
    assert ss.verdict == "self-similar" and 8 <= ss.onset_tokens <= 32, ss.reasons
    assert "the onset moves" in ss.reasons[0]


def test_a_broken_power_law_keeps_its_onset_past_the_break_at_three_percent() -> None:
    """At 3 % error a first cell below the break can pass by chance; a later start within 8x
    that shows the change refutes it, so the onset lands within 2x of the break in most seeds.
    Seeds 6 and 7 do not: their composite bends through the break (r_x = 1), and the first
    check's change, though within the margin, has an interval of about +-0.6."""
    onsets = [_verdict("broken", rel=0.03, seed=seed) for seed in range(10)]
    assert all(ss.verdict == "self-similar" for ss in onsets)
    assert sum(8 <= ss.onset_tokens <= 32 for ss in onsets) >= 8, [ss.onset_tokens for ss in onsets]


def test_a_later_start_refutes_only_a_change_beyond_the_margin_shown_over_its_family() -> None:
    d = DilationCheck(10, 19, 500, 0.9, 0.5, 0.4, (0.3, 0.5), 0.06, (3, 10), 0.5)
    assert d.refutes(MARGIN, 1) and d.refutes(MARGIN, 10)  # 0.4 is 6.7 se from zero
    noisy = replace(d, se=0.16)  # 2.5 se: shown at one test (z 1.96), not over ten (z 2.81)
    assert noisy.refutes(MARGIN, 1) and not noisy.refutes(MARGIN, 10)
    assert not replace(d, change=0.2, se=0.01).refutes(MARGIN, 1)  # within the margin, however precise


@pytest.mark.parametrize("rel", (0.01, 0.1))
def test_an_exponential_has_a_length_of_its_own_or_a_tail_only_where_it_has_ended(rel: float) -> None:
    """xi = 20 on a floor: not self-similar, with a length of its own, in most seeds. The model
    test's 5 % false positives read a run of correlated noise on the floor as a slow tail (seeds 1
    and 3 here); their onset then lies beyond 4 xi, where the kernel has ended."""
    verdicts = [_verdict("exponential", rel=rel, seed=seed) for seed in range(8)]
    own = [ss for ss in verdicts if ss.verdict == "not self-similar" and "length of its own" in ss.reasons[0]]
    assert len(own) >= 6 and all(ss.onset_tokens is None for ss in own)
    assert all(ss.onset_tokens >= 4 * 20 for ss in verdicts if ss not in own), [ss.onset_tokens for ss in verdicts]


@pytest.mark.parametrize("seed", range(3))
def test_a_tail_that_keeps_curving_has_no_scale_free_range_near_its_start(seed: int) -> None:
    """A log-normal kernel (local slope ln r / 2.25, growing at every scale): from its first offsets
    the tail's exponent changes beyond the margin; at most a late window of MIN_SPAN passes."""
    ss = _verdict("curving", rel=0.01, seed=seed)
    assert ss.verdict != "self-similar" or ss.onset_tokens >= 20, ss.reasons
    first = dilation_check(fitted(noisy_curve(OFFSETS, SHAPES["curving"](OFFSETS), 0.01 * SHAPES["curving"](OFFSETS)
                                              + 0.002, "g", 1.0, seed=seed)), 1.0)
    assert first.shown_beyond(MARGIN) or not first.within(MARGIN)


def test_the_dilation_check_refits_the_floor_from_the_onset() -> None:
    """A power law on a floor: the tail's exponent from the onset is the law's, not bent by the floor."""
    mi = SHAPES["power law"](OFFSETS)
    f = fitted(noisy_curve(OFFSETS, mi, 0.01 * mi + 0.0005, "g", seed=4))
    d = dilation_check(f, 4.0)
    assert d.r_low == 4.0 and d.r_split < 8
    assert d.alpha_low == pytest.approx(0.6, abs=0.1) and d.alpha_high == pytest.approx(0.6, abs=0.1)
    assert d.bounds[0] <= d.change <= d.bounds[1] and d.chi2_dof < 2


def test_too_short_a_tail_is_inconclusive_with_what_would_decide() -> None:
    r = OFFSETS[OFFSETS <= 7]
    mi = 0.8 * r**-0.6
    f = fitted(noisy_curve(r, mi, 0.01 * mi, "g", seed=1))
    ss = self_similarity({"g": f}, {"g": kernel_width(f)}, "g")
    assert ss.verdict == "inconclusive" and "profile more tokens" in ss.reasons[0]


def test_other_granularities_exponents_are_shown_beside_with_their_spread() -> None:
    """Three granularities on one byte axis with exponents 0.5, 0.6, 0.7: the spread 0.2 with an
    interval that holds it, and the words-like one (not round-tripping) left out."""
    curves = {}
    for k, (name, alpha, bpt) in enumerate((("bytes", 0.5, 1.0), ("bpe", 0.6, 3.0), ("big", 0.7, 4.5),
                                            ("words", 1.5, 6.0))):
        mi = 0.8 * OFFSETS**-alpha + 0.005
        c = noisy_curve(OFFSETS, mi, 0.01 * mi + 0.0005, name, bpt, seed=k)
        curves[name] = c if name != "words" else type(c)(**{**c.__dict__, "round_trips": False})
    fits = {n: fitted(c) for n, c in curves.items()}
    widths = {n: kernel_width(f) for n, f in fits.items()}
    ss = self_similarity(fits, widths, "big")
    assert [e.granularity for e in ss.exponents] == ["bytes", "bpe", "big"]
    assert ss.exponent_spread == pytest.approx(0.2, abs=0.05)
    assert ss.exponent_spread_bounds[0] <= ss.exponent_spread <= ss.exponent_spread_bounds[1]
    assert ss.onset_bytes == pytest.approx(ss.onset_tokens * 4.5)


@pytest.fixture(scope="module")
def corpora(tmp_path_factory: pytest.TempPathFactory) -> dict[str, depstat.Profile]:
    """Markov text, arithmetic and tree text (a power law by construction) at three granularities."""
    d = tmp_path_factory.mktemp("kinds")
    arithmetic_jsonl(d / "arith.jsonl", 150, seed=1)
    write_jsonl(d / "markov.jsonl", markov_text(150, 4096, seed=1))
    write_jsonl(d / "tree.jsonl", tree_text(600, seed=1))
    return {name: depstat.profile(str(d / f"{name}.jsonl"), granularities=["bytes", "bpe-1k", "words"],
                                  max_offset=1024) for name in ("markov", "arith", "tree")}


@pytest.mark.parametrize("kind", ["markov", "arith"])
def test_markov_text_and_arithmetic_are_not_self_similar(corpora: dict, kind: str) -> None:
    a = analyze(corpora[kind], head_dim=64, train_length=1024, target_length=4096)
    assert a.self_similarity.verdict == "not self-similar", a.self_similarity.reasons
    assert a.recommendation.extension.method == "yarn"
    params = a.recommendation.rope_parameters["rope_parameters"]
    assert params["rope_type"] == "yarn" and params["original_max_position_embeddings"] == 1024


def test_tree_text_is_self_similar_from_its_first_tokens(corpora: dict) -> None:
    """Tree text's MI falls as a power law at every scale: at bytes, its own symbols, a tail from
    the first offset and YaRN keeping only the bands of the first s offsets; at bpe-1k, whose first
    offsets carry the tokenizer's structure (I(3) below I(4)), from within 8 tokens."""
    by_bytes = analyze(corpora["tree"], Settings(head_dim=64, train_length=1024, target_length=4096,
                                                 granularity="bytes"))
    ss = by_bytes.self_similarity
    assert ss.verdict == "self-similar" and ss.onset_tokens <= 4, ss.reasons
    ext = by_bytes.recommendation.extension  # no local part: only the first s = 4 offsets keep their bands
    assert ext.method == "yarn" and ext.beta_fast == pytest.approx(1024 / (2 * np.pi * 4))
    assert by_bytes.widths["bytes"].kind == "scale-free"
    assert by_bytes.widths["bytes"].alpha == pytest.approx(0.5, abs=0.1)
    ss = analyze(corpora["tree"], head_dim=64, train_length=1024, target_length=4096).self_similarity
    assert ss.granularity == "bpe-1k" and ss.verdict == "self-similar" and ss.onset_tokens <= 8, ss.reasons
    assert "words" not in [e.granularity for e in ss.exponents]  # words do not give back their text


def test_analysis_is_typed_frozen_and_leaves_the_profile_alone(corpora: dict) -> None:
    p = corpora["markov"]
    before = p.table.clone()
    a = analyze(p, head_dim=64, train_length=1024)
    assert p.table.equals(before)
    with pytest.raises(AttributeError):
        a.granularity = "bytes"  # type: ignore[misc]
    t = a.width_table
    assert isinstance(t, pl.DataFrame) and set(t["granularity"]) == set(a.widths)
    d = json.loads(json.dumps(a.to_dict(), default=str))
    assert d["recommendation"]["rope_theta"] > 0
    w = d["W"]["bytes"]
    assert {"kind", "xi", "alpha", "crossover", "chi2_dof", "xi_ci", "alpha_ci", "crossover_ci"} <= set(w)
    assert {"verdict", "onset_bytes", "onset_tokens", "exponent_spread",
            "exponent_spread_bounds"} <= set(d["self_similarity"])


def _given_width(W: float | None, low: float | None = None, high: float | None = None,
                 kind: str = "characteristic") -> Width:
    return Width("ids", kind, W, low, high, None, None, None, None, None, 100.0, None, "")


def test_dilation_test_tells_a_dilated_kernel_from_a_fixed_one() -> None:
    train = _given_width(10.0, 9.0, 11.0)
    dilated = dilation_test(train, _given_width(40.0, 36.0, 44.0), 4.0)
    assert dilated.verdict == "dilated" and dilated.share == pytest.approx(1.0)
    assert dilation_test(train, _given_width(10.5, 9.5, 11.5), 4.0).verdict == "fixed"
    assert dilation_test(train, _given_width(20.0, 8.0, 50.0), 4.0).verdict == "inconclusive"  # too wide to tell
    assert dilation_test(train, _given_width(None, kind="scale-free"), 4.0).verdict == "no length"
    with pytest.raises(DepstatError, match="longer than the training length"):
        dilation_test(train, train, 1.0)


@pytest.mark.slow
def test_compare_lengths_on_window_streams_of_known_kind(tmp_path: Path) -> None:
    """The window task at B and at 4B (a dilation) or at B again (fixed): PI for the first, YaRN for the second."""
    from depstat.analysis.result import compare_lengths
    from depstat.synth import window_stream

    def analysis(block: int, seed: int):
        tokens = window_stream(np.random.default_rng(seed), 60, 512, block)
        path = tmp_path / f"w{block}-{seed}.jsonl"
        path.write_text("".join(json.dumps({"input_ids": row.tolist()}) + "\n" for row in tokens))
        prof = depstat.profile(str(path), max_offset=128)
        return analyze(prof, Settings(head_dim=32, train_length=32, target_length=128, granularity="ids"))

    train = analysis(4, 0)
    method, test = compare_lengths(train, analysis(16, 1))
    assert (method, test.verdict) == ("pi", "dilated") and 0.7 < test.share < 1.3
    method, test = compare_lengths(train, analysis(4, 1))
    assert (method, test.verdict) == ("yarn", "fixed") and abs(test.share) < 0.3
