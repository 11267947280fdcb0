"""Regression EM with a latent-class relevance model: each (query, document) has one relevance
level, drawn from a few levels shared by every rank, with class probabilities that depend on
its features and its rank. The notation is the package's (``cltr.core.propensity``).

Why: on one ranker's log each (query, document) u is shown at one rank only, so the split of
its click rate into theta_k x gamma_u must come from the model of gamma. The logistic model
gamma_u = sigma(x_u . w) ties it to the features; where relevance is not logistic in them (the
simulator's is a function of the graded label) its misfit per rank, the mean fitted gamma at
rank k against the true one, goes one for one into theta_k. Here the per-unit relevance is a
random effect instead: z_u in {1..m} with Pr(z_u = j) = pi_j(x_u, rank of u), and given z_u = j
each impression at rank k is clicked with probability theta_k g_j. The levels g_j are shared
across ranks and a unit's many impressions (100 passes) all carry its one z_u, so the clicks of
one unit reveal which class it is in, and the positions of the classes' click rates at rank k
(theta_k g_1, ..., theta_k g_m) against those at rank 1 identify theta_k, whatever pi_j is at each
rank. Nothing needs relevance to be a function of the features. It needs repeated impressions:
a mixture of m binomials Bin(n, .) is identifiable only for n >= 2m - 1 (Teicher 1963), so a
document seen at rank k fewer times than that says nothing about where the classes lie at k,
and there theta_k rests on the prior's form again (``repeated_share`` measures it).

EM with the complete data (z_u, and each impression's examination E and relevance R):

    E-step: r_uj = Pr(z_u = j | u's clicks), proportional to
            pi_j(u) prod_cells (theta_k g_j)^c (1 - theta_k g_j)^(n - c);
            given z_u = j a skip at rank k was examined with Pr theta_k (1 - g_j) / (1 - theta_k g_j)
            and relevant with Pr g_j (1 - theta_k) / (1 - theta_k g_j);
    M-step: theta_k = sum_{cells at k} sum_j r_uj [c + (n - c) Pr(E = 1 | j)] / n_k,
            g_j = sum_u r_uj sum_cells [c + (n - c) Pr(R = 1 | j)] / sum_u r_uj n_u,
            the class probabilities pi by a ridge (multinomial) logistic regression of r_u. on
            [1, standardised features, the unit's share of impressions at ranks 2..K], one
            damped Newton step (m = 2) or a few quasi-Newton steps (m > 2) that do not lower it.

Each M-step part raises its part of the expected complete-data log-likelihood, so a step
never lowers the penalised marginal log-likelihood
sum_u log sum_j pi_j(u) prod_cells ... - l2/2 |W|^2 (binomial coefficients left out).
"""

from __future__ import annotations

import numpy as np

from cltr.core.propensity.em_data import _EMData, _logistic_newton, _penalty

# A unit's class log-likelihood sums over its impressions; probabilities are kept off 0 and 1
# so that a level at 0 or 1 does not give -inf to a class that a unit's clicks rule out.
_EPS = 1e-12


def prior_features(data: _EMData) -> np.ndarray:
    """[1, standardised features, share of the unit's impressions at rank k for k = 2..K]:
    the class probabilities may follow rank (a ranker puts relevant documents first) without
    the levels doing so."""
    k_max, n_units = data.max_rank, len(data.unit_weight)
    shares = np.zeros((n_units, k_max))
    np.add.at(shares, (data.cell_unit, data.cell_rank0), data.cell_impressions)
    shares /= np.maximum(shares.sum(axis=1, keepdims=True), 1e-300)
    return np.hstack([data.features, shares[:, 1:]])


def repeated_share(data: _EMData, classes: int) -> float:
    """Share of the impressions (ranks <= K) in cells of a (query, document) at one rank with at
    least 2m - 1 impressions: those whose clicks identify the classes (module docstring)."""
    n = data.cell_impressions
    return float(n[n >= 2 * classes - 1].sum() / n.sum())


def class_logliks(data: _EMData, theta: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """(n_units, m): log Pr(u's clicks | z_u = j) = sum over u's cells of
    c log(theta_k g_j) + (n - c) log(1 - theta_k g_j)."""
    pi = np.clip(theta[data.cell_rank0][:, None] * levels[None, :], _EPS, 1.0 - _EPS)
    c = data.cell_clicks[:, None]
    per_cell = c * np.log(pi) + (data.cell_impressions[:, None] - c) * np.log1p(-pi)
    out = np.zeros((len(data.unit_weight), len(levels)))
    for j in range(len(levels)):
        out[:, j] = np.bincount(data.cell_unit, weights=per_cell[:, j], minlength=len(data.unit_weight))
    return out


def log_prior(Z: np.ndarray, W: np.ndarray) -> np.ndarray:
    """(n_units, m) log class probabilities, a softmax of Z @ W with class 0's column zero
    (W is (d, m - 1))."""
    scores = np.hstack([np.zeros((Z.shape[0], 1)), Z @ W])
    return scores - np.logaddexp.reduce(scores, axis=1, keepdims=True)


def _prior_penalty(W: np.ndarray, pen: np.ndarray) -> float:
    return 0.5 * float(np.sum(pen[:, None] * W * W))


def classes_loglik(
    data: _EMData, Z: np.ndarray, theta: np.ndarray, levels: np.ndarray, W: np.ndarray, pen: np.ndarray
) -> float:
    """The penalised marginal log-likelihood sum_u log sum_j pi_j(u) Pr(u's clicks | j) - l2/2 |W|^2."""
    joint = log_prior(Z, W) + class_logliks(data, theta, levels)
    return float(np.sum(np.logaddexp.reduce(joint, axis=1)) - _prior_penalty(W, pen))


def _responsibilities(data: _EMData, Z: np.ndarray, theta: np.ndarray, levels: np.ndarray, W: np.ndarray) -> np.ndarray:
    joint = log_prior(Z, W) + class_logliks(data, theta, levels)
    return np.exp(joint - np.logaddexp.reduce(joint, axis=1, keepdims=True))


def _fit_prior(Z: np.ndarray, resp: np.ndarray, W: np.ndarray, pen: np.ndarray) -> np.ndarray:
    """Raise sum_u sum_j r_uj log pi_j(u) - l2/2 |W|^2 from W (never lower it)."""
    m = resp.shape[1]
    if m == 2:
        coef, _ = _logistic_newton(Z, resp[:, 1], np.ones(len(resp)), W[:, 0], Z @ W[:, 0], pen, 1)
        return coef[:, None]
    from scipy.optimize import minimize

    def negative(flat):
        w = flat.reshape(W.shape)
        lp = log_prior(Z, w)
        value = -float(np.sum(resp * lp)) + _prior_penalty(w, pen)
        p = np.exp(lp)
        grad = -Z.T @ (resp[:, 1:] - p[:, 1:]) + pen[:, None] * w
        return value, grad.ravel()

    result = minimize(negative, W.ravel(), jac=True, method="L-BFGS-B", options={"maxiter": 20})
    # L-BFGS's line search only accepts decreases; keep the start where it could not move
    return result.x.reshape(W.shape) if result.fun <= negative(W.ravel())[0] else W


def classes_step(
    data: _EMData, Z: np.ndarray, theta: np.ndarray, levels: np.ndarray, W: np.ndarray, pen: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One EM step of the latent-class model (module docstring); returns (theta, levels, W)."""
    resp = _responsibilities(data, Z, theta, levels, W)
    r_cell = resp[data.cell_unit]  # (n_cells, m)
    n, c = data.cell_impressions, data.cell_clicks
    skips = (n - c)[:, None]
    t = theta[data.cell_rank0][:, None]
    g = levels[None, :]
    denom = np.maximum(1.0 - t * g, _EPS)
    examined = t * (1.0 - g) / denom
    relevant = g * (1.0 - t) / denom
    k_max = data.max_rank
    per_rank = np.bincount(data.cell_rank0, weights=n, minlength=k_max)
    new_theta = (
        np.bincount(data.cell_rank0, weights=np.sum(r_cell * (c[:, None] + skips * examined), axis=1), minlength=k_max)
        / per_rank
    )
    exposure = r_cell.T @ n  # (m,) sum_u r_uj n_u
    new_levels = np.sum(r_cell * (c[:, None] + skips * relevant), axis=0) / np.maximum(exposure, 1e-300)
    new_levels = np.where(exposure > 0, new_levels, levels)  # an empty class keeps its level
    new_W = _fit_prior(Z, resp, W, pen)
    return np.clip(new_theta, _EPS, 1.0 - _EPS), np.clip(new_levels, _EPS, 1.0 - _EPS), new_W


def classes_starts(
    data: _EMData, classes: int, logistic_theta: np.ndarray | None = None
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Starts of EM, each (theta, levels, W): theta flat at 1/2, theta the click rate per rank
    over rank 1's, and (where given) theta logistic EM's fit; levels spread geometrically from a tenth of the
    highest to the highest (twice the 90th percentile of the units' click rates at rank 1,
    capped below 1); class probabilities equal.

    Several, because each rank's units pin their theta_k almost alone (a document is shown at
    one rank): from a theta_k far off, the classes at rank k can settle the wrong way round,
    the true high class taken as the low one, a local maximum. ``classes_fit`` keeps the start
    whose fixed point has the highest likelihood."""
    top = data.cell_rank0 == 0
    rate = data.cell_clicks[top] / np.maximum(data.cell_impressions[top], 1.0)
    high = float(np.clip(2.0 * np.quantile(rate, 0.9) if rate.size else 0.5, 0.05, 0.99))
    levels = high * np.geomspace(0.1, 1.0, classes)
    W = np.zeros((data.features.shape[1] + data.max_rank - 1, classes - 1))
    k_max = data.max_rank
    clicks = np.bincount(data.cell_rank0, weights=data.cell_clicks, minlength=k_max)
    ctr = clicks / np.bincount(data.cell_rank0, weights=data.cell_impressions, minlength=k_max)
    thetas = [np.full(k_max, 0.5), np.clip(ctr / max(ctr[0], _EPS), 0.01, 1.0) * 0.9]
    if logistic_theta is not None:
        thetas.append(np.clip(logistic_theta / logistic_theta[0], 0.01, 1.0) * 0.9)
    return [(theta, levels.copy(), W.copy()) for theta in thetas]


def classes_fit(
    data: _EMData,
    *,
    classes: int,
    iterations: int,
    tol: float,
    l2: float,
    start=None,
    logistic_theta: np.ndarray | None = None,
):
    """EM of the latent-class model to convergence of p_k = theta_k / theta_1 (within ``tol``) or
    ``iterations`` steps, from ``start`` (theta, levels, W), or from each of ``classes_starts``
    (``logistic_theta``: logistic EM's theta, one of them), keeping the fixed point of highest
    likelihood. Returns (theta, levels, W, iterations, converged), iterations summed over the
    starts."""
    Z = prior_features(data)
    pen = _penalty(Z.shape[1], l2)
    starts = classes_starts(data, classes, logistic_theta) if start is None else [tuple(a.copy() for a in start)]
    best, best_value, total, all_converged = starts[0], -np.inf, 0, True
    for theta, levels, W in starts:
        converged, iteration = False, 0
        for iteration in range(1, iterations + 1):  # noqa: B007 (its last value is the count used)
            previous = theta / theta[0]
            theta, levels, W = classes_step(data, Z, theta, levels, W, pen)
            if np.max(np.abs(theta / theta[0] - previous)) < tol:
                converged = True
                break
        total += iteration
        value = classes_loglik(data, Z, theta, levels, W, pen)
        if value > best_value:
            best, best_value, all_converged = (theta, levels, W), value, converged
    theta, levels, W = best
    order = np.argsort(levels)  # report the classes from the least to the most relevant
    if np.any(order != np.arange(classes)):
        full = np.hstack([np.zeros((W.shape[0], 1)), W])[:, order]
        W = full[:, 1:] - full[:, :1]
        levels = levels[order]
    return theta, levels, W, total, all_converged
