"""Intervention harvesting and the AllPairs estimator (Agarwal et al., WSDM 2019). The notation is
the package's (``cltr.core.propensity``)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from cltr.core.clicks import Impressions
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

# --------------------------------------------------------------------------- intervention harvesting


NO_INTERVENTIONS = (
    "no (query, document) was shown at two different ranks <= {k_max}: the rankers' logs hold no interventions"
)


class _HarvestStatistics(NamedTuple):
    """Weighted counts per (query, ordered rank pair), the sufficient statistics of AllPairs."""

    n_queries: int
    max_rank: int
    entry_query: np.ndarray  # (E,) query index 0..Q-1
    entry_pair: np.ndarray  # (E,) (k - 1) * K + (k' - 1)
    entry_clicks: np.ndarray  # (E,) Σ w(q,d,k) clicks at k over the query's documents in S_{k,k'}
    entry_impressions: np.ndarray
    n_intervention_docs: int  # (query, document)s shown at >= 2 distinct ranks <= K
    sessions: np.ndarray  # (R,) n_i
    rankers: np.ndarray  # (R,) ranker ids

    def totals(self, counts: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(pair_clicks, pair_impressions), each (K, K); with ``counts`` (Q,), queries weighted by it."""
        k = self.max_rank
        weight = 1.0 if counts is None else counts[self.entry_query]
        c = np.bincount(self.entry_pair, weights=self.entry_clicks * weight, minlength=k * k)
        n = np.bincount(self.entry_pair, weights=self.entry_impressions * weight, minlength=k * k)
        return c.reshape(k, k), n.reshape(k, k)

    def replicate_totals(self, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Totals for many resamples at once: ``counts`` (B, Q) -> two arrays (B, K, K)."""
        from scipy import sparse

        k, q = self.max_rank, self.n_queries
        shape = (q, k * k)
        c = sparse.csr_matrix((self.entry_clicks, (self.entry_query, self.entry_pair)), shape=shape)
        n = sparse.csr_matrix((self.entry_impressions, (self.entry_query, self.entry_pair)), shape=shape)
        b = counts.shape[0]
        return (np.asarray(c.T @ counts.T).T.reshape(b, k, k), np.asarray(n.T @ counts.T).T.reshape(b, k, k))


def _harvest_rows(t: Impressions, max_rank: int) -> Impressions:
    """The rows AllPairs reads: rank <= max_rank and impressions > 0."""
    return _rows(t, (t.rank <= max_rank) & (t.impressions > 0))


def _ranker_sessions(t: Impressions, max_rank: int) -> tuple[np.ndarray, np.ndarray]:
    """(ranker ids, sorted; n_i, the sessions of each) over the rows AllPairs reads.

    A session of ranker i shows one document at each displayed rank, so the sessions of a
    (query, ranker) are its impressions summed over documents at its most-shown rank, and
    n_i is a sum over queries: the sum of its values over any split of the queries."""
    t = _harvest_rows(t, max_rank)
    _, qi = _factorize(t.query)
    rankers, ri = _factorize(t.ranker)
    n_rankers = max(len(rankers), 1)
    qr_rank_key, inv = _factorize((qi * n_rankers + ri) * max_rank + (t.rank - 1))
    per_rank = np.bincount(inv, weights=t.impressions)
    qr = qr_rank_key // max_rank
    starts = np.flatnonzero(np.r_[True, qr[1:] != qr[:-1]]) if len(qr) else np.zeros(0, dtype=np.int64)
    sessions_qr = np.maximum.reduceat(per_rank, starts) if len(qr) else np.zeros(0)
    return rankers, np.bincount(qr[starts] % n_rankers, weights=sessions_qr, minlength=len(rankers))


def _harvest_statistics(
    t: Impressions, max_rank: int, design: tuple[np.ndarray, np.ndarray] | None = None
) -> _HarvestStatistics:
    """AllPairs' statistics of ``t``; ``design``, the (ranker ids, sessions) of a whole log
    (``_ranker_sessions``) when ``t`` holds only some of its queries (a chunk: then a chunk
    without kept rows or interventions has empty statistics rather than an error)."""
    k_max = max_rank
    t = _harvest_rows(t, max_rank)
    if len(t.query) == 0:
        if design is None:
            raise ValueError(f"no row has a rank <= max_rank = {max_rank} and impressions > 0")
        empty = np.zeros(0, dtype=np.int64)
        return _HarvestStatistics(0, k_max, empty, empty, np.zeros(0), np.zeros(0), 0, design[1], design[0])
    queries, qi = _factorize(t.query)
    if design is None:
        rankers, ri = _factorize(t.ranker)
    else:
        rankers, ri = design[0], np.searchsorted(design[0], t.ranker)
    n_rankers = len(rankers)
    if n_rankers < 2:
        raise ValueError(
            f"intervention harvesting needs logs from at least 2 rankers; found only ranker "
            f"{int(rankers[0])} among the rows with rank <= {k_max} and impressions > 0"
        )
    docs, di = _factorize(t.doc)
    _, qd = _factorize(qi * np.int64(len(docs)) + di)  # (query, document) pair index
    k0 = t.rank - 1

    # Duplicate rows of one (query, document, rank, ranker) are summed.
    key, inv = _factorize((qd * k_max + k0) * n_rankers + ri)
    imp = np.bincount(inv, weights=t.impressions)
    clk = np.bincount(inv, weights=t.clicks)
    cell_ranker = key % n_rankers
    cell_key = key // n_rankers  # (query, document, rank), sorted

    sessions = _ranker_sessions(t, k_max)[1] if design is None else design[1]
    total_sessions = sessions.sum()

    # Cells (query, document, rank): w(q, d, k) = N / Σ_{i showing d at k for q} n_i.
    cell, cell_inv = _factorize(cell_key)
    cell_imp = np.bincount(cell_inv, weights=imp)
    cell_clk = np.bincount(cell_inv, weights=clk)
    cell_sessions = np.bincount(cell_inv, weights=sessions[cell_ranker])
    weight = total_sessions / cell_sessions
    cell_imp *= weight
    cell_clk *= weight
    cell_qd = cell // k_max
    cell_k = cell % k_max
    # The cells of one (query, document) are contiguous and sorted by rank; pair each with
    # the cells j places further on, for every j up to the longest run (at most K).
    first = np.flatnonzero(np.r_[True, cell_qd[1:] != cell_qd[:-1]])
    run = np.diff(np.r_[first, len(cell)])
    qd_query = np.empty(int(cell_qd.max()) + 1, dtype=np.int64)
    qd_query[qd] = qi
    parts_a, parts_b = [], []
    for j in range(1, int(run.max())):
        a = np.flatnonzero(cell_qd[:-j] == cell_qd[j:])
        parts_a.append(a)
        parts_b.append(a + j)
    if not parts_a and design is None:
        raise ValueError(NO_INTERVENTIONS.format(k_max=k_max))
    a = np.concatenate(parts_a) if parts_a else np.zeros(0, dtype=np.int64)
    b = np.concatenate(parts_b) if parts_b else np.zeros(0, dtype=np.int64)
    # Ordered pairs (k, k') and (k', k): the counts at the first rank of each.
    first_cell = np.r_[a, b]
    second_cell = np.r_[b, a]
    pair = cell_k[first_cell] * k_max + cell_k[second_cell]
    query_of = qd_query[cell_qd[first_cell]]
    entry, entry_inv = _factorize(query_of * np.int64(k_max * k_max) + pair)
    return _HarvestStatistics(
        n_queries=len(queries),
        max_rank=k_max,
        entry_query=entry // (k_max * k_max),
        entry_pair=entry % (k_max * k_max),
        entry_clicks=np.bincount(entry_inv, weights=cell_clk[first_cell]),
        entry_impressions=np.bincount(entry_inv, weights=cell_imp[first_cell]),
        n_intervention_docs=int(np.unique(cell_qd[a]).size),
        sessions=sessions,
        rankers=rankers,
    )


def _connected_to_top(pair_impressions: np.ndarray) -> np.ndarray:
    """Which ranks the intervention pairs connect to rank 1, shape (K,) bool."""
    from scipy import sparse
    from scipy.sparse.csgraph import connected_components

    linked = (pair_impressions > 0) & (pair_impressions.T > 0)
    _, label = connected_components(sparse.csr_matrix(linked), directed=False)
    return label == label[0]


def _pair_relevance(
    pa: np.ndarray, pb: np.ndarray, clicks_a: np.ndarray, skips_a: np.ndarray, clicks_b: np.ndarray, skips_b: np.ndarray
) -> np.ndarray:
    """Maximiser c* of one rank pair's likelihood for fixed propensities (closed form).

    For a pair {k, k'} with propensities a = p_k, b = p_k', weighted clicks C_a, C_b and
    weighted skips U_a = n~_a - C_a, U_b = n~_b - C_b, the relevance parameter maximises

        C_a log(a c) + U_a log(1 - a c) + C_b log(b c) + U_b log(1 - b c),  0 <= c <= 1 / max(a, b),

    a concave function whose stationarity condition, multiplied by c (1 - a c)(1 - b c), is
    the quadratic  ab (S + U_a + U_b) c^2 - (S (a + b) + U_a a + U_b b) c + S = 0  with
    S = C_a + C_b. Its smaller root (written in the cancellation-free form 2S / (B + sqrt(B^2 - 4AS)))
    is the maximiser; S = 0 gives c* = 0.

    Parameters
    ----------
    pa, pb, clicks_a, skips_a, clicks_b, skips_b : ndarray of float64, same shape
        Per pair.

    Returns
    -------
    ndarray of float64, same shape
    """
    s = clicks_a + clicks_b
    quad = pa * pb * (s + skips_a + skips_b)
    lin = s * (pa + pb) + skips_a * pa + skips_b * pb
    denom = lin + np.sqrt(np.maximum(lin * lin - 4.0 * quad * s, 0.0))
    return np.where(denom > 0, 2.0 * s / np.where(denom > 0, denom, 1.0), 0.0)


class _Fit(NamedTuple):
    log_p: np.ndarray  # (K,), log p_1 = 0
    loglik: float  # profile log-likelihood at log_p
    iterations: int
    converged: bool


def _allpairs_profile(log_p: np.ndarray, pair_clicks: np.ndarray, pair_impressions: np.ndarray):
    """Profile log-likelihood of AllPairs at ``log_p`` (K,), its gradient (K,) and Hessian (K, K).

    With x = log p_k + log c_{k,k'}, an ordered pair's term is T(x) = C x + U log(1 - e^x)
    (C weighted clicks, U weighted skips): T' = C - U theta / (1 - theta), T'' = -U theta / (1 - theta)^2,
    theta = e^x. Where c* is interior the gradient is the explicit one (envelope theorem) and
    the profile Hessian is H_uu - H_uv H_vv^-1 H_vu, H_vv diagonal (one log c per pair). Where
    c* sits on its bound 1 / p_m (the rank m of the pair with the larger p clicked on every
    impression), theta_m = 1 and the pair's likelihood is T_o(log p_o - log p_m) of the other
    rank o alone, differentiated as such.
    """
    from scipy.special import xlog1py, xlogy

    k_max = pair_clicks.shape[0]
    p = np.exp(log_p)
    i, j = np.triu_indices(k_max, 1)
    ca, cb = pair_clicks[i, j], pair_clicks[j, i]
    ua = np.maximum(pair_impressions[i, j] - ca, 0.0)
    ub = np.maximum(pair_impressions[j, i] - cb, 0.0)
    c = _pair_relevance(p[i], p[j], ca, ua, cb, ub)
    ta = np.minimum(p[i] * c, 1.0)
    tb = np.minimum(p[j] * c, 1.0)
    loglik = float((xlogy(ca, ta) + xlog1py(ua, -ta) + xlogy(cb, tb) + xlog1py(ub, -tb)).sum())
    bind_a = (ua == 0) & (ta >= 1.0 - 1e-12) & (ca + cb > 0)
    bind_b = (ub == 0) & (tb >= 1.0 - 1e-12) & (ca + cb > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ra = np.where(ua > 0, ua * ta / (1.0 - ta), 0.0)
        rb = np.where(ub > 0, ub * tb / (1.0 - tb), 0.0)
        ha = np.where(ua > 0, -ra / (1.0 - ta), 0.0)
        hb = np.where(ub > 0, -rb / (1.0 - tb), 0.0)
        hv = ha + hb
        inv = np.where(hv < 0, 1.0 / np.where(hv < 0, hv, -1.0), 0.0)
    # c* interior: the envelope gradient and the profile Hessian.
    # c* on its bound: rank i saturated leaves T_b(log p_j - log p_i), rank j saturated T_a(log p_i - log p_j).
    keep_b = bind_a & ~bind_b
    keep_a = bind_b & ~bind_a
    bound = keep_a | keep_b
    da = np.where(keep_b, -(cb - rb), ca - ra)
    db = np.where(keep_a, -(ca - ra), cb - rb)
    h_kept = np.where(keep_b, hb, ha)
    haa = np.where(bound, h_kept, ha - ha * ha * inv)
    hbb = np.where(bound, h_kept, hb - hb * hb * inv)
    hab = np.where(bound, -h_kept, -ha * hb * inv)
    tie = bind_a & bind_b  # both ranks clicked every time at equal p: a kink, no smooth part
    da, db, haa, hbb, hab = (np.where(tie, 0.0, v) for v in (da, db, haa, hbb, hab))
    grad = np.bincount(i, weights=da, minlength=k_max) + np.bincount(j, weights=db, minlength=k_max)
    hess = np.zeros((k_max, k_max))
    hess[i, j] = hab
    hess[j, i] = hab
    hess[np.arange(k_max), np.arange(k_max)] = np.bincount(i, weights=haa, minlength=k_max) + np.bincount(
        j, weights=hbb, minlength=k_max
    )
    return loglik, grad, hess


_LOG_P_BOUNDS = (float(np.log(1e-8)), float(np.log(1e4)))


def _allpairs_fit(
    pair_clicks: np.ndarray,
    pair_impressions: np.ndarray,
    start: np.ndarray | None = None,
    *,
    max_iter: int = 200,
    tol: float = 1e-12,
) -> _Fit:
    """Maximise the AllPairs profile likelihood over log p_2..log p_K (p_1 = 1).

    Projected Newton with backtracking and steps of at most 2 in log p: the profile is
    concave in log p, so this converges from anywhere; a log p_k pushed to a bound (a rank
    never clicked in its pairs) is held there. Written out rather than left to a scipy
    minimiser: it runs once per bootstrap replicate on a K x K problem, where Newton needs a
    handful of steps, and L-BFGS-B's tiny LAPACK calls stall on a busy multi-threaded BLAS.
    """
    k_max = pair_clicks.shape[0]
    lo, hi = _LOG_P_BOUNDS
    scale = max(float(pair_impressions.sum()), 1e-300)
    log_p = np.zeros(k_max) if start is None else np.clip(np.array(start, dtype=np.float64), lo, hi)
    log_p[0] = 0.0
    value, grad, hess = _allpairs_profile(log_p, pair_clicks, pair_impressions)
    converged, iteration = False, 0
    for iteration in range(1, max_iter + 1):  # noqa: B007 (its last value is the count returned)
        g, h = grad[1:] / scale, hess[1:, 1:] / scale
        x = log_p[1:]
        free = ~(((x <= lo) & (g < 0)) | ((x >= hi) & (g > 0)))
        if not np.any(free) or np.max(np.abs(g[free])) < tol:
            converged = True
            break
        hf = -h[np.ix_(free, free)]
        hf[np.diag_indices_from(hf)] += 1e-12 * (1.0 + np.max(np.abs(np.diag(hf))))
        try:
            step_free = np.linalg.solve(hf, g[free])
        except np.linalg.LinAlgError:
            step_free = g[free]
        if not np.dot(step_free, g[free]) > 0:  # not an ascent direction: fall back to the gradient
            step_free = g[free]
        step = np.zeros(k_max - 1)
        # At most a factor e^2 per iteration: where the profile is nearly linear (a rank clicked
        # on every impression) the Newton step is unbounded.
        step[free] = step_free * min(1.0, 2.0 / max(float(np.max(np.abs(step_free))), 1e-300))
        t = 1.0
        slope = float(np.dot(step, g))
        while t >= 1e-10:
            trial = log_p.copy()
            trial[1:] = np.clip(x + t * step, lo, hi)
            trial_value, trial_grad, trial_hess = _allpairs_profile(trial, pair_clicks, pair_impressions)
            if trial_value / scale >= value / scale + 1e-4 * t * slope:
                break
            t /= 2.0
        else:  # no ascent left at the precision of the sums: converged if nearly stationary
            converged = bool(np.max(np.abs(g[free])) < 1e-8)
            break
        moved = np.max(np.abs(trial - log_p))
        log_p, value, grad, hess = trial, trial_value, trial_grad, trial_hess
        if moved < 1e-13:
            converged = bool(np.max(np.abs(grad[1:][free])) / scale < 1e-8)
            break
    return _Fit(log_p=log_p, loglik=value, iterations=iteration, converged=converged)


def harvest_propensities(
    query: np.ndarray,
    doc: np.ndarray,
    rank: np.ndarray,
    ranker: np.ndarray,
    impressions: np.ndarray,
    clicks: np.ndarray,
    *,
    max_rank: int | None = None,
    bootstrap: int = 200,
    level: float = 0.95,
    rng: np.random.Generator | np.random.SeedSequence | int,
) -> PropensityEstimate:
    """Propensities by intervention harvesting and the AllPairs extremum estimator.

    Agarwal, Zaitsev, Wang, Li, Najork and Joachims (WSDM 2019). When several
    rankers f_1..f_m logged the same queries, a (query, document) shown at rank k by one of
    them and at rank k' by another is an intervention: its click rates at k and k' differ
    only by p_k / p_k' (position-based model). The sessions of each ranker enter the
    harvested click and impression counts with the paper's weight

        w(q, d, k) = N / Σ_i n_i 1[rk(d | f_i(q)) = k],       N = Σ_i n_i,

    n_i the sessions ranker i logged, so that every (q, d) in S_{k,k'} has the same expected
    weighted impressions at k and at k' however unevenly the rankers were used. With

        c~_k^{k,k'} = Σ_{(q,d) in S_{k,k'}} w(q,d,k) clicks(q,d,k),
        n~_k^{k,k'} = Σ_{(q,d) in S_{k,k'}} w(q,d,k) impressions(q,d,k),

    the AllPairs extremum estimator maximises

        Σ_{k != k'} c~_k^{k,k'} log(p_k c_{k,k'}) + (n~_k^{k,k'} - c~_k^{k,k'}) log(1 - p_k c_{k,k'})

    over p (p_1 = 1, so the estimate is relative to rank 1) and one relevance c_{k,k'} = c_{k',k}
    per rank pair. For fixed p each c_{k,k'} has a closed-form maximiser
    (``_pair_relevance``), and the objective is jointly concave in (log p, log c), so the
    profile in log p_2..log p_K is concave; Newton's method maximises it. The only
    constraint kept is p_k c_{k,k'} <= 1 on the pair's own ranks, which binds only where a
    rank of the pair was clicked on every impression.

    Parameters
    ----------
    query, doc, rank, ranker, impressions, clicks : array_like of int, shape (m,)
        The impression table: one row per distinct (query, document, rank, ranker); ``rank``
        1-based, ``ranker`` the logging ranker (ids >= 0; at least two distinct), the times
        shown there and clicked there (0 <= clicks <= impressions). Duplicate rows are summed.
    max_rank : int, optional
        K: estimate p_1..p_K from the rows with rank <= K (default: the largest rank).
    bootstrap : int, default 200
        Resamples of the queries (with replacement) for the band; 0 gives nan bands.
    level : float, default 0.95
        Coverage of the percentile band.
    rng : numpy.random.Generator, SeedSequence or int
        Source of the bootstrap resamples (unused when ``bootstrap=0``).

    Returns
    -------
    PropensityEstimate
        ``method="allpairs-harvest"``; ``info`` holds ``iterations``, ``converged``,
        ``log_likelihood`` (profile, at the estimate), ``intervention_docs``
        ((query, document)s shown at >= 2 ranks <= K), ``rank_pairs`` (unordered rank pairs
        with interventions), ``queries``, ``sessions`` (per ranker id), ``bootstrap``
        (replicates run) and ``bootstrap_disconnected`` (replicate-ranks left out of the band
        because the resample had no intervention reaching that rank).

    Raises
    ------
    ValueError
        On a malformed table, on fewer than two rankers, and when some rank in 1..K is not
        connected to rank 1 by a chain of intervention pairs (its propensity is then not
        identified).

    Notes
    -----
    n_i is read off the table: a session shows one document at each displayed rank, so
    the sessions of a (query, ranker) are its impressions summed over documents at its
    most-shown rank. Any two rows of a (query, document) at different ranks <= K form an
    intervention (with deterministic rankers they come from different rankers).

    The bootstrap reuses per-(query, rank pair) weighted counts: a replicate's counts are
    the multinomial query counts times them, and each replicate's fit starts from the
    full-data estimate. The ranker weights keep the full data's n_i (the logging design).
    """
    t = _check_table(query, doc, rank, ranker, impressions, clicks)
    k_max = _check_options(max_rank, t.rank, bootstrap, level, minimum=2)
    stats = _harvest_statistics(t, k_max)
    return _allpairs_estimate(
        stats.totals(),
        stats.replicate_totals,
        n_queries=stats.n_queries,
        intervention_docs=stats.n_intervention_docs,
        rankers=stats.rankers,
        sessions=stats.sessions,
        bootstrap=bootstrap,
        level=level,
        rng=rng,
    )


def _allpairs_estimate(
    totals: tuple[np.ndarray, np.ndarray],
    replicate_totals,
    *,
    n_queries: int,
    intervention_docs: int,
    rankers: np.ndarray,
    sessions: np.ndarray,
    bootstrap: int,
    level: float,
    rng,
) -> PropensityEstimate:
    """``harvest_propensities``' estimate and band from the harvested totals (each (K, K));
    ``replicate_totals(counts)`` gives them for query resamples ``counts`` (B, Q)."""
    pair_clicks, pair_impressions = totals
    k_max = pair_clicks.shape[0]
    reached = _connected_to_top(pair_impressions)
    if not np.all(reached):
        missing = np.flatnonzero(~reached) + 1
        raise ValueError(
            f"rank {missing[0]} has no intervention pair connecting it to rank 1 (ranks without one: "
            f"{', '.join(map(str, missing[:10]))}{', ...' if missing.size > 10 else ''}): no (query, document) "
            f"is shown there by one ranker and at another rank <= {k_max} by another ranker, in a chain "
            "reaching rank 1; lower max_rank or add logs of rankers that order these documents differently"
        )
    fit = _allpairs_fit(pair_clicks, pair_impressions)
    propensity = np.exp(fit.log_p)

    low, high = np.full(k_max, np.nan), np.full(k_max, np.nan)
    disconnected = 0
    if bootstrap > 0:
        counts = _query_resamples(n_queries, int(bootstrap), rng)
        rep_clicks, rep_impressions = replicate_totals(counts)
        replicates = np.empty((int(bootstrap), k_max))
        for b in range(int(bootstrap)):
            rep = np.exp(_allpairs_fit(rep_clicks[b], rep_impressions[b], start=fit.log_p).log_p)
            ok = _connected_to_top(rep_impressions[b])
            rep[~ok] = np.nan
            disconnected += int((~ok).sum())
            replicates[b] = rep
        low, high = _percentile_band(replicates, propensity, level)

    i, j = np.triu_indices(k_max, 1)
    info = {
        "iterations": fit.iterations,
        "converged": fit.converged,
        "log_likelihood": fit.loglik,
        "intervention_docs": intervention_docs,
        "rank_pairs": int(np.count_nonzero((pair_impressions[i, j] > 0) & (pair_impressions[j, i] > 0))),
        "queries": n_queries,
        "sessions": {int(r): float(n) for r, n in zip(rankers, sessions, strict=True)},
        "bootstrap": int(bootstrap),
        "bootstrap_disconnected": disconnected,
    }
    return PropensityEstimate(
        rank=np.arange(1, k_max + 1, dtype=np.int64),
        propensity=propensity,
        low=low,
        high=high,
        level=float(level),
        method="allpairs-harvest",
        info=info,
    )
