"""The weighted pairwise SVM with its per-iteration work split into chunks of whole queries.

Legend (as in ``cltr.core.svm``; paper Sec. 4.1):
    R(w) = Σ_(i,y) a_i max(0, 1 - w.d_iy)   -> the sum over chunks of ``chunk_planes``' ``risk``
    the plane b - g.w touching R at w       -> the sums over chunks of ``chunk_planes``' ``offset``, ``normal``
    a_i = C c_i / n                         -> per clicked document, ``chunk_weights`` (n: every chunk's examples)

R and its subgradient are sums over queries, so a click problem cut into chunks of whole
queries (each chunk: its rows of X, its examples, their weights) gives them as sums of
per-chunk terms. ``ChunkedProblem`` keeps the chunks wherever a *mapper* puts them (a plain
loop here, ``LocalMapper``; a dask cluster, ``cltr.distributed.DaskMapper``) and its solver
asks them for nothing but those sums: each iteration is one map over the chunks and one
sum, in chunk order, so the result does not depend on where or in which order the chunks
were computed, and a dask run gives the in-process (``LocalMapper``) model to rounding.

The solver is OCAS's cutting-plane scheme (``cltr.core.svm``) with its exact line search
replaced by planes at a few fixed points of the segment from the best point w_b to the
plane QP's minimiser w_cp, all in one map: OCAS's line search needs every pair's
breakpoint, which would be one more round trip (or a pair-length transfer) per
iteration. Every point's plane is exact (float64), so the QP's dual value is a certified
lower bound, as in ``solve_pairwise_svm``; the two solvers reach the same optimum within
their certified gaps, not the same iterate.

A mapper has three methods: ``scatter(values) -> handles`` (put per-chunk values where
the work runs), ``map(function, *per_chunk, **same) -> handles`` (``function`` applied to
each chunk's arguments, ``same`` given to all) and ``gather(handles) -> list`` (the
values, in chunk order). This module imports only numpy and ``cltr.core``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from cltr.core.svm import PairwiseProblem, SVMResult, _check_cost, _check_inputs, _check_point, _PlaneQP

__all__ = [
    "LocalMapper",
    "ClickChunk",
    "ChunkedProblem",
    "split_queries",
    "chunk_weights",
    "chunk_planes",
    "chunk_slack_sums",
    "SEGMENT",
]

_TINY = 1e-12  # floor of |objective| in the relative gap, as in cltr.core.svm
# where on the segment w_b + k (w_cp - w_b) the planes of one iteration are taken: w_cp itself
# (plain cutting planes), and points nearer w_b, where OCAS's exact line search usually lands
# (measured on the embedded default's clicks: iterations within 1.5x of OCAS's; bench/distributed.py)
SEGMENT = (1.0, 0.5, 0.25, 0.1)


class LocalMapper:
    """The in-process mapper: chunks stay here and are computed one after another."""

    workers = 1

    def scatter(self, values: Sequence) -> list:
        return list(values)

    def map(self, function: Callable, *per_chunk: Sequence, **same) -> list:
        return [function(*arguments, **same) for arguments in zip(*per_chunk, strict=True)]

    def gather(self, handles: Sequence) -> list:
        return list(handles)


@dataclass
class ClickChunk:
    """The queries of one chunk: their rows of X (float64), query offsets from 0, and the
    examples on them with query and document indices local to the chunk. The expanded pairs
    (``problem``) are built where the chunk lives, on first use, and kept there."""

    X: np.ndarray
    offsets: np.ndarray
    click_query: np.ndarray
    click_doc: np.ndarray
    candidate: np.ndarray | None = None
    _problem: PairwiseProblem | None = field(default=None, repr=False)
    _run_of_pair: np.ndarray | None = field(default=None, repr=False)

    @property
    def problem(self) -> PairwiseProblem:
        if self._problem is None:
            self._problem = PairwiseProblem(
                self.X, self.offsets, self.click_query, self.click_doc, candidate=self.candidate
            )
        return self._problem

    @property
    def run_of_pair(self) -> np.ndarray:
        """Row of X_used of each pair's clicked document, shape (n_pairs,)."""
        if self._run_of_pair is None:
            problem = self.problem
            self._run_of_pair = np.repeat(problem.run_row, problem.count)
        return self._run_of_pair


def split_queries(offsets: np.ndarray, click_query: np.ndarray, chunks: int) -> np.ndarray:
    """Query boundaries of ``chunks`` chunks of whole queries with about equal work.

    A query's work is its pairs (its examples times its documents) plus its documents;
    chunk k owns queries ``bounds[k]:bounds[k + 1]``. Queries are never split, so there
    may be fewer non-empty chunks than asked for (empty ones are dropped).

    Returns
    -------
    ndarray of int64, shape (n_chunks + 1,), rising from 0 to n_queries.
    """
    if isinstance(chunks, (bool, np.bool_)) or int(chunks) != chunks or chunks < 1:
        raise ValueError(f"chunks must be an integer >= 1, found {chunks!r}")
    sizes = np.diff(offsets)
    examples = np.bincount(click_query, minlength=len(sizes))
    work = np.cumsum(examples * sizes + sizes, dtype=np.float64)
    if len(work) == 0 or work[-1] == 0:
        return np.array([0, len(sizes)], dtype=np.int64)
    targets = work[-1] * np.arange(1, int(chunks)) / int(chunks)
    cuts = np.searchsorted(work, targets, side="left") + 1
    return np.unique(np.concatenate([[0], np.minimum(cuts, len(sizes)), [len(sizes)]])).astype(np.int64)


# --------------------------------------------------------------------------- per-chunk work


def chunk_weights(chunk: ClickChunk, cost: np.ndarray, scale: float) -> np.ndarray:
    """a per distinct clicked document of the chunk: ``scale`` (C/n, n over every chunk)
    times the costs of its examples, shape (n_clicked_docs,)."""
    problem = chunk.problem
    return np.bincount(
        problem.example_of, weights=scale * np.asarray(cost, dtype=np.float64), minlength=len(problem.doc)
    )


def chunk_planes(
    chunk: ClickChunk, weight: np.ndarray, points: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The chunk's share of R and of its plane at each of m points.

    With δ_p = [w.d_p < 1] at point w, the plane b - g.w (b = Σ a_p δ_p, g = Σ a_p δ_p d_p)
    lies below R everywhere and touches it at w: R(w) = b - g.w.

    Parameters
    ----------
    weight : ndarray, shape (n_clicked_docs,)
        ``chunk_weights``.
    points : ndarray, shape (m, n_features)

    Returns
    -------
    offset : ndarray, shape (m,)
        b per point.
    normal : ndarray, shape (m, n_features)
        g per point.
    risk : ndarray, shape (m,)
        The chunk's R at each point.
    """
    problem = chunk.problem
    m = len(points)
    if len(problem.negative) == 0:
        return np.zeros(m), np.zeros((m, points.shape[1])), np.zeros(m)
    X = problem.X_used
    scores = points @ X.T  # (m, n_used): one point's scores contiguous for its pair pass
    pair_weight = np.repeat(weight, problem.count)
    offset, risk = np.empty(m), np.empty(m)
    coef = np.empty((m, len(X)))
    hinge = np.empty(len(problem.negative))
    for j in range(m):
        np.take(scores[j], problem.negative, out=hinge)
        hinge -= np.repeat(scores[j, problem.run_row], problem.count)  # a run's clicked score, repeated
        hinge += 1.0
        active = pair_weight * (hinge > 0.0)
        offset[j] = active.sum()
        risk[j] = np.dot(active, hinge)
        # the plane's per-document coefficients: +a_p on each pair's clicked document, -a_p on the other
        coef[j] = np.bincount(chunk.run_of_pair, weights=active, minlength=len(X))
        coef[j] -= np.bincount(problem.negative, weights=active, minlength=len(X))
    return offset, coef @ X, risk


def chunk_slack_sums(chunk: ClickChunk, w: np.ndarray) -> np.ndarray:
    """S_i(w) of the chunk's examples, shape (n_chunk_examples,) (``PairwiseProblem.slack_sums``)."""
    return chunk.problem.slack_sums(w)


def _in_order(parts: list) -> np.ndarray:
    """Σ of the chunks' arrays, added in chunk order: the same bits wherever they were computed."""
    total = np.array(parts[0], dtype=np.float64, copy=True)
    for part in parts[1:]:
        total += part
    return total


# --------------------------------------------------------------------------- the problem


class ChunkedProblem:
    """A click problem cut into chunks of whole queries, placed by a mapper.

    The same interface as ``PairwiseProblem`` (``objective``, ``slack_sums``, ``solve``), so
    that a CCP run (``cltr.core.ccp.propdcg_ccp(problem=...)``) uses it unchanged.

    Parameters
    ----------
    X, offsets, click_query, click_doc, candidate
        As ``PairwiseProblem`` takes them.
    chunks : int
        How many chunks to cut (whole queries each, about equal work: ``split_queries``).
    mapper : optional
        Where the chunks live and are computed (default ``LocalMapper()``); they are
        scattered once, here.
    """

    def __init__(self, X, offsets, click_query, click_doc, *, chunks: int, mapper=None, candidate=None):
        X, offsets, click_query, click_doc, candidate = _check_inputs(X, offsets, click_query, click_doc, candidate)
        self.mapper = LocalMapper() if mapper is None else mapper
        self.n_features, self.n_examples = X.shape[1], len(click_doc)
        bounds = split_queries(offsets, click_query, chunks)
        order = np.argsort(click_query, kind="stable")
        ends = np.searchsorted(click_query[order], bounds)
        self.examples: list[np.ndarray] = []  # the examples of each chunk, as indices into the caller's
        parts = []
        for k in range(len(bounds) - 1):
            q0, q1 = int(bounds[k]), int(bounds[k + 1])
            r0, r1 = int(offsets[q0]), int(offsets[q1])
            mine = order[ends[k] : ends[k + 1]]
            self.examples.append(mine)
            parts.append(
                ClickChunk(
                    X=np.asarray(X[r0:r1], dtype=np.float64),
                    offsets=offsets[q0 : q1 + 1] - r0,
                    click_query=click_query[mine] - q0,
                    click_doc=click_doc[mine] - r0,
                    candidate=None if candidate is None else candidate[r0:r1],
                )
            )
        self.n_chunks = len(parts)
        self.chunks = self.mapper.scatter(parts)

    def _weights(self, cost, C) -> list:
        cost, C = _check_cost(cost, C, self.n_examples)
        scale = C / max(self.n_examples, 1)
        return self.mapper.map(chunk_weights, self.chunks, [cost[mine] for mine in self.examples], scale=scale)

    def _evaluate(self, weights: list, points: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(b, g, R) at each point, summed over the chunks in chunk order: one map."""
        results = self.mapper.gather(self.mapper.map(chunk_planes, self.chunks, weights, points=points))
        return (
            _in_order([r[0] for r in results]),
            _in_order([r[1] for r in results]),
            _in_order([r[2] for r in results]),
        )

    def objective(self, w, cost, C) -> float:
        """P(w) = ½‖w‖² + R(w) for costs ``cost`` (shape (n_examples,)) and ``C``."""
        w = _check_point(w, self.n_features, "w")
        _, _, risk = self._evaluate(self._weights(cost, C), w[None, :])
        return float(0.5 * np.dot(w, w) + risk[0])

    def slack_sums(self, w) -> np.ndarray:
        """S_i(w) per example, shape (n_examples,), in the caller's example order."""
        w = _check_point(w, self.n_features, "w")
        parts = self.mapper.gather(self.mapper.map(chunk_slack_sums, self.chunks, w=w))
        slack = np.zeros(self.n_examples)
        for mine, part in zip(self.examples, parts, strict=True):
            slack[mine] = part
        return slack

    def solve(
        self,
        cost,
        C,
        *,
        w0=None,
        tol: float = 1e-3,
        max_iter: int = 1000,
        callback: Callable[[int, float, float], None] | None = None,
        segment: Sequence[float] = SEGMENT,
    ) -> SVMResult:
        """Minimise P(w) to a certified relative duality gap ``tol``; see ``solve_pairwise_svm``.

        Each iteration is one map: the planes at w_b + k (w_cp - w_b) for k in ``segment``
        (all added to the QP), and the best of those points becomes w_b when it lowers P.
        """
        start = time.perf_counter()
        if isinstance(tol, (bool, np.bool_)) or not bool(np.isscalar(tol)) or not tol > 0:
            raise ValueError(f"tol must be a number > 0, found {tol!r}")
        if isinstance(max_iter, (bool, np.bool_)) or int(max_iter) != max_iter or max_iter < 1:
            raise ValueError(f"max_iter must be an integer >= 1, found {max_iter!r}")
        steps = np.asarray(segment, dtype=np.float64)
        if steps.ndim != 1 or len(steps) == 0 or np.any(~(steps > 0)) or np.any(steps > 1):
            raise ValueError(f"segment must hold points k in (0, 1], found {list(segment)!r}")
        d = self.n_features
        w = np.zeros(d) if w0 is None else _check_point(w0, d, "w0").copy()
        weights = self._weights(cost, C)
        b, g, risk = self._evaluate(weights, w[None, :])
        objective = 0.5 * float(np.dot(w, w)) + float(risk[0])
        if not (np.isfinite(objective) and np.all(np.isfinite(g))):
            raise ValueError(
                "X must be finite in every row that takes part in a pair, and C times the costs must stay finite"
            )
        planes = _PlaneQP(d, capacity=64)
        planes.add(float(b[0]), g[0])
        target = float(tol) * (1.0 - 1e-3)  # as in solve_pairwise_svm: a hair inside tol
        lower, iteration = 0.0, 0
        while True:
            w_cp, value = planes.solve(1e-2 * target * max(objective, _TINY))
            lower = max(lower, value)
            converged = objective - lower <= target * max(objective, _TINY)
            if callback is not None:
                callback(iteration, objective, lower)
            if converged or iteration >= max_iter:
                break
            iteration += 1
            points = w[None, :] + steps[:, None] * (w_cp - w)[None, :]
            b, g, risk = self._evaluate(weights, points)
            for j in range(len(points)):
                planes.add(float(b[j]), g[j])
            values = 0.5 * np.einsum("md,md->m", points, points) + risk
            best = int(np.argmin(values))
            if values[best] < objective:
                objective, w = float(values[best]), points[best].copy()
        gap = (objective - lower) / max(abs(objective), _TINY)
        return SVMResult(w, objective, lower, gap, iteration, time.perf_counter() - start, bool(gap <= tol))
