"""Tests that kill the survivors of bench/mutation.py on cltr/core/ranking.py (each names
the mutant it kills); expected values are hand-computed."""

import warnings
from types import SimpleNamespace

import numpy as np
import pytest

from cltr.core.ranking import evaluate, ndcg_per_query, snips_estimate
from cltr.core.scorers import LinearScorer


def test_ndcg_of_a_query_without_relevant_documents_is_nan_without_a_warning():
    # kills `n_relevant > 0` -> `>= 0`: dividing the empty query's 0 by its ideal 0 gives the
    # same NaN but with numpy's "invalid value" warning, which a user's run would print
    ranks = np.array([1, 2, 1, 2])
    relevant = np.array([False, True, False, False])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        values = ndcg_per_query(ranks, relevant, np.array([0, 2, 4]))
    assert values[0] == pytest.approx(1 / np.log2(3))  # DCG 1/log2(3) over ideal 1
    assert np.isnan(values[1])


def test_snips_with_signed_weights_summing_to_zero_is_nan():
    # kills `not total > 0` -> `not total >= 0`: weights 1 and -1 sum to 0, too few sessions to
    # say (nan), where the mutant divides 1 * 1 + 0 * -1 = 1 by 0 (inf)
    assert np.isnan(snips_estimate(np.array([1.0, 0.0]), None, weight=np.array([1.0, -1.0])))
    # and a negative total is nan too, not a value of the wrong sign
    assert np.isnan(snips_estimate(np.array([1.0, 0.0]), None, weight=np.array([1.0, -2.0])))


def test_evaluate_cuts_ndcg_at_10():
    # kills evaluate's `k=10` -> `k=11`: one query of 12 documents, scores 12..1, the only
    # relevant document 11th: nDCG@10 is 0 (at 11 it would be 1/log2(12))
    X = np.arange(12, 0, -1, dtype=np.float64)[:, None]
    relevant = np.zeros(12, dtype=bool)
    relevant[10] = True
    queries = SimpleNamespace(X=X, offsets=np.array([0, 12]))
    metrics = evaluate(LinearScorer(np.array([1.0])), queries, relevant, rng=np.random.default_rng(0), dcg_base=2.0)
    assert metrics["avg_rank"] == 11.0
    assert metrics["ndcg@10"] == 0.0
    assert metrics["ndcg@10_relevant_queries"] == 0.0
