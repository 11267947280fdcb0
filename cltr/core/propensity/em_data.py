"""The data regression EM runs on (cells of (query, document) unit and rank, with unit features)
and its logistic M-step, shared by the logistic and tree EM (``em``) and the latent-class EM
(``em_classes``). The notation is the package's (``cltr.core.propensity``)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

# scipy is imported inside the functions that use it (``cltr --help`` imports this package)


class _EMData(NamedTuple):
    """Cells (query-document unit, rank) with their counts, and standardised unit features."""

    n_queries: int
    max_rank: int
    cell_unit: np.ndarray  # (n_cells,)
    cell_rank0: np.ndarray  # (n_cells,) k - 1
    cell_impressions: np.ndarray
    cell_clicks: np.ndarray
    unit_query: np.ndarray  # (n_units,)
    unit_weight: np.ndarray  # (n_units,) impressions of the unit over all its ranks
    features: np.ndarray  # (n_units, 1 + d) intercept column, then standardised features


def _weighted_gram(features: np.ndarray, weight: np.ndarray, chunk: int = 1 << 15) -> np.ndarray:
    """features.T @ diag(weight) @ features, in row chunks to bound the temporary."""
    d = features.shape[1]
    gram = np.zeros((d, d))
    for start in range(0, features.shape[0], chunk):
        f = features[start : start + chunk]
        gram += f.T @ (f * weight[start : start + chunk, None])
    return gram


def _penalty(d: int, l2: float) -> np.ndarray:
    pen = np.full(d, float(l2))
    pen[0] = 0.0  # the intercept is not shrunk
    return pen


def _logistic_objective(
    eta: np.ndarray, positives: np.ndarray, weight: np.ndarray, coef: np.ndarray, pen: np.ndarray
) -> float:
    # Σ P log sigma(eta) + (W - P) log(1 - sigma(eta)), written stably with logaddexp.
    return float(np.sum(positives * eta - weight * np.logaddexp(0.0, eta)) - 0.5 * np.sum(pen * coef * coef))


def _logistic_newton(
    features: np.ndarray,
    positives: np.ndarray,
    weight: np.ndarray,
    coef: np.ndarray,
    eta: np.ndarray,
    pen: np.ndarray,
    steps: int,
) -> tuple[np.ndarray, np.ndarray]:
    """A few damped Newton (IRLS) steps on the weighted, ridge-penalised logistic regression of
    soft labels ``positives / weight``; returns (coef, eta = features @ coef)."""
    from scipy.special import expit

    value = _logistic_objective(eta, positives, weight, coef, pen)
    for _ in range(steps):
        gamma = expit(eta)
        grad = features.T @ (positives - weight * gamma) - pen * coef
        hess = _weighted_gram(features, weight * gamma * (1.0 - gamma))
        hess[np.diag_indices_from(hess)] += pen + 1e-10 * (1.0 + np.abs(np.diag(hess)))
        step = np.linalg.solve(hess, grad)
        for _ in range(30):  # halve until the M-step objective does not fall
            trial = coef + step
            trial_eta = features @ trial
            trial_value = _logistic_objective(trial_eta, positives, weight, trial, pen)
            if trial_value >= value - 1e-12 * abs(value):
                break
            step = step / 2.0
        else:
            break
        coef, eta, value = trial, trial_eta, trial_value
    return coef, eta
