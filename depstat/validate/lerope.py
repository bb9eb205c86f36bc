"""Experiment 4, lerope: learnable RoPE frequencies (paper B) on BPE tokens.

The bundled Python docs, tokenized with a byte-level BPE of 1,024 merges trained on the
training documents (``depstat.tokenize.granularity.train_bpe``; the model's own tokenizer, which
depstat also profiles). Three variants at equal compute, several seeds each:

- ``rope``: RoPE, base 10,000;
- ``lerope``: the same grid times exp(alpha_m), one learnable log-scale per band, alpha = 0 at start;
- ``frozen``: RoPE with its frequencies frozen at the learned values of another seed's LeRoPE
  run (seed i takes seed i + 1's, cyclically): paper B's ablation, which kept 63.6 % of the gain.

Definitions, fixed before the run:

- ``loss_delta_vs_rope``: LeRoPE - RoPE validation loss, paired by seed (negative: LeRoPE better);
- ``dominant_wavelength_over_Ltrain``: the band with the largest frequency energy
  (``depstat.validate.model.frequency_energy``, on validation windows) of each trained LeRoPE model, its
  wavelength 2 pi / theta over L_train, averaged over seeds (paper B: about 2.2);
- ``frozen_gain_fraction``: (RoPE - frozen) / (RoPE - LeRoPE), on the mean losses;
- ``yarn_at_4L``: LeRoPE + YaRN against RoPE + YaRN, zero-shot at 4 L_train.

From the data before training (item 5 of paper B's analysis): ``from_data`` holds
``depstat.validate.model.frequency_pull`` of a fresh LeRoPE model on training windows: the first-order
loss decrease each band could reach by moving its frequency, the band with the largest one
(``predicted_dominant_band``) against the band the trained models make dominant, and the
frequency that band is drawn to against depstat's theta* = c / W from the profile alone.
"""

from __future__ import annotations

import math

import numpy as np

from depstat.validate.common import (
    HEAD_DIM,
    LENGTH,
    MODEL,
    Options,
    RunStore,
    advice,
    bpe_tokens,
    build_and_train,
    mean_spread,
    read_texts,
    savefig,
    split_docs,
    t_interval,
    validation_energy,
    write_json,
)
from depstat.validate.model import ModelConfig, Scaling
from depstat.validate.train import TrainConfig, evaluate, set_threads

SETTINGS = {
    "quick": {"max_docs": 20, "steps": 40, "batch_size": 8, "seeds": 2, "eval_windows": 8},
    "full": {"max_docs": None, "steps": 600, "batch_size": 8, "seeds": 3, "eval_windows": 32},
    "paper": {"max_docs": None, "steps": 3000, "batch_size": 32, "seeds": 5, "eval_windows": 64},
}
BASE = 10_000.0
VOCAB = 1024
FACTOR = 4
PAPER_B = {"loss_delta_vs_rope": -0.0066, "dominant_wavelength_over_Ltrain": 2.2, "frozen_gain_fraction": 0.636}
PREDICTION = {
    "loss_delta_vs_rope": "negative (LeRoPE better), of the order of paper B's -0.0066",
    "dominant_wavelength_over_Ltrain": "near paper B's 2.2 (BPE tokens, not bytes)",
    "frozen_gain_fraction": "between 0 and 1, near paper B's 0.636",
    "yarn_at_4L": "LeRoPE + YaRN at least as good as RoPE + YaRN",
}


def one_run(variant: str, seed: int, s: dict, data: dict, opts: Options, frozen: list[float] | None = None) -> dict:
    """Train one variant with one seed; validation loss at L and with YaRN at 4L, frequencies and energy."""
    import torch

    cfg = TrainConfig(steps=s["steps"], batch_size=s["batch_size"], warmup=max(1, s["steps"] // 10), seed=seed)
    config = ModelConfig(vocab_size=data["vocab"], block_size=LENGTH, rope_base=BASE, learnable_freqs=variant == "lerope",
                         **MODEL)
    def freeze(model) -> None:
        model.rotary.theta.copy_(torch.tensor(frozen, dtype=torch.float32))

    model, res = build_and_train(config, cfg, data["train"], data["val"], opts, f"{variant} seed {seed}",
                                 freeze if frozen is not None else None)
    energy = validation_energy(model, data["val"])
    yarn = evaluate(model, data["val"], FACTOR * LENGTH, s["eval_windows"], Scaling("yarn", float(FACTOR)))
    return {**res.to_dict(), "energy": energy["energy"], "frequencies": energy["frequencies"],
            "dominant_band": energy["dominant_band"], "dominant_wavelength": energy["dominant_wavelength"],
            "effective_frequency": energy["effective_frequency"], "yarn_at_4L": yarn["loss"]}


def summary_lines(result: dict) -> list[str]:
    """LeRoPE against RoPE, the frozen-frequency ablation, the dominant band, and YaRN at 4L."""
    d, y = result["loss_delta_vs_rope_paired"], result["yarn_at_4L"]["lerope_minus_rope"]
    frac = result["frozen_gain_fraction"]
    f = result["from_data"]
    return [
        f"LeRoPE - RoPE val loss {d['mean']:+.4f} [{d['ci'][0]:+.4f}, {d['ci'][1]:+.4f}] (paper B -0.0066); "
        f"frozen gain fraction {'n/a' if frac is None else f'{frac:.2f}'} (paper B 0.636)",
        f"dominant wavelength {result['dominant_wavelength_over_Ltrain']:.2f} L_train (paper B 2.2); "
        f"depstat θ* wavelength {result['depstat']['theta_star_wavelength_over_Ltrain']:.2f} L_train; "
        f"with YaRN at {4}L: LeRoPE - RoPE {y['mean']:+.4f} [{y['ci'][0]:+.4f}, {y['ci'][1]:+.4f}]",
        f"before training, the gradient picks band {f['predicted_dominant_band']} (trained: "
        f"{f['trained_dominant_bands']}), drawn to wavelength {f['drawn_to_wavelength_over_Ltrain']:.2f} "
        f"L_train ({f['drawn_to_over_theta_star']:.2f} x depstat's θ*)",
    ]


def run(opts: Options) -> dict:
    """Train the variants over seeds; write result.json and figures."""
    s = SETTINGS[opts.setting]
    threads = set_threads(opts.threads)
    seeds = opts.n_seeds(s["seeds"])
    train_docs, val_docs = split_docs(read_texts(opts.corpus, s["max_docs"]))
    tokenizer = opts.out / "data" / "bpe-model.json"
    train_ids, val_ids, vocab = bpe_tokens(train_docs, val_docs, VOCAB, tokenizer)
    data = {"train": train_ids, "val": val_ids, "vocab": vocab}
    adv = advice(opts.corpus, [], HEAD_DIM, LENGTH, max_docs=len(train_docs), granularity="bpe-model",
                 tokenizers=(str(tokenizer),))
    result = {"experiment": "lerope", "quick": opts.quick, "setting": opts.setting, "prediction": PREDICTION, "paper_b": PAPER_B,
              "settings": {**s, "length": LENGTH, "base": BASE, "model": MODEL, "seeds": seeds, "bpe_vocab": VOCAB,
                           "corpus": opts.corpus.name, "train_tokens": int(train_ids.size),
                           "val_tokens": int(val_ids.size)}}
    write_json(opts.out / "result.json", result)  # the prediction is on disk before any model is trained
    store = RunStore(opts.out)
    spec = {"experiment": "lerope/bpe", "length": LENGTH, "base": BASE, "model": MODEL, "corpus": opts.corpus.name,
            "bpe_vocab": VOCAB, **s}
    runs: dict[str, list[dict]] = {"rope": [], "lerope": [], "frozen": []}
    for variant in ("rope", "lerope"):
        for seed in range(seeds):
            runs[variant].append(store.get(f"{variant}-seed{seed}", {**spec, "variant": variant, "seed": seed},
                                           lambda: one_run(variant, seed, s, data, opts)))
    for seed in range(seeds):
        donor = runs["lerope"][(seed + 1) % seeds]["frequencies"]
        runs["frozen"].append(store.get(f"frozen-seed{seed}", {**spec, "variant": "frozen", "seed": seed,
                                                               "frequencies": donor},
                                        lambda: one_run("frozen", seed, s, data, opts, donor)))
    result.update(_summarise(runs, adv, seeds))
    result["from_data"] = _from_data(data, s, opts, result["dominant_band"], adv["theta_star"])
    result.update({"advice": adv, "run_counts": store.counts(), "threads": threads,
                   "tokens_per_second": float(np.median([r["tokens_per_second"] for rs in runs.values() for r in rs])),
                   "figures": ["lerope.png"]})
    _figure(result, runs, opts)
    write_json(opts.out / "result.json", result)
    return result


def _from_data(data: dict, s: dict, opts: Options, trained_dominant: list[int], theta_star: float) -> dict:
    """frequency_pull of a fresh LeRoPE model (seed 0) on 16 training windows, against the trained models."""
    import torch

    from depstat.validate.model import GPT, frequency_pull
    from depstat.validate.train import eval_starts, pick_device, set_seed

    set_seed(0)
    device = pick_device(opts.device)
    model = GPT(ModelConfig(vocab_size=data["vocab"], block_size=LENGTH, rope_base=BASE, learnable_freqs=True,
                            **MODEL)).to(device)
    starts = eval_starts(data["train"].size, LENGTH, 16)
    w = torch.from_numpy(np.stack([data["train"][i:i + LENGTH + 1] for i in starts])).to(device)
    grid = torch.from_numpy(np.geomspace(2 * math.pi / (64 * LENGTH), math.pi, 400))
    pull = frequency_pull(model, w[:, :-1].contiguous(), w[:, 1:].contiguous(), grid)
    predicted = int(np.argmax(pull["pull"]))
    drawn_to = float(pull["best_frequency"][predicted])
    return {"pull": pull["pull"].tolist(), "best_frequency": pull["best_frequency"].tolist(),
            "predicted_dominant_band": predicted, "trained_dominant_bands": trained_dominant,
            "predicts_dominant": bool(np.mean(np.array(trained_dominant) == predicted) > 0.5),
            "drawn_to_frequency": drawn_to, "drawn_to_wavelength_over_Ltrain": 2 * math.pi / drawn_to / LENGTH,
            "theta_star": theta_star, "drawn_to_over_theta_star": drawn_to / theta_star}


def _summarise(runs: dict[str, list[dict]], adv: dict, seeds: int) -> dict:
    """The headline numbers (definitions in the module docstring) and the per-seed values behind them."""
    loss = {v: mean_spread([r["val_loss"] for r in rs]) for v, rs in runs.items()}
    delta = np.array([le["val_loss"] - ro["val_loss"] for le, ro in zip(runs["lerope"], runs["rope"])])
    frozen_delta = np.array([fr["val_loss"] - ro["val_loss"] for fr, ro in zip(runs["frozen"], runs["rope"])])
    yarn = np.array([le["yarn_at_4L"] - ro["yarn_at_4L"] for le, ro in zip(runs["lerope"], runs["rope"])])
    gain = loss["rope"]["mean"] - loss["lerope"]["mean"]
    ratios = [r["dominant_wavelength"] / LENGTH for r in runs["lerope"]]
    learned = np.mean([r["frequencies"] for r in runs["lerope"]], axis=0)
    initial = np.asarray(runs["rope"][0]["frequencies"])
    theta_star_wavelength = 2 * math.pi / adv["theta_star"]

    def ci(v: np.ndarray) -> dict:
        m, lo, hi = t_interval(v)
        return {"mean": m, "ci": [lo, hi], "per_seed": v.tolist()}

    return {
        "val_loss": loss,
        "loss_delta_vs_rope": float(delta.mean()), "loss_delta_vs_rope_paired": ci(delta),
        "frozen_minus_rope": ci(frozen_delta),
        "frozen_gain_fraction": float((loss["rope"]["mean"] - loss["frozen"]["mean"]) / gain) if gain > 0 else None,
        "frozen_gain_note": None if gain > 0 else "LeRoPE did not beat RoPE on average: no gain to share out",
        "yarn_at_4L": {"rope": mean_spread([r["yarn_at_4L"] for r in runs["rope"]]),
                       "lerope": mean_spread([r["yarn_at_4L"] for r in runs["lerope"]]),
                       "lerope_minus_rope": ci(yarn)},
        "dominant_band": [r["dominant_band"] for r in runs["lerope"]],
        "dominant_wavelength_over_Ltrain": float(np.mean(ratios)),
        "dominant_wavelength_over_Ltrain_per_seed": ratios,
        "rope_dominant_wavelength_over_Ltrain": float(np.mean([r["dominant_wavelength"] / LENGTH
                                                               for r in runs["rope"]])),
        "learned_frequencies": learned.tolist(), "initial_frequencies": initial.tolist(),
        "learned_over_initial": (learned / initial).tolist(),
        "lerope_energy": np.mean([r["energy"] for r in runs["lerope"]], axis=0).tolist(),
        "depstat": {"W": adv["W"], "theta_star": adv["theta_star"], "theta_star_wavelength": theta_star_wavelength,
                    "theta_star_wavelength_over_Ltrain": theta_star_wavelength / LENGTH,
                    "recommended_rope_theta": adv["rope_theta"]},
        "runs": {v: [{"seed": i, "val_loss": r["val_loss"], "yarn_at_4L": r["yarn_at_4L"],
                      "dominant_band": r["dominant_band"], "dominant_wavelength": r["dominant_wavelength"],
                      "tokens_per_second": r["tokens_per_second"]} for i, r in enumerate(rs)]
                 for v, rs in runs.items()},
    }


def _figure(result: dict, runs: dict, opts: Options) -> None:
    """Learned against initial wavelengths per band, and the energy per band of each variant."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    bands = np.arange(len(result["initial_frequencies"]))
    left.plot(bands, 2 * np.pi / np.asarray(result["initial_frequencies"]) / LENGTH, "o-", ms=3, label="RoPE b = 10,000")
    for i, r in enumerate(runs["lerope"]):
        left.plot(bands, 2 * np.pi / np.asarray(r["frequencies"]) / LENGTH, ".-", alpha=0.7, label=f"LeRoPE seed {i}")
    left.axhline(PAPER_B["dominant_wavelength_over_Ltrain"], color="k", ls=":", label="paper B dominant band (2.2 L)")
    left.axhline(result["depstat"]["theta_star_wavelength_over_Ltrain"], color="C3", ls="--", label="depstat θ* wavelength")
    left.set(yscale="log", xlabel="band m", ylabel="wavelength / L_train", title="learned frequencies")
    left.grid(alpha=0.3)
    left.legend(fontsize=7)
    for v, rs in runs.items():
        right.plot(bands, np.mean([r["energy"] for r in rs], axis=0), "o-", ms=3, label=v)
    right.set(xlabel="band m", ylabel="energy share", title="frequency energy (mean over seeds), BPE tokens")
    right.grid(alpha=0.3)
    right.legend(fontsize=8)
    savefig(fig, opts.out / "lerope.png")
