"""Tests that kill the survivors of bench/mutation.py on cltr/core/objectives.py (each names
the mutant it kills); expected values are hand-computed."""

import dataclasses

import numpy as np
import pytest

from cltr.core.clicks import Clicks
from cltr.core.objectives import (
    RankWeight,
    _hinges,
    average_rank,
    check_example_rows,
    check_signed_weights,
    dcg,
    hinge_rank_bound,
    precision_at_k,
    rank_weight,
    rbp,
    risk,
    risk_gradient,
)


def hand_problem():
    """One query of three documents, scores 2, 1, 0; one click on the middle one, cost 1."""
    return np.array([2.0, 1.0, 0.0]), np.array([0, 3]), Clicks(np.array([0]), np.array([1]), np.ones(1))


def test_pairs_of_unequal_lengths_are_refused():
    # kills the removed raise of _pairs' shape check: without it the unequal arrays reach
    # numpy's indexing, which fails with a shape error that names neither argument
    scores, offsets, clicks = hand_problem()
    with pytest.raises(ValueError, match="1-D of one length"):
        risk(scores, offsets, clicks, "avgrank", pairs=(np.array([0, 0]), np.array([0])))
    with pytest.raises(ValueError, match="1-D of one length"):
        risk(scores, offsets, clicks, "avgrank", pairs=(np.array([[0, 0]]), np.array([[0, 2]])))


def test_costs_of_the_wrong_length_are_refused():
    # kills the removed raise of the cost shape check: a scalar cost would otherwise
    # broadcast over every example silently
    scores, offsets, clicks = hand_problem()
    with pytest.raises(ValueError, match="clicks.cost must have one entry per example"):
        risk(scores, offsets, Clicks(clicks.query, clicks.doc, np.array(2.0)), "avgrank")
    with pytest.raises(ValueError, match="clicks.cost must have one entry per example"):
        risk_gradient(scores, offsets, Clicks(clicks.query, clicks.doc, np.ones(2)), "avgrank")
    # and the right length is used as c_i: bound 1 + max(0, 1 - (1 - 2)) + max(0, 1 - (1 - 0)) = 3
    assert risk(scores, offsets, Clicks(clicks.query, clicks.doc, np.array([2.0])), "avgrank") == 6.0


def test_pairs_that_are_not_a_pair_of_arrays_are_refused():
    # kills the removed raise after the failed unpacking of `pairs` (the mutant goes on to an
    # UnboundLocalError)
    scores, offsets, clicks = hand_problem()
    for pairs in (np.array([0, 0, 2]), (np.array([0]),) * 3):
        with pytest.raises(ValueError, match="pairs must be a tuple"):
            risk(scores, offsets, clicks, "avgrank", pairs=pairs)


def test_only_negative_weights_are_refused_under_average_rank():
    # kills `cost < 0` -> `cost < 1` in check_signed_weights: positive weights below 1 (a
    # propensity's inverse is >= 1, a correction's weight need not be) are fine
    check_signed_weights(np.array([0.5, 0.0, 3.0]), "avgrank")
    check_signed_weights(np.array([-0.5]), "dcg")
    with pytest.raises(ValueError, match="bounded rank weight"):
        check_signed_weights(np.array([0.5, -0.5]), "avgrank")


def test_a_last_query_without_candidates_bounds_its_examples_at_one(compiled):
    # kills `np.minimum(mid, len(order) - 1)` -> `len(order) + 1` in the numpy binary search:
    # an example whose query has no candidate document (a full-information SVM's query where
    # every document is relevant) sits at the very end of the sorted order, where its probe
    # must be clamped. Query 0: docs 0, 1 (scores 1, 0), both candidates; query 1: docs 2, 3,
    # neither. Examples 1 and 2 click docs 2 and 3: no pairs, bound 1.
    scores = np.array([1.0, 0.0, 5.0, -5.0])
    offsets = np.array([0, 2, 4])
    candidate = np.array([True, True, False, False])
    clicks = Clicks(np.array([0, 1, 1]), np.array([1, 2, 3]), np.ones(3))
    # example 0 clicks doc 1 (score 0): hinge against doc 0 is 1 - (0 - 1) = 2, bound 3
    np.testing.assert_array_equal(hinge_rank_bound(scores, offsets, clicks, candidate=candidate), [3.0, 1.0, 1.0])
    value, grad = risk_gradient(scores, offsets, clicks, "avgrank", candidate=candidate)
    # R = (3 + 1 + 1) / 3; dR/df(doc 0) = 1/3 (one active pair), dR/df(doc 1) = -1/3
    assert value == pytest.approx(5 / 3)
    np.testing.assert_allclose(grad, [1 / 3, -1 / 3, 0.0, 0.0], atol=1e-15)


def test_a_rank_weight_is_frozen_hashable_and_equal_by_name_only():
    # kills `@dataclass(frozen=True)` -> `frozen=False` (a weight is a value: assignment
    # raises and it hashes, as a dict key of a metric table needs) and `field(compare=False,
    # repr=False)` -> `compare=True` / `repr=True` on `value` and `derivative` (the docstring:
    # two weights are equal when their names are; the repr names the weight, not its functions)
    weight = dcg()
    with pytest.raises(dataclasses.FrozenInstanceError):
        weight.name = "avgrank"
    assert {weight: 1}[dcg()] == 1
    assert RankWeight("dcg", np.negative, np.positive, concave=True) == weight
    assert RankWeight("x", np.negative, np.positive, concave=True) == RankWeight("x", np.sin, np.cos, concave=True)
    assert rbp(0.8) == rank_weight("rbp:0.8")  # each call makes new partials of the same functions
    assert "function" not in repr(weight) and "partial" not in repr(rbp(0.8))


def test_the_identity_weight_returns_a_new_float_array():
    # average rank's lambda(r) = r as float64, never the caller's array (the mutant
    # `* 1.0` -> `/ 1.0` is equivalent and listed in bench/mutation.toml; this pins the contract)
    r = np.array([1, 2, 5])
    value = average_rank().value(r)
    assert value.dtype == np.float64
    np.testing.assert_array_equal(value, [1.0, 2.0, 5.0])


def test_precision_at_k_is_neither_concave_nor_differentiable():
    # kills `concave=False` -> `concave=True` in precision_at_k (its docstring: concave=False;
    # a step weight must not pass CCP's concavity check)
    weight = precision_at_k(3)
    assert weight.concave is False and weight.differentiable is False
    np.testing.assert_array_equal(weight.value(np.array([1.0, 3.0, 3.5])), [-1 / 3, -1 / 3, 0.0])


def test_a_bare_rbp_spec_gets_the_persistence_hint_and_no_other_spec_does():
    # kills `key == "rbp"` -> `!=`: the hint on a missing persistence is for "rbp" alone
    with pytest.raises(ValueError, match=r"RBP needs its persistence, e\.g\. 'rbp:0\.8'"):
        rank_weight(" RBP ")
    with pytest.raises(ValueError, match="unknown rank weight 'ndcg'; accepted") as error:
        rank_weight("ndcg")
    assert "persistence" not in str(error.value)


def test_scores_that_are_not_one_dimensional_are_refused():
    # kills the removed raise of the scores check: a column of scores (n, 1) passes the
    # offsets check (len is n) and would reach the hinges with the wrong shape
    scores, offsets, clicks = hand_problem()
    for call in (hinge_rank_bound, lambda *a: risk(*a, "avgrank"), lambda *a: risk_gradient(*a, "avgrank")):
        with pytest.raises(ValueError, match=r"scores must be 1-D \(one per document\), got shape \(3, 1\)"):
            call(scores[:, None], offsets, clicks)


def test_a_split_without_queries_is_valid_and_empty_offsets_are_refused():
    # kills `len(offsets) < 1` -> `<= 1`: offsets [0] is a split of no query and no document,
    # whose bound is empty and whose risk over n = 1 is 0 (no example); offsets [] is no split
    no_clicks = Clicks(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0))
    assert hinge_rank_bound(np.zeros(0), np.array([0]), no_clicks).shape == (0,)
    assert risk(np.zeros(0), np.array([0]), no_clicks, "avgrank", n=1) == 0.0
    with pytest.raises(ValueError, match="offsets must run from 0 to the number of documents"):
        hinge_rank_bound(np.zeros(0), np.zeros(0, dtype=np.int64), no_clicks)


def test_examples_of_unequal_query_and_doc_lengths_are_refused():
    # kills the removed raise of the clicks shape check: without it two queries and one doc
    # pass the row check (which reads them pairwise) and fail later in numpy's indexing
    scores, offsets, _ = hand_problem()
    clicks = Clicks(np.array([0, 0]), np.array([1]), np.ones(2))
    with pytest.raises(ValueError, match=r"clicks.query and clicks.doc must be 1-D of one length, got shapes \(2,\)"):
        hinge_rank_bound(scores, offsets, clicks)
    clicks = Clicks(np.array([[0]]), np.array([[1]]), np.ones(1))
    with pytest.raises(ValueError, match=r"must be 1-D of one length, got shapes \(1, 1\) and \(1, 1\)"):
        hinge_rank_bound(scores, offsets, clicks)


def test_check_example_rows_names_the_first_bad_example():
    # kills the removed `_check_rows(...)` call of check_example_rows (it would accept anything)
    offsets = np.array([0, 3, 5])
    check_example_rows(offsets, Clicks(np.array([0, 1]), np.array([2, 3])))
    with pytest.raises(ValueError, match="example 1: query 2 is outside the 2 queries of offsets"):
        check_example_rows(offsets, Clicks(np.array([0, 2]), np.array([0, 0])))
    with pytest.raises(ValueError, match="example 0: clicked document 3 is not a row"):
        check_example_rows(offsets, Clicks(np.array([0, 1]), np.array([3, 3])))


def test_more_queries_than_a_16_bit_key_holds_are_sorted_by_query(compiled):
    # the numpy sort groups documents by query with 16-bit keys below 2**15 queries: with 40,000
    # queries (of 2 documents, clicked on the first) ids past 32,767 need 64 bits, or they wrap
    # negative and those queries' documents sort first. Each bound by hand: scores (0, s) give
    # 1 + max(0, 1 + s). Kills `2**15` -> `3**15` and -> `2**16` (int16 keys for 40,000 queries)
    n = 40_000
    other = np.random.default_rng(3).normal(0.0, 1.0, n)
    scores = np.column_stack([np.zeros(n), other]).ravel()
    offsets = np.arange(0, 2 * n + 1, 2)
    clicks = Clicks(np.arange(n), offsets[:-1])
    np.testing.assert_allclose(
        hinge_rank_bound(scores, offsets, clicks), 1.0 + np.maximum(0.0, 1.0 + other), rtol=1e-12
    )


def test_the_hinges_of_a_call_are_frozen():
    # kills `@dataclass(frozen=True)` -> False on _Hinges: the bound, counts and spread of one
    # call are a value that the risk and its gradient read, never rebind
    scores, offsets, clicks = hand_problem()
    hinges = _hinges(scores, offsets, clicks.query, clicks.doc, None, None)
    np.testing.assert_array_equal(hinges.bound, [3.0])  # 1 + max(0, 1 - (1 - 2)) + max(0, 1 - (1 - 0))
    with pytest.raises(dataclasses.FrozenInstanceError):
        hinges.bound = np.zeros(1)


@pytest.mark.parametrize("signed", [False, True], ids=["costs >= 0", "signed costs"])
def test_the_gradient_and_curvature_are_the_docstrings_sums_over_active_pairs(signed):
    # the docstring's formulas by a double loop: with c_i = λ'(bound_i) c'_i / n and A_i the
    # documents y != y_i of margin 1 - (f(y_i) - f(y)) > 0, dR/df(y) = Σ_{i: y in A_i} c_i,
    # dR/df(y_i) -= c_i |A_i|, and the curvature h(y) = Σ_{i: y in A_i} |c_i| + Σ_{i: y = y_i} |c_i| |A_i|.
    # Kills `grad - clicked, grad + clicked` -> `+` / `-` (costs >= 0), and on the signed path
    # `spread(size) + bincount` -> `-`, `size * n_active` -> `/` and `grad - clicked` -> `+`
    rng = np.random.default_rng(8)
    offsets = np.array([0, 4, 9])
    scores = rng.normal(0.0, 0.7, 9)
    query = np.array([0, 0, 1, 1, 1, 0])
    doc = np.array([1, 3, 4, 6, 4, 1])
    cost = rng.uniform(0.5, 2.0, 6) * (np.array([1, -1, 1, 1, -1, 1]) if signed else 1.0)
    clicks = Clicks(query, doc, cost)
    weight = dcg()
    c = np.zeros(6)
    grad, curvature = np.zeros(9), np.zeros(9)
    value = 0.0
    for i in range(6):
        others = [y for y in range(offsets[query[i]], offsets[query[i] + 1]) if y != doc[i]]
        margins = {y: 1.0 - (scores[doc[i]] - scores[y]) for y in others}
        bound = 1.0 + sum(max(0.0, m) for m in margins.values())
        value += float(weight.value(np.array([bound]))[0]) * cost[i] / 6
        c[i] = float(weight.derivative(np.array([bound]))[0]) * cost[i] / 6
        active = [y for y, m in margins.items() if m > 0.0]
        for y in active:
            grad[y] += c[i]
            curvature[y] += abs(c[i])
        grad[doc[i]] -= c[i] * len(active)
        curvature[doc[i]] += abs(c[i]) * len(active)
    assert (c < 0).any() == signed and np.count_nonzero(curvature) > 4
    got_value, got_grad, got_curvature = risk_gradient(scores, offsets, clicks, weight, with_curvature=True)
    assert got_value == pytest.approx(value, rel=1e-12)
    np.testing.assert_allclose(got_grad, grad, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(got_curvature, curvature, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(risk_gradient(scores, offsets, clicks, weight)[1], grad, rtol=1e-12, atol=1e-15)
