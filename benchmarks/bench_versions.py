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

With ``--shard-tables``, the Dask engine's shard task instead: ``tables.shard_tables`` over the
whole stream for a batch of 4 offsets x (real pairs, rotation null), as each version's
``DaskCounter`` asks for it (its ``distributed.batch_spec``), at offsets 1-4, 256-724 and
1024-2048; printed: each version's best and median milliseconds, head / base, and whether the
tables hold the same cells and counts (where both versions ask for the same tables). With
``--swept``, the rotation null's range task: ``tables.swept_range_sums`` over every first token
from each version's tables of the 20 jackknife blocks, the same batches; printed as above, with
the largest difference of the sums between the versions.

Run: ``python benchmarks/bench_versions.py --base REV [--tokens N] [--streams bytes,words] [--rounds K]
[--shard-tables | --swept]``.
"""

from __future__ import annotations

import argparse
import importlib
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
from benchlib import format_table, machine_line

from depstat.count.counting import jackknife_blocks
from depstat.count.distributed import batch_spec
from depstat.count.tables import shard_tables, swept_range_sums
from depstat.estimate.profile import DEFAULT_BLOCKS, mi_profile
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


def alternate(calls: dict, rounds: int) -> dict[str, list[float]]:
    """Seconds of each of ``calls`` (head, base) over ``rounds`` rounds, the order alternating."""
    times: dict[str, list[float]] = {"head": [], "base": []}
    for i in range(rounds):
        for name in ("head", "base") if i % 2 == 0 else ("base", "head"):
            start = time.perf_counter()
            calls[name]()
            times[name].append(time.perf_counter() - start)
    return times


def base_dask(home: Path) -> dict:
    """``shard_tables``, ``swept_range_sums`` and ``batch_spec`` of the exported base version."""
    sys.path.insert(0, str(home))
    tables = importlib.import_module(base_module_name(home, "tables"))
    spec = importlib.import_module(base_module_name(home, "distributed")).batch_spec
    return {"shard_tables": tables.shard_tables, "swept_range_sums": tables.swept_range_sums, "batch_spec": spec}


HEAD_DASK = {"shard_tables": shard_tables, "swept_range_sums": swept_range_sums, "batch_spec": batch_spec}
SHARD_BATCHES = ([1, 2, 3, 4], [256, 362, 512, 724], [1024, 1448, 1700, 2048])
TIMING_COLUMNS = ["offsets", "head best ms", "head median ms", "base best ms", "base median ms", "head / base speed"]


def timing_row(label: str, times: dict[str, list[float]]) -> list[str]:
    """One row of a milliseconds table: each version's best and median, and head / base on best times."""
    return [label, *(f"{1e3 * f(times[v]):.1f}" for v in ("head", "base") for f in (min, np.median)),
            f"{min(times['base']) / min(times['head']):.3f}"]


def compare_shards(stream: TokenStream, base: dict, rounds: int) -> list[str]:
    """Lines of the report for one stream: a shard task's tables at both versions, each asked
    for what its own ``batch_spec`` asks, alternating; the tables compared where both ask alike."""
    ends = np.cumsum(stream.doc_lengths)
    versions = {"head": HEAD_DASK, "base": base}
    rows, compared, same = [], 0, True
    for batch in SHARD_BATCHES:
        args = {name: (stream.tokens, 0, stream.n_tokens, ends, v["batch_spec"](batch, ["real", "rotate"], 0)[1],
                       stream.n_tokens // 2, int(stream.vocab_size)) for name, v in versions.items()}
        calls = {name: (lambda v=v, a=args[name]: v["shard_tables"](*a)) for name, v in versions.items()}
        results = {name: call() for name, call in calls.items()}  # compiles or loads the kernels
        for a, b, ask_a, ask_b in zip(results["head"], results["base"], args["head"][4], args["base"][4]):
            if ask_a != ask_b:  # the versions ask this slot for different pairs
                continue
            i, j = np.argsort(a.keys, kind="stable"), np.argsort(b.keys, kind="stable")  # any order within a token
            same &= np.array_equal(a.keys[i], b.keys[j]) and np.array_equal(a.counts[i], b.counts[j])
            compared += 1
        rows.append(timing_row(f"{batch[0]}-{batch[-1]}", alternate(calls, rounds)))
    total = sum(len(batch) * 2 for batch in SHARD_BATCHES)
    return [format_table(TIMING_COLUMNS, rows),
            f"tables {'the same' if same else 'DIFFERENT'} at both versions (cells and counts) in the {compared} of "
            f"{total} slots that both versions ask alike (batch_spec)"]


def compare_sweeps(stream: TokenStream, base: dict, rounds: int) -> list[str]:
    """Lines of the report for one stream: the rotation null's range task over the whole
    first-token range (``swept_range_sums``) at both versions, each on the tables of every
    jackknife block that its own ``batch_spec`` asks for, alternating; the sums compared."""
    ends = np.cumsum(stream.doc_lengths)
    blocks, _ = jackknife_blocks(stream.doc_lengths, DEFAULT_BLOCKS)
    vocab = int(stream.vocab_size)
    versions = {"head": HEAD_DASK, "base": base}
    rows, gap = [], 0.0
    for batch in SHARD_BATCHES:
        inputs = {}
        for name, v in versions.items():
            spec = v["batch_spec"](batch, ["rotate"], 0)[1]
            order = sorted(range(len(spec)), key=lambda i: (spec[i][3], spec[i][0]))  # the smallest offset first
            per_block = [v["shard_tables"](stream.tokens, lo, hi, ends, spec, stream.n_tokens // 2, vocab)
                         for lo, hi in zip(blocks[:-1], blocks[1:])]
            inputs[name] = ([b[order[0]] for b in per_block], [[b[k] for b in per_block] for k in order[1:]])
        calls = {name: (lambda v=v, a=inputs[name]: v["swept_range_sums"](*a, vocab)) for name, v in versions.items()}
        results = {name: call() for name, call in calls.items()}  # compiles or loads the kernels
        for a, b in zip(results["head"], results["base"]):  # joint and first-token sums (the second's are counts)
            scale = max(float(np.max(np.abs(b.joint))), 1.0)
            gap = max([gap] + [float(np.nanmax(np.abs(getattr(a, f) - getattr(b, f)), initial=0.0)) / scale
                               for f in ("joint", "joint_jk", "first", "first_jk")])
        rows.append(timing_row(f"{batch[0]}-{batch[-1]}", alternate(calls, rounds)))
    return [format_table(TIMING_COLUMNS, rows),
            f"largest |head - base| of the joint and first-token sums and deltas, over the largest sum: {gap:.1e}"]


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


def compare(stream: TokenStream, base_mi, base_stream_type, offsets: np.ndarray, rounds: int) -> list[str]:
    """Lines of the report for one stream: both versions timed, alternating, and compared."""
    twin = base_stream_type(stream.name, stream.tokens, stream.doc_lengths, stream.vocab_size)
    calls = {
        "head": lambda: mi_profile(stream, offsets, estimator=DEFAULT)[0],
        "base": lambda: base_mi(twin, offsets, estimator=DEFAULT)[0],
    }
    results = {name: call() for name, call in calls.items()}  # compiles or loads the kernels
    times = alternate(calls, rounds)
    pairs = sum(stream.pairs_at(int(r))[0] for r in offsets)
    rows = [[name, f"{min(t):.3f}", f"{np.median(t):.3f}", f"{pairs / min(t) / 1e6:.1f}",
             f"{pairs / np.median(t) / 1e6:.1f}"] for name, t in times.items()]
    per_round = np.array(times["base"]) / np.array(times["head"])
    return [
        format_table(["version", "best s", "median s", "best Mpairs/s", "median Mpairs/s"], rows),
        f"head / base speed: {min(times['base']) / min(times['head']):.3f} on best times, "
        f"{np.median(times['base']) / np.median(times['head']):.3f} on medians; per round "
        f"median {np.median(per_round):.3f}, range {per_round.min():.3f}-{per_round.max():.3f}",
        "largest |head - base|: " + largest_difference(results["head"], results["base"]),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="git revision to compare with (e.g. HEAD~1)")
    parser.add_argument("--tokens", type=int, default=1_000_000)
    parser.add_argument("--streams", default=",".join(STREAMS), help=f"comma-separated, of {', '.join(STREAMS)}")
    parser.add_argument("--rounds", type=int, default=9, help="timed rounds of each version per stream")
    task = parser.add_mutually_exclusive_group()
    task.add_argument("--shard-tables", action="store_true", help="time the Dask engine's shard task instead")
    task.add_argument("--swept", action="store_true", help="time the Dask engine's null range task instead")
    args = parser.parse_args()
    names = [n.strip() for n in args.streams.split(",") if n.strip()]
    unknown = sorted(set(names) - set(STREAMS))
    if unknown or not names:
        parser.error(f"--streams takes {', '.join(STREAMS)}; got {', '.join(unknown) or 'none'}")
    sha, home = export_base(args.base)
    offsets = offset_grid(MAX_OFFSET, N_OFFSETS)
    print(machine_line())
    print(f"base: {args.base} = {sha[:12]}, exported to {home} as depstat_base; head: the depstat imported "
          "here (commit in the header)")
    if args.shard_tables or args.swept:
        what = ("shard task: shard_tables over the whole stream, 4 offsets x (real, rotation null) a batch"
                if args.shard_tables else f"the null's range task: swept_range_sums over every first token, from "
                f"the tables of {DEFAULT_BLOCKS} jackknife blocks, the rotation null at 4 offsets a batch")
        print(f"{what}; {args.rounds} rounds per version, the order alternating")
        report, base = (compare_shards if args.shard_tables else compare_sweeps), base_dask(home)
        for stream, note in make_streams(names, args.tokens):
            print(f"\n== {stream.name} @ {stream.n_tokens:,} tokens, vocabulary {stream.vocab_size:,}; {note}")
            print("\n".join(report(stream, base, args.rounds)), flush=True)
        return
    base_mi, base_stream_type = base_profile(home)
    print(f"profile: default estimator ({DEFAULT}) with the jackknife interval, {len(offsets)} offsets "
          f"1..{MAX_OFFSET}; {args.rounds} rounds per version, the order alternating; Mpairs/s = real pairs "
          "summed over the offsets / seconds")
    for stream, note in make_streams(names, args.tokens):
        print(f"\n== {stream.name} @ {stream.n_tokens:,} tokens, vocabulary {stream.vocab_size:,}; {note}")
        print("\n".join(compare(stream, base_mi, base_stream_type, offsets, args.rounds)), flush=True)


if __name__ == "__main__":
    main()
