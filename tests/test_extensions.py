"""A propensity estimator and a correction are each one new file: the worked examples of
docs/how-to/extend.md, dropped into a temporary directory on their package's path, are
found by the registry and run through the command line (their choices, their help, their
options as flags, the artifacts' keys). Methods and click models are tested the same way
in tests/methods/test_registry.py and tests/clickmodels/test_registry.py."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

import cltr.estimators
import cltr.pipeline.corrections
from cltr import cli, methods
from cltr.pipeline.workspace import Workspace
from tests.test_docs import fenced_blocks

EXTEND = Path(__file__).resolve().parents[1] / "docs" / "how-to" / "extend.md"
SHIPPED_ESTIMATORS = ["harvest", "em", "trust-em", "swap"]
SHIPPED_CORRECTIONS = ["ips", "cascade", "policy-aware", "bayes-ips", "affine", "dr"]


def key_of(output: str, kind: str) -> str:
    """The key a command printed first: ``propensities KEY ...``, ``model KEY: ...``."""
    return re.search(rf"^{kind} ([0-9a-f]{{16}})\b", output, re.MULTILINE).group(1)


def example(marker: str) -> str:
    """The one Python block of extend.md that defines ``marker``."""
    found = ["\n".join(body) for lang, _, body in fenced_blocks(EXTEND.read_text(encoding="utf-8"))
             if lang == "python" and any(line.startswith(marker) for line in body)]
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
    out = invoke("propensities", "estimate", "--method", "ctr", "--floor", "0.2", "--max-rank", "5",
                 "--bootstrap", "0", workdir=tmp_path).output
    artifact = Workspace(tmp_path).load("synthetic", "propensities", key_of(out, "propensities"))
    assert artifact.config["method"] == "ctr" and artifact.config["floor"] == 0.2
    propensity = artifact.arrays["propensity"]
    assert propensity[0] == 1.0 and len(propensity) == 5 and np.all(propensity >= 0.2)
    # an option at its default stays out of the key: the default given or left out is one estimate
    first = invoke("propensities", "estimate", "--method", "ctr", "--bootstrap", "0", workdir=tmp_path).output
    again = invoke("propensities", "estimate", "--method", "ctr", "--floor", "0.001", "--bootstrap", "0",
                   workdir=tmp_path).output
    assert "floor" not in Workspace(tmp_path).load("synthetic", "propensities", key_of(first, "propensities")).config
    assert key_of(first, "propensities") == key_of(again, "propensities") and "(reused)" in again
    # another estimator's option is ignored by the shipped ones, as before
    invoke("propensities", "estimate", "--method", "em", "--floor", "0.5", "--bootstrap", "0", workdir=tmp_path)
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
        out = invoke("train", "svm-proprank", "-C", "1", "--clip", "none", "--correction", correction,
                     workdir=tmp_path).output
        keys[correction] = key_of(out, "model")
    space = Workspace(tmp_path)
    assert "correction" not in space.load("synthetic", "models", keys["ips"]).config
    assert space.load("synthetic", "models", keys["unweighted"]).config["correction"] == "unweighted"


def test_the_registries_are_as_shipped_after_a_plug_in():
    # runs after the tests above in file order: their temporary entries are gone
    cltr.estimators._REGISTRY = None
    cltr.pipeline.corrections._REGISTRY = None
    assert list(cltr.estimators.estimators()) == SHIPPED_ESTIMATORS
    assert list(cltr.pipeline.corrections.corrections()) == SHIPPED_CORRECTIONS
