"""Estimators: formulas against direct computation, and accuracy on processes with known MI."""

from __future__ import annotations

import typing

import numpy as np
import numpy.testing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import depstat
from depstat.count import counting
from depstat.count.counting import PairCounter
from depstat.estimate import estimators as est
from depstat.estimate.profile import log_offsets, mi_profile
from depstat.synth import (
    MarkovChain,
    reference_chain,
    stationary,
    two_kinds,
    two_kinds_exact_mi,
)
from depstat.tokenize.stream import TokenStream
from tests import naive

LN2 = np.log(2)


def jackknife_interval(point: float, reps: np.ndarray, confidence: float) -> tuple[float, float, float]:
    """(standard error, low, high) of one delete-one-block jackknife of equal blocks, Student-t with G-1 df."""
    reps = np.asarray(reps, dtype=float)
    out = est.intervals(np.array(point), est.Replicates(np.array(point), reps, np.ones(len(reps), dtype=np.int64)), confidence)
    return tuple(float(v) for v in out)


@pytest.fixture(scope="module")
def small_stream() -> TokenStream:
    chain = MarkovChain(P=np.array([[0.9, 0.1, 0.0], [0.0, 0.5, 0.5], [0.3, 0.0, 0.7]]), pi=None)
    P = chain.P
    return MarkovChain(P=P, pi=stationary(P)).sample(40, 500, seed=1)


def test_plugin_equals_dense_histogram_mi(small_stream: TokenStream) -> None:
    counter = PairCounter(small_stream, n_blocks=4)
    for r in (1, 3, 50):
        p = naive.pair_positions(small_stream.doc_lengths, r)
        want = naive.plugin_mi_bits(small_stream.tokens[p], small_stream.tokens[p + r])
        assert est.base_mi(counter.sums(r), "plugin") == pytest.approx(want, abs=1e-12)


def test_miller_madow_and_grassberger_follow_their_formulas(small_stream: TokenStream) -> None:
    s = PairCounter(small_stream, n_blocks=4).sums(2)
    n = s.n_pairs
    kx, ky, kxy = s.first[2], s.second[2], s.joint[2]
    mm = est.base_mi(s, "plugin") + ((kx - 1) + (ky - 1) - (kxy - 1)) / (2 * n * LN2)
    assert est.base_mi(s, "miller-madow") == pytest.approx(mm, abs=1e-12)
    p = naive.pair_positions(small_stream.doc_lengths, 2)
    x, y = small_stream.tokens[p], small_stream.tokens[p + 2]

    def h_grassberger(counts: np.ndarray) -> float:
        c = counts[counts > 0]
        return np.log(n) - np.sum(c * naive.grassberger_g(c)) / n

    joint = np.unique(x * 3 + y, return_counts=True)[1]
    want = (h_grassberger(np.bincount(x)) + h_grassberger(np.bincount(y)) - h_grassberger(joint)) / LN2
    assert est.base_mi(s, "grassberger") == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("name", [e.name for e in est.ESTIMATOR_LIST if e.null])
def test_null_estimators_need_no_first_marginal(small_stream: TokenStream, name: str) -> None:
    """A null-corrected estimate is the difference of the base estimator's MI on the real and
    the null pairs, which share their first positions: counted without the first marginal
    (NaN sums), it is the same, point and replicates; the base estimators do need it."""
    kind, null = est.get(name).entropy, est.get(name).null
    counter = PairCounter(small_stream, n_blocks=4, dense=False)
    for first_marginal in (True, False):
        sums = counter.sums_at([1, 7], ("real", null), first_marginal=first_marginal)
        for r in (1, 7):
            real, nulls = sums["real", r], {null: sums[null, r]}
            full = counter.sums_at([r], ("real", null))
            want = est.base_mi(full["real", r], kind) - est.base_mi(full[null, r], kind)
            assert est.estimate(name, real, nulls) == pytest.approx(want, abs=1e-12)
            reps = est.replicates(name, real, nulls)
            npt.assert_allclose(reps, est.replicates(name, full["real", r], {null: full[null, r]}), atol=1e-12)
            assert np.isfinite(reps).all()
    assert not est.get(name).first_marginal
    assert all(e.first_marginal for e in est.ESTIMATOR_LIST if e.null is None)


def test_jackknife_replicates_equal_estimates_without_each_block(small_stream: TokenStream) -> None:
    counter = PairCounter(small_stream, n_blocks=5)
    real, null = counter.sums(4), counter.sums(4, "rotate")
    reps = est.replicates(est.DEFAULT_ESTIMATOR, real, {"rotate": null})
    for g in range(counter.n_blocks):
        keep = np.ones(small_stream.n_docs, bool)
        start, stop = counter.block_starts[g], counter.block_starts[g + 1]
        doc_starts = np.r_[0, np.cumsum(small_stream.doc_lengths)[:-1]]
        keep[(doc_starts >= start) & (doc_starts < stop)] = False
        want_real = naive.naive_sums(small_stream.tokens, small_stream.doc_lengths, 3, 4, "real", counter.block_starts, counter.shift, 0)
        assert reps[g] == pytest.approx(
            est.estimate(est.DEFAULT_ESTIMATOR, real.deleted(g), {"rotate": null.deleted(g)}), abs=1e-12
        )
        assert want_real.deleted(g).n_pairs == real.deleted(g).n_pairs


@pytest.mark.parametrize("name", est.ESTIMATORS)
def test_stacked_offsets_give_each_offsets_estimate_and_interval(name: str) -> None:
    """The profile estimates a batch of offsets at once; at offset 150 the blocks of short
    documents hold no pairs and are left out of that offset's jackknife only."""
    rng = np.random.default_rng(5)
    stream = TokenStream("mixed", rng.integers(0, 5, 8000) // 2, np.r_[np.full(40, 100), 2000, 2000], 5)
    counter = PairCounter(stream, n_blocks=6)
    offsets, partners = [1, 3, 150], ("real",) + est.get(name).partners
    sums = counter.sums_at(offsets, partners)
    assert (sums["real", 150].block_pairs == 0).sum() == 3 and (sums["real", 1].block_pairs > 0).all()
    real = est.stacked([sums["real", r] for r in offsets])
    nulls = {m: est.stacked([sums[m, r] for r in offsets]) for m in partners[1:]}
    points, reps_all, draw_se = est.estimate_draws(name, real, [nulls])
    assert not draw_se.any()  # one draw: no draw-to-draw error
    se, lo, hi = est.intervals(points, reps_all, 0.95, draw_se)
    for i, r in enumerate(offsets):
        one, nulls_r = sums["real", r], {m: sums[m, r] for m in partners[1:]}
        assert points[i] == pytest.approx(est.estimate(name, one, nulls_r), abs=1e-12)
        used = np.flatnonzero(one.block_pairs)
        if name == "jackknife":
            reps = np.array([est.base_mi(one.deleted(g), "plugin") for g in used])
        else:
            reps = np.array([est.estimate(name, one.deleted(g), {m: v.deleted(g) for m, v in nulls_r.items()}) for g in used])
        full = est.base_mi(one, "plugin") if name == "jackknife" else points[i]
        want_se = weighted_jackknife_se(full, reps, one.block_pairs[used])
        assert se[i] == pytest.approx(want_se, rel=1e-9, abs=1e-15)
        half = stats.t.ppf(0.975, len(used) - 1) * want_se
        assert (lo[i], hi[i]) == pytest.approx((points[i] - half, points[i] + half), rel=1e-9, abs=1e-15)


def weighted_jackknife_se(full: float, reps: np.ndarray, pairs: np.ndarray) -> float:
    """Busing, Meijer and van der Leeden's (1999) delete-a-group jackknife, term by term."""
    n, g = pairs.sum(), len(pairs)
    theta_j = g * full - sum((1 - m / n) * t for m, t in zip(pairs, reps))
    terms = [((n / m) * full - (n / m - 1) * t - theta_j) ** 2 / (n / m - 1) for m, t in zip(pairs, reps)]
    return float(np.sqrt(sum(terms) / g))


def test_weighted_jackknife_of_a_mean_has_the_group_means_as_pseudo_values() -> None:
    """For the mean of unequal groups the pseudo-values are the group means, so the variance is
    (1/G) sum_g (mean_g - theta_J)^2 m_g / (n - m_g) with theta_J the plain mean: a known answer."""
    rng = np.random.default_rng(2)
    groups = [rng.normal(g, 1.0, size) for g, size in enumerate([3, 40, 7, 90, 12])]
    x = np.concatenate(groups)
    m = np.array([len(v) for v in groups])
    n, total = len(x), x.sum()
    reps = np.array([(total - v.sum()) / (n - len(v)) for v in groups])
    got = est.jackknife_se(est.Replicates(np.array(x.mean()), reps, m))
    want = np.sqrt(np.mean([(v.mean() - x.mean()) ** 2 * len(v) / (n - len(v)) for v in groups]))
    assert got == pytest.approx(want, rel=1e-12)
    assert est.weighted_jackknife_estimate(est.Replicates(np.array(x.mean()), reps, m)) == pytest.approx(x.mean())


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 9))
def test_jackknife_deviations_square_to_the_jackknife_variance(seed: int, groups: int) -> None:
    """Random signs on the deviations draw noise of the jackknife's covariance: each row's
    deviations square to its jackknife variance, and groups without pairs contribute nothing."""
    rng = np.random.default_rng(seed)
    pairs = rng.integers(0, 30, size=(4, groups))
    reps = est.Replicates(rng.normal(size=4), rng.normal(size=(4, groups)), pairs)
    d = est.jackknife_deviations(reps)
    se = est.jackknife_se(reps)
    ok = np.isfinite(se)
    npt.assert_allclose((d**2).sum(axis=1)[ok], se[ok] ** 2, rtol=1e-9, atol=1e-12)
    assert np.all(d[pairs == 0] == 0)
    for row in np.nonzero(ok)[0]:
        used = pairs[row] > 0
        assert (d[row] ** 2).sum() == pytest.approx(weighted_jackknife_se(float(reps.full[row]), reps.values[row][used],
                                                                          pairs[row][used]) ** 2, rel=1e-9)


def test_null_draws_are_averaged_and_their_spread_enters_the_interval(small_stream: TokenStream) -> None:
    counter = PairCounter(small_stream, n_blocks=5)
    draws, points = [], []
    for shift in (small_stream.n_tokens // 3, 2 * small_stream.n_tokens // 3):
        counter.shift = shift
        sums = counter.sums_at([2, 7], ("real", "rotate"))
        real = est.stacked([sums["real", r] for r in (2, 7)])
        draws.append({"rotate": est.stacked([sums["rotate", r] for r in (2, 7)])})
        points.append(est.estimate(est.DEFAULT_ESTIMATOR, real, draws[-1]))
    point, reps, draw_se = est.estimate_draws(est.DEFAULT_ESTIMATOR, real, draws)
    npt.assert_allclose(point, np.mean(points, axis=0), atol=1e-12)
    npt.assert_allclose(draw_se, np.abs(points[0] - points[1]) / 2, atol=1e-12)  # std (ddof 1) / sqrt(2)
    se, lo, hi = est.intervals(point, reps, 0.95, draw_se, bias=np.array([0.1, 0.0]))
    npt.assert_allclose(se, np.hypot(est.jackknife_se(reps), draw_se), atol=1e-12)
    t = stats.t.ppf(0.975, reps.used.sum(axis=-1) - 1)
    npt.assert_allclose(hi - point, np.hypot(t * se, [0.1, 0.0]), atol=1e-12)
    npt.assert_allclose(point - lo, hi - point, atol=1e-12)
    bias = est.jackknife_bias(est.DEFAULT_ESTIMATOR, point, reps)
    npt.assert_allclose(bias, np.abs(point - est.weighted_jackknife_estimate(reps)), atol=1e-15)
    assert not est.jackknife_bias("jackknife", point, reps).any()


def test_bias_bound_is_the_larger_of_the_jackknife_bias_and_the_entropy_correction(small_stream: TokenStream) -> None:
    """The entropy correction is the estimator's move over the same estimator with plug-in
    entropies (the default against ``rotation``, averaged over draws); 0 for plug-in estimators."""
    counter = PairCounter(small_stream, n_blocks=5)
    draws = []
    for shift in (small_stream.n_tokens // 3, 2 * small_stream.n_tokens // 3):
        counter.shift = shift
        sums = counter.sums_at([1, 2, 7], ("real", "rotate"))
        real = est.stacked([sums["real", r] for r in (1, 2, 7)])
        draws.append({"rotate": est.stacked([sums["rotate", r] for r in (1, 2, 7)])})
    moved = np.mean([est.estimate(est.DEFAULT_ESTIMATOR, real, d) - est.estimate("rotation", real, d) for d in draws],
                    axis=0)
    assert np.abs(moved).min() > 0  # Grassberger differs from the plug-in on every table
    npt.assert_allclose(est.entropy_correction(est.DEFAULT_ESTIMATOR, real, draws), np.abs(moved), atol=1e-15)
    plain = np.abs(est.base_mi(real, "grassberger") - est.base_mi(real, "plugin"))
    npt.assert_allclose(est.entropy_correction("grassberger", real, []), plain, atol=1e-15)
    for name in ("plugin", "rotation", "shuffle", "jackknife"):
        assert not est.entropy_correction(name, real, draws).any()
    point, reps, _ = est.estimate_draws(est.DEFAULT_ESTIMATOR, real, draws)
    npt.assert_allclose(est.bias_bound(est.DEFAULT_ESTIMATOR, point, reps, real, draws),
                        np.maximum(est.jackknife_bias(est.DEFAULT_ESTIMATOR, point, reps), np.abs(moved)), atol=1e-15)


def test_jackknife_estimator_does_not_depend_on_the_interval_switch(small_stream: TokenStream) -> None:
    with_ci, _ = mi_profile(small_stream, [1, 5], estimator="jackknife")
    without, _ = mi_profile(small_stream, [1, 5], estimator="jackknife", interval=False)
    np.testing.assert_allclose(without["mi_bits"].to_numpy(), with_ci["mi_bits"].to_numpy(), rtol=1e-12)


def test_jackknife_interval_uses_student_t() -> None:
    reps = np.array([1.0, 1.2, 0.8, 1.1, 0.9])
    se, lo, hi = jackknife_interval(1.0, reps, 0.95)
    assert se == pytest.approx(np.sqrt(4 / 5 * np.sum((reps - 1.0) ** 2)))
    assert hi - 1.0 == pytest.approx(2.7764451 * se, rel=1e-6)
    assert lo == pytest.approx(2.0 - hi)


def test_independent_tokens_give_zero_where_plugin_is_far_off() -> None:
    """i.i.d. tokens over 512 symbols: true MI 0 at every offset."""
    rng = np.random.default_rng(7)
    weights = 1 / np.arange(1, 513)  # Zipf-like marginal
    tokens = rng.choice(512, size=1000 * 1000, p=weights / weights.sum())
    stream = TokenStream("iid", tokens, np.full(1000, 1000), 512)
    offsets = log_offsets(256, n=12)
    table, _ = mi_profile(stream, offsets)
    plugin, _ = mi_profile(stream, offsets, estimator="plugin", interval=False)
    assert plugin["mi_bits"].min() > 0.1  # the bias the default must remove
    assert table["mi_bits"].abs().max() < 0.005
    covered = ((table["ci_low"] <= 0) & (table["ci_high"] >= 0)).sum()
    assert covered >= 10  # 95% intervals: at most a couple of the 12 may miss zero


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_accuracy_bar_on_reference_markov_chain(seed: int) -> None:
    """The bar of the profile issue: |error| <= max(0.005, 2% of truth) at every offset 1..2048.

    V = 512, 2M tokens in documents of 4096, exact MI from the transition matrix.
    """
    chain = reference_chain()
    offsets = log_offsets(2048, n=21)
    truth = chain.exact_mi(offsets)
    assert truth[0] > 4 and truth[-1] < 1e-6  # crosses the strong and the null regime
    stream = chain.sample(512, 4096, seed=seed)
    table, skipped = mi_profile(stream, offsets)
    assert not skipped
    got = table.sort("offset")["mi_bits"].to_numpy()
    tolerance = np.maximum(0.005, 0.02 * truth)
    worst = np.max(np.abs(got - truth) / tolerance)
    assert worst <= 1.0, f"worst error/tolerance {worst:.3f}"
    plugin, _ = mi_profile(stream, offsets[-3:], estimator="plugin", interval=False)
    assert plugin["mi_bits"].min() > 0.05  # plug-in is off by ~0.1 bits where truth is 0


def test_exact_mi_of_a_two_state_chain_matches_closed_form() -> None:
    """For P = [[1-a, a], [b, 1-b]], P^d has eigenvalue (1-a-b)^d: check I(d) against it."""
    a, b = 0.1, 0.3
    P = np.array([[1 - a, a], [b, 1 - b]])
    chain = MarkovChain(P=P, pi=stationary(P))
    pi = np.array([b, a]) / (a + b)
    npt.assert_allclose(chain.pi, pi)
    for d in (1, 2, 5):
        lam = (1 - a - b) ** d
        Pd = np.array([[pi[0] + pi[1] * lam, pi[1] - pi[1] * lam], [pi[0] - pi[0] * lam, pi[1] + pi[0] * lam]])
        want = np.sum(pi[:, None] * Pd * np.log2(Pd / pi[None, :]))
        assert chain.exact_mi([d])[0] == pytest.approx(want, rel=1e-10)


def test_rotation_null_does_not_line_up_with_a_fixed_layout() -> None:
    """Equal-length documents with a fixed period-7 layout: the true MI is log2(7) at every offset.

    Token = 10 * (t mod 7) + uniform noise in 0..9, every document starting at phase 0. An
    unjittered rotation null would keep the phase relation and subtract the real information.
    """
    rng = np.random.default_rng(3)
    docs, length = 100, 4096
    t = np.tile(np.arange(length), docs)
    tokens = 10 * (t % 7) + rng.integers(0, 10, t.size)
    stream = TokenStream("layout", tokens, np.full(docs, length), 70)
    table, _ = mi_profile(stream, [1, 100, 1000])
    np.testing.assert_allclose(table["mi_bits"].to_numpy(), np.log2(7), atol=0.02)


def test_the_null_keeps_the_real_pairs_marginals_where_documents_end(monkeypatch: pytest.MonkeyPatch) -> None:
    """Short documents of one kind, long ones of another (``two_kinds``): beyond the short
    documents the pairs come from the long ones only and the exact MI is 0. A null that
    takes its partners from the whole stream (the stream's rotation at every offset, as
    before) has other marginals there and the default reads about -0.1 bits, its interval
    short of 0; the pair list's rotation holds the exact MI at every offset."""
    stream = two_kinds(n_short=1500, n_long=150, seed=1)
    offsets = [1, 4, 16, 40, 64, 128, 256]
    exact = two_kinds_exact_mi(stream, np.array(offsets))
    table, _ = mi_profile(stream, offsets)
    assert (table["ci_low"].to_numpy() <= exact + 1e-12).all() and (exact <= table["ci_high"].to_numpy()).all()
    monkeypatch.setattr(counting, "PAIRS_DROPPED", 1.0)
    before, _ = mi_profile(stream, offsets)
    far = np.array(offsets) >= 64
    assert (before["ci_high"].to_numpy()[far] < 0).all()


def test_estimator_name_type_lists_every_estimator() -> None:
    """``EstimatorName``, the option's type for type checkers, names exactly the estimators there are."""
    assert typing.get_args(est.EstimatorName) == est.ESTIMATORS


def test_profile_takes_its_options_by_keyword_only() -> None:
    with pytest.raises(TypeError, match="positional"):
        depstat.profile("example", ["bytes"])
