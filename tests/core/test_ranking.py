"""Ranks, metrics (hand-computed, with ties) and the IPS / SNIPS estimators."""

import itertools
from collections import Counter
from types import SimpleNamespace

import numpy as np
import pytest

from cltr.clickmodels.pbm import PBMSettings, position_based_model
from cltr.core.clicks import ClickLog, simulate_clicks
from cltr.core.ranking import (avg_dcg, avg_rank, dcg_gain, evaluate, ips_estimate, ndcg_at_k, rank_documents,
                               snips_avg_dcg, snips_estimate, validation_estimate)
from cltr.core.scorers import LinearScorer


def test_ranks_descending_within_each_query():
    offsets = np.array([0, 3, 5])
    scores = np.array([0.1, 0.9, 0.5, -1.0, 2.0])
    ranks = rank_documents(scores, offsets, np.random.default_rng(0))
    assert ranks.tolist() == [3, 1, 2, 2, 1]


def test_ties_are_broken_at_random_not_by_file_order():
    offsets = np.array([0, 4])
    scores = np.zeros(4)
    seen = {tuple(rank_documents(scores, offsets, np.random.default_rng(s))) for s in range(60)}
    assert len(seen) > 10  # many of the 24 permutations appear
    for ranks in seen:
        assert sorted(ranks) == [1, 2, 3, 4]


def test_constant_scorer_gets_random_ranking_value():
    # One query, 2 relevant docs among 4: the expected Avg Rank of a random ranking is 2.5.
    offsets = np.array([0, 4])
    relevant = np.array([True, False, True, False])
    values = [avg_rank(rank_documents(np.zeros(4), offsets, np.random.default_rng(s)), relevant)
              for s in range(4000)]
    assert np.mean(values) == pytest.approx(2.5, abs=0.05)


def test_same_seed_same_ranks():
    rng = np.random.default_rng(3)
    scores = rng.integers(0, 3, 50).astype(float)
    offsets = np.array([0, 20, 50])
    a = rank_documents(scores, offsets, np.random.default_rng(7))
    b = rank_documents(scores, offsets, np.random.default_rng(7))
    assert np.array_equal(a, b)


def test_bad_scores_are_rejected():
    with pytest.raises(ValueError, match="must have shape"):
        rank_documents(np.zeros(3), np.array([0, 4]), np.random.default_rng(0))
    with pytest.raises(ValueError, match="finite"):
        rank_documents(np.array([0.0, np.nan]), np.array([0, 2]), np.random.default_rng(0))


def test_metrics_hand_computed():
    # Query 0: relevant at ranks 1 and 3; query 1: relevant at rank 2; query 2: none relevant.
    ranks = np.array([1, 2, 3, 1, 2, 1, 2])
    relevant = np.array([True, False, True, False, True, False, False])
    offsets = np.array([0, 3, 5, 7])
    assert avg_rank(ranks, relevant) == pytest.approx((1 + 3 + 2) / 3)
    # the paper's natural log by default; log2 one argument away, the same ranking scaled
    expected_dcg = (1 / np.log(2) + 1 / np.log(4) + 1 / np.log(3)) / 3
    assert avg_dcg(ranks, relevant) == pytest.approx(expected_dcg)
    expected_log2 = (1 / np.log2(2) + 1 / np.log2(4) + 1 / np.log2(3)) / 3
    assert avg_dcg(ranks, relevant, base=2) == pytest.approx(expected_log2)
    # nDCG@10: q0 (1 + 0.5) / (1 + 1/log2 3); q1 (1/log2 3) / 1; q2 ignored.
    q0 = (1 + 0.5) / (1 + 1 / np.log2(3))
    q1 = 1 / np.log2(3)
    assert ndcg_at_k(ranks, relevant, offsets, k=10) == pytest.approx((q0 + q1) / 2)
    # At k = 1 only rank-1 relevant documents count.
    assert ndcg_at_k(ranks, relevant, offsets, k=1) == pytest.approx((1.0 + 0.0) / 2)


def test_metrics_with_tied_scores_average_to_permutation_mean():
    offsets = np.array([0, 3])
    relevant = np.array([True, False, False])
    scores = np.array([1.0, 1.0, 0.0])  # the relevant doc ties with one irrelevant doc
    values = [avg_dcg(rank_documents(scores, offsets, np.random.default_rng(s)), relevant)
              for s in range(4000)]
    assert np.mean(values) == pytest.approx((1 / np.log(2) + 1 / np.log(3)) / 2, abs=0.01)


def test_snips_hand_computed():
    ranks = np.array([1, 3, 2])
    click_doc = np.array([0, 1])
    propensity = np.array([1.0, 0.5])
    expected = (1 / 1 * dcg_gain(1) + 1 / 0.5 * dcg_gain(3)) / (1 + 2)
    assert snips_avg_dcg(ranks, click_doc, propensity) == pytest.approx(expected)
    assert snips_estimate(np.ones(2), propensity) == pytest.approx(1.0)


def test_ips_is_unbiased_and_naive_is_not():
    """Averaged over many logs, the IPS estimate of the DCG of a new ranking is its true value."""
    offsets = np.array([0, 5])
    relevant = np.array([False, True, False, True, True])
    presented = np.array([1, 2, 3, 4, 5])  # the logging ranking
    evaluated = np.array([5, 1, 4, 2, 3])  # the ranking whose DCG we estimate
    truth = dcg_gain(evaluated[relevant]).sum()  # per-session DCG summed over relevant docs
    click_probability, propensity = position_based_model(presented, relevant,
                                                            PBMSettings(eta=1.0, eps_neg=0.0))
    rng = np.random.default_rng(11)
    ips, naive = [], []
    for _ in range(300):
        log = simulate_clicks(presented, click_probability, propensity, offsets, passes=50, rng=rng)
        gain = dcg_gain(evaluated[log.doc])
        ips.append(ips_estimate(gain, log.propensity, n_sessions=log.n_sessions))
        naive.append(ips_estimate(gain, np.ones(len(log)), n_sessions=log.n_sessions))
    standard_error = np.std(ips) / np.sqrt(len(ips))
    assert abs(np.mean(ips) - truth) < 4 * standard_error
    assert abs(np.mean(naive) - truth) > 0.2 * truth


def test_ips_rejects_no_sessions():
    with pytest.raises(ValueError, match="n_sessions"):
        ips_estimate(np.ones(1), np.ones(1), n_sessions=0)


def test_avg_rank_matches_permutation_enumeration():
    # Brute force over all 4! rankings of one query: rank_documents puts every strict
    # ordering exactly where its scores say ...
    offsets = np.array([0, 4])
    relevant = np.array([True, False, True, False])
    permutations = [np.array(p) + 1 for p in itertools.permutations(range(4))]
    values = []
    for ranking in permutations:
        ranks = rank_documents(-ranking.astype(float), offsets, np.random.default_rng(0))
        np.testing.assert_array_equal(ranks, ranking)
        values.append(avg_rank(ranks, relevant))
    # ... the mean Avg Rank over the enumeration is (n + 1) / 2 ...
    assert np.mean(values) == pytest.approx(2.5)
    # ... and a constant scorer's tie-breaks draw every one of the 24 rankings about
    # equally often (100 expected each: 4 standard deviations is about 39), so its
    # expected Avg Rank is the enumeration's mean.
    draws = [tuple(rank_documents(np.zeros(4), offsets, np.random.default_rng(s))) for s in range(2400)]
    counts = Counter(draws)
    assert set(counts) == {tuple(r) for r in permutations}
    assert max(abs(c - 100) for c in counts.values()) < 4 * np.sqrt(100 * (1 - 1 / 24))
    assert np.mean([avg_rank(np.array(d), relevant) for d in draws]) == pytest.approx(np.mean(values), abs=0.05)


def test_evaluate_and_validation_estimate_rank_as_rank_documents():
    # Two queries, a linear scorer on one feature: hand-computed ranks [2, 1, 3 | 1, 2].
    X = np.array([[0.5], [0.9], [0.1], [2.0], [-1.0]])
    queries = SimpleNamespace(X=X, offsets=np.array([0, 3, 5]))
    relevant = np.array([True, False, True, False, True])
    scorer = LinearScorer(np.array([1.0]))
    ranks = np.array([2, 1, 3, 1, 2])
    metrics = evaluate(scorer, queries, relevant, rng=np.random.default_rng(0))
    assert metrics["avg_rank"] == pytest.approx((2 + 3 + 2) / 3)
    assert metrics["avg_dcg"] == pytest.approx(avg_dcg(ranks, relevant))
    assert metrics["ndcg@10"] == pytest.approx(ndcg_at_k(ranks, relevant, queries.offsets, k=10))
    log = ClickLog(query=np.array([0, 0, 1]), doc=np.array([0, 1, 4]), rank=np.array([1, 2, 2]),
                   propensity=np.array([0.5, 1.0, 0.25]), pass_index=np.zeros(3, dtype=np.int64), n_passes=1,
                   n_queries=2)
    expected = (2 * dcg_gain(2) + 1 * dcg_gain(1) + 4 * dcg_gain(2)) / 7  # SNIPS: weights 1/q
    assert validation_estimate(scorer, queries, log, rng=np.random.default_rng(0)) == pytest.approx(expected)
