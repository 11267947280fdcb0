"""Regression EM for the position-based model (Wang et al., WSDM 2018): the EM fits (logistic or
trees), its identification check and ``em_propensities``. The notation is the package's
(``cltr.core.propensity``)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from cltr.core.clicks import Impressions

# the EM data and the logistic M-step live in em_data, shared with the latent-class model
from cltr.core.propensity.em_data import _EMData as _EMData
from cltr.core.propensity.em_data import _logistic_newton as _logistic_newton
from cltr.core.propensity.em_data import _logistic_objective as _logistic_objective
from cltr.core.propensity.em_data import _penalty as _penalty
from cltr.core.propensity.em_data import _weighted_gram as _weighted_gram
from cltr.core.propensity.estimate import (
    PropensityEstimate,
    _check_options,
    _check_table,
    _factorize,
    _percentile_band,
    _query_resamples,
    _rows,
)

# scipy is imported inside the functions that use it (once per call, never per row), not at
# the top: scipy.special and scipy.sparse take a quarter of a second to import, and `cltr --help`
# imports this package through the estimators' options

# --------------------------------------------------------------------------- regression EM


def _em_data(t: Impressions, X: np.ndarray, max_rank: int) -> _EMData:
    keep = (t.rank <= max_rank) & (t.impressions > 0)
    if not np.any(keep):
        raise ValueError(f"no row has a rank <= max_rank = {max_rank} and impressions > 0")
    t = _rows(t, keep)
    k_max = max_rank
    queries, qi = _factorize(t.query)
    docs, di = _factorize(t.doc)
    units, unit = _factorize(qi * np.int64(len(docs)) + di)
    cell, cell_inv = _factorize(unit * k_max + (t.rank - 1))
    cell_imp = np.bincount(cell_inv, weights=t.impressions)
    cell_clk = np.bincount(cell_inv, weights=t.clicks)
    cell_unit = cell // k_max
    cell_rank0 = cell % k_max
    per_rank = np.bincount(cell_rank0, weights=cell_imp, minlength=k_max)
    if np.any(per_rank <= 0):
        missing = np.flatnonzero(per_rank <= 0) + 1
        raise ValueError(
            f"rank {missing[0]} has no impressions (ranks without any: "
            f"{', '.join(map(str, missing[:10]))}); lower max_rank to at most {missing[0] - 1}"
        )
    unit_doc = docs[units % len(docs)]
    x = X[unit_doc]
    finite = np.isfinite(x).all(axis=1)
    if not np.all(finite):
        raise ValueError(f"X must be finite; row {unit_doc[~finite].min()} of X (a document of the table) is not")
    mean = x.mean(axis=0, dtype=np.float64)
    std = x.std(axis=0, dtype=np.float64)
    varying = std > 1e-12 * np.maximum(1.0, np.abs(mean))
    # [1, standardised features], written into one array to keep the copies of X few.
    features = np.empty((len(units), 1 + int(varying.sum())))
    features[:, 0] = 1.0
    np.subtract(x if np.all(varying) else x[:, varying], mean[varying], out=features[:, 1:])
    features[:, 1:] /= std[varying]
    return _EMData(
        n_queries=len(queries),
        max_rank=k_max,
        cell_unit=cell_unit,
        cell_rank0=cell_rank0,
        cell_impressions=cell_imp,
        cell_clicks=cell_clk,
        unit_query=units // len(docs),
        unit_weight=np.bincount(cell_unit, weights=cell_imp, minlength=len(units)),
        features=features,
    )


def _check_features(X, doc: np.ndarray) -> np.ndarray:
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array (n_docs, n_features), found shape {X.shape}")
    if X.dtype.kind not in "fiub":
        raise ValueError(f"X must be numeric, found dtype {X.dtype}")
    bad = np.flatnonzero((doc < 0) | (doc >= X.shape[0]))
    if bad.size:
        raise ValueError(
            f"doc indexes the rows of X, so it must be in [0, {X.shape[0]}); row {bad[0]} has doc {doc[bad[0]]}"
        )
    return X


def _em_step(
    data: _EMData, theta: np.ndarray, coef: np.ndarray, eta: np.ndarray, pen: np.ndarray, newton_steps: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One regression-EM step (E-step, then the M-steps of theta and of the relevance model)."""
    # E-step and theta in closed form (``_posteriors``); gamma by a logistic regression of the
    # posterior relevance.
    new_theta, positives = _posteriors(data, theta, eta)
    coef, eta = _logistic_newton(data.features, positives, data.unit_weight, coef, eta, pen, newton_steps)
    return new_theta, coef, eta


def _posteriors(data: _EMData, theta: np.ndarray, eta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """E-step and the theta M-step: (new theta (K,), expected relevant impressions per unit).

    An unclicked impression was examined (and irrelevant) or relevant (and not examined) with
    the posteriors of Bayes' rule; a clicked one was both.
    """
    from scipy.special import expit

    k0, unit = data.cell_rank0, data.cell_unit
    n, c = data.cell_impressions, data.cell_clicks
    skips = n - c
    gamma = expit(eta)[unit]
    t = theta[k0]
    denom = 1.0 - t * gamma
    examined = t * (1.0 - gamma) / denom
    relevant = gamma * (1.0 - t) / denom
    per_rank = np.bincount(k0, weights=n, minlength=data.max_rank)
    new_theta = np.bincount(k0, weights=c + skips * examined, minlength=data.max_rank) / per_rank
    positives = np.bincount(unit, weights=c + skips * relevant, minlength=len(data.unit_weight))
    return np.clip(new_theta, 1e-12, 1.0 - 1e-12), positives


def _relevance_objective(eta: np.ndarray, positives: np.ndarray, weight: np.ndarray) -> float:
    """The relevance M-step's objective, the expected complete-data log-likelihood of relevance
    Σ_u P_u log sigma(eta_u) + (W_u - P_u) log(1 - sigma(eta_u)); concave in each eta_u."""
    return float(np.sum(positives * eta - weight * np.logaddexp(0.0, eta)))


def _cross_fitted(
    fit_relevance, features: np.ndarray, label: np.ndarray, weight: np.ndarray, unit_query: np.ndarray, folds: int
) -> np.ndarray:
    """The relevance model's logits per unit: fitted on all units (``folds`` 1), or, cross-fitted,
    each query's units predicted by a model fitted on the other folds' queries (query q in fold
    q mod ``folds``), so that no unit's logit has seen that unit's own clicks. Units all in one
    fold have no other fold to be predicted from: an error (``_fold_count`` tells beforehand)."""
    if folds <= 1:
        return np.asarray(fit_relevance(features, label, weight), dtype=np.float64)
    fold = unit_query % folds
    if _fold_count(unit_query, folds) < 2:
        raise ValueError(
            f"cross-fitting over {folds} folds needs units in two folds or more; every unit is in fold "
            f"{int(fold[0]) if len(fold) else 0}"
        )
    out = np.zeros(len(label))
    for f in range(folds):
        held = fold == f
        if held.any() and not held.all():
            out[held] = np.asarray(
                fit_relevance(features[~held], label[~held], weight[~held], predict=features[held]), dtype=np.float64
            ).reshape(-1)
    return out


def _fold_count(unit_query: np.ndarray, folds: int) -> int:
    """How many of the ``folds`` folds (query q in fold q mod ``folds``) hold a unit."""
    return int(np.count_nonzero(np.bincount(unit_query % folds, minlength=folds)))


def _em_tree_step(
    data: _EMData, theta: np.ndarray, eta: np.ndarray, fit_relevance, folds: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """One regression-EM step with a fitted relevance model (Wang et al., WSDM 2018, Sec. 4).

    E-step and theta M-step as ``_em_step``; the relevance M-step refits ``fit_relevance``
    (gradient-boosted trees from the pipeline) from scratch on the posterior relevance
    P_u / W_u as soft labels, weighted by impressions W_u. A refit is not guaranteed to raise
    the M-step objective (trees fit it greedily), so the new logits are taken along the
    segment from the old ones, halving until the objective does not fall (none of it if it
    always does): a generalised EM step, which never lowers the marginal likelihood.

    With ``folds`` > 1 the new logits are cross-fitted (``_cross_fitted``): on a log where each
    document is shown at one rank, a model refitted on a document's own clicks can learn its
    click rate with its rank's examination included, and EM then finds no position effect left
    to explain; a model that predicts held-out queries can only carry over what features say
    about relevance across queries.
    """
    new_theta, positives = _posteriors(data, theta, eta)
    weight = data.unit_weight
    label = np.clip(positives / weight, 0.0, 1.0)
    fitted = _cross_fitted(fit_relevance, data.features[:, 1:], label, weight, data.unit_query, folds)
    if fitted.shape != eta.shape or not np.all(np.isfinite(fitted)):
        raise ValueError(
            f"the relevance model must return finite logits of shape {eta.shape}, found shape {fitted.shape}"
        )
    before = _relevance_objective(eta, positives, weight)
    step = fitted - eta
    for _ in range(12):
        trial = eta + step
        if _relevance_objective(trial, positives, weight) >= before:
            return new_theta, trial
        step = step / 2.0
    return new_theta, eta


def _em_loglik(data: _EMData, theta: np.ndarray, coef: np.ndarray, eta: np.ndarray, pen: np.ndarray) -> float:
    """Penalised marginal log-likelihood Σ c log(pi) + (n - c) log(1 - pi) - l2/2 |w|^2."""
    from scipy.special import expit, xlog1py, xlogy

    pi = theta[data.cell_rank0] * expit(eta)[data.cell_unit]
    skips = data.cell_impressions - data.cell_clicks
    return float(np.sum(xlogy(data.cell_clicks, pi) + xlog1py(skips, -pi)) - 0.5 * np.sum(pen * coef * coef))


def _em_free(log_theta: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """Coordinates of phi = (log theta, coef) not held at the bound theta_k = 1 by a gradient
    pushing beyond it (the top rank is often examined always, and its MLE sits there)."""
    free = np.ones(len(grad), dtype=bool)
    k_max = len(log_theta)
    free[:k_max] = ~((log_theta >= -1e-9) & (grad[:k_max] > 0))
    return free


def _em_newton_direction(log_theta: np.ndarray, grad: np.ndarray, hess: np.ndarray) -> np.ndarray | None:
    """Projected Newton direction of the marginal log-likelihood, or None where its Hessian on
    the free coordinates is not negative definite (then EM alone moves)."""
    free = _em_free(log_theta, grad)
    try:
        factor = np.linalg.cholesky(-hess[np.ix_(free, free)])
    except np.linalg.LinAlgError:
        return None
    step = np.zeros(len(grad))
    step[free] = np.linalg.solve(factor.T, np.linalg.solve(factor, grad[free]))
    return step if np.all(np.isfinite(step)) else None


def _em_newton_update(data: _EMData, theta: np.ndarray, coef: np.ndarray, eta: np.ndarray, pen: np.ndarray):
    """Try one projected Newton step on the marginal likelihood; returns (theta, coef, eta, taken)."""
    k_max = data.max_rank
    log_theta = np.log(theta)
    value, grad, hess, _ = _em_derivatives(data, log_theta, coef, pen)
    step = _em_newton_direction(log_theta, grad, hess)
    if step is None:
        return theta, coef, eta, False
    t = 1.0
    for _ in range(10):
        trial_theta = np.clip(np.exp(np.minimum(log_theta + t * step[:k_max], 0.0)), 1e-12, 1.0 - 1e-12)
        trial_coef = coef + t * step[k_max:]
        trial_eta = data.features @ trial_coef
        if _em_loglik(data, trial_theta, trial_coef, trial_eta, pen) >= value:
            return trial_theta, trial_coef, trial_eta, True
        t /= 2.0
    return theta, coef, eta, False


def _em_fit(data: _EMData, *, iterations: int, tol: float, l2: float, newton_steps: int, start=None):
    """Regression EM with a Newton step on the marginal likelihood after each EM step.

    Position and relevance are confounded to a large degree, so plain EM creeps (hundreds
    of steps to 1e-6). After each EM step a Newton step on the penalised marginal
    log-likelihood in (log theta, w) is tried (the EM-Newton hybrid of Lange 1995): projected
    onto theta <= 1 (a theta_k held at 1 by its gradient is left out), taken only where the
    Hessian is negative definite on the rest and the likelihood rises (halving the step up
    to 10 times). While Newton steps succeed, EM steps are skipped; the fixed points are
    EM's, reached in about ten iterations instead of hundreds. Returns (theta, coef,
    iterations, converged, iterations in which a Newton step was taken).
    """
    pen = _penalty(data.features.shape[1], l2)
    theta, coef = _em_start(data) if start is None else (start[0].copy(), start[1].copy())
    eta = data.features @ coef
    converged, iteration, newton, newton_worked = False, 0, 0, False
    for iteration in range(1, iterations + 1):  # noqa: B007 (its last value is the count returned)
        previous = theta / theta[0]
        # Once Newton steps are taken, EM steps only slow them down; EM resumes when one fails.
        moved = False
        if newton_worked:
            theta, coef, eta, moved = _em_newton_update(data, theta, coef, eta, pen)
        if not moved:
            theta, coef, eta = _em_step(data, theta, coef, eta, pen, newton_steps)
            theta, coef, eta, newton_worked = _em_newton_update(data, theta, coef, eta, pen)
        newton += int(moved or newton_worked)
        if np.max(np.abs(theta / theta[0] - previous)) < tol:
            converged = True
            break
    return theta, coef, iteration, converged, newton


def _em_start(data: _EMData) -> tuple[np.ndarray, np.ndarray]:
    """Examination flat at 1/2, relevance the overall click rate over 1/2 (intercept only)."""
    rate = np.clip(data.cell_clicks.sum() / data.cell_impressions.sum() / 0.5, 1e-6, 1 - 1e-6)
    coef = np.zeros(data.features.shape[1])
    coef[0] = np.log(rate / (1.0 - rate))
    return np.full(data.max_rank, 0.5), coef


def _em_fit_trees(data: _EMData, fit_relevance, *, iterations: int, tol: float, folds: int = 1, start=None):
    """Regression EM with a fitted (tree) relevance model, accelerated along its confounded
    directions.

    Each iteration is one ``_em_tree_step`` followed by a Newton step on the marginal
    likelihood in (log theta, a, b), the relevance logits moved to a + b eta along the
    current model's logits eta (``_em_newton_update`` on the two columns [1, eta]), kept only
    where it raises the likelihood. The scale of theta traded against the relevance level is
    the direction along which EM creeps; this step takes it in one move. Returns (theta,
    eta, iterations, converged, iterations in which a Newton step was taken).
    """
    if start is None:
        theta, coef = _em_start(data)
        eta = np.full(len(data.unit_weight), coef[0])
    else:
        theta, eta = start[0].copy(), start[1].copy()
    no_penalty = np.zeros(2)
    converged, iteration, newton = False, 0, 0
    for iteration in range(1, iterations + 1):  # noqa: B007 (its last value is the count returned)
        previous = theta / theta[0]
        theta, eta = _em_tree_step(data, theta, eta, fit_relevance, folds)
        along = data._replace(features=np.column_stack([np.ones(len(eta)), eta]))
        theta, _, eta, moved = _em_newton_update(along, theta, np.array([0.0, 1.0]), eta, no_penalty)
        newton += int(moved)
        if np.max(np.abs(theta / theta[0] - previous)) < tol:
            converged = True
            break
    return theta, eta, iteration, converged, newton


def _em_resample(data: _EMData, query_count: np.ndarray) -> tuple[_EMData, np.ndarray]:
    """The data of a bootstrap replicate: every query's counts times how often it was drawn
    (``query_count`` (Q,)), undrawn queries dropped; also the kept units' indices."""
    unit_count = query_count[data.unit_query]
    kept_units = np.flatnonzero(unit_count > 0)
    renumber = np.full(len(unit_count), -1, dtype=np.int64)
    renumber[kept_units] = np.arange(len(kept_units))
    cell_count = unit_count[data.cell_unit]
    kept_cells = cell_count > 0
    resampled = _EMData(
        n_queries=data.n_queries,
        max_rank=data.max_rank,
        cell_unit=renumber[data.cell_unit[kept_cells]],
        cell_rank0=data.cell_rank0[kept_cells],
        cell_impressions=data.cell_impressions[kept_cells] * cell_count[kept_cells],
        cell_clicks=data.cell_clicks[kept_cells] * cell_count[kept_cells],
        unit_query=data.unit_query[kept_units],
        unit_weight=data.unit_weight[kept_units] * unit_count[kept_units],
        features=data.features[kept_units],
    )
    return resampled, kept_units


def _em_resample_copies(data: _EMData, query_count: np.ndarray) -> _EMData:
    """The data of a bootstrap replicate with a query drawn m times as m copies of its units,
    each with the query's own counts (``_em_resample`` multiplies the counts instead).

    The two are one likelihood where a unit's log-likelihood is linear in its counts (logistic
    relevance: one sum over cells). The latent-class likelihood of a unit is
    log sum_j pi_j prod_cells Bin(c | n, theta_k g_j), not linear: a unit with its counts
    doubled tells its class apart as if it had been shown twice as often (its class posterior
    is sharper), so a replicate with doubled counts is a log with more sessions per document
    than the one resampled, not a draw like it: over 24 MQ2008 logs at eta 1.5 such replicates
    sat 21% of p_10 below the estimate on average and spread 1.6-1.7 times as widely as the
    estimates did at ranks 7, 8 and 10 (copies: within 0.3% and 0.95-1.14 times). Copies keep
    n per unit as the log has it."""
    unit_count = query_count[data.unit_query].astype(np.int64)
    starts = np.r_[0, np.cumsum(unit_count)[:-1]]  # first copy's index per unit
    cell_count = unit_count[data.cell_unit]
    cell_rep = np.repeat(np.arange(len(data.cell_unit)), cell_count)
    first = np.r_[0, np.cumsum(cell_count)[:-1]]
    copy = np.arange(len(cell_rep)) - np.repeat(first, cell_count)  # which copy of its unit a row is
    unit_rep = np.repeat(np.arange(len(unit_count)), unit_count)
    return _EMData(
        n_queries=data.n_queries,
        max_rank=data.max_rank,
        cell_unit=starts[data.cell_unit[cell_rep]] + copy,
        cell_rank0=data.cell_rank0[cell_rep],
        cell_impressions=data.cell_impressions[cell_rep],
        cell_clicks=data.cell_clicks[cell_rep],
        unit_query=data.unit_query[unit_rep],
        unit_weight=data.unit_weight[unit_rep],
        features=data.features[unit_rep],
    )


def _em_derivatives(
    data: _EMData, log_theta: np.ndarray, coef: np.ndarray, pen: np.ndarray, *, per_query: bool = False
):
    """The penalised marginal log-likelihood in phi = (log theta_1..log theta_K, coef), its
    gradient (P,), Hessian (P, P) and, with ``per_query``, the per-query scores (Q, P)
    (the penalty is left out of the scores), P = K + 1 + d.

    Per cell with pi = theta_k gamma, n impressions, c clicks and u = n - c skips:
        d/dlog theta = (c - n pi) / (1 - pi),          d/deta = (1 - gamma) (c - n pi) / (1 - pi),
        d2/dlog theta2 = -u pi / (1 - pi)^2,           d2/dlog theta deta = (1 - gamma) d2/dlog theta2,
        d2/deta2 = (1 - gamma)^2 (-c - u pi^2 / (1 - pi)^2) + (1 - 2 gamma) d/deta.
    """
    from scipy import sparse
    from scipy.special import expit, xlog1py, xlogy

    k_max, n_units, d = data.max_rank, len(data.unit_weight), data.features.shape[1]
    n, c = data.cell_impressions, data.cell_clicks
    skips = n - c
    gamma = expit(data.features @ coef)[data.cell_unit]
    pi = np.exp(log_theta)[data.cell_rank0] * gamma
    one_minus = 1.0 - pi
    value = float(np.sum(xlogy(c, pi) + xlog1py(skips, -pi)) - 0.5 * np.sum(pen * coef * coef))
    g_u = (c - n * pi) / one_minus
    g_e = g_u * (1.0 - gamma)
    h_uu = -skips * pi / one_minus**2
    h_ue = h_uu * (1.0 - gamma)
    h_ee = (1.0 - gamma) ** 2 * (-c - skips * pi**2 / one_minus**2) + (1.0 - 2.0 * gamma) * g_e

    unit_g = np.bincount(data.cell_unit, weights=g_e, minlength=n_units)
    grad = np.r_[np.bincount(data.cell_rank0, weights=g_u, minlength=k_max), data.features.T @ unit_g - pen * coef]
    hess = np.zeros((k_max + d, k_max + d))
    hess[np.arange(k_max), np.arange(k_max)] = np.bincount(data.cell_rank0, weights=h_uu, minlength=k_max)
    cross = sparse.csr_matrix((h_ue, (data.cell_rank0, data.cell_unit)), shape=(k_max, n_units))
    hue = np.asarray(cross @ data.features)
    hess[:k_max, k_max:] = hue
    hess[k_max:, :k_max] = hue.T
    hess[k_max:, k_max:] = _weighted_gram(
        data.features, np.bincount(data.cell_unit, weights=h_ee, minlength=n_units)
    ) - np.diag(pen)
    scores = None
    if per_query:
        q_of_cell = data.unit_query[data.cell_unit]
        score_u = np.bincount(
            q_of_cell * k_max + data.cell_rank0, weights=g_u, minlength=data.n_queries * k_max
        ).reshape(data.n_queries, k_max)
        to_query = sparse.csr_matrix((unit_g, (data.unit_query, np.arange(n_units))), shape=(data.n_queries, n_units))
        scores = np.hstack([score_u, np.asarray(to_query @ data.features)])
    return value, grad, hess, scores


# An estimate whose p_k all lie within FLAT_SPREAD of each other calls a fall of the click rate
# with rank wholly relevance; below 5% over the ranks estimated no position bias worth
# correcting is left, so a flat estimate there is either the truth or a collapse.
FLAT_SPREAD = 0.05
# The click rate "clearly falls" when ranks K/2+1..K are clicked at most FALL_RATIO times as
# often as rank 1 and the gap is FALL_Z binomial standard errors wide: not noise, and large
# enough that a flat estimate has put a real position effect into relevance.
FALL_RATIO = 0.8
FALL_Z = 4.0
# Below this share of impressions on (query, document)s shown at two or more ranks the log holds
# (almost) no within-document contrast between ranks: each document's clicks come from one rank.
RANK_VARIATION = 0.05

ALTERNATIVES = (
    "harvest on a log of two or more rankers (`cltr simulate --rankers 2`, `--method harvest`), a "
    "swap-k or randomize-top-k intervention (`cltr simulate --intervention ...`, `--method swap`), "
    "or EM with `--relevance-model logistic`"
)


def rank_variation(data: _EMData) -> float:
    """Share of the impressions (ranks <= K) that are of (query, document)s shown at two or more
    ranks: 0 on a deterministic single ranker's log, where rank is a function of the document."""
    ranks_per_unit = np.bincount(data.cell_unit, minlength=len(data.unit_weight))
    moved = ranks_per_unit[data.cell_unit] > 1
    return float(data.cell_impressions[moved].sum() / data.cell_impressions.sum())


# The rules of em_identification, as stored in an estimate's info (``identification_version``):
# an estimate stored without it, or under older rules, is checked again from its stored p_k
# (``em_identification_of``). 2: cross-fitted trees on a one-ranker log are not identified.
IDENTIFICATION_VERSION = 2


def em_identification_of(
    query: np.ndarray,
    doc: np.ndarray,
    rank: np.ndarray,
    impressions: np.ndarray,
    clicks: np.ndarray,
    X: np.ndarray,
    propensity: np.ndarray,
    *,
    flexible: bool,
    cross_fit: int = 1,
) -> tuple[dict, list[str]]:
    """``em_identification`` of an EM estimate's ``propensity`` (p_1..p_K, as stored) on the
    impressions it was estimated from (``em_propensities``' table and ``X``): what an
    estimate stored before the check, or under older rules, is checked by."""
    t = _check_table(query, doc, rank, None, impressions, clicks)
    propensity = np.asarray(propensity, dtype=np.float64)
    return em_identification(
        _em_data(t, _check_features(X, t.doc), len(propensity)), propensity, flexible=flexible, cross_fit=int(cross_fit)
    )


def em_identification(
    data: _EMData, propensity: np.ndarray, *, flexible: bool, cross_fit: int = 1
) -> tuple[dict, list[str]]:
    """Whether an EM estimate is identified by the log or only by its relevance model's form.

    Two findings, each a warning naming what to use instead (``ALTERNATIVES``):

    - *collapsed*: every p_k within ``FLAT_SPREAD`` of the others while the click rate of ranks
      K/2+1..K is at most ``FALL_RATIO`` of rank 1's, by ``FALL_Z`` standard errors, on a log
      with less than ``RANK_VARIATION`` of its impressions on documents shown at several ranks:
      the whole fall of clicks with rank was put into relevance with nothing in the log to
      say so (on a log with rank variation a flat estimate is the data's verdict);
    - *not identified*: a fitted (flexible) relevance model on such a log. Each document is
      clicked at one rank only, so a model that can fit each (query, document)'s click rate
      from its features (trees can, where the ranker scores the same features) explains the
      clicks at any propensity curve; the estimate is whatever the fitter's form selects.
      Cross-fitted (``cross_fit`` > 1) it cannot fit a document's own clicks, but what it
      carries over from the other queries is still a fitted form: the estimate is identified
      only by that form across queries (a warning in its own words).

    Returns (diagnostics, warnings): ``rank_variation``, the click rates ``click_rate_top`` and
    ``click_rate_bottom``, ``collapsed`` and ``identified`` (False on either finding).
    """
    k0, n, c = data.cell_rank0, data.cell_impressions, data.cell_clicks
    k_max = data.max_rank
    variation = rank_variation(data)
    top = k0 == 0
    bottom = k0 >= k_max // 2
    n_top, n_bottom = n[top].sum(), n[bottom].sum()
    rate_top = c[top].sum() / n_top if n_top > 0 else np.nan
    rate_bottom = c[bottom].sum() / n_bottom if n_bottom > 0 else np.nan
    pooled = (c[top].sum() + c[bottom].sum()) / max(n_top + n_bottom, 1.0)
    se = np.sqrt(pooled * (1.0 - pooled) * (1.0 / max(n_top, 1.0) + 1.0 / max(n_bottom, 1.0)))
    falls = bool(k_max >= 2 and rate_bottom <= FALL_RATIO * rate_top and rate_top - rate_bottom >= FALL_Z * se)
    flat = bool(np.max(propensity) - np.min(propensity) < FLAT_SPREAD)
    one_rank = variation < RANK_VARIATION
    collapsed = flat and falls and one_rank
    warnings = []
    where = (
        f"on this log {variation:.1%} of the impressions are of (query, document)s shown at more than one rank, "
        f"so the split of clicks into examination x relevance is identified only by the relevance model's "
        f"functional form"
    )
    if collapsed:
        warnings.append(
            f"EM collapsed: every p_k is within {FLAT_SPREAD:g} of the others (p_k = "
            f"{np.min(propensity):.3f}..{np.max(propensity):.3f} at ranks 1..{k_max}) while the click "
            f"rate falls from {rate_top:.3f} at rank 1 to {rate_bottom:.3f} at ranks "
            f"{k_max // 2 + 1}..{k_max}: the whole fall was put into relevance; {where}. This estimate "
            f"is not a propensity curve; use {ALTERNATIVES}"
        )
    elif flexible and one_rank and cross_fit > 1:
        warnings.append(
            f"identified only by the relevance model's form across queries: the trees, cross-fitted over "
            f"{cross_fit} folds of the queries, cannot learn a document's own clicks, but its relevance "
            f"is what trees fitted on other queries predict from features that also decide its rank; "
            f"{where}. Check it against {ALTERNATIVES}"
        )
    elif flexible and one_rank:  # a collapse already says it
        warnings.append(
            f"not identified: a fitted relevance model (trees) can learn each (query, document)'s click "
            f"rate, its rank's examination included, from features that also decide its rank; {where}. "
            f"Do not trust this estimate; use {ALTERNATIVES}"
        )
    diagnostics = {
        "rank_variation": variation,
        "click_rate_top": float(rate_top),
        "click_rate_bottom": float(rate_bottom),
        "collapsed": collapsed,
        "identified": not (collapsed or (flexible and one_rank)),
    }
    return diagnostics, warnings


def em_propensities(
    query: np.ndarray,
    doc: np.ndarray,
    rank: np.ndarray,
    impressions: np.ndarray,
    clicks: np.ndarray,
    X: np.ndarray,
    *,
    max_rank: int | None = None,
    iterations: int = 100,
    tol: float = 1e-6,
    l2: float = 1.0,
    newton_steps: int = 1,
    relevance_model: str | Callable[..., np.ndarray] = "logistic",
    cross_fit: int = 1,
    classes: int | None = None,
    band: str = "refit",
    bootstrap: int = 200,
    level: float = 0.95,
    rng: np.random.Generator | np.random.SeedSequence | int,
) -> PropensityEstimate:
    """Propensities by regression EM for the position-based model, from one ranker's log.

    Wang, Golbandi, Bendersky, Metzler and Najork (WSDM 2018). Clicks follow
    Pr(C = 1 | q, d, k) = theta_k gamma(q, d) with hidden examination E ~ Bernoulli(theta_k) and
    relevance R ~ Bernoulli(gamma(q, d)). Each iteration:

    E-step, per impression at rank k of (q, d) (a click means E = R = 1):

        Pr(E = 1 | C = 0) = theta_k (1 - gamma) / (1 - theta_k gamma),
        Pr(R = 1 | C = 0) = gamma (1 - theta_k) / (1 - theta_k gamma);

    M-step:

        theta_k = Σ_{impressions at k} [C + (1 - C) Pr(E = 1 | C = 0)] / #impressions at k,

    and gamma(q, d) = sigma(w_0 + x_d . w), a logistic regression (the paper's "regression"
    step, here logistic instead of boosted trees) of the posterior relevance
    C + (1 - C) Pr(R = 1 | C = 0) on the document's standardised features, weighted by
    impressions, ridge-penalised (``l2``, intercept free) and fitted by ``newton_steps``
    damped Newton (IRLS) steps from the previous coefficients (a generalised EM step).
    The estimate reports p_k = theta_k / theta_1.

    Plain EM creeps here (hundreds of iterations to 1e-6, because position and relevance
    explain the clicks almost interchangeably), so every EM step is followed by a Newton
    step on the same objective, the marginal log-likelihood
    Σ c log(theta_k gamma) + (n - c) log(1 - theta_k gamma) - l2/2 |w|^2, kept only when it
    raises it (projected onto theta <= 1); once such steps succeed they continue alone.
    The result is EM's fixed point, in about ten iterations.

    Identifiability: with a single ranker every document sits at one rank, so a free
    relevance per (q, d) would absorb any propensity curve (position and relevance are
    confounded). What makes theta identifiable is that the relevance model is a function of
    the features shared across ranks: documents with similar features appear at different
    ranks in different queries. The estimate is only as good as that model; if relevance is
    not (close to) logistic in the features, the misfit leaks into theta. Intervention
    harvesting (``harvest_propensities``) needs no relevance model but needs >= 2 rankers.

    Parameters
    ----------
    query, doc, rank, impressions, clicks : array_like of int, shape (m,)
        The impression table (any ranker column is simply not used: rows are pooled);
        0 <= clicks <= impressions; ``doc`` indexes the rows of ``X``.
    X : ndarray, shape (n_docs, n_features)
        Document features; rows indexed by ``doc``. Features are standardised over the
        table's (query, document)s; constant ones are dropped.
    max_rank : int, optional
        K (default: the largest rank); rows below rank K are ignored.
    iterations : int, default 100
        Maximum iterations (EM step and/or Newton step each).
    tol : float, default 1e-6
        Stop when no p_k = theta_k / theta_1 moves by more than this in an iteration.
    l2 : float, default 1.0
        Ridge penalty on the standardised coefficients (0.5 * l2 * |w|^2 against a
        log-likelihood summed over impressions, as scikit-learn's C = 1 / l2).
    newton_steps : int, default 1
        IRLS steps of the logistic regression per M-step.
    relevance_model : "logistic" or callable, default "logistic"
        The relevance M-step. ``"logistic"``: the ridge logistic regression above. A callable
        ``fit(features, label, weight) -> logits`` (features (n_units, d) standardised, label
        (n_units,) the posterior relevance in [0, 1], weight (n_units,) impressions; logits
        (n_units,) its fitted log-odds of relevance at the same rows) is refitted from scratch
        at every M-step, as the paper's gradient-boosted trees are (the pipeline passes
        LightGBM, ``cltr.methods.trees.soft_label_trees``; the core imports no learner). Its
        step is kept only as far as it raises the M-step objective (``_em_tree_step``), and a
        Newton step along (log theta, a + b logits) follows (``_em_fit_trees``). ``l2`` and
        ``newton_steps`` then do not apply. ``"classes"``: a latent-class relevance model
        (``cltr.core.propensity.em_classes``): each (query, document) has one of ``classes``
        relevance levels shared by every rank, with class probabilities a ridge (multinomial)
        logistic regression on its features and rank; identified by each document's repeated
        impressions, not by relevance being a function of the features (``l2`` is its
        ridge penalty; ``newton_steps`` does not apply).
    cross_fit : int, default 1
        With a fitted relevance model: 1 refits it on every (query, document) and takes its
        logits there; F > 1 cross-fits it over F folds of the queries (query q in fold q mod F):
        each fold's logits come from ``fit(features, label, weight, predict=held_out_features)``
        fitted on the other folds. On a single deterministic ranker's log each document is
        shown at one rank, and an in-sample flexible model learns the position effect as
        relevance (``em_identification``); cross-fitting keeps it from fitting a document's
        own clicks.
    classes : int, optional
        ``relevance_model="classes"`` only: the number of relevance levels m >= 2 (default 2).
    band : {"refit", "one-step"}, default "refit"
        ``"refit"``: each bootstrap replicate re-runs the whole EM (relevance model included)
        on the resampled queries, warm-started at the full-data estimate (the latent classes:
        from every start, as the estimate itself, each query drawn m times as m copies of its
        documents), so the band holds the relevance model's variance too. ``"one-step"``
        (logistic only): the estimating-function bootstrap of the Notes, about ``bootstrap``
        times cheaper.
    bootstrap : int, default 200
        Resamples of the queries for the band; 0 gives nan bands.
    level : float, default 0.95
        Coverage of the percentile band.
    rng : numpy.random.Generator, SeedSequence or int
        Source of the bootstrap resamples (unused when ``bootstrap=0``).

    Returns
    -------
    PropensityEstimate
        ``method="regression-em"``; ``info`` holds ``iterations``, ``converged``,
        ``newton_steps`` (iterations that took a Newton step), ``log_likelihood``
        (marginal, penalised), ``documents`` ((query, document)s),
        ``impressions``, ``clicks``, ``features`` (used), ``examination`` (theta_k, not
        normalised), ``relevance_coefficients`` (intercept first, standardised features)
        , ``relevance_model``, ``band``, ``bootstrap``, ``bootstrap_unconverged``
        (refit replicates that stopped at ``iterations``), ``bootstrap_one_fold`` (refit
        replicates left out of the band because their queries all fall in one cross-fitting
        fold, which a resample of few queries can draw), and ``em_identification``'s
        ``rank_variation``, ``click_rate_top``, ``click_rate_bottom``, ``collapsed``,
        ``identified`` and ``warnings`` (a list of sentences; empty where none applies), and
        ``identification_version`` (``IDENTIFICATION_VERSION``, the rules they follow).

    Notes
    -----
    ``band="one-step"`` uses the estimating-function bootstrap (Hu and Kalbfleisch 2000),
    which costs one linear solve for all replicates: a replicate is
    one Newton step from the full-data estimate on the resampled score,
    phi_b = phi_hat - H^-1 Σ_q m_bq s_q, with s_q the per-query scores and H the Hessian
    of the marginal log-likelihood in phi = (log theta, w), both at the estimate (a theta_k
    held at 1 stays there). It agrees with full re-estimation to first order; log theta
    makes the poorly identified common scale of theta (traded against the intercept)
    cancel from p_k = theta_k / theta_1. It reflects the sampling noise of the clicks given
    the logistic model; it cannot hold the variance of a model refitted by a greedy learner,
    hence ``"refit"``. Neither band covers the bias of a misspecified relevance model.

    Raises
    ------
    ValueError
        On a malformed table or X, on a rank in 1..K without impressions, and on a table
        without clicks.
    """
    t = _check_table(query, doc, rank, None, impressions, clicks)
    k_max = _check_options(max_rank, t.rank, bootstrap, level, minimum=1)
    X = _check_features(X, t.doc)
    if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) or iterations < 1:
        raise ValueError(f"iterations must be an integer >= 1, found {iterations!r}")
    if not tol > 0:
        raise ValueError(f"tol must be positive, found {tol!r}")
    if not l2 >= 0:
        raise ValueError(f"l2 must be >= 0, found {l2!r}")
    if isinstance(newton_steps, bool) or not isinstance(newton_steps, (int, np.integer)) or newton_steps < 1:
        raise ValueError(f"newton_steps must be an integer >= 1, found {newton_steps!r}")
    trees = callable(relevance_model)
    latent = not trees and relevance_model == "classes"
    if not trees and relevance_model not in ("logistic", "classes"):
        raise ValueError(
            f"relevance_model must be 'logistic', 'classes' or a callable fit(features, label, weight) "
            f"-> logits, found {relevance_model!r}"
        )
    if classes is not None and not latent:
        raise ValueError(
            f"classes applies to relevance_model 'classes' only, found classes = {classes!r} with "
            f"relevance_model {relevance_model!r}"
        )
    n_classes = 2 if classes is None else classes
    if latent and (isinstance(n_classes, bool) or not isinstance(n_classes, (int, np.integer)) or n_classes < 2):
        raise ValueError(f"classes must be an integer >= 2, found {classes!r}")
    n_classes = int(n_classes)
    if band not in ("refit", "one-step"):
        raise ValueError(f"band must be 'refit' or 'one-step', found {band!r}")
    if isinstance(cross_fit, bool) or not isinstance(cross_fit, (int, np.integer)) or cross_fit < 1:
        raise ValueError(f"cross_fit must be an integer >= 1, found {cross_fit!r}")
    if (trees or latent) and band == "one-step":
        raise ValueError(
            "band='one-step' needs the logistic relevance model's finite parameters; use band='refit' "
            "with a fitted or latent-class relevance model"
        )
    data = _em_data(t, X, k_max)
    if data.cell_clicks.sum() <= 0:
        raise ValueError("the table has no clicks at ranks <= max_rank; propensities are not identified")
    if trees and cross_fit > data.n_queries:
        raise ValueError(
            f"cross_fit = {cross_fit} folds of the queries need at least {cross_fit} queries, found {data.n_queries}"
        )
    pen = _penalty(data.features.shape[1], float(l2))

    def fit(d: _EMData, start=None):
        """(theta, coef or None, eta, iterations, converged, newton) on data ``d``; for the latent
        classes coef is (levels, W) and eta is None."""
        if latent:
            from cltr.core.propensity import em_classes

            # logistic EM's estimate is one of the starts (``classes_starts``), not for a warm start
            logistic = (
                None if start is not None else _em_fit(d, iterations=100, tol=1e-6, l2=float(l2), newton_steps=1)[0]
            )
            theta, levels, W, *rest = em_classes.classes_fit(
                d,
                classes=n_classes,
                iterations=int(iterations),
                tol=float(tol),
                l2=float(l2),
                start=start,
                logistic_theta=logistic,
            )
            return theta, (levels, W), None, *rest, 0
        if trees:
            theta, eta, *rest = _em_fit_trees(
                d, relevance_model, iterations=int(iterations), tol=float(tol), folds=int(cross_fit), start=start
            )
            return theta, None, eta, *rest
        theta, coef, *rest = _em_fit(
            d, iterations=int(iterations), tol=float(tol), l2=float(l2), newton_steps=int(newton_steps), start=start
        )
        return theta, coef, d.features @ coef, *rest

    theta, coef, eta, iteration, converged, newton = fit(data)
    propensity = theta / theta[0]
    if latent:
        from cltr.core.propensity import em_classes

        prior = em_classes.prior_features(data)
        levels, W = coef
        loglik = em_classes.classes_loglik(data, prior, theta, levels, W, _penalty(prior.shape[1], float(l2)))
    else:
        loglik = _em_loglik(data, theta, np.zeros(0) if trees else coef, eta, np.zeros(0) if trees else pen)
    low, high = np.full(k_max, np.nan), np.full(k_max, np.nan)
    unconverged = one_fold = 0
    if bootstrap > 0 and band == "refit":
        counts = _query_resamples(data.n_queries, int(bootstrap), rng)
        replicates = np.full((int(bootstrap), k_max), np.nan)
        for b in range(int(bootstrap)):
            # the latent-class likelihood is not linear in a unit's counts: a query drawn twice
            # is two copies of its units, not one unit with doubled counts (``_em_resample_copies``)
            resampled, kept = (_em_resample_copies(data, counts[b]), None) if latent else _em_resample(data, counts[b])
            shown = np.bincount(resampled.cell_rank0, weights=resampled.cell_impressions, minlength=k_max) > 0
            if not shown.all() or resampled.cell_clicks.sum() <= 0:
                continue  # a rank the resample never shows: its theta is not identified there
            if trees and cross_fit > 1 and _fold_count(resampled.unit_query, int(cross_fit)) < 2:
                # the queries drawn all fall in one fold (few queries): nothing to cross-fit from
                one_fold += 1
                continue
            # the latent classes: the whole estimate again, every start of ``classes_starts``
            # (logistic EM's fit on the replicate included), not a warm start at the full-data
            # fit: each rank's theta_k has fixed points of its own, and a replicate started there
            # stays in the full data's basin where the estimate, re-run, would pick another
            # (at rank 10 on MQ2008 logs, by up to a quarter of p_10)
            rep = fit(resampled, None if latent else (theta, eta[kept] if trees else coef))
            replicates[b] = rep[0] / rep[0][0]
            unconverged += int(not rep[4])
        low, high = _percentile_band(replicates, propensity, level)
    elif bootstrap > 0:
        log_theta = np.log(theta)
        _, full_grad, hess, scores = _em_derivatives(data, log_theta, coef, pen, per_query=True)
        counts = _query_resamples(data.n_queries, int(bootstrap), rng)
        grad = counts @ scores
        grad[:, k_max:] -= pen * coef
        # A one-step replicate on the coordinates free at the estimate (theta_k held at 1 stays
        # there); lstsq guards the near-flat common-scale direction.
        free = _em_free(log_theta, full_grad)
        steps = np.zeros_like(grad)
        steps[:, free] = np.linalg.lstsq(-hess[np.ix_(free, free)], grad[:, free].T, rcond=1e-12)[0].T
        rep_log_theta = log_theta + steps[:, :k_max]
        replicates = np.exp(rep_log_theta - rep_log_theta[:, :1])
        low, high = _percentile_band(replicates, propensity, level)

    info = {
        "iterations": int(iteration),
        "converged": bool(converged),
        "newton_steps": int(newton),
        "log_likelihood": loglik,
        "documents": len(data.unit_weight),
        "impressions": float(data.cell_impressions.sum()),
        "clicks": float(data.cell_clicks.sum()),
        "features": int(data.features.shape[1] - 1),
        "examination": [float(v) for v in theta],
        "relevance_model": "fitted" if trees else "classes" if latent else "logistic",
        "cross_fit": int(cross_fit) if trees else 1,
        "relevance_coefficients": [] if trees or latent else [float(v) for v in coef],
        "band": band,
        "bootstrap": int(bootstrap),
        "bootstrap_unconverged": unconverged,
        "bootstrap_one_fold": one_fold,
    }
    if latent:
        repeated = em_classes.repeated_share(data, n_classes)
        info.update(
            classes=n_classes,
            relevance_levels=[float(v) for v in levels],
            class_coefficients=[[float(v) for v in row] for row in W],
            repeated_share=repeated,
        )
    diagnostics, warnings = em_identification(data, propensity, flexible=trees, cross_fit=int(cross_fit))
    if latent and repeated < 0.5:
        warnings.append(
            f"the latent classes are identified by each (query, document)'s repeated impressions at a "
            f"rank (at least {2 * n_classes - 1} for {n_classes} classes); only "
            f"{repeated:.1%} of the impressions are in such cells, so the estimate rests "
            f"mostly on the class probabilities' logistic form. Check it against {ALTERNATIVES}"
        )
    info.update(diagnostics, warnings=warnings, identification_version=IDENTIFICATION_VERSION)
    return PropensityEstimate(
        rank=np.arange(1, k_max + 1, dtype=np.int64),
        propensity=propensity,
        low=low,
        high=high,
        level=float(level),
        method="regression-em",
        info=info,
    )
