"""A tokenizer.json read from disk: the model's own tokenizer (``--tokenizer``) or the one that made
token ids (``--ids-tokenizer``)."""

from __future__ import annotations

from pathlib import Path

from tokenizers import Tokenizer

from depstat.errors import DepstatError


def load_tokenizer(path: str) -> Tokenizer:
    """A ``tokenizer.json`` file (or a directory holding one), with a clear error otherwise."""
    p = Path(path)
    if p.is_dir():
        p = p / "tokenizer.json"
    if not p.is_file():
        raise DepstatError("no tokenizer.json here", path=str(p), hint="pass a tokenizer.json file")
    try:
        return Tokenizer.from_file(str(p))
    except Exception as err:  # tokenizers raises a bare Exception for bad files
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise DepstatError(f"not a valid tokenizer.json ({first})", path=str(p)) from None
