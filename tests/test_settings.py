"""The stages' settings types (``cltr.options`` declarations beside each stage) drive the
command line's flags and the API: every flag of every command comes from an options type
or is one of the few the options module names as the command line's own."""

import math
import re

import click
import pytest

from cltr import clickmodels, datasets, estimators, methods
from cltr.cli import main
from cltr.pipeline import corrections
from cltr.pipeline.click_prediction import FitOptions
from cltr.pipeline.experiments import FiguresOptions
from cltr.pipeline.session import PrepareOptions, RunOptions, Session
from cltr.pipeline.stages import (
    EstimateOptions,
    EvaluateOptions,
    ExportOptions,
    ImportOptions,
    ProductionOptions,
    ScoreOptions,
    SimulationOptions,
    TrainOptions,
)

SETTINGS = {
    ("produce",): ProductionOptions,
    ("simulate",): SimulationOptions,
    ("clicks", "import"): ImportOptions,
    ("clicks", "export"): ExportOptions,
    ("clicks", "fit"): FitOptions,
    ("propensities", "estimate"): EstimateOptions,
    ("evaluate",): EvaluateOptions,
    ("score",): ScoreOptions,
    ("figures",): FiguresOptions,
    ("run",): RunOptions,
}

# the parameters cltr.options' docstring names as the command line's own (output paths, which
# artifact to read, the shared --dataset and --seed)
COMMAND_LINE_OWN = {
    "workdir",
    "quiet",
    "verbose",
    "version",
    "help",
    "dataset",
    "seed",
    "clicks_key",
    "model_key",
    "production_key",
    "click_model_key",
    "out",
    "trec",
}


def _squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _commands(group, path=()):
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))
        else:
            yield (*path, name), command


def _declared_names() -> set[str]:
    types = [
        *SETTINGS.values(),
        *(m.options for m in methods.methods().values()),
        *(m.settings for m in clickmodels.models().values()),
        *(e.options for e in estimators.estimators().values()),
        *(loader.options for loader in datasets.loaders().values()),
        TrainOptions,
        PrepareOptions,
    ]
    return {f.name for options_type in types for f in options_type.option_fields()}


def test_every_option_of_every_command_is_declared_by_an_options_type_or_the_command_lines_own():
    declared = _declared_names()
    loose = [
        f"cltr {' '.join(path)} {param.opts[0]}"
        for path, command in _commands(main)
        for param in command.params
        if isinstance(param, click.Option) and param.name not in declared | COMMAND_LINE_OWN
    ]
    assert not loose, f"hand-written options an options type could declare: {loose}"


@pytest.mark.parametrize("path", list(SETTINGS), ids=" ".join)
def test_each_setting_is_a_flag_with_its_help_and_default(path, invoke):
    options_type = SETTINGS[path]
    command = main
    for name in path:
        command = command.commands[name]
    params = {p.name: p for p in command.params}
    text = _squeeze(invoke(*path, "--help").output)
    for field in options_type.option_fields():
        assert field.cli_name in params[field.name].opts, field.name
        assert params[field.name].default == field.default, field.name
        assert _squeeze(field.spec.text()) in text, field.name


@pytest.mark.parametrize("method", list(methods.methods()))
def test_train_takes_its_propensities_clip_and_the_corrections_that_apply_from_train_options(method, invoke):
    params = {p.name: p for p in main.commands["train"].commands[method].params}
    text = _squeeze(invoke("train", method, "--help").output)
    accepted = methods.get(method).corrections
    applicable = [
        c.name
        for c in corrections.corrections().values()
        if (c.methods is None or method in c.methods) and (accepted is None or c.name in accepted)
    ]
    assert "ips" in applicable
    for field in TrainOptions.for_method(method).option_fields():
        assert field.cli_name in params[field.name].opts and params[field.name].default == field.default
        assert _squeeze(field.spec.text()) in text, field.name
    assert list(params["correction"].type.choices) == applicable
    assert _squeeze("How the clicks are weighted") in text
    for name in set(corrections.corrections()) - set(applicable):
        assert f"{name}:" not in invoke("train", method, "--help").output
        assert "Invalid value for '--correction'" in invoke("train", method, "--correction", name, expect=2).output


@pytest.mark.parametrize(
    "args, told",
    [
        ((), TrainOptions()),
        (
            ("--clip", "none", "--propensities", "estimated", "--correction", "ips"),
            TrainOptions(propensities="estimated", clip="none"),
        ),
        (("--clip", "0.1", "--propensities", "p-123"), TrainOptions(propensities="p-123", clip="0.1")),
    ],
    ids=["defaults", "none-estimated", "tau-key"],
)
def test_train_hands_the_session_the_train_options_of_its_flags(args, told, invoke, monkeypatch, tmp_path):
    seen = {}

    def train(self, dataset_name, method, options, training=None, **keywords):
        seen["training"] = training
        raise click.ClickException("stopped before training")

    monkeypatch.setattr(Session, "train", train)
    invoke("train", "svm-proprank", *args, workdir=tmp_path, expect=1)
    assert isinstance(seen["training"], TrainOptions) and seen["training"].to_dict() == told.to_dict()


def test_bad_train_options_are_usage_errors_and_the_session_checks_them_by_name(tmp_path, invoke):
    assert (
        "Invalid value for --clip: clip must be 'auto', 'none' or a threshold TAU in (0, 1], found '2'"
        in invoke("train", "svm-proprank", "--clip", "2", expect=2).output
    )
    assert "Invalid value for '--correction'" in invoke("train", "svm-proprank", "--correction", "x", expect=2).output
    with pytest.raises(ValueError, match="train: clip: clip must be 'auto'"):
        Session(tmp_path).train("s", "svm-proprank", {}, clip="1.5")
    with pytest.raises(ValueError, match="unknown option 'clips'"):
        Session(tmp_path).train("s", "svm-proprank", {}, clips="none")


@pytest.mark.parametrize("loader", list(datasets.loaders()))
def test_prepare_stores_under_prepare_options_name_defaulting_to_the_loader(loader, invoke):
    params = {p.name: p for p in main.commands["prepare"].commands[loader].params}
    assert params["name"].opts == ["--name"] and params["name"].default == loader
    assert params["dcg_log"].opts == ["--dcg-log"] and params["dcg_log"].default == "e"
    assert list(params["dcg_log"].type.choices) == list(datasets.DCG_LOGS)
    text = _squeeze(invoke("prepare", loader, "--help").output)
    assert _squeeze(PrepareOptions.option_fields()[1].spec.text()) in text
    assert _squeeze("Name to store it under.") in text


def test_prepare_name_and_dcg_log_reach_the_stored_dataset(tmp_path, invoke):
    invoke("prepare", "synthetic", "--queries", "12", "--name", "small", "--dcg-log", "2", workdir=tmp_path)
    dataset, _ = Session(tmp_path).dataset("small")
    assert dataset.dcg_base == 2.0 and "small" in Session(tmp_path).workspace.datasets()
    invoke("prepare", "synthetic", "--queries", "12", workdir=tmp_path)
    assert Session(tmp_path).dataset("synthetic")[0].dcg_base == math.e
    assert "is not a valid name" in invoke("prepare", "synthetic", "--name", "../x", workdir=tmp_path, expect=2).output


def test_bad_settings_are_usage_errors_naming_the_flag(invoke):
    assert (
        "Invalid value for '--fraction': 0 is not > 0 and <= 1" in invoke("produce", "--fraction", "0", expect=2).output
    )
    assert "Invalid value for '--click-model'" in invoke("simulate", "--click-model", "nope", expect=2).output
    assert "Invalid value for '--method'" in invoke("run", "--method", "nope", expect=2).output
    assert "Invalid value for --folds" in invoke("figures", "smoke", "--folds", "2-1", expect=2).output
    # a bare switch has no --no- form (as before: --quick, --check, --production, --features)
    assert "No such option '--no-quick'" in invoke("figures", "smoke", "--no-quick", expect=2).output


def test_the_session_takes_the_settings_types_or_their_names(tmp_path):
    session = Session(tmp_path)
    session.write_dataset("s", datasets.load("synthetic", {"n_queries": 30, "seed": 3}, name="s"))
    by_type, _ = session.produce("s", ProductionOptions(fraction=0.1, C=2.0), seed=1)
    by_name, reused = session.produce("s", fraction=0.1, C=2.0, seed=1)
    assert reused and by_name.key == by_type.key and by_type.config["C"] == 2.0
    assert session.produce("s", {"fraction": 0.1}, C=2.0, seed=1)[0].key == by_type.key
    clicks, _ = session.simulate("s", SimulationOptions(passes=2, top_k=3), seed=1)
    again, reused = session.simulate("s", passes=2, top_k=3, seed=1)
    assert reused and again.key == clicks.key and clicks.config["top_k"] == 3
    with pytest.raises(ValueError, match="unknown option 'pases'"):
        session.simulate("s", pases=2)
