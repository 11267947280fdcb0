"""SVM PropDCG (and any concave rank weight) by the convex-concave procedure.

Legend (paper Sec. 4.1):
    xi_iy, slack of pair (i, y)          -> the hinge max(0, 1 - w.(x_{y_i} - x_y)) at the optimum
    sum_y xi_iy                          -> ``slack_sum[i]`` = hinge rank bound - 1
    lambda(r)                            -> ``weight`` (a ``RankWeight``; DCG: -1/log(1 + r))
    q_i                                  -> ``propensity[i]``
    q'_i = q_i (S + 2) log^2(S + 2)      -> ``propensity / weight.derivative(1 + slack_sum)``
                                            (for DCG; the same formula for any lambda)

The objective ½‖w‖² + (C/n) Σ_i (1/q_i) lambda(1 + S_i(w)) is a difference of convex
functions when lambda is concave and increasing. CCP replaces lambda by its tangent at the
current slack sums, which majorises it, so each step solves a propensity-weighted Ranking
SVM with costs c_i = lambda'(1 + S_i^k) / q_i (warm-started) and the true objective can
never increase. A linear lambda (average rank) needs a single solve.

Three things make it fast (``bench/ccp.py``): the pairs are expanded once
(``PairwiseProblem``) and only the costs change between steps; early steps, while the
tangent still moves a lot, are solved loosely; and each step is extrapolated along its
direction while the true objective keeps falling (``_extrapolate``), which skips much of
CCP's linear creep along flat valleys. Every accepted point lowers the true objective.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np

from cltr.core.clicks import Clicks
from cltr.core.objectives import RankWeight, hinge_rank_bound
from cltr.core.svm import PairwiseProblem

_LOOSE = 0.1  # a step's inner tolerance may be this share of the last relative improvement
_MAX_EXTRAPOLATIONS = 6  # steps of doubling length tried after each CCP step

__all__ = [
    "CCPStep",
    "CCPResult",
    "inner_misses",
    "slack_sums",
    "ccp_costs",
    "true_objective",
    "surrogate_objective",
    "propdcg_ccp",
]


@dataclass(frozen=True)
class CCPStep:
    """One CCP iteration: the new point's true objective and what it took.

    ``inner_tol`` is the duality gap the step's SVM solve was asked for (looser than
    ``inner_tol`` of ``propdcg_ccp`` while the objective still falls fast), and
    ``inner_converged`` whether it certified it (False: it ran out of cutting planes, and
    the step's solution is approximate; ``inner_misses`` lists such steps).
    """

    iteration: int
    objective: float
    surrogate: float
    inner_iterations: int
    inner_gap: float
    seconds: float
    train_snips_avg_dcg: float = float("nan")
    inner_tol: float = float("nan")
    inner_converged: bool = True


@dataclass(frozen=True)
class CCPResult:
    w: np.ndarray
    objective: float
    converged: bool
    trace: list[CCPStep] = field(default_factory=list)
    initial_objective: float = float("nan")


def inner_misses(trace) -> list[dict]:
    """The steps of a CCP trace (``CCPStep``s or their dicts) whose inner solve did not
    certify its tolerance: ``[{"iteration", "inner_gap", "inner_tol"}]``, in order."""
    rows = [step if isinstance(step, dict) else asdict(step) for step in trace]
    return [
        {key: row[key] for key in ("iteration", "inner_gap", "inner_tol")}
        for row in rows
        if not row.get("inner_converged", True)
    ]


def slack_sums(w, X, offsets, click_query, click_doc) -> np.ndarray:
    """S_i(w) = Σ_{y != y_i} max(0, 1 - w.(x_{y_i} - x_y)), shape (n_examples,).

    The plain formula over every click (``propdcg_ccp`` uses ``PairwiseProblem.slack_sums``,
    which merges clicks on one document); the tests check one against the other.
    """
    scores = np.asarray(X @ np.asarray(w, dtype=X.dtype), dtype=np.float64)
    return hinge_rank_bound(scores, offsets, Clicks(click_query, click_doc)) - 1.0


def ccp_costs(slack: np.ndarray, propensity: np.ndarray, weight: RankWeight) -> np.ndarray:
    """The costs c_i = 1/q'_i of one CCP step (paper Sec. 4.1), shape (n_examples,).

    Linearising lambda at the current slack sums S_i gives a propensity-weighted Ranking
    SVM with cost c_i = lambda'(1 + S_i) / q_i. For DCG, lambda(r) = -1/log(1 + r), this is

        q'_i = q_i (S_i + 2) log²(S_i + 2),

    the paper's re-weighted propensity; the same formula holds for any differentiable lambda.
    """
    return weight.derivative(1.0 + np.asarray(slack, dtype=np.float64)) / np.asarray(propensity, dtype=np.float64)


def true_objective(w, slack, propensity, weight: RankWeight, C: float) -> float:
    """½‖w‖² + (C/n) Σ_i (1/q_i) lambda(1 + S_i)."""
    n = max(len(slack), 1)
    return float(0.5 * np.dot(w, w) + C / n * np.sum(weight.value(1.0 + slack) / propensity))


def surrogate_objective(w, slack, slack_at, propensity, weight: RankWeight, C: float) -> float:
    """The CCP majoriser at expansion point ``slack_at``, evaluated at slack sums ``slack``.

    ½‖w‖² + (C/n) Σ_i (1/q_i) [lambda(1 + S^k_i) + lambda'(1 + S^k_i) (S_i - S^k_i)]
    """
    n = max(len(slack), 1)
    at = 1.0 + slack_at
    tangent = weight.value(at) + weight.derivative(at) * (slack - slack_at)
    return float(0.5 * np.dot(w, w) + C / n * np.sum(tangent / propensity))


def _extrapolate(problem, w_old, w_new, slack, objective, propensity, weight, C):
    """Go further along the CCP step w_new - w_old while the true objective keeps falling.

    CCP converges linearly, creeping along flat valleys with steps that point the same way;
    trying w_new + t (w_new - w_old) for t = 1, 2, 4, ... (one product with X each) and
    keeping the best point skips much of the creep. Only a lower true objective is
    accepted, so the objective still never rises; the next tangent is taken there.
    """
    direction = w_new - w_old
    best = (w_new, slack, objective)
    t = 1.0
    for _ in range(_MAX_EXTRAPOLATIONS):
        w = w_new + t * direction
        trial_slack = problem.slack_sums(w)
        value = true_objective(w, trial_slack, propensity, weight, C)
        if not value < best[2]:
            break
        best = (w, trial_slack, value)
        t *= 2.0
    return best


def propdcg_ccp(
    X: np.ndarray,
    offsets: np.ndarray,
    click_query: np.ndarray,
    click_doc: np.ndarray,
    propensity: np.ndarray,
    C: float,
    weight: RankWeight,
    *,
    w0: np.ndarray | None = None,
    max_iter: int = 20,
    tol: float = 1e-3,
    inner_tol: float = 1e-3,
    monitor: Callable[[np.ndarray], float] | None = None,
    callback: Callable[[CCPStep], None] | None = None,
    problem=None,
) -> CCPResult:
    """Minimise ½‖w‖² + (C/n) Σ_i (1/q_i) lambda(1 + S_i(w)) by the convex-concave procedure.

    Parameters
    ----------
    X : ndarray, shape (n_docs, n_features)
    offsets : ndarray, shape (n_queries + 1,)
    click_query, click_doc : ndarray, shape (n_examples,)
        Query and row of each click; Y_i is every document of the query.
    propensity : ndarray, shape (n_examples,)
        q_i.
    C : float
    weight : RankWeight
        Increasing rank weight; concave (DCG, RBP) or linear (average rank).
    w0 : ndarray, shape (n_features,), optional
        Initial point (default 0; the PropRank solution is a good alternative).
    max_iter : int
        Largest number of convex steps.
    tol : float
        Stop when the true objective improves by less than ``tol`` relative.
    inner_tol : float
        Relative duality gap certified by each convex step once the objective falls
        slowly; while the last step improved it by more than ``inner_tol / 0.1``
        (relative), a step is solved only to a tenth of that improvement. Only a step
        solved to ``inner_tol`` may end the procedure.
    monitor : callable w -> float, optional
        Recorded per step as ``train_snips_avg_dcg`` (e.g. the training SNIPS Avg DCG).
    callback : callable CCPStep -> None, optional
        Called after every step (progress).
    problem : PairwiseProblem or ChunkedProblem, optional
        The pairs of (X, offsets, click_query, click_doc), already built (default: a
        ``PairwiseProblem`` of them); a ``cltr.core.chunked.ChunkedProblem`` runs every
        step's products chunk by chunk, wherever its mapper puts them.
    """
    propensity = np.asarray(propensity, dtype=np.float64)
    if C <= 0:
        raise ValueError(f"C must be positive, found {C}")
    if max_iter < 1:
        raise ValueError(f"max_iter must be at least 1, found {max_iter}")
    w = np.zeros(X.shape[1]) if w0 is None else np.asarray(w0, dtype=np.float64).copy()
    setup_start = time.perf_counter()
    if problem is None:
        problem = PairwiseProblem(X, offsets, click_query, click_doc)  # the pairs, once for every step
    slack = problem.slack_sums(w)
    objective = true_objective(w, slack, propensity, weight, C)
    initial = objective
    trace: list[CCPStep] = []
    converged = False
    if not weight.concave or not weight.differentiable:
        raise ValueError(
            f"CCP needs a concave, differentiable rank weight (dcg, rbp:P, avgrank); "
            f"{weight.name!r} is not, so its bound is not a difference of convex functions"
        )
    # a constant derivative (average rank) makes every tangent the function itself
    linear = float(np.ptp(weight.derivative(np.array([1.0, 2.0, 10.0, 1e4])))) == 0.0
    setup = time.perf_counter() - setup_start
    last_change = 0.0  # relative improvement of the last step
    for iteration in range(1, (1 if linear else max_iter) + 1):
        start = time.perf_counter() - (setup if iteration == 1 else 0.0)
        cost = ccp_costs(slack, propensity, weight)
        # Far from convergence the tangent moves a lot anyway: solve loosely then (any point
        # below the surrogate's value at w lowers the true objective) and tightly near the end.
        step_tol = max(inner_tol, _LOOSE * last_change)
        result = problem.solve(cost, C, w0=w, tol=step_tol)
        new_slack = problem.slack_sums(result.w)
        new_objective = true_objective(result.w, new_slack, propensity, weight, C)
        surrogate = surrogate_objective(result.w, new_slack, slack, propensity, weight, C)
        # The inner solve is certified only to step_tol: a step that does not improve the
        # true objective is rejected, which keeps the objective monotone by construction.
        improved = new_objective <= objective
        if improved:
            w, slack, new_objective = _extrapolate(
                problem, w, result.w, new_slack, new_objective, propensity, weight, C
            )
        step = CCPStep(
            iteration,
            min(new_objective, objective),
            surrogate,
            result.iterations,
            result.gap,
            time.perf_counter() - start,
            monitor(w) if monitor is not None else float("nan"),
            inner_tol=step_tol,
            inner_converged=result.converged,
        )
        trace.append(step)
        if callback is not None:
            callback(step)
        change = objective - step.objective
        objective = step.objective
        last_change = change / max(abs(objective), 1e-12)
        # only a step solved to inner_tol can declare convergence; a loose one that failed
        # to improve enough is redone tightly (last_change is then below inner_tol / _LOOSE)
        if linear or (step_tol <= inner_tol and (not improved or change <= tol * max(abs(objective), 1e-12))):
            converged = True
            break
    return CCPResult(w=w, objective=objective, converged=converged, trace=trace, initial_objective=initial)
