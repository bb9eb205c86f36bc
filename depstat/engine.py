"""Where a profile tokenizes and counts: in this process, or on a Dask cluster (``engine``)."""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from depstat.cluster import dask_client
from depstat.count.counting import PairCounter
from depstat.count.distributed import MAX_SHARD_TOKENS, SHARD_TOKENS, DaskCounter
from depstat.errors import DepstatError
from depstat.tokenize.granularity import encode_stream
from depstat.tokenize.stream import TokenStream
from depstat.tokenize.workers import WorkerEncoder


@dataclass
class Engine:
    """How a profile tokenizes and counts: here, or on a Dask cluster.

    ``counter(stream, n_blocks=, seed=)`` builds the counter, ``encode`` has
    ``granularity.encode_stream``'s signature, ``info`` describes the engine for the run record;
    with ``spool`` the streams made in this process live in memory-mapped temporary files.
    """

    counter: Callable[..., object] = PairCounter
    encode: Callable[..., TokenStream] = encode_stream
    info: dict = field(default_factory=lambda: {"name": "local"})
    spool: bool = False


@contextmanager
def engine(
    workers: int | None = None, scheduler: str | None = None, shared_dir: str | os.PathLike | None = None,
    pair_memory: int | None = None, shard_tokens: int | None = None,
) -> Iterator[Engine]:
    """The local engine (its pair buffers capped at ``pair_memory`` bytes), or with
    ``workers``/``scheduler`` a Dask one: tokenization and counting on the workers, in shard
    tasks of ``shard_tokens`` positions (default: ``graph_plan``'s for each stream)."""
    if shard_tokens is not None and workers is None and scheduler is None:
        raise DepstatError("--shard-tokens sizes the Dask engine's shard tasks",
                           hint="add --workers N or --scheduler ADDRESS, or drop --shard-tokens")
    if shard_tokens is not None and shard_tokens < 1:
        raise DepstatError(f"--shard-tokens must be positive, got {shard_tokens}")
    if workers is None and scheduler is None:
        if pair_memory is None:
            yield Engine()
        else:
            counter = functools.partial(PairCounter, pair_memory=pair_memory)
            encode = functools.partial(encode_stream, spool=True)  # the streams are not held either
            yield Engine(counter, encode, {"name": "local", "pair_memory": pair_memory}, spool=True)
        return
    if workers is not None and scheduler is not None:
        raise DepstatError("give --workers or --scheduler, not both")
    if pair_memory is not None:
        raise DepstatError("--pair-memory caps the local counter; Dask workers count shard by shard",
                           hint="drop --pair-memory, or --workers / --scheduler")
    with dask_client(workers, scheduler) as client, tempfile.TemporaryDirectory(prefix="depstat-") as tmp:
        n = len(client.scheduler_info().get("workers", {}))
        directory = Path(shared_dir or tmp)
        encoder = WorkerEncoder(client, directory)

        def make(stream: TokenStream, n_blocks: int = 20, seed: int = 0) -> DaskCounter:
            return DaskCounter(stream, client, n_blocks=n_blocks, seed=seed, shared_dir=directory,
                               shard_tokens=shard_tokens)

        info = {"name": "dask", "workers": n, "scheduler": scheduler or "LocalCluster",
                "shard_tokens": shard_tokens or f"{SHARD_TOKENS} to {MAX_SHARD_TOKENS} (graph_plan)"}
        try:
            yield Engine(make, encoder, info)
        finally:
            encoder.remove_files()
