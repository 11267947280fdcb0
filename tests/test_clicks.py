"""The position-based click simulator against its analytic expectation."""

import numpy as np
import pytest

from cltr.clicks import ClickLog, position_based_model, position_propensity, simulate_clicks


def _setup(n_queries=200, size=8, seed=0):
    rng = np.random.default_rng(seed)
    offsets = np.arange(0, n_queries * size + 1, size)
    rank = np.tile(np.arange(1, size + 1), n_queries)
    relevant = rng.random(n_queries * size) < 0.3
    return offsets, rank, relevant


@pytest.mark.parametrize("eta,eps_neg", [(1.0, 0.1), (2.0, 0.0), (0.5, 0.3)])
def test_click_rates_per_rank_match_propensity_times_eps(eta, eps_neg):
    offsets, rank, relevant = _setup()
    probability, propensity = position_based_model(rank, relevant, eta=eta, eps_pos=1.0, eps_neg=eps_neg)
    passes = 400
    log = simulate_clicks(rank, probability, propensity, offsets, passes=passes, rng=np.random.default_rng(5))
    clicked = np.bincount(log.doc, minlength=len(rank))
    for r in range(1, 9):
        for rel, eps in ((True, 1.0), (False, eps_neg)):
            docs = (rank == r) & (relevant == rel)
            impressions = docs.sum() * passes
            expected = (1.0 / r) ** eta * eps
            observed = clicked[docs].sum() / impressions
            tolerance = 4 * np.sqrt(expected * (1 - expected) / impressions) + 1e-12
            assert abs(observed - expected) <= tolerance, (r, rel, observed, expected)


def test_log_fields_are_consistent():
    offsets, rank, relevant = _setup(n_queries=30)
    probability, propensity = position_based_model(rank, relevant, eta=1.0, eta_model=2.0)
    log = simulate_clicks(rank, probability, propensity, offsets, passes=20, rng=np.random.default_rng(1))
    assert np.array_equal(log.rank, rank[log.doc])
    assert np.allclose(log.propensity, position_propensity(log.rank, 2.0))  # the model's eta
    assert np.array_equal(log.query, log.doc // 8)
    assert np.all(np.diff(log.pass_index) >= 0)
    assert log.n_sessions == 30 * 20


def test_same_seed_identical_log_and_chunking_does_not_matter():
    offsets, rank, relevant = _setup(n_queries=50)
    probability, propensity = position_based_model(rank, relevant)
    a = simulate_clicks(rank, probability, propensity, offsets, passes=30, rng=np.random.default_rng(9))
    b = simulate_clicks(rank, probability, propensity, offsets, passes=30, rng=np.random.default_rng(9),
                        chunk_impressions=100)
    for name, value in a.arrays().items():
        assert np.array_equal(value, b.arrays()[name]), name


def test_first_passes_is_the_shorter_simulation():
    offsets, rank, relevant = _setup(n_queries=50)
    probability, propensity = position_based_model(rank, relevant)
    long = simulate_clicks(rank, probability, propensity, offsets, passes=30, rng=np.random.default_rng(9))
    short = simulate_clicks(rank, probability, propensity, offsets, passes=7, rng=np.random.default_rng(9))
    prefix = long.first_passes(7)
    for name, value in short.arrays().items():
        assert np.array_equal(value, prefix.arrays()[name]), name
    with pytest.raises(ValueError, match="between 1 and 30"):
        long.first_passes(31)


def test_round_trip_through_arrays():
    offsets, rank, relevant = _setup(n_queries=5)
    probability, propensity = position_based_model(rank, relevant)
    log = simulate_clicks(rank, probability, propensity, offsets, passes=3, rng=np.random.default_rng(0))
    again = ClickLog.from_arrays(log.arrays())
    for name, value in log.arrays().items():
        assert np.array_equal(value, again.arrays()[name]), name


def test_bad_parameters():
    with pytest.raises(ValueError, match="eps_neg must lie in"):
        position_based_model(np.array([1]), np.array([True]), eps_neg=1.5)
    with pytest.raises(ValueError, match="passes must be at least 1"):
        simulate_clicks(np.array([1]), np.array([0.5]), np.array([1.0]), np.array([0, 1]), passes=0,
                        rng=np.random.default_rng(0))
