"""The method registry and ``cltr.methods.train``: discovery, option validation, and what
every method shares (selection on validation clicks, never on test labels)."""

import dataclasses
import sys

import numpy as np
import pytest

import cltr.methods
from cltr.methods import Method, get, methods, train
from cltr.options import Options

ALL_METHODS = [
    "svm-rank",
    "lambdarank",
    "svm-proprank",
    "svm-propdcg",
    "deep-propdcg",
    "tree-propdcg",
    "unbiased-lambdamart",
    "two-tower",
    "tree-two-tower",
    "tree-pbm",
    "lightgbm-position",
    "xgboost-unbiased",
    "skyline",
]


def test_every_method_is_found_in_help_order():
    found = methods()
    assert list(found) == ALL_METHODS  # by the modules' ORDER
    for name, method in found.items():
        assert isinstance(method, Method) and method.name == name
        assert method.label and method.summary and callable(method.train)
        assert issubclass(method.options, Options) and method.options.option_fields()
        assert method.selects_on == ("labels" if name == "skyline" else "clicks")
        assert get(name) is method
    with pytest.raises(ValueError, match="unknown method 'svm-proprnk'; known: svm-rank, lambdarank"):
        get("svm-proprnk")


def test_options_are_validated_before_any_work():
    # options are parsed before the data are looked at: no data needed to see the errors
    with pytest.raises(
        ValueError,
        match=r"options of svm-rank: unknown option 'tols' \(did you mean 'tol'\?\); "
        r"valid: backend, scheduler, chunks, criterion, C, grid, tol",
    ):
        train("svm-rank", None, {"tols": 1e-3})
    with pytest.raises(ValueError, match=r"max_ccp_iter must be an integer >= 1, found 0"):
        train("svm-propdcg", None, {"max_ccp_iter": 0})
    with pytest.raises(ValueError, match="unknown rank weight 'ndcg'"):
        train("tree-propdcg", None, {"metric": "ndcg"})


def test_an_empty_training_log_is_refused(noise_free_clicks):
    _, _, data, _ = noise_free_clicks
    empty = data.train_log.first_passes(1)
    empty = dataclasses.replace(
        empty,
        query=empty.query[:0],
        doc=empty.doc[:0],
        rank=empty.rank[:0],
        propensity=empty.propensity[:0],
        pass_index=empty.pass_index[:0],
    )
    for name in ALL_METHODS:
        with pytest.raises(ValueError, match="the training click log has no clicks"):
            train(name, dataclasses.replace(data, train_log=empty), {})


def test_options_instance_and_dict_train_the_same_model(noise_free_clicks):
    _, _, data, _ = noise_free_clicks
    method = get("svm-proprank")
    from_dict, _ = train("svm-proprank", data, {"C": 1.0})
    from_instance, _ = train("svm-proprank", data, method.options(C=1.0))
    np.testing.assert_array_equal(from_dict.w, from_instance.w)


def test_test_labels_are_never_used_for_selection(noise_free_clicks):
    dataset, _, data, _ = noise_free_clicks
    rng = np.random.default_rng(7)
    corrupted_test = dataclasses.replace(dataset.test, labels=rng.permutation(dataset.test.labels[::-1]))
    corrupted = dataclasses.replace(data, dataset=dataclasses.replace(dataset, test=corrupted_test))
    quick_trees = {"learning_rate": 0.1, "max_rounds": 30, "eval_every": 5, "patience": 20}
    for method, options in (("lambdarank", quick_trees), ("skyline", {})):
        _, clean = train(method, data, options)
        _, dirty = train(method, corrupted, options)
        assert clean["chosen"] == dirty["chosen"], method


FAKE_METHOD = """
from dataclasses import dataclass

import numpy as np

from cltr.core.scorers import LinearScorer
from cltr.methods import Method
from cltr.options import Options, option

ORDER = 15


@dataclass(frozen=True)
class ConstantOptions(Options):
    value: float = option(0.0, "Every weight.")


def train(data, options, *, progress=None):
    return LinearScorer(np.full(data.dataset.train.n_features, options.value)), {"chosen": {}}


METHOD = Method(name="constant", label="Constant", summary="Every weight the same.", options=ConstantOptions,
                train=train)
"""


def test_a_module_defining_METHOD_is_discovered(tmp_path, monkeypatch, noise_free_clicks):
    _, _, data, _ = noise_free_clicks
    (tmp_path / "constant.py").write_text(FAKE_METHOD)
    (tmp_path / "shared_bits.py").write_text("HELPER = 1\n")  # no METHOD: machinery, not a method
    modules = ("cltr.methods.constant", "cltr.methods.shared_bits")
    monkeypatch.setattr(cltr.methods, "__path__", [*cltr.methods.__path__, str(tmp_path)])
    monkeypatch.setattr(cltr.methods, "_REGISTRY", None)
    try:
        found = methods()
        assert list(found) == ["svm-rank", "constant", *ALL_METHODS[1:]]  # its ORDER, 15
        scorer, _ = train("constant", data, {"value": 2.0})
        assert np.all(scorer.w == 2.0)
        with pytest.raises(ValueError, match="options of constant: unknown option 'valu'"):
            train("constant", data, {"valu": 2.0})
    finally:
        for name in modules:
            sys.modules.pop(name, None)
    monkeypatch.undo()
    assert list(methods()) == ALL_METHODS
