"""Tokenization on Dask workers (``WorkerEncoder``), with ``encode_stream``'s signature.

This process sends the documents a text shard at a time, each worker encodes its shard (through
the token cache when there is one) into a part file, and the parts are copied into one ``.npy``
that this process only memory-maps, so it never holds a whole token stream.
"""

from __future__ import annotations

import functools
import shutil
import uuid
from collections import deque
from collections.abc import Iterable
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from depstat.cluster import failing_tasks
from depstat.files import atomic_write
from depstat.progress import bar
from depstat.tokenize.cache import Shard, TokenCache, split_shards, tokenizer_key
from depstat.tokenize.granularity import encode_shard, vocab_size_of
from depstat.tokenize.stream import TokenStream, token_dtype

ENCODE_IN_FLIGHT = 4  # text shards sent ahead per worker: all the client holds of the text


class WorkerEncoder:
    """``encode_stream`` on Dask workers: the tokens land in a ``.npy`` under ``directory`` that this process memory-maps."""

    def __init__(self, client: object, directory: Path) -> None:
        self.client = client
        self.directory = Path(directory)
        self.written: list[Path] = []

    def __call__(
        self, name: str, texts: Iterable[str], tokenizer: Tokenizer | None, cache: TokenCache | None = None,
    ) -> TokenStream:
        """Encode the documents shard by shard on the workers, at most ``ENCODE_IN_FLIGHT`` per worker ahead."""
        self.directory.mkdir(parents=True, exist_ok=True)
        run = self.directory / f"depstat-{uuid.uuid4().hex[:16]}"
        vocab = vocab_size_of(tokenizer)
        # The tokenizer's JSON goes out as a task's result, not as scattered data: the scheduler
        # computes a lost result again, but scattered data dies with the last worker holding it,
        # and Dask's memory manager keeps one copy of it, whatever the broadcast (a CI run lost
        # it to a SIGKILLed worker, and every encoding task with it). A fresh key each time:
        # the previous call's copy may still be being released.
        spec = (self.client.submit(str, tokenizer.to_str(), key=f"depstat-tokenizer-{run.name}")
                if tokenizer is not None else None)
        tok_key = tokenizer_key(tokenizer) if tokenizer is not None and cache is not None else None
        cache_root = str(cache.root) if cache is not None else None
        limit = ENCODE_IN_FLIGHT * max(len(self.client.scheduler_info().get("workers", {})), 1)
        pending: deque = deque()
        done: list[tuple[int, np.ndarray, dict]] = []
        n_bytes = 0
        with bar(desc=f"encode {name} on workers", unit="doc") as progress, failing_tasks(
                "give the workers more memory a thread: a task encodes one shard of documents"):
            def collect() -> None:
                result = pending.popleft().result()
                done.append(result)
                progress.update(len(result[1]))

            for i, shard in enumerate(split_shards(texts)):
                n_bytes += shard.n_bytes
                sent = Shard(texts=shard.texts if tokenizer is not None else [],
                             data=shard.data if tokenizer is None else [], digest=shard.digest)
                pending.append(self.client.submit(
                    _encode_task, name, sent, spec, tok_key, cache_root, str(run / f"{i:08d}.npy"),
                    key=f"depstat-encode-{run.name}-{i}",
                ))
                if len(pending) >= limit:
                    collect()
            while pending:
                collect()
        for _, _, counts in done:
            for what, k in counts.items():
                cache.counts[what] += k
        sizes = np.array([n for n, _, _ in done], dtype=np.int64)
        lengths = np.concatenate([lens for _, lens, _ in done]) if done else np.zeros(0, np.int64)
        if not sizes.sum():
            shutil.rmtree(run, ignore_errors=True)
            return TokenStream(name, np.zeros(0, token_dtype(vocab)), lengths, vocab, n_bytes)
        path = run.with_suffix(".npy")
        np.lib.format.open_memmap(path, mode="w+", dtype=token_dtype(vocab), shape=(int(sizes.sum()),))
        self.written.append(path)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        with failing_tasks("give the workers more memory a thread: a task copies one shard's tokens"):
            self.client.gather([
                self.client.submit(_copy_part, str(run / f"{i:08d}.npy"), str(path), int(start),
                                   key=f"depstat-gather-{run.name}-{i}")
                for i, start in enumerate(starts)
            ])
        shutil.rmtree(run, ignore_errors=True)
        return TokenStream(name, np.load(path, mmap_mode="r"), lengths, vocab, n_bytes, source_file=path)

    def remove_files(self) -> None:
        """Delete the token files this encoder wrote (the profile no longer needs them)."""
        for path in self.written:
            path.unlink(missing_ok=True)


@functools.lru_cache(maxsize=4)
def _tokenizer(spec: str) -> Tokenizer:
    """A worker's parsed copy of a tokenizer (the JSON, a task's result, is the same object every task)."""
    return Tokenizer.from_str(spec)


def _encode_task(
    name: str, shard: Shard, spec: str | None, tok_key: str | None, cache_root: str | None, part: str,
) -> tuple[int, np.ndarray, dict]:
    """Worker task: encode a shard, write its tokens to ``part`` (atomically); (tokens, doc lengths, cache counts)."""
    tokenizer = _tokenizer(spec) if spec is not None else None
    cache = TokenCache(cache_root) if cache_root is not None and tok_key is not None else None
    ids, lens = encode_shard(name, shard, tokenizer, cache, tok_key)
    path = Path(part)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, lambda tmp: np.save(tmp, ids))  # a rerun after a killed worker finds a whole file or none
    return int(ids.size), lens, {k: v for k, v in (cache.counts.items() if cache else ()) if v}


def _copy_part(part: str, path: str, start: int) -> None:
    """Worker task: copy a part file's tokens into the stream file at ``start`` (idempotent)."""
    ids = np.load(part)
    out = np.load(path, mmap_mode="r+")
    out[start:start + ids.size] = ids
    out.flush()
