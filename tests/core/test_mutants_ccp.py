"""Tests that kill the survivors of bench/mutation.py on cltr/core/ccp.py (each names the
mutant it kills); expected values are hand-computed."""

import time

import numpy as np
import pytest

from cltr.core.ccp import _extrapolate, propdcg_ccp, true_objective
from cltr.core.objectives import average_rank, dcg
from cltr.core.svm import PairwiseProblem


def test_extrapolation_doubles_along_the_step_while_the_objective_falls():
    # kills `direction = w_new - w_old` -> `w_new + w_old` (and true_objective's
    # `max(len(slack), 1)` -> `max(len(slack), 2)`: one example, n = 1). One query, documents x = 1 and
    # x = 0, a click on the first at propensity 1, average rank, C = 10: the true objective is
    # 1/2 w^2 + 10 (1 + max(0, 1 - w)), falling (w - 10 < 0) up to its kink at w = 1. From the
    # step 0.1 -> 0.2 (direction 0.1) the trials are 0.3, 0.4, 0.6, 1.0 (each lower) and 1.8
    # (1.62 + 10 > 10.5, rejected): the best is w = 1, objective 10.5. Along 0.3 (the mutant's
    # direction) it would stop at 1.4.
    X = np.array([[1.0], [0.0]])
    offsets, click_query, click_doc, propensity = np.array([0, 2]), np.array([0]), np.array([0]), np.ones(1)
    problem = PairwiseProblem(X, offsets, click_query, click_doc)
    weight, C = average_rank(), 10.0
    w_old, w_new = np.array([0.1]), np.array([0.2])
    slack = problem.slack_sums(w_new)
    objective = true_objective(w_new, slack, propensity, weight, C)
    assert objective == pytest.approx(0.02 + 10 * 1.8)
    w, best_slack, best = _extrapolate(problem, w_old, w_new, slack, objective, propensity, weight, C)
    assert w == pytest.approx([1.0])
    assert best_slack == pytest.approx([0.0], abs=1e-12)
    assert best == pytest.approx(10.5)


def tiny_click_problem():
    """Two queries of three documents, two features, three clicks."""
    X = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [0.0, 0.0], [1.0, 1.0], [0.2, 0.9]])
    return X, np.array([0, 3, 6]), np.array([0, 0, 1]), np.array([0, 2, 4]), np.array([1.0, 0.5, 0.25])


def test_max_iter_one_is_one_step_and_zero_is_refused():
    # kills `max_iter < 1` -> `<= 1` (one step is a valid budget) and the removed raise
    # (zero steps would return the starting point as if solved)
    X, offsets, click_query, click_doc, propensity = tiny_click_problem()
    result = propdcg_ccp(X, offsets, click_query, click_doc, propensity, 1.0, dcg(), max_iter=1)
    assert len(result.trace) == 1
    assert result.objective <= result.initial_objective
    with pytest.raises(ValueError, match="max_iter must be at least 1"):
        propdcg_ccp(X, offsets, click_query, click_doc, propensity, 1.0, dcg(), max_iter=0)


def test_step_times_add_up_to_at_most_the_wall_time():
    # kills `setup = time.perf_counter() - setup_start` -> `+`: the first step's seconds
    # include the pair setup, and all steps together took no longer than the whole call
    X, offsets, click_query, click_doc, propensity = tiny_click_problem()
    start = time.perf_counter()
    result = propdcg_ccp(X, offsets, click_query, click_doc, propensity, 1.0, dcg(), max_iter=5)
    elapsed = time.perf_counter() - start
    seconds = [step.seconds for step in result.trace]
    assert all(s >= 0 for s in seconds)
    assert sum(seconds) <= elapsed


def test_the_first_step_counts_the_pair_setup(monkeypatch):
    # kills `iteration == 1` -> `== 2` in the step timer: the pairs are expanded once, before
    # the first step, and that time is the first step's (made 0.2 s here by a slow setup)
    import cltr.core.ccp as ccp

    class SlowSetup(PairwiseProblem):
        def __init__(self, *args, **kwargs):
            time.sleep(0.2)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(ccp, "PairwiseProblem", SlowSetup)
    X, offsets, click_query, click_doc, propensity = tiny_click_problem()
    result = propdcg_ccp(X, offsets, click_query, click_doc, propensity, 1.0, dcg(), max_iter=1)
    assert result.trace[0].seconds >= 0.2


def test_ccp_stops_only_once_a_step_improves_by_less_than_tol():
    # kills `change = objective - step.objective` -> `+`: DCG's objective is negative, so
    # the mutant's "change" is negative and it stops after the first step, whose improvement
    # from w = 0 is far above tol
    X, offsets, click_query, click_doc, propensity = tiny_click_problem()
    tol = 1e-4
    result = propdcg_ccp(X, offsets, click_query, click_doc, propensity, 10.0, dcg(), max_iter=50, tol=tol)
    assert result.converged
    objectives = [result.initial_objective] + [step.objective for step in result.trace]
    assert objectives[0] - objectives[1] > tol * abs(objectives[1])  # the first step alone would not do
    assert objectives[-2] - objectives[-1] <= tol * abs(objectives[-1])
    assert np.all(np.diff(objectives) <= 0)
