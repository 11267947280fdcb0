"""The exact pairwise SVM solver: brute-force objectives, a generic QP, the certificate, warm starts."""

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize

from cltr.core.svm import (
    PairwiseProblem,
    SVMResult,
    _active_slope,
    _line_root,
    _Pairs,
    _PlaneQP,
    pairwise_objective,
    solve_pairwise_svm,
)


def tiny_problem(seed, *, sizes=(3, 5, 4), n_features=3, n_examples=6, scale=1.0):
    """Queries of 3-5 documents, a few examples (repeats allowed) with random costs."""
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    X = scale * rng.normal(size=(offsets[-1], n_features))
    click_query = np.sort(rng.integers(0, len(sizes), n_examples))
    click_doc = offsets[click_query] + rng.integers(0, np.asarray(sizes)[click_query])
    cost = rng.uniform(0.2, 3.0, n_examples)
    return X, offsets, click_query, click_doc, cost


def brute_pairs(offsets, click_query, click_doc, candidate=None):
    """(example, positive, negative) triples by plain loops."""
    triples = []
    for i, (q, positive) in enumerate(zip(click_query, click_doc, strict=True)):
        for y in range(offsets[q], offsets[q + 1]):
            if y != positive and (candidate is None or candidate[y]):
                triples.append((i, int(positive), y))
    return triples


def brute_objective(w, X, offsets, click_query, click_doc, cost, C, candidate=None):
    total = 0.0
    for i, positive, y in brute_pairs(offsets, click_query, click_doc, candidate):
        total += cost[i] * max(0.0, 1.0 - float(w @ (X[positive] - X[y])))
    return 0.5 * float(w @ w) + C / len(click_doc) * total


def qp_optimum(X, offsets, click_query, click_doc, cost, C, candidate=None):
    """min ½‖w‖² + Σ a_i ξ_iy s.t. ξ >= 0, ξ_iy >= 1 - w.(x_i - x_y): a generic SLSQP solve over (w, ξ)."""
    triples = brute_pairs(offsets, click_query, click_doc, candidate)
    d, m = X.shape[1], len(triples)
    diffs = np.array([X[p] - X[y] for _, p, y in triples])
    a = np.array([C / len(click_doc) * cost[i] for i, _, _ in triples])

    scale = 1.0 + a.sum()  # SLSQP's line search dislikes large objective values

    def objective(z):
        return (0.5 * z[:d] @ z[:d] + a @ z[d:]) / scale, np.concatenate([z[:d], a]) / scale

    margin_jac = np.hstack([diffs, np.eye(m)])
    constraints = [{"type": "ineq", "fun": lambda z: z[d:] + diffs @ z[:d] - 1.0, "jac": lambda z: margin_jac}]
    z0 = np.concatenate([np.zeros(d), np.ones(m)])
    result = minimize(
        objective,
        z0,
        jac=True,
        method="SLSQP",
        constraints=constraints,
        bounds=[(None, None)] * d + [(0.0, None)] * m,
        options={"ftol": 1e-14, "maxiter": 2000},
    )
    assert result.success, result.message
    w = result.x[:d]
    # the exact primal at the QP's w: an upper bound on min P, tight to SLSQP's accuracy
    return w, brute_objective(w, X, offsets, click_query, click_doc, cost, C, candidate)


# --------------------------------------------------------------------------- the objective


@pytest.mark.parametrize("seed", range(4))
def test_objective_equals_double_loop(seed):
    X, offsets, click_query, click_doc, cost = tiny_problem(seed)
    w = np.random.default_rng(100 + seed).normal(size=X.shape[1])
    candidate = np.random.default_rng(200 + seed).random(len(X)) < 0.6
    for C in (0.3, 7.0):
        assert pairwise_objective(w, X, offsets, click_query, click_doc, cost, C) == pytest.approx(
            brute_objective(w, X, offsets, click_query, click_doc, cost, C), rel=1e-12
        )
        assert pairwise_objective(w, X, offsets, click_query, click_doc, cost, C, candidate=candidate) == (
            pytest.approx(brute_objective(w, X, offsets, click_query, click_doc, cost, C, candidate), rel=1e-12)
        )


def test_objective_by_hand():
    # one query of 3 documents on a line, the middle one clicked: margins +1 and -1
    X = np.array([[0.0], [1.0], [2.0]])
    w = np.array([1.0])
    value = pairwise_objective(w, X, [0, 3], [0], [1], [2.0], 3.0)
    assert value == pytest.approx(0.5 + 3.0 * 2.0 * (0.0 + 2.0))


def full_information_objective(w, X, offsets, relevant, C):
    """Conventional Ranking SVM: (C / #relevant) Σ_q Σ_{i rel} Σ_{j irrel} max(0, 1 - w.(x_i - x_j))."""
    total = 0.0
    for q in range(len(offsets) - 1):
        rows = range(offsets[q], offsets[q + 1])
        for i in rows:
            for j in rows:
                if relevant[i] and not relevant[j]:
                    total += max(0.0, 1.0 - float(w @ (X[i] - X[j])))
    return 0.5 * float(w @ w) + C / relevant.sum() * total


def test_full_information_ranking_svm_is_a_special_case():
    rng = np.random.default_rng(5)
    offsets = np.array([0, 4, 9, 12, 17])
    X = rng.normal(size=(offsets[-1], 4))
    relevant = rng.random(offsets[-1]) < 0.4
    relevant[[0, 4, 9]] = True
    relevant[[1, 5, 10]] = False
    click_doc = np.flatnonzero(relevant)
    click_query = np.searchsorted(offsets, click_doc, side="right") - 1
    ones = np.ones(len(click_doc))
    for w in (rng.normal(size=4), np.zeros(4)):
        assert pairwise_objective(w, X, offsets, click_query, click_doc, ones, 2.0, candidate=~relevant) == (
            pytest.approx(full_information_objective(w, X, offsets, relevant, 2.0), rel=1e-12)
        )
    result = solve_pairwise_svm(X, offsets, click_query, click_doc, ones, 2.0, candidate=~relevant, tol=1e-6)
    assert result.objective == pytest.approx(full_information_objective(result.w, X, offsets, relevant, 2.0), rel=1e-12)
    _, optimum = qp_optimum(X, offsets, click_query, click_doc, ones, 2.0, ~relevant)
    assert result.objective == pytest.approx(optimum, rel=1e-5)


# --------------------------------------------------------------------------- the solver


CASES = [(seed, C, masked) for seed in range(3) for C in (0.1, 1.0, 30.0) for masked in (False, True)]


@pytest.mark.parametrize("seed,C,masked", CASES)
def test_solver_matches_generic_qp_and_certificate_is_real(seed, C, masked):
    X, offsets, click_query, click_doc, cost = tiny_problem(seed, scale=0.7)
    candidate = None
    if masked:
        candidate = np.random.default_rng(300 + seed).random(len(X)) < 0.6
    w_qp, optimum = qp_optimum(X, offsets, click_query, click_doc, cost, C, candidate)

    exact = solve_pairwise_svm(X, offsets, click_query, click_doc, cost, C, candidate=candidate, tol=1e-7)
    assert exact.converged
    assert exact.objective == pytest.approx(optimum, rel=1e-4)

    result = solve_pairwise_svm(X, offsets, click_query, click_doc, cost, C, candidate=candidate)
    assert isinstance(result, SVMResult) and result.converged
    assert result.gap <= 1e-3
    assert result.lower_bound <= optimum + 1e-8
    assert result.objective >= optimum - 1e-8 * max(1.0, optimum)
    assert result.gap == pytest.approx((result.objective - result.lower_bound) / result.objective)
    assert result.objective == pairwise_objective(
        result.w, X, offsets, click_query, click_doc, cost, C, candidate=candidate
    )
    assert result.w.dtype == np.float64 and result.w.shape == (X.shape[1],)


def test_larger_problem_certificate_and_tight_solve():
    rng = np.random.default_rng(11)
    offsets = np.arange(0, 30 * 12 + 1, 12)
    X = rng.random((offsets[-1], 8))
    click_query = np.sort(rng.integers(0, 30, 70))
    click_doc = offsets[click_query] + rng.integers(0, 12, 70)
    cost = rng.uniform(1.0, 10.0, 70)
    loose = solve_pairwise_svm(X, offsets, click_query, click_doc, cost, 50.0, tol=1e-2)
    tight = solve_pairwise_svm(X, offsets, click_query, click_doc, cost, 50.0, tol=1e-8, max_iter=5000)
    assert loose.converged and tight.converged and tight.gap <= 1e-8
    # both certificates bound the one optimum
    assert loose.lower_bound <= tight.objective + 1e-9 and tight.lower_bound <= loose.objective
    assert loose.objective - tight.objective <= 1e-2 * loose.objective


def test_callback_sees_every_iteration_and_a_valid_bracket():
    X, offsets, click_query, click_doc, cost = tiny_problem(3, n_examples=9)
    seen = []
    result = solve_pairwise_svm(
        X, offsets, click_query, click_doc, cost, 20.0, tol=1e-6, callback=lambda *args: seen.append(args)
    )
    assert [s[0] for s in seen] == list(range(1, result.iterations + 1))
    objectives = [s[1] for s in seen]
    bounds = [s[2] for s in seen]
    assert all(lb <= obj + 1e-12 for _, obj, lb in seen)
    assert np.all(np.diff(objectives) <= 1e-12) and np.all(np.diff(bounds) >= -1e-12)


def test_warm_start_from_the_optimum_needs_very_few_iterations():
    rng = np.random.default_rng(2)
    offsets = np.arange(0, 40 * 10 + 1, 10)
    X = rng.random((offsets[-1], 6))
    click_query = np.sort(rng.integers(0, 40, 90))
    click_doc = offsets[click_query] + rng.integers(0, 10, 90)
    cost = rng.uniform(1.0, 5.0, 90)
    cold = solve_pairwise_svm(X, offsets, click_query, click_doc, cost, 10.0, tol=1e-8, max_iter=5000)
    fresh = solve_pairwise_svm(X, offsets, click_query, click_doc, cost, 10.0)
    warm = solve_pairwise_svm(X, offsets, click_query, click_doc, cost, 10.0, w0=cold.w)
    assert warm.converged and warm.iterations <= 2 < fresh.iterations
    # the optimum is kept: to the cold solve's certified 1e-8 (float32 products steer the
    # warm one, so its rounding, not the optimum, decides the digits beyond)
    assert cold.lower_bound <= warm.objective <= cold.objective * (1 + 1e-8)


def test_float32_features_work():
    rng = np.random.default_rng(4)
    offsets = np.arange(0, 20 * 8 + 1, 8)
    X = rng.random((offsets[-1], 5))
    click_query = np.sort(rng.integers(0, 20, 30))
    click_doc = offsets[click_query] + rng.integers(0, 8, 30)
    cost = rng.uniform(1.0, 4.0, 30)
    result64 = solve_pairwise_svm(X, offsets, click_query, click_doc, cost, 3.0, tol=1e-6)
    result32 = solve_pairwise_svm(X.astype(np.float32), offsets, click_query, click_doc, cost, 3.0, tol=1e-6)
    assert result32.converged and result32.w.dtype == np.float64
    assert result32.objective == pytest.approx(result64.objective, rel=1e-5)
    assert result32.objective == pairwise_objective(
        result32.w, X.astype(np.float32), offsets, click_query, click_doc, cost, 3.0
    )


def test_float32_products_give_way_when_they_cannot_resolve_the_gap(monkeypatch):
    # separable, features around 300: the optimum is all margin (P ~ 1e-4) and float32
    # products (error ~1e-5 per score) cannot certify 1e-3 of it; exact products take over;
    # the solver (cltr.core.svm.ocas) looks _products up in its own module
    import cltr.core.svm.ocas as svm

    exact_planes = []
    products = svm._products

    def watched(X, w=None, coef=None, *, exact=True):
        if w is None:
            exact_planes.append(exact)
        return products(X, w, coef, exact=exact)

    monkeypatch.setattr(svm, "_products", watched)
    rng = np.random.default_rng(1)
    sizes = rng.integers(3, 15, 12)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    X = np.round(rng.normal(size=(offsets[-1], 7)) * 100 + 300).astype(np.float32)
    click_query = np.arange(12)
    click_doc = np.array([offsets[q] + np.argmax(X[offsets[q] : offsets[q + 1], 0]) for q in click_query])
    cost = rng.uniform(0.5, 5.0, 12)
    result = solve_pairwise_svm(X, offsets, click_query, click_doc, cost, 10.0)
    reference = solve_pairwise_svm(X.astype(np.float64), offsets, click_query, click_doc, cost, 10.0, tol=1e-10)
    assert not exact_planes[0] and exact_planes[-1]
    assert result.converged and result.gap <= 1e-3
    assert result.lower_bound <= reference.objective * (1 + 1e-12)
    assert result.objective == pytest.approx(reference.objective, rel=1e-3)
    assert result.objective == pairwise_objective(result.w, X, offsets, click_query, click_doc, cost, 10.0)


def test_float64_features_are_steered_by_a_float32_copy_and_certified_with_exact_products(monkeypatch):
    # float64 X: a float32 copy of the rows the solver reads steers it (made once per
    # problem); the objective returned is P of the float64 X at w, and the bound a dual value
    # of the float64 problem, as exact products alone would certify
    import cltr.core.svm.ocas as svm

    dtypes = []
    products = svm._products

    def watched(X, w=None, coef=None, *, exact=True):
        dtypes.append((X.dtype, exact))
        return products(X, w, coef, exact=exact)

    rng = np.random.default_rng(21)
    sizes = rng.integers(5, 30, 60)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    X = rng.normal(size=(offsets[-1], 9))
    click_query = np.sort(rng.integers(0, 60, 150))
    click_doc = offsets[click_query] + (rng.random(150) * sizes[click_query]).astype(np.int64)
    cost = rng.uniform(1.0, 10.0, 150)
    monkeypatch.setattr(svm, "_STEER_COPY_BYTES", -1)  # no copy: exact products only
    optimum = solve_pairwise_svm(X, offsets, click_query, click_doc, cost, 30.0, tol=1e-9, max_iter=5000)
    monkeypatch.undo()
    monkeypatch.setattr(svm, "_products", watched)
    problem = PairwiseProblem(X, offsets, click_query, click_doc)
    result = problem.solve(cost, 30.0)
    assert (np.dtype(np.float32), False) in dtypes and dtypes[-1] == (np.dtype(np.float64), True)
    assert all(dtype == np.float64 for dtype, exact in dtypes if exact)
    assert problem.steering().dtype == np.float32 and problem.steering() is problem.steering()
    assert result.converged and result.gap <= 1e-3
    assert result.lower_bound <= optimum.lower_bound + 1e-9 * optimum.objective  # a true bound
    assert result.objective >= optimum.lower_bound
    assert result.objective == pairwise_objective(result.w, X, offsets, click_query, click_doc, cost, 30.0)
    assert result.objective == pytest.approx(optimum.objective, rel=1e-3)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tiny_steps_near_the_optimum_keep_an_exact_objective(dtype):
    # tol 1e-9: float32 estimates give way to exact products, and the line search's steps
    # toward w_cp become tiny (k up to 1e8 along a direction of norm ~1e-9). The scores'
    # change taken as X @ w_cp - at_w, with at_w kept by adding steps, was swamped by at_w's
    # rounding: the objective the solver tracked fell below the lower bound, and it returned
    # a point of gap 0.39 with float32 X, converged False (float64 X, steered by float32
    # products too, failed the same way before the change took X @ (w_cp - w))
    offsets = np.array([0, 3])
    click_query, click_doc = np.zeros(4, dtype=np.int64), np.array([1, 0, 1, 0])
    cost = 0.3359375 / np.array([0.05, 0.336841509915299, 0.5, 0.7756798102249477])
    X = np.random.default_rng(0).normal(size=(3, 3)).astype(dtype)
    C = 3.3499925338897585
    result = solve_pairwise_svm(X, offsets, click_query, click_doc, cost, C, tol=1e-9)
    assert result.converged and result.gap <= 1e-9
    assert result.objective == pairwise_objective(result.w, X, offsets, click_query, click_doc, cost, C)


@pytest.mark.parametrize(
    "scale, C, w0",
    [(1e20, 1.0, 1e19), (1.0, 1e-40, None), (1e-14, 1e39, None)],
    ids=["warm-start-scores", "a-row-beyond-float32", "weights-beyond-float32"],
)
def test_float32_steering_gives_way_where_float32_cannot_hold_the_problem(scale, C, w0):
    # a float32 score, row or plane weight overflows where float64 does not: exact products
    # throughout, and a result, where the first steered plane used to be taken for NaN in X
    rng = np.random.default_rng(0)
    offsets = np.array([0, 5, 10])
    click_query, click_doc, cost = np.array([0, 0, 1]), np.array([1, 3, 7]), np.ones(3)
    X = rng.normal(size=(10, 3)) * scale
    if w0 is None and C < 1:
        X[1, 0] = 1e39
    start = None if w0 is None else np.full(3, w0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning escapes the attempt
        result = solve_pairwise_svm(X, offsets, click_query, click_doc, cost, C, w0=start)
    assert result.objective == pairwise_objective(result.w, X, offsets, click_query, click_doc, cost, C)
    assert result.lower_bound <= result.objective


def test_features_far_from_unit_scale_are_not_steered():
    # float32 rounding of features of 1e6 and more loses the margins' differences (more
    # iterations, measured): exact products there; unit-scale float64 features get a copy
    rng = np.random.default_rng(3)
    offsets = np.arange(0, 4 * 5 + 1, 5)
    click_query, click_doc = np.arange(4), np.arange(4) * 5
    unit = PairwiseProblem(rng.normal(size=(20, 3)), offsets, click_query, click_doc)
    large = PairwiseProblem(rng.normal(size=(20, 3)) * 1e6, offsets, click_query, click_doc)
    assert unit.steering().dtype == np.float32 and large.steering() is None
    float32 = PairwiseProblem((rng.normal(size=(20, 3)) * 1e6).astype(np.float32), offsets, click_query, click_doc)
    assert float32.steering() is float32.X_used  # float32 X steers itself, as it always has


@pytest.mark.parametrize("C", [0.3, 30.0])
def test_float32_certificate_is_exact(C):
    # float32 products steer and estimate; the returned bound must still be a dual value of
    # the exact problem, however many estimated planes were pruned on the way
    rng = np.random.default_rng(12)
    sizes = rng.integers(5, 30, 60)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    X = rng.normal(size=(offsets[-1], 9)).astype(np.float32)
    click_query = np.sort(rng.integers(0, 60, 150))
    click_doc = offsets[click_query] + (rng.random(150) * sizes[click_query]).astype(np.int64)
    cost = rng.uniform(1.0, 10.0, 150)
    result = solve_pairwise_svm(X, offsets, click_query, click_doc, cost, C)
    optimum = solve_pairwise_svm(
        X.astype(np.float64), offsets, click_query, click_doc, cost, C, tol=1e-9, max_iter=5000
    )
    assert result.converged and result.gap <= 1e-3
    assert result.lower_bound <= optimum.lower_bound + 1e-9 * optimum.objective  # a true bound
    assert result.objective >= optimum.lower_bound
    assert result.objective == pairwise_objective(result.w, X, offsets, click_query, click_doc, cost, C)


def test_pairs_are_every_other_candidate_of_the_query():
    rng = np.random.default_rng(13)
    for _ in range(50):
        sizes = rng.integers(0, 7, rng.integers(1, 6))
        offsets = np.concatenate([[0], np.cumsum(sizes)])
        if offsets[-1] == 0:
            continue
        click_doc = np.unique(rng.integers(0, offsets[-1], rng.integers(1, offsets[-1] + 1)))
        click_query = np.searchsorted(offsets, click_doc, side="right") - 1
        for candidate in (None, rng.random(offsets[-1]) < 0.5):
            problem = PairwiseProblem(np.zeros((offsets[-1], 1)), offsets, click_query, click_doc, candidate=candidate)
            negative = problem.negative if problem.rows is None else problem.rows[problem.negative]
            found = [
                (int(d), int(y))
                for d, count, start in zip(problem.doc, problem.count, problem.run_start, strict=True)
                for y in negative[start : start + count]
            ]
            assert found == [(p, y) for _, p, y in brute_pairs(offsets, click_query, click_doc, candidate)]


def test_duplicate_examples_and_order_do_not_matter():
    X, offsets, click_query, click_doc, cost = tiny_problem(6, n_examples=5)
    # the same examples twice with half the cost, and n doubled: C doubles to compensate
    doubled = solve_pairwise_svm(
        X, offsets, np.repeat(click_query, 2), np.repeat(click_doc, 2), np.repeat(cost / 2, 2), 2 * 4.0, tol=1e-8
    )
    once = solve_pairwise_svm(X, offsets, click_query, click_doc, cost, 4.0, tol=1e-8)
    assert doubled.objective == pytest.approx(once.objective, rel=1e-7)
    order = np.random.default_rng(0).permutation(len(click_doc))
    shuffled = solve_pairwise_svm(X, offsets, click_query[order], click_doc[order], cost[order], 4.0, tol=1e-8)
    assert shuffled.objective == pytest.approx(once.objective, rel=1e-7)


def test_queries_without_examples_are_skipped_exactly():
    # the tiny problem's 3 queries between 20 and 20 unclicked ones: few rows of X are in
    # a pair, so the solver works on a copy of those rows
    X, offsets, click_query, click_doc, cost = tiny_problem(8, n_examples=6)
    rng = np.random.default_rng(8)
    sizes = np.concatenate([np.full(20, 5), np.diff(offsets), np.full(20, 6)])
    big_offsets = np.concatenate([[0], np.cumsum(sizes)])
    big_X = np.vstack([rng.normal(size=(100, X.shape[1])), X, rng.normal(size=(120, X.shape[1]))])
    small = solve_pairwise_svm(X, offsets, click_query, click_doc, cost, 2.0, tol=1e-8)
    big = solve_pairwise_svm(big_X, big_offsets, click_query + 20, click_doc + 100, cost, 2.0, tol=1e-8)
    assert big.objective == pytest.approx(small.objective, rel=1e-7)
    np.testing.assert_allclose(big.w, small.w, atol=1e-4)
    assert big.objective == pairwise_objective(big.w, big_X, big_offsets, click_query + 20, click_doc + 100, cost, 2.0)


def test_no_examples_or_no_cost_gives_zero():
    X = np.random.default_rng(0).normal(size=(5, 3))
    empty = np.array([], dtype=np.int64)
    result = solve_pairwise_svm(X, [0, 2, 5], empty, empty, np.array([]), 1.0, w0=np.ones(3))
    assert result.converged and result.objective == 0.0 and result.iterations == 0
    np.testing.assert_array_equal(result.w, np.zeros(3))
    zero_cost = solve_pairwise_svm(X, [0, 2, 5], [0, 1], [1, 3], [0.0, 0.0], 1.0)
    assert zero_cost.converged and zero_cost.objective == 0.0
    lonely = solve_pairwise_svm(X, [0, 1, 5], [0], [0], [1.0], 1.0)  # a query with one document: no pair
    assert lonely.converged and lonely.objective == 0.0
    assert pairwise_objective(np.ones(3), X, [0, 2, 5], empty, empty, np.array([]), 1.0) == 1.5


def test_max_iter_stops_unconverged_with_an_honest_gap():
    X, offsets, click_query, click_doc, cost = tiny_problem(9, n_examples=8)
    result = solve_pairwise_svm(X, offsets, click_query, click_doc, cost, 100.0, tol=1e-9, max_iter=1)
    assert result.iterations == 1 and not result.converged
    assert result.gap == pytest.approx((result.objective - result.lower_bound) / result.objective)


# --------------------------------------------------------------------------- the pieces


def pairs_with_state(slack, slope, weight):
    """A solver's pair state holding these slacks, slopes and weights (runs of 10 pairs)."""
    runs = len(slack) // 10
    offsets = np.arange(0, 11 * runs + 1, 11)
    problem = PairwiseProblem(np.zeros((offsets[-1], 2)), offsets, np.arange(runs), offsets[:-1])
    pairs = _Pairs(problem, problem.doc_weight(np.ones(runs), 1.0))
    pairs.slack[:], pairs.slope[:], pairs.weight[:] = slack, slope, weight
    return pairs


@pytest.mark.parametrize("n,share", [(10, 0.3), (300, 0.3), (20000, 0.01), (20000, 0.5), (50000, 0.9)])
def test_line_search_is_exact(n, share):
    # the root past 1%, 50% or 90% of the breakpoints' jumps: the sample's bracket then
    # starts above 0, and the large cases take the narrowing path
    rng = np.random.default_rng(n)
    slack, slope, weight = rng.normal(0.5, 1.0, n), rng.normal(0.3, 1.0, n), rng.uniform(0.1, 1.0, n)
    slack[:3] = 0.0  # pairs on the kink
    curvature = 1e-3

    def one_sided(k, side):
        remaining = slack - k * slope
        kink = np.abs(remaining) <= 1e-12 * (np.abs(slack) + k * np.abs(slope))  # k is a breakpoint
        active = np.where(kink, side * slope < 0, remaining > 0)
        return float(k * curvature - (weight * slope) @ active)

    breaks = slack / slope
    total = float((weight * np.abs(slope))[breaks > 0].sum())
    along = -one_sided(0.0, +1) - share * total  # φ'(0+) = -share × the jumps

    def derivative(k, side):
        return along + one_sided(k, side)

    def phi(k):
        return along * k + 0.5 * curvature * k * k + weight @ np.maximum(0.0, slack - k * slope)

    pairs = pairs_with_state(slack, slope, weight)
    work = (np.empty(n), np.empty(n, dtype=bool), np.empty(n, dtype=bool))
    at_zero = along - _active_slope(slack, slope, weight, work)
    assert at_zero == pytest.approx(derivative(0.0, +1), rel=1e-12, abs=1e-12)
    with np.errstate(divide="ignore", invalid="ignore"):
        k, change = pairs.line_search(at_zero, curvature)
    scale = float(np.abs(weight * slope).sum())
    assert derivative(k, +1) >= -1e-9 * scale  # a minimiser: 0 lies in [φ'(k-), φ'(k+)]
    assert k > 0 and derivative(k, -1) <= 1e-9 * scale
    assert change == pytest.approx(phi(k) - phi(0.0), rel=1e-9, abs=1e-9 * scale)
    grid = np.linspace(0.0, 3.0 * k, 101)
    on_grid = along * grid + 0.5 * curvature * grid**2 + np.maximum(0.0, slack - grid[:, None] * slope) @ weight
    assert phi(k) <= on_grid.min() + 1e-12 * abs(phi(k))
    assert _line_root(1.0, 1.0, np.array([0.5]), np.array([1.0])) == 0.0  # ascent: stay


def slsqp_simplex(g, b):
    """min ½ βᵀ(g gᵀ)β - bᵀβ over the simplex by a generic solver: the QP's oracle."""
    G = g @ g.T
    k = len(b)
    reference = minimize(
        lambda x: 0.5 * x @ G @ x - b @ x,
        np.full(k, 1.0 / k),
        jac=lambda x: G @ x - b,
        method="SLSQP",
        bounds=[(0, None)] * k,
        constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1.0}],
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    return reference.fun


@pytest.mark.parametrize("one_by_one", [False, True])
def test_plane_qp_matches_slsqp_on_singular_gram_matrices(one_by_one):
    # planes added together, or one at a time with a solve after each (the factor is then
    # updated as planes enter and leave, and pivots change), in a store that has to grow
    rng = np.random.default_rng(3)
    for k, d in ((3, 5), (12, 4), (30, 2), (25, 40)):
        g = rng.normal(size=(k, d))
        g[0] = 0.0
        b = rng.uniform(0.0, 3.0, k)
        b[0] = 0.0
        if d == 40:  # long, nearly parallel planes
            g[1:] = 50.0 * rng.normal(size=d) + 0.1 * g[1:]
            b[1:] = 2000.0 + b[1:]
        qp = _PlaneQP(d, capacity=4)
        for t in range(1, k):
            qp.add(b[t], g[t])
            if one_by_one:
                qp.solve(1e-12)
        w, value = qp.solve(1e-12)
        beta = qp.beta[: qp.size]
        assert beta.min() >= 0 and beta.sum() == pytest.approx(1.0)
        kept_b = qp.b[: qp.size]
        assert value == pytest.approx(float(beta @ kept_b - 0.5 * w @ w), rel=1e-12, abs=1e-12)
        assert -value <= slsqp_simplex(g, b) + 1e-9 * max(1.0, abs(value))


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "change,message",
    [
        (dict(cost=np.array([1.0, -1.0])), "cost must be finite and >= 0"),
        (dict(cost=np.array([1.0, np.nan])), "cost must be finite and >= 0"),
        (dict(cost=np.array([1.0])), "one entry per example"),
        (dict(C=0.0), "C must be a finite number > 0"),
        (dict(C=-1.0), "C must be a finite number > 0"),
        (dict(tol=0.0), "tol must be a number > 0"),
        (dict(max_iter=0), "max_iter must be an integer >= 1"),
        (dict(X=np.ones(5)), "X must be 2-D"),
        (dict(offsets=[0, 2, 4]), "offsets must rise from 0 to n_docs = 5"),
        (dict(offsets=[0, 3, 2, 5]), "offsets must rise"),
        (dict(click_doc=np.array([1, 1])), "example 1: clicked document 1 is not a row of its query 1"),
        (dict(click_query=np.array([0, 2])), "example 1: query 2 is outside the 2 queries"),
        (dict(candidate=np.ones(4, dtype=bool)), "candidate must be a boolean mask over the documents"),
        (dict(w0=np.ones(2)), "w0 must have shape (n_features,) = (3,)"),
        (dict(w0=np.array([1.0, np.inf, 0.0])), "w0 must be finite"),
    ],
)
def test_bad_inputs_are_refused_with_clear_messages(change, message):
    arguments = dict(
        X=np.ones((5, 3)),
        offsets=[0, 2, 5],
        click_query=np.array([0, 1]),
        click_doc=np.array([1, 3]),
        cost=np.array([1.0, 2.0]),
        C=1.0,
    )
    arguments.update(change)
    options = {key: arguments.pop(key) for key in ("tol", "max_iter", "candidate", "w0") if key in arguments}
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        solve_pairwise_svm(*arguments.values(), **options)


def test_non_finite_features_are_refused():
    X = np.ones((5, 3))
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match="X must be finite in every row that takes part in a pair; row 3"):
        solve_pairwise_svm(X, [0, 2, 5], [0, 1], [1, 4], [1.0, 1.0], 1.0)


def test_objective_refuses_a_wrong_shaped_w():
    with pytest.raises(ValueError, match=r"w must have shape \(n_features,\) = \(3,\)"):
        pairwise_objective(np.ones(4), np.ones((5, 3)), [0, 2, 5], [0], [1], [1.0], 1.0)


# -- extreme C and weights (issue 21) ------------------------------------------------------


@pytest.mark.parametrize(
    "C, extreme_cost, message",
    [
        (1e300, None, r"C = 1e\+300 with example weights up to 3 is too extreme .* overflow.*use a smaller C$"),
        (
            1.0,
            1e300,
            r"example weights up to 1e\+300 \(example 2 of 6; a weight 1/q means a propensity q of 1e-300\)"
            r".*clip",
        ),
        (1e30, None, r"C = 1e\+30 .* exceeds the objective itself"),
    ],
)
def test_extreme_C_or_weights_are_refused_naming_them(C, extreme_cost, message):
    # the plane QP's Gram entries are ~‖g‖² ~ (C · cost)²: at 1e300 they overflow, and it
    # ended in an IndexError; at 1e30 their rounding exceeds the objective
    X, offsets, click_query, click_doc, cost = tiny_problem(3)
    cost = np.minimum(cost, 3.0)
    cost[0] = 3.0
    if extreme_cost is not None:
        cost[2] = extreme_cost
    with pytest.raises(ValueError, match=message):
        solve_pairwise_svm(X, offsets, click_query, click_doc, cost, C)
    with pytest.raises(ValueError, match=message):
        PairwiseProblem(X, offsets, click_query, click_doc).solve(cost, C, w0=np.full(X.shape[1], 0.1))


def test_large_but_resolvable_C_still_solves_to_its_certificate():
    X, offsets, click_query, click_doc, cost = tiny_problem(3)
    result = solve_pairwise_svm(X, offsets, click_query, click_doc, cost, 1e6)
    assert result.converged and result.gap <= 1e-3
