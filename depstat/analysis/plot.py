"""An analysis drawn: one granularity's kernel with its fit, r_x, W and L_train (``Analysis.plot``)."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from depstat.analysis.dependency import Width


def kernel_figure(w: Width, train_length: int, r: np.ndarray, mi: np.ndarray, se: np.ndarray) -> Figure:
    """I(r) above the kernel's floor (± se; offsets beyond the fitted range hollow), the chosen model with
    its local part and tail, r_x, W with its interval, and L_train."""
    fig = Figure(figsize=(9.5, 5), layout="constrained")  # no pyplot: the caller's backend stays as it was
    ax = fig.subplots()
    above = mi - (w.floor or 0.0)
    keep = above > 0
    fitted = keep & (r <= w.r_max)
    ax.errorbar(r[fitted], above[fitted], yerr=np.minimum(se[fitted], 0.99 * above[fitted]), fmt="o", color="C0",
                ms=4, capsize=2, lw=0.8, label=f"I(r) − floor, {w.granularity} (± se)")
    out = keep & (r > w.r_max)
    if out.any():
        ax.plot(r[out], above[out], "o", mfc="white", mec="C0", ms=4,
                label="left out of the fit (too few documents reach it)")
    if w.preferred_model:
        f = w.fits[w.preferred_model]
        x = np.geomspace(1, max(r.max(), train_length), 300)
        ax.plot(x, f.predict(x) - f.floor, color="C0", lw=1.3, label=f"{w.preferred_model} fit")
        if w.preferred_model == "composite":
            ax.plot(x, f.local(x), color="C1", ls=":", lw=1.1, label=f"local part, ξ = {f.xi:.2f}")
            ax.plot(x, f.tail(x), color="C2", ls=":", lw=1.1, label=f"tail, α = {f.alpha:.2f}")
    if w.crossover is not None and w.crossover > 1:
        ax.axvline(w.crossover, color="C2", lw=1.2, ls="--", label=f"r_x = {w.crossover:.1f} tokens")
    if w.W is not None:
        if w.ci_low is not None and w.ci_high is not None:
            ax.axvspan(w.ci_low, w.ci_high, color="C3", alpha=0.12, lw=0, label="W interval")
        ax.axvline(w.W, color="C3", lw=1.5, label=f"W = {w.W:.1f} tokens (q90)")
    ax.axvline(train_length, color="0.4", ls=":", lw=1.2, label=f"L_train = {train_length}")
    ax.set(xscale="log", yscale="log", xlabel="offset r (tokens)", ylabel="I(r) above the floor (bits)",
           title=f"{w.granularity}: {w.kind}")
    if keep.any():  # the data's range, not the local part's fall to zero
        ax.set_ylim(above[keep].min() / 10, above[keep].max() * 3)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="lower left", fontsize=8)
    return fig
