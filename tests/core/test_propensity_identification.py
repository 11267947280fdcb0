"""Regression EM estimates the log does not identify: the collapse to p_k = 1 and a fitted
relevance model on a single deterministic ranker's log (``em_identification``), the refusal to
train on a collapsed estimate, and cross-fitted trees."""

from functools import partial
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.special import expit

from cltr.core import propensity as P
from cltr.core.propensity import em_identification, em_propensities
from cltr.methods.trees import soft_label_trees
from cltr.pipeline.stages import as_told, check_estimate

SMALL_TREES = partial(soft_label_trees, n_estimators=15, num_leaves=7, min_data_in_leaf=10, learning_rate=0.3)


def ranker_log(rankers, *, seed=0, n_queries=120, n_docs=10, eta=1.0, sessions=200):
    """Position-based clicks (1/k)^eta sigma(x . beta - 1) where ranker 0 sorts every query by
    x . beta exactly (deterministic and linear in the features, as a production ranker is) and
    rankers 1.. by x . (beta + noise): with one ranker each document is shown at one rank."""
    rng = np.random.default_rng(seed)
    n = n_queries * n_docs
    X = rng.normal(size=(n, 5))
    beta = np.array([1.0, -0.7, 0.5, 0.0, 0.3])
    gamma = expit(X @ beta - 1.0)
    parts = []
    for r in range(rankers):
        score = (X @ (beta + (rng.normal(size=5) if r else 0.0))).reshape(n_queries, n_docs)
        rank = np.empty(score.shape, dtype=np.int64)
        np.put_along_axis(rank, np.argsort(-score, axis=1), np.arange(1, n_docs + 1)[None, :], axis=1)
        rank = rank.ravel()
        parts.append(
            (
                np.repeat(np.arange(n_queries), n_docs),
                np.arange(n),
                rank,
                np.full(n, sessions),
                rng.binomial(sessions, (1.0 / rank) ** eta * gamma),
            )
        )
    query, doc, rank, impressions, clicks = (np.concatenate([p[i] for p in parts]) for i in range(5))
    return (query, doc, rank, impressions, clicks), X


def em_data(table, X, max_rank=10):
    return P._em_data(P._check_table(*table[:3], None, *table[3:]), X, max_rank)


def memorise(features, label, weight, predict=None):
    """A relevance model that fits every (query, document) exactly: the logit of its own label."""
    p = np.clip(label, 1e-4, 1.0 - 1e-4)
    return np.log(p / (1.0 - p))


def test_rank_variation_is_zero_for_one_deterministic_ranker_and_counted_by_hand():
    table, X = ranker_log(1)
    assert P.rank_variation(em_data(table, X)) == 0.0
    # by hand: documents 0 and 1 of one query swap ranks in a second session, document 2 stays
    hand = (
        np.zeros(5, int),
        np.array([0, 1, 0, 1, 2]),
        np.array([1, 2, 2, 1, 3]),
        np.array([3, 3, 1, 1, 4]),
        np.array([1, 0, 0, 1, 1]),
    )
    assert P.rank_variation(em_data(hand, np.eye(3), max_rank=3)) == pytest.approx(8 / 12)


def test_a_flat_estimate_on_a_single_ranker_log_whose_clicks_fall_is_a_collapse():
    table, X = ranker_log(1)
    data = em_data(table, X)
    diagnostics, warnings = em_identification(data, np.ones(10), flexible=False)
    assert diagnostics["collapsed"] and not diagnostics["identified"]
    assert diagnostics["click_rate_bottom"] < 0.5 * diagnostics["click_rate_top"]
    assert len(warnings) == 1 and "collapsed" in warnings[0]
    for alternative in ("harvest", "swap", "logistic"):
        assert alternative in warnings[0]
    # the same flat estimate, where it is the data's verdict or clicks do not fall, is not
    several = ranker_log(3)
    assert not em_identification(em_data(*several), np.ones(10), flexible=False)[0]["collapsed"]
    flat_clicks = table[:4] + (np.round(table[3] * 0.2).astype(np.int64),)
    assert not em_identification(em_data(flat_clicks, X), np.ones(10), flexible=False)[0]["collapsed"]
    # a falling estimate is no collapse
    assert em_identification(data, 1.0 / np.arange(1, 11), flexible=False) == (
        {**diagnostics, "collapsed": False, "identified": True},
        [],
    )


@pytest.mark.parametrize("fitter", [memorise, SMALL_TREES], ids=["memorise", "trees"])
def test_a_relevance_model_fitted_in_sample_on_one_rankers_log_is_not_identified(fitter):
    table, X = ranker_log(1, n_queries=60)
    single = em_propensities(*table, X, relevance_model=fitter, tol=1e-4, iterations=20, bootstrap=0, rng=0)
    assert not single.info["identified"] and single.info["rank_variation"] == 0.0
    assert any("not identified" in w or "collapsed" in w for w in single.info["warnings"])
    table, X = ranker_log(3, n_queries=60)
    several = em_propensities(*table, X, relevance_model=fitter, tol=1e-4, iterations=20, bootstrap=0, rng=0)
    assert several.info["identified"] and several.info["warnings"] == []
    assert several.info["rank_variation"] > 0.9


def test_logistic_em_on_one_rankers_log_is_not_flagged():
    # its relevance model cannot fit each (query, document): identified by its form, as published
    table, X = ranker_log(1)
    estimate = em_propensities(*table, X, bootstrap=0, rng=0)
    assert estimate.info["warnings"] == [] and estimate.info["identified"]


def test_a_collapsed_estimate_is_refused_for_training_and_an_unidentified_one_warned(caplog):
    collapsed = SimpleNamespace(
        key="abc",
        config={"clicks": "log1"},
        info={
            "method": "em",
            "collapsed": True,
            "warnings": ["EM collapsed: ..."],
            "identification_version": P.IDENTIFICATION_VERSION,
        },
    )
    with pytest.raises(ValueError, match="abc.*refused as training weights.*EM collapsed"):
        check_estimate(collapsed)
    unidentified = SimpleNamespace(
        key="def",
        config={"clicks": "log1"},
        info={
            "method": "em",
            "collapsed": False,
            "warnings": ["not identified: ..."],
            "identification_version": P.IDENTIFICATION_VERSION,
        },
    )
    check_estimate(unidentified)
    assert "propensities def: not identified" in caplog.text
    check_estimate(SimpleNamespace(key="h", config={}, info={"method": "harvest"}))  # no identification to check
    estimate = P.PropensityEstimate(
        rank=np.arange(1, 4),
        propensity=np.ones(3),
        low=np.ones(3),
        high=np.ones(3),
        level=0.9,
        method="regression-em",
        info=collapsed.info,
    )
    with pytest.raises(ValueError, match="refused as training weights"):  # the API's fit(propensities=...)
        as_told(None, estimate)


def test_cross_fitting_predicts_each_query_from_the_other_folds_only():
    seen = []

    def fit(features, label, weight, predict=None):
        seen.append((set(features[:, 0].astype(int)), set(predict[:, 0].astype(int))))
        return np.full(len(predict), float(len(seen)))

    query = np.array([0, 0, 1, 2, 2, 3, 4])
    features = query[:, None].astype(float)
    logits = P._cross_fitted(fit, features, np.zeros(7), np.ones(7), query, 3)
    assert len(seen) == 3
    for trained_on, predicted in seen:
        assert trained_on.isdisjoint(predicted) and trained_on | predicted == {0, 1, 2, 3, 4}
    assert np.array_equal(logits, [1, 1, 2, 3, 3, 1, 2])  # query q in fold q mod 3


def test_one_cross_fitted_tree_em_step_never_lowers_the_likelihood():
    table, X = ranker_log(1, n_queries=60)
    data = em_data(table, X)
    theta, coef = P._em_start(data)
    eta = np.full(len(data.unit_weight), coef[0])
    before = P._em_loglik(data, theta, np.zeros(0), eta, np.zeros(0))
    for _ in range(4):
        theta, eta = P._em_tree_step(data, theta, eta, SMALL_TREES, folds=3)
        after = P._em_loglik(data, theta, np.zeros(0), eta, np.zeros(0))
        assert after >= before - 1e-9 * abs(before)
        before = after


def test_cross_fit_needs_as_many_queries_as_folds():
    table, X = ranker_log(1, n_queries=4)
    with pytest.raises(ValueError, match="cross_fit = 5 folds .* at least 5 queries, found 4"):
        em_propensities(*table, X, relevance_model=SMALL_TREES, cross_fit=5, bootstrap=0, rng=0)
    with pytest.raises(ValueError, match="cross_fit must be an integer >= 1"):
        em_propensities(*table, X, relevance_model=SMALL_TREES, cross_fit=0, bootstrap=0, rng=0)


def test_cross_fitted_trees_on_one_rankers_log_are_identified_only_by_their_form():
    table, X = ranker_log(1)
    diagnostics, warnings = em_identification(em_data(table, X), 1.0 / np.arange(1, 11), flexible=True, cross_fit=5)
    assert not diagnostics["identified"] and not diagnostics["collapsed"]
    assert (
        len(warnings) == 1
        and warnings[0].startswith("identified only by the relevance model's form across queries")
        and "5 folds" in warnings[0]
    )
    # in sample: the stronger words; on a log of three rankers: nothing to say
    assert em_identification(em_data(table, X), 1.0 / np.arange(1, 11), flexible=True)[1][0].startswith(
        "not identified"
    )
    several = ranker_log(3)
    assert em_identification(em_data(*several), 1.0 / np.arange(1, 11), flexible=True, cross_fit=5) == (
        {**em_identification(em_data(*several), 1.0 / np.arange(1, 11), flexible=False)[0]},
        [],
    )
    # em_propensities passes its cross-fitting on: warned, not refused
    table, X = ranker_log(1, n_queries=30)
    estimate = em_propensities(*table, X, relevance_model=SMALL_TREES, cross_fit=3, iterations=2, bootstrap=0, rng=0)
    assert not estimate.info["identified"] and not estimate.info["collapsed"], estimate.info["warnings"]
    assert estimate.info["warnings"][0].startswith("identified only by the relevance model's form across queries")
    check_estimate(SimpleNamespace(key="k", config={"clicks": "c"}, info={"method": "em", **estimate.info}))


def test_cross_fitting_refuses_units_all_in_one_fold():
    query = np.array([0, 0, 3, 3, 6])  # every query in fold 0 of 3
    with pytest.raises(ValueError, match="needs units in two folds or more; every unit is in fold 0"):
        P._cross_fitted(memorise, query[:, None].astype(float), np.full(5, 0.5), np.ones(5), query, 3)


def test_a_bootstrap_replicate_of_queries_all_in_one_fold_is_left_out_and_counted():
    # two queries, two folds: a replicate that draws one query twice has a single fold
    table, X = ranker_log(1, n_queries=2)
    bootstrap = 12
    drawn = P._query_resamples(2, bootstrap, np.random.default_rng(4))
    expected = int(np.sum((drawn > 0).sum(axis=1) == 1))
    assert 0 < expected < bootstrap  # the seed draws both kinds of replicate
    seen = []

    def fit(features, label, weight, predict=None):
        seen.append(len(features))
        return np.zeros(len(features) if predict is None else len(predict))

    estimate = em_propensities(
        *table, X, relevance_model=fit, cross_fit=2, iterations=2, bootstrap=bootstrap, rng=np.random.default_rng(4)
    )
    assert estimate.info["bootstrap_one_fold"] == expected
    assert np.all(np.isfinite(estimate.low)) and np.all(np.isfinite(estimate.high))


def test_an_em_estimate_stored_before_the_check_is_checked_again_from_its_stored_curve(monkeypatch, caplog):
    from cltr.core.clicks import Impressions
    from cltr.pipeline import stages
    from cltr.pipeline.stages import propensities

    table, X = ranker_log(1)
    impressions = Impressions(
        query=table[0],
        doc=table[1],
        rank=table[2],
        ranker=np.zeros(len(table[0]), np.int64),
        impressions=table[3],
        clicks=table[4],
    )
    # check_estimate (cltr.pipeline.stages.propensities) looks impressions_of up in its own module
    monkeypatch.setattr(propensities, "impressions_of", lambda clicks, split, dataset: impressions)
    dataset = SimpleNamespace(train=SimpleNamespace(X=X))
    workspace = SimpleNamespace(load=lambda name, stage, key: SimpleNamespace(key=key) if key == "log1" else None)
    # a logistic estimate stored before the check: no collapsed, warnings or version in its info
    old = {"method": "em", "relevance_model": "logistic", "cross_fit": 1}

    def stored(propensity, info, clicks="log1"):
        return SimpleNamespace(
            key="old", config={"clicks": clicks}, info=info, arrays={"rank": np.arange(1, 11), "propensity": propensity}
        )

    with pytest.raises(ValueError, match="propensities old .* refused as training weights: EM collapsed"):
        stages.check_estimate(stored(np.ones(10), old), workspace=workspace, name="d", dataset=dataset)
    stages.check_estimate(stored(1.0 / np.arange(1, 11), old), workspace=workspace, name="d", dataset=dataset)
    # cross-fitted trees stored as identified under the older rules: warned now
    trees = {**old, "relevance_model": "fitted", "cross_fit": 5, "collapsed": False, "identified": True, "warnings": []}
    stages.check_estimate(stored(1.0 / np.arange(1, 11), trees), workspace=workspace, name="d", dataset=dataset)
    assert "identified only by the relevance model's form across queries" in caplog.text
    # without the log it was estimated from it cannot be checked: refused
    for where in ({}, {"workspace": workspace, "name": "d", "dataset": dataset}):
        with pytest.raises(ValueError, match="stored before em estimates were checked .* estimate them again"):
            stages.check_estimate(stored(1.0 / np.arange(1, 11), old, clicks="gone"), **where)
    # an estimate made now carries the rules it was checked by, and is not checked again
    fresh = em_propensities(*table, X, bootstrap=0, rng=0)
    assert fresh.info["identification_version"] == P.IDENTIFICATION_VERSION
    stages.check_estimate(stored(fresh.propensity, {"method": "em", **fresh.info}, clicks="gone"))
