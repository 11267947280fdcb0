"""SVM PropRank (Joachims et al. 2017; paper Sec. 4 with lambda(r) = r): each click
weighted 1/q_i, an unbiased bound on Avg Rank, by one linear SVM solve per C.

The same model as ``svm-propdcg --metric avgrank``. C is chosen by SNIPS Avg DCG on
validation clicks.
"""

from __future__ import annotations

from cltr.core.svm import solver_info, train_svm_on_clicks
from cltr.methods import Method, TrainingData
from cltr.methods.linear import LinearSVMOptions, select_c

ORDER = 30


def train(data: TrainingData, options: LinearSVMOptions, *, progress=None):
    log = data.train_log

    def fit(C, previous):
        result = train_svm_on_clicks(data.dataset.train, log.query, log.doc, 1.0 / log.propensity, C=C,
                                     tol=options.tol, w0=None if previous is None else previous.w)
        return result.w, solver_info(result)

    return select_c(options, fit, data.estimate, progress=progress)


METHOD = Method(
    name="svm-proprank", label="SVM PropRank", options=LinearSVMOptions, train=train,
    summary="Propensity-weighted Ranking SVM (Avg Rank bound).",
    description="SVM PropRank: clicks weighted by 1/propensity, an unbiased bound on Avg Rank "
                "(the same as `svm-propdcg --metric avgrank`, which is a single solve).",
)
