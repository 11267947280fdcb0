"""Speed of the exact pairwise SVM solver (`cltr.core.svm.solve_pairwise_svm`) on click problems.

    python bench/solver.py [--C 0.1 1 10 100] [--threads 1 2] [--repeats 5] [--dtype float64]
    python bench/solver.py --yahoo [--C 1 10 100] [--repeats 3]

Default: 1,500 queries x 40 documents x 46 dense features in [0, 1] (LETOR-shaped), one
pass of position-based clicks. ``--yahoo``: 20,000 queries x 24 documents x 700 features,
10 passes. X is float32 unless ``--dtype float64``. Clicks come from a seeded generator
here: a hidden linear relevance (top ``--relevant`` share of each query relevant), a
"production" ranking by a noisy score, observation propensity (1/r)^eta, clicks on
observed relevant documents always and on observed irrelevant ones with probability
eps_neg; costs c_i = 1/propensity.

Prints, per C and BLAS thread count: seconds (median of the repeats), iterations,
objective, certified relative gap, seconds per iteration (seconds / iterations: setup and
the final exact pass included), the floor (best of many X @ w + X.T @ g on the same X, in
X's dtype, with the same threads) and their ratio; on the click problem also the time
scikit-learn's LinearSVC (liblinear's dual coordinate descent, the same primal on explicit
pairs, no intercept) takes to reach an equal or lower objective, at the first of
``--svc-tol`` that gets there, and the speed-up over it. Last, the peak resident memory
(ru_maxrss) against the size of X.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

from cltr.core.svm import pairwise_objective, solve_pairwise_svm


def make_click_problem(
    n_queries: int,
    n_docs: int,
    n_features: int,
    *,
    passes: int,
    dtype,
    relevant_share: float,
    noise: float,
    eta: float,
    eps_neg: float,
    seed: int,
) -> dict:
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


def floor_seconds(X: np.ndarray, repeats: int) -> float:
    """Best of ``repeats`` X @ w + X.T @ g, vectors in X's dtype: two passes over X."""
    rng = np.random.default_rng(1)
    w = rng.standard_normal(X.shape[1]).astype(X.dtype)
    g = rng.standard_normal(X.shape[0]).astype(X.dtype)
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        X @ w
        X.T @ g
        best = min(best, time.perf_counter() - start)
    return best


def explicit_pairs(problem: dict, C: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (click, other document of its query) as a row x_click - x_other, float64, with
    labels alternating ±1 (rows flipped to match: liblinear wants two classes) and weights
    (C/n) c_i, so that LinearSVC(C=1) minimises the same primal."""
    offsets, click_query, click_doc = problem["offsets"], problem["click_query"], problem["click_doc"]
    starts, stops = offsets[click_query], offsets[click_query + 1]
    sizes = stops - starts
    example = np.repeat(np.arange(len(click_doc)), sizes)
    other = np.arange(sizes.sum()) + np.repeat(starts - (np.cumsum(sizes) - sizes), sizes)
    keep = other != click_doc[example]
    example, other = example[keep], other[keep]
    X = problem["X"].astype(np.float64)
    rows = X[click_doc[example]] - X[other]
    label = np.where(np.arange(len(rows)) % 2 == 0, 1.0, -1.0)
    rows *= label[:, None]
    weight = C / len(click_doc) * problem["cost"][example]
    return rows, label, weight


def linear_svc_seconds(problem: dict, C: float, objective: float, tolerances: list[float], repeats: int):
    """(seconds, tol) of LinearSVC's first fit at an objective <= ``objective``; (nan, None) if none does."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    rows, label, weight = explicit_pairs(problem, C)
    args = (problem["X"], problem["offsets"], problem["click_query"], problem["click_doc"], problem["cost"], C)
    for tol in tolerances:
        times = []
        for _ in range(repeats):
            model = LinearSVC(C=1.0, loss="hinge", dual=True, fit_intercept=False, tol=tol, max_iter=1_000_000)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                start = time.perf_counter()
                model.fit(rows, label, sample_weight=weight)
                times.append(time.perf_counter() - start)
            if pairwise_objective(model.coef_.ravel(), *args) > objective:
                break
        else:
            return float(np.median(times)), tol
    return float("nan"), None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--yahoo", action="store_true", help="20,000 queries x 24 docs x 700 features, 10 passes")
    parser.add_argument("--queries", type=int, help="queries (default 1500, yahoo 20000)")
    parser.add_argument("--docs", type=int, help="documents per query (default 40, yahoo 24)")
    parser.add_argument("--features", type=int, help="features (default 46, yahoo 700)")
    parser.add_argument("--passes", type=int, help="click passes (default 1, yahoo 10)")
    parser.add_argument("--dtype", choices=["float32", "float64"], default="float32", help="dtype of X")
    parser.add_argument("--C", type=float, nargs="+", help="C values (default 0.1 1 10 100, yahoo 1 10 100)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1], help="BLAS threads (default 1)")
    parser.add_argument("--repeats", type=int, help="solves per C, median reported (default 5, yahoo 3)")
    parser.add_argument("--tol", type=float, default=1e-3)
    parser.add_argument(
        "--no-svc", dest="svc", action="store_false", help="skip LinearSVC (always skipped with --yahoo)"
    )
    parser.add_argument(
        "--svc-tol",
        type=float,
        nargs="+",
        default=[1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6],
        help="LinearSVC tolerances tried in turn",
    )
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
    Cs = args.C or ([1.0, 10.0, 100.0] if yahoo else [0.1, 1.0, 10.0, 100.0])
    repeats = args.repeats or (3 if yahoo else 5)
    floor_repeats = 20 if yahoo else 200
    svc = args.svc and not yahoo
    dtype = np.dtype(args.dtype)

    start = time.perf_counter()
    problem = make_click_problem(
        queries,
        docs,
        features,
        passes=passes,
        dtype=dtype,
        relevant_share=args.relevant,
        noise=args.noise,
        eta=args.eta,
        eps_neg=args.eps_neg,
        seed=args.seed,
    )
    made = time.perf_counter() - start
    X = problem["X"]
    n = len(problem["click_doc"])
    distinct = len(np.unique(problem["click_doc"]))
    print(
        f"{queries} queries x {docs} docs x {features} features ({dtype.name}), "
        f"{passes} pass(es): {n:,} clicks ({distinct:,} distinct clicked documents), "
        f"{n * (docs - 1):,} pairs ({distinct * (docs - 1):,} after merging); generated in {made:.1f} s"
    )
    print(
        f"tol = {args.tol:g} (relative duality gap); median of {repeats} solves; floor: best of "
        f"{floor_repeats} X @ w + X.T @ g"
    )
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    header = (
        f"{'C':>6} {'thr':>3} {'seconds':>8} {'iters':>5} {'objective':>12} {'gap':>9} "
        f"{'s/iter':>9} {'floor':>9} {'ratio':>6}"
    )
    print(header + (f" {'LinearSVC':>9} {'svc tol':>7} {'speed-up':>8}" if svc else ""))
    floors = {}
    for count in args.threads:
        with threadpool_limits(limits=count, user_api="blas"):
            floors[count] = floor_seconds(X, floor_repeats)
    for C in Cs:
        for count in args.threads:
            with threadpool_limits(limits=count, user_api="blas"):
                results = []
                for _ in range(repeats):
                    floors[count] = min(floors[count], floor_seconds(X, floor_repeats // repeats))
                    results.append(
                        solve_pairwise_svm(
                            X,
                            problem["offsets"],
                            problem["click_query"],
                            problem["click_doc"],
                            problem["cost"],
                            C,
                            tol=args.tol,
                        )
                    )
                seconds = float(np.median([r.seconds for r in results]))
                result = results[-1]
                per_iteration = seconds / result.iterations
                line = (
                    f"{C:6g} {count:3d} {seconds:8.4f} {result.iterations:5d} {result.objective:12.6g} "
                    f"{result.gap:9.2e} {per_iteration:9.2e} {floors[count]:9.2e} "
                    f"{per_iteration / floors[count]:6.2f}"
                )
                if svc:
                    svc_seconds, svc_tol = linear_svc_seconds(problem, C, result.objective, args.svc_tol, repeats=3)
                    line += f" {svc_seconds:9.3f} {svc_tol or float('nan'):7.0e} {svc_seconds / seconds:8.1f}"
            print(line)
            sys.stdout.flush()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # kilobytes on Linux
    size = X.nbytes / 2**30
    print(
        f"peak resident memory (ru_maxrss): {peak:.3f} GiB = {peak / size:.2f} x X ({size:.3f} GiB); "
        f"{before:.3f} GiB before the first solve"
    )


if __name__ == "__main__":
    main()
