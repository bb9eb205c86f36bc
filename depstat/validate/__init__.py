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


def _ci(value: float, ci: list[float]) -> str:
    return f"{value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"


def summary(result: dict) -> str:
    """A few console lines with the headline numbers of a result."""
    kind = result["experiment"]
    runs = result.get("run_counts", {})
    setting = result.get("setting", "quick" if result["quick"] else "full")
    lines = [f"{kind} ({setting}): {runs.get('trained', 0)} runs trained, "
             f"{runs.get('reused', 0)} reused; {result['tokens_per_second']:.0f} tokens/s "
             f"({result['threads']} threads)"]
    if kind == "frequency-law":
        lines.append(f"slope {_ci(result['slope'], result['slope_ci'])}, c {_ci(result['c'], result['c_ci'])}")
        lines.append(result["verdict"])
    elif kind == "base-sweep":
        for name, p in sorted(result["per_base"].items(), key=lambda kv: kv[1]["base"]):
            d = result["paired_differences"][name]
            lines.append(f"  {name:<15} b = {p['base']:<10.4g} val loss {p['mean']:.4f} ± {p['std']:.4f} (n={p['n']}); "
                         f"minus recommended {d['mean']:+.4f} [{d['ci'][0]:+.4f}, {d['ci'][1]:+.4f}]")
        lines.append(f"best: {result['best']}; recommended within noise: {result['recommended_within_noise']}; "
                     f"half of b_A worse: {result['too_low_worse']}; a tenth of the recommendation worse: "
                     f"{result['tenth_worse']}")
    elif kind == "pi":
        for e in result["scorecard"]:
            ci, gap = e["pi_minus_yarn_ci"], e["depstat_minus_best"]
            lines.append(f"  {e['data']:<16} depstat: {e['predicted_method']:<4} ({e['dilation']}; {e['verdict']}); "
                         f"best: {e['best_method']:<12} depstat - best {gap[0]:+.3f} [{gap[1]:+.3f}, {gap[2]:+.3f}]; "
                         f"PI - YaRN {e['metric']} {e['pi_minus_yarn_accuracy']:+.3f} [{ci[0]:+.3f}, {ci[1]:+.3f}] "
                         f"-> {'right' if e['correct'] else 'wrong'}")
        lines.append(f"depstat's config: {result['correct']}")
    elif kind == "lerope":
        d, y = result["loss_delta_vs_rope_paired"], result["yarn_at_4L"]["lerope_minus_rope"]
        frac = result["frozen_gain_fraction"]
        lines.append(f"LeRoPE - RoPE val loss {d['mean']:+.4f} [{d['ci'][0]:+.4f}, {d['ci'][1]:+.4f}] (paper B -0.0066); "
                     f"frozen gain fraction {'n/a' if frac is None else f'{frac:.2f}'} (paper B 0.636)")
        lines.append(f"dominant wavelength {result['dominant_wavelength_over_Ltrain']:.2f} L_train (paper B 2.2); "
                     f"depstat θ* wavelength {result['depstat']['theta_star_wavelength_over_Ltrain']:.2f} L_train; "
                     f"with YaRN at {4}L: LeRoPE - RoPE {y['mean']:+.4f} [{y['ci'][0]:+.4f}, {y['ci'][1]:+.4f}]")
        f = result["from_data"]
        lines.append(f"before training, the gradient picks band {f['predicted_dominant_band']} (trained: "
                     f"{f['trained_dominant_bands']}), drawn to wavelength {f['drawn_to_wavelength_over_Ltrain']:.2f} "
                     f"L_train ({f['drawn_to_over_theta_star']:.2f} x depstat's θ*)")
    return "\n".join(lines)
