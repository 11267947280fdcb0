"""Top-k display, Plackett-Luce rankings and policy-aware propensities (``cltr.core.policy``)."""

import itertools

import numpy as np
import pytest

from cltr.core.policy import displayed, plackett_luce_ranks, policy_propensity


def _rank_marginals(scores, temperature) -> np.ndarray:
    """Brute force: P(rank(d) = r) under Plackett-Luce, by enumerating every permutation,
    shape (n, n) with [d, r - 1]."""
    weight = np.exp(np.asarray(scores) / temperature)
    n = len(weight)
    marginals = np.zeros((n, n))
    for permutation in itertools.permutations(range(n)):
        p, left = 1.0, list(range(n))
        for d in permutation:
            p *= weight[d] / weight[left].sum()
            left.remove(d)
        for position, d in enumerate(permutation):
            marginals[d, position] += p
    return marginals


SCORES = np.array([1.0, 0.0, -1.0, 2.0, 0.5, 0.2, 0.3])
OFFSETS = np.array([0, 4, 7])


def test_displayed_keeps_the_top_k_of_each_query_contiguous():
    rank = np.array([3, 1, 2, 4, 2, 1, 3])
    shown, offsets = displayed(rank, OFFSETS, 2)
    np.testing.assert_array_equal(shown, [1, 2, 4, 5])
    np.testing.assert_array_equal(offsets, [0, 2, 4])
    shown, offsets = displayed(rank, OFFSETS, 10)
    np.testing.assert_array_equal(shown, np.arange(7))
    np.testing.assert_array_equal(offsets, OFFSETS)
    with pytest.raises(ValueError, match="top_k must be at least 1, found 0"):
        displayed(rank, OFFSETS, 0)


@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_plackett_luce_rank_marginals_match_enumeration(temperature):
    samples = 40_000
    ranks = plackett_luce_ranks(SCORES, OFFSETS, temperature=temperature, rng=np.random.default_rng(3), samples=samples)
    assert ranks.shape == (samples, 7)
    for q in range(2):
        rows = slice(OFFSETS[q], OFFSETS[q + 1])
        n = OFFSETS[q + 1] - OFFSETS[q]
        # every sample ranks each query 1..n
        np.testing.assert_array_equal(np.sort(ranks[:, rows], axis=1), np.tile(np.arange(1, n + 1), (samples, 1)))
        expected = _rank_marginals(SCORES[rows], temperature)
        observed = np.stack([(ranks[:, rows] == r).mean(axis=0) for r in range(1, n + 1)], axis=1)
        tolerance = 4.5 * np.sqrt(expected * (1 - expected) / samples) + 1e-12
        assert np.all(np.abs(observed - expected) <= tolerance), (observed, expected)
    with pytest.raises(ValueError, match="the logging temperature must be positive, found 0"):
        plackett_luce_ranks(SCORES, OFFSETS, temperature=0, rng=np.random.default_rng(0))


def test_policy_propensity_matches_the_exact_expectation():
    """rho(d) = sum_r P(rank(d) = r) theta_r over the displayed ranks, by enumeration."""
    examination = np.array([0.0, 1.0, 0.5])  # top-2 display, theta_r = 1/r
    samples = 20_000
    rho = policy_propensity(
        SCORES,
        OFFSETS,
        examination,
        temperature=1.0,
        rng=np.random.default_rng(5),
        samples=samples,
        chunk_docs=7 * 3000,
    )
    for q in range(2):
        rows = slice(OFFSETS[q], OFFSETS[q + 1])
        marginals = _rank_marginals(SCORES[rows], 1.0)
        exact = marginals[:, 0] * 1.0 + marginals[:, 1] * 0.5
        np.testing.assert_allclose(rho[rows], exact, atol=4.5 * np.sqrt(0.25 / samples))
    # a document never displayed in the samples keeps the resolution of one display
    far = policy_propensity(
        np.array([0.0, -60.0]),
        np.array([0, 2]),
        np.array([0.0, 1.0]),
        temperature=1.0,
        rng=np.random.default_rng(0),
        samples=100,
    )
    np.testing.assert_allclose(far, [1.0, 1.0 / 100])
