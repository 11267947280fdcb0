"""The weighted pairwise linear SVM behind SVM Rank, SVM PropRank and every CCP step of SVM PropDCG.

Legend (paper Sec. 4.1, the propensity-weighted Ranking SVM of Joachims et al. 2017):
    w                        -> ``w``, the linear scorer f(x, y) = w . phi(x, y)
    phi(x_i, y)              -> ``X[y]`` (documents stored once, grouped by query via ``offsets``)
    C, n                     -> ``C``, number of examples (clicks) ``len(click_doc)``
    c_i (1, 1/q_i or 1/q'_i) -> ``cost[i]``
    y_i                      -> ``click_doc[i]``
    Y_i                      -> rows of query ``click_query[i]`` (where ``candidate``), minus y_i
    xi_iy                    -> the hinge max(0, 1 - w.(x_{y_i} - x_y)) of pair (i, y)

Primal and dual (a_i = C c_i / n, d_iy = x_{y_i} - x_y):

    P(w) = ½‖w‖² + Σ_(i,y) a_i max(0, 1 - w.d_iy)
    D(α) = Σ α_iy - ½‖Σ α_iy d_iy‖²,   0 <= α_iy <= a_i,   and D(α) <= min P <= P(w).

Solver: OCAS (Franc & Sonnenburg, "Optimized cutting plane algorithm for large-scale risk
minimization", JMLR 2009). For any δ in [0, 1]^pairs, R(w) = Σ a_i max(0, 1 - w.d_iy) is
at least the plane b - g.w with b = Σ a_i δ_iy and g = Σ a_i δ_iy d_iy; δ = [w_t.d_iy < 1]
makes it touch R at w_t. Each iteration

1. minimises ½‖w‖² + max(0, max_t b_t - g_t.w) over the planes so far: a tiny QP, solved
   in its dual max_{β in simplex} Σ β_t b_t - ½‖Σ β_t g_t‖² by a primal active-set method
   whose Cholesky factor is updated as planes enter and leave (``_PlaneQP``); its solution
   is w_cp = Σ β_t g_t;
2. moves the best point w_b to the exact minimiser of P on the ray w_b + k (w_cp - w_b),
   k >= 0: P is piecewise quadratic along it, so with the margins at w_cp (one X @ w_cp)
   the minimiser follows from the breakpoints near it, which a fixed sample of the pairs
   locates before one pass collects them;
3. adds the plane at w_c = 0.9 w_b + 0.1 w_cp (one X.T @ coef, where coef aggregates the
   pair coefficients per document, so each document's features are read once).

The margins at w_c follow from those at w_b and w_cp without a product, and the pair
passes sweep blocks of pairs small enough to stay in cache.

The certificate: α_iy = a_i Σ_t β_t δ^t_iy lies in the dual box and D(α) equals the reduced
dual value, so ``lower_bound`` is a dual value of the full problem and
``(objective - lower_bound) / objective`` a certified relative duality gap. Examples with
the same clicked document (the candidate set follows from it) are merged by adding their
costs, which leaves P unchanged; with many passes of clicks this shrinks the pairs a lot.

float32 X is never copied whole, and inside the loop every product is a float32 product
(X.T @ coef summed in float64 over blocks of rows): the scores only steer the search, and
the planes they give are slightly off, so their QP values are estimates. What is returned
is exact: once the estimates say done, one pass widens blocks of rows to float64 (float32
values are exact in float64) and computes P(w_b) and D(α) for the final β, from the planes'
stored per-document coefficients (Σ_t β_t g_t = X.T @ Σ_t β_t coef_t). If that gap misses
``tol``, or
the estimates stop making progress (no 1% smaller gap in 10 iterations), the solver goes
on with exact products only, from one exact plane that aggregates the old ones (a convex
combination of planes is a plane).

This module imports only numpy and scipy; it never prints or reads files (progress is a
callback).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import overload

import numpy as np
from scipy.linalg.lapack import dpotrs as _potrs
from scipy.linalg.lapack import dtrtrs as _trtrs

from cltr.core.objectives import check_example_rows

__all__ = ["SVMResult", "PairwiseProblem", "pairwise_objective", "solve_pairwise_svm", "train_ranking_svm",
           "train_svm_on_clicks", "solver_info"]

_TINY = 1e-12  # floor of |objective| in the relative gap
_CUT_STEP = 0.1  # OCAS's mu: the new plane is taken a tenth of the way from w_b to w_cp
_WIDE_BLOCK_BYTES = 1 << 22  # float32 rows widened to float64 per block: a 4 MB buffer
_NARROW_BLOCK_BYTES = 1 << 24  # float32 rows per float32 product block: 16 MB of X
_BLOCK_PAIRS = 1 << 17  # pairs per block of a pair pass: a few 1 MB slices stay in cache
_RIDGE = 1e-12  # the plane QP's ridge, relative to its largest Gram diagonal
_SAMPLE = 4096  # pairs sampled to bracket the line search's root
_IDLE = 10  # a plane unused (β = 0) for more than this many QP solves in a row is dropped
_STALL = 10  # iterations without a 1% smaller gap after which float32 products give way


@dataclass(frozen=True)
class SVMResult:
    """What ``solve_pairwise_svm`` returns.

    Attributes
    ----------
    w : ndarray of float64, shape (n_features,)
        The best primal point found.
    objective : float
        P(w), equal to ``pairwise_objective(w, ...)`` on the same data.
    lower_bound : float
        A dual value D(α) of a feasible α: min P >= lower_bound.
    gap : float
        ``(objective - lower_bound) / max(|objective|, 1e-12)``, certified.
    iterations : int
        Cutting planes added (each one ``X @ w`` and one ``X.T @ coef``).
    seconds : float
        Wall-clock time of the solve.
    converged : bool
        Whether ``gap <= tol``.
    """

    w: np.ndarray
    objective: float
    lower_bound: float
    gap: float
    iterations: int
    seconds: float
    converged: bool


# --------------------------------------------------------------------------- validation


def _check_inputs(X, offsets, click_query, click_doc, candidate):
    """Arrays in canonical dtypes, or a ValueError saying what must hold and what was found."""
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, shape (n_docs, n_features), found shape {X.shape}")
    if X.dtype != np.float32:
        X = np.asarray(X, dtype=np.float64)
    X = np.ascontiguousarray(X)
    n_docs = X.shape[0]
    offsets = np.asarray(offsets)
    if offsets.ndim != 1 or len(offsets) < 1 or not np.issubdtype(offsets.dtype, np.integer):
        raise ValueError(f"offsets must be a 1-D integer array (n_queries + 1,), found dtype "
                         f"{offsets.dtype} and shape {offsets.shape}")
    offsets = offsets.astype(np.int64)
    if offsets[0] != 0 or offsets[-1] != n_docs or np.any(np.diff(offsets) < 0):
        raise ValueError(f"offsets must rise from 0 to n_docs = {n_docs}, found "
                         f"{offsets[:1].tolist()}...{offsets[-1:].tolist()}"
                         + (" (decreasing somewhere)" if np.any(np.diff(offsets) < 0) else ""))
    click_query = np.asarray(click_query)
    click_doc = np.asarray(click_doc)
    if click_query.ndim != 1 or click_doc.ndim != 1:
        raise ValueError(f"click_query and click_doc must be 1-D, found shapes "
                         f"{click_query.shape} and {click_doc.shape}")
    n = len(click_doc)
    if len(click_query) != n:
        raise ValueError(f"click_query and click_doc must have one entry per example; found "
                         f"lengths {len(click_query)} and {n}")
    for name, values in (("click_query", click_query), ("click_doc", click_doc)):
        if n and not np.issubdtype(values.dtype, np.integer):
            raise ValueError(f"{name} must hold integer indices, found dtype {values.dtype}")
    click_query = click_query.astype(np.int64)
    click_doc = click_doc.astype(np.int64)
    check_example_rows(offsets, click_query, click_doc)
    if candidate is not None:
        candidate = np.asarray(candidate)
        if candidate.dtype != bool or candidate.shape != (n_docs,):
            raise ValueError(f"candidate must be a boolean mask over the documents, shape "
                             f"({n_docs},), found dtype {candidate.dtype} and shape {candidate.shape}")
    return X, offsets, click_query, click_doc, candidate


def _check_cost(cost, C: float, n_examples: int):
    cost = np.asarray(cost, dtype=np.float64)
    if cost.shape != (n_examples,):
        raise ValueError(f"cost must have one entry per example, shape ({n_examples},), found {cost.shape}")
    bad = ~np.isfinite(cost) | (cost < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"example {i}: cost must be finite and >= 0, found {cost[i]!r}")
    # bool(np.isscalar(...)): used bare, numpy's stub narrows C to str | bytes | ... and the
    # comparison no longer type-checks
    if isinstance(C, (bool, np.bool_)) or not bool(np.isscalar(C)) or not np.isfinite(C) or not C > 0:
        raise ValueError(f"C must be a finite number > 0, found {C!r}")
    return cost, float(C)


def _check_point(w, n_features: int, name: str) -> np.ndarray:
    w = np.asarray(w, dtype=np.float64)
    if w.shape != (n_features,):
        raise ValueError(f"{name} must have shape (n_features,) = ({n_features},), found {w.shape}")
    if not np.all(np.isfinite(w)):
        raise ValueError(f"{name} must be finite, found {np.count_nonzero(~np.isfinite(w))} "
                         "non-finite entries")
    return w


# --------------------------------------------------------------------------- products with X


def _weighted_sum(weight: np.ndarray, values: np.ndarray) -> float:
    """Σ weight * values without BLAS: a multithreaded ddot over pair-length vectors waits
    on busy cores (measured 25 ms instead of 10 µs for 25,000 pairs on a loaded 2-core
    machine), and numpy's pairwise sum is as accurate."""
    return float(np.multiply(weight, values).sum())


# what is asked for comes back: scores with w, the normal with coef
@overload
def _products(X: np.ndarray, w: np.ndarray, coef: np.ndarray | None = None, *,
              exact: bool = True) -> tuple[np.ndarray, np.ndarray | None]: ...


@overload
def _products(X: np.ndarray, w: None = None, *, coef: np.ndarray, exact: bool = True) -> tuple[None, np.ndarray]: ...


def _products(X: np.ndarray, w: np.ndarray | None = None, coef: np.ndarray | None = None, *,
              exact: bool = True) -> tuple[np.ndarray | None, np.ndarray | None]:
    """X @ w, shape (n_docs,), and X.T @ coef, shape (n_features,); either may be skipped (None).

    ``exact`` (and always for float64 X): float64 arithmetic. float32 X is widened to float64
    a block of rows at a time (its values are exact in float64), and each block serves both
    products, so X is read once. Every value the solver certifies goes through here, which
    is also what makes ``pairwise_objective`` and the solver agree to the last bit.

    Otherwise (float32 X): float32 products, X @ w returned in float32 and X.T @ coef summed
    in float64 over blocks of rows (one float32 sum over ~10^6 rows would lose about three
    digits).
    """
    if X.dtype == np.float64:
        return (None if w is None else X @ w), (None if coef is None else coef @ X)
    scores: np.ndarray | None
    total: np.ndarray | None
    if not exact:
        scores = None if w is None else X @ w.astype(np.float32)
        if coef is None:
            return scores, None
        coef32 = coef.astype(np.float32)
        rows = max(16, _NARROW_BLOCK_BYTES // (4 * X.shape[1]))
        total = np.zeros(X.shape[1])
        for start in range(0, X.shape[0], rows):
            total += coef32[start:start + rows] @ X[start:start + rows]
        return scores, total
    rows = max(16, _WIDE_BLOCK_BYTES // (8 * X.shape[1]))
    buffer = np.empty((min(rows, X.shape[0]), X.shape[1]))
    scores = None if w is None else np.empty(X.shape[0])
    total = None if coef is None else np.zeros(X.shape[1])
    for start in range(0, X.shape[0], rows):
        block = X[start:start + rows]
        wide = buffer[:len(block)]
        np.copyto(wide, block)
        if scores is not None and w is not None:
            np.dot(wide, w, out=scores[start:start + len(block)])
        if total is not None and coef is not None:
            total += coef[start:start + len(block)] @ wide
    return scores, total


def pairwise_objective(w, X, offsets, click_query, click_doc, cost, C, *, candidate=None) -> float:
    """The primal P(w) of the weighted pairwise SVM.

    P(w) = ½‖w‖² + (C/n) Σ_i c_i Σ_{y in Y_i, y != y_i} max(0, 1 - w.(x_{y_i} - x_y)).

    Parameters
    ----------
    w : ndarray, shape (n_features,)
        The linear scorer.
    X : ndarray, shape (n_docs, n_features)
        Document features (float64 or float32), rows grouped by query.
    offsets : ndarray of int, shape (n_queries + 1,)
        Query q owns rows ``offsets[q]:offsets[q + 1]``.
    click_query : ndarray of int, shape (n_examples,)
        Query of each example.
    click_doc : ndarray of int, shape (n_examples,)
        Row of each example's clicked (positive) document y_i, inside its query.
    cost : ndarray, shape (n_examples,)
        c_i >= 0.
    C : float
        Regularisation trade-off, > 0.
    candidate : ndarray of bool, shape (n_docs,), optional
        Restricts Y_i to these documents (e.g. ``~relevant`` for a full-information Ranking
        SVM); ``None``: every document of the query.

    Returns
    -------
    float
        P(w); ``½‖w‖²`` when there are no examples.
    """
    return PairwiseProblem(X, offsets, click_query, click_doc, candidate=candidate).objective(w, cost, C)


# --------------------------------------------------------------------------- the pairs, once


def _run_pairs(offsets: np.ndarray, query: np.ndarray, doc: np.ndarray, candidate: np.ndarray | None):
    """The pairs of each clicked document d (a "run") of query ``query``: every candidate of
    its query but d, in row order. Returns the runs' pair counts, shape (n_runs,), and every
    pair's other document, shape (n_pairs,), runs one after another."""
    if candidate is None:
        first, last = offsets[query], offsets[query + 1]
        own = doc  # where d stands among the candidates: it is one
    else:
        before = np.concatenate([[0], np.cumsum(candidate)])  # candidates before each row
        first, last = before[offsets[query]], before[offsets[query + 1]]
        own = np.where(candidate[doc], before[doc], last)  # not a candidate: skip nothing
    count = last - first - (own < last)
    # pair j of a run is candidate first + j, or the one after it once past d: a running sum
    # of steps of 1, with a jump to each run's first candidate and one more step past d
    some = count > 0
    first, past, size = first[some], own[some] - first[some], count[some]
    start = np.cumsum(size) - size
    steps = np.ones(int(size.sum()), dtype=np.int64)
    if len(steps):
        end = first + size - 1 + (past < size)  # each run's last candidate
        steps[start] = first - np.concatenate([[0], end[:-1]])
        inside = past < size
        steps[start[inside] + past[inside]] += 1
    other = np.cumsum(steps, out=steps)
    return count, (other if candidate is None else np.flatnonzero(candidate)[other])


def _blocks(count: np.ndarray, runs: np.ndarray | None = None) -> list[tuple[slice, np.ndarray | slice]]:
    """Blocks of whole runs of about ``_BLOCK_PAIRS`` pairs, for runs whose pairs lie one after
    another, ``count`` each: (pairs, runs) per block, runs as indices into ``runs`` if given."""
    ends = np.cumsum(count)
    if len(ends) == 0 or ends[-1] == 0:
        return []
    last = np.searchsorted(ends, np.arange(_BLOCK_PAIRS, ends[-1], _BLOCK_PAIRS))
    cuts = np.unique(np.concatenate([[0], last + 1, [len(ends)]]))
    pairs = np.concatenate([[0], ends])[cuts]
    return [(slice(int(p0), int(p1)), slice(int(r0), int(r1)) if runs is None else runs[r0:r1])
            for p0, p1, r0, r1 in zip(pairs[:-1], pairs[1:], cuts[:-1], cuts[1:], strict=True)]


class PairwiseProblem:
    """The pairs of one click problem, expanded once for any number of solves.

    Everything but the costs: the solves of a CCP run differ only in c_i, so it builds this
    once and calls ``solve`` per step. Examples with the same clicked document have the
    same candidate set, so pairs are expanded over the distinct clicked documents ("runs":
    each one's pairs are contiguous) and an example's costs are added to its document's
    (which leaves P unchanged; with many passes of clicks it shrinks the pairs a lot).

    Parameters
    ----------
    X : ndarray, shape (n_docs, n_features)
        Document features, float64 or float32 (kept as is, not copied when C-contiguous),
        rows grouped by query.
    offsets : ndarray of int, shape (n_queries + 1,)
        Query q owns rows ``offsets[q]:offsets[q + 1]``.
    click_query : ndarray of int, shape (n_examples,)
        Query of each example.
    click_doc : ndarray of int, shape (n_examples,)
        Row of each example's clicked (positive) document y_i, inside its query.
    candidate : ndarray of bool, shape (n_docs,), optional
        Restricts Y_i to these documents (``~relevant`` for a full-information Ranking SVM).
    """

    def __init__(self, X, offsets, click_query, click_doc, *, candidate=None):
        X, offsets, click_query, click_doc, candidate = _check_inputs(X, offsets, click_query, click_doc, candidate)
        self.X, self.n_examples = X, len(click_doc)
        # distinct clicked documents, and each example's among them
        clicked = np.bincount(click_doc, minlength=X.shape[0]) > 0
        self.doc = np.flatnonzero(clicked)
        self.example_of = (np.cumsum(clicked) - 1)[click_doc]
        query = np.searchsorted(offsets, self.doc, side="right") - 1
        self.count, negative = _run_pairs(offsets, query, self.doc, candidate)
        self.run_start = np.cumsum(self.count) - self.count
        some = np.flatnonzero(self.count > 0)
        self.blocks = _blocks(self.count[some], some)
        # the solver reads only rows that occur in a pair (every candidate of a query with a
        # run of pairs, and the runs' own documents): copy them when they are few
        paired = np.zeros(len(offsets) - 1, dtype=bool)
        paired[query[some]] = True
        used = np.repeat(paired, np.diff(offsets))
        if candidate is not None:
            used &= candidate
            used[self.doc[some]] = True
        rows = np.flatnonzero(used)
        self.rows, self.X_used, run_row = None, X, self.doc  # rows: of X behind X_used's, if a copy
        if 0 < len(rows) <= X.shape[0] // 2:
            position = np.zeros(X.shape[0], dtype=np.int64)
            position[rows] = np.arange(len(rows))
            self.rows, self.X_used = rows, X[rows]
            run_row, negative = position[self.doc], position[negative]
        self.run_row = run_row  # row of X_used of each distinct clicked document
        self.negative = negative  # row of X_used of each pair's other document

    def _hinge_sums(self, scores: np.ndarray) -> np.ndarray:
        """Σ_y max(0, 1 - (s_d - s_y)) per distinct clicked document d, from exact scores of X_used."""
        sums = np.zeros(len(self.doc))
        for pairs, runs in self.blocks:
            hinge = np.take(scores, self.negative[pairs])
            hinge -= np.repeat(scores[self.run_row[runs]], self.count[runs])
            hinge += 1.0
            np.maximum(hinge, 0.0, out=hinge)
            sums[runs] = np.add.reduceat(hinge, self.run_start[runs] - pairs.start)
        return sums

    def _objective(self, w: np.ndarray, doc_weight: np.ndarray, scores: np.ndarray) -> float:
        """P(w) from exact scores of X_used at w: the one formula behind every returned objective."""
        return float(0.5 * np.dot(w, w) + _weighted_sum(doc_weight, self._hinge_sums(scores)))

    def largest_norm(self) -> float:
        """An upper bound on max_y ‖x_y‖ over the rows the solver reads: max |x| sqrt(d)
        (computed once, by two reductions over X_used that allocate nothing)."""
        if not hasattr(self, "_largest_norm"):
            X = self.X_used
            largest = max(abs(float(X.max(initial=0.0))), abs(float(X.min(initial=0.0))))
            self._largest_norm = largest * float(np.sqrt(X.shape[1]))
        return self._largest_norm

    def slack_sums(self, w) -> np.ndarray:
        """S_i(w) = Σ_{y in Y_i, y != y_i} max(0, 1 - w.(x_{y_i} - x_y)) per example, shape (n_examples,)."""
        w = _check_point(w, self.X.shape[1], "w")
        return self._hinge_sums(_products(self.X_used, w)[0])[self.example_of]

    def doc_weight(self, cost, C) -> np.ndarray:
        """(C/n) Σ c_i over the examples of each distinct clicked document."""
        cost, C = _check_cost(cost, C, self.n_examples)
        return np.bincount(self.example_of, weights=(C / max(self.n_examples, 1)) * cost,
                           minlength=len(self.doc))

    def objective(self, w, cost, C) -> float:
        """P(w) for costs ``cost`` (shape (n_examples,)) and ``C``; see ``pairwise_objective``."""
        w = _check_point(w, self.X.shape[1], "w")
        weight = self.doc_weight(cost, C)
        if self.n_examples == 0:
            return float(0.5 * np.dot(w, w))
        return self._objective(w, weight, _products(self.X_used, w)[0])

    def solve(self, cost, C, *, w0=None, tol: float = 1e-3, max_iter: int = 1000,
              callback: Callable[[int, float, float], None] | None = None) -> SVMResult:
        """Minimise P(w) for these costs; see ``solve_pairwise_svm`` for the parameters."""
        return _ocas(self, cost, C, w0=w0, tol=tol, max_iter=max_iter, callback=callback)


# --------------------------------------------------------------------------- pair passes


def _active_slope(slack, slope, weight, work) -> float:
    """Σ_p a_p slope_p over the pairs in the hinge just after k = 0: slack_p > 0, or on the
    kink (slack_p = 0) and moving into the hinge (slope_p < 0)."""
    product, active, tied = work
    np.greater(slack, 0.0, out=active)
    np.equal(slack, 0.0, out=tied)
    if tied.any():
        tied &= slope < 0.0
        active |= tied
    np.multiply(weight, active, out=product)
    return float(np.einsum("i,i->", product, slope))


class _Pairs:
    """The pairs of positive weight of a ``PairwiseProblem`` for one solve, with their slack
    1 - w_b.d_p at the best point w_b.

    Pairs are swept in blocks of whole runs of about ``_BLOCK_PAIRS`` pairs, so that a
    block's slack, slope and scratch stay in cache from one operation to the next; a run's
    positive document is one score repeated, never a gather. Pair-length arrays are
    allocated once per solve (fresh temporaries of this size cost more in page faults
    than in arithmetic).
    """

    def __init__(self, problem: PairwiseProblem, doc_weight: np.ndarray):
        keep = (doc_weight > 0) & (problem.count > 0)
        self.count = problem.count[keep]
        self.negative = problem.negative
        if not keep[problem.count > 0].all():
            self.negative = self.negative[np.repeat(keep, problem.count)]
        self.run_row = problem.run_row[keep]
        self.run_start = np.cumsum(self.count) - self.count
        self.weight = np.repeat(doc_weight[keep], self.count)
        self.X = problem.X_used
        self.n_pairs = n = len(self.negative)
        self.slack = np.ones(n)
        # the slope of each margin along the ray, then the weights a_p δ_p of the new plane
        self.slope = np.zeros(n)
        if n == 0:
            return
        self.blocks = _blocks(self.count)
        size = max(p.stop - p.start for p, _ in self.blocks)
        self.floats = (np.empty(size), np.empty(size))
        self.flags = (np.empty(size, dtype=bool), np.empty(size, dtype=bool))
        # a fixed sample of pairs, to bracket the line search's root before the exact pass
        sample = np.arange(0, n, max(1, n // _SAMPLE))
        self.sample = sample
        self.sample_scale = n / len(sample)

    def _scratch(self, pairs: slice):
        m = pairs.stop - pairs.start
        return self.floats[0][:m], self.floats[1][:m], self.flags[0][:m], self.flags[1][:m]

    def reset(self, scores: np.ndarray) -> float:
        """Slack at the point of these document scores; returns R = Σ a_p max(0, slack_p)."""
        loss = 0.0
        for pairs, runs in self.blocks:
            first, _, _, _ = self._scratch(pairs)
            slack = self.slack[pairs]
            np.take(scores, self.negative[pairs], out=first)
            np.subtract(first, np.repeat(scores[self.run_row[runs]], self.count[runs]), out=slack)
            slack += 1.0
            np.maximum(slack, 0.0, out=first)
            loss += float(np.einsum("i,i->", self.weight[pairs], first))
        return loss

    def scan(self, change: np.ndarray) -> float:
        """Slopes d_p.(w_cp - w_b) from the change of the document scores; returns φ'(0+)'s
        pair part Σ_{active} a_p slope_p."""
        total = 0.0
        for pairs, runs in self.blocks:
            first, _, active, tied = self._scratch(pairs)
            slope = self.slope[pairs]
            np.take(change, self.negative[pairs], out=first)
            np.subtract(np.repeat(change[self.run_row[runs]], self.count[runs]), first, out=slope)
            total += _active_slope(self.slack[pairs], slope, self.weight[pairs], (first, active, tied))
        return total

    def line_search(self, derivative: float, curvature: float) -> tuple[float, float]:
        """The exact minimiser k >= 0 of φ along the ray (``_line_root``), given φ'(0+) < 0 and
        ‖Δ‖² > 0 and the slopes of ``scan``; returns k and φ(k) - φ(0).

        The root lies below k_hi = -φ'(0+) / ‖Δ‖², but far below it as a rule: the jumps of φ'
        pass 0 first. A sample of the pairs predicts where, so one pass collects only the
        breakpoints around there and sums the jumps before; if the root is not inside after
        all, a pass over the side it is on settles it.
        """
        upper = -derivative / curvature
        low, high = self.bracket(derivative, curvature)
        high = min(high, upper)
        low = min(low, high)
        while True:
            base, moment, breaks, jumps = self.breaks(low, high)
            if low > 0.0 and derivative + low * curvature + base >= 0.0:
                low, high = 0.0, low  # the root is at or below low
            elif high < upper and derivative + high * curvature + base + float(jumps.sum()) < 0.0:
                low, high = high, upper  # the root is above high
            else:
                break
        k = _line_root(derivative + base, curvature, breaks, jumps)
        passed = breaks <= k
        # φ(k) - φ(0) = k φ'(0+) + ½k²‖Δ‖² + Σ_{k_p <= k} jump_p (k - k_p)
        change = (k * derivative + 0.5 * k * k * curvature + k * base - moment
                  + float(np.einsum("i,i->", jumps[passed], k - breaks[passed])))
        return k, change

    def bracket(self, derivative: float, curvature: float) -> tuple[float, float]:
        """(low, high) around the root as the sample predicts it: its φ' (jumps scaled up)
        crosses 0 at its j-th breakpoint; low and high are 8 + 3√j breakpoints either side."""
        slope = np.take(self.slope, self.sample)
        quotient = np.take(self.slack, self.sample) / slope
        inside = np.flatnonzero(quotient > 0.0)
        order = np.argsort(quotient[inside])
        breaks = quotient[inside][order]
        jumps = np.abs(np.take(self.weight, self.sample[inside]) * slope[inside])[order]
        crossed = np.flatnonzero(derivative + breaks * curvature + self.sample_scale * np.cumsum(jumps) >= 0.0)
        j = int(crossed[0]) if len(crossed) else len(breaks)
        margin = 8 + int(3.0 * np.sqrt(j))
        low = float(breaks[j - margin]) if j >= margin else 0.0
        high = float(breaks[j + margin]) if j + margin < len(breaks) else np.inf
        return low, high

    def breaks(self, low: float, high: float) -> tuple[float, float, np.ndarray, np.ndarray]:
        """The breakpoints in (low, high] with their jumps; before them, the sum of the jumps
        in (0, low] and of jump times breakpoint there."""
        base = moment = 0.0
        found = []
        for pairs, _ in self.blocks:
            quotient, jump, inside, below = self._scratch(pairs)
            slack, slope, weight = self.slack[pairs], self.slope[pairs], self.weight[pairs]
            np.divide(slack, slope, out=quotient)  # 0/0 is NaN and x/0 is ±inf: never inside
            if low > 0.0:
                np.greater(quotient, 0.0, out=inside)
                np.less_equal(quotient, low, out=below)
                inside &= below
                passed = np.flatnonzero(inside)
                np.multiply(weight, slope, out=jump)
                np.abs(jump, out=jump)
                base += float(jump[passed].sum())
                moment += float(np.einsum("i,i->", jump[passed], quotient[passed]))
            np.greater(quotient, low, out=inside)
            np.less_equal(quotient, high, out=below)
            inside &= below
            chosen = np.flatnonzero(inside)
            found.append((quotient[chosen], np.abs(weight[chosen] * slope[chosen])))
        return base, moment, *self._joined(found)

    @staticmethod
    def _joined(found):
        if not found:
            return np.zeros(0), np.zeros(0)
        return np.concatenate([f[0] for f in found]), np.concatenate([f[1] for f in found])

    def advance(self, k: float, cut: float) -> tuple[float, np.ndarray]:
        """Move w_b by k along the ray, and take the plane where the slack is slack - cut·slope.

        Returns the plane's offset b = Σ a_p δ_p and its per-document coefficients (its
        normal is X_used.T @ coef), with δ_p = [margin < 1] there.
        """
        for pairs, _ in self.blocks:
            first, _, flags, _ = self._scratch(pairs)
            slack, slope = self.slack[pairs], self.slope[pairs]
            if k > 0.0:
                np.multiply(slope, k, out=first)
                slack -= first
            np.multiply(slope, cut, out=first)
            np.less(first, slack, out=flags)
            np.multiply(self.weight[pairs], flags, out=slope)
        per_run = np.add.reduceat(self.slope, self.run_start)
        coef = np.bincount(self.negative, weights=self.slope, minlength=self.X.shape[0])
        np.negative(coef, out=coef)
        coef[self.run_row] += per_run
        return float(per_run.sum()), coef


# --------------------------------------------------------------------------- OCAS pieces


_FEW_BREAKS = 2048  # below this many candidate breakpoints the line search simply sorts them


def _line_root(base: float, curvature: float, breaks: np.ndarray, jumps: np.ndarray) -> float:
    """Exact argmin over k >= 0 of φ(k) = ½‖w_b + kΔ‖² + Σ_p a_p max(0, slack_p - k slope_p).

    φ is convex and piecewise quadratic; its right derivative is
    φ'(k) = φ'(0+) + k‖Δ‖² + Σ_{p: 0 < k_p <= k} a_p |slope_p|, jumping at k_p = slack_p / slope_p
    wherever slack_p and slope_p share a sign. Given the breakpoints of a bracket (low, high]
    that holds the root, and ``base`` = φ'(k+) - k‖Δ‖² just above low (φ'(0+) plus the jumps
    at or below low), they are narrowed around the root that a sorted sample of them
    predicts (each round one exact pass; usually one or two rounds) and the few left are
    sorted: O(n_breaks), no full sort.

    Parameters
    ----------
    base, curvature : float
        φ'(k+) - k‖Δ‖² for k just above the bracket's low end, and ‖Δ‖² > 0.
    breaks, jumps : ndarray, shape (n_breaks,)
        The breakpoints in the bracket and the jumps a_p |slope_p| of φ' there.
    """
    if base >= 0.0 or curvature <= 0.0:
        return 0.0
    # base: φ'(k+) - k‖Δ‖² - Σ_{remaining k_p <= k} jumps, for k in the bracket
    while len(breaks) > _FEW_BREAKS:
        stride = max(1, len(breaks) // 256)
        sample_breaks, sample_jumps = breaks[::stride], jumps[::stride]
        order = np.argsort(sample_breaks)
        sample_breaks = sample_breaks[order]
        predicted = base + sample_breaks * curvature + np.cumsum(sample_jumps[order]) * stride
        j = int(np.searchsorted(predicted >= 0.0, True))  # first predicted crossing
        low = float(sample_breaks[max(j - 2, 0)])
        high = float(sample_breaks[min(j + 1, len(sample_breaks) - 1)])
        at_low = breaks <= low
        at_high = breaks <= high
        passed_low = float(jumps[at_low].sum())
        passed_high = float(jumps[at_high].sum())
        if base + low * curvature + passed_low >= 0.0:
            keep = np.flatnonzero(at_low)
        elif base + high * curvature + passed_high >= 0.0:
            base += passed_low
            keep = np.flatnonzero(at_high & ~at_low)
        else:
            base += passed_high
            keep = np.flatnonzero(~at_high)
        if len(keep) == len(breaks):
            break  # ties everywhere: sorting settles it
        breaks, jumps = breaks[keep], jumps[keep]
    order = np.argsort(breaks)
    breaks, jumps = breaks[order], jumps[order]
    after = base + np.cumsum(jumps)  # φ'(k_j+) - k_j ‖Δ‖²
    crossed = np.flatnonzero(after + breaks * curvature >= 0.0)
    if len(crossed) == 0:
        return float(-(after[-1] if len(after) else base) / curvature)
    j = int(crossed[0])
    before = after[j] - jumps[j]
    # the zero lies on the linear piece left of k_j, or φ' jumps across 0 at k_j
    return float(min(breaks[j], -before / curvature))


class _PlaneQP:
    """The cutting planes so far, offsets b (k,) and normals g (k, n_features), and the QP

        min_β ½‖Σ β_t g_t‖² - Σ β_t b_t  over the simplex (β >= 0, Σβ = 1),

    the dual of min_w ½‖w‖² + max(0, max_t b_t - g_t.w); its solution gives w_cp = Σ β_t g_t.

    Plane 0 is R >= 0 (b = 0, g = 0), which turns Σβ <= 1 into the simplex. A plane left out
    of the solution (β = 0) for more than ``_IDLE`` solves in a row is dropped, as OCAS does:
    every value returned stays a valid lower bound, so the certificate is unaffected.

    Primal active set, warm-started from the last β, on the free set F = {t: β_t > 0}. One
    plane p of F (the pivot) is eliminated by Σβ = 1, so the others, S, carry the
    subproblem: with D_t = g_t - g_p, its Hessian is the Gram matrix K = D_S D_Sᵀ. Planes
    are often long and nearly parallel (‖g_t‖ >> ‖Σ β_t g_t‖), so K is built from the
    differences, never from g gᵀ. K's rows are kept for all planes (one product per new
    plane) and its Cholesky factor on S is updated as planes enter S (one triangular solve)
    or leave it (a refactorisation of the trailing block); only a change of pivot refactors
    it whole. A ridge of ``_RIDGE`` times the largest diagonal keeps the factor positive
    definite when planes are affinely dependent: a flat direction then becomes a
    steep-but-bounded Newton step that runs into a bound, as the exact method would.
    """

    def __init__(self, n_features: int, capacity: int = 64, *, keep_coef: bool = False):
        self.size = 1
        self.b = np.zeros(capacity)
        self.g = np.zeros((capacity, n_features))
        self.beta = np.zeros(capacity)
        self.beta[0] = 1.0
        self.idle = np.zeros(capacity, dtype=np.int64)
        self.gram = np.zeros((capacity, capacity))  # (g_s - g_p).(g_t - g_p)
        self.largest = 0.0  # the largest diagonal of gram
        self.factor = np.zeros((capacity, capacity))  # lower Cholesky factor of gram[S, S] + ridge
        self.coef: list[np.ndarray | None] | None = [None] * capacity if keep_coef else None
        self.pivot = 0
        self.free: list[int] = []  # S, in the factor's order
        self.solved = True  # whether β minimises the subproblem on F (a new plane leaves F as is)

    def add(self, b: float, g: np.ndarray, coef: np.ndarray | None = None) -> None:
        """A new plane (b, g), with β = 0; ``coef`` (kept when asked for) gives g = X.T @ coef."""
        k = self.size
        if k == len(self.b):
            self._grow()
        self.b[k] = b
        self.g[k] = g
        self.beta[k] = 0.0
        self.idle[k] = 0
        if self.coef is not None:
            self.coef[k] = coef
        difference = g - self.g[self.pivot]
        row = (self.g[:k] - self.g[self.pivot]) @ difference
        self.gram[k, :k] = row
        self.gram[:k, k] = row
        self.gram[k, k] = square = float(difference @ difference)
        self.largest = max(self.largest, square)
        self.size = k + 1

    def _grow(self) -> None:
        k = len(self.b)
        self.b = np.concatenate([self.b, np.zeros(k)])
        self.g = np.concatenate([self.g, np.zeros_like(self.g)])
        self.beta = np.concatenate([self.beta, np.zeros(k)])
        self.idle = np.concatenate([self.idle, np.zeros(k, dtype=np.int64)])
        for name in ("gram", "factor"):
            grown = np.zeros((2 * k, 2 * k))
            grown[:k, :k] = getattr(self, name)
            setattr(self, name, grown)
        if self.coef is not None:
            self.coef += [None] * k

    def _ridge(self) -> float:
        return _RIDGE * max(self.largest, 1e-200)

    def _refactor(self, pivot: int) -> None:
        """Make ``pivot`` the eliminated plane: Gram matrix and factor from scratch."""
        k = self.size
        self.pivot = pivot
        difference = self.g[:k] - self.g[pivot]
        self.gram[:k, :k] = difference @ difference.T
        self.largest = float(self.gram[:k, :k].diagonal().max())
        self.free = [int(t) for t in np.flatnonzero(self.beta[:k] > 0.0) if t != pivot]
        m = len(self.free)
        if m:
            S = np.asarray(self.free)
            self.factor[:m, :m] = np.linalg.cholesky(self.gram[S][:, S] + self._ridge() * np.eye(m))

    def _enter(self, j: int) -> None:
        """Append plane j to S: one row more of the Cholesky factor."""
        m = len(self.free)
        square = self.gram[j, j] + self._ridge()
        if m:
            below, _ = _trtrs(self.factor[:m, :m], self.gram[self.free, j], lower=1)
            self.factor[m, :m] = below
            square -= float(below @ below)
        self.factor[m, m] = np.sqrt(max(square, self._ridge()))
        self.free.append(j)

    def _leave(self, j: int) -> None:
        """Drop plane j (now β_j = 0) from F."""
        if j == self.pivot:
            # the new pivot is the plane with most weight: it is the least likely to leave
            rest = [t for t in self.free if t != j]
            if rest:
                self._refactor(max(rest, key=lambda t: self.beta[t]))
            return
        i = self.free.index(j)
        m = len(self.free)
        L = self.factor
        trailing = L[i + 1:m, i + 1:m] @ L[i + 1:m, i + 1:m].T + np.outer(L[i + 1:m, i], L[i + 1:m, i])
        L[i:m - 1, :i] = L[i + 1:m, :i]
        if i < m - 1:
            L[i:m - 1, i:m - 1] = np.linalg.cholesky(trailing)
        L[m - 1, :m] = 0.0
        L[:m, m - 1] = 0.0
        del self.free[i]

    def solve(self, tolerance: float) -> tuple[np.ndarray, float]:
        """β minimising the QP (stop when Σβ_j grad_j - min_j grad_j <= tolerance, or after a
        bounded number of steps: any feasible β certifies a lower bound); returns
        w_cp = Σ β_t g_t and the reduced dual value b.β - ½‖w_cp‖²."""
        k = self.size
        g, b, beta = self.g[:k], self.b[:k], self.beta[:k]
        solved = self.solved
        for _ in range(4 * k + 20):
            w = beta @ g
            gradient = g @ w
            gradient -= b
            if solved or not self.free:
                worst = int(gradient.argmin())
                if float(beta @ gradient) - gradient[worst] <= tolerance or beta[worst] > 0.0:
                    solved = True
                    break
                self._enter(worst)
                solved = False
                continue
            # Newton step on S, β_p taking up the sum, then back to the first bound it crosses
            S, p, m = self.free, self.pivot, len(self.free)
            step, _ = _potrs(self.factor[:m, :m], gradient[p] - gradient[S], lower=1)
            current = beta[S]
            pivot_step = -float(step.sum())
            tau, blocked = 1.0, None
            if pivot_step < 0.0 and beta[p] < -pivot_step:
                tau, blocked = beta[p] / -pivot_step, p
            falling = step < 0.0
            if falling.any():
                ratios = np.where(falling, current, np.inf) / np.where(falling, -step, 1.0)
                i = int(ratios.argmin())
                if ratios[i] < tau:
                    tau, blocked = float(ratios[i]), S[i]
            beta[S] = np.maximum(current + tau * step, 0.0)
            beta[p] = max(beta[p] + tau * pivot_step, 0.0)
            if blocked is not None:
                beta[blocked] = 0.0
                self._leave(blocked)
            beta /= beta.sum()
            solved = blocked is None
        else:
            w = beta @ g  # out of steps: the last one moved β
        self.solved = solved
        value = float(beta @ b - 0.5 * np.dot(w, w))
        self.idle[:k] += 1
        self.idle[:k][beta > 0.0] = 0
        if self.idle[:k].max() > _IDLE:
            self._prune()
        return w, value

    def _prune(self) -> None:
        k = self.size
        keep = self.idle[:k] <= _IDLE
        keep[0] = True
        index = np.flatnonzero(keep)
        new = np.full(k, -1)
        new[index] = np.arange(len(index))
        m = len(index)
        self.b[:m], self.g[:m], self.beta[:m], self.idle[:m] = (
            self.b[index], self.g[index], self.beta[index], self.idle[index])
        self.gram[:m, :m] = self.gram[index][:, index]
        if self.coef is not None:
            self.coef[:k] = [self.coef[t] for t in index] + [None] * (k - m)
        self.pivot = int(new[self.pivot])
        self.free = [int(new[t]) for t in self.free]
        self.size = m

    def certificate(self) -> tuple[float, np.ndarray | None]:
        """What the exact reduced dual value b.β - ½‖Σ β_t g_t‖² needs when the normals are
        estimates: b.β and the per-document coefficients Σ β_t coef_t, with
        Σ β_t g_t = X.T @ Σ β_t coef_t (None when only R >= 0 carries weight)."""
        k = self.size
        assert self.coef is not None  # certificates are for estimated planes, built with keep_coef
        combined = None
        for t in np.flatnonzero(self.beta[:k] > 0.0):
            coef = self.coef[t]
            if coef is not None:
                term = self.beta[t] * coef
                combined = term if combined is None else combined + term
        return float(self.beta[:k] @ self.b[:k]), combined

    def restart(self, b: float, g: np.ndarray) -> None:
        """Replace every plane by R >= 0 and the one exact plane (b, g), with all the weight."""
        self.size = 1
        self.beta[0] = 0.0
        self.pivot = 0
        self.free = []
        self.solved = True
        if self.coef is not None:
            self.coef = [None] * len(self.coef)
        self.add(b, g)
        self.beta[1] = 1.0
        self.idle[:2] = 0
        self._refactor(1)


# --------------------------------------------------------------------------- the solver


def solve_pairwise_svm(
    X: np.ndarray,
    offsets: np.ndarray,
    click_query: np.ndarray,
    click_doc: np.ndarray,
    cost: np.ndarray,
    C: float,
    *,
    candidate: np.ndarray | None = None,
    w0: np.ndarray | None = None,
    tol: float = 1e-3,
    max_iter: int = 1000,
    callback: Callable[[int, float, float], None] | None = None,
) -> SVMResult:
    """Minimise P(w) to a certified relative duality gap ``tol`` (OCAS; see the module doc).

    Parameters
    ----------
    X, offsets, click_query, click_doc, candidate
        The problem, as ``PairwiseProblem`` takes it (built here for one solve; a CCP run
        builds it once and calls its ``solve`` per step).
    cost : ndarray, shape (n_examples,)
        c_i >= 0 (1/q_i for PropRank, 1/q'_i in a CCP step, 1 for SVM Rank).
    C : float
        Regularisation trade-off, > 0; the loss is averaged over n = n_examples.
    w0 : ndarray, shape (n_features,), optional
        Warm start (default 0), e.g. the previous CCP step's solution.
    tol : float
        Stop when (P(w) - lower_bound) / P(w) <= tol.
    max_iter : int
        Largest number of cutting planes.
    callback : callable (iteration, objective, lower_bound) -> None, optional
        Called once per iteration with the best P so far and the best lower bound (with
        float32 X, until exact products take over, both from float32 products: estimates).

    Returns
    -------
    SVMResult
        ``w`` of shape (n_features,), its objective, the certified lower bound and gap,
        iterations, seconds and whether ``gap <= tol``. With no examples (or no pair of
        positive cost) the optimum w = 0 with objective 0.
    """
    start = time.perf_counter()
    problem = PairwiseProblem(X, offsets, click_query, click_doc, candidate=candidate)
    return _ocas(problem, cost, C, w0=w0, tol=tol, max_iter=max_iter, callback=callback, start=start)


def _check_scale(problem: PairwiseProblem, pairs: _Pairs, normal: np.ndarray, objective: float, cost,
                 C: float) -> None:
    """Refuse, naming C and the largest example weight, a problem whose plane QP float64
    cannot hold or cannot resolve at all (``C = 1e300``, a click of propensity 1e-300).

    The QP's Gram entries are of the order of ‖g‖², so they carry a rounding of about
    eps·‖g‖², and P at the optimum is at most P at the start: past eps·‖g‖² > P(start) the
    rounding of the QP exceeds the objective it is to bound, and no number of planes helps
    (measured: from eps·‖g‖² ≈ 0.01·P on the gap stalls near 1; below that a slow solve
    ends with ``converged`` False and its gap, which says what it is). Every later normal
    is bounded by Σ a_p ‖d_p‖ <= 2 Σ a_p max_y ‖x_y‖; if the square of (a bound on) that
    overflows, a plane could turn the QP into inf and NaN (the IndexError this guards
    against). Rescaling cannot help: the cancellation in Σ β_t g_t is relative.
    """
    eps = np.finfo(np.float64).eps
    total = float(pairs.weight.sum())  # P(0): every slack is 1
    with np.errstate(over="ignore", invalid="ignore"):
        square = float(np.dot(normal, normal))
        reach = 2.0 * total * problem.largest_norm()
        fits = np.isfinite(total) and np.isfinite(square) and np.isfinite(reach * reach * 4.0)
        resolvable = fits and eps * square <= max(objective, _TINY)
    if resolvable:
        return
    cost = np.asarray(cost, dtype=np.float64)
    i = int(np.argmax(cost))
    why = (f"the QP's values would overflow (total hinge weight {total:.3g})" if not fits else
           f"the rounding of its cutting-plane QP (about {eps * square:.3g}) exceeds the objective itself "
           f"({objective:.3g}), so no duality gap can be certified")
    # a weight a million times the typical one is the cause rather than C
    blamed = cost[i] > 1e6 * float(np.median(cost))
    weight = (f" (example {i} of {problem.n_examples}; a weight 1/q means a propensity q of {1 / cost[i]:.3g})"
              if blamed else "")
    remedy = ("clip the propensities (--clip) or drop the clicks of vanishing propensity, or use a smaller C"
              if blamed else "use a smaller C")
    raise ValueError(f"C = {C:g} with example weights up to {cost[i]:.3g}{weight} is too extreme for the SVM "
                     f"solver in float64: {why}; {remedy}")


def _ocas(problem: PairwiseProblem, cost, C, *, w0, tol: float, max_iter, callback, start=None) -> SVMResult:
    start = time.perf_counter() if start is None else start
    doc_weight = problem.doc_weight(cost, C)
    if isinstance(tol, (bool, np.bool_)) or not bool(np.isscalar(tol)) or not tol > 0:  # bool(): as in _check_cost
        raise ValueError(f"tol must be a number > 0, found {tol!r}")
    if isinstance(max_iter, (bool, np.bool_)) or int(max_iter) != max_iter or max_iter < 1:
        raise ValueError(f"max_iter must be an integer >= 1, found {max_iter!r}")
    n_features = problem.X.shape[1]
    w = np.zeros(n_features) if w0 is None else _check_point(w0, n_features, "w0").copy()
    if callback is not None and not callable(callback):
        raise ValueError(f"callback must be callable (iteration, objective, lower_bound), found {callback!r}")

    pairs = _Pairs(problem, doc_weight)
    if pairs.n_pairs == 0:
        return SVMResult(np.zeros(n_features), 0.0, 0.0, 0.0, 0, time.perf_counter() - start, True)
    X = pairs.X
    exact = X.dtype == np.float64  # float32 X: float32 products until they no longer serve

    # Stop a hair inside tol: the returned objective is recomputed by pairwise_objective's
    # formula, whose rounding may differ in the last digits.
    target = float(tol) * (1.0 - 1e-3)

    def scores(v):
        return _products(X, v, exact=exact)[0]

    if np.any(w):
        at_w = np.asarray(scores(w), dtype=np.float64)
        loss = pairs.reset(at_w)
    else:
        at_w = np.zeros(X.shape[0])
        loss = float(pairs.weight.sum())  # every slack is 1
    objective = 0.5 * float(np.dot(w, w)) + loss
    b, coef = pairs.advance(0.0, 0.0)
    normal = _products(X, coef=coef, exact=exact)[1]
    if not (np.isfinite(objective) and np.isfinite(normal).all()):
        bad = np.flatnonzero(~np.isfinite(X).all(axis=1))
        row = int(bad[0] if problem.rows is None else problem.rows[bad[0]]) if len(bad) else None
        where = f"row {row}" if row is not None else "a row"
        raise ValueError(f"X must be finite in every row that takes part in a pair; {where} holds NaN or inf")
    _check_scale(problem, pairs, normal, objective, cost, C)
    planes = _PlaneQP(n_features, capacity=min(int(max_iter), 63) + 1, keep_coef=not exact)
    planes.add(b, normal, None if exact else coef)
    change = np.empty(X.shape[0])
    estimate = 0.0  # the best QP value: a lower bound once every plane is exact
    certified = 0.0  # P >= 0 always
    final = None  # (w, exact P(w)) once known
    iteration, converged, gaps = 1, False, []
    while True:
        w_cp, value = planes.solve(1e-2 * target * max(objective, _TINY))
        estimate = max(estimate, value)
        if exact:
            certified = estimate
        converged = objective - estimate <= target * max(objective, _TINY)
        gaps.append((objective - estimate) / max(objective, _TINY))
        stalled = len(gaps) > _STALL and gaps[-1] > 0.99 * gaps[-1 - _STALL]
        if not exact and (converged or stalled or iteration >= max_iter):
            # the estimates say done (or no longer move): the exact values decide
            offset, combined = planes.certificate()
            at_exact, product = _products(X, w, combined)
            final = (w, problem._objective(w, doc_weight, at_exact))
            if product is None:
                product = np.zeros(n_features)
            certified = max(certified, offset - 0.5 * float(np.dot(product, product)))
            objective = final[1]
            converged = objective - certified <= target * max(objective, _TINY)
            estimate = certified
            if not converged and iteration < max_iter:
                # go on with exact products, from one exact plane aggregating the old ones
                exact = True
                planes.restart(offset, product)
                at_w = at_exact
                objective = 0.5 * float(np.dot(w, w)) + pairs.reset(at_w)
                gaps = [(objective - estimate) / max(objective, _TINY)]
        if callback is not None:
            callback(iteration, objective, estimate)
        if converged or iteration >= max_iter:
            break
        # exact line search from the best point w towards w_cp, all in margin space
        np.subtract(scores(w_cp), at_w, out=change)
        direction = w_cp - w
        along = float(np.dot(w, direction))
        curvature = float(np.dot(direction, direction))
        derivative = along - pairs.scan(change)
        k = phi_change = 0.0
        if derivative < 0.0 and curvature > 0.0:
            with np.errstate(divide="ignore", invalid="ignore"):
                k, phi_change = pairs.line_search(derivative, curvature)
        # OCAS: the next plane is taken a little beyond the best point, towards w_cp
        b, coef = pairs.advance(k, _CUT_STEP * (1.0 - k))
        if k > 0.0:
            objective += phi_change
            w = w + k * direction
            change *= k
            at_w += change
        planes.add(b, _products(X, coef=coef, exact=exact)[1], None if exact else coef)
        iteration += 1

    if final is None or final[0] is not w:
        final = (w, problem._objective(w, doc_weight, _products(X, w)[0]))
    objective = final[1]
    gap = (objective - certified) / max(abs(objective), _TINY)
    return SVMResult(w, objective, certified, gap, iteration, time.perf_counter() - start, bool(gap <= tol))


# -- the paper's two uses of the solver ---------------------------------------------------

def train_ranking_svm(queries, relevant: np.ndarray, *, C: float, tol: float = 1e-3,
                      w0: np.ndarray | None = None) -> SVMResult:
    """A conventional Ranking SVM (production ranker, skyline): one example per relevant
    document, c_i = 1, Y_i = its query's irrelevant documents.

    ``queries`` is a ``cltr.core.queries.Queries``; ``relevant`` is bool, shape (n_docs,).
    """
    relevant = np.asarray(relevant, dtype=bool)
    click_doc = np.flatnonzero(relevant)
    return solve_pairwise_svm(
        queries.X, queries.offsets, queries.doc_query[click_doc], click_doc,
        np.ones(len(click_doc)), C, candidate=~relevant, w0=w0, tol=tol,
    )


def train_svm_on_clicks(queries, click_query: np.ndarray, click_doc: np.ndarray, cost: np.ndarray, *,
                        C: float, tol: float = 1e-3, w0: np.ndarray | None = None) -> SVMResult:
    """SVM PropRank (c_i = 1/q_i) or naive SVM Rank (c_i = 1) on clicks: Y_i = every
    document of the query."""
    return solve_pairwise_svm(queries.X, queries.offsets, click_query, click_doc, cost, C, w0=w0, tol=tol)


def solver_info(result: SVMResult) -> dict:
    """The certificate of a solve, as recorded in artifacts."""
    return {"objective": result.objective, "lower_bound": result.lower_bound, "gap": result.gap,
            "iterations": result.iterations, "solver_seconds": result.seconds,
            "converged": result.converged}
