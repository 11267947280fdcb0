"""Tests that kill the survivors of bench/mutation.py on cltr/core/cascade.py (each names the
mutant it kills); the sessions are deterministic (gamma and lambda 0 or 1)."""

import numpy as np
import pytest

from cltr.core.cascade import cascade_examination, simulate_cascade

RANK = np.array([2, 1, 3, 1, 2])
OFFSETS = np.array([0, 3, 5])


def test_a_session_that_always_clicks_and_goes_on_clicks_every_rank():
    # kills `range(len(starts) - 1)` -> `- 2` (the deepest rank never drawn) and
    # `click & (u >= go_on)` -> `|` (every click would end the session): with gamma = lambda = 1
    # each pass clicks all five documents
    log = simulate_cascade(RANK, np.ones(5), np.ones(5), np.ones(5), OFFSETS, passes=3, rng=np.random.default_rng(0))
    assert len(log.doc) == 15
    np.testing.assert_array_equal(np.bincount(log.doc, minlength=5), [3, 3, 3, 3, 3])


def test_a_session_stops_at_its_first_click_without_continuation():
    # with gamma = 1 and lambda = 0 only rank 1 is ever clicked
    log = simulate_cascade(RANK, np.ones(5), np.zeros(5), np.ones(5), OFFSETS, passes=4, rng=np.random.default_rng(0))
    np.testing.assert_array_equal(np.bincount(log.doc, minlength=5), [0, 4, 0, 4, 0])


def test_the_ranks_must_cover_every_document():
    # kills the removed raise: a rank per document
    with pytest.raises(ValueError, match=r"rank must have one entry per document \(5\), found 4"):
        cascade_examination(RANK[:4], np.ones(4), np.ones(4), OFFSETS)
