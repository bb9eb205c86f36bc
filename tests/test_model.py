"""The small RoPE transformer: rotation, LeRoPE, context scaling, frequency energy, training."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from depstat.analysis.recommend import frequencies  # noqa: E402
from depstat.errors import DepstatError  # noqa: E402
from depstat.validate.model import (  # noqa: E402
    GPT,
    ModelConfig,
    Rotary,
    Scaling,
    apply_rotary,
    frequency_energy,
    scaled_frequencies,
)


def tiny(**kw) -> ModelConfig:
    """A model small enough to run in milliseconds."""
    return ModelConfig(**{"vocab_size": 11, "n_layer": 2, "n_head": 2, "d_model": 16, "block_size": 32, **kw})


def rotation_matrix(theta: np.ndarray, position: int) -> np.ndarray:
    """Block-diagonal rotation of the pairs (m, m + d/2) by position * theta_m, in float64."""
    n = len(theta)
    r = np.zeros((2 * n, 2 * n))
    for m, t in enumerate(theta):
        c, s = math.cos(position * t), math.sin(position * t)
        r[m, m], r[m, m + n], r[m + n, m], r[m + n, m + n] = c, -s, s, c
    return r


@pytest.mark.parametrize("base", [10000.0, 500.0, 1e6])
@pytest.mark.parametrize("head_dim", [2, 8, 64])
def test_frequencies_match_recommend(base, head_dim):
    rotary = Rotary(ModelConfig(vocab_size=3, n_head=1, d_model=head_dim, rope_base=base))
    expected = torch.tensor(frequencies(base, head_dim), dtype=torch.float32)
    assert torch.equal(rotary.frequencies(), expected)


@pytest.mark.parametrize("base,head_dim", [(10000.0, 8), (500.0, 16), (1e6, 32)])
def test_rope_is_the_block_rotation(base, head_dim):
    rotary = Rotary(ModelConfig(vocab_size=3, n_head=1, d_model=head_dim, rope_base=base))
    positions = [0, 1, 2, 7, 63, 500]
    cos, sin = rotary(max(positions) + 1)
    x = torch.randn(len(positions), head_dim, generator=torch.Generator().manual_seed(0))
    got = apply_rotary(x, cos[positions], sin[positions]).numpy()
    theta = rotary.frequencies().double().numpy()
    for row, pos in enumerate(positions):
        np.testing.assert_allclose(got[row], rotation_matrix(theta, pos) @ x[row].double().numpy(),
                                   rtol=1e-5, atol=1e-4)


def test_attention_uses_the_rotation():
    torch.manual_seed(0)
    model = GPT(tiny())
    attn = model.blocks[0].attn
    x = torch.randn(1, 9, 16)
    cos, sin = model.rotary(9)
    q, k, v = (t.detach().double().numpy()[0] for t in attn.heads(x))  # (H, T, d)
    theta = model.rotary.frequencies().double().numpy()
    rot = [rotation_matrix(theta, t) for t in range(9)]
    out = np.zeros((9, 2, 8))
    for h in range(2):
        qr = np.stack([rot[t] @ q[h, t] for t in range(9)])
        kr = np.stack([rot[t] @ k[h, t] for t in range(9)])
        logits = qr @ kr.T / math.sqrt(8) + np.triu(np.full((9, 9), -np.inf), 1)
        w = np.exp(logits - logits.max(axis=1, keepdims=True))
        out[:, h] = (w / w.sum(axis=1, keepdims=True)) @ v[h]
    expected = out.reshape(9, 16) @ attn.proj.weight.double().detach().numpy().T
    np.testing.assert_allclose(attn(x, cos, sin)[0].detach().numpy(), expected, atol=1e-6)


def test_p_rope_leaves_the_slowest_bands_alone():
    config = ModelConfig(vocab_size=3, n_head=1, d_model=16, rope_fraction=0.75)
    assert config.n_rotated == 6
    cos, sin = Rotary(config)(40)
    x = torch.randn(40, 16)
    y = apply_rotary(x, cos, sin)
    still = [6, 7, 14, 15]  # bands 6 and 7: pairs (6, 14) and (7, 15)
    assert torch.equal(y[:, still], x[:, still])
    moved = [5, 13]
    assert not torch.allclose(y[1:, moved], x[1:, moved])


def test_logits_depend_only_on_relative_position():
    rotary = Rotary(ModelConfig(vocab_size=3, n_head=1, d_model=16, rope_base=100.0))
    cos, sin = rotary(80)
    gen = torch.Generator().manual_seed(1)
    q, k = torch.randn(16, generator=gen), torch.randn(16, generator=gen)
    qs = apply_rotary(q.expand(80, 16), cos, sin)
    ks = apply_rotary(k.expand(80, 16), cos, sin)
    logits = qs @ ks.T
    for shift in (1, 13, 40):
        torch.testing.assert_close(logits[shift:, shift:], logits[:-shift, :-shift], atol=1e-4, rtol=1e-5)


def test_lerope_at_zero_is_standard_rope():
    torch.manual_seed(0)
    standard = GPT(tiny())
    lerope = GPT(tiny(learnable_freqs=True))
    lerope.load_state_dict(standard.state_dict(), strict=False)
    idx = torch.randint(0, 11, (2, 20))
    assert torch.equal(lerope(idx)[0], standard(idx)[0])
    assert lerope.rope_parameters()[0].shape == (4,) and standard.rope_parameters() == []


def test_lerope_frequencies_follow_alpha_and_learn():
    torch.manual_seed(0)
    model = GPT(tiny(learnable_freqs=True))
    alpha = model.rope_parameters()[0]
    with torch.no_grad():
        alpha.copy_(torch.tensor([0.5, -1.0, 0.0, 2.0]))
    torch.testing.assert_close(model.rotary.frequencies(), alpha.exp() * model.rotary.theta, rtol=0, atol=0)
    idx = torch.randint(0, 11, (2, 20))
    model(idx, idx)[1].backward()
    assert alpha.grad is not None and bool((alpha.grad != 0).all())


def test_param_groups():
    model = GPT(tiny(learnable_freqs=True))
    groups = {g["name"]: g for g in model.param_groups(0.1)}
    assert groups["rope"]["params"] == model.rope_parameters() and groups["rope"]["weight_decay"] == 0.0
    assert groups["decay"]["weight_decay"] == 0.1 and groups["no_decay"]["weight_decay"] == 0.0
    assert all(p.dim() == 2 for p in groups["decay"]["params"])
    assert any(p is model.ln_f.weight for p in groups["no_decay"]["params"])
    grouped = [id(p) for g in groups.values() for p in g["params"]]
    assert sorted(grouped) == sorted(id(p) for p in model.parameters())
    torch.optim.AdamW(model.param_groups(0.1), lr=1e-3)  # accepted as is
    assert [g["name"] for g in GPT(tiny()).param_groups(0.1)] == ["decay", "no_decay"]


THETA = torch.tensor(frequencies(10000.0, 64))  # float64


def test_scaling_none_pi_ntk():
    theta, factor = scaled_frequencies(THETA, "none", 4.0, 256)
    assert torch.equal(theta, THETA) and factor == 1.0
    theta, factor = scaled_frequencies(THETA, "pi", 4.0, 256)
    torch.testing.assert_close(theta, THETA / 4, rtol=1e-15, atol=0)
    assert factor == 1.0
    theta, factor = scaled_frequencies(THETA, "ntk", 4.0, 256)
    expected = frequencies(10000.0 * 4.0 ** (64 / 62), 64)
    np.testing.assert_allclose(theta.numpy(), expected, rtol=1e-12)
    assert factor == 1.0 and theta[0] == THETA[0]


def test_scaling_yarn():
    s, length = 4.0, 256
    theta, factor = scaled_frequencies(THETA, "yarn", s, length)
    turns = (length * THETA / (2 * math.pi)).numpy()
    fast, slow = turns > 32, turns < 1
    ramp = ~fast & ~slow
    assert fast.sum() > 0 and slow.sum() > 0 and ramp.sum() > 0
    assert torch.equal(theta[fast], THETA[fast])
    torch.testing.assert_close(theta[slow], THETA[slow] / s, rtol=1e-15, atol=0)
    gamma = (turns[ramp] - 1) / 31
    expected = THETA[ramp].numpy() * ((1 - gamma) / s + gamma)
    np.testing.assert_allclose(theta[ramp].numpy(), expected, rtol=1e-12)
    assert factor == pytest.approx(0.1 * math.log(4) + 1)
    assert scaled_frequencies(THETA, "yarn", 1.0, length)[1] == 1.0
    with pytest.raises(DepstatError, match="unknown scaling"):
        scaled_frequencies(THETA, "longrope", s, length)


def test_model_applies_scaling():
    rotary = Rotary(tiny())
    cos, sin = rotary(64, Scaling("yarn", 4.0))  # original length defaults to block_size = 32
    torch.testing.assert_close(cos**2 + sin**2, torch.full_like(cos, (0.1 * math.log(4) + 1) ** 2))
    theta, _ = scaled_frequencies(rotary.frequencies(), "yarn", 4.0, 32)
    torch.testing.assert_close(sin[1, :4] / cos[1, :4], torch.tan(theta))
    cos_pi, _ = rotary(64, Scaling("pi", 2.0))
    torch.testing.assert_close(cos_pi[2], rotary(64)[0][1])  # position 2 under PI by 2 = position 1


def band_model(amplitudes: dict[int, tuple[float, float]]) -> GPT:
    """1 layer, 1 head of 8 dims (4 bands); band m has q = a (u0, u1), k = b (u0, u1), 0 elsewhere."""
    torch.manual_seed(0)
    model = GPT(ModelConfig(vocab_size=11, n_layer=1, n_head=1, d_model=8, block_size=16))
    w = torch.zeros(24, 8)
    for m, (a, b) in amplitudes.items():
        w[m, 0], w[m + 4, 1] = a, a  # q rows
        w[8 + m, 0], w[8 + m + 4, 1] = b, b  # k rows
    with torch.no_grad():
        model.blocks[0].attn.qkv.weight.copy_(w)
    return model


def test_energy_single_band():
    model = band_model({2: (1.0, 1.0)})
    result = frequency_energy(model, torch.randint(0, 11, (3, 16)))
    np.testing.assert_array_equal(result["energy"], [0, 0, 1, 0])
    theta = model.rotary.frequencies().double().numpy()
    assert result["dominant_band"] == 2
    assert result["effective_frequency"] == pytest.approx(theta[2], rel=1e-12)
    assert result["dominant_wavelength"] == pytest.approx(2 * math.pi / theta[2], rel=1e-12)


def test_energy_two_bands_in_squared_amplitude_ratio():
    model = band_model({0: (1.0, 1.0), 3: (2.0, 0.5 * 3)})  # (a b)^2: 1 and 9
    result = frequency_energy(model, torch.randint(0, 11, (3, 16)))
    np.testing.assert_allclose(result["energy"], [0.1, 0, 0, 0.9], atol=1e-12)
    theta = result["frequencies"]
    assert result["dominant_band"] == 3
    expected = math.exp(0.1 * math.log(theta[0]) + 0.9 * math.log(theta[3]))
    assert result["effective_frequency"] == pytest.approx(expected)


def test_energy_is_the_mean_over_causal_pairs():
    torch.manual_seed(0)
    model = GPT(tiny(n_layer=1))
    idx = torch.randint(0, 11, (2, 12))
    attn = model.blocks[0].attn
    q, k, _ = attn.heads(model.blocks[0].ln_1(model.tok_emb(idx)))
    qn = (q[..., :4] ** 2 + q[..., 4:] ** 2).double()  # (B, H, T, bands)
    kn = (k[..., :4] ** 2 + k[..., 4:] ** 2).double()
    causal = torch.tril(torch.ones(12, 12, dtype=torch.bool))
    pairs = qn[:, :, :, None, :] * kn[:, :, None, :, :]  # (B, H, i, j, bands)
    expected = pairs[:, :, causal].mean(dim=(0, 1, 2)).detach()
    result = frequency_energy(model, idx)
    np.testing.assert_allclose(result["energy"], (expected / expected.sum()).numpy(), rtol=1e-6)
    assert model.training  # restored


def test_causal_and_deterministic():
    torch.manual_seed(0)
    model = GPT(tiny())
    torch.manual_seed(0)
    again = GPT(tiny())
    idx = torch.randint(0, 11, (1, 24))
    logits = model(idx)[0]
    assert torch.equal(logits, again(idx)[0])
    changed = idx.clone()
    changed[0, 10:] = (changed[0, 10:] + 1) % 11
    other = model(changed)[0]
    torch.testing.assert_close(other[:, :10], logits[:, :10], rtol=0, atol=1e-6)
    assert not torch.allclose(other[:, 10:], logits[:, 10:])


def test_model_trains_on_a_repetitive_sequence():
    torch.manual_seed(0)
    model = GPT(tiny(learnable_freqs=True))
    seq = torch.arange(33).remainder(5)[None]  # 0 1 2 3 4 0 1 2 ...
    x, y = seq[:, :-1], seq[:, 1:]
    opt = torch.optim.AdamW(model.param_groups(0.1), lr=1e-2)
    losses = []
    for _ in range(30):
        loss = model(x, y)[1]
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.rope_parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.2 * losses[0]


def test_config_checks():
    with pytest.raises(DepstatError, match="even size"):
        ModelConfig(vocab_size=3, n_head=2, d_model=6)
    with pytest.raises(DepstatError, match="at least one band"):
        ModelConfig(vocab_size=3, n_head=1, d_model=8, rope_fraction=0.1)


def test_frequency_pull_slope_is_the_gradient_on_each_frequency():
    """dP_m/dtheta at theta_m must equal d loss / d theta_m, which LeRoPE's alpha gradient gives (alpha = 0)."""
    from depstat.validate.model import frequency_pull

    torch.manual_seed(0)
    model = GPT(ModelConfig(vocab_size=11, n_layer=2, n_head=2, d_model=16, block_size=24, learnable_freqs=True))
    idx = torch.randint(0, 11, (3, 24))
    targets = torch.roll(idx, -1, dims=1)
    _, loss = model(idx, targets)
    loss.backward()
    expected = (model.rotary.alpha.grad / model.rotary.frequencies()).detach().double().numpy()
    grid = torch.linspace(0.01, 3.0, 50)
    out = frequency_pull(model, idx, targets, grid)
    np.testing.assert_allclose(out["slope"], expected, rtol=1e-4, atol=1e-9)
    assert out["curves"].shape == (50, 4) and np.all(out["pull"] >= -1e-12)
    assert model.blocks[0].attn.record is None and model.rotary.alpha.grad is None  # left as found
    assert out["loss"] == pytest.approx(float(loss.detach()), rel=1e-5)  # the written-out attention is the same
