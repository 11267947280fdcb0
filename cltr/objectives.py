"""Rank weights lambda(r), the hinge rank bound and the propensity-weighted risk R(f).

Legend (paper Sec. 3, Table 1, and Sec. 4, Eq. riskhinge):
    y_i, clicked result of example i  -> ``click_doc[i]`` (a row of the split's X)
    Y_i, candidate set of example i   -> rows ``offsets[click_query[i]]:offsets[click_query[i]+1]``
    q_i, propensity of the click      -> ``propensity[i]``
    lambda(r), rank weighting         -> a ``RankWeight``
    f(x_i, y), score                  -> ``scores[doc]``
"""

from __future__ import annotations

import numpy as np

__all__ = ["click_pairs"]


def click_pairs(
    offsets: np.ndarray,
    click_query: np.ndarray,
    click_doc: np.ndarray,
    candidate: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Every (example, other candidate) pair, as two flat index arrays.

    Parameters
    ----------
    offsets : ndarray, shape (n_queries + 1,)
        Query offsets of the split.
    click_query : ndarray, shape (n_examples,)
        Query index of each example.
    click_doc : ndarray, shape (n_examples,)
        Row (document index in the split) of each example's clicked/positive document.
    candidate : ndarray of bool, shape (n_docs,), optional
        Which documents may stand on the other side of a pair. ``None``: every
        document of the query (click data). For full-information Ranking SVMs pass
        ``~relevant`` so that Y_i is the query's irrelevant documents.

    Returns
    -------
    pair_example : ndarray of int64, shape (n_pairs,)
        Example index i of each pair, non-decreasing.
    pair_doc : ndarray of int64, shape (n_pairs,)
        The other document y of each pair, never equal to ``click_doc[i]``.
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    click_query = np.asarray(click_query, dtype=np.int64)
    click_doc = np.asarray(click_doc, dtype=np.int64)
    starts = offsets[click_query]
    sizes = offsets[click_query + 1] - starts
    n_pairs = int(sizes.sum())
    pair_example = np.repeat(np.arange(len(click_query), dtype=np.int64), sizes)
    first_pair = np.cumsum(sizes) - sizes
    pair_doc = np.arange(n_pairs, dtype=np.int64) + np.repeat(starts - first_pair, sizes)
    keep = pair_doc != click_doc[pair_example]
    if candidate is not None:
        keep &= np.asarray(candidate, dtype=bool)[pair_doc]
    return pair_example[keep], pair_doc[keep]
