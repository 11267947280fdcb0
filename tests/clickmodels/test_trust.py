"""The trust-bias click model against its analytic click probabilities (WWW 2019's TrustPBM)."""

import numpy as np
import pytest

from cltr.clickmodels import get
from cltr.clickmodels.trust import TrustSettings, trust_bias
from cltr.core.clicks import position_propensity


def _setup(n_queries=300, size=8, seed=0):
    rng = np.random.default_rng(seed)
    offsets = np.arange(0, n_queries * size + 1, size)
    rank = np.tile(np.arange(1, size + 1), n_queries)
    relevant = rng.random(n_queries * size) < 0.4
    return offsets, rank, relevant


@pytest.mark.parametrize(
    "values",
    [{}, {"eta": 2.0, "eps_neg": 0.3, "eps_neg_ranks": 3}, {"eps_pos": 1.0, "eps_pos_step": 0.0, "eps_neg": 0.0}],
)
def test_click_rates_per_rank_and_relevance_match_theta_times_eps(values):
    offsets, rank, relevant = _setup()
    settings = TrustSettings.from_dict(values)
    passes = 300
    log = get("trust").simulate(rank, relevant, offsets, settings, passes=passes, rng=np.random.default_rng(5))
    clicked = np.bincount(log.doc, minlength=len(rank))
    for k in range(1, 9):
        theta = (1.0 / k) ** settings.eta
        plus = settings.eps_pos - settings.eps_pos_step * (min(k, settings.eps_pos_ranks) - 1)
        minus = settings.eps_neg / min(k, settings.eps_neg_ranks)
        for rel, eps in ((True, plus), (False, minus)):
            docs = (rank == k) & (relevant == rel)
            impressions = docs.sum() * passes
            expected = theta * eps
            observed = clicked[docs].sum() / impressions
            tolerance = 4 * np.sqrt(expected * (1 - expected) / impressions) + 1e-12
            assert abs(observed - expected) <= tolerance, (k, rel, observed, expected)
    # every click is logged with the examination propensity (1/k)^eta: plain IPS keeps the trust bias
    assert np.allclose(log.propensity, position_propensity(log.rank, settings.eta))
    assert np.array_equal(log.rank, rank[log.doc]) and np.all(np.diff(log.pass_index) >= 0)


def test_the_model_is_registered_with_its_parameters():
    model = get("trust")
    assert model.settings is TrustSettings
    settings = model.parse_settings({"eps_neg": 0.4})
    trust = model.trust(settings, 3)
    assert trust.irrelevant_trust.tolist() == pytest.approx([0.4, 0.2, 0.4 / 3])
    assert trust.examination.tolist() == pytest.approx([1, 0.5, 1 / 3])
    assert trust_bias(settings, 3).relevant_trust.tolist() == pytest.approx([0.98, 0.97, 0.96])


def test_bad_settings_are_refused_naming_what_must_hold():
    with pytest.raises(ValueError, match=r"eps_neg must be a finite number >= 0 and <= 1, found 1.5"):
        TrustSettings.from_dict({"eps_neg": 1.5})
    with pytest.raises(ValueError, match=r"eps\+_k > eps-_k; rank 1"):
        TrustSettings.from_dict({"eps_neg": 0.99})
    with pytest.raises(ValueError, match=r"eps\+_k > eps-_k; rank 11 has .* eps\+ = -0.02, eps- = 0.065"):
        TrustSettings.from_dict({"eps_pos_step": 0.1})  # eps+_11 = 0.98 - 1.0 < eps-_11
