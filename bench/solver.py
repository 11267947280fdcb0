"""Speed of the exact pairwise SVM solver (`cltr.svm.solve_pairwise_svm`) on click problems.

    python bench/solver.py [--C 0.1 1 10] [--threads 1 2] [--repeats 3]
    python bench/solver.py --yahoo [--C 1 10] [--threads 1 2]

Default: 1,500 queries x 40 documents x 46 dense features in [0, 1] (LETOR-shaped), one
pass of position-based clicks. ``--yahoo``: 20,000 queries x 24 documents x 700 features
(float32), 10 passes. Clicks come from a seeded generator here: a hidden linear relevance
(top ``--relevant`` share of each query relevant), a "production" ranking by a noisy score,
observation propensity (1/r)^eta, clicks on observed relevant documents always and on
observed irrelevant ones with probability eps_neg; costs c_i = 1/propensity.

Prints, per C and BLAS thread count: seconds (best of the repeats), iterations, objective,
certified relative gap; ``--yahoo`` also the peak resident memory (ru_maxrss).
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

from cltr.core.svm import solve_pairwise_svm


def make_click_problem(n_queries: int, n_docs: int, n_features: int, *, passes: int, dtype,
                       relevant_share: float, noise: float, eta: float, eps_neg: float,
                       seed: int) -> dict:
    """A seeded click problem with every query of ``n_docs`` documents (X built in blocks)."""
    rng = np.random.default_rng(seed)
    total = n_queries * n_docs
    X = np.empty((total, n_features), dtype=dtype)
    hidden = rng.standard_normal(n_features)
    relevance = np.empty(total)
    block = max(1, (1 << 26) // (n_features * X.itemsize))
    for start in range(0, total, block):
        stop = min(total, start + block)
        rng.random(dtype=X.dtype, out=X[start:stop])
        relevance[start:stop] = X[start:stop] @ hidden.astype(dtype)
    relevance = relevance.reshape(n_queries, n_docs)
    relevance = (relevance - relevance.mean()) / relevance.std()
    cut = np.quantile(relevance, 1.0 - relevant_share, axis=1, keepdims=True)
    relevant = relevance >= cut
    production = relevance + noise * rng.standard_normal(relevance.shape)
    order = np.argsort(-production, axis=1)
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(1, n_docs + 1)[None, :], axis=1)
    propensity = (1.0 / rank) ** eta
    click_probability = propensity * np.where(relevant, 1.0, eps_neg)
    queries, docs, props = [], [], []
    for _ in range(passes):
        clicked = rng.random(click_probability.shape) < click_probability
        q, j = np.nonzero(clicked)
        queries.append(q)
        docs.append(q * n_docs + j)
        props.append(propensity[q, j])
    click_query = np.concatenate(queries)
    order = np.argsort(click_query, kind="stable")
    return {
        "X": X,
        "offsets": np.arange(0, total + 1, n_docs, dtype=np.int64),
        "click_query": click_query[order],
        "click_doc": np.concatenate(docs)[order],
        "cost": 1.0 / np.concatenate(props)[order],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--yahoo", action="store_true",
                        help="20,000 queries x 24 docs x 700 float32 features, 10 passes")
    parser.add_argument("--queries", type=int, help="queries (default 1500, yahoo 20000)")
    parser.add_argument("--docs", type=int, help="documents per query (default 40, yahoo 24)")
    parser.add_argument("--features", type=int, help="features (default 46, yahoo 700)")
    parser.add_argument("--passes", type=int, help="click passes (default 1, yahoo 10)")
    parser.add_argument("--C", type=float, nargs="+", help="C values (default 0.1 1 10, yahoo 1)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="BLAS threads (default 1 2)")
    parser.add_argument("--repeats", type=int, help="best of this many solves (default 3, yahoo 1)")
    parser.add_argument("--tol", type=float, default=1e-3)
    parser.add_argument("--relevant", type=float, default=0.1, help="share of relevant documents")
    parser.add_argument("--noise", type=float, default=1.0, help="production ranker's score noise")
    parser.add_argument("--eta", type=float, default=1.0)
    parser.add_argument("--eps-neg", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    yahoo = args.yahoo
    queries = args.queries or (20000 if yahoo else 1500)
    docs = args.docs or (24 if yahoo else 40)
    features = args.features or (700 if yahoo else 46)
    passes = args.passes or (10 if yahoo else 1)
    Cs = args.C or ([1.0] if yahoo else [0.1, 1.0, 10.0])
    threads = args.threads
    repeats = args.repeats or (1 if yahoo else 3)
    dtype = np.float32 if yahoo else np.float64

    start = time.perf_counter()
    problem = make_click_problem(queries, docs, features, passes=passes, dtype=dtype,
                                 relevant_share=args.relevant, noise=args.noise, eta=args.eta,
                                 eps_neg=args.eps_neg, seed=args.seed)
    made = time.perf_counter() - start
    n = len(problem["click_doc"])
    distinct = len(np.unique(problem["click_doc"]))
    print(f"{queries} queries x {docs} docs x {features} features ({np.dtype(dtype).name}), "
          f"{passes} pass(es): {n:,} clicks ({distinct:,} distinct clicked documents), "
          f"{n * (docs - 1):,} pairs; generated in {made:.1f} s")
    print(f"tol = {args.tol:g} (relative duality gap), best of {repeats}")
    print(f"{'C':>8} {'threads':>7} {'seconds':>9} {'iters':>6} {'objective':>14} {'gap':>10} {'conv':>5}")
    for C in Cs:
        for count in threads:
            best = None
            with threadpool_limits(limits=count, user_api="blas"):
                for _ in range(repeats):
                    result = solve_pairwise_svm(problem["X"], problem["offsets"], problem["click_query"],
                                                problem["click_doc"], problem["cost"], C, tol=args.tol)
                    if best is None or result.seconds < best.seconds:
                        best = result
            print(f"{C:8g} {count:7d} {best.seconds:9.3f} {best.iterations:6d} {best.objective:14.6g} "
                  f"{best.gap:10.2e} {str(best.converged):>5}")
            sys.stdout.flush()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # kilobytes on Linux
    print(f"peak resident memory (ru_maxrss): {peak:.2f} GiB; X alone "
          f"{problem['X'].nbytes / 2**30:.2f} GiB")


if __name__ == "__main__":
    main()
