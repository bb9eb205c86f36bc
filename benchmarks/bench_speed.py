"""Speed and memory of an MI profile: depstat against scikit-learn, NumPy and a naive Numba hash.

On the same English token streams (UTF-8 bytes, BPE-8k and BPE-32k trained on the text,
each at every size of ``--tokens``), in one process, each method computes MI at 29
log-spaced offsets from 1 to 2048, with pairs never crossing a document boundary:

(a) depstat ``mi_profile``, default estimator, with the jackknife interval;
(b) depstat ``mi_profile``, default estimator, point estimate only (``interval=False``);
(c) ``sklearn.metrics.mutual_info_score`` per offset (plug-in MI);
(d) NumPy: pair keys ``x * V + y``, ``np.unique(keys, return_counts=True)`` and
    ``np.bincount`` marginals (plug-in MI);
(e) depstat ``mi_profile`` with the ``plugin`` estimator, point only: the same quantity
    as (c), (d) and (f), so the fairest comparison with them;
(f) a naive Numba hash count: one ``@njit`` loop per offset into an open-addressing table
    of int64 keys ``x * V + y`` (linear probing, power-of-two capacity at least twice
    min(pairs, V^2)), then plug-in MI from the table and the marginal counts;
(g) (a) with the counter's pair buffers capped at ``PAIR_MEMORY`` bytes
    (``depstat profile --pair-memory``): the partitions are counted in groups, each a
    pass over the stream. The bytes streams (dense kernel, no pair buffers) are unaffected.

(c), (d), (e) and (f) must agree to 1e-9 bits at every offset, or the run fails. Peak
memory is measured per method and stream in a fresh process (peak RSS of one call).

Run: ``python benchmarks/bench_speed.py [--tokens N,M] [--repeats K,L] [--peer-offsets P,Q]``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from pydoc_data.topics import topics

import numba
import numpy as np
from benchlib import PeakRSS, format_table, machine_line
from numba.core.registry import CPUDispatcher as Dispatcher
from sklearn.metrics import mutual_info_score

from depstat.count import kernels
from depstat.count.counting import PairCounter
from depstat.estimate import estimators as est
from depstat.estimate.profile import log_offsets, mi_profile
from depstat.tokenize.granularity import bpe_vocab_size, encode_stream, train_bpe
from depstat.tokenize.stream import TokenStream

MAX_OFFSET = 2048
N_OFFSETS = 29
AGREE_TOL = 1e-9  # bits
LN2 = np.log(2.0)
FORTUNES_DIR = Path("/usr/share/games/fortunes")
GCIDE = Path("/usr/share/dictd/gcide.dict.dz")
GCIDE_DOC_BYTES = 64 * 1024
GRANULARITIES = ("bytes", "bpe-8k", "bpe-32k")
# BPE vocabularies are trained on the first documents, up to this much text (like
# `depstat profile --train-docs`): training on all of GCIDE would take minutes.
TRAIN_BYTES = 8_000_000
ENCODE_DOCS = 64  # documents encoded at a time until the largest stream is long enough
# The targets for (a), pair-updates per second on 2 cores, interval included.
TARGET_BYTES = 1e9
TARGET_BPE = 150e6
WARM_UP_VOCABS = (256, 32768)  # one uint8 and one uint16 token stream
LARGE_STREAM = 2_000_000  # above this many tokens: fewer rounds, peers on a few offsets
PAIR_MEMORY = 32 << 20  # (g): the pair buffers of 10M BPE tokens (about 90 MiB a pass) in 3 groups

MiFunction = Callable[[TokenStream, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Method:
    """One way of computing the profile: returns MI in bits for each offset it is given."""

    key: str
    label: str
    run: MiFunction
    peer: bool  # a peer may be run on a subset of the offsets
    estimator: str | None = None  # depstat's estimator; None for the peers


@dataclass
class Memory:
    """Peak RSS of one call in a fresh process, with the RSS it started from (bytes)."""

    offsets: list[int]
    rss_before: int  # interpreter, libraries, compiled kernels and the stream
    peak: int  # high-water mark of the RSS during the call

    @property
    def added(self) -> int:
        return self.peak - self.rss_before


@dataclass
class Measurement:
    """Timings (seconds, one per round), MI values of the first round and memory of one method."""

    offsets: np.ndarray
    pairs: int
    seconds: list[float]
    mi_bits: np.ndarray
    memory: Memory | None = None

    @property
    def rate(self) -> float:
        """Pair-updates per second on the best round."""
        return self.pairs / min(self.seconds)


# ----------------------------------------------------------------------------- corpus


def english_documents(fortunes_dir: Path, gcide: Path) -> tuple[list[str], str]:
    """English text on this machine: Python's pydoc topics, then fortunes and GCIDE if installed.

    Each pydoc topic and each fortune file is one document; GCIDE (a dictionary) is cut
    into documents of about 64 KB at blank lines between entries.
    """
    docs = [topics[k] for k in sorted(topics)]
    parts = [f"pydoc_data.topics.topics ({len(docs)} documents)"]
    fortunes = fortune_documents(fortunes_dir)
    if fortunes:
        docs += fortunes
        parts.append(f"{len(fortunes)} fortune files from {fortunes_dir}")
    else:
        parts.append(f"no fortunes ({fortunes_dir} not found)")
    entries = gcide_documents(gcide)
    if entries:
        docs += entries
        parts.append(f"GCIDE dictionary entries from {gcide} ({len(entries)} documents of ~64 KB)")
    else:
        parts.append(f"no GCIDE ({gcide} not found)")
    n_bytes = sum(len(d.encode("utf-8")) for d in docs)
    return docs, f"{'; '.join(parts)}; {n_bytes:,} UTF-8 bytes in all, in this order"


def fortune_documents(fortunes_dir: Path) -> list[str]:
    """The text of every plain fortune file (not the .dat indexes), ``%`` separators dropped."""
    if not fortunes_dir.is_dir():
        return []
    files = sorted(
        p for p in fortunes_dir.iterdir() if p.is_file() and not p.is_symlink() and not p.suffix
    )
    texts = [p.read_text(encoding="utf-8", errors="replace").replace("\n%\n", "\n\n") for p in files]
    return [t for t in texts if t.strip()]


def gcide_documents(path: Path) -> list[str]:
    """GCIDE (Debian ``dict-gcide``) in documents of about 64 KB, cut at blank lines."""
    if not path.is_file():
        return []
    text = gzip.open(path).read().decode("utf-8", errors="replace")
    docs, start = [], 0
    while start < len(text):
        cut = text.find("\n\n", start + GCIDE_DOC_BYTES)
        end = len(text) if cut < 0 else cut + 2
        docs.append(text[start:end])
        start = end
    return docs


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
    elif out.n_docs < stream.n_docs:
        note = f"first {out.n_docs} of {stream.n_docs} documents"
    else:
        note = "the whole text, once"
    return out, note


def encode_until(name: str, texts: list[str], tokenizer, n_tokens: int) -> TokenStream:
    """The first documents encoded, a few at a time, until ``n_tokens`` tokens (or all the text)."""
    parts: list[TokenStream] = []
    count = 0
    for i in range(0, len(texts), ENCODE_DOCS):
        part = encode_stream(name, texts[i : i + ENCODE_DOCS], tokenizer)
        parts.append(part)
        count += part.n_tokens
        if count >= n_tokens:
            break
    return TokenStream(
        name, np.concatenate([p.tokens for p in parts]), np.concatenate([p.doc_lengths for p in parts]),
        parts[0].vocab_size,
    )


def build_streams(
    texts: list[str], sizes: list[int], names: tuple[str, ...] | list[str] = GRANULARITIES,
) -> tuple[list[tuple[int, TokenStream, str]], str]:
    """Every granularity of ``names`` at every size (the smaller sizes are prefixes of the larger).

    Returns (size asked, stream, note on repetition) for each, and a line on how the BPEs were trained.
    """
    cum = np.cumsum([len(t.encode("utf-8")) for t in texts])
    n_train = min(int(np.searchsorted(cum, TRAIN_BYTES)) + 1, len(texts))
    out = []
    for name in names:
        tokenizer = None if name == "bytes" else train_bpe(texts[:n_train], bpe_vocab_size(name))
        full = encode_until(name, texts, tokenizer, max(sizes))
        out += [(n, *resize(full, n)) for n in sizes]
    train = f"BPE vocabularies trained on the first {n_train} documents ({int(cum[n_train - 1]):,} bytes)"
    return out, train


def offset_grid(max_offset: int, count: int) -> np.ndarray:
    """``count`` distinct log-spaced offsets from 1 to ``max_offset`` (depstat's log_offsets)."""
    for n in range(count, 4 * count):
        grid = log_offsets(max_offset, n=n)
        if len(grid) >= count:
            return grid
    raise ValueError(f"cannot place {count} distinct offsets up to {max_offset}")


# ----------------------------------------------------------------------------- methods


def depstat_method(estimator: str, interval: bool, pair_memory: int | None = None) -> MiFunction:
    """depstat's mi_profile as a method: MI (bits) per offset, NaN where an offset is skipped."""
    counter = partial(PairCounter, pair_memory=pair_memory)

    def run(stream: TokenStream, offsets: np.ndarray) -> np.ndarray:
        table, _ = mi_profile(stream, offsets, estimator=estimator, interval=interval, counter=counter)
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


@numba.njit(cache=True)
def hash_count_mi(tokens: np.ndarray, doc_starts: np.ndarray, doc_ends: np.ndarray, r: int,
                  vocab: int, capacity: int) -> float:
    """Plug-in MI (bits) at offset r from an open-addressing hash count of keys x * V + y.

    ``capacity`` is a power of two; keys are placed by Fibonacci hashing and linear probing.
    """
    bits = np.uint64(np.log2(capacity))
    mask = capacity - 1
    keys = np.full(capacity, -1, dtype=np.int64)
    counts = np.zeros(capacity, dtype=np.int64)
    nx = np.zeros(vocab, dtype=np.int64)
    ny = np.zeros(vocab, dtype=np.int64)
    n = 0
    for d in range(doc_starts.shape[0]):
        for t in range(doc_starts[d], doc_ends[d] - r):
            x = np.int64(tokens[t])
            y = np.int64(tokens[t + r])
            key = x * vocab + y
            slot = np.int64((np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)) >> (np.uint64(64) - bits))
            while keys[slot] != key and keys[slot] != -1:
                slot = (slot + 1) & mask
            keys[slot] = key
            counts[slot] += 1
            nx[x] += 1
            ny[y] += 1
            n += 1
    s = 0.0
    for i in range(capacity):
        if counts[i] > 0:
            s += counts[i] * np.log(counts[i])
    for v in range(vocab):
        if nx[v] > 0:
            s -= nx[v] * np.log(nx[v])
        if ny[v] > 0:
            s -= ny[v] * np.log(ny[v])
    return (np.log(n) + s / n) / np.log(2.0)


def hash_profile(stream: TokenStream, offsets: np.ndarray) -> np.ndarray:
    """(f) plug-in MI (bits) per offset with the naive Numba hash count, a fresh table per offset."""
    ends = np.cumsum(stream.doc_lengths)
    starts = ends - stream.doc_lengths
    vocab = int(stream.vocab_size)
    out = np.empty(len(offsets))
    for i, r in enumerate(offsets):
        distinct_bound = min(stream.pairs_at(int(r))[0], vocab * vocab)
        capacity = 1 << max(int(2 * distinct_bound - 1).bit_length(), 4)
        out[i] = hash_count_mi(stream.tokens, starts, ends, int(r), vocab, capacity)
    return out


DEFAULT = est.DEFAULT_ESTIMATOR
METHODS = (
    Method("a", f"depstat {DEFAULT} + interval", depstat_method(DEFAULT, True), False, DEFAULT),
    Method("b", f"depstat {DEFAULT} point", depstat_method(DEFAULT, False), False, DEFAULT),
    Method("c", "sklearn mutual_info_score", sklearn_profile, True),
    Method("d", "numpy np.unique count", numpy_profile, True),
    Method("e", "depstat plugin point", depstat_method("plugin", False), False, "plugin"),
    Method("f", "naive numba hash count", hash_profile, True),
    Method("g", f"(a), pair buffers capped at {PAIR_MEMORY >> 20} MiB", depstat_method(DEFAULT, True, PAIR_MEMORY),
           False, DEFAULT),
)
BY_KEY = {m.key: m for m in METHODS}
PLUGIN_KEYS = ("c", "d", "e", "f")

# ----------------------------------------------------------------------------- measuring


def tiny_stream(vocab: int) -> TokenStream:
    """A small random stream over ``vocab`` token types that runs every code path quickly.

    depstat reads tokens as uint8 when V <= 256 and uint16 up to 65536, and counts more than
    256 token types in use with the partitioned kernel: each is its own code path or
    kernel signature, so all must be warmed up before timing (up to 300 types, so a BPE
    stream's warm-up takes the partitioned path).
    """
    rng = np.random.default_rng(0)
    return TokenStream("warm-up", rng.integers(0, min(vocab, 300), 4000), np.full(4, 1000), vocab)


def warm_up(methods: tuple[Method, ...]) -> tuple[float, str]:
    """Run the methods once on a tiny stream: seconds taken and what Numba did for depstat.

    depstat's kernels are ``cache=True``, so the first call either compiles them or loads
    them from Numba's on-disk cache; the returned text says which.
    """
    start = time.perf_counter()
    for vocab in WARM_UP_VOCABS:
        tiny = tiny_stream(vocab)
        for m in methods:
            m.run(tiny, np.array([1, 2, 3]))
    seconds = time.perf_counter() - start
    hits = misses = 0
    for kernel in vars(kernels).values():
        if not isinstance(kernel, Dispatcher):
            continue
        hits += sum(kernel.stats.cache_hits.values())
        misses += sum(kernel.stats.cache_misses.values())
    how = f"depstat: {misses} kernel signatures compiled, {hits} loaded from Numba's on-disk cache"
    return seconds, how


def cold_compile_seconds() -> float:
    """depstat's warm-up in a fresh interpreter with an empty NUMBA_CACHE_DIR: a real JIT compile.

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


def memory_offsets(method: Method, stream: TokenStream, offsets: np.ndarray) -> list[int]:
    """The offsets whose single run gives the method's peak memory on the whole grid.

    depstat counts the offsets in batches (``PairCounter.batches``), each with the same
    per-call scratch, after one O(N) setup: its peak is the setup plus the first batch,
    which holds the smallest offsets and so the most pairs. The peers count one offset
    at a time and free it: their peak is that of the smallest offset.
    """
    if method.estimator is None:
        return [int(offsets[0])]
    n_partners = 1 + len(est.get(method.estimator).partners)
    probe = PairCounter(TokenStream("probe", np.zeros(1, np.int32), [1], stream.vocab_size))
    return probe.batches(offsets.tolist(), n_partners)[0]


def memory_child(key: str, npz: Path, offsets: list[int]) -> None:
    """In a fresh process: load the stream, warm the method up, run it once and print the RSS
    before and the peak during the call as JSON (``PeakRSS``: the high-water mark, reset
    after the warm-up, so the peak excludes the imports' and the JIT's transient use)."""
    method = BY_KEY[key]
    with np.load(npz) as data:
        stream = TokenStream("child", data["tokens"], data["doc_lengths"], int(data["vocab_size"]))
    method.run(tiny_stream(int(stream.vocab_size)), np.array([1, 2, 3]))
    with PeakRSS() as memory:
        method.run(stream, np.array(offsets))
    print(json.dumps({"rss_before": memory.before, "peak": memory.peak}))


def measure_memory(method: Method, npz: Path, offsets: list[int], threads: int) -> Memory:
    """Peak RSS of one call of ``method`` on the saved stream, in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, __file__, "--threads", str(threads), "--memory-child", method.key, str(npz),
         ",".join(map(str, offsets))],
        capture_output=True, text=True, check=True,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return Memory(offsets, result["rss_before"], result["peak"])


def measure(
    stream: TokenStream, offsets: np.ndarray, peer_count: int, repeats: int
) -> dict[str, Measurement]:
    """``repeats`` timed rounds, methods interleaved; the MI values are those of the first round."""
    runs: dict[str, Measurement] = {}
    for round_ in range(repeats):
        for m in METHODS:
            offs = peer_offsets(offsets, peer_count) if m.peer else offsets
            start = time.perf_counter()
            values = m.run(stream, offs)
            seconds = time.perf_counter() - start
            if round_ == 0:
                pairs = sum(stream.pairs_at(int(r))[0] for r in offs)
                runs[m.key] = Measurement(offs, pairs, [], values)
            runs[m.key].seconds.append(seconds)
    return runs


def check_plugin_agreement(runs: dict[str, Measurement]) -> float:
    """Largest disagreement (bits) of the plug-in methods with (e) on the offsets they share.

    Fails above AGREE_TOL.
    """
    shared = runs["c"].offsets
    values = {}
    for key in PLUGIN_KEYS:
        idx = np.searchsorted(runs[key].offsets, shared)
        values[key] = runs[key].mi_bits[idx]
    finite = np.all([np.isfinite(v) for v in values.values()], axis=0)
    if not finite.any():
        raise AssertionError(f"no offset where {', '.join(PLUGIN_KEYS)} all have a value")
    worst = max(
        float(np.max(np.abs(values[k][finite] - values["e"][finite]))) for k in PLUGIN_KEYS if k != "e"
    )
    if worst > AGREE_TOL:
        raise AssertionError(
            f"plug-in MI disagrees: max |difference| = {worst:.3g} bits > {AGREE_TOL:g} "
            f"(offsets compared: {shared[finite].tolist()})"
        )
    return worst


# ----------------------------------------------------------------------------- report


def mib(n_bytes: int) -> str:
    return f"{n_bytes / 2**20:.0f}"


def target_for(stream: TokenStream) -> float:
    """The issue's target rate for (a) on this stream: 1G/s for bytes, 150M/s for BPE."""
    return TARGET_BYTES if stream.name == "bytes" else TARGET_BPE


def method_table(runs: dict[str, Measurement], all_pairs: int) -> str:
    """Per method: offsets, seconds, pair-updates/s, speed-up of (e), memory."""
    rate_e = runs["e"].rate
    rows = []
    for m in METHODS:
        run = runs[m.key]
        scaled = "*" if len(run.offsets) < len(runs["a"].offsets) else ""
        mem = run.memory
        rows.append([
            f"({m.key}) {m.label}", len(run.offsets), f"{min(run.seconds):.3f}",
            f"{float(np.median(run.seconds)):.3f}", f"{all_pairs / run.rate:.2f}{scaled}",
            f"{run.rate / 1e6:.1f}", f"{rate_e / run.rate:.2f}", mib(mem.rss_before), mib(mem.peak),
            mib(mem.added),
        ])
    headers = [
        "method", "offsets", "best s", "median s", "s, all offsets", "Mpairs/s", "(e) speed-up",
        "RSS before MiB", "peak RSS MiB", "added MiB",
    ]
    return format_table(headers, rows)


def report_stream(
    stream: TokenStream, note: str, runs: dict[str, Measurement], offsets: np.ndarray, agreement: float
) -> list[str]:
    """The text block for one stream; ``agreement`` is check_plugin_agreement's result."""
    all_pairs = sum(stream.pairs_at(int(r))[0] for r in offsets)
    a, b = runs["a"], runs["b"]
    stream_bytes = stream.tokens.nbytes + stream.doc_lengths.nbytes
    lines = [
        f"== {stream.name} @ {stream.n_tokens:,} tokens: {stream.n_docs:,} documents, "
        f"vocabulary {stream.vocab_size:,}; {note}",
        f"pairs over the {len(offsets)} offsets: {all_pairs:,}; the stream itself ({stream.tokens.dtype} "
        f"tokens + document lengths): {mib(stream_bytes)} MiB",
        method_table(runs, all_pairs),
    ]
    peers = runs["c"].offsets
    if len(peers) < len(offsets):
        lines.append(
            f"* (c), (d), (f) ran on {len(peers)} of the {len(offsets)} offsets {peers.tolist()}; "
            f"Mpairs/s is per pair-update on those offsets, and 's, all offsets' = all pairs / that rate"
        )
    mem = {k: r.memory.offsets for k, r in runs.items()}
    lines.append(
        "peak RSS: one call in a fresh process on offsets "
        + "; ".join(f"({k}) {v if len(v) < 8 else f'{v[0]}..{v[-1]} ({len(v)})'}" for k, v in mem.items())
    )
    target = target_for(stream)
    share = a.rate / target
    verdict = "met" if share >= 1 else f"not met: {1 / share:.1f}x short"
    per_round = np.array(a.seconds) / np.array(b.seconds)
    lines += [
        f"target for (a) ({'bytes' if target == TARGET_BYTES else 'BPE up to 32k'}, 2 cores, interval "
        f"included): {target / 1e6:,.0f} Mpairs/s; measured {a.rate / 1e6:.1f} = {share:.3f} of it "
        f"({verdict})",
        f"interval cost (a)/(b): {min(a.seconds) / min(b.seconds):.2f}x on best times; per round "
        f"(a and b run back to back) median {np.median(per_round):.2f}x, range "
        f"{per_round.min():.2f}-{per_round.max():.2f}x",
        f"plug-in agreement (c), (d), (f) vs (e): max |difference| = {agreement:.1e} "
        f"bits (tolerance {AGREE_TOL:g}): OK",
    ]
    return lines


def summary_table(results: list[tuple[TokenStream, dict[str, Measurement]]]) -> str:
    """One row per stream: Mpairs/s of every method, (a) against its target, memory of (a) and (e)."""
    rows = []
    for stream, runs in results:
        share = runs["a"].rate / target_for(stream)
        rows.append(
            [f"{stream.name} @ {stream.n_tokens / 1e6:.0f}M"]
            + [f"{runs[m.key].rate / 1e6:.1f}" for m in METHODS]
            + [f"{share:.3f}", mib(stream.tokens.nbytes)]
            + [mib(runs[k].memory.added) for k in ("a", "g", "e", "c", "d", "f")]
        )
    headers = (
        ["stream"] + [f"({m.key}) Mp/s" for m in METHODS] + ["(a)/target", "stream MiB"]
        + [f"({k}) added MiB" for k in ("a", "g", "e", "c", "d", "f")]
    )
    return format_table(headers, rows)


def per_size(text: str | None, sizes: list[int], option: str, small: int, large: int) -> list[int]:
    """A comma list with one value for every size of --tokens, or a single value for all.

    Without one: ``small`` for sizes up to LARGE_STREAM tokens, ``large`` above.
    """
    if text is None:
        return [small if n <= LARGE_STREAM else large for n in sizes]
    values = [int(v) for v in text.split(",")]
    if len(values) == 1:
        return values * len(sizes)
    if len(values) != len(sizes):
        raise SystemExit(f"{option}: give one value or one per --tokens size ({len(sizes)})")
    return values


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--tokens", default="1000000,10000000", help="stream sizes, comma-separated (default 1M,10M)"
    )
    parser.add_argument(
        "--repeats",
        help="timed rounds per method, one per size or one for all (default: 3; the machine may be shared)",
    )
    parser.add_argument(
        "--peer-offsets",
        help="run (c), (d), (f) on this many spread offsets, one per size or one for all; 0: all "
        "(default: all up to 2M tokens, 2 above)",
    )
    parser.add_argument("--threads", type=int, default=None, help="Numba threads (default: Numba's)")
    parser.add_argument(
        "--fortunes-dir", type=Path, default=FORTUNES_DIR, help="fortune files, used if present"
    )
    parser.add_argument("--gcide", type=Path, default=GCIDE, help="GCIDE dictionary, used if present")
    parser.add_argument("--warm-up-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--memory-child", nargs=3, help=argparse.SUPPRESS)
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    if args.threads:
        numba.set_num_threads(args.threads)
    if args.warm_up_only:  # the child process of cold_compile_seconds
        print(warm_up(tuple(m for m in METHODS if not m.peer))[0])
        return
    if args.memory_child:  # the child process of measure_memory
        key, npz, offs = args.memory_child
        memory_child(key, Path(npz), [int(r) for r in offs.split(",")])
        return
    wall = time.perf_counter()
    sizes = [int(v) for v in args.tokens.split(",")]
    repeats = dict(zip(sizes, per_size(args.repeats, sizes, "--repeats", 3, 3)))
    peer_counts = dict(zip(sizes, per_size(args.peer_offsets, sizes, "--peer-offsets", 0, 2)))
    offsets = offset_grid(MAX_OFFSET, N_OFFSETS)
    compile_s, compile_how = warm_up(METHODS)
    cold_s = cold_compile_seconds()
    texts, corpus = english_documents(args.fortunes_dir, args.gcide)
    start = time.perf_counter()
    streams, train = build_streams(texts, sizes)
    prep_s = time.perf_counter() - start
    threads = numba.get_num_threads()
    print(machine_line() + f", threading layer {numba.threading_layer()}")
    print(f"corpus: {corpus}")
    print(f"offsets ({len(offsets)}): {offsets.tolist()}")
    print(f"warm-up before timing (excluded): {compile_s:.2f} s; {compile_how}")
    print(f"cold JIT compile of depstat's calls (fresh interpreter, empty NUMBA_CACHE_DIR): {cold_s:.2f} s")
    print(f"BPE training and encoding (excluded): {prep_s:.2f} s; {train}")
    print(
        "timing: best and median of the rounds (per size: "
        + ", ".join(f"{n:,} tokens: {repeats[n]}" for n in sizes)
        + "), methods interleaved in one process; Mpairs/s = pairs summed over the offsets run / "
        "best s; (e) speed-up = Mpairs/s of (e) / Mpairs/s of the method"
    )
    print(
        "memory: each (method, stream) once more in a fresh process that loads the stream and warms "
        "the method up on a tiny stream; 'RSS before' is its RSS then (interpreter, libraries, kernels, "
        "stream), 'peak RSS' the high-water mark during the call (reset by /proc/self/clear_refs), "
        "'added' = peak - before"
    )
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, (size, stream, note) in enumerate(streams):
            runs = measure(stream, offsets, peer_counts[size], repeats[size])
            agreement = check_plugin_agreement(runs)
            npz = Path(tmp) / f"stream{i}.npz"
            np.savez(npz, tokens=stream.tokens, doc_lengths=stream.doc_lengths, vocab_size=stream.vocab_size)
            for m in METHODS:
                runs[m.key].memory = measure_memory(
                    m, npz, memory_offsets(m, stream, runs[m.key].offsets), threads
                )
            npz.unlink()
            results.append((stream, runs))
            print()
            print("\n".join(report_stream(stream, note, runs, offsets, agreement)), flush=True)
    print()
    print("== summary: Mpairs/s per method, (a) as a fraction of the issue's target, added peak RSS")
    print(summary_table(results))
    print(f"\ntotal time {time.perf_counter() - wall:.0f} s")


if __name__ == "__main__":
    main()
