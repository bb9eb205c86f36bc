"""The notebooks in notebooks/ run top to bottom and use depstat's public API only.

The notebooks are stored as jupytext percent-format ``.py`` files (no ``.ipynb`` in git).
Each slow test converts one with jupytext and executes it with nbclient in a fresh
``python3`` kernel (ipykernel, the interpreter running the tests) with the repository
root as working directory; any failing cell, including the notebook's own assertions,
fails the test. Nothing is written back. The fast test reads the sources and rejects
imports or attributes whose names start with an underscore.
"""

from __future__ import annotations

import ast
import importlib
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.py"))
REQUIRED = ("01_profile.py", "02_selfsim.py", "03_rope.py")
CELL_TIMEOUT_S = 600  # per cell; each notebook takes well under a minute on two cores


def _require(module: str):
    """Import a notebook-test dependency, failing (not skipping) with the fix when it is missing."""
    try:
        return importlib.import_module(module)
    except ImportError:
        pytest.fail(f"the notebook tests need {module}: pip install -e '.[test]' "
                    "(the test extra includes jupytext, nbclient and ipykernel)")


def _private_names(source: str) -> list[str]:
    """Imported modules/names and attributes that start with '_' (dunders such as __version__ allowed)."""

    def private(name: str) -> bool:
        return any(part.startswith("_") and not (part.startswith("__") and part.endswith("__"))
                   for part in name.split("."))

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if private(a.name)]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if private(module):
                found.append(module)
            found += [f"{module}.{a.name}" for a in node.names if private(a.name)]
        elif isinstance(node, ast.Attribute) and private(node.attr):
            found.append(f"line {node.lineno}: .{node.attr}")
    return found


def test_the_notebooks_exist_and_outputs_stay_out_of_git() -> None:
    assert set(REQUIRED) <= {p.name for p in NOTEBOOKS}
    assert "*.ipynb" in (NOTEBOOK_DIR / ".gitignore").read_text(encoding="utf-8").split()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_uses_public_api_only(path: Path) -> None:
    assert _private_names(path.read_text(encoding="utf-8")) == []


def test_private_name_check_catches_private_imports() -> None:
    source = ("from depstat.report.document import _png\nimport depstat._x\nfrom depstat import profile\n"
              "p._cache\ndepstat.__version__\n")
    assert _private_names(source) == ["depstat.report.document._png", "depstat._x", "line 4: ._cache"]


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_top_to_bottom(path: Path) -> None:
    jupytext = _require("jupytext")
    nbclient = _require("nbclient")
    _require("ipykernel")
    notebook = jupytext.read(path)
    assert any(cell.cell_type == "markdown" for cell in notebook.cells)
    client = nbclient.NotebookClient(
        notebook, timeout=CELL_TIMEOUT_S, kernel_name="python3",
        resources={"metadata": {"path": str(ROOT)}},
    )
    start = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - start
    errors = [o for cell in notebook.cells if cell.cell_type == "code"
              for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    assert errors == []
    print(f"{path.name}: {elapsed:.1f} s")
