"""SVM Rank on clicks: the naive baseline, every click weighted 1 (paper Sec. 5, "SVM Rank").

Every click is an example with cost c_i = 1, so the learner also learns the position
bias of the logging ranker. C is chosen by SNIPS Avg DCG on validation clicks.
"""

from __future__ import annotations

import numpy as np

from cltr.methods import Method, TrainingData
from cltr.methods.linear import LinearSVMOptions, train_on_clicks

ORDER = 10


def train(data: TrainingData, options: LinearSVMOptions, *, progress=None):
    return train_on_clicks(data, options, np.ones(len(data.train_log)), progress=progress)


METHOD = Method(
    name="svm-rank",
    label="SVM Rank",
    options=LinearSVMOptions,
    train=train,
    weighted=False,
    summary="Ranking SVM on clicks, every click weighted 1 (biased).",
    description="Naive Ranking SVM on clicks: every click weighted 1, so it learns the position bias too.",
)
