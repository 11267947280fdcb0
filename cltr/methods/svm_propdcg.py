"""SVM PropDCG (paper Sec. 4.1): the propensity-weighted DCG bound (or another concave
rank weight's) minimised by the convex-concave procedure over weighted Ranking SVMs.

C is chosen by SNIPS Avg DCG on validation clicks; each C's CCP trace (true objective,
surrogate, training SNIPS Avg DCG per step) is recorded for the CCP figure.

The CCP's start (``--init``): over the C grid it starts from w = 0, the paper's procedure.
At a given C it starts from both w = 0 and the SVM PropRank solution and keeps the better
on validation clicks: at a small C the DCG bound barely depends on w, so the CCP from w = 0
stops after one step at a poor model (on the embedded default, eta 1, eps- 0.1, -C 0.1:
test Avg DCG 0.404 from w = 0, 0.596 from PropRank, production 0.571), and with C given no
grid is there to pass over it; at larger C w = 0 is as good or better (-C 1: 0.599 from
w = 0, 0.582 from PropRank), and the validation estimate tells them apart.
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
from cltr.methods.linear import LinearSVMOptions, c_candidates, click_problem, engine_info, positive_costs, select_c
from cltr.options import option

ORDER = 40


def _metric(text: str) -> str:
    rank_weight(text)  # raises ValueError naming the valid forms
    return text


@dataclass(frozen=True)
class PropDCGOptions(LinearSVMOptions):
    metric: str = option("dcg", "Rank weight of the bound: dcg, rbp:P (e.g. rbp:0.8) or avgrank.", parse=_metric)
    max_ccp_iter: int = option(20, "Most CCP steps.", low=1)
    ccp_tol: float = option(
        1e-3,
        "Stop when the true objective improves by less than this, relatively (the default equals "
        "--tol's default, the gap each convex step certifies: a smaller improvement is within it).",
        low=0,
        low_open=True,
    )
    init: str = option(
        "auto",
        "The CCP's starting point: w = 0, the SVM PropRank solution, or auto: w = 0 over "
        "the C grid, both (the better on validation kept) at a given -C.",
        choices=("auto", "zero", "proprank"),
    )
    trace_estimate: bool = option(
        False,
        "Record the training SNIPS Avg DCG after every CCP step in the trace (the "
        "ccp figure draws it; it costs about a tenth of the training).",
    )

    def __post_init__(self):
        rank_weight(self.metric)


def train(data: TrainingData, options: PropDCGOptions, *, progress=None):
    split, log = data.dataset.train, data.train_log
    # the pairs once for every C and CCP step (cut into chunks on --backend's engine, if asked)
    with click_problem(options, split.X, split.offsets, log.query, log.doc) as problem:
        scorer, info = _train(data, options, problem, progress=progress)
        info["engine"] = engine_info(problem, options)
    return scorer, info


def _train(data: TrainingData, options: PropDCGOptions, problem, *, progress=None):
    weight = rank_weight(options.metric)
    split, log = data.dataset.train, data.train_log
    propensity = 1.0 / positive_costs(log, "svm-propdcg")  # CCP re-weights q_i: the correction's weights as 1/q_i

    def monitor(w):
        return validation_estimate(
            LinearScorer(w), split, log, rng=stream(data.seed, "training-estimate"), dcg_base=data.dataset.dcg_base
        )

    def fit(C, _previous, init=options.init):
        w0 = None
        if init == "proprank":
            w0 = (
                train_svm_on_clicks(split, log.query, log.doc, 1.0 / propensity, C=C, tol=options.tol)
                if problem is None
                else problem.solve(1.0 / propensity, C, tol=options.tol)
            ).w
        result = propdcg_ccp(
            split.X,
            split.offsets,
            log.query,
            log.doc,
            propensity,
            C,
            weight,
            w0=w0,
            max_iter=options.max_ccp_iter,
            tol=options.ccp_tol,
            inner_tol=options.tol,
            monitor=monitor if options.trace_estimate else None,
            problem=problem,
        )
        start = np.zeros(split.n_features) if w0 is None else w0
        info = {
            "objective": result.objective,
            "ccp_iterations": len(result.trace),
            "converged": result.converged,
            "ccp_trace": [asdict(step) for step in result.trace],
            "initial_objective": result.initial_objective,
            "initial_train_snips_avg_dcg": monitor(start) if options.trace_estimate else float("nan"),
        }
        return result.w, info

    starts = [options.init] if options.init != "auto" else ["zero", "proprank"] if options.C is not None else ["zero"]
    candidates = [{"C": c["C"], "init": start} for c in c_candidates(options) for start in starts]
    scorer, info = select_c(
        options, fit, data.estimate, progress=progress, alike=data.alike_share, candidates=candidates
    )
    info["metric"] = weight.name
    chosen = _chosen_row(info)
    if options.C is not None and options.init == "zero" and chosen["ccp_iterations"] <= 1:
        info["warnings"].append(
            f"the CCP from w = 0 stopped after one step at C = {options.C:g}: at this C the DCG bound barely "
            f"depends on w, and the model is the first step's; start from --init proprank (or auto), or leave "
            f"-C out so that C is chosen on validation clicks"
        )
    # steps whose inner solve ran out of cutting planes before its gap (cltr train warns)
    info["ccp_inner_misses"] = inner_misses(chosen["ccp_trace"])
    return scorer, info


def _chosen_row(info: dict) -> dict:
    return next(row for row in info["selection"] if all(row.get(k) == v for k, v in info["chosen"].items()))


def tables(info: dict) -> list:
    chosen = _chosen_row(info)
    start = f", from {'w = 0' if chosen.get('init', 'zero') == 'zero' else 'SVM PropRank'}" if "init" in chosen else ""
    traced = any(np.isfinite(step["train_snips_avg_dcg"]) for step in chosen["ccp_trace"])
    return [
        (
            f"CCP trace at C = {info['C']:g}{start}:",
            chosen["ccp_trace"],
            [
                "iteration",
                "objective",
                "surrogate",
                *(["train_snips_avg_dcg"] if traced else []),
                "inner_iterations",
                "inner_gap",
                "inner_tol",
                "seconds",
            ],
        )
    ]


METHOD = Method(
    name="svm-propdcg",
    label="SVM PropDCG",
    options=PropDCGOptions,
    train=train,
    tables=tables,
    summary="The DCG (or --metric) bound by the convex-concave procedure.",
    description="SVM PropDCG (paper Sec. 4.1): the propensity-weighted DCG bound (or --metric's), minimised by "
    "the convex-concave procedure over weighted Ranking SVMs.",
)
