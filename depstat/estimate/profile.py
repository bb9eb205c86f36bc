"""depstat.profile: mutual-information profiles I(r) of a corpus at several granularities.

The pipeline the ``depstat profile`` command runs: read and sample documents, tokenize at
each granularity, count pairs at every offset, estimate MI with a jackknife interval and
a noise floor. ``profile()`` returns a ``Profile``; ``Profile.save`` writes
``profile.parquet`` and ``summary.json``.
"""

from __future__ import annotations

import hashlib
import html
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import polars as pl

from depstat.count import kernels
from depstat.count.counting import DENSE_MAX_VOCAB, PairCounter, pairs_from
from depstat.count.distributed import DaskCounter, Engine, engine
from depstat.count.kernels import NOTE_BLOCKS
from depstat.count.order import counting_layout, stream_keys
from depstat.errors import DepstatError
from depstat.estimate import estimators as est
from depstat.files import atomic_write
from depstat.io.corpus import Corpus, Document, ReadStats, open_corpus
from depstat.io.sampling import (
    DEFAULT_SAMPLE,
    SAMPLE_RULES,
    STREAM_BUFFER,
    Selection,
    check_seed,
    describe,
    first_documents,
    select,
)
from depstat.progress import announce_compilation, bar
from depstat.tokenize.cache import TokenCache
from depstat.tokenize.granularity import (
    DEFAULT_LADDER,
    DEFAULT_TRAIN_BYTES,
    DEFAULT_TRAIN_DOCS,
    check_names,
    ids_stream,
    text_streams,
)
from depstat.tokenize.stream import TokenStream

if TYPE_CHECKING:  # matplotlib is imported where a figure is drawn, not with depstat
    from matplotlib.figure import Figure
from depstat.version import __version__

T = TypeVar("T")

DEFAULT_MAX_OFFSET = 2048
DEFAULT_N_OFFSETS = 32
DEFAULT_BLOCKS = 20
MIN_PAIRS = 64  # offsets with fewer pairs are reported as skipped, not estimated

SCHEMA = {
    "granularity": pl.String,
    "offset": pl.Int64,
    "mi_bits": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "se": pl.Float64,
    "noise_floor": pl.Float64,
    "significant": pl.Boolean,
    "n_pairs": pl.Int64,
    "n_docs": pl.Int64,
    "estimator": pl.String,
    "null_draw_se": pl.Float64,  # standard error of the average over null draws, inside "se"
    "bias_bound": pl.Float64,  # max(jackknife's bias left, entropy correction's size), in the interval with "se"
    "replicates": pl.List(pl.Float64),  # the estimate without each jackknife group (NaN: no pairs there)
    "group_pairs": pl.List(pl.Int64),  # the pairs each group holds
}
REPLICATE_COLUMNS = ("replicates", "group_pairs")
DEFAULT_NULL_DRAWS = 2
ORDERS = ("shuffled", "reading")
DEFAULT_ORDER = "shuffled"
POPULATIONS = ("all", "fixed")
DEFAULT_POPULATION = "all"
# offsets whose pairs come from fewer than this share of a stream's documents are said to
# rest on few documents: a change of population, not only of distance
FEW_DOCS_SHARE = 0.5


def log_offsets(max_offset: int, n: int = DEFAULT_N_OFFSETS, extra: Iterable[int] = ()) -> np.ndarray:
    """Distinct integer offsets log-spaced from 1 to ``max_offset``, plus ``extra``."""
    if max_offset < 1:
        raise DepstatError(f"--max-offset must be at least 1, got {max_offset}")
    extra = list(extra)
    if any(int(r) < 1 for r in extra):
        raise DepstatError(f"offsets must be positive integers, got {sorted(extra)}")
    grid = np.round(np.logspace(0, np.log10(max_offset), n)).astype(np.int64)
    return np.unique(np.concatenate([grid, np.asarray(extra, dtype=np.int64)]))


@dataclass
class Profile:
    """MI profiles of one corpus: a table with one row per (granularity, offset) plus facts."""

    table: pl.DataFrame
    granularities: dict[str, dict]
    corpus: dict
    sampling: dict
    estimator: str
    confidence: float
    skipped_offsets: dict[str, list[int]] = field(default_factory=dict)
    run: dict = field(default_factory=dict)  # seconds per stage and cache use; varies by run, not saved

    def to_polars(self) -> pl.DataFrame:
        """The profile table (granularity, offset, mi_bits, ci_low, ci_high, ...)."""
        return self.table.drop(REPLICATE_COLUMNS, strict=False)

    def __repr__(self) -> str:
        grains = ", ".join(f"{name} ({facts['n_tokens']:,} tokens)" for name, facts in self.granularities.items())
        offsets = self.table["offset"]
        return (f"Profile({self.corpus.get('spec')!r}: {grains}; offsets {offsets.min()}-{offsets.max()}; "
                f"{self.estimator}, {self.confidence:.0%} intervals)")

    @property
    def facts(self) -> pl.DataFrame:
        """One row per granularity: vocabulary, tokens, documents, bytes per token."""
        return pl.DataFrame([{"granularity": name, "vocab": f["vocab_size"], "tokens": f["n_tokens"], "docs": f["n_docs"],
                              "bytes/token": f.get("bytes_per_token")} for name, f in self.granularities.items()],
                            schema_overrides={"bytes/token": pl.Float64})

    def plot(self) -> Figure:
        """Every granularity's I(r) with its interval, on log-log axes (a matplotlib Figure)."""
        from depstat.estimate.plot import profile_figure

        return profile_figure(self.table, f"{self.corpus.get('spec', 'profile')}: {self.estimator}, "
                                          f"{self.confidence:.0%} intervals")

    def _repr_html_(self) -> str:
        from depstat.estimate.plot import figure_html

        return f"<p><code>{html.escape(repr(self))}</code></p>{self.facts._repr_html_()}{figure_html(self.plot())}"

    @property
    def has_replicates(self) -> bool:
        """Whether the table holds whole-profile replicates (profiles counted with intervals do)."""
        return "replicates" in self.table.columns and (self.table["replicates"].list.len().max() or 0) > 0

    @property
    def replicates(self) -> pl.DataFrame:
        """Whole-profile jackknife replicates, one row per (granularity, replicate, offset): the
        estimate without jackknife group ``replicate``'s documents (``mi_bits``) and the pairs
        that group holds (``group_pairs``). Named ``replicate``, not ``group``, apart from the
        ``group`` of ``--group-by`` in profile.parquet.
        A group is the same documents at every offset and, from ``profile()``, at every
        granularity, so a statistic of the whole profile (W, a slope) computed on each
        replicate keeps the covariance across offsets. With ``population="fixed"`` a group
        left without documents is dropped and the later ones are numbered down."""
        if not self.has_replicates:
            raise DepstatError("this profile holds no replicates", hint="profile again with intervals")
        return (
            self.table.select("granularity", "offset", "replicates", "group_pairs")
            .with_columns(pl.int_ranges(pl.col("replicates").list.len()).alias("replicate"))
            .explode("replicates", "group_pairs", "replicate")
            .filter(pl.col("group_pairs") > 0)
            .select("granularity", "replicate", "offset", pl.col("replicates").alias("mi_bits"), "group_pairs")
            .sort("granularity", "replicate", "offset")
        )

    def summary(self) -> dict:
        """JSON-able description: corpus, sampling rule, per-granularity facts, estimator."""
        grans = {}
        for name, facts in self.granularities.items():
            rows = self.table.filter(pl.col("granularity") == name)
            insignificant = rows.filter(~pl.col("significant"))["offset"].to_list()
            counted = facts.get("population_documents", facts["n_docs"])  # --population fixed counts fewer
            few = rows.filter(pl.col("n_docs") < FEW_DOCS_SHARE * counted)["offset"]
            grans[name] = {
                **facts,
                "few_documents_from_offset": int(few.min()) if few.len() else None,
                "documents_at_largest_offset": int(rows["n_docs"][-1]) if rows.height else None,
                "offsets": rows.height,
                "mi_at_1_bits": _first(rows.filter(pl.col("offset") == 1)["mi_bits"]),
                "first_offset_indistinguishable_from_zero": min(insignificant) if insignificant else None,
                "offsets_indistinguishable_from_zero": insignificant,
                "skipped_offsets": self.skipped_offsets.get(name, []),
            }
        return {
            "depstat_version": __version__,
            "corpus": self.corpus,
            "sampling": self.sampling,
            "estimator": self.estimator,
            "interval": {
                "method": "weighted delete-a-group jackknife over random groups of whole documents, Student t; "
                          "the spread of the null draws' average added in quadrature; the half-width adds a bias "
                          "bound (bias_bound: the larger of the bias the jackknife sees left and the size of the "
                          "entropy estimator's correction over the plug-in) in quadrature",
                "confidence": self.confidence,
                "noise_floor": "half-width of the interval: MI below it is indistinguishable from zero",
            },
            "granularities": grans,
        }

    def save(self, out_dir: str | Path, analysis: object | None = None, groups: object | None = None) -> Path:
        """Write profile.parquet, replicates.parquet (the whole-profile replicates, when the profile
        has them) and summary.json into ``out_dir`` (created if needed); an ``analysis``
        (``depstat.analyze``) adds its sections to summary.json. ``groups``
        (``depstat.analysis.groups.profile_groups``) adds its ``groups`` section and groups/VALUE/,
        and a ``group`` column to profile.parquet: null on the whole corpus's rows, the group's
        value on each group's rows (``load`` reads the whole corpus's)."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        if groups is not None:
            groups.save(out)
        if self.has_replicates:
            reps = self.replicates
            atomic_write(out / "replicates.parquet", lambda p: reps.write_parquet(p))
        table = self.to_polars()
        rows = groups.profiles if groups is not None else None
        if rows is not None and rows.height:
            table = pl.concat([table.with_columns(pl.lit(None, pl.String).alias("group")), rows], how="diagonal_relaxed")
        atomic_write(out / "profile.parquet", lambda p: table.write_parquet(p))
        summary = {**self.summary(), **(analysis.to_dict() if analysis is not None else {}),
                   **({"groups": groups.to_dict()} if groups is not None else {})}
        text = json.dumps(summary, indent=2, default=_json_default)
        atomic_write(out / "summary.json", lambda p: Path(p).write_text(text + "\n"))
        return out

    @classmethod
    def load(cls, out_dir: str | Path) -> Profile:
        """Read a profile saved by ``save``."""
        out = Path(out_dir)
        for name in ("profile.parquet", "summary.json"):
            if not (out / name).is_file():
                raise DepstatError(f"no {name} here", path=str(out), hint="run depstat profile --out DIR first")
        summary = json.loads((out / "summary.json").read_text())
        grans = {
            k: {f: v for f, v in g.items() if f not in _DERIVED}
            for k, g in summary["granularities"].items()
        }
        table = pl.read_parquet(out / "profile.parquet")
        if "group" in table.columns:  # saved with groups: the whole corpus's rows
            table = table.filter(pl.col("group").is_null()).drop("group")
        return cls(
            table=_with_replicates(table, out / "replicates.parquet"),
            granularities=grans,
            corpus=summary["corpus"],
            sampling=summary["sampling"],
            estimator=summary["estimator"],
            confidence=summary["interval"]["confidence"],
            skipped_offsets={k: g.get("skipped_offsets", []) for k, g in summary["granularities"].items()},
        )


def _with_replicates(table: pl.DataFrame, path: Path) -> pl.DataFrame:
    """A saved profile table with its replicate columns back from replicates.parquet (null without it)."""
    if not path.is_file():
        return table.with_columns(pl.lit(None, SCHEMA[c]).alias(c) for c in REPLICATE_COLUMNS)
    reps = pl.read_parquet(path)
    if "group" in reps.columns:  # saved before the column was named replicate
        reps = reps.rename({"group": "replicate"})
    n = int(reps["replicate"].max()) + 1 if reps.height else 0
    full = (
        table.select("granularity", "offset")
        .join(pl.DataFrame({"replicate": np.arange(n, dtype=np.int64)}), how="cross")
        .join(reps, on=["granularity", "offset", "replicate"], how="left")
        .sort("granularity", "offset", "replicate")
        .group_by("granularity", "offset", maintain_order=True)
        .agg(pl.col("mi_bits").fill_null(np.nan).alias("replicates"), pl.col("group_pairs").fill_null(0))
    )
    return table.join(full, on=["granularity", "offset"], how="left", maintain_order="left")


_DERIVED = {
    "few_documents_from_offset", "documents_at_largest_offset", "offsets", "mi_at_1_bits",
    "first_offset_indistinguishable_from_zero", "offsets_indistinguishable_from_zero", "skipped_offsets",
}


def mi_profile(
    stream: TokenStream,
    offsets: Sequence[int],
    estimator: str = est.DEFAULT_ESTIMATOR,
    confidence: float = 0.95,
    n_blocks: int = DEFAULT_BLOCKS,
    seed: int = 0,
    interval: bool = True,
    timings: dict[str, float] | None = None,
    counter: Callable[..., PairCounter] = PairCounter,
    null_draws: int = DEFAULT_NULL_DRAWS,
    order: str = DEFAULT_ORDER,
    population: str = DEFAULT_POPULATION,
    layout: tuple[np.ndarray, np.ndarray | None] | None = None,
) -> tuple[pl.DataFrame, list[int]]:
    """MI profile of one TokenStream: a table of rows and the offsets skipped for lack of pairs.

    With ``order="shuffled"`` the documents are counted in the order of a seeded hash of
    their content, or in ``layout``'s order with its jackknife groups
    (``count.order.counting_layout``), so the profile depends on the set of documents, not on
    their order; ``"reading"`` counts them as they come. ``null_draws`` rotation nulls (or
    i.i.d. nulls) are averaged, their spread carried into the interval. ``population="fixed"``
    keeps only the documents longer than the largest offset, so every offset rests on the same
    documents. The table's ``replicates`` and ``group_pairs`` columns hold each offset's
    delete-a-group replicates. Records the jackknife unit, the order, the draws and the
    population (and a warning for single-document streams, and the Dask graph's shape) in
    ``stream.info``; adds the seconds spent counting and estimating to
    ``timings["count"]``/``["estimate"]``, and the counting of this stream alone to
    ``timings["count <name>"]``.
    """
    clock = _Stopwatch(timings)
    method = est.get(estimator)
    check_profile_options(confidence, null_draws, order, population, seed)
    counting = ("count", f"count {stream.name}")
    grid = sorted({int(r) for r in offsets})
    given = stream
    with clock(*counting):
        stream = _counted_stream(stream, grid, n_blocks, seed, order, population, layout)
        counter = counter(stream, n_blocks=n_blocks, seed=seed)
    stream.info["jackknife_unit"] = counter.block_unit
    nulls = method.partners
    if stream.n_docs < 2 and nulls:
        stream.info["warning"] = (
            "one document: the null partner lies half the document away, so dependence at that "
            "range would be subtracted as bias"
        )
    stream.info["null_draws"] = null_draws if nulls else 0
    skipped, usable = [], []
    for r in grid:
        (usable if stream.pairs_at(r)[0] >= MIN_PAIRS else skipped).append(r)
    deltas = interval or method.jackknifed
    draws = null_draws if nulls else 1
    sums: list[dict[tuple[str, int], est.TableSums]] = [{} for _ in range(draws)]
    shift, base_seed = counter.shift, counter.seed
    # where the rotation null rotates the pair list (split_rotation) it is counted offset by
    # offset, a count of all the pairs a draw: there the first draw stands for all of them
    cut = pairs_from(stream.doc_lengths, usable) if "rotate" in nulls else len(usable)
    stream.info["pair_list_null_from"] = usable[cut] if cut < len(usable) else None
    with bar(desc=f"count {stream.name}", unit="offset", total=len(grid) * draws) as progress:
        progress.update(len(skipped) * draws)
        for d in range(draws):
            # draw d: the rotation null's partner further on (null_shift), or the i.i.d. null's
            # seed moved on; the real pairs are counted with the first draw
            counter.shift = max(null_shift(stream.n_tokens, d, draws), 1)
            counter.seed = base_seed + d * 1_000_033
            partners = (("real",) if d == 0 else ()) + nulls
            for batch, batch_sums in clock.each(counting, counter.sweep(
                    usable if d == 0 else usable[:cut], partners, jackknife=deltas,
                    first_marginal=method.first_marginal)):
                progress.update(len(batch))
                sums[d].update(batch_sums)
            if d:
                sums[d].update({(m, r): sums[0][m, r] for m in nulls for r in usable[cut:]})
                progress.update(len(usable) - cut)
    counter.shift, counter.seed = shift, base_seed
    if isinstance(counter, DaskCounter):
        stream.info["dask"] = counter.plan
    with clock("estimate"):  # every offset at once: a few kilobytes of sums each
        rows = _rows(stream, usable, estimator, sums, nulls, interval, confidence) if usable else []
    table = pl.DataFrame(rows, schema=SCHEMA)
    given.info.update(stream.info)  # the stream as counted is a copy: its facts go to the caller's
    return table, skipped


def null_shift(n: int, d: int, draws: int) -> int:
    """How far the rotation null's partner lies in draw d of ``draws``: n/2 + d n / (2 draws),
    all in [n/2, n), so no two draws are mirror images (shifts s and n - s pair the same
    documents, in the other direction); one draw is the half-way rotation."""
    return n // 2 + d * n // (2 * draws)


def check_profile_options(confidence: float, null_draws: int, order: str, population: str, seed: int) -> None:
    """One clear error for a bad confidence, number of null draws, order, population or seed."""
    if not 0 < confidence < 1:
        raise DepstatError(f"confidence must be between 0 and 1, got {confidence}")
    if isinstance(null_draws, bool) or not isinstance(null_draws, (int, np.integer)) or not 1 <= null_draws <= 64:
        raise DepstatError(f"--null-draws must be an integer from 1 to 64, got {null_draws!r}")
    if order not in ORDERS:
        raise DepstatError(f"unknown document order {order!r}", hint="choose one of " + ", ".join(ORDERS))
    if population not in POPULATIONS:
        raise DepstatError(f"unknown population {population!r}", hint="choose one of " + ", ".join(POPULATIONS))
    check_seed(seed)


def _counted_stream(
    stream: TokenStream, offsets: list[int], n_blocks: int, seed: int, order: str, population: str,
    layout: tuple[np.ndarray, np.ndarray | None] | None,
) -> TokenStream:
    """The stream as it is counted: its documents in the order of counting with their
    jackknife groups, and only those longer than the largest offset for a fixed population."""
    info = {k: v for k, v in stream.info.items() if k != "population_documents"}
    info.update(document_order=order, population=population)
    docs, groups = np.arange(stream.n_docs), stream.doc_groups  # reading order
    if order == "shuffled" and stream.n_docs > 1:
        if layout is None or len(layout[0]) != stream.n_docs:  # groups of this granularity's own tokens
            info["jackknife_groups"] = "by this granularity's tokens"
            layout = counting_layout(stream_keys(stream, seed), stream.doc_lengths, n_blocks)
        docs, groups = layout
    if population == "fixed":
        longest = max(offsets)
        keep = stream.doc_lengths[docs] > longest
        if not keep.any():
            raise DepstatError(
                f"granularity {stream.name!r}: --population fixed keeps the documents longer than the largest "
                f"offset ({longest}), and none is (longest: {int(stream.doc_lengths.max(initial=0))} tokens)",
                hint="lower --max-offset, or use --population all",
            )
        info["population_documents"] = int(keep.sum())
        docs, groups = docs[keep], groups[keep] if groups is not None else None
    if len(docs) != stream.n_docs or (np.diff(docs) != 1).any():  # one copy, whatever changed
        stream = stream.reordered(docs, groups)
    stream.info = info
    return stream


def _rows(
    stream: TokenStream, offsets: list[int], estimator: str, sums: list[dict[tuple[str, int], est.TableSums]],
    nulls: tuple[str, ...], interval: bool, confidence: float,
) -> list[dict]:
    """The profile table's rows of ``offsets``: the estimates averaged over the null draws
    (``sums``, one dict a draw) with their intervals and replicates, the offsets' sums
    stacked so that the estimators take them at once."""
    real = est.stacked([sums[0]["real", r] for r in offsets])
    draws = [{m: est.stacked([draw[m, r] for r in offsets]) for m in nulls} for draw in sums]
    points, reps, draw_se = est.estimate_draws(estimator, real, draws)
    if interval:
        bias = est.bias_bound(estimator, points, reps, real, draws)
        se, lo, hi = est.intervals(points, reps, confidence, draw_se, bias)
    else:
        se = lo = hi = bias = np.full(len(offsets), np.nan)
    rows = []
    for i, r in enumerate(offsets):
        n_pairs, n_docs = stream.pairs_at(r)
        used = reps.used[i]
        rows.append({
            "granularity": stream.name, "offset": r, "mi_bits": float(points[i]), "ci_low": float(lo[i]),
            "ci_high": float(hi[i]), "se": float(se[i]), "noise_floor": float(hi[i] - points[i]),
            "significant": bool(lo[i] > 0) if np.isfinite(lo[i]) else bool(points[i] > 0),
            "n_pairs": n_pairs, "n_docs": n_docs, "estimator": estimator, "null_draw_se": float(draw_se[i]),
            "bias_bound": float(bias[i]),
            "replicates": np.where(used, reps.values[i], np.nan).tolist() if interval else [],
            "group_pairs": np.where(used, reps.pairs[i], 0).tolist() if interval else [],
        })
    return rows


def profile(
    corpus: str | Corpus,
    granularities: Sequence[str] | None = None,
    tokenizers: Sequence[str] = (),
    offsets: Sequence[int] | None = None,
    max_offset: int = DEFAULT_MAX_OFFSET,
    estimator: str = est.DEFAULT_ESTIMATOR,
    confidence: float = 0.95,
    n_blocks: int = DEFAULT_BLOCKS,
    max_docs: int | None = None,
    max_tokens: int | None = None,
    vocab_size: int | None = None,
    train_docs: int | None = DEFAULT_TRAIN_DOCS,
    train_bytes: int | None = DEFAULT_TRAIN_BYTES,
    seed: int = 0,
    cache_dir: str | Path | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    shared_dir: str | Path | None = None,
    pair_memory: int | None = None,
    shard_tokens: int | None = None,
    sample: str = DEFAULT_SAMPLE,
    null_draws: int = DEFAULT_NULL_DRAWS,
    order: str = DEFAULT_ORDER,
    population: str = DEFAULT_POPULATION,
    **corpus_options,
) -> Profile:
    """Profile a corpus (a path, glob, ``hf:OWNER/NAME`` or an open Corpus) at each granularity.

    ``offsets`` replaces the log-spaced grid up to ``max_offset`` when given. The sample,
    up to ``max_docs`` documents and ``max_tokens`` tokens of the finest granularity (UTF-8
    bytes for text, the given ids for pre-tokenized input), is a seeded random sample of
    whole documents (``sample="random"``; for a streamed dataset, the first documents of its
    seeded shuffle) or the first documents in reading order (``"first"``); every granularity
    sees the same documents, counted in the same seeded order with the same jackknife groups
    (``order``, ``null_draws`` and ``population``: see ``mi_profile``). BPE and word
    vocabularies are trained on the sample's first documents, at most ``train_docs`` of
    them and until ``train_bytes`` of text (None: no such limit). With
    ``cache_dir`` (e.g. ``depstat.tokenize.cache.default_cache_dir()``), trained vocabularies and
    tokenized shards are kept there and reused (``depstat.tokenize.cache``); ``Profile.run`` says
    how many, and the seconds spent tokenizing, counting and estimating. With ``workers``
    (an embedded Dask LocalCluster) or ``scheduler`` (an existing cluster's address) the
    pairs are counted on Dask workers (``depstat.count.distributed``), with the same results, in
    shard tasks of ``shard_tokens`` positions (default ``distributed.graph_plan``'s).
    ``pair_memory`` (bytes) caps the local counter's pair buffers (``PairCounter``). Token ids
    opened with ``ids_tokenizer`` (a corpus option: the ``tokenizer.json`` that made them) are
    decoded and profiled as text, with that tokenizer as one more granularity.
    """
    announce_compilation()
    est.get(estimator)  # an unknown name is one line before any work
    check_profile_options(confidence, null_draws, order, population, seed)
    if sample not in SAMPLE_RULES:
        raise DepstatError(f"unknown sample rule {sample!r}", hint="choose one of " + ", ".join(SAMPLE_RULES))
    if not 2 <= n_blocks <= NOTE_BLOCKS:
        raise DepstatError(f"the jackknife needs 2 to {NOTE_BLOCKS:,} blocks, got {n_blocks}",
                           hint="--blocks 20 is the default")
    for name, value in (("max_docs", max_docs), ("max_tokens", max_tokens), ("train_docs", train_docs),
                        ("train_bytes", train_bytes)):
        if value is not None and value < 1:
            raise DepstatError(f"--{name.replace('_', '-')} must be positive, got {value}")
    cache = TokenCache(cache_dir) if cache_dir is not None else None
    if isinstance(corpus, str):
        corpus = open_corpus(corpus, **corpus_options)
    if corpus.ids_tokenizer is not None and corpus.ids_tokenizer not in tokenizers:
        tokenizers = (*tokenizers, corpus.ids_tokenizer)  # the given ids, re-made from the decoded text
    grid = np.unique(np.asarray(offsets, dtype=np.int64)) if offsets is not None else log_offsets(max_offset)
    if grid.size == 0 or grid.min() < 1:
        raise DepstatError("offsets must be positive integers")

    options = CountOptions(estimator, confidence, n_blocks, seed, null_draws, order, population)
    wide = corpus.kind == "ids" or tokenizers or any(g != "bytes" for g in granularities or DEFAULT_LADDER)
    with (
        kernels_compiled_beside(wide and workers is None and scheduler is None, options, int(grid.max())) as ready,
        local_copy(corpus, max_docs, max_tokens, sample, seed) as (source, streamed_rule),
        engine(workers, scheduler, shared_dir, pair_memory, shard_tokens) as run,
    ):
        if cache is not None:
            source.cache_decoding(cache)  # token ids: every pass after the first reads decoded text
        selection = select(source, max_docs, max_tokens, seed, "first" if streamed_rule else sample)
        return _profile(
            corpus, source, selection, granularities, tokenizers, grid, options, vocab_size,
            (train_docs, train_bytes), cache, run, streamed_rule, ready,
        )


@contextmanager
def kernels_compiled_beside(needed: bool, options: CountOptions, max_offset: int) -> Iterator[Callable[[], None]]:
    """On a first run (Numba's cache lacks the partitioned kernels) that counts 16-bit tokens here, a second
    process compiles those (``depstat.estimate.warmup``) while this one reads, tokenizes and compiles the
    dense kernels of bytes; yields the wait for it. Killed if the run ends first."""
    process = None
    if needed and not _partitioned_kernels_cached():
        args = [options.estimator, options.n_blocks, options.null_draws, options.order, options.population, max_offset]
        process = subprocess.Popen([sys.executable, "-m", "depstat.estimate.warmup", *map(str, args)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        announce_compilation(", the partitioned ones in a second process")

    def ready() -> None:
        nonlocal process
        if process is not None:
            if process.poll() is None:
                print("  waiting for the second process to finish compiling ...", file=sys.stderr, flush=True)
            process.wait()
            process = None

    try:
        yield ready
    finally:
        if process is not None:
            process.kill()


def _partitioned_kernels_cached() -> bool:
    """Whether Numba's on-disk cache holds the null sweep's kernel (read from Numba's cache object; where
    that is not found, taken as cached: nothing is started)."""
    try:
        return Path(kernels.sweep._sweep_worker._cache._cache_file._index_path).is_file()
    except AttributeError:
        return True


@dataclass(frozen=True)
class CountOptions:
    """How every stream of a profile is counted and estimated (``mi_profile``'s options)."""

    estimator: str
    confidence: float
    n_blocks: int
    seed: int
    null_draws: int
    order: str
    population: str


@contextmanager
def local_copy(
    corpus: Corpus, max_docs: int | None, max_tokens: int | None, sample: str, seed: int,
) -> Iterator[tuple[Corpus, str | None]]:
    """The corpus itself, or for a streaming dataset its sample written once to a temporary
    file, with the rule it was drawn by ("first" documents of the seeded shuffle for
    ``sample="random"``; None for a corpus read in place).

    Profiling reads the documents once per granularity (and again to train vocabularies);
    a streamed hub dataset would be downloaded that many times. Its random sample is the
    first documents of ``datasets``' seeded shuffle (shard order and a buffer of
    STREAM_BUFFER rows), which reads only what the sample needs.
    """
    if not corpus.streamed:
        yield corpus, None
        return
    if sample == "random":
        corpus = corpus.shuffled(seed, STREAM_BUFFER)
    with tempfile.TemporaryDirectory(prefix="depstat-") as tmp:
        path = Path(tmp) / "sample.jsonl"
        field = "input_ids" if corpus.kind == "ids" else "text"
        grouped = corpus.group_field is not None
        with bar(desc="download sample", unit="doc") as progress, path.open("w", encoding="utf-8") as f:
            for doc in first_documents(corpus, max_docs, max_tokens):
                record = {field: doc.ids.tolist() if corpus.kind == "ids" else doc.text}
                f.write(json.dumps({**record, **({"group": doc.group} if grouped else {})}, ensure_ascii=False) + "\n")
                progress.update(1)
        local = open_corpus(str(path), text_field="text", ids_field="input_ids" if corpus.kind == "ids" else None,
                            group_field="group" if grouped else None)
        yield local, "shuffled stream" if sample == "random" else "first"


def _profile(
    corpus: Corpus, source: Corpus, selection: Selection, granularities: Sequence[str] | None,
    tokenizers: Sequence[str], grid: np.ndarray, options: CountOptions, vocab_size: int | None,
    train: tuple[int | None, int | None], cache: TokenCache | None, run: Engine, streamed_rule: str | None,
    kernels_ready: Callable[[], None],
) -> Profile:
    """The body of ``profile``: ``source`` is read, ``corpus`` is what gets described."""

    def documents() -> Iterator[Document]:
        return selection.documents(source)

    if len(selection.keys) == 0:
        raise DepstatError(
            "the corpus has no non-empty documents", path=corpus.describe().get("spec"),
            hint=_read_hint(corpus),
        )

    if options.population == "fixed" and int(selection.sizes.max()) <= int(grid.max()):
        raise DepstatError(  # no granularity has documents longer than its finest one's
            f"--population fixed keeps the documents longer than the largest offset ({int(grid.max())}), and none "
            f"is (longest: {int(selection.sizes.max())} {'ids' if corpus.kind == 'ids' else 'bytes'})",
            hint="lower --max-offset, or use --population all",
        )
    if corpus.kind == "ids":
        if granularities not in (None, ["ids"], ("ids",)) or tokenizers:
            raise DepstatError(
                "this corpus is already tokenized: its only granularity is the given ids",
                hint="drop --granularity/--tokenizer",
            )
        streams: Iterable[TokenStream] = [ids_stream(documents(), vocab_size, spool=run.spool)]
    else:
        names = check_names(granularities if granularities is not None else DEFAULT_LADDER)
        if not names and not tokenizers:
            raise DepstatError("no granularity chosen")
        streams = text_streams(documents, names, tokenizers, cache=cache, encode=run.encode,
                               training=lambda: selection.training(source, *train))

    # the same documents in the same groups at every granularity, grouped by their bytes (or ids)
    layout = counting_layout(selection.keys, selection.sizes, options.n_blocks)
    tables, facts, skipped = [], {}, {}
    seconds = {"tokenize": 0.0, "count": 0.0, "estimate": 0.0}
    counted: dict[str, str] = {}  # the tokens' digest -> the granularity counted with them
    for stream in _Stopwatch(seconds).each("tokenize", streams):
        digest = _tokens_digest(stream)
        if digest in counted:  # a vocabulary the trainer could not fill gives the same tokens: counted once
            first = counted[digest]
            tables.append(next(t for t in tables if t["granularity"][0] == first)
                          .with_columns(pl.lit(stream.name).alias("granularity")))
            facts[stream.name] = {**facts[first], **stream.facts(), "same_tokens_as": first}
            skipped[stream.name] = skipped[first]
            continue
        counted[digest] = stream.name
        if stream.vocab_size > DENSE_MAX_VOCAB:
            kernels_ready()  # the partitioned kernels: compiled beside this process on a first run
        table, skip = mi_profile(
            stream, grid, options.estimator, options.confidence, options.n_blocks, options.seed,
            timings=seconds, counter=run.counter, null_draws=options.null_draws, order=options.order,
            population=options.population, layout=layout,
        )
        if table.height == 0:
            r0 = int(grid.min())
            pairs = int(np.maximum(stream.doc_lengths - r0, 0).sum())
            raise DepstatError(
                f"granularity {stream.name!r}: too few token pairs to estimate I(r) at any offset: an offset "
                f"needs {MIN_PAIRS}, and the smallest, r = {r0}, has {pairs} ({stream.n_docs:,} document{'s' * (stream.n_docs != 1)}, "
                f"the longest {int(stream.doc_lengths.max()):,} tokens)",
                hint="profile more or longer documents, or a finer granularity (more tokens per document)",
            )
        tables.append(table)
        facts[stream.name] = stream.facts()
        skipped[stream.name] = skip
    sampling = describe(selection, corpus.kind)
    if streamed_rule == "shuffled stream":
        sampling["sample"] = "random"
        sampling["rule"] = ("first documents of the dataset's seeded shuffle (shard order, and a buffer of "
                            f"{STREAM_BUFFER:,} rows): " + sampling["rule"].split(": ", 1)[-1])
    sampling.update(_training_rule(corpus.kind, *train), document_order=options.order,
                    population=options.population, null_draws=options.null_draws)
    return Profile(
        table=pl.concat(tables),
        granularities=facts,
        corpus={**corpus.describe(), **_read_stats(selection.stats)},
        sampling=sampling,
        estimator=options.estimator,
        confidence=options.confidence,
        skipped_offsets=skipped,
        run={"seconds": seconds, "engine": run.info, **({"cache": {"dir": str(cache.root), **cache.counts}} if cache else {})},
    )


def _training_rule(kind: str, train_docs: int | None, train_bytes: int | None) -> dict:
    """How BPE and word vocabularies were trained, for text corpora."""
    if kind != "text":
        return {}
    limits = ([f"at most {train_docs} documents"] if train_docs is not None else []) + (
        [f"until {train_bytes:,} bytes of text (the last document whole)"] if train_bytes is not None else [])
    return {"tokenizer_training": (
        "BPE and word vocabularies trained on the sampled documents of smallest content hash (the "
        f"order-free rule): {'; '.join(limits)}"
        if limits else "BPE and word vocabularies trained on the whole sample")}


def _tokens_digest(stream: TokenStream) -> str:
    """A digest of a stream's tokens, documents and vocabulary: equal for granularities that tokenize alike."""
    h = hashlib.blake2b(f"{stream.vocab_size} {stream.tokens.dtype}".encode(), digest_size=16)
    h.update(memoryview(np.ascontiguousarray(stream.doc_lengths)).cast("B"))
    h.update(memoryview(np.ascontiguousarray(stream.tokens)).cast("B"))
    return h.hexdigest()


def _read_stats(s: ReadStats) -> dict:
    return {
        "documents_read": s.documents, "skipped_bad_records": s.skipped,
        "skipped_reasons": dict(s.skipped_reasons), "empty_documents": s.empty,
        "skipped_files": list(s.skipped_files),
    }


def _read_hint(corpus: Corpus) -> str:
    s = corpus.stats
    if s.skipped:
        return f"--skip-bad skipped {s.skipped} bad records: {dict(s.skipped_reasons)}"
    return "check the path and the --text-field/--ids-field"


def _first(series: pl.Series) -> float | None:
    return float(series[0]) if series.len() else None


def _json_default(value: object) -> object:
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


class _Stopwatch:
    """Adds elapsed seconds to ``timings[key]`` (nothing when ``timings`` is None)."""

    def __init__(self, timings: dict[str, float] | None) -> None:
        self.timings = timings

    @contextmanager
    def __call__(self, *keys: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            elapsed = time.perf_counter() - start
            for key in keys if self.timings is not None else ():
                self.timings[key] = self.timings.get(key, 0.0) + elapsed

    def each(self, keys: str | tuple[str, ...], items: Iterable[T]) -> Iterator[T]:
        """The items, timing how long each takes to produce (the work of a generator)."""
        items = iter(items)
        keys = (keys,) if isinstance(keys, str) else keys
        while True:
            with self(*keys):
                item = next(items, None)
            if item is None:
                return
            yield item
