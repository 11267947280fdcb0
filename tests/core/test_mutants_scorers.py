"""Tests that kill the survivors of bench/mutation.py on cltr/core/scorers.py."""

import dataclasses

import numpy as np
import pytest

from cltr.core.scorers import LinearScorer


def test_a_linear_scorer_is_immutable():
    # kills `@dataclass(frozen=True)` -> `frozen=False`: a stored model's scorer is a value
    # (models are cached and shared by key), so its weights cannot be rebound
    scorer = LinearScorer(w=np.array([1.0, 2.0]))
    with pytest.raises(dataclasses.FrozenInstanceError):
        scorer.w = np.zeros(2)
    np.testing.assert_array_equal(scorer.scores(np.array([[1.0, 1.0], [0.5, 0.0]])), [3.0, 0.5])
