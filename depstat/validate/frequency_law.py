"""Experiment 1, frequency-law: does the learned frequency follow theta_eff = c / W (paper A)?

Block sequences (``depstat.synth.block_sequences``) with latent block length B have a
known dependency scale; W is depstat's kernel width (q90 of the fitted exponential) of their
exact MI profile (W ~ B). For each B and seed a model is trained on next-token
prediction, its frequency energy measured (``depstat.model.frequency_energy``) and the
effective frequency (energy-weighted geometric mean over bands) recorded. Then
log theta_eff is fitted against log W: paper A reports slope -1 and c ~ 3.02 (theory pi).
"""

from __future__ import annotations

import math

import numpy as np

from depstat.dependency import exact_curve, fitted, kernel_width
from depstat.model import ModelConfig
from depstat.recommend import PAPER_C
from depstat.synth import block_exact_mi, block_sequences
from depstat.train import TrainConfig, set_threads
from depstat.validate.common import (
    LENGTH, MODEL, Options, RunStore, build_and_train, fit_frequency_law, savefig, validation_energy, write_json,
)

PAPER_A_C = 3.02
SETTINGS = {  # quick: CI; full: the recorded run
    "quick": {"blocks": [4, 16, 64], "steps": 30, "batch_size": 8, "train_tokens": 100_000},
    "full": {"blocks": [4, 8, 16, 32, 64], "steps": 1000, "batch_size": 8, "train_tokens": 2_000_000},
}
BASE = 10_000.0


def width_for_block(block: int, length: int = LENGTH) -> dict:
    """depstat's q90 kernel width of the exact block-sequence profile over offsets 1 .. ``length``-1."""
    offsets = np.arange(1, length)
    return kernel_width(fitted(exact_curve(offsets, block_exact_mi(block, offsets)))).to_dict()


def one_run(block: int, seed: int, s: dict, opts: Options) -> dict:
    """Train on blocks of length B with this seed; the frequency energy and theta_eff afterwards."""
    data = block_sequences(1, s["train_tokens"] + 100_000, block, seed=1000 + seed).tokens
    train_tokens, val_tokens = data[:s["train_tokens"]], data[s["train_tokens"]:]
    cfg = TrainConfig(steps=s["steps"], batch_size=s["batch_size"], warmup=max(1, s["steps"] // 10), seed=seed)
    model, res = build_and_train(ModelConfig(vocab_size=256, block_size=LENGTH, rope_base=BASE, **MODEL), cfg,
                                 train_tokens, val_tokens, opts, desc=f"B={block} seed {seed}")
    energy = validation_energy(model, val_tokens)  # LENGTH: four periods of the largest block pair
    return {**res.to_dict(), "energy": energy["energy"], "frequencies": energy["frequencies"],
            "effective_frequency": energy["effective_frequency"], "dominant_band": energy["dominant_band"]}


def run(opts: Options) -> dict:
    """Sweep B, train, measure theta_eff, fit the law; write result.json and figures into opts.out."""
    s = SETTINGS["quick" if opts.quick else "full"]
    threads = set_threads(opts.threads)
    store = RunStore(opts.out)
    rows = []
    for block in s["blocks"]:
        width = width_for_block(block)
        for seed in range(opts.n_seeds()):
            spec = {"experiment": "frequency-law", "block": block, "seed": seed, "length": LENGTH, "base": BASE,
                    "model": MODEL, **s, "blocks": None}
            r = store.get(f"B{block}-seed{seed}", spec, lambda: one_run(block, seed, s, opts))
            rows.append({"block": block, "seed": seed, "W": width["W"], "W_interval": [width["ci_low"], width["ci_high"]],
                         "theta_eff": r["effective_frequency"], "theta_eff_times_W": r["effective_frequency"] * width["W"],
                         "val_loss": r["val_loss"], "tokens_per_second": r["tokens_per_second"],
                         "energy": r["energy"], "frequencies": r["frequencies"]})
    fit = fit_frequency_law(np.array([r["W"] for r in rows]), np.array([r["theta_eff"] for r in rows]))
    init_theta = math.exp(float(np.mean(np.log(rows[0]["frequencies"]))))  # uniform energy at initialisation
    reproduces = bool(fit["slope_ci"][0] <= -1 <= fit["slope_ci"][1] and fit["c_ci"][0] <= PAPER_A_C <= fit["c_ci"][1])
    result = {
        "experiment": "frequency-law", "quick": opts.quick, "settings": {**s, "length": LENGTH, "base": BASE,
                                                                            "model": MODEL, "seeds": opts.n_seeds()},
        **fit, "paper": {"c": PAPER_A_C, "c_theory": PAPER_C, "slope": -1.0},
        "reproduces": reproduces,
        "verdict": _verdict(fit, reproduces),
        "theta_eff_at_init": init_theta,
        "runs": rows, "run_counts": store.counts(), "threads": threads,
        "tokens_per_second": float(np.median([r["tokens_per_second"] for r in rows])),
        "figures": ["frequency_law.png", "energy.png"],
    }
    _figures(rows, fit, init_theta, opts)
    write_json(opts.out / "result.json", result)
    return result


def _verdict(fit: dict, reproduces: bool) -> str:
    """The reproduction verdict in one sentence."""
    head = "reproduces" if reproduces else "does not reproduce"
    return (f"{head} paper A: slope {fit['slope']:.2f} [{fit['slope_ci'][0]:.2f}, {fit['slope_ci'][1]:.2f}] "
            f"(paper -1), c {fit['c']:.2f} [{fit['c_ci'][0]:.2f}, {fit['c_ci'][1]:.2f}] (paper 3.02, theory pi)")


def _figures(rows: list[dict], fit: dict, init_theta: float, opts: Options) -> None:
    """theta_eff against W with the fit and paper A's law; energy per band for each B."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    W = np.array([r["W"] for r in rows])
    th = np.array([r["theta_eff"] for r in rows])
    grid = np.geomspace(W.min() / 1.5, W.max() * 1.5, 50)
    fig, ax = plt.subplots(figsize=(6, 4.5))
    ax.plot(W, th, "o", label="measured (one point per seed)")
    ax.plot(grid, fit["c_free"] * grid ** fit["slope"], "-", label=f"fit: slope {fit['slope']:.2f}")
    ax.plot(grid, PAPER_A_C / grid, "--", label="paper A: 3.02 / W")
    ax.axhline(init_theta, color="k", ls=":", label="uniform energy (initialisation)")
    ax.set(xscale="log", yscale="log", xlabel="W (tokens, depstat q90)", ylabel="effective frequency θ_eff (rad/token)",
           title="frequency law on block sequences")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    savefig(fig, opts.out / "frequency_law.png")

    fig, ax = plt.subplots(figsize=(6, 4.5))
    for block in sorted({r["block"] for r in rows}):
        e = np.mean([r["energy"] for r in rows if r["block"] == block], axis=0)
        freq = rows[0]["frequencies"]
        ax.plot(freq, e, "o-", ms=3, label=f"B = {block}")
    ax.set(xscale="log", xlabel="band frequency θ_m (rad/token)", ylabel="energy share", title="frequency energy after training")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    savefig(fig, opts.out / "energy.png")
