"""Importing click logs of growing size: whole (``read_click_log``) against in chunks
(``read_click_log_aggregated``, ``cltr clicks import --chunk-rows``), time and peak memory.

    python bench/clicklog_scale.py [--rows 1e6,5e6,2e7] [--whole-up-to 5e6] [--queries 20000]
                                   [--docs 25] [--chunk-rows 1048576] [--format tsv|parquet] [--dir DIR]
                                   [--harvest] [--em] [--em-chunks 4] [--on-disk] [--on-disk-chunks 4]

The logs are those of ``bench/clicklog.py`` (QUERIES queries of DOCS candidates, two
logging rankers, position-based clicks with propensity 1/rank), written pass by pass so
that the generator never holds more than one pass (QUERIES x DOCS rows): ROWS / (QUERIES x
DOCS) passes, string session ids. The aggregate of such a log is bound by the documents,
ranks and rankers (at most QUERIES x DOCS x 2 cells, reached within two passes), so the
chunked import's memory should stay flat as the log grows while the whole import's grows
with its rows.

Each import runs in a fresh process, whose own ``ru_maxrss`` it reports along with its
resident memory before reading (interpreter, numpy, pandas, pyarrow and the split's qids),
so that the table shows the peak and what reading added. The whole import is run only up to
``--whole-up-to`` rows (it needs about 1 GB per 5 M rows). With ``--harvest`` the chunked
import's counts are also given to intervention harvesting (no bootstrap), whose time depends
on the counts' cells, not on the rows. With ``--em`` they are also given to regression EM
(logistic relevance model on the split's features, no bootstrap) three ways: in process,
chunked on the local engine (``--chunks EM_CHUNKS``) and chunked on a dask LocalCluster of
one worker per core (``--backend dask --chunks EM_CHUNKS``; the cluster's start is timed
too), each with its largest difference from the in-process estimate.

With ``--on-disk`` (Parquet only) each log is instead given to intervention harvesting (no
bootstrap) three ways, each in a fresh process whose peak resident memory is the client's:
the in-memory path (the log imported whole, ``read_click_log``, its impressions cut into
ON_DISK_CHUNKS chunks on the local engine: the chunk engine fed from the client's memory),
and the on-disk path (``cltr.data.parquet_log.harvest_parquet_log``: one streaming pass over
the qid and ranker columns here, each chunk of whole queries read from the file where it is
computed) on the local engine and on a dask LocalCluster of two single-threaded worker
processes (whose own peaks are reported beside the client's). The logs are written pass by
pass, so every row group holds every query and every chunk reads every row group.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from clicklog import make_queries  # noqa: E402  (the same synthetic split)

SEED = 0


def write_log(path: Path, queries, n_rows: int, *, seed: int) -> int:
    """Write about ``n_rows`` impression rows, one pass at a time; returns the rows written."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    rng = np.random.default_rng([seed, 1])
    n_queries, n_docs = queries.n_queries, int(np.diff(queries.offsets)[0])
    labels = queries.labels.reshape(n_queries, n_docs)
    relevant = labels >= 3
    orders = [
        np.argsort(-(labels + 1.5 * rng.standard_normal((n_queries, n_docs))), axis=1, kind="stable") for _ in range(2)
    ]
    rank = np.arange(1, n_docs + 1)
    passes = max(1, round(n_rows / (n_queries * n_docs)))
    writer = None
    written = 0
    try:
        for p in range(passes):
            doc = orders[p % 2]
            observed = rng.random((n_queries, n_docs)) < 1.0 / rank
            click = observed & np.where(
                np.take_along_axis(relevant, doc, axis=1), True, rng.random((n_queries, n_docs)) < 0.1
            )
            session = p * n_queries + np.repeat(np.arange(n_queries), n_docs)
            table = pa.table(
                {
                    "session": pa.array(np.char.add("s", session.astype(str))),
                    "qid": np.repeat(queries.qid, n_docs),
                    "doc": doc.ravel(),
                    "rank": np.tile(rank, n_queries),
                    "click": click.ravel().astype(np.int8),
                    "propensity": np.tile(1.0 / rank, n_queries),
                    "ranker": np.full(n_queries * n_docs, p % 2, dtype=np.int8),
                }
            )
            if writer is None:
                writer = (
                    pq.ParquetWriter(path, table.schema)
                    if path.suffix == ".parquet"
                    else pacsv.CSVWriter(
                        path, table.schema, write_options=pacsv.WriteOptions(delimiter="\t", quoting_style="none")
                    )
                )
            writer.write_table(table)
            written += table.num_rows
    finally:
        if writer is not None:
            writer.close()
    return written


def child(args) -> None:
    """One import in this fresh process: seconds, rows, resident memory before and at peak."""
    from cltr.data.clicklog import read_click_log, read_click_log_aggregated

    queries = make_queries(args.queries, args.docs, seed=SEED, features=False)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    if args.mode == "whole":
        rows = read_click_log(args.child, queries)
        n_rows, cells = len(rows.doc), len(rows.impressions().doc)
    else:
        counts = read_click_log_aggregated(args.child, queries, chunk_rows=args.chunk_rows)
        n_rows, cells = counts.rows, len(counts.doc)
    seconds = time.perf_counter() - start
    found = {
        "seconds": seconds,
        "rows": n_rows,
        "cells": cells,
        "rss_before_kib": before,
        "peak_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    }
    if args.harvest and args.mode == "chunks":
        from cltr.pipeline.stages import estimate_propensities

        start = time.perf_counter()
        estimate = estimate_propensities(counts.impressions_table(), None, method="harvest", bootstrap=0)
        found["harvest_seconds"] = time.perf_counter() - start
        found["harvest"] = [round(float(v), 3) for v in estimate.propensity[:5]]
    if args.em and args.mode == "chunks":
        from cltr.pipeline.stages import estimate_propensities

        X = make_queries(args.queries, args.docs, seed=SEED, features=True).X
        table = counts.impressions_table()
        runs, plain = [], None
        for label, options in (
            ("in process", {}),
            (f"local engine, {args.em_chunks} chunks", {"chunks": args.em_chunks}),
            (f"dask LocalCluster, {args.em_chunks} chunks", {"backend": "dask", "chunks": args.em_chunks}),
        ):
            start = time.perf_counter()
            estimate = estimate_propensities(table, X, method="em", bootstrap=0, **options)
            seconds = time.perf_counter() - start
            plain = estimate.propensity if plain is None else plain
            runs.append(
                {
                    "run": label,
                    "seconds": seconds,
                    "iterations": estimate.info["iterations"],
                    "max_diff": float(np.max(np.abs(estimate.propensity - plain))),
                    "propensity": [round(float(v), 3) for v in estimate.propensity[:5]],
                }
            )
        found["em"] = runs
        found["em_cells"], found["em_units"] = len(table.doc), estimate.info["documents"]
    print(json.dumps(found))


def on_disk_child(args) -> None:
    """One harvest of ``--on-disk`` in this fresh process: seconds, peak resident memory, the estimate."""
    from cltr.core.chunked import LocalMapper
    from cltr.core.chunked_propensity import chunked_harvest_propensities
    from cltr.data.parquet_log import SplitIds, harvest_parquet_log

    queries = make_queries(args.queries, args.docs, seed=SEED, features=False)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    found: dict = {}
    options = {"max_rank": 20, "bootstrap": 0, "rng": 0}
    if args.mode == "in-memory":
        from cltr.data.clicklog import read_click_log

        t = read_click_log(args.child, queries).impressions()
        estimate = chunked_harvest_propensities(
            t.query,
            t.doc,
            t.rank,
            t.ranker,
            t.impressions,
            t.clicks,
            chunks=args.on_disk_chunks,
            mapper=LocalMapper(),
            **options,
        )
        found["rows"] = int(t.impressions.sum())
    elif args.mode == "on-disk-local":
        estimate = harvest_parquet_log(
            args.child, SplitIds.of(queries), chunks=args.on_disk_chunks, mapper=LocalMapper(), **options
        )
    else:
        from cltr.distributed import EngineOptions, engine

        with engine(EngineOptions(backend="dask", chunks=args.on_disk_chunks), workers=2) as (mapper, chunks):
            estimate = harvest_parquet_log(args.child, SplitIds.of(queries), chunks=chunks, mapper=mapper, **options)
            peaks = mapper.client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
            found["worker_peak_kib"] = sorted(peaks.values())
    found.update(
        seconds=time.perf_counter() - start,
        rss_before_kib=before,
        peak_kib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        propensity=[float(v) for v in estimate.propensity],
        rows=found.get("rows", estimate.info.get("rows")),
        row_groups=estimate.info.get("row_groups"),
        row_groups_read=estimate.info.get("row_groups_read"),
    )
    print(json.dumps(found))


def measure(path: Path, mode: str, args) -> dict:
    command = [
        sys.executable,
        __file__,
        "--child",
        str(path),
        "--mode",
        mode,
        "--queries",
        str(args.queries),
        "--docs",
        str(args.docs),
        "--chunk-rows",
        str(args.chunk_rows),
        "--em-chunks",
        str(args.em_chunks),
    ]
    command += (["--harvest"] if args.harvest else []) + (["--em"] if args.em else [])
    command += ["--on-disk-chunks", str(args.on_disk_chunks)] + (["--on-disk"] if args.on_disk else [])
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", default="1e6,5e6,2e7", help="Log sizes, comma-separated.")
    parser.add_argument("--whole-up-to", type=float, default=5e6, help="Run the whole import up to this many rows.")
    parser.add_argument("--queries", type=int, default=20000)
    parser.add_argument("--docs", type=int, default=25)
    parser.add_argument("--chunk-rows", type=int, default=1 << 20)
    parser.add_argument("--format", choices=["tsv", "parquet"], default="tsv")
    parser.add_argument(
        "--harvest",
        action="store_true",
        help="Also time intervention harvesting (no bootstrap) on the chunked import's counts.",
    )
    parser.add_argument(
        "--em",
        action="store_true",
        help="Also time regression EM (no bootstrap) on the chunked import's counts: in process, on "
        "the local engine in --em-chunks chunks and on a dask LocalCluster.",
    )
    parser.add_argument("--em-chunks", type=int, default=4, help="Chunks of whole queries of the chunked EM runs.")
    parser.add_argument(
        "--on-disk",
        action="store_true",
        help="Instead of importing, harvest (no bootstrap) each Parquet log in memory and on disk "
        "(each chunk read from the file where it is computed), on the local engine and on a "
        "dask LocalCluster, and report the client's peak memory.",
    )
    parser.add_argument("--on-disk-chunks", type=int, default=4, help="Chunks of whole queries of the --on-disk runs.")
    parser.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="Where the logs are written [default: a temporary directory, removed afterwards].",
    )
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=["whole", "chunks", *ON_DISK_MODES], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        (on_disk_child if args.mode in ON_DISK_MODES else child)(args)
        return
    if args.on_disk:
        if args.format != "parquet":
            parser.error("--on-disk reads Parquet logs: add --format parquet")
        on_disk(args)
        return
    sizes = [int(float(size)) for size in args.rows.split(",")]
    queries = make_queries(args.queries, args.docs, seed=SEED, features=True)
    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        print(f"{args.queries} queries x {args.docs} documents, {args.format}, chunks of {args.chunk_rows} rows")
        print(
            f"{'rows':>11} {'MB on disk':>10} {'import':>7} {'seconds':>8} {'rows/s':>10} {'peak MB':>8} "
            f"{'before MB':>9} {'added MB':>8} {'cells':>9}"
        )
        for size in sizes:
            path = Path(directory) / f"log-{size}.{args.format}"
            n_rows = write_log(path, queries, size, seed=SEED)
            modes = ["chunks"] + (["whole"] if n_rows <= args.whole_up_to else [])
            for mode in modes:
                found = measure(path, mode, args)
                peak, before = found["peak_kib"] / 1024, found["rss_before_kib"] / 1024
                print(
                    f"{n_rows:>11,} {path.stat().st_size / 1e6:>10.0f} {mode:>7} {found['seconds']:>8.1f} "
                    f"{n_rows / found['seconds']:>10,.0f} {peak:>8.0f} {before:>9.0f} {peak - before:>8.0f} "
                    f"{found['cells']:>9,}",
                    flush=True,
                )
                if "harvest_seconds" in found:
                    print(
                        f"{'':>11} harvest on the counts: {found['harvest_seconds']:.1f} s, propensity at ranks "
                        f"1-5 {found['harvest']} (true 1/rank)",
                        flush=True,
                    )
                for run in found.get("em", []):
                    print(
                        f"{'':>11} em ({found['em_cells']:,} cells, {found['em_units']:,} documents), {run['run']}: "
                        f"{run['seconds']:.1f} s, {run['iterations']} iterations, max |p - p_in_process| "
                        f"{run['max_diff']:.1e}, propensity at ranks 1-5 {run['propensity']}",
                        flush=True,
                    )
            path.unlink()


def on_disk(args) -> None:
    sizes = [int(float(size)) for size in args.rows.split(",")]
    queries = make_queries(args.queries, args.docs, seed=SEED, features=False)
    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        print(
            f"{args.queries} queries x {args.docs} documents, parquet written pass by pass, harvest (no bootstrap) "
            f"in {args.on_disk_chunks} chunks"
        )
        print(
            f"{'rows':>11} {'MB on disk':>10} {'path':>28} {'seconds':>8} {'peak MB':>8} {'before MB':>9} "
            f"{'added MB':>8} {'max |p - p_mem|':>15}  row groups read"
        )
        for size in sizes:
            path = Path(directory) / f"log-{size}.parquet"
            n_rows = write_log(path, queries, size, seed=SEED)
            reference = None
            for mode, label in zip(
                ON_DISK_MODES,
                ("in memory, local engine", "on disk, local engine", "on disk, dask LocalCluster"),
                strict=True,
            ):
                found = measure(path, mode, args)
                p = np.array(found["propensity"])
                reference = p if reference is None else reference
                peak, before = found["peak_kib"] / 1024, found["rss_before_kib"] / 1024
                groups = (
                    f"{found['row_groups_read']} of {found['row_groups']} x {args.on_disk_chunks} chunks"
                    if found.get("row_groups")
                    else ""
                )
                workers = (
                    " workers' peaks " + ", ".join(f"{k / 1024:.0f}" for k in found["worker_peak_kib"]) + " MB"
                    if "worker_peak_kib" in found
                    else ""
                )
                print(
                    f"{n_rows:>11,} {path.stat().st_size / 1e6:>10.0f} {label:>28} {found['seconds']:>8.1f} "
                    f"{peak:>8.0f} {before:>9.0f} {peak - before:>8.0f} "
                    f"{float(np.max(np.abs(p - reference))):>15.1e}  {groups}{workers}",
                    flush=True,
                )
            print(
                f"{'':>11} propensity at ranks 1-5 {[round(float(v), 3) for v in reference[:5]]} (true 1/rank)",
                flush=True,
            )
            path.unlink()


ON_DISK_MODES = ("in-memory", "on-disk-local", "on-disk-dask")


if __name__ == "__main__":
    main()
