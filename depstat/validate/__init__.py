"""``depstat validate``: train small torch models to check depstat's advice against papers A and B.

One module per experiment (``frequency_law``, ``base_sweep``, ``pi``, ``lerope``), each with
``run(Options) -> dict`` that writes ``result.json`` and its figures into ``Options.out``;
``common`` holds the shared data, run store and fits. This package imports torch only when
an experiment runs, so ``depstat`` works without it and says how to install it.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from depstat.errors import DepstatError

EXPERIMENTS = {
    "frequency-law": "frequency_law",
    "base-sweep": "base_sweep",
    "pi": "pi",
    "lerope": "lerope",
}
INSTALL_HINT = "pip install torch==2.13.0 && pip install -e '.[validate]'"


def require_torch() -> None:
    """Fail with the install command (not a traceback) when torch is missing."""
    try:
        import torch  # noqa: F401
    except ImportError:
        raise DepstatError("depstat validate needs torch", hint=INSTALL_HINT) from None


def run(name: str, out: str | Path, quick: bool = False, seeds: int | None = None, device: str = "auto",
        threads: int | None = None, corpus: str | Path | None = None, scale: str = "cpu") -> dict:
    """Run experiment ``name`` into directory ``out`` (resuming finished runs) and return its result."""
    if name not in EXPERIMENTS:
        raise DepstatError(f"unknown experiment {name!r}", hint="choose one of " + ", ".join(EXPERIMENTS))
    require_torch()
    from depstat.validate.common import EXAMPLE_CORPUS, Options

    corpus = Path(corpus) if corpus is not None else EXAMPLE_CORPUS
    if not corpus.is_file():
        raise DepstatError("no such corpus file", path=str(corpus))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    module = importlib.import_module(f"depstat.validate.{EXPERIMENTS[name]}")
    return module.run(Options(out=out, quick=quick, seeds=seeds, device=device, threads=threads, corpus=corpus,
                              scale=scale))


def summary(result: dict) -> str:
    """A few console lines with the headline numbers of a result: the runs, then the experiment's own
    (its module's ``summary_lines``)."""
    kind = result["experiment"]
    runs = result.get("run_counts", {})
    setting = result.get("setting", "quick" if result["quick"] else "full")
    head = (f"{kind} ({setting}): {runs.get('trained', 0)} runs trained, {runs.get('reused', 0)} reused; "
            f"{result['tokens_per_second']:.0f} tokens/s ({result['threads']} threads)")
    module = importlib.import_module(f"depstat.validate.{EXPERIMENTS[kind]}")
    return "\n".join([head, *module.summary_lines(result)])
