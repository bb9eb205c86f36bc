"""The Dask engine's rotation null: one batch's range sums swept against summed offset by offset.

On the speed benchmark's English streams (``bench_speed.build_streams``: bytes, BPE-8k,
BPE-32k at ``--tokens``), each jackknife block is one shard (``tables.shard_tables``); for
a batch of 4 offsets the null's tables are counted at the smallest and, for each larger
one, the pairs it drops. Timed, in one process, rounds interleaved: ``range_sums`` at each
offset (the smallest offset's tables, the dropped pairs' taken out), as the graph did
before commit cb52b44, against ``swept_range_sums`` for all 4 at once, as a range task now
does. Reports the best of ``--repeats`` rounds of each, their ratio, and the largest
difference of the sums.

Run: ``python benchmarks/bench_null_sweep.py [--tokens N] [--repeats K]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from bench_speed import FORTUNES_DIR, GCIDE, build_streams, english_documents
from benchlib import format_table, machine_line

from depstat.count.counting import PARTNER_MODES, jackknife_blocks
from depstat.count.tables import combine, range_sums, shard_tables, swept_range_sums

BATCHES = ([10, 13, 16, 21], [575, 741, 955, 1232])  # from the default grid's small and large offsets
FIELDS = ("joint", "joint_jk", "first", "first_jk", "second", "second_jk")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=3_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(machine_line())
    texts, corpus = english_documents(FORTUNES_DIR, GCIDE)
    print(f"text: {corpus}")
    streams, _ = build_streams(texts, [args.tokens])
    rows = []
    for _, stream, _ in streams:
        tok, v = stream.tokens, stream.vocab_size
        block_starts, _ = jackknife_blocks(stream.doc_lengths, 20)
        n_blocks, ends = len(block_starts) - 1, np.cumsum(stream.doc_lengths)
        shift, mode = max(stream.n_tokens // 2, 1), PARTNER_MODES["rotate"]
        blocks = list(range(n_blocks))
        for batch in BATCHES:
            slots = [(batch[0], mode, 0)] + [(batch[0], mode, 0, r) for r in batch[1:]]
            per_block = [shard_tables(tok, lo, hi, ends, slots, shift, v)
                         for lo, hi in zip(block_starts[:-1], block_starts[1:])]
            tables = [b[0] for b in per_block]
            drops = [[b[k] for b in per_block] for k in range(1, len(slots))]

            def each(tables=tables, drops=drops):
                return [range_sums(tables, blocks, n_blocks, v)] + [
                    range_sums(tables + d, blocks * 2, n_blocks, v, taken_out=[False] * n_blocks + [True] * n_blocks)
                    for d in drops]

            def swept(tables=tables, drops=drops):
                return swept_range_sums(tables, drops, v)

            diff = max(float(np.max(np.abs(getattr(combine([a]), f) - getattr(combine([b]), f))))
                       for a, b in zip(each(), swept()) for f in FIELDS)
            times = {each: [], swept: []}
            for _ in range(args.repeats):
                for call in times:
                    start = time.perf_counter()
                    call()
                    times[call].append(time.perf_counter() - start)
            t_each, t_swept = min(times[each]), min(times[swept])
            dropped = sum(int(t.counts.sum()) for d in drops for t in d)
            rows.append([f"{stream.name} ({stream.n_tokens:,} tokens)", "..".join(map(str, batch[::3])),
                         f"{sum(len(t.keys) for t in tables):,}", f"{dropped:,}", f"{t_each * 1e3:.1f}",
                         f"{t_swept * 1e3:.1f}", f"{t_each / t_swept:.2f}", f"{diff:.1e}"])
    print(f"\nbest of {args.repeats} rounds; 20 blocks, one table each; batch of 4 offsets")
    print(format_table(["stream", "offsets", "table entries", "dropped pairs", "each offset ms", "swept ms",
                        "each / swept", "max |diff| of sums"], rows))


if __name__ == "__main__":
    main()
