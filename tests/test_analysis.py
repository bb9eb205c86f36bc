"""Kernel width, decay fits, self-similarity verdicts and RoPE recommendations."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import numpy as np
import pytest

import depstat
from depstat.analysis import Settings, attach
from depstat.cli import main
from depstat.dependency import Width, curvature, fit_decay, kernel_width, preferred_model
from depstat.errors import DepstatError
from depstat.profile import mi_profile
from depstat.recommend import base_for, frequencies, men_lower_bound, recommend
from depstat.synth import arithmetic_jsonl, block_exact_mi, block_sequences, markov_text, write_jsonl

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "python-docs.jsonl.gz"
L = 1024
DENSE = np.unique(np.round(np.logspace(0, np.log10(L), 80)).astype(int))
BLOCKS = [4, 8, 16, 32, 64]


def _slope(x: list[float], y: list[float]) -> float:
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def test_width_of_exact_block_kernels_is_proportional_to_block_size() -> None:
    widths = []
    for b in BLOCKS:
        mi = block_exact_mi(b, DENSE, vocab=64, states=8)
        widths.append(kernel_width(DENSE, mi, np.zeros_like(mi), mi > 0, L).W)
    assert 0.95 <= _slope(BLOCKS, widths) <= 1.05
    assert all(0.9 <= w / b <= 1.1 for w, b in zip(widths, BLOCKS))


@pytest.mark.slow
def test_width_of_estimated_block_profiles_tracks_block_size() -> None:
    """W from sampled sequences (not exact MI) over a 16x range of B."""
    widths, intervals = [], []
    for b in BLOCKS:
        table, _ = mi_profile(block_sequences(200, 2048, b, vocab=64, states=8, seed=b), DENSE)
        o, m, se, sig = (table[c].to_numpy() for c in ("offset", "mi_bits", "se", "significant"))
        w = kernel_width(o, m, se, sig, L)
        widths.append(w.W)
        intervals.append((w.ci_low, w.ci_high))
    assert 0.9 <= _slope(BLOCKS, widths) <= 1.1
    assert all(0.8 <= w / b <= 1.25 for w, b in zip(widths, BLOCKS))
    assert all(lo <= w <= hi for w, (lo, hi) in zip(widths, intervals))


def test_width_needs_a_profile_reaching_the_training_length() -> None:
    o = np.array([1, 2, 4, 8])
    with pytest.raises(DepstatError, match="short of the training length"):
        kernel_width(o, np.ones(4), np.zeros(4), np.ones(4, bool), 2048)
    with pytest.raises(DepstatError, match="unknown width"):
        kernel_width(o, np.ones(4), np.zeros(4), np.ones(4, bool), 8, "q77")


def test_decay_fits_recover_known_power_law_and_exponential() -> None:
    r = np.unique(np.round(np.logspace(0, 3, 25))).astype(float)
    rng = np.random.default_rng(0)
    power = 0.5 * r**-0.7 * np.exp(rng.normal(0, 0.01, r.size))
    fits = fit_decay(r, power, 0.01 * power)
    assert preferred_model(fits) == "power"
    assert fits["power"].parameter == pytest.approx(0.7, abs=0.01)
    assert fits["power"].ci_low <= 0.7 <= fits["power"].ci_high
    r2 = r[r < 150]
    expo = 2.0 * np.exp(-r2 / 20) * np.exp(rng.normal(0, 0.01, r2.size))
    fits = fit_decay(r2, expo, 0.01 * expo)
    assert preferred_model(fits) == "exponential"
    assert fits["exponential"].parameter == pytest.approx(20, rel=0.02)
    c, lo, hi = curvature(r2, np.log(expo), np.full(r2.size, 0.01))
    assert hi < 0  # the exponential bends down on log-log axes
    c, lo, hi = curvature(r, np.log(power), np.full(r.size, 0.01))
    assert lo <= 0 <= hi


@pytest.fixture(scope="module")
def corpora(tmp_path_factory: pytest.TempPathFactory) -> dict[str, depstat.Profile]:
    """Natural text (bundled example), Markov text and arithmetic, profiled at three granularities."""
    d = tmp_path_factory.mktemp("kinds")
    arithmetic_jsonl(d / "arith.jsonl", 150, seed=1)
    write_jsonl(d / "markov.jsonl", markov_text(150, 4096, seed=1))
    natural = d / "natural.jsonl"
    with gzip.open(EXAMPLE, "rt", encoding="utf-8") as f:
        natural.write_text(f.read(), encoding="utf-8")
    out = {}
    for name, path in (("natural", natural), ("markov", d / "markov.jsonl"), ("arith", d / "arith.jsonl")):
        p = depstat.profile(str(path), granularities=["bytes", "bpe-1k", "words"], max_offset=L)
        out[name] = attach(p, Settings(head_dim=64, train_length=L, target_length=4 * L))
    return out


@pytest.mark.parametrize(
    ("kind", "verdict"), [("natural", "self-similar"), ("markov", "not self-similar"), ("arith", "not self-similar")]
)
def test_verdicts_on_sources_of_known_type(corpora: dict, kind: str, verdict: str) -> None:
    ss = corpora[kind].analysis["self_similarity"]
    assert ss["verdict"] == verdict, ss["reasons"]


def test_recommendation_follows_the_verdict(corpora: dict) -> None:
    pi = corpora["natural"].analysis["recommendation"]
    assert pi["rope_scaling"] == {"rope_type": "linear", "factor": 4.0}
    yarn = corpora["arith"].analysis["recommendation"]
    assert yarn["rope_scaling"]["rope_type"] == "yarn"
    assert yarn["rope_scaling"]["original_max_position_embeddings"] == L
    assert "PI" in yarn["extension"]["why"]


def test_markov_text_width_is_short_and_text_width_is_long(corpora: dict) -> None:
    """The byte-level Markov chain forgets within ~100 characters; text keeps information to L."""
    w_markov = corpora["markov"].analysis["W"]["bytes"]["W"]
    w_text = corpora["natural"].analysis["W"]["bytes"]["W"]
    assert w_markov < 100 < 0.5 * L < w_text


def test_base_puts_the_slowest_band_margin_below_theta_star() -> None:
    theta_star = math.pi / 300
    b = base_for(theta_star, 64, 2.0)
    assert frequencies(b, 64)[-1] == pytest.approx(theta_star / 2.0, rel=1e-12)


def test_men_bound_is_the_smallest_base_keeping_the_cosine_sum_nonnegative() -> None:
    r = np.arange(1, 2049)
    bound = men_lower_bound(128, 2048)

    def min_sum(base: float) -> float:
        return float(sum(np.cos(r * t) for t in frequencies(base, 128)).min())

    assert min_sum(bound) >= 0 > min_sum(0.97 * bound)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"head_dim": 63}, "even"),
        ({"target_length": 100}, "shorter than the training length"),
    ],
)
def test_bad_recommendation_parameters(kwargs: dict, message: str) -> None:
    w = Width(200.0, 150.0, 250.0, "q90", 1024)
    args = {"head_dim": 64, "train_length": 1024, **kwargs}
    with pytest.raises(DepstatError, match=message):
        recommend(w, "self-similar", **args)


def test_cli_profile_writes_analysis_and_commands_reuse_it(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "m.jsonl"
    write_jsonl(path, markov_text(60, 3000, seed=2))
    out = tmp_path / "out"
    rc = main(["profile", str(path), "-g", "bytes", "-g", "bpe-512", "--max-offset", "512",
               "--head-dim", "64", "--target-length", "2048", "--out", str(out), "--report"])
    assert rc == 0
    assert (out / "report.html").read_text().count("data:image/png;base64,") == 5
    assert (out / "report.md").is_file() and (out / "figures" / "kernel.png").is_file()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["self_similarity"]["verdict"] == "not self-similar"
    assert summary["recommendation"]["rope_scaling"]["rope_type"] == "yarn"
    assert summary["W"]["bytes"]["training_length"] == 512
    assert summary["recommendation"]["rope_theta"] > 0
    capsys.readouterr()
    assert main(["recommend", str(out), "--head-dim", "64", "--format", "json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["rope_theta"] == pytest.approx(summary["recommendation"]["rope_theta"])
    assert main(["selfsim", str(out)]) == 0
    assert "not self-similar" in capsys.readouterr().out
    assert main(["recommend", str(out), "--head-dim", "63"]) == 2
    assert "even" in capsys.readouterr().err
    assert main(["recommend", str(out), "--train-length", "4096"]) == 2
    assert "--max-offset 4096" in capsys.readouterr().err
