"""Experiment 2, base-sweep: is depstat's recommended RoPE base as good as the best of the usual ones?

The training corpus (the bundled Python docs, byte level) is profiled by depstat at the
model's granularity (bytes) and analysed for the model's head dimension and training
length; the recommended ``rope_theta`` is then trained at the same compute (steps, batch,
length, seeds) as the alternatives: b = 10,000, b = L_train, one base far lower than the
recommendation and one far higher than 10,000. The recommended base is *within noise* of
the best when its mean validation loss exceeds the best mean by at most twice the
standard error of the difference of the two means (seed-to-seed spread). Since a seed fixes
the initialisation and the data order for every base, the per-seed differences
(recommended - best) are reported too: a sharper test than the unpaired rule.
"""

from __future__ import annotations

import math

import numpy as np

from depstat.model import ModelConfig
from depstat.train import TrainConfig, set_threads
from depstat.validate.common import (
    HEAD_DIM, LENGTH, MODEL, Options, RunStore, advice, build_and_train, mean_spread, read_texts, savefig,
    split_docs, text_bytes, write_json,
)

SETTINGS = {
    "quick": {"max_docs": 20, "steps": 20, "batch_size": 8},
    "full": {"max_docs": None, "steps": 500, "batch_size": 8},
}
FAR_LOWER = 1 / 32  # times the recommended base
FAR_HIGHER = 1e6


def bases_to_try(recommended: float, length: int) -> dict[str, float]:
    """The recommended base and the alternatives, by name."""
    return {"recommended": recommended, "L_train": float(length), "10000": 10_000.0,
            "far_lower": max(2.0, recommended * FAR_LOWER), "far_higher": FAR_HIGHER}


def within_noise(rec: dict, best: dict) -> tuple[bool, float]:
    """Whether rec's mean loss is at most 2 standard errors of the difference above best's, and that margin."""
    se = math.sqrt(rec["std"] ** 2 / rec["n"] + best["std"] ** 2 / best["n"])
    return bool(rec["mean"] - best["mean"] <= 2 * se), 2 * se


def run(opts: Options) -> dict:
    """Profile, recommend, train every base at equal compute; write result.json and the figure."""
    s = SETTINGS["quick" if opts.quick else "full"]
    threads = set_threads(opts.threads)
    train_docs, val_docs = split_docs(read_texts(opts.corpus, s["max_docs"]))
    train_tokens, val_tokens = text_bytes(train_docs), text_bytes(val_docs)
    adv = advice(opts.corpus, ["bytes"], HEAD_DIM, LENGTH, max_docs=len(train_docs))
    bases = bases_to_try(adv["rope_theta"], LENGTH)
    store = RunStore(opts.out)
    per_base, runs = {}, []
    for name, base in bases.items():
        losses = []
        for seed in range(opts.n_seeds()):
            spec = {"experiment": "base-sweep", "base": base, "seed": seed, "length": LENGTH, "model": MODEL,
                    "corpus": opts.corpus.name, **s}
            cfg = TrainConfig(steps=s["steps"], batch_size=s["batch_size"], warmup=max(1, s["steps"] // 10), seed=seed)

            def job(base: float = base, seed: int = seed, cfg: TrainConfig = cfg) -> dict:
                config = ModelConfig(vocab_size=256, block_size=LENGTH, rope_base=base, **MODEL)
                return build_and_train(config, cfg, train_tokens, val_tokens, opts, f"b={base:.4g} seed {seed}")[1].to_dict()

            r = store.get(f"{name}-seed{seed}", spec, job)
            losses.append(r["val_loss"])
            runs.append({"name": name, "base": base, "seed": seed, "val_loss": r["val_loss"],
                         "tokens_per_second": r["tokens_per_second"]})
        per_base[name] = {"base": base, **mean_spread(losses)}
    best = min(per_base, key=lambda k: per_base[k]["mean"])
    ok, margin = within_noise(per_base["recommended"], per_base[best])
    by_seed = {(r["name"], r["seed"]): r["val_loss"] for r in runs}
    paired = [by_seed["recommended", i] - by_seed[best, i] for i in range(opts.n_seeds())]
    result = {
        "experiment": "base-sweep", "quick": opts.quick,
        "settings": {**s, "length": LENGTH, "model": MODEL, "seeds": opts.n_seeds(), "corpus": str(opts.corpus.name),
                     "train_bytes": int(train_tokens.size), "val_bytes": int(val_tokens.size)},
        "advice": adv, "per_base": per_base, "best": best, "recommended_within_noise": ok,
        "noise_margin": margin, "recommended_minus_best": per_base["recommended"]["mean"] - per_base[best]["mean"],
        "recommended_minus_best_paired_by_seed": mean_spread(paired),
        "runs": runs, "run_counts": store.counts(), "threads": threads,
        "tokens_per_second": float(np.median([r["tokens_per_second"] for r in runs])),
        "figures": ["base_sweep.png"],
    }
    _figure(per_base, runs, opts)
    write_json(opts.out / "result.json", result)
    return result


def _figure(per_base: dict, runs: list[dict], opts: Options) -> None:
    """Validation loss against base: one dot per seed, the mean with its spread."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for i, (name, p) in enumerate(sorted(per_base.items(), key=lambda kv: kv[1]["base"])):
        ax.errorbar(p["base"], p["mean"], yerr=p["std"], fmt="o", color=f"C{i}", capsize=4, label=f"{name} (b = {p['base']:.3g})")
        ax.plot([r["base"] for r in runs if r["name"] == name], [r["val_loss"] for r in runs if r["name"] == name],
                ".", color=f"C{i}", alpha=0.5)
    ax.set(xscale="log", xlabel="RoPE base b", ylabel="validation loss (nats/byte)", title="base sweep at equal compute")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    savefig(fig, opts.out / "base_sweep.png")
