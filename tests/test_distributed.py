"""The Dask engine on an embedded LocalCluster over loopback: same sums as the local kernels,
also when a worker is killed mid-run; and ``depstat profile --workers`` end to end."""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.testing as npt
import polars as pl
import pytest

pytest.importorskip("distributed")

from depstat.cluster import dask_client  # noqa: E402
from depstat.count import distributed  # noqa: E402
from depstat.count.counting import PARTNER_MODES, PairCounter, jackknife_blocks  # noqa: E402
from depstat.count.distributed import DaskCounter, graph_plan, thread_memory  # noqa: E402
from depstat.count.tables import shard_tables  # noqa: E402
from depstat.errors import DepstatError  # noqa: E402
from depstat.estimate.profile import mi_profile  # noqa: E402
from depstat.io.corpus import open_corpus  # noqa: E402
from depstat.tokenize import cache as cache_module  # noqa: E402
from depstat.tokenize.cache import TokenCache  # noqa: E402
from depstat.tokenize.granularity import encode_stream, train_bpe  # noqa: E402
from depstat.tokenize.stream import TokenStream  # noqa: E402
from depstat.tokenize.workers import WorkerEncoder  # noqa: E402
from tests import naive  # noqa: E402

pytestmark = pytest.mark.slow
FIELDS = ("joint", "first", "second", "joint_jk", "first_jk", "second_jk", "block_pairs")
ROOT = Path(__file__).resolve().parents[1]


def graph_tasks(
    shards_per_block: Sequence[int], n_slots: int, n_ranges: int, n_swept: int = 0, merge_tables: int | None = None,
) -> int:
    """Tasks ``DaskCounter.sums_at`` submits for one batch of ``n_slots`` slots, given each
    block's shard count and the first-token ranges, ``n_swept`` of the slots being the
    rotation null at the batch's larger offsets (summed by its smallest offset's range and
    combine tasks), merges holding ``merge_tables`` tables (default MERGE_FAN_IN): the
    graph the scheduler is given."""
    fan_in = max(2, (merge_tables or distributed.MERGE_FAN_IN) // n_slots)
    merges = 0
    for n in shards_per_block:
        while n > 1:
            n = -(-n // fan_in)
            merges += n
    n_shards = sum(shards_per_block)
    several = n_ranges > 1
    pieces, picks = (n_shards * n_ranges, n_slots * n_ranges * len(shards_per_block)) if several else (0, 0)
    return n_shards + pieces + merges * n_ranges + picks + (n_slots - n_swept) * (n_ranges + 1)


@pytest.fixture(scope="module")
def client():
    with dask_client(workers=2) as c:
        yield c


def stream_of(n_docs: int, seed: int, vocab: int = 200) -> TokenStream:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(20, 2500, n_docs)
    return TokenStream("t", rng.integers(0, vocab, int(lengths.sum())), lengths, vocab)


def assert_close(got: dict, want: dict) -> None:
    assert got.keys() == want.keys()
    for key in want:
        for name in FIELDS:
            npt.assert_allclose(getattr(got[key], name), getattr(want[key], name), rtol=1e-10,
                                atol=1e-7, err_msg=f"{key} {name}")


@pytest.mark.parametrize("key_ranges, vocab, fan_in, shard_tokens", [
    (None, 200, 1000, 7_000), (None, 300, 2, 7_000), (3, 200, 1000, 7_000), (3, 300, 2, 7_000),
    (None, 200, 32, 10**9), (3, 300, 32, 10**9),
])
def test_dask_sums_equal_local(
    client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key_ranges: int | None, vocab: int, fan_in: int,
    shard_tokens: int,
) -> None:
    """Whole shard tables (small stream) or tables cut into 3 first-token ranges; shards
    counted in dense tables (vocabulary 200) or in partitions (300); several shards a block,
    merged by one task or by a tree of two-list merges, or one shard a block (no merge).

    The graph has no task per (shard, slot): shards, pieces (a shard's range, all slots),
    merges, a pick per (slot, range, block) with several ranges, range tasks (one a range
    for all the null's offsets) and combine tasks (one for all the null's offsets)."""
    monkeypatch.setattr(distributed, "DENSE_MERGE_FAN_IN" if vocab <= 256 else "MERGE_FAN_IN", fan_in)
    stream = stream_of(150, 0, vocab)
    offsets, partners = [1, 3, 50, 700], ("real", "rotate", "iid")
    want = PairCounter(stream, n_blocks=8, seed=4).sums_at(offsets, partners)
    dask = DaskCounter(stream, client, n_blocks=8, seed=4, shard_tokens=shard_tokens, shared_dir=tmp_path,
                       key_ranges=key_ranges)
    per_block = [len(b) for b in dask.block_shards]
    assert min(per_block) > 2 if shard_tokens < 10**6 else max(per_block) == 1
    n_ranges = len(dask.key_edges) - 1
    assert n_ranges == (key_ranges or 1)
    assert_close(dask.sums_at(offsets, partners), want)
    assert dask.merge_tables == fan_in
    # one graph for the offsets at which the null rotates the stream, one where it rotates the pair list
    swept = [r for r in offsets if naive.null_kind(stream.doc_lengths, r) == "rotate"]
    assert 0 < len(swept) < len(offsets)
    assert dask.tasks == (graph_tasks(per_block, len(swept) * len(partners), n_ranges, len(swept) - 1, fan_in)
                          + graph_tasks(per_block, (len(offsets) - len(swept)) * len(partners), n_ranges, 0, fan_in))


@pytest.mark.parametrize("vocab", [200, 300])
def test_dask_default_plan_equals_local(client, tmp_path: Path, vocab: int) -> None:
    """Without --shard-tokens the counter takes ``graph_plan``'s shape for the cluster (its
    threads and their memory): for this small stream 4M-position shards (one a block), with
    wide merges for a bytes-sized vocabulary; the sums equal the local engine's either way."""
    stream = stream_of(150, 3, vocab)
    offsets, partners = [1, 4, 90], ("real", "rotate")
    want = PairCounter(stream, n_blocks=5).sums_at(offsets, partners)
    dask = DaskCounter(stream, client, n_blocks=5, shared_dir=tmp_path)
    workers = client.scheduler_info()["workers"].values()
    memory = thread_memory(client)  # a LocalCluster's workers share the machine's memory
    assert memory == min(w["memory_limit"] // w["nthreads"] for w in workers)
    assert 0 < memory <= os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    plan = graph_plan(stream.n_tokens, vocab, threads=sum(client.nthreads().values()), memory=memory)
    merge_tables = distributed.DENSE_MERGE_FAN_IN if vocab <= 256 else distributed.MERGE_FAN_IN
    assert plan == (distributed.SHARD_TOKENS, 1, merge_tables)
    assert dask.merge_tables == merge_tables and len(dask.key_edges) == 2
    assert [len(b) for b in dask.block_shards] == [1] * 5
    assert_close(dask.sums_at(offsets, partners), want)
    # for an estimator in which the first marginal cancels, its sums are left out (NaN)
    lean = {key: sums for _, batch in dask.sweep(offsets, partners, first_marginal=False) for key, sums in batch.items()}
    assert lean.keys() == want.keys()
    for key, sums in lean.items():
        assert np.isnan(sums.first).all() and np.isnan(sums.first_jk).all()
        for name in FIELDS:
            if not name.startswith("first"):
                npt.assert_allclose(getattr(sums, name), getattr(want[key], name), rtol=1e-10, atol=1e-7)


def test_dask_bpe_shards_follow_the_workers_memory(client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The counter sizes BPE shards by the cluster's memory a thread: scaled down here (a
    share of it that holds a batch's tables of about 5,000 positions, shards of at least
    1,000) so that the memory, not the stream, binds; the sums still equal the local engine's."""
    memory = thread_memory(client)
    batch_bytes = 2 * distributed.OFFSETS_PER_BATCH * distributed.ENTRY_BYTES  # a position's worst case
    share = memory // (batch_bytes * 5_000)
    monkeypatch.setattr(distributed, "SHARD_TOKENS", 1_000)
    monkeypatch.setattr(distributed, "SHARD_MEMORY_SHARE", share)
    stream = stream_of(150, 5, 300)
    spread = stream.n_tokens // (distributed.SHARDS_PER_THREAD * sum(client.nthreads().values()))
    held = memory // (share * batch_bytes)
    assert 1_000 < held < spread  # the memory binds
    dask = DaskCounter(stream, client, n_blocks=4, shared_dir=tmp_path)
    assert dask.shard_tokens == held
    assert len(dask.bounds) - 1 >= stream.n_tokens // held
    offsets, partners = [2, 40], ("real", "rotate")
    assert_close(dask.sums_at(offsets, partners), PairCounter(stream, n_blocks=4).sums_at(offsets, partners))


def test_dask_probe_sizes_bpe_shards_by_the_entries_they_hold(client, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Where memory binds (scaled down as above: the worst case of one entry a pair and slot
    gives shards of about 2,000 positions), a sweep first counts a few shards of its widest
    batch and sizes the shards for PROBE_SAFETY times the entries a position they held:
    20 token types in a vocabulary of 300 hold far fewer than one entry a pair, so the
    shards grow; the sums still equal the local engine's."""
    memory = thread_memory(client)
    share = memory // (2 * distributed.OFFSETS_PER_BATCH * distributed.ENTRY_BYTES * 2_000)
    monkeypatch.setattr(distributed, "SHARD_TOKENS", 500)
    monkeypatch.setattr(distributed, "SHARD_MEMORY_SHARE", share)
    rng = np.random.default_rng(8)
    lengths = rng.integers(20, 2500, 150)
    stream = TokenStream("t", rng.integers(0, 20, int(lengths.sum())), lengths, 300)
    dask = DaskCounter(stream, client, n_blocks=4, shared_dir=tmp_path)
    worst, shards_before = dask.shard_tokens, len(dask.bounds) - 1
    assert dask.probing and dask.entries is None
    offsets, partners = [1, 3, 40, 300, 900], ("real", "rotate")
    got = {key: sums for _, batch in dask.sweep(offsets, partners) for key, sums in batch.items()}
    assert 0 < dask.entries < 2 * distributed.OFFSETS_PER_BATCH / distributed.PROBE_SAFETY
    threads = sum(client.nthreads().values())
    assert dask.shard_tokens == graph_plan(stream.n_tokens, 300, None, threads, memory, dask.entries)[0] > worst
    assert len(dask.bounds) - 1 < shards_before
    assert dask.plan["entries_a_position"] == dask.entries
    assert_close(got, PairCounter(stream, n_blocks=4).sums_at(offsets, partners))
    unbound = DaskCounter(stream, client, n_blocks=4, shared_dir=tmp_path, shard_tokens=worst)
    assert not unbound.probing  # a shard size asked for is kept


@pytest.mark.parametrize("limit, want", [(0, None), ("2GiB", 1 << 30)])
def test_thread_memory_is_a_workers_limit_over_its_threads(limit: int | str, want: int | None) -> None:
    """A worker of 2 threads limited to 2 GiB leaves each 1 GiB; a worker with no limit
    (0) leaves it unknown, and BPE shards then keep SHARD_TOKENS."""
    dask_distributed = pytest.importorskip("distributed")
    cluster = dask_distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, memory_limit=limit,
                                            dashboard_address=":0")  # any free port, as dask_client's
    with cluster, dask_distributed.Client(cluster) as c:
        assert thread_memory(c) == want
        assert graph_plan(10**11, 8192, threads=64, memory=thread_memory(c))[0] == distributed.SHARD_TOKENS


def test_graph_plan_sizes_tasks_by_the_tables_they_hold() -> None:
    """A dense table (vocabulary up to 256) holds at most V^2 cells whatever the shard:
    large shards, one first-token range and wide merges. A larger vocabulary's table can
    hold an entry per pair: shards within a quarter of a worker thread's memory (4M
    positions where it is not known), a range per 16M tokens (at most 16)."""
    dense = (distributed.MAX_SHARD_TOKENS, 1, distributed.DENSE_MERGE_FAN_IN)
    assert graph_plan(10**11, 256) == graph_plan(10**11, 256, threads=64) == dense
    # dense shards shrink to leave each thread SHARDS_PER_THREAD of them, down to 4M positions
    assert graph_plan(10**10, 256, threads=64)[0] == 10**10 // (64 * distributed.SHARDS_PER_THREAD)
    assert graph_plan(10**9, 256, threads=64)[0] == distributed.SHARD_TOKENS
    assert graph_plan(10**11, 257) == (distributed.SHARD_TOKENS, distributed.MAX_KEY_RANGES, distributed.MERGE_FAN_IN)
    # BPE shards: a batch's 8 slots at 16 bytes an entry, one entry a pair, in a quarter of a thread's memory
    gib = 1 << 30
    assert graph_plan(10**11, 8192, threads=64, memory=8 * gib)[0] == 8 * gib // (4 * 8 * 16) == 1 << 24
    assert graph_plan(10**11, 8192, threads=64, memory=gib)[0] == distributed.SHARD_TOKENS  # never smaller
    assert graph_plan(10**11, 8192, threads=64, memory=1 << 40)[0] == distributed.MAX_SHARD_TOKENS
    assert graph_plan(10**9, 8192, threads=64, memory=8 * gib)[0] == distributed.SHARD_TOKENS  # 4 a thread
    assert graph_plan(10**11, 8192, 1 << 20, threads=64, memory=8 * gib)[0] == 1 << 20
    assert graph_plan(10**11, 256, threads=64, memory=gib)[0] == distributed.MAX_SHARD_TOKENS  # dense: any memory
    assert graph_plan(3 * distributed.RANGE_TOKENS - 1, 8192)[1] == 3
    assert graph_plan(10**5, 8192)[1] == 1
    assert graph_plan(10**11, 200, 1 << 20)[0] == graph_plan(10**11, 8192, 1 << 20)[0] == 1 << 20
    # a default batch (4 offsets, real and null) at 10^11 tokens in 20 blocks: the byte graph
    # has neither pieces nor picks, and far fewer shards and merges
    per_block = 5 * 10**9
    byte_graph = graph_tasks([-(-per_block // dense[0])] * 20, 8, 1, 3, dense[2])
    bpe_graph = graph_tasks([-(-per_block // distributed.SHARD_TOKENS)] * 20, 8, 16, 3)
    assert byte_graph < bpe_graph / 100


def test_swept_range_task_sends_its_second_token_counts_once() -> None:
    """A swept range task's result (the rotation null at 4 offsets) pickles, as Dask sends
    it, to about one blocks x vocab array of second-token counts, not one an offset: the
    larger offsets share the smallest's counts and list the pairs they drop."""
    stream, n_blocks = stream_of(12, 5, vocab=5000), 4
    block_starts, _ = jackknife_blocks(stream.doc_lengths, n_blocks)
    ends, vocab = np.cumsum(stream.doc_lengths), stream.vocab_size
    slots = distributed.batch_spec([1, 2, 3, 4], ["rotate"], 0)[1]  # each larger offset's own drops
    per_block = [shard_tables(stream.tokens, lo, hi, ends, slots, stream.n_tokens // 2, vocab)
                 for lo, hi in zip(block_starts[:-1], block_starts[1:])]
    tables = [block[k] for k in range(len(slots)) for block in per_block]
    result = distributed._range_task(n_blocks, vocab, True, False, len(slots), [None] * len(tables), *tables)
    counts = result.parts[0].second_counts
    assert all(p.second_counts is counts for p in result.parts)
    assert counts.nbytes == n_blocks * vocab * 8
    assert len(pickle.dumps(result, protocol=5)) < 1.5 * counts.nbytes


def test_profile_table_equal_with_dask_counter(client, tmp_path: Path) -> None:
    stream = stream_of(60, 1)
    grid = [1, 2, 5, 30, 400]
    local, _ = mi_profile(stream, grid, n_blocks=6)
    assert "dask" not in stream.info
    made = []

    def counter(s: TokenStream, n_blocks: int, seed: int) -> DaskCounter:
        made.append(DaskCounter(s, client, n_blocks, seed, 5_000, tmp_path))
        return made[-1]

    dask, _ = mi_profile(stream, grid, n_blocks=6, counter=counter)
    # the run record holds the graph's shape and the tasks the profile submitted
    assert stream.info["dask"] == made[0].plan and made[0].plan["tasks"] == made[0].tasks > 0
    assert stream.info["dask"]["shard_tokens"] == 5_000 and stream.info["dask"]["shards"] == len(made[0].bounds) - 1
    for col in ("mi_bits", "ci_low", "ci_high", "se"):
        npt.assert_allclose(dask[col].to_numpy(), local[col].to_numpy(), rtol=1e-9, atol=1e-12)
    assert dask["n_pairs"].to_list() == local["n_pairs"].to_list()


def test_killed_worker_changes_nothing(client, tmp_path: Path) -> None:
    """SIGKILL one worker process while shard tasks run: its tasks are rerun elsewhere."""
    stream = stream_of(400, 2)
    offsets, partners = [1, 9, 200], ("real", "rotate")
    want = PairCounter(stream, n_blocks=10).sums_at(offsets, partners)
    dask = DaskCounter(stream, client, n_blocks=10, shard_tokens=2_000, shared_dir=tmp_path)
    box: dict = {}
    run = threading.Thread(target=lambda: box.update(got=dask.sums_at(offsets, partners)))
    run.start()
    deadline = time.monotonic() + 60
    while not any(client.processing().values()) and time.monotonic() < deadline:
        time.sleep(0.01)
    pids = client.run(os.getpid)
    victim = sorted(pids.values())[0]
    os.kill(victim, signal.SIGKILL)
    run.join(timeout=240)
    assert not run.is_alive()
    assert_close(box["got"], want)
    assert victim not in client.run(os.getpid).values()  # the nanny started a new process


def test_workers_dying_on_a_task_end_the_run_with_a_clear_error(tmp_path: Path) -> None:
    """Workers that keep dying on a task (out of memory: a nanny stops a worker near its
    limit) end the run with a DepstatError that names the task and ``--shard-tokens``, not
    Dask's KilledWorker. Here, on a cluster that allows no failures, a worker is killed
    while it runs shard tasks."""
    import dask

    stream = stream_of(400, 2)
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), dask_client(workers=2) as c:
        counter = DaskCounter(stream, c, n_blocks=10, shard_tokens=2_000, shared_dir=tmp_path)
        box: dict = {}

        def run() -> None:
            try:
                counter.sums_at([1, 9, 200], ("real", "rotate"))
            except Exception as err:  # what the run raised, for the assertions below
                box["error"] = err

        thread = threading.Thread(target=run)
        thread.start()
        deadline = time.monotonic() + 60
        busy: list = []
        while not busy and time.monotonic() < deadline:
            busy = [worker for worker, tasks in c.processing().items() if tasks]
            time.sleep(0.005)
        os.kill(c.run(os.getpid)[busy[0]], signal.SIGKILL)
        thread.join(timeout=240)
    assert not thread.is_alive()
    error = box.get("error")
    assert isinstance(error, DepstatError), repr(error)
    assert "died" in str(error) and "'depstat-" in str(error) and "--shard-tokens (this run: 2,000" in str(error)


def test_worker_encoding_equals_local(client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Shards encoded on the workers, through the token cache or not, and copied into one
    file that the client memory-maps: the same stream as encoding in this process."""
    monkeypatch.setattr(cache_module, "SHARD_BYTES", 4_000)  # many shards, several in flight at once
    texts = [doc.text for _, doc in zip(range(40), open_corpus(str(ROOT / "examples" / "python-docs.jsonl.gz")))]
    encoder = WorkerEncoder(client, tmp_path / "shared")
    bpe = train_bpe(texts, 300)
    first_pass = True
    for tokenizer in (None, bpe):
        want = encode_stream("g", iter(texts), tokenizer)
        for cache in (None, TokenCache(tmp_path / "cache"), TokenCache(tmp_path / "cache")):
            got = encoder("g", iter(texts), tokenizer, cache)
            assert isinstance(got.tokens.base, np.memmap) and got.source_file.parent == tmp_path / "shared"
            assert got.tokens.dtype == want.tokens.dtype == (np.uint8 if tokenizer is None else np.uint16)
            npt.assert_array_equal(got.tokens, want.tokens)
            npt.assert_array_equal(got.doc_lengths, want.doc_lengths)
            assert got.n_bytes == want.n_bytes
            if cache is not None and tokenizer is not None:  # the first pass stores every shard, the second reads them
                shards = len(list(cache_module.split_shards(texts)))
                stored = cache.counts["shards_encoded"] == shards and not cache.counts["shards_reused"]
                reused = cache.counts["shards_reused"] == shards and not cache.counts["shards_encoded"]
                assert shards > 8 and (stored if first_pass else reused)
                first_pass = False
    assert len(list((tmp_path / "shared").glob("*.npy"))) == 6 and not list((tmp_path / "shared").glob("*/"))
    encoder.remove_files()
    assert not list((tmp_path / "shared").iterdir())


def test_batch_spec_asks_each_larger_null_offset_for_its_own_drops() -> None:
    """The rotation null's larger offsets, in any order given: each asks for the pairs it drops
    and the next smaller offset keeps (r_before, mode, seed, r), all swept from the smallest."""
    rotate, real = PARTNER_MODES["rotate"], PARTNER_MODES["real"]
    slots, spec, base_of = distributed.batch_spec([64, 1, 16, 4], ["real", "rotate"], 0)
    null = {r: (i, s) for i, ((r, m, _), s) in enumerate(zip(slots, spec)) if m == rotate}
    assert [s[0::3] for _, s in sorted(null.values(), key=lambda x: x[1][3])] == [(1, 0), (1, 4), (4, 16), (16, 64)]
    assert all(s[3] == 0 for (_, m, _), s in zip(slots, spec) if m == real)
    assert set(base_of) == {null[r][0] for r in (4, 16, 64)} and set(base_of.values()) == {null[1][0]}


def test_the_counted_stream_is_written_a_chunk_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``_write_tokens`` (a reordered, memory-mapped sample's tokens for the workers), hashing
    and writing a few tokens at a time: the file and its content-derived name are those of
    the whole narrowed array saved at once, and a second call reuses the file."""
    import hashlib

    monkeypatch.setattr(distributed, "WRITE_CHUNK", 7)
    np.save(tmp_path / "sample.npy", np.random.default_rng(0).integers(0, 300, size=100).astype(np.int64))
    tokens = np.load(tmp_path / "sample.npy", mmap_mode="r")
    stream = TokenStream("g", tokens, np.array([60, 40]), 300)
    path = distributed._write_tokens(stream, tmp_path / "shared")
    narrow = tokens.astype(np.uint16)
    assert path.name == f"depstat-tokens-{hashlib.sha1(narrow.tobytes()).hexdigest()[:20]}.npy"
    got = np.load(path)
    assert got.dtype == np.uint16
    npt.assert_array_equal(got, narrow)
    assert distributed._write_tokens(stream, tmp_path / "shared") == path
    assert [p.name for p in (tmp_path / "shared").iterdir()] == [path.name]  # no temporary left


def test_killed_worker_during_encoding_changes_nothing(client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGKILL, while shards are being encoded, a worker that holds the tokenizer's JSON: the
    JSON (a task's result) is computed again, the worker's tasks (atomic part files,
    idempotent copies) are rerun elsewhere, and the stream comes out the same. Scattered
    data would be lost with it: Dask keeps one copy of it, whatever the broadcast."""
    monkeypatch.setattr(cache_module, "SHARD_BYTES", 2_000)
    texts = [doc.text for _, doc in zip(range(300), open_corpus(str(ROOT / "examples" / "python-docs.jsonl.gz")))]
    bpe = train_bpe(texts[:50], 500)
    want = encode_stream("g", iter(texts), bpe)
    box: dict = {}
    run = threading.Thread(target=lambda: box.update(got=WorkerEncoder(client, tmp_path)("g", iter(texts), bpe)))
    run.start()
    def holders() -> list[str]:
        return [w for key, ws in client.who_has().items() if str(key).startswith("depstat-tokenizer-") for w in ws]

    deadline = time.monotonic() + 60
    while not (any(client.processing().values()) and holders()) and time.monotonic() < deadline:
        time.sleep(0.005)
    address = holders()[0]
    victim = client.run(os.getpid, workers=[address])[address]
    assert run.is_alive()  # the kill lands mid-run
    os.kill(victim, signal.SIGKILL)
    run.join(timeout=240)
    assert not run.is_alive()
    npt.assert_array_equal(box["got"].tokens, want.tokens)
    npt.assert_array_equal(box["got"].doc_lengths, want.doc_lengths)
    assert victim not in client.run(os.getpid).values()


def test_cli_workers_matches_local(tmp_path: Path) -> None:
    example = ROOT / "examples" / "python-docs.jsonl.gz"
    common = [sys.executable, "-m", "depstat.cli", "profile", str(example), "-g", "bytes",
              "--max-offset", "64", "--max-docs", "30", "--no-cache"]
    for name, extra in (("local", []), ("dask", ["--workers", "2", "--shard-tokens", "20K"])):
        done = subprocess.run(common + ["--out", str(tmp_path / name)] + extra, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    local = pl.read_parquet(tmp_path / "local" / "profile.parquet")
    dask = pl.read_parquet(tmp_path / "dask" / "profile.parquet")
    facts = {name: json.loads((tmp_path / name / "summary.json").read_text())["granularities"]["bytes"]
             for name in ("local", "dask")}
    assert "dask" not in facts["local"] and facts["dask"]["dask"]["shard_tokens"] == 20 * 1024
    assert facts["dask"]["dask"]["tasks"] > 0
    npt.assert_allclose(dask["mi_bits"].to_numpy(), local["mi_bits"].to_numpy(), rtol=1e-9)
    npt.assert_allclose(dask["se"].to_numpy(), local["se"].to_numpy(), rtol=1e-7)
