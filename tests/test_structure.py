"""The package's shape: imports run one way through the pipeline's layers, no circle, and no
room too large to read (files, functions, module docstrings)."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "depstat"
# Lowest first: a module may import its own layer and those below, never one above.
LAYERS = (
    ("errors", "files", "progress", "version", "cluster"),
    ("io",),
    ("tokenize",),
    ("count", "synth"),
    ("estimate",),
    ("analysis",),
    ("engine", "pipeline", "groups"),
    ("report",),
    ("validate",),
    ("cli",),
)
LAYER = {part: i for i, parts in enumerate(LAYERS) for part in parts}
MAX_FILE_LINES, MAX_FUNCTION_LINES, MAX_DOCSTRING_LINES = 800, 80, 25


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imported(name: str) -> set[str]:
    """The depstat modules that module ``name`` imports, at any depth of its code."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            out |= {f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names}
    return {m for m in out if m in MODULES and m != name}


GRAPH = {name: imported(name) for name in MODULES}


def layer(name: str) -> int:
    return LAYER[name.split(".")[1]]


def test_every_module_has_a_layer() -> None:
    assert {name.split(".")[1] for name in MODULES if name != "depstat"} <= set(LAYER)


@pytest.mark.parametrize("name", [n for n in MODULES if n != "depstat"])
def test_imports_run_down_the_layers(name: str) -> None:
    up = sorted(m for m in GRAPH[name] if m != "depstat" and layer(m) > layer(name))
    assert not up, f"{name} (layer {layer(name)}) imports a higher layer: {up}"


def test_no_import_circle() -> None:
    state: dict[str, int] = {}  # 1 on the path, 2 done

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for m in sorted(GRAPH[name] - {"depstat"}):
            assert state.get(m) != 1, "import circle: " + " -> ".join([*path[path.index(m):], m])
            if m not in state:
                visit(m, [*path, m])
        state[name] = 2

    for name in MODULES:
        if name not in state and name != "depstat":
            visit(name, [name])


@pytest.mark.parametrize("name", list(MODULES))
def test_rooms_are_readable(name: str) -> None:
    source = MODULES[name].read_text(encoding="utf-8")
    tree = ast.parse(source)
    assert source.count("\n") <= MAX_FILE_LINES, f"{name}: {source.count(chr(10))} lines"
    docstring = ast.get_docstring(tree) or ""
    assert len(docstring.splitlines()) <= MAX_DOCSTRING_LINES, f"{name}: module docstring of {len(docstring.splitlines())} lines"
    long = [(node.name, node.end_lineno - node.lineno + 1) for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long, f"{name}: functions over {MAX_FUNCTION_LINES} lines: {long}"


def test_no_workflow_labels() -> None:
    """The repository speaks of the project, not of the order of past work sessions."""
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    label = re.compile(r"\b(stop|session) \d+\b", re.IGNORECASE)
    found = []
    for rel in files:
        path = ROOT / rel
        if path.suffix not in {".py", ".md", ".txt", ".sh", ".toml"} or not path.is_file():
            continue
        found += [f"{rel}: {m.group(0)}" for m in label.finditer(path.read_text(encoding="utf-8", errors="replace"))]
    assert not found, found[:10]
