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
# # 3 · From the kernel to a RoPE base and an extension method
#
# The last step turns a profile into configuration:
#
# 1. the kernel of the model's granularity says whether the dependencies have a length of
#    their own, and if so its width **W** (notebook 1);
# 2. W gives the frequency RoPE should resolve, **θ\* = c / W** (paper A); a kernel without
#    a length of its own falls back on the training length instead;
# 3. the **base**: where the kernel has a *characteristic* length, the data set it — the
#    larger of b_A, which puts θ\* inside the grid, and Men et al.'s lower bound for the
#    data's reach (margin × W); for any other kernel the data do not constrain the base, and
#    it is Men et al.'s bound for the training length. The other common rules are listed
#    beside it;
# 4. the **extension** to a longer context is YaRN, with the bands it keeps and the bands it
#    interpolates read from the kernel; position interpolation (**PI**) only where data at
#    the target length show the kernel dilating (`depstat.compare_lengths`).
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
import math
import tempfile
from dataclasses import replace
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import polars as pl

import depstat
from depstat import synth
from depstat.analysis.dependency import fitted, kernel_width
from depstat.analysis.result import granularity_curve
from depstat.analysis.recommend import (
    base_for, configs, frequencies, men_lower_bound, recommend, three_digits_up, yarn_betas)
from depstat.report.document import build_report
from depstat.analysis.selfsim import distinct, self_similarity

ROOT = next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "examples" / "python-docs.jsonl.gz").is_file())
CORPUS = ROOT / "examples" / "python-docs.jsonl.gz"
LADDER = ["bytes", "bpe-1k", "bpe-8k", "words"]
HEAD_DIM, L_TRAIN, L_TARGET = 128, 1024, 4096
C, MARGIN = np.pi, 2.0  # theta* = c / W, and the slowest band at theta* / margin (depstat's defaults)
pl.Config.set_tbl_rows(40)
pl.Config.set_tbl_cols(12)
pl.Config.set_float_precision(3)
pl.Config.set_tbl_width_chars(160)
pl.Config.set_fmt_str_lengths(80)

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
# model with a small BPE vocabulary, bpe-1k. `kernel_width` fits an exponential, a power law
# and their sum (each with a floor) to every distinct granularity, and says what the
# chosen model shows (notebook 1, section 3; the other granularities matter for the
# verdict, section 3, and for the rule's cases):

# %%
MODEL = {"natural text": "bpe-8k", "arithmetic": "bpe-1k"}
all_fits, all_widths, duplicates = {}, {}, {}
for corpus, prof in profiles.items():
    names, duplicates[corpus] = distinct(prof.table)
    all_fits[corpus] = {g: fitted(granularity_curve(prof, g)) for g in names}
    all_widths[corpus] = {g: kernel_width(f) for g, f in all_fits[corpus].items()}
fits = {corpus: all_fits[corpus][g] for corpus, g in MODEL.items()}
widths = {corpus: all_widths[corpus][g] for corpus, g in MODEL.items()}
for corpus, w in widths.items():
    print(f"{corpus} at {MODEL[corpus]}: {w.kind}; W = {w.W and round(w.W, 1)} tokens "
          f"[{w.ci_low and round(w.ci_low, 1)}, {w.ci_high and round(w.ci_high, 1)}]; alpha = "
          f"{w.alpha and round(w.alpha, 2)}; floor {w.floor:.3f} bits; chi2/dof {w.chi2_dof:.1f}\n   {w.reason}")

# %%
fig, axes = plt.subplots(1, 2, figsize=(13, 4.4))
for ax, (corpus, f) in zip(axes, fits.items()):
    c, w = f.curve, widths[corpus]
    r = np.geomspace(1, c.r_max, 200)
    ax.errorbar(c.offsets, c.mi, yerr=c.se, fmt="o", ms=3, color="k", label=f"{c.name} profile")
    for name, fit in w.fits.items():
        ax.plot(r, fit.predict(r), label=f"{name} + floor" + (" (chosen)" if name == w.preferred_model else ""))
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
# The two main cases the rule has to handle. The arithmetic's bpe-1k kernel decays
# exponentially, with a width W of its own (about 21 tokens, a problem's reach), well
# inside the profiled range; the exponential is a summary there (chi2/dof ≈ 10: the problem
# lines give the profile more structure than one decay). The natural text is better
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
# The base whose *slowest* band sits a factor `margin` (default 2) below θ\* is
#
#     b_A = (margin / θ*)^(d / (d − 2))      (recommend.base_for),
#
# so that θ\* lies inside the grid with room for dependencies up to margin × W. A second
# requirement comes from the length the model must tell apart: Men et al. (2024) show that
# below some base the model cannot tell near from far tokens over a length, and compute
# the smallest base with Σ_m cos(r θ_m) ≥ 0 for every r up to it (`men_lower_bound`).
#
# Which length? Where the kernel has a **characteristic** length W well inside L_train
# (margin × W < L_train), the data say how far the model must look: the base is the larger
# of b_A and Men et al.'s bound for the data's reach, margin × W (`Recommendation.bound` is
# `"data"`). A model that must also retrieve beyond the data's kernel needs Men et al.'s bound
# for all of L_train, listed beside it. For every other kernel — local, composite,
# scale-free, periodic — the data do not constrain the base, and it is Men et al.'s bound
# for L_train (`bound == "Men et al."`; PI and YaRN keep the slow bands' positions within
# L_train at the target length, so it is the training length that counts). Either way the base
# is rounded up to 3 significant digits (`three_digits_up`): the rules set it no closer, and
# rounding up never undercuts a bound.

# %%
men = men_lower_bound(HEAD_DIM, L_TRAIN)


def base_by_rule(w, ts: float, margin: float = MARGIN) -> tuple[float, str, float | None]:
    """rope_theta by the rule above (rounded up to 3 significant digits), what set it, and Men et al.'s
    bound for the data's reach."""
    if w.kind == "characteristic" and margin * w.W < L_TRAIN:
        reach = men_lower_bound(HEAD_DIM, math.ceil(margin * w.W))
        b_a = base_for(ts, HEAD_DIM, margin)
        return three_digits_up(max(b_a, reach)), "data: b_A" if b_a >= reach else "data: Men et al., margin × W", reach
    return three_digits_up(men), "Men et al., L_train", None


rows = []
for corpus, ts in theta_star.items():
    b_a = base_for(ts, HEAD_DIM, MARGIN)
    assert np.isclose(frequencies(b_a, HEAD_DIM)[-1], ts / MARGIN, rtol=1e-9)  # slowest band θ*/margin, by construction
    base, by, reach = base_by_rule(widths[corpus], ts)
    rows.append({"corpus": corpus, "kind": widths[corpus].kind, "θ*": ts, "b_A": b_a,
                 "Men bound (margin × W)": reach, f"Men bound ({L_TRAIN})": men, "rope_theta": base, "set by": by})
bases = pl.DataFrame(rows)
bases

# %% [markdown]
# For the arithmetic, W ≈ 21 tokens: b_A is about 14, and Men et al.'s bound for 2W ≈ 43
# tokens, about 72, is larger, so the data set `rope_theta` near 72 — far below the ~5600
# that Men et al.'s bound gives for telling apart all 1024 positions. For the natural text
# there is no such length, and the bound for L_train sets it. How the requirements move with
# the lengths — Men et al.'s bound next to their published fit 0.0424 L^1.628, and the b_A
# of both cases:

# %%
pl.DataFrame([
    {"attended length": n, "Men bound (computed)": men_lower_bound(HEAD_DIM, n), "Men fit": 0.0424 * n ** 1.628,
     **{f"b_A, {corpus}": base_for(theta_star_of(w)[0], HEAD_DIM, MARGIN) for corpus, w in widths.items()}}
    for n in (43, 256, 1024, L_TARGET, 16384)
])

# %% [markdown]
# The rule reads the kernel's kind, not only whether a width exists. At every granularity
# of both corpora, with the verdict of notebook 2's test at that granularity: only a
# characteristic kernel lets the data set the base (the arithmetic's byte kernel has a W
# too, but as the local part of a composite whose power-law tail reaches further; its
# bpe-8k and word kernels are periodic).

# %%
all_verdicts = {corpus: {g: self_similarity(all_fits[corpus], all_widths[corpus], g, duplicates=duplicates[corpus])
                         for g in ws} for corpus, ws in all_widths.items()}
pl.DataFrame([
    {"corpus": corpus, "granularity": g, "kind": w.kind, "W": w.W, "verdict": all_verdicts[corpus][g].verdict,
     "rope_theta": (r := recommend(w, all_verdicts[corpus][g], HEAD_DIM, L_TRAIN, L_TARGET)).rope_theta,
     "bound": r.bound}
    for corpus, ws in all_widths.items() for g, w in ws.items()
])

# %% [markdown]
# `recommend(width, similarity, head_dim, train_length, target_length)` does steps 2 and 3
# (and the extension, section 5) from a width and a `SelfSimilarity`, the verdict of notebook
# 2's test at the model granularity:

# %%
verdicts = {corpus: all_verdicts[corpus][g] for corpus, g in MODEL.items()}
recs = {corpus: recommend(widths[corpus], verdicts[corpus], HEAD_DIM, L_TRAIN, L_TARGET, c=C, margin=MARGIN)
        for corpus in MODEL}
for corpus, rec in recs.items():
    print(f"== {corpus} ({MODEL[corpus]}, {verdicts[corpus].verdict}): rope_theta = {rec.rope_theta:.4g} "
          f"(set by {rec.bound}); θ* = {rec.theta_star:.4g} from {rec.theta_star_from}")
    for reason in rec.reasons:
        print("   -", reason)

# %% [markdown]
# ## 4. The recommendation beside the other rules
#
# Where θ\* falls on the grid of every common base (`Recommendation.recommended` and
# `.alternatives`, each a `Grid`): the band nearest θ\*, how many bands turn more slowly
# than θ\* (`bands_slower`: positional resolution spent on distances beyond what the data
# need), whether θ\* lies inside the grid at all, and the slowest band's wavelength. The
# arithmetic case, whose base the data set:

# %%
def grid_table(rec) -> pl.DataFrame:
    return pl.DataFrame([vars(g) for g in (rec.recommended, *rec.alternatives)])


grid_table(recs["arithmetic"])

# %% [markdown]
# θ\* lies inside every grid here, the natural text's too (`theta_star_inside`); the rules
# differ in how many bands they leave slower than it. The larger the base, the more of them:
# with the data's base the arithmetic's slowest band has a wavelength of a few hundred
# tokens, with 10,000 of tens of thousands. The same grids as band wavelengths 2π/θ_m, against each corpus's θ\*
# wavelength and L_train:

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
# How much of this is measurement and how much is choice? Where the data set the base, it
# moves with W's interval, with c and with the margin (which also sets the reach, margin ×
# W). For the arithmetic case:

# %%
rec = recs["arithmetic"]
low, high = rec.rope_theta_interval
print(f"rope_theta over W's interval {widths['arithmetic'].ci_low:.1f}-{widths['arithmetic'].ci_high:.1f}: "
      f"{low:.4g} to {high:.4g}")
rows = []
for cc in (np.pi, 3.02):
    for mm in (1.0, 2.0, 4.0):
        r = recommend(widths["arithmetic"], verdicts["arithmetic"], HEAD_DIM, L_TRAIN, L_TARGET, c=cc, margin=mm)
        _, by, reach = base_by_rule(widths["arithmetic"], cc / widths["arithmetic"].W, mm)
        rows.append({"c": cc, "margin": mm, "b_A": r.base_from_data, "Men bound (margin × W)": reach,
                     "rope_theta": r.rope_theta, "set by": by})
sensitivity = pl.DataFrame(rows)
sensitivity

# %% [markdown]
# W's interval is narrow (a few percent) and Men et al.'s bound moves in steps, so the
# interval gives one value. b_A is roughly proportional to margin / c × W, but for a width of
# tens of tokens Men et al.'s bound for the reach is the larger in every row: the margin
# moves `rope_theta` through the reach it sets, c not at all. Both knobs are what the
# validation experiments (section 7) are meant to pin down.
#
# ## 5. Extending the context: YaRN, with betas from the data
#
# Going from L_train = 1024 to 4096 is a factor s = 4. PI divides every frequency by s: it
# keeps the kernel's shape only if the data at 4096 tokens are these data *dilated* by s,
# and on stationary text it gives up the resolution of the first s offsets. depstat
# advises YaRN: bands with more than β_fast turns within L_train keep their frequency,
# bands with fewer than β_slow are interpolated like PI, with a ramp between — and reads
# both from the kernel (`yarn_betas(width, similarity, train_length, factor)`):
# β_fast = L_train / (2π r_local), where r_local is the local reach within which the kept
# bands turn at least a radian, so they tell its offsets apart (the tail's onset for
# self-similar data, W for a characteristic length, the crossover otherwise, the profile's
# reach for a periodic kernel; at least s), and
# β_slow = L_train / (2 r_reach), r_reach the profile's reach capped at L_train. At every
# granularity:

# %%
pl.DataFrame([
    {"corpus": corpus, "granularity": g, "kind": w.kind, "verdict": (ss := all_verdicts[corpus][g]).verdict,
     "onset": ss.onset_tokens, "beta_fast": (b := yarn_betas(w, ss, L_TRAIN, L_TARGET / L_TRAIN))[0],
     "beta_slow": b[1], "from": b[2].split(" keep ")[0].removeprefix("from the data: bands turning a radian within ")}
    for corpus, ws in all_widths.items() for g, w in ws.items()
])

# %% [markdown]
# The natural text's local reach (its crossover, the first offset: a power law) is below
# s, so β_fast = 1024 / (2π × 4) ≈ 41: only the fastest bands keep their frequency. The
# arithmetic's W ≈ 21 tokens gives β_fast ≈ 8; its periodic granularities keep every band
# that turns at least a radian within L_train, as their peaks recur to the profile's
# end. The extensions `recommend` gives:

# %%
for corpus, rec in recs.items():
    e = rec.extension
    print(f"{corpus}: {e.method}, beta_fast {e.beta_fast:.3g}, beta_slow {e.beta_slow:.3g}: {e.bands_kept} bands kept, "
          f"{e.bands_interpolated} interpolated\n   {e.why}")

# %% [markdown]
# PI needs data at the target length. `depstat.compare_lengths(train, target)` compares the
# kernel width W of the training data with that of the data the extended model will see: PI
# where it grows by s (*dilated*), YaRN where it stays (*fixed*) or either has no length.
# A synthetic check: text from a Markov chain over characters (`synth.markov_text`, an
# exponential kernel at bytes), against the same text with every character written four
# times — the same dependencies, dilated by s = 4 — and against itself:

# %%
texts = synth.markov_text(200, 2048, seed=1)
chain_paths = {"train": synth.write_jsonl(Path(workdir.name) / "chain.jsonl", texts),
               "dilated": synth.write_jsonl(Path(workdir.name) / "chain_x4.jsonl", ["".join(ch * 4 for ch in t)
                                                                                  for t in texts])}
chain = {k: depstat.analyze(depstat.profile(str(p), granularities=["bytes"], max_offset=1024), head_dim=HEAD_DIM,
                            train_length=L_TRAIN, target_length=L_TARGET, granularity="bytes")
         for k, p in chain_paths.items()}
lengths = {k: depstat.compare_lengths(chain["train"], chain[k]) for k in ("dilated", "train")}
for k, (method, test) in lengths.items():
    print(f"target = {k}: W {test.W_train:.1f} -> {test.W_target:.1f} ({chain[k].widths['bytes'].kind}); "
          f"{test.verdict}: {method}; {test.reason}")

# %% [markdown]
# W grows fourfold (the dilated kernel comes out composite, its local part 4× the chain's):
# PI. Against the same text, W stays: YaRN. `compare_lengths` returns the method; the config
# for PI is `recommend.configs` with the extension's method set to `"pi"`. The Hugging Face
# config snippets: `rope_parameters` is the transformers ≥ 5 form (`rope_theta` inside
# `rope_parameters`), `legacy_config` the 4.x form with `rope_theta` and `rope_scaling`.
# YaRN, as recommended for the natural text, and PI, for the dilated chain:

# %%
ext = chain["train"].recommendation.extension
pi_config = configs(chain["train"].recommendation.rope_theta, replace(ext, method=lengths["dilated"][0]), L_TRAIN,
                    L_TARGET)
yarn_config = (recs["natural text"].rope_parameters, recs["natural text"].legacy_config)
for label, snippets in (("natural text: yarn", yarn_config), ("the dilated chain: pi", pi_config)):
    print(f"# {label}\n" + "\n".join(json.dumps(snippet, indent=2) for snippet in snippets))

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

# %% [markdown]
# An `Analysis` shows itself too: a one-line `repr`, its kernel table, the verdict's first
# reasons and the kernel figure as the cell's value; `plot(profile)` draws that figure with
# every offset of the profile (those left out of the fit hollow).

# %%
natural = analyses["natural text"]
print(repr(natural))
assert repr(natural).startswith(f"Analysis({natural.granularity}: ")
natural.plot(profiles["natural text"])

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
# The advice above rests on rules — θ\* = c / W, the fallback on L_train, the base from the
# data only for a characteristic length, YaRN's betas from the kernel — and on a margin that
# is a choice. `depstat validate`
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
    advice = sweep.record["advice"]
    print(f"settings: {sweep.record['settings']}")
    print(f"advice: W kind {advice['W']['kind']}, b_A {advice['base_from_data']:.3g}, Men et al. "
          f"{advice['base_men']:.4g}, rope_theta {advice['rope_theta']:.4g} (set by {advice['bound']})")
    print(sweep.summary())
    print(pl.DataFrame([{"name": name, **p} for name, p in sweep.record["per_base"].items()]).sort("base"))
else:
    print(f"torch is not installed: section 7 skipped ({validate.INSTALL_HINT})")

# %%
if HAVE_TORCH:
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for name, p in sorted(sweep.record["per_base"].items(), key=lambda kv: kv[1]["base"]):
        ax.errorbar(p["base"], p["mean"], yerr=p["std"], fmt="o", capsize=4, label=f"{name} (b = {p['base']:.3g})")
    ax.set(xscale="log", xlabel="RoPE base b", ylabel="validation loss (nats)",
           title=f"quick base sweep ({sweep.record['settings']['steps']} steps, {sweep.record['settings']['seeds']} seeds)")
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
    base, by, _ = base_by_rule(w, theta_star[corpus])
    assert np.isclose(rec.rope_theta, base) and rec.bound == ("data" if by.startswith("data") else "Men et al.")
    assert rec.rope_parameters["rope_parameters"]["rope_theta"] == rec.rope_theta == rec.legacy_config["rope_theta"]
    assert all(g.theta_star_inside for g in (rec.recommended, *rec.alternatives))
    e = rec.extension  # always YaRN, with the betas yarn_betas gives
    assert e.method == "yarn" and (e.beta_fast, e.beta_slow) == yarn_betas(w, verdicts[corpus], L_TRAIN, e.factor)[:2]
    a = analyses[corpus]  # one call = step by step
    assert a.granularity == MODEL[corpus] and a.self_similarity == verdicts[corpus]
    assert a.widths[MODEL[corpus]].kind == w.kind and a.widths[MODEL[corpus]].W == w.W
    assert a.recommendation.rope_theta == rec.rope_theta and a.recommendation.extension == rec.extension
    assert a.recommendation.rope_parameters == rec.rope_parameters
# What the prose above says about these corpora:
assert widths["arithmetic"].kind == "characteristic" and widths["natural text"].kind == "scale-free"
assert widths["natural text"].W is None and 0 < widths["arithmetic"].W < widths["arithmetic"].r_max / 2
assert list(bases["set by"]) == ["Men et al., L_train", "data: Men et al., margin × W"]
assert recs["arithmetic"].bound == "data" and recs["arithmetic"].rope_theta < men / 10
assert recs["natural text"].bound == "Men et al." and recs["natural text"].rope_theta == three_digits_up(men)
assert {all_widths["arithmetic"][g].kind for g in ("bpe-8k", "words")} == {"periodic"}
assert all_widths["arithmetic"]["bytes"].kind == "composite" and all_widths["arithmetic"]["bytes"].W is not None
assert set(sensitivity["set by"]) == {"data: Men et al., margin × W"} and len(set(sensitivity["rope_theta"])) == 3
assert sensitivity["rope_theta"].to_list() == [  # the rule by hand = recommend
    three_digits_up(b) for b in sensitivity["Men bound (margin × W)"]]
assert recs["natural text"].extension.beta_fast == L_TRAIN / (2 * np.pi * L_TARGET / L_TRAIN)  # r_local = s
assert recs["arithmetic"].extension.beta_fast == L_TRAIN / (2 * np.pi * widths["arithmetic"].W)  # r_local = W
assert lengths["dilated"][0] == "pi" and lengths["dilated"][1].verdict == "dilated"
assert abs(lengths["dilated"][1].share - 1) < 0.1 and chain["train"].widths["bytes"].kind == "characteristic"
assert lengths["train"][0] == "yarn" and lengths["train"][1].verdict == "fixed"
assert pi_config[0]["rope_parameters"]["rope_type"] == "linear" and pi_config[1]["rope_scaling"]["factor"] == 4
assert recs["natural text"].rope_parameters["rope_parameters"]["rope_type"] == "yarn"
# The saved profile keeps its replicates and gives the same analysis after loading; the report is written.
assert (saved / "replicates.parquet").is_file() and reloaded.has_replicates
assert again.recommendation.rope_theta == analyses["natural text"].recommendation.rope_theta
assert again.self_similarity.verdict == analyses["natural text"].self_similarity.verdict
assert summary["recommendation"]["rope_theta"] == analyses["natural text"].recommendation.rope_theta
assert all(p.is_file() for p in paths.values())
if HAVE_TORCH:
    assert set(sweep.record["per_base"]) == {"recommended", "from_data", "half_from_data", "tenth", "10000", "1e6"}
    assert np.isclose(sweep.record["per_base"]["recommended"]["base"], sweep.record["advice"]["rope_theta"])
    assert all(np.isfinite(p["mean"]) and p["n"] == 2 for p in sweep.record["per_base"].values())
workdir.cleanup()
