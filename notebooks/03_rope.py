# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 3 · From the kernel width W to a RoPE base and an extension method
#
# The last step turns a profile into configuration:
#
# 1. the kernel of the model's granularity says whether the dependencies have a length of
#    their own, and if so its width **W** (notebook 1);
# 2. W gives the frequency RoPE should resolve, **θ\* = c / W** (paper A); a kernel without
#    a length of its own falls back on the training length instead;
# 3. θ\* gives a **base** that puts it inside the grid, which is then held against Men et
#    al.'s lower bound for the length the model attends over; the larger of the two is
#    `rope_theta`, and the other common rules are listed beside it;
# 4. the self-similarity verdict (notebook 2) decides how to extend the context: position
#    interpolation (**PI**) or **YaRN**.
#
# We do it step by step with the public functions, for the bundled natural text and for
# generated arithmetic, then check that `depstat.analyze` gives the same in one call.
#
# Settings throughout: head dimension d = 128, training length L_train = 1024, target
# length 4096. L_train is 1024 rather than the CLI's default 2048 because the bundled
# documents are short (how many still reach an offset of 2048 BPE tokens is printed below).
# Runs in well under a minute on a CPU.

# %%
import json
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import polars as pl

import depstat
from depstat.io import synth
from depstat.analysis.dependency import fitted, kernel_width
from depstat.analysis.result import granularity_curve
from depstat.analysis.recommend import base_for, frequencies, men_lower_bound, recommend
from depstat.report.document import build_report
from depstat.analysis.selfsim import VERDICTS, distinct, self_similarity

ROOT = next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "examples" / "python-docs.jsonl.gz").is_file())
CORPUS = ROOT / "examples" / "python-docs.jsonl.gz"
LADDER = ["bytes", "bpe-1k", "bpe-8k", "words"]
HEAD_DIM, L_TRAIN, L_TARGET = 128, 1024, 4096
C, MARGIN = np.pi, 2.0  # theta* = c / W, and the slowest band at theta* / margin (depstat's defaults)
pl.Config.set_tbl_rows(40)
pl.Config.set_tbl_cols(12)
pl.Config.set_float_precision(3)
pl.Config.set_tbl_width_chars(160)

workdir = tempfile.TemporaryDirectory()
arithmetic_path = synth.arithmetic_jsonl(Path(workdir.name) / "arithmetic.jsonl", n_docs=100, seed=1)
profiles = {
    "natural text": depstat.profile(str(CORPUS), granularities=LADDER, max_offset=2048),
    "arithmetic": depstat.profile(str(arithmetic_path), granularities=LADDER, max_offset=2048),
}
bpe = profiles["natural text"].to_polars().filter(pl.col("granularity") == "bpe-8k")
print(f"natural text at bpe-8k: {bpe['n_docs'][-1]} of {bpe['n_docs'][0]} documents reach r = {bpe['offset'][-1]}")

# %% [markdown]
# ## 1. The kernel and its width
#
# The advice is read at the granularity the model will use. For the natural text that is
# bpe-8k, the one closest to a model tokenizer in this ladder; for the arithmetic we take a
# byte-level model (like the small models of section 7), reading its kernel at bytes.
# `kernel_width` fits a power law and an exponential, each with a floor, and says what the
# profile shows (notebook 1, section 3):

# %%
MODEL = {"natural text": "bpe-8k", "arithmetic": "bytes"}
fits, widths = {}, {}
for corpus, g in MODEL.items():
    prof = profiles[corpus]
    fits[corpus] = fitted(granularity_curve(prof, g))
    widths[corpus] = kernel_width(fits[corpus])
    w = widths[corpus]
    print(f"{corpus} at {g}: {w.kind}; W = {w.W and round(w.W, 1)} tokens "
          f"[{w.ci_low and round(w.ci_low, 1)}, {w.ci_high and round(w.ci_high, 1)}]; alpha = {w.alpha:.2f}; "
          f"floor {w.floor:.3f} bits\n   {w.reason}")

# %%
fig, axes = plt.subplots(1, 2, figsize=(13, 4.4))
for ax, (corpus, f) in zip(axes, fits.items()):
    c, w = f.curve, widths[corpus]
    r = np.geomspace(1, c.r_max, 200)
    ax.errorbar(c.offsets, c.mi, yerr=c.se, fmt="o", ms=3, color="k", label=f"{c.name} profile")
    for name, fit in w.fits.items():
        ax.plot(r, fit.predict(r), label=f"{name} + floor" + (" (preferred)" if name == w.preferred_model else ""))
    ax.axhline(w.floor, color="grey", ls="--", label=f"floor {w.floor:.3f} bits")
    if w.W is not None:
        ax.axvspan(w.ci_low, w.ci_high, color="C3", alpha=0.15)
        ax.axvline(w.W, color="C3", label=f"W = {w.W:.1f}")
    ax.axvline(L_TRAIN, color="k", ls=":", label="L_train")
    ax.set(xscale="log", yscale="log", xlabel="offset r (tokens)", ylabel="MI (bits)", title=f"{corpus}: {w.kind}")
    ax.set_ylim(bottom=max(1e-4, 0.3 * c.mi[c.mi > 0].min()))
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# The two cases the rule has to handle. The arithmetic byte kernel decays exponentially and
# has a width W of its own, well inside the profiled range. The natural text is better
# described by a power law: no length of its own up to the end of the profile, so W is
# None — there is no width to read, not a width equal to the window.
#
# ## 2. From the kernel to θ\*
#
# RoPE rotates band m of a head of dimension d at θ_m = b^(−2m/d), m = 0 … d/2 − 1. Paper A:
# the best frequency for dependencies of width W is **θ\* = c / W**, with c = π in theory
# (3.02 fitted there) — the highest frequency whose half-turn still covers W. For a kernel
# without a length of its own, depstat works from the training length: trained models in
# paper B settle on a dominant band of wavelength 2.2 L_train, so **θ\* = 2π / (2.2 L_train)**.

# %%
def theta_star_of(w: depstat.analysis.dependency.Width, c: float = C) -> tuple[float, str]:
    """θ* by the rule above, and which branch gave it."""
    if w.kind in ("characteristic", "local"):
        return c / w.W, f"c / W = π / {w.W:.1f}"
    return 2 * np.pi / (2.2 * L_TRAIN), f"2π / (2.2 × {L_TRAIN})"


theta_star = {}
for corpus, w in widths.items():
    theta_star[corpus], how = theta_star_of(w)
    print(f"{corpus}: θ* = {how} = {theta_star[corpus]:.4g} rad/token "
          f"(wavelength {2 * np.pi / theta_star[corpus]:.0f} tokens, {L_TRAIN * theta_star[corpus] / (2 * np.pi):.1f} "
          f"turns within L_train)")

# %% [markdown]
# ## 3. From θ\* to a base
#
# depstat picks the base whose *slowest* band sits a factor `margin` (default 2) below θ\*,
#
#     b_A = (margin / θ*)^(d / (d − 2))      (recommend.base_for),
#
# so that θ\* lies inside the grid with room for dependencies up to margin × W. That is a
# requirement of the data. A second requirement comes from the length the model attends
# over: Men et al. (2024) show that below some base the model cannot tell near from far
# tokens over that length, and compute the smallest base with Σ_m cos(r θ_m) ≥ 0 for every
# r up to it (`men_lower_bound`). depstat takes it for the training length — PI and YaRN
# keep the slow bands' positions within L_train at the target length — and lists the bound
# for the target length beside it, for training at the target directly. `rope_theta` is the
# larger of the two lower bounds.

# %%
men = men_lower_bound(HEAD_DIM, L_TRAIN)
rows = []
for corpus, ts in theta_star.items():
    b_a = base_for(ts, HEAD_DIM, MARGIN)
    slowest = frequencies(b_a, HEAD_DIM)[-1]
    assert np.isclose(slowest, ts / MARGIN, rtol=1e-9)  # the slowest band is θ*/margin, by construction
    rows.append({"corpus": corpus, "θ*": ts, "b_A": b_a, f"Men bound ({L_TRAIN})": men,
                 "rope_theta": max(b_a, men), "set by": "data (b_A)" if b_a >= men else "Men et al."})
bases = pl.DataFrame(rows)
bases

# %% [markdown]
# Both b_A values are below Men et al.'s bound for L_train here (table above), so the
# bound sets `rope_theta`. How the two requirements move with the lengths: b_A depends on
# θ\* (so on W, or on L_train for a kernel without a length of its own), the bound on the
# attended length. Men et al.'s bound next to their published fit 0.0424 L^1.628, and the
# b_A of both cases at this L_train:

# %%
pl.DataFrame([
    {"attended length": n, "Men bound (computed)": men_lower_bound(HEAD_DIM, n), "Men fit": 0.0424 * n ** 1.628,
     **{f"b_A, {corpus}": base_for(theta_star_of(w)[0], HEAD_DIM, MARGIN) for corpus, w in widths.items()}}
    for n in (256, 1024, L_TARGET, 16384)
])

# %% [markdown]
# `recommend` does steps 2 and 3 (and the extension, section 5) for a width and a verdict.
# The verdict comes from notebook 2's test; here it is again in brief, for each corpus at
# its model granularity:

# %%
verdicts = {}
for corpus, g in MODEL.items():
    prof = profiles[corpus]
    names, duplicates = distinct(prof.table)
    above = {n: fitted(granularity_curve(prof, n)).excess() for n in names}
    verdicts[corpus] = self_similarity(above, g, widths[corpus], L_TARGET, L_TARGET / L_TRAIN, duplicates=duplicates)
    print(f"{corpus} (model granularity {g}): {verdicts[corpus].verdict}\n   {verdicts[corpus].reasons[0]}")

recs = {corpus: recommend(widths[corpus], verdicts[corpus].verdict, HEAD_DIM, L_TRAIN, L_TARGET, c=C, margin=MARGIN)
        for corpus in MODEL}
for corpus, rec in recs.items():
    print(f"\n== {corpus}: rope_theta = {rec.rope_theta:.4g} (set by {rec.bound}); θ* = {rec.theta_star:.4g} "
          f"from {rec.theta_star_from}")
    for reason in rec.reasons:
        print("   -", reason)

# %% [markdown]
# ## 4. The recommendation beside the other rules
#
# Where θ\* falls on the grid of every common base (`Recommendation.recommended` and
# `.alternatives`, each a `Grid`): the band nearest θ\*, how many bands turn more slowly
# than θ\* (`bands_slower`: positional resolution spent on distances beyond what the data
# need), whether θ\* lies inside the grid at all, and the slowest band's wavelength. The
# arithmetic case, whose θ\* comes from its W:

# %%
def grid_table(rec) -> pl.DataFrame:
    return pl.DataFrame([vars(g) for g in (rec.recommended, *rec.alternatives)])


grid_table(recs["arithmetic"])

# %% [markdown]
# and the natural text, whose θ\* comes from L_train:

# %%
grid_table(recs["natural text"]).select("rule", "base", "theta_star_band", "bands_slower", "theta_star_inside")

# %% [markdown]
# θ\* lies inside every grid here (`theta_star_inside`); the rules differ in how many
# bands they leave slower than it. The larger the base, the more of them. The same grids as
# band wavelengths 2π/θ_m, against each corpus's θ\* wavelength and L_train:

# %%
fig, ax = plt.subplots(figsize=(8.5, 4.8))
shown = {**{f"rope_theta, {corpus}": rec.rope_theta for corpus, rec in recs.items()},
         "b = 10,000": 1e4, "b = L_train": float(L_TRAIN),
         **{f"b_A, {corpus}": base_for(ts, HEAD_DIM, MARGIN) for corpus, ts in theta_star.items()}}
for name, b in shown.items():
    ax.plot(2 * np.pi / frequencies(b, HEAD_DIM), ".-", ms=3, label=f"{name}: b = {b:.3g}")
for k, (corpus, ts) in enumerate(theta_star.items()):
    ax.axhline(2 * np.pi / ts, color=f"C{k + 5}", ls="--", label=f"θ* wavelength, {corpus} ({2 * np.pi / ts:.0f})")
ax.axhline(L_TRAIN, color="k", ls=":", label="L_train")
ax.set(yscale="log", xlabel="band m", ylabel="wavelength 2π/θ_m (tokens)", title=f"RoPE grids, d = {HEAD_DIM}")
ax.grid(alpha=0.3)
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# How much of this is measurement and how much is choice? b_A moves with W's interval (for
# a kernel with a length of its own), with c and with the margin; `rope_theta` moves only
# where b_A exceeds the bound. For the arithmetic case:

# %%
rec = recs["arithmetic"]
low, high = rec.rope_theta_interval
print(f"rope_theta over W's interval {widths['arithmetic'].ci_low:.1f}-{widths['arithmetic'].ci_high:.1f}: "
      f"{low:.4g} to {high:.4g}")
sensitivity = pl.DataFrame([
    {"c": cc, "margin": mm, "b_A": (r := recommend(widths["arithmetic"], verdicts["arithmetic"].verdict, HEAD_DIM,
                                                     L_TRAIN, L_TARGET, c=cc, margin=mm)).base_from_data,
     "rope_theta": r.rope_theta, "set by": r.bound}
    for cc in (np.pi, 3.02) for mm in (1.0, 2.0, 4.0)
])
sensitivity

# %% [markdown]
# b_A is roughly proportional to margin / c × W, so the margin moves it by as much as the
# factors shown; c = π is the theoretical value. Here the bound sets `rope_theta` in every
# row (column `set by`): for a width of tens of tokens the data's requirement is far from
# binding. Both knobs are what the validation experiments (section 7) are meant to pin
# down.
#
# ## 5. Extending the context: PI or YaRN
#
# Going from L_train = 1024 to 4096 is a factor s = 4. PI divides every frequency by s,
# which keeps the balance of near and far dependencies only where the profile keeps its
# shape under a dilation — self-similar data — and still gives up the resolution of the
# first s offsets. Otherwise PI blurs the fast bands the data need locally, and depstat
# advises YaRN: bands with more than β_fast turns within L_train are kept, bands with fewer
# than β_slow turns are interpolated like PI, with a ramp between (or train at the longer
# length). The verdicts of section 3 give:

# %%
for corpus, rec in recs.items():
    e = rec.extension
    print(f"{corpus}: verdict {verdicts[corpus].verdict} -> {e.method}\n   {e.why}")

# %% [markdown]
# The method follows the verdict and nothing else; the YaRN parameters follow the kernel.
# `recommend` takes the verdict as an argument, so the rule can be shown for every verdict
# with the same widths:

# %%
pl.DataFrame([
    {"corpus": corpus, "verdict": v, **{k: getattr(e, k) for k in ("method", "factor", "beta_fast", "beta_slow",
                                                                   "attention_factor", "bands_kept",
                                                                   "bands_interpolated")}}
    for corpus, w in widths.items() for v in VERDICTS
    for e in [recommend(w, v, HEAD_DIM, L_TRAIN, L_TARGET, c=C, margin=MARGIN).extension]
])

# %% [markdown]
# β_fast is YaRN's 32 for the natural text. For the arithmetic it is lowered below the
# number of turns θ\*'s band makes within L_train (section 2), so that the band the data's
# width calls for is kept unscaled.
#
# The Hugging Face config snippets: `rope_parameters` is the transformers ≥ 5 form
# (`rope_theta` inside `rope_parameters`), `legacy_config` the 4.x form with `rope_theta`
# and `rope_scaling`. YaRN, as recommended for the natural text, and PI, as it would be for
# the same kernel called self-similar:

# %%
pi_case = recommend(widths["natural text"], "self-similar", HEAD_DIM, L_TRAIN, L_TARGET, c=C, margin=MARGIN)
for label, rec in (("natural text, as recommended", recs["natural text"]), ("the same kernel if self-similar", pi_case)):
    print(f"# {label}: {rec.extension.method}")
    print(json.dumps(rec.rope_parameters, indent=2))
    print(json.dumps(rec.legacy_config, indent=2))

# %% [markdown]
# ## 6. The same in one call
#
# `depstat.analyze` runs all of the above on a `Profile` — the kernel of every distinct
# granularity, the self-similarity verdict at the model granularity, the recommendation —
# and returns a frozen `Analysis`; the profile is not changed. `Profile.save(out, analysis)`
# writes profile.parquet, replicates.parquet and summary.json with the analysis in it, and
# `depstat.report.document.build_report` turns a profile and its analysis into an HTML and a Markdown
# report. The CLI equivalent:
# `depstat recommend examples/python-docs.jsonl.gz -g bytes -g bpe-1k -g bpe-8k -g words --max-offset 2048 --head-dim 128 --train-length 1024 --target-length 4096 --model-granularity bpe-8k`.

# %%
analyses = {corpus: depstat.analyze(profiles[corpus], depstat.Settings(
    head_dim=HEAD_DIM, train_length=L_TRAIN, target_length=L_TARGET, granularity=g, c=C, margin=MARGIN))
    for corpus, g in MODEL.items()}
for corpus, a in analyses.items():
    r = a.recommendation
    print(f"{corpus} at {a.granularity}: {a.self_similarity.verdict}; rope_theta {r.rope_theta:.4g}; "
          f"{r.extension.method}; rope_parameters {r.rope_parameters['rope_parameters']}")
analyses["natural text"].width_table

# %%
saved = profiles["natural text"].save(Path(workdir.name) / "natural", analyses["natural text"])
reloaded = depstat.Profile.load(saved)
again = depstat.analyze(reloaded, analyses["natural text"].settings)
summary = json.loads((saved / "summary.json").read_text())
print(sorted(p.name for p in saved.iterdir()))
print(f"summary.json sections: {sorted(summary)}")
print(f"re-analysed after loading: rope_theta {again.recommendation.rope_theta:.4g}, "
      f"verdict {again.self_similarity.verdict}")
paths = build_report(profiles["natural text"], analyses["natural text"], Path(workdir.name) / "report")
print({kind: f"{path.name} ({path.stat().st_size // 1024} KB)" for kind, path in paths.items()})

# %% [markdown]
# ## 7. Checking the advice: a quick validation experiment
#
# The advice above rests on rules — θ\* = c / W, the fallback on L_train, "PI for
# self-similar data, YaRN otherwise" — and on a margin that is a choice. `depstat validate`
# checks them by training small RoPE transformers (torch, the `validate` extra). Here is
# the quickest of its experiments, `base-sweep` in `quick` mode: a task where the base
# matters (the majority of the last B = 16 tokens in a context of 128, which a base whose
# slowest band turns faster than the window cannot learn). depstat profiles the task's token
# stream and recommends a base for the model; a one-layer model is trained for a few steps
# with that base, with the base from the data alone (b_A) and half of it, a tenth of the
# recommendation, 10,000 and 10^6, two seeds each, at equal compute. A few seconds on a CPU;
# at this size the differences are mostly noise — the full run and its reading are in
# `docs/validation.md` (`depstat validate base-sweep --out DIR`). Without torch installed
# (`pip install torch==2.13.0 && pip install -e '.[validate]'`) this section is skipped.

# %%
import importlib.util

from depstat import validate

HAVE_TORCH = importlib.util.find_spec("torch") is not None
if HAVE_TORCH:
    sweep = validate.run("base-sweep", Path(workdir.name) / "base-sweep", quick=True, threads=1)
    advice = sweep["advice"]
    print(f"settings: {sweep['settings']}")
    print(f"advice: W kind {advice['W']['kind']}, b_A {advice['base_from_data']:.3g}, Men et al. "
          f"{advice['base_men']:.4g}, rope_theta {advice['rope_theta']:.4g}")
    print(validate.summary(sweep))
    print(pl.DataFrame([{"name": name, **p} for name, p in sweep["per_base"].items()]).sort("base"))
else:
    print(f"torch is not installed: section 7 skipped ({validate.INSTALL_HINT})")

# %%
if HAVE_TORCH:
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for name, p in sorted(sweep["per_base"].items(), key=lambda kv: kv[1]["base"]):
        ax.errorbar(p["base"], p["mean"], yerr=p["std"], fmt="o", capsize=4, label=f"{name} (b = {p['base']:.3g})")
    ax.set(xscale="log", xlabel="RoPE base b", ylabel="validation loss (nats)",
           title=f"quick base sweep ({sweep['settings']['steps']} steps, {sweep['settings']['seeds']} seeds)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    plt.show()

# %%
# Checks that keep this notebook honest when the analysis changes (CI runs it).
for corpus, rec in recs.items():
    w = widths[corpus]
    assert np.isclose(rec.theta_star, theta_star[corpus])  # section 2 by hand = recommend
    assert np.isclose(rec.base_from_data, base_for(theta_star[corpus], HEAD_DIM, MARGIN))
    assert rec.attended_length == L_TRAIN and np.isclose(rec.base_men, men)  # section 3's bound = recommend's
    assert rec.rope_theta == max(rec.base_from_data, rec.base_men)
    assert rec.rope_parameters["rope_parameters"]["rope_theta"] == rec.rope_theta == rec.legacy_config["rope_theta"]
    assert all(g.theta_star_inside for g in (rec.recommended, *rec.alternatives))
    assert rec.extension.method == ("pi" if verdicts[corpus].verdict == "self-similar" else "yarn")
    a = analyses[corpus]  # one call = step by step
    assert a.granularity == MODEL[corpus] and a.self_similarity.verdict == verdicts[corpus].verdict
    assert a.widths[MODEL[corpus]].kind == w.kind and a.widths[MODEL[corpus]].W == w.W
    assert a.recommendation.rope_theta == rec.rope_theta and a.recommendation.extension == rec.extension
    assert a.recommendation.rope_parameters == rec.rope_parameters
# What the prose above says about these corpora:
assert widths["arithmetic"].kind == "characteristic" and widths["natural text"].kind == "scale-free"
assert widths["natural text"].W is None and 0 < widths["arithmetic"].W < widths["arithmetic"].r_max / 2
assert (bases["set by"] == "Men et al.").all() and (sensitivity["set by"] == "Men et al.").all()
arith_yarn = recs["arithmetic"].extension
assert arith_yarn.method == "yarn" and arith_yarn.beta_fast < L_TRAIN * theta_star["arithmetic"] / (2 * np.pi)
assert recs["natural text"].extension.beta_fast == 32 and pi_case.extension.method == "pi"
assert pi_case.rope_parameters["rope_parameters"]["rope_type"] == "linear"
assert recs["natural text"].rope_parameters["rope_parameters"]["rope_type"] == "yarn"
# The saved profile keeps its replicates and gives the same analysis after loading; the report is written.
assert (saved / "replicates.parquet").is_file() and reloaded.has_replicates
assert again.recommendation.rope_theta == analyses["natural text"].recommendation.rope_theta
assert again.self_similarity.verdict == analyses["natural text"].self_similarity.verdict
assert summary["recommendation"]["rope_theta"] == analyses["natural text"].recommendation.rope_theta
assert all(p.is_file() for p in paths.values())
if HAVE_TORCH:
    assert set(sweep["per_base"]) == {"recommended", "from_data", "half_from_data", "tenth", "10000", "1e6"}
    assert np.isclose(sweep["per_base"]["recommended"]["base"], sweep["advice"]["rope_theta"])
    assert all(np.isfinite(p["mean"]) and p["n"] == 2 for p in sweep["per_base"].values())
workdir.cleanup()
