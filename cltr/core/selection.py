"""Model selection on validation clicks (DESIGN.md, "Model selection"), and its guard.

Hyperparameters are chosen by the SNIPS estimate of Avg DCG on the validation split's
clicks, never on test labels. Candidates are fitted in the order given, each may
warm-start from the previous one's model, and ties go to the earliest candidate (for a
C grid sorted ascending: the most regularised).

The guard (issue 22): a candidate that scores (nearly) every validation document of a
query alike is never chosen (``alike_share``, ``ALIKE_SHARE``); the chosen model is
compared with the logging ranker on the same validation clicks, with a standard error
(``versus_logging``); small effective sample sizes and choices on the edge of a grid are
said (``guard_warnings``). Variance control: the clipping threshold TAU is one more
hyperparameter, chosen over ``clip_grid`` by the *unclipped* validation estimate, and only
where the training weights' effective sample size is small (``ESS_FRACTION``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cltr.core.ranking import DCG_BASE, dcg_gain
from cltr.core.resources import exceeds_memory

__all__ = [
    "Selection",
    "select_on_validation",
    "parse_grid",
    "ALIKE_SHARE",
    "alike_share",
    "ESS_FRACTION",
    "VALIDATION_CLIPS",
    "validation_clip",
    "CLIP_GRID",
    "varied_queries",
    "parse_clip",
    "clip_grid",
    "ess_fraction",
    "versus_logging",
    "paired_estimate",
    "edges_of_grid",
    "guard_warnings",
]

# A candidate whose scores are alike within at least this share of the validation queries
# (of those whose documents differ at all) ranks them by the tie-break alone: it is never
# chosen. Not 1.0: a model that separates one query in a hundred is still a constant one.
ALIKE_SHARE = 0.99
# Scores within a query count as alike when their spread is at most this, relative to the
# largest |score| of the split: the scale of a linear model is arbitrary (w and 1e-6 w rank
# alike), so only a spread at the level of rounding means "no ranking".
ALIKE_RTOL = 1e-9

# Kish's effective sample size (sum w)^2 / sum w^2 of the training weights 1/q_i, as a
# fraction of the clicks, below which ``--clip auto`` searches a clipping threshold and a
# warning is given. Measured with 100 passes on the embedded default: 0.23 on the paper's
# log (eta 1, eps- 0.1; min propensity 1/150) and 0.010 on a hard log (eta 2, eps- 0.3;
# min propensity 5e-5), 0.006 on MQ2008 Fold 1 at eta 2, eps- 0.3 (181 of 28,727). The
# fraction does not grow with the number of passes (it is a property of the weights'
# distribution), so one threshold serves every log size. 0.05 lies between the two regimes
# with a margin of about 4.6x on the paper's side and 5x on the hard side (near their
# geometric mean, 0.048): the paper's setting stays unclipped and costs one training, and
# a log where one click in twenty carries the information is searched.
ESS_FRACTION = 0.05

# Clipping thresholds ``--clip auto`` tries besides no clipping (Joachims et al. 2017 used
# 0.01 .. 1); TAU at or below the smallest propensity changes nothing and is left out.
CLIP_GRID = (0.01, 0.03, 0.1, 0.3)


# Thresholds the validation clicks may be clipped at (``validation_clip``).
VALIDATION_CLIPS = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3)


def validation_clip(propensity: np.ndarray, *, fraction: float = ESS_FRACTION) -> float | None:
    """The clipping TAU_v of the validation clicks' weights: None where the unclipped
    weights 1/q have an effective sample size of at least ``fraction`` of the clicks, else
    the smallest TAU_v of ``VALIDATION_CLIPS`` whose weights 1/max(q, TAU_v) do (the
    largest if none does).

    Why: every selection (C, tree settings, the training clip TAU) compares candidates by
    one SNIPS estimate on the validation clicks, and that estimate must not depend on the
    candidate (so TAU_v never follows the training TAU). Unclipped, on a hard log it rests
    on a few hundred effective clicks: on MQ2008 Fold 1 at eta 2, eps- 0.3 (221 of 9,229)
    SVM PropRank trained unclipped and clipped at 0.003 score 0.549 and 0.551 there, though
    their test Avg DCG is 0.633 and 0.688, while at TAU_v = 0.003 they score 0.582 and 0.591
    (bench/hard_logs.py). Clipping the estimate biases it toward the logging ranker's order
    below the rank where p = TAU_v (a click there counts p/TAU_v of what it should), the
    least clipping that gives the estimate a usable sample; on the paper's logs (fraction
    about 0.2) it stays unclipped and unbiased.

    Parameters
    ----------
    propensity : ndarray, shape (n_clicks,)
        The validation clicks' propensities as told.
    fraction : float
    """
    propensity = np.asarray(propensity, dtype=np.float64)
    if len(propensity) == 0 or not np.all(np.isfinite(propensity)):
        return None
    if ess_fraction(1.0 / propensity) >= fraction:
        return None
    for tau in VALIDATION_CLIPS:
        if tau > propensity.min() and ess_fraction(1.0 / np.maximum(propensity, tau)) >= fraction:
            return tau
    return VALIDATION_CLIPS[-1]


@dataclass
class Selection:
    """The outcome of a grid search: the chosen model and every candidate's row.

    ``warnings`` says when the guard could not hold (every candidate scored alike)."""

    best: Any
    best_params: dict
    best_estimate: float
    table: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def select_on_validation(
    candidates: Sequence[dict],
    fit: Callable[[dict, Any], tuple[Any, dict]],
    estimate: Callable[[Any], float],
    *,
    progress: Callable[[dict], None] | None = None,
    criterion: str = "validation_snips_avg_dcg",
    alike: Callable[[Any], float] | None = None,
) -> Selection:
    """Fit every candidate and keep the one whose validation estimate is highest.

    Parameters
    ----------
    candidates : sequence of dict
        Hyperparameter settings, fitted in this order.
    fit : callable (params, previous_model) -> (model, info)
        ``previous_model`` is the model of the previous candidate (None first), for warm starts.
    estimate : callable model -> float
        Validation estimate; higher is better. NaN counts as worst.
    progress : callable, optional
        Called with each candidate's table row once fitted.
    criterion : str
        The column that holds each candidate's estimate in the table.
    alike : callable model -> float, optional
        The share of validation queries whose documents the model scores alike
        (``alike_share``; column ``alike_share``). A candidate at or above ``ALIKE_SHARE``
        is never chosen: its estimate is a random ranking's, however high it came out.
        Only if every candidate is such is the best of them kept, with a warning.
    """
    if not candidates:
        raise ValueError("the hyperparameter grid is empty")
    best, best_row, best_value, previous = None, None, -np.inf, None
    fallback, fallback_row, fallback_value = None, None, -np.inf
    table = []
    for params in candidates:
        start = time.perf_counter()
        model, info = fit(params, previous)
        seconds = time.perf_counter() - start
        value = estimate(model)
        row = {**params, criterion: value, "seconds": seconds, **info}
        eligible = True
        if alike is not None:
            row["alike_share"] = share = float(alike(model))
            eligible = not share >= ALIKE_SHARE
        table.append(row)
        if progress is not None:
            progress(row)
        finite = value if np.isfinite(value) else -np.inf
        if eligible and (best is None or finite > best_value):
            best, best_row, best_value = model, params, finite
        if not eligible and (fallback is None or finite > fallback_value):
            fallback, fallback_row, fallback_value = model, params, finite
        previous = model
    warnings = []
    if best is None:
        best, best_row, best_value = fallback, fallback_row, fallback_value
        assert best_row is not None  # candidates is not empty: each is eligible or a fallback
        if len(table) > 1:  # (one candidate was given, not chosen: guard_warnings says it)
            warnings.append(
                f"every candidate ({len(table)}) scores at least {ALIKE_SHARE:.0%} of the validation "
                f"queries' "
                f"documents alike (a constant model, ranking by the tie-break alone); kept "
                f"{_describe(best_row)} for want of another: widen the grid or give the weights less "
                f"variance (--clip, more clicks)"
            )
    assert best_row is not None
    return Selection(
        best=best, best_params=dict(best_row), best_estimate=float(best_value), table=table, warnings=warnings
    )


def _describe(params: dict) -> str:
    return ", ".join(f"{k} = {v:g}" if isinstance(v, float) else f"{k} = {v}" for k, v in params.items()) or "it"


def varied_queries(X: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Which queries have at least two documents with different feature rows (only those can
    be ranked by any model), shape (n_queries,) of bool."""
    offsets = np.asarray(offsets, dtype=np.int64)
    sizes = np.diff(offsets)
    varied = np.zeros(len(sizes), dtype=bool)
    filled = np.flatnonzero(sizes > 0)
    if len(filled) and len(X):
        starts = offsets[filled]
        spread = np.maximum.reduceat(X, starts, axis=0) - np.minimum.reduceat(X, starts, axis=0)
        varied[filled] = (spread > 0).any(axis=1) & (sizes[filled] > 1)
    return varied


def alike_share(
    scores: np.ndarray, offsets: np.ndarray, *, varied: np.ndarray | None = None, rtol: float = ALIKE_RTOL
) -> float:
    """The share of queries within which ``scores`` are (nearly) all alike.

    A query's scores are alike when their spread max - min is at most ``rtol`` times the
    largest |score| of the split (every score 0 counts as alike).

    Parameters
    ----------
    scores : ndarray, shape (n_docs,)
    offsets : ndarray, shape (n_queries + 1,)
    varied : ndarray of bool, shape (n_queries,), optional
        The queries that count (``varied_queries``); default: those with two documents or more.

    Returns
    -------
    float
        In [0, 1]; 0 when no query counts.
    """
    scores = np.asarray(scores, dtype=np.float64)
    offsets = np.asarray(offsets, dtype=np.int64)
    sizes = np.diff(offsets)
    counted = (sizes > 1) if varied is None else (np.asarray(varied, dtype=bool) & (sizes > 1))
    if not counted.any():
        return 0.0
    filled = sizes > 0  # reduceat over the non-empty queries' starts takes each query exactly
    starts = offsets[:-1][filled]
    spread = np.maximum.reduceat(scores, starts) - np.minimum.reduceat(scores, starts)
    spread = spread[counted[filled]]
    scale = float(np.max(np.abs(scores))) if len(scores) else 0.0
    return float(np.mean(spread <= rtol * scale))


def parse_clip(value) -> str | float | None:
    """A clipping setting: ``"auto"`` (chosen on validation), None (``"none"``: no clipping)
    or a threshold TAU in (0, 1]."""
    if value is None or (isinstance(value, str) and value.strip().lower() == "none"):
        return None
    if isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    try:
        tau = float(value) if not isinstance(value, bool) else float("nan")
    except (TypeError, ValueError):
        tau = float("nan")
    if not 0 < tau <= 1:
        raise ValueError(f"clip must be 'auto', 'none' or a threshold TAU in (0, 1], found {value!r}")
    return tau


def clip_grid(min_propensity: float) -> list[float]:
    """The thresholds of ``CLIP_GRID`` above the smallest propensity of a log (ascending):
    clipping at or below it changes no weight, so two such thresholds would give one log."""
    return [tau for tau in CLIP_GRID if tau > min_propensity]


def ess_fraction(weights: np.ndarray) -> float:
    """Kish's effective sample size (sum |w|)^2 / sum w^2 over the number of weights, in (0, 1]
    (|w|: for signed weights it measures how few examples carry the weight)."""
    weights = np.abs(np.asarray(weights, dtype=np.float64))
    # the ratio does not depend on the weights' scale: dividing by the largest keeps w^2 from
    # overflowing (1/q past 1e154, propensities below 1e-154) or underflowing
    largest = float(np.max(weights, initial=0.0))
    scaled = weights / largest if largest > 0 else weights
    square = float(np.sum(scaled * scaled))
    return float(np.sum(scaled) ** 2 / square / len(weights)) if square > 0 else 0.0


def versus_logging(
    model_rank: np.ndarray, logged_rank: np.ndarray, weight: np.ndarray, group: np.ndarray, *, base: float = DCG_BASE
) -> dict:
    """SNIPS Avg DCG of a model and of the logging ranker on the same clicks, and their
    difference with a standard error.

    With w_i = 1/q_i (or a correction's weight), a_i = 1/log(1 + model rank of clicked
    document i) and b_i = 1/log(1 + its logged rank):

        model = sum w a / sum w,  logging = sum w b / sum w,  D = sum w (a - b) / sum w

    (the logging value is the SNIPS estimate of the logging policy itself). D is a ratio
    estimator; its delta-method variance, with the clicks of one query as one cluster
    (they share the query's documents, and new queries are what a test set brings), is

        Var(D) = sum_g (sum_{i in g} w_i (a_i - b_i - D))^2 / (sum w)^2.

    Parameters
    ----------
    model_rank, logged_rank : ndarray of int, shape (n_clicks,)
        The model's rank of each clicked document and the rank it was logged at.
    weight : ndarray, shape (n_clicks,)
    group : ndarray of int, shape (n_clicks,)
        The cluster (query) of each click.

    Returns
    -------
    dict
        ``model``, ``logging``, ``difference``, ``standard_error`` (NaN without clicks or
        with a non-positive weight sum).
    """
    return paired_estimate(dcg_gain(model_rank, base), dcg_gain(logged_rank, base), weight, group)


def paired_estimate(model_gain: np.ndarray, reference_gain: np.ndarray, weight: np.ndarray, group: np.ndarray) -> dict:
    """``versus_logging`` on gains: the self-normalised estimates sum w a / sum w and
    sum w b / sum w of two rankings from the same weighted examples, their difference D and
    its query-clustered delta-method standard error sqrt(sum_g (sum_{i in g} w_i (a_i -
    b_i - D))^2) / sum w. The examples are the clicks (SNIPS) or the displayed documents
    (the doubly robust criterion, ``cltr.core.doubly_robust.DRValidation``).

    Parameters
    ----------
    model_gain, reference_gain : ndarray, shape (n,)
        a_i and b_i.
    weight : ndarray, shape (n,)
    group : ndarray of int, shape (n,)

    Returns
    -------
    dict
        ``model``, ``logging`` (the reference's), ``difference``, ``standard_error``.
    """
    weight = np.asarray(weight, dtype=np.float64)
    total = float(weight.sum())
    if not len(weight) or not total > 0:
        nan = float("nan")
        return {"model": nan, "logging": nan, "difference": nan, "standard_error": nan}
    model_gain = np.asarray(model_gain, dtype=np.float64)
    logged_gain = np.asarray(reference_gain, dtype=np.float64)
    model = float((weight * model_gain).sum() / total)
    logging = float((weight * logged_gain).sum() / total)
    difference = model - logging
    residual = weight * (model_gain - logged_gain - difference)
    _, cluster = np.unique(np.asarray(group), return_inverse=True)
    per_cluster = np.bincount(cluster.ravel(), weights=residual)
    return {
        "model": model,
        "logging": logging,
        "difference": difference,
        "standard_error": float(np.sqrt(np.sum(per_cluster**2)) / total),
    }


# The hyperparameters whose grid edges are worth a word, and what the user can do about each.
EDGE_ADVICE = {
    "C": {
        "low": "a smaller C may be better",
        "high": "a larger C may be better",
        "do": "widen the grid with --grid (e.g. '{low:g}:{high:g}:N' reaching past {value:g})",
    },
    "learning_rate": {
        "low": "a smaller learning rate may be better",
        "high": "a larger learning rate may be better",
        "do": "try --learning-rate past {value:g}",
    },
    "lr": {
        "low": "a smaller learning rate may be better",
        "high": "a larger learning rate may be better",
        "do": "try --lr past {value:g}",
    },
}


def edges_of_grid(table: Sequence[dict], chosen: dict, axes: Sequence[str] = tuple(EDGE_ADVICE)) -> list[dict]:
    """The chosen values that sit on the smallest or largest value tried of their axis.

    Only axes with at least three distinct values tried count (with two, every choice is an
    edge; with one the value was given).

    Returns
    -------
    list of dict
        ``axis``, ``value``, ``side`` ("low" or "high") and ``grid`` (the values tried, sorted).
    """
    edges = []
    for axis in axes:
        if axis not in chosen or chosen[axis] is None:
            continue
        tried = sorted(
            {
                float(row[axis])
                for row in table
                if isinstance(row.get(axis), (int, float))
                and not isinstance(row.get(axis), bool)
                and np.isfinite(row[axis])
            }
        )
        if len(tried) < 3:
            continue
        value = float(chosen[axis])
        # relative closeness only: isclose's default atol (1e-8) would put every value of a grid
        # of tiny learning rates or C (1e-10, 1e-9, 1e-8) on its low edge
        low, high = (np.isclose(value, end, rtol=1e-9, atol=0.0) for end in (tried[0], tried[-1]))
        side = "low" if low else "high" if high else None
        if side is not None:
            edges.append({"axis": axis, "value": value, "side": side, "grid": tried})
    return edges


def guard_warnings(
    *,
    versus: dict | None = None,
    train_ess: float | None = None,
    n_train: int | None = None,
    vali_ess: float | None = None,
    n_vali: int | None = None,
    clip: dict | None = None,
    edges: Sequence[dict] = (),
    alike: float | None = None,
) -> list[str]:
    """The guard's words on a trained model: what happened and what to do.

    Parameters
    ----------
    versus : dict, optional
        ``versus_logging`` of the chosen model: a warning unless its difference exceeds
        one standard error.
    train_ess, vali_ess : float, optional
        ``ess_fraction`` of the training weights as trained (after clipping) and of the
        validation weights; a warning below ``ESS_FRACTION``. ``n_train``, ``n_vali``: the
        example counts.
    clip : dict, optional
        The clipping record (``mode``, ``tau``, ``grid``): a warning when ``auto`` chose
        the strongest threshold of its grid.
    edges : sequence of dict
        ``edges_of_grid`` of the chosen hyperparameters.
    alike : float, optional
        The chosen model's ``alike_share``: a warning at or above ``ALIKE_SHARE``.
    """
    said = []
    if alike is not None and alike >= ALIKE_SHARE:
        said.append(
            f"the model scores the documents of {alike:.0%} of the validation queries alike: it ranks by "
            f"the tie-break alone; use another method or a wider grid"
        )
    # better means by more than one standard error of the paired difference
    if versus is not None and np.isfinite(versus["difference"]) and not versus["difference"] > versus["standard_error"]:
        how = (
            "worse than"
            if versus["difference"] < -versus["standard_error"]
            else "not better (by its standard error) than"
        )
        said.append(
            f"the model is {how} the logging (production) ranker on the validation clicks: SNIPS Avg "
            f"DCG{' (unclipped)' if versus.get('unclipped') else ''} {versus['model']:.4f} against "
            f"{versus['logging']:.4f} on the same clicks (difference "
            f"{versus['difference']:+.4f} +- {versus['standard_error']:.4f}); it may be no better than "
            f"production. Collect more clicks (more passes), control the variance (--clip auto or a "
            f"TAU), or try another method (svm-rank, tree-propdcg)"
        )
    if train_ess is not None and train_ess < ESS_FRACTION:
        assert n_train is not None, "n_train comes with train_ess"
        tau = None if clip is None else clip.get("tau")
        how = (
            f"as clipped at {tau:g}"
            if tau is not None
            else "unclipped"
            if clip and clip.get("mode") == "auto"
            else "as told"
        )
        advice = (
            "--clip auto tried clipping and kept no clipping on validation; more clicks or a method that "
            "needs no weights (svm-rank, lambdarank) may do better"
            if clip and clip.get("mode") == "auto"
            else "clip the propensities (--clip auto chooses TAU on validation) or collect more clicks"
        )
        said.append(
            f"the effective sample size of the training weights ({how}) is {train_ess * n_train:.0f} of "
            f"{n_train} examples ({train_ess:.1%}, below {ESS_FRACTION:.0%}): a few clicks with tiny "
            f"propensities carry the objective; {advice}"
        )
    if vali_ess is not None and vali_ess < ESS_FRACTION:
        assert n_vali is not None, "n_vali comes with vali_ess"
        said.append(
            f"the validation estimate rests on an effective {vali_ess * n_vali:.0f} of {n_vali} clicks "
            f"({vali_ess:.1%}, below {ESS_FRACTION:.0%}, even clipped at its own TAU_v): its choices are "
            f"noisy; more validation clicks make them firmer"
        )
    if (
        clip is not None
        and clip.get("mode") == "auto"
        and clip.get("tau") is not None
        and clip.get("grid")
        and clip["tau"] == max(clip["grid"])
    ):
        said.append(
            f"--clip auto chose TAU = {clip['tau']:g}, the strongest clipping tried: the propensity "
            f"weights barely help on this log; compare a method without them (svm-rank, lambdarank) "
            f"or give a larger --clip"
        )
    for edge in edges:
        edge_advice, grid, at_low = EDGE_ADVICE[edge["axis"]], edge["grid"], edge["side"] == "low"
        said.append(
            f"{edge['axis']} = {edge['value']:g} is the {'smallest' if edge['side'] == 'low' else 'largest'} "
            f"value tried ({grid[0]:g} .. {grid[-1]:g}): {edge_advice[edge['side']]}; "
            + edge_advice["do"].format(
                low=min(grid[0], edge["value"] / 100) if at_low else grid[0],
                high=grid[-1] if at_low else edge["value"] * 100,
                value=edge["value"],
            )
        )
    return said


# Memory per value of a parsed C grid before any training (measured with tracemalloc on a
# grid of 10^6: the values, the options holding them, the candidates and the recorded
# options' JSON, 281 bytes at the peak); every candidate's selection row comes on top.
GRID_BYTES_PER_VALUE = 300


def parse_grid(text: str) -> list[float]:
    """Parse a grid option: comma-separated numbers, or ``lo:hi:count`` for a log grid."""
    text = text.strip()
    try:
        if ":" in text:
            low_text, high_text, count_text = text.split(":")
            low, high, count = float(low_text), float(high_text), int(count_text)
            if not (np.isfinite(low) and np.isfinite(high) and low > 0 and high > 0):
                raise ValueError(f"grid {text!r} must hold positive finite numbers")
            # checked before the grid exists: 0.1:10:1000000000 grew to 15.7 GB in 40 s
            too_large = exceeds_memory(max(count, 0) * GRID_BYTES_PER_VALUE)
            if too_large:
                raise ValueError(
                    f"grid {text!r} has {count:,} values, one training each, and its values, "
                    f"candidates and recorded options alone would need {too_large}; give a count "
                    f"of values like 7 (low:high:count)"
                )
            values: np.ndarray | list[float] = np.logspace(np.log10(low), np.log10(high), count)
        else:
            values = [float(part) for part in text.split(",") if part.strip()]
    except ValueError as error:
        if str(error).startswith("grid "):
            raise
        raise ValueError(f"cannot read grid {text!r}: expected 'a,b,c' or 'low:high:count'") from None
    grid = sorted(float(v) for v in values)
    if not grid:
        raise ValueError(f"grid {text!r} holds no value")
    if not all(np.isfinite(v) and v > 0 for v in grid):
        raise ValueError(f"grid {text!r} must hold positive finite numbers")
    return grid
