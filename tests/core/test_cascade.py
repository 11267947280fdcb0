"""Cascade examination and cascade propensities (``cltr.core.cascade``)."""

import numpy as np
import pytest

from cltr.clickmodels import dcm
from cltr.clickmodels.dcm import DCMSettings, continuation_probability
from cltr.core.cascade import cascade_examination, cascade_propensity, simulate_cascade


def test_examination_by_hand():
    # one query shown as rows in rank order 2, 1, 3: gamma 1, 0.5, 1 at ranks 1, 2, 3
    rank = np.array([2, 1, 3])
    attraction = np.array([0.5, 1.0, 1.0])
    continuation = np.array([0.4, 0.8, 0.1])  # of each row's rank
    examination = cascade_examination(rank, attraction, continuation, np.array([0, 3]))
    # rank 1 always; rank 2 after rank 1's click goes on (0.8); rank 3 also after rank 2's
    # click (0.5) goes on (0.4) or rank 2 is not clicked (0.5)
    np.testing.assert_allclose(examination, [0.8, 1.0, 0.8 * (0.5 * 0.4 + 0.5)])
    with pytest.raises(ValueError, match="ranks must lie in 1..n_q"):
        cascade_examination(np.array([1, 4, 2]), attraction, continuation, np.array([0, 3]))


def test_cascade_propensity_by_hand_and_in_any_order():
    # session 0: clicks at ranks 1, 3, 4; session 7: clicks at ranks 2, 5; session 3: one click
    session = np.array([0, 0, 0, 7, 7, 3])
    rank = np.array([1, 3, 4, 2, 5, 6])
    lam = np.array([0.9, 0.5, 0.2, 0.6, 0.3, 0.1])
    expected = [1.0, 0.9, 0.9 * 0.5, 1.0, 0.6, 1.0]
    np.testing.assert_allclose(cascade_propensity(session, rank, lam), expected)
    shuffle = np.random.default_rng(0).permutation(6)
    np.testing.assert_allclose(
        cascade_propensity(session[shuffle], rank[shuffle], lam[shuffle]), np.asarray(expected)[shuffle]
    )
    assert cascade_propensity(np.zeros(0, int), np.zeros(0, int), np.zeros(0)).shape == (0,)


def test_simulated_clicks_follow_the_cascade():
    """No click below a session's stop: with lambda = 0 a session has at most one click."""
    rank = np.array([1, 2, 3, 4, 2, 1])
    offsets = np.array([0, 4, 6])
    log = simulate_cascade(
        rank,
        np.full(6, 0.7),
        np.zeros(6),
        np.ones(6),
        offsets,
        passes=500,
        rng=np.random.default_rng(1),
        chunk_impressions=600,
    )
    assert np.bincount(log.session).max() == 1
    assert np.all(np.diff(log.pass_index) >= 0) and log.n_passes == 500
    chunks = []
    simulate_cascade(
        rank,
        np.full(6, 0.7),
        np.zeros(6),
        np.ones(6),
        offsets,
        passes=500,
        rng=np.random.default_rng(1),
        chunk_impressions=600,
        progress=chunks.append,
    )
    assert chunks == [100, 200, 300, 400, 500]


def test_cascade_ips_is_unbiased_where_position_based_ips_is_not():
    """Estimates of sum over relevant documents of a fixed gain g(d), averaged over one long
    log (many sessions): the cascade propensities hit the truth, the best position-based
    propensity (what the DCM logs) misses it by many standard errors."""
    settings = DCMSettings(continuation=0.5, decay=1.0, eps_pos=1.0, eps_neg=0.0)
    # a query full of relevant documents (users stop early) and one with them at the bottom
    rank = np.array([1, 2, 3, 4, 1, 2, 3, 4])
    relevant = np.array([True, True, True, True, False, False, True, True])
    offsets = np.array([0, 4, 8])
    # an evaluated ranking that reverses the first query and keeps the second: per rank, the
    # position-based propensity is right on average over queries but wrong for each query
    gain = 1.0 / np.log2(1.0 + np.array([4, 3, 2, 1, 1, 2, 3, 4]))
    truth = gain[relevant].sum() / 2  # per session
    passes = 20_000
    log = dcm.MODEL.simulate(rank, relevant, offsets, settings, passes=passes, rng=np.random.default_rng(4))
    cascade = cascade_propensity(log.session, log.rank, continuation_probability(log.rank, settings))
    for propensity, unbiased in ((cascade, True), (log.propensity, False)):
        per_session = np.bincount(log.session, weights=gain[log.doc] / propensity, minlength=log.n_sessions)
        estimate = per_session.mean()
        error = per_session.std() / np.sqrt(log.n_sessions)
        if unbiased:
            assert abs(estimate - truth) < 4 * error, (estimate, truth, error)
        else:
            assert abs(estimate - truth) > 10 * error, (estimate, truth, error)
