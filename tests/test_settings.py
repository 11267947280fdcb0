"""The stages' settings types (``cltr.options`` declarations beside each stage) drive the
command line's flags and the API: every flag of every command comes from an options type
or is one of the few the options module names as the command line's own."""

import re

import click
import pytest

from cltr import clickmodels, datasets, estimators, methods
from cltr.cli import main
from cltr.pipeline.click_prediction import FitOptions
from cltr.pipeline.experiments import FiguresOptions
from cltr.pipeline.session import RunOptions, Session
from cltr.pipeline.stages import (
    EstimateOptions,
    EvaluateOptions,
    ExportOptions,
    ImportOptions,
    ProductionOptions,
    ScoreOptions,
    SimulationOptions,
)

SETTINGS = {("produce",): ProductionOptions, ("simulate",): SimulationOptions, ("clicks", "import"): ImportOptions,
            ("clicks", "export"): ExportOptions, ("clicks", "fit"): FitOptions,
            ("propensities", "estimate"): EstimateOptions, ("evaluate",): EvaluateOptions, ("score",): ScoreOptions,
            ("figures",): FiguresOptions, ("run",): RunOptions}

# the parameters cltr.options' docstring names as the command line's own (output paths, which
# artifact to read, the shared --dataset and --seed, train's correction choices, prepare's name)
COMMAND_LINE_OWN = {"workdir", "quiet", "verbose", "version", "help", "dataset", "seed", "clicks_key", "model_key",
                    "production_key", "click_model_key", "out", "trec", "propensities", "clip", "correction",
                    "name", "dcg_log"}


def _squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _commands(group, path=()):
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))
        else:
            yield (*path, name), command


def _declared_names() -> set[str]:
    types = [*SETTINGS.values(), *(m.options for m in methods.methods().values()),
             *(m.settings for m in clickmodels.models().values()),
             *(e.options for e in estimators.estimators().values()),
             *(loader.options for loader in datasets.loaders().values())]
    return {f.name for options_type in types for f in options_type.option_fields()}


def test_every_option_of_every_command_is_declared_by_an_options_type_or_the_command_lines_own():
    declared = _declared_names()
    loose = [f"cltr {' '.join(path)} {param.opts[0]}" for path, command in _commands(main)
             for param in command.params
             if isinstance(param, click.Option) and param.name not in declared | COMMAND_LINE_OWN]
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


def test_bad_settings_are_usage_errors_naming_the_flag(invoke):
    assert "Invalid value for '--fraction': 0 is not > 0 and <= 1" in invoke("produce", "--fraction", "0",
                                                                                    expect=2).output
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
