"""Speed of the risk gradient that Tree and Deep PropDCG call at every tree and minibatch.

    python bench/objective.py [--repeats 30] [--passes 100]

On the embedded default (generated with its default settings) with production-ranker
clicks (eta 1, eps_neg 0.1, ``--passes`` passes, seed 0), Tree PropDCG's objective (its
clicks merged into examples of one document and one weight) is evaluated at random scores
two ways: by sorting each query once (the default) and over every expanded (example,
candidate) pair (``pairs=``, the oracle). Prints the problem's size, milliseconds per call
(best and median of ``--repeats``), the ratio, and the largest difference of the two
gradients and curvatures.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from cltr.core.objectives import click_pairs, risk_gradient
from cltr.data.synthetic import make_synthetic
from cltr.methods.tree_propdcg import propensity_objective
from cltr.pipeline.stages import produce, simulated_logs


def timed(call, repeats):
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - start)
    return 1e3 * min(seconds), 1e3 * float(np.median(seconds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--passes", type=int, default=100)
    args = parser.parse_args()

    dataset = make_synthetic()
    production, _ = produce(dataset, seed=0)
    logs = simulated_logs(dataset, production, passes=args.passes, seed=0)
    _, objective = propensity_objective(dataset.train, logs["train"], "dcg")
    pairs = click_pairs(objective.offsets, objective.click_query, objective.click_doc)
    print(f"embedded default: {len(logs['train']):,} training clicks -> {len(objective.click_doc):,} examples on "
          f"{len(objective.offsets) - 1:,} queries, {objective.n_docs:,} documents, {len(pairs[0]):,} pairs")
    scores = np.random.default_rng(0).normal(size=objective.n_docs)
    common = (scores, objective.offsets, objective.click_query, objective.click_doc, None, objective.weight)
    options = {"n": 1, "with_curvature": True, "example_weight": objective.cost}

    def fast():
        return risk_gradient(*common, **options)

    def slow():
        return risk_gradient(*common, pairs=pairs, **options)

    a, b = fast(), slow()
    gap = max(float(np.max(np.abs(x - y))) for x, y in zip(a[1:], b[1:]))
    fast_best, fast_median = timed(fast, args.repeats)
    slow_best, slow_median = timed(slow, args.repeats)
    print(f"{'computation':>22} {'best ms':>9} {'median ms':>10}")
    print(f"{'sorted (default)':>22} {fast_best:9.2f} {fast_median:10.2f}")
    print(f"{'expanded pairs':>22} {slow_best:9.2f} {slow_median:10.2f}")
    print(f"speed-up (best): {slow_best / fast_best:.1f}x; largest |difference| of gradient and curvature: {gap:.1e}; "
          f"risk {a[0]:.6f} vs {b[0]:.6f}")


if __name__ == "__main__":
    main()
