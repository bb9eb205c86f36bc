"""The dependency kernel: three nested decay models, the kind they show, and their intervals,
on sources whose kernel is known exactly or by construction."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import depstat
from depstat.analysis.dependency import (
    curve,
    fit_decay,
    fits_of,
    fitted,
    kernel_width,
    peaks,
    period,
    power_width,
)
from depstat.analysis.known import exact_curve, noisy_curve
from depstat.analysis.result import analyze
from depstat.estimate.profile import log_offsets, mi_profile
from depstat.synth import (
    block_exact_mi,
    block_sequences,
    markov_text,
    reference_chain,
    text_chain,
    topic_chain,
    write_jsonl,
)

GRID = np.unique(np.round(np.logspace(0, np.log10(2048), 32)).astype(int)).astype(float)
OFFSETS = log_offsets(2048).astype(float)
BLOCKS = [4, 16, 64, 256]


def _width(offsets: np.ndarray, mi: np.ndarray):
    return kernel_width(fitted(exact_curve(offsets, mi)))


def _composite(r: np.ndarray, xi: float = 2.0, alpha: float = 0.6, floor: float = 0.01) -> np.ndarray:
    return np.exp(-(r - 1) / xi) + 0.3 * r**-alpha + floor


def test_exact_block_kernels_have_a_width_proportional_to_the_block() -> None:
    widths = [_width(GRID, block_exact_mi(b, GRID, vocab=64, states=8)) for b in BLOCKS]
    assert all(w.kind in ("characteristic", "local") for w in widths), widths
    ratios = [b.W / a.W for a, b in zip(widths, widths[1:])]
    assert all(3 <= q <= 5.3 for q in ratios), ratios


def test_exact_exponential_power_law_and_composite_are_told_apart() -> None:
    """Each model recovers its own source exactly, with its parameters and floor, and chi2 ~ 0."""
    expo = _width(GRID, np.exp(-(GRID - 1) / 12.0) + 0.002)
    assert expo.kind == "characteristic" and expo.preferred_model == "exponential"
    assert expo.W == pytest.approx(12.0 * math.log(10), rel=0.02) and expo.floor == pytest.approx(0.002, rel=0.05)
    power = _width(GRID, 0.5 * GRID**-0.6 + 0.01)
    assert power.kind == "scale-free" and power.W is None and power.crossover == 1.0
    assert power.alpha == pytest.approx(0.6, abs=0.01) and power.floor == pytest.approx(0.01, rel=0.02)
    comp = _width(GRID, _composite(GRID))
    assert comp.kind == "composite" and comp.xi == pytest.approx(2.0, rel=0.02)
    assert comp.alpha == pytest.approx(0.6, abs=0.01) and comp.floor == pytest.approx(0.01, rel=0.05)
    truth = fit_decay(GRID, _composite(GRID), np.zeros(GRID.size), "composite").crossover()
    assert comp.crossover == pytest.approx(truth, rel=0.02) and 4 < truth < 7
    assert all(w.chi2_dof < 1e-3 for w in (expo, power, comp))
    local = _width(GRID, GRID ** -3.0)
    assert local.kind == "local" and local.W <= 8


def test_a_composite_is_never_worse_than_the_models_it_nests() -> None:
    rng = np.random.default_rng(0)
    for _ in range(5):
        y = 0.5 * GRID ** -rng.uniform(0.2, 1.5) + rng.uniform(0, 0.02) + rng.normal(0, 0.002, GRID.size)
        fits = fits_of(GRID, y, np.full(GRID.size, 0.002))
        assert fits["composite"].chi2 <= min(fits["power"].chi2, fits["exponential"].chi2) + 1e-9


@pytest.mark.parametrize("seed", range(3))
def test_composite_parameters_have_intervals_that_cover_them(seed: int) -> None:
    """3 % error, correlated across offsets: xi, alpha and the crossover inside their intervals."""
    mi = _composite(OFFSETS)
    w = kernel_width(fitted(noisy_curve(OFFSETS, mi, 0.03 * mi + 0.002, "g", seed=500 + seed)))
    truth = fit_decay(OFFSETS, mi, np.zeros(mi.size), "composite")
    assert w.kind == "composite" and w.fits_data, w.reason
    assert w.xi_ci[0] <= 2.0 <= w.xi_ci[1] and w.alpha_ci[0] <= 0.6 <= w.alpha_ci[1]
    assert truth.crossover() / 2 <= w.crossover <= 2 * truth.crossover()


def test_a_composite_at_ten_percent_error_is_still_told_from_a_power_law() -> None:
    """The bootstrap test keeps its power where a gain's jackknife bound widens with the gain: at
    10 % error the local part is shown in most seeds, and xi's interval covers the truth there."""
    mi = _composite(OFFSETS)
    widths = [kernel_width(fitted(noisy_curve(OFFSETS, mi, 0.1 * mi + 0.002, "g", seed=510 + s))) for s in range(6)]
    shown = [w for w in widths if w.kind == "composite"]
    assert len(shown) >= 5, [w.kind for w in widths]
    assert sum(w.xi_ci[0] <= 2.0 <= w.xi_ci[1] for w in shown) >= len(shown) - 1
    tests = [e for w in shown for e in w.evidence if e.richer == "composite"]
    assert all(e.draws == 59 and e.p_value <= 0.05 for e in tests)  # shown: at most 2 draws' gains reached the data's


def test_a_richer_model_needs_its_gain_beyond_error() -> None:
    """A power law with 10 % error: the composite's chi2 is lower, but its bootstrap test does not
    show the gain, so the kernel stays scale-free."""
    mi = 0.8 * OFFSETS**-0.6 + 0.01
    f = fitted(noisy_curve(OFFSETS, mi, 0.1 * mi + 0.002, "g", seed=3))
    assert f.fits["composite"].chi2 <= f.fits["power"].chi2
    e = f.evidence("composite", "power")
    assert f.model == "power" and not e.shown
    w = kernel_width(f)
    assert w.kind == "scale-free" and any(e.richer == "composite" for e in w.evidence)


def test_an_estimate_below_zero_beyond_its_errors_is_left_out() -> None:
    """MI is never negative: an offset whose estimate lies below zero by more than twice its error
    and bias bound is the estimator failing, not a measurement; one within its errors is kept."""
    table, _ = mi_profile(block_sequences(40, 512, 8, vocab=16, states=4, seed=1), log_offsets(64))
    last = table["offset"].max()
    broken = table.with_columns(
        mi_bits=pl.when(pl.col("offset") == last).then(-1.0).otherwise(pl.col("mi_bits")),
        se=pl.when(pl.col("offset") == last).then(0.05).otherwise(pl.col("se")),
        bias_bound=pl.when(pl.col("offset") == last).then(0.2).otherwise(pl.col("bias_bound")),
    )
    name = table["granularity"][0]
    assert curve(table, name).offsets.max() == last
    assert curve(broken, name).offsets.max() < last
    within = broken.with_columns(mi_bits=pl.when(pl.col("offset") == last).then(-0.3).otherwise(pl.col("mi_bits")))
    assert curve(within, name).offsets.max() == last


def test_no_dependence_is_said_plainly() -> None:
    w = kernel_width(fitted(exact_curve(GRID, np.zeros(GRID.size))))
    assert w.kind == "none" and w.W is None and "distinguishable from zero" in w.reason


def test_peaks_at_multiples_of_a_period_make_a_periodic_kernel() -> None:
    """A decay with bumps at every 7th offset is periodic with period 7; the same decay without
    them has no peak at all."""
    r = np.arange(1, 64, dtype=float)
    smooth = 0.5 * r**-0.5 + 0.02
    bumped = smooth + 0.1 * (r % 7 == 0)
    assert peaks(noisy_curve(r, smooth, 0.01 * smooth, seed=1)) == []
    c = noisy_curve(r, bumped, 0.01 * bumped, seed=1)
    assert period(c) == 7 and set(peaks(c)) == {7, 14, 21, 28, 35, 42, 49, 56}
    w = kernel_width(fitted(c))
    assert w.kind == "periodic" and w.period == 7 and "multiples of 7" in w.reason


@pytest.mark.slow
def test_sampled_block_widths_scale_with_the_block_and_ignore_the_largest_offset() -> None:
    """W from sampled sequences: 4x in B gives 3-5.3x in W; --max-offset 512 and 4096 agree within 15 %."""
    widths = {}
    for b in (8, 32):
        for top in (512, 4096):
            table, _ = mi_profile(block_sequences(150, 4096, b, vocab=64, states=8, seed=b), log_offsets(top))
            widths[b, top] = kernel_width(fitted(curve(table, f"blocks-B{b}")))
    assert all(w.kind in ("characteristic", "local") for w in widths.values()), widths
    for top in (512, 4096):
        assert 3 <= widths[32, top].W / widths[8, top].W <= 5.3, widths
    for b in (8, 32):
        assert widths[b, 4096].W == pytest.approx(widths[b, 512].W, rel=0.15), widths


@pytest.mark.slow
def test_markov_chain_width_does_not_move_with_the_number_of_tokens() -> None:
    chain = reference_chain()
    widths = []
    for docs in (250, 500):  # 1M and 2M tokens
        table, _ = mi_profile(chain.sample(docs, 4000, seed=docs), log_offsets(2048))
        widths.append(kernel_width(fitted(curve(table, "markov"))))
    assert all(w.kind == "characteristic" for w in widths), widths
    assert widths[1].W == pytest.approx(widths[0].W, rel=0.2)
    exact = _width(GRID, chain.exact_mi(GRID))
    assert widths[1].ci_low <= exact.W * 1.2 and exact.W * 0.8 <= widths[1].ci_high


@pytest.mark.parametrize("chain", [reference_chain(), text_chain()], ids=["reference", "text"])
def test_w_of_an_exact_markov_kernel_is_its_own_q90(chain) -> None:
    """W is the q90 of the kernel: on a chain's exact MI, the offset within which 90 % of
    sum I(r) lies needs no model, and the fitted W must agree with it."""
    r = np.arange(1, 2049)
    mass = np.cumsum(chain.exact_mi(r))
    q90 = r[np.searchsorted(mass, 0.9 * mass[-1])]
    w = _width(GRID, chain.exact_mi(GRID))
    assert w.kind == "characteristic" and w.W == pytest.approx(q90, rel=0.03), (w.W, q90)


def test_few_character_markov_text_is_local_in_any_document_order(tmp_path: Path) -> None:
    texts = markov_text(120, 2000, seed=3, chain=topic_chain(vocab=64, topics=4, switch=0.3, concentration=0.3))
    widths = []
    for name, docs in (("forward", texts), ("backward", texts[::-1])):
        path = write_jsonl(tmp_path / f"{name}.jsonl", docs)
        p = depstat.profile(str(path), granularities=["bytes", "bpe-1k"], max_offset=512)
        widths.append(analyze(p, head_dim=64, train_length=512).widths["bpe-1k"])
    assert widths[0] == widths[1]  # the profile is a property of the set of documents
    assert widths[0].kind == "local" and widths[0].W <= 8


@pytest.mark.parametrize("alpha", [1.3, 2.0, 3.5])
def test_power_width_holds_nine_tenths_of_the_kernel(alpha: float) -> None:
    w = power_width(alpha)
    r = np.arange(1, 10**6, dtype=float)
    total = float(np.sum(r**-alpha)) + 1e6 ** (1 - alpha) / (alpha - 1)  # the tail beyond 10^6, integrated
    below = float(np.sum(r[: int(math.floor(w))] ** -alpha))
    upto = float(np.sum(r[: int(math.ceil(w))] ** -alpha))
    assert below <= 0.9 * total <= upto
    assert power_width(1.0) == math.inf


@settings(max_examples=30, deadline=None)
@given(st.floats(0.3, 20.0), st.floats(0.2, 2.0), st.floats(0.01, 10.0))
def test_the_crossover_is_where_the_tail_overtakes_the_local_part(xi: float, alpha: float, ratio: float) -> None:
    """Beyond r_x the tail exceeds the local part at every offset; just before it, it does not."""
    f = fit_decay(GRID, np.exp(-(GRID - 1) / xi) + ratio * GRID**-alpha, np.zeros(GRID.size), "composite")
    f = type(f)("composite", 1.0, xi, ratio, alpha, 0.0, 0.0, GRID.size)
    rx = f.crossover()
    r = np.geomspace(rx * 1.0001, rx * 1e3, 200)
    assert np.all(f.tail(r) >= f.local(r))
    if rx > 1:
        assert f.tail(np.array([rx * 0.999]))[0] < f.local(np.array([rx * 0.999]))[0]
