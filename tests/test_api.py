"""The Python API (``cltr.api``): the same models as the command line, scikit-learn-like
parameters, the ways of handing it clicks.

Oracle: ``cltr train`` on the same click log with the same seed; the API must give the
very same weights (it calls the same training function), for a fixed C and for the C
chosen over the default grid on validation clicks.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from cltr import api, methods
from cltr.data.store import load_dataset
from cltr.methods.svm_propdcg import PropDCGOptions
from cltr.pipeline.models import scorer_from_arrays
from cltr.pipeline.stages import click_logs
from cltr.pipeline.workspace import Workspace

DATASET = "synthetic"


def current(workdir: Path, stage: str):
    workspace = Workspace(workdir)
    return workspace.load(DATASET, stage, workspace.current(DATASET)[stage])


@pytest.fixture(scope="module")
def logged(tmp_path_factory, invoke):
    """20 passes of simulated clicks in a workspace, and the same logs as the API reads them.

    The dataset is the default generator's at 200 queries (a twelfth of the default's): the
    API and the CLI must agree whatever the size, and every model here trains twice."""
    work = tmp_path_factory.mktemp("api")
    invoke("prepare", "synthetic", "--queries", 200, workdir=work)
    invoke("simulate", "--passes", 20, workdir=work)
    clicks = current(work, "clicks")
    dataset = load_dataset(Workspace(work).dataset_path(DATASET))
    train_log, vali_log = click_logs(clicks)
    return SimpleNamespace(
        work=work, clicks=clicks, dataset=dataset, train_log=train_log, vali_log=vali_log, invoke=invoke
    )


def cli_model(logged, method: str, *options):
    logged.invoke("train", method, *options, "--clicks", logged.clicks.key, "--seed", 0, workdir=logged.work)
    model = current(logged.work, "models")
    return scorer_from_arrays(model.arrays).w, model.info


@pytest.mark.parametrize(
    "estimator, method, options",
    [
        (api.PropRank, "svm-proprank", {"C": 1.0}),
        (api.PropDCG, "svm-propdcg", {"C": 0.1}),
        (api.PropRank, "svm-proprank", {}),
        (api.PropDCG, "svm-propdcg", {}),
    ],
    ids=["proprank-C1", "propdcg-C0.1", "proprank-grid", "propdcg-grid"],
)
def test_api_and_cli_train_the_same_model(estimator, method, options, logged):
    flags = [x for C in options.values() for x in ("-C", C)]
    w, info = cli_model(logged, method, *flags)
    data = logged.dataset
    model = estimator(**options).fit(data.train, logged.train_log, vali=(data.vali, logged.vali_log), seed=0)
    assert np.array_equal(model.scorer_.w, w)
    assert model.info_["chosen"] == info["chosen"]
    assert model.info_["validation_snips_avg_dcg"] == info["validation_snips_avg_dcg"]
    if not options:  # the grid was searched: seven candidates, the best kept
        assert len(info["selection"]) == 7
    np.testing.assert_array_equal(model.predict(data.test), data.test.X @ w)
    np.testing.assert_array_equal(model.predict(data.test.X), model.predict(data.test))


def test_api_on_read_click_logs_matches_the_cli_on_the_simulated_log(logged, tmp_path):
    data = logged.dataset
    rows = {}
    for split in ("train", "vali"):
        path = tmp_path / f"{split}.tsv"
        logged.invoke("clicks", "export", path, "--split", split, "--clicks", logged.clicks.key, workdir=logged.work)
        rows[split] = api.read_click_log(path, getattr(data, split))
    w, _ = cli_model(logged, "svm-proprank", "-C", 1)
    model = api.PropRank(C=1.0).fit(data.train, rows["train"], vali=(data.vali, rows["vali"]))
    assert np.array_equal(model.scorer_.w, w)


def test_fit_takes_click_arrays(logged):
    data, log, vali = logged.dataset, logged.train_log, (logged.dataset.vali, logged.vali_log)
    reference = api.PropDCG(C=0.1).fit(data.train, log, vali=vali).scorer_.w
    as_tuple = api.PropDCG(C=0.1).fit(data.train, (log.query, log.doc, log.propensity), vali=vali).scorer_.w
    # click_query is implied by the documents; X as a matrix with its query offsets
    as_keywords = (
        api.PropDCG(C=0.1)
        .fit(data.train.X, offsets=data.train.offsets, click_doc=log.doc, propensity=log.propensity, vali=vali)
        .scorer_.w
    )
    assert np.array_equal(as_tuple, reference)
    assert np.array_equal(as_keywords, reference)
    # the propensities matter: unit propensities give another model
    naive = api.PropDCG(C=0.1).fit(data.train, (log.query, log.doc, np.ones(len(log))), vali=vali).scorer_.w
    assert not np.array_equal(naive, reference)
    with pytest.raises(ValueError, match="offsets"):
        api.PropDCG(C=0.1).fit(data.train.X, log)
    with pytest.raises(ValueError, match="give the clicks"):
        api.PropDCG(C=0.1).fit(data.train)


def test_get_params_and_set_params_round_trip():
    model = api.PropDCG(C=0.1)
    params = model.get_params()
    assert set(params) == {f.name for f in PropDCGOptions.option_fields()}
    assert params["C"] == 0.1 and params["metric"] == "dcg" and params["init"] == "auto"
    assert api.PropDCG(**params).get_params() == params
    assert repr(model) == "PropDCG(C=0.1)"
    assert model.set_params(C=2.0, metric="rbp:0.8") is model
    changed = model.get_params()
    assert changed == {**params, "C": 2.0, "metric": "rbp:0.8"}
    assert api.PropRank().get_params()["C"] is None  # chosen on validation clicks


def test_a_value_given_to_a_preset_method_wins_even_at_the_default_presets_value():
    """DeepPropDCG(preset="paper", epochs=100): 100 epochs as asked, although 100 is the
    ``default`` preset's value; a setting not given is the chosen preset's, as on the CLI."""
    from cltr.methods.deep_propdcg import PRESETS

    paper, default = PRESETS["paper"], PRESETS["default"]
    assert default.epochs != paper.epochs
    given = api.DeepPropDCG(preset="paper", epochs=default.epochs)._options()
    assert given.epochs == default.epochs and given.hidden == paper.hidden
    assert api.DeepPropDCG(preset="paper")._options() == paper
    assert api.DeepPropDCG()._options() == default
    assert api.DeepPropDCG().get_params()["epochs"] is None  # the preset's


def test_unknown_or_bad_parameters_raise_naming_the_valid_ones(logged):
    valid = ", ".join(f.name for f in PropDCGOptions.option_fields())
    with pytest.raises(ValueError, match=f"unknown option 'foo'.*valid: {valid}"):
        api.PropDCG(foo=1)
    model = api.PropDCG(C=0.1)
    with pytest.raises(ValueError, match="'Cc' \\(did you mean 'C'\\?\\)"):
        model.set_params(Cc=1.0)
    assert model.get_params()["C"] == 0.1  # a failed set_params changes nothing
    # scikit-learn's convention: a value is stored as given and checked by fit, naming it
    model.set_params(C=-1.0)
    assert model.C == -1.0
    data = logged.dataset
    with pytest.raises(ValueError, match="PropDCG: C must be a finite number > 0"):
        model.fit(data.train, logged.train_log)
    with pytest.raises(ValueError, match="query groups and clicks, not from fit\\(X, y\\)"):
        api.PropDCG(C=0.1).fit(data.train.X, np.zeros(data.train.n_docs))


ESTIMATORS = [api.SVMRank, api.PropRank, api.PropDCG, api.DeepPropDCG, api.LambdaRank, api.TreePropDCG, api.Skyline]


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: e.__name__)
def test_every_estimator_clones_with_its_parameters(estimator):
    from sklearn.base import clone

    fields = methods.get(estimator.method).options.option_fields()
    assert {f.name for f in fields} == set(estimator().get_params())
    # a parameter of each kind set away from its default survives clone unchanged
    changed = {}
    for f in fields:
        if f.base is float and not f.sequence:
            changed[f.name] = 0.5 if f.default != 0.5 else 0.25
        elif f.base is int and not f.sequence and f.name != "patience":
            changed[f.name] = 7
    model = estimator(**changed)
    copy = clone(model)
    assert copy is not model and type(copy) is estimator
    assert copy.get_params() == model.get_params() == {**estimator().get_params(), **changed}
    for name, value in changed.items():
        assert getattr(copy, name) is value  # stored unchanged, as scikit-learn requires
    assert repr(copy) == repr(model)


# check_estimator's checks that do not fit on (X, y): they must hold (the class docstring
# says why the others cannot)
MUST_HOLD = {
    "check_estimator_cloneable",
    "check_estimator_repr",
    "check_no_attributes_set_in_init",
    "check_do_not_raise_errors_in_init_or_set_params",
    "check_parameters_default_constructible",
    "check_get_params_invariance",
    "check_set_params",
    "check_estimators_unfitted",
    "check_mixin_order",
    "check_valid_tag_types",
    "check_estimator_tags_renamed",
}


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: e.__name__)
def test_scikit_learn_check_estimator_where_it_applies(estimator):
    import warnings

    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(estimator(), on_fail=None, on_skip=None)
    status = {r["check_name"]: r["status"] for r in results}
    failed = {
        name: str(r["exception"]) for r in results if (name := r["check_name"]) in MUST_HOLD and r["status"] != "passed"
    }
    assert MUST_HOLD <= set(status) and not failed, failed
    assert "fit(X, y)" in estimator.__doc__  # the docstring says why the fitting checks cannot hold


def test_api_evaluate_is_cli_evaluate_on_the_same_workspace(tmp_path, invoke):
    # a dataset whose convention is not the functions' old defaults: label >= 2, log2
    invoke("prepare", "synthetic", "--queries", 60, "--dcg-log", "2", "--name", "small", workdir=tmp_path)
    invoke("simulate", "--dataset", "small", "--passes", 5, workdir=tmp_path)
    invoke("train", "svm-proprank", "--dataset", "small", "-C", 1, workdir=tmp_path)
    out = invoke("evaluate", "--dataset", "small", workdir=tmp_path).output
    workspace = Workspace(tmp_path)
    model = workspace.load("small", "models", workspace.current("small")["models"])
    evaluation = next(workspace.load("small", "evaluations", k).info for k in workspace.keys("small", "evaluations"))
    data = api.load_prepared("small", tmp_path)
    assert (data.relevant_from, data.dcg_base) == (2, 2.0)
    metrics = api.evaluate(scorer_from_arrays(model.arrays), data)
    assert metrics == {k: evaluation[k] for k in metrics}  # the same numbers, to the last bit
    assert set(metrics) == {"avg_dcg", "avg_rank", "ndcg@10", "ndcg@10_relevant_queries"}
    assert metrics["ndcg@10"] < metrics["ndcg@10_relevant_queries"]  # some test query has nothing relevant
    lines = out.splitlines()
    header = next(line for line in lines if "test Avg DCG" in line)
    values = lines[lines.index(header) + 1].split()
    assert "test nDCG@10 relevant queries" in header
    assert float(values[0]) == pytest.approx(metrics["avg_dcg"], abs=5e-5)
    assert float(values[2]) == pytest.approx(metrics["ndcg@10"], abs=5e-5)
    assert float(values[3]) == pytest.approx(metrics["ndcg@10_relevant_queries"], abs=5e-5)
    assert "a query without a relevant document scoring 0" in out  # the convention is printed
    # the convention is the dataset's: another one gives other numbers, and Queries alone are refused
    import dataclasses

    other = api.evaluate(scorer_from_arrays(model.arrays), dataclasses.replace(data, relevant_from=1))
    assert other["avg_dcg"] != metrics["avg_dcg"]
    with pytest.raises(ValueError, match="evaluate takes the Dataset"):
        api.evaluate(scorer_from_arrays(model.arrays), data.test)


def test_fit_on_a_dataset_uses_its_splits_and_convention(logged):
    data = logged.dataset
    on_dataset = api.PropDCG(C=0.1).fit(data, logged.train_log, vali=logged.vali_log)
    on_splits = api.PropDCG(C=0.1).fit(data.train, logged.train_log, vali=(data.vali, logged.vali_log))
    assert np.array_equal(on_dataset.scorer_.w, on_splits.scorer_.w)
    assert api.evaluate(on_dataset, data) == api.evaluate(on_splits, data)
    with pytest.raises(ValueError, match="the skyline learns from labels"):
        api.Skyline(C=1.0).fit(data.train, logged.train_log)


def test_predict_before_fit_raises():
    with pytest.raises(ValueError, match="PropRank is not fitted yet; call fit first"):
        api.PropRank(C=1.0).predict(np.zeros((3, 46)))
    with pytest.raises(ValueError, match="PropRank is not fitted yet; call fit first"):
        api.evaluate(api.PropRank(C=1.0), api.make_synthetic(n_queries=6))


def test_api_clips_the_training_log_only_as_the_cli_does(logged):
    w, info = cli_model(logged, "svm-proprank", "-C", 1.0, "--clip", 0.1)
    data = logged.dataset
    model = api.PropRank(C=1.0).fit(data.train, logged.train_log, vali=(data.vali, logged.vali_log), clip=0.1)
    assert np.array_equal(model.scorer_.w, w) and model.info_["clip"] == info["clip"] == 0.1
    # judged on the validation clicks as told, unclipped
    unclipped = methods.TrainingData(data, logged.train_log, logged.vali_log, 0).estimate(model.scorer_)
    assert model.info_["validation_snips_avg_dcg"] == pytest.approx(unclipped)


@pytest.fixture(scope="module")
def hard(tmp_path_factory, invoke):
    """A hard log (eta 2, eps- 0.3): its validation clicks' weights have a small effective
    sample size, so `cltr train` clips them at TAU_v."""
    work = tmp_path_factory.mktemp("api-hard")
    invoke("prepare", "synthetic", "--queries", 200, workdir=work)
    invoke("simulate", "--passes", 20, "--eta", 2, "--eps-neg", 0.3, workdir=work)
    clicks = current(work, "clicks")
    train_log, vali_log = click_logs(clicks)
    return SimpleNamespace(
        work=work,
        clicks=clicks,
        dataset=load_dataset(Workspace(work).dataset_path(DATASET)),
        train_log=train_log,
        vali_log=vali_log,
        invoke=invoke,
    )


def test_api_clips_a_hard_logs_validation_clicks_as_the_cli_does(hard):
    w, info = cli_model(hard, "svm-proprank")
    assert info["validation_clip"] is not None  # the log is hard enough for TAU_v to clip
    data = hard.dataset
    model = api.PropRank().fit(data.train, hard.train_log, vali=(data.vali, hard.vali_log), seed=0)
    assert model.info_["validation_clip"] == info["validation_clip"]
    assert model.info_["chosen"] == info["chosen"]
    assert model.info_["validation_snips_avg_dcg"] == info["validation_snips_avg_dcg"]
    assert np.array_equal(model.scorer_.w, w)
    # the comparison with the logging ranker reads the validation clicks unclipped, as the CLI's
    assert model.info_["versus_logging"] == info["versus_logging"]
    assert model.info_["versus_logging"]["unclipped"] is True
    unclipped = methods.TrainingData(data, hard.train_log, hard.vali_log, 0).estimate(model.scorer_)
    assert model.info_["versus_logging"]["model"] == pytest.approx(unclipped)
