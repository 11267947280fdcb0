"""The position-based click model against its analytic expectation (paper Sec. 5.1)."""

import numpy as np
import pytest

from cltr.clickmodels import pbm
from cltr.clickmodels.pbm import PBMSettings, position_based_model
from cltr.core.clicks import position_propensity, simulate_clicks


def _setup(n_queries=200, size=8, seed=0):
    rng = np.random.default_rng(seed)
    offsets = np.arange(0, n_queries * size + 1, size)
    rank = np.tile(np.arange(1, size + 1), n_queries)
    relevant = rng.random(n_queries * size) < 0.3
    return offsets, rank, relevant


@pytest.mark.parametrize("eta,eps_neg", [(1.0, 0.1), (2.0, 0.0), (0.5, 0.3)])
def test_click_rates_per_rank_match_propensity_times_eps(eta, eps_neg):
    offsets, rank, relevant = _setup()
    settings = PBMSettings.from_dict({"eta": eta, "eps_pos": 1.0, "eps_neg": eps_neg})
    passes = 400
    log = pbm.MODEL.simulate(rank, relevant, offsets, settings, passes=passes, rng=np.random.default_rng(5))
    clicked = np.bincount(log.doc, minlength=len(rank))
    for r in range(1, 9):
        for rel, eps in ((True, 1.0), (False, eps_neg)):
            docs = (rank == r) & (relevant == rel)
            impressions = docs.sum() * passes
            expected = (1.0 / r) ** eta * eps
            observed = clicked[docs].sum() / impressions
            tolerance = 4 * np.sqrt(expected * (1 - expected) / impressions) + 1e-12
            assert abs(observed - expected) <= tolerance, (r, rel, observed, expected)


def test_probabilities_and_propensities_by_hand():
    rank = np.array([1, 2, 4, 1, 2])
    relevant = np.array([True, False, True, False, True])
    probability, propensity = position_based_model(rank, relevant, PBMSettings(eta=1.0, eps_pos=0.8, eps_neg=0.1))
    assert probability == pytest.approx([0.8, 0.05, 0.2, 0.1, 0.4])
    assert propensity == pytest.approx([1.0, 0.5, 0.25, 1.0, 0.5])
    # misspecification: clicks drawn with eta, logged with eta_model
    probability, propensity = position_based_model(rank, relevant, PBMSettings(eta=1.0, eta_model=2.0))
    assert probability == pytest.approx([1.0, 0.05, 0.25, 0.1, 0.5])
    assert propensity == pytest.approx([1.0, 0.25, 1 / 16, 1.0, 0.25])


def test_log_fields_are_consistent_and_logged_with_the_model_eta():
    offsets, rank, relevant = _setup(n_queries=30)
    log = pbm.MODEL.simulate(
        rank, relevant, offsets, PBMSettings(eta=1.0, eta_model=2.0), passes=20, rng=np.random.default_rng(1)
    )
    assert np.array_equal(log.rank, rank[log.doc])
    assert np.allclose(log.propensity, position_propensity(log.rank, 2.0))  # the model's eta
    assert np.array_equal(log.query, log.doc // 8)
    assert np.all(np.diff(log.pass_index) >= 0)
    assert log.n_sessions == 30 * 20


def test_the_model_draws_as_simulate_clicks_with_its_probabilities():
    offsets, rank, relevant = _setup(n_queries=40)
    settings = PBMSettings(eta=1.5, eps_neg=0.2)
    log = pbm.MODEL.simulate(rank, relevant, offsets, settings, passes=10, rng=np.random.default_rng(3))
    probability, propensity = position_based_model(rank, relevant, settings)
    again = simulate_clicks(rank, probability, propensity, offsets, passes=10, rng=np.random.default_rng(3))
    for name, value in log.arrays().items():
        assert np.array_equal(value, again.arrays()[name]), name


def test_bad_settings_are_refused_naming_what_must_hold():
    with pytest.raises(ValueError, match=r"eps_neg must be a finite number >= 0 and <= 1, found 1.5"):
        PBMSettings.from_dict({"eps_neg": 1.5})
    with pytest.raises(ValueError, match=r"eta must be a finite number >= 0.*found -1"):
        PBMSettings.from_dict({"eta": -1})
    with pytest.raises(ValueError, match=r"eta_model must be .*\(or none\), found nan"):
        PBMSettings.from_dict({"eta_model": float("nan")})
    with pytest.raises(
        ValueError,
        match=r"unknown option 'eps_nge' \(did you mean 'eps_neg'\?\); "
        r"valid: eta, eps_pos, eps_neg, eta_model",
    ):
        PBMSettings.from_dict({"eps_nge": 0.1})
    assert PBMSettings.from_dict({}) == PBMSettings() == PBMSettings(eta=1.0, eps_pos=1.0, eps_neg=0.1)
