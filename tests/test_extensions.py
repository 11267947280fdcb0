"""A propensity estimator, a correction, a dataset loader, a scorer kind and a figure kind are
each one new file: the worked examples of docs/how-to/extend.md, dropped into a temporary
directory on their package's path, are found by the registry and run through the command
line (their choices, their commands, their help, their options as flags, the artifacts'
keys, the stored models read back, the figures' files). Methods and click models are tested the same way
in tests/methods/test_registry.py and tests/clickmodels/test_registry.py."""

from __future__ import annotations

import re
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import cltr.datasets
import cltr.estimators
import cltr.pipeline.corrections
import cltr.pipeline.figure_kinds
import cltr.scorers
from cltr import api, cli, methods
from cltr.data.store import dataset_arrays, dataset_fingerprint
from cltr.pipeline.workspace import Workspace
from tests.test_docs import fenced_blocks

EXTEND = Path(__file__).resolve().parents[1] / "docs" / "how-to" / "extend.md"
SHIPPED_ESTIMATORS = ["harvest", "em", "trust-em", "swap"]
SHIPPED_CORRECTIONS = ["ips", "cascade", "policy-aware", "bayes-ips", "affine", "dr"]
SHIPPED_LOADERS = ["baidu-ultr", "letor", "svmlight", "synthetic", "yahoo"]
SHIPPED_FIGURE_KINDS = ["table", "curve", "ccp", "propensity"]
SHIPPED_SCORERS = ["linear", "mlp", "lightgbm", "xgboost"]


def key_of(output: str, kind: str) -> str:
    """The key a command printed first: ``propensities KEY ...``, ``model KEY: ...``."""
    return re.search(rf"^{kind} ([0-9a-f]{{16}})\b", output, re.MULTILINE).group(1)


def example(marker: str) -> str:
    """The one Python block of extend.md that defines ``marker``."""
    found = [
        "\n".join(body)
        for lang, _, body in fenced_blocks(EXTEND.read_text(encoding="utf-8"))
        if lang == "python" and any(line.startswith(marker) for line in body)
    ]
    assert len(found) == 1, f"extend.md should show one example defining {marker}"
    return found[0] + "\n"


@pytest.fixture
def plug_in(tmp_path, monkeypatch):
    """``plug_in(package, module, text)``: ``text`` as ``package.module`` in a temporary
    directory on the package's path, its registry emptied so that it is found again;
    undone afterwards."""
    added = []

    def plug(package, module: str, text: str) -> None:
        directory = tmp_path / "plugins" / package.__name__
        directory.mkdir(parents=True, exist_ok=True)
        (directory / f"{module}.py").write_text(text)
        (directory / "helpers.py").write_text("VALUE = 1\n")  # defines no entry: not one
        monkeypatch.setattr(package, "__path__", [*package.__path__, str(directory)])
        monkeypatch.setattr(package, "_REGISTRY", None)
        added.extend(f"{package.__name__}.{name}" for name in (module, "helpers"))

    yield plug
    monkeypatch.undo()
    for name in added:
        sys.modules.pop(name, None)


def test_a_new_estimator_file_is_a_method_of_propensities_estimate(plug_in, invoke, tmp_path, monkeypatch):
    plug_in(cltr.estimators, "ctr", example("ESTIMATOR = "))
    assert list(cltr.estimators.estimators()) == [*SHIPPED_ESTIMATORS, "ctr"]  # no ORDER: after the shipped
    # the command as cltr.cli builds it at import, from the registry as it is now
    monkeypatch.setitem(cli.propensities_group.commands, "estimate", cli.estimate_command())

    help_text = " ".join(invoke("propensities", "estimate", "--help").output.split())
    assert "[harvest|em|trust-em|swap|ctr]" in help_text
    assert "ctr: click-through rate per rank relative to rank 1 (a baseline)." in help_text
    assert "--floor FLOAT The smallest propensity reported. [default: 0.001] (estimator: ctr)" in help_text

    invoke("prepare", "synthetic", "--queries", "30", workdir=tmp_path)
    invoke("simulate", "--passes", "5", workdir=tmp_path)
    out = invoke(
        "propensities",
        "estimate",
        "--method",
        "ctr",
        "--floor",
        "0.2",
        "--max-rank",
        "5",
        "--bootstrap",
        "0",
        workdir=tmp_path,
    ).output
    artifact = Workspace(tmp_path).load("synthetic", "propensities", key_of(out, "propensities"))
    assert artifact.config["method"] == "ctr" and artifact.config["floor"] == 0.2
    propensity = artifact.arrays["propensity"]
    assert propensity[0] == 1.0 and len(propensity) == 5 and np.all(propensity >= 0.2)
    # an option at its default stays out of the key: the default given or left out is one estimate
    first = invoke("propensities", "estimate", "--method", "ctr", "--bootstrap", "0", workdir=tmp_path).output
    again = invoke(
        "propensities", "estimate", "--method", "ctr", "--floor", "0.001", "--bootstrap", "0", workdir=tmp_path
    ).output
    assert "floor" not in Workspace(tmp_path).load("synthetic", "propensities", key_of(first, "propensities")).config
    assert key_of(first, "propensities") == key_of(again, "propensities") and "(reused)" in again
    # another estimator's option would change nothing: refused, naming whose it is
    refused = invoke(
        "propensities", "estimate", "--method", "em", "--floor", "0.5", "--bootstrap", "0", workdir=tmp_path, expect=2
    ).output
    assert "--floor is an option of --method ctr; --method em does not take it" in " ".join(refused.split())
    result = invoke("propensities", "estimate", "--method", "ctr", "--floor", "0", workdir=tmp_path, expect=2)
    assert "Invalid value for '--floor': 0 is not > 0 and <= 1" in result.output


def test_a_new_correction_file_is_a_correction_of_train(plug_in, invoke, tmp_path, monkeypatch):
    plug_in(cltr.pipeline.corrections, "unweighted", example("CORRECTION = "))
    assert list(cltr.pipeline.corrections.CORRECTIONS) == [*SHIPPED_CORRECTIONS, "unweighted"]
    monkeypatch.setitem(cli.train_group.commands, "svm-proprank", cli._train_command(methods.get("svm-proprank")))

    help_text = " ".join(invoke("train", "svm-proprank", "--help").output.split())
    assert "unweighted: Every click weighs 1 (no correction for position bias)." in help_text

    invoke("prepare", "synthetic", "--queries", "30", workdir=tmp_path)
    keys = {}
    for correction in ("ips", "unweighted"):
        out = invoke(
            "train", "svm-proprank", "-C", "1", "--clip", "none", "--correction", correction, workdir=tmp_path
        ).output
        keys[correction] = key_of(out, "model")
    space = Workspace(tmp_path)
    assert "correction" not in space.load("synthetic", "models", keys["ips"]).config
    assert space.load("synthetic", "models", keys["unweighted"]).config["correction"] == "unweighted"


def test_a_new_loader_file_is_a_prepare_command(plug_in, invoke, tmp_path, monkeypatch):
    plug_in(cltr.datasets, "uniform", example("LOADER = "))
    assert list(cltr.datasets.loaders()) == sorted([*SHIPPED_LOADERS, "uniform"])
    # the commands as cltr.cli builds them at import, from the registry as it is now
    monkeypatch.setitem(cli.prepare.commands, "uniform", cli.prepare_command(cltr.datasets.get("uniform")))

    listed = " ".join(invoke("prepare", "--help").output.split())
    assert "uniform Uniform random features; labels from the first two." in listed
    help_text = " ".join(invoke("prepare", "uniform", "--help").output.split())
    assert "--queries INTEGER RANGE Queries per split. [default: 30; x>=1]" in help_text
    assert "--relevant-from INTEGER RANGE Labels (0..2) at least this are relevant. [default: 1; 1<=x<=2]" in help_text
    assert "--name NAME Name to store it under. [default: uniform]" in help_text and "--dcg-log [e|2]" in help_text

    out = invoke("prepare", "uniform", "--queries", "6", "--seed", "3", "--dcg-log", "2", workdir=tmp_path).output
    assert "prepared 'uniform': Avg DCG = mean of 1/log2(1 + rank) over relevant test documents (label >= 1)" in out
    dataset, record = Workspace(tmp_path).load_dataset("uniform")
    assert dataset.train.n_queries == 6 and dataset.meta == {"source": "uniform draws", "default_passes": 20}
    # the API reads it as the command stored it
    same = api.load_dataset("uniform", queries=6, seed=3, dcg_log="2")
    assert dataset_fingerprint(dataset_arrays(same)) == record["fingerprint"] and same.dcg_base == 2.0
    # its declared default passes are what simulate draws
    assert "100 passes" not in (out := invoke("simulate", workdir=tmp_path).output) and ", 20 passes)" in out

    result = invoke("prepare", "uniform", "--documents", "1", workdir=tmp_path, expect=2)
    assert "Invalid value for '--documents': 1 is not in the range x>=2." in result.output
    with pytest.raises(ValueError, match="unknown option 'querys' \\(did you mean 'queries'\\?\\)"):
        api.load_dataset("uniform", querys=6)


def test_a_new_scorer_kind_file_stores_and_reads_a_new_methods_models(plug_in, invoke, tmp_path, monkeypatch):
    plug_in(cltr.scorers, "centroid", example("SCORER = "))
    plug_in(methods, "centroid", example('METHOD = Method(name="centroid"'))
    assert list(cltr.scorers.scorer_kinds()) == [*SHIPPED_SCORERS, "centroid"]
    monkeypatch.setitem(cli.train_group.commands, "centroid", cli._train_command(methods.get("centroid")))

    invoke("prepare", "synthetic", "--queries", "30", workdir=tmp_path)
    key = key_of(invoke("train", "centroid", workdir=tmp_path).output, "model")
    model = Workspace(tmp_path).load("synthetic", "models", key)
    assert str(model.arrays["scorer_kind"]) == "centroid"
    # read back through its kind: cltr score checks the file's width against the kind's width
    dataset, _ = Workspace(tmp_path).load_dataset("synthetic")
    test, width = dataset.test, len(model.arrays["scorer/centre"])
    rows = [
        f"{test.labels[i]} qid:{test.qid[test.doc_query[i]]} "
        + " ".join(f"{j + 1}:{test.X[i, j]:.6g}" for j in range(width))
        for i in range(6)
    ]
    (tmp_path / "six.txt").write_text("\n".join(rows) + "\n")
    scores = [float(s) for s in invoke("score", tmp_path / "six.txt", "--model", key, workdir=tmp_path).output.split()]
    centre = model.arrays["scorer/centre"]
    expected = -np.sum((np.round(test.X[:6].astype(np.float64), 6) - centre) ** 2, axis=1)
    np.testing.assert_allclose(scores, expected, rtol=1e-5)
    (tmp_path / "wide.txt").write_text(f"0 qid:1 {width + 1}:1\n")
    result = invoke("score", tmp_path / "wide.txt", "--model", key, workdir=tmp_path, expect=1)
    assert f"feature index {width + 1} is out of range; expected 1..{width}" in result.output
    assert "test" in invoke("evaluate", "--model", key, workdir=tmp_path).output.lower()
    # a method whose models are not of the kind it names is refused, not stored as the wrong kind
    monkeypatch.setitem(methods.methods(), "centroid", replace(methods.get("centroid"), scorer="linear"))
    with pytest.raises(
        TypeError, match="declares scorer kind 'linear' \\(Method.scorer\\) but trained a model of kind 'centroid'"
    ):
        invoke("train", "centroid", "--seed", "1", workdir=tmp_path)


def test_a_new_figure_kind_file_is_a_kind_of_spec(plug_in, invoke, tmp_path):
    plug_in(cltr.pipeline.figure_kinds, "clicks_per_rank", example("FIGURE_KIND = "))
    assert list(cltr.pipeline.figure_kinds.kinds()) == [*SHIPPED_FIGURE_KINDS, "clicks-per-rank"]
    specs = tmp_path / "specs"
    specs.mkdir()
    spec = (
        'name = "ranks"\nkind = "clicks-per-rank"\ndataset = "tiny"\nreps = 2\nseed = 5\n'
        "[synthetic]\nn_queries = 20\n[clicks]\npasses = 3\n"
    )
    (specs / "ranks.toml").write_text(spec)
    out = invoke(
        "figures", "ranks", "--specs", specs, "--out", tmp_path / "out", "--n-jobs", "1", workdir=tmp_path
    ).output
    assert "2 tasks (2 computed, 0 reused)" in out and "clicks (mean over runs)" in out
    frame = pd.read_csv(tmp_path / "out" / "ranks.csv")
    # its columns in its declared order, after the task's
    assert list(frame.columns) == ["experiment", "dataset", "repetition", "seed", "method", "rank", "clicks"]
    assert set(frame["repetition"]) == {0, 1} and frame["rank"].min() == 1 and (frame["clicks"] > 0).all()
    # every click of a run's log is counted once: as many as the table and curve kinds' train_clicks
    log_clicks = frame.groupby("repetition")["clicks"].sum()
    assert (log_clicks > 0).all() and log_clicks.nunique() == 2
    assert "| rank | clicks (mean over runs) | range |" in (tmp_path / "out" / "ranks.md").read_text()
    for suffix in ("tex", "png", "pdf"):
        assert (tmp_path / "out" / f"ranks.{suffix}").stat().st_size > 0
    assert (
        "2 tasks (0 computed, 2 reused)"
        in invoke(
            "figures", "ranks", "--specs", specs, "--out", tmp_path / "out", "--n-jobs", "1", workdir=tmp_path
        ).output
    )
    # a key the kind does not take is an error naming the kinds that take it
    (specs / "bad.toml").write_text('methods = ["svm-rank"]\n' + spec.replace('"ranks"', '"bad"'))
    result = invoke("figures", "bad", "--specs", specs, workdir=tmp_path, expect=1)
    assert "methods applies to kinds table, curve, ccp, not 'clicks-per-rank'" in result.output


def test_the_registries_are_as_shipped_after_a_plug_in():
    # runs after the tests above in file order: their temporary entries are gone
    for package in (
        cltr.estimators,
        cltr.pipeline.corrections,
        cltr.datasets,
        cltr.scorers,
        cltr.pipeline.figure_kinds,
        methods,
    ):
        package._REGISTRY = None
    assert list(cltr.estimators.estimators()) == SHIPPED_ESTIMATORS
    assert list(cltr.pipeline.corrections.corrections()) == SHIPPED_CORRECTIONS
    assert list(cltr.datasets.loaders()) == SHIPPED_LOADERS
    assert sorted(cli.prepare.commands) == SHIPPED_LOADERS
    assert list(cltr.scorers.scorer_kinds()) == SHIPPED_SCORERS
    assert list(cltr.pipeline.figure_kinds.kinds()) == SHIPPED_FIGURE_KINDS
    assert "centroid" not in methods.methods() and "centroid" not in cli.train_group.commands


def test_a_trees_em_estimate_always_names_its_cross_fitting_in_its_key():
    # estimates stored before --cross-fit existed were fitted in sample (and never checked
    # for a collapse): a trees estimate's key always holds its folds, so none of those is reused
    from cltr.estimators import key_options

    assert key_options("em", {}) == {}
    assert key_options("em", {"relevance_model": "trees"}) == {"relevance_model": "trees", "cross_fit": 5}
    assert key_options("em", {"relevance_model": "trees", "cross_fit": 1})["cross_fit"] == 1
    # the logistic model has nothing to cross-fit: a cross_fit with it would be ignored yet keyed
    with pytest.raises(ValueError, match=r"cross_fit \(--cross-fit\) = 3 applies to relevance_model 'trees' only"):
        key_options("em", {"cross_fit": 3})
    with pytest.raises(ValueError, match="applies to relevance_model 'trees' only"):
        key_options("em", {"relevance_model": "logistic", "cross_fit": 1})


def test_em_classes_is_keyed_by_its_levels_and_refused_elsewhere():
    from cltr.estimators import key_options

    assert key_options("em", {"relevance_model": "classes"}) == {"relevance_model": "classes"}
    assert key_options("em", {"relevance_model": "classes", "classes": 3}) == {
        "relevance_model": "classes",
        "classes": 3,
    }
    # a number of levels the logistic model would ignore must not enter the estimate's key
    with pytest.raises(ValueError, match=r"classes \(--classes\) = 3 applies to relevance_model 'classes' only"):
        key_options("em", {"classes": 3})
    with pytest.raises(ValueError, match="applies to relevance_model 'trees' only"):
        key_options("em", {"relevance_model": "classes", "cross_fit": 3})
