"""Tests that kill the survivors of bench/mutation.py on cltr/core/statistics.py (each names
the mutant it kills); expected values are hand-computed."""

import warnings

import pytest

from cltr.core.statistics import bootstrap_interval, paired_tests


def test_a_constant_nonzero_difference_gives_p_t_zero_without_a_warning():
    # kills `np.ptp(difference) > 0` -> `>= 0`: scipy's ttest_rel on differences without
    # spread also returns p = 0, but warns of catastrophic cancellation; the report prints
    # these tests for every pair of methods and must not spray warnings. The differences
    # are exactly 0.5 in binary, so their spread is exactly 0.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = paired_tests([0.5, 1.5, 2.5], [1.0, 2.0, 3.0])
    assert result["p_t"] == 0.0 and result["wins"] == 3 and result["mean_difference"] == 0.5
    # Wilcoxon, exact for n = 3 without ties: all three ranks positive, two-sided 2 / 2^3
    assert result["p_wilcoxon"] == pytest.approx(0.25)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bootstrap_interval_reads_the_quantiles_the_level_names(seed):
    # kills `(1 - level) / 2` -> `(1 - level) / 3`: the resampled mean of the values (0, 1)
    # is 0, 1/2 or 1 with probabilities 1/4, 1/2, 1/4. At level 0.4 the interval's ends are
    # the 0.3 and 0.7 quantiles, both 1/2; the mutant's lower end, the 0.2 quantile, is 0.
    # With 2000 resamples the share of zero means is 0.25 +- 0.0097 (one sd), so each end is
    # 5 sd from the boundary it must not cross (an error probability below 1e-6 per seed).
    assert bootstrap_interval([0.0, 1.0], seed=seed, level=0.4) == (0.5, 0.5)
    # at level 0.9 the ends are the 0.05 and 0.95 quantiles: 0 and 1
    assert bootstrap_interval([0.0, 1.0], seed=seed, level=0.9) == (0.0, 1.0)
