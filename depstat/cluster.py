"""Dask clients for the engines that run on a cluster: an embedded LocalCluster or a scheduler's
address, and task failures (a killed worker, a task out of memory) as one clear line."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from depstat.errors import DepstatError


def _dask():
    try:
        import distributed
    except ImportError:
        raise DepstatError(
            "--workers/--scheduler need Dask", hint="pip install -e '.[dask]' (dask[distributed])"
        ) from None
    return distributed


@contextmanager
def failing_tasks(hint: str) -> Iterator[None]:
    """Dask's KilledWorker (every worker that ran a task died: out of memory, most often, when
    a nanny stops a worker near its memory limit) and a task's MemoryError, as a
    DepstatError that names the task, with ``hint``: what to change."""
    distributed = _dask()
    try:
        yield
    except distributed.KilledWorker as err:
        raise DepstatError(f"every Dask worker that ran task {err.task!r} died ({err.allowed_failures + 1} of them), "
                           "most likely out of memory", hint=hint) from None
    except MemoryError:
        raise DepstatError("a Dask task ran out of memory", hint=hint) from None


@contextmanager
def dask_client(workers: int | None = None, scheduler: str | None = None) -> Iterator[object]:
    """A ``distributed.Client``: an embedded LocalCluster of ``workers`` processes, or ``scheduler``."""
    distributed = _dask()
    if scheduler:
        try:
            client = distributed.Client(scheduler, timeout="20s")
        except OSError as err:
            raise DepstatError(f"cannot reach the Dask scheduler at {scheduler}: {err}") from None
        with client:
            yield client
        return
    if workers is None or workers < 1:
        raise DepstatError(f"--workers must be at least 1, got {workers}")
    # dashboard_address None still serves the scheduler's HTTP routes on 8787; ":0" takes any
    # free port, so that two runs on one machine (or a user's own cluster) do not collide
    with distributed.LocalCluster(
        n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
        host="127.0.0.1",
    ) as cluster, distributed.Client(cluster) as client:
        yield client
