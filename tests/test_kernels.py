"""Numba kernels against their NumPy twins in tests/naive.py, on hypothesis-made streams."""

from __future__ import annotations

import numpy as np
import numpy.testing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import digamma

from depstat import counting, kernels
from depstat.counting import PairCounter, jackknife_blocks
from depstat.stream import TokenStream
from tests import naive


@st.composite
def streams(draw: st.DrawFn, max_docs: int = 12, max_len: int = 40) -> TokenStream:
    vocab = draw(st.integers(1, 12))
    lengths = draw(st.lists(st.integers(1, max_len), min_size=1, max_size=max_docs))
    tokens = draw(
        st.lists(st.integers(0, vocab - 1), min_size=sum(lengths), max_size=sum(lengths))
    )
    return TokenStream("h", np.asarray(tokens, dtype=np.int32), np.asarray(lengths), vocab)


def assert_sums_equal(got, want) -> None:
    assert got.n_pairs == want.n_pairs
    npt.assert_array_equal(got.block_pairs, want.block_pairs)
    for name in ("joint", "first", "second", "joint_jk", "first_jk", "second_jk"):
        npt.assert_allclose(getattr(got, name), getattr(want, name), rtol=1e-10, atol=1e-8, err_msg=name)


@settings(max_examples=150, deadline=None)
@given(
    stream=streams(),
    r=st.integers(1, 45),
    partner=st.sampled_from(["real", "rotate", "iid"]),
    n_blocks=st.integers(2, 6),
    dense=st.booleans(),
)
def test_sums_match_naive(stream: TokenStream, r: int, partner: str, n_blocks: int, dense: bool) -> None:
    """Both kernels: dense V x V tables in position order, and counting by token group."""
    counter = PairCounter(stream, n_blocks=n_blocks, seed=3, dense=dense)
    got = counter.sums(r, partner)
    want = naive.naive_sums(
        stream.tokens, stream.doc_lengths, stream.vocab_size, r, partner,
        counter.block_starts, counter.shift, counter.partner_seed(r),
    )
    assert_sums_equal(got, want)


@settings(max_examples=50, deadline=None)
@given(stream=streams(), r=st.integers(1, 10), dense=st.booleans())
def test_point_only_sums_match_and_skip_deltas(stream: TokenStream, r: int, dense: bool) -> None:
    counter = PairCounter(stream, n_blocks=3, dense=dense)
    full, point = counter.sums(r), counter.sums(r, jackknife=False)
    for name in ("joint", "first", "second"):
        npt.assert_allclose(getattr(point, name), getattr(full, name), rtol=1e-12)
    npt.assert_array_equal(point.block_pairs, full.block_pairs)
    assert not point.joint_jk.any() and not point.second_jk.any()


@settings(max_examples=100, deadline=None)
@given(tokens=st.lists(st.integers(0, 30), min_size=0, max_size=200))
def test_group_by_token_is_a_stable_sort(tokens: list[int]) -> None:
    tok = np.asarray(tokens, dtype=np.int32)
    order, starts = kernels.group_by_token(tok, 31)
    npt.assert_array_equal(order, np.argsort(tok, kind="stable"))
    npt.assert_array_equal(np.diff(starts), np.bincount(tok, minlength=31))


def test_grassberger_table_and_asymptotic_series_match_scipy() -> None:
    n = np.array([1, 2, 3, 7, 100, 65535, 65536, 65537, 10**6, 10**6 + 1, 2**40 + 3])
    got = np.array([kernels.n_g_n(int(k), kernels.NG_TABLE) for k in n])
    want = n * naive.grassberger_g(n)
    npt.assert_allclose(got, want, rtol=1e-13)
    # Grassberger (2003): G(1) = -gamma - ln 2 and G(2) = G(1) + 2.
    g1 = digamma(1) - np.log(2)
    assert abs(kernels.n_g_n(1, kernels.NG_TABLE) - g1) < 1e-14
    assert abs(kernels.n_g_n(2, kernels.NG_TABLE) / 2 - (g1 + 2)) < 1e-14


def test_chunk_bounds_cover_every_token_group_once() -> None:
    starts = np.cumsum(np.r_[0, np.random.default_rng(0).integers(0, 50, 1000)])
    bounds = kernels.chunk_bounds(starts, 64)
    assert bounds[0] == 0 and bounds[-1] == 1000 and (np.diff(bounds) >= 0).all()


def test_results_do_not_depend_on_thread_count(monkeypatch: pytest.MonkeyPatch) -> None:
    import numba

    from depstat import counting

    monkeypatch.setattr(counting, "PARALLEL_MIN_TOKENS", 0)  # small stream, but all threads
    rng = np.random.default_rng(1)
    stream = TokenStream("t", rng.integers(0, 300, 20_000), np.full(50, 400), 300)
    counters = [PairCounter(stream, n_blocks=10, dense=d) for d in (False, True)]
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = [c.sums_at([1, 7, 90], ("real", "rotate")) for c in counters]
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        many = [c.sums_at([1, 7, 90], ("real", "rotate")) for c in counters]
    finally:
        numba.set_num_threads(before)
    for a, b in zip(one, many):
        for key in a:
            for name in ("joint", "first", "second", "joint_jk", "first_jk", "second_jk"):
                npt.assert_array_equal(getattr(a[key], name), getattr(b[key], name))


@settings(max_examples=60, deadline=None)
@given(
    stream=streams(),
    offsets=st.lists(st.integers(1, 45), min_size=1, max_size=6),
    partners=st.lists(st.sampled_from(["real", "rotate", "iid"]), min_size=1, max_size=3, unique=True),
    workers=st.integers(1, 5),
    buffer_cells=st.sampled_from([0, 1, 7, 1 << 12]),
)
def test_one_sweep_over_many_slots_matches_naive(
    stream: TokenStream, offsets: list[int], partners: list[str], workers: int, buffer_cells: int
) -> None:
    """Offsets and partners counted together, with any worker split, and a jackknife buffer
    that overflows (0, 1, 7 cells: the group is swept again) or not: each slot equals its twin."""
    counter = PairCounter(stream, n_blocks=3, seed=1, buffer_cells=buffer_cells, dense=False)
    slots = sorted((r, p) for r in set(offsets) for p in partners)
    slot_r = np.array([r for r, _ in slots])
    slot_mode = np.array([counting.PARTNER_MODES[p] for _, p in slots])
    slot_seed = np.array([counter.partner_seed(r) for r, _ in slots])
    joint, first, joint_jk, first_jk, pairs = kernels.joint_sums(
        counter.tokens, counter.order, counter.starts, counter.rem_sorted, counter.run_starts,
        counter.run_block, counter.n_blocks, slot_r, slot_mode, slot_seed, counter.shift,
        kernels.SUM_TABLES, True, buffer_cells, workers,
    )
    many = counter.sums_at(offsets, partners)
    for i, (r, p) in enumerate(slots):
        want = naive.naive_sums(
            stream.tokens, stream.doc_lengths, stream.vocab_size, r, p, counter.block_starts,
            counter.shift, counter.partner_seed(r),
        )
        assert_sums_equal(many[p, r], want)
        npt.assert_allclose(joint[i], want.joint, rtol=1e-10, atol=1e-8)
        npt.assert_allclose(joint_jk[i], want.joint_jk, rtol=1e-10, atol=1e-8)
        npt.assert_allclose(first_jk[i], want.first_jk, rtol=1e-10, atol=1e-8)
        npt.assert_array_equal(pairs[i], want.block_pairs)


def test_offsets_are_batched_to_fit_the_cache() -> None:
    rng = np.random.default_rng(0)
    small = PairCounter(TokenStream("s", rng.integers(0, 256, 5000), [5000], 256), dense=False)
    large = PairCounter(TokenStream("l", rng.integers(0, 8000, 5000), [5000], 8000))
    offsets = list(range(1, 30))
    assert small.batches(offsets, 2) == [offsets]
    cut = large.batches(reversed(offsets), 2)
    assert [r for b in cut for r in b] == offsets and len(cut) > 1
    assert max(len(b) for b in cut) * 2 * 8000 * 16 <= counting.STATE_BYTES


@pytest.mark.parametrize(
    ("lengths", "unit"), [([100] * 40, "documents"), ([4000], "token blocks"), ([10] * 5, "token blocks")]
)
def test_jackknife_blocks_cut_at_documents_when_there_are_enough(lengths: list[int], unit: str) -> None:
    starts, got_unit = jackknife_blocks(np.asarray(lengths), 10)
    assert got_unit == unit
    assert starts[0] == 0 and starts[-1] == sum(lengths) and (np.diff(starts) > 0).all()
    if unit == "documents":
        assert set(starts) <= set(np.cumsum([0] + lengths))


@pytest.mark.parametrize("partner", ["rotate", "iid"])
def test_null_partners_match_naive_across_jitter_runs(partner: str) -> None:
    """Streams longer than the 4096-position runs of the rotation jitter."""
    rng = np.random.default_rng(5)
    lengths = rng.integers(100, 3000, 12)
    stream = TokenStream("long", rng.integers(0, 40, int(lengths.sum())), lengths, 40)
    counters = [PairCounter(stream, n_blocks=4, seed=2, dense=d) for d in (False, True)]
    counter = counters[0]
    for r in (1, 17, 900):
        want = naive.naive_sums(
            stream.tokens, stream.doc_lengths, 40, r, partner, counter.block_starts, counter.shift,
            counter.partner_seed(r),
        )
        for c in counters:
            assert_sums_equal(c.sums(r, partner), want)
