"""Tests that kill the survivors of bench/mutation.py on the SVM solver's paths that the results of
tests/core/test_mutants_svm.py do not reach: cltr/core/svm/ocas.py (numpy's hinge sums, the
scale refusal's bounds, the float32 products' stall test and exact restart, the inner QP
tolerance, the OCAS cut point, the line search's guard), cltr/core/svm/qp.py (the Cholesky factor and free set after
every solve, the restart, the idle counts) and cltr/core/svm/problem.py (the pair blocks under
numpy). Each test names the mutants it kills. Oracles: double loops over the pairs, closed-form
QPs, the documented invariants of the plane QP, the stop and stall rules recomputed from what
the solver reports."""

import numpy as np
import pytest

import cltr.core.svm.ocas as ocas
import cltr.core.svm.problem as svm_problem
from cltr.core.svm import PairwiseProblem, _Pairs, _PlaneQP, solve_pairwise_svm
from cltr.core.svm.qp import _IDLE, _RIDGE
from tests.core.test_mutants_svm import hinge_loss
from tests.core.test_mutants_svm import tiny_problem as problem_of


def slack_loop(w, X, offsets, click_query, click_doc):
    """Σ_{y != y_i} max(0, 1 - w.(x_{y_i} - x_y)) per example, by a double loop."""
    return np.array(
        [
            sum(max(0.0, 1.0 - float(w @ (X[d] - X[y]))) for y in range(offsets[q], offsets[q + 1]) if y != d)
            for q, d in zip(click_query, click_doc, strict=True)
        ]
    )


# --------------------------------------------------------------------------- numpy's pair passes


@pytest.mark.parametrize("block", [2, 1 << 17])
def test_numpy_hinge_sums_match_the_double_loop(monkeypatch, block):
    # without numba (CLTR_NO_NUMBA) the hinge sums are numpy's block passes: per example the
    # double loop's slack sum, with a clicked document alone in its query (a run of no pairs)
    # in the middle and at the end, hinges clipped at 0 and blocks of about 2 pairs (several
    # runs per block, a run longer than a block). Kills, in ocas.py, `count > 0` -> `>=`
    # (reduceat over an empty run), `hinge -= ...` (`+=`, removed), `hinge += 1.0` (`-=`,
    # removed, 2.0), the clip `np.maximum(hinge, 0.0)` (removed, 1.0) and the block's run
    # starts `- pairs.start` -> `+`; in problem.py the first block's `[0]` -> `[1]`
    monkeypatch.setenv("CLTR_NO_NUMBA", "1")
    monkeypatch.setattr(svm_problem, "_BLOCK_PAIRS", block)
    X, offsets, _, _, _ = problem_of(30, (4, 1, 5, 3, 1), 3, 0)
    click_query = np.array([0, 0, 1, 2, 2, 3, 4])
    click_doc = np.array([1, 3, 4, 5, 9, 11, 13])
    cost = np.linspace(0.5, 2.0, len(click_doc))
    problem = PairwiseProblem(X, offsets, click_query, click_doc)
    w = np.random.default_rng(30).normal(size=3) * 2.0  # margins on both sides of 1
    hinges = [
        1.0 - w @ (X[d] - X[y])
        for q, d in zip(click_query, click_doc, strict=True)
        for y in range(offsets[q], offsets[q + 1])
    ]
    assert min(hinges) < 0.0 < max(hinges)
    np.testing.assert_allclose(
        problem.slack_sums(w), slack_loop(w, X, offsets, click_query, click_doc), rtol=1e-12, atol=1e-12
    )
    assert problem.objective(w, cost, 3.0) == pytest.approx(
        0.5 * w @ w + hinge_loss(w, X, offsets, click_query, click_doc, cost, 3.0), rel=1e-12
    )


def test_numpy_objective_of_a_single_pair(monkeypatch):
    # one run of one pair: one block, not none (kills, in problem.py, `_blocks`' empty test
    # `len(ends) == 0 or ends[-1] == 0` with either 0 -> 1, which leaves P without its loss)
    monkeypatch.setenv("CLTR_NO_NUMBA", "1")
    X = np.array([[1.0, 2.0], [0.5, -1.0]])
    w = np.array([0.25, 0.125])
    # margin w.(x_0 - x_1) = 0.125 + 0.375 = 0.5: slack 0.5, weight C c / n = 3
    assert PairwiseProblem(X, [0, 2], [0], [0]).objective(w, [1.5], 2.0) == 0.5 * (0.25**2 + 0.125**2) + 3.0 * 0.5


def test_largest_norm_is_the_largest_entry_times_root_d():
    # the bound ‖x‖ <= max|x| sqrt(d) that the scale check reads: from the most negative entry
    # when it is the largest in size, from no entry (0) when there are no rows. Kills
    # `X.max(initial=0.0)` and `X.min(initial=0.0)` -> 1.0 and `* sqrt(d)` -> `/`
    X = np.array([[-0.5, 0.25, 0.0, 0.125], [0.375, -0.25, 0.0, 0.0]])
    assert PairwiseProblem(X, [0, 2], [0], [0]).largest_norm() == 0.5 * 2.0
    assert PairwiseProblem(-X, [0, 2], [0], [0]).largest_norm() == 0.5 * 2.0
    empty = np.zeros(0, dtype=np.int64)
    assert PairwiseProblem(np.zeros((0, 4)), [0], empty, empty).largest_norm() == 0.0


# --------------------------------------------------------------------------- the scale refusal


def one_pair(C, x):
    """A problem of one pair with difference x (clicked row x, other row 0), cost 1 and this C:
    its total weight is C, P(0) = C and the first normal ±C x."""
    X = np.vstack([x, np.zeros_like(x)])
    return X, [0, 2], [0], [0], [1.0], C


@pytest.mark.parametrize("share, overflows", [(0.9, False), (1.1, True)])
def test_the_overflow_bound_is_the_square_of_four_total_weight_times_the_largest_norm(share, overflows):
    # the QP's values overflow once (2 · 2 T L)² does (T the total weight, L = max|x| sqrt(d)),
    # the documented bound; just below it the problem is refused for the rounding instead.
    # With L = 2 (four features of 1), (4 T L)² = 64 T². Kills `reach = 2.0 * total * L`
    # (`*` -> `/` at either place, 2.0 -> 3.0) and `reach * reach * 4.0` (`*` -> `/` at
    # either place, 4.0 -> 5.0)
    T = float(np.sqrt(np.finfo(np.float64).max / 64.0) * np.sqrt(share))
    with pytest.raises(ValueError) as refused:
        solve_pairwise_svm(*one_pair(T, np.ones(4)))
    message = str(refused.value)
    assert ("would overflow" in message) == overflows
    assert ("exceeds the objective itself" in message) == (not overflows)


def test_a_rounding_equal_to_the_objective_is_not_refused():
    # eps ‖g‖² = P(start) exactly (T = 2^52, g = T): refused only past it (kills `eps * square
    # <= max(objective, _TINY)` -> `<`); a solve of 3 planes then ends with its certificate
    T = 2.0**52
    result = solve_pairwise_svm(*one_pair(T, np.ones(1)), max_iter=3)
    assert result.lower_bound <= result.objective


@pytest.mark.parametrize("largest, blamed", [(1e6, False), (1e6 + 0.5, True)])
def test_an_example_is_blamed_past_a_million_times_the_median_weight(largest, blamed):
    # a refused problem names the example whose weight is more than 1e6 times the median as
    # the cause, not one of exactly 1e6 times (kills `cost[i] > 1e6 * median` -> `>=` and
    # 1e6 -> 1000001)
    X, offsets, click_query, click_doc, _ = problem_of(31, (3, 4, 5), 2, 3)
    cost = np.array([1.0, largest, 1.0])
    with pytest.raises(ValueError) as refused:
        solve_pairwise_svm(X, offsets, click_query, click_doc, cost, 1e295)
    message = str(refused.value)
    assert ("example 1 of 3" in message) == blamed
    assert ("clip the propensities" in message) == blamed


# --------------------------------------------------------------------------- the solver's path


class Spy:
    """What one solve asks of its plane QP and its line search, each call passed through:
    per QP solve its tolerance, w_cp and value; the iterations (QP solves so far) at which the
    certificate and the restart come, with the certificate's offset and coefficients; each
    line search's k; each plane added, with the QP solves before it."""

    def __init__(self, monkeypatch):
        self.solves, self.certificates, self.restarts, self.steps, self.planes = [], [], [], [], []
        solve, certificate, restart = _PlaneQP.solve, _PlaneQP.certificate, _PlaneQP.restart
        add, line_search = _PlaneQP.add, _Pairs.line_search

        def spy_solve(qp, tolerance):
            w, value = solve(qp, tolerance)
            self.solves.append((tolerance, w.copy(), value))
            return w, value

        def spy_certificate(qp):
            offset, combined = certificate(qp)
            self.certificates.append((len(self.solves), offset, combined))
            return offset, combined

        def spy_restart(qp, b, g):
            self.restarts.append(len(self.solves))
            return restart(qp, b, g)

        def spy_add(qp, b, g, coef=None):
            self.planes.append((len(self.solves), float(b), np.array(g)))
            return add(qp, b, g, coef)

        def spy_line_search(pairs, derivative, curvature):
            k, change = line_search(pairs, derivative, curvature)
            self.steps.append((len(self.solves), k))
            return k, change

        monkeypatch.setattr(_PlaneQP, "solve", spy_solve)
        monkeypatch.setattr(_PlaneQP, "certificate", spy_certificate)
        monkeypatch.setattr(_PlaneQP, "restart", spy_restart)
        monkeypatch.setattr(_PlaneQP, "add", spy_add)
        monkeypatch.setattr(_Pairs, "line_search", spy_line_search)


def exact_bound(certificate, X_used):
    """The reduced dual value b.β - ½‖Σ β_t g_t‖² of a certificate, with exact normals X_used.T @ coef
    (X_used: the rows the solver reads, ``PairwiseProblem.X_used``)."""
    _, offset, combined = certificate
    product = X_used.astype(np.float64).T @ combined
    return offset - 0.5 * float(product @ product)


@pytest.mark.parametrize(
    "seed, sizes, n_features, n_examples, C",
    [(292, (10, 4, 10, 2, 4, 14, 13, 3, 4), 17, 5, 1e4), (355, (3, 8, 8, 7, 11, 10, 6, 6), 23, 3, 1e3)],
)
def test_float32_products_give_way_to_exact_ones_when_the_gap_stalls(
    monkeypatch, seed, sizes, n_features, n_examples, C
):
    # float32 X and a tol below float32's reach: the estimated gap (P - best QP value) / P
    # stalls, and at the first iteration t > 10 whose gap is not 1% below the gap of iteration
    # t - 10 the solver certifies with exact products and restarts from one exact plane, then
    # ends converged. Checked against the rule recomputed from every QP solve (its tolerance is
    # 1% of the stop target tol (1 - 1e-3) times the P reported that iteration, as asserted),
    # and the best P reported never rises beyond float32 rounding.
    # Kills, in ocas.py, `_STALL = 10` -> 11, the stall test (`>` -> `>=`, `*` -> `/`, the
    # dropped `-`s, `gaps[-2]`, `gaps[-1 + _STALL]`), the gap `(objective - estimate) /
    # objective` (`-` -> `+`, `/` -> `*`), the stop target `tol * (1.0 - 1e-3)` (`*` -> `/`,
    # `-` -> `+`), the QP's tolerance `1e-2 * target * objective` (`*` -> `/`, 0.01 -> 1.01),
    # the removed restart and the restart's objective `0.5 * w.w` -> 1.5. The first problem
    # stalls once float32 rounding dominates; the second at iteration 11, while P still falls
    # fast (there the gap's `/` -> `*` stalls later)
    X, offsets, click_query, click_doc, cost = problem_of(seed, sizes, n_features, n_examples)
    X32 = X.astype(np.float32)
    tol = 1e-9
    target = tol * (1.0 - 1e-3)
    spy, reported = Spy(monkeypatch), []
    result = solve_pairwise_svm(
        X32, offsets, click_query, click_doc, cost, C, tol=tol, max_iter=80, callback=lambda *x: reported.append(x[1:])
    )
    switch = spy.certificates[0][0]
    for (tolerance, _, _), (objective, _) in zip(spy.solves[: switch - 1], reported[: switch - 1], strict=True):
        assert tolerance == pytest.approx(1e-2 * target * objective, rel=1e-12)
    objective = np.array([tolerance / (1e-2 * target) for tolerance, _, _ in spy.solves[:switch]])
    estimate = np.maximum.accumulate(np.maximum([value for _, _, value in spy.solves[:switch]], 0.0))
    gaps = (objective - estimate) / objective
    stops = [t + 1 for t in range(switch) if gaps[t] <= target or (t >= 10 and gaps[t] > 0.99 * gaps[t - 10])]
    assert stops[0] == switch
    assert spy.restarts == [switch] and len(spy.certificates) == 1
    best = [objective for objective, _ in reported]
    assert all(later <= earlier * (1.0 + 1e-6) for earlier, later in zip(best[:-1], best[1:], strict=True))
    assert result.converged and result.gap <= tol and result.iterations > switch
    assert result.objective == pytest.approx(
        0.5 * result.w @ result.w
        + hinge_loss(result.w, X32.astype(np.float64), *(offsets, click_query, click_doc, cost, C)),
        rel=1e-12,
    )


def test_a_float32_solve_cut_short_by_max_iter_is_certified_with_exact_products(monkeypatch):
    # at max_iter the float32 phase ends with the exact certificate of its last QP (b.β -
    # ½‖X.T Σ β_t coef_t‖², from exact products), and no restart that could not be used.
    # Kills, in ocas.py, `iteration >= max_iter` -> `>` (no certificate: lower bound 0), the
    # certificate's `0.5 * ‖product‖²` (`*` -> `/`, 0.5 -> 1.5) and `iteration < max_iter` -> `<=`
    X, offsets, click_query, click_doc, cost = problem_of(292, (10, 4, 10, 2, 4, 14, 13, 3, 4), 17, 5)
    X32 = X.astype(np.float32)
    spy = Spy(monkeypatch)
    result = solve_pairwise_svm(X32, offsets, click_query, click_doc, cost, 1e4, tol=1e-9, max_iter=6)
    assert [c[0] for c in spy.certificates] == [6] and spy.restarts == []
    bound = exact_bound(spy.certificates[0], PairwiseProblem(X32, offsets, click_query, click_doc).X_used)
    assert bound > 0.0
    assert result.lower_bound == pytest.approx(bound, rel=1e-12)
    assert result.iterations == 6 and not result.converged
    assert result.gap == pytest.approx((result.objective - bound) / result.objective, rel=1e-9)


def test_a_float32_solve_whose_exact_certificate_meets_tol_ends_there(monkeypatch):
    # the estimates say converged and so does the exact certificate: the solve ends at that
    # iteration, without a restart, with that bound. Kills, in ocas.py, the exact gap test
    # `objective - certified <= target * objective` (`-` -> `+`, `*` -> `/`: P is about 40
    # here) and `not converged and iteration < max_iter` -> `or`
    X, offsets, click_query, click_doc, cost = problem_of(292, (10, 4, 10, 2, 4, 14, 13, 3, 4), 17, 5)
    X32 = X.astype(np.float32)
    spy = Spy(monkeypatch)
    result = solve_pairwise_svm(X32, offsets, click_query, click_doc, cost, 100.0, tol=1e-3)
    assert result.objective > 10.0
    assert len(spy.certificates) == 1 and spy.restarts == []
    assert result.iterations == spy.certificates[0][0] == len(spy.solves)
    assert result.converged
    assert result.lower_bound == pytest.approx(
        exact_bound(spy.certificates[0], PairwiseProblem(X32, offsets, click_query, click_doc).X_used), rel=1e-12
    )


def test_each_plane_is_tangent_to_the_loss_a_tenth_of_the_way_from_the_best_point_to_w_cp(monkeypatch):
    # OCAS's cut: after the line search moves the best point w_b by k along Δ = w_cp - w_b, the
    # next plane is the loss's tangent at w_b + 0.1 (1 - k) Δ (the first one at w0 = 0):
    # b - g.c = R(c) there, R by the double loop, with w_b, w_cp and k replayed from the QP's
    # and the line search's answers. Kills, in ocas.py, `_CUT_STEP * (1.0 - k)` (`-` -> `+`,
    # 1.0 -> 2.0)
    X, offsets, click_query, click_doc, cost = problem_of(33, (6, 8, 7, 9, 5), 4, 20)
    C = 10.0
    spy = Spy(monkeypatch)
    # no float32 copy steers (it allows none of any size): every plane is an exact tangent
    monkeypatch.setattr(ocas, "_STEER_COPY_BYTES", -1)
    result = solve_pairwise_svm(X, offsets, click_query, click_doc, cost, C, tol=1e-6)
    assert result.converged and len(spy.planes) == result.iterations
    steps = dict(spy.steps)
    w = np.zeros(4)
    for solves, b, g in spy.planes:
        cut = w
        if solves:  # the plane after the QP solve `solves` and its line search
            direction = spy.solves[solves - 1][1] - w
            k = steps.get(solves, 0.0)
            cut = w + (k + 0.1 * (1.0 - k)) * direction
            if k > 0.0:
                w = w + k * direction
        loss = hinge_loss(cut, X, offsets, click_query, click_doc, cost, C)
        assert b - g @ cut == pytest.approx(loss, rel=1e-9, abs=1e-12), solves
    np.testing.assert_array_equal(w, result.w)


# --------------------------------------------------------------------------- qp.py


def assert_factor_and_free_set(qp):
    """The active-set state a solve leaves: F = {t: β_t > 0} is the pivot and S (``free``), the
    Gram rows are (g_s - g_p).(g_t - g_p) for the pivot p, and ``factor`` is lower triangular
    with L Lᵀ = K_S + a ridge on the diagonal, positive and at most today's ridge (each plane's
    ridge is the one of when it entered S; the largest diagonal only grows between refactors),
    up to the rounding of a Cholesky factor (1e-14 of the largest Gram entry, against a ridge
    of 1e-12 of the largest diagonal)."""
    k, S = qp.size, list(qp.free)
    beta = qp.beta[:k]
    assert qp.pivot not in S and len(set(S)) == len(S)
    assert all(beta[t] > 0.0 for t in S) and set(np.flatnonzero(beta > 0.0)) <= set(S) | {qp.pivot}
    D = qp.g[:k] - qp.g[qp.pivot]
    K = D @ D.T
    scale = max(float(np.abs(K).max()), 1e-300)
    np.testing.assert_allclose(qp.gram[:k, :k], K, rtol=0, atol=1e-13 * scale)
    ridge = _RIDGE * max(qp.largest, 1e-200)
    L = qp.factor[: len(S), : len(S)]
    assert np.all(np.triu(L, 1) == 0.0)
    excess = L @ L.T - K[np.ix_(S, S)]
    off = excess - np.diag(np.diag(excess))
    assert np.abs(off).max(initial=0.0) <= 1e-13 * scale
    assert np.all(np.diag(excess) >= -1e-14 * scale) and np.all(np.diag(excess) <= ridge + 1e-14 * scale)


def random_planes(rng, k, d, *, parallel=False, scale=1.0):
    g = rng.normal(size=(k, d))
    b = rng.uniform(0.0, 3.0, k)
    if parallel:  # long, nearly parallel planes, as OCAS's are late in a solve
        g = 50.0 * rng.normal(size=d) + 0.1 * g
        b = 2000.0 + b
    g[0], b[0] = 0.0, 0.0  # plane 0 is the QP's own R >= 0
    return scale * g, scale * scale * b


@pytest.mark.parametrize("case", ["random", "parallel", "flat", "tiny", "line"])
def test_the_plane_qp_keeps_its_factor_and_free_set_after_every_solve(case):
    # planes arriving one by one, as in OCAS: after every solve the factor is the Cholesky
    # factor of the free planes' Gram matrix plus a positive ridge (on one feature, "line",
    # every pivot change with two planes left in S has a singular Gram matrix), and the free
    # set is exactly the planes of positive β but the pivot. Kills, in qp.py, the ridge's sign
    # in `_refactor` (`+` -> `-`: not positive definite on the line) and in `_enter` (`+` ->
    # `-`), and `_refactor`'s free set `beta > 0.0` -> `>=`
    rng = np.random.default_rng({"random": 40, "parallel": 41, "flat": 42, "tiny": 43, "line": 44}[case])
    k, d = {"flat": (30, 2), "line": (30, 1)}.get(case, (40, 6))
    g, b = random_planes(rng, k, d, parallel=case == "parallel", scale=1e-4 if case == "tiny" else 1.0)
    qp = _PlaneQP(d, capacity=4)
    for t in range(1, k):
        qp.add(b[t], g[t])
        qp.solve(1e-12 * max(1.0, abs(float(b[t]))))
        assert_factor_and_free_set(qp)


def test_a_plane_qp_of_tiny_planes_is_solved_exactly():
    # one plane (b, g) with b = ‖g‖²/2: β = 1/2, value b²/(2‖g‖²), at any scale, here ‖g‖ =
    # 1e-5: the ridge is relative to the Gram diagonals (kills `largest = 0.0` -> 1.0, a ridge
    # of 1e-12 against a diagonal of 1e-10)
    s = 1e-5
    qp = _PlaneQP(2)
    qp.add(0.5 * s * s, np.array([s, 0.0]))
    w, value = qp.solve(0.0)
    assert qp.beta[1] == pytest.approx(0.5, rel=1e-9)
    assert value == pytest.approx(0.125 * s * s, rel=1e-12)
    np.testing.assert_allclose(w, [0.5 * s, 0.0], rtol=1e-9)


def test_a_restart_drops_the_weight_of_the_old_planes_and_solves_anew():
    # before the restart R >= 0 holds 3/4 of the weight (one plane, b/‖g‖² = 1/4); after it,
    # β = (0, 1) on R >= 0 and the new plane, and the next solve finds that plane's optimum
    # β = b/‖g‖² = 1/4 with value b²/(2‖g‖²) = 1/8. Kills, in qp.py, restart's `beta[0] = 0.0`
    # -> `beta[1]`, the removed `_refactor(1)` and `_refactor`'s `beta > 0.0` -> `>=`
    qp = _PlaneQP(2)
    qp.add(1.0, np.array([2.0, 0.0]))
    qp.solve(0.0)
    assert qp.beta[0] == pytest.approx(0.75, rel=1e-9)
    qp.restart(1.0, np.array([0.0, 2.0]))
    np.testing.assert_array_equal(qp.beta[:2], [0.0, 1.0])
    w, value = qp.solve(0.0)
    assert qp.beta[1] == pytest.approx(0.25, rel=1e-9) and value == pytest.approx(0.125, rel=1e-12)
    np.testing.assert_allclose(w, [0.0, 0.5], rtol=1e-9, atol=1e-15)
    assert_factor_and_free_set(qp)


def test_a_restarted_plane_out_of_use_is_dropped_after_IDLE_plus_one_solves():
    # the restart's plane counts as just used: left out (β = 0) from the first solve on, it is
    # dropped after the (_IDLE + 1)-th solve, not before (kills restart's `idle[:2] = 0` -> 1)
    qp = _PlaneQP(3)
    qp.restart(-1e3, np.array([0.0, 0.0, 1.0]))  # far below R >= 0: never in use
    for solve in range(1, _IDLE + 2):
        qp.solve(1e-12)
        assert (qp.size == 2) == (solve <= _IDLE), solve


def test_a_plane_that_falls_out_of_use_is_dropped_after_IDLE_plus_one_solves_without_it():
    # a plane in use (β > 0) then left out once a better plane arrives counts its idle solves
    # from 0 at its last use (kills `idle[:k][beta > 0.0] = 0` -> 1)
    qp = _PlaneQP(2)
    qp.add(0.5, np.array([1.0, 0.0]))
    qp.solve(1e-12)
    assert qp.beta[1] == pytest.approx(0.5)
    qp.add(10.0, np.array([0.0, 1.0]))  # alone at w = (0, 1) its slack 9 dominates the first's 0.5
    for solve in range(1, _IDLE + 2):
        qp.solve(1e-12)
        assert qp.beta[: qp.size] @ qp.b[: qp.size] == pytest.approx(10.0)
        kept = {tuple(g) for g in qp.g[: qp.size]}
        assert ((1.0, 0.0) in kept) == (solve <= _IDLE), solve


def test_a_qp_answer_at_the_best_point_itself_moves_nothing(monkeypatch):
    # the QP may answer w_cp = w_b (a flat direction Δ = 0): then there is no ray to search,
    # whatever φ'(0+) the rounding of the incrementally kept scores says (the line search
    # divides by ‖Δ‖²), and the solve goes on from a plane at w_b. Forced here by answering
    # w_b itself, replayed from the line searches, at iterations 3, 5, 7, 9 and 11 (real steps
    # between: the rounding differs each time, and its φ'(0+) is below 0 at some). Kills, in
    # ocas.py, the guard `derivative < 0.0 and curvature > 0.0` -> `or` and `curvature >= 0.0`
    X, offsets, click_query, click_doc, cost = problem_of(35, (6, 8, 7, 9, 5), 4, 20)
    solve, line_search = _PlaneQP.solve, _Pairs.line_search
    state = {"w": np.zeros(4), "w_cp": None, "k": 0.0, "solves": 0}

    def spy_solve(qp, tolerance):
        if state["solves"]:  # the best point after the last iteration, as the solver moves it
            if state["k"] > 0.0:
                state["w"] = state["w"] + state["k"] * (state["w_cp"] - state["w"])
        state["solves"] += 1
        state["k"] = 0.0
        w_cp, value = solve(qp, tolerance)
        if state["solves"] in (3, 5, 7, 9, 11):
            w_cp = state["w"].copy()
        state["w_cp"] = w_cp
        return w_cp, value

    def spy_line_search(pairs, derivative, curvature):
        k, change = line_search(pairs, derivative, curvature)
        state["k"] = k
        return k, change

    monkeypatch.setattr(_PlaneQP, "solve", spy_solve)
    monkeypatch.setattr(_Pairs, "line_search", spy_line_search)
    result = solve_pairwise_svm(X, offsets, click_query, click_doc, cost, 10.0, tol=1e-6)
    assert result.converged and result.iterations > 11
    assert result.objective == pytest.approx(
        0.5 * result.w @ result.w + hinge_loss(result.w, X, offsets, click_query, click_doc, cost, 10.0), rel=1e-12
    )
