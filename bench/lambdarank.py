"""LightGBM on clicks (LambdaRank, Tree PropDCG): the full grid's time, and every method side by side.

    python bench/lambdarank.py --mq2008 ../shared/data/letor4/MQ2008 [--fold 1] [--passes 100]
    python bench/lambdarank.py --mq2008 DIR --method tree-propdcg   (that method's grid)
    python bench/lambdarank.py --mq2008 DIR --compare [--seeds 6] [--methods a,b,...]
    python bench/lambdarank.py --synthetic [--compare]

Without --compare: one repetition (seed 0): production ranker, clicks (eta 1, eps_neg 0.1,
100 passes), then the full LambdaRank grid (learning rate 0.001/0.01/0.1 x leaves 2..256,
trees by early stopping on validation clicks), printing each candidate's row and the
grid's wall time (--method tree-propdcg: the same for Tree PropDCG). With --compare: test
Avg DCG mean and standard deviation over seeds of production, skyline, SVM Rank, SVM
PropRank, SVM PropDCG, LambdaRank, Deep PropDCG and Tree PropDCG (those the registry has),
each repetition re-drawing every seed, hyperparameters chosen on validation clicks (the
skyline's on validation labels), and each method's mean training time with its grid.
"""

import argparse
import time

import numpy as np

from cltr.datasets import load_letor, make_synthetic
from cltr.methods import METHODS, TrainingData, train
from cltr.pipeline import ClickSettings, evaluate, produce, simulate, stream

COMPARED = ("skyline", "svm-rank", "svm-proprank", "svm-propdcg", "lambdarank", "deep-propdcg", "tree-propdcg")


def setup(dataset, seed, passes):
    production, _ = produce(dataset, seed=seed)
    relevant = {s: q.relevant(dataset.relevant_from) for s, q in dataset.splits().items()}
    settings = ClickSettings(passes=passes)
    logs = {split: simulate(getattr(dataset, split), relevant[split], production, settings,
                            rng_presentation=stream(seed, "presentation", split),
                            rng_clicks=stream(seed, "clicks", split)) for split in ("train", "vali")}
    return production, TrainingData(dataset, logs["train"], logs["vali"], seed), relevant["test"]


def test_metrics(scorer, dataset, relevant, seed):
    return evaluate(scorer, dataset.test, relevant, rng=stream(seed, "evaluate"))


def grid(dataset, passes, threads, method="lambdarank"):
    production, data, relevant = setup(dataset, 0, passes)
    print(f"{len(data.train_log)} training clicks, {len(data.vali_log)} validation clicks, "
          f"{dataset.train.n_docs} training documents; LightGBM threads {threads}")
    print(f"{'lr':>6} {'leaves':>6} {'trees':>5} {'grown':>5} {'vali SNIPS':>10} {'seconds':>7}")

    def show(row):
        print(f"{row['learning_rate']:6g} {row['num_leaves']:6d} {row['n_estimators']:5d} {row['rounds']:5d} "
              f"{row['validation_snips_avg_dcg']:10.4f} {row['seconds']:7.2f}", flush=True)

    start = time.perf_counter()
    scorer, info = train(method, data, {"threads": threads}, progress=show)
    seconds = time.perf_counter() - start
    print(f"full grid ({len(info['selection'])} candidates): {seconds:.1f} s; chosen {info['chosen']}, "
          f"validation SNIPS Avg DCG {info['validation_snips_avg_dcg']:.4f}")
    print(f"test Avg DCG: {method} {test_metrics(scorer, dataset, relevant, 0)['avg_dcg']:.4f}, "
          f"production {test_metrics(production, dataset, relevant, 0)['avg_dcg']:.4f}")


def compare(dataset, seeds, passes, methods):
    rows, times = [], []
    for seed in range(seeds):
        production, data, relevant = setup(dataset, seed, passes)
        row, seconds = {"production": test_metrics(production, dataset, relevant, seed)}, {}
        for method in methods:
            start = time.perf_counter()
            scorer, info = train(method, data, {})
            seconds[method] = time.perf_counter() - start
            row[method] = {**test_metrics(scorer, dataset, relevant, seed), "chosen": info["chosen"]}
        rows.append(row)
        times.append(seconds)
        print(f"seed {seed}: " + "  ".join(f"{m} {row[m]['avg_dcg']:.4f}" for m in row), flush=True)
    print(f"{'method':>14}  {'test Avg DCG':>18}  {'Avg Rank':>8}  {'train seconds':>13}")
    for method in ("production", *methods):
        dcg = [r[method]["avg_dcg"] for r in rows]
        rank = [r[method]["avg_rank"] for r in rows]
        train_seconds = np.mean([t[method] for t in times]) if method in methods else float("nan")
        spread = np.std(dcg, ddof=1) if len(dcg) > 1 else float("nan")
        print(f"{method:>14}  {np.mean(dcg):.4f} +- {spread:.4f}  {np.mean(rank):8.2f}  {train_seconds:13.1f}")
    for method in methods:
        print(f"chosen {method}: " + "; ".join(str(r[method]["chosen"]) for r in rows))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mq2008")
    parser.add_argument("--fold", type=int, default=1)
    parser.add_argument("--synthetic", action="store_true")
    parser.add_argument("--passes", type=int, default=100)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--compare", action="store_true")
    parser.add_argument("--method", default="lambdarank", choices=["lambdarank", "tree-propdcg"],
                        help="whose grid to time without --compare")
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--methods", default=None, help="comma list [default: every compared method known]")
    args = parser.parse_args()
    if not args.synthetic and not args.mq2008:
        parser.error("give --mq2008 DIR or --synthetic")
    dataset = make_synthetic() if args.synthetic else load_letor(args.mq2008, fold=args.fold)
    name = "synthetic" if args.synthetic else f"MQ2008 Fold{args.fold}"
    print(f"{name}, {args.passes} passes")
    if args.compare:
        methods = args.methods.split(",") if args.methods else [m for m in COMPARED if m in METHODS]
        compare(dataset, args.seeds, args.passes, methods)
    else:
        grid(dataset, args.passes, args.threads, args.method)


if __name__ == "__main__":
    main()
