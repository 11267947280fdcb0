"""Paired statistics, Holm's correction and bootstrap intervals (``cltr.core.statistics``): ties,
edge cases and the errors at the boundary that the statistics tests of the report leave out."""

import numpy as np
import pytest

from cltr.core.statistics import bootstrap_interval, holm, paired_tests


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


def test_holm_with_one_p_value_and_the_cap_at_one():
    # one finite p-value is its own adjusted value; m p = 1.2 is capped at 1
    assert holm([0.03]).tolist() == [0.03]
    assert np.allclose(holm([np.nan, 0.03]), [np.nan, 0.03], equal_nan=True)
    assert holm([0.6, 0.9]).tolist() == [1.0, 1.0]


def test_paired_tests_need_two_runs_and_say_what_they_were_given():
    two = paired_tests([0.5, 0.6], [0.52, 0.65])  # two runs with spread: both tests defined
    assert np.isfinite(two["p_t"]) and np.isfinite(two["p_wilcoxon"])
    # every run better by the same amount: the t statistic is infinite, its p-value 0
    same_gain = paired_tests([0.5, 0.6, 0.7], [0.75, 0.85, 0.95])
    assert same_gain["p_t"] == 0.0 and same_gain["wins"] == 3
    with pytest.raises(ValueError, match=r"two 1-d arrays of one length, found shapes \(3,\) and \(2,\)"):
        paired_tests([0.1, 0.2, 0.3], [0.1, 0.2])
    with pytest.raises(ValueError, match=r"found shapes \(1, 2\) and \(1, 2\)"):
        paired_tests([[0.1, 0.2]], [[0.1, 0.3]])


def test_bootstrap_interval_is_central_and_refuses_a_level_outside_0_1():
    # values symmetric about their mean: the resampled means are too, so the percentile
    # interval sits about the mean (to within resampling noise, far below 0.1)
    values = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    low, high = bootstrap_interval(values, seed=0, level=0.9)
    assert abs((values.mean() - low) - (high - values.mean())) < 0.1 * (high - low)
    for level in (0.0, 1.0, 1.5, -0.1):
        with pytest.raises(ValueError, match=r"level must lie in \(0, 1\)"):
            bootstrap_interval(values, seed=0, level=level)
