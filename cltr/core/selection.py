"""Model selection on validation clicks (DESIGN.md, "Model selection").

Hyperparameters are chosen by the SNIPS estimate of Avg DCG on the validation split's
clicks, never on test labels. Candidates are fitted in the order given, each may
warm-start from the previous one's model, and ties go to the earliest candidate (for a
C grid sorted ascending: the most regularised).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

__all__ = ["Selection", "select_on_validation", "parse_grid"]


@dataclass
class Selection:
    """The outcome of a grid search: the chosen model and every candidate's row."""

    best: Any
    best_params: dict
    best_estimate: float
    table: list[dict] = field(default_factory=list)


def select_on_validation(
    candidates: Sequence[dict],
    fit: Callable[[dict, Any], tuple[Any, dict]],
    estimate: Callable[[Any], float],
    *,
    progress: Callable[[dict], None] | None = None,
    criterion: str = "validation_snips_avg_dcg",
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
    """
    if not candidates:
        raise ValueError("the hyperparameter grid is empty")
    best, best_row, best_value, previous = None, None, -np.inf, None
    table = []
    for params in candidates:
        start = time.perf_counter()
        model, info = fit(params, previous)
        seconds = time.perf_counter() - start
        value = estimate(model)
        row = {**params, criterion: value, "seconds": seconds, **info}
        table.append(row)
        if progress is not None:
            progress(row)
        if best is None or (np.isfinite(value) and value > best_value):
            best, best_row, best_value = model, params, value if np.isfinite(value) else -np.inf
        previous = model
    return Selection(best=best, best_params=dict(best_row), best_estimate=float(best_value), table=table)


def parse_grid(text: str) -> list[float]:
    """Parse a grid option: comma-separated numbers, or ``lo:hi:count`` for a log grid."""
    text = text.strip()
    try:
        if ":" in text:
            low, high, count = text.split(":")
            values = np.logspace(np.log10(float(low)), np.log10(float(high)), int(count))
        else:
            values = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"cannot read grid {text!r}: expected 'a,b,c' or 'low:high:count'") from None
    values = sorted(float(v) for v in values)
    if not values or any(v <= 0 for v in values):
        raise ValueError(f"grid {text!r} must hold positive numbers")
    return values
