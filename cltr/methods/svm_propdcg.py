"""SVM PropDCG (paper Sec. 4.1): the propensity-weighted DCG bound (or another concave
rank weight's) minimised by the convex-concave procedure over weighted Ranking SVMs.

C is chosen by SNIPS Avg DCG on validation clicks; each C's CCP trace (true objective,
surrogate, training SNIPS Avg DCG per step) is recorded for the CCP figure.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from cltr.core.ccp import inner_misses, propdcg_ccp
from cltr.core.objectives import rank_weight
from cltr.core.ranking import validation_estimate
from cltr.core.scorers import LinearScorer
from cltr.core.seeds import stream
from cltr.core.svm import train_svm_on_clicks
from cltr.methods import Method, TrainingData
from cltr.methods.linear import LinearSVMOptions, positive_costs, select_c
from cltr.options import option

ORDER = 40


def _metric(text: str) -> str:
    rank_weight(text)  # raises ValueError naming the valid forms
    return text


@dataclass(frozen=True)
class PropDCGOptions(LinearSVMOptions):
    metric: str = option("dcg", "Rank weight of the bound: dcg, rbp:P (e.g. rbp:0.8) or avgrank.", parse=_metric)
    max_ccp_iter: int = option(20, "Most CCP steps.", low=1)
    ccp_tol: float = option(1e-4, "Stop when the true objective improves by less than this, relatively.",
                            low=0, low_open=True)
    init: str = option("zero", "The CCP's starting point: w = 0 or the SVM PropRank solution.",
                       choices=("zero", "proprank"))

    def __post_init__(self):
        rank_weight(self.metric)


def train(data: TrainingData, options: PropDCGOptions, *, progress=None):
    weight = rank_weight(options.metric)
    split, log = data.dataset.train, data.train_log
    propensity = 1.0 / positive_costs(log, "svm-propdcg")  # CCP re-weights q_i: the correction's weights as 1/q_i

    def monitor(w):
        return validation_estimate(LinearScorer(w), split, log, rng=stream(data.seed, "training-estimate"),
                                   dcg_base=data.dataset.dcg_base)

    def fit(C, _previous):
        w0 = None
        if options.init == "proprank":
            w0 = train_svm_on_clicks(split, log.query, log.doc, 1.0 / propensity, C=C, tol=options.tol).w
        result = propdcg_ccp(split.X, split.offsets, log.query, log.doc, propensity, C, weight, w0=w0,
                             max_iter=options.max_ccp_iter, tol=options.ccp_tol, inner_tol=options.tol,
                             monitor=monitor)
        start = np.zeros(split.n_features) if w0 is None else w0
        info = {"objective": result.objective, "ccp_iterations": len(result.trace),
                "converged": result.converged, "ccp_trace": [asdict(step) for step in result.trace],
                "initial_objective": result.initial_objective, "initial_train_snips_avg_dcg": monitor(start)}
        return result.w, info

    scorer, info = select_c(options, fit, data.estimate, progress=progress)
    info["metric"] = weight.name
    # steps whose inner solve ran out of cutting planes before its gap (cltr train warns)
    chosen = next(row for row in info["selection"] if row["C"] == info["C"])
    info["ccp_inner_misses"] = inner_misses(chosen["ccp_trace"])
    return scorer, info


def tables(info: dict) -> list:
    chosen = next(row for row in info["selection"] if row["C"] == info["C"])
    return [(f"CCP trace at C = {info['C']:g}:", chosen["ccp_trace"],
             ["iteration", "objective", "surrogate", "train_snips_avg_dcg", "inner_iterations", "inner_gap",
              "inner_tol", "seconds"])]


METHOD = Method(
    name="svm-propdcg", label="SVM PropDCG", options=PropDCGOptions, train=train, tables=tables,
    summary="The DCG (or --metric) bound by the convex-concave procedure.",
    description="SVM PropDCG (paper Sec. 4.1): the propensity-weighted DCG bound (or --metric's), minimised by "
                "the convex-concave procedure over weighted Ranking SVMs.",
)
