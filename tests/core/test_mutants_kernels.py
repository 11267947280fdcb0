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
