"""The one exception type depstat raises for bad input or bad parameters."""

from __future__ import annotations


class DepstatError(Exception):
    """A problem the user can fix, reported as one line: where, what was wrong, what to do.

    The CLI prints ``str(err)`` without a traceback; the API lets it propagate.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.path = path
        self.line = line
        self.hint = hint
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = f"{self.path}:{self.line}: " if self.line is not None else f"{self.path}: "
        text = f"{where}{self.message}"
        if self.hint:
            text += f" ({self.hint})"
        return text
