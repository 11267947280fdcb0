"""Throughput of the click simulator (`cltr simulate`'s inner loop) on a Yahoo-shaped problem.

    python bench/simulate.py [--queries 20000] [--docs 24] [--passes 10]

Prints impressions per second for ranking + click drawing, excluding data generation.
"""

import argparse
import time

import numpy as np

from cltr.clickmodels.pbm import PBMSettings, position_based_model
from cltr.core.clicks import simulate_clicks
from cltr.core.ranking import rank_documents


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=20000)
    parser.add_argument("--docs", type=int, default=24)
    parser.add_argument("--passes", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    n_docs = args.queries * args.docs
    offsets = np.arange(0, n_docs + 1, args.docs)
    scores = rng.normal(size=n_docs)
    relevant = rng.random(n_docs) < 0.25
    impressions = n_docs * args.passes
    best_rank, best_clicks = np.inf, np.inf
    for repeat in range(args.repeats):
        start = time.perf_counter()
        rank = rank_documents(scores, offsets, np.random.default_rng(repeat))
        middle = time.perf_counter()
        probability, propensity = position_based_model(rank, relevant, PBMSettings(eta=1.0, eps_neg=0.1))
        log = simulate_clicks(
            rank, probability, propensity, offsets, passes=args.passes, rng=np.random.default_rng(repeat)
        )
        end = time.perf_counter()
        best_rank, best_clicks = min(best_rank, middle - start), min(best_clicks, end - middle)
    print(
        f"{args.queries} queries x {args.docs} docs x {args.passes} passes = {impressions:,} impressions, "
        f"{len(log):,} clicks"
    )
    print(f"ranking {best_rank:.3f} s, clicks {best_clicks:.3f} s (best of {args.repeats})")
    print(
        f"throughput: {impressions / (best_rank + best_clicks) / 1e6:.1f} M impressions/s "
        f"(clicks alone {impressions / best_clicks / 1e6:.1f} M/s)"
    )


if __name__ == "__main__":
    main()
