"""Where the counting time goes: each phase of depstat's kernels, in ns per pair, on 1 and 2 threads.

On the speed benchmark's English streams (``bench_speed.build_streams``: bytes, BPE-8k,
BPE-32k at ``--tokens``), for one offset at a time (``--offsets``, real pairs):

- why the partitioned kernel exists: a bare read of every partner ``tokens[p + r]`` with
  positions in first-token order (what the previous grouped kernel did) against the same
  reads in position order;
- the partitioned kernel's phases (BPE streams) for the real pairs, at one offset and at
  as many consecutive offsets in one pass as the counter takes (``PairCounter.batches``; per
  pair-update): ``emit_pairs`` (pairs into first-token partitions; no marginals, as a
  default profile runs it), ``partition_sums`` with and without the jackknife deltas, and
  ``row_sums`` of one per-block marginal;
- the dense kernel (bytes) for the real pairs, with and without the jackknife;
- what a default profile counts once for the speed benchmark's 29 offsets, each per
  pair-update of the whole profile (its time over the pairs of all 29 offsets), so these
  rows add to the real pairs' rows: the rotation null (the default estimator's second
  table): ``emit_pairs`` with each pair's life, ``null_sweep_sums`` with and without the
  jackknife, its second marginal's updates (``PairCounter.null_marginals``; the default
  estimator needs no first marginal); and the real pairs' second marginal followed from
  offset to offset (``PairCounter._real_seconds``).

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
from bench_speed import (
    FORTUNES_DIR,
    GCIDE,
    N_OFFSETS,
    build_streams,
    english_documents,
    offset_grid,
)
from benchlib import format_table, machine_line

from depstat.count import kernels
from depstat.count.counting import (
    PART_TOKENS,
    SHORT_PASS_OFFSETS,
    PairCounter,
    slot_arrays,
)
from depstat.tokenize.stream import TokenStream


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
    """ns per pair-update of each phase of the partitioned kernel, real pairs: offset r alone,
    and as many offsets from r on in one pass as the counter takes."""
    rows = []
    for slot_r in (np.array([r]), np.array(counter.batches(range(r, r + SHORT_PASS_OFFSETS))[0])):
        k = len(slot_r)
        counter._kept = None
        # no marginals counted, as in a default profile
        xloc, ys, first, second = counter._buffers(k, counter.tokens.shape[0], marginals=(False, False))
        fill_end = np.empty_like(counter.region)
        modes, seeds, none = np.zeros(k, dtype=np.int64), np.zeros(k, dtype=np.int64), np.empty(0, np.uint8)

        def emit() -> None:
            kernels.emit_pairs(
                counter.tokens, counter.code, counter.doc_ends, counter.block_starts, counter.region,
                slot_r, modes, seeds, counter.shift, xloc, ys, fill_end, first, second, none, none, counter.vocab,
                -1, False, numba.get_num_threads(),
            )

        def count(jackknife: bool) -> Callable[[], object]:
            return lambda: kernels.partition_sums(
                xloc, ys, counter.region, fill_end, counter.widths, counter.vocab, kernels.SUM_TABLES,
                jackknife, numba.get_num_threads(),
            )

        emit()
        n = sum(counter.stream.pairs_at(int(r_s))[0] for r_s in slot_r)
        label = "real" if k == 1 else f"real, {k} offsets a pass"
        phases = [
            (f"emit_pairs, {label}", emit),
            (f"partition_sums, {label}, jackknife", count(True)),
            (f"partition_sums, {label}", count(False)),
        ]
        if k == 1:
            marginal = np.zeros((1, counter.n_blocks, counter.vocab), dtype=np.int32)
            kernels.move_partners(counter.tokens, kernels.partner_runs(counter.doc_ends, counter.block_starts, -1, r),
                                  marginal[0], kernels.SUM_TABLES, True, False, np.zeros(3),
                                  np.zeros((counter.n_blocks, 3)))
            phases.append(("row_sums of one marginal", lambda: kernels.row_sums(marginal, kernels.SUM_TABLES, True)))
        rows += [[name, "", best_seconds(call, repeats) * 1e9 / n] for name, call in phases]
    return rows


def dense_rows(counter: PairCounter, r: int, repeats: int) -> list[list[object]]:
    """ns per pair of the dense kernel's two phases, real pairs."""
    _, slot_r, slot_mode, slot_seed = slot_arrays([r], ("real",), 0)
    counts = np.empty((counter.n_blocks, 1, counter.vocab, counter.vocab), dtype=np.int32)

    def count() -> None:
        kernels.dense_counts(counter.tokens, counter.doc_ends, counter.block_starts, slot_r, slot_mode,
                             slot_seed, counter.shift, counts, numba.get_num_threads())

    count()
    n = int(counts.sum())
    phases = [("dense_counts, real", count)] + [
        (f"dense_table_sums{', jackknife' if jk else ''}",
         lambda jk=jk: kernels.dense_table_sums(counts, kernels.SUM_TABLES, jk))
        for jk in (False, True)
    ]
    return [[name, "", best_seconds(call, repeats) * 1e9 / n] for name, call in phases]


def null_rows(counter: PairCounter, offsets: list[int], repeats: int) -> list[list[object]]:
    """ns per pair-update of the whole profile for the rotation null over ``offsets``: in all, and
    (partitioned kernel) each phase of its sweep; and the real pairs' second marginal followed."""
    pairs = sum(counter.stream.pairs_at(r)[0] for r in offsets)
    whole = [["null: all offsets, with the jackknife", "",
              best_seconds(lambda: counter._rotation_nulls(offsets, True, True), repeats) * 1e9 / pairs]]
    if counter.dense:
        return whole
    table = kernels.SUM_TABLES
    xloc, ys, life, region, fill_end, first, second = counter.emit_null(offsets)

    def emit() -> None:
        counter.emit_null(offsets, first_marginal=False)  # with fresh buffers, as a default profile runs it

    def sweep(jackknife: bool) -> Callable[[], object]:
        return lambda: kernels.null_sweep_sums(
            xloc, ys, life, region, fill_end, counter.widths, counter.vocab, len(offsets), table,
            jackknife, numba.get_num_threads(),
        )

    def marginals() -> None:  # the second only: the default estimator needs no first marginal
        counter.null_marginals(offsets, np.empty((0, 0), dtype=first.dtype), second[0].copy(), True)

    phases = [
        ("null: emit_pairs with life (fresh buffers), once", emit),
        ("null: null_sweep_sums, jackknife, once", sweep(True)),
        ("null: null_sweep_sums, once", sweep(False)),
        ("null: second marginal at every offset", marginals),
        ("real: second marginal followed, every offset", lambda: counter._real_seconds(offsets, True)),
    ]
    return whole + [[name, "", best_seconds(call, repeats) * 1e9 / pairs] for name, call in phases]


def phase_table(stream: TokenStream, offsets: list[int], repeats: int, part_tokens: list[int]) -> str:
    """One table per stream: phase, offset, partition size, ns per pair on 1 thread and on all threads."""
    threads = numba.get_num_threads()
    profile_offsets = offset_grid(2048, N_OFFSETS).tolist()
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
                    if r == offsets[-1]:
                        part += null_rows(counter, profile_offsets, repeats)
                finally:
                    numba.set_num_threads(threads)
                for row in part:
                    label = "-" if counter.dense else f"{size} ({len(counter.widths)})"
                    at = f"1..{profile_offsets[-1]}" if row[0].startswith(("null", "real: second")) else r
                    rows.append([row[0], at, label, n_threads, f"{float(row[2]):.2f}"])
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
