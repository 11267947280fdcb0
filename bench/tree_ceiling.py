"""The embedded default's full-information tree ceiling: LightGBM LambdaRank trained on the
*labelled* training split (binarized relevance, as the clicks see it, or the graded labels),
the learning rate, leaves and trees chosen on the validation split's labels (Avg DCG, seeded
tie-breaks), test Avg DCG in the project's convention: how far the click learners on the default
are from what the labels themselves give a tree ranker (docs/results/hard-logs.md).

    python bench/tree_ceiling.py

Measured (2026-11-26, 2-core machine, 9.5 min; the same lines in a second run):

    binary vali 0.7084 lr 0.03 leaves 4 trees 1880 test Avg DCG 0.6976
    graded vali 0.7096 lr 0.03 leaves 64 trees 1760 test Avg DCG 0.6994
"""

from __future__ import annotations

import lightgbm as lgb
import numpy as np

from cltr.core.ranking import evaluate
from cltr.core.seeds import stream
from cltr.data.synthetic import make_synthetic


class Trees:
    """A booster's first ``rounds`` trees, as a scorer."""

    def __init__(self, booster, rounds: int):
        self.booster, self.rounds = booster, rounds

    def scores(self, X):
        return self.booster.predict(X, num_iteration=self.rounds, raw_score=True)


def main() -> None:
    dataset = make_synthetic()
    train, vali, test = dataset.train, dataset.vali, dataset.test

    def avg_dcg(scorer, split, name):
        relevant = split.relevant(dataset.relevant_from)
        return evaluate(scorer, split, relevant, rng=stream(0, name), dcg_base=dataset.dcg_base)["avg_dcg"]

    for label_kind in ("binary", "graded"):
        if label_kind == "binary":
            label = train.relevant(dataset.relevant_from).astype(float)
        else:
            label = train.labels.astype(float)
        best = None
        for learning_rate in (0.1, 0.03):
            for leaves in (4, 16, 64):
                data = lgb.Dataset(train.X, label=label, group=np.diff(train.offsets), params={"verbosity": -1})
                params = {
                    "objective": "lambdarank",
                    "learning_rate": learning_rate,
                    "num_leaves": leaves,
                    "verbosity": -1,
                    "num_threads": 1,
                    "seed": 0,
                    "metric": "None",
                }
                most = int(60 / learning_rate)
                booster = lgb.train(params, data, num_boost_round=most)
                for rounds in range(20, most + 1, 20):
                    value = avg_dcg(Trees(booster, rounds), vali, "v")
                    if best is None or value > best[0]:
                        best = (value, learning_rate, leaves, rounds, booster)
        value, learning_rate, leaves, rounds, booster = best
        tested = avg_dcg(Trees(booster, rounds), test, "t")
        print(
            label_kind,
            "vali",
            round(value, 4),
            "lr",
            learning_rate,
            "leaves",
            leaves,
            "trees",
            rounds,
            "test Avg DCG",
            round(tested, 4),
            flush=True,
        )


if __name__ == "__main__":
    main()
