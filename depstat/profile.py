"""depstat.profile: mutual-information profiles I(r) of a corpus at several granularities.

The pipeline the ``depstat profile`` command runs: read and sample documents, tokenize at
each granularity, count pairs at every offset, estimate MI with a jackknife interval and
a noise floor. ``profile()`` returns a ``Profile``; ``Profile.save`` writes
``profile.parquet`` and ``summary.json``.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import numpy as np
import polars as pl

from depstat import __version__
from depstat import estimators as est
from depstat.cache import TokenCache
from depstat.corpus import Corpus, Document, open_corpus
from depstat.counting import PairCounter
from depstat.distributed import DaskCounter, Engine, engine
from depstat.errors import DepstatError
from depstat.granularity import (
    DEFAULT_LADDER, DEFAULT_TRAIN_BYTES, DEFAULT_TRAIN_DOCS, check_names, ids_stream, text_streams,
)
from depstat.kernels import NOTE_BLOCKS
from depstat.progress import bar
from depstat.stream import TokenStream

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
}


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
    analysis: dict | None = None  # W, self-similarity, recommendation (depstat.analysis)
    run: dict = field(default_factory=dict)  # seconds per stage and cache use; varies by run, not saved

    def to_polars(self) -> pl.DataFrame:
        """The profile table (granularity, offset, mi_bits, ci_low, ci_high, ...)."""
        return self.table

    def summary(self) -> dict:
        """JSON-able description: corpus, sampling rule, per-granularity facts, estimator."""
        grans = {}
        for name, facts in self.granularities.items():
            rows = self.table.filter(pl.col("granularity") == name)
            insignificant = rows.filter(~pl.col("significant"))["offset"].to_list()
            grans[name] = {
                **facts,
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
                "method": "delete-one-block jackknife, Student t",
                "confidence": self.confidence,
                "noise_floor": "half-width of the interval: MI below it is indistinguishable from zero",
            },
            "granularities": grans,
            **(self.analysis or {}),
        }

    def save(self, out_dir: str | Path) -> Path:
        """Write profile.parquet and summary.json into ``out_dir`` (created if needed)."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        _atomic_write(out / "profile.parquet", lambda p: self.table.write_parquet(p))
        text = json.dumps(self.summary(), indent=2, default=_json_default)
        _atomic_write(out / "summary.json", lambda p: Path(p).write_text(text + "\n"))
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
        return cls(
            table=pl.read_parquet(out / "profile.parquet"),
            granularities=grans,
            corpus=summary["corpus"],
            sampling=summary["sampling"],
            estimator=summary["estimator"],
            confidence=summary["interval"]["confidence"],
            skipped_offsets={k: g.get("skipped_offsets", []) for k, g in summary["granularities"].items()},
            analysis={k: summary[k] for k in _ANALYSIS_KEYS if k in summary} or None,
        )


_ANALYSIS_KEYS = ("settings", "W", "granularity_analysis", "self_similarity", "recommendation")
_DERIVED = {
    "offsets", "mi_at_1_bits", "first_offset_indistinguishable_from_zero",
    "offsets_indistinguishable_from_zero", "skipped_offsets",
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
) -> tuple[pl.DataFrame, list[int]]:
    """MI profile of one TokenStream: a table of rows and the offsets skipped for lack of pairs.

    Records the jackknife unit (a warning for single-document streams, and the Dask graph's
    shape and task count) in ``stream.info``;
    adds the seconds spent counting and estimating to ``timings["count"]``/``["estimate"]``,
    and the counting of this stream alone to ``timings["count <name>"]``.
    """
    clock = _Stopwatch(timings)
    _check_estimator(estimator)
    if not 0 < confidence < 1:
        raise DepstatError(f"confidence must be between 0 and 1, got {confidence}")
    counting = ("count", f"count {stream.name}")
    with clock(*counting):
        counter = counter(stream, n_blocks=n_blocks, seed=seed)
    stream.info["jackknife_unit"] = counter.block_unit
    if stream.n_docs < 2 and est.nulls_needed(estimator):
        stream.info["warning"] = (
            "one document: the null partner lies half the document away, so dependence at that "
            "range would be subtracted as bias"
        )
    skipped, usable = [], []
    for r in sorted({int(r) for r in offsets}):
        (usable if stream.pairs_at(r)[0] >= MIN_PAIRS else skipped).append(r)
    partners = ("real",) + est.nulls_needed(estimator)
    deltas = interval or estimator == "jackknife"  # the jackknife estimator needs them
    sums: dict[tuple[str, int], est.TableSums] = {}
    with bar(desc=f"count {stream.name}", unit="offset", total=len(offsets)) as progress:
        progress.update(len(skipped))
        for batch, batch_sums in clock.each(counting, counter.sweep(
                usable, partners, jackknife=deltas, first_marginal=est.needs_first_marginal(estimator))):
            progress.update(len(batch))
            sums.update(batch_sums)
    if isinstance(counter, DaskCounter):
        stream.info["dask"] = counter.plan
    with clock("estimate"):  # every offset at once: a few kilobytes of sums each
        rows = _rows(stream, usable, estimator, sums, partners, interval, confidence) if usable else []
    table = pl.DataFrame(rows, schema=SCHEMA)
    return table, skipped


def _rows(
    stream: TokenStream, offsets: list[int], estimator: str, sums: dict[tuple[str, int], est.TableSums],
    partners: tuple[str, ...], interval: bool, confidence: float,
) -> list[dict]:
    """The profile table's rows of ``offsets``: the estimates with their intervals,
    the offsets' sums stacked so that the estimators take them at once."""
    real = est.stacked([sums["real", r] for r in offsets])
    nulls = {m: est.stacked([sums[m, r] for r in offsets]) for m in partners[1:]}
    points = est.estimate(estimator, real, nulls)
    if interval:
        se, lo, hi = est.jackknife_intervals(points, *est.block_replicates(estimator, real, nulls), confidence)
    else:
        se = lo = hi = np.full(len(offsets), np.nan)
    rows = []
    for i, r in enumerate(offsets):
        n_pairs, n_docs = stream.pairs_at(r)
        rows.append({
            "granularity": stream.name, "offset": r, "mi_bits": float(points[i]), "ci_low": float(lo[i]),
            "ci_high": float(hi[i]), "se": float(se[i]), "noise_floor": float(hi[i] - points[i]),
            "significant": bool(lo[i] > 0) if np.isfinite(lo[i]) else bool(points[i] > 0),
            "n_pairs": n_pairs, "n_docs": n_docs, "estimator": estimator,
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
    **corpus_options,
) -> Profile:
    """Profile a corpus (a path, glob, ``hf:OWNER/NAME`` or an open Corpus) at each granularity.

    ``offsets`` replaces the log-spaced grid up to ``max_offset`` when given. The sample
    is the first documents in reading order, up to ``max_docs`` documents and
    ``max_tokens`` tokens of the finest granularity (UTF-8 bytes for text, the given ids
    for pre-tokenized input), so every granularity sees the same documents. BPE and word
    vocabularies are trained on the sample's first documents, at most ``train_docs`` of
    them and until ``train_bytes`` of text (None: no such limit). With
    ``cache_dir`` (e.g. ``depstat.cache.default_cache_dir()``), trained vocabularies and
    tokenized shards are kept there and reused (``depstat.cache``); ``Profile.run`` says
    how many, and the seconds spent tokenizing, counting and estimating. With ``workers``
    (an embedded Dask LocalCluster) or ``scheduler`` (an existing cluster's address) the
    pairs are counted on Dask workers (``depstat.distributed``), with the same results, in
    shard tasks of ``shard_tokens`` positions (default ``distributed.graph_plan``'s).
    ``pair_memory`` (bytes) caps the local counter's pair buffers (``PairCounter``).
    """
    _check_estimator(estimator)
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
    grid = np.unique(np.asarray(offsets, dtype=np.int64)) if offsets is not None else log_offsets(max_offset)
    if grid.size == 0 or grid.min() < 1:
        raise DepstatError("offsets must be positive integers")

    with (
        _local_copy(corpus, max_docs, max_tokens) as source,
        engine(workers, scheduler, shared_dir, pair_memory, shard_tokens) as run,
    ):
        return _profile(
            corpus, source, granularities, tokenizers, grid, estimator, confidence, n_blocks,
            max_docs, max_tokens, vocab_size, (train_docs, train_bytes), seed, cache, run,
        )


@contextmanager
def _local_copy(corpus: Corpus, max_docs: int | None, max_tokens: int | None) -> Iterator[Corpus]:
    """The corpus itself, or for a streaming dataset its sample written once to a temporary file.

    Profiling reads the documents once per granularity (and again to train vocabularies);
    a streamed hub dataset would be downloaded that many times.
    """
    if not corpus.streamed:
        yield corpus
        return
    with tempfile.TemporaryDirectory(prefix="depstat-") as tmp:
        path = Path(tmp) / "sample.jsonl"
        field = "input_ids" if corpus.kind == "ids" else "text"
        with bar(desc="download sample", unit="doc") as progress, path.open("w", encoding="utf-8") as f:
            for doc in _sample(corpus, max_docs, max_tokens):
                value = doc.ids.tolist() if corpus.kind == "ids" else doc.text
                f.write(json.dumps({field: value}, ensure_ascii=False) + "\n")
                progress.update(1)
        yield open_corpus(str(path), text_field="text", ids_field="input_ids" if corpus.kind == "ids" else None)


def _profile(
    corpus: Corpus, source: Corpus, granularities: Sequence[str] | None, tokenizers: Sequence[str],
    grid: np.ndarray, estimator: str, confidence: float, n_blocks: int, max_docs: int | None,
    max_tokens: int | None, vocab_size: int | None, train: tuple[int | None, int | None], seed: int,
    cache: TokenCache | None, run: Engine,
) -> Profile:
    """The body of ``profile``: ``source`` is read, ``corpus`` is what gets described."""

    def documents() -> Iterator[Document]:
        return _sample(source, max_docs, max_tokens)

    if next(documents(), None) is None:
        raise DepstatError(
            "the corpus has no non-empty documents", path=corpus.describe().get("spec"),
            hint=_read_hint(corpus),
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
        streams = text_streams(documents, names, tokenizers, train_docs=train[0], cache=cache, encode=run.encode,
                               train_bytes=train[1])

    tables, facts, skipped = [], {}, {}
    seconds = {"tokenize": 0.0, "count": 0.0, "estimate": 0.0}
    for stream in _Stopwatch(seconds).each("tokenize", streams):
        table, skip = mi_profile(
            stream, grid, estimator, confidence, n_blocks, seed, timings=seconds, counter=run.counter,
        )
        if table.height == 0:
            raise DepstatError(
                f"granularity {stream.name!r}: every document is shorter than every offset "
                f"(longest document: {int(stream.doc_lengths.max())} tokens, smallest offset: "
                f"{int(grid.min())})",
                hint="use smaller offsets (--max-offset/--offsets) or longer documents",
            )
        tables.append(table)
        facts[stream.name] = stream.facts()
        skipped[stream.name] = skip
    return Profile(
        table=pl.concat(tables),
        granularities=facts,
        corpus={**corpus.describe(), **_read_stats(corpus)},
        sampling=_sampling_rule(max_docs, max_tokens, corpus.kind, *train),
        estimator=estimator,
        confidence=confidence,
        skipped_offsets=skipped,
        run={"seconds": seconds, "engine": run.info, **({"cache": {"dir": str(cache.root), **cache.counts}} if cache else {})},
    )


def _sample(corpus: Corpus, max_docs: int | None, max_tokens: int | None) -> Iterator[Document]:
    """The first documents in reading order within the document and token budgets.

    Stops as soon as a budget is met, without reading one document too many (a streamed
    source counts what is read).
    """
    used = 0
    for count, doc in enumerate(corpus, start=1):
        used += len(doc.ids) if doc.ids is not None else len(doc.text.encode("utf-8"))
        yield doc
        if (max_docs is not None and count >= max_docs) or (max_tokens is not None and used >= max_tokens):
            return


def _sampling_rule(
    max_docs: int | None, max_tokens: int | None, kind: str, train_docs: int | None, train_bytes: int | None,
) -> dict:
    unit = "given token ids" if kind == "ids" else "UTF-8 bytes"
    if max_docs is None and max_tokens is None:
        rule = "whole corpus"
    else:
        parts = []
        if max_docs is not None:
            parts.append(f"at most {max_docs} documents")
        if max_tokens is not None:
            parts.append(f"documents are added until {max_tokens} {unit} are reached (the last one whole)")
        rule = "first documents in reading order: " + "; ".join(parts)
    out = {"rule": rule, "max_docs": max_docs, "max_tokens": max_tokens, "token_unit": unit}
    if kind == "text":
        limits = ([f"at most {train_docs} documents"] if train_docs is not None else []) + (
            [f"until {train_bytes:,} bytes of text (the last document whole)"] if train_bytes is not None else [])
        out["tokenizer_training"] = (
            f"BPE and word vocabularies trained on the first sampled documents: {'; '.join(limits)}"
            if limits else "BPE and word vocabularies trained on the whole sample"
        )
    return out


def _read_stats(corpus: Corpus) -> dict:
    s = corpus.stats
    return {
        "documents_read": s.documents, "skipped_bad_records": s.skipped,
        "skipped_reasons": dict(s.skipped_reasons), "empty_documents": s.empty,
    }


def _read_hint(corpus: Corpus) -> str:
    s = corpus.stats
    if s.skipped:
        return f"--skip-bad skipped {s.skipped} bad records: {dict(s.skipped_reasons)}"
    return "check the path and the --text-field/--ids-field"


def _check_estimator(name: str) -> None:
    if name not in est.ESTIMATORS:
        raise DepstatError(f"unknown estimator {name!r}", hint="choose one of " + ", ".join(est.ESTIMATORS))


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


def _atomic_write(path: Path, write) -> None:
    """Write to a temporary sibling and rename, so an interrupted run leaves no half file."""
    tmp = path.with_name(path.name + ".tmp")
    write(str(tmp))
    tmp.replace(path)
