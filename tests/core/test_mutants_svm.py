"""Tests that kill the survivors of bench/mutation.py on cltr/core/svm/ (each names the mutants
it kills). Oracles: the QP's KKT conditions and a generic solver (SLSQP) on tiny plane sets,
the primal by a double loop, and the solver's certificate (lower bound <= min P <= objective)."""

import time

import numpy as np
import pytest
from scipy.optimize import minimize

import cltr.core.svm.problem as svm_problem
from cltr.core.svm import (
    PairwiseProblem,
    SVMResult,
    _line_root,
    _Pairs,
    _PlaneQP,
    _products,
    pairwise_objective,
    solve_pairwise_svm,
    train_ranking_svm,
    train_svm_on_clicks,
)
from cltr.core.svm.qp import _IDLE


def slsqp_dual(g, b):
    """max_β b.β - ½‖β g‖² over the simplex by a generic solver."""
    G = g @ g.T
    k = len(b)
    result = minimize(
        lambda x: 0.5 * x @ G @ x - b @ x,
        np.full(k, 1.0 / k),
        jac=lambda x: G @ x - b,
        method="SLSQP",
        bounds=[(0, None)] * k,
        constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1.0}],
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    return -result.fun


def assert_qp_optimal(qp, w, value, g_all, b_all, tolerance):
    """β on the simplex over the kept planes, w = Σ β_t g_t, the value its dual value, the KKT
    condition (no plane's gradient g_t.w - b_t below β's average by more than the tolerance),
    and, against SLSQP over the kept planes (those idle for long are dropped), no worse than
    their optimum; the kept planes are among those added."""
    k = qp.size
    beta, g, b = qp.beta[:k], qp.g[:k], qp.b[:k]
    assert beta.min() >= 0.0 and beta.sum() == pytest.approx(1.0, abs=1e-12)
    scale = max(1.0, float(np.abs(g_all).max()) ** 2, float(np.abs(b_all).max()))
    np.testing.assert_allclose(w, beta @ g, rtol=1e-9, atol=1e-9 * np.sqrt(scale))
    assert value == pytest.approx(float(beta @ b - 0.5 * w @ w), rel=1e-9, abs=1e-9 * scale)
    gradient = g @ w - b
    assert float(beta @ gradient) - gradient.min() <= tolerance + 1e-9 * scale
    assert value >= slsqp_dual(g, b) - 1e-7 * scale
    added = {(float(bt), *map(float, gt)) for gt, bt in zip(g_all, b_all, strict=True)}
    assert all((float(bt), *map(float, gt)) in added for gt, bt in zip(g, b, strict=True))


def random_planes(rng, k, d, *, parallel=False, scale=1.0):
    g = rng.normal(size=(k, d))
    b = rng.uniform(0.0, 3.0, k)
    if parallel:  # long, nearly parallel planes, as OCAS's are late in a solve
        g = 50.0 * rng.normal(size=d) + 0.1 * g
        b = 2000.0 + b
    return scale * g, scale * scale * b


@pytest.mark.parametrize("case", ["random", "parallel", "flat", "tiny", "duplicates"])
def test_every_plane_qp_solve_is_optimal_as_planes_arrive(case):
    # OCAS's use: a plane added, then a solve, each solve warm-started from the last β; every
    # solve must end at the optimum over the planes so far (the KKT condition and SLSQP),
    # whatever the factor's updates (planes entering and leaving S, pivot changes), the
    # store's growth, the ridge, or the scale of the planes.
    # kills, in qp.py: the ridge's base (`max(largest, 1e-200)`, `largest` not updated),
    # `_leave`'s trailing block and row shift (`+`/`-` swaps, `<` at i < m - 1), the factor's
    # refactorisation set (`beta > 0.0` -> `>=`), `_enter`'s ridge (`+` -> `-`), the Newton
    # step's ratio test and bounds (`<` <-> `<=`, `0.0` -> `1.0`, `/` -> `*`) and the final
    # renormalisation, the step budget, the pivot's start
    rng = np.random.default_rng({"random": 0, "parallel": 1, "flat": 2, "tiny": 3, "duplicates": 4}[case])
    k, d = (40, 6) if case != "flat" else (30, 2)
    g, b = random_planes(rng, k, d, parallel=case == "parallel", scale=1e-4 if case == "tiny" else 1.0)
    if case == "duplicates":  # the same plane again, and an affine combination of two others
        g[10], b[10] = g[3], b[3]
        g[20], b[20] = 0.5 * (g[4] + g[5]), 0.5 * (b[4] + b[5])
    g[0], b[0] = 0.0, 0.0  # plane 0 is the QP's own R >= 0
    qp = _PlaneQP(d, capacity=4)
    for t in range(1, k):
        qp.add(b[t], g[t])
        w, value = qp.solve(1e-12 * max(1.0, abs(float(b[t]))))
        assert_qp_optimal(qp, w, value, g[: t + 1], b[: t + 1], 1e-12 * max(1.0, abs(float(b[t]))))


def test_plane_qp_is_scale_invariant():
    # scaling every normal by s and every offset by s² scales the dual by s² and leaves β:
    # the ridge is relative to the largest Gram diagonal (kills `_RIDGE * max(largest, 1e-200)`
    # -> `1.0` and `/`, and `largest` never updated by `add`)
    rng = np.random.default_rng(5)
    g, b = random_planes(rng, 25, 3)
    g[0], b[0] = 0.0, 0.0
    values = []
    for s in (1.0, 1e-5, 1e5):
        qp = _PlaneQP(3)
        for t in range(1, len(b)):
            qp.add(s * s * b[t], s * g[t])
            _, value = qp.solve(1e-13 * s * s)
        values.append(value / (s * s))
    assert values[1] == pytest.approx(values[0], rel=1e-9)
    assert values[2] == pytest.approx(values[0], rel=1e-9)


def test_plane_qp_certificate_combines_the_coefficients_of_the_kept_planes():
    # with keep_coef, plane t's normal is X.T @ coef_t; the certificate is b.β and Σ β_t coef_t,
    # so X.T @ Σ β_t coef_t is w and b.β - ½‖w‖² the value, also after idle planes are dropped
    # (kills the coefficient list's pruning `(k - m)` -> `(k + m)` and the store's growth)
    rng = np.random.default_rng(6)
    X = rng.normal(size=(8, 3))
    qp = _PlaneQP(3, capacity=4, keep_coef=True)
    for _ in range(40):
        coef = rng.normal(size=8)
        qp.add(float(rng.uniform(0.0, 3.0)), X.T @ coef, coef)
        w, value = qp.solve(1e-12)
        offset, combined = qp.certificate()
        k = qp.size
        assert offset == pytest.approx(float(qp.beta[:k] @ qp.b[:k]), rel=1e-12)
        np.testing.assert_allclose(X.T @ combined, w, rtol=1e-9, atol=1e-9)
        assert value == pytest.approx(offset - 0.5 * float(w @ w), rel=1e-9, abs=1e-9)


def test_plane_qp_restart_keeps_only_the_new_plane():
    # restart: every plane replaced by R >= 0 and the one given, with all the weight; later
    # solves are optimal over those and the planes added after (kills restart's `size = 1`
    # -> 2, `beta[0] = 0.0` -> 1.0 / beta[1] tweaks, the pivot and the refactorisation)
    rng = np.random.default_rng(7)
    g, b = random_planes(rng, 40, 4)
    g[0], b[0] = 0.0, 0.0
    qp = _PlaneQP(4, capacity=4)
    for t in range(1, 20):
        qp.add(b[t], g[t])
        qp.solve(1e-12)
    # the new plane: a convex combination of the old ones (as OCAS restarts), then more planes
    mix = rng.dirichlet(np.ones(19))
    restart_g, restart_b = mix @ g[1:20], float(mix @ b[1:20])
    qp.restart(restart_b, restart_g)
    assert qp.size == 2
    np.testing.assert_array_equal(qp.beta[:2], [0.0, 1.0])
    kept_g = np.vstack([np.zeros(4), restart_g, g[20:]])
    kept_b = np.concatenate([[0.0, restart_b], b[20:]])
    w, value = qp.solve(1e-12)
    assert_qp_optimal(qp, w, value, kept_g[:2], kept_b[:2], 1e-12)
    for t in range(20, 40):
        qp.add(b[t], g[t])
        w, value = qp.solve(1e-12)
        assert_qp_optimal(qp, w, value, kept_g[: t - 17], kept_b[: t - 17], 1e-12)


def test_a_plane_idle_for_more_than_IDLE_solves_is_dropped_and_no_other():
    # the QP's size stays bounded: a plane with β = 0 in _IDLE + 1 solves in a row is dropped
    # after the last of them, not before, and a plane in use is never dropped. Kills the idle
    # count's update (removed, `-=`, `+= 2`), a new plane's count (`idle[k] = 1`), the prune
    # test's kept set (`<=` -> `<`) and the removed prune
    rng = np.random.default_rng(11)
    qp = _PlaneQP(3)
    qp.add(1.0, np.array([1.0, 0.0, 0.0]))  # in use throughout (β > 0 at every solve)
    qp.solve(1e-12)
    useless = np.array([0.0, 0.0, 1.0])
    qp.add(-1e3, useless)  # far below the objective: never in use
    for solve in range(1, _IDLE + 3):
        qp.solve(1e-12)
        kept = [tuple(g) for g in qp.g[: qp.size]]
        assert (1.0, 0.0, 0.0) in kept
        assert (tuple(useless) in kept) == (solve <= _IDLE), solve
        # a second useless plane, one solve younger, outlives the first by one solve
        assert (tuple(-useless) in kept) == (2 <= solve <= _IDLE + 1), solve
        if solve == 1:
            qp.add(-1e3, -useless)
        if solve == 3:  # planes keep arriving meanwhile: the in-use plane stays
            qp.add(float(rng.uniform(0.0, 0.5)), rng.normal(size=3))


# --------------------------------------------------------------------------- problem.py


def tiny_problem(seed, sizes=(3, 5, 4, 6), n_features=3, n_examples=8):
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    X = rng.normal(size=(offsets[-1], n_features))
    click_query = np.sort(rng.integers(0, len(sizes), n_examples))
    click_doc = offsets[click_query] + rng.integers(0, np.asarray(sizes)[click_query])
    cost = rng.uniform(0.2, 3.0, n_examples)
    return X, offsets, click_query, click_doc, cost


def hinge_loss(w, X, offsets, click_query, click_doc, cost, C):
    """(C/n) Σ_i c_i Σ_{y != y_i} max(0, 1 - w.(x_{y_i} - x_y)), by a double loop."""
    total = 0.0
    for i, (q, positive) in enumerate(zip(click_query, click_doc, strict=True)):
        for y in range(offsets[q], offsets[q + 1]):
            if y != positive:
                total += cost[i] * max(0.0, 1.0 - float(w @ (X[positive] - X[y])))
    return C / len(click_doc) * total


def brute_objective(w, X, offsets, click_query, click_doc, cost, C):
    return 0.5 * float(w @ w) + hinge_loss(w, X, offsets, click_query, click_doc, cost, C)


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(offsets=np.array([0.0, 2.0, 5.0])), "offsets must be a 1-D integer array"),
        (dict(offsets=np.array([[0, 2, 5]])), "offsets must be a 1-D integer array"),
        (dict(offsets=np.zeros(0, dtype=np.int64)), "offsets must be a 1-D integer array"),
        (dict(click_query=np.array([[0, 1]])), "click_query and click_doc must be 1-D"),
        (dict(click_doc=np.array([[1, 3]])), "click_query and click_doc must be 1-D"),
        (dict(click_query=np.array([0, 1, 1])), "click_query and click_doc must have one entry per example"),
        (dict(click_doc=np.array([1.0, 3.0])), "click_doc must hold integer indices, found dtype float64"),
        (dict(click_query=np.array([0.0, 1.0])), "click_query must hold integer indices, found dtype float64"),
    ],
)
def test_malformed_problems_are_refused(change, message):
    # kills problem.py's removed raises (offsets, 1-D clicks, lengths, integer indices) and
    # `or` -> `and` in their conditions
    arguments = dict(
        w=np.zeros(3),
        X=np.ones((5, 3)),
        offsets=[0, 2, 5],
        click_query=np.array([0, 1]),
        click_doc=np.array([1, 3]),
        cost=np.array([1.0, 2.0]),
        C=1.0,
    )
    arguments.update(change)
    with pytest.raises(ValueError, match=message):
        pairwise_objective(*arguments.values())


def test_decreasing_offsets_are_named_as_such():
    # kills the message's test `np.diff(offsets) < 0` -> `<= 0` and `0` -> `1`: offsets that
    # only end wrong are not "decreasing somewhere", offsets that fall are
    w, X, clicks = np.zeros(3), np.ones((5, 3)), ([0], [1], [1.0], 1.0)
    with pytest.raises(ValueError, match=r"found \[0\]...\[5\] \(decreasing somewhere\)"):
        pairwise_objective(w, X, [0, 3, 2, 5], *clicks)
    with pytest.raises(ValueError, match=r"found \[0\]...\[4\]$"):
        pairwise_objective(w, X, [0, 2, 2, 4], *clicks)


def test_a_problem_without_queries_is_valid():
    # offsets [0] (no documents, no queries) is a valid empty problem: P(w) = ½‖w‖²
    # (kills `len(offsets) < 1` -> `<= 1` and `1` -> `2`)
    empty = np.zeros(0, dtype=np.int64)
    assert pairwise_objective(np.array([3.0, 4.0]), np.zeros((0, 2)), [0], empty, empty, np.zeros(0), 1.0) == 12.5


def test_the_result_is_immutable():
    # kills `@dataclass(frozen=True)` -> False: a solve's certificate cannot be edited after the fact
    result = solve_pairwise_svm(*tiny_problem(0), 1.0)
    with pytest.raises(AttributeError):
        result.objective = 0.0  # type: ignore[misc]
    assert isinstance(result, SVMResult)


@pytest.mark.parametrize("exact", [True, False])
def test_float32_products_cover_every_row_whatever_the_block(monkeypatch, exact):
    # X @ w and X.T @ coef over float32 X, with blocks of 16 rows (the smallest allowed) over
    # 50 rows: every row in, once. Exact: equal to the float64 products of the widened X;
    # float32: to float32 accuracy. Kills the blocks' `range(0, ...)` -> `range(1, ...)`,
    # the block loop's removed sum, and `and` -> `or` where only one product is asked for.
    monkeypatch.setattr(svm_problem, "_WIDE_BLOCK_BYTES", 1)
    monkeypatch.setattr(svm_problem, "_NARROW_BLOCK_BYTES", 1)
    rng = np.random.default_rng(8)
    X = rng.normal(size=(50, 3)).astype(np.float32)
    w, coef = rng.normal(size=3), rng.normal(size=50)
    wide = X.astype(np.float64)
    rtol = 1e-12 if exact else 1e-5
    scores, total = _products(X, w, coef, exact=exact)
    np.testing.assert_allclose(scores, wide @ w, rtol=rtol, atol=rtol)
    np.testing.assert_allclose(total, coef @ wide, rtol=rtol, atol=rtol)
    only_scores = _products(X, w, exact=exact)
    np.testing.assert_allclose(only_scores[0], wide @ w, rtol=rtol, atol=rtol)
    assert only_scores[1] is None
    only_total = _products(X, coef=coef, exact=exact)
    assert only_total[0] is None
    np.testing.assert_allclose(only_total[1], coef @ wide, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("block", [1, 2, 5])
def test_small_pair_blocks_give_the_same_objective_and_optimum(monkeypatch, block):
    # pair passes in blocks of whole runs of about `block` pairs (many blocks, a run longer
    # than a block): the objective equals the double loop and the solve brackets it.
    # Kills the block cuts in _blocks (`last + 1` -> `last - 1` / `last + 2`, `pairs[:-1]`
    # -> `pairs[:1]`, `cuts[:-1]` -> `cuts[:1]`)
    X, offsets, click_query, click_doc, cost = tiny_problem(9)
    unblocked = solve_pairwise_svm(X, offsets, click_query, click_doc, cost, 2.0, tol=1e-8)
    monkeypatch.setattr(svm_problem, "_BLOCK_PAIRS", block)
    rng = np.random.default_rng(9)
    for w in (np.zeros(3), rng.normal(size=3)):
        assert pairwise_objective(w, X, offsets, click_query, click_doc, cost, 2.0) == pytest.approx(
            brute_objective(w, X, offsets, click_query, click_doc, cost, 2.0), rel=1e-12
        )
    result = solve_pairwise_svm(X, offsets, click_query, click_doc, cost, 2.0, tol=1e-8)
    assert result.converged
    assert result.objective == pytest.approx(
        brute_objective(result.w, X, offsets, click_query, click_doc, cost, 2.0), rel=1e-12
    )
    # both certificates bound the one optimum
    assert result.lower_bound <= unblocked.objective * (1 + 1e-12)
    assert unblocked.lower_bound <= result.objective * (1 + 1e-12)


def test_float32_objective_is_the_exact_objective_of_its_values():
    # float32 values are exact in float64: P on float32 X equals P on the widened X (to the
    # rounding of a sum, far below float32's 1e-7). Kills `_products(..., exact: bool = True)`
    # -> False as the default, which the objective relies on.
    X, offsets, click_query, click_doc, cost = tiny_problem(10)
    X32 = (100.0 * X).astype(np.float32)  # large margins: a float32 product misses by ~1e-5
    w = np.random.default_rng(10).normal(size=3)
    assert pairwise_objective(w, X32, offsets, click_query, click_doc, cost, 1.0) == pytest.approx(
        pairwise_objective(w, X32.astype(np.float64), offsets, click_query, click_doc, cost, 1.0), rel=1e-13
    )


# --------------------------------------------------------------------------- pairs.py


def test_line_root_stays_at_zero_whenever_the_ray_ascends():
    # φ'(0+) = base > 0: the minimiser over k >= 0 is k = 0, however small base is
    # (kills `base >= 0.0` -> `base >= 1.0`, which steps backwards for 0 < base < 1)
    for base in (0.5, 1e-9, 0.0):
        assert _line_root(base, 2.0, np.array([0.3, 1.0]), np.array([1.0, 1.0])) == 0.0


def pairs_with_state(slack, slope, weight):
    """A solver's pair state holding these slacks, slopes and weights (runs of 10 pairs)."""
    runs = len(slack) // 10
    offsets = np.arange(0, 11 * runs + 1, 11)
    problem = PairwiseProblem(np.zeros((offsets[-1], 2)), offsets, np.arange(runs), offsets[:-1])
    pairs = _Pairs(problem, problem.doc_weight(np.ones(runs), 1.0))
    pairs.slack[:], pairs.slope[:], pairs.weight[:] = slack, slope, weight
    return pairs


@pytest.mark.parametrize("share", [0.05, 0.5])
@pytest.mark.parametrize("curvature", [1e-3, 10.0])
def test_line_search_is_exact_whatever_the_samples_bracket(share, curvature):
    # the sample's bracket only guides the pass: from a bracket wholly below the root, wholly
    # above it, around 0, or the whole ray, the exact passes find the same minimiser and φ
    # change (kills the bracket checks' `>=` -> `>`, `+` -> `-`, `0.0` -> `1.0`, `<` -> `<=`,
    # `*` -> `/` and the moments of the jumps below low)
    rng = np.random.default_rng(12)
    n = 400
    slack, slope, weight = rng.normal(0.5, 1.0, n), rng.normal(0.3, 1.0, n), rng.uniform(0.1, 1.0, n)
    breaks = slack / slope
    jumps = weight * np.abs(slope)
    active = (slack > 0) | ((slack == 0) & (slope < 0))
    derivative = -share * float(jumps[breaks > 0].sum())  # φ'(0+) = -share × the jumps

    def phi(k):  # φ(k) - ½‖w_b‖², with the pair part's φ'(0+) shifted to `derivative`
        pair_slope = float(-(weight * slope) @ active)
        return (derivative - pair_slope) * k + 0.5 * curvature * k * k + weight @ np.maximum(0.0, slack - k * slope)

    reference = pairs_with_state(slack, slope, weight)
    with np.errstate(divide="ignore", invalid="ignore"):
        k0, change0 = reference.line_search(derivative, curvature)
    assert k0 > 0
    assert change0 == pytest.approx(phi(k0) - phi(0.0), rel=1e-9)
    grid = np.linspace(0.0, 3.0 * k0, 301)
    assert phi(k0) <= min(phi(k) for k in grid) + 1e-12 * abs(phi(k0))
    for low, high in ((0.0, 1e-3 * k0), (0.1 * k0, 0.2 * k0), (2.0 * k0, np.inf), (3.0 * k0, 4.0 * k0), (0.0, np.inf)):
        pairs = pairs_with_state(slack, slope, weight)
        pairs.bracket = lambda *_, bounds=(low, high): bounds
        with np.errstate(divide="ignore", invalid="ignore"):
            k, change = pairs.line_search(derivative, curvature)
        assert k == pytest.approx(k0, rel=1e-9), (low, high)
        assert change == pytest.approx(change0, rel=1e-9), (low, high)


@pytest.mark.parametrize("share", [0.0005, 0.3, 0.97, 1.5])
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("curvature", [0.01, 300.0])
def test_line_root_over_many_breakpoints_is_a_minimiser(share, ties, curvature):
    # more breakpoints than _line_root sorts directly (the narrowing rounds run): the k it
    # returns has 0 between φ's one-sided derivatives, checked over every breakpoint; the root
    # near the first, the middle, the last breakpoint, or past them all, and with breakpoints
    # tied in groups. Kills the narrowing's exact tests (`>=` -> `>`, `+` -> `-`, `*` -> `/`,
    # `0.0` -> `1.0`), its carried sums (`+=` -> `-=`, removed), its kept sets (`&` -> `|`, `~`
    # dropped, `<=` -> `<`), the stop on ties (`==` -> `!=`) and the final crossing (`>=` -> `>`)
    rng = np.random.default_rng(13)
    n = 6000
    breaks = rng.uniform(0.0, 10.0, n)
    if ties:
        breaks = np.round(breaks, 1) + 0.05  # groups of equal breakpoints, all > 0
    jumps = rng.uniform(0.1, 1.0, n)
    # 0.01: the jumps decide where φ' crosses 0; 300: the quadratic part weighs as much
    base = -share * float(jumps.sum())
    k = _line_root(base, curvature, breaks, jumps)
    right = base + curvature * k + float(jumps[breaks <= k].sum())
    left = base + curvature * k + float(jumps[breaks < k].sum())
    scale = float(jumps.sum())
    assert k > 0 and left <= 1e-9 * scale and right >= -1e-9 * scale


def test_runs_of_zero_weight_are_left_out_whatever_their_length():
    # an example of cost 0 changes nothing: the solve with it equals the solve without it, also
    # when its run has a single pair (a query of two documents) and the other runs are kept
    # (kills `keep[problem.count > 0]` -> `> 1`, which then leaves the pairs misaligned)
    X, offsets, click_query, click_doc, cost = tiny_problem(19, sizes=(2, 5, 4, 6), n_examples=10)
    click_query, click_doc, cost = (
        np.concatenate([[0], click_query[click_query > 0]]),
        np.concatenate([[1], click_doc[click_query > 0]]),
        np.concatenate([[0.0], cost[click_query > 0]]),
    )
    n = len(click_doc)
    with_zero = solve_pairwise_svm(X, offsets, click_query, click_doc, cost, 2.0, tol=1e-9)
    # without the example, C rescaled so that a_i = C c_i / n stays the same
    without = solve_pairwise_svm(X, offsets, click_query[1:], click_doc[1:], cost[1:], 2.0 * (n - 1) / n, tol=1e-9)
    assert with_zero.objective == pytest.approx(without.objective, rel=1e-7)
    assert with_zero.objective == pytest.approx(
        brute_objective(with_zero.w, X, offsets, click_query, click_doc, cost, 2.0), rel=1e-12
    )


# --------------------------------------------------------------------------- ocas.py


def test_a_solve_without_pairs_returns_the_certified_optimum_zero():
    # no pair of positive weight: w = 0 is optimal, P = 0 = the lower bound, gap 0, no plane,
    # and the seconds the call took (kills `0.0` -> `1.0` in the result's objective and bound,
    # and `perf_counter() - start` -> `+`)
    X = np.random.default_rng(14).normal(size=(5, 3))
    before = time.perf_counter()
    result = solve_pairwise_svm(X, [0, 2, 5], [0, 1], [1, 3], [0.0, 0.0], 1.0)
    elapsed = time.perf_counter() - before
    assert (result.objective, result.lower_bound, result.gap, result.iterations) == (0.0, 0.0, 0.0, 0)
    assert 0.0 <= result.seconds <= elapsed


def test_the_default_tolerance_is_a_relative_gap_of_one_in_a_thousand():
    # the documented default tol = 1e-3, for the function and the problem's solve (kills
    # `tol: float = 1e-3` -> 1.001 in PairwiseProblem.solve)
    X, offsets, click_query, click_doc, cost = tiny_problem(15, n_examples=12)
    problem = PairwiseProblem(X, offsets, click_query, click_doc)
    for result in (problem.solve(cost, 10.0), solve_pairwise_svm(X, offsets, click_query, click_doc, cost, 10.0)):
        assert result.converged and result.gap <= 1e-3


def test_a_callback_that_cannot_be_called_is_refused():
    # kills the removed raise: a non-callable callback would fail only after the first plane
    with pytest.raises(ValueError, match="callback must be callable"):
        solve_pairwise_svm(*tiny_problem(16), 1.0, callback=3)


@pytest.mark.parametrize("sizes", [(3, 5, 4, 6), (3, 5, 4, 6, 30)])
def test_the_first_non_finite_row_is_named(sizes):
    # two non-finite rows that take part in pairs: the message names the first; with a long
    # query without clicks the solver works on a copy of the used rows, and still names the
    # row of X (kills `bad[0]` -> `bad[1]`)
    X, offsets, click_query, click_doc, cost = tiny_problem(17, sizes=sizes)
    X[[4, 6], 1] = [np.nan, np.inf]  # rows of the query of 5 documents
    click_query, click_doc = np.array([1, 2]), np.array([5, 9])
    with pytest.raises(ValueError, match="row 4 holds NaN or inf"):
        solve_pairwise_svm(X, offsets, click_query, click_doc, np.ones(2), 1.0)


def test_an_extreme_C_with_ordinary_weights_blames_C_only():
    # equal weights (large ones: 1e7 each): C is the cause, and no example is named as a
    # vanishing propensity
    # (kills the blame test's `1e6 * median` -> `1e6 / median`)
    X, offsets, click_query, click_doc, _ = tiny_problem(18)
    with pytest.raises(ValueError) as refused:
        solve_pairwise_svm(X, offsets, click_query, click_doc, np.full(len(click_doc), 1e7), 1e300)
    message = str(refused.value)
    assert message.endswith("use a smaller C") and "propensity" not in message and "clip" not in message


class _Queries:
    """The three fields of cltr.core.queries.Queries the trainers read."""

    def __init__(self, X, offsets):
        self.X, self.offsets = X, offsets
        self.doc_query = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))


def test_the_paper_trainers_solve_their_problems_to_the_default_gap():
    # train_ranking_svm: one example per relevant document against its query's irrelevant
    # ones (the double loop), train_svm_on_clicks: the click problem; both to the documented
    # default gap 1e-3, and `seconds` within the call's time. Kills `~relevant` -> `relevant`,
    # both `tol: float = 1e-3` -> 1.001, and the seconds' `- start` -> `+ start`
    X, offsets, click_query, click_doc, cost = tiny_problem(20, n_examples=12)
    queries = _Queries(X, offsets)
    relevant = np.random.default_rng(20).random(offsets[-1]) < 0.4
    before = time.perf_counter()
    ranking = train_ranking_svm(queries, relevant, C=10.0)
    elapsed = time.perf_counter() - before
    assert ranking.converged and ranking.gap <= 1e-3 and 0.0 <= ranking.seconds <= elapsed
    total = 0.0
    for q in range(len(offsets) - 1):
        for i in range(offsets[q], offsets[q + 1]):
            for j in range(offsets[q], offsets[q + 1]):
                if relevant[i] and not relevant[j]:
                    total += max(0.0, 1.0 - float(ranking.w @ (X[i] - X[j])))
    assert ranking.objective == pytest.approx(0.5 * ranking.w @ ranking.w + 10.0 / relevant.sum() * total, rel=1e-12)
    clicks = train_svm_on_clicks(queries, click_query, click_doc, cost, C=10.0)
    assert clicks.converged and clicks.gap <= 1e-3
    assert clicks.objective == pytest.approx(
        brute_objective(clicks.w, X, offsets, click_query, click_doc, cost, 10.0), rel=1e-12
    )
