"""The SVM solver's pair passes, numpy (``_Pairs``) against compiled (``_CompiledPairs``).

    python bench/pair_passes.py [--queries 1500] [--docs 40] [--clicked 17] [--calls 20] [--rounds 2]

A default-shaped click problem (``--queries`` x ``--docs`` documents, 46 float32 features,
``--clicked`` distinct clicked documents per query: about a million pairs), one set of
document scores and one direction; per pass (the slacks at a point, the scan along the ray,
the line search's breakpoints in a bracket, the next plane) the process CPU milliseconds of
one call, the mean of ``--calls`` calls, for each implementation in turn, ``--rounds`` times.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from cltr.core.svm.ocas import PairwiseProblem
from cltr.core.svm.pairs import _CompiledPairs, _Pairs
from cltr.core.svm.problem import _products


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=1500)
    parser.add_argument("--docs", type=int, default=40)
    parser.add_argument("--clicked", type=int, default=17)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    offsets = np.arange(args.queries + 1) * args.docs
    X = rng.standard_normal((args.queries * args.docs, 46)).astype(np.float32)
    click_query = np.repeat(np.arange(args.queries), args.clicked)
    click_doc = click_query * args.docs + np.concatenate(
        [rng.choice(args.docs, args.clicked, replace=False) for _ in range(args.queries)]
    )
    problem = PairwiseProblem(X, offsets, click_query, click_doc)
    weight = problem.doc_weight(np.ones(len(click_doc)), 10.0)
    scores = _products(problem.X_used, rng.standard_normal(46) * 0.1)[0].astype(np.float64)
    change = _products(problem.X_used, rng.standard_normal(46) * 0.01)[0].astype(np.float64)
    for _ in range(args.rounds):
        for kind in (_Pairs, _CompiledPairs):
            pairs = kind(problem, weight)
            pairs.reset(scores)
            pairs.scan(change)
            timings = {}
            for name, method, arguments in (
                ("slacks", pairs.reset, (scores,)),
                ("scan", pairs.scan, (change,)),
                ("breakpoints", pairs.breaks, (0.5, 2.0)),
                ("plane", pairs.advance, (0.0, 0.1)),
            ):
                with np.errstate(divide="ignore", invalid="ignore"):
                    method(*arguments)
                    start = time.process_time()
                    for _ in range(args.calls):
                        method(*arguments)
                timings[name] = (time.process_time() - start) / args.calls * 1e3
            print(
                f"{kind.__name__:>15} ({pairs.n_pairs:,} pairs): "
                + ", ".join(f"{name} {ms:.2f} ms" for name, ms in timings.items()),
                flush=True,
            )


if __name__ == "__main__":
    main()
