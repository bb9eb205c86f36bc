"""Helpers shared by the benchmarks: plain-text tables and a description of the machine."""

from __future__ import annotations

import os
import platform
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
