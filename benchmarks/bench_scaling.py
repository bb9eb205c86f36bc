"""How a profile's time and memory grow with the tokens and with the offsets: linear or not.

The issue asks that counting scale linearly in tokens x offsets. ``bench_speed.py`` times
10^6 and 10^7 tokens of English, where the text runs out; this benchmark takes prefixes of
one corpus large enough not to repeat, the C sources (``.c``, ``.h``) of the Linux kernel
as Debian's ``linux-source-6.1`` package ships them (``apt-get install linux-source-6.1``;
one document a file, in the archive's order), so that a larger size adds more of the same
kind of text and no repeats. BPE vocabularies are trained on its first 8 MB, as
``bench_speed.py`` trains them. ``--streams words`` takes word tokens instead (a
``tokenizers`` WordLevel vocabulary of every whitespace-separated word of the files read):
their vocabulary grows with the text, so arrays as long as the tokens in use grow too,
the case where a cost could grow faster than the pairs. The issue's targets do not cover
words; their rows leave the target column empty.

The method is ``bench_speed.py``'s (a): ``mi_profile`` with the default estimator and the
jackknife interval, the one the issue's speed targets are about. In one process, every case
once a round, rounds alternating their order:

1. tokens: every size of ``--sizes`` (whole documents from the first), 29 offsets from 1 to
   2048: best and median seconds, Mpairs/s (on the best time) and its fraction of the
   issue's target (1,000 for bytes, 150 for BPE), ns a pair-update, and the cost a
   pair-update relative to the smallest size, per round (both sizes timed in the same round);
2. offsets: at ``--offset-size`` tokens, every count of ``--offset-counts`` log-spaced offsets
   from 1 to 2048, the same columns relative to the fewest offsets;
3. for each, the slope of log(seconds) on log(pair-updates), fitted per round: 1 is
   linear, above 1 a pair-update costs more as the profile grows. The offsets ladder's
   case of 29 offsets is the tokens ladder's case at ``--offset-size``: one computation
   timed twice a round, whose two timings show the run's noise;
4. memory: at each size, the peak resident memory one call adds, in a fresh interpreter
   (``bench_speed.measure_memory``: the stream loaded, the method warmed up, then the call,
   on the first batch of offsets, which holds the most pairs and so the peak).

Run: ``python benchmarks/bench_scaling.py`` (about 10 minutes on a 2-core machine;
``--streams bpe-8k --sizes 1e6,1e7`` for less; ``--streams words --mb 1100``, which
``run.sh`` runs as ``ONLY=scaling_words``, about 15).
"""

from __future__ import annotations

import argparse
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numba
import numpy as np
from bench_speed import (
    BY_KEY,
    DEFAULT,
    MAX_OFFSET,
    N_OFFSETS,
    TRAIN_BYTES,
    depstat_method,
    encode_until,
    measure_memory,
    memory_offsets,
    offset_grid,
    resize,
    target_for,
)
from benchlib import format_table, machine_line

from depstat.tokenize.granularity import bpe_vocab_size, train_bpe, train_words
from depstat.tokenize.stream import TokenStream

SIZES = "1e6,3e6,1e7,3e7,1e8"
OFFSET_COUNTS = "8,15,29,57"
MB = 500  # MB of C source read: enough for 10^8 tokens of BPE-32k (about 3.9 bytes a token)


SOURCE = Path("/usr/src/linux-source-6.1.tar.xz")


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


@dataclass
class Case:
    """One (stream, size, offsets) timed in every round."""

    label: str
    stream: TokenStream
    offsets: np.ndarray
    seconds: list[float] = field(default_factory=list)
    added: int | None = None  # bytes of resident memory one call added, in a fresh interpreter

    @cached_property
    def pairs(self) -> int:
        """Pair-updates over the offsets: positions with a partner r on in their document."""
        return sum(self.stream.pairs_at(int(r))[0] for r in self.offsets)


def streams_by_size(name: str, docs: list[str], sizes: list[int]) -> tuple[list[TokenStream], str]:
    """The stream ``name`` at each size (prefixes of one encoding), and a line describing it."""
    if name == "bytes":
        longest = encode_until(name, docs, None, max(sizes))  # no tokenizer: UTF-8 bytes
        note = "UTF-8 bytes of the files, no vocabulary to train"
    elif name == "words":
        tokenizer = train_words(docs)
        longest = encode_until(name, docs, tokenizer, max(sizes))
        note = (f"WordLevel vocabulary of every whitespace-separated word of the {len(docs):,} files read "
                f"({tokenizer.get_vocab_size():,} types)")
    else:
        encoder = Encoder(name, docs)
        longest = encoder.at_least(max(sizes))
        note = encoder.train
    out = [resize(longest, min(n, longest.n_tokens))[0] for n in sizes]
    short = [f"{n:,}" for n in sizes if n > longest.n_tokens]
    if short:
        note += f"; the text ran out at {longest.n_tokens:,} tokens (sizes {', '.join(short)} cut to it)"
    return out, f"{name}: {note}"


def size_label(asked: int, stream: TokenStream) -> str:
    """The size asked for, in millions of tokens, or the stream's own where the text ran out before it."""
    return f"{asked / 1e6:g}M" if stream.n_tokens >= asked else f"{stream.n_tokens / 1e6:.1f}M"


def time_rounds(cases: list[Case], rounds: int) -> None:
    """Each case once a round, in an order that alternates from round to round."""
    run = depstat_method(DEFAULT, interval=True)
    for i in range(rounds):
        progress(f"round {i + 1} of {rounds}")
        for case in cases if i % 2 == 0 else cases[::-1]:
            t = time.perf_counter()
            run(case.stream, case.offsets)
            case.seconds.append(time.perf_counter() - t)


def measure_memories(cases: list[Case]) -> None:
    """The peak resident memory one call of (a) adds, each case in a fresh interpreter."""
    method = BY_KEY["a"]
    with tempfile.TemporaryDirectory() as tmp:
        for i, case in enumerate(cases):
            npz = f"{tmp}/stream{i}.npz"
            np.savez(npz, tokens=case.stream.tokens, doc_lengths=case.stream.doc_lengths,
                     vocab_size=case.stream.vocab_size)
            offsets = memory_offsets(method, case.stream, case.offsets)
            case.added = measure_memory(method, npz, offsets, numba.get_num_threads()).added


def slope(cases: list[Case], round_: int) -> float:
    """Least-squares slope of log(seconds) on log(pair-updates) in one round."""
    x = np.log([c.pairs for c in cases])
    y = np.log([c.seconds[round_] for c in cases])
    return float(np.polyfit(x, y, 1)[0])


def ladder_table(cases: list[Case], label: str) -> str:
    """Rows of a ladder: the cost a pair-update relative to the first case, per round."""
    ref = cases[0]
    rows = []
    for c in cases:
        rel = [(s / c.pairs) / (r / ref.pairs) for s, r in zip(c.seconds, ref.seconds)]
        best = min(c.seconds)
        in_use = np.count_nonzero(np.bincount(c.stream.tokens))
        rows.append([
            c.label, f"{c.stream.n_tokens:,}", f"{in_use:,}", len(c.offsets), f"{c.pairs:,}", f"{best:.3f}",
            f"{np.median(c.seconds):.3f}", f"{c.pairs / best / 1e6:.1f}", target_share(c.pairs / best, c.stream),
            f"{best / c.pairs * 1e9:.2f}",
            f"{np.median(rel):.3f}", f"{min(rel):.3f}-{max(rel):.3f}",
            "-" if c.added is None else f"{c.added / 2**20:.0f}",
            "-" if c.added is None else f"{c.added / c.stream.n_tokens:.1f}",
        ])
    return format_table(
        [label, "tokens", "types in use", "offsets", "pair-updates", "best s", "median s", "Mpairs/s", "÷ target",
         "ns/pair", "cost/pair ÷ first, median", "range", "added MiB", "added B/token"], rows,
    )


def slope_line(cases: list[Case], what: str) -> str:
    """The per-round slopes of log time on log pair-updates, their median and range."""
    slopes = [slope(cases, i) for i in range(len(cases[0].seconds))]
    return (f"slope of log(seconds) on log(pair-updates) over the {what}, per round: median "
            f"{np.median(slopes):.3f}, range {min(slopes):.3f}-{max(slopes):.3f} (1 = linear)")


def target_share(rate: float, stream: TokenStream) -> str:
    """The rate as a fraction of the issue's target, which covers bytes and BPE up to 32k."""
    return "-" if stream.name == "words" else f"{rate / target_for(stream):.2f}"


def noise_line(a: Case, b: Case) -> str:
    """The two timings of one computation, a round apart at most: this run's noise."""
    ratio = [x / y for x, y in zip(a.seconds, b.seconds)]
    return (f"the same computation in both ladders ({a.stream.n_tokens:,} tokens, {len(a.offsets)} offsets), timed "
            f"twice a round: best {min(a.seconds):.3f} s and {min(b.seconds):.3f} s, ratio per round median "
            f"{np.median(ratio):.3f}, range {min(ratio):.3f}-{max(ratio):.3f}: the noise of this run")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", default="bytes,bpe-8k,bpe-32k", help="granularities, comma-separated")
    parser.add_argument("--sizes", default=SIZES, help="token counts, comma-separated")
    parser.add_argument("--offset-counts", default=OFFSET_COUNTS, help="numbers of offsets, comma-separated")
    parser.add_argument("--offset-size", type=float, default=1e7, help="tokens for the offset ladder")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mb", type=int, default=MB, help="MB of C source to read")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    sizes = sorted(int(float(s)) for s in args.sizes.split(","))
    counts = sorted(int(c) for c in args.offset_counts.split(","))
    offset_size = int(args.offset_size)
    print(machine_line())
    progress("reading the C sources")
    docs = kernel_sources(SOURCE, args.mb * 10**6)
    print(f"corpus: {len(docs):,} C files of {SOURCE.name}, {sum(len(d.encode('utf-8')) for d in docs):,} UTF-8 bytes")
    grid = offset_grid(MAX_OFFSET, N_OFFSETS)
    print(f"method: (a) of bench_speed.py, mi_profile estimator={DEFAULT!r} with the jackknife interval")
    print(f"tokens ladder: {N_OFFSETS} offsets from 1 to {MAX_OFFSET}; offsets ladder: {offset_size:,} tokens, "
          f"{', '.join(map(str, counts))} offsets from 1 to {MAX_OFFSET}; {args.rounds} rounds, interleaved")
    ladders = []
    for name in args.streams.split(","):
        progress(f"{name}: encoding")
        wanted = sorted(set(sizes + [offset_size]))
        streams, note = streams_by_size(name, docs, wanted)
        print(note)
        at = dict(zip(wanted, streams))
        tokens = [Case(size_label(n, at[n]), at[n], grid) for n in sizes]
        offsets = [Case(str(k), at[offset_size], offset_grid(MAX_OFFSET, k)) for k in counts]
        ladders.append((name, tokens, offsets))
    del docs
    cases = [c for _, tokens, offsets in ladders for c in tokens + offsets]
    progress("warming up")
    depstat_method(DEFAULT, interval=True)(ladders[0][1][0].stream, grid)
    time_rounds(cases, args.rounds)
    progress("memory")
    measure_memories([c for _, tokens, _ in ladders for c in tokens])
    for name, tokens, offsets in ladders:
        print(f"\n== {name}: tokens ladder ({N_OFFSETS} offsets)")
        print(ladder_table(tokens, "size"))
        print(slope_line(tokens, "sizes"))
        print(f"\n== {name}: offsets ladder ({offset_size:,} tokens)")
        print(ladder_table(offsets, "offsets"))
        print(slope_line(offsets, "offset counts"))
        same = [(a, b) for a in tokens for b in offsets if a.stream is b.stream and len(a.offsets) == len(b.offsets)]
        if same:
            print(noise_line(*same[0]))


if __name__ == "__main__":
    main()
