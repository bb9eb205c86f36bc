"""A new user's first ``depstat profile`` against the same command once Numba's cache is filled.

Each round runs, as separate processes, the command with an empty ``NUMBA_CACHE_DIR`` and an
empty token cache (cold: every kernel compiles, every vocabulary trains) and then with the
Numba cache the cold run filled but again an empty token cache (warm: only the compilation
is saved). With ``--base REV`` the same pair of runs of that git revision (exported with
``git archive`` and put first on the path) follows in every round, so both versions meet the
same machine load. Printed: each run's wall seconds, the cold / warm ratio per version on
medians, and the kernels the cold run reported compiling (none where a version says nothing).

Run: ``python benchmarks/bench_first_run.py [--base REV] [--rounds K] [--corpus PATH]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import format_table, machine_line

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "examples" / "python-docs.jsonl.gz"
RUN = "import sys; from depstat.cli import main; sys.exit(main())"


def export(rev: str, into: Path) -> Path:
    """The package ``depstat`` of git revision ``rev``, unpacked under ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", rev, "depstat"], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def timed_run(path: Path | None, corpus: Path, numba_cache: Path, scratch: Path) -> tuple[float, int]:
    """Seconds of one ``depstat profile corpus`` (with ``path`` first on the path) and the kernels it said it compiled."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(numba_cache)}
    if path is not None:
        env["PYTHONPATH"] = f"{path}{os.pathsep}{env.get('PYTHONPATH', '')}"
    with tempfile.TemporaryDirectory(dir=scratch) as tmp:
        env["DEPSTAT_CACHE"] = str(Path(tmp) / "tokens")
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", RUN, "profile", str(corpus), "--out", str(Path(tmp) / "out")],
                              env=env, capture_output=True, text=True, cwd=tmp)
        seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"depstat failed ({done.returncode}): {done.stderr[-2000:]}")
    return seconds, sum(line.lstrip().startswith("compiled ") for line in done.stderr.splitlines())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="git revision to run beside this checkout")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    args = parser.parse_args()
    print(machine_line())
    print(f"corpus: {args.corpus.name}; {args.rounds} rounds, each: cold then warm of every version\n")
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        versions: dict[str, Path | None] = {"head": None}
        if args.base:
            versions[f"base {args.base}"] = export(args.base, scratch / "base")
        times: dict[str, dict[str, list[float]]] = {v: {"cold": [], "warm": []} for v in versions}
        compiled: dict[str, int] = {}
        for round_ in range(args.rounds):
            for name, path in versions.items():
                numba_cache = scratch / f"numba-{round_}-{name.split()[0]}"
                cold, compiled[name] = timed_run(path, args.corpus, numba_cache, scratch)
                warm, _ = timed_run(path, args.corpus, numba_cache, scratch)
                times[name]["cold"].append(cold)
                times[name]["warm"].append(warm)
                print(f"round {round_ + 1} {name}: cold {cold:.1f} s, warm {warm:.1f} s", file=sys.stderr)
    rows = []
    for name, t in times.items():
        cold, warm = statistics.median(t["cold"]), statistics.median(t["warm"])
        rows.append([name, " ".join(f"{x:.1f}" for x in t["cold"]), " ".join(f"{x:.1f}" for x in t["warm"]),
                     f"{cold / warm:.1f}", compiled[name] or "not said"])
    print(format_table(["version", "cold s", "warm s", "cold / warm (medians)", "kernels compiled"], rows))


if __name__ == "__main__":
    main()
