"""Scores to rankings, test-set metrics and counterfactual (IPS / SNIPS) estimates.

Legend (paper Sec. 3):
    rank(y | pi_f(x))      -> ``ranks[doc]``, 1-based, from ``rank_documents``
    rel(y)                 -> ``relevant[doc]`` (binarized labels)
    q_i = Q(o_i(y_i) = 1)  -> ``propensity[i]`` of click i
    Delta_IPS (Eq. lossips) -> ``ips_estimate`` over a click log

Conventions (DESIGN.md): scores sort descending; ties are broken by a seeded random
permutation, never by file order, so a constant scorer gets a random ranking's value.
Avg DCG and Avg Rank average over all relevant (query, document) pairs, so queries
without a relevant document contribute nothing. Avg DCG's gain is 1/ln(1 + rank) (the
paper's lambda(r) = -1/log(1 + r) has no base; ``DCG_BASE``), or 1/log_b(1 + rank) for
another base b: the base only scales every value, so it never changes a comparison or a
model selection. nDCG@10 is a ratio of DCGs and so has no base.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "rank_documents",
    "DCG_BASE",
    "dcg_gain",
    "avg_dcg",
    "avg_rank",
    "ndcg_at_k",
    "ips_estimate",
    "snips_estimate",
    "snips_avg_dcg",
    "evaluate",
    "validation_estimate",
]


def rank_documents(scores: np.ndarray, offsets: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Rank every query's documents by descending score, ties broken at random.

    Parameters
    ----------
    scores : ndarray, shape (n_docs,)
    offsets : ndarray, shape (n_queries + 1,)
    rng : numpy.random.Generator
        Source of the tie-breaking permutation.

    Returns
    -------
    ranks : ndarray of int64, shape (n_docs,)
        1-based rank of each document within its query.
    """
    scores = np.asarray(scores, dtype=np.float64)
    offsets = np.asarray(offsets, dtype=np.int64)
    if scores.ndim != 1 or len(scores) != offsets[-1]:
        raise ValueError(f"scores must have shape ({offsets[-1]},), found {scores.shape}")
    if not np.all(np.isfinite(scores)):
        raise ValueError("scores must be finite; found NaN or infinity")
    sizes = np.diff(offsets)
    doc_query = np.repeat(np.arange(len(sizes)), sizes)
    tie_break = rng.permutation(len(scores))
    order = np.lexsort((tie_break, -scores, doc_query))
    ranks = np.empty(len(scores), dtype=np.int64)
    ranks[order] = np.arange(len(scores)) - np.repeat(offsets[:-1], sizes) + 1
    return ranks


DCG_BASE = math.e


def dcg_gain(ranks: np.ndarray, base: float = DCG_BASE) -> np.ndarray:
    """The DCG contribution 1 / log_base(1 + rank) of a result at each rank."""
    return math.log(base) / np.log1p(np.asarray(ranks, dtype=np.float64))


def avg_dcg(ranks: np.ndarray, relevant: np.ndarray, *, base: float = DCG_BASE) -> float:
    """Mean of 1/log_base(1 + rank) over all relevant documents (the paper's Avg DCG)."""
    relevant = np.asarray(relevant, dtype=bool)
    if not relevant.any():
        return float("nan")
    return float(dcg_gain(ranks[relevant], base).mean())


def avg_rank(ranks: np.ndarray, relevant: np.ndarray) -> float:
    """Mean rank of all relevant documents."""
    relevant = np.asarray(relevant, dtype=bool)
    if not relevant.any():
        return float("nan")
    return float(np.asarray(ranks, dtype=np.float64)[relevant].mean())


def ndcg_at_k(ranks: np.ndarray, relevant: np.ndarray, offsets: np.ndarray, *, k: int = 10) -> float:
    """Binary nDCG@k per query, averaged over queries with at least one relevant document.

    Parameters
    ----------
    ranks : ndarray, shape (n_docs,)
    relevant : ndarray of bool, shape (n_docs,)
    offsets : ndarray, shape (n_queries + 1,)
    k : int
        Cut-off.
    """
    relevant = np.asarray(relevant, dtype=bool)
    sizes = np.diff(offsets)
    doc_query = np.repeat(np.arange(len(sizes)), sizes)
    gain = np.where(relevant & (ranks <= k), dcg_gain(ranks), 0.0)
    dcg = np.bincount(doc_query, weights=gain, minlength=len(sizes))
    n_relevant = np.bincount(doc_query, weights=relevant, minlength=len(sizes)).astype(np.int64)
    ideal_cumulative = np.concatenate([[0.0], np.cumsum(dcg_gain(np.arange(1, k + 1)))])
    ideal = ideal_cumulative[np.minimum(n_relevant, k)]
    has_relevant = n_relevant > 0
    if not has_relevant.any():
        return float("nan")
    return float(np.mean(dcg[has_relevant] / ideal[has_relevant]))


def ips_estimate(values: np.ndarray, propensity: np.ndarray, *, n_sessions: int) -> float:
    """Inverse-propensity-scored estimate (paper Eq. riskips) of a per-session additive metric.

    ``values[i]`` is the metric's contribution of clicked document i under the ranking
    being evaluated (e.g. ``dcg_gain(rank)``); the estimate is
    (1 / n_sessions) * sum_i values[i] / propensity[i], unbiased for the expected
    per-session sum over relevant documents when clicks of relevant documents are
    observed with these propensities and irrelevant documents are never clicked.
    """
    if n_sessions <= 0:
        raise ValueError(f"n_sessions must be positive, found {n_sessions}")
    return float(np.sum(np.asarray(values) / np.asarray(propensity)) / n_sessions)


def snips_estimate(values: np.ndarray, propensity: np.ndarray | None, *, weight: np.ndarray | None = None) -> float:
    """Self-normalised IPS: sum_i values[i] / q_i divided by sum_i 1 / q_i.

    With ``weight`` (instead of ``propensity``), sum_i c_i values[i] / sum_i c_i for explicit
    example weights c_i, which may be signed (the affine correction: displayed documents
    weighted by their relevance estimates). The normaliser sum_i c_i then estimates the
    number of relevant (session, document) pairs without bias, as sum_i 1/q_i does under
    noise-free position bias, so the ratio still estimates Avg DCG (consistently, as SNIPS
    does); it is NaN when that sum is not positive (too few sessions to say).
    """
    inverse = 1.0 / np.asarray(propensity, dtype=np.float64) if weight is None \
        else np.asarray(weight, dtype=np.float64)
    total = inverse.sum()
    if not total > 0:
        return float("nan")
    # not np.dot: a multithreaded BLAS ddot over many clicks stalls on a busy machine
    return float((np.asarray(values, dtype=np.float64) * inverse).sum() / total)


def snips_avg_dcg(ranks: np.ndarray, click_doc: np.ndarray, propensity: np.ndarray | None, *,
                  base: float = DCG_BASE, weight: np.ndarray | None = None) -> float:
    """SNIPS estimate of Avg DCG from clicks, the model-selection criterion (DESIGN.md).

    sum_i (1/q_i) / log_base(1 + rank(y_i)) / sum_i (1/q_i), where ``ranks`` are the ranks
    the evaluated model gives to every document and ``click_doc`` the clicked rows;
    ``weight`` replaces 1/q_i by explicit example weights (``snips_estimate``).
    """
    return snips_estimate(dcg_gain(np.asarray(ranks)[click_doc], base), propensity, weight=weight)


def evaluate(scorer, queries, relevant: np.ndarray, *, rng: np.random.Generator, dcg_base: float = DCG_BASE) -> dict:
    """Avg DCG, Avg Rank and nDCG@10 of ``scorer`` on a fully labelled split (binarized labels)."""
    ranks = rank_documents(scorer.scores(queries.X), queries.offsets, rng)
    return {"avg_dcg": avg_dcg(ranks, relevant, base=dcg_base), "avg_rank": avg_rank(ranks, relevant),
            "ndcg@10": ndcg_at_k(ranks, relevant, queries.offsets, k=10)}


def validation_estimate(scorer, queries, log, *, rng: np.random.Generator, dcg_base: float = DCG_BASE) -> float:
    """SNIPS estimate of Avg DCG of ``scorer`` on a (validation) click log: the
    model-selection criterion, with each example weighted by ``log.cost`` (1/q_i, or a
    correction's weight)."""
    ranks = rank_documents(scorer.scores(queries.X), queries.offsets, rng)
    return snips_avg_dcg(ranks, log.doc, None, base=dcg_base, weight=log.cost)
