"""The order in which a stream's documents are counted, and their jackknife groups: set by the
documents' seeded keys (``depstat.io.sampling.document_key``), not by the order they were read in.

Counted in key order, the rotation null pairs a document with a random other one and a
jackknife group is a random set of documents, so a profile depends on the set of documents
only. Copies of one document (equal keys) are spread over the order first.
"""

from __future__ import annotations

import numpy as np

from depstat.io.sampling import content_key
from depstat.tokenize.stream import TokenStream


def stream_keys(stream: TokenStream, seed: int) -> np.ndarray:
    """A key per document of a stream from its tokens (for streams profiled without a corpus)."""
    starts = np.cumsum(stream.doc_lengths) - stream.doc_lengths
    tok = stream.tokens
    spans = zip(starts.tolist(), stream.doc_lengths.tolist())
    return np.array([content_key(tok[a : a + n].tobytes(), seed) for a, n in spans], dtype=np.uint64)


def spread_duplicates(keys: np.ndarray) -> np.ndarray:
    """The keys with every repeat of a key after its first replaced by a hash of (key, repeat).

    Equal keys are copies of one document, which would be counted side by side: a run of
    copies pairs with one run of other documents in the rotation null, whose table then
    holds the same pair many times and over-corrects (up to bits on a corpus of short,
    repeated documents). Spread, the copies are placed as independently as different
    documents. Copies are interchangeable, so the result still depends on the set of
    documents only; keys that occur once are unchanged."""
    keys = np.asarray(keys, dtype=np.uint64)
    order = np.argsort(keys, kind="stable")
    ranked = keys[order]
    place = np.arange(len(keys))
    first = np.concatenate(([True], ranked[1:] != ranked[:-1])) if len(keys) else np.zeros(0, dtype=bool)
    repeat = (place - np.maximum.accumulate(np.where(first, place, 0))).astype(np.uint64)
    with np.errstate(over="ignore"):  # splitmix64 of key + repeat x golden ratio: wraps by design
        h = ranked + repeat * np.uint64(0x9E3779B97F4A7C15)
        h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        h ^= h >> np.uint64(31)
    out = keys.copy()
    out[order] = np.where(repeat > 0, h, ranked)
    return out


def counting_layout(keys: np.ndarray, sizes: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray | None]:
    """The order of counting (by key, copies of a document spread: ``spread_duplicates``) and each
    document's jackknife group in that order: runs of about equal ``sizes``, the same documents
    at every granularity. No groups (None) under two documents a group: the counter then cuts
    the stream into equal runs of tokens."""
    order = np.argsort(spread_duplicates(keys), kind="stable")
    if len(order) < 2 * n_groups:
        return order, None
    ends = np.cumsum(sizes[order])
    groups = np.minimum(n_groups * (ends - sizes[order]) // max(int(ends[-1]), 1), n_groups - 1)
    return order, groups.astype(np.int64)
