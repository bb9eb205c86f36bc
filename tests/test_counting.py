"""``PairCounter`` (count/counting.py and the kernels under it) against the NumPy twins in
tests/naive.py, on hypothesis-made streams: every partner process, path and work split."""

from __future__ import annotations

import operator
from dataclasses import replace

import numpy as np
import numpy.testing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from depstat.count import counting, kernels
from depstat.count.counting import PairCounter, jackknife_blocks
from depstat.errors import DepstatError
from depstat.tokenize.stream import TokenStream
from tests import naive
from tests.helpers import assert_sums_equal, streams


@settings(max_examples=150, deadline=None)
@given(
    stream=streams(),
    r=st.integers(1, 45),
    partner=st.sampled_from(["real", "rotate", "iid", "pairs"]),
    n_blocks=st.integers(2, 6),
    dense=st.booleans(),
    part_tokens=st.sampled_from([1, 3, 20, counting.PART_TOKENS]),
)
def test_sums_match_naive(
    stream: TokenStream, r: int, partner: str, n_blocks: int, dense: bool, part_tokens: int
) -> None:
    """Both kernels: dense tables in position order, and partitions of one or many tokens."""
    counter = PairCounter(stream, n_blocks=n_blocks, seed=3, dense=dense, part_tokens=part_tokens)
    got = counter.sums(r, partner)
    want = naive.counted_sums(
        stream.tokens, stream.doc_lengths, stream.vocab_size, r, partner,
        counter.block_starts, counter.shift, counter.partner_seed(r),
    )
    assert_sums_equal(got, want)


@settings(max_examples=50, deadline=None)
@given(stream=streams(), r=st.integers(1, 10), dense=st.booleans(), partner=st.sampled_from(["real", "rotate"]))
def test_point_only_sums_match_and_skip_deltas(stream: TokenStream, r: int, dense: bool, partner: str) -> None:
    counter = PairCounter(stream, n_blocks=3, dense=dense)
    full, point = counter.sums(r, partner), counter.sums(r, partner, jackknife=False)
    for name in ("joint", "first", "second"):
        npt.assert_allclose(getattr(point, name), getattr(full, name), rtol=1e-12)
    npt.assert_array_equal(point.block_pairs, full.block_pairs)
    assert not point.joint_jk.any() and not point.second_jk.any()


@settings(max_examples=50, deadline=None)
@given(
    stream=streams(),
    r=st.integers(1, 20),
    dense=st.booleans(),
    ids=st.lists(st.integers(1, 2**20 - 1), min_size=12, max_size=12, unique=True),
)
def test_a_vocabulary_far_larger_than_the_tokens_in_use(
    stream: TokenStream, r: int, dense: bool, ids: list[int]
) -> None:
    """Tokens scattered over 2^20 ids (id 0 never used) give the sums of the same stream on
    its own small ids: the counter ranks only the tokens in use, and the sums do not depend
    on the labels."""
    sparse = TokenStream("h", np.asarray(ids, dtype=np.int32)[stream.tokens], stream.doc_lengths, 2**20)
    counter = PairCounter(sparse, n_blocks=3, seed=3, dense=dense)
    assert counter.vocab == len(np.unique(stream.tokens))
    want = naive.counted_sums(
        stream.tokens, stream.doc_lengths, stream.vocab_size, r, "rotate",
        counter.block_starts, counter.shift, counter.partner_seed(r),
    )
    assert_sums_equal(counter.sums(r, "rotate"), want)


def test_results_do_not_depend_on_thread_count(monkeypatch: pytest.MonkeyPatch) -> None:
    import numba

    from depstat.count import counting

    monkeypatch.setattr(counting, "PARALLEL_MIN_WORK", dict.fromkeys(counting.PARALLEL_MIN_WORK, 0))
    rng = np.random.default_rng(1)
    weights = 1 / np.arange(1, 301)  # Zipf: partitions of one token and of many
    tokens = rng.choice(300, size=200_000, p=weights / weights.sum())
    stream = TokenStream("t", tokens, np.r_[60_000, np.full(350, 400)], 300)  # one block is a long document
    kinds = [(False, 200), (False, 10**6), (True, 1)]  # many partitions, two, dense
    counters = [PairCounter(stream, n_blocks=10, dense=d, part_tokens=t) for d, t in kinds]
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = [c.sums_at([1, 7, 90], ("real", "rotate")) for c in counters]
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        many = [c.sums_at([1, 7, 90], ("real", "rotate")) for c in counters]
    finally:
        numba.set_num_threads(before)
    assert set(counters[0].widths[:3]) == {1} and counters[0].widths.max() > 1
    for a, b in zip(one, many):
        for key in a:
            for name in ("joint", "first", "second", "joint_jk", "first_jk", "second_jk"):
                npt.assert_array_equal(getattr(a[key], name), getattr(b[key], name))
    for partner in ("real", "rotate"):  # and right, not only equal
        want = naive.counted_sums(tokens, stream.doc_lengths, 300, 7, partner, counters[0].block_starts,
                                counters[0].shift, 0)
        assert_sums_equal(many[0][partner, 7], want)


@settings(max_examples=60, deadline=None)
@given(
    stream=streams(),
    offsets=st.lists(st.integers(1, 45), min_size=1, max_size=6),
    partners=st.lists(st.sampled_from(["real", "rotate", "iid", "pairs"]), min_size=1, max_size=3, unique=True),
    workers=st.integers(1, 5),
    part_tokens=st.sampled_from([1, 7, counting.PART_TOKENS]),
    wide=st.booleans(),
    dense=st.booleans(),
)
def test_many_slots_any_worker_split_and_token_width_match_naive(
    stream: TokenStream, offsets: list[int], partners: list[str], workers: int, part_tokens: int,
    wide: bool, dense: bool,
) -> None:
    """Every (offset, partner) slot equals its twin: dense tables, partitions (every partner
    process of an offset in one pass, in any order) and the rotation null's sweep over all
    the offsets, the last two split over any number of workers, with the relabelled tokens
    and partners in 32-bit integers (used above 65,535 tokens in use) or 16-bit ones."""
    counter = PairCounter(stream, n_blocks=3, seed=1, dense=dense, part_tokens=part_tokens)
    if wide and not dense:  # as above 65,535 tokens in use
        counter.tokens = counter.tokens.astype(np.uint32)
        counter.partner_dtype = np.dtype(np.uint32)
    many = counter.sums_at(offsets, partners)
    for r in set(offsets):
        for p in partners:
            want = naive.counted_sums(
                stream.tokens, stream.doc_lengths, stream.vocab_size, r, p, counter.block_starts,
                counter.shift, counter.partner_seed(r),
            )
            assert_sums_equal(many[p, r], want)
    if dense:
        return
    each = [p for p in partners if p != "rotate"]  # counted offset by offset
    r = min(offsets)
    swept = [r_j for r_j in sorted(set(offsets)) if naive.null_kind(stream.doc_lengths, r_j) == "rotate"]
    if "rotate" in partners and swept:
        ascending = swept
        joint, joint_jk = null_sweep(counter, ascending, workers)
        for j, r_j in enumerate(ascending):  # the worker split changes nothing
            npt.assert_array_equal(joint[j], many["rotate", r_j].joint)
            npt.assert_array_equal(joint_jk[j], many["rotate", r_j].joint_jk)
    if not each:
        return
    xloc, ys, fill_end, first, second = emit(counter, r, each)
    joint, joint_jk = kernels.partition_sums(
        xloc, ys, counter.region, fill_end, counter.widths, counter.vocab, kernels.SUM_TABLES, True, workers,
    )
    for s, p in enumerate(each):
        npt.assert_array_equal(joint[s], many[p, r].joint)
        npt.assert_array_equal(joint_jk[s], many[p, r].joint_jk)


@settings(max_examples=30, deadline=None)
@given(
    stream=streams(max_len=60),
    offsets=st.lists(st.integers(1, 50), min_size=1, max_size=6, unique=True),
    dense=st.booleans(),
    partners=st.sampled_from([("real", "rotate"), ("real", "iid"), ("real",)]),
)
def test_first_marginal_left_out_changes_nothing_else(
    stream: TokenStream, offsets: list[int], dense: bool, partners: tuple[str, ...],
) -> None:
    """``first_marginal=False``: the partitioned kernel's first marginal sums are NaN (not a
    wrong number), every other sum as with them; dense tables keep theirs."""
    counter = PairCounter(stream, n_blocks=3, dense=dense)
    full = counter.sums_at(offsets, partners)
    lean = counter.sums_at(offsets, partners, first_marginal=False)
    for key, got in lean.items():
        want = full[key]
        if dense:
            assert_sums_equal(got, want)
            continue
        assert np.isnan(got.first).all() and np.isnan(got.first_jk).all()
        assert_sums_equal(replace(got, first=want.first, first_jk=want.first_jk), want)


def emit(counter: PairCounter, r: int, partners: list[str]) -> tuple[np.ndarray, ...]:
    """``kernels.emit_pairs`` at offset r into fresh buffers."""
    n, k = counter.tokens.shape[0], len(partners)
    xloc, ys = np.empty(n, dtype=np.uint8), np.empty((k, n), dtype=counter._buffers(k, 1)[1].dtype)
    none = np.empty(0, dtype=np.uint8)
    fill_end = np.empty_like(counter.region)
    first = np.empty((k, counter.n_blocks, counter.vocab), dtype=np.int32)
    second = np.empty((k, counter.n_blocks, counter.vocab), dtype=np.int32)
    modes = np.array([counting.PARTNER_MODES[p] for p in partners])
    seeds = np.full(k, counter.partner_seed(r))
    kernels.emit_pairs(
        kernels.Source(counter.tokens, counter.code, counter.doc_ends, counter.block_starts, counter.region),
        kernels.Slots(np.full(k, r), modes, seeds, counter.shift, 0,
                      counting.pairs_layout(counter.stream.doc_lengths, np.full(k, r), modes)),
        kernels.Emitted(xloc, ys, fill_end, first, second, none, none), counter.vocab, -1, False, 2,
    )
    return xloc, ys, fill_end, first, second


def null_sweep(counter: PairCounter, offsets: list[int], workers: int) -> tuple[np.ndarray, np.ndarray]:
    """``kernels.null_sweep_sums`` of the rotation null over ascending offsets, on ``workers`` workers."""
    xloc, ys, life, region, fill_end, _, _ = counter.emit_null(offsets)
    return kernels.null_sweep_sums(
        xloc, ys, life, region, fill_end, counter.widths, counter.vocab, len(offsets),
        kernels.SUM_TABLES, True, workers,
    )


def assert_counter_matches_naive(
    counter: PairCounter, offsets: list[int], partners: tuple[str, ...], **settings_: int
) -> None:
    """``counter.sums_at`` (with the ``counting`` settings given patched in) equals the twin for every slot."""
    stream = counter.stream
    with pytest.MonkeyPatch.context() as patch:
        for name, value in settings_.items():
            patch.setattr(counting, name, value)
        many = counter.sums_at(offsets, partners)
    for r in offsets:
        for p in partners:
            want = naive.counted_sums(stream.tokens, stream.doc_lengths, stream.vocab_size, r, p,
                                    counter.block_starts, counter.shift, counter.partner_seed(r))
            assert_sums_equal(many[p, r], want)


@settings(max_examples=20, deadline=None)
@given(stream=streams(max_len=60), offsets=st.lists(st.integers(1, 70), min_size=3, max_size=12, unique=True))
def test_rotation_null_sweeps_in_runs_of_max_sweep_offsets(stream: TokenStream, offsets: list[int]) -> None:
    """More offsets than one sweep holds: each run of MAX_SWEEP offsets is swept on its own."""
    assert_counter_matches_naive(PairCounter(stream, n_blocks=2), offsets, ("rotate",), MAX_SWEEP=2)


@settings(max_examples=60, deadline=None)
@given(
    stream=streams(max_len=60),
    offsets=st.lists(st.integers(1, 50), min_size=2, max_size=9, unique=True),
    ratio=st.sampled_from([0, 2, 10**9]),
    partners=st.sampled_from([("rotate",), ("real", "rotate")]),
    dense=st.booleans(),
)
def test_null_sums_followed_through_drops_match_naive(
    stream: TokenStream, offsets: list[int], ratio: int, partners: tuple[str, ...], dense: bool,
) -> None:
    """The rotation null's sums followed through the dropped positions at every offset
    (``drop_sums``, ratio 0), summed again at every offset (a huge ratio) or either, offset by
    offset (2): the marginals' on partitions, with the first marginal's sums of its own (the
    null alone) or taken from the real pairs, and the joint's too in dense tables: equal to the twin."""
    counter = PairCounter(stream, n_blocks=3, dense=dense)
    assert_counter_matches_naive(counter, offsets, partners, DROP_SUMS_RATIO=ratio)


@settings(max_examples=40, deadline=None)
@given(
    stream=streams(max_len=60),
    offsets=st.lists(st.integers(1, 50), min_size=1, max_size=9, unique=True),
    memory=st.integers(1, 400),
    part_tokens=st.sampled_from([1, 5]),
)
def test_groups_of_partitions_match_naive(
    stream: TokenStream, offsets: list[int], memory: int, part_tokens: int,
) -> None:
    """With ``pair_memory`` the partitions are counted group by group, each group a pass over
    the whole stream whose pair buffers fit in it (or hold one partition): the sums of every
    slot, real pairs and the rotation null's sweep, still equal their twins."""
    counter = PairCounter(stream, n_blocks=2, dense=False, part_tokens=part_tokens, pair_memory=memory)
    starts = np.append(counter.region[:, 0], counter.tokens.shape[0])
    for bytes_per_pair in (4, 9):
        groups = counter.groups(bytes_per_pair)
        assert [lo for lo, _ in groups] == [0] + [hi for _, hi in groups[:-1]] and groups[-1][1] == len(counter.widths)
        for lo, hi in groups:
            assert hi - lo == 1 or (starts[hi] - starts[lo]) * bytes_per_pair <= memory
    assert_counter_matches_naive(counter, offsets, ("real", "rotate"))


def test_grouped_counting_compiles_no_kernel_of_its_own() -> None:
    """Capped counting passes the kernels arrays of the same types as uncapped counting (a
    group's slice of a 2-D buffer is not contiguous, which would compile another signature)."""
    rng = np.random.default_rng(3)
    stream = TokenStream("z", np.minimum(rng.zipf(1.3, 20_000), 600) - 1, [5000] * 4, 600)
    names = ("emit._emit_worker", "partition._partition_worker", "sweep._sweep_worker", "marginals._rows_worker",
             "drop_positions", "drop_sums", "relabel", "partner_runs", "move_partners")
    PairCounter(stream, part_tokens=500).sums_at([1, 2, 3, 5, 9], ("real", "rotate"))
    def compiled() -> dict[str, int]:
        return {name: len(operator.attrgetter(name)(kernels).signatures) for name in names}

    before = compiled()
    grouped = PairCounter(stream, part_tokens=500, pair_memory=20_000)
    assert len(grouped.groups(9)) > 1
    grouped.sums_at([1, 2, 3, 5, 9], ("real", "rotate"))
    assert compiled() == before


def test_pair_memory_must_be_positive() -> None:
    stream = TokenStream("s", np.arange(600) % 300, [600], 300)
    with pytest.raises(DepstatError, match="positive memory limit"):
        PairCounter(stream, pair_memory=0)


def test_counts_beyond_the_sum_tables_match_naive() -> None:
    """Cells, marginals and block runs above 2^16 pairs take the asymptotic series."""
    rng = np.random.default_rng(4)
    tokens = np.where(rng.random(300_000) < 0.9, 0, rng.integers(1, 300, 300_000))
    stream = TokenStream("big", tokens, np.full(3, 100_000), 300)
    for dense in (False, True):
        counter = PairCounter(stream, n_blocks=2, dense=dense)
        want = naive.naive_sums(tokens, stream.doc_lengths, 300, 5, "real", counter.block_starts,
                                counter.shift, 0)
        assert want.block_pairs.min() > kernels.TABLE_SIZE
        assert_sums_equal(counter.sums(5), want)


def test_cell_notes_hold_the_most_blocks_and_long_runs() -> None:
    """The partitioned kernel packs each cell's jackknife note (block, pairs so far in it)
    above its total: at NOTE_BLOCKS blocks, with a token of more than NOTE_PAIRS pairs, it
    equals the dense kernel, which keeps whole block tables (both equal the twin elsewhere)."""
    rng = np.random.default_rng(5)
    tokens = np.where(rng.random(200_000) < 0.6, 0, rng.integers(1, 8, 200_000))
    stream = TokenStream("notes", tokens, [200_000], 8)
    dense = PairCounter(stream, n_blocks=kernels.NOTE_BLOCKS, dense=True).sums_at([1, 7], ("real", "rotate"))
    assert dense["real", 1].n_pairs > kernels.NOTE_PAIRS
    for part_tokens in (1, counting.PART_TOKENS):  # partitions of one token, and of all
        counter = PairCounter(stream, n_blocks=kernels.NOTE_BLOCKS, dense=False, part_tokens=part_tokens)
        assert counter.n_blocks == kernels.NOTE_BLOCKS
        got = counter.sums_at([1, 7], ("real", "rotate"))
        for key, want in dense.items():
            assert_sums_equal(got[key], want)
    with pytest.raises(DepstatError, match="32,767 blocks"):
        PairCounter(stream, n_blocks=kernels.NOTE_BLOCKS + 1)


def test_offsets_are_batched_to_fit_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(0)
    small = PairCounter(TokenStream("s", rng.integers(0, 200, 5000), [5000], 256))
    large = PairCounter(TokenStream("l", rng.integers(0, 8000, 50_000), [50_000], 8000))
    offsets = list(range(1, 30))
    assert small.dense and small.vocab == 200 and small.tokens.dtype == np.uint8
    # the partitioned kernels are compiled for 16- and 32-bit tokens only, even when forced onto bytes
    assert PairCounter(small.stream, dense=False).tokens.dtype == np.uint16
    cut = small.batches(reversed(offsets), 2)
    assert [r for b in cut for r in b] == offsets and len(cut) > 1
    assert max(len(b) for b in cut) * 2 * 200 * 200 * 4 <= counting.DENSE_BATCH_BYTES
    assert max(len(b) for b in cut) - min(len(b) for b in cut) <= 1  # no batch of one offset at the end
    for short_bytes, pass_size in ((1 << 30, counting.SHORT_PASS_OFFSETS), (1000, counting.OFFSETS_PER_PASS)):
        monkeypatch.setattr(counting, "SHORT_PASS_BYTES", short_bytes)  # the partitioned kernel shares a pass
        cut = large.batches(offsets, 2)
        assert not large.dense and [r for b in cut for r in b] == offsets
        assert len(cut) == -(-29 // pass_size) and {len(b) for b in cut} <= {pass_size, pass_size - 1}
    words = PairCounter(TokenStream("w", rng.permutation(np.arange(70_000) % 66_000), [70_000], 66_000))
    assert words.vocab > counting.PASS_MAX_VOCAB and words.batches(offsets) == [[r] for r in offsets]
    # A pass that counts no marginals holds no blocks x A arrays: large vocabularies share passes too.
    assert words.batches(offsets, 1, marginals=False) == [[int(r) for r in b] for b in cut]
    together = words.sums_at(offsets[:4], ("real", "rotate"), first_marginal=False)
    for r in offsets[:4]:
        alone = words.sums_at([r], ("real", "rotate"), first_marginal=False)
        assert_sums_equal(together["real", r], alone["real", r])


@pytest.mark.parametrize(
    ("lengths", "unit"), [([100] * 40, "documents"), ([4000], "token blocks"), ([10] * 5, "token blocks")]
)
def test_jackknife_blocks_cut_at_documents_when_there_are_enough(lengths: list[int], unit: str) -> None:
    starts, got_unit = jackknife_blocks(np.asarray(lengths), 10)
    assert got_unit == unit
    assert starts[0] == 0 and starts[-1] == sum(lengths) and (np.diff(starts) > 0).all()
    if unit == "documents":
        assert set(starts) <= set(np.cumsum([0] + lengths))


@pytest.mark.parametrize("partner", ["rotate", "iid", "pairs"])
def test_null_partners_match_naive_across_jitter_runs(partner: str) -> None:
    """Streams longer than the 4096-position runs of the rotation jitter."""
    rng = np.random.default_rng(5)
    lengths = rng.integers(100, 3000, 12)
    stream = TokenStream("long", rng.integers(0, 40, int(lengths.sum())), lengths, 40)
    counters = [PairCounter(stream, n_blocks=4, seed=2, dense=d) for d in (False, True)]
    counter = counters[0]
    for r in (1, 17, 900):
        want = naive.counted_sums(
            stream.tokens, stream.doc_lengths, 40, r, partner, counter.block_starts, counter.shift,
            counter.partner_seed(r),
        )
        for c in counters:
            assert_sums_equal(c.sums(r, partner), want)
