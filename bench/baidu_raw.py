"""Reading raw Baidu-ULTR partitions: pyarrow's CSV parser against the line-by-line reader.

    python bench/baidu_raw.py [--queries 400] [--sessions 100] [--partitions 2] [--repeat 2] [--jobs 2]

Writes ``--partitions`` gzip partitions of Baidu-ULTR's raw shape with
``cltr.data.baidu_generator.write_raw_partitions`` (QUERIES x SESSIONS sessions of 10
displayed documents, some missing, some "others searched" blocks), then reads them with
``read_raw_partition`` (which takes the pyarrow path) and with the line-by-line reader
alone, checks that both return the same rows, and prints document lines per second for
each (best of ``--repeat``), beside the seconds that gunzip alone takes, and for
``read_raw_partitions(..., n_jobs=JOBS)`` (partitions read side by side by worker processes,
their start included). Target (issue 26): 1 M document lines per second.
"""

from __future__ import annotations

import argparse
import gzip
import tempfile
import time

import numpy as np

from cltr.data import baidu
from cltr.data.baidu_generator import write_raw_partitions


def best(read, paths, repeat: int) -> float:
    seconds = []
    for _ in range(repeat):
        start = time.perf_counter()
        for path in paths:
            read(path)
        seconds.append(time.perf_counter() - start)
    return min(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=2, help="Worker processes for the side-by-side reading.")
    args = parser.parse_args()
    import pyarrow.csv  # noqa: F401  (imported once, outside the timings)

    with tempfile.TemporaryDirectory() as directory:
        truth = write_raw_partitions(
            directory, n_queries=args.queries, sessions_per_query=args.sessions, partitions=args.partitions, seed=0
        )
        paths = truth.paths
        fast = [baidu.read_raw_partition(path) for path in paths]
        line_reader = baidu._read_with_arrow
        baidu._read_with_arrow = lambda *a, **k: None
        try:
            slow = [baidu.read_raw_partition(path) for path in paths]
            slow_seconds = best(baidu.read_raw_partition, paths, args.repeat)
        finally:
            baidu._read_with_arrow = line_reader
        for a, b in zip(fast, slow, strict=True):
            for name in ("session", "qid", "url", "rank", "click", "dwell", "first_click", "last_click"):
                assert np.array_equal(
                    getattr(a, name), getattr(b, name), equal_nan=name in ("dwell", "first_click", "last_click")
                ), name
        fast_seconds = best(baidu.read_raw_partition, paths, args.repeat)
        gunzip = best(lambda path: gzip.open(path).read(), paths, args.repeat)
        jobs = best(lambda _: list(baidu.read_raw_partitions(paths, n_jobs=args.jobs)), [None], args.repeat)
        lines = sum(rows.n_lines - rows.n_sessions for rows in fast)
        size = sum(path.stat().st_size for path in paths) / 1e6
        text = sum(len(gzip.open(path).read()) for path in paths) / 1e6
        print(f"{len(paths)} partitions, {size:.0f} MB gzip ({text:.0f} MB text), {lines:,} document lines")
        print(f"{'reader':>16} {'seconds':>8} {'lines/s':>11}")
        for name, seconds in (
            ("pyarrow", fast_seconds),
            (f"pyarrow, {args.jobs} jobs", jobs),
            ("line-by-line", slow_seconds),
            ("gunzip only", gunzip),
        ):
            print(f"{name:>16} {seconds:>8.2f} {lines / seconds:>11,.0f}")


if __name__ == "__main__":
    main()
