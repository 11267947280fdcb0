"""Tests that kill the survivors of bench/mutation.py on cltr/core/propensity/em_classes.py (the
latent-class EM) and cltr/core/propensity/em_data.py (the logistic M-step it shares with
regression EM): the prior's features, the repeated share, the starts and one EM step by hand or
against written-out loops, the fit's loop (its step count, stopping rule and relabelling), the
class prior's M-step against a hand Newton step and an independently written L-BFGS problem, and
the logistic Newton step's ridge and halving cap on a saturated row. Each test names the mutants
it kills by line content and mutation."""

import math

import numpy as np
import pytest
from scipy.optimize import brentq, minimize
from scipy.special import log_softmax

from cltr.core import propensity as P
from cltr.core.propensity import em_classes as C
from cltr.core.propensity import em_data as D
from tests.core.test_propensity_classes import small_data


def _log(rows, max_rank, seed=0):
    """_EMData of rows (rank, impressions, clicks), each row a (query, document) of its own, with
    two random features; _em_data orders the units as the rows."""
    rank, n, c = (np.array(v) for v in zip(*rows, strict=True))
    q = np.arange(len(rows))
    X = np.random.default_rng(seed).normal(size=(len(rows), 2))
    return P._em_data(P._check_table(q, q, rank, None, n, c), X, max_rank)


# --------------------------------------------------------------------------- the pieces of the model


def test_prior_features_append_each_units_share_of_impressions_at_ranks_2_to_k():
    # Kills `np.add.at(shares, ...)` removed and `shares /= ...` removed or made `*=`: the share
    # columns are the unit's impressions at rank k over all its impressions, written out here.
    query = np.array([0, 0, 0, 1, 1])
    doc = np.array([0, 0, 1, 2, 2])
    rank = np.array([1, 3, 2, 1, 2])
    n = np.array([3, 1, 2, 4, 4])
    c = np.array([1, 0, 1, 0, 2])
    X = np.random.default_rng(0).normal(size=(3, 2))
    data = P._em_data(P._check_table(query, doc, rank, None, n, c), X, 3)
    Z = C.prior_features(data)
    # units (0, 0): 3 at rank 1, 1 at rank 3; (0, 1): 2 at rank 2; (1, 2): 4 and 4 at ranks 1, 2
    np.testing.assert_array_equal(Z[:, : data.features.shape[1]], data.features)
    np.testing.assert_allclose(Z[:, data.features.shape[1] :], [[0.0, 0.25], [1.0, 0.0], [0.5, 0.0]], rtol=1e-15)


def test_repeated_share_counts_cells_with_at_least_2m_minus_1_impressions():
    # Kills `n[n >= 2 * classes - 1]` with > for >=, + for -, and 1 -> 2 or 2 -> 3: cells of
    # 1..5 impressions; 2 classes need 3 (3 + 4 + 5 of 15), 3 classes need 5.
    data = _log([(1, k, 0) for k in range(1, 6)] + [(1, 1, 1)], max_rank=1)
    assert C.repeated_share(data, 2) == pytest.approx(12 / 16, rel=1e-15)
    assert C.repeated_share(data, 3) == pytest.approx(5 / 16, rel=1e-15)


def test_a_class_whose_level_makes_a_click_certain_is_not_ruled_out_by_minus_infinity():
    # Kills the clip's upper bound `1.0 - _EPS` made 1.0 + _EPS or 2.0 - _EPS in class_logliks:
    # theta_1 = 1 (always examined) and a level of 1 make a skip impossible, which the module
    # keeps finite (_EPS) so that the class is unlikely, not -inf (nor nan from 0 * log 0).
    data = _log([(1, 3, 1), (1, 2, 2)], max_rank=1)
    out = C.class_logliks(data, np.array([1.0]), np.array([0.5, 1.0]))
    np.testing.assert_allclose(out[:, 0], [3 * np.log(0.5), 2 * np.log(0.5)], rtol=1e-12)
    # one click and two skips; two clicks; with Pr(click) = 1 - 1e-12
    np.testing.assert_allclose(out[:, 1], [np.log1p(-1e-12) + 2 * np.log(1e-12), 2 * np.log1p(-1e-12)], rtol=1e-4)


def _hand_m_step(data, Z, theta, levels, W):
    """One EM step's theta and levels from the module docstring's formulas, one cell and one
    class at a time, the responsibilities from products of the impressions' probabilities."""
    n_units, m = len(data.unit_weight), len(levels)
    resp = np.zeros((n_units, m))
    for u in range(n_units):
        scores = np.exp(np.r_[0.0, Z[u] @ W])
        for j in range(m):
            like = scores[j] / scores.sum()
            for cell in np.flatnonzero(data.cell_unit == u):
                p = theta[data.cell_rank0[cell]] * levels[j]
                like *= p ** data.cell_clicks[cell] * (1 - p) ** (data.cell_impressions[cell] - data.cell_clicks[cell])
            resp[u, j] = like
        resp[u] /= resp[u].sum()
    theta_num, level_num, exposure = np.zeros(len(theta)), np.zeros(m), np.zeros(m)
    for cell in range(len(data.cell_unit)):
        u, k = data.cell_unit[cell], data.cell_rank0[cell]
        n, c = data.cell_impressions[cell], data.cell_clicks[cell]
        for j in range(m):
            t, g, r = theta[k], levels[j], resp[u, j]
            theta_num[k] += r * (c + (n - c) * t * (1 - g) / (1 - t * g))
            level_num[j] += r * (c + (n - c) * g * (1 - t) / (1 - t * g))
            exposure[j] += r * n
    per_rank = np.bincount(data.cell_rank0, weights=data.cell_impressions)
    new_levels = levels.copy()
    new_levels[exposure > 0] = level_num[exposure > 0] / exposure[exposure > 0]
    return theta_num / per_rank, new_levels, exposure


def test_an_em_step_updates_a_rare_class_and_keeps_an_empty_ones_level():
    # Kills in classes_step `np.maximum(exposure, 1e-300)` with 1e-300 -> 1.0, and
    # `np.where(exposure > 0, ...)` with >= for > or 0 -> 1: class 1's prior is e^-20, so its
    # exposure sum_u r_u1 n_u is below one impression and its level is a ratio of two such
    # small sums; class 2's prior is e^-800, its responsibilities underflow to exactly 0 and it
    # keeps its level (the comment's "an empty class").
    data = small_data(2)
    Z = C.prior_features(data)
    pen = D._penalty(Z.shape[1], 1.0)
    theta, levels = np.array([0.8, 0.5, 0.3]), np.array([0.2, 0.7, 0.45])
    W = np.zeros((Z.shape[1], 2))
    W[0] = [-20.0, -800.0]  # the intercept's coefficients
    expected_theta, expected_levels, exposure = _hand_m_step(data, Z, theta, levels, W)
    assert 0 < exposure[1] < 1e-3 and exposure[2] == 0.0
    new_theta, new_levels, _ = C.classes_step(data, Z, theta, levels, W, pen)
    np.testing.assert_allclose(new_theta, expected_theta, rtol=1e-9)
    np.testing.assert_allclose(new_levels, expected_levels, rtol=1e-9)
    assert new_levels[2] == levels[2]


def test_an_em_step_keeps_theta_and_the_levels_below_one():
    # Kills the upper clips `1.0 - _EPS` made 1.0 + _EPS or 2.0 - _EPS at classes_step's return:
    # every impression clicked makes the M-step's theta_k and g_j 1 (up to rounding), which
    # the step keeps at 1 - 1e-12 (the module keeps probabilities off 0 and 1).
    data = _log([(1, 3, 3), (2, 2, 2), (1, 4, 4), (2, 1, 1)], max_rank=2)
    Z = C.prior_features(data)
    W = np.zeros((Z.shape[1], 1))
    theta, levels, _ = C.classes_step(data, Z, np.array([0.7, 0.4]), np.array([0.3, 0.8]), W, D._penalty(Z.shape[1], 1))
    np.testing.assert_array_equal(theta, [1 - 1e-12, 1 - 1e-12])
    np.testing.assert_array_equal(levels, [1 - 1e-12, 1 - 1e-12])


def test_the_starts_by_hand():
    # Kills in classes_starts: `top = data.cell_rank0 == 0` (!= or 0 -> 1), the rate's / -> *
    # and its floor 1.0 -> 2.0 (a rank-1 cell of one impression), `high`'s 2.0 -> 3.0, * -> /
    # and its clip 0.05 -> 1.05 / 0.99 -> 1.99, the levels' geomspace(0.1, 1.0) (* -> /,
    # 0.1 -> 1.1, 1.0 -> 2.0), ctr's / -> *, every constant of the flat and ctr starts (0.5,
    # 0.9, 0.01, 1.0, ctr[0]) and of the logistic start (`is not` -> is, the append removed,
    # 0.9, 0.01, 1.0, / -> *, logistic_theta[0] -> [1]).
    rows = [(1, 10, 1)] * 9 + [(1, 1, 1), (2, 10, 5), (3, 10, 0), (4, 91, 5)]
    data = _log(rows, max_rank=4)
    # rank-1 rates: nine 0.1 and one 1.0; their 0.9-quantile is 0.1 + 0.1 * (1.0 - 0.1)
    high = 2.0 * 0.19
    starts = C.classes_starts(data, 3, np.array([0.8, 1.6, 0.0004, 0.2]))
    assert len(starts) == 3
    # ctr per rank over rank 1's (10 / 91): 4.55 (capped at 1), 0, 0.5 (then times 0.9)
    expected = [[0.5] * 4, [0.9, 0.9, 0.009, 0.45], [0.9, 0.9, 0.009, 0.225]]
    for (theta, levels, W), want in zip(starts, expected, strict=True):
        np.testing.assert_allclose(theta, want, rtol=1e-12)
        np.testing.assert_allclose(levels, high * np.array([0.1, math.sqrt(0.1), 1.0]), rtol=1e-12)
        np.testing.assert_array_equal(W, np.zeros((3 + 3, 2)))  # [1, 2 features, ranks 2..4] x m - 1
    assert len(C.classes_starts(data, 3)) == 2
    # the highest level's clip: no click at rank 1 (0.05), rank-1 rates of 0.8 (0.99)
    for rows, level in (([(1, 5, 0), (1, 5, 0), (2, 5, 2)], 0.05), ([(1, 5, 4), (2, 5, 1)], 0.99)):
        (_, levels, _), *_ = C.classes_starts(_log(rows, max_rank=2), 2)
        np.testing.assert_allclose(levels, [0.1 * level, level], rtol=1e-12)


# --------------------------------------------------------------------------- the fit's loop


def _manual_em(data, Z, start, pen, steps):
    """(theta, levels, W) after each of ``steps`` classes_step calls, and each step's change of
    theta / theta_1 (the fit's stopping statistic)."""
    out, changes = [], []
    theta, levels, W = start
    for _ in range(steps):
        previous = theta / theta[0]
        theta, levels, W = C.classes_step(data, Z, theta, levels, W, pen)
        out.append((theta, levels, W))
        changes.append(np.max(np.abs(theta / theta[0] - previous)))
    return out, np.array(changes)


def test_the_fit_counts_its_steps_and_stops_at_the_first_change_below_tol():
    # Kills in classes_fit: `total` starting at 1 (0 -> 1), `converged` starting True, the loop
    # `range(1, iterations + 1)` (1 -> 2 either, + -> -), `total += iteration` (-= or removed),
    # `previous = theta / theta[0]` (* or theta[1]), the test `... < tol` (<=, + for -,
    # * for /, theta[1]) and `converged = True` made False.
    data = small_data(0)
    Z = C.prior_features(data)
    pen = D._penalty(Z.shape[1], 1.0)
    start = (np.array([0.9, 0.5, 0.3]), np.array([0.2, 0.7]), np.zeros((Z.shape[1], 1)))
    steps, changes = _manual_em(data, Z, start, pen, 12)
    # tol = 0: never below it, so the fit takes exactly `iterations` steps
    theta, levels, W, total, converged = C.classes_fit(data, classes=2, iterations=3, tol=0.0, l2=1.0, start=start)
    assert (total, converged) == (3, False)
    np.testing.assert_allclose(theta, steps[2][0], rtol=1e-12)
    # tol = the 10th step's change, exactly: the 11th is the first below it (<= would stop at 10)
    tol = changes[9]
    assert changes[10] < tol and np.all(changes[:10] >= tol)
    theta, levels, W, total, converged = C.classes_fit(data, classes=2, iterations=30, tol=tol, l2=1.0, start=start)
    assert (total, converged) == (11, True)
    np.testing.assert_allclose(theta, steps[10][0], rtol=1e-12)
    np.testing.assert_allclose(levels, steps[10][1], rtol=1e-12)


def test_the_fit_reports_the_classes_from_least_to_most_relevant_with_the_same_prior():
    # Kills the relabelling in classes_fit: `np.any(order != np.arange(classes))` (== for !=;
    # with m = 3 and a cyclic order no entry is in place), the zero column `np.zeros((W.shape[0],
    # 1))` (1 -> 2, 0 -> 1) and `W = full[:, 1:] - full[:, :1]` (+ for -, 1 -> 2 either). With
    # 0 iterations the start comes back (0 steps), its classes sorted by level and W re-based on
    # the new class 0 so that each class keeps its prior probabilities.
    data = small_data(3)
    Z = C.prior_features(data)
    rng = np.random.default_rng(4)
    theta = np.array([0.9, 0.6, 0.4])
    for levels, order in ((np.array([0.5, 0.9, 0.1]), [2, 0, 1]), (np.array([0.8, 0.2]), [1, 0])):
        W = rng.normal(size=(Z.shape[1], len(levels) - 1))
        out_theta, out_levels, out_W, total, converged = C.classes_fit(
            data, classes=len(levels), iterations=0, tol=1e-6, l2=1.0, start=(theta, levels, W)
        )
        assert (total, converged) == (0, False)
        np.testing.assert_array_equal(out_theta, theta)
        np.testing.assert_array_equal(out_levels, levels[order])
        assert out_W.shape == W.shape
        np.testing.assert_allclose(C.log_prior(Z, out_W), C.log_prior(Z, W)[:, order], rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- the class prior's M-step


def test_two_classes_take_one_undamped_newton_step_on_the_prior():
    # Kills `_logistic_newton(..., pen, 1)` with 1 -> 2 in _fit_prior: the step is one Newton
    # step of sum_u r_u1 log sigma(z_u w) + r_u0 log(1 - sigma) - pen/2 |w|^2, written out here,
    # from a point where a second step would still move w (so two steps differ).
    data = small_data(1)
    Z = C.prior_features(data)
    pen = D._penalty(Z.shape[1], 0.7)
    rng = np.random.default_rng(7)
    r1 = rng.uniform(size=len(Z))
    resp = np.column_stack([1 - r1, r1])

    def objective(w):
        eta = Z @ w
        return np.sum(r1 * eta - np.logaddexp(0.0, eta)) - 0.5 * np.sum(pen * w * w)

    def newton(w):
        p = 1 / (1 + np.exp(-(Z @ w)))
        grad = Z.T @ (r1 - p) - pen * w
        hess = Z.T @ (Z * (p * (1 - p))[:, None]) + np.diag(pen)
        return w + np.linalg.solve(hess, grad)

    w0 = rng.normal(scale=0.5, size=Z.shape[1])
    w1 = newton(w0)
    assert objective(w1) > objective(w0) and np.max(np.abs(newton(w1) - w1)) > 1e-3
    np.testing.assert_allclose(C._fit_prior(Z, resp, w0[:, None], pen)[:, 0], w1, rtol=1e-7)


def test_more_classes_take_twenty_l_bfgs_iterations_on_the_prior():
    # Kills in _fit_prior's objective `value = -float(np.sum(resp * lp)) + _prior_penalty(w, pen)`
    # (+ -> -, * -> /), its gradient `-Z.T @ (resp[:, 1:] - p[:, 1:]) + pen[:, None] * w`
    # (every mutant: - dropped, - -> +, + -> -, * -> /, 1 -> 2) and maxiter 20 -> 21: the same
    # M-step written independently (scipy's log_softmax), 20 L-BFGS iterations from W, on a
    # problem that 20 iterations do not finish (21 end elsewhere).
    rng = np.random.default_rng(0)
    n, d, m = 40, 8, 4
    Z = np.column_stack([np.ones(n), rng.normal(size=(n, d - 1))])
    resp = np.exp(log_softmax(np.column_stack([np.zeros(n), Z @ rng.normal(scale=3, size=(d, m - 1))]), axis=1))
    W0 = np.zeros((d, m - 1))
    pen = np.r_[0.0, np.full(d - 1, 1e-3)]

    def negative(flat):
        w = flat.reshape(W0.shape)
        lp = log_softmax(np.column_stack([np.zeros(n), Z @ w]), axis=1)
        grad = -(Z.T @ (resp - np.exp(lp)))[:, 1:] + pen[:, None] * w
        return -np.sum(resp * lp) + 0.5 * np.sum(pen[:, None] * w * w), grad.ravel()

    def lbfgs(iterations):
        return minimize(negative, W0.ravel(), jac=True, method="L-BFGS-B", options={"maxiter": iterations}).x

    expected = lbfgs(20)
    assert np.max(np.abs(lbfgs(21) - expected)) > 1e-2
    np.testing.assert_allclose(C._fit_prior(Z, resp, W0, pen).ravel(), expected, rtol=1e-6, atol=1e-8)


# --------------------------------------------------------------------------- em_data: the logistic M-step


def test_the_logistic_objective_by_hand():
    # Kills in _logistic_objective `- 0.5 * np.sum(pen * coef * coef)` made +, * -> / or 1.5:
    # sum P eta - W log(1 + e^eta) - 1/2 sum pen coef^2, written out.
    eta, positives, weight = np.array([0.5, -1.0]), np.array([0.3, 1.0]), np.array([1.0, 2.0])
    coef, pen = np.array([2.0, -3.0]), np.array([0.0, 0.5])
    expected = 0.3 * 0.5 - math.log(1 + math.exp(0.5)) - 1.0 - 2 * math.log(1 + math.exp(-1.0)) - 0.5 * 0.5 * 9
    assert D._logistic_objective(eta, positives, weight, coef, pen) == pytest.approx(expected, rel=1e-14)


def _halving(objective, coef, step, value):
    """The step halved until the objective does not fall (1e-12 relative slack), at most 30 tries."""
    for k in range(30):
        if objective(coef + step / 2**k) >= value - 1e-12 * abs(value):
            return coef + step / 2**k, k
    return coef, None


def test_a_saturated_row_gets_a_step_from_the_ridge_alone():
    # Kills the Hessian's ridge `hess[diag] += pen + 1e-10 * (1.0 + np.abs(np.diag(hess)))` in
    # _logistic_newton: removed (a singular solve), -= for +=, either + -> -, * -> /,
    # 1e-10 -> 1.0000000001 and 1.0 -> 2.0. Row 2 is saturated (eta = 50, sigma = 1 to the
    # last bit) so it adds nothing to the Hessian, which is then singular along (1, -1) with
    # diagonal 2; row 2's residual (0.5 - 1) lies along it, so the step there is that residual
    # over the ridge 1e-10 (1 + 2), halved until the objective does not fall.
    features = np.array([[1.0, 1.0], [1.0, 2.0]])
    positives, weight = np.array([4.0, 0.5]), np.array([8.0, 1.0])
    coef, pen = np.array([-50.0, 50.0]), np.zeros(2)

    def objective(c):
        eta = features @ c
        return np.sum(positives * eta - weight * np.logaddexp(0.0, eta))

    ridge = 1e-10 * (1.0 + 2.0)
    # grad = [-0.5, -1]; along (1, 1) the Hessian's eigenvalue is 4, along (1, -1) it is 0
    step = -1.5 / (2 * (4 + ridge)) * np.ones(2) + 0.25 / ridge * np.array([1.0, -1.0])
    expected, k = _halving(objective, coef, step, objective(coef))
    assert k == 23  # 2^-23 of 8.3e8 lands eta_2 at -49.3, as likely as +50 is
    got, eta = D._logistic_newton(features, positives, weight, coef, features @ coef, pen, 1)
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    np.testing.assert_allclose(eta, features @ got, rtol=1e-12)


def test_a_step_not_found_in_30_halvings_is_given_up():
    # Kills `for _ in range(30)` with 30 -> 31 in _logistic_newton: a saturated single row (eta =
    # 50, 8 of 16 positive, no penalty) has step -8 / 1e-10; the objective 8 eta - 16 log(1 + e^eta)
    # is symmetric about 0, so a trial does not lower it only within |eta| <= 50, that is with
    # |step| / 2^k <= 100, first at k = 30 (the 31st try): after 30 tries coef stays.
    features, positives, weight = np.ones((1, 1)), np.array([8.0]), np.array([16.0])
    assert 8e10 / 2**29 > 100 > 8e10 / 2**30
    coef, eta = D._logistic_newton(features, positives, weight, np.array([50.0]), np.array([50.0]), np.zeros(1), 1)
    assert coef[0] == 50.0 and eta[0] == 50.0


def test_a_step_that_lowers_the_objective_by_less_than_1e_12_of_it_is_taken():
    # Kills `trial_value >= value - 1e-12 * abs(value)` with - -> + (a step must then raise the
    # objective by that much) and * -> / (a slack of 1e-12 / |value|, 1e-15 here) in
    # _logistic_newton: one intercept, 300 of 1000 positive, from the start b0 below the
    # optimum where the full Newton step overshoots so far that it lowers the objective by half
    # the slack (b0 found by brentq): that step is taken whole, where the mutants halve it.
    positives, weight = np.array([300.0]), np.array([1000.0])

    def objective(b):
        return 300.0 * b - 1000.0 * np.logaddexp(0.0, b)

    def newton_step(b):  # (P - W sigma) / H, with the ridge 1e-10 (1 + H) the step solves with
        sigma = 1 / (1 + np.exp(-b))
        hess = 1000.0 * sigma * (1 - sigma)
        return (300.0 - 1000.0 * sigma) / (hess + 1e-10 * (1 + hess))

    def change(b):
        return objective(b + newton_step(b)) - objective(b)

    b0 = brentq(lambda b: change(b) + 0.5e-12 * abs(objective(b)), -5.0, -2.0, xtol=1e-15)
    assert -0.9e-12 * abs(objective(b0)) < change(b0) < -0.1e-12 * abs(objective(b0)) < -1e-14
    coef, _ = D._logistic_newton(np.ones((1, 1)), positives, weight, np.array([b0]), np.array([b0]), np.zeros(1), 1)
    assert coef[0] == pytest.approx(b0 + newton_step(b0), rel=1e-9)
