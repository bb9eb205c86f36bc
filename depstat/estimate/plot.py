"""A profile drawn: every granularity's I(r) on log-log axes, with its interval (``Profile.plot``), and a
figure as HTML for a notebook's ``_repr_html_``."""

from __future__ import annotations

import base64
import io

import numpy as np
import polars as pl
from matplotlib.figure import Figure

FLOOR_BITS = 1e-4  # values at or below it (negative estimates included) are drawn at it


def profile_figure(table: pl.DataFrame, title: str) -> Figure:
    """I(r) of every granularity of a profile table overlaid, its interval as a band; filled points differ
    from zero, hollow ones do not."""
    fig = Figure(figsize=(7.5, 4.5), layout="constrained")  # no pyplot: the caller's backend stays as it was
    ax = fig.subplots()
    for i, name in enumerate(table["granularity"].unique(maintain_order=True)):
        t = table.filter(pl.col("granularity") == name).sort("offset")
        r, mi = t["offset"].to_numpy(), np.maximum(t["mi_bits"].to_numpy(), FLOOR_BITS)
        colour, sig = f"C{i % 10}", t["significant"].to_numpy()
        ax.fill_between(r, np.maximum(t["ci_low"].to_numpy(), FLOOR_BITS), np.maximum(t["ci_high"].to_numpy(), FLOOR_BITS),
                        color=colour, alpha=0.15, lw=0)
        ax.plot(r, mi, "-", color=colour, lw=1, label=name)
        ax.plot(r[sig], mi[sig], "o", color=colour, ms=3)
        ax.plot(r[~sig], mi[~sig], "o", mfc="white", mec=colour, ms=3)
    ax.set(xscale="log", yscale="log", xlabel="offset r (tokens)",
           ylabel=f"I(r) (bits; at most {FLOOR_BITS:g} drawn there)",
           title=title)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def figure_html(fig: Figure) -> str:
    """An ``<img>`` holding the figure as an inline PNG (for ``_repr_html_``)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    return f'<img src="data:image/png;base64,{base64.b64encode(buffer.getvalue()).decode()}"/>'
