"""The convex-concave procedure of SVM PropDCG (paper Sec. 4.1)."""

from itertools import pairwise

import numpy as np
import pytest

from cltr.core.ccp import ccp_costs, propdcg_ccp, slack_sums, surrogate_objective, true_objective
from cltr.core.objectives import RankWeight, average_rank, dcg, precision_at_k, rank_weight
from cltr.core.svm import PairwiseProblem, solve_pairwise_svm


def click_problem(seed, n_queries=25, size=10, n_features=6, n_clicks=60):
    rng = np.random.default_rng(seed)
    offsets = np.arange(0, n_queries * size + 1, size)
    X = rng.random((n_queries * size, n_features))
    click_doc = rng.choice(n_queries * size, n_clicks, replace=True)
    propensity = 1.0 / (1 + click_doc % size)
    return X, offsets, click_doc // size, click_doc, propensity


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("metric", ["dcg", "rbp:0.8"])
def test_true_objective_never_increases(seed, metric):
    X, offsets, click_query, click_doc, propensity = click_problem(seed)
    result = propdcg_ccp(X, offsets, click_query, click_doc, propensity, 5.0, rank_weight(metric))
    values = [result.initial_objective] + [step.objective for step in result.trace]
    assert all(b <= a + 1e-12 for a, b in pairwise(values))
    recomputed = true_objective(
        result.w, slack_sums(result.w, X, offsets, click_query, click_doc), propensity, rank_weight(metric), 5.0
    )
    assert recomputed == pytest.approx(result.objective)


def test_surrogate_touches_at_expansion_point_and_majorises():
    X, offsets, click_query, click_doc, propensity = click_problem(1)
    weight = rank_weight("dcg")
    rng = np.random.default_rng(0)
    w_at = rng.normal(size=X.shape[1])
    at = slack_sums(w_at, X, offsets, click_query, click_doc)
    assert surrogate_objective(w_at, at, at, propensity, weight, 2.0) == pytest.approx(
        true_objective(w_at, at, propensity, weight, 2.0)
    )
    for _ in range(20):
        w = w_at + rng.normal(size=X.shape[1])
        slack = slack_sums(w, X, offsets, click_query, click_doc)
        assert (
            surrogate_objective(w, slack, at, propensity, weight, 2.0)
            >= true_objective(w, slack, propensity, weight, 2.0) - 1e-12
        )


def test_average_rank_is_proprank():
    X, offsets, click_query, click_doc, propensity = click_problem(2)
    ccp = propdcg_ccp(X, offsets, click_query, click_doc, propensity, 3.0, rank_weight("avgrank"))
    proprank = solve_pairwise_svm(X, offsets, click_query, click_doc, 1.0 / propensity, 3.0)
    assert len(ccp.trace) == 1
    assert np.allclose(ccp.w, proprank.w, atol=1e-6)


@pytest.mark.parametrize("seed", range(3))
def test_ccp_at_least_as_good_as_proprank_and_zero(seed):
    X, offsets, click_query, click_doc, propensity = click_problem(seed)
    weight = rank_weight("dcg")
    ccp = propdcg_ccp(X, offsets, click_query, click_doc, propensity, 5.0, weight)
    proprank = solve_pairwise_svm(X, offsets, click_query, click_doc, 1.0 / propensity, 5.0).w
    for w in (np.zeros(X.shape[1]), proprank):
        other = true_objective(w, slack_sums(w, X, offsets, click_query, click_doc), propensity, weight, 5.0)
        assert ccp.objective <= other + 1e-9


def test_rejects_weights_that_are_not_concave_and_differentiable():
    X, offsets, click_query, click_doc, propensity = click_problem(0)
    with pytest.raises(ValueError, match="concave, differentiable"):
        propdcg_ccp(X, offsets, click_query, click_doc, propensity, 1.0, precision_at_k(3))
    convex = RankWeight("square", value=np.square, derivative=lambda r: 2.0 * r, concave=False)
    with pytest.raises(ValueError, match="concave, differentiable"):
        propdcg_ccp(X, offsets, click_query, click_doc, propensity, 1.0, convex)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_merged_slack_sums_equal_the_plain_formula(dtype):
    X, offsets, click_query, click_doc, _ = click_problem(5, n_clicks=200)  # many repeated documents
    X = X.astype(dtype)
    w = np.random.default_rng(1).normal(size=X.shape[1])
    merged = PairwiseProblem(X, offsets, click_query, click_doc).slack_sums(w)
    plain = slack_sums(w, X, offsets, click_query, click_doc)
    assert np.allclose(merged, plain, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5)


def test_ccp_costs_are_the_papers_reweighted_propensities():
    # DCG: q'_i = q_i (S_i + 2) log²(S_i + 2) (paper Sec. 4.1), natural log as lambda's
    slack = np.array([0.0, 0.5, 3.0, 12.25])
    propensity = np.array([1.0, 0.5, 0.25, 0.1])
    expected = 1.0 / (propensity * (slack + 2) * np.log(slack + 2) ** 2)
    np.testing.assert_allclose(ccp_costs(slack, propensity, dcg()), expected, rtol=1e-12)
    # average rank is linear: its costs are PropRank's 1/q whatever the slack
    np.testing.assert_allclose(ccp_costs(slack, propensity, average_rank()), 1.0 / propensity, rtol=1e-12)


def test_every_step_records_its_inner_tolerance_and_whether_the_solve_met_it(monkeypatch):
    from cltr.core.ccp import inner_misses

    X, offsets, click_query, click_doc, propensity = click_problem(2)
    result = propdcg_ccp(X, offsets, click_query, click_doc, propensity, 5.0, rank_weight("dcg"), inner_tol=1e-3)
    assert all(step.inner_converged and step.inner_gap <= step.inner_tol for step in result.trace)
    assert all(step.inner_tol >= 1e-3 for step in result.trace) and result.trace[-1].inner_tol == 1e-3
    assert inner_misses(result.trace) == []
    # inner solves cut short after two planes: their gaps exceed their tolerance, and the trace says so
    solve = PairwiseProblem.solve
    monkeypatch.setattr(
        PairwiseProblem, "solve", lambda self, *args, **kwargs: solve(self, *args, **kwargs, max_iter=2)
    )
    result = propdcg_ccp(X, offsets, click_query, click_doc, propensity, 5.0, rank_weight("dcg"), inner_tol=1e-3)
    misses = inner_misses(result.trace)
    assert misses and all(m["inner_gap"] > m["inner_tol"] for m in misses)
    assert [m["iteration"] for m in misses] == [s.iteration for s in result.trace if not s.inner_converged]
    assert inner_misses(
        [
            {"iteration": 1, "inner_gap": 0.5, "inner_tol": 0.1, "inner_converged": False},
            {"iteration": 2, "inner_gap": 0.0},
        ]
    ) == [{"iteration": 1, "inner_gap": 0.5, "inner_tol": 0.1}]
