"""LambdaRank (LightGBM) on click labels, naive SVM Rank and the skyline (issue 5)."""

import dataclasses
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from cltr.cli import main
from cltr.clicks import ClickLog
from cltr.datasets import Queries, make_synthetic
from cltr.lambdarank import NUM_LEAVES_GRID, TreeScorer, click_labels, fit_lambdarank, usable_leaves
from cltr.methods import TrainingData, train
from cltr.models import scorer_from_arrays, scorer_to_arrays
from cltr.pipeline import ClickSettings, evaluate, produce, simulate, stream
from cltr.svm import solve_pairwise_svm

# A quick LightGBM grid for tests: the learning rate fixed, every leaf count, few trees.
QUICK = {"learning_rate": 0.1, "max_rounds": 60, "eval_every": 5, "patience": 20}


def _log(query, doc, pass_index, n_queries, n_passes):
    n = len(doc)
    return ClickLog(query=np.array(query, dtype=np.int64), doc=np.array(doc, dtype=np.int64),
                    rank=np.ones(n, dtype=np.int64), propensity=np.ones(n),
                    pass_index=np.array(pass_index, dtype=np.int64), n_passes=n_passes, n_queries=n_queries)


def _tiny_queries():
    sizes = [3, 2, 4]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    X = np.arange(9 * 2, dtype=np.float64).reshape(9, 2)
    return Queries(X=X, labels=np.zeros(9, dtype=np.int64), qid=np.array([1, 2, 3]), offsets=offsets)


def _setup(dataset, seed=0, passes=20):
    production, _ = produce(dataset, seed=seed, fraction=0.05)
    relevant = {s: q.relevant(dataset.relevant_from) for s, q in dataset.splits().items()}
    settings = ClickSettings(eps_neg=0.0, passes=passes)  # noise-free clicks
    logs = {split: simulate(getattr(dataset, split), relevant[split], production, settings,
                            rng_presentation=stream(seed, "presentation", split),
                            rng_clicks=stream(seed, "clicks", split)) for split in ("train", "vali")}
    return production, TrainingData(dataset, logs["train"], logs["vali"], seed), relevant["test"]


@pytest.fixture(scope="module")
def synthetic():
    dataset = make_synthetic(n_queries=300, seed=0)
    production, data, test_relevant = _setup(dataset)
    return dataset, production, data, test_relevant


def _test_dcg(scorer, dataset, relevant, seed=0):
    return evaluate(scorer, dataset.test, relevant, rng=stream(seed, "evaluate"))["avg_dcg"]


# -- click labels -----------------------------------------------------------------------

def test_document_labels_one_group_per_clicked_query_and_unclicked_queries_left_out():
    queries = _tiny_queries()
    # Query 1 (rows 3-4) has no click; row 1 is clicked twice, row 7 once.
    log = _log(query=[0, 2, 0], doc=[1, 7, 1], pass_index=[0, 0, 1], n_queries=3, n_passes=2)
    labels = click_labels(queries, log)
    assert labels.group.tolist() == [3, 4] and labels.group_query.tolist() == [0, 2]
    assert labels.rows.tolist() == [0, 1, 2, 5, 6, 7, 8]
    assert labels.label.tolist() == [0, 1, 0, 0, 0, 1, 0]
    assert labels.group.sum() == len(labels.rows) == len(labels.label)


def test_session_labels_one_group_per_session_with_a_click():
    queries = _tiny_queries()
    log = _log(query=[0, 2, 2, 0], doc=[1, 7, 8, 0], pass_index=[0, 0, 0, 1], n_queries=3, n_passes=2)
    labels = click_labels(queries, log, labels="sessions")
    assert labels.group_query.tolist() == [0, 2, 0]  # (pass 0, q0), (pass 0, q2), (pass 1, q0)
    assert labels.group.tolist() == [3, 4, 3] and labels.group.sum() == len(labels.rows)
    assert labels.rows.tolist() == [0, 1, 2, 5, 6, 7, 8, 0, 1, 2]
    assert labels.label.tolist() == [0, 1, 0, 0, 0, 1, 1, 1, 0, 0]


def test_group_sizes_sum_to_rows_on_simulated_clicks(synthetic):
    dataset, _, data, _ = synthetic
    for kind in ("documents", "sessions"):
        labels = click_labels(dataset.train, data.train_log, labels=kind)
        assert labels.group.sum() == len(labels.rows) == len(labels.label)
        assert labels.label.sum() > 0
        # Every group has a click, and every clicked query is a group.
        starts = np.concatenate([[0], np.cumsum(labels.group)[:-1]])
        assert np.all(np.add.reduceat(labels.label, starts) > 0)
    documents = click_labels(dataset.train, data.train_log)
    assert set(documents.group_query) == set(np.unique(data.train_log.query))


def test_bad_label_choice_and_empty_log_are_refused():
    queries = _tiny_queries()
    with pytest.raises(ValueError, match="labels must be one of documents, sessions"):
        click_labels(queries, _log([], [], [], 3, 1), labels="clicks")
    empty = click_labels(queries, _log([], [], [], 3, 1))
    assert len(empty.group) == 0 and len(empty.rows) == 0
    with pytest.raises(ValueError, match="no training query has a clicked document"):
        fit_lambdarank(queries.X, empty, learning_rate=0.1, num_leaves=2, seed=0, n_estimators=3)


# -- determinism, storage, early stopping ---------------------------------------------------

def test_same_seed_same_model_and_scores_and_the_model_survives_storage(synthetic, tmp_path):
    dataset, _, data, _ = synthetic
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


def test_early_stopping_uses_the_selection_estimate_and_n_estimators_disables_it(synthetic):
    dataset, _, data, _ = synthetic
    scorer, info = train("lambdarank", data, {**QUICK, "num_leaves": 4})
    row = info["selection"][0]
    # The criterion LightGBM stopped on is exactly the method's validation estimate.
    assert row["best_criterion"] == pytest.approx(data.estimate(scorer), abs=1e-12)
    assert info["validation_snips_avg_dcg"] == pytest.approx(data.estimate(scorer), abs=1e-12)
    assert scorer.booster.num_trees() == row["n_estimators"] == info["chosen"]["n_estimators"]
    assert row["rounds"] <= QUICK["max_rounds"] and row["n_estimators"] % QUICK["eval_every"] == 0
    fixed, info = train("lambdarank", data, {"learning_rate": 0.1, "num_leaves": 4, "n_estimators": 7})
    assert fixed.booster.num_trees() == 7 and info["chosen"] == {"learning_rate": 0.1, "num_leaves": 4,
                                                                  "n_estimators": 7}


# -- learners held to thresholds ----------------------------------------------------------

def test_lambdarank_beats_production_on_noise_free_clicks(synthetic):
    dataset, production, data, test_relevant = synthetic
    scorer, info = train("lambdarank", data, QUICK)
    # every leaf count of the grid that the training rows can fill (usable_leaves)
    assert [row["num_leaves"] for row in info["selection"]] == usable_leaves(NUM_LEAVES_GRID, info["training_rows"])
    lambdarank, baseline = _test_dcg(scorer, dataset, test_relevant), _test_dcg(production, dataset, test_relevant)
    assert lambdarank > baseline + 0.01, (lambdarank, baseline, info["chosen"])


def test_skyline_beats_every_click_trained_linear_model(synthetic):
    dataset, _, data, test_relevant = synthetic
    skyline, info = train("skyline", data, {})
    assert set(info["selection"][0]) >= {"C", "validation_label_avg_dcg"}
    assert "validation_snips_avg_dcg" not in info["selection"][0]
    sky = _test_dcg(skyline, dataset, test_relevant)
    for method in ("svm-rank", "svm-proprank"):
        scorer, _ = train(method, data, {})
        assert sky > _test_dcg(scorer, dataset, test_relevant), method


def test_svm_rank_is_the_linear_svm_on_clicks_with_unit_costs(synthetic):
    dataset, _, data, _ = synthetic
    scorer, _ = train("svm-rank", data, {"C": 1.0, "tol": 1e-6})
    train_split, log = dataset.train, data.train_log
    reference = solve_pairwise_svm(train_split.X, train_split.offsets, log.query, log.doc,
                                   np.ones(len(log)), 1.0, tol=1e-6)
    np.testing.assert_allclose(scorer.w, reference.w, rtol=1e-3, atol=1e-3 * np.abs(reference.w).max())
    weighted = solve_pairwise_svm(train_split.X, train_split.offsets, log.query, log.doc,
                                  1.0 / log.propensity, 1.0, tol=1e-6)
    assert np.abs(weighted.w - scorer.w).max() > 10 * np.abs(reference.w - scorer.w).max()


def test_test_labels_are_never_used_for_selection(synthetic):
    dataset, _, data, _ = synthetic
    rng = np.random.default_rng(7)
    corrupted_test = dataclasses.replace(dataset.test, labels=rng.permutation(dataset.test.labels[::-1]))
    corrupted = dataclasses.replace(data, dataset=dataclasses.replace(dataset, test=corrupted_test))
    for method, options in (("lambdarank", {**QUICK, "max_rounds": 30}), ("skyline", {})):
        _, clean = train(method, data, options)
        _, dirty = train(method, corrupted, options)
        assert clean["chosen"] == dirty["chosen"], method


def test_lightgbm_is_imported_only_when_a_tree_model_is_trained_or_loaded(tmp_path):
    code = "import sys, cltr.cli, cltr.models; sys.exit('lightgbm' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
    queries = _tiny_queries()
    labels = click_labels(queries, _log([0, 2], [1, 7], [0, 0], 3, 1))
    scorer, _ = fit_lambdarank(queries.X, labels, learning_rate=0.1, num_leaves=2, seed=0, n_estimators=2)
    np.savez(tmp_path / "model.npz", **scorer_to_arrays(scorer))
    # A fresh interpreter that knows only cltr.models loads the tree model (lazy registration).
    code = ("import sys, numpy as np; from cltr.models import scorer_from_arrays; "
            f"s = scorer_from_arrays(dict(np.load({str(tmp_path / 'model.npz')!r}))); "
            f"sys.exit(not np.array_equal(s.scores(np.arange(18.).reshape(9, 2)), np.array({scorer.scores(queries.X).tolist()})))")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


# -- command line -------------------------------------------------------------------------

def _invoke(workdir, *args):
    result = CliRunner().invoke(main, ["--workdir", str(workdir), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_cli_trains_and_evaluates_lambdarank_and_skyline(tmp_path):
    _invoke(tmp_path, "prepare", "synthetic", "--queries", "60")
    _invoke(tmp_path, "simulate", "--passes", "10")
    out = _invoke(tmp_path, "train", "lambdarank", "--learning-rate", "0.1", "--num-leaves", "4",
                  "--max-rounds", "20", "--eval-every", "5")
    assert "lambdarank, learning_rate = 0.1, num_leaves = 4, n_estimators = " in out
    assert "test Avg DCG" in _invoke(tmp_path, "evaluate")
    out = _invoke(tmp_path, "train", "lambdarank", "--num-leaves", "2", "--learning-rate", "0.1",
                  "--n-estimators", "5", "--labels", "sessions")
    assert "n_estimators = 5" in out
    out = _invoke(tmp_path, "train", "skyline", "--grid", "0.1,1")
    assert "skyline, C = " in out and "validation_label_avg_dcg" in out
    assert "test Avg DCG" in _invoke(tmp_path, "evaluate")
    result = CliRunner().invoke(main, ["--workdir", str(tmp_path), "train", "lambdarank", "--labels", "clicks"])
    assert result.exit_code != 0 and "clicks" in result.output
    for command in (["train", "lambdarank"], ["train", "skyline"]):
        result = CliRunner().invoke(main, [*command, "--help"])
        assert result.exit_code == 0 and "Usage" in result.output
