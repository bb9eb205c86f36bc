"""Numba compile time of depstat's kernels over a test run: a pytest plugin.

Cold Numba compiles are most of a fresh test run's time (CI starts with no cache). This
records each compile through Numba's event API and prints, after the tests, the seconds
each function took to compile itself (its callees' own compiles subtracted, so the rows
add up to the total) and how many signatures it was compiled for, largest first.

    NUMBA_CACHE_DIR=$(mktemp -d) PYTHONPATH=benchmarks python -m pytest -q -p compile_times

An empty NUMBA_CACHE_DIR makes every kernel compile; functions loaded from a cache are not
compiles and are not counted. Compiles in other processes (Dask workers, subprocesses)
are not seen.
"""

from __future__ import annotations

import time
from collections import defaultdict

import pytest
from numba.core import event

TOP = 25  # rows printed


class CompileTimes(event.Listener):
    """Self time and signatures of every compile, by the compiled function's qualified name."""

    def __init__(self) -> None:
        self.stack: list[list[float]] = []  # [start, seconds spent in nested compiles]
        self.seconds: dict[str, float] = defaultdict(float)
        self.signatures: dict[str, int] = defaultdict(int)

    def on_start(self, ev: event.Event) -> None:
        self.stack.append([time.perf_counter(), 0.0])

    def on_end(self, ev: event.Event) -> None:
        start, nested = self.stack.pop()
        took = time.perf_counter() - start
        if self.stack:
            self.stack[-1][1] += took
        func = ev.data["dispatcher"].py_func
        name = f"{func.__module__}.{func.__qualname__}"
        self.seconds[name] += took - nested
        self.signatures[name] += 1


RECORDER = CompileTimes()


def pytest_configure(config: pytest.Config) -> None:
    event.register("numba:compile", RECORDER)


def pytest_terminal_summary(terminalreporter) -> None:
    rows = sorted(RECORDER.seconds.items(), key=lambda kv: -kv[1])
    total = sum(RECORDER.seconds.values())
    depstat_rows = [(n, s) for n, s in rows if n.startswith("depstat.")]
    tr = terminalreporter
    tr.section("Numba compile time (self seconds, signatures)")
    tr.write_line(f"all compiles: {total:.1f} s, {sum(RECORDER.signatures.values())} signatures; "
                  f"depstat's: {sum(s for _, s in depstat_rows):.1f} s, "
                  f"{sum(RECORDER.signatures[n] for n, _ in depstat_rows)} signatures")
    for name, seconds in depstat_rows[:TOP]:
        tr.write_line(f"{seconds:8.1f} s  {RECORDER.signatures[name]:3d}  {name}")
