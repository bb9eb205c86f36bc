"""The default profile at two versions of depstat, interleaved in one process.

On a shared machine the speed of one process moves by tens of percent from one minute to
the next, so two benchmark runs made apart cannot show a change of a few percent. Here the
base version (``--base``, a git revision) is exported with ``git archive`` as the package
``depstat_base`` (its imports rewritten) and runs beside the ``depstat`` this interpreter
imports, on the same streams, the two alternating in every round. Both compute what
``bench_speed.py``'s (a) computes: ``mi_profile`` with the default estimator and the
jackknife interval at 29 offsets from 1 to 2048.

Streams: the English text of ``bench_speed.py`` as UTF-8 bytes, BPE-8k and BPE-32k (as
there) and words (``granularity.train_words`` on all the text), each cut to ``--tokens``.
Printed: best and median Mpairs/s of each version, the speed ratio head / base on the best
and median times and per round (each round runs both back to back), and the largest
difference of MI and of its standard error between the versions (0.0 when a change leaves
every figure alone).

With ``--range-tasks`` the Dask engine's range tasks are timed instead, the same way: for the
default grid's first and last batch of 4 offsets, each jackknife block one shard
(``tables.shard_tables``, head's), the real pairs' ``range_sums`` at each offset and the
rotation null's ``swept_range_sums`` for the batch, each ``combine``d, as the default
estimator asks for them (without the first marginal where the version can leave it out).
The largest difference is then of the sums the estimator reads. Then, for each version in a
fresh process that holds the last batch's tables already, the peak resident memory a
range task adds above them: the real pairs' ``range_sums`` at the largest offset and the
null's ``swept_range_sums``, with ``merge`` of the same 20 tables as a merge task would take
them (``MEMORY_PROBE``); head's also with the tables handed to its kernels in 8 parts, as
it hands over a larger task's.

With ``--shard-tasks`` the Dask engine's shard tasks are timed instead: ``tables.shard_tables``
of the whole stream as one shard (as large as ``--tokens``: the engine's shards hold 4M to
64M positions), for the default grid's first and last batch (real pairs and the rotation
null, 8 slots: ``distributed.batch_spec``). Printed then is whether every table holds the
same cells and counts at both versions.

With ``--graph-tasks`` the rest of a profile's Dask graph is timed instead, as
``bench_dask.py`` runs it but in one process: every batch of the default grid counted once
by head's shard tasks (20 blocks of GRAPH_SHARDS_PER_BLOCK shards, one first-token range),
then each version's block tasks (merging each block's shards), range tasks and combine
tasks on them (``distributed._block_task``, ``_range_task``, ``_combine_task``).

Run: ``python benchmarks/bench_versions.py --base REV [--tokens N] [--streams bytes,words] [--rounds K]
[--range-tasks | --shard-tasks | --graph-tasks]``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pickle
import re
import shutil
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
    N_OFFSETS,
    build_streams,
    encode_until,
    english_documents,
    offset_grid,
    resize,
)
from benchlib import format_table, machine_line, probe_env

from depstat.count import tables
from depstat.count.counting import jackknife_blocks
from depstat.count.distributed import batch_spec
from depstat.estimate import estimators
from depstat.estimate.profile import mi_profile
from depstat.tokenize.granularity import train_words
from depstat.tokenize.stream import TokenStream

STREAMS = ("bytes", "bpe-8k", "bpe-32k", "words")
BASE_ROOT = Path.home() / ".cache" / "depstat-bench-versions"  # one export per commit: its Numba cache is kept
IMPORT = re.compile(r"^(\s*)(from|import) depstat\b", re.MULTILINE)


def export_base(rev: str) -> tuple[str, Path]:
    """The full commit of ``rev`` and a folder holding its ``depstat`` as ``depstat_base``."""
    root = Path(__file__).resolve().parent.parent
    sha = subprocess.run(["git", "rev-parse", "--verify", f"{rev}^{{commit}}"], cwd=root, check=True,
                         capture_output=True, text=True).stdout.strip()
    home = BASE_ROOT / sha
    if (home / "depstat_base").is_dir():
        return sha, home
    BASE_ROOT.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=BASE_ROOT))
    try:
        archive = subprocess.run(["git", "archive", sha, "depstat"], cwd=root, check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True)
        (tmp / "depstat").rename(tmp / "depstat_base")
        for path in (tmp / "depstat_base").rglob("*.py"):
            path.write_text(IMPORT.sub(r"\1\2 depstat_base", path.read_text()))
        tmp.rename(home)  # whole or not at all
    except OSError:  # another run exported it meanwhile
        if not (home / "depstat_base").is_dir():
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # gone after the rename unless something failed
    return sha, home


BASE_LAYOUT = {"profile": "estimate.profile", "stream": "tokenize.stream", "tables": "count.tables",
               "distributed": "count.distributed"}  # where a module lives since the package has subpackages


def base_module_name(home: Path, name: str) -> str:
    """The dotted name of module ``name`` in the exported base: in its subpackage, or flat (older revisions)."""
    nested = BASE_LAYOUT[name]
    return f"depstat_base.{nested}" if (home / "depstat_base" / f"{nested.replace('.', '/')}.py").is_file() \
        else f"depstat_base.{name}"


def base_profile(home: Path):
    """``mi_profile`` and ``TokenStream`` of the exported base version."""
    sys.path.insert(0, str(home))
    profile = importlib.import_module(base_module_name(home, "profile"))
    stream = importlib.import_module(base_module_name(home, "stream"))
    return profile.mi_profile, stream.TokenStream


def range_inputs(stream: TokenStream, batch: list[int], n_blocks: int = 20) -> tuple[list, list, list]:
    """One table per block of the real pairs at each offset of ``batch``, and of the rotation
    null at its smallest offset with, for each larger one, the pairs it drops: what the Dask
    engine's shard tasks count (``distributed.batch_spec``, head's ``shard_tables``, each
    block one shard)."""
    block_starts, _ = jackknife_blocks(stream.doc_lengths, n_blocks)
    ends, shift = np.cumsum(stream.doc_lengths), max(stream.n_tokens // 2, 1)
    slots, spec, base_of = batch_spec(batch, ("real", "rotate"), 0)
    per_block = [tables.shard_tables(stream.tokens, lo, hi, ends, spec, shift, int(stream.vocab_size))
                 for lo, hi in zip(block_starts[:-1], block_starts[1:])]
    real = [i for i, (_, _, p) in enumerate(slots) if p == "real"]
    null = next(i for i, (_, _, p) in enumerate(slots) if p == "rotate" and i not in base_of)
    drops = sorted(base_of, key=lambda i: slots[i][0])

    def every_block(i: int) -> list:
        return [b[i] for b in per_block]

    return [every_block(i) for i in real], every_block(null), [every_block(i) for i in drops]


def range_task_calls(stream: TokenStream, base_tables, batches: list[list[int]]):
    """(head, base) calls that sum every batch's tables as the range tasks do, and the fields compared."""
    lean = not estimators.get(DEFAULT).first_marginal
    inputs = [range_inputs(stream, batch) for batch in batches]
    v = int(stream.vocab_size)

    def run(mod, first_marginal: dict) -> list:
        out = []
        for reals, null, drops in inputs:
            blocks = list(range(len(null)))
            out += [mod.combine([mod.range_sums(t, blocks, len(blocks), v, **first_marginal)]) for t in reals]
            out += [mod.combine([p]) for p in mod.swept_range_sums(null, drops, v, **first_marginal)]
        return out

    fields = ("joint", "second", "joint_jk", "second_jk") + (() if lean else ("first", "first_jk"))
    return (lambda: run(tables, {"first_marginal": not lean}), lambda: run(base_tables, {})), fields


def shard_task_calls(stream: TokenStream, base_tables, batches: list[list[int]]):
    """(head, base) calls that count the tables of every batch's slots for the whole stream
    as one shard, as the shard tasks do (``tables.shard_tables``)."""
    ends, shift, v = np.cumsum(stream.doc_lengths), max(stream.n_tokens // 2, 1), int(stream.vocab_size)
    specs = [batch_spec(batch, ("real", "rotate"), 0)[1] for batch in batches]

    def run(mod) -> list:
        return [t for spec in specs for t in mod.shard_tables(stream.tokens, 0, stream.n_tokens, ends, spec, shift, v)]

    return lambda: run(tables), lambda: run(base_tables)


MEMORY_PROBE = r"""
import importlib, inspect, json, pickle, sys
from benchlib import PeakRSS
tables = importlib.import_module(sys.argv[1])
n_chunks = int(sys.argv[3])  # the tables handed to the kernels in this many first-token ranges; 0: the default
name = sys.argv[4]  # one call a process: memory another call freed could be reused unseen
with open(sys.argv[2], "rb") as fh:
    real, null, drops, v, first_marginal = pickle.load(fh)
fm = {"first_marginal": first_marginal} if "first_marginal" in inspect.signature(tables.range_sums).parameters else {}
blocks = list(range(len(real)))

def tiny(ts):
    return [tables.CountTable(t.keys[:8], t.counts[:8]) for t in ts]

def chunk(ts):
    return {"chunk": -(-sum(len(t.keys) for t in ts) // n_chunks)} if n_chunks else {}

calls = {
    "range_sums": lambda r, n, d: tables.range_sums(r, blocks, len(blocks), v, **fm, **chunk(r)),
    "swept_range_sums": lambda r, n, d: tables.swept_range_sums(n, d, v, **fm, **chunk(n)),
    "merge": lambda r, n, d: tables.merge(r, v, **chunk(r)),
}
calls[name](tiny(real), tiny(null), [tiny(g) for g in drops])  # compiles or loads the kernels on a tiny input
with PeakRSS() as memory:
    calls[name](real, null, drops)
print(json.dumps(memory.mib))
"""
PROBE_CHUNKS = 8  # head's calls also measured with the tables handed over in this many parts


def range_task_memory(stream: TokenStream, home: Path, batch: list[int]) -> list[str]:
    """Lines with the peak resident memory of the range and merge calls of ``batch`` at both
    versions, each in a fresh process, against the tables they take in (``MEMORY_PROBE``);
    head's also with its tables handed to the kernels in PROBE_CHUNKS first-token ranges,
    as it hands over a task's tables larger than ``tables.CHUNK_ENTRIES``."""
    lean = not estimators.get(DEFAULT).first_marginal
    reals, null, drops = range_inputs(stream, batch)
    inputs = {"range_sums": reals[-1], "swept_range_sums": null + [t for g in drops for t in g], "merge": reals[-1]}
    mib = {name: sum(t.keys.nbytes + t.counts.nbytes for t in ts) / 2**20 for name, ts in inputs.items()}
    rows = {name: [name, f"{size:.1f}"] for name, size in mib.items()}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tables.pickle"
        with path.open("wb") as fh:
            pickle.dump((reals[-1], null, drops, int(stream.vocab_size), not lean), fh)
        env = probe_env()
        env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(home)] + sys.path[1:])
        for module, n_chunks in (("depstat.count.tables", 0), ("depstat.count.tables", PROBE_CHUNKS), (base_module_name(home, "tables"), 0)):
            for name in inputs:
                done = subprocess.run([sys.executable, "-c", MEMORY_PROBE, module, str(path), str(n_chunks), name],
                                      capture_output=True, text=True, check=True, env=env)
                peak = json.loads(done.stdout.strip().splitlines()[-1])
                rows[name] += [f"{peak:.1f}", f"{peak / mib[name]:.2f}"]
    return [f"memory of the last batch's calls ({batch[-1]} for the real pairs), each alone in a fresh process holding "
            "the tables: peak resident MiB above that (VmHWM), and over the tables' MiB; head's in its default parts "
            f"(of at most tables.CHUNK_ENTRIES = {tables.CHUNK_ENTRIES:,} entries) and in {PROBE_CHUNKS}",
            format_table(["call", "tables MiB", "head MiB", "/ tables", f"head in {PROBE_CHUNKS} MiB", "/ tables",
                          "base MiB", "/ tables"], list(rows.values()))]


GRAPH_SHARDS_PER_BLOCK = 4  # as bench_dask.py's "four shards a block": each block's tables merged


def graph_task_calls(stream: TokenStream, base_distributed, offsets: np.ndarray):
    """(head, base) calls that run a profile's block, range and combine tasks on shard results
    counted once by head, the fields compared, and the batches."""
    from depstat.count import distributed

    v, ends, shift = int(stream.vocab_size), np.cumsum(stream.doc_lengths), max(stream.n_tokens // 2, 1)
    starts, _ = jackknife_blocks(stream.doc_lengths, 20)
    n_blocks = len(starts) - 1
    bounds = distributed.shards(stream.doc_lengths, starts, max(1, stream.n_tokens // (n_blocks * GRAPH_SHARDS_PER_BLOCK)))
    shard_block = np.searchsorted(starts, bounds[:-1], side="right") - 1
    edges = np.array([0, v * v], dtype=np.int64)  # one first-token range, as at these sizes
    batches = [[int(r) for r in offsets[i:i + 4]] for i in range(0, len(offsets), 4)]
    counted = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tokens.npy"
        np.save(path, stream.tokens)
        for batch in batches:
            slots, spec, base_of = batch_spec(batch, ("real", "rotate"), 0)
            shards = [distributed._count_shard(str(path), int(lo), int(hi), ends[np.searchsorted(ends, lo, side="right"):
                                               np.searchsorted(ends, hi) + 1], spec, shift, v, edges)
                      for lo, hi in zip(bounds[:-1], bounds[1:])]
            counted.append((slots, base_of, shards))
    lean = not estimators.get(DEFAULT).first_marginal

    def run(mod) -> list:
        out = []
        for slots, base_of, shards in counted:
            top = []
            for g in range(n_blocks):
                ins = [shards[i] for i in np.flatnonzero(shard_block == g)]
                top.append(mod._block_task(v, 0, *ins) if len(ins) > 1 else [t[0] for t in ins[0]])
            swept = {s: [s] + sorted((i for i in base_of if base_of[i] == s), key=lambda i: slots[i][0])
                     for s in set(base_of.values())}
            for s in (s for s in range(len(slots)) if s not in base_of):
                group = swept.get(s, [s])
                tables = [top[g][i] for i in group for g in range(n_blocks)]
                part = mod._range_task(n_blocks, v, True, not lean, len(group), [None] * len(tables), *tables)
                out += mod._combine_task([part], len(group), True)
        return out

    fields = ("joint", "second", "joint_jk", "second_jk") + (() if lean else ("first", "first_jk"))
    return (lambda: run(distributed), lambda: run(base_distributed)), fields, batches


def tables_equal(head: list, base: list) -> bool:
    """Whether each pair of tables holds the same cells with the same counts (in any order within a first token)."""
    def cells(t):
        order = np.argsort(t.keys, kind="stable")
        return t.keys[order], t.counts[order]
    return len(head) == len(base) and all(
        all(np.array_equal(a, b) for a, b in zip(cells(h), cells(b))) for h, b in zip(head, base))


def make_streams(names: list[str], n_tokens: int) -> list[tuple[TokenStream, str]]:
    """The asked streams of ``n_tokens`` tokens, with a note on how each was cut."""
    texts, _ = english_documents(FORTUNES_DIR, GCIDE)
    out = []
    subword = [n for n in names if n != "words"]
    if subword:
        out += [(stream, note) for _, stream, note in build_streams(texts, [n_tokens], subword)[0]]
    if "words" in names:
        full = encode_until("words", texts, train_words(texts), n_tokens)
        out.append(resize(full, n_tokens))
    return out


def largest_difference(head, base) -> str:
    """The largest |head - base| of MI and of its standard error, in bits."""
    gaps = {column: np.nanmax(np.abs(head[column].to_numpy() - base[column].to_numpy()))
            for column in ("mi_bits", "se")}
    return f"MI {gaps['mi_bits']:.1e} bits, SE {gaps['se']:.1e} bits"


def compare(stream: TokenStream, base_mi, base_stream_type, offsets: np.ndarray, rounds: int,
            base_tables=None, tasks: str = "range") -> list[str]:
    """Lines of the report for one stream: both versions timed, alternating, and compared
    (with ``base_tables``, the ``tasks`` "range" or "shard" of the grid's first and last batch,
    or "graph" of every batch, ``base_tables`` then the base's ``distributed``)."""
    if base_tables is None:
        twin = base_stream_type(stream.name, stream.tokens, stream.doc_lengths, stream.vocab_size)
        calls = {
            "head": lambda: mi_profile(stream, offsets, estimator=DEFAULT)[0],
            "base": lambda: base_mi(twin, offsets, estimator=DEFAULT)[0],
        }
        batches = [[int(r) for r in offsets]]
    else:
        batches = [[int(r) for r in offsets[:4]], [int(r) for r in offsets[-4:]]]
        if tasks == "graph":
            (head_call, base_call), fields, batches = graph_task_calls(stream, base_tables, offsets)
        elif tasks == "shard":
            head_call, base_call = shard_task_calls(stream, base_tables, batches)
        else:
            (head_call, base_call), fields = range_task_calls(stream, base_tables, batches)
        calls = {"head": head_call, "base": base_call}
    results = {name: call() for name, call in calls.items()}  # compiles or loads the kernels
    times: dict[str, list[float]] = {"head": [], "base": []}
    for i in range(rounds):
        for name in ("head", "base") if i % 2 == 0 else ("base", "head"):
            start = time.perf_counter()
            calls[name]()
            times[name].append(time.perf_counter() - start)
    pairs = sum(stream.pairs_at(r)[0] for batch in batches for r in batch)
    rows = [[name, f"{min(t):.3f}", f"{np.median(t):.3f}", f"{pairs / min(t) / 1e6:.1f}",
             f"{pairs / np.median(t) / 1e6:.1f}"] for name, t in times.items()]
    head, base = results["head"], results["base"]
    if base_tables is None:
        same = "largest |head - base|: " + largest_difference(head, base)
    elif tasks == "shard":
        same = f"tables equal (cells and counts): {'yes' if tables_equal(head, base) else 'NO'}"
    else:
        same = f"largest |head - base|: {sums_difference(head, base, fields):.1e} of the sums ({', '.join(fields)})"
    per_round = np.array(times["base"]) / np.array(times["head"])
    return [
        format_table(["version", "best s", "median s", "best Mpairs/s", "median Mpairs/s"], rows),
        f"head / base speed: {min(times['base']) / min(times['head']):.3f} on best times, "
        f"{np.median(times['base']) / np.median(times['head']):.3f} on medians; per round "
        f"median {np.median(per_round):.3f}, range {per_round.min():.3f}-{per_round.max():.3f}",
        same,
    ]



def sums_difference(head: list, base: list, fields: tuple[str, ...]) -> float:
    """The largest |head - base| of the given TableSums fields, relative to the field's size."""
    return max(float(np.max(np.abs(getattr(h, f) - getattr(b, f)) / np.maximum(np.abs(getattr(b, f)), 1.0)))
               for h, b in zip(head, base) for f in fields)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="git revision to compare with (e.g. HEAD~1)")
    parser.add_argument("--tokens", type=int, default=1_000_000)
    parser.add_argument("--streams", default=",".join(STREAMS), help=f"comma-separated, of {', '.join(STREAMS)}")
    parser.add_argument("--rounds", type=int, default=9, help="timed rounds of each version per stream")
    tasks = parser.add_mutually_exclusive_group()
    tasks.add_argument("--range-tasks", action="store_true",
                       help="time the Dask engine's range tasks (range_sums, swept_range_sums) instead of the profile")
    tasks.add_argument("--shard-tasks", action="store_true",
                       help="time the Dask engine's shard tasks (shard_tables of the stream as one shard) instead")
    tasks.add_argument("--graph-tasks", action="store_true",
                       help="time the Dask engine's block, range and combine tasks of a whole profile instead")
    args = parser.parse_args()
    names = [n.strip() for n in args.streams.split(",") if n.strip()]
    unknown = sorted(set(names) - set(STREAMS))
    if unknown or not names:
        parser.error(f"--streams takes {', '.join(STREAMS)}; got {', '.join(unknown) or 'none'}")
    sha, home = export_base(args.base)
    base_mi, base_stream_type = base_profile(home)
    base_tables = (importlib.import_module(base_module_name(home, "distributed" if args.graph_tasks else "tables"))
                   if args.range_tasks or args.shard_tasks or args.graph_tasks else None)
    kind = "shard" if args.shard_tasks else "graph" if args.graph_tasks else "range"
    offsets = offset_grid(MAX_OFFSET, N_OFFSETS)
    print(machine_line())
    print(f"base: {args.base} = {sha[:12]}, exported to {home} as depstat_base; head: the depstat imported "
          "here (commit in the header)")
    if args.range_tasks:
        print(f"range tasks: the default grid's first and last batch ({offsets[:4].tolist()}, "
              f"{offsets[-4:].tolist()}), 20 blocks of one shard; real pairs' range_sums at each offset, the "
              f"rotation null's swept_range_sums a batch, each combined, as {DEFAULT} asks; {args.rounds} rounds "
              "per version, the order alternating; Mpairs/s = real pairs of the 8 offsets / seconds")
    elif args.graph_tasks:
        print(f"graph tasks: every batch of the default grid ({len(offsets)} offsets, 4 a batch), real pairs and the "
              f"rotation null, counted once by head's shard tasks in 20 blocks of {GRAPH_SHARDS_PER_BLOCK} shards; "
              f"each version's block, range and combine tasks on them, as {DEFAULT} asks; {args.rounds} rounds per "
              "version, the order alternating; Mpairs/s = real pairs of all offsets / seconds")
    elif args.shard_tasks:
        print(f"shard tasks: the default grid's first and last batch ({offsets[:4].tolist()}, "
              f"{offsets[-4:].tolist()}), real pairs and the rotation null (8 slots a batch), the stream as one "
              f"shard; {args.rounds} rounds per version, the order alternating; Mpairs/s = real pairs of the 8 "
              "offsets / seconds")
    else:
        print(f"profile: default estimator ({DEFAULT}) with the jackknife interval, {len(offsets)} offsets "
              f"1..{MAX_OFFSET}; {args.rounds} rounds per version, the order alternating; Mpairs/s = real pairs "
              "summed over the offsets / seconds")
    for stream, note in make_streams(names, args.tokens):
        print(f"\n== {stream.name} @ {stream.n_tokens:,} tokens, vocabulary {stream.vocab_size:,}; {note}")
        print("\n".join(compare(stream, base_mi, base_stream_type, offsets, args.rounds, base_tables, kind)), flush=True)
        if args.range_tasks:
            print("\n".join(range_task_memory(stream, home, [int(r) for r in offsets[-4:]])), flush=True)


if __name__ == "__main__":
    main()
