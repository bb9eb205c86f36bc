"""What the four validation experiments share: data, models, the run store, the fits, output.

Each finished training run is saved atomically as ``DIR/runs/<key>.json`` together with
the specification that produced it; a rerun with the same specification reads the file
instead of training again, so Ctrl-C loses at most the run in progress.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from scipy import stats

from depstat.errors import DepstatError
from depstat.files import atomic_write
from depstat.io.corpus import open_corpus
from depstat.io.formats import EXAMPLE_CORPUS

if TYPE_CHECKING:
    from depstat.validate.model import GPT, ModelConfig
    from depstat.validate.train import TrainConfig, TrainResult

DOC_SEPARATOR = 0  # byte 0 never occurs in the text corpora, so it marks document ends
LENGTH = 256  # training length of every validation model
MODEL = {"n_layer": 2, "n_head": 2, "d_model": 64}  # the model's shape: head_dim 32, 16 bands
HEAD_DIM = MODEL["d_model"] // MODEL["n_head"]
ENERGY_WINDOWS = 16  # validation windows the frequency energy is measured on


SCALES = ("cpu", "paper")


@dataclass(frozen=True)
class Options:
    """Settings every experiment takes from the command line."""

    out: Path
    quick: bool = False
    seeds: int | None = None  # None: the experiment's default
    device: str = "auto"
    threads: int | None = None
    corpus: Path = EXAMPLE_CORPUS
    scale: str = "cpu"  # "cpu": sized for 2 CPU cores; "paper": for one large GPU, at most 10 minutes each
    window_block: int | None = None  # pi: the window task's block B (None: 16)

    @property
    def setting(self) -> str:
        """Which of an experiment's SETTINGS applies: "quick", "full" (CPU) or "paper" (GPU)."""
        if self.scale not in SCALES:
            raise DepstatError(f"unknown scale {self.scale!r}", hint="use " + " or ".join(SCALES))
        return "quick" if self.quick else "paper" if self.scale == "paper" else "full"

    def n_seeds(self, default: int = 2) -> int:
        """Seeds per setting: the one given, else ``default``."""
        n = self.seeds if self.seeds is not None else default
        if n < 1:
            raise DepstatError(f"--seeds must be at least 1, got {n}")
        return n


def text_bytes(texts: list[str]) -> np.ndarray:
    """UTF-8 bytes of the documents, each followed by the separator byte 0 (vocabulary 256)."""
    parts = []
    for text in texts:
        parts.append(np.frombuffer(text.encode("utf-8"), dtype=np.uint8))
        parts.append(np.array([DOC_SEPARATOR], dtype=np.uint8))
    return np.concatenate(parts).astype(np.int64)


def bpe_tokens(train_docs: list[str], val_docs: list[str], vocab_size: int,
               save: Path) -> tuple[np.ndarray, np.ndarray, int]:
    """Byte-level BPE ids of the documents, trained on ``train_docs`` (``depstat.tokenize.granularity.train_bpe``) and
    saved as ``save`` (a tokenizer.json), each document followed by a separator id; returns (train ids,
    validation ids, vocabulary incl. separator)."""
    from depstat.tokenize.granularity import train_bpe

    tok = train_bpe(train_docs, vocab_size)
    save.parent.mkdir(parents=True, exist_ok=True)
    tok.save(str(save))
    sep = tok.get_vocab_size()

    def ids(docs: list[str]) -> np.ndarray:
        return np.concatenate([np.append(np.asarray(e.ids, dtype=np.int64), sep) for e in tok.encode_batch(docs)])

    return ids(train_docs), ids(val_docs), sep + 1


def read_texts(path: Path, max_docs: int | None = None) -> list[str]:
    """The documents of a text corpus, in reading order (the first ``max_docs``)."""
    texts = []
    for doc in open_corpus(str(path)):
        if doc.text is None:
            raise DepstatError("validation needs a text corpus, this one holds token ids", path=str(path))
        texts.append(doc.text)
        if max_docs is not None and len(texts) >= max_docs:
            break
    return texts


def split_docs(texts: list[str], val_share: float = 0.1) -> tuple[list[str], list[str]]:
    """Training and validation documents: the last ``val_share`` of the documents validate (at least one)."""
    if len(texts) < 2:
        raise DepstatError(f"need at least 2 documents to split into training and validation, got {len(texts)}")
    n_val = max(1, round(len(texts) * val_share))
    return texts[:-n_val], texts[-n_val:]


class RunStore:
    """Finished runs under ``out/runs``: reuse one whose spec matches, else run and save it atomically."""

    def __init__(self, out: Path) -> None:
        self.dir = Path(out) / "runs"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.trained = 0
        self.reused = 0

    def get(self, key: str, spec: dict, run: Callable[[], dict]) -> dict:
        """The saved result of run ``key`` if its spec matches ``spec``, else ``run()`` saved now."""
        path = self.dir / f"{key}.json"
        spec = json.loads(json.dumps(spec, default=_plain))
        if path.is_file():
            saved = json.loads(path.read_text())
            if saved.get("spec") == spec:
                self.reused += 1
                return saved["result"]
        start = time.perf_counter()
        result = run()
        result["wall_seconds"] = time.perf_counter() - start
        write_json(path, {"spec": spec, "result": result})
        self.trained += 1
        return json.loads(json.dumps(result, default=_plain))

    def counts(self) -> dict:
        return {"trained": self.trained, "reused": self.reused}


def write_json(path: Path, data: dict) -> Path:
    """Write JSON to a temporary sibling and rename it, so an interrupted write leaves no half file."""
    text = json.dumps(data, indent=2, default=_plain) + "\n"
    return atomic_write(path, lambda tmp: Path(tmp).write_text(text))


def _plain(value: object) -> object:
    """JSON form of numpy scalars, arrays and paths."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "__dataclass_fields__"):
        return asdict(value)
    raise TypeError(f"not JSON-serialisable: {type(value).__name__}")


def mean_spread(values: list[float]) -> dict:
    """Mean, sample standard deviation (0 for one value), min, max and count."""
    v = np.asarray(values, dtype=np.float64)
    return {"mean": float(v.mean()), "std": float(v.std(ddof=1)) if v.size > 1 else 0.0,
            "min": float(v.min()), "max": float(v.max()), "n": int(v.size)}


def t_interval(values: np.ndarray, confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean of ``values`` and its Student-t interval (infinite with a single value)."""
    v = np.asarray(values, dtype=np.float64)
    m = float(v.mean())
    if v.size < 2:
        return m, -math.inf, math.inf
    h = float(stats.t.ppf(0.5 + confidence / 2, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size))
    return m, m - h, m + h


def fit_frequency_law(W: np.ndarray, theta: np.ndarray, confidence: float = 0.95) -> dict:
    """Fit log theta = a + slope log W (OLS, t-intervals) and c in theta = c / W (slope fixed at -1).

    c is the geometric mean of theta W, its interval the t-interval of mean log(theta W);
    ``c_free`` = exp(a) is the intercept of the free fit. Needs at least two distinct W.
    """
    x, y = np.log(np.asarray(W, dtype=np.float64)), np.log(np.asarray(theta, dtype=np.float64))
    if x.size != y.size or np.unique(x).size < 2:
        raise DepstatError("the frequency-law fit needs measurements at two or more distinct W")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise DepstatError("W and theta must be positive and finite")
    fit = stats.linregress(x, y)
    dof = x.size - 2
    q = float(stats.t.ppf(0.5 + confidence / 2, dof)) if dof > 0 else math.inf
    slope_h = q * fit.stderr if dof > 0 else math.inf
    logc, lo, hi = t_interval(x + y, confidence)
    residual = y - (fit.intercept + fit.slope * x)
    return {
        "slope": float(fit.slope), "slope_ci": [float(fit.slope - slope_h), float(fit.slope + slope_h)],
        "c": math.exp(logc), "c_ci": [math.exp(lo), math.exp(hi)],
        "c_free": math.exp(fit.intercept), "r2": float(fit.rvalue ** 2),
        "residual_sd": float(residual.std(ddof=2)) if dof > 0 else 0.0,
        "n": int(x.size), "confidence": confidence,
    }


# The window task (depstat.synth.window_task) and the one-layer model that frequency-law, pi and base-sweep train.
WINDOW_VOCAB, WINDOW_SIGNAL = 8, 0.5
WINDOW_MODEL = {"n_layer": 1, "n_head": 1, "d_model": 32, "mlp": False}


def window_tensors(rng: np.random.Generator, n: int, length: int, block: int, device) -> tuple:
    """``n`` window-task sequences (inputs, targets; -100 without a whole window) as tensors on ``device``."""
    import torch

    from depstat.synth import window_task

    x, y = window_task(rng, n, length, block, WINDOW_VOCAB, WINDOW_SIGNAL)
    return torch.from_numpy(x).to(device), torch.from_numpy(y).to(device)


def window_batches(length: int, block: int, batch_size: int, device) -> Callable:
    """A ``depstat.validate.train.fit`` batch function: fresh window-task sequences at every step."""
    return lambda rng: window_tensors(rng, batch_size, length, block, device)


def window_metrics(model: GPT, x, y, scaling=None) -> dict:
    """Loss (nats), perplexity and accuracy on the targets that have a whole window."""
    import torch

    was = model.training
    model.eval()
    with torch.no_grad():
        logits, loss = model(x, y, scaling=scaling)
        keep = y >= 0
        accuracy = float((logits.argmax(-1)[keep] == y[keep]).float().mean())
    model.train(was)
    return {"loss": float(loss), "perplexity": math.exp(float(loss)), "accuracy": accuracy}


def window_corpus(path: Path, block: int, seed: int, n_docs: int = 200, length: int = 1024) -> Path:
    """The window task's token stream as a jsonl of ids (``n_docs`` documents of ``length``), for depstat to profile."""
    from depstat.synth import window_stream

    tokens = window_stream(np.random.default_rng(seed), n_docs, length, block, WINDOW_VOCAB, WINDOW_SIGNAL)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps({"input_ids": row.tolist()}) + "\n" for row in tokens)
    return atomic_write(path, lambda tmp: Path(tmp).write_text(text))


def savefig(fig, path: Path) -> Path:
    """Save a matplotlib figure as PNG and close it."""
    fig.tight_layout()
    atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=110, format="png"))
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


def build_and_train(config: ModelConfig, train_cfg: TrainConfig, train_tokens: np.ndarray,
                    val_tokens: np.ndarray, opts: Options, desc: str,
                    prepare: Callable[[GPT], None] | None = None) -> tuple[GPT, TrainResult]:
    """A fresh model seeded with ``train_cfg.seed`` (then given to ``prepare``), trained on the chosen device."""
    from depstat.validate.model import GPT
    from depstat.validate.train import pick_device, set_seed, train

    device = pick_device(opts.device)
    set_seed(train_cfg.seed)
    model = GPT(config)
    if prepare is not None:
        prepare(model)
    return model, train(model, train_tokens, val_tokens, train_cfg, desc=desc, device=device)


def validation_energy(model: GPT, val_tokens: np.ndarray, length: int = LENGTH) -> dict:
    """``frequency_energy`` of a trained model on evenly spaced validation windows."""
    import torch

    from depstat.validate.model import frequency_energy
    from depstat.validate.train import eval_starts

    starts = eval_starts(val_tokens.size, length, ENERGY_WINDOWS)
    idx = torch.from_numpy(np.stack([val_tokens[i:i + length] for i in starts]).astype(np.int64))
    return frequency_energy(model, idx.to(next(model.parameters()).device))


def advice(corpus: Path, granularities: list[str], head_dim: int, train_length: int,
           target_length: int | None = None, max_docs: int | None = None, granularity: str = "bytes",
           tokenizers: tuple[str, ...] = ()) -> dict:
    """depstat's own analysis of the first ``max_docs`` documents of ``corpus`` (the training split: profile ->
    analysis -> recommendation) read at ``granularity``."""
    from depstat.analysis.result import Settings, analyze
    from depstat.pipeline import profile

    prof = profile(str(corpus), granularities=granularities, tokenizers=tokenizers,
                   max_offset=max(target_length or 0, train_length), max_docs=max_docs, sample="first")
    settings = Settings(head_dim=head_dim, train_length=train_length, target_length=target_length,
                        granularity=granularity)
    a = analyze(prof, settings)
    rec = a.recommendation
    return {
        "granularities": granularities, "max_docs": max_docs, "verdict": a.self_similarity.verdict,
        "W": a.widths[a.granularity].to_dict(), "theta_star": rec.theta_star, "rope_theta": rec.rope_theta,
        "extension": rec.extension.method if rec.extension else None, "rope_parameters": rec.rope_parameters,
        "reasons": list(rec.reasons) + list(a.self_similarity.reasons),
    }
