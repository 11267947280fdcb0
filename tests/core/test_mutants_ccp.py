"""Tests that kill the survivors of bench/mutation.py on cltr/core/ccp.py (each names the
mutant it kills); expected values are hand-computed."""

import dataclasses
import time
from types import SimpleNamespace

import numpy as np
import pytest

from cltr.core.ccp import (
    CCPResult,
    CCPStep,
    _extrapolate,
    inner_misses,
    propdcg_ccp,
    surrogate_objective,
    true_objective,
)
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


class ScriptedProblem:
    """A stand-in for the PairwiseProblem of one example (propensity 1, n = 1), whose solves
    return the points of a script in turn and whose slack sums there give the scripted true
    objectives of dcg at C: o = ½w² + C λ(1 + S), so S = exp(-C / (o - ½w²)) - 2. Any other
    point (an extrapolation's trial) gets S = 1e6, an objective near 0, far above the script's,
    so every trial is rejected and CCP walks the script exactly."""

    def __init__(self, points, objectives, C, start_objective):
        self.points = [np.array([p]) for p in points]
        self.slack = {0.0: self._slack(0.0, start_objective, C)}
        for p, o in zip(points, objectives, strict=True):
            self.slack[p] = self._slack(p, o, C)
        self.solves = 0

    @staticmethod
    def _slack(w, objective, C):
        slack = np.exp(-C / (objective - 0.5 * w * w)) - 2.0
        assert slack >= 0.0
        return slack

    def slack_sums(self, w):
        return np.array([self.slack.get(float(w[0]), 1e6)])

    def solve(self, cost, C, w0, tol):
        w = self.points[self.solves]
        self.solves += 1
        return SimpleNamespace(w=w, iterations=1, gap=0.0, converged=True)


def ladder(steps):
    """Points 1e-3 (2 - 2^-k), k = 0, 1, ...: each step half the last, so that no doubling
    trial from one lands on a later one (every trial lies at or beyond 2e-3)."""
    return [1e-3 * (2.0 - 2.0**-k) for k in range(steps)]


def scripted_ccp(points, objectives, start_objective=-0.3, **kwargs):
    C = 0.5
    problem = ScriptedProblem(points, objectives, C, start_objective)
    X, offsets, one = np.zeros((2, 1)), np.array([0, 2]), np.array([0])
    return propdcg_ccp(X, offsets, one, one, np.ones(1), C, dcg(), problem=problem, **kwargs)


def test_the_inner_tolerance_and_the_stop_follow_the_relative_improvements():
    # The step tolerance is max(inner_tol, 0.1 × the last relative improvement), and CCP stops at
    # the first step solved to inner_tol that improves by at most tol × |objective|, or ties.
    # Objectives below 1 in size make relative and absolute improvements differ. Script, with
    # tol = 1e-2 and inner_tol = 1e-3: -0.3 -> -0.6 (rel 0.5: step 2 is loose, 0.05),
    # -0.603 (rel 0.005, not final: loose), -0.611 (change 0.008, above tol × 0.611 = 0.0061
    # but below tol: rel 0.0131 makes step 4 loose at 1.31e-3), -0.6111 (small but loose), and a
    # tie at the mirrored point -w (accepted: it is no worse; then the stop).
    # Kills `_LOOSE = 0.1` -> 1.1, `last_change = change / max(...)` -> `*` and its `1e-12` ->
    # `1.000000000001` (both make step 4 tight and stop there), the stop's `tol * max(...)` ->
    # `/` and its `1e-12` -> `1.000000000001` (both stop at step 3), `new_objective <= objective`
    # -> `<` (the tie rejected: w stays at +w), and the removed `callback(step)`.
    points = [*ladder(4), -ladder(4)[-1]]
    objectives = [-0.6, -0.603, -0.611, -0.6111, -0.6111]
    seen = []
    result = scripted_ccp(points, objectives, tol=1e-2, inner_tol=1e-3, max_iter=10, callback=seen.append)
    assert result.converged and [s.iteration for s in result.trace] == [1, 2, 3, 4, 5]
    assert seen == result.trace
    got = [result.initial_objective] + [s.objective for s in result.trace]
    np.testing.assert_allclose(got, [-0.3, *objectives], rtol=1e-12)
    assert got[5] == got[4]  # the tie is exact: same slack sum and same ‖w‖²
    np.testing.assert_array_equal(result.w, [points[-1]])
    expected_tol = [1e-3]
    for i in range(1, 5):
        change = got[i - 1] - got[i]
        expected_tol.append(max(1e-3, 0.1 * (change / abs(got[i]))))
    assert [s.inner_tol for s in result.trace] == pytest.approx(expected_tol, rel=1e-12)
    assert expected_tol[1] > 1e-3 and expected_tol[3] > 1e-3 and expected_tol[2] == expected_tol[4] == 1e-3


def test_the_default_budget_is_twenty_steps_and_ends_unconverged():
    # kills `max_iter: int = 20` -> 21, `converged = False` -> True (a run that ends by its budget
    # is not converged) and `range(1, ... + 1)` -> `range(2, ...)` / `+ 2` (steps numbered 1..20):
    # 25 scripted steps each improving by 0.01, tol = 0, so no step may stop it
    points = ladder(25)
    objectives = [-0.31 - 0.01 * k for k in range(25)]
    result = scripted_ccp(points, objectives, tol=0.0)
    assert not result.converged
    assert [s.iteration for s in result.trace] == list(range(1, 21))
    np.testing.assert_array_equal(result.w, [points[19]])


def test_an_exact_fixed_point_stops_even_at_tol_zero():
    # kills the stop's `change <= tol * max(...)` -> `<`: queries of one document have no pair,
    # so every solve returns w = 0 exactly and the objective does not move (change 0); with
    # tol = 0 that step must still end the procedure
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    result = propdcg_ccp(X, np.array([0, 1, 2]), np.array([0, 1]), np.array([0, 1]), np.ones(2), 1.0, dcg(), tol=0.0)
    assert result.converged and len(result.trace) == 1
    np.testing.assert_array_equal(result.w, [0.0, 0.0])


@pytest.mark.parametrize("C", [0.0, -1.0])
def test_C_must_be_positive(C):
    # kills `C <= 0` -> `C < 0` (C = 0 is refused) and the removed raise
    X, offsets, click_query, click_doc, propensity = tiny_click_problem()
    with pytest.raises(ValueError, match="C must be positive"):
        propdcg_ccp(X, offsets, click_query, click_doc, propensity, C, dcg())


def test_extrapolation_stops_after_six_doublings():
    # kills `_MAX_EXTRAPOLATIONS = 6` -> 7 and `t = 1.0` -> 2.0: the example of
    # test_extrapolation_doubles_along_the_step_while_the_objective_falls from the tiny step
    # 0 -> 0.001: every trial falls (all below the kink at w = 1), t = 1, 2, ..., 32, so the best is
    # w = 0.001 + 32 × 0.001 = 0.033 (the mutants reach 0.065)
    X = np.array([[1.0], [0.0]])
    offsets, click_query, click_doc, propensity = np.array([0, 2]), np.array([0]), np.array([0]), np.ones(1)
    problem = PairwiseProblem(X, offsets, click_query, click_doc)
    weight, C = average_rank(), 10.0
    w_old, w_new = np.array([0.0]), np.array([0.001])
    slack = problem.slack_sums(w_new)
    objective = true_objective(w_new, slack, propensity, weight, C)
    w, _, best = _extrapolate(problem, w_old, w_new, slack, objective, propensity, weight, C)
    assert w == pytest.approx([0.033])
    assert best == pytest.approx(0.5 * 0.033**2 + 10.0 * (2.0 - 0.033))


def test_the_surrogate_of_one_example_averages_over_one():
    # kills `n = max(len(slack), 1)` -> 2 in surrogate_objective: at its expansion point the
    # surrogate is the true objective, 0 + (1/1)·λ(1 + 0.5) = 1.5 for average rank
    slack = np.array([0.5])
    assert surrogate_objective(np.zeros(1), slack, slack, np.ones(1), average_rank(), 1.0) == 1.5
    assert true_objective(np.zeros(1), slack, np.ones(1), average_rank(), 1.0) == 1.5


def test_steps_and_results_are_frozen_and_a_step_is_converged_by_default():
    # kills `@dataclass(frozen=True)` -> False on CCPStep and CCPResult (a trace is a record)
    # and `inner_converged: bool = True` -> False (a step built without it met its tolerance,
    # and inner_misses lists none)
    step = CCPStep(1, -0.5, -0.4, 3, 1e-4, 0.01)
    assert step.inner_converged is True and inner_misses([step]) == []
    with pytest.raises(dataclasses.FrozenInstanceError):
        step.objective = 0.0
    result = CCPResult(np.zeros(1), -0.5, True, [step])
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.converged = False
