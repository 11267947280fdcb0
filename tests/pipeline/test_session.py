"""The session's rules for which artifact a stage uses (``cltr.pipeline.session``), without
the command line: what it makes by default and says, what it refuses, and how the command
line reports a refusal (exit 1, or 2 for a request that contradicts itself)."""

from __future__ import annotations

import types

import numpy as np
import pytest

from cltr.core.clicks import ClickLog
from cltr.data.click_artifact import ClicksArtifact, Presented, SplitClicks
from cltr.data.synthetic import make_synthetic
from cltr.pipeline.session import RequestError, Session, SessionError
from cltr.pipeline.workspace import Artifact


@pytest.fixture
def session(tmp_path):
    said: list[str] = []
    made = Session(tmp_path / "work", say=said.append)
    made.write_dataset("s", make_synthetic(n_queries=30, seed=1))
    made.said = said
    return made


def test_a_missing_upstream_artifact_is_made_with_defaults_said_and_made_current(session):
    clicks = session.clicks("s", None)
    assert session.said == [
        "no clicks artifact for dataset 's' yet: making one with default settings",
        "no production artifact for dataset 's' yet: making one with default settings",
    ]
    current = session.workspace.current("s")
    assert current["clicks"] == clicks.key and current["production"] == clicks.config["production"]
    session.said.clear()
    assert session.clicks("s", None).key == clicks.key and session.said == []  # the current one, silently
    assert session.clicks("s", clicks.key).key == clicks.key


def test_an_unknown_key_names_the_known_ones(session):
    clicks = session.clicks("s")
    with pytest.raises(SessionError, match=rf"no clicks artifact 'nope' for dataset 's' .*; known: {clicks.key}$"):
        session.clicks("s", "nope")


def test_only_the_embedded_dataset_is_generated_on_demand(session):
    with pytest.raises(SessionError, match=r"dataset 'other' is not prepared in .*; prepared: s$"):
        session.dataset("other")
    with pytest.raises(SessionError, match="'other' is not prepared"):
        session.ensure_dataset(types.SimpleNamespace(dataset="other", synthetic={}))
    session.ensure_dataset(types.SimpleNamespace(dataset="other", synthetic={"n_queries": 30, "seed": 2}))
    assert session.said[-1] == "dataset 'other' is not prepared yet: generating it ({'n_queries': 30, 'seed': 2})"
    assert session.workspace.has_dataset("other")


def _clicks_with_propensity(propensity: float) -> Artifact:
    log = ClickLog(
        query=np.zeros(3, np.int64),
        doc=np.arange(3),
        rank=np.arange(1, 4),
        propensity=np.full(3, propensity),
        pass_index=np.zeros(3, np.int64),
        n_passes=1,
        n_queries=1,
    )
    split = SplitClicks(log=log, presented=Presented(rank=np.arange(1, 4)[None], pass_ranker=np.zeros(1, np.int8)))
    return Artifact("k", ClicksArtifact(train=split, vali=split).arrays(), {"config": {}})


def test_logged_propensities_of_a_log_without_them_are_a_request_error(session):
    clicks = _clicks_with_propensity(np.nan)
    with pytest.raises(RequestError, match="this click log has no propensity column; use --propensities estimated"):
        session.propensities("s", clicks, "logged")
    with pytest.raises(SessionError, match="no propensities estimated for click log k") as raised:
        session.propensities("s", clicks, None)  # no column: the current estimate, of which there is none
    assert not isinstance(raised.value, RequestError)
    logged = _clicks_with_propensity(1.0)
    assert session.propensities("s", logged, None) is None


def test_the_command_line_reports_a_request_error_as_a_usage_error(tmp_path, invoke):
    invoke("prepare", "synthetic", "--queries", "30", workdir=tmp_path)
    invoke("simulate", "--passes", "2", workdir=tmp_path)
    for split in ("train", "vali"):
        log = tmp_path / f"{split}.tsv"
        invoke("clicks", "export", log, "--split", split, workdir=tmp_path)
        rows = [line.split("\t") for line in log.read_text().splitlines()]
        keep = [i for i, name in enumerate(rows[0]) if name != "propensity"]
        log.write_text("".join("\t".join(row[i] for i in keep) + "\n" for row in rows))
        invoke("clicks", "import", log, "--split", split, workdir=tmp_path)
    out = invoke("train", "svm-rank", "--propensities", "logged", workdir=tmp_path, expect=2).output
    assert out.startswith("Usage: cltr train svm-rank") and "Error: this click log has no propensity column" in out


def test_the_api_session_stores_what_the_commands_store(tmp_path, invoke):
    from cltr import api, methods

    for work in ("cli", "api"):
        invoke("prepare", "synthetic", "--queries", "30", "--name", "s", workdir=tmp_path / work)
    invoke("simulate", "--passes", "3", "--seed", "2", workdir=tmp_path / "cli")
    invoke("train", "svm-rank", "--grid", "1", workdir=tmp_path / "cli")
    session = api.Session(tmp_path / "api")
    clicks, reused = session.simulate("s", passes=3, seed=2)
    options = methods.get("svm-rank").parse_options({"grid": "1"}, where="test")
    model, _ = session.train("s", "svm-rank", options)
    commands = Session(tmp_path / "cli").workspace.current("s")
    assert not reused and (clicks.key, model.key) == (commands["clicks"], commands["models"])


def test_train_takes_the_clipping_as_text_none_or_a_number():
    """Session.train's clip: the command line's text, or as the API took it before the
    options held text, None (no clipping) and a number (TAU); a bad one is named."""
    from cltr.pipeline.session import train_options

    assert train_options(None, {}).clip == "auto"
    assert train_options(None, {"clip": None}).clip == "none"
    assert train_options({"clip": 0.1}, {}).clip == "0.1"
    assert train_options(None, {"clip": 1}).clip == "1.0"
    assert train_options(None, {"clip": "0.03"}).clip == "0.03"
    with pytest.raises(ValueError, match="clip"):
        train_options(None, {"clip": -0.5})
    with pytest.raises(ValueError, match="clip"):
        train_options(None, {"clip": True})
