"""A click problem's pairs expanded once (``PairwiseProblem``), its objective, the OCAS solver
(``solve_pairwise_svm``) and the paper's two uses of it. ``PairwiseProblem`` lives with the
solver because its ``solve`` runs it. The notation and the method are the package's
(``cltr.core.svm``)."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from cltr.core import kernels
from cltr.core.svm.pairs import _Pairs, pairs_of
from cltr.core.svm.problem import (
    SVMResult,
    _blocks,
    _check_cost,
    _check_inputs,
    _check_point,
    _products,
    _run_pairs,
    _weighted_sum,
)
from cltr.core.svm.qp import _PlaneQP

_TINY = 1e-12  # floor of |objective| in the relative gap
_CUT_STEP = 0.1  # OCAS's mu: the new plane is taken a tenth of the way from w_b to w_cp
_STALL = 10  # iterations without a 1% smaller gap after which float32 products give way
# float64 X_used is steered by a float32 copy up to this size (the copy is half of it): a
# float32 product moves half the bytes and, for the embedded default's 59,074 x 46 rows, is
# about 5x faster (docs/results/benchmarks.md); beyond it, every product is exact
_STEER_COPY_BYTES = 1 << 30
_STEER_FEATURE = 1e4  # nor where a feature's magnitude exceeds this (float64 X only)
# float32 products steer only while every plane's normal and every score stays far inside
# float32's range (3.4e38): total pair weight times the largest row norm bounds both
_STEER_LIMIT = 1e30


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
        if kernels.enabled():
            return kernels.hinge_sums(
                np.ascontiguousarray(scores, dtype=np.float64), self.negative, self.run_row, self.count
            )
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

    def steering(self) -> np.ndarray | None:
        """The rows the solver reads, in float32, for the products that only steer it (made
        once per problem, on first use, and kept with it): X_used itself when it is float32,
        a float32 copy of float64 X_used of at most 1 GiB whose features are within ±1e4,
        otherwise None (every product exact). Whatever steers, what the solver returns is
        certified with exact products of X_used."""
        if not hasattr(self, "_steering"):
            X = self.X_used
            # features far from unit scale lose the margins' differences to float32 rounding
            # (measured: features of 1e6 took 8 -> 14 iterations steered, 1e10 8 -> 21)
            scaled = self.largest_norm() <= _STEER_FEATURE * np.sqrt(X.shape[1])
            small = X.nbytes <= _STEER_COPY_BYTES
            self._steering = X if X.dtype == np.float32 else X.astype(np.float32) if small and scaled else None
        return self._steering

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
        return np.bincount(self.example_of, weights=(C / max(self.n_examples, 1)) * cost, minlength=len(self.doc))

    def objective(self, w, cost, C) -> float:
        """P(w) for costs ``cost`` (shape (n_examples,)) and ``C``; see ``pairwise_objective``."""
        w = _check_point(w, self.X.shape[1], "w")
        weight = self.doc_weight(cost, C)
        if self.n_examples == 0:
            return float(0.5 * np.dot(w, w))
        return self._objective(w, weight, _products(self.X_used, w)[0])

    def solve(
        self,
        cost,
        C,
        *,
        w0=None,
        tol: float = 1e-3,
        max_iter: int = 1000,
        callback: Callable[[int, float, float], None] | None = None,
    ) -> SVMResult:
        """Minimise P(w) for these costs; see ``solve_pairwise_svm`` for the parameters."""
        return _ocas(self, cost, C, w0=w0, tol=tol, max_iter=max_iter, callback=callback)


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
        Called once per iteration with the best P so far and the best lower bound (while
        float32 products steer, float32 X's or float64 X's float32 copy, both estimates;
        exact once exact products take over).

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


def _check_scale(problem: PairwiseProblem, pairs: _Pairs, normal: np.ndarray, objective: float, cost, C: float) -> None:
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
    fits, resolvable, square = _scale_fits(problem, pairs, normal, objective)
    if resolvable:
        return
    eps = np.finfo(np.float64).eps
    total = pairs.total_weight  # P(0): every slack is 1
    cost = np.asarray(cost, dtype=np.float64)
    i = int(np.argmax(cost))
    why = (
        f"the QP's values would overflow (total hinge weight {total:.3g})"
        if not fits
        else f"the rounding of its cutting-plane QP (about {eps * square:.3g}) exceeds the objective itself "
        f"({objective:.3g}), so no duality gap can be certified"
    )
    # a weight a million times the typical one is the cause rather than C
    blamed = cost[i] > 1e6 * float(np.median(cost))
    weight = (
        f" (example {i} of {problem.n_examples}; a weight 1/q means a propensity q of {1 / cost[i]:.3g})"
        if blamed
        else ""
    )
    remedy = (
        "clip the propensities (--clip) or drop the clicks of vanishing propensity, or use a smaller C"
        if blamed
        else "use a smaller C"
    )
    raise ValueError(
        f"C = {C:g} with example weights up to {cost[i]:.3g}{weight} is too extreme for the SVM "
        f"solver in float64: {why}; {remedy}"
    )


def _scale_fits(
    problem: PairwiseProblem, pairs: _Pairs, normal: np.ndarray, objective: float
) -> tuple[bool, bool, float]:
    """(the QP's values fit float64, its rounding stays below the objective, ‖normal‖²): the
    tests behind ``_check_scale``."""
    total = pairs.total_weight
    with np.errstate(over="ignore", invalid="ignore"):
        square = float(np.dot(normal, normal))
        reach = 2.0 * total * problem.largest_norm()
        fits = bool(np.isfinite(total) and np.isfinite(square) and np.isfinite(reach * reach * 4.0))
        resolvable = fits and np.finfo(np.float64).eps * square <= max(objective, _TINY)
    return fits, bool(resolvable), square


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

    pairs = pairs_of(problem, doc_weight)
    if pairs.n_pairs == 0:
        return SVMResult(np.zeros(n_features), 0.0, 0.0, 0.0, 0, time.perf_counter() - start, True)
    X = pairs.X
    # float32 products steer until they no longer serve; not at all where they could
    # overflow (NaN or inf in X fails the comparison too, and the exact products say so)
    in_range = pairs.total_weight * problem.largest_norm() <= _STEER_LIMIT
    steering = problem.steering() if in_range else None
    exact = steering is None

    # Stop a hair inside tol: the returned objective is recomputed by pairwise_objective's
    # formula, whose rounding may differ in the last digits.
    target = float(tol) * (1.0 - 1e-3)

    def scores(v):
        return _products(X, v)[0] if exact else _products(steering, v, exact=False)[0]

    def normal_of(coef):
        return _products(X, coef=coef)[1] if exact else _products(steering, coef=coef, exact=False)[1]

    def first_plane():
        """The scores at w, P(w) and the plane at w, by the products in use."""
        if np.any(w):
            at_w = np.asarray(scores(w), dtype=np.float64)
            loss = pairs.reset(at_w)
        else:
            at_w = np.zeros(X.shape[0])
            loss = pairs.total_weight
        b, coef = pairs.advance(0.0, 0.0)
        return at_w, 0.5 * float(np.dot(w, w)) + loss, b, coef, normal_of(coef)

    with np.errstate(over="ignore", invalid="ignore"):  # a float32 overflow is handled below
        at_w, objective, b, coef, normal = first_plane()
    usable = np.isfinite(objective) and np.isfinite(normal).all()
    if not exact and not (usable and _scale_fits(problem, pairs, normal, objective)[1]):
        # float32 products cannot carry this problem (a product beyond float32's range, or a
        # rounding the scale check would take for the problem's own): exact ones throughout,
        # and the checks below judge the exact values
        exact = True
        at_w, objective, b, coef, normal = first_plane()
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
        if callback is not None:
            callback(iteration, objective, estimate)
        if converged or iteration >= max_iter:
            break
        # exact line search from the best point w towards w_cp, all in margin space; the
        # scores' change is X @ (w_cp - w), not X @ w_cp minus the scores at w: near the
        # optimum the step is tiny, and the rounding of scores kept by adding steps swamped it
        direction = w_cp - w
        np.copyto(change, scores(direction))
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
        planes.add(b, normal_of(coef), None if exact else coef)
        iteration += 1

    if final is None or final[0] is not w:
        final = (w, problem._objective(w, doc_weight, _products(X, w)[0]))
    objective = final[1]
    gap = (objective - certified) / max(abs(objective), _TINY)
    return SVMResult(w, objective, certified, gap, iteration, time.perf_counter() - start, bool(gap <= tol))


# -- the paper's two uses of the solver ---------------------------------------------------


def train_ranking_svm(
    queries, relevant: np.ndarray, *, C: float, tol: float = 1e-3, w0: np.ndarray | None = None
) -> SVMResult:
    """A conventional Ranking SVM (production ranker, skyline): one example per relevant
    document, c_i = 1, Y_i = its query's irrelevant documents.

    ``queries`` is a ``cltr.core.queries.Queries``; ``relevant`` is bool, shape (n_docs,).
    """
    relevant = np.asarray(relevant, dtype=bool)
    click_doc = np.flatnonzero(relevant)
    return solve_pairwise_svm(
        queries.X,
        queries.offsets,
        queries.doc_query[click_doc],
        click_doc,
        np.ones(len(click_doc)),
        C,
        candidate=~relevant,
        w0=w0,
        tol=tol,
    )


def train_svm_on_clicks(
    queries,
    click_query: np.ndarray,
    click_doc: np.ndarray,
    cost: np.ndarray,
    *,
    C: float,
    tol: float = 1e-3,
    w0: np.ndarray | None = None,
) -> SVMResult:
    """SVM PropRank (c_i = 1/q_i) or naive SVM Rank (c_i = 1) on clicks: Y_i = every
    document of the query."""
    return solve_pairwise_svm(queries.X, queries.offsets, click_query, click_doc, cost, C, w0=w0, tol=tol)


def solver_info(result: SVMResult) -> dict:
    """The certificate of a solve, as recorded in artifacts."""
    return {
        "objective": result.objective,
        "lower_bound": result.lower_bound,
        "gap": result.gap,
        "iterations": result.iterations,
        "solver_seconds": result.seconds,
        "converged": result.converged,
    }
