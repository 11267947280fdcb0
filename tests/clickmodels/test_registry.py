"""The click-model registry: every module of cltr.clickmodels that defines MODEL is found."""

import sys

import pytest

import cltr.clickmodels
from cltr.clickmodels import ClickModel, get, models
from cltr.clickmodels.pbm import PBMSettings


def test_pbm_is_found_and_is_the_default():
    found = models()
    assert "pbm" in found and cltr.clickmodels.DEFAULT_MODEL == "pbm"
    assert isinstance(found["pbm"], ClickModel) and found["pbm"].settings is PBMSettings
    assert get("pbm") is found["pbm"]
    with pytest.raises(ValueError, match="unknown click model 'cascade'; known: .*pbm"):
        get("cascade")


def test_parse_settings_validates_dicts_and_passes_instances():
    model = get("pbm")
    assert model.parse_settings({"eta": 2}) == PBMSettings(eta=2.0)
    instance = PBMSettings(eps_neg=0.0)
    assert model.parse_settings(instance) is instance
    with pytest.raises(ValueError, match="settings of click model pbm: unknown option 'noise'"):
        model.parse_settings({"noise": 0.1})


FAKE_MODEL = """
from dataclasses import dataclass

from cltr.clickmodels import ClickModel
from cltr.options import Options, option


@dataclass(frozen=True)
class TopOneSettings(Options):
    eps: float = option(1.0, "Click probability of a relevant document at rank 1.", low=0, high=1)


def simulate(rank, relevant, offsets, settings, *, passes, rng, progress=None):
    raise NotImplementedError


MODEL = ClickModel(name="top-one", summary="Only rank 1 is looked at.", settings=TopOneSettings,
                   simulate=simulate)
"""


def test_a_module_defining_MODEL_is_discovered(tmp_path, monkeypatch):
    shipped = set(models())
    (tmp_path / "top_one.py").write_text(FAKE_MODEL)
    (tmp_path / "helpers.py").write_text("VALUE = 1\n")  # no MODEL: not a click model
    monkeypatch.setattr(cltr.clickmodels, "__path__", [*cltr.clickmodels.__path__, str(tmp_path)])
    monkeypatch.setattr(cltr.clickmodels, "_REGISTRY", None)
    for name in ("cltr.clickmodels.top_one", "cltr.clickmodels.helpers"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    try:
        found = models()
        assert set(found) == shipped | {"top-one"}
        assert found["top-one"].settings.__name__ == "TopOneSettings"
        assert get("top-one").parse_settings({"eps": 0.5}).eps == 0.5
    finally:
        for name in ("cltr.clickmodels.top_one", "cltr.clickmodels.helpers"):
            sys.modules.pop(name, None)
    monkeypatch.undo()
    assert set(models()) == shipped
