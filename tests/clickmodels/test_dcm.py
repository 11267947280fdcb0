"""The dependent click model against its analytic click probabilities (cascade clicks)."""

import itertools

import numpy as np
import pytest

from cltr.clickmodels import dcm, get
from cltr.clickmodels.dcm import DCMSettings, attraction, continuation_probability, position_propensity
from cltr.core.cascade import cascade_examination


def _pattern_probabilities(gamma, lam) -> dict:
    """Brute force: P(pattern) of every click pattern of one ranking (gamma, lam in rank
    order), summed over the rank after which the user leaves (only right after a click) or
    the end of the list."""
    n = len(gamma)
    found = {}
    for pattern in itertools.product((0, 1), repeat=n):
        total = 0.0
        for stop in range(1, n + 1):  # the user examines ranks 1..stop
            leaves = stop < n
            p = 1.0
            for k in range(n):
                if k >= stop:
                    p *= 0.0 if pattern[k] else 1.0
                elif pattern[k]:
                    p *= gamma[k] * ((1 - lam[k]) if leaves else 1.0) if k == stop - 1 else gamma[k] * lam[k]
                else:
                    p *= 0.0 if (k == stop - 1 and leaves) else 1 - gamma[k]
            total += p
        found[pattern] = total
    return found


def test_brute_force_pattern_probabilities_sum_to_one_and_match_examination():
    gamma, lam = [1.0, 0.1, 1.0, 0.1], [0.5, 0.8, 0.3, 0.9]
    found = _pattern_probabilities(gamma, lam)
    assert sum(found.values()) == pytest.approx(1.0)
    rank = np.arange(1, 5)
    examination = cascade_examination(rank, np.array(gamma), np.array(lam), np.array([0, 4]))
    for k in range(4):
        click_rate = sum(p for pattern, p in found.items() if pattern[k])
        assert click_rate == pytest.approx(examination[k] * gamma[k])


@pytest.mark.parametrize("continuation,decay,eps_neg", [(1.0, 1.0, 0.1), (0.6, 0.5, 0.3), (0.0, 1.0, 0.2)])
def test_session_click_patterns_match_the_analytic_distribution(continuation, decay, eps_neg):
    """Every click pattern of a session, so every dependence of a click on the clicks above."""
    settings = DCMSettings(continuation=continuation, decay=decay, eps_neg=eps_neg)
    # two queries: ranks permuted against row order, relevant documents at several ranks
    rank = np.array([3, 1, 4, 2, 2, 3, 1])
    relevant = np.array([True, True, False, True, False, True, False])
    offsets = np.array([0, 4, 7])
    passes = 40_000
    log = dcm.MODEL.simulate(rank, relevant, offsets, settings, passes=passes, rng=np.random.default_rng(11))
    for q in range(2):
        rows = np.arange(offsets[q], offsets[q + 1])
        by_rank = rows[np.argsort(rank[rows])]
        gamma = attraction(relevant[by_rank], settings)
        lam = continuation_probability(np.arange(1, len(rows) + 1), settings)
        expected = _pattern_probabilities(gamma, lam)
        mine = log.query == q
        code = np.zeros(passes, dtype=np.int64)
        np.add.at(code, log.pass_index[mine], 1 << (log.rank[mine] - 1))
        counts = np.bincount(code, minlength=1 << len(rows))
        for pattern, p in expected.items():
            key = sum(bit << k for k, bit in enumerate(pattern))
            tolerance = 4.5 * np.sqrt(p * (1 - p) / passes) + 1e-12
            assert abs(counts[key] / passes - p) <= tolerance, (q, pattern, counts[key] / passes, p)


def test_click_at_a_rank_depends_on_the_clicks_above():
    """P(click at 3 | clicks at 1 and 2) = lambda_1 lambda_2 gamma_3, P(click at 3 | no click above) = gamma_3."""
    settings = DCMSettings(continuation=0.8, decay=1.0, eps_neg=0.5)
    rank, relevant, offsets = np.arange(1, 4), np.array([True, True, True]), np.array([0, 3])
    passes = 60_000
    log = dcm.MODEL.simulate(rank, relevant, offsets, settings, passes=passes, rng=np.random.default_rng(2))
    clicked = np.zeros((passes, 3), dtype=bool)
    clicked[log.pass_index, log.rank - 1] = True
    # with eps_pos = 1 every examined relevant document is clicked: ranks 1 and 2 always are
    assert clicked[:, 0].all() and clicked[:, 1].mean() == pytest.approx(0.8, abs=0.01)
    above = clicked[:, 0] & clicked[:, 1]
    assert clicked[above, 2].mean() == pytest.approx(0.8 / 2, abs=4 * np.sqrt(0.4 * 0.6 / above.sum()))


def test_logged_propensity_is_the_best_position_based_examination():
    """theta_k = sum_q gamma_qk P(E_qk) / sum_q gamma_qk, by hand on two queries."""
    settings = DCMSettings(continuation=0.5, decay=1.0, eps_pos=1.0, eps_neg=0.0)
    # query 0: relevant, relevant, relevant; query 1: irrelevant, irrelevant, relevant
    rank = np.array([1, 2, 3, 1, 2, 3])
    relevant = np.array([True, True, True, False, False, True])
    offsets = np.array([0, 3, 6])
    # P(E): query 0: 1, 0.5 (lambda_1), 0.5 * 0.25 (lambda_2); query 1: 1, 1, 1
    theta = position_propensity(rank, relevant, offsets, settings)
    np.testing.assert_allclose(theta, [1.0, 0.5, (0.125 + 1.0) / 2, 1.0, 0.5, (0.125 + 1.0) / 2])
    log = dcm.MODEL.simulate(rank, relevant, offsets, settings, passes=50, rng=np.random.default_rng(0))
    np.testing.assert_array_equal(log.propensity, theta[log.doc])
    np.testing.assert_array_equal(log.rank, rank[log.doc])
    assert np.all(np.diff(log.pass_index) >= 0) and log.n_sessions == 100
    assert not np.isin(log.doc, [3, 4]).any()  # eps_neg = 0: irrelevant documents are never clicked


def test_settings_are_validated_and_the_model_is_registered():
    assert get("dcm") is dcm.MODEL and dcm.MODEL.settings is DCMSettings
    assert DCMSettings.from_dict({}) == DCMSettings(continuation=1.0, decay=1.0, eps_pos=1.0, eps_neg=0.1)
    with pytest.raises(ValueError, match=r"continuation must be a finite number >= 0 and <= 1, found 1.5"):
        DCMSettings.from_dict({"continuation": 1.5})
    with pytest.raises(ValueError, match=r"unknown option 'eta'"):
        DCMSettings.from_dict({"eta": 1.0})
    np.testing.assert_allclose(
        continuation_probability(np.array([1, 2, 4]), DCMSettings(continuation=0.8, decay=2)), [0.8, 0.2, 0.05]
    )
