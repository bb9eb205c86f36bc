"""A small decoder-only transformer with RoPE variants, for checking depstat's advice by training.

One module, read top to bottom: config, RoPE (frequencies, LeRoPE, scaling), attention,
MLP, block, model, then the frequency-energy measurement of paper A. Conventions:

- Bands: theta_m = base^(-2m/d), m = 0 .. d/2-1, fastest first, d the head dimension
  (the same grid as ``depstat.analysis.recommend.frequencies``).
- Pair layout: half-split (GPT-NeoX, Hugging Face ``rotate_half``): band m rotates the
  pair (x_m, x_{m+d/2}) of each head by position * theta_m, counter-clockwise.
- p-RoPE: the fastest round(p d/2) bands rotate; the slowest ones get theta = 0 (identity).
- LeRoPE (paper B): theta_hat_m = exp(alpha_m) theta_m, one alpha per band shared by all
  layers and heads, initialised to 0 (exactly standard RoPE at step 0).
- Context extension is chosen per forward call (``Scaling``) and applied to the frequencies
  in use, learned or not. YaRN's attention factor multiplies cos and sin, hence q and k, so
  the logits are multiplied by its square, as in ``transformers``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor

from depstat.analysis.recommend import YARN_BETA_FAST, YARN_BETA_SLOW, frequencies
from depstat.errors import DepstatError

SCALING_METHODS = ("none", "pi", "ntk", "yarn")


@dataclass
class ModelConfig:
    """Shape of the model and its RoPE variant."""

    vocab_size: int
    n_layer: int = 2
    n_head: int = 2
    d_model: int = 64
    block_size: int = 128  # training length; the default original length for Scaling
    rope_base: float = 10000.0
    rope_fraction: float = 1.0  # p-RoPE: share of bands that rotate, fastest first
    learnable_freqs: bool = False  # LeRoPE
    dropout: float = 0.0
    mlp: bool = True  # False: attention-only blocks

    def __post_init__(self) -> None:
        if self.d_model % self.n_head or (self.d_model // self.n_head) % 2:
            raise DepstatError(
                f"d_model = {self.d_model} must split into {self.n_head} heads of even size")
        if not 0 < self.rope_fraction <= 1 or self.n_rotated == 0:
            raise DepstatError(f"rope_fraction = {self.rope_fraction} must rotate at least one band")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_head

    @property
    def n_bands(self) -> int:
        return self.head_dim // 2

    @property
    def n_rotated(self) -> int:
        return round(self.rope_fraction * self.n_bands)


@dataclass(frozen=True)
class Scaling:
    """Context extension applied to the frequencies at forward time (evaluation)."""

    method: str = "none"  # one of SCALING_METHODS
    factor: float = 1.0  # s = target length / original length
    original_length: int | None = None  # None: the model's block_size
    beta_fast: float = YARN_BETA_FAST
    beta_slow: float = YARN_BETA_SLOW


def scaled_frequencies(theta: Tensor, method: str, factor: float, original_length: int,
                       beta_fast: float = YARN_BETA_FAST,
                       beta_slow: float = YARN_BETA_SLOW) -> tuple[Tensor, float]:
    """Frequencies after extending the context by s = factor, and the attention factor for q and k.

    none: theta. pi ("linear"): theta / s. ntk (NTK-aware, static): base b -> b s^(d/(d-2)),
    i.e. theta_m s^(-2m/(d-2)) with d = 2 len(theta), so it also applies to learned
    frequencies; the slowest band is divided by s, the fastest kept. yarn (NTK-by-parts
    frequencies): r_m = original_length theta_m / 2pi turns within the original length,
    gamma_m = clamp((r_m - beta_slow) / (beta_fast - beta_slow), 0, 1),
    theta'_m = (1 - gamma_m) theta_m / s + gamma_m theta_m, and the attention factor
    0.1 ln s + 1 (1 for s <= 1 and for the other methods). The ramp is linear in r_m as in
    the YaRN paper; ``transformers`` ramps linearly in the band index between rounded
    correction dimensions instead (same kept and interpolated bands, different ramp).
    """
    if method not in SCALING_METHODS:
        raise DepstatError(f"unknown scaling method {method!r}", hint=f"use one of {SCALING_METHODS}")
    if factor <= 0:
        raise DepstatError(f"scaling factor must be positive, got {factor}")
    if method == "none":
        return theta, 1.0
    if method == "pi":
        return theta / factor, 1.0
    if method == "ntk":
        n = theta.numel()
        if n < 2:
            raise DepstatError("NTK-aware scaling needs at least two bands")
        m = torch.arange(n, device=theta.device, dtype=theta.dtype)
        return theta * factor ** (-m / (n - 1)), 1.0
    turns = original_length * theta / (2 * math.pi)
    gamma = ((turns - beta_slow) / (beta_fast - beta_slow)).clamp(0, 1)
    attention_factor = 0.1 * math.log(factor) + 1 if factor > 1 else 1.0
    return (1 - gamma) * theta / factor + gamma * theta, attention_factor


class Rotary(nn.Module):
    """RoPE band frequencies (learnable under LeRoPE) and the cos/sin tables they give."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.block_size = config.block_size
        theta = torch.tensor(frequencies(config.rope_base, config.head_dim), dtype=torch.float32)
        theta[config.n_rotated:] = 0.0  # p-RoPE: the slowest bands do not rotate
        self.register_buffer("theta", theta, persistent=False)
        self.alpha = nn.Parameter(torch.zeros(config.n_bands)) if config.learnable_freqs else None

    def frequencies(self) -> Tensor:
        """Frequencies in use: theta, times exp(alpha) under LeRoPE."""
        return self.theta if self.alpha is None else self.theta * self.alpha.exp()

    def forward(self, length: int, scaling: Scaling | None = None) -> tuple[Tensor, Tensor]:
        """cos and sin of position * frequency, shape (length, head_dim), times the attention factor."""
        s = scaling or Scaling()
        theta, attention_factor = scaled_frequencies(
            self.frequencies(), s.method, s.factor, s.original_length or self.block_size,
            s.beta_fast, s.beta_slow)
        angles = torch.arange(length, device=theta.device, dtype=theta.dtype)[:, None] * theta
        angles = torch.cat([angles, angles], dim=-1)
        return angles.cos() * attention_factor, angles.sin() * attention_factor


def apply_rotary(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotate each pair (x_m, x_{m+d/2}) of x (..., T, d) by its band's angle at each position."""
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention with RoPE on q and k (no position embeddings elsewhere)."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.n_head, self.head_dim = config.n_head, config.head_dim
        self.qkv = nn.Linear(config.d_model, 3 * config.d_model, bias=False)
        self.proj = nn.Linear(config.d_model, config.d_model, bias=False)
        self.dropout = config.dropout
        self.resid_dropout = nn.Dropout(config.dropout)
        self.record: list | None = None  # set by frequency_pull: keep (scores, q, k) with the scores' gradient

    def heads(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """q, k, v of shape (B, n_head, T, head_dim), before rotation."""
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        return tuple(t.view(B, T, self.n_head, self.head_dim).transpose(1, 2) for t in (q, k, v))

    def forward(self, x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
        B, T, C = x.shape
        q0, k0, v = self.heads(x)
        q, k = apply_rotary(q0, cos, sin), apply_rotary(k0, cos, sin)
        if self.record is None:
            y = F.scaled_dot_product_attention(
                q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=True)
        else:  # the same attention written out, so that the logits' gradient can be read
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
            scores.retain_grad()
            self.record.append((scores, q0.detach(), k0.detach()))
            causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            y = scores.masked_fill(~causal, float("-inf")).softmax(dim=-1) @ v
        return self.resid_dropout(self.proj(y.transpose(1, 2).reshape(B, T, C)))


class MLP(nn.Module):
    """Position-wise feed-forward layer, 4x wide, GELU."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.fc = nn.Linear(config.d_model, 4 * config.d_model, bias=False)
        self.proj = nn.Linear(4 * config.d_model, config.d_model, bias=False)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.dropout(self.proj(F.gelu(self.fc(x))))


class Block(nn.Module):
    """Pre-norm transformer block: x + attn(ln(x)), then x + mlp(ln(x)) (unless attention-only)."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.d_model)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.d_model) if config.mlp else None
        self.mlp = MLP(config) if config.mlp else None

    def forward(self, x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
        x = x + self.attn(self.ln_1(x), cos, sin)
        return x if self.mlp is None else x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """Decoder-only language model whose only position signal is RoPE (tied input/output embeddings)."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.tok_emb = nn.Embedding(config.vocab_size, config.d_model)
        self.drop = nn.Dropout(config.dropout)
        self.rotary = Rotary(config)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.ln_f = nn.LayerNorm(config.d_model)
        self.head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.head.weight = self.tok_emb.weight
        self.apply(self._init_weights)
        for name, p in self.named_parameters():  # GPT-2: residual projections scaled by depth
            if name.endswith("proj.weight"):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * config.n_layer))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        """N(0, 0.02) for linear and embedding weights, as in GPT-2."""
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)

    def forward(self, idx: Tensor, targets: Tensor | None = None,
                scaling: Scaling | None = None) -> tuple[Tensor, Tensor | None]:
        """Logits (B, T, vocab) for token ids (B, T), and the mean cross-entropy if targets are given.

        T may exceed block_size (RoPE has no table to outgrow); ``scaling`` extends the context.
        """
        cos, sin = self.rotary(idx.shape[1], scaling)
        x = self.drop(self.tok_emb(idx))
        for block in self.blocks:
            x = block(x, cos, sin)
        logits = self.head(self.ln_f(x))
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    def rope_parameters(self) -> list[nn.Parameter]:
        """The LeRoPE alphas (empty for fixed frequencies), for a separate gradient clip."""
        return [] if self.rotary.alpha is None else [self.rotary.alpha]

    def param_groups(self, weight_decay: float) -> list[dict]:
        """AdamW groups: matrices decayed; biases and norms not; LeRoPE alphas alone, not decayed."""
        rope = {id(p) for p in self.rope_parameters()}
        params = [p for p in self.parameters() if p.requires_grad and id(p) not in rope]
        groups = [
            {"name": "decay", "params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
            {"name": "no_decay", "params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
        ]
        if rope:
            groups.append({"name": "rope", "params": self.rope_parameters(), "weight_decay": 0.0})
        return groups


@torch.no_grad()
def frequency_energy(model: GPT, idx: Tensor) -> dict:
    """How much each RoPE band carries of the attention logits on idx (paper A's frequency energy).

    Per head, the raw logit splits over bands, q_i . k_j = sum_m |q_im| |k_jm| cos(phi_ijm +
    (i - j) theta_m), with q_im, k_jm the band's pair before rotation. Band m's energy is its
    squared amplitude |q_im|^2 |k_jm|^2, averaged over batch, layers, heads and the causal
    pairs j <= i, then normalised to sum to 1 over bands (unrotated p-RoPE bands included:
    their term is constant in i - j). Returns ``energy`` and ``frequencies`` (the ones in use)
    per band; ``effective_frequency`` exp(sum_m E_m log theta_m), ``dominant_band`` (argmax E_m)
    and ``dominant_wavelength`` 2pi / theta_dominant, all over the rotated bands, E renormalised.
    """
    n = model.config.n_bands
    T = idx.shape[1]
    energy = torch.zeros(n, dtype=torch.float64, device=idx.device)

    def record(attn: CausalSelfAttention, args: tuple) -> None:
        q, k, _ = attn.heads(args[0])
        qn = (q[..., :n] ** 2 + q[..., n:] ** 2).double()
        kn = (k[..., :n] ** 2 + k[..., n:] ** 2).double()
        pairs = (qn * kn.cumsum(dim=2)).sum(dim=(0, 1, 2))  # sum over i of |q_i|^2 sum_{j<=i} |k_j|^2
        energy.add_(pairs / (qn.shape[0] * qn.shape[1] * T * (T + 1) / 2))

    was_training = model.training
    model.eval()
    hooks = [block.attn.register_forward_pre_hook(record) for block in model.blocks]
    try:
        model(idx)
    finally:
        for hook in hooks:
            hook.remove()
        model.train(was_training)
    energy = (energy / energy.sum()).cpu().numpy()
    theta = model.rotary.frequencies().detach().double().cpu().numpy()
    r = model.config.n_rotated  # the rotated bands are the fastest r
    e = energy[:r] / energy[:r].sum()
    dominant = int(np.argmax(e))
    return {
        "energy": energy,
        "frequencies": theta,
        "effective_frequency": float(np.exp(np.sum(e * np.log(theta[:r])))),
        "dominant_band": dominant,
        "dominant_wavelength": float(2 * np.pi / theta[dominant]),
    }


def frequency_pull(model: GPT, idx: Tensor, targets: Tensor, grid: Tensor) -> dict:
    """Paper B's view of where each band's frequency is drawn, from one batch (e.g. at initialisation).

    With g_ij the gradient of the loss on the attention logit s_ij and q~, k~ a band's pair as a
    complex number before rotation, G_m(D) = sum over i - j = D of g_ij q~_im conj(k~_jm) / sqrt(d),
    and P_m(theta) = Re sum_D G_m(D) e^(i D theta): to first order in the logits, the loss with band
    m's frequency set to theta, minus a constant (so dP_m/dtheta at theta_m is the gradient on
    theta_m). ``pull`` = P_m(theta_m) - min over ``grid`` of P_m; ``best_frequency`` the argmin;
    ``curves`` P_m on the grid; summed over layers and heads; ``loss`` the batch's loss.
    """
    attns = [block.attn for block in model.blocks]
    for attn in attns:
        attn.record = []
    was_training = model.training
    model.eval()
    try:
        model.zero_grad(set_to_none=True)
        _, loss = model(idx, targets)
        loss.backward()
        n, T = model.config.n_bands, idx.shape[1]
        G = torch.zeros(T, n, dtype=torch.complex128, device=idx.device)
        for attn in attns:
            for scores, q, k in attn.record:
                g = scores.grad.double()
                qc = torch.complex(q[..., :n].double(), q[..., n:].double())
                kc = torch.complex(k[..., :n].double(), k[..., n:].double())
                for d in range(T):
                    diag = torch.diagonal(g, offset=-d, dim1=-2, dim2=-1)  # g[i, i - d], i = d .. T - 1
                    G[d] += (diag[..., None] * qc[:, :, d:] * kc[:, :, :T - d].conj()).sum(dim=(0, 1, 2))
        G /= math.sqrt(model.config.head_dim)
    finally:
        for attn in attns:
            attn.record = None
        model.zero_grad(set_to_none=True)
        model.train(was_training)
    D = torch.arange(T, dtype=torch.float64, device=idx.device)
    theta = model.rotary.frequencies().detach().double()

    def P(freqs: Tensor) -> Tensor:  # (len(freqs), n): P_m at each frequency
        return (G[None] * torch.exp(1j * D[None, :, None] * freqs[:, None, None])).real.sum(dim=1)

    curves = P(grid.double().to(idx.device))
    at_own = P(theta).diagonal()
    slope = (G * (1j * D[:, None]) * torch.exp(1j * D[:, None] * theta[None])).real.sum(dim=0)
    best = grid.double().to(idx.device)[curves.argmin(dim=0)]
    return {"loss": float(loss.detach()), "pull": (at_own - curves.min(dim=0).values).cpu().numpy(),
            "best_frequency": best.cpu().numpy(),
            "slope": slope.cpu().numpy(), "curves": curves.cpu().numpy(), "frequencies": theta.cpu().numpy()}
