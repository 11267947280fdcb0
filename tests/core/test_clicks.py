"""The click log and the drawing of independent clicks (``simulate_clicks``)."""

import numpy as np
import pytest

from cltr.core.clicks import ClickLog, position_propensity, simulate_clicks


def _setup(n_queries=200, size=8, seed=0, eta=1.0, eps_neg=0.1):
    """Every query shows its ``size`` documents at ranks 1..size; 30% are relevant; the
    position-based model's click probability (eps_pos 1) and propensity of each."""
    rng = np.random.default_rng(seed)
    offsets = np.arange(0, n_queries * size + 1, size)
    rank = np.tile(np.arange(1, size + 1), n_queries)
    relevant = rng.random(n_queries * size) < 0.3
    propensity = position_propensity(rank, eta)
    probability = propensity * np.where(relevant, 1.0, eps_neg)
    return offsets, rank, relevant, probability, propensity


def test_position_propensity_by_hand():
    assert position_propensity(np.array([1, 2, 4]), 1.0).tolist() == [1.0, 0.5, 0.25]
    assert position_propensity(np.array([1, 2, 3]), 2.0) == pytest.approx([1.0, 0.25, 1 / 9])
    assert position_propensity(np.array([1, 5]), 0.0).tolist() == [1.0, 1.0]


def test_click_rates_match_the_click_probabilities():
    offsets, rank, _, probability, propensity = _setup(n_queries=100)
    passes = 300
    log = simulate_clicks(rank, probability, propensity, offsets, passes=passes, rng=np.random.default_rng(5))
    clicked = np.bincount(log.doc, minlength=len(rank))
    for value in np.unique(probability):
        docs = probability == value
        impressions = docs.sum() * passes
        tolerance = 4 * np.sqrt(value * (1 - value) / impressions) + 1e-12
        assert abs(clicked[docs].sum() / impressions - value) <= tolerance, value


def test_log_fields_are_consistent():
    offsets, rank, _, probability, propensity = _setup(n_queries=30)
    log = simulate_clicks(rank, probability, 0.5 * propensity, offsets, passes=20, rng=np.random.default_rng(1))
    assert np.array_equal(log.rank, rank[log.doc])
    assert np.allclose(log.propensity, 0.5 * propensity[log.doc])  # what was handed in, per clicked doc
    assert np.array_equal(log.query, log.doc // 8)
    assert np.all(np.diff(log.pass_index) >= 0)
    assert log.n_sessions == 30 * 20 and log.n_passes == 20 and log.n_queries == 30


def test_same_seed_identical_log_and_chunking_does_not_matter():
    offsets, rank, _, probability, propensity = _setup(n_queries=50)
    a = simulate_clicks(rank, probability, propensity, offsets, passes=30, rng=np.random.default_rng(9))
    b = simulate_clicks(
        rank, probability, propensity, offsets, passes=30, rng=np.random.default_rng(9), chunk_impressions=100
    )
    for name, value in a.arrays().items():
        assert np.array_equal(value, b.arrays()[name]), name


def test_first_passes_is_the_shorter_simulation():
    offsets, rank, _, probability, propensity = _setup(n_queries=50)
    long = simulate_clicks(rank, probability, propensity, offsets, passes=30, rng=np.random.default_rng(9))
    short = simulate_clicks(rank, probability, propensity, offsets, passes=7, rng=np.random.default_rng(9))
    prefix = long.first_passes(7)
    for name, value in short.arrays().items():
        assert np.array_equal(value, prefix.arrays()[name]), name
    with pytest.raises(ValueError, match="between 1 and 30"):
        long.first_passes(31)


def test_round_trip_through_arrays():
    offsets, rank, _, probability, propensity = _setup(n_queries=5)
    log = simulate_clicks(rank, probability, propensity, offsets, passes=3, rng=np.random.default_rng(0))
    again = ClickLog.from_arrays(log.arrays())
    for name, value in log.arrays().items():
        assert np.array_equal(value, again.arrays()[name]), name


def test_with_propensity_keeps_the_clicks():
    offsets, rank, _, probability, propensity = _setup(n_queries=20)
    log = simulate_clicks(rank, probability, propensity, offsets, passes=5, rng=np.random.default_rng(2))
    told = log.with_propensity(position_propensity(log.rank, 2.0))
    assert np.array_equal(told.doc, log.doc) and np.array_equal(told.pass_index, log.pass_index)
    assert np.allclose(told.propensity, 1.0 / log.rank.astype(float) ** 2)


def test_bad_parameters():
    with pytest.raises(ValueError, match="passes must be at least 1"):
        simulate_clicks(
            np.array([1]), np.array([0.5]), np.array([1.0]), np.array([0, 1]), passes=0, rng=np.random.default_rng(0)
        )
