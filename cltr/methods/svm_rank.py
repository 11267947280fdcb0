"""SVM Rank on clicks: the naive baseline, every click weighted 1 (paper Sec. 5, "SVM Rank").

Every click is an example with cost c_i = 1, so the learner also learns the position
bias of the logging ranker. C is chosen by SNIPS Avg DCG on validation clicks.
"""

from __future__ import annotations

import numpy as np

from cltr.core.svm import solver_info, train_svm_on_clicks
from cltr.methods import Method, TrainingData
from cltr.methods.linear import LinearSVMOptions, select_c

ORDER = 10


def train(data: TrainingData, options: LinearSVMOptions, *, progress=None):
    log = data.train_log

    def fit(C, previous):
        result = train_svm_on_clicks(data.dataset.train, log.query, log.doc, np.ones(len(log)), C=C,
                                     tol=options.tol, w0=None if previous is None else previous.w)
        return result.w, solver_info(result)

    return select_c(options, fit, data.estimate, progress=progress)


METHOD = Method(
    name="svm-rank", label="SVM Rank", options=LinearSVMOptions, train=train,
    summary="Ranking SVM on clicks, every click weighted 1 (biased).",
    description="Naive Ranking SVM on clicks: every click weighted 1, so it learns the position bias too.",
)
