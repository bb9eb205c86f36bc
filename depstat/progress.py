"""Progress bars that show on a terminal and stay quiet when output is piped."""

from __future__ import annotations

import sys

from tqdm import tqdm


def enabled() -> bool:
    """Bars are drawn only when stderr is a terminal."""
    return sys.stderr.isatty()


def bar(desc: str, unit: str = "it", total: int | None = None) -> tqdm:
    """A tqdm bar on stderr, disabled when stderr is not a terminal."""
    return tqdm(desc=desc, unit=unit, total=total, disable=not enabled(), leave=False, file=sys.stderr)
