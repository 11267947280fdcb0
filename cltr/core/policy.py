"""Logging policies: top-k display, Plackett-Luce rankings and policy-aware propensities.

Legend (Oosterhuis, de Rijke, SIGIR 2020, "Policy-Aware Unbiased Learning to Rank for
Top-k Rankings", Sec. 4-5):
    k                              -> ``top_k``: only ranks 1..k are displayed
    pi(R | q)                      -> the logging policy: a Plackett-Luce model over the
                                      production scores s, P(d first) = softmax(s / T)_d,
                                      ``temperature`` T
    P(o = 1 | d, R) = theta_rank    -> ``examination[rank]``: examination of a displayed rank
                                      (0 for ranks below k)
    rho(d) = E_{R ~ pi}[P(o = 1 | d, R)]  -> ``policy_propensity`` (Eq. 17's propensity)

Plackett-Luce rankings are drawn by the Gumbel-max trick: sorting s / T + G with G i.i.d.
standard Gumbel ranks the documents exactly as sequential sampling without replacement
from softmax(s / T) would. Every array is flat over documents with query ``offsets``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["displayed", "plackett_luce_ranks", "policy_propensity"]


def displayed(rank: np.ndarray, offsets: np.ndarray, top_k: int) -> tuple[np.ndarray, np.ndarray]:
    """The documents of a ranking shown in a top-``top_k`` display.

    Parameters
    ----------
    rank : ndarray of int, shape (n_docs,)
    offsets : ndarray, shape (n_queries + 1,)
    top_k : int

    Returns
    -------
    shown : ndarray of int64, shape (n_shown,)
        Rows with rank <= top_k, in row order (so each query's stay contiguous).
    shown_offsets : ndarray of int64, shape (n_queries + 1,)
        Query offsets into ``shown``.
    """
    if top_k < 1:
        raise ValueError(f"top_k must be at least 1, found {top_k}")
    offsets = np.asarray(offsets, dtype=np.int64)
    sizes = np.diff(offsets)
    shown = np.flatnonzero(np.asarray(rank) <= top_k)
    per_query = np.bincount(np.repeat(np.arange(len(sizes)), sizes)[shown], minlength=len(sizes))
    return shown, np.concatenate([[0], np.cumsum(per_query)]).astype(np.int64)


def plackett_luce_ranks(
    scores: np.ndarray, offsets: np.ndarray, *, temperature: float, rng: np.random.Generator, samples: int = 1
) -> np.ndarray:
    """``samples`` rankings of every query drawn from the Plackett-Luce model softmax(scores / T).

    Parameters
    ----------
    scores : ndarray, shape (n_docs,)
    offsets : ndarray, shape (n_queries + 1,)
    temperature : float
        T > 0; small T approaches the deterministic ranking by score, large T a uniform one.
    rng : numpy.random.Generator
    samples : int

    Returns
    -------
    ranks : ndarray of int64, shape (samples, n_docs)
        1-based rank of each document within its query, one row per sample.
    """
    if not temperature > 0:
        raise ValueError(f"the logging temperature must be positive, found {temperature}")
    scores = np.asarray(scores, dtype=np.float64)
    offsets = np.asarray(offsets, dtype=np.int64)
    sizes = np.diff(offsets)
    # -log E with E ~ Exp(1) is a standard Gumbel draw, and about three times faster to make
    perturbed = rng.standard_exponential(size=(samples, len(scores)))
    np.log(perturbed, out=perturbed)
    np.subtract(scores / temperature, perturbed, out=perturbed)
    ranks = np.empty((samples, len(scores)), dtype=np.int64)
    # queries of one size form a (samples, queries, size) block without padding: sorting its
    # last axis ranks every (sample, query) at once, a loop over sizes, not documents
    for size in np.unique(sizes):
        starts = offsets[:-1][sizes == size]
        rows = (starts[:, None] + np.arange(size)).ravel()
        block = perturbed[:, rows].reshape(samples, len(starts), size)
        order = np.argsort(-block, axis=-1)
        place = np.empty_like(order)
        np.put_along_axis(place, order, np.arange(1, size + 1), axis=-1)
        ranks[:, rows] = place.reshape(samples, -1)
    return ranks


def policy_propensity(
    scores: np.ndarray,
    offsets: np.ndarray,
    examination: np.ndarray,
    *,
    temperature: float,
    rng: np.random.Generator,
    samples: int = 1000,
    chunk_docs: int = 1 << 22,
) -> np.ndarray:
    """Monte Carlo policy-aware propensity rho(d) = E_{R ~ PL(scores / T)}[examination[rank(d | R)]].

    Oosterhuis and de Rijke (2020), Eq. 17: the examination probability of a document
    averaged over the logging policy's rankings, 0 where it is not displayed. A click on d
    divided by rho(d) is unbiased for d's relevance whenever rho(d) > 0, however rarely d
    is displayed.

    Parameters
    ----------
    scores : ndarray, shape (n_docs,)
    offsets : ndarray, shape (n_queries + 1,)
    examination : ndarray, shape (max_rank + 1,)
        theta of each rank (index = rank; entry 0 unused), 0 for ranks not displayed;
        ranks beyond its end count as not displayed.
    temperature : float
    rng : numpy.random.Generator
    samples : int
        Rankings averaged over (the Monte Carlo error of rho is about
        sqrt(rho theta_1 / samples)).
    chunk_docs : int
        Upper bound on (sample, document) ranks held at once (memory), without effect on
        the result.

    Returns
    -------
    rho : ndarray, shape (n_docs,)
        A document displayed in none of the samples gets the contribution of one display
        at the least examined displayed rank, min theta / samples, rather than 0: the
        Monte Carlo resolution, so that no clicked document is divided by 0.
    """
    if samples < 1:
        raise ValueError(f"samples must be at least 1, found {samples}")
    examination = np.asarray(examination, dtype=np.float64)
    n_docs = len(scores)
    theta = np.concatenate([examination, np.zeros(max(0, int(np.diff(offsets).max(initial=0)) + 1 - len(examination)))])
    per_chunk = max(1, chunk_docs // max(1, n_docs))
    total = np.zeros(n_docs)
    done = 0
    while done < samples:
        chunk = min(per_chunk, samples - done)
        ranks = plackett_luce_ranks(scores, offsets, temperature=temperature, rng=rng, samples=chunk)
        total += theta[ranks].sum(axis=0)
        done += chunk
    shown = theta[1:][theta[1:] > 0]
    floor = shown.min() / samples if len(shown) else 0.0
    return np.maximum(total / samples, floor)
