"""The Dask engine's shard and merge tasks at the sizes a 10^11-token BPE profile plans, on real text.

``bench_graph.py`` times shard tasks at 16M positions and merges of 4 shards of 3M, on the
43 MB of English text this machine has, and docs/scale.md carries those costs to the
57.6M-position shards that ``DaskCounter.probe`` plans at 10^11 tokens with 8 GiB a worker
thread. This benchmark measures at the size the probe plans, on a corpus large enough not to
repeat: the C sources (``.c``, ``.h``) of the Linux kernel, 1.2 GB as Debian's
``linux-source-6.1`` package ships them (``apt-get install linux-source-6.1``), one
document a file in the archive's order.

For each BPE vocabulary (trained as ``bench_speed.py`` does, on the first 8 MB of the same
text) and for the default grid's first and last batch (4 offsets, real pairs and the
rotation null: 8 slots):

1. shard tasks (``distributed._count_shard``, up to 16 first-token ranges, a fresh process) at
   16M positions and at the size the probe plans for this corpus at 10^11 tokens and 8 GiB
   a thread (``graph_plan`` with the most table entries a position measured at 16M): best
   seconds, ns a position, table entries, peak anonymous memory;
2. the first level of a block's merge tree (``_block_task`` merging the pieces of
   MERGE_FAN_IN // 8 = 4 shards) and a batch's range and combine tasks on 20 blocks
   (``bench_graph.merge_rows``), on 4 shards of 16M positions and on 4 of the planned size:
   ns an entry taken in, at both sizes.

Run: ``python benchmarks/bench_large_shards.py`` (32 minutes on the 2-core Intel machine of
RESULTS.md; ``--streams bpe-8k`` for one vocabulary).
"""

from __future__ import annotations

import argparse
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np
from bench_graph import (
    BPE_SHARDS,
    GIB,
    MERGE_COLUMNS,
    SHARD_COLUMNS,
    THREADS,
    merge_rows,
    shard_rows,
)
from bench_speed import (
    MAX_OFFSET,
    N_OFFSETS,
    TRAIN_BYTES,
    encode_until,
    offset_grid,
    resize,
)
from benchlib import format_table, machine_line

from depstat.count.distributed import (
    MAX_KEY_RANGES,
    MERGE_FAN_IN,
    OFFSETS_PER_BATCH,
    PROBE_SAFETY,
    first_token_edges,
    graph_plan,
)
from depstat.tokenize.granularity import bpe_vocab_size, train_bpe
from depstat.tokenize.stream import TokenStream

SOURCE = Path("/usr/src/linux-source-6.1.tar.xz")
MEMORY = 8 * GIB  # a worker thread's memory: the plan whose shards docs/scale.md's bound takes
SMALL = BPE_SHARDS[-1]  # 16M: the size bench_graph.py measures


def kernel_sources(path: Path, n_bytes: int) -> list[str]:
    """The archive's C files (.c, .h) in its order, one document each, until ``n_bytes`` of UTF-8."""
    if not path.exists():
        raise SystemExit(f"{path} not found: install Debian's linux-source-6.1 package (apt-get install linux-source-6.1)")
    docs, size = [], 0
    with tarfile.open(path, "r|xz") as archive:
        for member in archive:
            if member.isfile() and member.name.endswith((".c", ".h")):
                text = archive.extractfile(member).read().decode("utf-8", "replace")
                docs.append(text)
                size += len(text.encode("utf-8"))
                if size >= n_bytes:
                    break
    return docs


class Encoder:
    """One BPE vocabulary trained on the first TRAIN_BYTES of ``docs`` (as ``bench_speed.py``
    trains), encoding the documents in order as far as a stream is asked for."""

    def __init__(self, name: str, docs: list[str]) -> None:
        cum = np.cumsum([len(d.encode("utf-8")) for d in docs])
        n_train = min(int(np.searchsorted(cum, TRAIN_BYTES)) + 1, len(docs))
        self.train = f"BPE vocabularies trained on the first {n_train} files ({int(cum[n_train - 1]):,} bytes)"
        self.name, self.docs, self.tokenizer = name, docs, train_bpe(docs[:n_train], bpe_vocab_size(name))
        self.stream: TokenStream | None = None

    def at_least(self, n_tokens: int) -> TokenStream:
        """Whole documents from the first, at least ``n_tokens`` tokens of them (or all)."""
        have = self.stream.n_tokens if self.stream else 0
        if have < n_tokens:
            done = self.stream.n_docs if self.stream else 0
            more = encode_until(self.name, self.docs[done:], self.tokenizer, n_tokens - have)
            parts = [p for p in (self.stream, more) if p is not None]
            self.stream = TokenStream(self.name, np.concatenate([p.tokens for p in parts]),
                                      np.concatenate([p.doc_lengths for p in parts]), more.vocab_size)
        return resize(self.stream, min(n_tokens, self.stream.n_tokens))[0]


def progress(message: str) -> None:
    """A line on standard error, so a run of this length shows where it is."""
    print(message, file=sys.stderr, flush=True)


def planned_shard(densities: list[tuple[int, float]], vocab: int) -> int:
    """The shard size ``DaskCounter.probe`` plans at 10^11 tokens, THREADS threads and MEMORY a
    thread, from the most table entries a position measured at SMALL positions."""
    entries = max(e for size, e in densities if size == SMALL)
    return graph_plan(10**11, vocab, threads=THREADS, memory=MEMORY, entries=entries)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", default="bpe-8k,bpe-32k", help="BPE vocabularies, comma-separated")
    parser.add_argument("--mb", type=int, default=1100, help="MB of C source to read (enough for 4 planned shards)")
    args = parser.parse_args()
    print(machine_line())
    docs = kernel_sources(SOURCE, args.mb * 10**6)
    source = f"{len(docs):,} C files of {SOURCE.name}, {sum(len(d.encode('utf-8')) for d in docs):,} UTF-8 bytes"
    grid = offset_grid(MAX_OFFSET, N_OFFSETS)
    batches = ([int(r) for r in grid[:OFFSETS_PER_BATCH]], [int(r) for r in grid[-OFFSETS_PER_BATCH:]])
    fan_in = MERGE_FAN_IN // (2 * OFFSETS_PER_BATCH)
    shards, merges, notes = [], [], []
    for name in args.streams.split(","):
        progress(f"{name}: training and encoding")
        encoder = Encoder(name, docs)
        with tempfile.TemporaryDirectory() as tmp:
            stream = encoder.at_least(fan_in * SMALL)
            densities = []
            for offsets in batches:
                progress(f"{name}: probing 16M shards, offsets {offsets}")
                densities += shard_rows(stream, (SMALL,), MAX_KEY_RANGES, offsets, Path(tmp))[1]
            planned = planned_shard(densities, int(stream.vocab_size))
            stream = encoder.at_least(fan_in * planned)
            ranges = len(first_token_edges(stream, MAX_KEY_RANGES)) - 1
            text = ("not repeated" if stream.n_tokens >= fan_in * planned else
                    "the text ran out: the merges' last shard repeats files")
            notes.append(f"{name}: {stream.n_tokens:,} tokens of {stream.n_docs:,} files, {text}; "
                         f"{ranges} first-token ranges; planned shard {planned:,} positions ({planned / 2**20:.1f}M)")
            for offsets in batches:
                progress(f"{name}: shard tasks at 16M and {planned:,} positions, offsets {offsets}")
                shards += shard_rows(stream, (SMALL, planned), MAX_KEY_RANGES, offsets, Path(tmp))[0]
                for size in (SMALL, planned):
                    progress(f"{name}: merges and range tasks on {fan_in} x {size:,} positions, offsets {offsets}")
                    merges += merge_rows(resize(stream, fan_in * size)[0], offsets, MAX_KEY_RANGES, Path(tmp))
    print(f"\ntext: {source}; {encoder.train}; {'; '.join(notes)}")
    print(f"planned shard: what DaskCounter.probe sizes at 10^11 tokens on {THREADS} threads with "
          f"{MEMORY // GIB} GiB a thread, for {PROBE_SAFETY} times the most table entries a position a 16M shard "
          "task held (either batch)")
    print(f"\none shard task (distributed._count_shard) in a fresh process: the first and the last batch of the "
          f"default grid ({OFFSETS_PER_BATCH} offsets, real pairs and the rotation null: 8 slots), "
          f"up to {MAX_KEY_RANGES} first-token ranges (fewer where one token holds more than a range's share)")
    print(format_table(SHARD_COLUMNS, shards))
    print(f"\nblock and range tasks of a batch (8 slots), per table entry taken in, best of 3, in this process: "
          f"block tasks merging the pieces of {fan_in} shards of one block (a merge tree's first level), on "
          f"{fan_in} shards of 16M positions and of the planned size; range tasks (every real slot's, the rotation "
          f"null's with its offsets swept) and each slot's combine on 20 blocks of the same positions; "
          f"first-token ranges as above; out / in: the merged tables' entries over the pieces'")
    print(format_table(MERGE_COLUMNS, merges))


if __name__ == "__main__":
    main()
