"""Trained models as artifacts (``cltr.pipeline.models``): any scorer as plain arrays and back,
read by its kind's entry in ``cltr.scorers``."""

import numpy as np
import pytest

from cltr import methods, scorers
from cltr.core.mlp import init_mlp
from cltr.core.scorers import LinearScorer
from cltr.pipeline.models import scorer_from_arrays, scorer_to_arrays


def test_linear_and_mlp_scorers_round_trip_through_an_npz(tmp_path):
    X = np.random.default_rng(0).normal(size=(6, 3))
    for scorer in (LinearScorer(np.array([1.0, -2.0, 0.5])), init_mlp(3, hidden=(4,), rng=np.random.default_rng(1))):
        np.savez(tmp_path / "model.npz", **scorer_to_arrays(scorer))
        with np.load(tmp_path / "model.npz", allow_pickle=False) as stored:
            loaded = scorer_from_arrays(dict(stored))
        assert type(loaded) is type(scorer) and loaded.kind == scorer.kind
        np.testing.assert_array_equal(loaded.scores(X), scorer.scores(X))
        assert scorers.get(scorer.kind).width(loaded) == 3
    assert list(scorers.scorer_kinds()) == ["linear", "mlp", "lightgbm", "xgboost"]


def test_every_method_names_a_registered_scorer_kind():
    declared = {method.scorer for method in methods.methods().values()}
    assert declared <= set(scorers.scorer_kinds()) and {"linear", "mlp", "lightgbm"} <= declared


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="unknown scorer kind 'forest'; known: linear, mlp, lightgbm, xgboost"):
        scorer_from_arrays({"scorer_kind": np.array("forest")})
