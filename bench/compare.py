"""Test Avg DCG of the learning methods over seeds, each repetition re-drawing every seed.

    python bench/compare.py --mq2008 ../shared/data/letor4/MQ2008 [--fold 1] [--seeds 6] [--methods a,b,...]
    python bench/compare.py --synthetic [--seeds 6] [--methods a,b,...]

Per repetition: production ranker, clicks (eta 1, eps_neg 0.1, 100 passes), then every
method with its hyperparameters chosen on validation clicks (the skyline's on validation
labels). Prints each seed's test Avg DCG, then mean and standard deviation of test Avg DCG,
mean Avg Rank, each method's mean training time with its grid, and the chosen settings.
Default methods: every one the registry has.
"""

import argparse
import time

import numpy as np

from cltr.core.ranking import evaluate
from cltr.core.seeds import stream
from cltr.data.loaders import load_letor
from cltr.data.synthetic import make_synthetic
from cltr.methods import TrainingData, methods, train
from cltr.pipeline.stages import produce, simulated_logs

ORDER = ("skyline", "svm-rank", "lambdarank", "svm-proprank", "svm-propdcg", "deep-propdcg", "tree-propdcg")


def setup(dataset, seed, passes):
    """Production ranker, train/vali clicks and the test relevance of one repetition."""
    production, _ = produce(dataset, seed=seed)
    relevant = {s: q.relevant(dataset.relevant_from) for s, q in dataset.splits().items()}
    logs = simulated_logs(dataset, production, passes=passes, seed=seed)
    return production, TrainingData(dataset, logs["train"], logs["vali"], seed), relevant["test"]


def test_metrics(scorer, dataset, relevant, seed):
    return evaluate(scorer, dataset.test, relevant, rng=stream(seed, "evaluate"), dcg_base=dataset.dcg_base)


def compare(dataset, seeds, passes, methods):
    rows, times, clicks = [], [], []
    for seed in range(seeds):
        production, data, relevant = setup(dataset, seed, passes)
        clicks.append(len(data.train_log))
        row, seconds = {"production": test_metrics(production, dataset, relevant, seed)}, {}
        for method in methods:
            start = time.perf_counter()
            scorer, info = train(method, data, {})
            seconds[method] = time.perf_counter() - start
            row[method] = {**test_metrics(scorer, dataset, relevant, seed), "chosen": info["chosen"]}
        rows.append(row)
        times.append(seconds)
        print(f"seed {seed}: " + "  ".join(f"{m} {row[m]['avg_dcg']:.4f}" for m in row), flush=True)
    print(f"{seeds} seeds, {np.mean(clicks):.0f} training clicks on average")
    print(f"{'method':>14}  {'test Avg DCG':>18}  {'Avg Rank':>8}  {'train seconds':>13}")
    for method in ("production", *methods):
        dcg = [r[method]["avg_dcg"] for r in rows]
        rank = [r[method]["avg_rank"] for r in rows]
        train_seconds = np.mean([t[method] for t in times]) if method in methods else float("nan")
        spread = np.std(dcg, ddof=1) if len(dcg) > 1 else float("nan")
        print(f"{method:>14}  {np.mean(dcg):.4f} +- {spread:.4f}  {np.mean(rank):8.2f}  {train_seconds:13.2f}")
    for method in methods:
        print(f"chosen {method}: " + "; ".join(str(r[method]["chosen"]) for r in rows))


def load(args):
    if not args.synthetic and not args.mq2008:
        raise SystemExit("give --mq2008 DIR or --synthetic")
    dataset = make_synthetic() if args.synthetic else load_letor(args.mq2008, fold=args.fold)
    print(f"{'synthetic' if args.synthetic else f'MQ2008 Fold{args.fold}'}, {args.passes} passes")
    return dataset


def data_arguments(parser):
    parser.add_argument("--mq2008")
    parser.add_argument("--fold", type=int, default=1)
    parser.add_argument("--synthetic", action="store_true")
    parser.add_argument("--passes", type=int, default=100)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    data_arguments(parser)
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--methods", default=None, help="comma list [default: every method the registry has]")
    args = parser.parse_args()
    dataset = load(args)
    methods = args.methods.split(",") if args.methods else [m for m in ORDER if m in methods()]
    compare(dataset, args.seeds, args.passes, methods)


if __name__ == "__main__":
    main()
