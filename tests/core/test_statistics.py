"""Paired statistics (``cltr.core.statistics``) where runs tie: a zero difference is no win."""

import numpy as np
import pytest

from cltr.core.statistics import paired_tests


def test_ties_are_not_wins():
    # differences 0, +0.1, 0, -0.1, +0.2: two wins (b > a), two ties, one loss
    a = np.array([0.5, 0.6, 0.7, 0.8, 0.4])
    b = np.array([0.5, 0.7, 0.7, 0.7, 0.6])
    result = paired_tests(a, b)
    assert result["wins"] == 2 and result["n"] == 5
    assert result["mean_difference"] == pytest.approx(0.04)
    # every run tied: no win, no test
    same = paired_tests(a, a)
    assert same["wins"] == 0 and same["mean_difference"] == 0.0
    assert np.isnan(same["p_t"]) and np.isnan(same["p_wilcoxon"])
    # the mirror image: the wins of a over b are b's losses, ties counted by neither
    assert paired_tests(b, a)["wins"] == 1
