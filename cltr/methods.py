"""The learning methods, one registry: each turns click logs into a scorer.

A method is a function ``(data, options, *, progress) -> (scorer, info)`` where ``data``
holds the dataset and the train / validation click logs, ``options`` the method's
hyperparameters as given on the command line (``None`` meaning "select on validation
clicks"), and ``info`` everything worth recording: ``chosen`` (the selected
hyperparameters, a dict), ``validation_snips_avg_dcg``, the ``selection`` table, solver
certificates, traces. Register a new method in ``METHODS``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from dataclasses import asdict

from cltr.ccp import propdcg_ccp
from cltr.clicks import ClickLog
from cltr.datasets import Dataset
from cltr.models import LinearScorer
from cltr.objectives import rank_weight
from cltr.pipeline import DEFAULT_C_GRID, solver_info, stream, train_svm_on_clicks, validation_estimate
from cltr.selection import select_on_validation

__all__ = ["TrainingData", "METHODS", "train"]


@dataclass(frozen=True)
class TrainingData:
    dataset: Dataset
    train_log: ClickLog
    vali_log: ClickLog
    seed: int = 0

    def estimate(self, scorer) -> float:
        """SNIPS Avg DCG on validation clicks, with the same tie-breaks for every candidate."""
        return validation_estimate(scorer, self.dataset.vali, self.vali_log,
                                   rng=stream(self.seed, "selection"))


def _c_candidates(options: dict) -> list[dict]:
    if options.get("C") is not None:
        return [{"C": float(options["C"])}]
    return [{"C": float(c)} for c in sorted(options.get("grid") or DEFAULT_C_GRID)]


def _svm_on_clicks(propensity_weighted: bool):
    def method(data: TrainingData, options: dict, *, progress: Callable | None = None):
        tol = float(options.get("tol", 1e-3))

        def fit(params, previous):
            result = train_svm_on_clicks(
                data.dataset.train, data.train_log, C=params["C"],
                propensity_weighted=propensity_weighted, tol=tol,
                w0=None if previous is None else previous.w)
            return LinearScorer(result.w), solver_info(result)

        selection = select_on_validation(_c_candidates(options), fit, data.estimate, progress=progress)
        info = {"C": selection.best_params["C"], "chosen": selection.best_params,
                "validation_snips_avg_dcg": selection.best_estimate, "selection": selection.table}
        return selection.best, info

    return method


def _svm_prop_metric(data: TrainingData, options: dict, *, progress: Callable | None = None):
    """SVM PropDCG (paper Sec. 4.1): CCP over propensity-weighted Ranking SVMs, any concave lambda."""
    weight = rank_weight(options.get("metric") or "dcg")
    tol = float(options.get("tol", 1e-3))
    train, log = data.dataset.train, data.train_log

    def monitor(w):
        return validation_estimate(LinearScorer(w), train, log, rng=stream(data.seed, "training-estimate"))

    def fit(params, previous):
        w0 = None
        if options.get("init", "zero") == "proprank":
            w0 = train_svm_on_clicks(train, log, C=params["C"], tol=tol).w
        result = propdcg_ccp(train.X, train.offsets, log.query, log.doc, log.propensity, params["C"], weight,
                             w0=w0, max_iter=int(options.get("max_ccp_iter", 20)),
                             tol=float(options.get("ccp_tol", 1e-4)), inner_tol=tol, monitor=monitor)
        info = {"objective": result.objective, "ccp_iterations": len(result.trace),
                "converged": result.converged, "ccp_trace": [asdict(step) for step in result.trace]}
        return LinearScorer(result.w), info

    selection = select_on_validation(_c_candidates(options), fit, data.estimate, progress=progress)
    info = {"C": selection.best_params["C"], "chosen": selection.best_params, "metric": weight.name,
            "validation_snips_avg_dcg": selection.best_estimate, "selection": selection.table}
    return selection.best, info


METHODS: dict[str, Callable] = {
    "svm-rank": _svm_on_clicks(propensity_weighted=False),
    "svm-proprank": _svm_on_clicks(propensity_weighted=True),
    "svm-propdcg": _svm_prop_metric,
}


def train(name: str, data: TrainingData, options: dict, *, progress: Callable | None = None):
    """Train method ``name`` on ``data``; see the module docstring."""
    if name not in METHODS:
        raise ValueError(f"unknown method {name!r}; known: {', '.join(METHODS)}")
    if len(data.train_log) == 0:
        raise ValueError("the training click log is empty: simulate more passes or a larger eps")
    return METHODS[name](data, options, progress=progress)

