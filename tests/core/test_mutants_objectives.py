"""Tests that kill the survivors of bench/mutation.py on cltr/core/objectives.py (each names
the mutant it kills); expected values are hand-computed."""

import numpy as np
import pytest

from cltr.core.clicks import Clicks
from cltr.core.objectives import check_signed_weights, hinge_rank_bound, risk, risk_gradient


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


@pytest.mark.parametrize("compiled", [False, True], ids=["numpy", "numba"])
def test_a_last_query_without_candidates_bounds_its_examples_at_one(compiled, monkeypatch):
    # kills `np.minimum(mid, len(order) - 1)` -> `len(order) + 1` in the numpy binary search:
    # an example whose query has no candidate document (a full-information SVM's query where
    # every document is relevant) sits at the very end of the sorted order, where its probe
    # must be clamped. Query 0: docs 0, 1 (scores 1, 0), both candidates; query 1: docs 2, 3,
    # neither. Examples 1 and 2 click docs 2 and 3: no pairs, bound 1.
    if compiled:
        pytest.importorskip("numba")
        monkeypatch.delenv("CLTR_NO_NUMBA", raising=False)
    else:
        monkeypatch.setenv("CLTR_NO_NUMBA", "1")
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
