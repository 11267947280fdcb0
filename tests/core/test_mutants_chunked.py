"""Tests that kill the survivors of bench/mutation.py on cltr/core/chunked.py (each names the
mutants it kills). Oracles: hand-computed query bounds, and a problem of one pair, whose risk
R(w) = a max(0, 1 - w.d) is a single plane, so that its optimum, its objective at every point
and the exact QP value of the first iteration (the lower bound then) are known by hand."""

import time

import numpy as np
import pytest

from cltr.core.chunked import ChunkedProblem, LocalMapper, _in_order, split_queries

# one query of two documents, its first clicked once: d = x_0 - x_1 = (1, 0), n = 1, a = C
ONE_PAIR = dict(X=np.array([[1.0, 0.0], [0.0, 0.0]]), offsets=np.array([0, 2]), click_query=[0], click_doc=[0])


def one_pair(**kwargs):
    return ChunkedProblem(**ONE_PAIR, chunks=1, **kwargs)


def optimum(C):
    """(w*, P*) of ½‖w‖² + C max(0, 1 - w_1): w_1 = C while C <= 1, else the kink w_1 = 1."""
    w1 = min(C, 1.0)
    return np.array([w1, 0.0]), 0.5 * w1 * w1 + C * (1.0 - w1)


def solve_traced(problem, C, **kwargs):
    trace = []
    result = problem.solve(np.ones(1), C, callback=lambda *step: trace.append(step), **kwargs)
    return result, trace


@pytest.mark.parametrize(
    "offsets, click_query, chunks, bounds",
    [
        # no query (kills `len(work) == 0 or work[-1] == 0`'s `or` -> `and`, `== 0` -> `== 1`:
        # work[-1] of nothing; the early return's `[0, ...]` -> `[1, ...]`)
        ([0], [], 3, [0, 0]),
        # queries without documents, no work at all (kills `work[-1] == 0` -> `== 1` and `or`
        # -> `and`, which cut the empty queries into chunks)
        ([0, 0, 0], [], 2, [0, 2]),
        # one query of work 3 + 3 (kills work[-1] -> work[1], work[-2]: no such query)
        ([0, 3], [0], 2, [0, 1]),
        # work 0, 0, 3, 3: the half is reached at the third query (kills work[-1] -> work[1],
        # which sees the empty second query's total 0, and the cut's `+ 1` -> `- 1`, `+ 2`)
        ([0, 0, 0, 3, 6], [], 2, [0, 3, 4]),
        # work examples * size + size = 1, 6, 6: the half (6.5) falls in the second query
        # (kills `+ sizes` -> `- sizes`: -1, 0, 4; `examples * sizes` -> `/`: 1, 3.3, 6; and
        # `np.arange(1, chunks)` -> `arange(2, chunks)`, which makes no cut for 2 chunks)
        ([0, 1, 4, 5], [1, 2, 2, 2, 2, 2], 2, [0, 2, 3]),
    ],
)
def test_split_queries_by_hand(offsets, click_query, chunks, bounds):
    got = split_queries(np.array(offsets), np.array(click_query, dtype=np.int64), chunks)
    np.testing.assert_array_equal(got, bounds)
    assert got.dtype == np.int64


def test_the_local_mapper_is_one_worker_that_refuses_ragged_chunk_arguments():
    # kills `workers = 1` -> 2 (the training info records the mapper's workers) and the map's
    # zip `strict=True` -> False, which would drop a chunk without a word
    mapper = LocalMapper()
    assert mapper.workers == 1
    assert mapper.map(lambda a, b, c: a + b + c, [1, 2], [10, 20], c=100) == [111, 122]
    with pytest.raises(ValueError):
        mapper.map(lambda a, b: a + b, [1, 2], [10])


def test_a_chunks_repr_leaves_out_its_expanded_pairs():
    # kills `field(default=None, repr=False)` -> True for _problem and _run_of_pair: the pairs
    # are built where the chunk lives and may be large; the repr shows what the chunk was given
    chunk = one_pair().chunks[0]
    assert len(chunk.run_of_pair) == 1 and chunk.problem is not None  # both built now
    text = repr(chunk)
    assert "_problem" not in text and "_run_of_pair" not in text and text.startswith("ClickChunk(X=")


def test_in_order_sums_leave_the_chunks_arrays_as_they_were():
    # kills `np.array(parts[0], ..., copy=True)` -> False: the sum would be added into the
    # first chunk's own array (a mapper's gather may hand back the stored result itself)
    first, second = np.array([1.0, 2.0]), np.array([10.0, 20.0])
    total = _in_order([first, second])
    np.testing.assert_array_equal(total, [11.0, 22.0])
    np.testing.assert_array_equal(first, [1.0, 2.0])
    alone = _in_order([first])
    assert alone is not first and np.array_equal(alone, first)


@pytest.mark.parametrize(
    "C, tol, iterations",
    [
        # a = 0.5: P(0) = 0.5; the plane at 0 is all of R, so the first QP gives P* = 0.375
        (0.5, 1e-3, 1),
        # a = 4: w* at the kink (1, 0), P* = ½ (the planes are long: ‖g‖² = 16 > b = 4)
        (4.0, 1e-3, 1),
        # P(0) = 0.01, P* = 0.00995: relative gap 5e-3 > tol, one more iteration (kills _TINY
        # -> 1.000000000001 and `target * max(objective, _TINY)` -> `/`, which take the gap
        # as absolute for an objective below 1 and stop at 0)
        (1e-2, 1e-3, 1),
        # P(0) = 1e-3, P* = 9.995e-4: a relative gap of 5e-4 at once (kills the QP's tolerance
        # `1e-2 * target * max(...)` -> `/ max(...)`, 1e-5 / 1e-3, looser than the gap b = 1e-3
        # itself, so the QP stops at β = plane 0 with bound 0; and _TINY -> 1.0...: gap 5e-7)
        (1e-3, 1e-3, 0),
        # the relative gap at 0 is 0.25 exactly, a hair above tol * (1 - 1e-3): one more
        # iteration (kills `tol * (1.0 - 1e-3)` -> `tol / (...)`, `(1.0 + 1e-3)`, stop at 0)
        (0.5, 0.25, 1),
        # tol 0.995: the first gap 0.25 is certified at once (kills the QP's tolerance `1e-2 *`
        # -> `1.01 *`: 1.01 * 0.994 * 0.5 >= b = 0.5, the first QP stops at bound 0)
        (0.5, 0.995, 0),
    ],
)
def test_one_pair_solves_to_its_hand_computed_optimum_with_a_traced_bound(C, tol, iterations):
    # every step's (iteration, P, lower bound) (kills the removed callback, `iteration = 0` ->
    # 1, `iteration += 1` -> `-=`, `+= 2` and removed); the first bound is the exact QP value
    # over the plane at 0 (kills the removed first `planes.add`), P(0) = a, n = 1 (kills
    # `max(n_examples, 1)` -> 2) and a chunk of one pair has planes (kills `len(negative) == 0`
    # -> `== 1`)
    w_star, p_star = optimum(C)
    result, trace = solve_traced(one_pair(), C, tol=tol)
    assert [step[0] for step in trace] == list(range(iterations + 1))
    assert trace[0][1] == C and trace[0][2] == pytest.approx(p_star, rel=1e-9)
    assert result.iterations == iterations and result.converged
    if iterations:
        np.testing.assert_allclose(result.w, w_star, rtol=0, atol=1e-9)
        assert result.objective == pytest.approx(p_star, rel=1e-9) == trace[-1][1]
    else:
        assert not result.w.any() and result.objective == C
    assert result.lower_bound == trace[-1][2]
    # the gap is relative to the objective, whatever its size
    assert result.gap == pytest.approx((result.objective - result.lower_bound) / result.objective, abs=1e-12)
    assert result.gap <= tol * (1 - 1e-3)
    assert one_pair().objective([0.2, 0.3], np.ones(1), C) == pytest.approx(0.5 * 0.13 + C * 0.8, rel=1e-12)


def test_a_warm_start_on_the_kink_stopped_by_max_iter_at_a_gap_of_exactly_tol():
    # from w0 = (1, 0), where w.d = 1: the hinge is 0, so by δ = [w.d < 1] its plane is R >= 0
    # and the first bound is 0 (kills `hinge > 0.0` -> `>=`); P(w0) = ½ (kills `0.5 * w.w`
    # -> 1.5); plain cutting planes go to w_cp = 0, no better (P = ½), and bring the plane
    # that certifies 0.375: a gap of 0.25 exactly when max_iter = 1 stops it (kills
    # `iteration >= max_iter` -> `>`, `max_iter < 1` -> `<= 1` and `1` -> `2`), and a gap
    # equal to tol has met it (kills `gap <= tol` -> `<`)
    result, trace = solve_traced(one_pair(), 0.5, w0=[1.0, 0.0], segment=(1.0,), max_iter=1, tol=0.25)
    assert trace[0] == (0, 0.5, 0.0)
    assert trace[1][:2] == (1, 0.5) and trace[1][2] == pytest.approx(0.375, rel=1e-12)
    np.testing.assert_array_equal(result.w, [1.0, 0.0])
    assert (result.iterations, result.objective, result.gap) == (1, 0.5, 0.25) and result.converged


def test_a_problem_without_pairs_is_solved_at_zero_even_for_a_subnormal_tol():
    # P = lower bound = 0 at w = 0; tol 5e-324 makes the stopping bound target * max(0, _TINY)
    # underflow to 0, and 0 <= 0 has converged (kills `objective - lower <= ...` -> `<`, which
    # runs to max_iter)
    X = ONE_PAIR["X"]
    problem = ChunkedProblem(X, [0, 2], np.zeros(0, np.int64), np.zeros(0, np.int64), chunks=1)
    result = problem.solve(np.ones(0), 1.0, tol=5e-324, max_iter=3)
    assert (result.iterations, result.objective, result.lower_bound, result.gap) == (0, 0.0, 0.0, 0.0)
    assert result.converged


def test_the_default_cap_is_a_thousand_iterations():
    # steps of a tenth of the segment approach w* geometrically and stall a few ulps short of
    # it, so tol 5e-324 (a stopping bound that underflows to 0) is never met: the default cap
    # ends the run (kills `max_iter: int = 1000` -> 1001)
    result = one_pair().solve(np.ones(1), 0.5, tol=5e-324, segment=(0.1,))
    assert result.iterations == 1000 and not result.converged and result.gap > 0


def test_the_default_tol_is_a_relative_gap_of_one_in_a_thousand():
    # kills `tol: float = 1e-3` -> 1.001, which every first bound meets (gap <= 1): the
    # default run equals tol=1e-3's and goes on past the first gap (0.25 here)
    default = one_pair().solve(np.ones(1), 0.5)
    told = one_pair().solve(np.ones(1), 0.5, tol=1e-3)
    assert default.iterations == told.iterations == 1 and default.gap <= 1e-3
    np.testing.assert_array_equal(default.w, told.w)


@pytest.mark.parametrize(
    "options, message",
    [
        # kills the removed raise, `or` -> `and` (both: True is a bool and a scalar; 0 is
        # neither bool nor non-scalar) and `tol > 0` -> `>= 0`
        ({"tol": True}, "tol must be a number > 0"),
        ({"tol": 0.0}, "tol must be a number > 0"),
        ({"tol": [1e-3]}, "tol must be a number > 0"),
        ({"tol": float("nan")}, "tol must be a number > 0"),
        # kills the removed raise and `or` -> `and` (True == int(True); 0 is a whole number)
        ({"max_iter": True}, "max_iter must be an integer >= 1"),
        ({"max_iter": 0}, "max_iter must be an integer >= 1"),
        ({"max_iter": 2.5}, "max_iter must be an integer >= 1"),
        # kills the removed raise, `or` -> `and`, `steps > 0` -> `>= 0` and `steps > 1` -> `> 2`
        ({"segment": ()}, r"segment must hold points k in \(0, 1\]"),
        ({"segment": (0.0,)}, r"segment must hold points k in \(0, 1\]"),
        ({"segment": (0.5, -0.5)}, r"segment must hold points k in \(0, 1\]"),
        ({"segment": (1.5,)}, r"segment must hold points k in \(0, 1\]"),
        ({"segment": (float("nan"),)}, r"segment must hold points k in \(0, 1\]"),
        ({"segment": [[0.5]]}, r"segment must hold points k in \(0, 1\]"),
    ],
)
def test_bad_solver_options_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        one_pair().solve(np.ones(1), 1.0, **options)


@pytest.mark.parametrize("segment", [(1.0,), (0.5,), (1.0, 0.25)])
def test_any_segment_of_points_in_zero_to_one_is_taken(segment):
    # kills `len(steps) == 0` -> `== 1`, `steps > 1` -> `>= 1` and `steps > 0` -> `> 1`:
    # one point, the end point k = 1 and points inside are all valid
    result = one_pair().solve(np.ones(1), 0.5, segment=segment, max_iter=100)
    assert result.converged and result.objective == pytest.approx(0.375, rel=1e-3)


def test_a_risk_that_overflows_is_refused():
    # two pairs of weight C c_i / n = 1e308 each: R(0) = 2e308 overflows while the plane's
    # normal stays 0 (X is 0), so only the objective's check can see it (kills `and` -> `or`
    # in `not (isfinite(objective) and all(isfinite(g)))` and the removed raise)
    problem = ChunkedProblem(np.zeros((4, 1)), [0, 2, 4], [0, 1], [0, 2], chunks=2)
    with np.errstate(over="ignore"), pytest.raises(ValueError, match="C times the costs must stay finite"):
        problem.solve(np.array([2.0, 2.0]), 1e308)


def test_the_seconds_are_those_the_solve_took():
    # kills `time.perf_counter() - start` -> `+`
    before = time.perf_counter()
    result = one_pair().solve(np.ones(1), 0.5)
    assert 0.0 <= result.seconds <= time.perf_counter() - before
