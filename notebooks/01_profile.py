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
# # 1 · Profiling a corpus and reading the profile
#
# A depstat profile is the mutual information I(r) between tokens r positions apart, for
# a range of offsets r, with an interval at each offset. This notebook reads one:
#
# 1. on a Markov chain whose MI is known **exactly**, every estimator in
#    `depstat.ESTIMATORS` side by side against the truth — and why the plug-in estimator
#    invents long-range dependence that is not there;
# 2. what the interval and the noise floor mean, checked against that truth;
# 3. the kernel width W read from a profile, on block sequences whose dependency length B
#    is set by construction: W must grow in proportion to B;
# 4. the same reading on a real corpus, the bundled Python documentation
#    (`examples/python-docs.jsonl.gz`).
#
# It uses only depstat's public API and runs in well under a minute on a CPU (the very
# first run also compiles depstat's Numba kernels, about 15 s, cached afterwards).

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import polars as pl

import depstat
from depstat import synth
from depstat.analysis.dependency import curve, fitted, kernel_width
from depstat.analysis.known import exact_curve

# The bundled corpus, whether the notebook runs from the repository root or from notebooks/.
ROOT = next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "examples" / "python-docs.jsonl.gz").is_file())
CORPUS = ROOT / "examples" / "python-docs.jsonl.gz"
pl.Config.set_tbl_rows(40)
pl.Config.set_tbl_cols(12)
pl.Config.set_float_precision(3)
pl.Config.set_tbl_width_chars(160)
print("depstat", depstat.__version__)
print("estimators:", ", ".join(depstat.ESTIMATORS), "| default:", depstat.DEFAULT_ESTIMATOR)

# %% [markdown]
# ## 1. A source with a known answer
#
# `synth.reference_chain()` is a stationary Markov chain over V = 512 tokens in 16 sticky
# "topics" — the chain behind depstat's accuracy bar. Because it is a Markov chain, its
# MI at offset r follows exactly from the r-th power of the transition matrix
# (`chain.exact_mi`). We sample documents of 4096 tokens from it, at two sizes: about
# 1M tokens and about 250k tokens.

# %%
chain = synth.reference_chain()
offsets = depstat.log_offsets(2048, 24)  # 23 distinct log-spaced offsets from 1 to 2048
truth = chain.exact_mi(offsets)
big = chain.sample(n_docs=250, doc_len=4096, seed=1)
small = chain.sample(n_docs=60, doc_len=4096, seed=1)
print(f"samples: {big.n_tokens:,} and {small.n_tokens:,} tokens, vocabulary {big.vocab_size}")
print(f"exact I(1) = {truth[0]:.2f} bits; exact MI is below 0.001 bits from r = {offsets[truth < 1e-3].min()} on")

# %% [markdown]
# Every estimator runs on the same 1M-token sample. `mi_profile` takes one token stream
# and returns a table with one row per offset: the estimate `mi_bits`, the interval
# `ci_low`–`ci_high`, its half-width `noise_floor`, whether the offset is `significant`,
# and how many pairs and documents contributed.

# %%
estimates = {}
for name in depstat.ESTIMATORS:
    table, skipped = depstat.mi_profile(big, offsets, estimator=name)
    assert not skipped
    estimates[name] = table

side_by_side = pl.DataFrame({"offset": offsets, "exact": truth, **{n: t["mi_bits"] for n, t in estimates.items()}})
side_by_side.filter(pl.col("offset").is_in([1, 3, 10, 28, 104, 390, 1055, 2048]))

# %% [markdown]
# The same numbers as figures: estimates against the exact profile (left), and the error
# estimate − exact with depstat's accuracy bar, max(0.005 bits, 2 % of the exact MI),
# shaded (right). Both vertical axes are *symlog*: linear near zero, logarithmic beyond,
# so that zero and four bits fit on one axis.

# %%
tolerance = np.maximum(0.005, 0.02 * truth)
fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.6))
left.plot(offsets, truth, "k-", lw=3, alpha=0.35, label="exact")
for name, table in estimates.items():
    style = dict(lw=2.2, color="C3") if name == depstat.DEFAULT_ESTIMATOR else dict(lw=1.1)
    left.plot(offsets, table["mi_bits"], ".-", label=name, **style)
    right.plot(offsets, table["mi_bits"].to_numpy() - truth, ".-", label=name, **style)
right.fill_between(offsets, -tolerance, tolerance, color="k", alpha=0.12, label="accuracy bar")
for ax, title in ((left, "MI estimates, 1M tokens"), (right, "estimate − exact")):
    ax.set_xscale("log")
    ax.set_yscale("symlog", linthresh=1e-2)
    ax.set_xlabel("offset r (tokens)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
left.set_ylabel("bits")
right.legend(fontsize=8, ncol=2)
plt.show()


# %% [markdown]
# One row per estimator: the worst error relative to the bar, the error at r = 1 and at
# the longest offset, how many of the 23 intervals contain the exact value, and what
# `depstat.analysis.dependency` reads from the profile as a kernel (section 3 explains it): its
# *kind*, the width W that notebook 3 turns into a RoPE base, and what the chosen fit keeps
# at the longest offset beyond its local part (`far`: its floor, the part of I(r) that
# reaches every offset alike, plus any power-law tail). The same is read from the exact
# profile (`depstat.analysis.known.exact_curve`: no errors, no replicates).

# %%
def width(table: pl.DataFrame, name: str = "sample") -> depstat.analysis.dependency.Width:
    """Kernel width of one `mi_profile` table (`curve` selects a granularity, so the table gets one)."""
    return kernel_width(fitted(curve(table.with_columns(granularity=pl.lit(name)), name)))


def far(w: depstat.analysis.dependency.Width) -> float:
    """The chosen fit at the longest offset less its local part: floor plus tail."""
    fit = w.fits[w.preferred_model]
    return float(fit.floor + fit.tail(w.r_max))


def scorecard(tables: dict[str, pl.DataFrame], exact: np.ndarray) -> pl.DataFrame:
    tol = np.maximum(0.005, 0.02 * exact)
    rows = []
    for name, t in tables.items():
        w = widths[name]
        err = t["mi_bits"].to_numpy() - exact
        covered = (t["ci_low"].to_numpy() <= exact) & (exact <= t["ci_high"].to_numpy())
        rows.append({
            "estimator": name, "worst |error| / bar": np.abs(err / tol).max(), "error at r=1": err[0],
            "error at r=2048": err[-1], "intervals covering exact": f"{covered.sum()}/{len(exact)}",
            "kind": w.kind, "W": w.W, "alpha": w.alpha, "floor (bits)": w.floor, "far (bits)": far(w),
        })
    return pl.DataFrame(rows)


true_width = kernel_width(fitted(exact_curve(offsets, truth)))
widths = {name: width(t, name) for name, t in estimates.items()}
card = scorecard(estimates, truth)
print(f"exact profile: {true_width.kind}, W = {true_width.W:.1f} tokens, floor {true_width.floor:.3g} bits")
card

# %% [markdown]
# What the table says:
#
# - **plug-in** (maximum-likelihood entropies) is off by tenths of a bit *where the truth
#   is zero*, and its profile never comes down (`error at r=2048`). That is the way plug-in
#   misleads: not a small offset everywhere, but a long flat tail that looks like
#   long-range dependence. Read as a kernel, the tail is not counted as long dependencies:
#   plug-in (and Miller–Madow) come out `composite`, an exponential local part on a
#   "power-law tail" whose exponent α is zero, B r⁰ = B, a constant: a second floor, which
#   the fit splits from the floor arbitrarily (so the floor column alone shows little). W,
#   read from the local part, stays close to the exact one (compared in the cell below); the
#   `far` column, floor plus tail, is where the bias shows. The unbiased estimators are
#   `characteristic`, as the exact profile is.
# - **miller-madow** removes the first-order bias term and is still far off; **grassberger**
#   and the **jackknife** correction get within a few times the bar (the jackknife
#   over-corrects into negative values at long offsets); the null-corrected
#   estimators (**shuffle**, **rotation**, **grassberger-rotation**) subtract the MI of
#   pairs that are independent by construction and are on the bar at long offsets.
# - `rotation` and `shuffle` over-correct at r = 1 (a negative `error at r=1`): the plug-in
#   null has a smaller bias than the strongly concentrated real joint. The default,
#   `grassberger-rotation`, errs the other way there, by the share of I(1) printed below.
#   docs/estimators.md has the full benchmark over sample sizes and a slower chain.

# %%
for name, t in estimates.items():
    w = widths[name]
    print(f"{name:>22}: error at r=1 {100 * (t['mi_bits'][0] - truth[0]) / truth[0]:+.1f} % of I(1); "
          f"W {w.W:.1f} vs exact {true_width.W:.1f}; {w.kind}, alpha {w.alpha if w.alpha is None else round(w.alpha, 3)}; "
          f"floor {w.floor:.3f}, far {far(w):.3f} bits")

# %% [markdown]
# ### Why the plug-in tail is there
#
# For N pairs the plug-in MI exceeds the truth by about (K_xy − K_x − K_y + 1) / (2 N ln 2)
# bits, where K counts the occupied cells of the joint table and of the two marginals.
# At long offsets the two tokens are nearly independent, so the joint spreads over up to
# V² cells with only N pairs to fill them. We can count the cells at r = 2048 directly
# from the token stream:

# %%
r = int(offsets[-1])
docs = big.tokens.reshape(big.n_docs, -1).astype(np.int64)
x, y = docs[:, :-r].ravel(), docs[:, r:].ravel()
k_xy, k_x, k_y = np.unique(x * big.vocab_size + y).size, np.unique(x).size, np.unique(y).size
first_order = (k_xy - k_x - k_y + 1) / (2 * x.size * np.log(2))
print(f"r = {r}: N = {x.size:,} pairs fill {k_xy:,} of V² = {big.vocab_size ** 2:,} joint cells "
      f"({x.size / k_xy:.1f} pairs per occupied cell)")
print(f"first-order plug-in bias {first_order:.3f} bits; "
      f"plug-in estimate {estimates['plugin']['mi_bits'][-1]:.3f}; exact {truth[-1]:.3f}")

# %% [markdown]
# The first-order term explains part of the tail, not all of it: with on average only a
# few pairs per occupied cell the expansion behind it breaks down, which is why
# Miller–Madow (which subtracts exactly this term) still leaves a tail.
#
# A bias of this kind shrinks like 1/N. A tail whose height depends on how much data you
# happened to have is a property of the sample, not of the source:

# %%
plug_small, _ = depstat.mi_profile(small, offsets, estimator="plugin")
default_small, _ = depstat.mi_profile(small, offsets)
tail = offsets >= 400
for label, t_small, t_big in (("plugin", plug_small, estimates["plugin"]),
                              (depstat.DEFAULT_ESTIMATOR, default_small, estimates[depstat.DEFAULT_ESTIMATOR])):
    print(f"{label:>22}: mean estimate over r >= 400 (exact 0): "
          f"{t_small['mi_bits'].to_numpy()[tail].mean():+.3f} bits at {small.n_tokens:,} tokens, "
          f"{t_big['mi_bits'].to_numpy()[tail].mean():+.3f} at {big.n_tokens:,}")

# %% [markdown]
# ## 2. Intervals and the noise floor
#
# The interval is a delete-one-block jackknife: the corpus is cut into 20 blocks of whole
# documents, the estimate is recomputed with each block left out, and the spread of
# those 20 values gives a standard error and a Student-t interval (95 % by default; the
# spread of the null draws, `null_draw_se`, and a bound on the estimator's bias,
# `bias_bound`, are added to it in quadrature; the bound is the larger of the bias the
# jackknife sees left and the size of the Grassberger correction over the plug-in).
# `noise_floor` is the interval's half-width: an MI below it cannot be told from zero
# with this much data, and `significant` is false where the interval reaches zero.
#
# Below: the default estimator on 1M tokens, with its interval (band), its noise floor
# (dashed) and the exact profile (grey). Open circles are offsets that are not significant.

# %%
d = estimates[depstat.DEFAULT_ESTIMATOR]
sig = d["significant"].to_numpy()
fig, ax = plt.subplots(figsize=(7.5, 4.4))
ax.plot(offsets, truth, "k-", lw=3, alpha=0.3, label="exact")
ax.fill_between(offsets, d["ci_low"], d["ci_high"], color="C3", alpha=0.2, label="95 % interval")
ax.plot(offsets[sig], d["mi_bits"].to_numpy()[sig], "o", color="C3", label="significant")
ax.plot(offsets[~sig], d["mi_bits"].to_numpy()[~sig], "o", mfc="none", color="C3", label="not significant")
ax.plot(offsets, d["noise_floor"], "--", color="C0", label="noise floor")
ax.set(xscale="log", xlabel="offset r (tokens)", ylabel="bits", title="default estimator, 1M tokens")
ax.set_yscale("symlog", linthresh=1e-3)
ax.grid(alpha=0.3)
ax.legend(fontsize=8)
plt.show()

missed = d.with_columns(exact=pl.Series(truth)).filter(
    (pl.col("exact") < pl.col("ci_low")) | (pl.col("exact") > pl.col("ci_high")))
first_insignificant = offsets[~sig].min()
print(f"exact MI falls below 0.005 bits at r = {offsets[truth < 0.005].min()}; "
      f"first offset the estimate cannot tell from zero: r = {first_insignificant}")
print(f"largest noise floor: {d['noise_floor'].max():.4f} bits; at r = 1: error {d['mi_bits'][0] - truth[0]:+.4f} bits, "
      f"standard error {d['se'][0]:.4f}")
print(f"{missed.height} of {d.height} intervals miss the exact value:")
missed.select("offset", "exact", "mi_bits", "ci_low", "ci_high", "se")

# %% [markdown]
# How to read it:
#
# - Where the exact MI is zero the estimates scatter around zero inside the noise floor,
#   and are flagged not significant: the profile ends where the data can no longer
#   resolve it, not where the plot stops.
# - The noise floor (its largest value is printed above) sets the resolution: the
#   estimate becomes insignificant about where the exact MI drops below it.
# - Coverage is not exact. A 95 % interval should miss about 1 offset in 20. The interval
#   describes sampling noise, not the estimator's remaining *bias*, which the jackknife
#   standard error does not measure: compare the error at r = 1 with its standard error
#   above. Misses are also not independent: neighbouring offsets share the same documents.

# %%
by_name = {row["estimator"]: row for row in card.iter_rows(named=True)}
default_row, plugin_row = by_name[depstat.DEFAULT_ESTIMATOR], by_name["plugin"]
# Checks that keep this notebook honest when the estimators change (CI runs it).
assert default_row["worst |error| / bar"] < 1.5, default_row
assert plugin_row["worst |error| / bar"] > 20 and plugin_row["error at r=2048"] > 0.1, plugin_row
assert by_name["jackknife"]["error at r=2048"] < 0
assert by_name["rotation"]["error at r=1"] < 0 and by_name["shuffle"]["error at r=1"] < 0 < default_row["error at r=1"]
assert true_width.kind == "characteristic" and true_width.floor < 1e-6
biased = {"plugin", "miller-madow"}
assert all(w.kind == "characteristic" for n, w in widths.items() if n not in biased)
assert all(widths[n].kind == "composite" and widths[n].alpha < 0.01 for n in biased)  # a flat "tail": a second floor
assert abs(widths[depstat.DEFAULT_ESTIMATOR].W - true_width.W) <= 0.1 * true_width.W
assert abs(widths["plugin"].W - true_width.W) <= 0.25 * true_width.W  # the plug-in tail does not fool W ...
assert far(widths["plugin"]) > 0.1 and far(widths[depstat.DEFAULT_ESTIMATOR]) < 0.01  # ... and shows beyond it
assert sig[:5].all() and not sig[-5:].any()

# %% [markdown]
# ## 3. The kernel width W, on sources of known scale
#
# `depstat.analysis.dependency` reads a profile as a *kernel*: how far the dependencies reach.
# `curve` takes one granularity's rows from a profile table (with the whole-profile
# jackknife replicates that `mi_profile` records), leaving out offsets that rest on few
# documents; `fitted` fits three decay models, each with a constant floor, to the profile
# and to every replicate:
#
# - an exponential, I = A exp(−(r − 1)/ξ) + floor: a characteristic length ξ;
# - a power law, I = B r^−α + floor: no length of its own;
# - a composite, A exp(−(r − 1)/ξ) + B r^−α + floor: a local part on a scale-free tail.
#
# `Fitted.model` is the power law unless the exponential's chi² gain over it is shown by a
# parametric bootstrap (draws of the power law's fit plus noise with the profile's covariance,
# both models refitted; p ≤ 0.05) and by AICc; the composite where it gains so over both and
# its tail is measured (`Fitted.evidence(richer, simpler)` gives each gain and p-value). `kernel_width`
# says what the chosen model shows (`Width.kind`): `characteristic` (an exponential whose
# width **W = ξ ln 10**, the offset within which 90 % of the kernel above the floor lies, is
# well inside the profiled range), `local` (W of a few tokens), `scale-free` (no length of
# its own: W is None), `composite` (W of the local part, then a tail from the crossover
# r_x), `periodic` or `none`; `chi2_dof` says whether the model describes the data. The
# intervals come from the replicates.
#
# A width is only trustworthy if it follows a scale we know. `synth.block_sequences` makes
# documents of latent blocks of length B (key blocks, and query blocks that copy the key B
# tokens earlier); their MI is a function of r / B only and exactly zero from r = 2B on,
# and `synth.block_exact_mi` gives it exactly. So any sensible W must grow in proportion
# to B. We read W from the exact profile (`exact_curve`, every offset 1 … 1023) and from
# sampled profiles (100 documents of 2048 tokens per B, log-spaced offsets).

# %%
exact_offsets = np.arange(1, 1024)
sample_offsets = depstat.log_offsets(1024, 24)
blocks = (4, 8, 16, 32, 64)
block_rows, block_profiles = [], {}
for B in blocks:
    exact_B = kernel_width(fitted(exact_curve(exact_offsets, synth.block_exact_mi(B, exact_offsets))))
    stream = synth.block_sequences(n_docs=100, doc_len=2048, block=B, seed=1)
    block_profiles[B], skipped = depstat.mi_profile(stream, sample_offsets)
    sampled_B = width(block_profiles[B], f"B={B}")
    block_rows.append({"B": B, "kind (exact)": exact_B.kind, "W exact": exact_B.W, "W exact / B": exact_B.W / B,
                       "kind (sampled)": sampled_B.kind, "W sampled": sampled_B.W, "low": sampled_B.ci_low,
                       "high": sampled_B.ci_high, "W sampled / B": sampled_B.W / B})
block_table = pl.DataFrame(block_rows)
law = {col: np.polyfit(np.log(block_table["B"]), np.log(block_table[col]), 1) for col in ("W exact", "W sampled")}
for col, (slope, intercept) in law.items():
    print(f"{col}: log W = {slope:.3f} log B {intercept:+.3f}, i.e. W ≈ {np.exp(intercept):.2f} B^{slope:.2f}")
block_table

# %% [markdown]
# W follows B: the slope of log W on log B is printed above for both readings, and W / B
# stays nearly constant down each column. The constant itself differs between the exact and
# the sampled profile. The fits weight each point by its standard error, and an exact
# profile has none, so its points are weighted by a relative error floor
# (`depstat.analysis.dependency.REL_SE_FLOOR` of the value) instead, which gives the near-zero tail
# more say. What the check establishes is the proportionality; how a width maps to a
# frequency is notebook 3's subject.
#
# The profiles against r / B, and the three fits on one sampled profile (`Width.fits`, each
# a `DecayFit` with `.predict(r)`):

# %%
show = 16
w_show = width(block_profiles[show], f"B={show}")
fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.4))
for k, B in enumerate(blocks):
    t = block_profiles[B]
    left.plot(t["offset"] / B, t["mi_bits"], ".-", color=f"C{k}", label=f"B = {B}, sampled")
    left.plot(exact_offsets / B, synth.block_exact_mi(B, exact_offsets), "-", color=f"C{k}", lw=3, alpha=0.25)
left.set(xscale="log", xlabel="r / B", ylabel="MI (bits)", title="block sequences (thick: exact)")
left.set_yscale("symlog", linthresh=1e-2)
left.legend(fontsize=8)
t = block_profiles[show]
right.errorbar(t["offset"], t["mi_bits"], yerr=t["se"], fmt="o", ms=3, color="k", label=f"B = {show}, sampled")
r_grid = np.geomspace(1, 1024, 200)
for name, fit in w_show.fits.items():
    right.plot(r_grid, fit.predict(r_grid), label=f"{name} + floor" + (" (preferred)" if name == w_show.preferred_model else ""))
right.axvspan(w_show.ci_low, w_show.ci_high, color="C3", alpha=0.15)
right.axvline(w_show.W, color="C3", label=f"W = {w_show.W:.1f} ({w_show.kind})")
right.set(xscale="log", xlabel="offset r (tokens)", ylabel="MI (bits)", title=f"fits to the B = {show} profile")
right.set_yscale("symlog", linthresh=1e-2)
right.legend(fontsize=8)
for ax in (left, right):
    ax.grid(alpha=0.3)
plt.show()
print(w_show.reason)

# %% [markdown]
# The reason adds that the exponential does not describe the sampled profile (`chi2_dof`,
# far above 1): a block kernel is no exponential (it ends at r = 2B), and its errors are
# small. W is then a summary of the kernel's reach, and still proportional to B.

# %%
# W grows in proportion to the block length, read exactly and from samples.
assert w_show.preferred_model == "exponential" and not w_show.fits_data
for col, (slope, _) in law.items():
    assert abs(slope - 1) < 0.1, (col, slope)
for col in ("W exact / B", "W sampled / B"):
    assert block_table[col].max() / block_table[col].min() < 1.5, block_table
assert set(block_table["kind (exact)"]) | set(block_table["kind (sampled)"]) <= {"characteristic", "local"}
assert (block_table["low"] <= block_table["W sampled"]).all() and (block_table["W sampled"] <= block_table["high"]).all()

# %% [markdown]
# ## 4. A real corpus: the bundled Python documentation
#
# `depstat.profile` does the whole pipeline on a corpus path: read the documents,
# tokenize at each granularity (here UTF-8 bytes and a byte-level BPE with 8k merges
# trained on the corpus itself), count pairs at log-spaced offsets up to `max_offset`, and
# estimate MI with the default estimator and its interval. It returns a `Profile`.

# %%
prof = depstat.profile(str(CORPUS), granularities=["bytes", "bpe-8k"], max_offset=2048)
summary = prof.summary()
print(f"{summary['corpus']['documents_read']} documents; sample: {summary['sampling']['rule']}; "
      f"estimator: {summary['estimator']}")
pl.DataFrame([
    {"granularity": g, "vocab": f["vocab_size"], "tokens": f["n_tokens"], "bytes/token": f["bytes_per_token"],
     "jackknife unit": f["jackknife_unit"], "MI at r=1": f["mi_at_1_bits"],
     "first offset indistinguishable from 0": f["first_offset_indistinguishable_from_zero"]}
    for g, f in summary["granularities"].items()
])

# %% [markdown]
# In a notebook a `Profile` shows itself: a one-line `repr`, and as the cell's value a
# table of its granularities with its figure (`_repr_html_`); `prof.plot()` returns that
# figure (a matplotlib `Figure`) to adjust or save.

# %%
print(repr(prof))
assert len(repr(prof)) < 300
prof

# %%
fig = prof.plot()
assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["bytes", "bpe-8k"]
fig

# %% [markdown]
# `Profile.to_polars()` is the table that `depstat profile --out` saves as
# `profile.parquet`:

# %%
table = prof.to_polars()
table.filter(pl.col("granularity") == "bpe-8k").select(
    "offset", "mi_bits", "ci_low", "ci_high", "noise_floor", "significant", "n_pairs", "n_docs")

# %% [markdown]
# For contrast, the plug-in estimate of the same bpe-8k profile (with 8192 token types
# the joint table has 67M cells for about 100k pairs):

# %%
plug = depstat.profile(str(CORPUS), granularities=["bpe-8k"], max_offset=2048, estimator="plugin").to_polars()

fig, axes = plt.subplots(2, 2, figsize=(13, 7), sharex=True, height_ratios=[3, 1.3])
for col, g in enumerate(prof.granularities):
    t = table.filter(pl.col("granularity") == g)
    o, m, s = t["offset"].to_numpy(), t["mi_bits"].to_numpy(), t["significant"].to_numpy()
    ax = axes[0, col]
    ax.fill_between(o, np.maximum(t["ci_low"], 1e-3), t["ci_high"], color="C3", alpha=0.2, label="95 % interval")
    ax.plot(o[s], m[s], "o-", color="C3", ms=4, label="significant")
    ax.plot(o[~s], np.maximum(m[~s], 1e-3), "o", mfc="none", color="C3", ms=4, label="not significant")
    ax.plot(o, t["noise_floor"], "--", color="C0", label="noise floor")
    if g == "bpe-8k":
        ax.plot(plug["offset"], plug["mi_bits"], "s-", color="grey", ms=3, label="plug-in (same tokens)")
    ax.set(yscale="log", title=f"{g}  ({prof.granularities[g].bytes_per_token:.2f} bytes/token)", ylabel="MI (bits)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    axes[1, col].plot(o, t["n_docs"], ".-", color="k")
    axes[1, col].set(xscale="log", xlabel="offset r (tokens)", ylabel="documents", ylim=(0, None))
    axes[1, col].grid(alpha=0.3)
plt.show()

# %%
bpe = table.filter(pl.col("granularity") == "bpe-8k")
groups = prof.replicates.filter(pl.col("granularity") == "bpe-8k")["replicate"].n_unique()
print(f"{summary['corpus']['documents_read']} documents in {groups} jackknife groups "
      f"({summary['interval']['method'].split(';')[0]})")
print(f"bpe-8k noise floor: {bpe['noise_floor'].min():.2f} to {bpe['noise_floor'].max():.2f} bits; "
      f"documents at the largest offset: {bpe['n_docs'][-1]} of {bpe['n_docs'][0]}")
print(f"plug-in bpe-8k: {plug['mi_bits'].min():.2f} to {plug['mi_bits'].max():.2f} bits; its lowest point is at "
      f"r = {plug['offset'][int(plug['mi_bits'].arg_min())]}, and it ends at {plug['mi_bits'][-1]:.2f} bits")

# %% [markdown]
# Reading the corpus profile:
#
# - **The shape.** At both granularities MI falls steeply over the first tens of tokens
#   and then much more slowly, with information still measurable hundreds of tokens away:
#   that slow tail is what notebook 2 compares across granularities and what notebook 3
#   reads as a kernel (section 3's fits).
# - **The interval is wide** at bpe-8k (its noise floor is printed above). A corpus of a
#   few dozen documents makes jackknife groups of a few documents each, and the documents
#   differ a lot (grammar tables, prose, code samples), so leaving one group out moves the
#   estimate. It is the honest uncertainty for *text like this*, not just counting noise;
#   more documents narrow it.
# - **Where it becomes indistinguishable from zero** is reported per granularity
#   (`first_offset_indistinguishable_from_zero` in the first table; null where every
#   offset is resolved); past it the points are open circles, and the shaded band, on a
#   log axis, is cut at 10⁻³ where the interval reaches zero. That is a statement about
#   this sample, not about where the dependence ends.
# - **The number of documents falls** at long offsets (lower panels): an offset of 2048
#   tokens only exists inside the longest documents, so the far tail describes those few
#   documents (a selection effect). Read `n_docs` next to `mi_bits`; `depstat.analysis.dependency`
#   leaves out the offsets that rest on few documents.
# - **Plug-in** (grey) sits far above the default's interval at every offset and comes
#   back up at the longest ones (printed above): fewer pairs, more bias. With a large
#   vocabulary and little data the plug-in profile is almost entirely bias.
#
# The command line prints the same table: `depstat profile examples/python-docs.jsonl.gz -g bytes -g bpe-8k`.

# %%
assert bpe["significant"][0] and not bpe["significant"][-1]
assert bpe["n_docs"][0] == summary["corpus"]["documents_read"] > bpe["n_docs"][-1]
assert (plug["mi_bits"] > bpe["ci_high"]).all()  # plug-in lies above the default's interval everywhere
assert plug["mi_bits"][-1] > plug["mi_bits"].min()  # and comes back up at the longest offsets
