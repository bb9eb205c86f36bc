"""The marginal counting rate of a whole ``depstat profile`` against scikit-learn's, on token ids.

Python's standard-library sources are tokenized once with a BPE-8k trained on them and written
as ``.npy`` token streams (one eos id between files) at two sizes, ``--tokens`` and four times
that. Each size is profiled as a whole process: ``depstat profile IDS.npy`` with its defaults
(the grassberger-rotation estimator with the jackknife interval, 29 offsets 1..2048, Numba's cache
filled beforehand) and a script that reads the same stream and calls
``sklearn.metrics.mutual_info_score`` on each document-respecting pair list at ``--sk-offsets``
(plug-in MI, no interval). The marginal rate is (pairs at 4x - pairs at 1x) / (seconds at 4x -
seconds at 1x): process start, imports and compilation cancel, what is left is the cost of a pair.
With ``--base REV`` the depstat of that git revision (exported with ``git archive``) runs in every
round beside this checkout's. Printed per round: each run's seconds, the marginal rates in
Mpairs/s and their ratio; then the ratios' median and range over the rounds (each round runs its
processes back to back).

Run: ``python benchmarks/bench_marginal.py [--tokens N] [--rounds K] [--sk-offsets 1,16,256,2048]
[--base REV]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_first_run import export
from benchlib import format_table, machine_line

RUN = "import sys; from depstat.cli import main; sys.exit(main())"
SKLEARN = """
import sys
import numpy as np
from sklearn.metrics import mutual_info_score
ids = np.load(sys.argv[1]); eos = int(sys.argv[2])
cuts = np.flatnonzero(ids == eos)
docs = [d for d in np.split(ids, cuts) if len(d)]
docs = [d[1:] if d[0] == eos else d for d in docs]
for r in map(int, sys.argv[3].split(",")):
    a = np.concatenate([d[:-r] for d in docs if len(d) > r])
    b = np.concatenate([d[r:] for d in docs if len(d) > r])
    mutual_info_score(a, b)
"""


def stdlib_texts() -> list[str]:
    """The standard library's .py sources, sorted by path."""
    root = Path(sysconfig.get_paths()["stdlib"])
    return [p.read_text(encoding="utf-8", errors="replace") for p in sorted(root.rglob("*.py"))
            if "site-packages" not in p.parts]


def write_streams(tmp: Path, tokens: int) -> tuple[Path, Path, int, int]:
    """Two .npy streams of ``tokens`` and 4 x ``tokens`` BPE-8k ids, the eos id, and the vocabulary."""
    from depstat.tokenize.granularity import train_bpe

    texts = stdlib_texts()
    tokenizer = train_bpe(texts[:400], 8192)
    eos = tokenizer.get_vocab_size()
    parts, total = [], 0
    for enc in tokenizer.encode_batch_fast(texts):
        parts += [np.asarray(enc.ids, dtype=np.uint16), np.array([eos], dtype=np.uint16)]
        total += len(enc.ids) + 1
        if total >= 4 * tokens:
            break
    if total < 4 * tokens:
        raise SystemExit(f"the standard library gives {total:,} tokens, fewer than 4 x {tokens:,}")
    ids = np.concatenate(parts)
    small, large = tmp / "code-1x.npy", tmp / "code-4x.npy"
    np.save(small, ids[:tokens])
    np.save(large, ids[:4 * tokens])
    return small, large, eos, eos + 1


def pairs(path: Path, eos: int, offsets: list[int]) -> int:
    """Pairs inside documents summed over ``offsets``."""
    ids = np.load(path)
    lengths = np.diff(np.concatenate([[-1], np.flatnonzero(ids == eos), [len(ids)]])) - 1
    lengths = lengths[lengths > 0]
    return int(sum(np.clip(lengths - r, 0, None).sum() for r in offsets))


def timed(cmd: list[str], cwd: Path, path: Path | None = None) -> float:
    """Wall seconds of one process (with ``path`` first on the Python path)."""
    env = dict(os.environ)
    if path is not None:
        env["PYTHONPATH"] = f"{path}{os.pathsep}{env.get('PYTHONPATH', '')}"
    start = time.perf_counter()
    done = subprocess.run(cmd, check=False, cwd=cwd, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{cmd[:4]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sk-offsets", default="1,16,256,2048")
    parser.add_argument("--base", help="git revision whose depstat runs beside this checkout's in every round")
    args = parser.parse_args()
    from depstat.estimate.profile import log_offsets

    depstat_offsets = [int(r) for r in log_offsets(2048)]
    sk_offsets = [int(r) for r in args.sk_offsets.split(",")]
    print(machine_line())
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        small, large, eos, vocab = write_streams(tmp, args.tokens)
        versions: dict[str, Path | None] = {"head": None}
        if args.base:
            versions[f"base {args.base}"] = export(args.base, tmp / "base")
        print(f"streams: Python {sys.version.split()[0]} standard-library sources in BPE-8k (trained on the first 400 "
              f"files), eos id {eos}; {args.tokens:,} and {4 * args.tokens:,} tokens")
        print(f"depstat: `depstat profile IDS.npy --eos-id {eos} --vocab-size {vocab} --no-cache --out DIR`, "
              f"{len(depstat_offsets)} offsets 1..2048, every version in every round; sklearn: mutual_info_score at "
              f"offsets {sk_offsets}\n")

        def depstat_run(path: Path, version: Path | None) -> float:
            return timed([sys.executable, "-c", RUN, "profile", str(path), "--eos-id", str(eos), "--vocab-size",
                          str(vocab), "--no-cache", "--out", str(tmp / "out")], tmp, version)

        def sklearn_run(path: Path) -> float:
            return timed([sys.executable, "-c", SKLEARN, str(path), str(eos), args.sk_offsets], tmp)

        for version in versions.values():
            depstat_run(small, version)  # fills Numba's cache: compilation is not a pair's cost
        d_pairs = pairs(large, eos, depstat_offsets) - pairs(small, eos, depstat_offsets)
        s_pairs = pairs(large, eos, sk_offsets) - pairs(small, eos, sk_offsets)
        rows, ratios = [], {name: [] for name in versions}
        for round_ in range(args.rounds):
            s1, s4 = sklearn_run(small), sklearn_run(large)
            s_rate = s_pairs / (s4 - s1) / 1e6
            for name, version in versions.items():
                d1, d4 = depstat_run(small, version), depstat_run(large, version)
                d_rate = d_pairs / (d4 - d1) / 1e6
                ratios[name].append(d_rate / s_rate)
                rows.append([round_ + 1, name, f"{d1:.2f}", f"{d4:.2f}", f"{d_rate:.1f}", f"{s1:.2f}", f"{s4:.2f}",
                             f"{s_rate:.2f}", f"{d_rate / s_rate:.1f}"])
                print(f"round {round_ + 1} {name}: ratio {ratios[name][-1]:.1f}", file=sys.stderr)
    print(format_table(["round", "version", "depstat 1x s", "4x s", "Mpairs/s", "sklearn 1x s", "4x s", "Mpairs/s",
                        "depstat / sklearn"], rows))
    print()
    for name, values in ratios.items():
        print(f"marginal rate, depstat ({name}) / sklearn: median {statistics.median(values):.1f}x, "
              f"range {min(values):.1f}-{max(values):.1f}x over {args.rounds} rounds")


if __name__ == "__main__":
    main()
