"""The Dask engine against the local kernels: equality, time split, table sizes, worker memory.

On the same English token streams as bench_speed.py, the default profile (29 offsets,
rotation null, jackknife interval) is computed by the local kernels and by ``DaskCounter``
on an embedded LocalCluster (processes, one thread each). Reports the largest difference of
MI and of the standard error, wall time of each, worker-seconds spent counting shards and
merging tables, the tasks each run submitted, the merged tables' entries per pair, and the
workers' peak RSS, then the per-token costs that docs/scale.md extrapolates from; the
wall time of a no-op task on the same cluster.

Then the client's memory: ``depstat.profile`` of ``--client-mb`` and twice that of the
same text as jsonl at bytes, and of ``--client-mb`` at bytes and BPE-8k (offsets up to
256), in a fresh process for each engine and size, sampling
the process's anonymous resident memory (``RssAnon``) every 5 ms. The local engine holds
the token streams; with ``--pair-memory`` it spools them to temporary files it
memory-maps, as it does its relabelled copy, and caps its pair buffers; with ``workers``
the documents go to the workers a shard at a time and the client only memory-maps the
stream file they write.

Dask runs once for each ``--shards-per-block`` (default 1 and 4): with one shard per
jackknife block there is nothing to merge; with more, the costs include merging each
block's shard tables, as at 10^11 tokens, where a block of BPE holds about a thousand
4M-position shards (here shards are far smaller, and hold more table entries per pair).

Run: ``python benchmarks/bench_dask.py [--tokens N] [--workers W] [--client-mb M] [--shards-per-block 1,4]``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from bench_speed import (
    FORTUNES_DIR,
    GCIDE,
    build_streams,
    english_documents,
    offset_grid,
)
from benchlib import format_table, machine_line, probe_env
from distributed import get_task_stream

from depstat.cluster import dask_client
from depstat.count import kernels
from depstat.count.distributed import DaskCounter
from depstat.count.tables import shard_tables
from depstat.estimate.profile import mi_profile
from depstat.tokenize.stream import TokenStream

MAX_OFFSET = 2048
N_OFFSETS = 29
PAIR_MEMORY = 32 << 20  # the local engine with --pair-memory, in the memory table


def peak_rss_mib() -> float:
    """This process's peak resident set size in MiB (run on each worker)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def entries_per_pair(stream: TokenStream) -> str:
    """Distinct (x, y) cells per pair of the whole stream's table at a few offsets: the table memory."""
    ends = np.cumsum(stream.doc_lengths)
    out = []
    for r in (1, 64, 2048):
        (table,) = shard_tables(stream.tokens, 0, stream.n_tokens, ends, [(r, kernels.MODE_REAL, 0)], 1,
                                int(stream.vocab_size))
        out.append(f"{len(table.keys) / max(int(table.counts.sum()), 1):.3f}")
    return " / ".join(out)


def _nothing(*inputs: object) -> None:
    """A task that does nothing: its wall time is the scheduler's and the workers' overhead."""


def task_overhead_ms(client, n: int = 4000) -> float:
    """Wall milliseconds per task of ``n`` no-op tasks submitted one by one, as ``DaskCounter``
    does, and gathered by tasks that each take 32 of them."""
    start = time.perf_counter()
    leaves = [client.submit(_nothing, i, key=f"overhead-{i}") for i in range(n)]
    client.gather([client.submit(_nothing, *leaves[k : k + 32], key=f"overhead-sum-{k}") for k in range(0, n, 32)])
    return (time.perf_counter() - start) * 1e3 / (n + -(-n // 32))


def task_seconds(stream_log: list[dict]) -> dict[str, float]:
    """Worker-seconds of compute per task kind (shard, piece, block, pick, range, combine)."""
    out: dict[str, float] = defaultdict(float)
    for task in stream_log:
        key = task["key"][0] if isinstance(task["key"], tuple) else task["key"]
        kind = key.split("-")[1] if key.startswith("depstat-") else "other"
        for ss in task["startstops"]:
            if ss["action"] == "compute":
                out[kind] += ss["stop"] - ss["start"]
    return dict(out)


CLIENT_PROBE = r"""
import json, sys, time
import depstat, distributed
from benchlib import PeakAnon

path, small, workers, grans = sys.argv[1], sys.argv[2], int(sys.argv[3]) or None, sys.argv[4].split(",")
pair_memory = int(sys.argv[5]) or None
depstat.profile(small, granularities=["bytes", "bpe-300"], max_offset=8)  # load the kernels first
with PeakAnon() as memory:
    start = time.perf_counter()
    p = depstat.profile(path, granularities=grans, max_offset=256, workers=workers, pair_memory=pair_memory)
    seconds = time.perf_counter() - start
print(json.dumps({"peak_mib": memory.mib, "seconds": seconds,
                  "tokens": {k: v.n_tokens for k, v in p.granularities.items()}}))
"""


def client_memory(docs: list[str], mb: float, workers: int, tmp: Path) -> list[list[object]]:
    """Peak anonymous memory of a profile's process above its start: local engine, capped, and Dask engine."""
    small = tmp / "small.jsonl"
    small.write_text("".join(json.dumps({"text": t[:2000]}) + "\n" for t in docs[:5]), encoding="utf-8")
    rows = []
    for size, grans in ((mb, "bytes"), (2 * mb, "bytes"), (mb, "bytes,bpe-8k")):
        path = tmp / f"client-{size:g}.jsonl"
        budget = int(size * 1e6)
        with path.open("w", encoding="utf-8") as f:
            for text in docs:
                if budget <= 0:
                    break
                f.write(json.dumps({"text": text[:budget]}) + "\n")
                budget -= len(text.encode("utf-8"))
        engines = (("local", 0, 0), (f"local, --pair-memory {PAIR_MEMORY >> 20}M", 0, PAIR_MEMORY),
                   (f"dask, {workers} workers", workers, 0))
        for name, n, cap in engines:
            done = subprocess.run([sys.executable, "-c", CLIENT_PROBE, str(path), str(small), str(n), grans, str(cap)],
                                  capture_output=True, text=True, check=True, cwd=tmp, env=probe_env())
            out = json.loads(done.stdout.strip().splitlines()[-1])
            tokens = ", ".join(f"{k} {v:,}" for k, v in out["tokens"].items())
            rows.append([name, f"{size:g}", tokens, f"{out['peak_mib']:.0f}", f"{out['seconds']:.1f}"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=2_000_000, help="tokens per stream (default 2M)")
    parser.add_argument("--workers", type=int, default=2, help="LocalCluster worker processes")
    parser.add_argument("--client-mb", type=float, default=20, help="text profiled for the client memory")
    parser.add_argument("--shards-per-block", type=lambda v: [int(x) for x in v.split(",")], default=[1, 4],
                        help="shards of each jackknife block, one Dask run each (default 1,4: with 4, each "
                             "block's tables are merged)")
    args = parser.parse_args()
    print(machine_line())
    docs, source = english_documents(FORTUNES_DIR, GCIDE)
    print(f"text: {source}")
    offsets = offset_grid(MAX_OFFSET, N_OFFSETS)
    rows, cost_rows = [], []
    with dask_client(workers=args.workers) as client, tempfile.TemporaryDirectory() as tmp:
        streams, _ = build_streams(docs, [args.tokens])
        for _, stream, note in streams:
            pairs = sum(stream.pairs_at(int(r))[0] for r in offsets)
            mi_profile(stream, offsets[:2])  # compile outside the timing
            start = time.perf_counter()
            local, _ = mi_profile(stream, offsets)
            t_local = time.perf_counter() - start
            for per_block in args.shards_per_block:
                made: list[DaskCounter] = []

                def counter(s, n_blocks, seed, per_block=per_block, made=made):
                    shard = -(-s.n_tokens // (n_blocks * per_block))
                    made.append(DaskCounter(s, client, n_blocks, seed, shard_tokens=shard, shared_dir=tmp))
                    return made[-1]

                mi_profile(stream, offsets[:2], counter=counter)  # compile on the workers too
                with get_task_stream(client) as ts:
                    start = time.perf_counter()
                    dask, _ = mi_profile(stream, offsets, counter=counter)
                    t_dask = time.perf_counter() - start
                tasks = made[-1].tasks
                split = task_seconds(ts.data)
                merging = sum(split.get(kind, 0) for kind in ("piece", "block", "pick", "range", "combine"))
                d_mi = float(np.max(np.abs(dask["mi_bits"].to_numpy() - local["mi_bits"].to_numpy())))
                d_se = float(np.max(np.abs(dask["se"].to_numpy() - local["se"].to_numpy())))
                rows.append([
                    f"{stream.name} ({stream.n_tokens:,} tokens)", f"{per_block}", f"{t_local:.1f}", f"{t_dask:.1f}",
                    f"{t_dask / t_local:.1f}x", f"{tasks:,}", f"{d_mi:.1e}", f"{d_se:.1e}",
                ])
                cost_rows.append([
                    stream.name,
                    f"{per_block}",
                    f"{split.get('shard', 0):.1f}",
                    f"{merging:.1f}",
                    f"{1e9 * split.get('shard', 0) / (pairs * 2):.1f}",
                    f"{1e9 * merging / (pairs * 2):.1f}",
                    entries_per_pair(stream) if per_block == args.shards_per_block[0] else "",
                    note if per_block == args.shards_per_block[0] else "",
                ])
        rss = client.run(peak_rss_mib)
        overhead = task_overhead_ms(client)
    print(f"\n{len(offsets)} offsets up to {MAX_OFFSET}, default estimator with interval; "
          f"Dask: LocalCluster, {args.workers} worker processes x 1 thread")
    print(format_table(
        ["stream", "shards a block", "local s", "dask s", "dask/local", "tasks, all batches", "max |dMI| bits",
         "max |dSE| bits"], rows))
    print("\nworker-seconds by task kind, and per pair-update (real + rotation pairs)")
    print(format_table(
        ["stream", "shards a block", "count shards s", "merge + sums s", "count ns/pair", "merge + sums ns/pair",
         "table entries/pair at r=1,64,2048", "text"],
        cost_rows))
    print(f"\nscheduling overhead: {overhead:.2f} ms a task (no-op tasks on this LocalCluster, submitted one by one; "
          "the scheduler, client and workers share the machine's cores)")
    print("\nworker peak RSS (MiB): " + ", ".join(f"{v:.0f}" for v in rss.values()))
    with tempfile.TemporaryDirectory() as tmp:
        mem_rows = client_memory(docs, args.client_mb, args.workers, Path(tmp))
    print(f"\nthe profiling process's memory: depstat.profile of {args.client_mb:g} and "
          f"{2 * args.client_mb:g} MB of jsonl at bytes, and of {args.client_mb:g} MB at bytes and "
          "bpe-8k (whose vocabulary is trained in this process); offsets up to 256, no cache; "
          "peak RssAnon above its value before the call (a LocalCluster's scheduler runs in this process)")
    print(format_table(["engine", "text MB", "tokens", "peak anonymous MiB", "seconds"], mem_rows))


if __name__ == "__main__":
    main()
