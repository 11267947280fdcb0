"""LambdaRank (LightGBM) on click labels: the labels, determinism, storage, early stopping,
and the learner held to a threshold (issue 5)."""

import dataclasses

import numpy as np
import pytest

from cltr.core.queries import Dataset
from cltr.methods import TrainingData, lambdarank, train
from cltr.methods.lambdarank import LambdaRankOptions, click_labels
from cltr.methods.trees import NUM_LEAVES_GRID, TreeScorer, usable_leaves
from cltr.pipeline.models import scorer_from_arrays, scorer_to_arrays

# A quick LightGBM grid for tests: the learning rate fixed, every leaf count, few trees.
QUICK = {"learning_rate": 0.1, "max_rounds": 60, "eval_every": 5, "patience": 20}


# -- click labels -----------------------------------------------------------------------


def test_document_labels_one_group_per_clicked_query_and_unclicked_queries_left_out(toy_queries, toy_log):
    queries = toy_queries([3, 2, 4])
    # Query 1 (rows 3-4) has no click; row 1 is clicked twice, row 7 once.
    log = toy_log(query=[0, 2, 0], doc=[1, 7, 1], pass_index=[0, 0, 1], n_queries=3, n_passes=2)
    labels = click_labels(queries, log)
    assert labels.group.tolist() == [3, 4] and labels.group_query.tolist() == [0, 2]
    assert labels.rows.tolist() == [0, 1, 2, 5, 6, 7, 8]
    assert labels.label.tolist() == [0, 1, 0, 0, 0, 1, 0]
    assert labels.group.sum() == len(labels.rows) == len(labels.label)


def test_session_labels_one_group_per_session_with_a_click(toy_queries, toy_log):
    queries = toy_queries([3, 2, 4])
    log = toy_log(query=[0, 2, 2, 0], doc=[1, 7, 8, 0], pass_index=[0, 0, 0, 1], n_queries=3, n_passes=2)
    labels = click_labels(queries, log, labels="sessions")
    assert labels.group_query.tolist() == [0, 2, 0]  # (pass 0, q0), (pass 0, q2), (pass 1, q0)
    assert labels.group.tolist() == [3, 4, 3] and labels.group.sum() == len(labels.rows)
    assert labels.rows.tolist() == [0, 1, 2, 5, 6, 7, 8, 0, 1, 2]
    assert labels.label.tolist() == [0, 1, 0, 0, 0, 1, 1, 1, 0, 0]


def test_group_sizes_sum_to_rows_on_simulated_clicks(noise_free_clicks):
    dataset, _, data, _ = noise_free_clicks
    for kind in ("documents", "sessions"):
        labels = click_labels(dataset.train, data.train_log, labels=kind)
        assert labels.group.sum() == len(labels.rows) == len(labels.label)
        assert labels.label.sum() > 0
        # Every group has a click, and every clicked query is a group.
        starts = np.concatenate([[0], np.cumsum(labels.group)[:-1]])
        assert np.all(np.add.reduceat(labels.label, starts) > 0)
    documents = click_labels(dataset.train, data.train_log)
    assert set(documents.group_query) == set(np.unique(data.train_log.query))


def test_bad_label_choice_and_empty_log_are_refused(toy_queries, toy_log):
    queries = toy_queries([3, 2, 4])
    with pytest.raises(ValueError, match="labels must be one of documents, sessions"):
        click_labels(queries, toy_log([], [], n_queries=3), labels="clicks")
    empty = click_labels(queries, toy_log([], [], n_queries=3))
    assert len(empty.group) == 0 and len(empty.rows) == 0
    with pytest.raises(ValueError, match=r"labels must be one of documents, sessions, found 'clicks'"):
        LambdaRankOptions.from_dict({"labels": "clicks"})
    # A log without a clicked training query leaves LambdaRank nothing to learn from: the
    # method says so (``methods.train`` refuses an empty log before that, for every method).
    data = TrainingData(
        Dataset("toy", queries, queries, queries, relevant_from=1),
        toy_log([], [], n_queries=3),
        toy_log([0], [1], n_queries=3),
        seed=0,
    )
    with pytest.raises(ValueError, match="no training query has a clicked document"):
        lambdarank.train(data, LambdaRankOptions(learning_rate=0.1, num_leaves=2, n_estimators=3))
    with pytest.raises(ValueError, match="the training click log has no clicks"):
        train("lambdarank", data, {"learning_rate": 0.1, "num_leaves": 2, "n_estimators": 3})


# -- determinism, storage, early stopping ---------------------------------------------------


def test_same_seed_same_model_and_scores_and_the_model_survives_storage(noise_free_clicks, tmp_path):
    dataset, _, data, _ = noise_free_clicks
    options = {**QUICK, "num_leaves": 8}
    first, info_first = train("lambdarank", data, options)
    second, info_second = train("lambdarank", data, options)
    assert first.model_string == second.model_string and info_first["chosen"] == info_second["chosen"]
    assert np.array_equal(first.scores(dataset.test.X), second.scores(dataset.test.X))
    other, _ = train("lambdarank", dataclasses.replace(data, seed=1), {**options, "n_estimators": 20})
    assert other.model_string != first.model_string
    # Stored as arrays in an .npz (no pickles), loaded back to the same scores.
    np.savez(tmp_path / "model.npz", **scorer_to_arrays(first))
    with np.load(tmp_path / "model.npz", allow_pickle=False) as stored:
        loaded = scorer_from_arrays(dict(stored))
    assert isinstance(loaded, TreeScorer)
    assert np.array_equal(loaded.scores(dataset.test.X), first.scores(dataset.test.X))


def test_early_stopping_uses_the_selection_estimate_and_n_estimators_disables_it(noise_free_clicks):
    dataset, _, data, _ = noise_free_clicks
    scorer, info = train("lambdarank", data, {**QUICK, "num_leaves": 4})
    row = info["selection"][0]
    # The criterion LightGBM stopped on is exactly the method's validation estimate.
    assert row["best_criterion"] == pytest.approx(data.estimate(scorer), abs=1e-12)
    assert info["validation_snips_avg_dcg"] == pytest.approx(data.estimate(scorer), abs=1e-12)
    assert scorer.booster.num_trees() == row["n_estimators"] == info["chosen"]["n_estimators"]
    assert row["rounds"] <= QUICK["max_rounds"] and row["n_estimators"] % QUICK["eval_every"] == 0
    fixed, info = train("lambdarank", data, {"learning_rate": 0.1, "num_leaves": 4, "n_estimators": 7})
    assert fixed.booster.num_trees() == 7 and info["chosen"] == {
        "learning_rate": 0.1,
        "num_leaves": 4,
        "n_estimators": 7,
    }


# -- the learner held to a threshold --------------------------------------------------------


def test_lambdarank_beats_production_on_noise_free_clicks(noise_free_clicks, avg_dcg_of):
    dataset, production, data, test_relevant = noise_free_clicks
    scorer, info = train("lambdarank", data, QUICK)
    # every leaf count of the grid that the training rows can fill (usable_leaves)
    assert [row["num_leaves"] for row in info["selection"]] == usable_leaves(NUM_LEAVES_GRID, info["training_rows"])
    lambdarank_dcg = avg_dcg_of(scorer, dataset, test_relevant)
    baseline = avg_dcg_of(production, dataset, test_relevant)
    assert lambdarank_dcg > baseline + 0.01, (lambdarank_dcg, baseline, info["chosen"])


def test_paper_preset_runs_the_papers_settings_and_selects_on_unweighted_clicked_dcg(biased_clicks):
    _, _, data, _ = biased_clicks
    options = LambdaRankOptions(preset="paper", max_rounds=30, eval_every=5, patience=10)
    scorer, info = train("lambdarank", data, options)
    assert info["chosen"]["learning_rate"] == 0.1 and info["chosen"]["num_leaves"] == 4  # LETOR width
    assert len(info["selection"]) == 1 and info["preset"] == "paper"
    # the criterion is the clicked documents' average DCG, every click weighted 1 ...
    assert info["validation_clicked_avg_dcg"] == pytest.approx(data.clicked_avg_dcg(scorer))
    # ... which is not the propensity-weighted SNIPS estimate on position-biased clicks
    assert info["validation_snips_avg_dcg"] == pytest.approx(data.estimate(scorer))
    assert abs(data.clicked_avg_dcg(scorer) - data.estimate(scorer)) > 1e-3
    assert lambdarank.paper_leaves(700) == 64 and lambdarank.paper_leaves(46) == 4
