"""Tree PropDCG: LightGBM on the propensity-weighted hinge bound R(f) (issue 7)."""

import dataclasses

import numpy as np
import pytest

from cltr.core.clicks import Clicks
from cltr.core.objectives import risk
from cltr.core.queries import Dataset
from cltr.methods import TrainingData, train
from cltr.methods.tree_propdcg import PropensityObjective, TreePropDCGOptions, propensity_objective

# Learning rate fixed (leaves and trees still chosen on validation clicks) to keep tests quick.
QUICK = {"learning_rate": 0.1, "max_rounds": 100}


# -- the objective handed to LightGBM ----------------------------------------------------


@pytest.mark.parametrize("metric", ["dcg", "rbp:0.8", "avgrank"])
def test_gradient_given_to_lightgbm_is_n_times_finite_differences_of_the_risk(metric, toy_queries, toy_log):
    rng = np.random.default_rng(3)
    queries = toy_queries([4, 3, 5, 2], n_features=3, seed=0)
    offsets = queries.offsets
    # Clicks with repeats (same document and propensity twice: merged into one example),
    # a query without clicks (query 3: left out of the rows) and varied propensities.
    query = np.array([0, 0, 0, 2, 2, 1, 2])
    doc = offsets[query] + np.array([1, 1, 3, 0, 4, 2, 0])
    propensity = np.array([0.5, 0.5, 0.2, 1.0, 0.25, 0.8, 0.125])
    log = toy_log(query, doc, propensity=propensity, n_queries=4)
    rows, objective = propensity_objective(queries, log, metric)
    assert rows.tolist() == list(range(int(offsets[3])))  # queries 0-2; query 3 has no click
    assert len(objective.clicks) == len(log) - 1  # the repeated click merged
    scores = rng.normal(scale=1.5, size=len(rows))

    def total_risk(s):
        full = np.zeros(queries.n_docs)
        full[rows] = s
        return len(log) * risk(full, offsets, Clicks.from_log(log), metric)

    # away from kinks: no pair's score difference lies near the hinge's corner at 1
    diff = np.subtract.outer(scores, scores)
    assert np.min(np.abs(diff - 1.0)) > 1e-3
    grad, hess = objective(scores, None)
    step = 1e-6
    numeric = np.array(
        [(total_risk(scores + step * e) - total_risk(scores - step * e)) / (2 * step) for e in np.eye(len(scores))]
    )
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-7)
    # The curvature is positive and bounds the gradient per document (leaf steps <= 1).
    assert np.all(hess > 0) and np.all(np.abs(grad) <= hess * (1 + 1e-12))


def test_unit_propensities_and_average_rank_give_the_naive_pairwise_hinge_gradient(toy_queries, toy_log):
    # One query of four documents with scores s, clicks on documents 0 and 1 (propensity 1);
    # a second query without clicks, left out.
    queries = toy_queries([4, 2], n_features=3, seed=0)
    log = toy_log([0, 0], [0, 1], propensity=[1.0, 1.0], n_queries=2)
    rows, objective = propensity_objective(queries, log, "avgrank")
    assert rows.tolist() == [0, 1, 2, 3]
    s = np.array([0.0, 0.5, 2.0, -2.0])
    # Click on 0: hinges 1-(0-0.5)=1.5 (doc 1), 1-(0-2)=3 (doc 2), 1-(0+2)=-1 (doc 3, inactive).
    # Click on 1: hinges 1-(0.5-0)=0.5 (doc 0), 1-(0.5-2)=2.5 (doc 2), 1-(0.5+2)<0 (doc 3).
    # d/ds of the summed hinges: doc 0: -2 + 1, doc 1: +1 - 2, doc 2: +1 + 1, doc 3: 0.
    grad, hess = objective(s, None)
    np.testing.assert_allclose(grad, [-1.0, -1.0, 2.0, 0.0])
    # Curvature: each document's active pairs counted on both sides.
    np.testing.assert_allclose(hess, [3.0, 3.0, 2.0, 0.0], atol=1e-6)
    assert objective.gradient(s)[0] == pytest.approx(1 + 1.5 + 3 + 1 + 0.5 + 2.5)  # n·R: sum of bounds
    constant = PropensityObjective(objective.offsets, objective.clicks, "avgrank", hessian="constant")
    _, flat = constant(s, None)
    # At all-zero scores every pair is active: each click puts 3 on its own document and 1
    # on each other one, 4 + 4 + 2 + 2 = 12 over 4 documents.
    np.testing.assert_allclose(flat, np.full(4, 3.0))


def _toy_data(queries, log):
    """Training data whose every split is ``queries`` and whose logs are ``log``."""
    return TrainingData(Dataset("toy", queries, queries, queries, relevant_from=1), log, log, seed=0)


def test_bad_options_are_refused_with_what_was_expected(toy_queries, toy_log):
    queries = toy_queries([3], n_features=3, seed=0)
    with pytest.raises(ValueError, match="hessian must be one of pairs, constant"):
        propensity_objective(queries, toy_log([0], [1], n_queries=1), "dcg", hessian="newton")
    with pytest.raises(ValueError, match="no training query has a clicked document"):
        propensity_objective(queries, toy_log([], [], n_queries=1), "dcg")
    with pytest.raises(ValueError, match="unknown rank weight"):
        propensity_objective(queries, toy_log([0], [1], n_queries=1), "ndcg")
    # through the method, its options are checked before anything is fitted
    data = _toy_data(queries, toy_log([0], [1], n_queries=1))
    with pytest.raises(ValueError, match=r"hessian must be one of pairs, constant, found 'newton'"):
        train("tree-propdcg", data, {"hessian": "newton"})
    with pytest.raises(ValueError, match="unknown rank weight 'ndcg'"):
        train("tree-propdcg", data, {"metric": "ndcg"})
    with pytest.raises(ValueError, match=r"learning_rate must be a finite number > 0 \(or none\), found 0"):
        train("tree-propdcg", data, {"learning_rate": 0})
    with pytest.raises(ValueError, match="unknown rank weight 'prec@3'"):
        TreePropDCGOptions(metric="prec@3")


def test_one_tree_moves_each_leaf_by_at_most_the_learning_rate(toy_queries, toy_log):
    # The pair curvature bounds |Σg| by Σh in every leaf, so no score moves by more than
    # the learning rate in one tree (LightGBM's leaf value is -Σg/(Σh + lambda_l2)).
    queries = toy_queries([30] * 10, n_features=3, seed=1)
    rng = np.random.default_rng(0)
    query = np.repeat(np.arange(10), 4)
    doc = queries.offsets[query] + rng.integers(0, 30, size=len(query))
    log = toy_log(query, doc, propensity=rng.uniform(0.05, 1.0, size=len(query)), n_queries=10)
    scorer, info = train(
        "tree-propdcg", _toy_data(queries, log), {"learning_rate": 0.7, "num_leaves": 4, "n_estimators": 1}
    )
    assert scorer.booster.num_trees() == 1 and info["training_rows"] == 300
    scores = scorer.scores(queries.X)
    assert 0 < np.abs(scores).max() <= 0.7 + 1e-9


# -- the method on simulated clicks -------------------------------------------------------


def test_tree_propdcg_beats_lambdarank_on_position_biased_clicks(synthetic_dataset, make_training_data, avg_dcg_of):
    # 8 leaves per tree for both (chosen over 2..256 the test took ten times longer): the
    # gain over seeds 0-5 is +0.007..+0.091, mean 0.050 (0.067 over seeds 0-2 with the leaves
    # chosen on validation)
    gains = []
    for seed in range(3):
        _, data, relevant = make_training_data(synthetic_dataset, seed=seed, passes=50, eta=1.0, eps_neg=0.1)
        dcg = {}
        for method in ("tree-propdcg", "lambdarank"):
            scorer, _ = train(method, data, {**QUICK, "num_leaves": 8})
            dcg[method] = avg_dcg_of(scorer, synthetic_dataset, relevant, seed=seed)
        gains.append(dcg["tree-propdcg"] - dcg["lambdarank"])
    assert np.mean(gains) > 0.01, gains


def test_same_seed_same_model_and_another_seed_another(biased_clicks):
    dataset, _, data, _ = biased_clicks
    options = {**QUICK, "num_leaves": 8}
    first, info_first = train("tree-propdcg", data, options)
    second, info_second = train("tree-propdcg", data, options)
    assert first.model_string == second.model_string and info_first["chosen"] == info_second["chosen"]
    assert np.array_equal(first.scores(dataset.test.X), second.scores(dataset.test.X))
    other, _ = train("tree-propdcg", dataclasses.replace(data, seed=1), {**options, "n_estimators": 20})
    assert other.model_string != first.model_string
    # The early-stopping criterion is the method's own validation estimate.
    row = info_first["selection"][0]
    assert row["best_criterion"] == pytest.approx(data.estimate(first), abs=1e-12)
    assert first.booster.num_trees() == info_first["chosen"]["n_estimators"]
    assert info_first["metric"] == "dcg" and info_first["hessian"] == "pairs"
    # The validation scores early stopping kept at the best iteration are the model's own,
    # bit for bit, so selection reads them instead of predicting: only for that very array.
    vali_X = data.dataset.vali.X
    assert first.known is not None and first.known[0] is vali_X
    fresh = dataclasses.replace(first, known=None)
    assert np.array_equal(first.scores(vali_X), fresh.scores(vali_X))
    assert np.array_equal(first.scores(vali_X.copy()), fresh.scores(vali_X))
    assert fresh == first  # the kept scores are no part of the model
