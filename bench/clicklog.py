"""Importing a Yahoo-shaped click log, and estimating propensities from it.

    python bench/clicklog.py [--queries 20000] [--docs 24] [--passes 10] [--rankers 2]
                             [--bootstrap 100] [--dir DIR] [--string-sessions] [--no-estimators]
                             [--profile]

The log (seeded numpy draws, nothing from cltr's simulator): QUERIES queries of DOCS
candidates each (a synthetic ``Queries`` with 46 standard-normal features), labels 0-4 from
a noisy linear function of the features (relevant: >= 3), RANKERS logging rankers that
rank by the labels plus their own Gaussian noise, pass p shown by ranker p mod RANKERS; position-based clicks with
propensity 1/rank, eps_pos 1, eps_neg 0.1. The defaults give 4.8 M impression rows,
written as TSV and, with pyarrow, Parquet.

Each import (``cltr.data.clicklog.read_click_log``) runs in a fresh process, started by a
small wrapper that reports ``ru_maxrss`` of RUSAGE_CHILDREN: the wrapper keeps this
process's own memory out of the figure (on Linux a child inherits the high-water mark of
the process it was forked from). The child builds the same ``Queries`` (its X untouched
zeros, never resident) and reports its resident memory before reading, so the table
shows both the peak and what reading added. Then the seconds of each propensity
estimator (``cltr.pipeline.stages.estimate_propensities`` on the aggregated impressions)
when ``cltr.core.propensity`` exists. Targets: import >= 2 M rows/s, each estimation < 30 s.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

N_FEATURES = 46
IMPORT_TARGET = 2e6  # rows per second
ESTIMATE_TARGET = 30.0  # seconds


def make_queries(n_queries: int, n_docs: int, *, seed: int, features: bool = True):
    """The synthetic split: qids a seeded permutation of 1..3·n_queries (not in file
    order, so the reader's qid lookup is exercised), ``n_docs`` candidates each."""
    from cltr.core.queries import Queries

    rng = np.random.default_rng([seed, 0])
    qid = np.sort(rng.choice(3 * n_queries, size=n_queries, replace=False) + 1)[rng.permutation(n_queries)]
    offsets = np.arange(0, n_queries * n_docs + 1, n_docs, dtype=np.int64)
    total = n_queries * n_docs
    if not features:  # what the reader needs: qids and offsets (X untouched zeros, never resident)
        return Queries(
            X=np.zeros((total, N_FEATURES)), labels=np.zeros(total, np.int64), qid=qid.astype(np.int64), offsets=offsets
        )
    X = rng.standard_normal((total, N_FEATURES))
    # labels 0-4 from a linear function of the features plus noise, so that a feature-based
    # relevance model (regression EM) can learn them
    latent = X[:, :8] @ rng.uniform(0.5, 1.5, 8) + 1.5 * rng.standard_normal(total)
    labels = np.searchsorted(np.quantile(latent, [0.45, 0.7, 0.85, 0.95]), latent).astype(np.int64)
    return Queries(X=X, labels=labels, qid=qid.astype(np.int64), offsets=offsets)


def make_log(queries, *, passes: int, rankers: int, seed: int, string_sessions: bool) -> dict[str, np.ndarray]:
    """The impressions as columns: session, qid, doc, rank, click, propensity, ranker."""
    rng = np.random.default_rng([seed, 1])
    n_queries, n_docs = queries.n_queries, int(np.diff(queries.offsets)[0])
    relevant = (queries.labels >= 3).reshape(n_queries, n_docs)
    # each ranker's order of each query's documents: labels plus its own noise
    orders = [
        np.argsort(
            -(queries.labels.reshape(n_queries, n_docs) + 1.5 * rng.standard_normal((n_queries, n_docs))),
            axis=1,
            kind="stable",
        )
        for _ in range(rankers)
    ]
    rank = np.arange(1, n_docs + 1)
    columns = {name: [] for name in ("session", "qid", "doc", "rank", "click", "propensity", "ranker")}
    for p in range(passes):
        k = p % rankers
        doc = orders[k]  # (n_queries, n_docs): the document shown at each rank
        observed = rng.random((n_queries, n_docs)) < 1.0 / rank
        shown_relevant = np.take_along_axis(relevant, doc, axis=1)
        click = observed & np.where(shown_relevant, True, rng.random((n_queries, n_docs)) < 0.1)
        session = p * n_queries + np.repeat(np.arange(n_queries), n_docs)
        columns["session"].append(session)
        columns["qid"].append(np.repeat(queries.qid, n_docs))
        columns["doc"].append(doc.ravel())
        columns["rank"].append(np.tile(rank, n_queries))
        columns["click"].append(click.ravel().astype(np.int8))
        columns["propensity"].append(np.tile(1.0 / rank, n_queries))
        columns["ranker"].append(np.full(n_queries * n_docs, k, dtype=np.int8))
    out = {name: np.concatenate(parts) for name, parts in columns.items()}
    if string_sessions:
        out["session"] = np.char.add("s-", out["session"].astype(str)).astype(object)
    return out


def write(columns: dict[str, np.ndarray], directory: Path) -> list[Path]:
    """TSV (pyarrow's CSV writer when present, else pandas) and Parquet (with pyarrow)."""
    paths = [directory / "log.tsv"]
    try:
        import pyarrow as pa
        import pyarrow.csv as pacsv
        import pyarrow.parquet as pq
    except ImportError:
        import pandas as pd

        pd.DataFrame(columns).to_csv(paths[0], sep="\t", index=False)
        return paths
    table = pa.table(columns)
    pacsv.write_csv(table, paths[0], pacsv.WriteOptions(delimiter="\t", quoting_style="none"))
    paths.append(directory / "log.parquet")
    pq.write_table(table, paths[1])
    return paths


# -- the measured child ------------------------------------------------------------------


def child(args) -> None:
    """Read the log once in this fresh process; print seconds, rows, RSS before reading."""
    from cltr.data.clicklog import read_click_log

    queries = make_queries(args.queries, args.docs, seed=args.seed, features=False)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    rows = read_click_log(args.child, queries)
    seconds = time.perf_counter() - start
    if args.profile:
        import cProfile
        import pstats

        profile = cProfile.Profile()
        profile.runcall(read_click_log, args.child, queries)
        pstats.Stats(profile, stream=sys.stderr).sort_stats("cumulative").print_stats(25)
    print(
        json.dumps(
            {"seconds": seconds, "rows": int(len(rows.doc)), "clicks": int(rows.click.sum()), "rss_before_kib": before}
        )
    )


WRAPPER = (
    "import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True); "
    "print('maxrss', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, flush=True)"
)


def measure_import(path: Path, args) -> dict:
    command = [
        sys.executable,
        "-c",
        WRAPPER,
        sys.executable,
        __file__,
        "--child",
        str(path),
        "--queries",
        str(args.queries),
        "--docs",
        str(args.docs),
        "--seed",
        str(args.seed),
    ]
    if args.profile:
        command.append("--profile")
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    if args.profile:
        print(done.stderr, file=sys.stderr)
    lines = done.stdout.strip().splitlines()
    result = json.loads(lines[-2])
    result["peak_kib"] = int(lines[-1].split()[1])
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=20000)
    parser.add_argument("--docs", type=int, default=24)
    parser.add_argument("--passes", type=int, default=10)
    parser.add_argument("--rankers", type=int, default=2)
    parser.add_argument("--bootstrap", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dir", type=Path, default=None, help="Where to write the logs [default: a temporary one].")
    parser.add_argument("--string-sessions", action="store_true", help="Session ids 's-N' instead of integers.")
    parser.add_argument("--no-estimators", action="store_true")
    parser.add_argument("--profile", action="store_true", help="cProfile one more read in each child (stderr).")
    parser.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        return child(args)

    with tempfile.TemporaryDirectory() as temporary:
        directory = args.dir or Path(temporary)
        directory.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        queries = make_queries(args.queries, args.docs, seed=args.seed)
        columns = make_log(
            queries, passes=args.passes, rankers=args.rankers, seed=args.seed, string_sessions=args.string_sessions
        )
        n_rows = len(columns["doc"])
        paths = write(columns, directory)
        del columns
        print(
            f"log: {args.queries} queries x {args.docs} documents x {args.passes} passes, {args.rankers} rankers "
            f"= {n_rows:,} impression rows ({'string' if args.string_sessions else 'integer'} session ids), "
            f"made and written in {time.perf_counter() - start:.1f} s"
        )
        rows = []
        for path in paths:
            result = measure_import(path, args)
            rate = result["rows"] / result["seconds"]
            rows.append(
                {
                    "step": f"read_click_log {path.suffix[1:]}",
                    "file MB": f"{os.path.getsize(path) / 1e6:.0f}",
                    "seconds": f"{result['seconds']:.2f}",
                    "M rows/s": f"{rate / 1e6:.2f}",
                    "peak MB (before read)": f"{result['peak_kib'] / 1024:.0f} ({result['rss_before_kib'] / 1024:.0f})",
                    "target": "ok" if rate >= IMPORT_TARGET else "BELOW 2 M rows/s",
                }
            )

        if not args.no_estimators:
            if importlib.util.find_spec("cltr.core.propensity") is None:
                print("cltr.core.propensity is absent: propensity estimation not measured")
            else:
                from cltr.data.clicklog import read_click_log
                from cltr.pipeline.stages import estimate_propensities

                logged = read_click_log(paths[0], queries)
                start = time.perf_counter()
                table = logged.impressions()
                rows.append(
                    {
                        "step": "aggregate impressions",
                        "seconds": f"{time.perf_counter() - start:.2f}",
                        "note": f"{len(table.doc):,} (document, rank, ranker) rows",
                    }
                )
                for method in ("harvest", "em"):
                    start = time.perf_counter()
                    estimate = estimate_propensities(
                        table, queries.X, method=method, bootstrap=args.bootstrap, seed=args.seed
                    )
                    seconds = time.perf_counter() - start
                    shown = ", ".join(f"{p:.3f}" for p in np.asarray(estimate.propensity)[:5])
                    rows.append(
                        {
                            "step": f"estimate {method} (bootstrap {args.bootstrap})",
                            "seconds": f"{seconds:.2f}",
                            "note": f"p_1..5 = {shown} (truth 1/r)",
                            "target": "ok" if seconds < ESTIMATE_TARGET else "ABOVE 30 s",
                        }
                    )
        columns_shown = ["step", "file MB", "seconds", "M rows/s", "peak MB (before read)", "target", "note"]
        widths = [max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in columns_shown]
        print("  ".join(c.ljust(w) for c, w in zip(columns_shown, widths, strict=True)))
        for r in rows:
            print("  ".join(str(r.get(c, "")).ljust(w) for c, w in zip(columns_shown, widths, strict=True)))


if __name__ == "__main__":
    main()
