"""What the linear SVM methods share: the C options, the C grid and selection over it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from cltr.core.chunked import ChunkedProblem
from cltr.core.scorers import LinearScorer
from cltr.core.selection import parse_grid, select_on_validation
from cltr.core.svm import solver_info, train_svm_on_clicks
from cltr.distributed import EngineOptions, engine
from cltr.methods import SelectionOptions
from cltr.options import option

__all__ = [
    "DEFAULT_C_GRID",
    "LinearSVMOptions",
    "c_candidates",
    "select_c",
    "train_on_clicks",
    "positive_costs",
    "click_problem",
]

DEFAULT_C_GRID = tuple(float(c) for c in np.logspace(-3, 3, 7))


@dataclass(frozen=True)
class LinearSVMOptions(SelectionOptions, EngineOptions):
    """-C, --grid and --tol of every linear SVM method, and where its solver's per-chunk
    work runs (--backend, --scheduler, --chunks: ``cltr.distributed``)."""

    C: float | None = option(
        None,
        "Regularisation constant; without it, C is chosen over --grid on validation data.",
        low=0,
        low_open=True,
        flag="-C",
    )
    grid: tuple[float, ...] = option(
        DEFAULT_C_GRID,
        "C grid as 'a,b,c' or 'low:high:count' (log spaced), searched when -C is not given.",
        low=0,
        low_open=True,
        parse=parse_grid,
        metavar="GRID",
    )
    tol: float = option(1e-3, "Relative duality gap the SVM solver must certify.", low=0, low_open=True)


def c_candidates(options: LinearSVMOptions) -> list[dict]:
    """``[{"C": C}]`` when C is fixed, else the sorted grid (most regularised first)."""
    if options.C is not None:
        return [{"C": float(options.C)}]
    return [{"C": float(c)} for c in sorted(options.grid)]


def select_c(
    options: LinearSVMOptions,
    fit: Callable,
    estimate: Callable,
    *,
    progress=None,
    criterion: str = "validation_snips_avg_dcg",
    alike: Callable | None = None,
    candidates: list[dict] | None = None,
):
    """Fit every C of ``options`` (warm-started in order) and keep the best by ``estimate``.

    ``fit(C, previous_scorer, **rest) -> (w, info)``, ``rest`` the candidate's other settings
    (``candidates``, default ``c_candidates(options)``: C alone); ``alike`` (``TrainingData.alike_share``) keeps
    a C whose model scores every document alike from being chosen (a tiny C's w = 0).
    Returns ``(scorer, info)`` with ``C``, ``chosen``, ``selection``, the best estimate
    under ``criterion`` and the selection's ``warnings``.
    """

    def fit_candidate(params, previous):
        w, info = fit(params["C"], previous, **{k: v for k, v in params.items() if k != "C"})
        return LinearScorer(w), info

    selection = select_on_validation(
        candidates or c_candidates(options),
        fit_candidate,
        estimate,
        progress=progress,
        criterion=criterion,
        alike=alike,
    )
    info = {
        "C": selection.best_params["C"],
        "chosen": selection.best_params,
        criterion: selection.best_estimate,
        "selection": selection.table,
        "warnings": selection.warnings,
    }
    return selection.best, info


def positive_costs(log, method: str) -> np.ndarray:
    """The log's example weights c_i (``ClickLog.cost``), which a Ranking SVM needs positive:
    with a negative cost the hinge term is concave and the primal is no longer convex."""
    cost = log.cost
    if np.any(cost <= 0):
        raise ValueError(
            f"{method} needs positive example weights (a convex SVM); this log has "
            f"{int(np.sum(cost <= 0))} examples weighted <= 0 (the affine correction's signed weights): "
            f"train deep-propdcg or tree-propdcg on it instead"
        )
    return cost


@contextmanager
def click_problem(
    options: EngineOptions, X, offsets, click_query, click_doc, *, candidate=None
) -> Iterator[ChunkedProblem | None]:
    """The problem cut into chunks on the engine of ``options`` (``cltr.distributed.engine``),
    for as long as the block runs; None where the plain in-process solver is to run."""
    with engine(options) as (mapper, chunks):
        yield (
            None
            if mapper is None
            else ChunkedProblem(X, offsets, click_query, click_doc, chunks=chunks, mapper=mapper, candidate=candidate)
        )


def engine_info(problem: ChunkedProblem | None, options: EngineOptions) -> dict:
    """What a model's info records of where it was solved."""
    if problem is None:
        return {"backend": "local", "chunks": 1}
    return {"backend": options.backend, "chunks": problem.n_chunks, "workers": problem.mapper.workers}


def train_on_clicks(data, options: LinearSVMOptions, cost: np.ndarray, *, progress=None):
    """A Ranking SVM on the training clicks with per-click costs ``cost`` (1 for SVM Rank,
    1/q_i for SVM PropRank), C chosen by SNIPS Avg DCG on validation clicks."""
    log, split = data.train_log, data.dataset.train
    with click_problem(options, split.X, split.offsets, log.query, log.doc) as problem:

        def fit(C, previous):
            w0 = None if previous is None else previous.w
            if problem is None:
                result = train_svm_on_clicks(split, log.query, log.doc, cost, C=C, tol=options.tol, w0=w0)
            else:
                result = problem.solve(cost, C, w0=w0, tol=options.tol)
            return result.w, solver_info(result)

        scorer, info = select_c(options, fit, data.estimate, progress=progress, alike=data.alike_share)
        info["engine"] = engine_info(problem, options)
    return scorer, info
