"""The learning methods, one registry: each turns click logs into a scorer.

A method is a function ``(data, options, *, progress) -> (scorer, info)`` where ``data``
holds the dataset and the train / validation click logs, ``options`` the method's
hyperparameters as given on the command line (``None`` meaning "select on validation
clicks"), and ``info`` everything worth recording: ``chosen`` (the selected
hyperparameters, a dict), ``validation_snips_avg_dcg``, the ``selection`` table, solver
certificates, traces. Register a new method in ``METHODS``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np
from threadpoolctl import threadpool_limits

from cltr.ccp import propdcg_ccp
from cltr.clicks import ClickLog
from cltr.datasets import Dataset
from cltr.deep import deep_settings, train_deep_propdcg
from cltr.lambdarank import train_lambdarank, train_tree_propdcg
from cltr.models import LinearScorer
from cltr.objectives import rank_weight
from cltr.pipeline import (DEFAULT_C_GRID, evaluate, solver_info, stream, train_ranking_svm,
                           train_svm_on_clicks, validation_estimate)
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
        start = np.zeros(train.n_features) if w0 is None else w0
        info = {"objective": result.objective, "ccp_iterations": len(result.trace),
                "converged": result.converged, "ccp_trace": [asdict(step) for step in result.trace],
                "initial_objective": result.initial_objective, "initial_train_snips_avg_dcg": monitor(start)}
        return LinearScorer(result.w), info

    selection = select_on_validation(_c_candidates(options), fit, data.estimate, progress=progress)
    info = {"C": selection.best_params["C"], "chosen": selection.best_params, "metric": weight.name,
            "validation_snips_avg_dcg": selection.best_estimate, "selection": selection.table}
    return selection.best, info


def _deep_propdcg(data: TrainingData, options: dict, *, progress: Callable | None = None):
    """Deep PropDCG (paper Sec. 4.2): an MLP on the R(f) bound, learning rate and epoch chosen
    on validation clicks; ``options``: ``preset`` plus any ``DeepSettings`` field (or ``lr``)."""
    options = dict(options)
    threads = int(options.pop("blas_threads", 1))
    settings = deep_settings(options.pop("preset", None) or "default", **options)
    train_split, log = data.dataset.train, data.train_log

    def report(record):
        if progress is not None:
            progress({"event": "epoch", "epochs": settings.epochs,
                      "learning_rates": len(settings.learning_rates), **asdict(record)})

    # One BLAS thread: on these 2-core machines it is faster for both batch shapes measured
    # (bench/deep.py under load: MQ2008 0.06 vs 0.45 s/epoch, Yahoo-shaped 3.8 vs 8.2 s/epoch).
    with threadpool_limits(limits=threads, user_api="blas"):
        result = train_deep_propdcg(train_split.X, train_split.offsets, log.query, log.doc, log.propensity,
                                    settings=settings, rng=stream(data.seed, "deep-propdcg"),
                                    validate=data.estimate, progress=report)
    trace = [asdict(record) for record in result.trace]
    table = []
    for lr in sorted(settings.learning_rates):
        rows = [r for r in trace if r["learning_rate"] == lr]
        best = max(rows, key=lambda r: r["validation_snips_avg_dcg"])  # earliest of ties
        table.append({"lr": lr, "epoch": best["epoch"], "epochs_run": len(rows),
                      "validation_snips_avg_dcg": best["validation_snips_avg_dcg"],
                      "train_loss": best["train_loss"], "seconds": sum(r["seconds"] for r in rows)})
    info = {"chosen": {"lr": result.learning_rate, "epoch": result.epoch},
            "validation_snips_avg_dcg": result.validation_snips_avg_dcg, "selection": table,
            "settings": asdict(settings), "metric": settings.metric, "trace": trace}
    return result.scorer, info


def _skyline(data: TrainingData, options: dict, *, progress: Callable | None = None):
    """Skyline: the linear Ranking SVM on the full-information (labelled) training set.

    An oracle reference, not a click learner: C is chosen by the Avg DCG of the
    *validation labels* (binarized, every candidate ranked, seeded tie-breaks), the one
    place where labels other than the test set's are read; test labels never are. The
    table's ``validation_label_avg_dcg`` is that criterion; ``validation_snips_avg_dcg``
    reports the chosen model's SNIPS estimate on validation clicks, as for every method.
    """
    dataset = data.dataset
    tol = float(options.get("tol", 1e-3))
    train_relevant = dataset.train.relevant(dataset.relevant_from)
    vali_relevant = dataset.vali.relevant(dataset.relevant_from)

    def fit(params, previous):
        result = train_ranking_svm(dataset.train, train_relevant, C=params["C"], tol=tol,
                                   w0=None if previous is None else previous.w)
        return LinearScorer(result.w), solver_info(result)

    def label_estimate(scorer):
        return evaluate(scorer, dataset.vali, vali_relevant, rng=stream(data.seed, "skyline-selection"))["avg_dcg"]

    def relabel(row):
        # select_on_validation names its criterion's column for clicks; here it is labels.
        row["validation_label_avg_dcg"] = row.pop("validation_snips_avg_dcg")
        if progress is not None:
            progress(row)

    selection = select_on_validation(_c_candidates(options), fit, label_estimate, progress=relabel)
    info = {"C": selection.best_params["C"], "chosen": selection.best_params,
            "validation_label_avg_dcg": selection.best_estimate,
            "validation_snips_avg_dcg": data.estimate(selection.best), "selection": selection.table}
    return selection.best, info


METHODS: dict[str, Callable] = {
    "svm-rank": _svm_on_clicks(propensity_weighted=False),
    "svm-proprank": _svm_on_clicks(propensity_weighted=True),
    "svm-propdcg": _svm_prop_metric,
    "deep-propdcg": _deep_propdcg,
    "lambdarank": train_lambdarank,
    "tree-propdcg": train_tree_propdcg,
    "skyline": _skyline,
}


def train(name: str, data: TrainingData, options: dict, *, progress: Callable | None = None):
    """Train method ``name`` on ``data``; see the module docstring."""
    if name not in METHODS:
        raise ValueError(f"unknown method {name!r}; known: {', '.join(METHODS)}")
    if len(data.train_log) == 0:
        raise ValueError("the training click log is empty: simulate more passes or a larger eps")
    return METHODS[name](data, options, progress=progress)

