"""Tests that kill the survivors of bench/mutation.py on cltr/core/policy.py (each names the
mutant it kills); expected values are hand-computed."""

import numpy as np
import pytest

from cltr.core.policy import displayed, plackett_luce_ranks, policy_propensity

SCORES = np.array([1.0, 0.0, -1.0, 2.0, 0.5, 0.2, 0.3])
OFFSETS = np.array([0, 4, 7])


def test_a_top_1_display_shows_each_querys_first_document():
    # kills `top_k < 1` -> `top_k <= 1` and -> `top_k < 2`: top_k = 1 is a valid display
    shown, offsets = displayed(np.array([3, 1, 2, 4, 2, 1, 3]), OFFSETS, 1)
    np.testing.assert_array_equal(shown, [1, 5])
    np.testing.assert_array_equal(offsets, [0, 1, 2])


def test_plackett_luce_draws_one_ranking_by_default():
    # kills the default `samples: int = 1` -> 2
    ranks = plackett_luce_ranks(SCORES, OFFSETS, temperature=1.0, rng=np.random.default_rng(0))
    assert ranks.shape == (1, 7)


def test_policy_propensity_takes_one_sample_and_refuses_none():
    # kills `samples < 1` -> `<= 1` and -> `< 2` (one sample is a valid estimate) and the
    # removed raise (zero samples would divide 0 by 0)
    examination = np.array([0.0, 1.0, 0.5])
    rho = policy_propensity(SCORES, OFFSETS, examination, temperature=1.0, rng=np.random.default_rng(0), samples=1)
    # one ranking: within each query one document at rank 1 (theta 1) and one at rank 2
    # (theta 0.5); the rest get the floor, one display at the least examined rank / 1 sample
    for q in range(2):
        np.testing.assert_array_equal(np.sort(rho[OFFSETS[q] : OFFSETS[q + 1]])[-2:], [0.5, 1.0])
    assert np.all(rho >= 0.5)
    with pytest.raises(ValueError, match="samples must be at least 1, found 0"):
        policy_propensity(SCORES, OFFSETS, examination, temperature=1.0, rng=np.random.default_rng(0), samples=0)


def test_policy_propensity_default_resolution_is_one_display_in_1000():
    # kills the default `samples: int = 1000` -> 1001: a document never displayed (score -60
    # against 0, P(first) = e^-60) gets the Monte Carlo resolution min theta / samples
    far = policy_propensity(
        np.array([0.0, -60.0]), np.array([0, 2]), np.array([0.0, 1.0]), temperature=1.0, rng=np.random.default_rng(0)
    )
    np.testing.assert_array_equal(far, [1.0, 1.0 / 1000])


def test_nothing_displayed_gives_propensity_zero():
    # kills `else 0.0` -> `else 1.0`: with no examined rank there is no resolution floor
    rho = policy_propensity(SCORES, OFFSETS, np.zeros(3), temperature=1.0, rng=np.random.default_rng(0), samples=5)
    np.testing.assert_array_equal(rho, np.zeros(7))


def test_the_chunk_size_does_not_change_the_estimate():
    # the docstring's promise behind the equivalent chunk_docs mutants (bench/mutation.toml):
    # the draws are consumed in the same order whatever the chunking
    examination = np.array([0.0, 1.0, 0.5])
    runs = [
        policy_propensity(
            SCORES, OFFSETS, examination, temperature=1.0, rng=np.random.default_rng(1), samples=50, chunk_docs=chunk
        )
        for chunk in (1, 7, 20, 1 << 22)
    ]
    for rho in runs[1:]:
        np.testing.assert_array_equal(rho, runs[0])
