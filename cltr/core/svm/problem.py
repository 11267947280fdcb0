"""What a pairwise SVM problem is made of: the result type, the input checks, the products
with X (float32 blocks or widened float64) and the layout of the pairs (runs and cache-sized
blocks). The notation is the package's (``cltr.core.svm``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import overload

import numpy as np

from cltr.core.clicks import Clicks
from cltr.core.objectives import check_example_rows

_WIDE_BLOCK_BYTES = 1 << 22  # float32 rows widened to float64 per block: a 4 MB buffer
_NARROW_BLOCK_BYTES = 1 << 24  # float32 rows per float32 product block: 16 MB of X
_BLOCK_PAIRS = 1 << 17  # pairs per block of a pair pass: a few 1 MB slices stay in cache


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
        raise ValueError(
            f"offsets must be a 1-D integer array (n_queries + 1,), found dtype "
            f"{offsets.dtype} and shape {offsets.shape}"
        )
    offsets = offsets.astype(np.int64)
    if offsets[0] != 0 or offsets[-1] != n_docs or np.any(np.diff(offsets) < 0):
        raise ValueError(
            f"offsets must rise from 0 to n_docs = {n_docs}, found "
            f"{offsets[:1].tolist()}...{offsets[-1:].tolist()}"
            + (" (decreasing somewhere)" if np.any(np.diff(offsets) < 0) else "")
        )
    click_query = np.asarray(click_query)
    click_doc = np.asarray(click_doc)
    if click_query.ndim != 1 or click_doc.ndim != 1:
        raise ValueError(
            f"click_query and click_doc must be 1-D, found shapes {click_query.shape} and {click_doc.shape}"
        )
    n = len(click_doc)
    if len(click_query) != n:
        raise ValueError(
            f"click_query and click_doc must have one entry per example; found lengths {len(click_query)} and {n}"
        )
    for name, values in (("click_query", click_query), ("click_doc", click_doc)):
        if n and not np.issubdtype(values.dtype, np.integer):
            raise ValueError(f"{name} must hold integer indices, found dtype {values.dtype}")
    click_query = click_query.astype(np.int64)
    click_doc = click_doc.astype(np.int64)
    check_example_rows(offsets, Clicks(click_query, click_doc))
    if candidate is not None:
        candidate = np.asarray(candidate)
        if candidate.dtype != bool or candidate.shape != (n_docs,):
            raise ValueError(
                f"candidate must be a boolean mask over the documents, shape "
                f"({n_docs},), found dtype {candidate.dtype} and shape {candidate.shape}"
            )
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
        raise ValueError(f"{name} must be finite, found {np.count_nonzero(~np.isfinite(w))} non-finite entries")
    return w


# --------------------------------------------------------------------------- products with X


def _weighted_sum(weight: np.ndarray, values: np.ndarray) -> float:
    """Σ weight * values without BLAS: a multithreaded ddot over pair-length vectors waits
    on busy cores (measured 25 ms instead of 10 µs for 25,000 pairs on a loaded 2-core
    machine), and numpy's pairwise sum is as accurate."""
    return float(np.multiply(weight, values).sum())


# what is asked for comes back: scores with w, the normal with coef
@overload
def _products(
    X: np.ndarray, w: np.ndarray, coef: np.ndarray | None = None, *, exact: bool = True
) -> tuple[np.ndarray, np.ndarray | None]: ...


@overload
def _products(X: np.ndarray, w: None = None, *, coef: np.ndarray, exact: bool = True) -> tuple[None, np.ndarray]: ...


def _products(
    X: np.ndarray, w: np.ndarray | None = None, coef: np.ndarray | None = None, *, exact: bool = True
) -> tuple[np.ndarray | None, np.ndarray | None]:
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
            total += coef32[start : start + rows] @ X[start : start + rows]
        return scores, total
    rows = max(16, _WIDE_BLOCK_BYTES // (8 * X.shape[1]))
    buffer = np.empty((min(rows, X.shape[0]), X.shape[1]))
    scores = None if w is None else np.empty(X.shape[0])
    total = None if coef is None else np.zeros(X.shape[1])
    for start in range(0, X.shape[0], rows):
        block = X[start : start + rows]
        wide = buffer[: len(block)]
        np.copyto(wide, block)
        if scores is not None and w is not None:
            np.dot(wide, w, out=scores[start : start + len(block)])
        if total is not None and coef is not None:
            total += coef[start : start + len(block)] @ wide
    return scores, total


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
    return [
        (slice(int(p0), int(p1)), slice(int(r0), int(r1)) if runs is None else runs[r0:r1])
        for p0, p1, r0, r1 in zip(pairs[:-1], pairs[1:], cuts[:-1], cuts[1:], strict=True)
    ]
