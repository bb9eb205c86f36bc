"""Experiment 4, lerope: learnable RoPE frequencies (paper B) against RoPE and p-RoPE.

Three variants trained at equal compute on the bundled Python docs (byte level), several
seeds each: RoPE (b = 10,000), p-RoPE (p = 0.75, the slowest quarter of the bands does not
rotate) and LeRoPE (b = 10,000, one learnable log-scale alpha per band, initialised to 0).
Reported: the validation-loss difference LeRoPE - RoPE (paired by seed; negative means
LeRoPE is better), the learned frequencies, the dominant band (largest frequency energy)
and its wavelength as a multiple of L_train (paper B: about 2.2; also the dominant band among
those whose wavelength reaches L_train), and how that compares
with depstat's theta* = c / W for this corpus, model and training length.
"""

from __future__ import annotations

import math

import numpy as np

from depstat.model import ModelConfig
from depstat.train import TrainConfig, set_threads
from depstat.validate.common import (
    HEAD_DIM, LENGTH, MODEL, Options, RunStore, advice, build_and_train, mean_spread, read_texts, savefig,
    split_docs, text_bytes, validation_energy, write_json,
)

SETTINGS = {
    "quick": {"max_docs": 20, "steps": 40, "batch_size": 8},
    "full": {"max_docs": None, "steps": 600, "batch_size": 8},
}
BASE = 10_000.0
VARIANTS = {
    "rope": {"rope_fraction": 1.0, "learnable_freqs": False},
    "p-rope": {"rope_fraction": 0.75, "learnable_freqs": False},
    "lerope": {"rope_fraction": 1.0, "learnable_freqs": True},
}
PAPER_B_RATIO = 2.2


def one_run(variant: str, seed: int, s: dict, train_tokens: np.ndarray, val_tokens: np.ndarray, opts: Options) -> dict:
    """Train one variant with one seed; validation loss, frequencies in use and frequency energy."""
    cfg = TrainConfig(steps=s["steps"], batch_size=s["batch_size"], warmup=max(1, s["steps"] // 10), seed=seed)
    config = ModelConfig(vocab_size=256, block_size=LENGTH, rope_base=BASE, **MODEL, **VARIANTS[variant])
    model, res = build_and_train(config, cfg, train_tokens, val_tokens, opts, f"{variant} seed {seed}")
    energy = validation_energy(model, val_tokens)
    return {**res.to_dict(), "energy": energy["energy"], "frequencies": energy["frequencies"],
            "dominant_band": energy["dominant_band"], "dominant_wavelength": energy["dominant_wavelength"],
            "effective_frequency": energy["effective_frequency"]}


def slow_band(energy: list[float], frequencies: list[float]) -> tuple[int, float]:
    """The band with the most energy among those whose wavelength reaches L_train, and that wavelength / L_train.

    The overall dominant band of a byte-level model is the fastest one (local byte
    structure); paper B's dominant *positional* band is a slow one, so it is looked for here.
    """
    wavelength = 2 * np.pi / np.asarray(frequencies)
    slow = np.flatnonzero(wavelength >= LENGTH)
    if slow.size == 0:
        return -1, float("nan")
    m = int(slow[np.argmax(np.asarray(energy)[slow])])
    return m, float(wavelength[m] / LENGTH)


def run(opts: Options) -> dict:
    """Train the three variants over seeds; write result.json and figures."""
    s = SETTINGS["quick" if opts.quick else "full"]
    threads = set_threads(opts.threads)
    train_docs, val_docs = split_docs(read_texts(opts.corpus, s["max_docs"]))
    train_tokens, val_tokens = text_bytes(train_docs), text_bytes(val_docs)
    adv = advice(opts.corpus, ["bytes"], HEAD_DIM, LENGTH, max_docs=len(train_docs))
    store = RunStore(opts.out)
    runs: dict[str, list[dict]] = {v: [] for v in VARIANTS}
    for variant in VARIANTS:
        for seed in range(opts.n_seeds()):
            spec = {"experiment": "lerope", "variant": variant, "seed": seed, "length": LENGTH, "base": BASE,
                    "model": MODEL, "corpus": opts.corpus.name, **s}
            runs[variant].append(store.get(f"{variant}-seed{seed}", spec,
                                           lambda: one_run(variant, seed, s, train_tokens, val_tokens, opts)))
    loss = {v: mean_spread([r["val_loss"] for r in rs]) for v, rs in runs.items()}
    delta = [le["val_loss"] - ro["val_loss"] for le, ro in zip(runs["lerope"], runs["rope"])]
    delta_p = [le["val_loss"] - pr["val_loss"] for le, pr in zip(runs["lerope"], runs["p-rope"])]
    learned = np.mean([r["frequencies"] for r in runs["lerope"]], axis=0)
    initial = np.asarray(runs["rope"][0]["frequencies"])
    ratios = [r["dominant_wavelength"] / LENGTH for r in runs["lerope"]]
    slow = [slow_band(r["energy"], r["frequencies"]) for r in runs["lerope"]]
    theta_star_wavelength = 2 * math.pi / adv["theta_star"]
    result = {
        "experiment": "lerope", "quick": opts.quick,
        "settings": {**s, "length": LENGTH, "base": BASE, "model": MODEL, "seeds": opts.n_seeds(),
                     "corpus": opts.corpus.name},
        "val_loss": loss,
        "loss_delta_vs_rope": float(np.mean(delta)), "loss_delta_vs_rope_spread": mean_spread(delta),
        "loss_delta_vs_p_rope": float(np.mean(delta_p)), "loss_delta_vs_p_rope_spread": mean_spread(delta_p),
        "seed_std_rope": loss["rope"]["std"],
        "learned_frequencies": learned.tolist(), "initial_frequencies": initial.tolist(),
        "learned_over_initial": (learned / initial).tolist(),
        "lerope_energy": np.mean([r["energy"] for r in runs["lerope"]], axis=0).tolist(),
        "dominant_band": [r["dominant_band"] for r in runs["lerope"]],
        "dominant_wavelength_over_Ltrain": float(np.mean(ratios)),
        "dominant_wavelength_over_Ltrain_per_seed": ratios,
        "dominant_slow_band": [m for m, _ in slow],
        "dominant_slow_wavelength_over_Ltrain": float(np.mean([x for _, x in slow])),
        "dominant_slow_wavelength_over_Ltrain_per_seed": [x for _, x in slow],
        "paper_b_ratio": PAPER_B_RATIO,
        "depstat": {"W": adv["W"], "theta_star": adv["theta_star"], "theta_star_wavelength": theta_star_wavelength,
                    "theta_star_wavelength_over_Ltrain": theta_star_wavelength / LENGTH,
                    "recommended_rope_theta": adv["rope_theta"]},
        "dominant_wavelength_over_theta_star_wavelength": float(np.mean(ratios)) * LENGTH / theta_star_wavelength,
        "runs": {v: [{"seed": i, "val_loss": r["val_loss"], "dominant_band": r["dominant_band"],
                      "dominant_wavelength": r["dominant_wavelength"], "tokens_per_second": r["tokens_per_second"]}
                     for i, r in enumerate(rs)] for v, rs in runs.items()},
        "run_counts": store.counts(), "threads": threads,
        "tokens_per_second": float(np.median([r["tokens_per_second"] for rs in runs.values() for r in rs])),
        "figures": ["lerope.png"],
    }
    _figure(result, runs, opts)
    write_json(opts.out / "result.json", result)
    return result


def _figure(result: dict, runs: dict, opts: Options) -> None:
    """Learned against initial wavelengths per band, and the LeRoPE energy per band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    bands = np.arange(len(result["initial_frequencies"]))
    left.plot(bands, 2 * np.pi / np.asarray(result["initial_frequencies"]) / LENGTH, "o-", ms=3, label="RoPE b = 10,000")
    for i, r in enumerate(runs["lerope"]):
        left.plot(bands, 2 * np.pi / np.asarray(r["frequencies"]) / LENGTH, ".-", alpha=0.7, label=f"LeRoPE seed {i}")
    left.axhline(PAPER_B_RATIO, color="k", ls=":", label="paper B dominant band (2.2 L)")
    left.axhline(result["depstat"]["theta_star_wavelength_over_Ltrain"], color="C3", ls="--", label="depstat θ* wavelength")
    left.set(yscale="log", xlabel="band m", ylabel="wavelength / L_train", title="learned frequencies")
    left.grid(alpha=0.3)
    left.legend(fontsize=7)
    for v, rs in runs.items():
        right.plot(bands, np.mean([r["energy"] for r in rs], axis=0), "o-", ms=3, label=v)
    right.set(xlabel="band m", ylabel="energy share", title="frequency energy (mean over seeds)")
    right.grid(alpha=0.3)
    right.legend(fontsize=8)
    savefig(fig, opts.out / "lerope.png")
