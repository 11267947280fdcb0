"""Tests that kill the survivors of bench/mutation.py on cltr/core/kernels.py."""

import sys

import numpy as np
import pytest

from cltr.core import kernels


def test_without_numba_the_kernels_are_off(monkeypatch):
    # numba not importable (a None entry in sys.modules makes `import numba` raise
    # ImportError): _compiled() records False and enabled() says so, so objectives falls back
    # to numpy. Kills `_KERNELS = False` -> True and `_compiled() is not False` -> `is not True`
    monkeypatch.setattr(kernels, "_KERNELS", None)
    monkeypatch.setitem(sys.modules, "numba", None)
    monkeypatch.delenv("CLTR_NO_NUMBA", raising=False)
    assert kernels._compiled() is False
    assert kernels.enabled() is False


def test_spread_compensates_the_running_sum():
    # one query of three documents in score order, three examples whose first active
    # positions are 0, 1 and 2 with weights 1e16, 1 and -1e16 (none clicked a candidate):
    # document p gets the prefix sum of the weights up to p. A plain float sum loses the 1
    # (1e16 + 1 rounds to 1e16) and gives 0 for the last document; Neumaier's compensation
    # keeps it. Kills the removed or sign-flipped compensation updates, `total + term` ->
    # `-` (exact in exact arithmetic, through the compensation, but not in floats) and
    # `+ error` -> `- error`
    pytest.importorskip("numba")
    order = np.array([0, 1, 2])
    start = np.array([0, 3])
    first = np.array([0, 1, 2])
    own = np.zeros(3, dtype=bool)
    zeros = np.zeros(3, dtype=np.int64)
    out = kernels.spread(np.array([1e16, 1.0, -1e16]), order, start, first, own, zeros, zeros, 3)
    assert out[0] == 1e16 and abs(out[1] - (1e16 + 1)) <= 2.0
    assert out[2] == 1.0
    # the small weight first: its rounding error arises in the other branch (|total| < |term|)
    out = kernels.spread(np.array([1.0, 1e16, -1e16]), order, start, first, own, zeros, zeros, 3)
    assert out[0] == 1.0 and out[2] == 1.0


def hand_pairs():
    """One run of weight 2: positive row 0 (score 0, change 0) against rows 1..5, whose
    (slack, slope) = (score_y + 1, -change_y) are (0.5, 1), (1, 1), (0.5, 0.25), (0, 1), (0, -1):
    breakpoints k = 0.5, 1 and 2, and two pairs on the kink (k = 0, no breakpoint)."""
    scores = np.array([0.0, -0.5, 0.0, -0.5, -1.0, -1.0])
    change = np.array([0.0, -1.0, -1.0, -0.25, -1.0, 1.0])
    negative = np.array([1, 2, 3, 4, 5])
    return scores, change, negative, np.array([0]), np.array([5]), np.array([2.0])


def test_breakpoints_on_the_bracket_ends_fall_on_their_sides():
    # (low, high] = (0.5, 1]: the breakpoint at low belongs below it (in base, jump 2 × 1, and
    # in moment, jump × k = 1), the one at high inside; the kinked pairs (slack 0) nowhere.
    # Kills `size <= low * reach` -> `<` (0.5 moves inside), `size <= high * reach` -> `<`
    # (1 drops out) and `(slack > 0.0) & ...` -> `slack >= 0.0`, `(slack < 0.0) & ...` ->
    # `slack <= 0.0` (a kinked pair counted as a jump at 0 <= low)
    pytest.importorskip("numba")
    breaks, jumps = np.full(5, np.nan), np.full(5, np.nan)
    base, moment, found = kernels.pairs_breaks(*hand_pairs(), 0.5, 1.0, breaks, jumps)
    assert (base, moment, found) == (2.0, 1.0, 1)
    assert (breaks[0], jumps[0]) == (1.0, 2.0)
    base, moment, found = kernels.pairs_breaks(*hand_pairs(), 0.0, 2.0, breaks, jumps)
    assert (base, moment, found) == (0.0, 0.0, 3)
    np.testing.assert_array_equal(np.sort(breaks[:3]), [0.5, 1.0, 2.0])
    np.testing.assert_array_equal(jumps[:3][np.argsort(breaks[:3])], [2.0, 2.0, 0.5])
