"""Which Avg DCG convention the paper's numbers follow: the evidence table of the README.

    python bench/convention.py --mq2008 ../shared/data/letor4/MQ2008 [--folds 1-5] [--reps 6] [--jobs 2]

For every fold and repetition, and for each relevance threshold (label >= 1, label 2):
the production ranker, 100 passes of clicks (eta 1, eps_neg 0.1, eps_pos 1) and SVM Rank,
SVM PropRank and SVM PropDCG with C chosen on validation clicks, then every model scored
on the test split under three definitions: 1/log2(1 + rank) over label >= 1, 1/ln(1 + rank)
over label >= 1, 1/ln(1 + rank) over label 2; with a random ranking (a constant scorer,
seeded ties) and the ideal one (the labels as scores) beside them. A model trained at one
threshold is scored under that threshold's definitions. Prints the mean over every
(fold, repetition) run, Fold 1 alone (mean ± std over its repetitions) and the average
number of training clicks, against the paper's Table 1 and Table 2.
"""

import argparse
import math
import time

import numpy as np
from joblib import Parallel, delayed

from cltr.core.ranking import evaluate
from cltr.core.seeds import stream
from cltr.data.loaders import load_letor
from cltr.methods import TrainingData, train
from cltr.pipeline.stages import produce, simulated_logs

METHODS = ("svm-rank", "svm-proprank", "svm-propdcg")
ROWS = ("random", *METHODS, "ideal")
# (name, relevant_from, dcg base): a model trained with relevance at relevant_from
DEFINITIONS = (("log2, label >= 1", 1, 2.0), ("ln, label >= 1", 1, math.e), ("ln, label 2", 2, math.e))
PAPER = {"svm-rank": 0.6841, "svm-proprank": 0.7004, "svm-propdcg": 0.7043}


class _Scores:
    def __init__(self, values):
        self.values = np.asarray(values, dtype=np.float64)

    def scores(self, X):
        return self.values


def one_run(mq2008, fold, rep, relevant_from):
    dataset = load_letor(mq2008, fold=fold, relevant_from=relevant_from)
    production, _ = produce(dataset, seed=rep)
    logs = simulated_logs(dataset, production, passes=100, seed=rep)
    data = TrainingData(dataset, logs["train"], logs["vali"], rep)
    scorers = {"random": _Scores(np.zeros(dataset.test.n_docs)), "ideal": _Scores(dataset.test.labels >= relevant_from)}
    for method in METHODS:
        scorers[method], _ = train(method, data, {})
    values = {}
    for name, threshold, base in DEFINITIONS:
        if threshold != relevant_from:
            continue
        relevant = dataset.test.relevant(threshold)
        for row, scorer in scorers.items():
            values[(name, row)] = evaluate(scorer, dataset.test, relevant, rng=stream(rep, "evaluate"), dcg_base=base)[
                "avg_dcg"
            ]
    return {"fold": fold, "rep": rep, "relevant_from": relevant_from, "clicks": len(logs["train"]), "values": values}


def parse_folds(text):
    if "-" in text:
        low, high = (int(v) for v in text.split("-"))
        return list(range(low, high + 1))
    return [int(v) for v in text.split(",")]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mq2008", required=True)
    parser.add_argument("--folds", default="1-5")
    parser.add_argument("--reps", type=int, default=6)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    folds = parse_folds(args.folds)
    start = time.perf_counter()
    runs = Parallel(n_jobs=args.jobs)(
        delayed(one_run)(args.mq2008, fold, rep, threshold)
        for fold in folds
        for rep in range(args.reps)
        for threshold in (1, 2)
    )
    print(f"{len(folds)} fold(s) x {args.reps} repetitions, {time.perf_counter() - start:.0f} s")
    print(f"{'definition (mean over all runs)':34s}" + "".join(f"{row:>14s}" for row in ROWS))
    for name, threshold, _ in DEFINITIONS:
        mine = [r for r in runs if r["relevant_from"] == threshold]
        print(f"{name:34s}" + "".join(f"{np.mean([r['values'][(name, row)] for r in mine]):14.3f}" for row in ROWS))
    print("Fold 1 alone, ln, label 2 (mean ± std over repetitions; paper Table 2 in brackets):")
    fold1 = [r for r in runs if r["relevant_from"] == 2 and r["fold"] == folds[0]]
    for row in ROWS:
        values = [r["values"][("ln, label 2", row)] for r in fold1]
        paper = f"  [{PAPER[row]:.4f} ± 1e-2]" if row in PAPER else ""
        print(f"  {row:14s} {np.mean(values):.4f} ± {np.std(values, ddof=1) if len(values) > 1 else 0:.4f}{paper}")
    for threshold in (1, 2):
        clicks = [r["clicks"] for r in runs if r["relevant_from"] == threshold]
        print(
            f"training clicks at relevance label >= {threshold}: {np.mean(clicks):.0f} on average "
            f"(paper Table 1: 25,870)"
        )


if __name__ == "__main__":
    main()
