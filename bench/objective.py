"""Speed of the risk gradient that Tree and Deep PropDCG call at every tree and minibatch.

    python bench/objective.py [--repeats 30] [--passes 100]

On the embedded default (generated with its default settings) with production-ranker
clicks (eta 1, eps_neg 0.1, ``--passes`` passes, seed 0), Tree PropDCG's objective (its
clicks merged into examples of one document and one weight) is evaluated at random scores
three ways: by sorting each query once in the compiled kernels (``cltr.core.kernels``, numba;
the default when numba is installed), by the same computation in numpy (what
``CLTR_NO_NUMBA=1`` runs), and over every expanded (example, candidate) pair (``pairs=``, the
oracle). Prints the problem's size, the CPU time of the first calls (numba's compilation, or
loading its cache), each result's largest difference from the oracle, CPU milliseconds per call
(best and median of ``--repeats``, the three taken in turn so that a load on the machine falls on
all alike), and the ratios.

Measured (issue 27, 2-core machine shared with other work, load average about 10; CPU times):

    python bench/objective.py          (26,503 examples, 59,074 documents, 1,331,844 pairs)
        sorted, numba     3.88 ms best, 4.07 median
        sorted, numpy     9.57 ms best, 10.23 median    -> numba 2.46x (best), 2.51x (median)
        expanded pairs   21.01 ms best, 21.80 median
        largest difference from the oracle: 2.3e-16 (numba), 1.4e-16 (numpy), relative to the
        largest entry; the risk identical to 15 digits
    (an earlier run: 4.25 vs 9.13 ms, 2.14x.) Inside the compiled call, the per-query sort is
    about 1.8 of the 3.5 ms of the hinge kernel and the spread 0.15 ms; the checks, lambda and
    lambda' in numpy about 0.25 ms.

    cltr --workdir W prepare synthetic && cltr --workdir W simulate
    cltr --workdir W train tree-propdcg   (W/synthetic/models removed before each run; /usr/bin/time)
        numba (default)    60.6 s CPU (59.54 user + 1.07 sys)
        CLTR_NO_NUMBA=1    82.7 s CPU (80.49 + 2.24)
        numba (default)    63.1 s CPU (62.11 + 0.96)       -> numba 1.34x less CPU (82.7 / 61.9)
        every run: validation SNIPS Avg DCG 0.4761 against the logging ranker's 0.4402, the same
        chosen settings

A SortHint (Tree PropDCG passes one to every call: one tree moves the scores a little) starts
each query's sort from the last order; timed here at scores moved by N(0, 0.01) from the hint's,
with and without the hint, the results checked identical (2026-11-26, quiet machine,
``--repeats 20``):

        numba, moved      3.59 ms best, 3.65 median
        numba, hinted     2.13 ms best, 2.21 median    -> 1.69x (best), 1.65x (median)

Compiling the two kernels on a cold cache costs about 2.6 s CPU once (numba keeps them beside
cltr/core/kernels.py); a later process loads them in about 0.45 s CPU including numba's import.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from cltr.core import kernels
from cltr.core.objectives import SortHint, click_pairs, risk_gradient
from cltr.data.synthetic import make_synthetic
from cltr.methods.tree_propdcg import propensity_objective
from cltr.pipeline.stages import produce, simulated_logs


def interleaved(calls, repeats):
    """CPU milliseconds of each call, best and median of ``repeats``, the calls taken in turn (A, B, C, A, B,
    C, ...) so that a load on the shared machine falls on all of them alike."""
    seconds = {name: [] for name in calls}
    for _ in range(repeats):
        for name, call in calls.items():
            start = time.process_time()
            call()
            seconds[name].append(time.process_time() - start)
    return {name: (1e3 * min(s), 1e3 * float(np.median(s))) for name, s in seconds.items()}


def with_numba(on: bool, call):
    """``call`` with the compiled kernels switched on or off (``CLTR_NO_NUMBA``, read at every call)."""

    def switched():
        before = os.environ.get("CLTR_NO_NUMBA")
        os.environ["CLTR_NO_NUMBA"] = "0" if on else "1"
        try:
            return call()
        finally:
            if before is None:
                del os.environ["CLTR_NO_NUMBA"]
            else:
                os.environ["CLTR_NO_NUMBA"] = before

    return switched


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--passes", type=int, default=100)
    args = parser.parse_args()

    dataset = make_synthetic()
    production, _ = produce(dataset, seed=0)
    logs = simulated_logs(dataset, production, passes=args.passes, seed=0)
    _, objective = propensity_objective(dataset.train, logs["train"], "dcg")
    pairs = click_pairs(objective.offsets, objective.clicks)
    print(
        f"embedded default: {len(logs['train']):,} training clicks -> {len(objective.clicks):,} examples on "
        f"{len(objective.offsets) - 1:,} queries, {objective.n_docs:,} documents, {len(pairs[0]):,} pairs"
    )
    scores = np.random.default_rng(0).normal(size=objective.n_docs)
    common = (scores, objective.offsets, objective.clicks, objective.weight)
    options = {"n": 1, "with_curvature": True}

    def sorted_():
        return risk_gradient(*common, **options)

    def expanded():
        return risk_gradient(*common, pairs=pairs, **options)

    # Tree PropDCG's calls: one tree moves the scores a little, and a SortHint carries the last
    # order to the next call (each call here starts from the order at the unmoved scores)
    moved = scores + 0.01 * np.random.default_rng(1).normal(size=objective.n_docs)
    last = SortHint()
    risk_gradient(*common, **options, hint=last) if kernels.enabled() else None
    start_order = last.order

    def hinted():
        hint = SortHint()
        hint.order = start_order
        return risk_gradient(moved, *common[1:], **options, hint=hint)

    def unhinted():
        return risk_gradient(moved, *common[1:], **options)

    calls = {
        "sorted, numba": with_numba(True, sorted_),
        "numba, moved": with_numba(True, unhinted),
        "numba, hinted": with_numba(True, hinted),
        "sorted, numpy": with_numba(False, sorted_),
        "expanded pairs": expanded,
    }
    if not kernels.enabled():
        print("numba is not installed (or CLTR_NO_NUMBA is set): timing the numpy computations only")
        del calls["sorted, numba"], calls["numba, moved"], calls["numba, hinted"]
    start = time.process_time()
    results = {name: call() for name, call in calls.items()}  # the first call compiles (or loads the cache)
    print(f"first calls (compilation or numba's cache included): {time.process_time() - start:.2f} s CPU")
    oracle = results["expanded pairs"]
    if "numba, hinted" in results:
        hinted_result, unhinted_result = results.pop("numba, hinted"), results.pop("numba, moved")
        same = all(np.array_equal(x, y) for x, y in zip(hinted_result, unhinted_result, strict=True))
        print(f"   numba, hinted: at scores moved by N(0, 0.01) from the hint's, identical to no hint: {same}")
    for name, result in results.items():
        gap = max(float(np.max(np.abs(x - y)) / np.max(np.abs(y))) for x, y in zip(result[1:], oracle[1:], strict=True))
        print(
            f"{name:>16}: risk {result[0]:.9f}, largest |difference| of gradient and curvature from the "
            f"expanded pairs {gap:.1e} (relative to the largest entry)"
        )
    times = interleaved(calls, args.repeats)
    print(f"{'computation':>16} {'best ms':>9} {'median ms':>10}   (CPU time per call, interleaved)")
    for name, (best, median) in times.items():
        print(f"{name:>16} {best:9.2f} {median:10.2f}")
    numpy_best, numpy_median = times["sorted, numpy"]
    if "sorted, numba" in times:
        numba_best, numba_median = times["sorted, numba"]
        print(f"numba vs numpy: {numpy_best / numba_best:.2f}x (best), {numpy_median / numba_median:.2f}x (median)")
        moved_best, moved_median = times["numba, moved"]
        hinted_best, hinted_median = times["numba, hinted"]
        print(
            f"at the moved scores, hinted vs not: {moved_best / hinted_best:.2f}x (best), "
            f"{moved_median / hinted_median:.2f}x (median)"
        )
    print(f"numpy sorted vs expanded pairs: {times['expanded pairs'][0] / numpy_best:.2f}x (best)")


if __name__ == "__main__":
    main()
