"""Per-group profiles and advice: each value of a field (ClimbMix's clusters, a ``source`` column)
profiled and analysed with the same offsets, granularities and settings as the whole corpus.

A group's documents are those of the whole corpus's sample that carry its value: with a budget
(``max_docs`` / ``max_tokens``), the whole sample is drawn first and each group is profiled on
its share of it (the same documents, since the sample is a prefix of one seeded order), so the
groups' counts add up to the sample's. Vocabularies (BPE, words) are trained on each group's own
documents, as for a model trained on that group alone.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from depstat.analysis.result import MODEL_SETTINGS, Analysis, Settings, analyze
from depstat.errors import DepstatError
from depstat.estimate.profile import Profile
from depstat.files import atomic_write
from depstat.io.corpus import Corpus
from depstat.io.sampling import DEFAULT_SAMPLE, select
from depstat.pipeline import local_copy, profile

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MAX_GROUPS = 64


@dataclass(frozen=True)
class Group:
    """One group: its value, how many of the sample's documents it holds, and its results
    (``error`` says why a group has no profile or no analysis)."""

    value: str
    n_docs: int
    profile: Profile | None
    analysis: Analysis | None
    error: str | None = None

    def row(self) -> dict:
        """The group's line in the table across groups."""
        row: dict = {"group": self.value, "docs": self.n_docs}
        if self.profile is not None:
            finest = next(iter(self.profile.granularities.values()))
            row["tokens"] = finest.n_tokens
        if self.analysis is not None:
            a, w = self.analysis, self.analysis.widths[self.analysis.granularity]
            rec = a.recommendation
            row.update({"granularity": a.granularity, "kernel": w.kind, "W": w.W, "alpha": w.alpha,
                        "verdict": a.self_similarity.verdict, "onset": a.self_similarity.onset_tokens,
                        "rope_theta": rec.rope_theta, "extension": _extension(a)})
        row["note"] = self.error
        return row

    def to_dict(self) -> dict:
        """The group's entry of summary.json's ``groups``."""
        out: dict = {"n_docs": self.n_docs, "error": self.error}
        if self.profile is not None:
            out["n_tokens"] = {k: g.n_tokens for k, g in self.profile.granularities.items()}
        if self.analysis is not None:
            d = self.analysis.to_dict()
            out.update(W=d["W"], self_similarity=d["self_similarity"], recommendation=d["recommendation"])
        return out


@dataclass(frozen=True)
class Groups:
    """The groups of one field, in the order of their values."""

    field: str
    groups: tuple[Group, ...]

    @property
    def table(self) -> pl.DataFrame:
        """One row per group: documents, tokens, the kernel, the verdict and the advice."""
        return pl.DataFrame([g.row() for g in self.groups], infer_schema_length=None)

    @property
    def profiles(self) -> pl.DataFrame:
        """Every group's profile table, with a ``group`` column (no rows when no group was profiled)."""
        tables = [g.profile.to_polars().with_columns(pl.lit(g.value, pl.String).alias("group"))
                  for g in self.groups if g.profile is not None]
        return pl.concat(tables, how="diagonal_relaxed") if tables else pl.DataFrame({"group": []}, {"group": pl.String})

    def __repr__(self) -> str:
        done = sum(g.analysis is not None for g in self.groups)
        return f"Groups({self.field!r}: {len(self.groups)} groups, {done} analysed: {', '.join(g.value for g in self.groups[:8])})"

    def plot(self) -> Figure:
        """Every analysed group's profile at its model granularity, overlaid (``figure``)."""
        return self.figure()

    def _repr_html_(self) -> str:
        from depstat.estimate.plot import figure_html

        return f"<p><code>{html.escape(repr(self))}</code></p>{self.table._repr_html_()}{figure_html(self.figure())}"

    def to_dict(self) -> dict:
        return {"field": self.field, "groups": {g.value: {**g.to_dict(), "directory": f"groups/{directory(g.value)}"}
                                                for g in self.groups}}

    def save(self, out: Path) -> None:
        """Each group saved in groups/VALUE/ and the figure across groups, groups.png (their rows
        go into profile.parquet's ``group`` column: ``Profile.save``)."""
        for g in self.groups:
            if g.profile is not None:
                g.profile.save(out / "groups" / directory(g.value), g.analysis)
        if any(g.profile is not None for g in self.groups):
            fig = self.figure()
            atomic_write(out / "groups.png", lambda p: fig.savefig(p, dpi=110, format="png"))

    def figure(self) -> Figure:
        """Every analysed group's profile at its model granularity, overlaid, with its kernel and verdict."""
        from matplotlib.figure import Figure

        fig = Figure(figsize=(7, 4.5))  # no pyplot: the caller's backend stays as it was
        ax = fig.subplots()
        for i, g in enumerate(x for x in self.groups if x.analysis is not None):
            a = g.analysis
            t = g.profile.table.filter(pl.col("granularity") == a.granularity).sort("offset")
            w = a.widths[a.granularity]
            label = f"{g.value} ({a.granularity}): {w.kind}{f', W {w.W:.3g}' if w.W else ''}; {a.self_similarity.verdict}"
            ax.plot(t["offset"], t["mi_bits"].clip(1e-6), "o-", ms=3, color=f"C{i % 10}", label=label)
            ax.fill_between(t["offset"], t["ci_low"].clip(1e-6), t["ci_high"].clip(1e-6), color=f"C{i % 10}",
                            alpha=0.15)
        ax.set(xscale="log", yscale="log", xlabel="offset r (tokens)", ylabel="I(r) (bits; below 1e-6 drawn at 1e-6)",
               title=f"profiles by {self.field!r}")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
        fig.tight_layout()
        return fig


def _extension(a: Analysis) -> str:
    """The group's extension and the lengths it is for, or why there is none."""
    rec = a.recommendation
    if rec.extension is None:
        return "none asked (no --target-length)"
    betas = f", beta_fast {rec.extension.beta_fast:.3g}" if rec.extension.method == "yarn" else ""
    return f"{rec.extension.method} {rec.train_length} -> {rec.target_length}{betas}"


def directory(value: str) -> str:
    """A directory name for a group value (characters other than letters, digits, '.', '_' and '-' become '_')."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", value).strip(".") or "_"


def sample_counts(corpus: Corpus, max_docs: int | None, max_tokens: int | None, seed: int = 0,
                  sample: str = DEFAULT_SAMPLE) -> dict[str, int]:
    """Documents per group in the whole corpus's sample (one pass to select, one to read the groups)."""
    selection = select(corpus, max_docs, max_tokens, seed, sample)
    counts = Counter(doc.group for doc in selection.documents(corpus))
    return dict(sorted(counts.items(), key=lambda kv: _order(kv[0])))


def profile_groups(corpus: Corpus, settings: Settings | None = None, *, max_docs: int | None = None,
                   max_tokens: int | None = None, seed: int = 0, sample: str = DEFAULT_SAMPLE,
                   **profile_options: object) -> Groups:
    """Profile and analyse each group of ``corpus`` (opened with ``group_field``) on its share of the sample."""
    if corpus.group_field is None:
        raise DepstatError("this corpus has no group field", hint="open it with group_field (--group-by FIELD)")
    with local_copy(corpus, max_docs, max_tokens, sample, seed) as (source, streamed):
        if streamed:  # a streamed dataset: its sample, read once, is now the whole local copy
            max_docs = max_tokens = None
        counts = sample_counts(source, max_docs, max_tokens, seed, sample)
        if len(counts) > MAX_GROUPS:
            raise DepstatError(f"field '{corpus.group_field}' has {len(counts)} values in the sample, more than "
                               f"{MAX_GROUPS}", hint="group by a field with fewer values")
        budget = max_docs is not None or max_tokens is not None
        with _one_cluster(profile_options) as options:
            groups = [_one_group(source, value, n, budget, seed, sample, settings, options)
                      for value, n in counts.items()]
    return Groups(corpus.group_field, tuple(groups))


@contextmanager
def _one_cluster(options: dict) -> Iterator[dict]:
    """The profile options, with an embedded Dask cluster (``workers``) started once for all the
    groups: each group's profile connects to its scheduler instead of starting its own."""
    if options.get("workers") is None:
        yield options
        return
    from depstat.cluster import dask_client

    with dask_client(options["workers"]) as client:
        yield {**options, "workers": None, "scheduler": client.scheduler.address}


def _one_group(corpus: Corpus, value: str, n: int, budget: bool, seed: int, sample: str, settings: Settings | None,
               profile_options: dict) -> Group:
    """One group (``n`` documents of the sample) profiled and analysed, or the reason it could not be."""
    try:
        prof = profile(corpus.only(value), max_docs=n if budget else None, seed=seed, sample=sample,
                       **profile_options)
    except DepstatError as err:
        return Group(value, n, None, None, f"not profiled: {err}")
    try:
        return Group(value, n, prof, analyze(prof, settings or Settings(defaults=MODEL_SETTINGS)))
    except DepstatError as err:
        return Group(value, n, prof, None, f"not analysed: {err}")


def _order(value: str) -> tuple:
    """Numbers in numeric order, then the other values in text order."""
    try:
        return (0, float(value), value)
    except ValueError:
        return (1, 0.0, value)
