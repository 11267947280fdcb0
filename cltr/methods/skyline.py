"""Skyline: the linear Ranking SVM on the full-information (labelled) training set.

An oracle reference, not a click learner: C is chosen by the Avg DCG of the *validation
labels* (binarized, every candidate ranked, seeded tie-breaks), the one place where
labels other than the test set's are read; test labels never are. The table's
``validation_label_avg_dcg`` is that criterion; ``validation_snips_avg_dcg`` reports the
chosen model's SNIPS estimate on validation clicks, as for every method.
"""

from __future__ import annotations

import numpy as np

from cltr.core.ranking import evaluate
from cltr.core.seeds import stream
from cltr.core.svm import solver_info, train_ranking_svm
from cltr.methods import Method, TrainingData
from cltr.methods.linear import LinearSVMOptions, click_problem, engine_info, select_c

ORDER = 90


def train(data: TrainingData, options: LinearSVMOptions, *, progress=None):
    dataset = data.dataset
    train_relevant = dataset.train.relevant(dataset.relevant_from)
    vali_relevant = dataset.vali.relevant(dataset.relevant_from)

    split = dataset.train
    positive = np.flatnonzero(train_relevant)  # train_ranking_svm's examples: the relevant documents

    def label_estimate(scorer):
        return evaluate(
            scorer, dataset.vali, vali_relevant, rng=stream(data.seed, "skyline-selection"), dcg_base=dataset.dcg_base
        )["avg_dcg"]

    with click_problem(
        options, split.X, split.offsets, split.doc_query[positive], positive, candidate=~train_relevant
    ) as problem:

        def fit(C, previous):
            w0 = None if previous is None else previous.w
            result = (
                train_ranking_svm(split, train_relevant, C=C, tol=options.tol, w0=w0)
                if problem is None
                else problem.solve(np.ones(len(positive)), C, w0=w0, tol=options.tol)
            )
            return result.w, solver_info(result)

        scorer, info = select_c(options, fit, label_estimate, progress=progress, criterion="validation_label_avg_dcg")
        info["engine"] = engine_info(problem, options)
    info["validation_snips_avg_dcg"] = data.estimate(scorer)
    return scorer, info


METHOD = Method(
    name="skyline",
    label="Skyline (full-information SVM)",
    options=LinearSVMOptions,
    train=train,
    selects_on="labels",
    weighted=False,
    summary="Oracle: Ranking SVM on the labelled training set (C on validation labels).",
    description="Skyline: the linear Ranking SVM on the full-information (binarized, labelled) training set, an "
    "oracle reference line for the click learners. Its C is chosen on the validation split's *labels* "
    "(Avg DCG) - the one place labels are used for selection; the test set is never looked at.",
)
