"""The README's Python example runs as printed, and the README stays a front page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_the_python_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (block,) = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(block, "README.md", "exec"), scope)
    assert (tmp_path / "out" / "example" / "summary.json").is_file()
    assert scope["a"].self_similarity.verdict in ("self-similar", "not self-similar", "inconclusive")


def test_the_readme_is_a_front_page() -> None:
    assert len(README.splitlines()) <= 200 and len(README.split()) <= 1500
    for link in re.findall(r"\]\(([^)#]+)\)", README):
        assert (ROOT / link).exists(), link
