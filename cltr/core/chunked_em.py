"""Regression EM (logistic relevance) with its E-step and sufficient statistics computed per
chunk of whole queries, and its M-steps done centrally.

Legend (``cltr.core.propensity.em_propensities``; Wang et al., WSDM 2018; notation of
``cltr.core.propensity``):
    cells (q, d, k), units (q, d)      -> a chunk's ``_EMData``: every cell and unit belongs to one
                                          query, so to one chunk
    mean, std of the unit features     -> ``em_chunk_summary`` (Σ x), ``em_chunk_spread`` (Σ (x - mean)^2)
    E-step; Σ_cells at k of C + (1 - C) Pr(E = 1 | C = 0)
                                       -> ``em_chunk_em_step``: the theta M-step's numerator (K,)
    Σ_u P_u eta_u - W_u log(1 + e^eta_u), its gradient X'(P - W gamma) and Hessian X' diag(W gamma (1 - gamma)) X
                                       -> ``em_chunk_relevance`` (the relevance M-step's IRLS terms;
                                          the posteriors P_u are recomputed from the E-step's parameters)
    marginal log-likelihood, gradient and Hessian in (log theta, w)
                                       -> ``em_chunk_derivatives`` (``_em_derivatives`` of the chunk)
    per-query scores s_q times the resample counts m_bq
                                       -> ``em_chunk_scores`` (the one-step band)

The logistic relevance model makes every quantity EM needs a sum over units and cells, so
over chunks: a chunk keeps its cells and its units' standardised features where the mapper
put it (``cltr.core.chunked.LocalMapper`` here, ``cltr.distributed.DaskMapper`` on a cluster),
and each step of ``_em_fit``'s iteration (the EM step, the IRLS step of the relevance
model, the projected Newton step on the marginal likelihood, each line search) is one map
whose (K + 1 + d)-sized results are added here in chunk order; the solves are done here.
The control flow is ``_em_fit``'s, step for step, and line searches evaluate their trial
points in at most two maps (the full step, then all its halvings) keeping the first that
``_em_fit`` would keep, so the estimate is the in-process one to rounding. The refit band
re-runs this EM on every replicate's resampled chunks (``_em_resample`` where each chunk
lives); the one-step band needs one more map. The tree and latent-class relevance models
are fitted by a learner over all units at once and are not chunked here
(docs/how-to/distributed.md). This module imports only numpy and ``cltr.core``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from cltr.core.chunked_propensity import harvest_chunks
from cltr.core.clicks import Impressions
from cltr.core.propensity.em import (
    IDENTIFICATION_VERSION,
    _check_features,
    _em_derivatives,
    _em_free,
    _em_loglik,
    _em_newton_direction,
    _em_resample,
    _em_start,
    _EMData,
    _logistic_objective,
    _penalty,
    _weighted_gram,
    em_identification,
)
from cltr.core.propensity.estimate import (
    PropensityEstimate,
    _check_options,
    _check_table,
    _factorize,
    _percentile_band,
    _query_resamples,
    _rows,
)

__all__ = [
    "chunked_em_propensities",
    "em_chunk_cells",
    "em_chunk_em_step",
    "em_chunk_relevance",
    "em_chunk_derivatives",
    "em_chunk_loglik",
]

# halvings of a line search after its full step, as in _logistic_newton (30 tries) and
# _em_newton_update (10 tries)
_RELEVANCE_TRIES = 30
_NEWTON_TRIES = 10


@dataclass
class EMChunk:
    """One chunk's cells and units (``_EMData``, queries numbered from 0 within the chunk),
    its units' raw feature rows ``x`` and their rows of X (``unit_doc``, for error messages)."""

    data: _EMData
    x: np.ndarray
    unit_doc: np.ndarray


def em_chunk_cells(part: tuple[Impressions, np.ndarray, np.ndarray], max_rank: int) -> EMChunk:
    """The cells of a chunk ``part`` = (its rows, all with rank <= K and impressions > 0, whose
    ``doc`` indexes X_rows; X_rows, the rows doc_ids of X; doc_ids), numbered as ``_em_data``
    numbers them within the chunk."""
    t, X_rows, doc_ids = part
    k_max = max_rank
    queries, qi = _factorize(t.query)
    n_docs = len(X_rows)
    units, unit = _factorize(qi * np.int64(n_docs) + t.doc)
    cell, cell_inv = _factorize(unit * k_max + (t.rank - 1))
    cell_imp = np.bincount(cell_inv, weights=t.impressions)
    cell_unit = cell // k_max
    data = _EMData(
        n_queries=len(queries),
        max_rank=k_max,
        cell_unit=cell_unit,
        cell_rank0=cell % k_max,
        cell_impressions=cell_imp,
        cell_clicks=np.bincount(cell_inv, weights=t.clicks),
        unit_query=units // n_docs,
        unit_weight=np.bincount(cell_unit, weights=cell_imp, minlength=len(units)),
        features=np.empty((len(units), 0)),
    )
    local = units % n_docs
    return EMChunk(data=data, x=X_rows[local], unit_doc=doc_ids[local])


def em_chunk_summary(chunk: EMChunk) -> dict:
    """Queries, units, feature sums and, per rank, impressions and clicks of units shown at
    one rank (row 0) and at two or more (row 1): what ``em_identification`` reads."""
    d = chunk.data
    k_max = d.max_rank
    finite = np.isfinite(chunk.x).all(axis=1)
    moved = (np.bincount(d.cell_unit, minlength=len(d.unit_weight)) > 1)[d.cell_unit].astype(np.int64)
    where = moved * k_max + d.cell_rank0
    return {
        "queries": d.n_queries,
        "units": len(d.unit_weight),
        "impressions": np.bincount(where, weights=d.cell_impressions, minlength=2 * k_max).reshape(2, k_max),
        "clicks": np.bincount(where, weights=d.cell_clicks, minlength=2 * k_max).reshape(2, k_max),
        "x_sum": chunk.x.sum(axis=0, dtype=np.float64),
        "bad_doc": int(chunk.unit_doc[~finite].min()) if not np.all(finite) else -1,
    }


def em_chunk_spread(chunk: EMChunk, mean: np.ndarray) -> np.ndarray:
    """Σ_units (x - mean)^2 per feature (as ``ndarray.std`` sums it)."""
    return np.sum(np.abs(chunk.x - mean) ** 2, axis=0)


def em_chunk_standardise(chunk: EMChunk, mean: np.ndarray, std: np.ndarray, varying: np.ndarray) -> _EMData:
    """The chunk's ``_EMData`` with features [1, standardised varying features] (``_em_data``'s)."""
    x = chunk.x
    features = np.empty((len(x), 1 + int(varying.sum())))
    features[:, 0] = 1.0
    np.subtract(x if np.all(varying) else x[:, varying], mean[varying], out=features[:, 1:])
    features[:, 1:] /= std[varying]
    return chunk.data._replace(features=features)


def em_chunk_rank_counts(data: _EMData) -> tuple[np.ndarray, float]:
    """(impressions per rank (K,), clicks) of a chunk."""
    return np.bincount(data.cell_rank0, weights=data.cell_impressions, minlength=data.max_rank), float(
        data.cell_clicks.sum()
    )


def _posterior_sums(data: _EMData, theta: np.ndarray, coef: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """E-step (``_posteriors``' Bayes rule): (Σ at each rank of C + (1 - C) Pr(E = 1 | C = 0)
    (K,), expected relevant impressions per unit P_u)."""
    from scipy.special import expit

    k0, unit = data.cell_rank0, data.cell_unit
    n, c = data.cell_impressions, data.cell_clicks
    skips = n - c
    gamma = expit(data.features @ coef)[unit]
    t = theta[k0]
    denom = 1.0 - t * gamma
    examined = t * (1.0 - gamma) / denom
    relevant = gamma * (1.0 - t) / denom
    numerator = np.bincount(k0, weights=c + skips * examined, minlength=data.max_rank)
    positives = np.bincount(unit, weights=c + skips * relevant, minlength=len(data.unit_weight))
    return numerator, positives


def em_chunk_relevance(
    data: _EMData, theta_e: np.ndarray, coef_e: np.ndarray, coef: np.ndarray
) -> tuple[float, np.ndarray, np.ndarray]:
    """The chunk's terms of the relevance M-step at ``coef`` (posteriors of the E-step at
    (``theta_e``, ``coef_e``)): objective (unpenalised), gradient (d,), Hessian (d, d) as
    ``_logistic_newton`` forms them."""
    from scipy.special import expit

    positives = _posterior_sums(data, theta_e, coef_e)[1]
    eta = data.features @ coef
    gamma = expit(eta)
    zero = np.zeros(len(coef))
    value = _logistic_objective(eta, positives, data.unit_weight, coef, zero)
    grad = data.features.T @ (positives - data.unit_weight * gamma)
    hess = _weighted_gram(data.features, data.unit_weight * gamma * (1.0 - gamma))
    return value, grad, hess


def em_chunk_relevance_values(
    data: _EMData, theta_e: np.ndarray, coef_e: np.ndarray, trials: list[np.ndarray]
) -> np.ndarray:
    """The relevance M-step's objective (unpenalised) at each trial coefficient vector."""
    positives = _posterior_sums(data, theta_e, coef_e)[1]
    zero = np.zeros(len(coef_e))
    return np.array(
        [_logistic_objective(data.features @ trial, positives, data.unit_weight, trial, zero) for trial in trials]
    )


def em_chunk_em_step(data: _EMData, theta: np.ndarray, coef: np.ndarray):
    """The theta M-step's numerator (K,) and ``em_chunk_relevance`` at the E-step's own ``coef``."""
    return _posterior_sums(data, theta, coef)[0], *em_chunk_relevance(data, theta, coef, coef)


def em_chunk_derivatives(data: _EMData, log_theta: np.ndarray, coef: np.ndarray):
    """``_em_derivatives`` of the chunk, unpenalised: (value, gradient (P,), Hessian (P, P))."""
    return _em_derivatives(data, log_theta, coef, np.zeros(len(coef)))[:3]


def em_chunk_loglik(data: _EMData, trials: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """The unpenalised marginal log-likelihood at each trial (theta, coef)."""
    zero = np.zeros(len(trials[0][1])) if trials else np.zeros(0)
    return np.array([_em_loglik(data, theta, coef, data.features @ coef, zero) for theta, coef in trials])


def em_chunk_scores(data: _EMData, counts: np.ndarray, log_theta: np.ndarray, coef: np.ndarray):
    """``em_chunk_derivatives`` and the resampled score sums Σ_q m_bq s_q (B, P) of the chunk's
    queries (``counts``: (B, its queries))."""
    value, grad, hess, scores = _em_derivatives(data, log_theta, coef, np.zeros(len(coef)), per_query=True)
    return value, grad, hess, counts @ scores


def em_chunk_resample(data: _EMData, counts: np.ndarray) -> _EMData:
    """The chunk's data in a bootstrap replicate (``_em_resample``; ``counts``: its queries' draws)."""
    return _em_resample(data, counts)[0]


def _sum(values: list) -> np.ndarray:
    total = np.array(values[0], dtype=np.float64, copy=True)
    for v in values[1:]:  # in chunk order
        total += v
    return total


class _Engine:
    """The chunked data and the sums over it that one EM run asks for."""

    def __init__(self, mapper, handles: list, per_rank: np.ndarray, pen: np.ndarray):
        self.mapper, self.handles, self.per_rank, self.pen = mapper, handles, per_rank, pen

    def _gather(self, function, **same) -> list:
        return self.mapper.gather(self.mapper.map(function, self.handles, **same))

    def em_step(self, theta: np.ndarray, coef: np.ndarray, newton_steps: int) -> tuple[np.ndarray, np.ndarray]:
        """``_em_step``: the theta M-step, then ``newton_steps`` IRLS steps of the relevance model
        (``_logistic_newton``) on the posteriors at (theta, coef)."""
        pen = self.pen
        parts = self._gather(em_chunk_em_step, theta=theta, coef=coef)
        new_theta = np.clip(_sum([p[0] for p in parts]) / self.per_rank, 1e-12, 1.0 - 1e-12)
        value = float(sum(p[1] for p in parts) - 0.5 * np.sum(pen * coef * coef))
        theta_e, coef_e = theta, coef
        for s in range(newton_steps):
            if s > 0:
                parts = [
                    (None, *p) for p in self._gather(em_chunk_relevance, theta_e=theta_e, coef_e=coef_e, coef=coef)
                ]
            grad = _sum([p[2] for p in parts]) - pen * coef
            hess = _sum([p[3] for p in parts])
            hess[np.diag_indices_from(hess)] += pen + 1e-10 * (1.0 + np.abs(np.diag(hess)))
            step = np.linalg.solve(hess, grad)
            trials = [coef + step / 2.0**j for j in range(_RELEVANCE_TRIES)]
            found = self._first(
                trials, partial(self._relevance_values, theta_e, coef_e), floor=value - 1e-12 * abs(value)
            )
            if found is None:
                break
            coef, value = found
        return new_theta, coef

    def _relevance_values(self, theta_e, coef_e, trials) -> np.ndarray:
        values = _sum(self._gather(em_chunk_relevance_values, theta_e=theta_e, coef_e=coef_e, trials=trials))
        return np.array([v - 0.5 * np.sum(self.pen * t * t) for v, t in zip(values, trials, strict=True)])

    @staticmethod
    def _first(trials: list, evaluate, *, floor: float):
        """The first trial (and its value) whose value is at least ``floor``, the full step
        evaluated alone and its halvings in one more map: the trial a sequential line search keeps."""
        for batch in (trials[:1], trials[1:]):
            if not batch:
                continue
            for trial, value in zip(batch, evaluate(batch), strict=True):
                if value >= floor:
                    return trial, value
        return None

    def derivatives(self, log_theta: np.ndarray, coef: np.ndarray):
        """``_em_derivatives`` over all chunks (penalised): value, gradient, Hessian."""
        pen, k_max = self.pen, len(log_theta)
        parts = self._gather(em_chunk_derivatives, log_theta=log_theta, coef=coef)
        value = float(sum(p[0] for p in parts) - 0.5 * np.sum(pen * coef * coef))
        grad = _sum([p[1] for p in parts])
        grad[k_max:] -= pen * coef
        hess = _sum([p[2] for p in parts])
        hess[k_max:, k_max:] -= np.diag(pen)
        return value, grad, hess

    def newton_update(self, theta: np.ndarray, coef: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
        """``_em_newton_update``: one projected Newton step on the marginal likelihood, or none."""
        k_max = len(theta)
        log_theta = np.log(theta)
        value, grad, hess = self.derivatives(log_theta, coef)
        step = _em_newton_direction(log_theta, grad, hess)
        if step is None:
            return theta, coef, False
        trials = [
            (
                np.clip(np.exp(np.minimum(log_theta + t * step[:k_max], 0.0)), 1e-12, 1.0 - 1e-12),
                coef + t * step[k_max:],
            )
            for t in (2.0**-j for j in range(_NEWTON_TRIES))
        ]
        found = self._first(trials, self._loglik, floor=value)
        if found is None:
            return theta, coef, False
        (theta, coef), _ = found
        return theta, coef, True

    def _loglik(self, trials) -> np.ndarray:
        values = _sum(self._gather(em_chunk_loglik, trials=trials))
        return np.array([v - 0.5 * np.sum(self.pen * c * c) for v, (_, c) in zip(values, trials, strict=True)])

    def loglik(self, theta: np.ndarray, coef: np.ndarray) -> float:
        return float(self._loglik([(theta, coef)])[0])

    def fit(self, theta: np.ndarray, coef: np.ndarray, *, iterations: int, tol: float, newton_steps: int):
        """``_em_fit`` from (theta, coef): (theta, coef, iterations, converged, Newton iterations)."""
        theta, coef = theta.copy(), coef.copy()
        converged, iteration, newton, newton_worked = False, 0, 0, False
        for iteration in range(1, iterations + 1):  # noqa: B007 (its last value is the count returned)
            previous = theta / theta[0]
            moved = False
            if newton_worked:
                theta, coef, moved = self.newton_update(theta, coef)
            if not moved:
                theta, coef = self.em_step(theta, coef, newton_steps)
                theta, coef, newton_worked = self.newton_update(theta, coef)
            newton += int(moved or newton_worked)
            if np.max(np.abs(theta / theta[0] - previous)) < tol:
                converged = True
                break
        return theta, coef, iteration, converged, newton


def _summary_data(impressions: np.ndarray, clicks: np.ndarray, d: int) -> _EMData:
    """An ``_EMData`` of 2K cells standing for the whole log where only per-rank sums matter
    (``_em_start``, ``em_identification``): unit 0 holds rank k's impressions of units shown
    at two or more ranks (one cell per rank, so it counts as moved), unit k its impressions
    of units shown at one rank."""
    k_max = impressions.shape[1]
    ranks = np.arange(k_max)
    return _EMData(
        n_queries=1,
        max_rank=k_max,
        cell_unit=np.r_[np.zeros(k_max, dtype=np.int64), ranks + 1],
        cell_rank0=np.r_[ranks, ranks],
        cell_impressions=np.r_[impressions[1], impressions[0]],
        cell_clicks=np.r_[clicks[1], clicks[0]],
        unit_query=np.zeros(k_max + 1, dtype=np.int64),
        unit_weight=np.zeros(k_max + 1),
        features=np.zeros((k_max + 1, d)),
    )


def _chunk_inputs(t: Impressions, X: np.ndarray, chunks: int) -> list:
    """Each chunk's rows (doc renumbered to its own rows of X), its rows of X and their ids."""
    out = []
    for part in harvest_chunks(t, chunks):
        docs, local = _factorize(part.doc)
        out.append(
            (
                Impressions(
                    query=part.query,
                    doc=local,
                    rank=part.rank,
                    ranker=part.ranker,
                    impressions=part.impressions,
                    clicks=part.clicks,
                ),
                X[docs],
                docs,
            )
        )
    return out


def chunked_em_propensities(
    query,
    doc,
    rank,
    impressions,
    clicks,
    X,
    *,
    chunks: int,
    mapper,
    max_rank: int | None = None,
    iterations: int = 100,
    tol: float = 1e-6,
    l2: float = 1.0,
    newton_steps: int = 1,
    band: str = "refit",
    bootstrap: int = 200,
    level: float = 0.95,
    rng,
) -> PropensityEstimate:
    """``em_propensities`` with the logistic relevance model (same arguments, same estimate to
    rounding) with its E-step and sums done per chunk of whole queries on ``mapper``
    (``cltr.core.chunked.LocalMapper``, or ``cltr.distributed.DaskMapper``) and its M-steps
    here; ``info`` adds ``chunks``. It has no ``relevance_model``: the tree and latent-class
    models are fitted by a learner over all units at once, not from per-chunk sums."""
    t = _check_table(query, doc, rank, None, impressions, clicks)
    k_max = _check_options(max_rank, t.rank, bootstrap, level, minimum=1)
    X = _check_features(X, t.doc)
    for name, value in (("iterations", iterations), ("newton_steps", newton_steps)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, found {value!r}")
    if not tol > 0:
        raise ValueError(f"tol must be positive, found {tol!r}")
    if not l2 >= 0:
        raise ValueError(f"l2 must be >= 0, found {l2!r}")
    if band not in ("refit", "one-step"):
        raise ValueError(f"band must be 'refit' or 'one-step', found {band!r}")
    keep = (t.rank <= k_max) & (t.impressions > 0)
    if not np.any(keep):
        raise ValueError(f"no row has a rank <= max_rank = {k_max} and impressions > 0")

    cells = mapper.map(em_chunk_cells, mapper.scatter(_chunk_inputs(_rows(t, keep), X, chunks)), max_rank=k_max)
    summaries = mapper.gather(mapper.map(em_chunk_summary, cells))
    shown = _sum([s["impressions"] for s in summaries])
    clicked = _sum([s["clicks"] for s in summaries])
    per_rank = shown.sum(axis=0)
    if np.any(per_rank <= 0):
        missing = np.flatnonzero(per_rank <= 0) + 1
        raise ValueError(
            f"rank {missing[0]} has no impressions (ranks without any: "
            f"{', '.join(map(str, missing[:10]))}); lower max_rank to at most {missing[0] - 1}"
        )
    bad = [s["bad_doc"] for s in summaries if s["bad_doc"] >= 0]
    if bad:
        raise ValueError(f"X must be finite; row {min(bad)} of X (a document of the table) is not")
    n_units = sum(s["units"] for s in summaries)
    mean = _sum([s["x_sum"] for s in summaries]) / n_units
    std = np.sqrt(_sum(mapper.gather(mapper.map(em_chunk_spread, cells, mean=mean))) / n_units)
    varying = std > 1e-12 * np.maximum(1.0, np.abs(mean))
    handles = mapper.map(em_chunk_standardise, cells, mean=mean, std=std, varying=varying)
    if clicked.sum() <= 0:
        raise ValueError("the table has no clicks at ranks <= max_rank; propensities are not identified")

    d = 1 + int(varying.sum())
    pen = _penalty(d, float(l2))
    whole = _Engine(mapper, handles, per_rank, pen)
    summary = _summary_data(shown, clicked, d)
    start = _em_start(summary)

    def fit(engine: _Engine, theta: np.ndarray, coef: np.ndarray):
        return engine.fit(theta, coef, iterations=int(iterations), tol=float(tol), newton_steps=int(newton_steps))

    theta, coef, iteration, converged, newton = fit(whole, *start)
    propensity = theta / theta[0]
    loglik = whole.loglik(theta, coef)

    queries = [int(s["queries"]) for s in summaries]
    starts = np.concatenate([[0], np.cumsum(queries)])
    n_queries = int(starts[-1])
    low, high = np.full(k_max, np.nan), np.full(k_max, np.nan)
    unconverged = 0
    if bootstrap > 0 and band == "refit":
        counts = _query_resamples(n_queries, int(bootstrap), rng)
        replicates = np.full((int(bootstrap), k_max), np.nan)
        for b in range(int(bootstrap)):
            columns = [counts[b, starts[k] : starts[k + 1]] for k in range(len(queries))]
            resampled = mapper.map(em_chunk_resample, handles, columns)
            found = mapper.gather(mapper.map(em_chunk_rank_counts, resampled))
            rep_per_rank = _sum([f[0] for f in found])
            if not np.all(rep_per_rank > 0) or sum(f[1] for f in found) <= 0:
                continue  # a rank the resample never shows: its theta is not identified there
            rep = fit(_Engine(mapper, resampled, rep_per_rank, pen), theta, coef)
            replicates[b] = rep[0] / rep[0][0]
            unconverged += int(not rep[3])
        low, high = _percentile_band(replicates, propensity, level)
    elif bootstrap > 0:
        log_theta = np.log(theta)
        counts = _query_resamples(n_queries, int(bootstrap), rng)
        columns = [counts[:, starts[k] : starts[k + 1]] for k in range(len(queries))]
        parts = mapper.gather(mapper.map(em_chunk_scores, handles, columns, log_theta=log_theta, coef=coef))
        full_grad = _sum([p[1] for p in parts])
        full_grad[k_max:] -= pen * coef
        hess = _sum([p[2] for p in parts])
        hess[k_max:, k_max:] -= np.diag(pen)
        grad = _sum([p[3] for p in parts])
        grad[:, k_max:] -= pen * coef
        free = _em_free(log_theta, full_grad)
        steps = np.zeros_like(grad)
        steps[:, free] = np.linalg.lstsq(-hess[np.ix_(free, free)], grad[:, free].T, rcond=1e-12)[0].T
        rep_log_theta = log_theta + steps[:, :k_max]
        low, high = _percentile_band(np.exp(rep_log_theta - rep_log_theta[:, :1]), propensity, level)

    info = {
        "iterations": int(iteration),
        "converged": bool(converged),
        "newton_steps": int(newton),
        "log_likelihood": loglik,
        "documents": int(n_units),
        "impressions": float(per_rank.sum()),
        "clicks": float(clicked.sum()),
        "features": d - 1,
        "examination": [float(v) for v in theta],
        "relevance_model": "logistic",
        "cross_fit": 1,
        "relevance_coefficients": [float(v) for v in coef],
        "band": band,
        "bootstrap": int(bootstrap),
        "bootstrap_unconverged": unconverged,
        "bootstrap_one_fold": 0,
    }
    diagnostics, warnings = em_identification(summary, propensity, flexible=False)
    info.update(diagnostics, warnings=warnings, identification_version=IDENTIFICATION_VERSION, chunks=len(queries))
    return PropensityEstimate(
        rank=np.arange(1, k_max + 1, dtype=np.int64),
        propensity=propensity,
        low=low,
        high=high,
        level=float(level),
        method="regression-em",
        info=info,
    )
