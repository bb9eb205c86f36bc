"""``depstat validate``: train small torch models to check depstat's advice against papers A and B.

One module per experiment (``frequency_law``, ``base_sweep``, ``pi``, ``lerope``), each with
``run(Options) -> dict`` that writes ``result.json`` and its figures into ``Options.out``
(``validate.run`` and ``validate.load`` return them as a typed ``Result``);
``common`` holds the shared data, run store and fits. This package imports torch only when
an experiment runs, so ``depstat`` works without it and says how to install it.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Result:
    """A finished experiment: its runs, its headline and the record it wrote to ``result.json``
    (that file's keys, experiment by experiment: docs/validation.md)."""

    experiment: str
    setting: str  # "quick", "full" or "paper"
    trained: int  # runs trained by this call
    reused: int  # finished runs read back instead
    threads: int
    tokens_per_second: float  # median training throughput of its runs
    figures: tuple[str, ...]  # written beside result.json
    headline: tuple[str, ...]  # the experiment's own summary lines
    record: dict

    def summary(self) -> str:
        """A few console lines: the runs, then the experiment's headline."""
        head = (f"{self.experiment} ({self.setting}): {self.trained} runs trained, {self.reused} reused; "
                f"{self.tokens_per_second:.0f} tokens/s ({self.threads} threads)")
        return "\n".join([head, *self.headline])


def _result(record: dict) -> Result:
    """The typed result of an experiment's record (its module reads its own keys for the headline)."""
    module = importlib.import_module(f"depstat.validate.{EXPERIMENTS[record['experiment']]}")
    counts = record["run_counts"]
    return Result(record["experiment"], record["setting"], counts["trained"], counts["reused"], record["threads"],
                  record["tokens_per_second"], tuple(record["figures"]), tuple(module.summary_lines(record)), record)


def run(name: str, out: str | Path, quick: bool = False, seeds: int | None = None, device: str = "auto",
        threads: int | None = None, corpus: str | Path | None = None, scale: str = "cpu",
        window_block: int | None = None) -> Result:
    """Run experiment ``name`` into directory ``out`` (resuming finished runs) and return its result;
    ``window_block``: pi's window task block B (default 16)."""
    if name not in EXPERIMENTS:
        raise DepstatError(f"unknown experiment {name!r}", hint="choose one of " + ", ".join(EXPERIMENTS))
    if window_block is not None and name != "pi":
        raise DepstatError(f"--window-block is an option of the pi experiment, not of {name}")
    require_torch()
    from depstat.validate.common import EXAMPLE_CORPUS, Options

    corpus = Path(corpus) if corpus is not None else EXAMPLE_CORPUS
    if not corpus.is_file():
        raise DepstatError("no such corpus file", path=str(corpus))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    module = importlib.import_module(f"depstat.validate.{EXPERIMENTS[name]}")
    return _result(module.run(Options(out=out, quick=quick, seeds=seeds, device=device, threads=threads,
                                      corpus=corpus, scale=scale, window_block=window_block)))


def load(out: str | Path) -> Result:
    """The result of a finished experiment from its directory (``result.json``)."""
    require_torch()  # the experiment's module, which states the headline, imports it
    path = Path(out) / "result.json"
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise DepstatError(f"cannot read a finished experiment's result ({err})", path=str(path),
                           hint="give the --out directory of a finished depstat validate run") from None
    if record.get("experiment") not in EXPERIMENTS or "run_counts" not in record:
        raise DepstatError("is not the result of a finished validation experiment", path=str(path),
                           hint="rerun depstat validate with this --out to finish it")
    return _result(record)
