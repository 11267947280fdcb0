"""SVM PropRank's solve in process and on dask LocalClusters of 1 and 2 workers.

    python bench/dask_scaling.py --workdir WORKSPACE [--C 1] [--tol 1e-3] [--chunks 4]

WORKSPACE holds the embedded default's clicks (``cltr --workdir WORKSPACE run``); the
bench reads its last prepared dataset and that dataset's current click log. Rows:

- ocas: the unchunked in-process solver (``solve_pairwise_svm``, what --backend local runs);
- chunked, local: ``ChunkedProblem`` on ``LocalMapper`` (--backend local --chunks N),
  the oracle the cluster runs must reproduce;
- dask, W workers: the same chunks on a ``LocalCluster`` of W single-threaded worker
  processes (--backend dask --chunks N).

Per row: setup seconds (cutting the chunks, scattering them and expanding their pairs
where they live; the cluster's start is printed apart), solver iterations, solve seconds,
milliseconds per iteration, objective, certified gap, and the largest |w - w_local| against
the chunked in-process model. Every chunked row uses the same chunks, so the same model.
"""

import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits


def main():
    from cltr.core.chunked import ChunkedProblem, LocalMapper
    from cltr.core.svm import solve_pairwise_svm
    from cltr.distributed import DaskMapper
    from cltr.pipeline.session import Session
    from cltr.pipeline.stages import click_logs

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--C", type=float, default=1.0)
    parser.add_argument("--tol", type=float, default=1e-3)
    parser.add_argument("--chunks", type=int, default=4)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()

    session = Session(args.workdir)
    name = session.workspace.last_dataset()
    dataset, _ = session.dataset(name)
    log, _ = click_logs(session.clicks(name))
    split = dataset.train
    cost = log.cost
    print(
        f"{name}: {len(log)} training clicks, {split.n_queries} queries, {split.n_docs} documents x "
        f"{split.n_features} features; C = {args.C:g}, tol = {args.tol:g}, {args.chunks} chunks"
    )
    header = (
        f"{'run':>20} {'setup s':>8} {'iterations':>10} {'solve s':>8} {'ms/iter':>8} {'objective':>12} "
        f"{'gap':>9} {'max|dw|':>9}"
    )
    print(header)

    def row(label, setup, result, reference):
        dw = "" if reference is None else f"{np.abs(result.w - reference).max():9.1e}"
        print(
            f"{label:>20} {setup:8.2f} {result.iterations:10d} {result.seconds:8.2f} "
            f"{1000 * result.seconds / max(result.iterations, 1):8.1f} {result.objective:12.4f} "
            f"{result.gap:9.2e} {dw:>9}"
        )

    with threadpool_limits(1):  # as the workers: one BLAS thread each
        start = time.perf_counter()
        ocas = solve_pairwise_svm(split.X, split.offsets, log.query, log.doc, cost, args.C, tol=args.tol)
        row("ocas", time.perf_counter() - start - ocas.seconds, ocas, None)

        def chunked(label, mapper, reference):
            start = time.perf_counter()
            problem = ChunkedProblem(split.X, split.offsets, log.query, log.doc, chunks=args.chunks, mapper=mapper)
            problem.objective(np.zeros(split.n_features), cost, args.C)  # the pairs expanded where the chunks live
            setup = time.perf_counter() - start
            result = problem.solve(cost, args.C, tol=args.tol)
            row(label, setup, result, reference)
            return result

        local = chunked("chunked, local", LocalMapper(), None)

    from dask.distributed import Client, LocalCluster

    for workers in args.workers:
        start = time.perf_counter()
        with (
            LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
            Client(cluster) as client,
        ):
            print(f"{'':>20} (cluster of {workers} started in {time.perf_counter() - start:.2f} s)")
            chunked(f"dask, {workers} worker{'s' if workers > 1 else ''}", DaskMapper(client), local.w)


if __name__ == "__main__":
    main()
