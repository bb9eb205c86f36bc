"""The README's Python example runs as printed, and the README stays a front page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import depstat

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_the_python_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (block,) = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    monkeypatch.chdir(tmp_path)  # away from the checkout: "example" is the bundled corpus anywhere
    scope: dict = {}
    exec(compile(block, "README.md", "exec"), scope)
    p, a = scope["p"], scope["a"]
    saved = depstat.Profile.load(tmp_path / "out" / "example")  # what the example saved is what it computed
    assert saved.table.sort("granularity", "offset")["mi_bits"].to_list() == \
        p.table.sort("granularity", "offset")["mi_bits"].to_list()
    assert set(p.to_polars()["granularity"]) == {"bytes", "bpe-8k"} and p.to_polars().height == 2 * len(depstat.log_offsets(2048))
    assert 4 < p.summary()["granularities"]["bpe-8k"]["bytes_per_token"] < 5  # English prose in BPE-8k
    rec = a.recommendation  # the base is at least both bounds it is built from, and is the one in the config
    assert rec.rope_theta >= max(rec.base_from_data, rec.base_men)
    assert a.recommendation.rope_parameters["rope_parameters"]["rope_theta"] == rec.rope_theta


def test_the_readme_is_a_front_page() -> None:
    assert len(README.splitlines()) <= 200 and len(README.split()) <= 1500
    for link in re.findall(r"\]\(([^)#]+)\)", README):
        assert (ROOT / link).exists(), link


def test_module_docstrings_state_in_at_most_25_lines() -> None:
    """Each module opens with what it does and why, not a record of how it got there."""
    import ast

    for path in sorted((ROOT / "depstat").rglob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        assert 0 < len(doc.splitlines()) <= 25 or path.name == "__init__.py", (path, len(doc.splitlines()))
