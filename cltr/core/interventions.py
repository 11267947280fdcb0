"""Randomized interventions on a ranking, and propensities from the clicks they log.

Legend (Joachims, Swaminathan and Schnabel, WSDM 2017, "Unbiased Learning-to-Rank with Biased
Feedback", Sec. 5: the swap intervention; Wang, Bendersky, Metzler and Najork, SIGIR 2016:
randomizing the top results):
    k                       -> ``rank``, 1-based; the swap partner of rank 1
    K                       -> ``depth``: ranks 1..K take part in an intervention
    p_k                     -> observation propensity at rank k, reported relative to p_1
    rel(q, d)               -> relevance of a (query, document), Pr(C = 1 | q, d, k) = p_k rel(q, d)
    CTR_k(q, d)             -> clicks / impressions of (q, d) at rank k
    D_k                     -> the (q, d)s the log shows at rank 1 and at rank k

An intervention turns one deterministic ranking into a different ranking per session, so that
the same documents are seen at rank 1 and at deeper ranks; ``swap_propensities`` compares their
click-through rates there. Everything is vectorised over documents; the only loops run over
bootstrap replicates.
"""

from __future__ import annotations

import numpy as np

from cltr.core.propensity import (
    PropensityEstimate,
    _check_options,
    _check_table,
    _factorize,
    _percentile_band,
    _query_resamples,
)

__all__ = ["INTERVENTIONS", "intervene", "swap_propensities"]

INTERVENTIONS = ("swap-k", "randomize-top-k")


def intervene(rank: np.ndarray, offsets: np.ndarray, *, kind: str, depth: int, rng: np.random.Generator) -> np.ndarray:
    """The ranks one session displays after a randomized intervention on each query's ranking.

    ``swap-k`` (Joachims et al. 2017): per query, k is drawn uniformly from 1..min(K, n_q) and
    the documents at ranks 1 and k trade places (k = 1 leaves the ranking as it is, the
    control arm). ``randomize-top-k``: per query, the documents at ranks 1..min(K, n_q) are
    shown in a uniformly random order. Ranks below K never move.

    Parameters
    ----------
    rank : ndarray of int, shape (n_docs,)
        1-based ranks within each query (a permutation of 1..n_q per query).
    offsets : ndarray of int, shape (n_queries + 1,)
        Query q's documents are ``offsets[q]:offsets[q+1]``.
    kind : {"swap-k", "randomize-top-k"}
    depth : int
        K >= 2.
    rng : numpy.random.Generator
        One draw per query (swap) or per top document (randomize).

    Returns
    -------
    ndarray of int32, shape (n_docs,)
        The displayed ranks, again a permutation of 1..n_q per query.
    """
    if kind not in INTERVENTIONS:
        raise ValueError(f"unknown intervention {kind!r}; known: {', '.join(INTERVENTIONS)}")
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 2:
        raise ValueError(f"the intervention depth must be an integer >= 2, found {depth!r}")
    offsets = np.asarray(offsets, dtype=np.int64)
    rank = np.asarray(rank, dtype=np.int64)
    sizes = np.diff(offsets)
    query_of = np.repeat(np.arange(len(sizes)), sizes)
    reach = np.minimum(sizes, int(depth))  # ranks 1..reach of each query take part
    shown = rank.astype(np.int32, copy=True)
    if kind == "swap-k":
        # by_rank[offsets[q] + r - 1] is the document at rank r of query q
        by_rank = np.empty(len(rank), dtype=np.int64)
        by_rank[offsets[query_of] + rank - 1] = np.arange(len(rank))
        nonempty = np.flatnonzero(sizes > 0)
        partner = 1 + np.floor(rng.random(len(nonempty)) * reach[nonempty]).astype(np.int64)
        top = by_rank[offsets[nonempty]]
        other = by_rank[offsets[nonempty] + partner - 1]
        shown[top] = partner
        shown[other] = 1  # partner 1: the same document, rank 1 again
        return shown
    top = np.flatnonzero(rank <= reach[query_of])
    order = np.lexsort((rng.random(len(top)), query_of[top]))
    # the top documents of a query are contiguous in ``order``, reach of them; their positions
    # within the run are the new ranks minus 1
    position = np.arange(len(top)) - np.repeat(np.cumsum(reach) - reach, reach)
    shown[top[order]] = (position + 1).astype(np.int32)
    return shown


def swap_propensities(
    query: np.ndarray,
    doc: np.ndarray,
    rank: np.ndarray,
    impressions: np.ndarray,
    clicks: np.ndarray,
    *,
    max_rank: int | None = None,
    bootstrap: int = 200,
    level: float = 0.95,
    rng: np.random.Generator | np.random.SeedSequence | int,
) -> PropensityEstimate:
    """Propensities from a log of swap or top-K randomization interventions (RandPair-style).

    Under the position-based model a (query, document) shown at rank k is clicked at the rate
    E[CTR_k(q, d)] = p_k rel(q, d), whatever else the session showed. Comparing the same
    documents at two ranks cancels their relevance: over D_k, the (q, d)s the log shows both
    at rank 1 and at rank k,

        p_k / p_1 = Σ_{(q,d) in D_k} E[CTR_k(q, d)] / Σ_{(q,d) in D_k} E[CTR_1(q, d)],

    and the estimate replaces each expectation by the observed rate (a ratio of two sums over
    queries: consistent, with O(1 / |D_k|) bias). In a swap-k log (Joachims, Swaminathan and
    Schnabel, WSDM 2017) D_k holds each query's top document (at 1 in the control sessions, at
    k when swapped with k) and its document at k (at k in the other sessions, at 1 when
    swapped); in a randomize-top-K log every top-K document is in every D_k. Each document
    counts once whatever the share of sessions that showed it at each rank, so unequal arms
    do not bias the ratio.

    Parameters
    ----------
    query, doc, rank, impressions, clicks : array_like of int, shape (m,)
        The impression table (rows of any ranker are pooled; duplicates are summed).
    max_rank : int, optional
        K: estimate p_1..p_K (default: the largest rank); must not exceed the intervention's
        depth (deeper ranks have no D_k).
    bootstrap : int, default 200
        Resamples of the queries for the percentile band; 0 gives nan bands.
    level : float, default 0.95
    rng : numpy.random.Generator, SeedSequence or int

    Returns
    -------
    PropensityEstimate
        ``method="swap-intervention"``; ``info`` holds ``pairs`` (|D_k| per rank, rank 1
        first), ``queries`` and ``bootstrap``.

    Raises
    ------
    ValueError
        On a malformed table, and where a rank in 2..K has no (q, d) also shown at rank 1
        (a log without interventions reaching that deep) or no click at rank 1 among them.
    """
    t = _check_table(query, doc, rank, None, impressions, clicks)
    k_max = _check_options(max_rank, t.rank, bootstrap, level, minimum=2)
    keep = (t.rank <= k_max) & (t.impressions > 0)
    if not np.any(keep):
        raise ValueError(f"no row has a rank <= max_rank = {k_max} and impressions > 0")
    queries, qi = _factorize(t.query[keep])
    docs, di = _factorize(t.doc[keep])
    _, qd = _factorize(qi * np.int64(len(docs)) + di)
    k0 = t.rank[keep] - 1
    cell, inv = _factorize(qd * k_max + k0)
    n = np.bincount(inv, weights=t.impressions[keep])
    c = np.bincount(inv, weights=t.clicks[keep])
    cell_qd, cell_k0 = cell // k_max, cell % k_max
    qd_query = np.empty(int(qd.max()) + 1, dtype=np.int64)
    qd_query[qd] = qi
    rate = c / n
    top_rate = np.full(len(qd_query), np.nan)
    top_rate[cell_qd[cell_k0 == 0]] = rate[cell_k0 == 0]
    paired = (cell_k0 > 0) & np.isfinite(top_rate[cell_qd])
    pair_k0 = cell_k0[paired]
    pair_query = qd_query[cell_qd[paired]]
    size = np.bincount(pair_k0, minlength=k_max)
    if np.any(size[1:] == 0):
        missing = np.flatnonzero(size[1:] == 0) + 2
        raise ValueError(
            f"rank {missing[0]} has no (query, document) also shown at rank 1 (ranks without one: "
            f"{', '.join(map(str, missing[:10]))}): the log holds no swap or randomization reaching it; "
            f"lower max_rank to the intervention's depth, or simulate with --intervention"
        )
    # here, not at the top: scipy.sparse takes a tenth of a second to import and `cltr --help` imports this module
    from scipy import sparse

    shape = (len(queries), k_max)
    # per query and rank: Σ CTR_k and Σ CTR_1 over its documents in D_k
    at_k = sparse.csr_matrix((rate[paired], (pair_query, pair_k0)), shape=shape)
    at_top = sparse.csr_matrix((top_rate[cell_qd[paired]], (pair_query, pair_k0)), shape=shape)
    numerator = np.asarray(at_k.sum(axis=0)).ravel()
    denominator = np.asarray(at_top.sum(axis=0)).ravel()
    if np.any(denominator[1:] <= 0):
        bad = int(np.flatnonzero(denominator[1:] <= 0)[0]) + 2
        raise ValueError(
            f"rank {bad}: the documents also shown at rank 1 were never clicked there, so p_{bad} / p_1 "
            f"is not identified; log more sessions"
        )
    propensity = np.ones(k_max)
    propensity[1:] = numerator[1:] / denominator[1:]

    low, high = np.full(k_max, np.nan), np.full(k_max, np.nan)
    if bootstrap > 0:
        counts = _query_resamples(len(queries), int(bootstrap), rng)
        rep_num = np.asarray(at_k.T @ counts.T).T
        rep_den = np.asarray(at_top.T @ counts.T).T
        with np.errstate(divide="ignore", invalid="ignore"):
            replicates = np.where(rep_den > 0, rep_num / np.where(rep_den > 0, rep_den, 1.0), np.nan)
        replicates[:, 0] = 1.0
        low, high = _percentile_band(replicates, propensity, level)
    info = {"pairs": [int(v) for v in size], "queries": len(queries), "bootstrap": int(bootstrap)}
    return PropensityEstimate(
        rank=np.arange(1, k_max + 1, dtype=np.int64),
        propensity=propensity,
        low=low,
        high=high,
        level=float(level),
        method="swap-intervention",
        info=info,
    )
