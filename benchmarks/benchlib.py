"""Helpers shared by the benchmarks: plain-text tables, a description of the machine, and
the peak memory of a probe run in a fresh interpreter."""

from __future__ import annotations

import os
import platform
import threading
import time
from collections.abc import Sequence

import numba
import numpy as np


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A fixed-width text table: first column left-aligned, the others right-aligned."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def line(row: list[str]) -> str:
        parts = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), rule] + [line(r) for r in cells[1:]])


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo, or the platform's processor string."""
    try:
        with open("/proc/cpuinfo") as fh:
            for text in fh:
                if text.startswith("model name"):
                    return text.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_line() -> str:
    """CPU count and model, Python, NumPy and Numba versions, Numba threads, OMP_WAIT_POLICY."""
    return (
        f"machine: nproc={os.cpu_count()}, CPU {cpu_model()!r}; Python {platform.python_version()}, "
        f"NumPy {np.__version__}, Numba {numba.__version__} ({numba.get_num_threads()} threads, "
        f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'unset')})"
    )


def signed(value: float, digits: int = 4) -> str:
    """A number with an explicit sign, ``digits`` decimals."""
    return f"{value:+.{digits}f}"


def rss_field(name: str) -> int:
    """A ``kB`` field of /proc/self/status (VmRSS, VmHWM, RssAnon), in bytes."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(name + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"{name} not in /proc/self/status")


class PeakRSS:
    """Peak resident memory above its value at entry while the ``with`` block runs, from the
    kernel's high-water mark (VmHWM, reset to the current RSS by writing 5 to
    /proc/self/clear_refs, Linux >= 4.0); ``before``, ``peak`` (bytes) and ``mib`` hold it
    after the block. A thread sampling RSS would miss what a Numba kernel allocates and frees
    while it holds the GIL. File pages read in the block (a memory-mapped stream) count too."""

    def __enter__(self) -> "PeakRSS":
        self.before = rss_field("VmRSS")
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return self

    def __exit__(self, *exc: object) -> None:
        self.peak = rss_field("VmHWM")
        self.mib = (self.peak - self.before) / 2**20


def _rss_anon() -> int:
    """This process's anonymous resident memory in bytes (``RssAnon``: not memory-mapped files)."""
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith("RssAnon:"))


class PeakAnon:
    """Peak anonymous resident memory above its value at entry, sampled every 5 ms by a
    thread while the ``with`` block runs; ``mib`` holds it after the block. Memory-mapped
    file pages do not count; what a Numba kernel allocates and frees while it holds the GIL
    may be missed (``PeakRSS`` sees it)."""

    def __enter__(self) -> "PeakAnon":
        self.base = self.peak = _rss_anon()
        self._done = False
        self._probe = threading.Thread(target=self._sample)
        self._probe.start()
        return self

    def _sample(self) -> None:
        while not self._done:
            self.peak = max(self.peak, _rss_anon())
            time.sleep(0.005)

    def __exit__(self, *exc: object) -> None:
        self._done = True
        self._probe.join()
        self.mib = (self.peak - self.base) / 2**20


def probe_env() -> dict[str, str]:
    """The environment of a probe run with ``python -c``: this folder first on its path, for ``benchlib``."""
    here = os.path.dirname(os.path.abspath(__file__))
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)}
