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

from cltr.core.resources import exceeds_memory

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


# Memory per value of a parsed C grid before any training (measured with tracemalloc on a
# grid of 10^6: the values, the options holding them, the candidates and the recorded
# options' JSON, 281 bytes at the peak); every candidate's selection row comes on top.
GRID_BYTES_PER_VALUE = 300


def parse_grid(text: str) -> list[float]:
    """Parse a grid option: comma-separated numbers, or ``lo:hi:count`` for a log grid."""
    text = text.strip()
    try:
        if ":" in text:
            low, high, count = text.split(":")
            low, high, count = float(low), float(high), int(count)
            if not (np.isfinite(low) and np.isfinite(high) and low > 0 and high > 0):
                raise ValueError(f"grid {text!r} must hold positive finite numbers")
            # checked before the grid exists: 0.1:10:1000000000 grew to 15.7 GB in 40 s
            too_large = exceeds_memory(max(count, 0) * GRID_BYTES_PER_VALUE)
            if too_large:
                raise ValueError(f"grid {text!r} has {count:,} values, one training each, and its values, "
                                 f"candidates and recorded options alone would need {too_large}; give a count "
                                 f"of values like 7 (low:high:count)")
            values = np.logspace(np.log10(low), np.log10(high), count)
        else:
            values = [float(part) for part in text.split(",") if part.strip()]
    except ValueError as error:
        if str(error).startswith("grid "):
            raise
        raise ValueError(f"cannot read grid {text!r}: expected 'a,b,c' or 'low:high:count'") from None
    values = sorted(float(v) for v in values)
    if not values:
        raise ValueError(f"grid {text!r} holds no value")
    if not all(np.isfinite(v) and v > 0 for v in values):
        raise ValueError(f"grid {text!r} must hold positive finite numbers")
    return values
