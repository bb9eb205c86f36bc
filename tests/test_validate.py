"""depstat validate: the trainer's pieces, the fits, the run store, and each experiment's quick mode end to end."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from depstat import validate  # noqa: E402
from depstat.cli import main  # noqa: E402
from depstat.errors import DepstatError  # noqa: E402
from depstat.validate.base_sweep import bases_to_try, decisions  # noqa: E402
from depstat.validate.common import (  # noqa: E402
    Options,
    RunStore,
    bpe_tokens,
    fit_frequency_law,
    text_bytes,
)
from depstat.validate.frequency_law import width_for_block  # noqa: E402
from depstat.validate.model import GPT, ModelConfig  # noqa: E402
from depstat.validate.pi import arithmetic_masks, scalings, window_task  # noqa: E402
from depstat.validate.train import (  # noqa: E402
    TrainConfig,
    evaluate,
    lr_at,
    pick_device,
    random_batch,
    train,
)

ROOT = Path(__file__).resolve().parents[1]


# The trainer


def test_schedule_warms_up_then_decays_to_the_floor():
    cfg = TrainConfig(steps=100, warmup=10, lr=1e-2, min_lr_ratio=0.1)
    lrs = np.array([lr_at(s, cfg) for s in range(cfg.steps)])
    np.testing.assert_allclose(lrs[:10], 1e-2 * np.arange(1, 11) / 10)
    assert lrs[9] == pytest.approx(1e-2) and lrs[-1] == pytest.approx(1e-3)
    assert np.all(np.diff(lrs[10:]) <= 1e-15)  # non-increasing after the warmup
    assert lr_at(55, cfg) == pytest.approx(1e-3 + 0.5 * 9e-3 * (1 + math.cos(math.pi * 45 / 89)))


def test_schedule_without_warmup_starts_at_the_peak():
    cfg = TrainConfig(steps=5, warmup=0, lr=1.0, min_lr_ratio=0.0)
    assert [lr_at(s, cfg) for s in (0, 4)] == [pytest.approx(1.0), pytest.approx(0.0)]


@pytest.mark.parametrize("kw,match", [
    ({"steps": 0}, "positive"), ({"warmup": 300}, "warmup"), ({"lr": 0}, "lr > 0"), ({"min_lr_ratio": 2}, "min_lr_ratio"),
])
def test_train_config_rejects_bad_values(kw, match):
    with pytest.raises(DepstatError, match=match):
        TrainConfig(**kw)


def test_device_choice():
    assert pick_device("cpu").type == "cpu"
    assert pick_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(DepstatError, match="unknown device"):
        pick_device("tpu")


def test_batches_are_seeded_windows_with_shifted_targets():
    tokens = np.arange(100)
    x, y = random_batch(tokens, 8, 4, np.random.default_rng(0), torch.device("cpu"))
    x2, _ = random_batch(tokens, 8, 4, np.random.default_rng(0), torch.device("cpu"))
    assert x.shape == (4, 8) and torch.equal(x, x2) and torch.equal(y, x + 1)


def test_training_learns_and_is_reproducible():
    tokens = np.tile(np.arange(7), 400)  # period 7: next token fully determined by position in the cycle
    cfg = TrainConfig(steps=40, warmup=4, batch_size=8, lr=1e-2, eval_batches=1)

    def fit() -> tuple[float, float]:
        torch.manual_seed(0)
        model = GPT(ModelConfig(vocab_size=7, n_layer=1, n_head=2, d_model=16, block_size=16))
        res = train(model, tokens, tokens, cfg)
        assert res.tokens_per_second > 0 and len(res.train_loss) == 20
        return res.train_loss[0], res.val_loss

    first, val = fit()
    assert val < 0.2 * first
    assert fit()[1] == val  # same seed, same data order: the same model


def test_fit_calls_back_after_every_step():
    from depstat.validate.train import fit

    model = GPT(ModelConfig(vocab_size=7, n_layer=1, n_head=1, d_model=16, block_size=8))
    x = torch.zeros(2, 8, dtype=torch.long)
    seen = []
    fit(model, lambda rng: (x, x), TrainConfig(steps=5, warmup=1, min_lr_ratio=1.0), "t", torch.device("cpu"),
        after_step=seen.append)
    assert seen == [1, 2, 3, 4, 5]


def test_evaluate_counts_only_masked_targets():
    torch.manual_seed(0)
    model = GPT(ModelConfig(vocab_size=5, n_layer=1, n_head=1, d_model=8, block_size=8))
    tokens = np.random.default_rng(0).integers(0, 5, 64)
    full = evaluate(model, tokens, 8, 4)
    assert full["n_targets"] == 32 and math.isclose(full["perplexity"], math.exp(full["loss"]))
    mask = np.zeros(64, dtype=bool)
    mask[::2] = True
    part = evaluate(model, tokens, 8, 4, mask=mask)
    assert part["n_targets"] == 16
    none = evaluate(model, tokens, 8, 4, mask=np.zeros(64, dtype=bool))
    assert none["n_targets"] == 0 and math.isnan(none["loss"])
    with pytest.raises(DepstatError, match="fewer than one window"):
        evaluate(model, tokens[:5], 8, 1)


# Fits and decisions


def test_fit_recovers_an_exact_law():
    W = np.repeat(np.geomspace(4, 64, 5), 2)
    fit = fit_frequency_law(W, 3.02 / W)
    assert fit["slope"] == pytest.approx(-1.0) and fit["c"] == pytest.approx(3.02)
    assert fit["c_free"] == pytest.approx(3.02) and fit["r2"] == pytest.approx(1.0)
    assert fit["slope_ci"][0] == pytest.approx(-1.0) and fit["c_ci"][1] == pytest.approx(3.02)


def test_fit_recovers_a_noisy_law_inside_its_intervals():
    rng = np.random.default_rng(1)
    W = np.repeat(np.geomspace(4, 64, 5), 4)
    theta = 2.0 * W ** -0.7 * np.exp(0.05 * rng.standard_normal(W.size))
    fit = fit_frequency_law(W, theta)
    assert fit["slope_ci"][0] < -0.7 < fit["slope_ci"][1] and fit["slope_ci"][1] < -0.6
    assert fit["c_free"] == pytest.approx(2.0, rel=0.15)
    assert fit["c_ci"][0] < fit["c"] < fit["c_ci"][1]


def test_reproduction_needs_informative_intervals():
    from depstat.validate.frequency_law import reproduction

    assert reproduction({"slope": -1.0, "slope_ci": [-1.1, -0.9], "c_ci": [2.8, 3.3]}) is True
    assert reproduction({"slope": -0.9, "slope_ci": [-1.1, -0.7], "c_ci": [1.2, 1.7]}) is False  # c excludes 3.02
    assert reproduction({"slope": -0.5, "slope_ci": [-1.9, 1.0], "c_ci": [0.7, 6.6]}) is None  # a quick run


def test_fit_needs_two_widths():
    with pytest.raises(DepstatError, match="two or more distinct W"):
        fit_frequency_law(np.array([8.0, 8.0]), np.array([0.3, 0.4]))


def test_task_width_is_proportional_to_the_block_length():
    widths = [width_for_block(block)["W"] for block in (4, 16, 64)]
    assert all(3 <= b / a <= 5.3 for a, b in zip(widths, widths[1:])), widths


def test_window_targets_are_the_majority_of_the_last_block():
    from depstat.synth import window_task

    x, y = window_task(np.random.default_rng(0), 50, 40, 5)
    for i in range(50):
        for t in range(40):
            if t < 4:
                assert y[i, t] == -100
            else:
                counts = np.bincount(x[i, t - 4:t + 1], minlength=8)
                assert y[i, t] == int(np.argmax(counts))


def test_bases_span_the_data_bound_and_the_habits():
    bases = bases_to_try(1200.0, 6.0)
    assert bases["10000"] == 1e4 and bases["1e6"] == 1e6 and bases["tenth"] == pytest.approx(120.0)
    assert bases["half_from_data"] == pytest.approx(3.0) and bases["from_data"] == 6.0 < bases["recommended"]


def test_base_decisions_read_the_paired_intervals():
    paired = {"recommended": {"ci": [0.0, 0.0]}, "tenth": {"ci": [-0.008, -0.005]},
              "half_from_data": {"ci": [0.29, 0.47]}}
    assert decisions(paired, "tenth") == {"recommended_within_noise": False, "too_low_worse": True,
                                          "tenth_worse": False}  # a better base, clearly: not within noise
    paired["tenth"]["ci"] = [-0.008, 0.001]
    assert decisions(paired, "tenth")["recommended_within_noise"]
    assert decisions(paired, "recommended")["recommended_within_noise"]


def test_yarn_is_evaluated_with_the_betas_depstat_advises():
    s = scalings({"data": {"beta_fast": 3.5, "beta_slow": 0.8}})["data"]
    assert (s["yarn"].method, s["yarn"].beta_fast, s["yarn"].beta_slow) == ("yarn", 3.5, 0.8)
    assert s["pi"].method == "pi" and s["pi"].factor == 4.0 and s["none"].method == "none"
    assert (s["yarn-default"].beta_fast, s["yarn-default"].beta_slow) == (32.0, 1.0)


def test_options_pick_the_setting():
    assert Options(out=Path(".")).setting == "full" and Options(out=Path("."), scale="paper").setting == "paper"
    assert Options(out=Path("."), quick=True, scale="paper").setting == "quick"
    with pytest.raises(DepstatError, match="unknown scale"):
        Options(out=Path("."), scale="tpu").setting


def test_bpe_tokens_round_trip_and_end_documents(tmp_path):
    from tokenizers import Tokenizer

    docs = ["the cat sat on the mat", "a dog and a cat", "the end"]
    train_ids, val_ids, vocab = bpe_tokens(docs[:2], docs[2:], 300, tmp_path / "tok.json")
    sep = vocab - 1
    assert train_ids.max() == sep and (train_ids == sep).sum() == 2 and val_ids[-1] == sep
    tok = Tokenizer.from_file(str(tmp_path / "tok.json"))
    assert tok.decode(val_ids[:-1].tolist()) == "the end"


def test_arithmetic_masks_mark_names_and_answers():
    texts = ["Let ab = 7. Let c = ab * 3. What is c? Answer: 21.", "Let x = 1. Let y = x - x. What is y? Answer: 0."]
    tokens = text_bytes(texts)
    masks = arithmetic_masks(texts)
    assert masks["copy"].shape == tokens.shape
    as_text = lambda m: bytes(tokens[m].astype(np.uint8)).decode()  # noqa: E731
    assert as_text(masks["copy"]) == "abcxy" and as_text(masks["answer"]) == "210"


def test_run_store_reuses_finished_runs_and_reruns_on_a_new_spec(tmp_path):
    calls = []

    def job() -> dict:
        calls.append(1)
        return {"loss": float(len(calls)), "array": np.arange(2)}

    store = RunStore(tmp_path)
    assert store.get("a", {"x": 1}, job)["loss"] == 1.0
    assert RunStore(tmp_path).get("a", {"x": 1}, job) == {"loss": 1.0, "array": [0, 1], "wall_seconds": pytest.approx(0, abs=1)}
    assert len(calls) == 1
    again = RunStore(tmp_path)
    assert again.get("a", {"x": 2}, job)["loss"] == 2.0 and again.counts() == {"trained": 1, "reused": 0}
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["a.json"]  # no temporary file left


def test_run_rejects_bad_names_and_paths(tmp_path):
    with pytest.raises(DepstatError, match="unknown experiment"):
        validate.run("nope", tmp_path)
    with pytest.raises(DepstatError, match="no such corpus"):
        validate.run("lerope", tmp_path, corpus=tmp_path / "missing.jsonl")
    with pytest.raises(DepstatError, match="seeds"):
        validate.run("frequency-law", tmp_path, quick=True, seeds=0)
    with pytest.raises(DepstatError, match="an option of the pi experiment"):
        validate.run("base-sweep", tmp_path, quick=True, window_block=8)


def test_window_block_sets_the_pi_window_task(tmp_path, capsys):
    """--window-block B: the window task with block B, dilated to 4B or kept at B at 4L; B from 2 to L."""
    assert window_task(None)[0]["block"] == 16
    window, targets = window_task(8)
    assert window["block"] == 8 and window["length"] == 64 and targets == {"window, dilated": 32, "window, fixed": 8}
    for bad in ("1", "65"):
        assert main(["validate", "pi", "--quick", "--window-block", bad, "--out", str(tmp_path)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--window-block must be between 2 and the training length 64" in err[0], err


def test_load_refuses_what_is_not_a_finished_experiment(tmp_path):
    with pytest.raises(DepstatError, match="cannot read a finished experiment's result"):
        validate.load(tmp_path)
    (tmp_path / "result.json").write_text('{"experiment": "pi", "quick": true, "prediction": {}}')  # before any run
    with pytest.raises(DepstatError, match="not the result of a finished validation experiment"):
        validate.load(tmp_path)


def test_cli_without_torch_says_how_to_install(tmp_path):
    fake = tmp_path / "no_torch" / "torch"  # a torch that fails to import, first on the path
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError(\"No module named 'torch'\")\n")
    env = {**os.environ, "PYTHONPATH": str(fake.parent)}
    proc = subprocess.run([sys.executable, "-m", "depstat.cli", "validate", "pi", "--quick", "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, cwd=ROOT, env=env)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr
    assert "pip install torch==2.13.0 && pip install -e '.[validate]'" in proc.stderr


# The experiments, quick mode, through the CLI (in process: Numba compiles once)

KEYS = {
    "frequency-law": ["c", "c_ci", "slope", "slope_ci", "reproduces", "prediction", "per_block", "c_by_ratio"],
    "base-sweep": ["per_base", "recommended_within_noise", "too_low_worse", "paired_differences", "advice",
                   "prediction"],
    "pi": ["scorecard", "table", "predictions", "prediction"],
    "lerope": ["loss_delta_vs_rope", "dominant_wavelength_over_Ltrain", "frozen_gain_fraction", "yarn_at_4L",
               "learned_frequencies", "depstat", "prediction"],
}


@pytest.fixture(scope="module")
def quick(tmp_path_factory) -> dict:
    """Each experiment's quick run: its output directory, result and wall time."""
    out = {}
    for name in KEYS:
        d = tmp_path_factory.mktemp(name)
        start = time.perf_counter()
        assert main(["validate", name, "--quick", "--out", str(d), "--threads", "1"]) == 0
        out[name] = (d, json.loads((d / "result.json").read_text()), time.perf_counter() - start)
    return out


def _finite(value) -> bool:
    """Every number inside value is finite (intervals may be infinite only with one seed)."""
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return not isinstance(value, float) or math.isfinite(value)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(KEYS))
def test_quick_run_writes_result_and_figures(quick, name):
    d, result, seconds = quick[name]
    assert set(KEYS[name]) <= set(result) and result["quick"] is True
    assert result["run_counts"]["trained"] > 0 and result["tokens_per_second"] > 0
    assert all((d / f).is_file() and (d / f).stat().st_size > 1000 for f in result["figures"])
    assert _finite({k: result[k] for k in KEYS[name]})
    print(f"{name} quick: {seconds:.1f} s")


@pytest.mark.slow
def test_quick_results_make_sense(quick):
    fl = quick["frequency-law"][1]
    assert fl["slope_ci"][0] <= fl["slope"] <= fl["slope_ci"][1] and fl["c"] > 0
    assert [(r["block"], r["ratio"]) for r in fl["runs"]] == [(b, q) for q in (1.0, 2.0) for b in (4, 8, 16)]
    floors = fl["per_block"]["8"]["floors"]["2.0"]
    assert 0 < floors["current_token_only"] < floors["uniform"] and floors["whole_window"] == 0
    assert fl["prediction"]["slope"] == -1 and set(fl["c_by_ratio"]) == {"1.0", "2.0"}
    bs = quick["base-sweep"][1]
    assert set(bs["per_base"]) == {"recommended", "from_data", "half_from_data", "tenth", "10000", "1e6"}
    assert all(p["n"] == 2 for p in bs["per_base"].values())
    assert bs["per_base"]["recommended"]["base"] == pytest.approx(bs["advice"]["rope_theta"])
    assert bs["paired_differences"]["recommended"]["per_seed"] == [0.0, 0.0]
    pi = quick["pi"][1]
    assert [e["data"] for e in pi["scorecard"]] == ["window, dilated", "window, fixed", "natural text", "tree text",
                                                  "arithmetic"]
    for e in pi["scorecard"]:
        assert e["predicted_method"] in ("pi", "yarn")
        gap = e["depstat_minus_best"]
        assert gap[1] <= gap[0] <= gap[2] and gap[0] <= 1e-12  # nothing beats the best
        assert e["correct"] == (gap[2] >= 0) and (e["predicted_method"] != e["best_method"] or gap == [0, 0, 0])
    dilation = {e["data"]: e["dilation"] for e in pi["scorecard"]}
    assert dilation["window, dilated"] == "dilated" and dilation["window, fixed"] == "fixed"  # known answers
    assert set(pi["table"]["arithmetic"]["pi"]) == {"0", "5", "20"}
    assert 0 <= pi["table"]["arithmetic"]["pi"]["20"]["copy"]["accuracy"]["mean"] <= 1
    le = quick["lerope"][1]
    assert len(le["learned_frequencies"]) == 16 and le["dominant_wavelength_over_Ltrain"] > 0
    assert le["learned_frequencies"] != le["initial_frequencies"]  # LeRoPE's alphas moved
    assert le["advice"]["W"]["granularity"] == "bpe-model"  # depstat profiled the model's own tokenizer
    assert len(le["frozen_minus_rope"]["per_seed"]) == 2


@pytest.mark.slow
def test_summary_states_each_experiments_headline(quick):
    """``Result.summary``, as the CLI prints it: the run counts, then each experiment's own lines;
    ``validate.load`` gives back the typed result of a finished directory."""
    from depstat import validate

    loaded = {name: validate.load(d) for name, (d, _, _) in quick.items()}
    for name, result in loaded.items():
        assert (result.experiment, result.setting, result.record) == (name, "quick", quick[name][1])
        assert result.trained + result.reused > 0 and result.figures == tuple(quick[name][1]["figures"])
    pi = loaded["pi"].summary().splitlines()
    assert pi[0].startswith("pi (quick): ") and pi[-1] == f"depstat's config: {quick['pi'][1]['correct']}"
    assert [line.split("depstat:")[0].strip() for line in pi[1:-1]] == [e["data"] for e in quick["pi"][1]["scorecard"]]
    law = loaded["frequency-law"].summary().splitlines()
    assert law[1].startswith(f"slope {quick['frequency-law'][1]['slope']:.3f} [") and law[2] == quick["frequency-law"][1]["verdict"]
    sweep = loaded["base-sweep"].summary().splitlines()
    assert len(sweep) == 2 + len(quick["base-sweep"][1]["per_base"]) and sweep[-1].startswith("best: ")
    lerope = loaded["lerope"].summary().splitlines()
    assert lerope[1].startswith("LeRoPE - RoPE val loss") and "gradient picks band" in lerope[3]


@pytest.mark.slow
def test_rerun_reuses_finished_runs(quick, capsys):
    d, first, _ = quick["frequency-law"]
    runs = sorted((d / "runs").glob("*.json"))
    before = {p: p.stat().st_mtime_ns for p in runs}
    assert main(["validate", "frequency-law", "--quick", "--out", str(d), "--threads", "1"]) == 0
    again = json.loads((d / "result.json").read_text())
    assert again["run_counts"] == {"trained": 0, "reused": len(runs)}
    assert {p: p.stat().st_mtime_ns for p in runs} == before
    assert again["c"] == first["c"] and "0 runs trained" in capsys.readouterr().out
