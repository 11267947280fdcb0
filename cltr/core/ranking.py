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
model selection. nDCG@10 is a ratio of DCGs and so has no base; it is averaged two ways,
both reported: over all queries, a query without a relevant document scoring 0 (``ndcg@10``,
what trec_eval, ir-measures and ranx report on a run file), and over the queries that have
a relevant document (``ndcg@10_relevant_queries``), nDCG being undefined on the others.
"""

from __future__ import annotations

import math

import numpy as np

from cltr.core import kernels

__all__ = [
    "rank_documents",
    "DCG_BASE",
    "dcg_gain",
    "avg_dcg",
    "avg_rank",
    "ndcg_per_query",
    "ndcg_at_k",
    "NDCG_CONVENTIONS",
    "NDCG_CONVENTION",
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
    if offsets.ndim != 1 or len(offsets) < 1 or offsets[0] != 0 or np.any(np.diff(offsets) < 0):
        raise ValueError(f"offsets must rise from 0, found {offsets[:1].tolist()}...{offsets[-1:].tolist()}")
    if scores.ndim != 1 or len(scores) != offsets[-1]:
        raise ValueError(f"scores must have shape ({offsets[-1]},), found {scores.shape}")
    if not np.all(np.isfinite(scores)):
        raise ValueError("scores must be finite; found NaN or infinity")
    tie_break = rng.permutation(len(scores))
    if kernels.loaded():  # the same ranks, a query at a time: 5x faster than the lexsort
        return kernels.ranks(scores, offsets, tie_break)
    sizes = np.diff(offsets)
    doc_query = np.repeat(np.arange(len(sizes)), sizes)
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


def ndcg_per_query(ranks: np.ndarray, relevant: np.ndarray, offsets: np.ndarray, *, k: int = 10) -> np.ndarray:
    """Binary nDCG@k of each query: DCG@k (gain 1/log2(1 + rank)) over the ideal DCG@k.

    Parameters
    ----------
    ranks : ndarray, shape (n_docs,)
        1-based rank of each document within its query.
    relevant : ndarray of bool, shape (n_docs,)
    offsets : ndarray, shape (n_queries + 1,)
    k : int
        Cut-off.

    Returns
    -------
    ndarray of float, shape (n_queries,)
        NaN for a query without a relevant document (its ideal DCG is 0).
    """
    relevant = np.asarray(relevant, dtype=bool)
    ranks = np.asarray(ranks)
    sizes = np.diff(offsets)
    doc_query = np.repeat(np.arange(len(sizes)), sizes)
    # log2, as trec_eval; a ratio of DCGs, so the base cancels
    gain = np.where(relevant & (ranks <= k), dcg_gain(ranks, 2.0), 0.0)
    dcg = np.bincount(doc_query, weights=gain, minlength=len(sizes))
    n_relevant = np.bincount(doc_query, weights=relevant, minlength=len(sizes)).astype(np.int64)
    ideal_cumulative = np.concatenate([[0.0], np.cumsum(dcg_gain(np.arange(1, k + 1), 2.0))])
    ideal = ideal_cumulative[np.minimum(n_relevant, k)]
    values = np.full(len(sizes), np.nan)
    has_relevant = n_relevant > 0
    values[has_relevant] = dcg[has_relevant] / ideal[has_relevant]
    return values


NDCG_CONVENTIONS = ("all", "relevant")

NDCG_CONVENTION = (
    "nDCG@10 = mean of binary nDCG@10 (log2) over all test queries, a query without a relevant "
    "document scoring 0 (as trec_eval, ir-measures and ranx); nDCG@10 relevant queries = its mean "
    "over the queries with a relevant document"
)
"""The two nDCG@10 averages in words, printed with every table beside the dataset's convention."""


def ndcg_at_k(ranks: np.ndarray, relevant: np.ndarray, offsets: np.ndarray, *, k: int = 10, queries: str) -> float:
    """Mean binary nDCG@k, over the queries that ``queries`` names.

    Parameters
    ----------
    ranks, relevant, offsets, k
        As ``ndcg_per_query``.
    queries : {"all", "relevant"}
        "all": every query, one without a relevant document scoring 0 (trec_eval's,
        ir-measures' and ranx's mean over a run's queries; NaN only without queries);
        "relevant": the queries with a relevant document (NaN when there is none). No
        default: the two differ by the share of queries without a relevant document
        (0.28 against 0.70 on MQ2008 Fold 1 test), so a caller names the one it means.
    """
    if queries not in NDCG_CONVENTIONS:
        raise ValueError(f"queries must be one of {', '.join(NDCG_CONVENTIONS)}, found {queries!r}")
    values = ndcg_per_query(ranks, relevant, offsets, k=k)
    if queries == "all":
        values = np.nan_to_num(values, nan=0.0)
    else:
        values = values[~np.isnan(values)]
    return float(values.mean()) if len(values) else float("nan")


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
    inverse = 1.0 / np.asarray(propensity, dtype=np.float64) if weight is None else np.asarray(weight, dtype=np.float64)
    total = inverse.sum()
    if not total > 0:
        return float("nan")
    # not np.dot: a multithreaded BLAS ddot over many clicks stalls on a busy machine
    return float((np.asarray(values, dtype=np.float64) * inverse).sum() / total)


def snips_avg_dcg(
    ranks: np.ndarray,
    click_doc: np.ndarray,
    propensity: np.ndarray | None,
    *,
    base: float = DCG_BASE,
    weight: np.ndarray | None = None,
) -> float:
    """SNIPS estimate of Avg DCG from clicks, the model-selection criterion (DESIGN.md).

    sum_i (1/q_i) / log_base(1 + rank(y_i)) / sum_i (1/q_i), where ``ranks`` are the ranks
    the evaluated model gives to every document and ``click_doc`` the clicked rows;
    ``weight`` replaces 1/q_i by explicit example weights (``snips_estimate``).
    """
    return snips_estimate(dcg_gain(np.asarray(ranks)[click_doc], base), propensity, weight=weight)


def evaluate(scorer, queries, relevant: np.ndarray, *, rng: np.random.Generator, dcg_base: float) -> dict:
    """Avg DCG, Avg Rank and nDCG@10 (both averages) of ``scorer`` on a fully labelled split.

    ``relevant`` (binarized labels) and ``dcg_base`` are the prepared dataset's convention
    (``Dataset.relevant_from``, ``Dataset.dcg_base``): no default, so that every caller
    reads them from the dataset. Keys: ``avg_dcg``, ``avg_rank``, ``ndcg@10`` (over all
    queries, 0 for a query without a relevant document, as trec_eval) and
    ``ndcg@10_relevant_queries`` (over the queries with a relevant document).
    """
    ranks = rank_documents(scorer.scores(queries.X), queries.offsets, rng)
    per_query = ndcg_per_query(ranks, relevant, queries.offsets, k=10)
    has_relevant = ~np.isnan(per_query)
    return {
        "avg_dcg": avg_dcg(ranks, relevant, base=dcg_base),
        "avg_rank": avg_rank(ranks, relevant),
        "ndcg@10": float(np.nan_to_num(per_query, nan=0.0).mean()) if len(per_query) else float("nan"),
        "ndcg@10_relevant_queries": float(per_query[has_relevant].mean()) if has_relevant.any() else float("nan"),
    }


def validation_estimate(scorer, queries, log, *, rng: np.random.Generator, dcg_base: float) -> float:
    """SNIPS estimate of Avg DCG of ``scorer`` on a (validation) click log: the
    model-selection criterion, with each example weighted by ``log.cost`` (1/q_i, or a
    correction's weight); ``dcg_base`` is the prepared dataset's (no default)."""
    ranks = rank_documents(scorer.scores(queries.X), queries.offsets, rng)
    return snips_avg_dcg(ranks, log.doc, None, base=dcg_base, weight=log.cost)
