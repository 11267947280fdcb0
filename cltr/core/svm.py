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
   in its dual max_{β in simplex} Σ β_t b_t - ½‖Σ β_t g_t‖² by an active-set method;
   its solution is w_cp = Σ β_t g_t;
2. moves the best point w_b to the exact minimiser of P on the ray w_b + k (w_cp - w_b),
   k >= 0: P is piecewise quadratic along it, so with the margins at w_cp (one X @ w_cp)
   the minimiser takes a few vectorised passes over the pairs;
3. adds the plane at w_c = 0.9 w_b + 0.1 w_cp (one X.T @ coef, where coef aggregates the
   pair coefficients per document, so each document's features are read once).

The certificate: α_iy = a_i Σ_t β_t δ^t_iy lies in the dual box and D(α) equals the reduced
dual value, so ``lower_bound`` is a dual value of the full problem and
``(objective - lower_bound) / objective`` a certified relative duality gap. Examples with
the same clicked document (the candidate set follows from it) are merged by adding their
costs, which leaves P unchanged; with many passes of clicks this shrinks the pairs a lot.

float32 X is never copied whole. The planes, which carry the certificate, and the
returned objective come from float64 products (blocks of rows widened in a small buffer;
the float32 values are exact in float64). The scores that steer the search use float32
products, about 2.5 times faster, until they fail to resolve the gap (no 1% progress in
10 iterations, or a final check against exact scores fails); then exact scores take over.

This module imports only numpy and scipy; it never prints or reads files (progress is a
callback).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from cltr.core.objectives import check_example_rows, click_pairs

__all__ = ["SVMResult", "PairwiseProblem", "pairwise_objective", "solve_pairwise_svm", "train_ranking_svm",
           "train_svm_on_clicks", "solver_info"]

_TINY = 1e-12  # floor of |objective| in the relative gap
_CUT_STEP = 0.1  # OCAS's mu: the new plane is taken a tenth of the way from w_b to w_cp
_WIDE_BLOCK_BYTES = 1 << 19  # float32 rows widened to float64 per block: a 512 KB buffer
_NARROW_BLOCK_BYTES = 1 << 21  # float32 rows per float32 product block: about 1 MB of X
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


def _check_cost(cost, C, n_examples: int):
    cost = np.asarray(cost, dtype=np.float64)
    if cost.shape != (n_examples,):
        raise ValueError(f"cost must have one entry per example, shape ({n_examples},), found {cost.shape}")
    bad = ~np.isfinite(cost) | (cost < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"example {i}: cost must be finite and >= 0, found {cost[i]!r}")
    if isinstance(C, (bool, np.bool_)) or not np.isscalar(C) or not np.isfinite(C) or not C > 0:
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


def _block_rows(X: np.ndarray, block_bytes: int) -> int:
    return max(16, block_bytes // max(1, 8 * X.shape[1]))


def _scores(X: np.ndarray, w: np.ndarray, *, precise: bool = True) -> np.ndarray:
    """X @ w as float64, shape (n_docs,).

    float32 X: ``precise`` widens blocks of rows to float64 in a small buffer before the
    product (the float32 values are exact in float64, so the scores carry only float64
    rounding; about 2.5 times the time of the float32 product); otherwise the product runs
    in float32.
    """
    if X.dtype == np.float64:
        return X @ w
    if not precise:
        return np.asarray(X @ w.astype(np.float32), dtype=np.float64)
    rows = _block_rows(X, _WIDE_BLOCK_BYTES)
    buffer = np.empty((min(rows, X.shape[0]), X.shape[1]))
    scores = np.empty(X.shape[0])
    for start in range(0, X.shape[0], rows):
        block = X[start:start + rows]
        wide = buffer[:len(block)]
        np.copyto(wide, block)
        np.dot(wide, w, out=scores[start:start + len(block)])
    return scores


def _transposed_product(X: np.ndarray, coef: np.ndarray, *, precise: bool = True) -> np.ndarray:
    """X.T @ coef as float64, shape (n_features,).

    float32 X: ``precise`` widens blocks to float64 as ``_scores`` does; otherwise float32
    products over blocks of rows are summed in float64 (one float32 accumulation over
    ~10^6 rows would lose about three digits).
    """
    if X.dtype == np.float64:
        return X.T @ coef
    total = np.zeros(X.shape[1])
    if precise:
        rows = _block_rows(X, _WIDE_BLOCK_BYTES)
        buffer = np.empty((min(rows, X.shape[0]), X.shape[1]))
        for start in range(0, X.shape[0], rows):
            block = X[start:start + rows]
            wide = buffer[:len(block)]
            np.copyto(wide, block)
            total += coef[start:start + len(block)] @ wide
        return total
    coef32 = coef.astype(np.float32)
    rows = _block_rows(X, _NARROW_BLOCK_BYTES)
    for start in range(0, X.shape[0], rows):
        total += X[start:start + rows].T @ coef32[start:start + rows]
    return total


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


class PairwiseProblem:
    """The pairs of one click problem, expanded once for any number of solves.

    Everything but the costs: the solves of a CCP run differ only in c_i, so it builds this
    once and calls ``solve`` per step. Examples with the same clicked document have the
    same candidate set, so pairs are expanded over the distinct clicked documents and an
    example's costs are added to its document's (which leaves P unchanged; with many
    passes of clicks it shrinks the pairs a lot).

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
        self.doc, self.example_of = np.unique(click_doc, return_inverse=True)
        doc_query = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
        self.pair_example, self.pair_doc = click_pairs(offsets, doc_query[self.doc], self.doc, candidate)
        self.count = np.bincount(self.pair_example, minlength=len(self.doc))
        # the solver reads only rows that occur in a pair: copy them when they are few
        used = np.zeros(X.shape[0], dtype=bool)
        used[self.doc[self.count > 0]] = True
        used[self.pair_doc] = True
        rows = np.flatnonzero(used)
        self.rows = np.arange(X.shape[0])  # row of X behind each row of self.X_used
        self.X_used, self.position = X, None
        if 0 < len(rows) <= X.shape[0] // 2:
            self.rows = rows
            self.position = np.zeros(X.shape[0], dtype=np.int64)
            self.position[rows] = np.arange(len(rows))
            self.X_used = X[rows]

    def _hinge_sums(self, w) -> np.ndarray:
        """Σ_y max(0, 1 - w.(x_d - x_y)) per distinct clicked document d, float64 scores."""
        scores = _scores(self.X, w)
        hinge = 1.0 - (scores[self.doc[self.pair_example]] - scores[self.pair_doc])
        np.maximum(hinge, 0.0, out=hinge)
        return np.bincount(self.pair_example, weights=hinge, minlength=len(self.doc))

    def slack_sums(self, w) -> np.ndarray:
        """S_i(w) = Σ_{y in Y_i, y != y_i} max(0, 1 - w.(x_{y_i} - x_y)) per example, shape (n_examples,)."""
        w = _check_point(w, self.X.shape[1], "w")
        return self._hinge_sums(w)[self.example_of]

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
        return float(0.5 * np.dot(w, w) + _weighted_sum(weight, self._hinge_sums(w)))

    def solve(self, cost, C, *, w0=None, tol: float = 1e-3, max_iter: int = 1000,
              callback: Callable[[int, float, float], None] | None = None) -> "SVMResult":
        """Minimise P(w) for these costs; see ``solve_pairwise_svm`` for the parameters."""
        return _ocas(self, cost, C, w0=w0, tol=tol, max_iter=max_iter, callback=callback)


class _Pairs:
    """The pairs of a ``PairwiseProblem`` with positive weight, for one solve.

    Pairs of zero weight are dropped. Pair-length scratch buffers are allocated once: fresh
    temporaries of this size cost more in page faults than in arithmetic.
    """

    def __init__(self, problem: PairwiseProblem, doc_weight: np.ndarray):
        keep = (doc_weight > 0) & (problem.count > 0)
        pair_example, negative = problem.pair_example, problem.pair_doc
        if not keep[pair_example].all():
            mask = keep[pair_example]
            pair_example, negative = pair_example[mask], negative[mask]
        count = np.where(keep, problem.count, 0)
        # pairs are grouped by example, so a segment sum gives each example's total
        self.example_start = (np.cumsum(count) - count)[keep]
        self.example_doc = problem.doc[keep]
        self.weight = np.repeat(doc_weight[keep], count[keep])
        if problem.position is not None:
            self.example_doc = problem.position[self.example_doc]
            negative = problem.position[negative]
        self.X, self.rows = problem.X_used, problem.rows
        self.positive = np.repeat(self.example_doc, count[keep])
        self.negative = negative
        self.n_rows = self.X.shape[0]
        self.n_pairs = len(self.positive)
        # float32 X: scores by float32 products until they no longer resolve the gap (they
        # only steer the search); planes always from widened products (they certify)
        self.precise = self.X.dtype == np.float64
        self.scratch = [np.empty(self.n_pairs) for _ in range(2)]
        self.flags = [np.empty(self.n_pairs, dtype=bool) for _ in range(2)]

    def margins(self, w: np.ndarray, out: np.ndarray) -> np.ndarray:
        """w.d_p of every pair into ``out``, shape (n_pairs,): one ``X @ w``."""
        scores = _scores(self.X, w, precise=self.precise)
        first, second = self.scratch
        np.take(scores, self.positive, out=first)
        np.take(scores, self.negative, out=second)
        return np.subtract(first, second, out=out)

    def loss(self, margins: np.ndarray) -> float:
        """R = Σ_p a_p max(0, 1 - m_p)."""
        hinge = np.subtract(1.0, margins, out=self.scratch[0])
        np.maximum(hinge, 0.0, out=hinge)
        hinge *= self.weight
        return float(hinge.sum())  # not np.dot: see _weighted_sum

    def plane(self, margins: np.ndarray) -> tuple[float, np.ndarray]:
        """The cutting plane (b, g) at margins m: R(w) >= b - g.w for every w; one ``X.T @ coef``."""
        active = np.less(margins, 1.0, out=self.flags[0])
        coefficient = np.multiply(self.weight, active, out=self.scratch[0])
        per_example = np.add.reduceat(coefficient, self.example_start)
        coef = np.bincount(self.example_doc, weights=per_example, minlength=self.n_rows)
        coef -= np.bincount(self.negative, weights=coefficient, minlength=self.n_rows)
        return float(coefficient.sum()), _transposed_product(self.X, coef)


# --------------------------------------------------------------------------- OCAS pieces


_FEW_BREAKS = 2048  # below this many candidate breakpoints the line search simply sorts them


def _line_search(derivative_at_zero: float, curvature: float, slack: np.ndarray, slope: np.ndarray,
                 weight: np.ndarray, *, work: tuple[np.ndarray, np.ndarray] | None = None) -> float:
    """Exact argmin over k >= 0 of φ(k) = ½‖w_b + kΔ‖² + Σ_p a_p max(0, slack_p - k slope_p).

    φ is convex and piecewise quadratic; its right derivative is
    φ'(k) = φ'(0+) + k‖Δ‖² + Σ_{p: 0 < k_p <= k} a_p |slope_p|, jumping at k_p = slack_p / slope_p
    wherever slack_p and slope_p share a sign. The root lies below k_hi = -φ'(0+) / ‖Δ‖².
    The breakpoints below k_hi are narrowed around the root that a sorted sample of them
    predicts (each round one exact pass; usually one or two rounds) and the few left are
    sorted: O(n_pairs), no full sort.

    Parameters
    ----------
    derivative_at_zero, curvature : float
        φ'(0+) and ‖Δ‖².
    slack, slope, weight : ndarray, shape (n_pairs,)
        1 - m_p at k = 0, the rate at which m_p grows with k, and a_p.
    work : (ndarray of float, ndarray of bool), shape (n_pairs,) each, optional
        Scratch buffers.
    """
    if derivative_at_zero >= 0.0 or curvature <= 0.0:
        return 0.0
    upper = -derivative_at_zero / curvature
    breaks, inside = work if work is not None else (np.empty(len(slack)), np.empty(len(slack), dtype=bool))
    with np.errstate(divide="ignore", invalid="ignore"):
        np.divide(slack, slope, out=breaks)
    np.greater(breaks, 0.0, out=inside)  # false for NaN (0/0) and for breaks behind us
    chosen = np.flatnonzero(inside)
    kept = np.take(breaks, chosen)
    below = np.flatnonzero(kept < upper)
    chosen, breaks = chosen[below], kept[below]
    jumps = np.abs(np.take(weight, chosen) * np.take(slope, chosen))
    base = derivative_at_zero  # φ'(k+) - k‖Δ‖² - Σ_{remaining k_p <= k} jumps, for k in the bracket
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


def _simplex_qp(g: np.ndarray, b: np.ndarray, beta: np.ndarray, tolerance: float) -> np.ndarray:
    """min ½‖gᵀβ‖² - bᵀβ over the simplex (β >= 0, Σβ = 1): primal active set, warm-started.

    The planes are often long and nearly parallel (‖g_t‖ >> ‖Σ β_t g_t‖), so the Gram matrix
    g gᵀ would drown the gradient in rounding: gradients are always g (gᵀβ) - b, and the
    step on the free set F solves its equality-constrained problem in null-space form,
    β_F = β̄ + Z y with Z an orthonormal basis of {z: Σz = 0}, by an SVD of A = g_Fᵀ Z
    (condition of A, not of AᵀA). A gradient component along the null space of A means the
    subproblem is unbounded there: the step goes along it until the first bound, as the
    exact method would.

    Parameters
    ----------
    g : ndarray, shape (k, n_features)
        Plane normals.
    b : ndarray, shape (k,)
        Plane offsets.
    beta : ndarray, shape (k,)
        A feasible start (copied).
    tolerance : float
        Stop when Σβ_j grad_j - min_j grad_j <= tolerance.

    Returns
    -------
    ndarray, shape (k,)
        Feasible β (the best reached after a bounded number of steps: any feasible β
        certifies a lower bound).
    """
    k = len(b)
    beta = beta.copy()
    free = beta > 0
    solved = False  # whether β minimises the subproblem on its free set F
    for _ in range(4 * k + 20):
        index = np.flatnonzero(free)
        m = len(index)
        current = beta[index]
        gradient = g @ (beta @ g) - b
        if solved or m == 1:
            worst = int(np.argmin(gradient))
            if float(beta @ gradient) - gradient[worst] <= tolerance or free[worst]:
                return beta
            free[worst] = True
            solved = False
            continue
        # Householder reflection mapping e_1 to 1/√m: its other columns span {Σz = 0}
        u = np.full(m, 1.0 / np.sqrt(m))
        u[0] -= 1.0
        Z = np.eye(m)[:, 1:] - (2.0 / (u @ u)) * np.outer(u, u[1:])
        A = g[index].T @ Z  # (n_features, m - 1)
        descent = -(Z.T @ gradient[index])
        _, S, Vt = np.linalg.svd(A, full_matrices=A.shape[0] < m - 1)
        S = np.concatenate([S, np.zeros(m - 1 - len(S))])
        rank = S > 1e-10 * max(float(S[0]), 1e-300)
        along = Vt @ descent
        unbounded = np.abs(along[~rank])
        if unbounded.size and unbounded.max() > 1e-9 * max(float(np.abs(descent).max()), 1e-300):
            step = Z @ (Vt[~rank].T @ along[~rank])  # flat and descending: go to a bound
            limit = np.inf
        else:
            step = Z @ (Vt[rank].T @ (along[rank] / S[rank] ** 2))  # Newton step on F
            limit = 1.0
        falling = step < 0.0
        ratios = current[falling] / -step[falling]
        tau = min(limit, float(ratios.min())) if ratios.size else limit
        if not np.isfinite(tau):
            return beta
        beta[index] = current + tau * step
        solved = tau == limit
        if not solved:
            blocked = index[falling][ratios <= tau]
            beta[blocked] = 0.0
            free[blocked] = False
        np.maximum(beta, 0.0, out=beta)
        beta /= beta.sum()
    return beta


class _Planes:
    """The cutting planes so far: offsets b (k,) and normals g (k, n_features).

    Plane 0 is R >= 0 (b = 0, g = 0), which turns Σβ <= 1 into the simplex. A plane left
    out of the QP's solution (β = 0) for more than ``_IDLE`` solves in a row is dropped, as
    OCAS does: the reduced QP's cost grows with the number of planes, and every value it
    returned stays a valid lower bound, so the certificate is unaffected.
    """

    def __init__(self, n_features: int, capacity: int = 64):
        self.size = 1
        self.b = np.zeros(capacity)
        self.g = np.zeros((capacity, n_features))
        self.beta = np.zeros(capacity)
        self.beta[0] = 1.0
        self.idle = np.zeros(capacity, dtype=np.int64)

    def add(self, b: float, g: np.ndarray) -> None:
        k = self.size
        if k == len(self.b):
            self.b = np.concatenate([self.b, np.zeros(k)])
            self.g = np.concatenate([self.g, np.zeros_like(self.g)])
            self.beta = np.concatenate([self.beta, np.zeros(k)])
            self.idle = np.concatenate([self.idle, np.zeros(k, dtype=np.int64)])
        self.b[k] = b
        self.g[k] = g
        self.beta[k] = 0.0
        self.idle[k] = 0
        self.size = k + 1

    def solve(self, tolerance: float) -> tuple[np.ndarray, float]:
        """w_cp = Σ β_t g_t and the reduced dual value b.β - ½‖w_cp‖² (a certified lower bound)."""
        k = self.size
        beta = _simplex_qp(self.g[:k], self.b[:k], self.beta[:k], tolerance)
        self.beta[:k] = beta
        w = beta @ self.g[:k]
        value = float(beta @ self.b[:k] - 0.5 * np.dot(w, w))
        self.idle[:k] = np.where(beta > 0, 0, self.idle[:k] + 1)
        self._prune()
        return w, value

    def _prune(self) -> None:
        keep = self.idle[:self.size] <= _IDLE
        keep[0] = True
        if keep.all():
            return
        index = np.flatnonzero(keep)
        m = len(index)
        self.b[:m], self.g[:m], self.beta[:m], self.idle[:m] = (
            self.b[index], self.g[index], self.beta[index], self.idle[index])
        self.size = m

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
    X : ndarray, shape (n_docs, n_features)
        Document features, float64 or float32 (kept as is, not copied when C-contiguous),
        rows grouped by query.
    offsets : ndarray of int, shape (n_queries + 1,)
        Query q owns rows ``offsets[q]:offsets[q + 1]``.
    click_query : ndarray of int, shape (n_examples,)
        Query of each example.
    click_doc : ndarray of int, shape (n_examples,)
        Row of each example's clicked (positive) document y_i, inside its query.
    cost : ndarray, shape (n_examples,)
        c_i >= 0 (1/q_i for PropRank, 1/q'_i in a CCP step, 1 for SVM Rank).
    C : float
        Regularisation trade-off, > 0; the loss is averaged over n = n_examples.
    candidate : ndarray of bool, shape (n_docs,), optional
        Restricts Y_i to these documents (``~relevant`` for a full-information Ranking SVM).
    w0 : ndarray, shape (n_features,), optional
        Warm start (default 0), e.g. the previous CCP step's solution.
    tol : float
        Stop when (P(w) - lower_bound) / P(w) <= tol.
    max_iter : int
        Largest number of cutting planes.
    callback : callable (iteration, objective, lower_bound) -> None, optional
        Called once per iteration with the best P so far and the best lower bound.

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


def _ocas(problem: PairwiseProblem, cost, C, *, w0, tol, max_iter, callback, start=None) -> SVMResult:
    start = time.perf_counter() if start is None else start
    doc_weight = problem.doc_weight(cost, C)
    if isinstance(tol, (bool, np.bool_)) or not np.isscalar(tol) or not tol > 0:
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

    # Stop a hair inside tol: the returned objective is recomputed by pairwise_objective's
    # formula, whose rounding may differ in the last digits.
    target = float(tol) * (1.0 - 1e-3)

    def canonical_objective(w):  # exactly pairwise_objective's arithmetic
        return float(0.5 * np.dot(w, w) + _weighted_sum(doc_weight, problem._hinge_sums(w)))

    final = None  # (w, canonical objective) when already computed
    margins, margins_cp, slope, slack = (np.empty(pairs.n_pairs) for _ in range(4))
    pairs.margins(w, out=margins)
    objective = 0.5 * float(np.dot(w, w)) + pairs.loss(margins)
    if not np.isfinite(objective):
        bad = np.flatnonzero(~np.isfinite(pairs.X).all(axis=1))
        where = f"row {int(pairs.rows[bad[0]])}" if len(bad) else "a row"
        raise ValueError(f"X must be finite in every row that takes part in a pair; {where} holds NaN or inf")
    planes = _Planes(n_features, capacity=min(int(max_iter), 63) + 1)
    planes.add(*pairs.plane(margins))
    lower_bound = 0.0  # P >= 0 always
    iteration, converged, gaps = 1, False, []
    while True:
        w_cp, value = planes.solve(1e-2 * target * max(objective, _TINY))
        lower_bound = max(lower_bound, value)
        converged = objective - lower_bound <= target * max(objective, _TINY)
        gaps.append(objective - lower_bound)
        stalled = len(gaps) > _STALL and gaps[-1] > 0.99 * gaps[-1 - _STALL]
        if not pairs.precise and (converged or stalled):
            # float32 scores may no longer resolve the gap: check with exact ones, and
            # if need be go on with them (the planes, always exact, stay)
            final = (w, canonical_objective(w))
            if stalled or final[1] - lower_bound > target * max(final[1], _TINY):
                pairs.precise = True
                pairs.margins(w, out=margins)
                objective = 0.5 * float(np.dot(w, w)) + pairs.loss(margins)
                converged = objective - lower_bound <= target * max(objective, _TINY)
                gaps = [objective - lower_bound]
        if callback is not None:
            callback(iteration, objective, lower_bound)
        if converged or iteration >= max_iter:
            break
        # exact line search from the best point w towards w_cp, all in margin space
        pairs.margins(w_cp, out=margins_cp)
        direction = w_cp - w
        np.subtract(margins_cp, margins, out=slope)
        np.subtract(1.0, margins, out=slack)
        active = np.greater(slack, 0.0, out=pairs.flags[0])
        tied = np.flatnonzero(np.equal(slack, 0.0, out=pairs.flags[1]))  # on the kink: active
        active[tied] = slope[tied] < 0.0  # iff moving into the hinge
        weighted = np.multiply(pairs.weight, slope, out=pairs.scratch[0])
        weighted *= active
        derivative = float(np.dot(w, direction)) - float(weighted.sum())
        k = _line_search(derivative, float(np.dot(direction, direction)), slack, slope, pairs.weight,
                         work=(pairs.scratch[1], pairs.flags[1]))
        if k > 0.0:
            w_new = w + k * direction
            margins_new = np.multiply(slope, k, out=slack)  # slack is free from here on
            margins_new += margins
            value = 0.5 * float(np.dot(w_new, w_new)) + pairs.loss(margins_new)
            if value < objective:  # exact in exact arithmetic; guards rounding
                w, objective = w_new, value
                margins, slack = margins_new, margins
        # OCAS: the next plane is taken a little beyond the best point, towards w_cp
        margins_cut = np.multiply(margins, 1.0 - _CUT_STEP, out=slope)
        margins_cut += np.multiply(margins_cp, _CUT_STEP, out=margins_cp)
        planes.add(*pairs.plane(margins_cut))
        iteration += 1


    objective = final[1] if final is not None and final[0] is w else canonical_objective(w)
    gap = (objective - lower_bound) / max(abs(objective), _TINY)
    return SVMResult(w, objective, lower_bound, gap, iteration, time.perf_counter() - start, bool(gap <= tol))


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
