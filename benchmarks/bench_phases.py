"""Where the counting time goes: each phase of depstat's kernels, in ns per pair, on 1 and 2 threads.

On the speed benchmark's English streams (``bench_speed.build_streams``: bytes, BPE-8k,
BPE-32k at ``--tokens``), for one offset at a time (``--offsets``, real pairs):

- why the partitioned kernel exists: a bare read of every partner ``tokens[p + r]`` with
  positions in first-token order (what the previous grouped kernel did) against the same
  reads in position order;
- the partitioned kernel's phases (BPE streams), for the real pairs alone and for the real
  pairs with their rotation null in one pass (the default estimator's work at an offset):
  ``emit_pairs`` (pairs into first-token partitions, both marginals per block),
  ``partition_sums`` with and without the jackknife deltas, and ``row_sums`` of one marginal;
- the dense kernel (bytes): one slot against the real pairs and their rotation null
  counted together, with and without the jackknife.

Times are the best of ``--repeats`` calls, divided by the pairs at that offset.
Run: ``python benchmarks/bench_phases.py [--tokens N] [--offsets R,S] [--repeats K]
[--part-tokens A,B]`` (partition sizes to compare; default ``counting.PART_TOKENS``).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numba
import numpy as np

from bench_speed import FORTUNES_DIR, GCIDE, build_streams, english_documents
from benchlib import format_table, machine_line
from depstat import kernels
from depstat.counting import PART_TOKENS, PARTNER_MODES, PairCounter, slot_arrays
from depstat.stream import TokenStream


def best_seconds(call: Callable[[], object], repeats: int) -> float:
    """Best wall time of ``repeats`` calls, after one warm-up call."""
    call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


@numba.njit(cache=True)
def read_partners(tokens: np.ndarray, positions: np.ndarray, r: int) -> int:
    """Sum of ``tokens[p + r]`` over the positions, in the order given (the read alone)."""
    n = tokens.shape[0]
    total = 0
    for k in range(positions.shape[0]):
        q = positions[k] + r
        if q < n:
            total += tokens[q]
    return total


def gather_rows(counter: PairCounter, r: int, repeats: int) -> list[list[object]]:
    """ns per pair of the partner reads in first-token order and in position order."""
    tokens = counter.tokens
    grouped = np.argsort(tokens, kind="stable").astype(np.int32)
    in_order = np.arange(tokens.shape[0], dtype=np.int32)
    n = tokens.shape[0]
    return [
        [f"partner reads, {name} order", "-", f"{best_seconds(lambda p=p: read_partners(tokens, p, r), repeats) * 1e9 / n:.2f}"]
        for name, p in (("first-token", grouped), ("position", in_order))
    ]


def partitioned_rows(counter: PairCounter, r: int, repeats: int) -> list[list[object]]:
    """ns per pair of each phase of the partitioned kernel at offset r, for the real pairs alone and with their null."""
    rows = []
    for partners in (("real",), ("real", "rotate")):
        counter._kept = None
        xloc, ys, fill_end, first, second = counter._buffers(len(partners))
        modes = np.array([PARTNER_MODES[p] for p in partners])
        seeds = np.zeros(len(partners), dtype=np.int64)

        def emit() -> None:
            kernels.emit_pairs(
                counter.tokens, counter.code, counter.doc_ends, counter.block_starts, counter.region,
                r, modes, seeds, counter.shift, xloc, ys, fill_end, first, second,
            )

        def count(jackknife: bool) -> Callable[[], object]:
            return lambda: kernels.partition_sums(
                xloc, ys, counter.region, fill_end, counter.widths, counter.vocab, kernels.SUM_TABLES,
                jackknife, numba.get_num_threads(),
            )

        emit()
        n = int(first.sum())
        label = " + ".join(partners)
        phases = [
            (f"emit_pairs, {label}", emit),
            (f"partition_sums, {label}, jackknife", count(True)),
            (f"partition_sums, {label}", count(False)),
        ]
        if len(partners) == 1:
            phases.append(("row_sums of one marginal", lambda: kernels.row_sums(first, kernels.SUM_TABLES, True)))
        rows += [[name, "", best_seconds(call, repeats) * 1e9 / n] for name, call in phases]
    return rows


def dense_rows(counter: PairCounter, r: int, repeats: int) -> list[list[object]]:
    """ns per pair of the dense kernel: the real pairs alone, and real + rotation null together."""
    rows = []
    for partners in (("real",), ("real", "rotate")):
        _, slot_r, slot_mode, slot_seed = slot_arrays([r], partners, 0)
        counts = np.empty((counter.n_blocks, len(partners), counter.vocab, counter.vocab), dtype=np.int32)
        for jackknife in (False, True):
            def call() -> object:
                return kernels.dense_pair_sums(
                    counter.tokens, counter.doc_ends, counter.block_starts, slot_r, slot_mode,
                    slot_seed, counter.shift, kernels.SUM_TABLES, jackknife, counts,
                )

            n = int(call()[-1][0].sum())
            label = f"dense_pair_sums, {' + '.join(partners)}{', jackknife' if jackknife else ''}"
            rows.append([label, "", best_seconds(call, repeats) * 1e9 / n])
    return rows


def phase_table(stream: TokenStream, offsets: list[int], repeats: int, part_tokens: list[int]) -> str:
    """One table per stream: phase, offset, partition size, ns per pair on 1 thread and on all threads."""
    threads = numba.get_num_threads()
    rows = []
    for size in part_tokens:
        counter = PairCounter(stream, part_tokens=size)
        if counter.dense and size != part_tokens[0]:
            break  # the dense kernel has no partitions
        for r in offsets:
            for n_threads in (1, threads):
                numba.set_num_threads(n_threads)
                try:
                    if counter.dense:
                        part = dense_rows(counter, r, repeats)
                    else:
                        gathers = gather_rows(counter, r, repeats) if size == part_tokens[0] else []
                        part = gathers + partitioned_rows(counter, r, repeats)
                finally:
                    numba.set_num_threads(threads)
                for row in part:
                    label = "-" if counter.dense else f"{size} ({len(counter.widths)})"
                    rows.append([row[0], r, label, n_threads, f"{float(row[2]):.2f}"])
    return format_table(["phase", "offset", "part_tokens (partitions)", "threads", "ns per pair"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=10_000_000)
    parser.add_argument("--offsets", default="1,100")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--part-tokens", default=str(PART_TOKENS),
                        help="partition sizes of the partitioned kernel, comma-separated")
    args = parser.parse_args()
    print(machine_line())
    texts, note = english_documents(FORTUNES_DIR, GCIDE)
    print(f"text: {note}")
    streams, train = build_streams(texts, [args.tokens])
    print(train)
    offsets = [int(r) for r in args.offsets.split(",")]
    for _, stream, stream_note in streams:
        print(f"\n== {stream.name} @ {stream.n_tokens:,} tokens ({stream_note})")
        print(phase_table(stream, offsets, args.repeats, [int(v) for v in args.part_tokens.split(",")]))


if __name__ == "__main__":
    main()
