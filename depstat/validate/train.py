"""One readable training loop for depstat's validation models (nanoGPT-style).

Plain pieces, read top to bottom: device and seed, the learning-rate schedule (linear
warmup, cosine decay to a floor), batches of random windows from a token array, the loop
(AdamW over ``model.param_groups``, a separate gradient clip for LeRoPE's alphas),
evaluation (loss and top-1 accuracy, optionally on masked positions and with context
scaling), and tokens-per-second measurement. Everything runs on the CPU by default and on
CUDA when it is available; seeds fix the data order and the initialisation.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import torch

from depstat.errors import DepstatError
from depstat.progress import bar
from depstat.validate.model import GPT, Scaling


@dataclass(frozen=True)
class TrainConfig:
    """Knobs of one training run (steps, batch, optimiser, schedule, evaluation)."""

    steps: int = 300
    batch_size: int = 16
    lr: float = 3e-3
    min_lr_ratio: float = 0.1  # the cosine ends at lr * min_lr_ratio
    warmup: int = 30
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    rope_grad_clip: float = 1.0  # LeRoPE alphas, clipped on their own (paper B)
    eval_batches: int = 8
    seed: int = 0

    def __post_init__(self) -> None:
        if self.steps < 1 or self.batch_size < 1 or self.eval_batches < 1:
            raise DepstatError(f"steps, batch_size and eval_batches must be positive, got {self.steps}, "
                               f"{self.batch_size}, {self.eval_batches}")
        if not 0 <= self.warmup < self.steps:
            raise DepstatError(f"warmup must lie in [0, steps), got {self.warmup} for {self.steps} steps")
        if self.lr <= 0 or not 0 <= self.min_lr_ratio <= 1:
            raise DepstatError(f"need lr > 0 and 0 <= min_lr_ratio <= 1, got {self.lr}, {self.min_lr_ratio}")

    def to_dict(self) -> dict:
        return asdict(self)


def pick_device(name: str = "auto") -> torch.device:
    """CUDA when available (or asked for), else the CPU."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise DepstatError("--device cuda asked for, but torch sees no CUDA device", hint="use --device cpu or auto")
    if name not in ("cpu", "cuda"):
        raise DepstatError(f"unknown device {name!r}", hint="use auto, cpu or cuda")
    return torch.device(name)


def set_threads(threads: int | None) -> int:
    """Set torch's CPU threads (default: at most 2, the laptop budget) and return the number used."""
    n = threads or min(2, os.cpu_count() or 1)
    if n < 1:
        raise DepstatError(f"--threads must be positive, got {n}")
    torch.set_num_threads(n)
    return n


def set_seed(seed: int) -> None:
    """Fix torch's CPU and CUDA generators, so initialisation repeats run to run."""
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Learning rate at ``step`` (0-based): linear warmup to lr, then cosine down to lr * min_lr_ratio."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    progress = min(1.0, (step - cfg.warmup) / max(1, cfg.steps - 1 - cfg.warmup))
    floor = cfg.lr * cfg.min_lr_ratio
    return floor + 0.5 * (cfg.lr - floor) * (1 + math.cos(math.pi * progress))


def check_tokens(tokens: np.ndarray, length: int, what: str) -> np.ndarray:
    """A 1-D int64 token array long enough for one window of ``length`` + 1 tokens."""
    tokens = np.asarray(tokens).astype(np.int64, copy=False).reshape(-1)
    if tokens.size < length + 1:
        raise DepstatError(f"the {what} data has {tokens.size} tokens, fewer than one window of {length + 1}",
                           hint="use more data or a shorter length")
    return tokens


def random_batch(tokens: np.ndarray, length: int, batch_size: int, rng: np.random.Generator,
                 device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and next-token targets (batch_size, length) from windows at random starts."""
    starts = rng.integers(0, tokens.size - length, size=batch_size)
    window = np.stack([tokens[s:s + length + 1] for s in starts]).astype(np.int64)  # any token dtype in
    w = torch.from_numpy(window).to(device)
    return w[:, :-1].contiguous(), w[:, 1:].contiguous()


def eval_starts(n_tokens: int, length: int, n_windows: int) -> np.ndarray:
    """Evenly spaced window starts over the whole array: the same windows on every call."""
    return np.linspace(0, n_tokens - length - 1, n_windows).astype(np.int64)


@dataclass
class TrainResult:
    """What a run returns: losses along the way, the final validation loss, speed."""

    train_loss: list[float]  # mean training loss per logging interval
    val_loss: float
    seconds: float
    tokens_per_second: float
    device: str

    def to_dict(self) -> dict:
        return asdict(self)


def train(model: GPT, train_tokens: np.ndarray, val_tokens: np.ndarray, cfg: TrainConfig,
          desc: str = "train", device: torch.device | None = None, length: int | None = None,
          scaling: Scaling | None = None) -> TrainResult:
    """Train ``model`` in place on random windows, then evaluate on ``val_tokens``.

    Windows are the model's block_size long unless ``length`` is given; ``scaling`` (PI,
    YaRN, ...) is applied in every forward pass, for fine-tuning at an extended context.
    """
    device = device or pick_device()
    length = length or model.config.block_size
    train_tokens = check_tokens(train_tokens, length, "training")
    val_tokens = check_tokens(val_tokens, length, "validation")
    logged, seconds = fit(model, lambda rng: random_batch(train_tokens, length, cfg.batch_size, rng, device),
                          cfg, desc, device, scaling)
    val = evaluate(model, val_tokens, length, cfg.eval_batches * cfg.batch_size, scaling, device=device)
    return TrainResult(logged, val["loss"], seconds, cfg.steps * cfg.batch_size * length / seconds, device.type)


def fit(model: GPT, batch: Callable[[np.random.Generator], tuple[torch.Tensor, torch.Tensor]], cfg: TrainConfig,
        desc: str, device: torch.device, scaling: Scaling | None = None,
        after_step: Callable[[int], None] | None = None) -> tuple[list[float], float]:
    """The training loop: ``cfg.steps`` AdamW steps on ``batch(rng)`` (inputs, targets; target -100 is
    not counted), LeRoPE's alphas clipped on their own; ``after_step(n)`` is called after the n-th step
    (e.g. to evaluate checkpoints). Returns (logged losses, seconds)."""
    model.to(device).train()
    opt = torch.optim.AdamW(model.param_groups(cfg.weight_decay), lr=cfg.lr, betas=(0.9, 0.95),
                            fused=device.type == "cuda")
    rope = model.rope_parameters()
    rope_ids = {id(p) for p in rope}
    others = [p for p in model.parameters() if id(p) not in rope_ids]
    rng = np.random.default_rng(cfg.seed)
    log_every = max(1, cfg.steps // 20)
    logged, running = [], []
    start = time.perf_counter()
    with bar(desc=desc, unit="step", total=cfg.steps) as progress:
        for step in range(cfg.steps):
            for group in opt.param_groups:
                group["lr"] = lr_at(step, cfg)
            x, y = batch(rng)
            _, loss = model(x, y, scaling=scaling)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(others, cfg.grad_clip)
            if rope:
                torch.nn.utils.clip_grad_norm_(rope, cfg.rope_grad_clip)
            opt.step()
            running.append(loss.item())
            if len(running) == log_every or step == cfg.steps - 1:
                logged.append(float(np.mean(running)))
                running = []
                progress.set_postfix(loss=f"{logged[-1]:.3f}")
            progress.update(1)
            if after_step is not None:
                after_step(step + 1)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return logged, time.perf_counter() - start


@torch.no_grad()
def evaluate(model: GPT, tokens: np.ndarray, length: int, n_windows: int, scaling: Scaling | None = None,
             mask: np.ndarray | None = None, device: torch.device | None = None, batch_size: int = 8) -> dict:
    """Mean loss (nats), perplexity and top-1 accuracy over fixed windows of ``length`` tokens.

    ``mask`` (same shape as ``tokens``, True where a target counts) restricts the average to
    chosen target positions, e.g. the exact-answer tokens; ``n_targets`` says how many counted.
    """
    device = device or next(model.parameters()).device
    tokens = check_tokens(tokens, length, "evaluation")
    if mask is not None and np.shape(mask) != tokens.shape:
        raise DepstatError(f"the mask has shape {np.shape(mask)}, the tokens {tokens.shape}")
    was_training = model.training
    model.eval()
    total_loss, correct, count = 0.0, 0, 0
    starts = eval_starts(tokens.size, length, n_windows)
    for i in range(0, len(starts), batch_size):
        chunk = starts[i:i + batch_size]
        window = torch.from_numpy(np.stack([tokens[s:s + length + 1] for s in chunk]).astype(np.int64)).to(device)
        x, y = window[:, :-1], window[:, 1:]
        logits, _ = model(x, scaling=scaling)
        nll = torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), y.flatten(), reduction="none")
        hit = (logits.argmax(-1) == y).flatten()
        if mask is None:
            keep = torch.ones_like(hit)
        else:
            keep = torch.from_numpy(np.stack([mask[s + 1:s + length + 1] for s in chunk])).to(device).flatten()
        total_loss += float(nll[keep].sum())
        correct += int(hit[keep].sum())
        count += int(keep.sum())
    model.train(was_training)
    if count == 0:
        return {"loss": float("nan"), "perplexity": float("nan"), "accuracy": float("nan"), "n_targets": 0}
    loss = total_loss / count
    return {"loss": loss, "perplexity": math.exp(loss), "accuracy": correct / count, "n_targets": count}
