"""depstat.pipeline: the run ``depstat profile`` makes, from a corpus to a ``Profile``.

Read and sample documents (``depstat.io``), tokenize them at each granularity
(``depstat.tokenize``), count and estimate each stream's MI profile
(``depstat.estimate.profile.mi_profile``), locally or on Dask, with the first run's kernels
compiled beside it; a streamed dataset's sample is copied once (``local_copy``).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from depstat.count import kernels
from depstat.count.counting import DENSE_MAX_VOCAB
from depstat.count.kernels import NOTE_BLOCKS
from depstat.count.order import counting_layout
from depstat.engine import Engine, engine
from depstat.errors import DepstatError
from depstat.estimate import estimators as est
from depstat.estimate.profile import (
    DEFAULT_BLOCKS,
    DEFAULT_MAX_OFFSET,
    DEFAULT_NULL_DRAWS,
    DEFAULT_ORDER,
    DEFAULT_POPULATION,
    MIN_PAIRS,
    CountOptions,
    GranularityFacts,
    Order,
    Population,
    Profile,
    Stopwatch,
    check_profile_options,
    log_offsets,
    mi_profile,
)
from depstat.estimate.warmup import real_pairs
from depstat.io.corpus import Corpus, Document, ReadStats, open_corpus
from depstat.io.sampling import (
    DEFAULT_SAMPLE,
    SAMPLE_RULES,
    STREAM_BUFFER,
    SampleRule,
    Selection,
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


def profile(
    corpus: str | Corpus,
    *,
    granularities: Sequence[str] | None = None,
    tokenizers: Sequence[str] = (),
    offsets: Sequence[int] | None = None,
    max_offset: int = DEFAULT_MAX_OFFSET,
    estimator: est.EstimatorName = est.DEFAULT_ESTIMATOR,
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
    sample: SampleRule = DEFAULT_SAMPLE,
    null_draws: int = DEFAULT_NULL_DRAWS,
    order: Order = DEFAULT_ORDER,
    population: Population = DEFAULT_POPULATION,
    **corpus_options: Any,
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
    options = CountOptions(estimator, confidence, n_blocks, seed, null_draws, order, population)
    _check_options(options, sample, {"max_docs": max_docs, "max_tokens": max_tokens, "train_docs": train_docs,
                                     "train_bytes": train_bytes})
    cache = TokenCache(cache_dir) if cache_dir is not None else None
    if isinstance(corpus, str):
        corpus = open_corpus(corpus, **corpus_options)
    if corpus.ids_tokenizer is not None and corpus.ids_tokenizer not in tokenizers:
        tokenizers = (*tokenizers, corpus.ids_tokenizer)  # the given ids, re-made from the decoded text
    grid = np.unique(np.asarray(offsets, dtype=np.int64)) if offsets is not None else log_offsets(max_offset)
    if grid.size == 0 or grid.min() < 1:
        raise DepstatError("offsets must be positive integers")

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


def _check_options(options: CountOptions, sample: str, budgets: dict[str, int | None]) -> None:
    """One line for the first bad option, before any work."""
    est.get(options.estimator)
    check_profile_options(options.confidence, options.null_draws, options.order, options.population, options.seed)
    if sample not in SAMPLE_RULES:
        raise DepstatError(f"unknown sample rule {sample!r}", hint="choose one of " + ", ".join(SAMPLE_RULES))
    if not 2 <= options.n_blocks <= NOTE_BLOCKS:
        raise DepstatError(f"the jackknife needs 2 to {NOTE_BLOCKS:,} blocks, got {options.n_blocks}",
                           hint="--blocks 20 is the default")
    for name, value in budgets.items():
        if value is not None and value < 1:
            raise DepstatError(f"--{name.replace('_', '-')} must be positive, got {value}")


@contextmanager
def kernels_compiled_beside(needed: bool, options: CountOptions, max_offset: int) -> Iterator[Callable[[], None]]:
    """On a first run (Numba's cache lacks the partitioned kernels) that counts 16-bit tokens here, a second
    process compiles those (``depstat.estimate.warmup``) while this one reads, tokenizes and compiles the
    dense kernels of bytes; yields the wait for it, in which this process compiles the real pairs'
    kernels first (``warmup.real_pairs``). Killed if the run ends first."""
    process = None
    if needed and not _partitioned_kernels_cached():
        args = [options.estimator, options.n_blocks, options.null_draws, options.order, options.population, max_offset]
        process = subprocess.Popen([sys.executable, "-m", "depstat.estimate.warmup", *map(str, args)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        announce_compilation(", the partitioned ones in a second process")

    def ready() -> None:
        nonlocal process
        if process is not None:
            if process.poll() is None and "rotate" in est.get(options.estimator).partners:
                # the second process compiles pair emission, then the null's sweep: the real pairs'
                # kernels are compiled here meanwhile (pair emission loaded where it is cached by
                # then), and it loads them from the cache when it comes to them
                real_pairs(options.estimator, options.n_blocks)
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
    streams = _streams(corpus.kind, documents, granularities, tokenizers, vocab_size, cache, run,
                       lambda: selection.training(source, *train))
    # the same documents in the same groups at every granularity, grouped by their bytes (or ids)
    layout = counting_layout(selection.keys, selection.sizes, options.n_blocks)
    tables, facts, skipped = [], {}, {}
    seconds = {"tokenize": 0.0, "count": 0.0, "estimate": 0.0}
    counted: dict[str, str] = {}  # the tokens' digest -> the granularity counted with them
    for stream in Stopwatch(seconds).each("tokenize", streams):
        digest = _tokens_digest(stream)
        if digest in counted:  # a vocabulary the trainer could not fill gives the same tokens: counted once
            first = counted[digest]
            tables.append(next(t for t in tables if t["granularity"][0] == first)
                          .with_columns(pl.lit(stream.name).alias("granularity")))
            facts[stream.name] = GranularityFacts.from_dict({**facts[first].to_dict(), **stream.facts(),
                                                             "same_tokens_as": first})
            skipped[stream.name] = skipped[first]
            continue
        counted[digest] = stream.name
        if stream.vocab_size > DENSE_MAX_VOCAB:
            kernels_ready()  # the partitioned kernels: compiled beside this process on a first run
        table, skip = mi_profile(
            stream, grid, options.estimator, confidence=options.confidence, n_blocks=options.n_blocks,
            seed=options.seed, timings=seconds, counter=run.counter, null_draws=options.null_draws, order=options.order,
            population=options.population, layout=layout,
        )
        if table.height == 0:
            raise _too_few_pairs(stream, int(grid.min()))
        tables.append(table)
        facts[stream.name] = GranularityFacts.from_dict(stream.facts())
        skipped[stream.name] = skip
    return Profile(
        table=pl.concat(tables),
        granularities=facts,
        corpus={**corpus.describe(), **_read_stats(selection.stats)},
        sampling=_sampling(selection, corpus.kind, streamed_rule, options, train),
        estimator=options.estimator,
        confidence=options.confidence,
        skipped_offsets=skipped,
        run={"seconds": seconds, "engine": run.info, **({"cache": {"dir": str(cache.root), **cache.counts}} if cache else {})},
    )


def _streams(
    kind: str, documents: Callable[[], Iterator[Document]], granularities: Sequence[str] | None,
    tokenizers: Sequence[str], vocab_size: int | None, cache: TokenCache | None, run: Engine,
    training: Callable[[], Iterator[str]],
) -> Iterable[TokenStream]:
    """The sample's token streams: the given ids, or the text at each granularity (made as they are read)."""
    if kind == "ids":
        if granularities not in (None, ["ids"], ("ids",)) or tokenizers:
            raise DepstatError(
                "this corpus is already tokenized: its only granularity is the given ids",
                hint="drop --granularity/--tokenizer",
            )
        return [ids_stream(documents(), vocab_size, spool=run.spool)]
    names = check_names(granularities if granularities is not None else DEFAULT_LADDER)
    if not names and not tokenizers:
        raise DepstatError("no granularity chosen")
    return text_streams(documents, names, tokenizers, cache=cache, encode=run.encode, training=training)


def _too_few_pairs(stream: TokenStream, r0: int) -> DepstatError:
    """The error for a stream with no offset of MIN_PAIRS pairs."""
    pairs = int(np.maximum(stream.doc_lengths - r0, 0).sum())
    return DepstatError(
        f"granularity {stream.name!r}: too few token pairs to estimate I(r) at any offset: an offset "
        f"needs {MIN_PAIRS}, and the smallest, r = {r0}, has {pairs} ({stream.n_docs:,} document{'s' * (stream.n_docs != 1)}, "
        f"the longest {int(stream.doc_lengths.max()):,} tokens)",
        hint="profile more or longer documents, or a finer granularity (more tokens per document)",
    )


def _sampling(
    selection: Selection, kind: str, streamed_rule: str | None, options: CountOptions,
    train: tuple[int | None, int | None],
) -> dict:
    """``summary.json``'s sampling: the sample's rule, how vocabularies were trained, and the counting options."""
    sampling = describe(selection, kind)
    if streamed_rule == "shuffled stream":
        sampling["sample"] = "random"
        sampling["rule"] = ("first documents of the dataset's seeded shuffle (shard order, and a buffer of "
                            f"{STREAM_BUFFER:,} rows): " + sampling["rule"].split(": ", 1)[-1])
    sampling.update(_training_rule(kind, *train), document_order=options.order,
                    population=options.population, null_draws=options.null_draws)
    return sampling


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
