"""Observation propensities estimated from click logs: intervention harvesting and regression EM.

Legend (position-based model; Agarwal, Zaitsev, Wang, Li, Najork, Joachims, WSDM 2019,
"Estimating Position Bias without Intrusive Interventions": interventional sets, harvested
counts and the AllPairs extremum estimator; Wang, Golbandi, Bendersky, Metzler, Najork,
WSDM 2018, "Position Bias Estimation for Unbiased Learning to Rank in Personal Search":
regression EM):
    k, k'                        -> ``rank``, 1-based, at most ``K = max_rank``
    p_k = Pr(E = 1 | k)          -> ``PropensityEstimate.propensity[k - 1]``, relative to p_1
    rel(q, d)                    -> relevance of a (query, document), Pr(C = 1 | q, d, k) = p_k rel(q, d)
    f_i, n_i, N = Σ_i n_i         -> ``ranker`` i; sessions it logged; all sessions
    S_{k,k'}                     -> (query, document)s shown at k by one ranker and at k' by another
    w(q, d, k)                   -> N / Σ_i n_i 1[rk(d | f_i(q)) = k]  (harvest weight)
    c~_k^{k,k'}, n~_k^{k,k'}     -> weighted clicks and impressions at k of S_{k,k'}
                                    (``pair_clicks[k-1, k'-1]``, ``pair_impressions[k-1, k'-1]``)
    c_{k,k'} = c_{k',k}          -> relevance parameter of a rank pair (profiled out in closed form)
    theta_k, gamma(q, d)         -> EM's examination and relevance probabilities; the estimate
                                    reports p_k = theta_k / theta_1
    gamma(q, d) = sigma(x_d . w) -> EM's feature-based relevance (logistic, standardised x)

The input is an aggregated impression table: flat int64 arrays of one length m, one row per
distinct (query, document, rank, ranker) with the times the document was shown there
(``impressions``) and clicked there (``clicks``). Everything is vectorised over rows; the only
Python loops run over rank offsets (at most K), row chunks, Newton/EM iterations and
bootstrap replicates. Bootstrap bands resample queries (the clusters) with replacement.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import NamedTuple

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components
from scipy.special import expit, xlog1py, xlogy

from cltr.core.clicks import Impressions

__all__ = ["PropensityEstimate", "em_propensities", "harvest_propensities"]


# --------------------------------------------------------------------------- the estimate


@dataclass(frozen=True, eq=False)
class PropensityEstimate:
    """Estimated observation propensity per rank, relative to rank 1, with a bootstrap band.

    Attributes
    ----------
    rank : ndarray of int64, shape (K,)
        1, 2, ..., K.
    propensity : ndarray of float64, shape (K,)
        p_k / p_1, so ``propensity[0] == 1``.
    low, high : ndarray of float64, shape (K,)
        Percentile bootstrap band at ``level`` (queries resampled with replacement), widened
        where needed to contain ``propensity`` (so error bars are never negative); nan when
        no bootstrap was run. Rank 1 has low = high = 1 by the normalisation.
    level : float
        Coverage the band was computed for, in (0, 1).
    method : str
        ``"allpairs-harvest"`` or ``"regression-em"``.
    info : dict
        Diagnostics in plain Python types (iterations, convergence, data used, ...).
    """

    rank: np.ndarray
    propensity: np.ndarray
    low: np.ndarray
    high: np.ndarray
    level: float
    method: str
    info: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        k = len(self.rank)
        for name in ("propensity", "low", "high"):
            if np.shape(getattr(self, name)) != (k,):
                raise ValueError(f"{name} must have shape ({k},) like rank, found {np.shape(getattr(self, name))}")
        if not np.array_equal(self.rank, np.arange(1, k + 1)):
            raise ValueError("rank must be 1, 2, ..., K")

    @property
    def max_rank(self) -> int:
        return len(self.rank)

    def at(self, rank: np.ndarray) -> np.ndarray:
        """Propensities looked up per rank; ranks beyond K get the value at K.

        Parameters
        ----------
        rank : array_like of int, any shape
            1-based ranks.

        Returns
        -------
        ndarray of float64, same shape as ``rank``
            ``propensity[min(rank, K) - 1]``. Extrapolating flat beyond K keeps the inverse
            propensity weights of deep clicks bounded instead of guessing a decay.
        """
        r = np.asarray(rank)
        if r.size and not np.issubdtype(r.dtype, np.integer):
            if not np.all(np.isfinite(r)) or np.any(r != np.floor(r)):
                raise ValueError("ranks must be whole numbers")
            r = r.astype(np.int64)
        if r.size and r.min() < 1:
            raise ValueError(f"ranks must be >= 1, found {r.min()}")
        return self.propensity[np.minimum(r, self.max_rank).astype(np.int64) - 1]

    def to_rows(self) -> list[dict]:
        """One dict per rank: ``{"rank", "propensity", "low", "high"}`` (plain Python numbers)."""
        return [{"rank": int(k), "propensity": float(p), "low": float(lo), "high": float(hi)}
                for k, p, lo, hi in zip(self.rank, self.propensity, self.low, self.high, strict=True)]


# --------------------------------------------------------------------------- validation


def _rows(t: Impressions, keep: np.ndarray) -> Impressions:
    """The rows ``keep`` of every column."""
    return Impressions(**{f.name: getattr(t, f.name)[keep] for f in fields(t)})


def _as_int(name: str, values) -> np.ndarray:
    a = np.asarray(values)
    if a.ndim != 1:
        raise ValueError(f"{name} must be a flat array, found shape {a.shape}")
    if a.dtype.kind in "iub":
        return a.astype(np.int64, copy=False)
    if a.dtype.kind == "f":
        bad = ~np.isfinite(a) | (a != np.floor(a))
        if np.any(bad):
            row = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{name} must hold whole numbers; row {row} has {a[row]!r}")
        return a.astype(np.int64)
    raise ValueError(f"{name} must be an integer array, found dtype {a.dtype}")


def _check_table(query, doc, rank, ranker, impressions, clicks) -> Impressions:
    """Validated int64 columns; ``ranker=None`` (regression EM) stands for a single ranker 0."""
    columns = {"query": query, "doc": doc, "rank": rank, "ranker": ranker,
               "impressions": impressions, "clicks": clicks}
    arrays = {name: _as_int(name, values) for name, values in columns.items() if values is not None}
    lengths = {name: len(a) for name, a in arrays.items()}
    if len(set(lengths.values())) != 1:
        raise ValueError(", ".join(lengths) + " must have one length; found "
                         + ", ".join(f"{name} {n}" for name, n in lengths.items()))
    if lengths["query"] == 0:
        raise ValueError("the impression table is empty")
    if ranker is None:
        arrays["ranker"] = np.zeros(lengths["query"], dtype=np.int64)
    t = Impressions(**arrays)
    for name, low in (("rank", 1), ("ranker", 0), ("impressions", 0), ("clicks", 0)):
        a = getattr(t, name)
        bad = np.flatnonzero(a < low)
        if bad.size:
            raise ValueError(f"{name} must be >= {low}; row {bad[0]} has {a[bad[0]]} "
                             f"({bad.size} such rows)")
    bad = np.flatnonzero(t.clicks > t.impressions)
    if bad.size:
        raise ValueError(f"clicks must not exceed impressions; row {bad[0]} has {t.clicks[bad[0]]} clicks "
                         f"and {t.impressions[bad[0]]} impressions ({bad.size} such rows)")
    return t


def _check_options(max_rank, rank: np.ndarray, bootstrap, level, *, minimum: int) -> int:
    if max_rank is None:
        max_rank = int(rank.max())
    if isinstance(max_rank, bool) or not isinstance(max_rank, (int, np.integer)) or max_rank < minimum:
        raise ValueError(f"max_rank must be an integer >= {minimum}, found {max_rank!r}")
    if isinstance(bootstrap, bool) or not isinstance(bootstrap, (int, np.integer)) or bootstrap < 0:
        raise ValueError(f"bootstrap must be an integer >= 0, found {bootstrap!r}")
    if not 0.0 < float(level) < 1.0:
        raise ValueError(f"level must lie strictly between 0 and 1, found {level!r}")
    return int(max_rank)


def _factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct sorted values, index of each element into them)."""
    uniq, inverse = np.unique(values, return_inverse=True)
    return uniq, inverse.reshape(-1)


def _percentile_band(replicates: np.ndarray, estimate: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval per column of ``replicates`` (shape (B, K); nan = unusable replicate)."""
    alpha = (1.0 - level) / 2.0
    usable = np.isfinite(replicates)
    low = np.full(estimate.shape, np.nan)
    high = np.full(estimate.shape, np.nan)
    ok = usable.sum(axis=0) > 0
    if np.any(ok):
        with np.errstate(all="ignore"):
            low[ok] = np.nanquantile(replicates[:, ok], alpha, axis=0)
            high[ok] = np.nanquantile(replicates[:, ok], 1.0 - alpha, axis=0)
    low[ok] = np.minimum(low[ok], estimate[ok])
    high[ok] = np.maximum(high[ok], estimate[ok])
    return low, high


def _query_resamples(n_queries: int, bootstrap: int, rng) -> np.ndarray:
    """Multinomial counts m[b, q]: how often query q is drawn in replicate b (each row sums to Q)."""
    if rng is None:
        raise ValueError("the bootstrap needs rng: a numpy Generator, SeedSequence or int seed; found None")
    generator = np.random.default_rng(rng)
    return generator.multinomial(n_queries, np.full(n_queries, 1.0 / n_queries), size=bootstrap).astype(np.float64)


# --------------------------------------------------------------------------- intervention harvesting


NO_INTERVENTIONS = ("no (query, document) was shown at two different ranks <= {k_max}: the rankers' logs hold no "
                    "interventions")


class _HarvestStatistics(NamedTuple):
    """Weighted counts per (query, ordered rank pair), the sufficient statistics of AllPairs."""

    n_queries: int
    max_rank: int
    entry_query: np.ndarray   # (E,) query index 0..Q-1
    entry_pair: np.ndarray    # (E,) (k - 1) * K + (k' - 1)
    entry_clicks: np.ndarray  # (E,) Σ w(q,d,k) clicks at k over the query's documents in S_{k,k'}
    entry_impressions: np.ndarray
    n_intervention_docs: int  # (query, document)s shown at >= 2 distinct ranks <= K
    sessions: np.ndarray      # (R,) n_i
    rankers: np.ndarray       # (R,) ranker ids

    def totals(self, counts: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(pair_clicks, pair_impressions), each (K, K); with ``counts`` (Q,), queries weighted by it."""
        k = self.max_rank
        weight = 1.0 if counts is None else counts[self.entry_query]
        c = np.bincount(self.entry_pair, weights=self.entry_clicks * weight, minlength=k * k)
        n = np.bincount(self.entry_pair, weights=self.entry_impressions * weight, minlength=k * k)
        return c.reshape(k, k), n.reshape(k, k)

    def replicate_totals(self, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Totals for many resamples at once: ``counts`` (B, Q) -> two arrays (B, K, K)."""
        k, q = self.max_rank, self.n_queries
        shape = (q, k * k)
        c = sparse.csr_matrix((self.entry_clicks, (self.entry_query, self.entry_pair)), shape=shape)
        n = sparse.csr_matrix((self.entry_impressions, (self.entry_query, self.entry_pair)), shape=shape)
        b = counts.shape[0]
        return (np.asarray(c.T @ counts.T).T.reshape(b, k, k),
                np.asarray(n.T @ counts.T).T.reshape(b, k, k))


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


def _harvest_statistics(t: Impressions, max_rank: int,
                        design: tuple[np.ndarray, np.ndarray] | None = None) -> _HarvestStatistics:
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
        raise ValueError(f"intervention harvesting needs logs from at least 2 rankers; found only ranker "
                         f"{int(rankers[0])} among the rows with rank <= {k_max} and impressions > 0")
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
    linked = (pair_impressions > 0) & (pair_impressions.T > 0)
    _, label = connected_components(sparse.csr_matrix(linked), directed=False)
    return label == label[0]


def _pair_relevance(pa: np.ndarray, pb: np.ndarray, clicks_a: np.ndarray, skips_a: np.ndarray,
                    clicks_b: np.ndarray, skips_b: np.ndarray) -> np.ndarray:
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
    log_p: np.ndarray     # (K,), log p_1 = 0
    loglik: float         # profile log-likelihood at log_p
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
    hess[np.arange(k_max), np.arange(k_max)] = (np.bincount(i, weights=haa, minlength=k_max)
                                                + np.bincount(j, weights=hbb, minlength=k_max))
    return loglik, grad, hess


_LOG_P_BOUNDS = (float(np.log(1e-8)), float(np.log(1e4)))


def _allpairs_fit(pair_clicks: np.ndarray, pair_impressions: np.ndarray, start: np.ndarray | None = None,
                  *, max_iter: int = 200, tol: float = 1e-12) -> _Fit:
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
    return _allpairs_estimate(stats.totals(), stats.replicate_totals, n_queries=stats.n_queries,
                              intervention_docs=stats.n_intervention_docs, rankers=stats.rankers,
                              sessions=stats.sessions, bootstrap=bootstrap, level=level, rng=rng)


def _allpairs_estimate(totals: tuple[np.ndarray, np.ndarray], replicate_totals, *, n_queries: int,
                       intervention_docs: int, rankers: np.ndarray, sessions: np.ndarray, bootstrap: int,
                       level: float, rng) -> PropensityEstimate:
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
            "reaching rank 1; lower max_rank or add logs of rankers that order these documents differently")
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
    return PropensityEstimate(rank=np.arange(1, k_max + 1, dtype=np.int64), propensity=propensity,
                              low=low, high=high, level=float(level), method="allpairs-harvest", info=info)


# --------------------------------------------------------------------------- regression EM


class _EMData(NamedTuple):
    """Cells (query-document unit, rank) with their counts, and standardised unit features."""

    n_queries: int
    max_rank: int
    cell_unit: np.ndarray     # (n_cells,)
    cell_rank0: np.ndarray    # (n_cells,) k - 1
    cell_impressions: np.ndarray
    cell_clicks: np.ndarray
    unit_query: np.ndarray    # (n_units,)
    unit_weight: np.ndarray   # (n_units,) impressions of the unit over all its ranks
    features: np.ndarray      # (n_units, 1 + d) intercept column, then standardised features


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
        raise ValueError(f"rank {missing[0]} has no impressions (ranks without any: "
                         f"{', '.join(map(str, missing[:10]))}); lower max_rank to at most {missing[0] - 1}")
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
        raise ValueError(f"doc indexes the rows of X, so it must be in [0, {X.shape[0]}); row {bad[0]} has "
                         f"doc {doc[bad[0]]}")
    return X


def _weighted_gram(features: np.ndarray, weight: np.ndarray, chunk: int = 1 << 15) -> np.ndarray:
    """features.T @ diag(weight) @ features, in row chunks to bound the temporary."""
    d = features.shape[1]
    gram = np.zeros((d, d))
    for start in range(0, features.shape[0], chunk):
        f = features[start:start + chunk]
        gram += f.T @ (f * weight[start:start + chunk, None])
    return gram


def _penalty(d: int, l2: float) -> np.ndarray:
    pen = np.full(d, float(l2))
    pen[0] = 0.0  # the intercept is not shrunk
    return pen


def _logistic_objective(eta: np.ndarray, positives: np.ndarray, weight: np.ndarray,
                        coef: np.ndarray, pen: np.ndarray) -> float:
    # Σ P log sigma(eta) + (W - P) log(1 - sigma(eta)), written stably with logaddexp.
    return float(np.sum(positives * eta - weight * np.logaddexp(0.0, eta)) - 0.5 * np.sum(pen * coef * coef))


def _logistic_newton(features: np.ndarray, positives: np.ndarray, weight: np.ndarray, coef: np.ndarray,
                     eta: np.ndarray, pen: np.ndarray, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """A few damped Newton (IRLS) steps on the weighted, ridge-penalised logistic regression of
    soft labels ``positives / weight``; returns (coef, eta = features @ coef)."""
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


def _em_step(data: _EMData, theta: np.ndarray, coef: np.ndarray, eta: np.ndarray, pen: np.ndarray,
             newton_steps: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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


def _cross_fitted(fit_relevance, features: np.ndarray, label: np.ndarray, weight: np.ndarray,
                  unit_query: np.ndarray, folds: int) -> np.ndarray:
    """The relevance model's logits per unit: fitted on all units (``folds`` 1), or, cross-fitted,
    each query's units predicted by a model fitted on the other folds' queries (query q in fold
    q mod ``folds``), so that no unit's logit has seen that unit's own clicks. Units all in one
    fold have no other fold to be predicted from: an error (``_fold_count`` tells beforehand)."""
    if folds <= 1:
        return np.asarray(fit_relevance(features, label, weight), dtype=np.float64)
    fold = unit_query % folds
    if _fold_count(unit_query, folds) < 2:
        raise ValueError(f"cross-fitting over {folds} folds needs units in two folds or more; every unit is in fold "
                         f"{int(fold[0]) if len(fold) else 0}")
    out = np.zeros(len(label))
    for f in range(folds):
        held = fold == f
        if held.any() and not held.all():
            out[held] = np.asarray(fit_relevance(features[~held], label[~held], weight[~held],
                                                 predict=features[held]), dtype=np.float64).reshape(-1)
    return out


def _fold_count(unit_query: np.ndarray, folds: int) -> int:
    """How many of the ``folds`` folds (query q in fold q mod ``folds``) hold a unit."""
    return int(np.count_nonzero(np.bincount(unit_query % folds, minlength=folds)))


def _em_tree_step(data: _EMData, theta: np.ndarray, eta: np.ndarray,
                  fit_relevance, folds: int = 1) -> tuple[np.ndarray, np.ndarray]:
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
        raise ValueError(f"the relevance model must return finite logits of shape {eta.shape}, found "
                         f"shape {fitted.shape}")
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


def _em_derivatives(data: _EMData, log_theta: np.ndarray, coef: np.ndarray, pen: np.ndarray,
                    *, per_query: bool = False):
    """The penalised marginal log-likelihood in phi = (log theta_1..log theta_K, coef), its
    gradient (P,), Hessian (P, P) and, with ``per_query``, the per-query scores (Q, P)
    (the penalty is left out of the scores), P = K + 1 + d.

    Per cell with pi = theta_k gamma, n impressions, c clicks and u = n - c skips:
        d/dlog theta = (c - n pi) / (1 - pi),          d/deta = (1 - gamma) (c - n pi) / (1 - pi),
        d2/dlog theta2 = -u pi / (1 - pi)^2,           d2/dlog theta deta = (1 - gamma) d2/dlog theta2,
        d2/deta2 = (1 - gamma)^2 (-c - u pi^2 / (1 - pi)^2) + (1 - 2 gamma) d/deta.
    """
    k_max, n_units, d = data.max_rank, len(data.unit_weight), data.features.shape[1]
    n, c = data.cell_impressions, data.cell_clicks
    skips = n - c
    gamma = expit(data.features @ coef)[data.cell_unit]
    pi = np.exp(log_theta)[data.cell_rank0] * gamma
    one_minus = 1.0 - pi
    value = float(np.sum(xlogy(c, pi) + xlog1py(skips, -pi)) - 0.5 * np.sum(pen * coef * coef))
    g_u = (c - n * pi) / one_minus
    g_e = g_u * (1.0 - gamma)
    h_uu = -skips * pi / one_minus ** 2
    h_ue = h_uu * (1.0 - gamma)
    h_ee = (1.0 - gamma) ** 2 * (-c - skips * pi ** 2 / one_minus ** 2) + (1.0 - 2.0 * gamma) * g_e

    unit_g = np.bincount(data.cell_unit, weights=g_e, minlength=n_units)
    grad = np.r_[np.bincount(data.cell_rank0, weights=g_u, minlength=k_max),
                 data.features.T @ unit_g - pen * coef]
    hess = np.zeros((k_max + d, k_max + d))
    hess[np.arange(k_max), np.arange(k_max)] = np.bincount(data.cell_rank0, weights=h_uu, minlength=k_max)
    cross = sparse.csr_matrix((h_ue, (data.cell_rank0, data.cell_unit)), shape=(k_max, n_units))
    hue = np.asarray(cross @ data.features)
    hess[:k_max, k_max:] = hue
    hess[k_max:, :k_max] = hue.T
    hess[k_max:, k_max:] = _weighted_gram(data.features, np.bincount(data.cell_unit, weights=h_ee,
                                                                    minlength=n_units)) - np.diag(pen)
    scores = None
    if per_query:
        q_of_cell = data.unit_query[data.cell_unit]
        score_u = np.bincount(q_of_cell * k_max + data.cell_rank0, weights=g_u,
                              minlength=data.n_queries * k_max).reshape(data.n_queries, k_max)
        to_query = sparse.csr_matrix((unit_g, (data.unit_query, np.arange(n_units))),
                                     shape=(data.n_queries, n_units))
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

ALTERNATIVES = ("harvest on a log of two or more rankers (`cltr simulate --rankers 2`, `--method harvest`), a "
                "swap-k or randomize-top-k intervention (`cltr simulate --intervention ...`, `--method swap`), "
                "or EM with `--relevance-model logistic`")


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


def em_identification_of(query: np.ndarray, doc: np.ndarray, rank: np.ndarray, impressions: np.ndarray,
                         clicks: np.ndarray, X: np.ndarray, propensity: np.ndarray, *, flexible: bool,
                         cross_fit: int = 1) -> tuple[dict, list[str]]:
    """``em_identification`` of an EM estimate's ``propensity`` (p_1..p_K, as stored) on the
    impressions it was estimated from (``em_propensities``' table and ``X``): what an
    estimate stored before the check, or under older rules, is checked by."""
    t = _check_table(query, doc, rank, None, impressions, clicks)
    propensity = np.asarray(propensity, dtype=np.float64)
    return em_identification(_em_data(t, _check_features(X, t.doc), len(propensity)), propensity,
                             flexible=flexible, cross_fit=int(cross_fit))


def em_identification(data: _EMData, propensity: np.ndarray, *, flexible: bool,
                      cross_fit: int = 1) -> tuple[dict, list[str]]:
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
    where = (f"on this log {variation:.1%} of the impressions are of (query, document)s shown at more than one rank, "
             f"so the split of clicks into examination x relevance is identified only by the relevance model's "
             f"functional form")
    if collapsed:
        warnings.append(f"EM collapsed: every p_k is within {FLAT_SPREAD:g} of the others (p_k = "
                        f"{np.min(propensity):.3f}..{np.max(propensity):.3f} at ranks 1..{k_max}) while the click "
                        f"rate falls from {rate_top:.3f} at rank 1 to {rate_bottom:.3f} at ranks "
                        f"{k_max // 2 + 1}..{k_max}: the whole fall was put into relevance; {where}. This estimate "
                        f"is not a propensity curve; use {ALTERNATIVES}")
    elif flexible and one_rank and cross_fit > 1:
        warnings.append(f"identified only by the relevance model's form across queries: the trees, cross-fitted over "
                        f"{cross_fit} folds of the queries, cannot learn a document's own clicks, but its relevance "
                        f"is what trees fitted on other queries predict from features that also decide its rank; "
                        f"{where}. Check it against {ALTERNATIVES}")
    elif flexible and one_rank:  # a collapse already says it
        warnings.append(f"not identified: a fitted relevance model (trees) can learn each (query, document)'s click "
                        f"rate, its rank's examination included, from features that also decide its rank; {where}. "
                        f"Do not trust this estimate; use {ALTERNATIVES}")
    diagnostics = {"rank_variation": variation, "click_rate_top": float(rate_top),
                   "click_rate_bottom": float(rate_bottom), "collapsed": collapsed,
                   "identified": not (collapsed or (flexible and one_rank))}
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
        ``newton_steps`` then do not apply.
    cross_fit : int, default 1
        With a fitted relevance model: 1 refits it on every (query, document) and takes its
        logits there; F > 1 cross-fits it over F folds of the queries (query q in fold q mod F):
        each fold's logits come from ``fit(features, label, weight, predict=held_out_features)``
        fitted on the other folds. On a single deterministic ranker's log each document is
        shown at one rank, and an in-sample flexible model learns the position effect as
        relevance (``em_identification``); cross-fitting keeps it from fitting a document's
        own clicks.
    band : {"refit", "one-step"}, default "refit"
        ``"refit"``: each bootstrap replicate re-runs the whole EM (relevance model included)
        on the resampled queries, warm-started at the full-data estimate, so the band holds the
        relevance model's variance too. ``"one-step"`` (logistic only): the estimating-function
        bootstrap of the Notes, about ``bootstrap`` times cheaper.
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
    if not trees and relevance_model != "logistic":
        raise ValueError(f"relevance_model must be 'logistic' or a callable fit(features, label, weight) -> logits, "
                         f"found {relevance_model!r}")
    if band not in ("refit", "one-step"):
        raise ValueError(f"band must be 'refit' or 'one-step', found {band!r}")
    if isinstance(cross_fit, bool) or not isinstance(cross_fit, (int, np.integer)) or cross_fit < 1:
        raise ValueError(f"cross_fit must be an integer >= 1, found {cross_fit!r}")
    if trees and band == "one-step":
        raise ValueError("band='one-step' needs the logistic relevance model's finite parameters; use band='refit' "
                         "with a fitted relevance model")
    data = _em_data(t, X, k_max)
    if data.cell_clicks.sum() <= 0:
        raise ValueError("the table has no clicks at ranks <= max_rank; propensities are not identified")
    if trees and cross_fit > data.n_queries:
        raise ValueError(f"cross_fit = {cross_fit} folds of the queries need at least {cross_fit} queries, found "
                         f"{data.n_queries}")
    pen = _penalty(data.features.shape[1], float(l2))

    def fit(d: _EMData, start=None):
        """(theta, coef or None, eta, iterations, converged, newton) on data ``d``."""
        if trees:
            theta, eta, *rest = _em_fit_trees(d, relevance_model, iterations=int(iterations), tol=float(tol),
                                              folds=int(cross_fit), start=start)
            return theta, None, eta, *rest
        theta, coef, *rest = _em_fit(d, iterations=int(iterations), tol=float(tol), l2=float(l2),
                                     newton_steps=int(newton_steps), start=start)
        return theta, coef, d.features @ coef, *rest

    theta, coef, eta, iteration, converged, newton = fit(data)
    propensity = theta / theta[0]
    loglik = _em_loglik(data, theta, np.zeros(0) if trees else coef, eta, np.zeros(0) if trees else pen)
    low, high = np.full(k_max, np.nan), np.full(k_max, np.nan)
    unconverged = one_fold = 0
    if bootstrap > 0 and band == "refit":
        counts = _query_resamples(data.n_queries, int(bootstrap), rng)
        replicates = np.full((int(bootstrap), k_max), np.nan)
        for b in range(int(bootstrap)):
            resampled, kept = _em_resample(data, counts[b])
            shown = np.bincount(resampled.cell_rank0, weights=resampled.cell_impressions, minlength=k_max) > 0
            if not shown.all() or resampled.cell_clicks.sum() <= 0:
                continue  # a rank the resample never shows: its theta is not identified there
            if trees and cross_fit > 1 and _fold_count(resampled.unit_query, int(cross_fit)) < 2:
                # the queries drawn all fall in one fold (few queries): nothing to cross-fit from
                one_fold += 1
                continue
            rep = fit(resampled, (theta, eta[kept] if trees else coef))
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
        "relevance_model": "fitted" if trees else "logistic",
        "cross_fit": int(cross_fit) if trees else 1,
        "relevance_coefficients": [] if trees else [float(v) for v in coef],
        "band": band,
        "bootstrap": int(bootstrap),
        "bootstrap_unconverged": unconverged,
        "bootstrap_one_fold": one_fold,
    }
    diagnostics, warnings = em_identification(data, propensity, flexible=trees, cross_fit=int(cross_fit))
    info.update(diagnostics, warnings=warnings, identification_version=IDENTIFICATION_VERSION)
    return PropensityEstimate(rank=np.arange(1, k_max + 1, dtype=np.int64), propensity=propensity,
                              low=low, high=high, level=float(level), method="regression-em", info=info)
