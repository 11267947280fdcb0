"""The whole path through the command line (click's CliRunner), on tiny synthetic data and on MQ2008."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cltr.cli import main

LETOR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "letor4" / "MQ2008"


def invoke(workdir, *args):
    result = CliRunner().invoke(main, ["--workdir", str(workdir), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_whole_path_on_tiny_synthetic(tmp_path):
    out = invoke(tmp_path, "prepare", "synthetic", "--queries", "60", "--seed", "1")
    assert "train" in out and "vali" in out and "test" in out
    out = invoke(tmp_path, "produce", "--fraction", "0.05")
    assert "test Avg DCG" in out
    out = invoke(tmp_path, "simulate", "--eta", "1", "--eps-neg", "0.1", "--passes", "20")
    assert "clicks" in out and "irrelevant_click_share" in out
    out = invoke(tmp_path, "train", "svm-proprank", "-C", "0.1")
    assert "svm-proprank, C = 0.1," in out
    out = invoke(tmp_path, "evaluate")
    assert "test Avg DCG" in out
    out = invoke(tmp_path, "evaluate", "--production")
    assert "production ranker" in out and "test Avg DCG" in out
    # Re-running a finished stage reuses its artifact.
    assert "(reused)" in invoke(tmp_path, "train", "svm-proprank", "-C", "0.1")
    # Every artifact records its config and version.
    manifests = list((tmp_path / "synthetic").glob("*/*.json"))
    assert {m.parent.name for m in manifests} == {"production", "clicks", "models", "evaluations"}
    for manifest in manifests:
        record = json.loads(manifest.read_text())
        assert record["cltr_version"] and "config" in record and "seed" in json.dumps(record["config"])


def test_train_selects_C_on_validation_and_svm_rank_runs(tmp_path):
    invoke(tmp_path, "prepare", "synthetic", "--queries", "60")
    invoke(tmp_path, "simulate", "--passes", "10")
    out = invoke(tmp_path, "train", "svm-rank", "--grid", "0.01,1")
    assert "validation_snips_avg_dcg" in out and "svm-rank, C = " in out


def test_stages_build_missing_upstream_with_defaults(tmp_path):
    invoke(tmp_path, "prepare", "synthetic", "--queries", "40")
    out = invoke(tmp_path, "train", "svm-proprank", "-C", "1", "--dataset", "synthetic")
    assert "making one with default settings" in out


def test_clear_errors(tmp_path):
    runner = CliRunner()
    result = runner.invoke(main, ["--workdir", str(tmp_path), "produce", "--dataset", "nope"])
    assert result.exit_code != 0 and "not prepared" in result.output
    result = runner.invoke(main, ["--workdir", str(tmp_path), "simulate", "--eps-neg", "2"])
    assert result.exit_code != 0 and "eps-neg" in result.output
    result = runner.invoke(main, ["--workdir", str(tmp_path), "train", "svm-rank", "--grid", "a,b"])
    assert result.exit_code != 0 and "cannot read grid" in result.output
    result = runner.invoke(main, ["--workdir", str(tmp_path), "evaluate", "--model", "0123"])
    assert result.exit_code != 0


def test_help_explains_every_command():
    for command in ([], ["prepare"], ["prepare", "letor"], ["produce"], ["simulate"], ["train"],
                    ["evaluate"], ["run"]):
        result = CliRunner().invoke(main, [*command, "--help"])
        assert result.exit_code == 0 and "Usage" in result.output


@pytest.mark.letor
@pytest.mark.skipif(not LETOR.exists(), reason=f"real LETOR 4.0 MQ2008 data not found at {LETOR}")
def test_whole_path_on_mq2008_proprank_beats_production(tmp_path):
    invoke(tmp_path, "prepare", "letor", "--mq2008", str(LETOR), "--fold", "1")
    produced = invoke(tmp_path, "produce", "--dataset", "letor")
    invoke(tmp_path, "simulate", "--dataset", "letor", "--eta", "1", "--eps-neg", "0.1")
    invoke(tmp_path, "train", "svm-proprank", "--dataset", "letor")
    invoke(tmp_path, "evaluate", "--dataset", "letor")
    from cltr.workspace import Workspace
    space = Workspace(tmp_path)
    pointers = space.current("letor")
    production = space.load("letor", "production", pointers["production"]).info["test"]["avg_dcg"]
    evaluation = [space.load("letor", "evaluations", k).info for k in space.keys("letor", "evaluations")][0]
    assert evaluation["avg_dcg"] > production + 0.005, (evaluation, production, produced)


def test_svm_propdcg_prints_ccp_trace_and_rejects_bad_metric(tmp_path):
    invoke(tmp_path, "prepare", "synthetic", "--queries", "60")
    invoke(tmp_path, "simulate", "--passes", "20")
    out = invoke(tmp_path, "train", "svm-propdcg", "-C", "1", "--metric", "rbp:0.8")
    assert "CCP trace at C = 1" in out and "train_snips_avg_dcg" in out
    result = CliRunner().invoke(main, ["--workdir", str(tmp_path), "train", "svm-propdcg", "--metric", "ndcg"])
    assert result.exit_code != 0 and "ndcg" in result.output
    result = CliRunner().invoke(main, ["--workdir", str(tmp_path), "train", "svm-rank", "--metric", "dcg"])
    assert result.exit_code != 0 and "No such option '--metric'" in result.output
