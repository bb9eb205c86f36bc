"""Files written whole or not at all: the one atomic writer of the package."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path


def atomic_write(path: str | os.PathLike, write: Callable[[str], object]) -> Path:
    """Call ``write(tmp)`` on a temporary sibling of ``path``, fsync it and rename it to ``path``.

    Readers, and a rerun after an interrupted or killed process, see the old file or the whole
    new one, never a part; the temporary name is unique, so concurrent writers (Dask workers) do
    not collide, and it keeps the suffix (``np.save`` would otherwise add ``.npy``)."""
    path = Path(path)
    # a name of its own (not mkstemp's, whose file is private to its owner): the file gets the usual permissions
    tmp = str(path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:12]}{path.suffix}"))
    try:
        write(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
