"""On-disk cache of tokenized shards and trained vocabularies, so a rerun skips tokenization.

The sampled documents of one granularity are cut into shards of about ``SHARD_BYTES`` of
text, where a document's digest is 0 mod ``CUT_ONE_IN`` (at most ``CUT_ONE_IN`` times that), so
an edited document changes its own shard and the cuts after it fall where they fell before. A
shard's key hashes its documents' text (whatever file, field or sample produced it), the
tokenizer's JSON with the ``tokenizers`` version, and ``CACHE_VERSION`` (raised whenever depstat
encodes differently).

Layout under the root (``$DEPSTAT_CACHE``, else ``$XDG_CACHE_HOME/depstat``, else
``~/.cache/depstat``)::

    v1/shards/ab/<key>.tokens.npy   token ids (uint16 when the vocabulary fits, else uint32)
    v1/shards/ab/<key>.lengths.npy  document lengths (int64)
    v1/shards/ab/<key>.json         manifest with both files' BLAKE2b digests, written last
    v1/tokenizers/<key>.json        trained BPE / word vocabularies (key: sample digest, size)
    v1/decoded/ab/<key>.text.npy    token ids decoded to text (``--ids-tokenizer``): UTF-8 bytes
    v1/decoded/ab/<key>.lengths.npy each document's length in bytes, and a manifest as for shards

A decoded batch's key hashes the decoding tokenizer and the batch's ids: every pass over a
token-id corpus after the first reads its text (``TokenCache.decoded``).

Files are written to a temporary sibling, fsynced and renamed; a shard counts only when its
manifest exists and both digests match, so an interrupted run leaves complete shards and nothing
that reads as valid, and the next resumes from them. Deleting the root clears the cache.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import tokenizers
from tokenizers import Tokenizer

from depstat.errors import DepstatError
from depstat.files import atomic_write

CACHE_VERSION = 1
SHARD_BYTES = 1 << 20
CUT_ONE_IN = 4
_DIGEST = 16


def default_cache_dir() -> Path:
    """The cache root: ``$DEPSTAT_CACHE``, else ``$XDG_CACHE_HOME/depstat``, else ``~/.cache/depstat``."""
    if os.environ.get("DEPSTAT_CACHE"):
        return Path(os.environ["DEPSTAT_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "depstat"


@dataclass
class Shard:
    """Consecutive documents: their text, its UTF-8 bytes, and a digest of that content."""

    texts: list[str] = field(default_factory=list)
    data: list[bytes] = field(default_factory=list)
    digest: bytes = b""

    @property
    def n_bytes(self) -> int:
        return sum(len(d) for d in self.data)


def split_shards(texts: Iterable[str]) -> Iterator[Shard]:
    """Cut documents into shards whose boundaries depend on content only (see the module doc)."""
    shard, hasher, size = Shard(), _hasher(), 0
    for text in texts:
        data = text.encode("utf-8")
        doc_digest = _hasher(data).digest()
        shard.texts.append(text)
        shard.data.append(data)
        hasher.update(len(data).to_bytes(8, "little") + doc_digest)
        size += len(data)
        if (size >= SHARD_BYTES and doc_digest[0] % CUT_ONE_IN == 0) or size >= CUT_ONE_IN * SHARD_BYTES:
            shard.digest = hasher.digest()
            yield shard
            shard, hasher, size = Shard(), _hasher(), 0
    if shard.texts:
        shard.digest = hasher.digest()
        yield shard


def digest_texts(texts: Iterable[str]) -> str:
    """Hex digest of a sequence of documents (length-prefixed UTF-8), e.g. a training sample."""
    hasher = _hasher()
    for text in texts:
        data = text.encode("utf-8")
        hasher.update(len(data).to_bytes(8, "little") + data)
    return hasher.hexdigest()


def tokenizer_key(tokenizer: Tokenizer) -> str:
    """What a tokenizer contributes to a shard key: its serialized JSON and the library version."""
    return _hasher(f"{tokenizers.__version__}\n{tokenizer.to_str()}".encode()).hexdigest()


def training_key(kind: str, sample_digest: str) -> str:
    """Key of a trained vocabulary: its kind and size (``bpe-8192``, ``words``) and the sample."""
    return _hasher(f"depstat-{CACHE_VERSION} {tokenizers.__version__} {kind} {sample_digest}".encode()).hexdigest()


class TokenCache:
    """A cache root: tokenized shards and trained tokenizers, with counters of what was reused."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).expanduser()
        self.dir = self.root / f"v{CACHE_VERSION}"
        self.counts = {
            "shards_reused": 0, "shards_encoded": 0, "shards_invalid": 0,
            "tokenizers_reused": 0, "tokenizers_trained": 0, "tokenizers_invalid": 0,
            "decoded_reused": 0, "decoded_stored": 0, "decoded_invalid": 0,
        }
        try:
            (self.dir / "shards").mkdir(parents=True, exist_ok=True)
            (self.dir / "tokenizers").mkdir(exist_ok=True)
            (self.dir / "decoded").mkdir(exist_ok=True)
        except OSError as err:
            raise DepstatError(
                f"cannot create the cache directory: {err.strerror or err}", path=str(self.dir),
                hint="choose another with --cache-dir DIR, or pass --no-cache",
            ) from None

    def tokens(
        self, tok_key: str, shard: Shard, vocab_size: int,
        encode: Callable[[list[str]], tuple[np.ndarray, np.ndarray]],
    ) -> tuple[np.ndarray, np.ndarray]:
        """(token ids, document lengths) of a shard: read from the cache, else encoded and stored."""
        key = _hasher(f"depstat-{CACHE_VERSION} {tok_key} ".encode() + shard.digest).hexdigest()
        base = self.dir / "shards" / key[:2] / key
        found = self._read_arrays(base, ("tokens", "lengths"), len(shard.texts), "shards_invalid")
        if found is not None:
            self.counts["shards_reused"] += 1
            return found
        ids, lengths = encode(shard.texts)
        self._write_arrays(base, "tokens", ids.astype(np.uint16 if vocab_size <= 1 << 16 else np.uint32), lengths)
        self.counts["shards_encoded"] += 1
        return ids, lengths

    def decoder_key(self, tokenizer: Tokenizer) -> str:
        """What the tokenizer that decodes contributes to a decoded batch's key (``tokenizer_key``)."""
        return tokenizer_key(tokenizer)

    def decoded(
        self, decoder_key: str, ids: Sequence[np.ndarray], decode: Callable[[], list[str]],
    ) -> list[str]:
        """The texts of a batch of token-id documents: read from the cache, else ``decode()``d and stored."""
        hasher = _hasher(f"depstat-{CACHE_VERSION} decoded {decoder_key} ".encode())
        for doc in ids:
            data = np.ascontiguousarray(doc, dtype=np.int64).tobytes()
            hasher.update(len(data).to_bytes(8, "little") + data)
        key = hasher.hexdigest()
        base = self.dir / "decoded" / key[:2] / key
        found = self._read_arrays(base, ("text", "lengths"), len(ids), "decoded_invalid")
        if found is not None:
            data, lengths = found[0].tobytes(), found[1]
            ends = np.cumsum(lengths).tolist()
            self.counts["decoded_reused"] += 1
            return [data[a:b].decode("utf-8") for a, b in zip([0, *ends[:-1]], ends)]
        texts = decode()
        encoded = [t.encode("utf-8") for t in texts]
        self._write_arrays(base, "text", np.frombuffer(b"".join(encoded), dtype=np.uint8), [len(e) for e in encoded])
        self.counts["decoded_stored"] += 1
        return texts

    def tokenizer(self, key: str, train: Callable[[], Tokenizer]) -> Tokenizer:
        """A trained tokenizer from the cache, else ``train()`` stored under ``key``."""
        path = self.dir / "tokenizers" / f"{key}.json"
        if path.is_file():
            try:
                tok = Tokenizer.from_str(path.read_text(encoding="utf-8"))
                self.counts["tokenizers_reused"] += 1
                return tok
            except Exception:  # tokenizers raises a bare Exception for bad JSON: retrain below
                self.counts["tokenizers_invalid"] += 1
        tok = train()
        self._write(path, tok.to_str().encode("utf-8"))
        self.counts["tokenizers_trained"] += 1
        return tok

    def _read_arrays(
        self, base: Path, parts: tuple[str, str], n_docs: int, invalid: str,
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """An entry's two arrays (the data and each document's length in it) when its manifest
        and both digests check out and the lengths add up; None otherwise (counted as ``invalid``)."""
        manifest = base.with_suffix(".json")
        if not manifest.is_file():
            return None
        try:
            meta = json.loads(manifest.read_text(encoding="utf-8"))
            arrays = []
            for part in parts:
                data = base.with_name(f"{base.name}.{part}.npy").read_bytes()
                if _hasher(data).hexdigest() != meta[part]:
                    raise ValueError(f"{part} digest mismatch")
                arrays.append(np.load(io.BytesIO(data), allow_pickle=False))
            values, lengths = arrays
            if lengths.shape != (n_docs,) or int(lengths.sum()) != values.shape[0]:
                raise ValueError("lengths do not match")
        except (OSError, ValueError, KeyError, TypeError, EOFError):
            self.counts[invalid] += 1
            manifest.unlink(missing_ok=True)
            return None
        return values, lengths

    def _write_arrays(self, base: Path, name: str, values: np.ndarray, lengths: Sequence[int] | np.ndarray) -> None:
        """An entry's data (part ``name``) and each document's length in it, then the manifest
        naming their digests (last, so it marks completion)."""
        base.parent.mkdir(exist_ok=True)
        lengths = np.asarray(lengths, dtype=np.int64)
        meta = {"n_docs": int(lengths.size), "n_values": int(values.size), "dtype": str(values.dtype)}
        for part, array in ((name, values), ("lengths", lengths)):
            buf = io.BytesIO()
            np.save(buf, array, allow_pickle=False)
            data = buf.getvalue()
            self._write(base.with_name(f"{base.name}.{part}.npy"), data)
            meta[part] = _hasher(data).hexdigest()
        self._write(base.with_suffix(".json"), json.dumps(meta).encode())

    def _write(self, path: Path, data: bytes) -> None:
        """Write to a temporary sibling, fsync, rename: readers see the old file or the whole new one."""
        try:
            atomic_write(path, lambda tmp: Path(tmp).write_bytes(data))
        except OSError as err:
            raise DepstatError(
                f"cannot write to the cache: {err.strerror or err}", path=str(path),
                hint="free space, choose another --cache-dir, or pass --no-cache",
            ) from None


def _hasher(data: bytes = b"") -> hashlib.blake2b:
    return hashlib.blake2b(data, digest_size=_DIGEST)
