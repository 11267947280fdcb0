"""Where one job's per-chunk work runs: in this process, or on a dask cluster.

``EngineOptions`` (``--backend``, ``--scheduler``, ``--chunks``) is part of the options of
every method and estimator that can cut its work into chunks of whole queries (the linear
SVMs, harvest estimation, regression EM with the logistic relevance model);
``engine(options)`` gives the mapper that ``cltr.core.chunked`` and the chunked estimators
run on:

- ``--backend local`` without ``--chunks``: no mapper (the unchunked in-process code);
- ``--backend local --chunks N``: ``LocalMapper``, N chunks computed one after another
  here (the oracle a cluster run is tested against);
- ``--backend dask``: ``DaskMapper`` on the cluster at ``--scheduler`` (``tcp://host:8786``),
  or on a local cluster of one single-threaded worker process per core; ``--chunks``
  defaults to the cluster's workers. Chunks are scattered once per job; each solver
  iteration is one map over them and one sum, in chunk order.

dask is imported only when asked for (``pip install 'cltr[dask]'``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from cltr.core.chunked import LocalMapper
from cltr.options import Options, option

__all__ = ["EngineOptions", "DaskMapper", "engine", "engine_key", "BACKENDS"]

BACKENDS = ("local", "dask")


@dataclass(frozen=True)
class EngineOptions(Options):
    """Where a job's per-chunk work runs (the linear SVMs' risk and subgradient, harvest's counts,
    regression EM's E-step and sums)."""

    backend: str = option(
        "local",
        "Run the per-chunk work here (local) or on a dask.distributed cluster (dask; pip "
        "install 'cltr[dask]'); both give the same result to rounding.",
        choices=BACKENDS,
    )
    scheduler: str | None = option(
        None,
        "dask scheduler address, e.g. tcp://host:8786 [default: a local cluster of "
        "one worker process per core]; --backend dask only.",
    )
    chunks: int | None = option(
        None,
        "Cut the job into this many chunks of whole queries [default: unchunked with "
        "--backend local, one per worker with dask].",
        low=1,
    )

    @property
    def chunked(self) -> bool:
        """Whether the work is cut into chunks at all (else the plain in-process code runs)."""
        return self.backend != "local" or self.chunks is not None


def engine_key(options: dict) -> dict:
    """An options record as it enters an artifact's key: the engine's fields only where they
    change what is computed. The scheduler never does (the same chunks give the same sums
    anywhere); backend and chunks do, at rounding level, only off their defaults, so that
    keys stored before these options existed stay valid."""
    record = dict(options)
    record.pop("scheduler", None)
    for name, default in (("backend", "local"), ("chunks", None)):
        if name in record and record[name] == default:
            del record[name]
    return record


class DaskMapper:
    """The mapper of ``cltr.core.chunked`` on a dask ``Client``: chunks are scattered to the
    workers once; a map runs one task per chunk where its chunk lives and leaves the results
    there until gathered (in chunk order)."""

    def __init__(self, client):
        self.client = client
        self.workers = max(1, len(client.scheduler_info().get("workers", {})))

    def scatter(self, values: Sequence) -> list:
        return self.client.scatter(list(values), hash=False)

    def map(self, function: Callable, *per_chunk: Sequence, **same) -> list:
        return self.client.map(function, *per_chunk, **same, pure=False)

    def gather(self, handles: Sequence) -> list:
        return self.client.gather(list(handles))


@contextmanager
def engine(options: EngineOptions, *, workers: int | None = None) -> Iterator[tuple[Any, int]]:
    """``(mapper, chunks)`` for ``options``: ``(None, 1)`` for the plain in-process code.

    A local dask cluster (no ``--scheduler``) has ``workers`` single-threaded worker
    processes (default: one per core) and is closed on exit; a client of a given scheduler
    is closed, the cluster left running.
    """
    if options.scheduler is not None and options.backend != "dask":
        raise ValueError(f"--scheduler {options.scheduler} needs --backend dask (found --backend {options.backend})")
    if not options.chunked:
        yield None, 1
        return
    if options.backend == "local":
        yield LocalMapper(), int(options.chunks or 1)
        return
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise ValueError("--backend dask needs dask.distributed: pip install 'cltr[dask]'") from None
    cluster = None
    if options.scheduler is None:
        cluster = LocalCluster(
            n_workers=workers or os.cpu_count() or 1, threads_per_worker=1, processes=True, dashboard_address=None
        )
    try:
        client = Client(options.scheduler or cluster)
    except (OSError, ValueError) as error:  # unreachable, or an address dask cannot read ("missing port")
        if cluster is not None:
            cluster.close()
        raise ValueError(f"cannot reach the dask scheduler at {options.scheduler}: {error}") from None
    try:
        mapper = DaskMapper(client)
        yield mapper, options.chunks or mapper.workers
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
