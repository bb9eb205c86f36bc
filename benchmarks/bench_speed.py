"""Speed of an MI profile: depstat against scikit-learn and a NumPy ``np.unique`` count.

On the same English token streams (UTF-8 bytes and a BPE-8k vocabulary trained on the
text), each method computes MI at 29 log-spaced offsets from 1 to 2048, with pairs never
crossing a document boundary:

(a) depstat ``mi_profile``, default estimator, with the jackknife interval;
(b) depstat ``mi_profile``, default estimator, point estimate only (``interval=False``);
(c) ``sklearn.metrics.mutual_info_score`` per offset (plug-in MI);
(d) NumPy: pair keys ``x * V + y``, ``np.unique(keys, return_counts=True)`` and
    ``np.bincount`` marginals (plug-in MI);
(e) depstat ``mi_profile`` with the ``plugin`` estimator, point only: the same quantity
    as (c) and (d), so the fairest comparison with them.

(c), (d) and (e) must agree to 1e-9 bits at every offset, or the run fails.

Run: ``python benchmarks/bench_speed.py [--tokens N] [--repeats K] [--peer-offsets M]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np
from pydoc_data.topics import topics
from sklearn.metrics import mutual_info_score

from benchlib import format_table, machine_line
from depstat import estimators as est
from depstat import kernels
from depstat.granularity import bpe_vocab_size, encode_stream, train_bpe
from depstat.profile import log_offsets, mi_profile
from depstat.stream import TokenStream

MAX_OFFSET = 2048
N_OFFSETS = 29
AGREE_TOL = 1e-9  # bits
LN2 = np.log(2.0)
FORTUNES_DIR = Path("/usr/share/games/fortunes")
BPE_NAME = "bpe-8k"

MiFunction = Callable[[TokenStream, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Method:
    """One way of computing the profile: returns MI in bits for each offset it is given."""

    key: str
    label: str
    run: MiFunction
    peer: bool  # a peer may be run on a subset of the offsets


@dataclass
class Measurement:
    """Timings (seconds, one per repeat), tracemalloc peak and MI values of one method."""

    offsets: np.ndarray
    pairs: int
    seconds: list[float]
    peak_bytes: int
    mi_bits: np.ndarray


# ----------------------------------------------------------------------------- corpus


def english_documents(fortunes_dir: Path) -> tuple[list[str], str]:
    """English prose on this machine: Python's pydoc topics, plus fortune files if installed.

    Each pydoc topic and each fortune file is one document.
    """
    docs = [topics[k] for k in sorted(topics)]
    parts = [f"pydoc_data.topics.topics ({len(docs)} documents)"]
    fortunes = fortune_documents(fortunes_dir)
    if fortunes:
        docs += fortunes
        parts.append(f"{len(fortunes)} fortune files from {fortunes_dir}")
    else:
        parts.append(f"no fortunes ({fortunes_dir} not found)")
    n_bytes = sum(len(d.encode("utf-8")) for d in docs)
    return docs, f"{'; '.join(parts)}; {n_bytes:,} UTF-8 bytes in all"


def fortune_documents(fortunes_dir: Path) -> list[str]:
    """The text of every plain fortune file (not the .dat indexes), ``%`` separators dropped."""
    if not fortunes_dir.is_dir():
        return []
    files = sorted(
        p for p in fortunes_dir.iterdir() if p.is_file() and not p.is_symlink() and not p.suffix
    )
    texts = [p.read_text(encoding="utf-8", errors="replace").replace("\n%\n", "\n\n") for p in files]
    return [t for t in texts if t.strip()]


def resize(stream: TokenStream, n_tokens: int) -> tuple[TokenStream, str]:
    """Whole documents, cycling through the corpus again if needed, until ``n_tokens`` are reached.

    Returns the stream and a note saying how many passes over the text it holds.
    """
    lengths = stream.doc_lengths
    total = int(lengths.sum())
    passes, rest = divmod(n_tokens, total)
    n_rest_docs = int(np.searchsorted(np.cumsum(lengths), rest)) + 1 if rest else 0
    n_rest_tokens = int(lengths[:n_rest_docs].sum())
    tokens = np.concatenate([stream.tokens] * passes + [stream.tokens[:n_rest_tokens]])
    doc_lengths = np.concatenate([lengths] * passes + [lengths[:n_rest_docs]])
    out = TokenStream(stream.name, tokens, doc_lengths, stream.vocab_size)
    ratio = out.n_tokens / total
    if ratio > 1:
        note = f"text too short: documents repeated, {ratio:.2f} passes over the {total:,} tokens"
    elif ratio < 1:
        note = f"first {out.n_docs} of {stream.n_docs} documents ({ratio:.0%} of the text)"
    else:
        note = "the whole text, once"
    return out, note


def build_streams(texts: list[str], n_tokens: int) -> list[tuple[TokenStream, str]]:
    """Byte and BPE-8k streams of about ``n_tokens`` tokens each, with a note on repetition."""
    tokenizer = train_bpe(texts, bpe_vocab_size(BPE_NAME))
    out = []
    for name, tok in (("bytes", None), (BPE_NAME, tokenizer)):
        stream, note = resize(encode_stream(name, texts, tok), n_tokens)
        out.append((stream, note))
    return out


def offset_grid(max_offset: int, count: int) -> np.ndarray:
    """``count`` distinct log-spaced offsets from 1 to ``max_offset`` (depstat's log_offsets)."""
    for n in range(count, 4 * count):
        grid = log_offsets(max_offset, n=n)
        if len(grid) >= count:
            return grid
    raise ValueError(f"cannot place {count} distinct offsets up to {max_offset}")


# ----------------------------------------------------------------------------- methods


def depstat_method(estimator: str, interval: bool) -> MiFunction:
    """depstat's mi_profile as a method: MI (bits) per offset, NaN where an offset is skipped."""

    def run(stream: TokenStream, offsets: np.ndarray) -> np.ndarray:
        table, _ = mi_profile(stream, offsets, estimator=estimator, interval=interval)
        out = np.full(len(offsets), np.nan)
        out[np.searchsorted(offsets, table["offset"].to_numpy())] = table["mi_bits"].to_numpy()
        return out

    return run


def pairs_at(tokens: np.ndarray, remaining: np.ndarray, r: int) -> tuple[np.ndarray, np.ndarray]:
    """(x_t, x_{t+r}) for every t whose document has at least r more tokens."""
    first = np.flatnonzero(remaining >= r)
    return tokens[first], tokens[first + r]


def remaining_in_doc(stream: TokenStream) -> np.ndarray:
    """For each position, how many tokens of its document follow it."""
    ends = np.repeat(np.cumsum(stream.doc_lengths), stream.doc_lengths)
    return ends - np.arange(stream.n_tokens) - 1


def sklearn_profile(stream: TokenStream, offsets: np.ndarray) -> np.ndarray:
    """(c) plug-in MI (bits) per offset with sklearn.metrics.mutual_info_score."""
    remaining = remaining_in_doc(stream)
    out = np.empty(len(offsets))
    for i, r in enumerate(offsets):
        x, y = pairs_at(stream.tokens, remaining, int(r))
        out[i] = mutual_info_score(x, y) / LN2
    return out


def sum_n_log_n(counts: np.ndarray) -> float:
    """sum n ln n over the non-zero counts."""
    c = counts[counts > 0].astype(np.float64)
    return float(np.sum(c * np.log(c)))


def numpy_profile(stream: TokenStream, offsets: np.ndarray) -> np.ndarray:
    """(d) plug-in MI (bits) per offset from np.unique counts of int64 pair keys."""
    remaining = remaining_in_doc(stream)
    vocab = int(stream.vocab_size)
    out = np.empty(len(offsets))
    for i, r in enumerate(offsets):
        x, y = pairs_at(stream.tokens, remaining, int(r))
        _, joint = np.unique(x.astype(np.int64) * vocab + y, return_counts=True)
        n = float(len(x))
        s = sum_n_log_n(joint) - sum_n_log_n(np.bincount(x, minlength=vocab)) - sum_n_log_n(
            np.bincount(y, minlength=vocab)
        )
        out[i] = (np.log(n) + s / n) / LN2
    return out


DEFAULT = est.DEFAULT_ESTIMATOR
METHODS = (
    Method("a", f"depstat {DEFAULT} + interval", depstat_method(DEFAULT, True), False),
    Method("b", f"depstat {DEFAULT} point", depstat_method(DEFAULT, False), False),
    Method("c", "sklearn mutual_info_score", sklearn_profile, True),
    Method("d", "numpy np.unique count", numpy_profile, True),
    Method("e", "depstat plugin point", depstat_method("plugin", False), False),
)
PLUGIN_KEYS = ("c", "d", "e")

# ----------------------------------------------------------------------------- measuring


def warm_up() -> tuple[float, str]:
    """Run every depstat code path once on a tiny stream: seconds taken and what Numba did.

    The kernels are ``cache=True``, so the first call either compiles them or loads them
    from Numba's on-disk cache; the returned text says which.
    """
    rng = np.random.default_rng(0)
    tiny = TokenStream("warm-up", rng.integers(0, 50, 4000), np.full(4, 1000), 50)
    start = time.perf_counter()
    for m in METHODS:
        if not m.peer:
            m.run(tiny, np.array([1, 2, 3]))
    seconds = time.perf_counter() - start
    hits = misses = 0
    for kernel in (kernels.group_by_token, kernels.joint_sums, kernels.second_sums):
        hits += sum(kernel.stats.cache_hits.values())
        misses += sum(kernel.stats.cache_misses.values())
    how = f"{misses} kernel signatures compiled, {hits} loaded from Numba's on-disk cache"
    return seconds, how


def cold_compile_seconds() -> float:
    """warm_up() in a fresh interpreter with an empty NUMBA_CACHE_DIR: a real JIT compile.

    The repository's own Numba cache is neither read nor written.
    """
    with tempfile.TemporaryDirectory() as cache:
        done = subprocess.run(
            [sys.executable, __file__, "--warm-up-only"], env={**os.environ, "NUMBA_CACHE_DIR": cache},
            capture_output=True, text=True, check=True,
        )
    return float(done.stdout.split()[0])


def peer_offsets(offsets: np.ndarray, count: int) -> np.ndarray:
    """``count`` offsets spread evenly over the grid (all of them when count is 0 or too big)."""
    if count <= 0 or count >= len(offsets):
        return offsets
    return offsets[np.unique(np.round(np.linspace(0, len(offsets) - 1, count)).astype(int))]


def traced_peak(method: Method, stream: TokenStream, offsets: np.ndarray) -> tuple[int, np.ndarray]:
    """tracemalloc peak (bytes) of one untimed call, and the values it returned."""
    tracemalloc.start()
    try:
        values = method.run(stream, offsets)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, values


def measure(
    stream: TokenStream, offsets: np.ndarray, peer_count: int, repeats: int
) -> dict[str, Measurement]:
    """One untimed traced call per method, then ``repeats`` timed rounds, methods interleaved."""
    runs: dict[str, Measurement] = {}
    for m in METHODS:
        offs = peer_offsets(offsets, peer_count) if m.peer else offsets
        pairs = sum(stream.pairs_at(int(r))[0] for r in offs)
        peak, values = traced_peak(m, stream, offs)
        runs[m.key] = Measurement(offs, pairs, [], peak, values)
    for _ in range(repeats):
        for m in METHODS:
            run = runs[m.key]
            start = time.perf_counter()
            m.run(stream, run.offsets)
            run.seconds.append(time.perf_counter() - start)
    return runs


def check_plugin_agreement(runs: dict[str, Measurement]) -> float:
    """Largest disagreement (bits) of (c), (d), (e) on the offsets they share; fails above AGREE_TOL."""
    shared = runs["c"].offsets
    values = {}
    for key in PLUGIN_KEYS:
        idx = np.searchsorted(runs[key].offsets, shared)
        values[key] = runs[key].mi_bits[idx]
    finite = np.all([np.isfinite(v) for v in values.values()], axis=0)
    if not finite.any():
        raise AssertionError("no offset where (c), (d) and (e) all have a value")
    worst = max(float(np.max(np.abs(values[k][finite] - values["e"][finite]))) for k in ("c", "d"))
    if worst > AGREE_TOL:
        raise AssertionError(
            f"plug-in MI disagrees: max |difference| = {worst:.3g} bits > {AGREE_TOL:g} "
            f"(offsets compared: {shared[finite].tolist()})"
        )
    return worst


# ----------------------------------------------------------------------------- report


def projected_seconds(run: Measurement, all_pairs: int) -> float:
    """Best time scaled to every offset of the grid by pair count (1x when it ran on all)."""
    return min(run.seconds) * all_pairs / run.pairs


def method_table(runs: dict[str, Measurement], all_pairs: int) -> str:
    """Per method: offsets, best and median seconds, pair-updates/s, ratios, tracemalloc peak."""
    t_a = projected_seconds(runs["a"], all_pairs)
    t_e = projected_seconds(runs["e"], all_pairs)
    rows = []
    for m in METHODS:
        run = runs[m.key]
        t = projected_seconds(run, all_pairs)
        scaled = "*" if len(run.offsets) < len(runs["a"].offsets) else ""
        rows.append([
            f"({m.key}) {m.label}", len(run.offsets), f"{min(run.seconds):.3f}",
            f"{float(np.median(run.seconds)):.3f}", f"{t:.3f}{scaled}",
            f"{run.pairs / min(run.seconds) / 1e6:.1f}", f"{t / t_a:.2f}", f"{t / t_e:.2f}",
            f"{run.peak_bytes / 2**20:.1f}",
        ])
    headers = [
        "method", "offsets", "best s", "median s", "s, all offsets", "Mpairs/s",
        "t / t(a)", "t / t(e)", "peak MiB",
    ]
    return format_table(headers, rows)


def report_stream(
    stream: TokenStream, note: str, runs: dict[str, Measurement], offsets: np.ndarray, agreement: float
) -> list[str]:
    """The text block for one stream; ``agreement`` is check_plugin_agreement's result."""
    all_pairs = sum(stream.pairs_at(int(r))[0] for r in offsets)
    a, b = runs["a"], runs["b"]
    lines = [
        f"== {stream.name}: {stream.n_tokens:,} tokens, {stream.n_docs:,} documents, "
        f"vocabulary {stream.vocab_size:,}; {note}",
        f"pairs over the {len(offsets)} offsets: {all_pairs:,}",
        method_table(runs, all_pairs),
    ]
    peers = runs["c"].offsets
    if len(peers) < len(offsets):
        lines.append(
            f"* (c) and (d) ran on {len(peers)} of the {len(offsets)} offsets {peers.tolist()}; "
            f"'s, all offsets' scales their best time by pairs(all offsets) / pairs(run) "
            f"= {all_pairs / runs['c'].pairs:.2f}"
        )
    per_round = np.array(a.seconds) / np.array(b.seconds)
    lines += [
        f"interval cost (a)/(b): {min(a.seconds) / min(b.seconds):.2f}x on best times; per round "
        f"(a and b run back to back) median {np.median(per_round):.2f}x, range "
        f"{per_round.min():.2f}-{per_round.max():.2f}x (requirement: at most ~2x)",
        f"plug-in agreement (c), (d) vs (e): max |difference| = {agreement:.1e} "
        f"bits (tolerance {AGREE_TOL:g}): OK",
    ]
    return lines


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=1_000_000, help="tokens per stream (default 1M)")
    parser.add_argument("--repeats", type=int, default=5, help="timed rounds per method (default 5)")
    parser.add_argument(
        "--peer-offsets", type=int, default=0,
        help="run (c) and (d) on this many of the offsets only, scaling their time (default: all)",
    )
    parser.add_argument("--threads", type=int, default=None, help="Numba threads (default: Numba's)")
    parser.add_argument(
        "--fortunes-dir", type=Path, default=FORTUNES_DIR, help="fortune files, used if present"
    )
    parser.add_argument("--warm-up-only", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    if args.threads:
        numba.set_num_threads(args.threads)
    if args.warm_up_only:  # the child process of cold_compile_seconds
        print(warm_up()[0])
        return
    offsets = offset_grid(MAX_OFFSET, N_OFFSETS)
    compile_s, compile_how = warm_up()
    cold_s = cold_compile_seconds()
    texts, corpus = english_documents(args.fortunes_dir)
    start = time.perf_counter()
    streams = build_streams(texts, args.tokens)
    prep_s = time.perf_counter() - start
    print(machine_line() + f", threading layer {numba.threading_layer()}")
    print(f"corpus: {corpus}")
    print(f"offsets ({len(offsets)}): {offsets.tolist()}")
    print(f"warm-up before timing (excluded): {compile_s:.2f} s; {compile_how}")
    print(
        f"cold JIT compile of the same calls (fresh interpreter, empty NUMBA_CACHE_DIR): {cold_s:.2f} s"
    )
    print(f"BPE training and encoding (excluded): {prep_s:.2f} s")
    print(
        f"timing: best and median of {args.repeats} rounds, methods interleaved; Mpairs/s = pairs "
        f"summed over the offsets run / best s; peak MiB = tracemalloc peak of one untimed call "
        f"(NumPy and Numba arrays; the input stream excluded)"
    )
    for stream, note in streams:
        runs = measure(stream, offsets, args.peer_offsets, args.repeats)
        agreement = check_plugin_agreement(runs)
        print()
        print("\n".join(report_stream(stream, note, runs, offsets, agreement)))


if __name__ == "__main__":
    main()
