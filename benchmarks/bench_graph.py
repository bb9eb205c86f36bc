"""The Dask graph at larger corpora, and one shard task at the sizes it plans.

No cluster is needed. First, the tasks ``DaskCounter.sums_at`` submits for a default
profile (29 offsets, real pairs and the rotation null, 20 jackknife blocks) at 10^9 to
10^11 tokens, with the shards, first-token ranges and merge widths
``distributed.graph_plan`` gives bytes (dense tables) and a BPE vocabulary on a cluster of
64 worker threads, the latter with the workers' memory a thread not known and at 4, 8 and
16 GiB (``distributed.graph_tasks``: the equality test in tests/test_distributed.py checks
it against what ``sums_at`` submits). At Dask's documented ~1 ms a task this is the
scheduler's share of a profile.

Then one shard task (``distributed._count_shard``, a batch of 4 offsets, real and rotation
null, 8 slots) in a fresh process, on the English text of ``bench_speed.py``:
bytes at SHARD_TOKENS (4M) and MAX_SHARD_TOKENS (64M) positions, the text repeated until
it fills the larger shard; BPE-8k and BPE-32k (trained as ``bench_speed.py`` does) at 4M
and 16M positions (the plan at 8 GiB a thread), cut into 16 first-token ranges as at
10^11 tokens, for the default grid's first batch (offsets 1-4) and its last (the longest
offsets, whose tables are the largest). For each, the best seconds of 3 runs (more for the smaller shard: as many
positions), ns a position, table entries and peak anonymous memory above the process's
start. A dense table holds at most V^2 cells whatever the shard, so its memory should not
grow with the shard; a BPE table grows with it, by less than the one 16-byte entry a pair
and slot that ``graph_plan`` budgets.

Then the BPE graph at 10^11 tokens with the shards ``DaskCounter.probe`` would size from
the entries a position measured (``probe_rows``). Then the block and range tasks of such a
batch, timed per table entry they take in (``merge_rows``): with the entries a position of the shard tasks above, the levels of a
block's merge tree and these costs, docs/scale.md bounds the merges and sums of a
10^11-token profile. Last, how a block's table grows with the block, carried to 10^11
tokens (``cells_rows``): what a range task would hold there.

Run: ``python benchmarks/bench_graph.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_speed import (
    DEFAULT,
    FORTUNES_DIR,
    GCIDE,
    MAX_OFFSET,
    build_streams,
    english_documents,
    offset_grid,
    resize,
)
from benchlib import format_table, machine_line, probe_env

from depstat.count.distributed import (
    ENTRY_BYTES,
    MAX_KEY_RANGES,
    MAX_SHARD_TOKENS,
    MERGE_FAN_IN,
    OFFSETS_PER_BATCH,
    PROBE_SAFETY,
    SHARD_TOKENS,
    _block_task,
    _combine_task,
    _count_shard,
    _piece,
    _range_task,
    batch_spec,
    first_token_edges,
    graph_plan,
    graph_tasks,
)
from depstat.count.tables import shard_tables
from depstat.estimate.estimators import get as estimator
from depstat.tokenize.stream import TokenStream

N_OFFSETS = 29
THREADS = 64  # the cluster the graph is sized for (docs/scale.md's 10^11-token estimate assumes 64 workers)
GIB = 1 << 30
MEMORIES = (None, 4 * GIB, 8 * GIB, 16 * GIB)  # a worker thread's memory, for BPE's plan
BPE_SHARDS = (SHARD_TOKENS, 1 << 24)  # 16M: the plan at 8 GiB a thread
SHARD_COLUMNS = ["stream", "offsets", "shard positions", "best s", "ns a position", "table entries",
                 "entries a position and slot", "peak anonymous MiB", "graph_plan's budget MiB"]  # shard_rows'
MERGE_COLUMNS = ["stream", "offsets", "merged shards", "merge entries in", "out / in", "merge ns an entry",
                 "range blocks", "range entries in", "range + combine ns an entry"]  # merge_rows'
MERGE_TOKENS = 12_000_000  # the BPE streams' tokens before their text repeats (13.5M for BPE-8k, 12.2M for 32k)


def graph_rows(n_blocks: int = 20, partners: int = 2, threads: int = THREADS) -> list[list[object]]:
    """Tasks of the default profile's graph at larger corpora (``distributed.graph_tasks``),
    with the shards, first-token ranges and merges of ``distributed.graph_plan`` for bytes
    (dense tables) and for a BPE vocabulary at each of MEMORIES a thread, on a cluster of
    ``threads`` worker threads, batches of OFFSETS_PER_BATCH offsets x ``partners`` slots."""
    rows = []
    batches = -(-N_OFFSETS // OFFSETS_PER_BATCH)
    n_slots = OFFSETS_PER_BATCH * partners
    for vocab, name, memories in ((256, "bytes", (None,)), (8192, "BPE", MEMORIES)):
        for memory in memories:
            for n in (10**9, 10**10, 10**11):
                shard_tokens, ranges, merge_tables = graph_plan(n, vocab, threads=threads, memory=memory)
                per_block = [-(-n // (n_blocks * shard_tokens))] * n_blocks
                tasks = graph_tasks(per_block, n_slots, ranges, OFFSETS_PER_BATCH - 1, merge_tables)
                held = "any" if name == "bytes" else f"{memory // GIB} GiB" if memory else "not known"
                rows.append([name, held, f"{n:.0e}", f"{shard_tokens / 2**20:.0f}M", f"{sum(per_block):,}", ranges,
                             max(2, merge_tables // n_slots), f"{tasks:,}", f"{tasks * batches:,}"])
    return rows


SHARD_PROBE = r"""
import json, sys, time
import numpy as np
from benchlib import PeakAnon
from depstat.count.distributed import _count_shard, batch_spec

path, ends_path, edges_path, vocab = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
shards, offsets = [int(v) for v in sys.argv[5].split(",")], [int(v) for v in sys.argv[6].split(",")]
ends, edges = np.load(ends_path), np.load(edges_path)
n = np.load(path, mmap_mode="r").shape[0]
spec = batch_spec(offsets, ("real", "rotate"), 0)[1]  # what the engine's shard tasks count

def shard(size):
    return _count_shard(path, 0, size, ends[: np.searchsorted(ends, size) + 1], spec, n // 2, vocab, edges)

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


def shard_rows(
    stream: TokenStream, sizes: tuple[int, ...], n_ranges: int, offsets: list[int], tmp: Path,
) -> tuple[list[list[object]], list[tuple[int, float]]]:
    """One shard task (``_count_shard``, a batch of 4 ``offsets``, real and rotation null)
    at each of ``sizes`` positions of ``stream``, cut into ``n_ranges`` first-token ranges,
    in a fresh process: best seconds, ns a position (all 8 slots), table entries, entries a
    position and slot, peak anonymous memory above its start, and for BPE what ``graph_plan``
    budgets for the tables (one ENTRY_BYTES entry a pair and slot); and each size's table
    entries a position, all slots."""
    path, ends_path, edges_path = tmp / "tokens.npy", tmp / "ends.npy", tmp / "edges.npy"
    np.save(path, stream.tokens)
    np.save(ends_path, np.cumsum(stream.doc_lengths))
    np.save(edges_path, first_token_edges(stream, n_ranges))
    done = subprocess.run([sys.executable, "-c", SHARD_PROBE, str(path), str(ends_path), str(edges_path),
                           str(int(stream.vocab_size)), ",".join(map(str, sizes)), ",".join(map(str, offsets))],
                          capture_output=True, text=True, check=True, env=probe_env())
    rows, density = [], []
    for out in json.loads(done.stdout.strip().splitlines()[-1]):
        density.append((out["shard"], out["entries"] / out["shard"]))
        rows.append([stream.name, f"{offsets[0]}-{offsets[-1]}", f"{out['shard'] >> 20}M", f"{out['seconds']:.2f}",
                     f"{out['seconds'] / out['shard'] * 1e9:.1f}", f"{out['entries']:,}",
                     f"{out['entries'] / (8 * out['shard']):.3f}", f"{out['peak_mib']:.0f}",
                     "-" if stream.vocab_size <= 256 else f"{8 * ENTRY_BYTES * out['shard'] / 2**20:,.0f}"])
    return rows, density


def merge_rows(stream: TokenStream, offsets: list[int], n_ranges: int, tmp: Path, n_blocks: int = 20) -> list[list[object]]:
    """The block and range tasks of one batch (4 ``offsets``, real and rotation null: 8
    slots), timed per table entry they take in, on tables that shard tasks (``_count_shard``)
    count from ``stream`` in ``n_ranges`` first-token ranges.

    Block tasks: the stream cut into as many shards, all in one block, as a merge task takes
    (MERGE_FAN_IN // 8), and for each range the shards' pieces (``_piece``) merged by one
    ``_block_task``, as the first level of a block's merge tree. Range tasks: the stream
    cut into ``n_blocks`` blocks of one shard each, and for each range every real slot's
    ``_range_task`` and the rotation null's (all offsets swept), then each slot's
    ``_combine_task``, as the default estimator asks for them. Each kind's best of 3 runs.
    The stream should not repeat its text: a repeated pair adds no entry to a merge."""
    path = tmp / "tokens.npy"
    np.save(path, stream.tokens)
    ends, vocab, n = np.cumsum(stream.doc_lengths), int(stream.vocab_size), stream.n_tokens
    edges = first_token_edges(stream, n_ranges)
    n_ranges = len(edges) - 1  # fewer where a token holds more than a range's share of the positions
    slots, spec, base_of = batch_spec(offsets, ("real", "rotate"), 0)
    first_marginal = estimator(DEFAULT).first_marginal

    def count(lo: int, hi: int) -> list:
        return _count_shard(str(path), lo, hi, ends[np.searchsorted(ends, lo, side="right"):
                                                   np.searchsorted(ends, hi) + 1], spec, n // 2, vocab, edges)

    def best(run) -> float:
        seconds = []
        for _ in range(3):
            start = time.perf_counter()
            run()
            seconds.append(time.perf_counter() - start)
        return min(seconds)

    fan_in = max(2, MERGE_FAN_IN // len(slots))
    cuts = np.linspace(0, n, fan_in + 1).astype(np.int64)
    shards = [count(lo, hi) for lo, hi in zip(cuts[:-1], cuts[1:])]
    groups = [[_piece(shard, q) for shard in shards] for q in range(n_ranges)]
    merged = [_block_task(vocab, None, *group) for group in groups]
    merge_in = sum(len(t.keys) for group in groups for piece in group for t in piece)
    merge_out = sum(len(t.keys) for tables in merged for t in tables)
    merge_s = best(lambda: [_block_task(vocab, None, *group) for group in groups])

    cuts = np.linspace(0, n, n_blocks + 1).astype(np.int64)
    blocks = [count(lo, hi) for lo, hi in zip(cuts[:-1], cuts[1:])]  # [block][slot][range]
    null = next(i for i in range(len(slots)) if i not in base_of and slots[i][2] == "rotate")
    groups = [[s] for s in range(len(slots)) if s not in base_of and s != null]
    groups.append([null] + sorted((i for i in base_of), key=lambda i: slots[i][0]))

    def range_and_combine() -> None:
        for group in groups:
            parts = [_range_task(n_blocks, vocab, True, first_marginal, len(group), [(s, q) for s in group
                                 for _ in range(n_blocks)], *[blocks[g] for _ in group for g in range(n_blocks)])
                     for q in range(n_ranges)]
            _combine_task(parts, len(group), True)

    range_in = sum(len(blocks[g][s][q].keys) for group in groups for s in group for g in range(n_blocks)
                   for q in range(n_ranges))
    range_s = best(range_and_combine)
    return [[stream.name, f"{offsets[0]}-{offsets[-1]}", f"{fan_in} x {(n // fan_in) / 1e6:.1f}M",
             f"{merge_in:,}", f"{merge_out / merge_in:.2f}", f"{merge_s / merge_in * 1e9:.1f}",
             f"{n_blocks} x {(n // n_blocks) / 1e6:.1f}M", f"{range_in:,}", f"{range_s / range_in * 1e9:.1f}"]]


def probe_rows(densities: list[tuple[int, float]], n: int = 10**11, n_blocks: int = 20) -> list[list[object]]:
    """The BPE graph at ``n`` tokens with the shards ``DaskCounter.probe`` would size from
    ``densities`` (shard positions, table entries a position, as measured), for each of
    MEMORIES a thread: the densest shard at the largest measured size up to the worst-case
    plan's."""
    rows = []
    batches = -(-N_OFFSETS // OFFSETS_PER_BATCH)
    for memory in MEMORIES[1:]:
        worst, ranges, merge_tables = graph_plan(n, 8192, threads=THREADS, memory=memory)
        size = max((s for s, _ in densities if s <= worst), default=min(s for s, _ in densities))
        entries = max(e for s, e in densities if s == size)
        shard_tokens = graph_plan(n, 8192, threads=THREADS, memory=memory, entries=entries)[0]
        per_block = [-(-n // (n_blocks * shard_tokens))] * n_blocks
        tasks = graph_tasks(per_block, 2 * OFFSETS_PER_BATCH, ranges, OFFSETS_PER_BATCH - 1, merge_tables)
        rows.append([f"{memory // GIB} GiB", f"{worst / 2**20:.0f}M", f"{entries:.2f} (at {size >> 20}M)",
                     f"{shard_tokens / 2**20:.1f}M", f"{sum(per_block):,}", f"{tasks:,}", f"{tasks * batches:,}"])
    return rows


def cells_rows(stream: TokenStream, n_tokens: int = 10**11, n_blocks: int = 20) -> list[list[object]]:
    """How a block's table grows: the cells of one slot (real pairs at offsets 1 and 2048)
    in tables of the first 0.75M to 12M positions of ``stream`` (its text once), a power
    law fitted to the last three sizes and carried to a block of ``n_tokens`` / ``n_blocks``
    positions (at most V^2 cells), and what a range task, which holds every block's table of
    one of MAX_KEY_RANGES first-token ranges, would take in at ENTRY_BYTES an entry. The
    growth slows as the table fills, so the power law errs high."""
    ends, vocab = np.cumsum(stream.doc_lengths), int(stream.vocab_size)
    sizes = [size for size in (750_000 << k for k in range(5)) if size <= stream.n_tokens]
    block = n_tokens // n_blocks
    rows = []
    for r in (1, MAX_OFFSET):
        cells = [len(shard_tables(stream.tokens, 0, n, ends, [(r, 0, 0)], stream.n_tokens // 2, vocab)[0].keys)
                 for n in sizes]
        alpha = np.polyfit(np.log(sizes[-3:]), np.log(cells[-3:]), 1)[0]
        at_block = min(cells[-1] * (block / sizes[-1]) ** alpha, vocab * vocab)
        rows.append([stream.name, r, " / ".join(f"{c / n:.3f}" for c, n in zip(cells, sizes)), f"{alpha:.2f}",
                     f"{at_block:.2e}", f"{at_block / block:.3f}",
                     f"{n_blocks * at_block / MAX_KEY_RANGES * ENTRY_BYTES / 2**30:.1f}"])
    return rows


def byte_stream(docs: list[str], n_tokens: int) -> TokenStream:
    """The documents' UTF-8 bytes, repeated until they hold ``n_tokens``."""
    data = [t.encode("utf-8") for t in docs]
    lengths = np.array([len(d) for d in data], dtype=np.int64)
    reps = -(-n_tokens // int(lengths.sum()))
    tokens = np.frombuffer(b"".join(data) * reps, dtype=np.uint8)
    return TokenStream("bytes", tokens, np.tile(lengths, reps), 256)


def main() -> None:
    print(machine_line())
    print(f"\ntasks of the graph at larger corpora ({N_OFFSETS} offsets, real + rotation null, 20 blocks; "
          f"distributed.graph_plan's defaults for a cluster of {THREADS} worker threads with the memory a thread given)")
    print(format_table(["stream", "memory a thread", "tokens", "shard positions", "shards", "first-token ranges",
                        "shards a merge", "tasks a batch", "tasks a profile"], graph_rows()))
    docs, source = english_documents(FORTUNES_DIR, GCIDE)
    grid = offset_grid(MAX_OFFSET, N_OFFSETS)
    first, last = [int(r) for r in grid[:OFFSETS_PER_BATCH]], [int(r) for r in grid[-OFFSETS_PER_BATCH:]]
    rows, notes, merges, densities, growth = [], [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        rows += shard_rows(byte_stream(docs, MAX_SHARD_TOKENS + 1), (SHARD_TOKENS, MAX_SHARD_TOKENS), 1, first,
                           Path(tmp))[0]
        bpe, train = build_streams(docs, [BPE_SHARDS[-1] + 1], ("bpe-8k", "bpe-32k"))
        for _, stream, note in bpe:
            for offsets in (first, last):
                measured, density = shard_rows(stream, BPE_SHARDS, MAX_KEY_RANGES, offsets, Path(tmp))
                rows += measured
                densities += density
                merges += merge_rows(resize(stream, MERGE_TOKENS)[0], offsets, MAX_KEY_RANGES, Path(tmp))
            growth += cells_rows(resize(stream, MERGE_TOKENS)[0])
            notes.append(f"{stream.name}: {note}")
    print(f"\none shard task (distributed._count_shard) in a fresh process: the first and the last batch of the "
          f"default grid ({OFFSETS_PER_BATCH} offsets, real pairs and the rotation null: 8 slots); text: {source}; "
          f"bytes repeated to fill the larger shard, one first-token range; BPE in {MAX_KEY_RANGES} ranges, {train}; "
          f"{'; '.join(notes)}")
    print(format_table(SHARD_COLUMNS, rows))
    print("\nBPE at 10^11 tokens on 64 threads, the shards sized as DaskCounter.probe sizes them: for "
          f"{PROBE_SAFETY} times the most table entries a position the shard tasks above held at the largest size "
          "measured up to the worst case's (the size the probe counts; a shard holds fewer entries a position the "
          "larger it is)")
    print(format_table(["memory a thread", "worst-case shard", "entries a position", "probed shard", "shards",
                        "tasks a batch", "tasks a profile"], probe_rows(densities)))
    print(f"\nblock and range tasks of a batch (8 slots), per table entry taken in, best of 3, in this process, on "
          f"the first {MERGE_TOKENS:,} tokens of the same BPE streams (their text once): block tasks merging the "
          f"pieces of {MERGE_FAN_IN // 8} shards of one block, the first level of a merge tree; range tasks (every "
          f"real slot's, the rotation null's with its offsets swept) and each slot's combine on 20 blocks of one "
          f"shard each; {MAX_KEY_RANGES} first-token ranges; out / in: the merged tables' entries over the pieces'")
    print(format_table(MERGE_COLUMNS, merges))
    print("\na block's table at 10^11 tokens (20 blocks of 5e9 positions): cells of one slot (real pairs) "
          f"a position in tables of the first 0.75M, 1.5M, 3M, 6M and 12M positions of the same BPE streams, a power "
          f"law fitted to the last three carried to 5e9 positions (at most V^2 cells), and what one range task "
          f"holds then: 20 blocks' tables of one of {MAX_KEY_RANGES} ranges at {ENTRY_BYTES} bytes an entry")
    print(format_table(["stream", "offset", "cells a position at 0.75M-12M", "exponent", "cells a block at 10^11",
                        "a position", "range task GiB"], growth))


if __name__ == "__main__":
    main()
