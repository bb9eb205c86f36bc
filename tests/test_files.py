"""The one atomic writer: whole files or none, usual permissions, no temporary left behind."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from depstat.files import atomic_write


def test_a_write_that_fails_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    path.write_text("old")

    def half(tmp: str) -> None:
        Path(tmp).write_text("ne")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(path, half)
    assert path.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_the_file_is_whole_keeps_its_suffix_and_the_usual_permissions(tmp_path: Path) -> None:
    path = atomic_write(tmp_path / "tokens.npy", lambda tmp: np.save(tmp, np.arange(5)))
    assert np.load(path).tolist() == [0, 1, 2, 3, 4] and sorted(p.name for p in tmp_path.iterdir()) == ["tokens.npy"]
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
