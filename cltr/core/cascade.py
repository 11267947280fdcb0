"""Cascade clicks: drawing them, their examination probabilities and cascade propensities.

Legend (the dependent click model, DCM: Guo, Liu, Wang, WSDM 2009, "Efficient Multiple-Click
Models in Web Search", Sec. 3; its propensities: Vardasbi, de Rijke, Markov, SIGIR 2020,
"Cascade Model-based Propensity Estimation for Counterfactual Learning to Rank", Sec. 3):
    E_k                        -> the user reaches rank k (examines it)
    gamma_d = P(C = 1 | E = 1)  -> ``attraction[doc]``: click probability of an examined document
    lambda_k                   -> ``continuation[doc]`` of the document shown at rank k: the
                                  probability of going on after a click at k (without a click
                                  the user always goes on)
    P(E_k = 1)                 -> ``cascade_examination``: prod_{i<k} (1 - gamma_i (1 - lambda_i))
    P(E_k = 1 | c_<k)          -> ``cascade_propensity``: prod_{i<k, c_i = 1} lambda_i

A session scans its query's ranking from the top, so clicks within a session are
dependent; sessions are drawn vectorised over (pass, query) with a loop over ranks only.
Rankings are flat over documents with query ``offsets``; ranks are 1-based and each query's
ranks are 1..n_q.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from cltr.core.clicks import ClickLog, draw_sessions, logged_clicks

__all__ = ["cascade_examination", "cascade_propensity", "simulate_cascade"]


def _rank_major(rank: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Documents ordered by (rank, query), where each rank's block starts, and each document's query."""
    offsets = np.asarray(offsets, dtype=np.int64)
    rank = np.asarray(rank, dtype=np.int64)
    sizes = np.diff(offsets)
    doc_query = np.repeat(np.arange(len(sizes)), sizes)
    if len(rank) != offsets[-1]:
        raise ValueError(f"rank must have one entry per document ({offsets[-1]}), found {len(rank)}")
    if len(rank) and (rank.min() < 1 or np.any(rank > sizes[doc_query])):
        raise ValueError("ranks must lie in 1..n_q for a query of n_q documents")
    order = np.lexsort((doc_query, rank))
    starts = np.searchsorted(rank[order], np.arange(1, int(sizes.max(initial=0)) + 2))
    return order, starts, doc_query


def cascade_examination(
    rank: np.ndarray, attraction: np.ndarray, continuation: np.ndarray, offsets: np.ndarray
) -> np.ndarray:
    """Probability that a session reaches each document (DCM).

    P(E_k = 1) = prod_{i<k} (1 - gamma_i (1 - lambda_i)): the user leaves only after a click
    at i (probability gamma_i) that is not followed by going on (1 - lambda_i).

    Parameters
    ----------
    rank : ndarray of int, shape (n_docs,)
        Presented 1-based rank of every document.
    attraction, continuation : ndarray, shape (n_docs,)
        gamma of each document and lambda of the rank it is shown at.
    offsets : ndarray, shape (n_queries + 1,)

    Returns
    -------
    examination : ndarray, shape (n_docs,)
    """
    order, starts, doc_query = _rank_major(rank, offsets)
    attraction = np.asarray(attraction, dtype=np.float64)
    continuation = np.asarray(continuation, dtype=np.float64)
    reach = np.ones(len(offsets) - 1)
    examination = np.empty(len(order))
    for r in range(len(starts) - 1):
        docs = order[starts[r] : starts[r + 1]]
        queries = doc_query[docs]
        examination[docs] = reach[queries]
        reach[queries] *= 1.0 - attraction[docs] * (1.0 - continuation[docs])
    return examination


def simulate_cascade(
    rank: np.ndarray,
    attraction: np.ndarray,
    continuation: np.ndarray,
    propensity: np.ndarray,
    offsets: np.ndarray,
    *,
    passes: int,
    rng: np.random.Generator,
    chunk_impressions: int = 1 << 22,
    progress: Callable[[int], None] | None = None,
) -> ClickLog:
    """Draw ``passes`` cascade sessions of every query and log each click.

    Each session starts at rank 1; at each rank it reaches, the document is clicked with
    probability gamma; after a click the session goes on with probability lambda of that
    rank, after no click it goes on. One uniform u per (session, document) decides both:
    a click is u < gamma and, given a click, u / gamma is again uniform, so going on after
    it is u < gamma * lambda.

    Parameters
    ----------
    rank, attraction, continuation : ndarray, shape (n_docs,)
        As in ``cascade_examination``.
    propensity : ndarray, shape (n_docs,)
        What each document's clicks are logged with (the click model decides).
    offsets : ndarray, shape (n_queries + 1,)
    passes : int
    rng : numpy.random.Generator
    chunk_impressions : int
        Upper bound on (session, document) draws held at once (memory), without effect on
        the sessions' distribution.
    progress : callable, optional
        Called with the number of passes completed after each chunk.

    Returns
    -------
    ClickLog
        In pass order, within a pass by document.
    """
    order, starts, doc_query = _rank_major(rank, offsets)
    attraction = np.asarray(attraction, dtype=np.float64)
    go_on = attraction * np.asarray(continuation, dtype=np.float64)
    n_queries = len(offsets) - 1

    def draw(chunk):
        examining = np.ones((chunk, n_queries), dtype=bool)
        hit_pass, hit_doc = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
        for r in range(len(starts) - 1):
            docs = order[starts[r] : starts[r + 1]]
            queries = doc_query[docs]
            u = rng.random((chunk, len(docs)))
            looking = examining[:, queries]
            click = looking & (u < attraction[docs])
            examining[:, queries] = looking & ~(click & (u >= go_on[docs]))
            at_pass, at_col = np.nonzero(click)
            hit_pass.append(at_pass)
            hit_doc.append(docs[at_col])
        return np.concatenate(hit_pass), np.concatenate(hit_doc)

    pass_index, doc = draw_sessions(
        draw, passes=passes, draws_per_pass=len(order), chunk_impressions=chunk_impressions, progress=progress
    )
    in_order = np.lexsort((doc, pass_index))
    return logged_clicks(
        doc[in_order], pass_index[in_order], rank=rank, propensity=propensity, offsets=offsets, passes=passes
    )


def cascade_propensity(session: np.ndarray, rank: np.ndarray, continuation: np.ndarray) -> np.ndarray:
    """Cascade propensity of every click: prod of lambda over the clicks above it in its session.

    Vardasbi et al. (2020), Sec. 3 (CM-IPS for the DCM): P(E_k = 1 | c_<k) =
    prod_{i<k} (1 - c_i (1 - lambda_i)). Dividing a click by it is unbiased for gamma at
    every rank: with L_i ~ Bernoulli(lambda_i) the decision to go on after a click at i,
    c_k = A_k prod_{i<k} (1 - c_i + c_i L_i), and E[prod_{i<k} (1 - c_i + c_i L_i / lambda_i)]
    = 1 because each factor has conditional mean 1 given everything before it.

    Parameters
    ----------
    session : ndarray of int, shape (n_clicks,)
        Session of each click (``ClickLog.session``).
    rank : ndarray of int, shape (n_clicks,)
        Rank of each click in its session.
    continuation : ndarray, shape (n_clicks,)
        lambda of each click's rank.

    Returns
    -------
    propensity : ndarray, shape (n_clicks,)
        1 for the top click of a session. A click below one whose lambda is 0 cannot happen
        under the model; it would get 0.
    """
    session = np.asarray(session, dtype=np.int64)
    continuation = np.asarray(continuation, dtype=np.float64)
    order = np.lexsort((np.asarray(rank, dtype=np.int64), session))
    ordered_session = session[order]
    ordered_lambda = continuation[order]
    new_session = np.ones(len(order), dtype=bool)
    new_session[1:] = ordered_session[1:] != ordered_session[:-1]
    start = np.maximum.accumulate(np.where(new_session, np.arange(len(order)), 0))
    position = np.arange(len(order)) - start
    by_position = np.argsort(position, kind="stable")
    bounds = np.searchsorted(position[by_position], np.arange(1, int(position.max(initial=0)) + 2))
    ordered = np.ones(len(order))
    # the j-th click of a session from the (j-1)-th: a loop over positions, vectorised over sessions
    for j in range(len(bounds) - 1):
        at = by_position[bounds[j] : bounds[j + 1]]
        ordered[at] = ordered[at - 1] * ordered_lambda[at - 1]
    propensity = np.empty(len(order))
    propensity[order] = ordered
    return propensity
