"""SVM PropDCG's convex-concave procedure at every C of the grid, on real MQ2008 or the
embedded default.

    python bench/ccp.py --mq2008 ../shared/data/letor4/MQ2008 [--fold 1] [--passes 100]
    python bench/ccp.py --default [--passes 100] [--compare-numpy]

Clicks: eta 1, eps_neg 0.1 on the production ranker's rankings (seed 0). Per C: CCP steps to
convergence, inner solver iterations and seconds of the first step and the mean of the
warm-started ones, total seconds. ``--compare-numpy`` runs the whole grid twice more, with
the solver's pair passes compiled (numba, the default where installed) and in numpy
(``CLTR_NO_NUMBA=1``), alternating, and prints the process CPU seconds of each (one
process: numba's import and cached kernels are paid before the timing, as in a figure's
long-lived workers).
"""

import argparse
import os
import time

import numpy as np
from threadpoolctl import threadpool_limits

from cltr.core.ccp import propdcg_ccp
from cltr.core.objectives import rank_weight
from cltr.data.loaders import load_letor
from cltr.methods.linear import DEFAULT_C_GRID
from cltr.pipeline.stages import produce, simulated_logs


def whole_grid(train, log) -> float:
    """Process CPU seconds of the CCP at every C of the grid."""
    start = time.process_time()
    for C in DEFAULT_C_GRID:
        propdcg_ccp(train.X, train.offsets, log.query, log.doc, log.propensity, C, rank_weight("dcg"))
    return time.process_time() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--mq2008", help="the MQ2008 directory (Fold1, ...)")
    source.add_argument("--default", action="store_true", help="the embedded default dataset")
    parser.add_argument("--fold", type=int, default=1)
    parser.add_argument("--passes", type=int, default=100)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--compare-numpy",
        action="store_true",
        help="time the whole grid with compiled and with numpy pair passes, alternating",
    )
    parser.add_argument("--repeats", type=int, default=2, help="alternations of --compare-numpy")
    args = parser.parse_args()
    if args.default:
        from cltr import api

        dataset, name = api.load_dataset("synthetic"), "embedded default"
    else:
        dataset, name = load_letor(args.mq2008, fold=args.fold), f"MQ2008 Fold{args.fold}"
    production, _ = produce(dataset, seed=0)
    train = dataset.train
    log = simulated_logs(dataset, production, passes=args.passes, seed=0)["train"]
    print(f"{name}: {len(log)} training clicks, {args.passes} passes, {args.threads} BLAS thread(s)")
    print(
        f"{'C':>8} {'CCP steps':>9} {'converged':>9} {'inner it (1st / warm)':>22} "
        f"{'s (1st / warm mean)':>20} {'total s':>8}"
    )
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
            print(
                f"{C:8g} {len(trace):9d} {str(result.converged):>9} "
                f"{trace[0].inner_iterations:>10d} / {warm_it:9.1f} {trace[0].seconds:9.3f} / {warm_s:8.3f} "
                f"{total:8.2f}"
            )
        print(f"whole grid: {grand:.2f} s")
        if args.compare_numpy:
            before = os.environ.get("CLTR_NO_NUMBA")
            seconds: dict[str, list[float]] = {"compiled": [], "numpy": []}
            for _ in range(args.repeats):
                for mode, value in (("numpy", "1"), ("compiled", "")):
                    os.environ["CLTR_NO_NUMBA"] = value
                    seconds[mode].append(whole_grid(train, log))
            os.environ.pop("CLTR_NO_NUMBA", None) if before is None else os.environ.update(CLTR_NO_NUMBA=before)
            for mode, values in seconds.items():
                print(f"whole grid, {mode} pair passes: " + ", ".join(f"{v:.2f}" for v in values) + " s CPU")
            print(f"compiled / numpy (medians): {np.median(seconds['compiled']) / np.median(seconds['numpy']):.2f}")


if __name__ == "__main__":
    main()
