"""Invariants of the maths core, checked on problems that hypothesis draws (DESIGN.md, "Tests").

- permuting the documents within each query changes no metric, bound, risk or estimate,
  and permutes the risk's gradient alike;
- propensity 1 reduces every estimator (IPS, SNIPS, the risk, Bayes-IPS, affine, CCP's
  costs) to the naive one;
- scaling every cost c_i by s is scaling C by s in the SVM: one objective, one solution;
- the CCP objective never rises;
- the sorted hinge bound, risk and gradient equal the expanded-pairs oracle, ties included;
- metrics stay in their ranges, and the hinge bound stays above the rank.

Scores are drawn from a few half-integers so that ties (and hinges exactly at their kink,
where the margin is 0) are common. The examples are derandomised (the same on every run)
and few, so that the file runs in a few seconds.
"""

import inspect
import math
import os
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from cltr.core.ccp import ccp_costs, propdcg_ccp
from cltr.core.clicks import Clicks
from cltr.core.objectives import click_pairs, hinge_rank_bound, rank_weight, risk, risk_gradient
from cltr.core.ranking import (
    avg_dcg,
    avg_rank,
    dcg_gain,
    ips_estimate,
    ndcg_at_k,
    rank_documents,
    snips_avg_dcg,
    snips_estimate,
)
from cltr.core.svm import pairwise_objective, solve_pairwise_svm
from cltr.core.trust import TrustBias, affine_document_weights, bayes_ips_weight, weighted_estimate

# bench/mutation.py sets CLTR_NO_SHRINK: a killed mutant needs no minimal example
EXAMPLES = settings(
    max_examples=40,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    phases=[Phase.explicit, Phase.generate] if os.environ.get("CLTR_NO_SHRINK") else list(Phase),
)
WEIGHTS = ["avgrank", "dcg", "rbp:0.7"]


@st.composite
def click_problems(draw, *, max_queries=4, max_docs=6, distinct=False):
    """``(scores, offsets, click_query, click_doc, propensity)``: 1..max_queries queries of
    1..max_docs documents, scores from a few half-integers (ties common) or all distinct,
    1..8 clicks (repeats allowed), propensities in [0.05, 1]."""
    sizes = draw(st.lists(st.integers(1, max_docs), min_size=1, max_size=max_queries))
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n_docs = int(offsets[-1])
    if distinct:
        scores = np.array(draw(st.permutations(range(n_docs))), dtype=np.float64) * 0.37
    else:
        scores = np.array(
            draw(st.lists(st.sampled_from([-1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 3.0]), min_size=n_docs, max_size=n_docs))
        )
    n_clicks = draw(st.integers(1, 8))
    click_query = np.array(
        draw(st.lists(st.integers(0, len(sizes) - 1), min_size=n_clicks, max_size=n_clicks)), dtype=np.int64
    )
    within = draw(st.lists(st.integers(0, max_docs - 1), min_size=n_clicks, max_size=n_clicks))
    click_doc = offsets[click_query] + np.array(within, dtype=np.int64) % np.diff(offsets)[click_query]
    propensity = np.array(draw(st.lists(st.floats(0.05, 1.0), min_size=n_clicks, max_size=n_clicks)))
    return scores, offsets, click_query, click_doc, propensity


def ndcg_averages(ranks, relevant, offsets, k):
    """nDCG@k averaged each way ``ndcg_at_k`` offers: over all queries and over those with a
    relevant document where it takes ``queries`` (being added as this is written), else its
    one average."""
    if "queries" in inspect.signature(ndcg_at_k).parameters:
        return [ndcg_at_k(ranks, relevant, offsets, k=k, queries=q) for q in ("all", "relevant")]
    return [ndcg_at_k(ranks, relevant, offsets, k=k)]


def within_query_permutation(offsets, seed):
    """``order``: new row j holds old row order[j]; documents move only within their query."""
    rng = np.random.default_rng(seed)
    return np.concatenate([start + rng.permutation(end - start) for start, end in pairwise(offsets)])


# -- permuting documents within a query --------------------------------------------------------


@EXAMPLES
@given(click_problems(), st.integers(0, 2**32 - 1), st.sampled_from(WEIGHTS))
def test_permuting_documents_changes_no_bound_risk_or_gradient(problem, seed, weight):
    scores, offsets, click_query, click_doc, propensity = problem
    order = within_query_permutation(offsets, seed)
    new_row = np.empty_like(order)
    new_row[order] = np.arange(len(order))
    clicks = Clicks.from_propensity(click_query, click_doc, propensity)
    moved = scores[order], offsets, Clicks.from_propensity(click_query, new_row[click_doc], propensity)
    np.testing.assert_allclose(hinge_rank_bound(*moved), hinge_rank_bound(scores, offsets, clicks), rtol=1e-12)
    value, grad = risk_gradient(scores, offsets, clicks, weight)
    moved_value, moved_grad = risk_gradient(*moved, weight)
    assert moved_value == pytest.approx(value, rel=1e-12, abs=1e-15)
    np.testing.assert_allclose(moved_grad, grad[order], rtol=1e-10, atol=1e-14)


@EXAMPLES
@given(click_problems(distinct=True), st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1))
def test_permuting_documents_changes_no_metric_or_estimate(problem, seed, relevant_seed):
    # distinct scores: no tie-break enters, so the ranks themselves move with the documents
    scores, offsets, _, click_doc, propensity = problem
    relevant = np.random.default_rng(relevant_seed).random(len(scores)) < 0.4
    order = within_query_permutation(offsets, seed)
    new_row = np.empty_like(order)
    new_row[order] = np.arange(len(order))
    ranks = rank_documents(scores, offsets, np.random.default_rng(0))
    moved_ranks = rank_documents(scores[order], offsets, np.random.default_rng(1))
    np.testing.assert_array_equal(moved_ranks, ranks[order])

    def metrics(r, rel, docs):
        return [
            avg_dcg(r, rel),
            avg_rank(r, rel),
            *ndcg_averages(r, rel, offsets, 3),
            snips_avg_dcg(r, docs, propensity),
        ]

    np.testing.assert_allclose(
        metrics(moved_ranks, relevant[order], new_row[click_doc]),
        metrics(ranks, relevant, click_doc),
        rtol=1e-12,
        equal_nan=True,
    )


# -- propensity 1 ------------------------------------------------------------------------------


@EXAMPLES
@given(click_problems(), st.sampled_from(WEIGHTS), st.integers(1, 20))
def test_propensity_one_reduces_every_estimator_to_the_naive_one(problem, weight, n_sessions):
    scores, offsets, click_query, click_doc, _ = problem
    n = len(click_doc)
    ones = np.ones(n)
    bound = hinge_rank_bound(scores, offsets, Clicks(click_query, click_doc))
    lam = rank_weight(weight)
    naive_risk = float(np.mean(lam.value(bound)))
    unit = Clicks.from_propensity(click_query, click_doc, ones)
    assert risk(scores, offsets, unit, weight) == pytest.approx(naive_risk, rel=1e-12)
    value, grad = risk_gradient(scores, offsets, unit, weight)
    unweighted = risk_gradient(scores, offsets, Clicks(click_query, click_doc, ones), weight)
    assert value == pytest.approx(naive_risk, rel=1e-12)
    np.testing.assert_allclose(grad, unweighted[1], rtol=1e-12, atol=1e-15)
    values = dcg_gain(bound)  # any per-click values
    assert ips_estimate(values, ones, n_sessions=n_sessions) == pytest.approx(values.sum() / n_sessions)
    assert snips_estimate(values, ones) == pytest.approx(values.mean())
    assert weighted_estimate(values, ones, n_sessions=n_sessions) == pytest.approx(values.sum() / n_sessions)
    # CCP's costs c_i = lambda'(1 + S_i) / q_i: lambda' alone (and 1 for average rank: SVM Rank)
    np.testing.assert_allclose(ccp_costs(bound - 1, ones, lam), lam.derivative(bound), rtol=1e-12)
    # trust bias with every rank examined and clicked exactly when relevant: Bayes-IPS weighs
    # a click 1 and the affine estimate of a document is its clicks
    k = 5
    unbiased = TrustBias(examination=np.ones(k), relevant_trust=np.ones(k), irrelevant_trust=np.zeros(k))
    rank = np.minimum(bound.astype(np.int64), 9)
    np.testing.assert_allclose(bayes_ips_weight(rank, unbiased), 1.0)
    clicks = (click_doc % 3 == 0).astype(np.int64)
    documents, weight_of = affine_document_weights(click_doc, rank, np.full(n, 3), clicks, unbiased)
    np.testing.assert_allclose(weight_of, np.bincount(click_doc, weights=clicks)[documents])


# -- the SVM's C convention ----------------------------------------------------------------------


@EXAMPLES
@given(click_problems(max_queries=3, max_docs=5), st.floats(0.1, 10.0), st.floats(0.1, 10.0), st.integers(0, 2**32 - 1))
def test_scaling_every_cost_by_s_is_scaling_C_by_s(problem, C, s, seed):
    # P(w) = ½‖w‖² + (C/n) Σ_i c_i Σ_y hinge: (s c, C) and (c, s C) are one objective, so
    # one minimiser; the certified gap bounds each solution's distance to it (P is
    # 1-strongly convex: ½‖w - w*‖² <= P(w) - P*)
    _, offsets, click_query, click_doc, propensity = problem
    X = np.random.default_rng(seed).normal(size=(int(offsets[-1]), 3))
    cost = 1.0 / propensity
    w = np.random.default_rng(seed + 1).normal(size=3)
    assert pairwise_objective(w, X, offsets, click_query, click_doc, s * cost, C) == pytest.approx(
        pairwise_objective(w, X, offsets, click_query, click_doc, cost, s * C), rel=1e-12
    )
    scaled_costs = solve_pairwise_svm(X, offsets, click_query, click_doc, s * cost, C, tol=1e-9)
    scaled_C = solve_pairwise_svm(X, offsets, click_query, click_doc, cost, s * C, tol=1e-9)
    assert scaled_costs.objective == pytest.approx(scaled_C.objective, rel=1e-6, abs=1e-12)
    slack = math.sqrt(2 * 1e-9 * max(scaled_costs.objective, scaled_C.objective))
    assert np.linalg.norm(scaled_costs.w - scaled_C.w) <= 2 * slack + 1e-9


# -- CCP -------------------------------------------------------------------------------------------


@EXAMPLES
@given(
    click_problems(max_queries=3, max_docs=6),
    st.sampled_from(["dcg", "rbp:0.7"]),
    st.floats(0.1, 20.0),
    st.integers(0, 2**32 - 1),
    st.booleans(),
)
def test_ccp_objective_never_rises(problem, weight, C, seed, warm):
    _, offsets, click_query, click_doc, propensity = problem
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(int(offsets[-1]), 3))
    result = propdcg_ccp(
        X,
        offsets,
        click_query,
        click_doc,
        propensity,
        C,
        rank_weight(weight),
        w0=rng.normal(size=3) if warm else None,
        max_iter=8,
    )
    values = [result.initial_objective] + [step.objective for step in result.trace]
    assert all(b <= a + 1e-12 * max(1.0, abs(a)) for a, b in pairwise(values)), values


# -- the sorted hinges against the expanded pairs ----------------------------------------------------


@EXAMPLES
@given(click_problems(max_docs=8), st.sampled_from(WEIGHTS), st.integers(0, 2**32 - 1), st.booleans())
def test_sorted_hinges_equal_the_expanded_pairs_on_tied_scores(problem, weight, seed, restrict):
    scores, offsets, click_query, click_doc, propensity = problem
    candidate = np.random.default_rng(seed).random(len(scores)) < 0.6 if restrict else None
    clicks = Clicks.from_propensity(click_query, click_doc, propensity)
    pairs = click_pairs(offsets, clicks, candidate)
    sorted_bound = hinge_rank_bound(scores, offsets, clicks, candidate=candidate)
    np.testing.assert_allclose(sorted_bound, hinge_rank_bound(scores, offsets, clicks, pairs=pairs), rtol=1e-12)
    by_sorting = risk_gradient(scores, offsets, clicks, weight, candidate=candidate, with_curvature=True)
    by_pairs = risk_gradient(scores, offsets, clicks, weight, pairs=pairs, with_curvature=True)
    assert by_sorting[0] == pytest.approx(by_pairs[0], rel=1e-12, abs=1e-15)
    for ours, oracle in zip(by_sorting[1:], by_pairs[1:], strict=True):
        np.testing.assert_allclose(ours, oracle, rtol=1e-10, atol=1e-13)
    # and the pair oracle is the formula itself, a double loop
    for i, (q, d) in enumerate(zip(click_query, click_doc, strict=True)):
        others = [y for y in range(offsets[q], offsets[q + 1]) if y != d and (candidate is None or candidate[y])]
        assert sorted_bound[i] == pytest.approx(1 + sum(max(0.0, 1 - (scores[d] - scores[y])) for y in others))


# -- ranges --------------------------------------------------------------------------------------------


@EXAMPLES
@given(click_problems(max_docs=12), st.integers(0, 2**32 - 1), st.integers(1, 12))
def test_metrics_stay_in_their_ranges_and_the_bound_above_the_rank(problem, seed, k):
    scores, offsets, click_query, click_doc, propensity = problem
    rng = np.random.default_rng(seed)
    relevant = rng.random(len(scores)) < 0.5
    relevant[click_doc] = True  # at least one
    ranks = rank_documents(scores, offsets, rng)
    sizes = np.diff(offsets)
    assert np.all((ranks >= 1) & (ranks <= np.repeat(sizes, sizes)))
    for base in (math.e, 2.0):
        top = dcg_gain(np.array([1]), base)[0]  # the gain of rank 1: 1/log_b(2)
        assert 0 < avg_dcg(ranks, relevant, base=base) <= top + 1e-12
        assert 0 < snips_avg_dcg(ranks, click_doc, propensity, base=base) <= top + 1e-12
    assert 1 <= avg_rank(ranks, relevant) <= sizes.max()
    assert all(0 <= ndcg <= 1 + 1e-12 for ndcg in ndcg_averages(ranks, relevant, offsets, k))
    # rank - 1 counts the documents above y_i, a hinge counts each of them (and ties) at least 1
    clicks = Clicks.from_propensity(click_query, click_doc, propensity)
    bound = hinge_rank_bound(scores, offsets, clicks)
    assert np.all(bound >= ranks[click_doc] - 1e-12)
    for weight in WEIGHTS:
        ips = float(np.mean(rank_weight(weight).value(ranks[click_doc].astype(float)) / propensity))
        assert risk(scores, offsets, clicks, weight) >= ips - 1e-12
