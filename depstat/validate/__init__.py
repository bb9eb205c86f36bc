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
        threads: int | None = None, corpus: str | Path | None = None) -> dict:
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
    return module.run(Options(out=out, quick=quick, seeds=seeds, device=device, threads=threads, corpus=corpus))


def _ci(value: float, ci: list[float]) -> str:
    return f"{value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"


def summary(result: dict) -> str:
    """A few console lines with the headline numbers of a result."""
    kind = result["experiment"]
    runs = result.get("run_counts", {})
    lines = [f"{kind}{' (quick)' if result['quick'] else ''}: {runs.get('trained', 0)} runs trained, "
             f"{runs.get('reused', 0)} reused; {result['tokens_per_second']:.0f} tokens/s "
             f"({result['threads']} threads)"]
    if kind == "frequency-law":
        lines.append(f"slope {_ci(result['slope'], result['slope_ci'])}, c {_ci(result['c'], result['c_ci'])}")
        lines.append(result["verdict"])
    elif kind == "base-sweep":
        for name, p in sorted(result["per_base"].items(), key=lambda kv: kv[1]["base"]):
            lines.append(f"  {name:<12} b = {p['base']:<10.4g} val loss {p['mean']:.4f} ± {p['std']:.4f} (n={p['n']})")
        paired = result["recommended_minus_best_paired_by_seed"]
        lines.append(f"best: {result['best']}; recommended within noise: {result['recommended_within_noise']} "
                     f"(recommended - best, paired by seed: {paired['mean']:+.4f} ± {paired['std']:.4f})")
    elif kind == "pi":
        for data, row in result["table"].items():
            metric = row["accuracy_metric"]
            lines.append(f"  {data} ({row['verdict']}, depstat says {row['predicted_method']}; accuracy: {metric})")
            for methods in (("train_length", "none", "pi", "yarn"), ("none+ft", "pi+ft", "yarn+ft")):
                lines.append("    " + ", ".join(
                    f"{m} ppl {row[m]['perplexity']['mean']:.2f} acc {row[m][metric]['mean']:.3f}" for m in methods))
            lines.append(f"    better of PI/YaRN by accuracy: zero-shot {row['better_of_pi_yarn_by_accuracy']}, "
                         f"fine-tuned {row['better_of_pi_yarn_by_accuracy_fine_tuned']}; verdict predicted it: "
                         f"{row['verdict_predicted_method']}, {row['verdict_predicted_method_fine_tuned']}")
    elif kind == "lerope":
        spread = result["loss_delta_vs_rope_spread"]
        lines.append(f"LeRoPE - RoPE val loss {result['loss_delta_vs_rope']:+.4f} (std {spread['std']:.4f} over "
                     f"{spread['n']} seeds); dominant wavelength {result['dominant_wavelength_over_Ltrain']:.2f} L_train "
                     f"(paper B 2.2); among slow bands {result['dominant_slow_wavelength_over_Ltrain']:.2f} L_train; "
                     f"depstat θ* wavelength {result['depstat']['theta_star_wavelength_over_Ltrain']:.2f} L_train")
    return "\n".join(lines)
