"""The whole path through the command line (click's CliRunner), on tiny synthetic data and
on MQ2008: every stage, every method's command, errors that say what is wrong, and the
options generated from the methods' and click models' options types."""

import json
import re
from itertools import pairwise

import click
import pytest

from cltr import clickmodels, methods
from cltr.cli import main
from cltr.pipeline.workspace import Workspace


def _squeeze(text: str) -> str:
    """``text`` without whitespace: help texts are re-wrapped by click."""
    return re.sub(r"\s+", "", text)


# -- the pipeline ---------------------------------------------------------------------------


def test_whole_path_on_tiny_synthetic(tmp_path, invoke):
    out = invoke("prepare", "synthetic", "--queries", "60", "--seed", "1", workdir=tmp_path).output
    assert "train" in out and "vali" in out and "test" in out
    out = invoke("produce", "--fraction", "0.05", workdir=tmp_path).output
    assert "test Avg DCG" in out
    out = invoke("simulate", "--eta", "1", "--eps-neg", "0.1", "--passes", "20", workdir=tmp_path).output
    assert "clicks" in out and "irrelevant_click_share" in out
    out = invoke("train", "svm-proprank", "-C", "0.1", workdir=tmp_path).output
    assert "svm-proprank, C = 0.1," in out
    out = invoke("evaluate", workdir=tmp_path).output
    assert "test Avg DCG" in out
    out = invoke("evaluate", "--production", workdir=tmp_path).output
    assert "production ranker" in out and "test Avg DCG" in out
    # Re-running a finished stage reuses its artifact.
    assert "(reused)" in invoke("train", "svm-proprank", "-C", "0.1", workdir=tmp_path).output
    # Every artifact records its config and version.
    manifests = list((tmp_path / "synthetic").glob("*/*.json"))
    assert {m.parent.name for m in manifests} == {"production", "clicks", "models", "evaluations"}
    for manifest in manifests:
        record = json.loads(manifest.read_text())
        assert record["cltr_version"] and "config" in record and "seed" in json.dumps(record["config"])


def test_train_selects_C_on_validation_and_svm_rank_runs(tmp_path, invoke):
    invoke("prepare", "synthetic", "--queries", "60", workdir=tmp_path)
    invoke("simulate", "--passes", "10", workdir=tmp_path)
    out = invoke("train", "svm-rank", "--grid", "0.01,1", workdir=tmp_path).output
    assert "validation_snips_avg_dcg" in out and "svm-rank, C = " in out


def test_stages_build_missing_upstream_with_defaults(tmp_path, invoke):
    invoke("prepare", "synthetic", "--queries", "40", workdir=tmp_path)
    out = invoke("train", "svm-proprank", "-C", "1", "--dataset", "synthetic", workdir=tmp_path).output
    assert "making one with default settings" in out


def test_clear_errors(tmp_path, invoke):
    result = invoke("produce", "--dataset", "nope", workdir=tmp_path, expect=1)
    assert "Error: dataset 'nope' is not prepared in" in result.output and "--name nope" in result.output
    result = invoke("simulate", "--eps-neg", "2", workdir=tmp_path, expect=2)
    assert "Invalid value for '--eps-neg': 2 is not >= 0 and <= 1" in result.output
    result = invoke("train", "svm-rank", "--grid", "a,b", workdir=tmp_path, expect=2)
    assert "cannot read grid 'a,b'" in result.output
    result = invoke("evaluate", "--model", "0123", workdir=tmp_path, expect=1)
    assert f"Error: no model '0123' in {tmp_path}" in result.output
    assert "`cltr train` prints each model's key" in result.output
    # a model's real key is found; 0123 still is not
    invoke("prepare", "synthetic", "--queries", "40", workdir=tmp_path)
    invoke("train", "svm-rank", "-C", "1", workdir=tmp_path)
    model_key = Workspace(tmp_path).current("synthetic")["models"]
    assert f"model {model_key} (svm-rank" in invoke("evaluate", "--model", model_key, workdir=tmp_path).output
    result = invoke("evaluate", "--model", "0123", workdir=tmp_path, expect=1)
    assert "no model '0123'" in result.output


def test_help_explains_every_command(invoke):
    def commands(group, path):
        for name, command in group.commands.items():
            yield [*path, name]
            if isinstance(command, click.Group):
                yield from commands(command, [*path, name])

    every = [[], *commands(main, [])]
    assert {"prepare", "produce", "simulate", "train", "evaluate", "run", "figures"} <= {c[0] for c in every[1:]}
    for command in every:
        result = invoke(*command, "--help")
        assert "Usage: cltr" in result.output, command
        assert (" ".join(command) + " [OPTIONS]") in result.output or not command, command


@pytest.mark.letor
def test_whole_path_on_mq2008_proprank_beats_production(tmp_path, invoke, mq2008):
    invoke("prepare", "letor", "--mq2008", mq2008, "--fold", "1", workdir=tmp_path)
    produced = invoke("produce", "--dataset", "letor", workdir=tmp_path).output
    invoke("simulate", "--dataset", "letor", "--eta", "1", "--eps-neg", "0.1", workdir=tmp_path)
    invoke("train", "svm-proprank", "--dataset", "letor", workdir=tmp_path)
    invoke("evaluate", "--dataset", "letor", workdir=tmp_path)
    space = Workspace(tmp_path)
    pointers = space.current("letor")
    production = space.load("letor", "production", pointers["production"]).info["test"]["avg_dcg"]
    evaluation = [space.load("letor", "evaluations", k).info for k in space.keys("letor", "evaluations")][0]
    assert evaluation["avg_dcg"] > production + 0.005, (evaluation, production, produced)


# -- every method's command -------------------------------------------------------------------


def test_svm_propdcg_prints_ccp_trace_and_rejects_bad_metric(tmp_path, invoke):
    invoke("prepare", "synthetic", "--queries", "60", workdir=tmp_path)
    invoke("simulate", "--passes", "20", workdir=tmp_path)
    out = invoke("train", "svm-propdcg", "-C", "1", "--metric", "rbp:0.8", "--trace-estimate", workdir=tmp_path).output
    assert "CCP trace at C = 1" in out and "train_snips_avg_dcg" in out
    result = invoke("train", "svm-propdcg", "--metric", "ndcg", workdir=tmp_path, expect=2)
    assert "unknown rank weight 'ndcg'" in result.output and "'avgrank', 'dcg', 'rbp:<p>'" in result.output
    result = invoke("train", "svm-rank", "--metric", "dcg", workdir=tmp_path, expect=2)
    assert "No such option '--metric'" in result.output


def test_cli_trains_and_evaluates_deep_propdcg(tmp_path, invoke):
    invoke("prepare", "synthetic", "--queries", "60", workdir=tmp_path)
    invoke("simulate", "--passes", "20", workdir=tmp_path)
    out = invoke(
        "train",
        "deep-propdcg",
        "--epochs",
        "3",
        "--hidden",
        "8,4",
        "--lr",
        "1e-3",
        "--activation",
        "tanh",
        "--dtype",
        "float64",
        "--batch-docs",
        "300",
        workdir=tmp_path,
    ).output
    assert "deep-propdcg, lr = 0.001, epoch = " in out and "validation SNIPS Avg DCG" in out
    out = invoke("evaluate", workdir=tmp_path).output
    assert "deep-propdcg" in out and "test Avg DCG" in out
    # "8,4" is the hidden sizes (8, 4); the same options again reuse the model
    assert (
        "(reused)"
        in invoke(
            "train",
            "deep-propdcg",
            "--epochs",
            "3",
            "--hidden",
            "8,4",
            "--lr",
            "1e-3",
            "--activation",
            "tanh",
            "--dtype",
            "float64",
            "--batch-docs",
            "300",
            workdir=tmp_path,
        ).output
    )
    out = invoke(
        "train", "deep-propdcg", "--preset", "paper", "--epochs", "2", "--hidden", "4", workdir=tmp_path
    ).output
    assert "lr = 1e-06" in out
    result = invoke("train", "deep-propdcg", "--hidden", "a", workdir=tmp_path, expect=2)
    assert "hidden" in result.output and "'a'" in result.output
    result = invoke("train", "deep-propdcg", "--metric", "prec@3", workdir=tmp_path, expect=2)
    assert "unknown rank weight 'prec@3'" in result.output and "evaluation only" in result.output


def test_cli_trains_and_evaluates_lambdarank_and_skyline(tmp_path, invoke):
    invoke("prepare", "synthetic", "--queries", "60", workdir=tmp_path)
    invoke("simulate", "--passes", "10", workdir=tmp_path)
    out = invoke(
        "train",
        "lambdarank",
        "--learning-rate",
        "0.1",
        "--num-leaves",
        "4",
        "--max-rounds",
        "20",
        "--eval-every",
        "5",
        workdir=tmp_path,
    ).output
    assert "lambdarank, learning_rate = 0.1, num_leaves = 4, n_estimators = " in out
    assert "test Avg DCG" in invoke("evaluate", workdir=tmp_path).output
    out = invoke(
        "train",
        "lambdarank",
        "--num-leaves",
        "2",
        "--learning-rate",
        "0.1",
        "--n-estimators",
        "5",
        "--labels",
        "sessions",
        workdir=tmp_path,
    ).output
    assert "n_estimators = 5" in out
    out = invoke("train", "skyline", "--grid", "0.1,1", workdir=tmp_path).output
    assert "skyline, C = " in out and "validation_label_avg_dcg" in out
    assert "test Avg DCG" in invoke("evaluate", workdir=tmp_path).output
    result = invoke("train", "lambdarank", "--labels", "clicks", workdir=tmp_path, expect=2)
    assert "Invalid value for '--labels': 'clicks' is not one of 'documents', 'sessions'" in result.output
    result = invoke("train", "lambdarank", "--num-leaves", "1", workdir=tmp_path, expect=2)
    assert "Invalid value for '--num-leaves': 1 is not in the range x>=2" in result.output


def test_cli_trains_and_evaluates_tree_propdcg(tmp_path, invoke):
    invoke("prepare", "synthetic", "--queries", "60", workdir=tmp_path)
    invoke("simulate", "--passes", "10", workdir=tmp_path)
    out = invoke(
        "train",
        "tree-propdcg",
        "--learning-rate",
        "0.1",
        "--num-leaves",
        "4",
        "--max-rounds",
        "20",
        "--eval-every",
        "5",
        workdir=tmp_path,
    ).output
    assert "tree-propdcg, learning_rate = 0.1, num_leaves = 4, n_estimators = " in out
    assert "test Avg DCG" in invoke("evaluate", workdir=tmp_path).output
    out = invoke(
        "train",
        "tree-propdcg",
        "--learning-rate",
        "0.1",
        "--num-leaves",
        "2",
        "--n-estimators",
        "5",
        "--metric",
        "rbp:0.8",
        "--hessian",
        "constant",
        workdir=tmp_path,
    ).output
    assert "n_estimators = 5" in out
    result = invoke("train", "tree-propdcg", "--metric", "ndcg", workdir=tmp_path, expect=2)
    assert "unknown rank weight 'ndcg'" in result.output
    result = invoke("train", "tree-propdcg", "--hessian", "newton", workdir=tmp_path, expect=2)
    assert "Invalid value for '--hessian': 'newton' is not one of 'pairs', 'constant'" in result.output


# -- options generated from the options types ---------------------------------------------------


@pytest.mark.parametrize("name", list(methods.methods()))
def test_every_method_has_a_command_whose_help_lists_every_option(name, invoke):
    method = methods.get(name)
    result = invoke("train", name, "--help")
    assert f"Usage: cltr train {name} [OPTIONS]" in result.output
    text = _squeeze(result.output)
    assert _squeeze(method.description or method.summary)[:60] in text
    for field in method.options.option_fields():
        assert field.cli_name in result.output, (name, field.name)
        assert _squeeze(field.spec.help) in text, (name, field.name)
    assert name in invoke("train", "--help").output


def test_figures_help_lists_every_spec(invoke):
    from cltr.pipeline.experiments import spec_names

    listed = {
        line.split()[0]
        for line in invoke("figures", "--help").output.splitlines()
        if line.startswith("  ") and len(line.split()) > 1
    }
    assert set(spec_names()) <= listed, sorted(set(spec_names()) - listed)


def test_simulate_help_lists_every_click_model_setting(invoke):
    result = invoke("simulate", "--help")
    text = _squeeze(result.output)
    for model in clickmodels.models().values():
        assert model.name in result.output
        for field in model.settings.option_fields():
            assert field.cli_name in result.output and _squeeze(field.spec.help) in text, field.name


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["train", "svm-propdcg", "--max-ccp-iter", "0"],
            "Invalid value for '--max-ccp-iter': 0 is not in the range x>=1",
        ),
        (["train", "svm-rank", "-C", "nan"], "Invalid value for '-C': 'nan' is not a finite number"),
        (["train", "svm-proprank", "-C", "0"], "Invalid value for '-C': 0 is not > 0"),
        (["train", "svm-propdcg", "--ccp-tol", "inf"], "Invalid value for '--ccp-tol': 'inf' is not a finite number"),
        (["train", "deep-propdcg", "--activation", "softplus"], "Invalid value for '--activation'"),
        (["train", "svm-rank", "--tols", "1"], "No such option '--tols'. Did you mean '--tol'?"),
        (["simulate", "--eta", "nan"], "Invalid value for '--eta': 'nan' is not a finite number"),
        (["simulate", "--eps-neg", "2"], "Invalid value for '--eps-neg': 2 is not >= 0 and <= 1"),
        (["simulate", "--eps-pos", "-0.5"], "Invalid value for '--eps-pos': -0.5 is not >= 0 and <= 1"),
        (["simulate", "--eta-model", "nan"], "Invalid value for '--eta-model': 'nan' is not a finite number"),
        (["simulate", "--eps-neg", "nan"], "Invalid value for '--eps-neg': 'nan' is not a finite number"),
        (["train", "svm-proprank", "-C", "inf"], "Invalid value for '-C': 'inf' is not a finite number"),
        (["train", "svm-propdcg", "--tol", "nan"], "Invalid value for '--tol': 'nan' is not a finite number"),
        # hand-written options, not generated from an options type
        (["produce", "--fraction", "nan"], "Invalid value for '--fraction': 'nan' is not a finite number"),
        (["produce", "-C", "inf"], "Invalid value for '-C': 'inf' is not a finite number"),
        (["produce", "--seed", "-1"], "Invalid value for '--seed': -1 is not in the range x>=0"),
        (["evaluate", "--seed", "-1"], "Invalid value for '--seed': -1 is not in the range x>=0"),
        (["prepare", "synthetic", "--seed", "-1"], "Invalid value for '--seed': -1 is not in the range x>=0"),
        (["propensities", "estimate", "--level", "nan"], "Invalid value for '--level': 'nan' is not a finite number"),
    ],
)
def test_bad_option_values_are_usage_errors_before_any_work(tmp_path, invoke, args, message):
    workdir = tmp_path / "work"
    result = invoke(*args, workdir=workdir, expect=2)
    assert message in result.output and "Usage: cltr" in result.output
    assert not workdir.exists()  # nothing prepared, simulated or trained


# -- cltr figures: --check, --folds -----------------------------------------------------------


def _table_spec(specs, text: str, paper: str) -> None:
    """``t.toml``: the tiny spec as a table, with made-up paper values."""
    specs.mkdir(exist_ok=True)
    (specs / "t.toml").write_text(
        text.replace('name = "tiny"', 'name = "t"')
        .replace('kind = "curve"', 'kind = "table"')
        .replace('x = "passes"\nvalues = [2, 4, 8]\nplot_x = "train_clicks"\n', "")
        .replace("[clicks]", "[clicks]\npasses = 4")
        + paper
    )


def test_check_compares_with_the_paper_and_fails_beyond_the_tolerance(tmp_path, invoke, tiny_spec_text):
    specs = tmp_path / "specs"
    _table_spec(specs, tiny_spec_text, "[paper.tiny]\nsvm-rank = [0.0, 1e-3]\nsvm-proprank = [0.45, 1.0]\n")
    args = ("figures", "t", "--specs", specs, "--out", tmp_path / "out", "--check")
    result = invoke(*args, workdir=tmp_path, expect=1)
    assert "--check: t against the paper; tolerance 2 of the paper's standard deviations" in result.output
    assert re.search(r"SVM Rank\s+0\.\d{4}\s+0\.0000 ± 1e-03\s+\+\d+\.\d\d\s+NO", result.output)
    assert "1 value(s) more than 2 of the paper's standard deviations from the paper: t SVM Rank" in result.output
    assert "yes" in result.output  # SVM PropRank is within 2 of its (made-up) std 1.0
    result = invoke(*args, "--tolerance", "1e6", workdir=tmp_path)  # the tasks are cached now
    assert "NO" not in result.output and "0 computed" in result.output
    # a dataset the paper has no values for is said to be unchecked, not passed silently
    _table_spec(specs, tiny_spec_text, "[paper.letor]\nsvm-rank = [0.0, 1e-3]\n")
    assert "nothing to check" in invoke(*args, workdir=tmp_path).output


def test_parse_folds():
    from cltr.cli import parse_folds

    assert parse_folds("1-5") == [1, 2, 3, 4, 5]
    assert parse_folds("1,3") == [1, 3] and parse_folds("2") == [2] and parse_folds("2-3, 5,3") == [2, 3, 5]
    for bad in ("0", "3-1", "a", "1-", "1,,2", "-2"):
        with pytest.raises(ValueError):
            parse_folds(bad)


def test_folds_prepares_every_fold_like_the_first_and_reports_each(tmp_path, invoke, tiny_spec_text, make_letor_tree):
    root = tmp_path / "MQ2008"
    for fold in (1, 2):
        make_letor_tree(root, fold=fold, seed=fold)
    specs = tmp_path / "specs"
    _table_spec(
        specs,
        tiny_spec_text.replace('dataset = "tiny"', 'dataset = "letor"').replace("[synthetic]\nn_queries = 40\n", ""),
        "",
    )
    args = ("figures", "t", "--specs", specs, "--out", tmp_path / "out", "--dataset", "letor")
    assert "not prepared" in invoke(*args, "--folds", "1-2", workdir=tmp_path, expect=1).output
    invoke("prepare", "letor", "--mq2008", root, "--relevant-from", "1", "--dcg-log", "2", workdir=tmp_path)
    assert "Invalid value for --folds" in invoke(*args, "--folds", "2-1", workdir=tmp_path, expect=2).output
    out = invoke(*args, "--folds", "1-2", workdir=tmp_path).output
    assert "preparing 'letor-fold2': LETOR 4.0 Fold2 like 'letor'" in out
    record = json.loads((tmp_path / "datasets" / "letor-fold2.json").read_text())
    assert record["meta"]["fold"] == 2 and record["relevant_from"] == 1 and record["dcg_base"] == 2
    text = (tmp_path / "out" / "t.md").read_text()
    assert "letor, folds 1, 2" in text and "Avg DCG letor-fold2" in text and "4 runs" in text
    assert "1/log2(1 + rank)" in text and "(label >= 1)" in text
    # a fold prepared under another convention is refused, not mixed in
    invoke("prepare", "letor", "--mq2008", root, "--fold", "2", "--name", "letor-fold2", workdir=tmp_path)
    assert "prepared like 'letor'" in invoke(*args, "--folds", "1-2", workdir=tmp_path, expect=1).output


def test_evaluate_prints_avg_dcg_in_the_prepared_log_base(tmp_path, invoke):
    # prepared with --dcg-log 2, the number printed under "test Avg DCG" is the mean of
    # 1/log2(1 + rank) over the relevant test documents, computed here from the model's
    # scores with numpy's own sort (the scores have no ties, so no tie-break enters)
    import numpy as np

    from cltr.pipeline.models import scorer_from_arrays

    invoke("prepare", "synthetic", "--queries", "40", "--seed", "2", "--dcg-log", "2", workdir=tmp_path)
    invoke("simulate", "--passes", "5", workdir=tmp_path)
    invoke("train", "svm-proprank", "-C", "1", workdir=tmp_path)
    out = invoke("evaluate", workdir=tmp_path).output
    assert "1/log2(1 + rank)" in out
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if "test Avg DCG" in line)
    printed = float(lines[header + 1].split()[0])

    space = Workspace(tmp_path)
    dataset, _ = space.load_dataset("synthetic")
    test = dataset.test
    scores = scorer_from_arrays(space.load("synthetic", "models", space.current("synthetic")["models"]).arrays).scores(
        test.X
    )
    relevant = test.relevant(dataset.relevant_from)
    gains = []
    for start, end in pairwise(test.offsets):
        query = scores[start:end]
        assert len(np.unique(query)) == len(query)
        rank = np.empty(len(query), dtype=int)
        rank[np.argsort(-query)] = np.arange(1, len(query) + 1)
        gains.extend(1.0 / np.log2(1.0 + rank[relevant[start:end]]))
    assert len(gains) > 10
    assert printed == pytest.approx(np.mean(gains), rel=1e-3)  # printed to 4 significant digits


def test_train_clip_option_prints_the_clipping_and_the_guard(tmp_path, invoke):
    invoke("prepare", "synthetic", "--queries", "60", workdir=tmp_path)
    invoke("simulate", "--passes", "10", "--eta", "2", "--eps-neg", "0.3", workdir=tmp_path)
    out = invoke("train", "svm-proprank", "-C", "1", workdir=tmp_path).output
    # a hard log: --clip auto (the default) chose TAU over a table, and the model faces the logging ranker
    assert "--clip auto: the training weights' effective sample size is" in out
    assert "clip  validation_snips_avg_dcg" in out and "\nnone " in out
    assert "logging ranker" in out and "(difference " in out
    assert "clipped at 0.1" in invoke("train", "svm-proprank", "-C", "1", "--clip", "0.1", workdir=tmp_path).output
    out = invoke("train", "svm-proprank", "-C", "1", "--clip", "none", workdir=tmp_path).output
    assert "clipped at" not in out and "warning: the effective sample size of the training weights (as told)" in out
    result = invoke("train", "svm-proprank", "--clip", "2", workdir=tmp_path, expect=2)
    assert "clip must be 'auto', 'none' or a threshold TAU in (0, 1], found '2'" in result.output


# -- every numeric option, every command (issue 21) ------------------------------------------


def _commands(group, path=()):
    """``(path, command)`` of every leaf command under ``group``."""
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))
        else:
            yield (*path, name), command


def _float_options():
    from cltr.cli import FiniteFloat

    found = []
    for path, command in _commands(main):
        for param in command.params:
            if isinstance(param, click.Option) and isinstance(param.type, (click.types.FloatParamType, FiniteFloat)):
                found.append((" ".join(path), param.opts[0], param.type))
    return found


def test_every_float_option_is_a_finite_float():
    # click's FLOAT and FloatRange let nan and inf through (simulate --logging-temperature nan
    # ran upstream stages before failing; figures --tolerance nan was accepted)
    from cltr.cli import FiniteFloat

    options = _float_options()
    assert len(options) >= 10  # the walk finds them: -C, --fraction, --eta, --clip, --level, --tolerance ...
    loose = [f"cltr {path} {opt}" for path, opt, kind in options if not isinstance(kind, FiniteFloat)]
    assert not loose, f"float options that accept nan or inf: {loose}"


@pytest.mark.parametrize("path, opt", [(path, opt) for path, opt, _ in _float_options()])
@pytest.mark.parametrize("value", ["nan", "inf"])
def test_every_float_option_refuses_nan_and_inf_before_any_work(tmp_path, invoke, path, opt, value):
    workdir = tmp_path / "work"
    result = invoke(*path.split(), opt, value, workdir=workdir, expect=2)
    assert f"Invalid value for '{opt}'" in result.output and "is not a finite number" in result.output
    assert not workdir.exists()


@pytest.mark.parametrize(
    "args", [["--workdir", "", "simulate"], ["simulate", "--workdir", ""], ["--workdir", " ", "evaluate"]]
)
def test_an_empty_workdir_is_an_error_not_the_current_directory(tmp_path, monkeypatch, args):
    from click.testing import CliRunner

    monkeypatch.chdir(tmp_path)  # the workdir option is given here, so not through invoke(workdir=...)
    result = CliRunner().invoke(main, args, prog_name="cltr", catch_exceptions=False)
    assert result.exit_code == 2 and "the workspace directory is empty" in result.output
    assert not any(tmp_path.iterdir())  # nothing written in the current directory


def test_interruption_is_one_line_and_exit_status_130(tmp_path, invoke, monkeypatch):
    from cltr.pipeline.session import Session

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(Session, "simulate", interrupted)
    invoke("prepare", "synthetic", "--queries", "20", workdir=tmp_path)
    result = invoke("simulate", "--passes", "2", workdir=tmp_path, expect=130)
    assert result.output.strip().splitlines()[-1].startswith("interrupted: what finished is kept")
    assert "Traceback" not in result.output and "Aborted" not in result.output


def test_simulate_refuses_passes_whose_log_cannot_fit_before_any_work(tmp_path, invoke, monkeypatch):
    import cltr.core.resources as resources

    invoke("prepare", "synthetic", "--queries", "40", workdir=tmp_path)
    monkeypatch.setattr(resources, "physical_memory", lambda: 1 << 30)
    out = invoke("simulate", "--passes", "10000000", workdir=tmp_path, expect=2).output
    assert re.search(
        r"--passes 10,000,000: a log of about [\d,]+ clicks \(about [\d,]+ a pass on train and vali, "
        r"counted on a pilot of 2 passes\) would need about [\d.]+ GiB, more than this machine's 1 GiB "
        r"of memory; simulate fewer passes",
        _squeeze_spaces(out),
    ), out
    assert not list(tmp_path.rglob("production")) and not list(tmp_path.rglob("clicks"))
    invoke("simulate", "--passes", "3", workdir=tmp_path)  # a log that fits: no pilot, no refusal


def _squeeze_spaces(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_bootstrap_0_says_the_band_is_off_instead_of_warning_about_nan(tmp_path, invoke):
    invoke("prepare", "synthetic", "--queries", "40", workdir=tmp_path)
    invoke("simulate", "--passes", "10", "--rankers", "2", workdir=tmp_path)
    result = invoke("propensities", "estimate", "--bootstrap", "0", "--max-rank", "4", workdir=tmp_path)
    assert "band: off (--bootstrap 0)" in result.output
    assert "warning" not in result.output and "no relevant document" not in result.output
    assert "low" not in result.output.splitlines()[1]  # no empty band columns


def test_svm_propdcg_warns_naming_the_ccp_steps_whose_inner_solve_missed_its_gap(tmp_path, invoke, monkeypatch):
    from cltr.core.svm import PairwiseProblem

    invoke("prepare", "synthetic", "--queries", "40", workdir=tmp_path)
    invoke("simulate", "--passes", "5", workdir=tmp_path)
    out = invoke("train", "svm-propdcg", "-C", "1", "--init", "zero", workdir=tmp_path).output
    assert "inner_tol" in out and "ran out of cutting planes" not in out
    solve = PairwiseProblem.solve
    monkeypatch.setattr(
        PairwiseProblem, "solve", lambda self, *args, **kwargs: solve(self, *args, **kwargs, max_iter=2)
    )
    out = invoke("train", "svm-propdcg", "-C", "1", "--init", "zero", "--tol", "0.0005", workdir=tmp_path).output
    found = re.search(
        r"warning: the inner SVM solve of CCP steps? ((\d+) \(gap ([\d.e-]+) > ([\d.e-]+)\)(, )?)+ "
        r"ran out of cutting planes",
        out,
    )
    assert found, out
    model = Workspace(tmp_path).load("synthetic", "models", Workspace(tmp_path).current("synthetic")["models"])
    misses = model.info["ccp_inner_misses"]
    assert misses and all(m["inner_gap"] > m["inner_tol"] for m in misses)
    assert f"{misses[0]['iteration']} (gap {misses[0]['inner_gap']:.3g} > {misses[0]['inner_tol']:.3g})" in out
