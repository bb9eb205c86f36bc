"""Which documents a profile reads, and in what order it counts them: both set by a seed, not by the file.

A corpus is a set of documents, and real corpora come grouped (by source, directory or
cluster). Every document gets a key, a seeded 64-bit hash of its content
(``document_key``). The random sample of ``--max-docs`` / ``--max-tokens`` is the documents
of smallest key (a bottom-k sample: uniform without replacement, and the same whatever the
reading order), kept in bounded memory as the corpus streams past (``select``). The
documents are then counted in key order (``depstat.count.order``), so the rotation null
pairs a document with a random other one and jackknife groups are random sets of
documents. The old rule, the first documents in reading order, stays available as
``"first"``.
"""

from __future__ import annotations

import copy
import hashlib
import heapq
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np

from depstat.errors import DepstatError
from depstat.io.corpus import Corpus, Document, ReadStats

SampleRule = Literal["random", "first"]
SAMPLE_RULES: tuple[SampleRule, ...] = get_args(SampleRule)
DEFAULT_SAMPLE = "random"
# Documents a streamed (hub) dataset's shuffle buffer holds: ``datasets`` shuffles the order
# of its shards and draws from this buffer, so a sample spreads over shards without
# reading the whole dataset.
STREAM_BUFFER = 10_000


def check_seed(seed: object) -> int:
    """The seed as a non-negative integer, or one clear error."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**32:
        raise DepstatError(f"the seed must be a non-negative integer below 2^32, got {seed!r}")
    return int(seed)


def document_size(doc: Document) -> int:
    """Tokens of the finest granularity: given ids, or UTF-8 bytes of text."""
    return len(doc.ids) if doc.ids is not None else len(doc.text.encode("utf-8"))


def document_key(doc: Document, seed: int) -> int:
    """A seeded 64-bit hash of the document's content (its text, or its ids as int64)."""
    data = np.asarray(doc.ids, dtype=np.int64).tobytes() if doc.ids is not None else doc.text.encode("utf-8")
    return content_key(data, seed)


def content_key(data: bytes, seed: int) -> int:
    """A seeded 64-bit blake2b hash of ``data``."""
    h = hashlib.blake2b(data, digest_size=8, key=seed.to_bytes(8, "little"))
    return int.from_bytes(h.digest(), "little")


@dataclass(frozen=True)
class Selection:
    """The sampled documents: their places in reading order (None: every document), and
    for each, in reading order, its key and size (tokens of the finest granularity)."""

    rule: str
    seed: int
    index: np.ndarray | None
    keys: np.ndarray
    sizes: np.ndarray
    max_docs: int | None = None
    max_tokens: int | None = None
    stats: ReadStats | None = None  # what the selecting pass read, skipped and found empty

    def documents(self, corpus: Corpus) -> Iterator[Document]:
        """The selected documents in reading order (a fresh pass over the corpus, which decodes
        token ids only for them)."""
        return corpus.selected(None if self.index is None else self.index.tolist())

    def training(self, corpus: Corpus, max_docs: int | None, max_bytes: int | None) -> Iterator[str]:
        """The texts vocabularies are trained on: the sampled documents of smallest key, until
        ``max_docs`` documents or ``max_bytes`` bytes (the last one whole; None: no such limit),
        so that the vocabularies, like the sample, do not depend on the reading order."""
        order = np.argsort(self.keys, kind="stable")
        before = np.cumsum(self.sizes[order]) - self.sizes[order]  # bytes of the documents before each
        keep = np.ones(len(order), dtype=bool)
        if max_docs is not None:
            keep[max_docs:] = False
        if max_bytes is not None:
            keep &= before < max_bytes
        wanted = np.zeros(len(order), dtype=bool)
        wanted[order[keep]] = True
        return (doc.text for doc, take in zip(self.documents(corpus), wanted) if take)


def select(
    corpus: Corpus, max_docs: int | None, max_tokens: int | None, seed: int = 0, rule: str = DEFAULT_SAMPLE,
) -> Selection:
    """One pass over the corpus: keys and sizes, and the sample within the budgets.

    ``random``: the documents of smallest key until ``max_docs`` documents or ``max_tokens``
    tokens are reached (the last document whole), found with a heap of the sample's size.
    ``first``: the first documents in reading order within the same budgets (reading stops
    there). Without budgets both take every document.
    """
    if rule not in SAMPLE_RULES:
        raise DepstatError(f"unknown sample rule {rule!r}", hint="choose one of " + ", ".join(SAMPLE_RULES))
    for name, value in (("max_docs", max_docs), ("max_tokens", max_tokens)):
        if value is not None and value < 1:
            raise DepstatError(f"--{name.replace('_', '-')} must be positive, got {value}")
    seed = check_seed(seed)
    limited = max_docs is not None or max_tokens is not None
    keys, sizes = [], []
    if rule == "first" or not limited:
        for doc in first_documents(corpus, max_docs, max_tokens):
            keys.append(document_key(doc, seed))
            sizes.append(document_size(doc))
        index = np.arange(len(keys)) if limited else None
        return Selection(rule, seed, index, _u64(keys), np.array(sizes, dtype=np.int64), max_docs, max_tokens,
                         copy.deepcopy(corpus.stats))
    heap: list[tuple[int, int, int]] = []  # (-key, place, size): the largest key on top
    total = 0
    for i, doc in enumerate(corpus.selected(None, keep_decoded=False)):  # later passes read only the sample
        key, size = document_key(doc, seed), document_size(doc)
        if len(heap) == max_docs and -heap[0][0] <= key:
            continue  # the sample is full of smaller keys
        heapq.heappush(heap, (-key, -i, size))
        total += size
        while len(heap) > (max_docs or len(heap)) or (max_tokens is not None and total - heap[0][2] >= max_tokens):
            total -= heapq.heappop(heap)[2]
    kept = sorted((-place, -neg_key, size) for neg_key, place, size in heap)
    return Selection(
        rule, seed, np.array([k[0] for k in kept], dtype=np.int64), _u64([k[1] for k in kept]),
        np.array([k[2] for k in kept], dtype=np.int64), max_docs, max_tokens, copy.deepcopy(corpus.stats),
    )


def first_documents(corpus: Corpus, max_docs: int | None, max_tokens: int | None) -> Iterator[Document]:
    """The first documents in reading order within the document and token budgets; stops as
    soon as a budget is met, without reading one document too many (a streamed source counts
    what is read)."""
    used = 0
    for count, doc in enumerate(corpus, start=1):
        used += document_size(doc)
        yield doc
        if (max_docs is not None and count >= max_docs) or (max_tokens is not None and used >= max_tokens):
            return


def _u64(values: list[int]) -> np.ndarray:
    return np.array(values, dtype=np.uint64)


def describe(selection: Selection, kind: str) -> dict:
    """The sampling rule for ``summary.json``: budgets, rule and seed."""
    unit = "given token ids" if kind == "ids" else "UTF-8 bytes"
    max_docs, max_tokens = selection.max_docs, selection.max_tokens
    if max_docs is None and max_tokens is None:
        text = "whole corpus"
    else:
        parts = ([f"at most {max_docs} documents"] if max_docs is not None else []) + (
            [f"documents are added until {max_tokens} {unit} are reached (the last one whole)"]
            if max_tokens is not None else [])
        how = ("a seeded random sample of whole documents (those of smallest content hash)"
               if selection.rule == "random" else "first documents in reading order")
        text = f"{how}: " + "; ".join(parts)
    return {
        "rule": text, "sample": selection.rule, "seed": selection.seed,
        "max_docs": max_docs, "max_tokens": max_tokens, "token_unit": unit,
    }
