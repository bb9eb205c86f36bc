"""Experiment 3, pi: does depstat's self-similarity verdict predict whether PI or YaRN extends the context?

Two byte-level corpora: natural text (the bundled Python docs, self-similar by depstat's
analysis) and iGSM-style arithmetic (``depstat.synth.arithmetic_problems``, not
self-similar). Each is profiled and analysed by depstat for the model (head dimension,
L_train = L, target s L); a model is trained at L with the recommended base and evaluated
at s L with no scaling, PI and YaRN: as it is (zero-shot), and after a short fine-tuning at
s L with that scaling (``<method>+ft``, as PI is meant to be used). Perplexity and top-1 accuracy
are reported separately; for arithmetic also on the exact tokens: ``copy`` (the variable
names that repeat one defined earlier in the same problem: "= y op" and "What is y?") and
``answer`` (the digits after "Answer: ").
"""

from __future__ import annotations

import copy
import re

import numpy as np

from depstat.model import ModelConfig, Scaling
from depstat.synth import arithmetic_jsonl, arithmetic_problems
from depstat.train import TrainConfig, evaluate, set_threads, train
from depstat.validate.common import (
    HEAD_DIM, MODEL, Options, RunStore, advice, build_and_train, mean_spread, read_texts, savefig, split_docs,
    text_bytes, write_json,
)

SETTINGS = {
    "quick": {"text_docs": 20, "arithmetic_docs": 24, "steps": 40, "batch_size": 8, "eval_windows": 8, "ft_steps": 5},
    "full": {"text_docs": None, "arithmetic_docs": 200, "steps": 600, "batch_size": 16, "eval_windows": 32,
             "ft_steps": 100},
}
FT_BATCH, FT_LR = 4, 1e-3  # fine-tuning at s L: windows per step, peak learning rate
LENGTH = 128  # shorter than the other experiments' so that 4L stays cheap on a CPU
FACTOR = 4
METHODS = ("none", "pi", "yarn")
KINDS = ("natural text", "arithmetic")
_COPY = re.compile(r"= ([a-z]+) [-+*] |What is ([a-z]+)\?")
_ANSWER = re.compile(r"Answer: (\d+)\.")


def arithmetic_masks(texts: list[str]) -> dict[str, np.ndarray]:
    """Boolean masks over ``text_bytes(texts)``: the copied variable names and the answer digits."""
    n = sum(len(t) + 1 for t in texts)
    masks = {"copy": np.zeros(n, dtype=bool), "answer": np.zeros(n, dtype=bool)}
    start = 0
    for text in texts:
        for m in _COPY.finditer(text):
            g = 1 if m.group(1) else 2
            masks["copy"][start + m.start(g):start + m.end(g)] = True
        for m in _ANSWER.finditer(text):
            masks["answer"][start + m.start(1):start + m.end(1)] = True
        start += len(text) + 1
    return masks


def _data(kind: str, s: dict, opts: Options) -> tuple[list[str], list[str], object]:
    """Training and validation documents of one kind, and the corpus path depstat profiles."""
    if kind == "natural text":
        return (*split_docs(read_texts(opts.corpus, s["text_docs"])), opts.corpus)
    (opts.out / "data").mkdir(parents=True, exist_ok=True)
    path = arithmetic_jsonl(opts.out / "data" / "arithmetic.jsonl", s["arithmetic_docs"], seed=1)
    return (*split_docs(arithmetic_problems(s["arithmetic_docs"], seed=1)), path)


def one_run(kind: str, base: float, seed: int, s: dict, train_docs: list[str], val_docs: list[str],
            opts: Options) -> dict:
    """Train at L with ``base``; evaluate at L and at s L with each scaling method, zero-shot and fine-tuned."""
    cfg = TrainConfig(steps=s["steps"], batch_size=s["batch_size"], warmup=max(1, s["steps"] // 10), seed=seed)
    model, res = build_and_train(ModelConfig(vocab_size=256, block_size=LENGTH, rope_base=base, **MODEL), cfg,
                                 text_bytes(train_docs), text_bytes(val_docs), opts, f"{kind} seed {seed}")
    val = text_bytes(val_docs)
    masks = {"all": None, **(arithmetic_masks(val_docs) if kind == "arithmetic" else {})}
    out = {"train": res.to_dict(), "eval": {}}
    cases = {"train_length": (LENGTH, None)}
    cases.update({m: (FACTOR * LENGTH, Scaling(m, float(FACTOR))) for m in METHODS})
    for name, (length, scaling) in cases.items():
        out["eval"][name] = {k: evaluate(model, val, length, s["eval_windows"], scaling, mask)
                             for k, mask in masks.items()}
    ft = TrainConfig(steps=s["ft_steps"], batch_size=FT_BATCH, lr=FT_LR, warmup=max(1, s["ft_steps"] // 10),
                     eval_batches=1, seed=seed)
    for method in METHODS:
        tuned, scaling = copy.deepcopy(model), Scaling(method, float(FACTOR))
        train(tuned, text_bytes(train_docs), val, ft, f"{kind} {method}+ft", next(model.parameters()).device,
              FACTOR * LENGTH, scaling)
        out["eval"][f"{method}+ft"] = {k: evaluate(tuned, val, FACTOR * LENGTH, s["eval_windows"], scaling, mask)
                                       for k, mask in masks.items()}
    return out


def run(opts: Options) -> dict:
    """Advice, training and extension for both kinds of data; write result.json and the figure."""
    s = SETTINGS["quick" if opts.quick else "full"]
    threads = set_threads(opts.threads)
    store = RunStore(opts.out)
    table, advice_by_kind, runs = {}, {}, []
    for kind in KINDS:
        train_docs, val_docs, path = _data(kind, s, opts)
        adv = advice(path, ["bytes", "bpe-1k"], HEAD_DIM, LENGTH, FACTOR * LENGTH, max_docs=len(train_docs))
        advice_by_kind[kind] = adv
        results = []
        for seed in range(opts.n_seeds()):
            spec = {"experiment": "pi", "kind": kind, "base": adv["rope_theta"], "seed": seed, "length": LENGTH,
                    "factor": FACTOR, "model": MODEL, **s}
            r = store.get(f"{kind.replace(' ', '-')}-seed{seed}", spec,
                          lambda: one_run(kind, adv["rope_theta"], seed, s, train_docs, val_docs, opts))
            results.append(r)
            runs.append({"kind": kind, "seed": seed, "tokens_per_second": r["train"]["tokens_per_second"]})
        table[kind] = _summarise(results)
        table[kind]["verdict"] = adv["verdict"]
        table[kind]["predicted_method"] = adv["extension"]
        _judge(table[kind], "arithmetic" == kind)
    result = {
        "experiment": "pi", "quick": opts.quick,
        "settings": {**s, "length": LENGTH, "factor": FACTOR, "eval_length": FACTOR * LENGTH, "model": MODEL,
                     "seeds": opts.n_seeds(), "ft_batch_size": FT_BATCH, "ft_lr": FT_LR},
        "advice": advice_by_kind, "table": table, "runs": runs, "run_counts": store.counts(), "threads": threads,
        "tokens_per_second": float(np.median([r["tokens_per_second"] for r in runs])),
        "figures": ["pi.png"],
    }
    _figure(table, opts)
    write_json(opts.out / "result.json", result)
    return result


def _summarise(results: list[dict]) -> dict:
    """Per method: perplexity, loss and accuracies as mean and spread over seeds."""
    out = {}
    for method in ("train_length", *METHODS, *(f"{m}+ft" for m in METHODS)):
        row = {}
        for subset in results[0]["eval"][method]:
            evals = [r["eval"][method][subset] for r in results]
            prefix = "" if subset == "all" else f"{subset}_"
            row[f"{prefix}perplexity"] = mean_spread([e["perplexity"] for e in evals])
            row[f"{prefix}accuracy"] = mean_spread([e["accuracy"] for e in evals])
        out[method] = row
    return out


def _judge(row: dict, exact: bool) -> None:
    """Best method at s L by perplexity and by accuracy, and whether depstat's choice (PI or YaRN) was the better of the two.

    Judged zero-shot and after fine-tuning (keys with suffix ``_fine_tuned``).
    """
    acc_key = "copy_accuracy" if exact else "accuracy"
    row["accuracy_metric"] = acc_key
    for suffix, tag in (("", ""), ("+ft", "_fine_tuned")):
        methods = [m + suffix for m in METHODS]
        row[f"best_by_perplexity{tag}"] = min(methods, key=lambda m: row[m]["perplexity"]["mean"])
        row[f"best_by_accuracy{tag}"] = max(methods, key=lambda m: row[m][acc_key]["mean"])
        better = max(("pi", "yarn"), key=lambda m: row[m + suffix][acc_key]["mean"])
        row[f"better_of_pi_yarn_by_accuracy{tag}"] = better
        row[f"verdict_predicted_method{tag}"] = row["predicted_method"] == better


def _figure(table: dict, opts: Options) -> None:
    """Perplexity and accuracy at s L by method, one panel pair per kind of data."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(13, 4.2))
    names = ("train_length", *METHODS, *(f"{m}+ft" for m in METHODS))
    x = np.arange(len(names))
    for k, kind in enumerate(KINDS):
        row = table[kind]
        w = 0.38
        axes[0].bar(x + (k - 0.5) * w, [row[m]["perplexity"]["mean"] for m in names], w, label=kind)
        axes[1].bar(x + (k - 0.5) * w, [row[m][row["accuracy_metric"]]["mean"] for m in names], w,
                    label=f"{kind} ({row['accuracy_metric'].replace('_', ' ')})")
    for ax, what in zip(axes, ("perplexity (per byte)", "top-1 accuracy")):
        ax.set_xticks(x, [f"L={LENGTH}" if n == "train_length" else f"{n} @ {FACTOR}L" for n in names])
        ax.set(ylabel=what)
        ax.tick_params(axis="x", labelrotation=30)
        ax.grid(alpha=0.3, axis="y")
        ax.legend(fontsize=8)
    axes[0].set_yscale("log")
    fig.suptitle(f"context extension x{FACTOR}: zero-shot and after fine-tuning at {FACTOR}L (+ft)")
    savefig(fig, opts.out / "pi.png")
