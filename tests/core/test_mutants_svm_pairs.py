"""Tests that kill the survivors of bench/mutation.py on cltr/core/svm/pairs.py (each names the
mutants it kills). Oracles: a double loop over every (clicked document, other document) pair for
the pair passes of both ``_Pairs`` (numpy) and ``_CompiledPairs`` (numba), hand-computed line
searches along a piecewise-quadratic φ with dyadic breakpoints (exact in floating point), and φ's
one-sided derivatives at the root that ``_line_root`` returns."""

import numpy as np
import pytest

import cltr.core.svm.problem as svm_problem
from cltr.core import kernels
from cltr.core.svm import PairwiseProblem
from cltr.core.svm.pairs import _CompiledPairs, _line_root, _Pairs

# the numpy passes always; the compiled ones where numba serves
KINDS = [_Pairs, pytest.param(_CompiledPairs, marks=pytest.mark.skipif(not kernels.enabled(), reason="no numba"))]


def click_problem(rng):
    """Queries of 1 to 6 documents, every query clicked (so the solver keeps every row of X, and
    the pair passes' rows are X's), some documents clicked twice, and the last query clicked on
    its last document only: the last row of X is a run's own row and no pair's other document.
    Costs of one in five clicks 0 (runs left out of a solve)."""
    sizes = rng.integers(1, 7, 9)
    sizes[-1] = 3
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    click_query = np.concatenate([np.arange(8), rng.integers(0, 8, 6)])
    click_doc = offsets[click_query] + rng.integers(0, sizes[click_query])
    click_query, click_doc = np.append(click_query, 8), np.append(click_doc, offsets[-1] - 1)
    cost = rng.uniform(0.5, 2.0, len(click_doc))
    cost[rng.random(len(cost)) < 0.2] = 0.0
    cost[-1] = 1.0
    problem = PairwiseProblem(np.zeros((offsets[-1], 2)), offsets, click_query, click_doc)
    assert problem.X_used is problem.X
    return problem, offsets, problem.doc_weight(cost, 3.0)


def draw(rng, n, ties):
    """Per-row scores or changes: integers when ``ties`` (exact zeros of slack and plane edges)."""
    return rng.integers(-2, 3, n).astype(float) if ties else rng.normal(0.0, 1.5, n)


def brute_force(problem, offsets, weight, scores, change, k, cut):
    """Per pair (clicked document d of weight a, other document y of its query): slack
    s = (f_y - f_d) + 1 at ``scores``, slope d.Δ = Δ_d - Δ_y. Returns the loss Σ a max(0, s), φ'(0+)'s
    pair part Σ a slope over the pairs in the hinge just after 0 (s > 0, or s = 0 and slope < 0),
    and the plane at slack s - k slope - cut slope: offset Σ a δ and coefficients Σ a δ (x_d - x_y)
    per row, δ = [cut slope < s - k slope]."""
    loss = derivative = offset = 0.0
    coef = np.zeros(len(scores))
    for d, a in zip(problem.doc, weight, strict=True):
        q = np.searchsorted(offsets, d, side="right") - 1
        for y in range(offsets[q], offsets[q + 1]):
            if y == d:
                continue
            slack, slope = (scores[y] - scores[d]) + 1.0, change[d] - change[y]
            loss += a * max(0.0, slack)
            if slack > 0.0 or (slack == 0.0 and slope < 0.0):
                derivative += a * slope
            if cut * slope < slack - k * slope:
                offset += a
                coef[d] += a
                coef[y] -= a
    return loss, derivative, offset, coef


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("ties", [False, True], ids=["continuous", "ties"])
def test_pair_passes_equal_a_double_loop_over_the_pairs(kind, ties, monkeypatch):
    # reset (the loss), scan (φ'(0+)), advance (the plane) and a second scan and advance from the
    # moved point, in blocks of a few runs (every block's scratch is a slice of the largest's).
    # Integer scores and changes put pairs on the kink (slack 0) and planes on their edge
    # (cut·slope = slack), k = 0.5 moves the point by less than a whole step.
    # Kills in _Pairs: `run_start = cumsum - count` -> `+`, the scratch's `stop - start` -> `+`,
    # reset's `loss = 0.0` -> 1.0, its removed take / subtract / `slack += 1.0` / maximum / `loss +=`,
    # `slack += 1.0` -> `-=` and 1.0 -> 2.0, `maximum(slack, 0.0)` -> 1.0, `loss +=` -> `-=`;
    # scan's `total = 0.0` -> 1.0, its removed take / subtract / `total +=` and `+=` -> `-=`;
    # advance's `k > 0.0` -> 1.0, its removed multiply / `slack -= first` / less / weights,
    # `slack -=` -> `+=`, bincount's `minlength=X.shape[0]` -> `shape[1]` (the last row is no
    # pair's other document), the removed negation and `coef[run_row] +=` (removed, `-=`)
    monkeypatch.setattr(svm_problem, "_BLOCK_PAIRS", 7)
    for seed in range(4):
        rng = np.random.default_rng(seed)
        problem, offsets, weight = click_problem(rng)
        pairs = kind(problem, weight)
        if kind is _Pairs:
            assert len(pairs.blocks) > 1
        n = problem.X.shape[0]
        scores = draw(rng, n, ties)
        loss = pairs.reset(scores)
        for k, cut in ((0.5, 0.25), (0.0, 0.5)):
            change = draw(rng, n, ties)
            want_loss, want_derivative, want_offset, want_coef = brute_force(
                problem, offsets, weight, scores, change, k, cut
            )
            assert loss == pytest.approx(want_loss, rel=1e-12, abs=1e-12)
            assert pairs.scan(change) == pytest.approx(want_derivative, rel=1e-12, abs=1e-12)
            offset, coef = pairs.advance(k, cut)
            assert offset == pytest.approx(want_offset, rel=1e-12, abs=1e-12)
            np.testing.assert_allclose(coef, want_coef, rtol=1e-12, atol=1e-12)
            scores = scores + k * change
            loss = brute_force(problem, offsets, weight, scores, change, 0.0, 0.0)[0]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n_pairs", [0, 1])
def test_a_solve_of_no_pair_or_one_pair(kind, n_pairs):
    # one query of two documents clicked on the first (one pair) or a query of one (none, which
    # the solver answers without a pass: it is only built). With one pair, slack 1 - (1 - 0) = 0
    # at scores (1, 0), slope 1 along change (1, 0): loss 0, the kink moving out of the hinge
    # (φ'(0+) part 0), and the plane at k = 0.5 (slack -0.5) inactive.
    # Kills `if n == 0` -> `n == 1` (one pair left without its blocks) and the sample's
    # `arange(0, n, ...)` -> `arange(1, ...)` (an empty sample of one pair: n / 0)
    offsets = np.array([0, 1 + n_pairs])
    problem = PairwiseProblem(np.zeros((1 + n_pairs, 1)), offsets, np.array([0]), np.array([0]))
    pairs = kind(problem, problem.doc_weight(np.ones(1), 1.0))
    assert pairs.n_pairs == n_pairs and pairs.total_weight == n_pairs
    if n_pairs == 0:
        return
    scores, change = np.array([1.0, 0.0])[: 1 + n_pairs], np.array([1.0, 0.0])[: 1 + n_pairs]
    assert pairs.reset(scores) == 0.0
    assert pairs.scan(change) == 0.0
    offset, coef = pairs.advance(0.5, 0.0)
    assert offset == 0.0
    np.testing.assert_array_equal(coef, np.zeros(1 + n_pairs))


def test_the_compiled_sample_is_the_numpy_sample():
    # the sampled pairs' slacks and slopes, and so the bracket they predict, are the same from
    # the compiled pairs' per-row scores as from numpy's per-pair arrays. Kills in
    # _CompiledPairs._sample `(s_y - s_d) + 1.0` -> `- 1.0`, `+ s_d`, `+ 2.0` and `Δ_d - Δ_y` -> `+`
    if not kernels.enabled():
        pytest.skip("no numba")
    rng = np.random.default_rng(5)
    problem, _, weight = click_problem(rng)
    oracle, compiled = _Pairs(problem, weight), _CompiledPairs(problem, weight)
    n = problem.X.shape[0]
    scores, change = rng.normal(0.0, 1.5, n), rng.normal(0.0, 1.5, n)
    oracle.reset(scores), compiled.reset(scores)
    oracle.scan(change), compiled.scan(change)
    for want, got in zip(oracle._sample(), compiled._sample(), strict=True):
        np.testing.assert_array_equal(got, want)
    with np.errstate(divide="ignore", invalid="ignore"):
        assert compiled.bracket(-5.0, 0.1) == oracle.bracket(-5.0, 0.1)


def pairs_with_breakpoints(breaks, jumps):
    """Numpy pair state whose pairs have slope 1, slack k_p and weight jump_p (breakpoint k_p,
    jump of φ' a_p |slope_p| = jump_p), padded to runs of 10 with pairs never in the hinge ahead
    (slack -1, slope 1: breakpoint -1)."""
    n = 10
    problem = PairwiseProblem(np.zeros((11, 1)), np.array([0, 11]), np.array([0]), np.array([0]))
    pairs = _Pairs(problem, problem.doc_weight(np.ones(1), 1.0))
    pairs.slack[:] = -1.0
    pairs.slack[: len(breaks)] = breaks
    pairs.slope[:] = np.ones(n)
    pairs.weight[:] = 1.0
    pairs.weight[: len(jumps)] = jumps
    return pairs


# φ'(k+) = -3 + k + Σ_{k_p <= k} jump_p (φ'(0+) = -3, ‖Δ‖² = 1, so k_hi = 3):
# "linear": breakpoints 1, 3, 4 of jumps 1, 2, 2: φ' = k - 2 on (1, 3), zero at k = 2;
#   φ(2) - φ(0) = 2·(-3) + ½·4 + 1·(2 - 1) = -3.
# "kink": breakpoints 1/4, 3/4, 1 of jumps 1, 2, 2: φ'(3/4-) = -5/4, φ'(3/4+) = 3/4: the root is
#   the kink k = 3/4; φ(3/4) - φ(0) = -9/4 + 9/32 + 1·(3/4 - 1/4) = -47/32.
LINE_CASES = {
    "linear": ([1.0, 3.0, 4.0], [1.0, 2.0, 2.0], 2.0, -3.0),
    "kink": ([0.25, 0.75, 1.0], [1.0, 2.0, 2.0], 0.75, -47 / 32),
}
BRACKETS = [(0.0, np.inf), (0.0, 2.0), (2.0, 3.0), (2.5, 3.0), (0.5, 1.5), (0.0, 0.875), (0.875, 2.0), (0.5, 0.875)]


@pytest.mark.parametrize("case", LINE_CASES)
@pytest.mark.parametrize("bracket", BRACKETS, ids=str)
def test_line_search_from_any_bracket_finds_the_hand_computed_root_in_at_most_two_passes(case, bracket):
    # From the sample's bracket the search needs one pass, or two where the root lies outside
    # it (the docstring's "a pass over the side it is on settles it"), and finds the exact root.
    # φ' is at most 4 in size and ‖Δ‖² = 1, so checks of φ' against 1 instead of 0, or of low
    # against 1, go wrong; φ'(2) = 0 exactly in "linear" makes `< 0` and `<= 0` differ.
    # Kills in line_search the root-below-low check's `low > 0.0` -> `low > 1.0`, `>= 0.0` -> `>= 1.0`,
    # `+ base` -> `- base` and `+ low * curvature` -> `-` (each leaves a root below low alone:
    # k = 0 or a wrong k), and the root-above-high check's `< 0.0` -> `<= 0.0` and its `+` -> `-`
    # (each sends the bracket up past a root inside it, and back, round after round)
    breaks, jumps, root, change = LINE_CASES[case]
    pairs = pairs_with_breakpoints(breaks, jumps)
    pairs.bracket = lambda *_: bracket
    passes = []
    breakpoints = pairs.breaks

    def counted(low, high):
        passes.append((low, high))
        assert len(passes) <= 2, f"the bracket does not settle: {passes}"
        return breakpoints(low, high)

    pairs.breaks = counted
    with np.errstate(divide="ignore", invalid="ignore"):
        k, phi_change = pairs.line_search(-3.0, 1.0)
    assert k == root
    assert phi_change == change


@pytest.mark.parametrize("share", [0.03, 0.5, 0.97])
@pytest.mark.parametrize("ties", [False, True])
def test_line_root_of_a_small_scale_is_a_minimiser(share, ties):
    # test_line_root_over_many_breakpoints_is_a_minimiser with jumps and ‖Δ‖² 1e4 times smaller:
    # φ' then stays below 1 in size around the root, where a check of it against 1 instead of 0
    # goes wrong. Kills in the narrowing `base + high * curvature + passed_high >= 0.0` -> `>= 1.0`
    # and its `+` -> `-` (the root inside (low, high] skipped over)
    rng = np.random.default_rng(14)
    n = 6000
    breaks = rng.uniform(0.0, 10.0, n)
    if ties:
        breaks = np.round(breaks, 1) + 0.05
    jumps = 1e-4 * rng.uniform(0.1, 1.0, n)
    base = -share * float(jumps.sum())
    k = _line_root(base, 1e-6, breaks, jumps)
    right = base + 1e-6 * k + float(jumps[breaks <= k].sum())
    left = base + 1e-6 * k + float(jumps[breaks < k].sum())
    scale = float(jumps.sum())
    assert k > 0 and left <= 1e-9 * scale and right >= -1e-9 * scale
