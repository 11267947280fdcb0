"""Tree PropDCG: LightGBM on the propensity-weighted hinge bound R(f) (issue 7)."""

import dataclasses

import numpy as np
import pytest
from click.testing import CliRunner

from cltr.cli import main
from cltr.clicks import ClickLog
from cltr.datasets import Queries, make_synthetic
from cltr.lambdarank import (MIN_DATA_IN_LEAF, NUM_LEAVES_GRID, PropensityObjective, fit_tree_propdcg,
                             propensity_objective, usable_leaves)
from cltr.methods import TrainingData, train
from cltr.objectives import risk
from cltr.pipeline import ClickSettings, evaluate, produce, simulate, stream


def _log(query, doc, propensity, n_queries, pass_index=None):
    n = len(doc)
    return ClickLog(query=np.array(query, dtype=np.int64), doc=np.array(doc, dtype=np.int64),
                    rank=np.ones(n, dtype=np.int64), propensity=np.array(propensity, dtype=np.float64),
                    pass_index=np.zeros(n, dtype=np.int64) if pass_index is None else np.array(pass_index),
                    n_passes=1, n_queries=n_queries)


def _queries(sizes, n_features=3, seed=0):
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    X = np.random.default_rng(seed).normal(size=(int(offsets[-1]), n_features))
    return Queries(X=X, labels=np.zeros(len(X), dtype=np.int64), qid=np.arange(len(sizes)) + 1, offsets=offsets)


# -- the objective handed to LightGBM ----------------------------------------------------

@pytest.mark.parametrize("metric", ["dcg", "rbp:0.8", "avgrank"])
def test_gradient_given_to_lightgbm_is_n_times_finite_differences_of_the_risk(metric):
    rng = np.random.default_rng(3)
    queries = _queries([4, 3, 5, 2])
    offsets = queries.offsets
    # Clicks with repeats (same document and propensity twice: merged into one example),
    # a query without clicks (query 3: left out of the rows) and varied propensities.
    query = np.array([0, 0, 0, 2, 2, 1, 2])
    doc = offsets[query] + np.array([1, 1, 3, 0, 4, 2, 0])
    propensity = np.array([0.5, 0.5, 0.2, 1.0, 0.25, 0.8, 0.125])
    log = _log(query, doc, propensity, n_queries=4)
    rows, objective = propensity_objective(queries, log, metric)
    assert rows.tolist() == list(range(int(offsets[3])))  # queries 0-2; query 3 has no click
    assert len(objective.click_doc) == len(log) - 1  # the repeated click merged
    scores = rng.normal(scale=1.5, size=len(rows))

    def total_risk(s):
        full = np.zeros(queries.n_docs)
        full[rows] = s
        return len(log) * risk(full, offsets, log.query, log.doc, log.propensity, metric)

    # away from kinks: no pair's score difference lies near the hinge's corner at 1
    diff = np.subtract.outer(scores, scores)
    assert np.min(np.abs(diff - 1.0)) > 1e-3
    grad, hess = objective(scores, None)
    step = 1e-6
    numeric = np.array([(total_risk(scores + step * e) - total_risk(scores - step * e)) / (2 * step)
                        for e in np.eye(len(scores))])
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-7)
    # The curvature is positive and bounds the gradient per document (leaf steps <= 1).
    assert np.all(hess > 0) and np.all(np.abs(grad) <= hess * (1 + 1e-12))


def test_unit_propensities_and_average_rank_give_the_naive_pairwise_hinge_gradient():
    # One query of four documents with scores s, clicks on documents 0 and 1 (propensity 1);
    # a second query without clicks, left out.
    queries = _queries([4, 2])
    log = _log([0, 0], [0, 1], [1.0, 1.0], n_queries=2)
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
    constant = PropensityObjective(objective.offsets, objective.click_query, objective.click_doc,
                                   objective.propensity, "avgrank", hessian="constant")
    _, flat = constant(s, None)
    # At all-zero scores every pair is active: each click puts 3 on its own document and 1
    # on each other one, 4 + 4 + 2 + 2 = 12 over 4 documents.
    np.testing.assert_allclose(flat, np.full(4, 3.0))


def test_bad_options_are_refused_with_what_was_expected():
    queries = _queries([3])
    with pytest.raises(ValueError, match="hessian must be one of pairs, constant"):
        propensity_objective(queries, _log([0], [1], [1.0], 1), "dcg", hessian="newton")
    with pytest.raises(ValueError, match="no training query has a clicked document"):
        propensity_objective(queries, _log([], [], [], 1), "dcg")
    with pytest.raises(ValueError, match="unknown rank weight"):
        propensity_objective(queries, _log([0], [1], [1.0], 1), "ndcg")
    rows, objective = propensity_objective(queries, _log([0], [1], [1.0], 1), "dcg")
    with pytest.raises(ValueError, match="X has 2 rows, the objective is over 3"):
        fit_tree_propdcg(queries.X[:2], objective, learning_rate=0.1, num_leaves=2, seed=0, n_estimators=1)
    with pytest.raises(ValueError, match="early stopping needs valid_X and criterion"):
        fit_tree_propdcg(queries.X[rows], objective, learning_rate=0.1, num_leaves=2, seed=0)


def test_leaf_grid_keeps_only_counts_the_rows_can_fill():
    assert usable_leaves(NUM_LEAVES_GRID, 100_000) == list(NUM_LEAVES_GRID)
    # 3,000 rows hold at most 150 leaves of 20: 128 may bind, 256 cannot, and is the last kept.
    assert usable_leaves(NUM_LEAVES_GRID, 3000) == list(NUM_LEAVES_GRID)
    assert usable_leaves(NUM_LEAVES_GRID, 2000) == [2, 4, 8, 16, 32, 64, 128]
    assert usable_leaves(NUM_LEAVES_GRID, 10 * MIN_DATA_IN_LEAF) == [2, 4, 8, 16]
    assert usable_leaves(NUM_LEAVES_GRID, 5) == [2]


def test_one_tree_moves_each_leaf_by_at_most_the_learning_rate():
    # The pair curvature bounds |Σg| by Σh in every leaf, so no score moves by more than
    # the learning rate in one tree (LightGBM's leaf value is -Σg/(Σh + lambda_l2)).
    queries = _queries([30] * 10, seed=1)
    rng = np.random.default_rng(0)
    query = np.repeat(np.arange(10), 4)
    doc = queries.offsets[query] + rng.integers(0, 30, size=len(query))
    log = _log(query, doc, rng.uniform(0.05, 1.0, size=len(query)), n_queries=10)
    rows, objective = propensity_objective(queries, log, "dcg")
    scorer, _ = fit_tree_propdcg(queries.X[rows], objective, learning_rate=0.7, num_leaves=4, seed=0,
                                 n_estimators=1)
    scores = scorer.scores(queries.X[rows])
    assert 0 < np.abs(scores).max() <= 0.7 + 1e-9


# -- the method on simulated clicks -------------------------------------------------------

def _setup(dataset, seed, passes):
    production, _ = produce(dataset, seed=seed)
    relevant = {s: q.relevant(dataset.relevant_from) for s, q in dataset.splits().items()}
    settings = ClickSettings(eta=1.0, eps_neg=0.1, passes=passes)  # position bias and noise
    logs = {split: simulate(getattr(dataset, split), relevant[split], production, settings,
                            rng_presentation=stream(seed, "presentation", split),
                            rng_clicks=stream(seed, "clicks", split)) for split in ("train", "vali")}
    return production, TrainingData(dataset, logs["train"], logs["vali"], seed), relevant["test"]


@pytest.fixture(scope="module")
def synthetic():
    dataset = make_synthetic()
    return dataset, _setup(dataset, 0, passes=20)


# Learning rate fixed (leaves and trees still chosen on validation clicks) to keep tests quick.
QUICK = {"learning_rate": 0.1, "max_rounds": 100}


def test_tree_propdcg_beats_lambdarank_on_position_biased_clicks():
    dataset = make_synthetic()
    gains = []
    for seed in range(3):
        _, data, relevant = _setup(dataset, seed, passes=50)
        dcg = {}
        for method in ("tree-propdcg", "lambdarank"):
            scorer, _ = train(method, data, QUICK)
            dcg[method] = evaluate(scorer, dataset.test, relevant, rng=stream(seed, "evaluate"))["avg_dcg"]
        gains.append(dcg["tree-propdcg"] - dcg["lambdarank"])
    assert np.mean(gains) > 0.01, gains


def test_same_seed_same_model_and_another_seed_another(synthetic):
    dataset, (_, data, _) = synthetic
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


# -- command line -------------------------------------------------------------------------

def _invoke(workdir, *args):
    result = CliRunner().invoke(main, ["--workdir", str(workdir), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_cli_trains_and_evaluates_tree_propdcg(tmp_path):
    _invoke(tmp_path, "prepare", "synthetic", "--queries", "60")
    _invoke(tmp_path, "simulate", "--passes", "10")
    out = _invoke(tmp_path, "train", "tree-propdcg", "--learning-rate", "0.1", "--num-leaves", "4",
                  "--max-rounds", "20", "--eval-every", "5")
    assert "tree-propdcg, learning_rate = 0.1, num_leaves = 4, n_estimators = " in out
    assert "test Avg DCG" in _invoke(tmp_path, "evaluate")
    out = _invoke(tmp_path, "train", "tree-propdcg", "--learning-rate", "0.1", "--num-leaves", "2",
                  "--n-estimators", "5", "--metric", "rbp:0.8", "--hessian", "constant")
    assert "n_estimators = 5" in out
    result = CliRunner().invoke(main, ["--workdir", str(tmp_path), "train", "tree-propdcg", "--metric", "ndcg"])
    assert result.exit_code != 0 and "ndcg" in result.output
    result = CliRunner().invoke(main, ["train", "tree-propdcg", "--help"])
    assert result.exit_code == 0 and "--hessian" in result.output
