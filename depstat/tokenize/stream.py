"""TokenStream: a tokenized corpus as one token array plus document lengths."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from depstat.errors import DepstatError


def token_dtype(vocab_size: int) -> np.dtype:
    """The smallest dtype holding ids below ``vocab_size``: uint8 for bytes, uint16 for most BPE vocabularies."""
    for dtype in (np.uint8, np.uint16, np.uint32):
        if vocab_size <= np.iinfo(dtype).max + 1:
            return np.dtype(dtype)
    return np.dtype(np.int64)


def as_token_array(ids: np.ndarray, vocab_size: int, name: str) -> np.ndarray:
    """``ids`` checked to lie in [0, vocab_size) and stored in ``token_dtype(vocab_size)``."""
    ids = np.ascontiguousarray(ids)
    if ids.ndim != 1 or not np.issubdtype(ids.dtype, np.integer):
        raise DepstatError(f"granularity {name!r}: tokens must be a 1-D integer array")
    if ids.size:
        lo, hi = int(ids.min()), int(ids.max())
        if lo < 0 or hi >= vocab_size:
            bad = lo if lo < 0 else hi
            raise DepstatError(
                f"granularity {name!r}: token id {bad} is outside the vocabulary [0, {vocab_size})",
                hint="pass the right --vocab-size, or check the --eos-id and ids field",
            )
    return ids.astype(token_dtype(vocab_size), copy=False)


def file_backed(n: int, dtype: np.dtype | type) -> np.ndarray:
    """A writable array of n items in an unlinked temporary file (``TMPDIR`` decides where),
    memory-mapped: its pages are the operating system's to write out and drop, not the
    process's anonymous memory."""
    dtype = np.dtype(dtype)
    if n == 0:
        return np.zeros(0, dtype)
    with tempfile.TemporaryFile(prefix="depstat-") as f:  # the mapping keeps the file alive
        f.truncate(n * dtype.itemsize)
        return np.memmap(f, dtype=dtype, mode="r+", shape=(n,))


def is_file_backed(a: np.ndarray) -> bool:
    """Whether the array, or an array it views, is memory-mapped."""
    while isinstance(a, np.ndarray) and not isinstance(a, np.memmap):
        a = a.base
    return isinstance(a, np.memmap)


class Spool:
    """Token arrays appended to an unlinked temporary file as they come, then one ``file_backed`` array."""

    def __init__(self, dtype: np.dtype | type) -> None:
        self.dtype = np.dtype(dtype)
        self.file = tempfile.TemporaryFile(prefix="depstat-")
        self.n = 0

    def append(self, ids: np.ndarray) -> None:
        np.ascontiguousarray(ids, dtype=self.dtype).tofile(self.file)
        self.n += len(ids)

    def array(self) -> np.ndarray:
        """Everything appended, memory-mapped (the spool is closed)."""
        with self.file as f:
            f.flush()
            return np.memmap(f, dtype=self.dtype, mode="r+", shape=(self.n,)) if self.n else np.zeros(0, self.dtype)


@dataclass
class TokenStream:
    """The documents of one granularity, concatenated; pairs never cross ``doc_lengths``.

    Tokens are kept in ``token_dtype(vocab_size)`` (1 byte a token for bytes, 2 for BPE
    vocabularies up to 65,536): a profile holds the stream until it is counted. Streams
    encoded on Dask workers memory-map the ``source_file`` the workers wrote, and spooled
    ones (``encode_stream(spool=True)``, used with ``--pair-memory``) an unlinked temporary file.
    ``n_bytes`` is the UTF-8 size of the text behind the tokens (None for corpora that
    arrived already tokenized), so ``bytes_per_token`` is the compression ratio.
    """

    name: str
    tokens: np.ndarray
    doc_lengths: np.ndarray
    vocab_size: int
    n_bytes: int | None = None
    info: dict = field(default_factory=dict)
    source_file: Path | None = None  # the .npy that ``tokens`` memory-maps, when it does
    # the jackknife group of each document (non-decreasing), where the caller sets them, so
    # that every granularity of a corpus deletes the same documents together
    doc_groups: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.tokens = as_token_array(self.tokens, self.vocab_size, self.name)
        self.doc_lengths = np.asarray(self.doc_lengths, dtype=np.int64)
        if int(self.doc_lengths.sum()) != self.tokens.shape[0] or (self.doc_lengths < 0).any():
            raise DepstatError(
                f"granularity {self.name!r}: document lengths add up to "
                f"{int(self.doc_lengths.sum())} but there are {self.tokens.shape[0]} tokens"
            )

    def reordered(self, order: np.ndarray, doc_groups: np.ndarray | None = None) -> TokenStream:
        """The documents ``order`` names (a permutation, or a subset), in that order, as a new
        stream; ``doc_groups`` gives each of them its jackknife group. A memory-mapped stream
        gives a memory-mapped copy (``file_backed``). A subset keeps the bytes per token."""
        order = np.asarray(order, dtype=np.int64)
        starts = np.cumsum(self.doc_lengths) - self.doc_lengths
        lengths = self.doc_lengths[order]
        n = int(lengths.sum())
        out = file_backed(n, self.tokens.dtype) if is_file_backed(self.tokens) else np.empty(n, dtype=self.tokens.dtype)
        at = 0
        for start, length in zip(starts[order].tolist(), lengths.tolist()):
            out[at : at + length] = self.tokens[start : start + length]
            at += length
        whole = len(order) == self.n_docs
        n_bytes = self.n_bytes if whole or self.n_bytes is None else round(self.bytes_per_token * n) if n else 0
        return TokenStream(self.name, out, lengths, self.vocab_size, n_bytes, dict(self.info), None, doc_groups)

    @property
    def n_tokens(self) -> int:
        return int(self.tokens.shape[0])

    @property
    def n_docs(self) -> int:
        return int(self.doc_lengths.shape[0])

    @property
    def bytes_per_token(self) -> float | None:
        return self.n_bytes / self.n_tokens if self.n_bytes is not None and self.n_tokens else None

    def pairs_at(self, r: int) -> tuple[int, int]:
        """(pairs, contributing documents) at offset r: each document gives max(0, len - r)."""
        extra = self.doc_lengths - r
        return int(extra[extra > 0].sum()), int((extra > 0).sum())

    def facts(self) -> dict:
        """Vocabulary size, token and document counts, bytes per token."""
        return {
            "vocab_size": int(self.vocab_size),
            "n_tokens": self.n_tokens,
            "n_docs": self.n_docs,
            "n_bytes": self.n_bytes,
            "bytes_per_token": self.bytes_per_token,
            **self.info,
        }
