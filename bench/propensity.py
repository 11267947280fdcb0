"""Propensity estimators on a Yahoo-shaped click table: seconds, accuracy and band coverage.

    python bench/propensity.py [--queries 20000] [--docs 24] [--passes 10] [--features 46]
                               [--eta 1] [--bootstrap 200] [--coverage-reps 40] [--blas-threads N]

Generates (seeded) a position-based-model impression table: relevance sigma(x . beta + b)
from Gaussian features, two rankers that are noisy permutations of each other, ``passes``
sessions of every query per ranker, clicks ~ Binomial(passes, (1/k)^eta * relevance).
Times ``harvest_propensities`` on both rankers' logs and ``em_propensities`` on ranker 0's
alone (what it is meant for), each with its bootstrap, and prints the estimates against
the truth. Then repeats small simulations (300 queries x 10 documents, 20 sessions) and
prints how often each rank's band at level 0.9 covers the true propensity.

On a shared 2-core machine OpenBLAS's threads can stall each other badly (regression EM's
d x d Gram matrices are its only large BLAS calls); ``--blas-threads 1`` makes the timings
robust to other load.
"""

import argparse
import time

import numpy as np
from scipy.special import expit
from threadpoolctl import threadpool_limits

from cltr.core.propensity import em_propensities, harvest_propensities


def make_table(n_queries, n_docs, *, eta, sessions, n_features, rng, n_rankers=2, noise=1.0, offset=-1.0):
    """An impression table (dict of flat arrays), the features and the true relevance."""
    n = n_queries * n_docs
    X = rng.normal(size=(n, n_features))
    beta = rng.normal(size=n_features) * 1.5 / np.sqrt(n_features)
    relevance = expit(X @ beta + offset)
    base = (X @ beta + rng.normal(scale=0.5, size=n)).reshape(n_queries, n_docs)
    parts = []
    for ranker in range(n_rankers):
        score = base + (rng.normal(scale=noise, size=base.shape) if ranker else 0.0)
        rank = np.empty(base.shape, dtype=np.int64)
        np.put_along_axis(rank, np.argsort(-score, axis=1), np.arange(1, n_docs + 1)[None, :], axis=1)
        rank = rank.ravel()
        clicks = rng.binomial(sessions, (1.0 / rank) ** eta * relevance)
        parts.append(
            (
                np.repeat(np.arange(n_queries), n_docs),
                np.arange(n),
                rank,
                np.full(n, ranker),
                np.full(n, sessions),
                clicks,
            )
        )
    names = ("query", "doc", "rank", "ranker", "impressions", "clicks")
    return {name: np.concatenate([p[i] for p in parts]) for i, name in enumerate(names)}, X, relevance


def one_ranker(table, ranker=0):
    keep = table["ranker"] == ranker
    return {name: values[keep] for name, values in table.items() if name != "ranker"}


def report(name, estimate, seconds, eta):
    truth = (1.0 / estimate.rank) ** eta
    rel = np.abs(estimate.propensity / truth - 1.0)
    print(
        f"{name}: {seconds:.2f} s, {estimate.info['iterations']} iterations, converged "
        f"{estimate.info['converged']}; max relative error ranks 2-10 {rel[1:10].max():.3f}, "
        f"all ranks {rel.max():.3f}"
    )
    print("  rank  truth   estimate  band")
    for k, t, p, lo, hi in zip(estimate.rank, truth, estimate.propensity, estimate.low, estimate.high, strict=True):
        print(f"  {k:4d}  {t:.4f}  {p:.4f}    [{lo:.4f}, {hi:.4f}]")


def coverage(reps, eta, bootstrap, level=0.9):
    truth = (1.0 / np.arange(1, 11)) ** eta
    covered = {"harvest": np.zeros(10), "em": np.zeros(10)}
    for rep in range(reps):
        rng = np.random.default_rng([7, rep])
        table, X, _ = make_table(300, 10, eta=eta, sessions=20, n_features=5, rng=rng)
        h = harvest_propensities(**table, bootstrap=bootstrap, level=level, rng=rng)
        e = em_propensities(**one_ranker(table), X=X, bootstrap=bootstrap, level=level, rng=rng)
        covered["harvest"] += (h.low <= truth) & (truth <= h.high)
        covered["em"] += (e.low <= truth) & (truth <= e.high)
    # A binomial(reps, level) count lies in level +- 2 sd about 95% of the time.
    sd = np.sqrt(level * (1 - level) / reps)
    print(
        f"coverage of the {level:.0%} band over {reps} simulations (300 queries x 10 docs, 20 sessions; "
        f"expected {level:.2f} +- {2 * sd:.2f}):"
    )
    for name, count in covered.items():
        print(f"  {name:8s}" + " ".join(f"{c / reps:.2f}" for c in count))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=20000)
    parser.add_argument("--docs", type=int, default=24)
    parser.add_argument("--passes", type=int, default=10)
    parser.add_argument("--features", type=int, default=46)
    parser.add_argument("--eta", type=float, default=1.0)
    parser.add_argument("--bootstrap", type=int, default=200)
    parser.add_argument("--coverage-reps", type=int, default=40)
    parser.add_argument(
        "--blas-threads", type=int, default=None, help="limit BLAS threads (default: the library's own setting)"
    )
    args = parser.parse_args()
    with threadpool_limits(limits=args.blas_threads, user_api="blas"):
        run(args)


def run(args) -> None:
    rng = np.random.default_rng(2019)
    start = time.perf_counter()
    table, X, _ = make_table(
        args.queries, args.docs, eta=args.eta, sessions=args.passes, n_features=args.features, rng=rng
    )
    print(
        f"{args.queries} queries x {args.docs} docs x 2 rankers, {args.passes} sessions per query and "
        f"ranker, {args.features} features: {len(table['query']):,} rows, "
        f"{table['clicks'].sum():,} clicks (generated in {time.perf_counter() - start:.1f} s)"
    )

    start = time.perf_counter()
    h = harvest_propensities(**table, bootstrap=args.bootstrap, rng=np.random.default_rng(1))
    report(f"harvest (AllPairs, both rankers, bootstrap {args.bootstrap})", h, time.perf_counter() - start, args.eta)
    single = one_ranker(table)
    start = time.perf_counter()
    e = em_propensities(**single, X=X, bootstrap=args.bootstrap, rng=np.random.default_rng(2))
    report(
        f"regression EM (ranker 0 alone, {len(single['query']):,} rows, bootstrap {args.bootstrap})",
        e,
        time.perf_counter() - start,
        args.eta,
    )
    if args.coverage_reps > 0:
        start = time.perf_counter()
        coverage(args.coverage_reps, args.eta, bootstrap=min(args.bootstrap, 200))
        print(f"  ({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
