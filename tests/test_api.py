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

from cltr import api
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
    """20 passes of simulated clicks in a workspace, and the same logs as the API reads them."""
    work = tmp_path_factory.mktemp("api")
    invoke("simulate", "--passes", 20, workdir=work)
    clicks = current(work, "clicks")
    dataset = load_dataset(Workspace(work).dataset_path(DATASET))
    train_log, vali_log = click_logs(clicks)
    return SimpleNamespace(work=work, clicks=clicks, dataset=dataset, train_log=train_log, vali_log=vali_log,
                           invoke=invoke)


def cli_model(logged, method: str, *options):
    logged.invoke("train", method, *options, "--clicks", logged.clicks.key, "--seed", 0, workdir=logged.work)
    model = current(logged.work, "models")
    return scorer_from_arrays(model.arrays).w, model.info


@pytest.mark.parametrize("estimator, method, options", [
    (api.PropRank, "svm-proprank", {"C": 1.0}),
    (api.PropDCG, "svm-propdcg", {"C": 0.1}),
    (api.PropRank, "svm-proprank", {}),
    (api.PropDCG, "svm-propdcg", {}),
], ids=["proprank-C1", "propdcg-C0.1", "proprank-grid", "propdcg-grid"])
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
    as_keywords = api.PropDCG(C=0.1).fit(data.train.X, offsets=data.train.offsets, click_doc=log.doc,
                                         propensity=log.propensity, vali=vali).scorer_.w
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
    assert params["C"] == 0.1 and params["metric"] == "dcg" and params["init"] == "zero"
    assert api.PropDCG(**params).get_params() == params
    assert repr(model) == "PropDCG(C=0.1)"
    assert model.set_params(C=2.0, metric="rbp:0.8") is model
    changed = model.get_params()
    assert changed == {**params, "C": 2.0, "metric": "rbp:0.8"}
    assert api.PropRank().get_params()["C"] is None  # chosen on validation clicks


def test_unknown_or_bad_parameters_raise_naming_the_valid_ones():
    valid = ", ".join(f.name for f in PropDCGOptions.option_fields())
    with pytest.raises(ValueError, match=f"unknown option 'foo'.*valid: {valid}"):
        api.PropDCG(foo=1)
    model = api.PropDCG(C=0.1)
    with pytest.raises(ValueError, match="'Cc' \\(did you mean 'C'\\?\\)"):
        model.set_params(Cc=1.0)
    with pytest.raises(ValueError, match="C"):
        model.set_params(C=-1.0)
    assert model.get_params()["C"] == 0.1  # a failed set_params changes nothing


def test_predict_before_fit_raises():
    with pytest.raises(ValueError, match="PropRank is not fitted yet; call fit first"):
        api.PropRank(C=1.0).predict(np.zeros((3, 46)))
