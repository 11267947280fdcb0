"""A click of propensity 1e-300 (accepted by import) and C = 1e300 through ``cltr.methods.train``:
every learner says what is wrong, an extreme weight or C, instead of an IndexError from the
SVM's plane QP or a "diverged, try smaller learning rates" (issue 21)."""

import numpy as np
import pytest

from cltr.core.queries import Dataset
from cltr.methods import TrainingData, train


@pytest.fixture
def tiny_data(toy_queries, toy_log):
    """Six queries of five documents per split; one click per query, the one in query 2 of
    propensity 1e-300."""
    labels = np.tile([1, 0, 0, 0, 0], 6)
    splits = {
        name: toy_queries([5] * 6, n_features=3, seed=seed, labels=labels)
        for seed, name in enumerate(("train", "vali", "test"))
    }
    dataset = Dataset("tiny", splits["train"], splits["vali"], splits["test"], relevant_from=1)
    propensity = np.full(6, 0.5)
    propensity[2] = 1e-300
    train_log = toy_log(range(6), np.arange(6) * 5, n_queries=6, propensity=propensity)
    vali_log = toy_log(range(6), np.arange(6) * 5, n_queries=6, propensity=np.full(6, 0.5))
    return TrainingData(dataset, train_log, vali_log, seed=0)


@pytest.mark.parametrize("method", ["svm-proprank", "svm-propdcg"])
def test_svms_refuse_a_click_of_propensity_1e_300_naming_it(tiny_data, method):
    with pytest.raises(
        ValueError,
        match=r"example weights up to (1e\+300|5.19e\+298) \(example 2 of 6; "
        r"a weight 1/q means a propensity q of (1e-300|1.93e-299)\) is too extreme "
        r".*clip the propensities",
    ):
        train(method, tiny_data, {"C": 1.0})


def test_svm_rank_refuses_C_1e300_naming_it(tiny_data):
    with pytest.raises(ValueError, match=r"C = 1e\+300 .* too extreme for the SVM solver.*use a smaller C$"):
        train("svm-rank", tiny_data, {"C": 1e300})


def test_deep_names_the_extreme_weight_rather_than_the_learning_rate(tiny_data):
    with pytest.raises(
        ValueError,
        match=r"diverged .* an extreme example weight is the cause: example 2 weighs "
        r"1e\+300 where the median weight is 2.*clip the propensities",
    ):
        train("deep-propdcg", tiny_data, {"hidden": (4,), "epochs": 2, "lr": 0.01})
