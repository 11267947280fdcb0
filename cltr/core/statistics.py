"""Statistics for comparing runs: paired tests, Holm's correction, bootstrap intervals.

Legend (what the report asks of these numbers):
    a run                 one (fold, repetition) of an experiment; two methods' runs with the
                          same fold and repetition share every seed, so they are *paired*
    difference d_k        metric of method B minus metric of method A in run k
    paired t              scipy.stats.ttest_rel on (A, B): H0 mean(d) = 0, two-sided
    Wilcoxon              scipy.stats.wilcoxon on d: H0 d symmetric about 0, two-sided
                          (exact for small samples without ties); robust to one outlying run
    Holm                  step-down family-wise correction of m p-values (Holm 1979)
    bootstrap interval    percentile interval of the mean over runs resampled with
                          replacement (Efron & Tibshirani 1993, ch. 13), seeded

Pure functions over flat arrays; no printing, no files.
"""

from __future__ import annotations

import numpy as np

__all__ = ["holm", "paired_tests", "bootstrap_interval"]


def holm(pvalues) -> np.ndarray:
    """Holm's step-down adjusted p-values, shape (m,); NaN entries stay NaN and do not count.

    With the m finite p-values sorted ascending, p_(1) <= ... <= p_(m), the adjusted value of
    the j-th is ``max_{i <= j} min(1, (m - i + 1) p_(i))``; rejecting where it is below
    alpha controls the family-wise error rate at alpha without any independence assumption.
    """
    p = np.asarray(pvalues, dtype=float)
    adjusted = np.full(p.shape, np.nan)
    finite = np.flatnonzero(np.isfinite(p))
    m = len(finite)
    if m == 0:
        return adjusted
    order = finite[np.argsort(p[finite], kind="stable")]
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted


def paired_tests(a, b) -> dict:
    """Paired t and Wilcoxon signed-rank tests of B against A over the same runs.

    Parameters
    ----------
    a, b : array_like, shape (n,)
        The two methods' metric in runs 0..n-1 (run k of ``a`` paired with run k of ``b``).

    Returns
    -------
    dict
        ``n``, ``mean_difference`` (mean of b - a), ``wins`` (runs with b > a), ``p_t``
        and ``p_wilcoxon`` (two-sided; NaN when undefined: fewer than two runs, or every
        difference zero).
    """
    from scipy.stats import ttest_rel, wilcoxon

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired tests need two 1-d arrays of one length, found shapes {a.shape} and {b.shape}")
    difference = b - a
    result = {
        "n": len(a),
        "mean_difference": float(difference.mean()) if len(a) else float("nan"),
        "wins": int((difference > 0).sum()),
        "p_t": float("nan"),
        "p_wilcoxon": float("nan"),
    }
    # both tests are undefined without spread in the differences
    if len(a) < 2 or not np.any(difference != 0):
        return result
    if np.ptp(difference) > 0:
        result["p_t"] = float(ttest_rel(b, a).pvalue)
    else:
        # every run differs by the same non-zero amount: the t statistic is infinite
        result["p_t"] = 0.0
    result["p_wilcoxon"] = float(wilcoxon(difference).pvalue)
    return result


def bootstrap_interval(values, *, seed: int, level: float = 0.95, resamples: int = 2000) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (shape (n,)), seeded.

    Resamples the n values with replacement ``resamples`` times and returns the
    ((1 - level)/2, (1 + level)/2) quantiles of the resampled means. One value gives the
    degenerate interval (v, v): there is no spread to resample. With few runs the interval
    is narrow by construction (it cannot reach beyond the extreme values); report n beside it.
    """
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if len(values) == 0:
        return float("nan"), float("nan")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), found {level}")
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, len(values), size=(resamples, len(values)))].mean(axis=1)
    low, high = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)
