"""SVM PropDCG's convex-concave procedure on real MQ2008 at every C of the grid.

    python bench/ccp.py --mq2008 ../shared/data/letor4/MQ2008 [--fold 1] [--passes 100]

Clicks: eta 1, eps_neg 0.1 on the production ranker's rankings (seed 0). Per C: CCP steps to
convergence, inner solver iterations and seconds of the first step and the mean of the
warm-started ones, total seconds.
"""

import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits

from cltr.core.ccp import propdcg_ccp
from cltr.core.objectives import rank_weight
from cltr.data.loaders import load_letor
from cltr.methods.linear import DEFAULT_C_GRID
from cltr.pipeline.stages import produce, simulated_logs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mq2008", required=True)
    parser.add_argument("--fold", type=int, default=1)
    parser.add_argument("--passes", type=int, default=100)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    dataset = load_letor(args.mq2008, fold=args.fold)
    production, _ = produce(dataset, seed=0)
    train = dataset.train
    log = simulated_logs(dataset, production, passes=args.passes, seed=0)["train"]
    print(f"MQ2008 Fold{args.fold}: {len(log)} training clicks, {args.passes} passes, "
          f"{args.threads} BLAS thread(s)")
    print(f"{'C':>8} {'CCP steps':>9} {'converged':>9} {'inner it (1st / warm)':>22} "
          f"{'s (1st / warm mean)':>20} {'total s':>8}")
    grand = 0.0
    with threadpool_limits(args.threads):
        for C in DEFAULT_C_GRID:
            start = time.perf_counter()
            result = propdcg_ccp(train.X, train.offsets, log.query, log.doc, log.propensity, C, rank_weight("dcg"))
            total = time.perf_counter() - start
            grand += total
            trace = result.trace
            warm_it = np.mean([s.inner_iterations for s in trace[1:]]) if len(trace) > 1 else float("nan")
            warm_s = np.mean([s.seconds for s in trace[1:]]) if len(trace) > 1 else float("nan")
            print(f"{C:8g} {len(trace):9d} {str(result.converged):>9} "
                  f"{trace[0].inner_iterations:>10d} / {warm_it:9.1f} {trace[0].seconds:9.3f} / {warm_s:8.3f} "
                  f"{total:8.2f}")
    print(f"whole grid: {grand:.2f} s")


if __name__ == "__main__":
    main()
