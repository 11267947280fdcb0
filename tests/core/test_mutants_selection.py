"""Tests that kill the survivors of bench/mutation.py on cltr/core/selection.py (each names
the mutant it kills); expected values are hand-computed."""

import math

import numpy as np
import pytest

from cltr.core.selection import edges_of_grid, ess_fraction, paired_estimate, parse_grid, varied_queries


def test_ess_fraction_by_hand():
    # kills `... if square > 0 else 0.0` -> `else 1.0`: weights that are all zero carry no
    # information, an effective sample of none
    assert ess_fraction(np.zeros(3)) == 0.0
    assert ess_fraction(np.ones(4)) == 1.0
    assert ess_fraction(np.array([1.0, 0.0, 0.0, 0.0])) == 0.25  # (1)^2 / 1 / 4
    assert ess_fraction(np.array([1.0, -1.0])) == 1.0  # |w| for signed weights


def test_a_single_document_query_does_not_vary_the_query_before_it():
    # kills `filled = np.flatnonzero(sizes > 0)` -> `sizes > 1`: the per-query spreads are
    # segment reductions from each query's start, so leaving the one-document query 1 out
    # of the starts would fold its row into query 0, whose two rows are equal
    # (and `sizes > 0` -> `sizes >= 0`: an empty last query would start past the last row)
    X = np.array([[1.0, 5.0], [1.0, 5.0], [2.0, 5.0], [0.0, 0.0], [0.0, 1.0]])
    offsets = np.array([0, 2, 3, 3, 5, 5])  # queries 2 and 4 are empty
    np.testing.assert_array_equal(varied_queries(X, offsets), [False, False, False, True, False])


def test_paired_estimate_of_weights_summing_to_zero_is_nan():
    # kills `not total > 0` -> `not total >= 0`: signed weights 1 and -1 leave nothing to
    # normalise by; the mutant divides by 0
    out = paired_estimate(np.array([1.0, 0.0]), np.array([0.0, 0.0]), np.array([1.0, -1.0]), np.array([0, 1]))
    assert all(math.isnan(v) for v in out.values())
    # (and `total > 0` -> `total > 1`): weights summing to 1/2 are as good as any
    out = paired_estimate(np.array([1.0, 0.0]), np.array([0.0, 0.0]), np.array([0.25, 0.25]), np.array([0, 1]))
    assert out["model"] == 0.5 and out["difference"] == 0.5
    # and a hand-computed pair: weights 1, 3 in two groups; a = (1, 0), b = (0, 0)
    out = paired_estimate(np.array([1.0, 0.0]), np.array([0.0, 0.0]), np.array([1.0, 3.0]), np.array([0, 1]))
    assert out["model"] == 0.25 and out["logging"] == 0.0 and out["difference"] == 0.25
    # residuals w (a - b - D): 1 * 0.75 and 3 * -0.25, one per group: sqrt(0.5625 * 2) / 4
    assert math.isclose(out["standard_error"], math.sqrt(2 * 0.5625) / 4)


def test_grid_edges_skip_rows_without_a_number_on_the_axis():
    # kills the first `and` -> `or` of the filter of tried values: a row whose TAU is None
    # (the unclipped candidate) or a word is not a value tried on the TAU axis
    table = [
        {"C": 0.1, "tau": None},
        {"C": 1.0, "tau": "none"},
        {"C": 10.0, "tau": 0.1},
        {"C": 10.0, "tau": 0.3},
        {"C": 10.0, "tau": 0.03},
        {"C": 1.0, "tau": True},
    ]
    edges = edges_of_grid(table, {"C": 10.0, "tau": 0.3}, axes=("C", "tau"))
    assert edges == [
        {"axis": "C", "value": 10.0, "side": "high", "grid": [0.1, 1.0, 10.0]},
        {"axis": "tau", "value": 0.3, "side": "high", "grid": [0.03, 0.1, 0.3]},
    ]


def test_a_grid_holding_zero_is_refused():
    # kills `v > 0` -> `v >= 0`: C = 0 (or TAU = 0) is no model
    with pytest.raises(ValueError, match="positive finite"):
        parse_grid("0,1,10")
    assert parse_grid("10, 0.5") == [0.5, 10.0]
