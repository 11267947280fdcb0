"""The pairwise linear SVM solver against brute force and a generic QP solver."""

import numpy as np
import pytest
from scipy.optimize import minimize

from cltr.svm import pairwise_objective, solve_pairwise_svm


def tiny_problem(seed, n_features=3, n_examples=5):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 6, 3)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    X = rng.random((offsets[-1], n_features))
    click_query = rng.integers(0, 3, n_examples)
    click_doc = offsets[click_query] + (rng.random(n_examples) * sizes[click_query]).astype(int)
    cost = rng.random(n_examples) + 0.2
    return X, offsets, click_query, click_doc, cost


def loop_objective(w, X, offsets, click_query, click_doc, cost, C, candidate=None):
    total = 0.0
    for i in range(len(click_doc)):
        for y in range(offsets[click_query[i]], offsets[click_query[i] + 1]):
            if y == click_doc[i] or (candidate is not None and not candidate[y]):
                continue
            total += cost[i] * max(0.0, 1.0 - w @ (X[click_doc[i]] - X[y]))
    return 0.5 * w @ w + C / len(click_doc) * total


def generic_qp(X, offsets, click_query, click_doc, cost, C, candidate=None):
    """min ½‖w‖² + Σ a ξ s.t. w.d >= 1 - ξ, ξ >= 0, with explicit slack variables."""
    rows, weights = [], []
    for i in range(len(click_doc)):
        for y in range(offsets[click_query[i]], offsets[click_query[i] + 1]):
            if y != click_doc[i] and (candidate is None or candidate[y]):
                rows.append(X[click_doc[i]] - X[y])
                weights.append(C / len(click_doc) * cost[i])
    D, a, d = np.array(rows), np.array(weights), X.shape[1]
    scale = 1.0 / (1.0 + C)  # keeps SLSQP's line search well conditioned at large C
    result = minimize(
        lambda z: scale * (0.5 * z[:d] @ z[:d] + a @ z[d:]), np.zeros(d + len(a)),
        jac=lambda z: scale * np.concatenate([z[:d], a]), method="SLSQP",
        constraints=[{"type": "ineq", "fun": lambda z: D @ z[:d] - 1 + z[d:],
                      "jac": lambda z: np.hstack([D, np.eye(len(a))])},
                     {"type": "ineq", "fun": lambda z: z[d:],
                      "jac": lambda z: np.hstack([np.zeros((len(a), d)), np.eye(len(a))])}],
        options={"ftol": 1e-13, "maxiter": 2000})
    assert result.success, result.message
    return result.fun / scale


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("C", [0.1, 3.0, 30.0])
def test_matches_generic_qp(seed, C):
    problem = tiny_problem(seed)
    reference = generic_qp(*problem, C)
    result = solve_pairwise_svm(*problem, C, tol=1e-7)
    assert result.converged and result.gap <= 1e-7
    assert result.objective == pytest.approx(reference, rel=1e-4)
    # The certificate is real: lower bound <= optimum <= objective.
    assert result.lower_bound <= reference * (1 + 1e-6) + 1e-9
    assert result.objective >= reference * (1 - 1e-6) - 1e-9
    assert result.objective == pytest.approx(pairwise_objective(result.w, *problem, C), rel=1e-12)


def test_candidate_mask_matches_generic_qp():
    X, offsets, click_query, click_doc, cost = tiny_problem(11)
    candidate = np.random.default_rng(1).random(len(X)) < 0.6
    reference = generic_qp(X, offsets, click_query, click_doc, cost, 2.0, candidate)
    result = solve_pairwise_svm(X, offsets, click_query, click_doc, cost, 2.0, candidate=candidate, tol=1e-7)
    assert result.objective == pytest.approx(reference, rel=1e-4)


@pytest.mark.parametrize("seed", range(4))
def test_vectorised_objective_equals_double_loop(seed):
    problem = tiny_problem(seed, n_examples=8)
    w = np.random.default_rng(seed).normal(size=3)
    candidate = np.random.default_rng(seed + 1).random(len(problem[0])) < 0.7
    assert pairwise_objective(w, *problem, 1.7) == pytest.approx(loop_objective(w, *problem, 1.7))
    assert pairwise_objective(w, *problem, 1.7, candidate=candidate) == pytest.approx(
        loop_objective(w, *problem, 1.7, candidate))


def test_unit_weights_equal_full_information_ranking_svm():
    rng = np.random.default_rng(4)
    offsets = np.array([0, 4, 9, 12])
    X = rng.random((12, 3))
    relevant = np.array([1, 0, 0, 1, 0, 1, 0, 0, 0, 1, 1, 0], dtype=bool)
    doc_query = np.repeat(np.arange(3), np.diff(offsets))
    w = rng.normal(size=3)
    click_doc = np.flatnonzero(relevant)
    value = pairwise_objective(w, X, offsets, doc_query[click_doc], click_doc, np.ones(len(click_doc)), 2.0,
                               candidate=~relevant)
    # Written out directly: every relevant x irrelevant pair of each query.
    hinge = sum(max(0.0, 1 - w @ (X[i] - X[j])) for q in range(3)
                for i in range(offsets[q], offsets[q + 1]) for j in range(offsets[q], offsets[q + 1])
                if relevant[i] and not relevant[j])
    assert value == pytest.approx(0.5 * w @ w + 2.0 / len(click_doc) * hinge)


def test_warm_start_from_optimum_is_quick_and_float32_works():
    problem = tiny_problem(3, n_examples=20)
    cold = solve_pairwise_svm(*problem, 5.0, tol=1e-6)
    warm = solve_pairwise_svm(*problem, 5.0, tol=1e-6, w0=cold.w)
    assert warm.iterations <= cold.iterations and warm.objective <= cold.objective * (1 + 1e-6)
    X32 = problem[0].astype(np.float32)
    single = solve_pairwise_svm(X32, *problem[1:], 5.0, tol=1e-4)
    assert single.objective == pytest.approx(cold.objective, rel=1e-3)


def test_larger_problem_certified_at_default_tolerance():
    rng = np.random.default_rng(0)
    offsets = np.arange(0, 30 * 12 + 1, 12)
    X = rng.random((360, 8))
    click_doc = np.sort(rng.choice(360, 80, replace=False))
    for C in (0.01, 1.0, 100.0):
        result = solve_pairwise_svm(X, offsets, click_doc // 12, click_doc, 1 + rng.random(80), C)
        assert result.converged and 0 <= result.gap <= 1e-3 + 1e-12


def test_no_examples():
    X, offsets, *_ = tiny_problem(0)
    empty = np.zeros(0, dtype=np.int64)
    result = solve_pairwise_svm(X, offsets, empty, empty, np.zeros(0), 1.0)
    assert result.converged and result.objective == 0 and not result.w.any()


def test_input_validation():
    X, offsets, click_query, click_doc, cost = tiny_problem(0)
    with pytest.raises(ValueError, match="C must be"):
        solve_pairwise_svm(X, offsets, click_query, click_doc, cost, 0.0)
    with pytest.raises(ValueError, match="cost must be finite"):
        solve_pairwise_svm(X, offsets, click_query, click_doc, -cost, 1.0)
    with pytest.raises(ValueError, match="tol"):
        solve_pairwise_svm(X, offsets, click_query, click_doc, cost, 1.0, tol=0)
    with pytest.raises(ValueError, match="one entry per example"):
        solve_pairwise_svm(X, offsets, click_query, click_doc[:-1], cost, 1.0)
    wrong = click_doc.copy()
    wrong[0] = offsets[click_query[0] + 1] if click_query[0] < 2 else 0
    with pytest.raises(ValueError, match="is not a row of its query"):
        solve_pairwise_svm(X, offsets, click_query, wrong, cost, 1.0)
