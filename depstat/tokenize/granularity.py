"""Granularities: turn documents into TokenStreams, from UTF-8 bytes to large BPE vocabularies.

Names: ``bytes`` (UTF-8 bytes, 256 symbols), ``bpe-1k``/``bpe-8k``/``bpe-32k``/``bpe-N``
(byte-level BPE trained with ``tokenizers`` on a sample of the corpus), ``words``
(whitespace-separated units, every distinct word its own id, via a ``tokenizers``
WordLevel model) and any ``tokenizer.json`` (a model's real tokenizer). Corpora that
arrive tokenized have exactly one granularity, ``ids``: the given tokenization.
"""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from itertools import chain
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from depstat.errors import DepstatError
from depstat.io.corpus import Document
from depstat.io.tokenizer_file import load_tokenizer
from depstat.progress import bar
from depstat.tokenize.cache import (
    Shard,
    TokenCache,
    digest_texts,
    split_shards,
    tokenizer_key,
    training_key,
)
from depstat.tokenize.stream import (
    Spool,
    TokenStream,
    as_token_array,
    file_backed,
    token_dtype,
)

DEFAULT_LADDER = ("bytes", "bpe-1k", "bpe-8k", "bpe-32k", "words")
_BPE = re.compile(r"^bpe-(\d+)(k?)$")
SPOOL_COPY = 1 << 24  # ids narrowed from one spooled file to another this many at a time
# Vocabularies are trained on the sample's first documents, at most this many and this much
# text: training reads all of it, so a document count alone would let a sample of long
# documents (books, source files) train on gigabytes.
DEFAULT_TRAIN_DOCS = 20_000
DEFAULT_TRAIN_BYTES = 64 << 20


def bpe_vocab_size(name: str) -> int | None:
    """Vocabulary size asked for by a ``bpe-N`` / ``bpe-Nk`` name, or None for other names."""
    m = _BPE.match(name)
    if not m:
        return None
    return int(m.group(1)) * (1024 if m.group(2) else 1)


def check_names(names: Iterable[str]) -> list[str]:
    """Validate granularity names at the edge, with the list of valid ones in the error."""
    out = []
    for name in names:
        if name not in ("bytes", "words") and bpe_vocab_size(name) is None:
            raise DepstatError(
                f"unknown granularity {name!r}",
                hint="use bytes, words, bpe-N or bpe-Nk (e.g. bpe-8k), or --tokenizer PATH",
            )
        size = bpe_vocab_size(name)
        if size is not None and size < 257:
            raise DepstatError(f"granularity {name!r}: a byte-level BPE needs more than 256 tokens")
        out.append(name)
    return out


def train_bpe(texts: Iterable[str], vocab_size: int) -> Tokenizer:
    """Byte-level BPE (GPT-2 style pre-tokenization) trained on ``texts``."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=sys.stderr.isatty(),
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return tok


def truncate_bpe(tokenizer: Tokenizer, vocab_size: int) -> Tokenizer:
    """The byte-level BPE that training with ``vocab_size`` gives, cut from a larger one.

    The trainer adds merges greedily, the most frequent pair first, so a smaller vocabulary's
    merges are the first ones of a larger vocabulary trained on the same texts and its ids are
    the first ids (checked token for token in ``tests/test_granularity.py`` and on 100 MB by
    ``benchmarks/bench_end_to_end.py``): one training serves every size of the ladder.
    """
    data = json.loads(tokenizer.to_str())
    model = data["model"]
    if len(model["vocab"]) <= vocab_size:
        return tokenizer
    vocab = model["vocab"]
    made = [vocab["".join(m) if isinstance(m, list) else m.replace(" ", "", 1)] for m in model["merges"]]
    last = made.index(vocab_size - 1)  # training stops once the merge that makes this id is added
    model["vocab"] = {t: i for t, i in vocab.items() if i < vocab_size}
    model["merges"] = model["merges"][: last + 1]
    return Tokenizer.from_str(json.dumps(data, ensure_ascii=False))


class Refinement:
    """Each token of a BPE split by a smaller one cut from it (``truncate_bpe``): a BPE encodes with
    its first merges the states its full merge list passes through, so every token of the larger
    is a run of the smaller's tokens, and its split is the smaller model's tokenization of the
    token alone. A stream of the larger gives the smaller's stream by a lookup, without encoding
    the text again (checked against direct encoding in ``tests/test_granularity.py``)."""

    def __init__(self, coarse: Tokenizer, fine: Tokenizer) -> None:
        strings = {i: token for token, i in coarse.get_vocab(with_added_tokens=True).items()}
        pieces = [[t.id for t in fine.model.tokenize(strings[i])] for i in range(len(strings))]
        self.starts = np.concatenate([[0], np.cumsum([len(p) for p in pieces])]).astype(np.int64)
        self.pieces = np.fromiter((x for p in pieces for x in p), np.int64, self.starts[-1])
        self.vocab_size = vocab_size_of(fine)

    def stream(self, name: str, coarse: TokenStream, chunk_docs: int = 1 << 14) -> TokenStream:
        """The smaller BPE's stream of the documents of ``coarse``, a chunk of documents at a time."""
        counts = np.diff(self.starts)
        ends = np.cumsum(coarse.doc_lengths)
        tokens, lengths = [], []
        for first in range(0, len(coarse.doc_lengths), chunk_docs):
            docs = coarse.doc_lengths[first:first + chunk_docs]
            lo = int(ends[first - 1]) if first else 0
            t = np.asarray(coarse.tokens[lo:lo + int(docs.sum())], dtype=np.int64)
            n = counts[t]
            out = np.arange(int(n.sum())) + np.repeat(self.starts[t] - (np.cumsum(n) - n), n)
            tokens.append(self.pieces[out].astype(token_dtype(self.vocab_size)))
            at = np.concatenate([[0], np.cumsum(n)])[np.concatenate([[0], np.cumsum(docs)])]
            lengths.append(np.diff(at))
        return TokenStream(
            name=name, vocab_size=self.vocab_size, n_bytes=coarse.n_bytes,
            tokens=np.concatenate(tokens) if tokens else np.zeros(0, token_dtype(self.vocab_size)),
            doc_lengths=np.concatenate(lengths) if lengths else np.zeros(0, np.int64),
        )


def train_words(texts: Iterable[str]) -> Tokenizer:
    """WordLevel tokenizer over whitespace-separated units, with every word seen in ``texts``."""
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.WordLevelTrainer(
        vocab_size=2**31 - 1, min_frequency=1, special_tokens=["[UNK]"],
        show_progress=sys.stderr.isatty(),
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return tok


def tokenizer_name(path: str) -> str:
    """Granularity name for a tokenizer file: its directory name, or the file stem."""
    p = Path(path)
    if p.is_dir() or p.name == "tokenizer.json":
        return (p if p.is_dir() else p.parent).resolve().name or "tokenizer"
    return p.stem


def encode_stream(
    name: str, texts: Iterable[str], tokenizer: Tokenizer | None, cache: TokenCache | None = None,
    spool: bool = False,
) -> TokenStream:
    """Encode documents with a tokenizer (None: UTF-8 bytes) into one TokenStream.

    Documents are encoded a shard (about ``SHARD_BYTES`` of text) at a time with
    ``encode_batch_fast``, which spreads a shard's documents over the ``tokenizers``
    thread pool; with a ``cache``, shards already encoded with this tokenizer are read
    from disk and new ones are stored (UTF-8 bytes are not cached: they are the text).
    With ``spool`` each shard's tokens go to a temporary file as they come, and the stream
    memory-maps it (``stream.Spool``), so the process does not hold them.
    """
    vocab = vocab_size_of(tokenizer)
    chunks: list[np.ndarray] | Spool = Spool(token_dtype(vocab)) if spool else []
    lengths: list[np.ndarray] = []
    n_bytes = 0
    tok_key = tokenizer_key(tokenizer) if tokenizer is not None and cache is not None else None
    with bar(desc=f"encode {name}", unit="doc") as progress:
        for shard in split_shards(texts):
            n_bytes += shard.n_bytes
            ids, lens = encode_shard(name, shard, tokenizer, cache, tok_key)
            chunks.append(ids)
            lengths.append(lens)
            progress.update(len(shard.texts))
    if spool:
        tokens = chunks.array()
    else:
        tokens = np.concatenate(chunks) if chunks else np.zeros(0, token_dtype(vocab))
    return TokenStream(
        name=name, tokens=tokens,
        doc_lengths=np.concatenate(lengths) if lengths else np.zeros(0, np.int64),
        vocab_size=int(vocab), n_bytes=n_bytes,
    )


def vocab_size_of(tokenizer: Tokenizer | None) -> int:
    """Ids a tokenizer can give, added tokens included (256 for UTF-8 bytes)."""
    return 256 if tokenizer is None else tokenizer.get_vocab_size(with_added_tokens=True)


def encode_shard(
    name: str, shard: Shard, tokenizer: Tokenizer | None, cache: TokenCache | None, tok_key: str | None,
) -> tuple[np.ndarray, np.ndarray]:
    """(token ids in the stream's dtype, document lengths) of one shard; through the cache when ``tok_key`` is given."""
    if tokenizer is None:
        ids = np.frombuffer(b"".join(shard.data), dtype=np.uint8)
        lens = np.fromiter((len(d) for d in shard.data), dtype=np.int64, count=len(shard.data))
    elif tok_key is not None:
        ids, lens = cache.tokens(tok_key, shard, vocab_size_of(tokenizer), lambda t: _encode(tokenizer, t))
    else:
        ids, lens = _encode(tokenizer, shard.texts)
    return as_token_array(ids, vocab_size_of(tokenizer), name), lens


def _encode(tokenizer: Tokenizer, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(token ids, document lengths) of a batch, encoded in parallel by ``tokenizers``."""
    ids = [e.ids for e in tokenizer.encode_batch_fast(texts, add_special_tokens=False)]
    lengths = np.fromiter((len(i) for i in ids), dtype=np.int64, count=len(ids))
    flat = np.fromiter(chain.from_iterable(ids), dtype=np.int32, count=int(lengths.sum()))
    return flat, lengths


def ids_stream(documents: Iterable[Document], vocab_size: int | None, spool: bool = False) -> TokenStream:
    """The given tokenization of a pre-tokenized corpus as a TokenStream.

    With ``vocab_size`` given, an id at or above it is an error naming its document. With
    ``spool`` the ids go to a temporary file as they are read and the stream memory-maps it
    (``stream.Spool``; 32-bit ids until the vocabulary is known, then narrowed file to file).
    """
    chunks: list[np.ndarray] | Spool = Spool(token_dtype(vocab_size or 1 << 32)) if spool else []
    lengths = []
    for doc in documents:
        ids = np.asarray(doc.ids, dtype=np.int64)
        lo, hi = (int(ids.min()), int(ids.max())) if ids.size else (0, 0)
        if lo < 0 or hi >= (vocab_size or 1 << 32):
            bad = lo if lo < 0 else hi
            raise DepstatError(
                f"token id {bad} is outside the vocabulary [0, {vocab_size or 1 << 32})",
                path=doc.source, line=doc.line,
                hint="pass the tokenizer's real --vocab-size, or check --eos-id",
            )
        chunks.append(ids)
        lengths.append(len(ids))
    if spool:
        tokens = chunks.array()
    else:
        tokens = np.concatenate(chunks) if chunks else np.zeros(0, np.int64)
    source = "--vocab-size" if vocab_size is not None else "largest id + 1"
    if vocab_size is None:
        vocab_size = int(tokens.max()) + 1 if tokens.size else 1
    if spool and tokens.dtype != token_dtype(vocab_size):  # narrowed without a copy in memory
        narrow = file_backed(len(tokens), token_dtype(vocab_size))
        for i in range(0, len(tokens), SPOOL_COPY):
            narrow[i : i + SPOOL_COPY] = tokens[i : i + SPOOL_COPY]
        tokens = narrow
    return TokenStream(
        name="ids", tokens=tokens, doc_lengths=np.asarray(lengths, dtype=np.int64),
        vocab_size=int(vocab_size), info={"vocab_size_from": source, "round_trips": None},  # no text to give back
    )


ROUND_TRIP_BYTES = 1 << 20  # text of the first documents a tokenizer must give back (``round_trips``)


def round_trips(tokenizer: Tokenizer | None, texts: Iterable[str], max_bytes: int = ROUND_TRIP_BYTES) -> bool:
    """Whether the tokenizer gives back every one of the first texts (up to ``max_bytes``) from its
    ids: its tokens then determine the text they span, so a coarser one sees the same text
    dilated. UTF-8 bytes always do; ``words`` (whitespace dropped, unseen words [UNK]) does not."""
    if tokenizer is None:
        return True
    batch = list(training_texts(texts, None, max_bytes))
    ids = [e.ids for e in tokenizer.encode_batch_fast(batch, add_special_tokens=False)]  # as the streams encode
    return tokenizer.decode_batch(ids, skip_special_tokens=False) == batch


def training_texts(texts: Iterable[str], max_docs: int | None, max_bytes: int | None) -> Iterator[str]:
    """The first texts, up to ``max_docs`` of them and until ``max_bytes`` of UTF-8 are reached
    (the text that reaches it included); None: no such limit. Bounds the cost of training a
    vocabulary whatever the documents' lengths."""
    n_bytes = 0
    for i, text in enumerate(texts):
        if (max_docs is not None and i >= max_docs) or (max_bytes is not None and n_bytes >= max_bytes):
            return
        n_bytes += len(text.encode("utf-8")) if max_bytes is not None else 0
        yield text


def text_streams(
    documents: Callable[[], Iterator[Document]],
    names: list[str],
    tokenizer_paths: Iterable[str] = (),
    train_docs: int | None = None,
    cache: TokenCache | None = None,
    encode: Callable[..., TokenStream] = encode_stream,
    train_bytes: int | None = None,
    training: Callable[[], Iterator[str]] | None = None,
) -> Iterator[TokenStream]:
    """One TokenStream per granularity, re-reading the documents for each (streaming).

    BPE and word vocabularies are trained on the first documents of the sample, at most
    ``train_docs`` of them and until ``train_bytes`` of text (``training_texts``), or on the
    texts ``training`` gives when it is given (``Selection.training``); all of it
    when both are None), the same documents for every vocabulary size. With a ``cache``,
    trained vocabularies and encoded shards are reused across runs. ``encode``
    (``encode_stream``'s signature) turns documents into a stream: here, or on Dask
    workers (``depstat.tokenize.workers.WorkerEncoder``).
    """
    def texts() -> Iterator[str]:
        return (doc.text for doc in documents())

    def sample() -> Iterator[str]:
        return training() if training is not None else training_texts(texts(), train_docs, train_bytes)

    @functools.cache
    def sample_digest() -> str:
        return digest_texts(sample())

    largest = max((bpe_vocab_size(n) or 0 for n in names), default=0)

    @functools.cache
    def trained(kind: str, size: int | None) -> Tokenizer:
        def train() -> Tokenizer:
            return train_words(sample()) if size is None else train_bpe(sample(), size)
        if cache is None:
            return train()
        return cache.tokenizer(training_key("words" if size is None else f"bpe-{size}", sample_digest()), train)

    def vocabulary(name: str) -> Tokenizer:
        size = bpe_vocab_size(name)
        if size is None:
            return trained("words", None)
        return truncate_bpe(trained("bpe", largest), size)

    @functools.cache
    def largest_stream() -> TokenStream:
        return encode(f"bpe-{largest}", texts(), trained("bpe", largest), cache)

    derive = encode is encode_stream and sum(bool(bpe_vocab_size(n)) for n in names) > 1
    for name in names:
        tokenizer = None if name == "bytes" else vocabulary(name)
        size = bpe_vocab_size(name)
        if derive and size is not None and size < largest:  # one encoding serves the ladder's BPEs
            stream = Refinement(trained("bpe", largest), tokenizer).stream(name, largest_stream())
        elif derive and size == largest:
            stream = largest_stream()
            stream.name = name
        else:
            stream = encode(name, texts(), tokenizer, cache)
        if bpe_vocab_size(name):
            stream.info["requested_vocab_size"] = bpe_vocab_size(name)
        stream.info["round_trips"] = round_trips(tokenizer, texts())
        yield stream
    for path in tokenizer_paths:
        tokenizer = load_tokenizer(path)
        stream = encode(tokenizer_name(path), texts(), tokenizer, cache)
        stream.info["tokenizer"] = str(path)
        stream.info["round_trips"] = round_trips(tokenizer, texts())
        yield stream
