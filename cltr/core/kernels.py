"""Compiled (numba) kernels of the hot loops: the sorted hinge computation behind
``objectives.risk_gradient``, the pair passes of the SVM solver (``cltr.core.svm``) and the
ranking of a split's documents.

The sorted hinges. ``objectives._sorted_hinges`` finds every example's active documents by sorting
each query's scores once; in numpy that costs a global argsort, a stable sort on the query, a
binary search run on all examples at once (about log2(largest query) passes over every array) and
prefix sums in extended precision. Tree PropDCG calls it once per tree and Deep PropDCG once per
minibatch, so it dominates both. The two kernels here do the same work in one pass per query:

- ``hinges``: sort each query's candidate scores, run each example's binary search with the very
  comparison of the numpy version (``1.0 - (f(y_i) - f(y)) > 0.0``, so the active pairs are the
  same ones), and sum its active margins;
- ``spread``: Σ_{i : y in A_i} w_i per document, a prefix sum within each query of the weights
  put at each example's first active position.

Boosting moves the scores a little per tree, so the order of one call is nearly the order of the
next: given it (``hint``, ``objectives.SortHint``), ``hinges`` sorts each query by insertion from
it, with (score, document) as the key so that the result is the stable sort's exactly. The
per-query sort was about half of the kernel; hinted, the whole call on Tree PropDCG's problem
is 1.7x faster at scores moved by N(0, 0.01) (``python bench/objective.py``), and the
figures' Tree PropDCG CPU fell by 7% (docs/results/benchmarks.md).

Numerics. The numpy version sums in extended precision (``np.longdouble``) because it subtracts
running sums over the whole split. The kernels subtract nothing large: a query's sorted scores
t_0 <= ... <= t_{k-1} give D_p = Σ_{j>=p} (t_j - t_p) by the recurrence
D_p = D_{p+1} + (k - 1 - p)(t_{p+1} - t_p), a sum of non-negative terms, and an example whose
active suffix starts at p has 1 + Σ_{y active, y != y_i} margin = D_p + |suffix| (1 - f(y_i) + t_p)
+ (1 - own), again non-negative terms (own = 1 when the clicked document is a candidate: it is in
its own suffix with margin exactly 1). Prefix sums of signed weights are compensated (Neumaier),
and the clicked document's own weight is taken off before the compensation is added back. Both
computations agree to about 1e-13 relative (``tests/core/test_kernels.py`` holds them to 1e-12).

The pair passes. Each iteration of the OCAS solver sweeps every pair (clicked document d, other
document y of its query) three or four times: φ'(0+) along the ray (``pairs_scan``), the line
search's breakpoints around its root (``pairs_breaks``, once or twice), and the next cutting plane
(``pairs_advance``); the objective's hinge sums per clicked document (``hinge_sums``) are one more
such sweep. The numpy passes (``_Pairs`` in ``cltr.core.svm.pairs``, kept as the fallback and the
tests' oracle) keep each pair's slack and slope in arrays of pair length and stream four of them
per pass: memory-bound, about 3-4 ms per million pairs here. The kernels (``_CompiledPairs``)
compute slack 1 - (s_d - s_y) and slope Δs_d - Δs_y from the per-row scores and their change
along the ray, which stay in cache, so a pass reads one index per pair: 2.5-4x faster for scan,
advance and the hinge sums, level for the breakpoints (``python bench/pair_passes.py`` times
each pass both ways; docs/results/benchmarks.md has its figures). The slacks are the numpy
version's up to rounding (its are updated by k·slope in place, these recomputed from the moved
scores), so sums and a breakpoint lying exactly on a bracket's end may differ in the last digits;
``tests/core/test_kernels.py`` compares the two.

The ranking. ``ranking.rank_documents`` orders every document by (query, descending score,
a seeded tie-break permutation) with one ``np.lexsort`` over the whole split; ``ranks`` sorts
one query at a time and puts only runs of equal scores in tie-break order: the same ranks,
about 4-5x faster on a 20,000-document validation split (1.5-2 ms against 7-8 ms), which
early stopping ranks after every tree or epoch. ``rank_documents`` takes it only where the
kernels are ``loaded`` already, so a one-shot ranking never pays numba's import.

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

__all__ = [
    "enabled",
    "loaded",
    "hinges",
    "spread",
    "pairs_scan",
    "pairs_breaks",
    "pairs_advance",
    "hinge_sums",
    "ranks",
]

_KERNELS: SimpleNamespace | bool | None = None  # None: not tried yet; False: numba is missing


def enabled() -> bool:
    """Whether the compiled kernels serve ``objectives`` and the solver: numba importable, ``CLTR_NO_NUMBA`` unset.

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
            _KERNELS = SimpleNamespace(
                hinges=jit(_hinges_kernel),
                spread=jit(_spread_kernel),
                pairs_scan=jit(_pairs_scan_kernel),
                pairs_breaks=jit(_pairs_breaks_kernel),
                pairs_advance=jit(_pairs_advance_kernel),
                hinge_sums=jit(_hinge_sums_kernel),
                ranks=jit(_ranks_kernel),
            )
    return _KERNELS


def loaded() -> bool:
    """Whether the kernels serve (``enabled``) and numba is already imported in this process:
    for work that is faster compiled but too small to pay numba's import (about 0.4 s) alone."""
    return _KERNELS not in (None, False) and enabled()


def hinges(scores, offsets, click_query, click_doc, candidate, hint=None):
    """Each query's candidates sorted by score, and every example's active suffix and bound.

    Parameters
    ----------
    scores : ndarray of float64, shape (n_docs,)
    offsets : ndarray of int64, shape (n_queries + 1,)
    click_query, click_doc : ndarray of int64, shape (n_examples,)
        Checked by ``objectives.check_example_rows``.
    candidate : ndarray of bool, shape (n_docs,), or None
        Which documents may be y in Y_i; None: all of the query.
    hint : ndarray of int64, shape (n_candidates,), optional
        The ``order`` of an earlier call on the same offsets and candidates: each query is
        sorted by insertion starting from it, near-linear when the scores have moved little
        since (one tree of boosting). The result is the same with or without it: a query
        whose part of the hint is not a permutation of its candidates, or that needs too
        many moves, is sorted from scratch.

    Returns
    -------
    order : ndarray of int64, shape (n_candidates,)
        Candidate documents sorted by (query, score), ties (and NaNs, last) by document.
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
    use_hint = hint is not None
    return _compiled().hinges(
        np.ascontiguousarray(scores, dtype=np.float64),
        np.ascontiguousarray(offsets, dtype=np.int64),
        np.ascontiguousarray(click_query, dtype=np.int64),
        np.ascontiguousarray(click_doc, dtype=np.int64),
        mask,
        use_candidate,
        np.ascontiguousarray(hint, dtype=np.int64) if use_hint else np.zeros(0, dtype=np.int64),
        use_hint,
    )


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
    return _compiled().spread(
        np.ascontiguousarray(w, dtype=np.float64), order, start, first, own, click_query, click_doc, n_docs
    )


# A run is a clicked document's pairs, one after another in ``negative`` (its other documents'
# rows); ``count`` holds each run's number of pairs (0 allowed), ``run_row`` its own row and
# ``run_weight`` the weight a_r >= 0 of each of its pairs. A pair's slack 1 - (s_d - s_y) and its
# slope along the ray Δs_d - Δs_y are computed from the per-row ``scores`` and ``change``, which
# stay in cache, so a pass reads one index per pair from memory.


def pairs_scan(scores, change, negative, run_row, count, run_weight) -> float:
    """φ'(0+)'s pair part: Σ a_p slope_p over the pairs in the hinge just after k = 0
    (slack > 0, or slack = 0 and slope < 0).

    Parameters
    ----------
    scores, change : ndarray of float64, shape (n_rows,)
        The scores at the best point and their change along the ray.
    negative : ndarray of int64, shape (n_pairs,)
    run_row, count : ndarray of int64, shape (n_runs,)
    run_weight : ndarray of float64, shape (n_runs,)
    """
    return _compiled().pairs_scan(scores, change, negative, run_row, count, run_weight)


def pairs_breaks(scores, change, negative, run_row, count, run_weight, low: float, high: float, breaks, jumps):
    """The line search's breakpoints k_p = slack_p / slope_p in (low, high] and their jumps
    a_p |slope_p|, written to the front of ``breaks`` and ``jumps`` (each of n_pairs);
    returns (Σ jumps, Σ jump·k_p) over the breakpoints in (0, low] and how many were written."""
    return _compiled().pairs_breaks(
        scores, change, negative, run_row, count, run_weight, float(low), float(high), breaks, jumps
    )


def pairs_advance(scores, change, k: float, cut: float, negative, run_row, count, run_weight, n_rows: int):
    """The cutting plane at slack_p - cut·slope_p, slack_p taken at ``scores`` + k·``change``:
    δ_p = [cut·slope_p < slack_p]. Returns its offset Σ a_p δ_p and its per-row coefficients,
    shape (n_rows,) (Σ a_p δ_p over a row's runs minus over the pairs it is the other document of)."""
    return _compiled().pairs_advance(
        scores, change, float(k), float(cut), negative, run_row, count, run_weight, int(n_rows)
    )


def hinge_sums(scores, negative, run_row, count):
    """Σ_y max(0, 1 - (s_d - s_y)) over each run's pairs, shape (n_runs,) (0 for an empty run)."""
    return _compiled().hinge_sums(scores, negative, run_row, count)


def ranks(scores, offsets, tie_break):
    """1-based ranks within each query by descending score, ties by ascending ``tie_break``
    (a permutation of the documents): ``ranking.rank_documents``'s order, one query at a time.

    Parameters
    ----------
    scores : ndarray of float64, shape (n_docs,), finite
    offsets : ndarray of int64, shape (n_queries + 1,)
    tie_break : ndarray of int64, shape (n_docs,)
        Distinct values.
    """
    return _compiled().ranks(
        np.ascontiguousarray(scores, dtype=np.float64),
        np.ascontiguousarray(offsets, dtype=np.int64),
        np.ascontiguousarray(tie_break, dtype=np.int64),
    )


# --------------------------------------------------------------------------- the kernels (numba nopython code)


def _hinges_kernel(scores, offsets, click_query, click_doc, mask, use_candidate, hint, use_hint):
    n_queries = len(offsets) - 1
    n_examples = len(click_doc)
    largest = 0
    for q in range(n_queries):
        largest = max(largest, offsets[q + 1] - offsets[q])
    docs = np.empty(largest, dtype=np.int64)
    values = np.empty(largest, dtype=np.float64)
    order = np.empty(len(scores), dtype=np.int64)
    ordered = np.empty(len(scores), dtype=np.float64)  # the scores in ``order``
    above = np.empty(len(scores), dtype=np.float64)  # D_p = Σ_{j >= p in its query} (t_j - t_p)
    start = np.empty(n_queries + 1, dtype=np.int64)
    stamp = np.zeros(len(scores) if use_hint else 0, dtype=np.int64)  # q + 1 where the hint placed a document
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
        done = False
        if use_hint and at + k <= len(hint):
            # the hint's k entries must be this query's k candidates, each once, or it is not used
            done = True
            for j in range(k):
                d = hint[at + j]
                if d < offsets[q] or d >= offsets[q + 1] or (use_candidate and not mask[d]) or stamp[d] == q + 1:
                    done = False
                    break
                stamp[d] = q + 1
        if done:
            # insertion sort from the hint's order by (score, document), NaN last: the one order
            # the stable sort below gives the documents gathered in index order. Near-linear
            # when the scores moved little; past a budget of moves, the sort below instead.
            budget = 8 * k + 64
            moves = 0
            for j in range(k):
                d = hint[at + j]
                v = scores[d]
                p = at + j - 1
                while p >= at:
                    u = ordered[p]
                    e = order[p]
                    if v < u:
                        before = True
                    elif v > u:
                        before = False
                    elif v == u:
                        before = d < e
                    else:  # a NaN: after every number, NaNs by document
                        before = (u != u) and ((v == v) or d < e)
                    if not before:
                        break
                    order[p + 1] = e
                    ordered[p + 1] = u
                    p -= 1
                    moves += 1
                order[p + 1] = d
                ordered[p + 1] = v
                if moves > budget:
                    done = False
                    break
        if not done:
            by_score = np.argsort(values[:k], kind="mergesort")  # stable; measured faster than numba's quicksort here
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
    # an example's values depend on its clicked document only (its query follows from the
    # row), and a log repeats documents: each is computed at its first example, then copied
    seen = np.full(len(scores), -1, dtype=np.int64)  # the first example of each clicked document
    for i in range(n_examples):
        d = click_doc[i]
        j = seen[d]
        if j >= 0:
            first[i] = first[j]
            own[i] = own[j]
            bound[i] = bound[j]
            n_active[i] = n_active[j]
            continue
        seen[d] = i
        q = click_query[i]
        lo = start[q]
        hi = start[q + 1]
        end = hi
        clicked = scores[d]
        # the first position with margin > 0, by objectives._margins' own expression
        while lo < hi:
            mid = (lo + hi) // 2
            if 1.0 - (clicked - ordered[mid]) > 0.0:
                hi = mid
            else:
                lo = mid + 1
        first[i] = lo
        own[i] = not use_candidate or mask[d]
        count = end - lo
        if count > 0:
            bound[i] = above[lo] + count * (1.0 - clicked + ordered[lo]) + (0.0 if own[i] else 1.0)
        else:
            bound[i] = 1.0
        n_active[i] = count - (1 if own[i] else 0)
    return order, start, first, own, bound, n_active


def _spread_kernel(w, order, start, first, own, click_query, click_doc, n_docs):
    n_positions = len(order)
    placed = np.zeros(n_positions, dtype=np.float64)  # each example's weight at its first active position
    for i in range(len(w)):
        if first[i] < start[click_query[i] + 1]:
            placed[first[i]] += w[i]
    own_weight = np.zeros(n_docs, dtype=np.float64)  # the clicked document is in its own suffix
    for i in range(len(w)):
        if own[i]:
            own_weight[click_doc[i]] += w[i]
    out = np.zeros(n_docs, dtype=np.float64)
    for q in range(len(start) - 1):
        total = 0.0
        error = 0.0  # Neumaier's compensation of the running sum
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


def _pairs_scan_kernel(scores, change, negative, run_row, count, run_weight):
    total = 0.0
    p = 0
    for r in range(len(count)):
        positive, moved = scores[run_row[r]], change[run_row[r]]
        run = 0.0
        for j in range(p, p + count[r]):
            y = negative[j]
            slack = (scores[y] - positive) + 1.0
            slope = moved - change[y]
            # bitwise tests and selects, not branches: which pairs are active is unpredictable
            run += slope if (slack > 0.0) | ((slack == 0.0) & (slope < 0.0)) else 0.0
        p += count[r]
        total += run_weight[r] * run
    return total


def _pairs_breaks_kernel(scores, change, negative, run_row, count, run_weight, low, high, breaks, jumps):
    # k_p = slack / slope is tested by products (0 < k_p <= t: same signs and |slack| <= t |slope|)
    # and divided only where it is kept: a division per pair costs more than the rest of the pass
    base = 0.0
    moment = 0.0
    found = 0
    p = 0
    for r in range(len(count)):
        positive, moved, weight = scores[run_row[r]], change[run_row[r]], run_weight[r]
        for j in range(p, p + count[r]):
            y = negative[j]
            slope = moved - change[y]
            slack = (scores[y] - positive) + 1.0
            size, reach = abs(slack), abs(slope)
            same = ((slack > 0.0) & (slope > 0.0)) | ((slack < 0.0) & (slope < 0.0))
            below = same & (size <= low * reach)
            base += weight * reach if below else 0.0
            moment += weight * size if below else 0.0  # jump * k_p
            if same & (not below) & (size <= high * reach):
                breaks[found] = slack / slope
                jumps[found] = weight * reach
                found += 1
        p += count[r]
    return base, moment, found


def _pairs_advance_kernel(scores, change, k, cut, negative, run_row, count, run_weight, n_rows):
    coef = np.zeros(n_rows, dtype=np.float64)
    offset = 0.0
    p = 0
    for r in range(len(count)):
        positive, moved, weight = scores[run_row[r]], change[run_row[r]], run_weight[r]
        active = 0.0
        for j in range(p, p + count[r]):
            y = negative[j]
            slope = moved - change[y]
            slack = (scores[y] - positive) + 1.0
            if k > 0.0:
                slack -= slope * k
            plane = 1.0 if slope * cut < slack else 0.0
            coef[y] -= weight * plane
            active += plane
        p += count[r]
        coef[run_row[r]] += weight * active
        offset += weight * active
    return offset, coef


def _hinge_sums_kernel(scores, negative, run_row, count):
    sums = np.zeros(len(count), dtype=np.float64)
    p = 0
    for r in range(len(count)):
        positive = scores[run_row[r]]
        total = 0.0
        for _ in range(count[r]):
            value = (scores[negative[p]] - positive) + 1.0
            total += value if not value <= 0.0 else 0.0  # NaN counts, as numpy's maximum keeps it
            p += 1
        sums[r] = total
    return sums


def _ranks_kernel(scores, offsets, tie_break):
    ranks = np.empty(len(scores), dtype=np.int64)
    largest = 0
    for q in range(len(offsets) - 1):
        largest = max(largest, offsets[q + 1] - offsets[q])
    keys = np.empty(largest, dtype=np.float64)
    for q in range(len(offsets) - 1):
        lo, m = offsets[q], offsets[q + 1] - offsets[q]
        if m == 0:
            continue
        # descending score (-0.0 and 0.0 tie, as in np.lexsort), then each run of equal
        # scores put in tie-break order: ties are rare unless the scorer is constant
        for j in range(m):
            keys[j] = -scores[lo + j]
        order = np.argsort(keys[:m])
        start = 0
        while start < m:
            end = start + 1
            while end < m and keys[order[end]] == keys[order[start]]:
                end += 1
            if end - start > 1:
                run = order[start:end].copy()
                by_tie = np.argsort(tie_break[lo + run])
                for j in range(end - start):
                    order[start + j] = run[by_tie[j]]
            start = end
        for r in range(m):
            ranks[lo + order[r]] = r + 1
    return ranks
