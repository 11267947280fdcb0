"""Coverage of the propensity bands over many small simulated single-ranker logs.

    python bench/propensity_coverage.py [--logs 200] [--queries 150] [--docs 6] [--sessions 30]
                                        [--eta 1] [--bootstrap 50] [--level 0.9] [--trees-logs 0]

Each log is a position-based-model simulation with a known (1/k)^eta: Gaussian features,
relevance sigma(x . beta - 1) (so the logistic relevance model is right), one deterministic
ranker sorting by a noisy copy of x . beta. On each log it runs

- regression EM (logistic relevance) with the band that re-runs EM on every query resample
  (``band="refit"``) and with the one-step estimating-function band (``band="one-step"``),
  on the same resamples;
- the swap estimator on a swap-k log (rank 1 traded with a uniform k in 1..docs every
  session) of the same queries and sessions;
- optionally (``--trees-logs N``, slow) EM with LightGBM relevance and the refit band on the
  first N logs whose relevance is a sine, a square and a step of the features.

and prints, per rank, how often the band at ``--level`` covers the truth, the mean width, and
the MAPE of the point estimate at ranks 2..docs. One process, one BLAS thread.
"""

import argparse
import time
from functools import partial

import numpy as np
from scipy.special import expit
from threadpoolctl import threadpool_limits

from cltr.core.interventions import intervene, swap_propensities
from cltr.core.propensity import em_propensities


def single_ranker_log(n_queries, n_docs, *, eta, sessions, rng, nonlinear=False):
    """(impression table of one deterministic ranker, features, relevance per document)."""
    n = n_queries * n_docs
    X = rng.normal(size=(n, 4))
    if nonlinear:
        score = 1.5 * np.sin(2.0 * X[:, 0]) + (X[:, 1] ** 2 - 1.0) + 1.0 * (X[:, 2] > 0.5) - 1.0
    else:
        score = X @ (rng.normal(size=4) * 1.5 / 2.0) - 1.0
    relevance = expit(score)
    base = (score + rng.normal(scale=0.5, size=n)).reshape(n_queries, n_docs)
    rank = np.empty(base.shape, dtype=np.int64)
    np.put_along_axis(rank, np.argsort(-base, axis=1), np.arange(1, n_docs + 1)[None, :], axis=1)
    rank = rank.ravel()
    table = {"query": np.repeat(np.arange(n_queries), n_docs), "doc": np.arange(n), "rank": rank,
             "impressions": np.full(n, sessions), "clicks": rng.binomial(sessions, (1.0 / rank) ** eta * relevance)}
    return table, X, relevance


def swap_log(table, relevance, *, eta, sessions, rng):
    """The same queries with a swap-k intervention in every session (per-session rows)."""
    n_docs_total = len(table["rank"])
    sizes = np.bincount(table["query"])
    offsets = np.r_[0, np.cumsum(sizes)]
    parts = []
    for _ in range(sessions):
        shown = intervene(table["rank"], offsets, kind="swap-k", depth=int(sizes.max()), rng=rng)
        parts.append((shown, rng.random(n_docs_total) < (1.0 / shown) ** eta * relevance))
    return {"query": np.tile(table["query"], sessions), "doc": np.tile(table["doc"], sessions),
            "rank": np.concatenate([p[0] for p in parts]).astype(np.int64),
            "impressions": np.ones(n_docs_total * sessions, dtype=np.int64),
            "clicks": np.concatenate([p[1] for p in parts]).astype(np.int64)}


def summarise(name, estimates, truth, seconds):
    low = np.array([e.low for e in estimates])
    high = np.array([e.high for e in estimates])
    point = np.array([e.propensity for e in estimates])
    covered = ((low <= truth) & (truth <= high)).mean(axis=0)
    width = (high - low).mean(axis=0)
    error = point[:, 1:] / truth[1:] - 1.0
    print(f"\n{name}: {len(estimates)} logs, {seconds:.1f} s CPU; MAPE ranks 2..K {np.mean(np.abs(error)):.1%}, "
          f"mean signed {np.mean(error):+.1%}; coverage pooled over ranks 2..K {covered[1:].mean():.1%}")
    print("rank      " + " ".join(f"{k:>6d}" for k in range(1, len(truth) + 1)))
    print("coverage  " + " ".join(f"{c:6.1%}" for c in covered))
    print("width     " + " ".join(f"{w:6.3f}" for w in width))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--logs", type=int, default=200)
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--docs", type=int, default=6)
    parser.add_argument("--sessions", type=int, default=30)
    parser.add_argument("--eta", type=float, default=1.0)
    parser.add_argument("--bootstrap", type=int, default=50)
    parser.add_argument("--level", type=float, default=0.9)
    parser.add_argument("--trees-logs", type=int, default=0)
    args = parser.parse_args()
    truth = (1.0 / np.arange(1, args.docs + 1)) ** args.eta
    results = {"em refit": [], "em one-step": [], "swap": [], "em trees refit": []}
    seconds = dict.fromkeys(results, 0.0)
    common = {"bootstrap": args.bootstrap, "level": args.level}
    with threadpool_limits(1):
        for log in range(args.logs):
            rng = np.random.default_rng([24, log])
            table, X, relevance = single_ranker_log(args.queries, args.docs, eta=args.eta, sessions=args.sessions,
                                                    rng=rng)
            for name, band in (("em refit", "refit"), ("em one-step", "one-step")):
                start = time.process_time()
                results[name].append(em_propensities(**table, X=X, band=band, rng=[log, 1], **common))
                seconds[name] += time.process_time() - start
            swapped = swap_log(table, relevance, eta=args.eta, sessions=args.sessions, rng=rng)
            start = time.process_time()
            results["swap"].append(swap_propensities(**swapped, rng=[log, 2], **common))
            seconds["swap"] += time.process_time() - start
            if log < args.trees_logs:
                from cltr.methods.trees import soft_label_trees

                table, X, _ = single_ranker_log(args.queries, args.docs, eta=args.eta, sessions=args.sessions,
                                                rng=rng, nonlinear=True)
                fitter = partial(soft_label_trees, n_estimators=30, num_leaves=7, min_data_in_leaf=20,
                                 learning_rate=0.3)
                start = time.process_time()
                results["em trees refit"].append(em_propensities(**table, X=X, relevance_model=fitter, tol=1e-3,
                                                                 iterations=30, rng=[log, 3], **common))
                seconds["em trees refit"] += time.process_time() - start
    print(f"{args.logs} logs of {args.queries} queries x {args.docs} documents, {args.sessions} sessions, "
          f"eta {args.eta}; {args.level:.0%} bands from {args.bootstrap} query resamples")
    for name, estimates in results.items():
        if estimates:
            summarise(name, estimates, truth, seconds[name])


if __name__ == "__main__":
    main()
