"""Mutual-information profiles I(r): one token stream's (``mi_profile``) and a corpus's (``Profile``).

``mi_profile`` counts a stream's pairs at every offset and estimates MI with a jackknife
interval and a noise floor; ``Profile`` holds a corpus's profiles at several granularities
with their facts, and ``Profile.save`` / ``Profile.load`` write and read ``profile.parquet``
and ``summary.json``. ``depstat.pipeline.profile`` makes a ``Profile`` from a corpus.
"""

from __future__ import annotations

import html
import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, TypeVar, get_args

import numpy as np
import polars as pl

from depstat.count.counting import PairCounter, pairs_from
from depstat.count.distributed import DaskCounter
from depstat.count.order import counting_layout, stream_keys
from depstat.errors import DepstatError
from depstat.estimate import estimators as est
from depstat.files import atomic_write
from depstat.io.sampling import (
    check_seed,
)
from depstat.progress import bar
from depstat.tokenize.stream import TokenStream
from depstat.version import __version__

if TYPE_CHECKING:  # matplotlib is imported where a figure is drawn, not with depstat
    from matplotlib.figure import Figure

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
Order = Literal["shuffled", "reading"]
ORDERS: tuple[Order, ...] = get_args(Order)
DEFAULT_ORDER = "shuffled"
Population = Literal["all", "fixed"]
POPULATIONS: tuple[Population, ...] = get_args(Population)
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


@dataclass(frozen=True)
class GranularityFacts:
    """What a profile records of one granularity (``summary.json``'s ``granularities[name]``, less
    what is derived from the table): its vocabulary and size, and how it was tokenized and counted."""

    vocab_size: int
    n_tokens: int
    n_docs: int
    n_bytes: int | None = None  # UTF-8 bytes of the text behind the tokens (None: given token ids)
    bytes_per_token: float | None = None
    requested_vocab_size: int | None = None  # a BPE whose trainer ran out of merges: the size asked
    round_trips: bool | None = None  # its tokens give back the text (None: not measured)
    tokenizer: str | None = None  # the tokenizer.json of a --tokenizer granularity
    vocab_size_from: str | None = None  # given token ids: where the vocabulary size came from
    same_tokens_as: str | None = None  # the granularity whose identical tokens were counted instead
    jackknife_unit: str | None = None  # "documents" or "token blocks"
    jackknife_groups: str | None = None  # set where groups follow this granularity's tokens
    null_draws: int | None = None
    pair_list_null_from: int | None = None  # the offset from which the null rotates the pair list
    population_documents: int | None = None  # --population fixed: the documents counted
    warning: str | None = None
    dask: dict | None = None  # the Dask graph's shape, where the Dask engine counted
    extra: dict = field(default_factory=dict)  # keys of no field above, kept as given

    @classmethod
    def from_dict(cls, facts: Mapping[str, object]) -> GranularityFacts:
        """From a stream's facts or ``summary.json``'s (derived keys dropped, unknown ones in ``extra``)."""
        known = {f.name for f in fields(cls)} - {"extra"}
        return cls(**{k: v for k, v in facts.items() if k in known},
                   extra={k: v for k, v in facts.items() if k not in known and k not in _DERIVED})

    def to_dict(self) -> dict:
        """As ``summary.json`` holds them: the size fields, ``round_trips`` and ``pair_list_null_from``
        always (null where not measured or not rotated), the others where set."""
        always = ("vocab_size", "n_tokens", "n_docs", "n_bytes", "bytes_per_token", "round_trips", "pair_list_null_from")
        out = {f.name: getattr(self, f.name) for f in fields(self)
               if f.name != "extra" and (f.name in always or getattr(self, f.name) is not None)}
        return {**out, **self.extra}

    @property
    def counted_documents(self) -> int:
        """The documents counted: all of them, or with --population fixed those long enough."""
        return self.n_docs if self.population_documents is None else self.population_documents


class Sections(Protocol):
    """What ``Profile.save`` asks of an analysis (``depstat.analyze``'s ``Analysis``): summary.json's sections."""

    def to_dict(self) -> dict: ...


class GroupSections(Sections, Protocol):
    """What ``Profile.save`` asks of per-group results (``depstat.groups.Groups``): their files and rows too."""

    @property
    def profiles(self) -> pl.DataFrame: ...

    def save(self, out: Path) -> None: ...


@dataclass
class Profile:
    """MI profiles of one corpus: a table with one row per (granularity, offset) plus facts."""

    table: pl.DataFrame
    granularities: dict[str, GranularityFacts]
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
        grains = ", ".join(f"{name} ({facts.n_tokens:,} tokens)" for name, facts in self.granularities.items())
        offsets = self.table["offset"]
        return (f"Profile({self.corpus.get('spec')!r}: {grains}; offsets {offsets.min()}-{offsets.max()}; "
                f"{self.estimator}, {self.confidence:.0%} intervals)")

    @property
    def facts(self) -> pl.DataFrame:
        """One row per granularity: vocabulary, tokens, documents, bytes per token."""
        return pl.DataFrame([{"granularity": name, "vocab": f.vocab_size, "tokens": f.n_tokens, "docs": f.n_docs,
                              "bytes/token": f.bytes_per_token} for name, f in self.granularities.items()],
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
            few = rows.filter(pl.col("n_docs") < FEW_DOCS_SHARE * facts.counted_documents)["offset"]
            grans[name] = {
                **facts.to_dict(),
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

    def save(self, out_dir: str | Path, analysis: Sections | None = None, groups: GroupSections | None = None) -> Path:
        """Write profile.parquet, replicates.parquet (the whole-profile replicates, when the profile
        has them) and summary.json into ``out_dir`` (created if needed); an ``analysis``
        (``depstat.analyze``) adds its sections to summary.json. ``groups``
        (``depstat.groups.profile_groups``) adds its ``groups`` section and groups/VALUE/,
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
        grans = {k: GranularityFacts.from_dict(g) for k, g in summary["granularities"].items()}
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
    estimator: est.EstimatorName = est.DEFAULT_ESTIMATOR,
    *,
    confidence: float = 0.95,
    n_blocks: int = DEFAULT_BLOCKS,
    seed: int = 0,
    interval: bool = True,
    timings: dict[str, float] | None = None,
    counter: Callable[..., PairCounter] = PairCounter,
    null_draws: int = DEFAULT_NULL_DRAWS,
    order: Order = DEFAULT_ORDER,
    population: Population = DEFAULT_POPULATION,
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
    clock = Stopwatch(timings)
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
    # where the rotation null rotates the pair list (split_rotation) it is counted offset by
    # offset, a count of all the pairs a draw: there the first draw stands for all of them
    cut = pairs_from(stream.doc_lengths, usable) if "rotate" in nulls else len(usable)
    stream.info["pair_list_null_from"] = usable[cut] if cut < len(usable) else None
    with bar(desc=f"count {stream.name}", unit="offset", total=len(grid) * (null_draws if nulls else 1)) as progress:
        progress.update(len(skipped) * (null_draws if nulls else 1))
        sums = _count_draws(counter, stream.n_tokens, usable, cut, method, null_draws, interval or method.jackknifed,
                            lambda items: clock.each(counting, items), progress.update)
    if isinstance(counter, DaskCounter):
        stream.info["dask"] = counter.plan
    with clock("estimate"):  # every offset at once: a few kilobytes of sums each
        rows = _rows(stream, usable, estimator, sums, nulls, interval, confidence) if usable else []
    table = pl.DataFrame(rows, schema=SCHEMA)
    given.info.update(stream.info)  # the stream as counted is a copy: its facts go to the caller's
    return table, skipped


def _count_draws(
    counter: PairCounter, n_tokens: int, usable: list[int], cut: int, method: est.Estimator, null_draws: int,
    jackknife: bool, timed: Callable[[Iterator], Iterator], advance: Callable[[int], object],
) -> list[dict[tuple[str, int], est.TableSums]]:
    """Table sums of the real pairs and of each draw of the estimator's nulls at the ``usable``
    offsets; from ``usable[cut]`` on, the pair list's null of the first draw stands for every draw."""
    nulls = method.partners
    draws = null_draws if nulls else 1
    sums: list[dict[tuple[str, int], est.TableSums]] = [{} for _ in range(draws)]
    shift, base_seed = counter.shift, counter.seed
    for d in range(draws):
        # draw d: the rotation null's partner further on (null_shift), or the i.i.d. null's
        # seed moved on; the real pairs are counted with the first draw
        counter.shift = max(null_shift(n_tokens, d, draws), 1)
        counter.seed = base_seed + d * 1_000_033
        partners = (("real",) if d == 0 else ()) + nulls
        for batch, batch_sums in timed(counter.sweep(usable if d == 0 else usable[:cut], partners, jackknife=jackknife,
                                                     first_marginal=method.first_marginal)):
            advance(len(batch))
            sums[d].update(batch_sums)
        if d:
            sums[d].update({(m, r): sums[0][m, r] for m in nulls for r in usable[cut:]})
            advance(len(usable) - cut)
    counter.shift, counter.seed = shift, base_seed
    return sums


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


@dataclass(frozen=True)
class CountOptions:
    """How every stream of a profile is counted and estimated (``mi_profile``'s options)."""

    estimator: est.EstimatorName
    confidence: float
    n_blocks: int
    seed: int
    null_draws: int
    order: Order
    population: Population


def _first(series: pl.Series) -> float | None:
    return float(series[0]) if series.len() else None


def _json_default(value: object) -> object:
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


class Stopwatch:
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
