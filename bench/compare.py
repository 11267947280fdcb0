"""Test Avg DCG of the linear methods over seeds, each repetition re-drawing every seed.

    python bench/compare.py --mq2008 ../shared/data/letor4/MQ2008 [--fold 1] [--seeds 6]
    python bench/compare.py --synthetic [--seeds 6]

Per repetition: production ranker, clicks (eta 1, eps_neg 0.1, 100 passes), then SVM Rank,
SVM PropRank and SVM PropDCG with C chosen on validation clicks. Prints mean and standard
deviation of test Avg DCG and the wall time of each method's full C grid.
"""

import argparse
import time

import numpy as np

from cltr.datasets import load_letor, make_synthetic
from cltr.methods import TrainingData, train
from cltr.pipeline import ClickSettings, evaluate, produce, simulate, stream

METHODS = ("svm-rank", "svm-proprank", "svm-propdcg")


def repetition(dataset, seed, passes):
    production, _ = produce(dataset, seed=seed)
    relevant = {s: q.relevant(dataset.relevant_from) for s, q in dataset.splits().items()}
    settings = ClickSettings(passes=passes)
    logs = {split: simulate(getattr(dataset, split), relevant[split], production, settings,
                            rng_presentation=stream(seed, "presentation", split),
                            rng_clicks=stream(seed, "clicks", split)) for split in ("train", "vali")}
    row = {"production": evaluate(production, dataset.test, relevant["test"], rng=stream(seed, "evaluate"))}
    seconds = {}
    data = TrainingData(dataset, logs["train"], logs["vali"], seed)
    for method in METHODS:
        start = time.perf_counter()
        scorer, info = train(method, data, {})
        seconds[method] = time.perf_counter() - start
        row[method] = evaluate(scorer, dataset.test, relevant["test"], rng=stream(seed, "evaluate"))
        row[method]["C"] = info["C"]
    return row, seconds, len(logs["train"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mq2008")
    parser.add_argument("--fold", type=int, default=1)
    parser.add_argument("--synthetic", action="store_true")
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--passes", type=int, default=100)
    args = parser.parse_args()
    dataset = make_synthetic() if args.synthetic else load_letor(args.mq2008, fold=args.fold)
    rows, times, clicks = [], [], []
    for seed in range(args.seeds):
        row, seconds, n_clicks = repetition(dataset, seed, args.passes)
        rows.append(row)
        times.append(seconds)
        clicks.append(n_clicks)
        print(f"seed {seed}: " + "  ".join(f"{m} {row[m]['avg_dcg']:.4f}" for m in row), flush=True)
    print(f"{'synthetic' if args.synthetic else f'MQ2008 Fold{args.fold}'}, {args.seeds} seeds, "
          f"{np.mean(clicks):.0f} training clicks on average")
    print(f"{'method':>14}  {'test Avg DCG':>18}  {'Avg Rank':>8}  {'grid seconds':>12}  chosen C")
    for method in ("production", *METHODS):
        dcg = [r[method]["avg_dcg"] for r in rows]
        rank = [r[method]["avg_rank"] for r in rows]
        grid = np.mean([t[method] for t in times]) if method in METHODS else float("nan")
        chosen = sorted({r[method].get("C") for r in rows if "C" in r[method]})
        print(f"{method:>14}  {np.mean(dcg):.4f} +- {np.std(dcg, ddof=1):.4f}  {np.mean(rank):8.2f}  "
              f"{grid:12.2f}  {chosen}")


if __name__ == "__main__":
    main()
