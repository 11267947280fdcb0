"""Compiled (numba) kernels of the sorted hinge computation behind ``objectives.risk_gradient``.

``objectives._sorted_hinges`` finds every example's active documents by sorting each query's
scores once; in numpy that costs a global argsort, a stable sort on the query, a binary search
run on all examples at once (about log2(largest query) passes over every array) and prefix sums
in extended precision. Tree PropDCG calls it once per tree and Deep PropDCG once per
minibatch, so it dominates both. The two kernels here do the same work in one pass per query:

- ``hinges``: sort each query's candidate scores, run each example's binary search with the very
  comparison of the numpy version (``1.0 - (f(y_i) - f(y)) > 0.0``, so the active pairs are the
  same ones), and sum its active margins;
- ``spread``: Σ_{i : y in A_i} w_i per document, a prefix sum within each query of the weights
  put at each example's first active position.

Numerics. The numpy version sums in extended precision (``np.longdouble``) because it subtracts
running sums over the whole split. The kernels subtract nothing large: a query's sorted scores
t_0 <= ... <= t_{k-1} give D_p = Σ_{j>=p} (t_j - t_p) by the recurrence
D_p = D_{p+1} + (k - 1 - p)(t_{p+1} - t_p), a sum of non-negative terms, and an example whose
active suffix starts at p has 1 + Σ_{y active, y != y_i} margin = D_p + |suffix| (1 - f(y_i) + t_p)
+ (1 - own), again non-negative terms (own = 1 when the clicked document is a candidate: it is in
its own suffix with margin exactly 1). Prefix sums of signed weights are compensated (Neumaier),
and the clicked document's own weight is taken off before the compensation is added back. Both
computations agree to about 1e-13 relative (``tests/core/test_kernels.py`` holds them to 1e-12).

When they run. numba is imported, and the kernels compiled (``cache=True``: numba keeps the
machine code beside this file, so only the first start on a machine pays the compilation of a
few seconds), the first time a kernel is asked for, never when ``cltr`` is imported. They are
not used, and the numpy version runs, when numba is not installed or when the environment
variable ``CLTR_NO_NUMBA`` is set to anything but ``""`` or ``"0"`` (e.g. ``CLTR_NO_NUMBA=1``;
read at every call, so a test can switch it).
"""

from __future__ import annotations

import os
from types import SimpleNamespace

import numpy as np

__all__ = ["enabled", "hinges", "spread"]

_KERNELS: SimpleNamespace | bool | None = None   # None: not tried yet; False: numba is missing


def enabled() -> bool:
    """Whether the compiled kernels serve ``objectives``: numba importable and ``CLTR_NO_NUMBA`` unset.

    Returns
    -------
    bool
        The first True call imports numba (compilation happens at each kernel's first call).
    """
    if os.environ.get("CLTR_NO_NUMBA", "") not in ("", "0"):
        return False
    return _compiled() is not False


def _compiled():
    global _KERNELS
    if _KERNELS is None:
        try:
            import numba
        except ImportError:
            _KERNELS = False
        else:
            jit = numba.njit(cache=True, nogil=True)
            _KERNELS = SimpleNamespace(hinges=jit(_hinges_kernel), spread=jit(_spread_kernel))
    return _KERNELS


def hinges(scores, offsets, click_query, click_doc, candidate):
    """Each query's candidates sorted by score, and every example's active suffix and bound.

    Parameters
    ----------
    scores : ndarray of float64, shape (n_docs,)
    offsets : ndarray of int64, shape (n_queries + 1,)
    click_query, click_doc : ndarray of int64, shape (n_examples,)
        Checked by ``objectives.check_example_rows``.
    candidate : ndarray of bool, shape (n_docs,), or None
        Which documents may be y in Y_i; None: all of the query.

    Returns
    -------
    order : ndarray of int64, shape (n_candidates,)
        Candidate documents sorted by (query, score).
    start : ndarray of int64, shape (n_queries + 1,)
        Query q's candidates are ``order[start[q]:start[q + 1]]``.
    first : ndarray of int64, shape (n_examples,)
        Each example's first active position in ``order`` (``start[q + 1]`` when none is active).
    own : ndarray of bool, shape (n_examples,)
        Whether the clicked document is a candidate (and so in its own active suffix).
    bound : ndarray of float64, shape (n_examples,)
        1 + Σ_{y in Y_i, y != y_i} max(0, 1 - (f(y_i) - f(y))).
    n_active : ndarray of int64, shape (n_examples,)
        |A_i|, the active pairs of each example.
    """
    use_candidate = candidate is not None
    mask = np.ascontiguousarray(candidate, dtype=np.bool_) if use_candidate else np.ones(0, dtype=np.bool_)
    return _compiled().hinges(np.ascontiguousarray(scores, dtype=np.float64),
                              np.ascontiguousarray(offsets, dtype=np.int64),
                              np.ascontiguousarray(click_query, dtype=np.int64),
                              np.ascontiguousarray(click_doc, dtype=np.int64), mask, use_candidate)


def spread(w, order, start, first, own, click_query, click_doc, n_docs):
    """Σ_{i : y in A_i, y != y_i} w_i for every document y, from the output of ``hinges``.

    Parameters
    ----------
    w : ndarray of float64, shape (n_examples,)
        A weight per example, of either sign.
    order, start, first, own
        As ``hinges`` returns them.
    click_query, click_doc : ndarray of int64, shape (n_examples,)
    n_docs : int

    Returns
    -------
    ndarray of float64, shape (n_docs,)
        Zero for documents in no active pair.
    """
    return _compiled().spread(np.ascontiguousarray(w, dtype=np.float64), order, start, first, own,
                              click_query, click_doc, n_docs)


# --------------------------------------------------------------------------- the kernels (numba nopython code)


def _hinges_kernel(scores, offsets, click_query, click_doc, mask, use_candidate):
    n_queries = len(offsets) - 1
    n_examples = len(click_doc)
    largest = 0
    for q in range(n_queries):
        largest = max(largest, offsets[q + 1] - offsets[q])
    docs = np.empty(largest, dtype=np.int64)
    values = np.empty(largest, dtype=np.float64)
    order = np.empty(len(scores), dtype=np.int64)
    ordered = np.empty(len(scores), dtype=np.float64)   # the scores in ``order``
    above = np.empty(len(scores), dtype=np.float64)     # D_p = Σ_{j >= p in its query} (t_j - t_p)
    start = np.empty(n_queries + 1, dtype=np.int64)
    at = 0
    for q in range(n_queries):
        start[q] = at
        k = 0
        for d in range(offsets[q], offsets[q + 1]):
            if not use_candidate or mask[d]:
                docs[k] = d
                values[k] = scores[d]
                k += 1
        if k == 0:
            continue
        by_score = np.argsort(values[:k], kind="mergesort")     # measured faster than numba's quicksort here
        for j in range(k):
            order[at + j] = docs[by_score[j]]
            ordered[at + j] = values[by_score[j]]
        last = at + k - 1
        above[last] = 0.0
        for p in range(last - 1, at - 1, -1):
            above[p] = above[p + 1] + (last - p) * (ordered[p + 1] - ordered[p])
        at += k
    start[n_queries] = at
    order = order[:at]

    first = np.empty(n_examples, dtype=np.int64)
    own = np.empty(n_examples, dtype=np.bool_)
    bound = np.empty(n_examples, dtype=np.float64)
    n_active = np.empty(n_examples, dtype=np.int64)
    for i in range(n_examples):
        q = click_query[i]
        lo = start[q]
        hi = start[q + 1]
        end = hi
        clicked = scores[click_doc[i]]
        # the first position with margin > 0, by objectives._margins' own expression
        while lo < hi:
            mid = (lo + hi) // 2
            if 1.0 - (clicked - ordered[mid]) > 0.0:
                hi = mid
            else:
                lo = mid + 1
        first[i] = lo
        own[i] = not use_candidate or mask[click_doc[i]]
        count = end - lo
        if count > 0:
            bound[i] = above[lo] + count * (1.0 - clicked + ordered[lo]) + (0.0 if own[i] else 1.0)
        else:
            bound[i] = 1.0
        n_active[i] = count - (1 if own[i] else 0)
    return order, start, first, own, bound, n_active


def _spread_kernel(w, order, start, first, own, click_query, click_doc, n_docs):
    n_positions = len(order)
    placed = np.zeros(n_positions, dtype=np.float64)    # each example's weight at its first active position
    for i in range(len(w)):
        if first[i] < start[click_query[i] + 1]:
            placed[first[i]] += w[i]
    own_weight = np.zeros(n_docs, dtype=np.float64)     # the clicked document is in its own suffix
    for i in range(len(w)):
        if own[i]:
            own_weight[click_doc[i]] += w[i]
    out = np.zeros(n_docs, dtype=np.float64)
    for q in range(len(start) - 1):
        total = 0.0
        error = 0.0                                     # Neumaier's compensation of the running sum
        for p in range(start[q], start[q + 1]):
            term = placed[p]
            moved = total + term
            if abs(total) >= abs(term):
                error += (total - moved) + term
            else:
                error += (term - moved) + total
            total = moved
            doc = order[p]
            out[doc] = (total - own_weight[doc]) + error
    return out
