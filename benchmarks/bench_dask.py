"""The Dask engine against the local kernels: equality, time split, table sizes, worker memory.

On the same English token streams as bench_speed.py, the default profile (29 offsets,
rotation null, jackknife interval) is computed by the local kernels and by ``DaskCounter``
on an embedded LocalCluster (processes, one thread each). Reports the largest difference of
MI and of the standard error, wall time of each, worker-seconds spent counting shards and
merging tables, the merged tables' entries per pair, and the workers' peak RSS, then the
per-token costs that docs/scale.md extrapolates from.

Run: ``python benchmarks/bench_dask.py [--tokens N] [--workers W]``.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from collections import defaultdict

import numpy as np
from distributed import get_task_stream

from bench_speed import FORTUNES_DIR, GCIDE, build_streams, english_documents, offset_grid
from benchlib import format_table, machine_line
from depstat import kernels
from depstat.distributed import DaskCounter, dask_client
from depstat.profile import mi_profile
from depstat.stream import TokenStream

MAX_OFFSET = 2048
N_OFFSETS = 29


def peak_rss_mib() -> float:
    """This process's peak resident set size in MiB (run on each worker)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def entries_per_pair(stream: TokenStream) -> str:
    """Distinct (x, y) cells per pair of the whole stream's table at a few offsets: the table memory."""
    ends = np.cumsum(stream.doc_lengths)
    out = []
    for r in (1, 64, 2048):
        keys, counts, _ = kernels.range_tables(
            stream.tokens, 0, stream.n_tokens, ends, np.array([r]), np.array([kernels.MODE_REAL]),
            np.array([0]), 1, int(stream.vocab_size))
        out.append(f"{len(keys) / max(int(counts.sum()), 1):.3f}")
    return " / ".join(out)


def task_seconds(stream_log: list[dict]) -> dict[str, float]:
    """Worker-seconds of compute per task kind (shard, piece, range, combine)."""
    out: dict[str, float] = defaultdict(float)
    for task in stream_log:
        key = task["key"][0] if isinstance(task["key"], tuple) else task["key"]
        kind = key.split("-")[1] if key.startswith("depstat-") else "other"
        for ss in task["startstops"]:
            if ss["action"] == "compute":
                out[kind] += ss["stop"] - ss["start"]
    return dict(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=2_000_000, help="tokens per stream (default 2M)")
    parser.add_argument("--workers", type=int, default=2, help="LocalCluster worker processes")
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
            def counter(s, n_blocks, seed):
                return DaskCounter(s, client, n_blocks, seed, shared_dir=tmp)

            mi_profile(stream, offsets[:2], counter=counter)  # compile on the workers too
            with get_task_stream(client) as ts:
                start = time.perf_counter()
                dask, _ = mi_profile(stream, offsets, counter=counter)
                t_dask = time.perf_counter() - start
            split = task_seconds(ts.data)
            d_mi = float(np.max(np.abs(dask["mi_bits"].to_numpy() - local["mi_bits"].to_numpy())))
            d_se = float(np.max(np.abs(dask["se"].to_numpy() - local["se"].to_numpy())))
            rows.append([
                f"{stream.name} ({stream.n_tokens:,} tokens)", f"{t_local:.1f}", f"{t_dask:.1f}",
                f"{t_dask / t_local:.1f}x", f"{d_mi:.1e}", f"{d_se:.1e}",
            ])
            cost_rows.append([
                stream.name,
                f"{split.get('shard', 0):.1f}",
                f"{split.get('range', 0) + split.get('combine', 0):.1f}",
                f"{1e9 * split.get('shard', 0) / (pairs * 2):.1f}",
                f"{1e9 * (split.get('range', 0) + split.get('combine', 0)) / (pairs * 2):.1f}",
                entries_per_pair(stream),
                note,
            ])
        rss = client.run(peak_rss_mib)
    print(f"\n{len(offsets)} offsets up to {MAX_OFFSET}, default estimator with interval; "
          f"Dask: LocalCluster, {args.workers} worker processes x 1 thread")
    print(format_table(
        ["stream", "local s", "dask s", "dask/local", "max |dMI| bits", "max |dSE| bits"], rows))
    print("\nworker-seconds by task kind, and per pair-update (real + rotation pairs)")
    print(format_table(
        ["stream", "count shards s", "merge + sums s", "count ns/pair", "merge + sums ns/pair",
         "table entries/pair at r=1,64,2048", "text"],
        cost_rows))
    print("\nworker peak RSS (MiB): " + ", ".join(f"{v:.0f}" for v in rss.values()))


if __name__ == "__main__":
    main()
