"""SVM PropRank (Joachims et al. 2017; paper Sec. 4 with lambda(r) = r): each click
weighted 1/q_i, an unbiased bound on Avg Rank, by one linear SVM solve per C.

The same model as ``svm-propdcg --metric avgrank``. C is chosen by SNIPS Avg DCG on
validation clicks.
"""

from __future__ import annotations

from cltr.methods import Method, TrainingData
from cltr.methods.linear import LinearSVMOptions, positive_costs, train_on_clicks

ORDER = 30


def train(data: TrainingData, options: LinearSVMOptions, *, progress=None):
    return train_on_clicks(data, options, positive_costs(data.train_log, "svm-proprank"), progress=progress)


METHOD = Method(
    name="svm-proprank",
    label="SVM PropRank",
    options=LinearSVMOptions,
    train=train,
    summary="Propensity-weighted Ranking SVM (Avg Rank bound).",
    description="SVM PropRank: clicks weighted by 1/propensity, an unbiased bound on Avg Rank "
    "(the same as `svm-propdcg --metric avgrank`, which is a single solve).",
)
