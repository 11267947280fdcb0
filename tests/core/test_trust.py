"""Trust bias (cltr.core.trust): the corrections' weights by hand and by brute force, the
estimators' bias on a tiny example over many simulated logs, and the EM against the truth."""

import numpy as np
import pytest

from cltr.clickmodels.trust import TrustSettings, trust_bias
from cltr.core.clicks import Clicks, position_propensity
from cltr.core.objectives import check_signed_weights, risk, risk_gradient
from cltr.core.ranking import dcg_gain
from cltr.core.trust import (
    TrustBias,
    affine_document_weights,
    bayes_ips_weight,
    trust_em,
    trust_from_clicks,
    weighted_estimate,
)

# The tiny example: one query, four documents shown at ranks 1..4, relevance [0, 1, 0, 1]
# (the logging ranker puts an irrelevant document on top, where users trust it), and a
# ranking f to evaluate that puts them at ranks [4, 1, 3, 2].
LOGGED_RANK = np.array([1, 2, 3, 4])
RELEVANT = np.array([False, True, False, True])
TARGET_RANK = np.array([4, 1, 3, 2])
TRUST = trust_bias(TrustSettings(), 4)
TRUST_DEEP = trust_bias(TrustSettings(), 10)


def test_default_parameters_by_hand():
    assert TRUST.relevant_trust.tolist() == pytest.approx([0.98, 0.97, 0.96, 0.95])
    assert TRUST.irrelevant_trust.tolist() == pytest.approx([0.65, 0.325, 0.65 / 3, 0.1625])
    assert TRUST.examination.tolist() == pytest.approx([1, 1 / 2, 1 / 3, 1 / 4])
    deep = trust_bias(TrustSettings(), 30)
    assert deep.relevant_trust[19:].tolist() == pytest.approx([0.79] * 11)  # 1 - (min(k, 20) + 1) / 100
    assert deep.irrelevant_trust[9:].tolist() == pytest.approx([0.065] * 21)  # 0.65 / min(k, 10)
    # ranks beyond K take rank K's values
    assert TRUST.alpha(np.array([4, 9])).tolist() == pytest.approx([0.25 * (0.95 - 0.1625)] * 2)


def test_weights_by_hand():
    # Bayes-IPS: eps+ / (eps+ + eps-) / theta
    assert bayes_ips_weight(np.array([1, 2]), TRUST).tolist() == pytest.approx(
        [0.98 / (0.98 + 0.65), 0.97 / (0.97 + 0.325) * 2]
    )
    # Affine, document 7 shown 10 times at rank 1 (3 clicks) and 5 times at rank 2 (1 click)
    documents, weight = affine_document_weights([7, 7, 3], [1, 2, 2], [10, 5, 4], [3, 1, 0], TRUST)
    alpha = [0.98 - 0.65, (0.97 - 0.325) / 2]
    beta = [0.65, 0.325 / 2]
    assert documents.tolist() == [3, 7]
    assert weight.tolist() == pytest.approx(
        [(0 - 4 * beta[1]) / alpha[1], (3 - 10 * beta[0]) / alpha[0] + (1 - 5 * beta[1]) / alpha[1]]
    )


def test_affine_weights_are_the_sum_of_per_impression_relevance_estimates():
    rng = np.random.default_rng(0)
    doc, rank = rng.integers(0, 6, 40), rng.integers(1, 8, 40)
    impressions = rng.integers(1, 5, 40)
    clicks = rng.binomial(impressions, 0.3)
    documents, weight = affine_document_weights(doc, rank, impressions, clicks, TRUST)
    brute = {}
    for d, k, n, c in zip(doc, rank, impressions, clicks, strict=True):  # every impression, one at a time
        for i in range(n):
            estimate = ((1 if i < c else 0) - TRUST.beta(k)) / TRUST.alpha(k)
            brute[d] = brute.get(d, 0.0) + float(estimate)
    assert documents.tolist() == sorted(brute)
    assert weight == pytest.approx([brute[d] for d in sorted(brute)])


def _simulated_estimates(n_logs=4000, sessions=50, seed=1):
    """Per simulated log, the IPS, Bayes-IPS and affine estimates of the per-session DCG sum
    Σ_d R_d gain(rank_f(d)) of the target ranking (Avg DCG times the relevant documents)."""
    rng = np.random.default_rng(seed)
    probability = TRUST.click_probability(LOGGED_RANK, RELEVANT)
    clicks = rng.binomial(sessions, probability, size=(n_logs, 4))  # clicks of each document per log
    gain = dcg_gain(TARGET_RANK)
    ips = (clicks * gain / position_propensity(LOGGED_RANK, 1.0)).sum(axis=1) / sessions
    bayes = (clicks * gain * bayes_ips_weight(LOGGED_RANK, TRUST)).sum(axis=1) / sessions
    affine = np.array(
        [
            weighted_estimate(
                gain,
                affine_document_weights(np.arange(4), LOGGED_RANK, np.full(4, sessions), c, TRUST)[1],
                n_sessions=sessions,
            )
            for c in clicks
        ]
    )
    return ips, bayes, affine


def test_affine_is_unbiased_where_ips_is_measurably_biased():
    truth = float(np.sum(dcg_gain(TARGET_RANK)[RELEVANT]))
    ips, bayes, affine = _simulated_estimates()
    error = affine.std() / np.sqrt(len(affine))
    assert abs(affine.mean() - truth) < 4 * error
    assert abs(ips.mean() - truth) > 40 * ips.std() / np.sqrt(len(ips))  # trust makes IPS overcount
    # Bayes-IPS is biased too (Vardasbi et al. 2020: no per-click weight removes trust bias):
    # its mean is its analytic expectation, Σ_d gain eps+ (eps+ R + eps- (1 - R)) / (eps+ + eps-) ...
    plus, minus = TRUST.relevant_trust, TRUST.irrelevant_trust
    expected = float(np.sum(dcg_gain(TARGET_RANK) * plus * np.where(RELEVANT, plus, minus) / (plus + minus)))
    assert abs(bayes.mean() - expected) < 4 * bayes.std() / np.sqrt(len(bayes))
    # ... which on this example is closer to the truth than IPS: the trusted top clicks count less
    assert abs(expected - truth) < 0.5 * abs(ips.mean() - truth)


def test_without_trust_bias_every_correction_is_ips():
    pbm = TrustBias(position_propensity(np.arange(1, 5), 1.0), np.ones(4), np.zeros(4))
    assert bayes_ips_weight(LOGGED_RANK, pbm) == pytest.approx(1.0 / position_propensity(LOGGED_RANK, 1.0))
    _, weight = affine_document_weights(np.arange(4), LOGGED_RANK, np.full(4, 10), np.array([2, 0, 1, 3]), pbm)
    assert weight == pytest.approx(np.array([2, 0, 1, 3]) / position_propensity(LOGGED_RANK, 1.0))


def test_bad_parameters_are_refused_naming_the_rank():
    with pytest.raises(ValueError, match=r"eps\+_k > eps-_k; rank 2 has theta = 0.5, eps\+ = 0.3, eps- = 0.4"):
        TrustBias(np.array([1.0, 0.5]), np.array([0.9, 0.3]), np.array([0.1, 0.4]))
    with pytest.raises(ValueError, match=r"0 < theta_k <= 1; rank 1"):
        TrustBias(np.array([0.0]), np.array([0.9]), np.array([0.1]))
    with pytest.raises(ValueError, match="eps_neg = 0.99"):
        TrustSettings.from_dict({"eps_neg": 0.99})


def test_signed_example_weights_in_the_risk():
    rng = np.random.default_rng(3)
    offsets = np.array([0, 4, 7])
    scores = rng.normal(size=7)
    click_query, click_doc = np.array([0, 0, 1, 1]), np.array([0, 2, 4, 6])
    positive = np.array([2.0, 0.5, 1.0, 4.0])
    assert risk(scores, offsets, Clicks(click_query, click_doc, positive), "dcg") == pytest.approx(
        risk(scores, offsets, Clicks.from_propensity(click_query, click_doc, 1.0 / positive), "dcg")
    )
    signed = Clicks(click_query, click_doc, np.array([2.0, -0.5, 1.0, -4.0]))
    value, grad, curvature = risk_gradient(scores, offsets, signed, "dcg", with_curvature=True)
    step = 1e-6
    numeric = [
        (risk(scores + step * e, offsets, signed, "dcg") - risk(scores - step * e, offsets, signed, "dcg")) / (2 * step)
        for e in np.eye(7)
    ]
    assert grad == pytest.approx(numeric, abs=1e-7)
    # the curvature sums the pair terms' sizes: that of the weights' absolute values
    _, _, absolute = risk_gradient(
        scores, offsets, Clicks(click_query, click_doc, np.abs(signed.cost)), "dcg", with_curvature=True
    )
    assert curvature == pytest.approx(absolute) and np.all(curvature >= 0)
    check_signed_weights(signed.cost, "dcg")
    with pytest.raises(ValueError, match="bounded rank weight"):
        check_signed_weights(signed.cost, "avgrank")


def _two_ranker_table(seed=0, n_queries=400, size=10, sessions=100):
    """Impressions of two logging rankers (random permutations) with trust-bias clicks."""
    rng = np.random.default_rng(seed)
    relevant = rng.random(n_queries * size) < 0.3
    rows = []
    for _ranker in range(2):
        rank = np.concatenate([rng.permutation(size) + 1 for _ in range(n_queries)])
        clicks = rng.binomial(sessions, TRUST_DEEP.click_probability(rank, relevant))
        rows.append((np.arange(n_queries * size) // size, np.arange(n_queries * size), rank, clicks))
    query, doc, rank, clicks = (np.concatenate(parts) for parts in zip(*rows, strict=True))
    return query, doc, rank, np.full(len(doc), sessions), clicks


def test_em_recovers_the_click_probabilities_of_both_kinds_of_document():
    query, doc, rank, impressions, clicks = _two_ranker_table()
    estimate = trust_em(query, doc, rank, impressions, clicks, bootstrap=20, rng=0)
    k = np.arange(1, 11)
    assert estimate.relevant_click == pytest.approx(TRUST_DEEP.relevant_click(k), rel=0.1)
    assert estimate.irrelevant_click == pytest.approx(TRUST_DEEP.irrelevant_click(k), rel=0.15)
    assert estimate.info["relevant_share"] == pytest.approx(0.3, abs=0.03)
    assert estimate.info["converged"]
    # the estimate as a propensity (examination relative to rank 1) with its band
    as_propensity = estimate.propensity_estimate()
    assert as_propensity.propensity[0] == 1 and np.all(as_propensity.low <= as_propensity.propensity)
    assert as_propensity.info["trust"]["relevant_click"] == pytest.approx(estimate.relevant_click.tolist())
    # the affine parameters the corrections use are those of the estimate
    fitted = trust_from_clicks(estimate.relevant_click, estimate.irrelevant_click)
    assert fitted.alpha(k) == pytest.approx(estimate.relevant_click - estimate.irrelevant_click)
    assert fitted.beta(k) == pytest.approx(estimate.irrelevant_click)


def test_em_uses_only_the_ranks_it_estimates():
    query, doc, rank, impressions, clicks = _two_ranker_table(n_queries=200)
    top = trust_em(query, doc, rank, impressions, clicks, max_rank=5, bootstrap=0)
    assert len(top.rank) == 5
    assert top.relevant_click == pytest.approx(TRUST_DEEP.relevant_click(np.arange(1, 6)), rel=0.15)
