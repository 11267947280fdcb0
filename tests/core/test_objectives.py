"""Rank weights, the hinge rank bound, the risk R(f) and its gradient (paper Sec. 3-4)."""

import math
import pickle

import numpy as np
import pytest

from cltr.core.clicks import Clicks
from cltr.core.objectives import (
    RankWeight,
    average_rank,
    click_pairs,
    dcg,
    hinge_rank_bound,
    precision_at_k,
    rank_weight,
    rbp,
    risk,
    risk_gradient,
)

TRAINABLE = ["avgrank", "dcg", "rbp:0.7", "rbp:0.5"]


# --------------------------------------------------------------------------- fixtures


def hand_problem():
    """Two queries (4 and 3 documents), three clicks; bounds worked out by hand below."""
    scores = np.array([2.0, 1.5, 0.0, 3.0, 0.0, 0.5, -2.0])
    offsets = np.array([0, 4, 7])
    click_query = np.array([0, 0, 1])
    click_doc = np.array([0, 2, 5])
    propensity = np.array([0.5, 1.0, 0.25])
    return scores, offsets, click_query, click_doc, propensity


# Example 0 (y_i = doc 0, f = 2):  hinges vs docs 1, 2, 3: 0.5, 0 (1 - 2 < 0), 2    -> 3.5
# Example 1 (y_i = doc 2, f = 0):  hinges vs docs 0, 1, 3: 3, 2.5, 4                -> 10.5
# Example 2 (y_i = doc 5, f = .5): hinges vs docs 4, 6:    0.5, 0 (1 - 2.5 < 0)     -> 1.5
HAND_BOUND = [3.5, 10.5, 1.5]


def random_problem(rng, *, n_queries=4, max_docs=6, clicks_per_query=3, integer_scores=False):
    sizes = rng.integers(1, max_docs + 1, n_queries)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    n_docs = int(offsets[-1])
    if integer_scores:  # many ties
        scores = rng.integers(-2, 3, n_docs).astype(float)
    else:
        scores = rng.normal(0.0, 1.5, n_docs)
    click_query = np.repeat(np.arange(n_queries), rng.integers(0, clicks_per_query + 1, n_queries))
    click_doc = offsets[click_query] + rng.integers(0, sizes[click_query])
    propensity = rng.uniform(0.05, 1.0, len(click_doc))
    return scores, offsets, click_query, click_doc, propensity


def brute_bound(scores, offsets, click_query, click_doc, candidate=None):
    bound = []
    for q, y_i in zip(click_query, click_doc, strict=True):
        total = 1.0
        for y in range(offsets[q], offsets[q + 1]):
            if y == y_i or (candidate is not None and not candidate[y]):
                continue
            total += max(0.0, 1.0 - (scores[y_i] - scores[y]))
        bound.append(total)
    return np.array(bound)


def brute_risk(scores, offsets, click_query, click_doc, propensity, weight, candidate=None):
    bound = brute_bound(scores, offsets, click_query, click_doc, candidate)
    return sum(float(weight.value(np.array(b))) / q for b, q in zip(bound, propensity, strict=True)) / len(bound)


def exact_ranks(scores, offsets, click_query, click_doc, candidate=None):
    """1 + number of candidates scored strictly higher (the optimistic tie convention)."""
    ranks = []
    for q, y_i in zip(click_query, click_doc, strict=True):
        above = 0
        for y in range(offsets[q], offsets[q + 1]):
            if y != y_i and (candidate is None or candidate[y]) and scores[y] > scores[y_i]:
                above += 1
        ranks.append(1 + above)
    return np.array(ranks, dtype=float)


# --------------------------------------------------------------------------- rank weights


def test_rank_weight_values_by_hand():
    r = np.array([1.0, 2.0, 3.5])
    assert average_rank().value(r).tolist() == [1.0, 2.0, 3.5]
    assert average_rank().derivative(r).tolist() == [1.0, 1.0, 1.0]
    assert dcg().value(r) == pytest.approx([-1 / math.log(2), -1 / math.log(3), -1 / math.log(4.5)])
    assert dcg().derivative(r) == pytest.approx(
        [1 / (2 * math.log(2) ** 2), 1 / (3 * math.log(3) ** 2), 1 / (4.5 * math.log(4.5) ** 2)]
    )
    assert rbp(0.8).value(r) == pytest.approx([-0.2, -0.2 * 0.8, -0.2 * 0.8**2.5])
    assert rbp(0.8).derivative(r) == pytest.approx(
        [-0.2 * math.log(0.8), -0.2 * math.log(0.8) * 0.8, -0.2 * math.log(0.8) * 0.8**2.5]
    )
    assert precision_at_k(2).value(r).tolist() == [-0.5, -0.5, 0.0]


@pytest.mark.parametrize("spec", TRAINABLE + ["prec@3"])
def test_rank_weights_are_non_decreasing(spec):
    weight = precision_at_k(3) if spec == "prec@3" else rank_weight(spec)
    r = np.linspace(1.0, 60.0, 5901)
    steps = np.diff(weight.value(r))
    assert np.all(steps >= 0)
    if weight.differentiable:
        assert np.all(steps > 0)
        assert np.all(weight.derivative(r) > 0)


@pytest.mark.parametrize("spec", TRAINABLE)
def test_concave_weights_have_non_positive_second_differences(spec):
    weight = rank_weight(spec)
    assert weight.concave
    r = np.linspace(1.0, 60.0, 591)
    second = np.diff(weight.value(r), 2)
    if spec == "avgrank":
        assert np.allclose(second, 0.0, atol=1e-12)  # linear: concave and convex
    else:
        assert np.all(second < 0)


@pytest.mark.parametrize("spec", TRAINABLE)
def test_derivative_matches_finite_differences_of_value(spec):
    weight = rank_weight(spec)
    r = np.linspace(1.0, 30.0, 59)
    h = 1e-6
    numeric = (weight.value(r + h) - weight.value(r - h)) / (2 * h)
    assert weight.derivative(r) == pytest.approx(numeric, rel=1e-6, abs=1e-10)


def test_rank_weight_parsing_and_round_trip():
    assert rank_weight("avgrank") == average_rank()
    assert rank_weight(" DCG ") == dcg()
    w = rank_weight("rbp:0.8")
    assert w.name == "rbp:0.8" and w == rbp(0.8)
    assert float(w.value(np.array(2.0))) == pytest.approx(-0.2 * 0.8)
    for spec in TRAINABLE:
        assert rank_weight(rank_weight(spec).name) == rank_weight(spec)
    assert rank_weight(w) is w
    assert isinstance(w, RankWeight)
    # the weights pickle (joblib / multiprocessing) and keep working
    back = pickle.loads(pickle.dumps(w))
    assert back == w and float(back.value(np.array(1.0))) == pytest.approx(-0.2)


@pytest.mark.parametrize(
    "spec",
    [
        "",
        "ndcg",
        "rank",
        "rbp",
        "rbp:",
        "rbp:1",
        "rbp:0",
        "rbp:1.5",
        "rbp:-0.2",
        "rbp:abc",
        "prec@10",
        "dcg@10",
        "avgrank:2",
    ],
)
def test_rank_weight_rejects_unknown_specs(spec):
    with pytest.raises(ValueError, match="rank weight|persistence"):
        rank_weight(spec)


def test_rank_weight_errors_say_what_is_accepted():
    with pytest.raises(ValueError, match="'avgrank', 'dcg', 'rbp:<p>'"):
        rank_weight("ndcg")
    with pytest.raises(ValueError, match="evaluation only"):
        rank_weight("prec@10")
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        rank_weight("rbp:1")
    with pytest.raises(ValueError):
        rank_weight(3)
    with pytest.raises(ValueError):
        rbp(1.0)
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="k must be an integer"):
            precision_at_k(bad)


# --------------------------------------------------------------------------- bound and risk by hand


def test_hinge_rank_bound_by_hand():
    scores, offsets, click_query, click_doc, _ = hand_problem()
    assert hinge_rank_bound(scores, offsets, Clicks(click_query, click_doc)).tolist() == HAND_BOUND


def test_hinge_rank_bound_with_candidate_mask_by_hand():
    scores, offsets, click_query, click_doc, _ = hand_problem()
    candidate = np.ones(7, dtype=bool)
    candidate[3] = False  # drops hinge 2 of example 0 and hinge 4 of example 1
    bound = hinge_rank_bound(scores, offsets, Clicks(click_query, click_doc), candidate=candidate)
    assert bound.tolist() == [1.5, 6.5, 1.5]


def test_risk_by_hand_for_each_weight():
    scores, offsets, click_query, click_doc, propensity = hand_problem()
    args = (scores, offsets, Clicks.from_propensity(click_query, click_doc, propensity))
    # (1/3) [3.5 / 0.5 + 10.5 / 1 + 1.5 / 0.25]
    assert risk(*args, average_rank()) == pytest.approx((7.0 + 10.5 + 6.0) / 3)
    assert risk(*args, dcg()) == pytest.approx(-(2 / math.log(4.5) + 1 / math.log(11.5) + 4 / math.log(2.5)) / 3)
    assert risk(*args, "rbp:0.5") == pytest.approx(-(2 * 0.5 * 0.5**2.5 + 0.5 * 0.5**9.5 + 4 * 0.5 * 0.5**0.5) / 3)
    assert risk(*args, average_rank(), n=10) == pytest.approx(23.5 / 10)


def test_gradient_by_hand_for_average_rank():
    scores, offsets, click_query, click_doc, propensity = hand_problem()
    value, grad = risk_gradient(scores, offsets, Clicks.from_propensity(click_query, click_doc, propensity), "avgrank")
    assert value == pytest.approx(23.5 / 3)
    # c_i = 1 / (n q_i) = [2/3, 1/3, 4/3]; each active pair adds c_i to the other document
    # and takes c_i from the clicked one. Active: ex 0 -> docs 1, 3; ex 1 -> docs 0, 1, 3;
    # ex 2 -> doc 4.
    expected = [-4 / 3 + 1 / 3, 2 / 3 + 1 / 3, -1.0, 2 / 3 + 1 / 3, 4 / 3, -4 / 3, 0.0]
    assert grad == pytest.approx(expected)


def test_hinge_exactly_at_its_kink_is_inactive():
    # margin f(y_i) - f(y) = 1 exactly: hinge 0, and the subgradient convention gives 0
    scores = np.array([1.0, 0.0])
    value, grad = risk_gradient(scores, [0, 2], Clicks([0], [0], [1.0]), "avgrank")
    assert value == 1.0
    assert grad.tolist() == [0.0, 0.0]


# --------------------------------------------------------------------------- brute force


@pytest.mark.parametrize("seed", range(8))
def test_vectorised_bound_and_risk_equal_double_loops(seed):
    rng = np.random.default_rng(seed)
    scores, offsets, click_query, click_doc, propensity = random_problem(rng, n_queries=5, integer_scores=seed % 2 == 1)
    if len(click_doc) == 0:
        pytest.skip("no clicks drawn")
    candidate = rng.random(len(scores)) < 0.6
    clicks = Clicks.from_propensity(click_query, click_doc, propensity)
    for mask in (None, candidate):
        bound = hinge_rank_bound(scores, offsets, clicks, candidate=mask)
        assert bound == pytest.approx(brute_bound(scores, offsets, click_query, click_doc, mask))
        for spec in TRAINABLE:
            weight = rank_weight(spec)
            expected = brute_risk(scores, offsets, click_query, click_doc, propensity, weight, mask)
            args = (scores, offsets, clicks, weight)
            assert risk(*args, candidate=mask) == pytest.approx(expected)
            value, _ = risk_gradient(*args, candidate=mask)
            assert value == pytest.approx(expected)


@pytest.mark.parametrize("seed", range(12))
def test_sorted_hinges_equal_the_expanded_pairs(seed, compiled):
    """The default computation (each query sorted once, active sets found by binary search)
    against the direct one over every expanded (example, candidate) pair: the same active
    pairs, so the same risk, gradient and curvature up to summation order. Half the draws
    have half-integer scores, so that ties and hinges exactly at their kink occur. Both the
    numpy computation and the compiled kernels (``cltr.core.kernels``) are held to it."""
    rng = np.random.default_rng(seed)
    n_queries = int(rng.integers(1, 40))
    sizes = rng.integers(1, 30, n_queries)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    scores = rng.normal(size=offsets[-1]) * 3 if seed % 2 else rng.integers(-4, 5, offsets[-1]) * 0.5
    n_examples = int(rng.integers(1, 200))
    click_query = rng.integers(0, n_queries, n_examples)
    click_doc = offsets[click_query] + (rng.random(n_examples) * sizes[click_query]).astype(np.int64)
    signed = rng.normal(size=n_examples) if seed % 3 == 0 else rng.random(n_examples) + 0.05
    candidate = rng.random(len(scores)) < 0.6
    clicks = Clicks(click_query, click_doc, signed)
    for mask in (None, candidate):
        pairs = click_pairs(offsets, clicks, mask)
        args = (scores, offsets, clicks, "dcg")
        assert hinge_rank_bound(*args[:3], candidate=mask) == pytest.approx(
            hinge_rank_bound(*args[:3], pairs=pairs), rel=1e-13, abs=1e-13
        )
        fast = risk_gradient(*args, candidate=mask, with_curvature=True)
        slow = risk_gradient(*args, pairs=pairs, with_curvature=True)
        assert fast[0] == pytest.approx(slow[0], rel=1e-13, abs=1e-13)
        for a, b in zip(fast[1:], slow[1:], strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="not both"):
        risk(*args, pairs=pairs, candidate=candidate)


# --------------------------------------------------------------------------- upper bound


@pytest.mark.parametrize("seed", range(10))
def test_risk_bounds_the_ips_estimate_of_the_exact_metric(seed):
    rng = np.random.default_rng(100 + seed)
    n_features = 3
    _, offsets, click_query, click_doc, propensity = random_problem(rng, n_queries=4, max_docs=5)
    if len(click_doc) == 0:
        pytest.skip("no clicks drawn")
    X = rng.normal(size=(int(offsets[-1]), n_features))
    if seed % 3 == 0:
        X = np.round(X)  # ties between documents
    candidate = rng.random(len(X)) < 0.7
    weights = [rank_weight(s) for s in TRAINABLE] + [precision_at_k(1), precision_at_k(2)]
    for _ in range(20):
        w = rng.normal(size=n_features) * rng.choice([0.1, 1.0, 10.0])
        scores = X @ w
        for mask in (None, candidate):
            ranks = exact_ranks(scores, offsets, click_query, click_doc, mask)
            for weight in weights:
                ips = np.mean(weight.value(ranks) / propensity)
                bound = risk(
                    scores, offsets, Clicks.from_propensity(click_query, click_doc, propensity), weight, candidate=mask
                )
                assert bound >= ips - 1e-12


# --------------------------------------------------------------------------- gradient


def scores_away_from_kinks(rng, offsets, click_query, click_doc):
    pairs = click_pairs(offsets, Clicks(click_query, click_doc))
    while True:
        scores = rng.normal(0.0, 1.5, int(offsets[-1]))
        margin = scores[click_doc[pairs[0]]] - scores[pairs[1]]
        if np.all(np.abs(margin - 1.0) > 1e-3):
            return scores


@pytest.mark.parametrize("spec", ["avgrank", "dcg", "rbp:0.7"])
@pytest.mark.parametrize("seed", range(4))
def test_gradient_matches_central_finite_differences(spec, seed):
    rng = np.random.default_rng(200 + seed)
    _, offsets, click_query, click_doc, propensity = random_problem(rng, n_queries=4, max_docs=6)
    if len(click_doc) == 0:
        pytest.skip("no clicks drawn")
    scores = scores_away_from_kinks(rng, offsets, click_query, click_doc)
    candidate = rng.random(len(scores)) < 0.7 if seed % 2 else None
    args = (offsets, Clicks.from_propensity(click_query, click_doc, propensity), spec)
    value, grad = risk_gradient(scores, *args, candidate=candidate, n=len(click_doc) + seed)
    assert value == pytest.approx(risk(scores, *args, candidate=candidate, n=len(click_doc) + seed))
    h = 1e-5  # smaller than the 1e-3 distance to every kink
    numeric = np.empty_like(scores)
    for d in range(len(scores)):
        step = np.zeros_like(scores)
        step[d] = h
        plus = risk(scores + step, *args, candidate=candidate, n=len(click_doc) + seed)
        minus = risk(scores - step, *args, candidate=candidate, n=len(click_doc) + seed)
        numeric[d] = (plus - minus) / (2 * h)
    assert grad == pytest.approx(numeric, rel=1e-5, abs=1e-7)


def test_gradient_of_a_linear_scorer_is_x_transpose_grad():
    rng = np.random.default_rng(5)
    _, offsets, click_query, click_doc, propensity = random_problem(rng, n_queries=5)
    X = rng.normal(size=(int(offsets[-1]), 3))
    w = rng.normal(size=3)
    args = (offsets, Clicks.from_propensity(click_query, click_doc, propensity), "dcg")
    _, grad = risk_gradient(X @ w, *args)
    h = 1e-6
    numeric = [(risk(X @ (w + h * e), *args) - risk(X @ (w - h * e), *args)) / (2 * h) for e in np.eye(3)]
    assert X.T @ grad == pytest.approx(numeric, rel=1e-4, abs=1e-7)


def test_gradient_refuses_step_weights_but_risk_bounds_them():
    scores, offsets, click_query, click_doc, propensity = hand_problem()
    args = (scores, offsets, Clicks.from_propensity(click_query, click_doc, propensity), precision_at_k(2))
    with pytest.raises(ValueError, match="evaluation only"):
        risk_gradient(*args)
    # bounds 3.5, 10.5, 1.5 -> only the last is within the top 2
    assert risk(*args) == pytest.approx(-0.5 / 0.25 / 3)


# --------------------------------------------------------------------------- invariants


@pytest.mark.parametrize("seed", range(5))
def test_permuting_documents_and_examples_changes_nothing(seed):
    rng = np.random.default_rng(300 + seed)
    scores, offsets, click_query, click_doc, propensity = random_problem(rng, n_queries=5)
    candidate = rng.random(len(scores)) < 0.7
    # new row j holds old document perm[j]; perm only moves documents within their query
    perm = np.concatenate([rng.permutation(np.arange(offsets[q], offsets[q + 1])) for q in range(len(offsets) - 1)])
    new_row = np.empty_like(perm)
    new_row[perm] = np.arange(len(perm))
    order = rng.permutation(len(click_doc))  # and the examples too
    clicks = Clicks.from_propensity(click_query, click_doc, propensity)
    moved = Clicks.from_propensity(click_query[order], new_row[click_doc][order], propensity[order])
    for spec in TRAINABLE:
        for mask in (None, candidate):
            before = risk(scores, offsets, clicks, spec, candidate=mask)
            after = risk(scores[perm], offsets, moved, spec, candidate=None if mask is None else mask[perm])
            assert after == pytest.approx(before, rel=1e-12)
            _, g_before = risk_gradient(scores, offsets, clicks, spec, candidate=mask)
            _, g_after = risk_gradient(
                scores[perm], offsets, moved, spec, candidate=None if mask is None else mask[perm]
            )
            assert g_after == pytest.approx(g_before[perm], rel=1e-12, abs=1e-15)


def test_unit_propensity_average_rank_is_the_mean_bound():
    rng = np.random.default_rng(7)
    scores, offsets, click_query, click_doc, _ = random_problem(rng, n_queries=6)
    ones = np.ones(len(click_doc))
    bound = hinge_rank_bound(scores, offsets, Clicks(click_query, click_doc))
    assert risk(scores, offsets, Clicks.from_propensity(click_query, click_doc, ones), "avgrank") == pytest.approx(
        bound.mean()
    )


def test_minibatches_with_the_full_normaliser_add_up_to_the_full_risk():
    rng = np.random.default_rng(8)
    scores, offsets, click_query, click_doc, propensity = random_problem(rng, n_queries=6)
    n = len(click_doc)
    clicks = Clicks.from_propensity(click_query, click_doc, propensity)
    full_value, full_grad = risk_gradient(scores, offsets, clicks, "dcg")
    total, grad = 0.0, np.zeros_like(scores)
    for batch in (np.arange(0, 3), np.arange(3, 6)):  # whole queries
        lo, hi = offsets[batch[0]], offsets[batch[-1] + 1]
        take = (click_query >= batch[0]) & (click_query <= batch[-1])
        local = Clicks(click_query[take] - batch[0], click_doc[take] - lo, clicks.cost[take])
        value, g = risk_gradient(scores[lo:hi], offsets[batch[0] : batch[-1] + 2] - lo, local, "dcg", n=n)
        total += value
        grad[lo:hi] += g
    assert total == pytest.approx(full_value)
    assert grad == pytest.approx(full_grad)


# --------------------------------------------------------------------------- validation


def test_inputs_are_checked_at_the_boundary():
    scores, offsets, click_query, click_doc, propensity = hand_problem()
    clicks = Clicks.from_propensity(click_query, click_doc, propensity)
    with pytest.raises(ValueError, match="not a row of its query 1"):
        risk(scores, offsets, Clicks(click_query, np.array([0, 2, 1]), clicks.cost), "dcg")
    with pytest.raises(ValueError, match="example 1: propensity"):
        Clicks.from_propensity(click_query, click_doc, np.array([0.5, 0.0, 1.0]))
    with pytest.raises(ValueError, match="one entry per example"):
        Clicks.from_propensity(click_query, click_doc, np.ones(2))
    with pytest.raises(ValueError, match="one entry per example"):
        risk(scores, offsets, Clicks(click_query, click_doc, np.ones(2)), "dcg")
    with pytest.raises(ValueError, match="example 2: its cost c_i must be finite"):
        risk(scores, offsets, Clicks(click_query, click_doc, [1.0, -2.0, np.inf]), "dcg")
    with pytest.raises(ValueError, match="no costs"):
        risk_gradient(scores, offsets, Clicks(click_query, click_doc), "dcg")
    with pytest.raises(ValueError, match="must be a cltr.core.clicks.Clicks"):
        risk(scores, offsets, (click_query, click_doc, clicks.cost), "dcg")
    with pytest.raises(ValueError, match="offsets"):
        risk(scores, np.array([0, 4, 6]), clicks, "dcg")
    with pytest.raises(ValueError, match="outside"):
        risk(scores, offsets, Clicks(np.array([0, 0, 2]), click_doc, clicks.cost), "dcg")
    with pytest.raises(ValueError, match="n must be"):
        risk(scores, offsets, clicks, "dcg", n=0)
    with pytest.raises(ValueError, match="RankWeight"):
        risk(scores, offsets, clicks, lambda r: r)
    empty = Clicks(np.array([], dtype=int), np.array([], dtype=int), np.array([]))
    with pytest.raises(ValueError, match="no examples"):
        risk(scores, offsets, empty, "dcg")
    value, grad = risk_gradient(scores, offsets, empty, "dcg", n=5)
    assert value == 0.0 and grad.tolist() == [0.0] * 7
