"""Fixtures shared by several test files."""

from __future__ import annotations

import gzip
import os
from pathlib import Path
from typing import NamedTuple

import pytest

import depstat
from depstat.analysis.result import Analysis, analyze
from depstat.estimate.profile import Profile

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "python-docs.jsonl.gz"


@pytest.fixture(scope="session", autouse=True)
def _cache_in_tmp(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Commands run by the tests (and their subprocesses) cache tokens in a temporary directory."""
    os.environ["DEPSTAT_CACHE"] = str(tmp_path_factory.mktemp("depstat-cache"))


class Analysed(NamedTuple):
    profile: Profile
    analysis: Analysis


@pytest.fixture(scope="session")
def analysed(tmp_path_factory: pytest.TempPathFactory) -> Analysed:
    """The first 20 documents of the bundled example at bytes and bpe-512, analysed (d = 64, L = 256)."""
    path = tmp_path_factory.mktemp("corpus") / "docs.jsonl"
    with gzip.open(EXAMPLE, "rt", encoding="utf-8") as f:
        path.write_text("".join(next(f) for _ in range(20)), encoding="utf-8")
    p = depstat.profile(str(path), granularities=["bytes", "bpe-512"], max_offset=256)
    return Analysed(p, analyze(p, head_dim=64, train_length=256, target_length=1024))
