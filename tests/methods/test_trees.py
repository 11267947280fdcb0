"""What the LightGBM methods share (``cltr.methods.trees``): the leaf grid and the lazy
import of LightGBM."""

import subprocess
import sys

import numpy as np
import pytest

from cltr.methods import train
from cltr.methods.trees import MIN_DATA_IN_LEAF, NUM_LEAVES_GRID, TreeOptions, lightgbm_params, usable_leaves
from cltr.pipeline.models import scorer_to_arrays


def test_leaf_grid_keeps_only_counts_the_rows_can_fill():
    assert usable_leaves(NUM_LEAVES_GRID, 100_000) == list(NUM_LEAVES_GRID)
    # 3,000 rows hold at most 150 leaves of 20: 128 may bind, 256 cannot, and is the last kept.
    assert usable_leaves(NUM_LEAVES_GRID, 3000) == list(NUM_LEAVES_GRID)
    assert usable_leaves(NUM_LEAVES_GRID, 2000) == [2, 4, 8, 16, 32, 64, 128]
    assert usable_leaves(NUM_LEAVES_GRID, 10 * MIN_DATA_IN_LEAF) == [2, 4, 8, 16]
    assert usable_leaves(NUM_LEAVES_GRID, 5) == [2]


def test_lightgbm_params_are_deterministic_and_checked():
    params = lightgbm_params(learning_rate=0.1, num_leaves=8, seed=3, threads=2)
    assert params["deterministic"] and params["seed"] == 3 and params["num_threads"] == 2
    assert params["feature_fraction_bynode"] == 0.5 and params["min_data_in_leaf"] == MIN_DATA_IN_LEAF
    with pytest.raises(ValueError, match="num_leaves must be an integer >= 2, found 1"):
        lightgbm_params(learning_rate=0.1, num_leaves=1, seed=0)
    with pytest.raises(ValueError, match="learning_rate must be positive"):
        lightgbm_params(learning_rate=0.0, num_leaves=2, seed=0)
    with pytest.raises(ValueError, match=r"num_leaves must be an integer >= 2.*found 1"):
        TreeOptions.from_dict({"num_leaves": 1})


def test_lightgbm_is_imported_only_when_a_tree_model_is_trained_or_loaded(tmp_path, noise_free_clicks):
    # The command line, the model store and every method module load without LightGBM ...
    code = (
        "import sys, cltr.cli, cltr.pipeline.models, cltr.pipeline.stages, cltr.methods; "
        "cltr.methods.methods(); sys.exit('lightgbm' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
    # ... and a fresh interpreter that knows only the model store loads a tree model
    # (the lightgbm kind's module is imported when such a model is read).
    dataset, _, data, _ = noise_free_clicks
    scorer, _ = train("lambdarank", data, {"learning_rate": 0.1, "num_leaves": 2, "n_estimators": 2})
    np.savez(tmp_path / "model.npz", **scorer_to_arrays(scorer))
    np.save(tmp_path / "X.npy", dataset.test.X)
    np.save(tmp_path / "scores.npy", scorer.scores(dataset.test.X))
    code = (
        "import sys, numpy as np; from cltr.pipeline.models import scorer_from_arrays; "
        f"s = scorer_from_arrays(dict(np.load({str(tmp_path / 'model.npz')!r}))); "
        f"X, expected = np.load({str(tmp_path / 'X.npy')!r}), np.load({str(tmp_path / 'scores.npy')!r}); "
        "same = np.array_equal(s.scores(X), expected); sys.exit(not (same and 'lightgbm' in sys.modules))"
    )
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_binned_datasets_are_shared_by_equal_matrices_and_only_those(monkeypatch):
    """_tree_sets bins a matrix once per process (the last _SETS_KEPT of them): equal
    contents give the very Dataset again, with the caller's validation array; any
    difference in the rows, labels, groups or threads bins anew."""
    from cltr.methods import trees

    monkeypatch.setattr(trees, "_SETS", type(trees._SETS)())
    rng = np.random.default_rng(0)
    X, vali = rng.normal(size=(200, 3)), rng.normal(size=(50, 3))
    label = np.zeros(200)
    first = trees._tree_sets(X, label=label, group=None, valid_X=vali, threads=1)
    copy = vali.copy()
    again = trees._tree_sets(X.copy(), label=label.copy(), group=None, valid_X=copy, threads=1)
    assert again.train is first.train and again.valid is first.valid and again.valid_X is copy
    other_rows = trees._tree_sets(X[:150], label=label[:150], group=None, valid_X=vali, threads=1)
    other_label = trees._tree_sets(X, label=label + 1, group=None, valid_X=vali, threads=1)
    other_threads = trees._tree_sets(X, label=label, group=None, valid_X=vali, threads=2)
    assert len({id(s.train) for s in (first, other_rows, other_label, other_threads)}) == 4
    assert len(trees._SETS) == trees._SETS_KEPT
    assert all(kept.valid_X is None for kept in trees._SETS.values())  # no caller's rows kept alive
