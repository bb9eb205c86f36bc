"""Progress bars that show on a terminal and in Jupyter and stay quiet when output is piped; the first run's
kernel compilation announced."""

from __future__ import annotations

import importlib.util
import sys
import time

from numba.core import event
from tqdm import tqdm


def in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel."""
    return "ipykernel" in sys.modules


def enabled() -> bool:
    """Bars are drawn on a terminal and in Jupyter, not when output is piped."""
    return sys.stderr.isatty() or in_notebook()


def bar(desc: str, unit: str = "it", total: int | None = None) -> tqdm:
    """A tqdm bar on stderr (in Jupyter tqdm's widget where ipywidgets is installed, else the text bar, with
    no warning), disabled when output is piped."""
    kind = tqdm
    if in_notebook() and importlib.util.find_spec("ipywidgets") is not None:
        from tqdm.auto import tqdm as kind
    return kind(desc=desc, unit=unit, total=total, disable=not enabled(), leave=False, file=sys.stderr)


class _CompileNotice(event.Listener):
    """Says on stderr when Numba starts compiling depstat's kernels, then each kernel as it is done."""

    def __init__(self) -> None:
        self.depth = 0
        self.started: float | None = None
        self.count = 0

    def on_start(self, ev: event.Event) -> None:
        self.depth += 1
        if self.depth > 1 or not _is_depstat(ev):
            return
        if self.started is None:
            self.begin()

    def begin(self, how: str = "") -> None:
        """Say that compilation starts (``how``: what is said after the first clause)."""
        self.started = time.perf_counter()
        print(f"compiling depstat's kernels (first run only: later runs load them from Numba's cache){how} ...",
              file=sys.stderr, flush=True)

    def on_end(self, ev: event.Event) -> None:
        self.depth -= 1
        if self.depth > 0 or not _is_depstat(ev) or self.started is None:
            return
        self.count += 1
        name = ev.data["dispatcher"].py_func.__name__.strip("_")
        print(f"  compiled {self.count}: {name} ({time.perf_counter() - self.started:.0f} s so far)",
              file=sys.stderr, flush=True)


def _is_depstat(ev: event.Event) -> bool:
    dispatcher = ev.data.get("dispatcher")
    return dispatcher is not None and dispatcher.py_func.__module__.startswith("depstat.")


_NOTICE: _CompileNotice | None = None


def announce_compilation(how: str | None = None) -> None:
    """From now on, say on stderr when a depstat kernel compiles (the first run only), terminal or not;
    with ``how``, say now that compilation starts, and how."""
    global _NOTICE
    if _NOTICE is None:
        _NOTICE = _CompileNotice()
        event.register("numba:compile", _NOTICE)
    if how is not None and _NOTICE.started is None:
        _NOTICE.begin(how)
