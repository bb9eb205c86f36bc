"""The Dask graph at larger corpora, and one bytes shard task at its default size.

No cluster is needed. First, the tasks ``DaskCounter.sums_at`` submits for a default
profile (29 offsets, real pairs and the rotation null, 20 jackknife blocks) at 10^9 to
10^11 tokens, with the shards, first-token ranges and merge widths
``distributed.graph_plan`` gives bytes (dense tables) and a BPE vocabulary on a cluster of
64 worker threads (``distributed.graph_tasks``: the equality test in
tests/test_distributed.py checks it against what ``sums_at`` submits). At Dask's
documented ~1 ms a task this is the scheduler's share of a profile.

Then one bytes shard task (``distributed._count_shard``, a default batch: offsets 1-4,
real and rotation null, 8 slots) at SHARD_TOKENS (4M) and at DENSE_SHARD_TOKENS (64M)
positions, in a fresh process, on the English text of ``bench_speed.py`` repeated until it
fills the larger shard: the best seconds of 3 runs (16 at 4M: as many positions), ns a
position, table entries and peak anonymous memory above the process's start. A dense
table holds at most V^2 cells whatever the shard, so memory should not grow with the
shard, and the time should grow linearly.

Run: ``python benchmarks/bench_graph.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from bench_speed import FORTUNES_DIR, GCIDE, english_documents
from benchlib import format_table, machine_line, probe_env
from depstat.distributed import (
    DENSE_SHARD_TOKENS, OFFSETS_PER_BATCH, SHARD_TOKENS, graph_plan, graph_tasks,
)

N_OFFSETS = 29
THREADS = 64  # the cluster the graph is sized for (docs/scale.md's 10^11-token estimate assumes 64 workers)


def graph_rows(n_blocks: int = 20, partners: int = 2, threads: int = THREADS) -> list[list[object]]:
    """Tasks of the default profile's graph at larger corpora (``distributed.graph_tasks``),
    with the shards, first-token ranges and merges of ``distributed.graph_plan`` for bytes
    (dense tables) and for a BPE vocabulary on a cluster of ``threads`` worker threads,
    batches of OFFSETS_PER_BATCH offsets x ``partners`` slots."""
    rows = []
    batches = -(-N_OFFSETS // OFFSETS_PER_BATCH)
    n_slots = OFFSETS_PER_BATCH * partners
    for vocab, name in ((256, "bytes"), (8192, "BPE")):
        for n in (10**9, 10**10, 10**11):
            shard_tokens, ranges, merge_tables = graph_plan(n, vocab, threads=threads)
            per_block = [-(-n // (n_blocks * shard_tokens))] * n_blocks
            tasks = graph_tasks(per_block, n_slots, ranges, OFFSETS_PER_BATCH - 1, merge_tables)
            rows.append([name, f"{n:.0e}", f"{shard_tokens / 2**20:.0f}M", f"{sum(per_block):,}", ranges,
                         max(2, merge_tables // n_slots), f"{tasks:,}", f"{tasks * batches:,}"])
    return rows


SHARD_PROBE = r"""
import json, sys, time
import numpy as np
from benchlib import PeakAnon
from depstat import kernels
from depstat.distributed import _count_shard

path, ends_path, shards = sys.argv[1], sys.argv[2], [int(v) for v in sys.argv[3].split(",")]
ends = np.load(ends_path)
n = np.load(path, mmap_mode="r").shape[0]
real, rotate = kernels.MODE_REAL, kernels.MODE_ROTATE
spec = [(r, real, 0, 0) for r in (1, 2, 3, 4)] + [(1, rotate, 7, 0)] + [(1, rotate, 7, r) for r in (2, 3, 4)]
edges = np.array([0, 256 * 256], dtype=np.int64)

def shard(size):
    return _count_shard(path, 0, size, ends[: np.searchsorted(ends, size) + 1], spec, n // 2, 256, edges)

shard(10_000)  # load the kernels first
out = []
for size in shards:
    seconds = []
    with PeakAnon() as memory:
        for _ in range(max(3, shards[-1] // size)):  # as many positions for each size, and 3 runs at least
            start = time.perf_counter()
            tables = shard(size)
            seconds.append(time.perf_counter() - start)
    out.append({"shard": size, "seconds": min(seconds), "peak_mib": memory.mib,
                "entries": sum(len(t.keys) for ranges in tables for t in ranges)})
print(json.dumps(out))
"""


def dense_shard_rows(docs: list[str], tmp: Path) -> list[list[object]]:
    """One bytes shard task (``_count_shard``, a default batch: 4 offsets, real and rotation
    null) at SHARD_TOKENS and DENSE_SHARD_TOKENS positions, in a fresh process: best seconds of 3 (16 at 4M),
    ns a position (all 8 slots), table entries and peak anonymous memory above its start. The text is repeated
    until the stream holds the larger shard."""
    data = [t.encode("utf-8") for t in docs]
    lengths = np.array([len(d) for d in data], dtype=np.int64)
    reps = -(-(DENSE_SHARD_TOKENS + 1) // int(lengths.sum()))
    path, ends_path = tmp / "bytes.npy", tmp / "ends.npy"
    np.save(path, np.frombuffer(b"".join(data) * reps, dtype=np.uint8))
    np.save(ends_path, np.cumsum(np.tile(lengths, reps)))
    done = subprocess.run([sys.executable, "-c", SHARD_PROBE, str(path), str(ends_path),
                           f"{SHARD_TOKENS},{DENSE_SHARD_TOKENS}"], capture_output=True, text=True, check=True,
                          env=probe_env())
    rows = []
    for out in json.loads(done.stdout.strip().splitlines()[-1]):
        rows.append([f"{out['shard'] >> 20}M", f"{out['seconds']:.2f}", f"{out['seconds'] / out['shard'] * 1e9:.1f}",
                     f"{out['entries']:,}", f"{out['peak_mib']:.0f}"])
    return rows


def main() -> None:
    print(machine_line())
    print(f"\ntasks of the graph at larger corpora ({N_OFFSETS} offsets, real + rotation null, 20 blocks; "
          f"distributed.graph_plan's defaults for a cluster of {THREADS} worker threads)")
    print(format_table(["stream", "tokens", "shard positions", "shards", "first-token ranges", "shards a merge",
                        "tasks a batch", "tasks a profile"], graph_rows()))
    docs, source = english_documents(FORTUNES_DIR, GCIDE)
    with tempfile.TemporaryDirectory() as tmp:
        shard_rows = dense_shard_rows(docs, Path(tmp))
    print(f"\none bytes shard task (distributed._count_shard) in a fresh process: a default batch (offsets 1-4, "
          f"real pairs and the rotation null: 8 slots); text: {source}, repeated to fill the larger shard")
    print(format_table(["shard positions", "best s", "ns a position", "table entries", "peak anonymous MiB"],
                       shard_rows))


if __name__ == "__main__":
    main()
