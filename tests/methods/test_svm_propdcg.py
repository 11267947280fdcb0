"""SVM PropDCG (paper Sec. 4.1) on simulated clicks: the CCP objective never rises, and the
DCG bound does at least as well as PropRank's Avg Rank bound."""

from itertools import pairwise

import numpy as np
import pytest

from cltr.core.ranking import evaluate
from cltr.core.seeds import stream
from cltr.data.synthetic import make_synthetic
from cltr.methods import train
from cltr.methods.svm_propdcg import PropDCGOptions


@pytest.fixture(scope="module")
def synthetic_runs(make_training_data):
    """Four repetitions on the synthetic dataset (eta 1, eps_neg 0.1): test Avg DCG per method."""
    dataset = make_synthetic(n_queries=240, seed=3)
    runs = []
    for seed in range(4):
        _, data, test_relevant = make_training_data(dataset, seed=seed, passes=40, eta=1.0, eps_neg=0.1)
        run = {"data": data}
        for method in ("svm-proprank", "svm-propdcg"):
            scorer, info = train(method, data, {"grid": [0.1, 1.0, 10.0, 100.0]})
            run[method] = evaluate(
                scorer, dataset.test, test_relevant, rng=stream(seed, "evaluate"), dcg_base=dataset.dcg_base
            )["avg_dcg"]
            run[method + " info"] = info
        runs.append(run)
    return runs


def test_objective_never_increases_on_synthetic_data(synthetic_runs):
    for run in synthetic_runs:
        for row in run["svm-propdcg info"]["selection"]:
            values = [step["objective"] for step in row["ccp_trace"]]
            assert all(b <= a + 1e-12 * abs(a) for a, b in pairwise(values)), row["C"]


def test_propdcg_at_least_proprank_on_synthetic_data(synthetic_runs):
    propdcg = np.mean([run["svm-propdcg"] for run in synthetic_runs])
    proprank = np.mean([run["svm-proprank"] for run in synthetic_runs])
    assert propdcg >= proprank - 0.005, (propdcg, proprank)


def test_ccp_trace_is_recorded_for_every_C(synthetic_runs):
    info = synthetic_runs[0]["svm-propdcg info"]
    assert [row["C"] for row in info["selection"]] == [0.1, 1.0, 10.0, 100.0] and info["metric"] == "dcg"
    for row in info["selection"]:
        assert len(row["ccp_trace"]) == row["ccp_iterations"] >= 1
        assert [step["iteration"] for step in row["ccp_trace"]] == list(range(1, row["ccp_iterations"] + 1))
        assert row["initial_objective"] >= row["ccp_trace"][0]["objective"]
        # the training estimate is recorded only when asked (the ccp figure): it costs a tenth
        assert not any(np.isfinite(step["train_snips_avg_dcg"]) for step in row["ccp_trace"])


def test_the_ccp_trace_records_the_training_estimate_when_asked(make_training_data):
    dataset = make_synthetic(n_queries=60, seed=4)
    _, data, _ = make_training_data(dataset, seed=1, passes=10, eta=1.0, eps_neg=0.1)
    _, info = train("svm-propdcg", data, {"C": 10.0, "init": "zero", "trace_estimate": True, "max_ccp_iter": 3})
    row = info["selection"][0]
    assert np.isfinite(row["initial_train_snips_avg_dcg"])
    assert all(np.isfinite(step["train_snips_avg_dcg"]) for step in row["ccp_trace"])
    # the same model either way: the estimate only watches
    _, plain = train("svm-propdcg", data, {"C": 10.0, "init": "zero", "max_ccp_iter": 3})
    assert [s["objective"] for s in plain["selection"][0]["ccp_trace"]] == [s["objective"] for s in row["ccp_trace"]]


def test_options_say_what_must_hold():
    with pytest.raises(ValueError, match=r"unknown option 'max_ccp_iters' \(did you mean 'max_ccp_iter'\?\)"):
        PropDCGOptions.from_dict({"max_ccp_iters": 3})
    with pytest.raises(ValueError, match=r"init must be one of auto, zero, proprank, found 'random'"):
        PropDCGOptions.from_dict({"init": "random"})
    with pytest.raises(ValueError, match="unknown rank weight 'ndcg'"):
        PropDCGOptions.from_dict({"metric": "ndcg"})
    assert PropDCGOptions.from_dict({"metric": "rbp:0.8", "max_ccp_iter": 3.0}).max_ccp_iter == 3


def test_proprank_init_starts_the_ccp_at_the_svm_proprank_solution(make_training_data):
    # --init proprank warm-starts CCP at SVM PropRank's w (costs 1/q_i, the same C): the
    # recorded starting objective and training estimate are those of PropRank's model (not
    # of w = 0). With costs q_i instead of 1/q_i the start would be another w.
    from cltr.core.ccp import slack_sums, true_objective
    from cltr.core.objectives import rank_weight
    from cltr.core.ranking import validation_estimate

    dataset = make_synthetic(n_queries=60, seed=4)
    _, data, _ = make_training_data(dataset, seed=1, passes=10, eta=1.0, eps_neg=0.1)
    split, log = dataset.train, data.train_log
    assert np.ptp(log.propensity) > 0.5  # clicks from many ranks: 1/q and q give other solutions
    proprank, _ = train("svm-proprank", data, {"C": 10.0, "tol": 1e-6})
    _, info = train(
        "svm-propdcg", data, {"C": 10.0, "tol": 1e-6, "init": "proprank", "max_ccp_iter": 1, "trace_estimate": True}
    )
    _, zero = train("svm-propdcg", data, {"C": 10.0, "tol": 1e-6, "init": "zero", "max_ccp_iter": 1})
    row, zero_row = info["selection"][0], zero["selection"][0]
    expected = true_objective(
        proprank.w,
        slack_sums(proprank.w, split.X, split.offsets, log.query, log.doc),
        log.propensity,
        rank_weight("dcg"),
        10.0,
    )
    assert row["initial_objective"] == pytest.approx(expected, rel=1e-6)
    assert abs(row["initial_objective"] - zero_row["initial_objective"]) > 1e-3 * abs(expected)
    estimate = validation_estimate(
        proprank, split, log, rng=stream(data.seed, "training-estimate"), dcg_base=dataset.dcg_base
    )
    assert row["initial_train_snips_avg_dcg"] == pytest.approx(estimate)
