"""`cltr figures`: specs, the cached task runner, determinism across backends, resume, outputs."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from cltr.cli import main
from cltr.experiments import SPEC_DIR, load_spec, plan, run_experiment, spec_names
from cltr.report import plot, summarise

TINY_SPEC = """
name = "tiny"
artifact = "test"
description = "fast methods on a tiny dataset"
kind = "curve"
dataset = "tiny"
methods = ["svm-rank", "svm-proprank"]
references = ["production"]
reps = 2
seed = 11
x = "passes"
values = [2, 4, 8]
plot_x = "train_clicks"
[synthetic]
n_queries = 40
[clicks]
eta = 1.0
eps_neg = 0.1
[options.svm-rank]
grid = [0.1, 10.0]
[options.svm-proprank]
grid = [0.1, 10.0]
"""


@pytest.fixture
def tiny(tmp_path):
    """A spec directory holding the tiny spec, and a workspace with its dataset prepared."""
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "tiny.toml").write_text(TINY_SPEC)
    return specs


def invoke(*args):
    result = CliRunner().invoke(main, list(map(str, args)), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def run_tiny(specs, workdir, *extra):
    invoke("--workdir", workdir, "figures", "tiny", "--specs", specs, "--out", Path(workdir) / "results", *extra)
    return (Path(workdir) / "results" / "tiny.csv").read_text()


def test_every_spec_loads_and_plans():
    names = spec_names()
    assert {"table2", "learning-curve", "rank-curve", "eta", "noise", "misspec", "ccp", "deep", "smoke"} <= set(names)
    for name in names:
        for quick in (False, True):
            spec = load_spec(name).resolved(quick=quick)
            tasks = plan(spec, default_passes=100)
            assert len(tasks) == spec.reps * max(1, len(spec.values)) * int(np.prod([len(v) for v in spec.series.values()]))
            # every point of one repetition shares its seed (paired points)
            assert len({(t.repetition, t.seed) for t in tasks}) == spec.reps


def test_bad_specs_say_what_is_wrong(tmp_path):
    (tmp_path / "bad.toml").write_text('name = "bad"\nkind = "pie"\n')
    with pytest.raises(ValueError, match="kind must be one of"):
        load_spec("bad", tmp_path)
    (tmp_path / "odd.toml").write_text('name = "odd"\nkind = "curve"\nx = "colour"\nvalues = [1]\n')
    with pytest.raises(ValueError, match="click settings"):
        load_spec("odd", tmp_path)
    with pytest.raises(ValueError, match="no experiment spec"):
        load_spec("missing", tmp_path)


@pytest.mark.parametrize("dataset, default", [("synthetic", 100), ("letor", 100), ("yahoo", 10)])
def test_quick_never_simulates_more_than_the_full_spec(dataset, default):
    for name in spec_names():
        full = plan(load_spec(name).resolved(dataset=dataset), default_passes=default)
        quick = plan(load_spec(name).resolved(dataset=dataset, quick=True), default_passes=default)
        assert quick[0].clicks["simulated_passes"] <= full[0].clicks["simulated_passes"], name
        assert len(quick) <= len(full), name


def test_spec_typos_fail_at_load_time(tmp_path):
    base = 'name = "{n}"\nkind = "curve"\nx = "passes"\nvalues = [1, 2]\nmethods = ["svm-rank"]\n'
    cases = {"m": ('methods = ["svm-proprnk"]\n', "unknown methods"),
             "p": ('plot_x = "train_click"\n', "plot_x"),
             "o": ('[options.svm-propdcg]\ngrid = [1.0]\n', "does not run"),
             "f": ('', "positive integers")}
    for name, (extra, message) in cases.items():
        text = base.format(n=name)
        if name == "m":
            text = text.replace('methods = ["svm-rank"]\n', extra)
        elif name == "f":
            text = text.replace("values = [1, 2]", "values = [1, 2.5]")
        else:
            text += extra
        (tmp_path / f"{name}.toml").write_text(text)
        with pytest.raises(ValueError, match=message):
            load_spec(name, tmp_path)


def test_yahoo_overrides_apply_by_dataset_prefix():
    spec = load_spec("eta").resolved(dataset="yahoo")
    assert spec.series == {"passes": [2, 10]} and spec.dataset == "yahoo"


def test_smoke_spec_gives_the_same_csv_with_one_job_two_jobs_and_dask(tmp_path):
    """Every method of the smoke spec, to the last digit, whatever runs the tasks."""
    pytest.importorskip("distributed")
    outputs = []
    for name, extra in (("one", ["--n-jobs", "1"]), ("two", ["--n-jobs", "2"]),
                        ("dask", ["--backend", "dask", "--n-jobs", "2"])):
        invoke("--workdir", tmp_path / name, "figures", "smoke", "--out", tmp_path / name / "results", *extra)
        outputs.append((tmp_path / name / "results" / "smoke.csv").read_text())
    assert outputs[0] == outputs[1] == outputs[2]
    frame = pd.read_csv(tmp_path / "one" / "results" / "smoke.csv")
    spec = load_spec("smoke")
    assert set(frame["method"]) == set(spec.methods) | set(spec.references)
    for suffix in ("csv", "md", "tex", "png", "pdf"):
        assert (tmp_path / "one" / "results" / f"smoke.{suffix}").stat().st_size > 0
    # nested logs: more passes, more clicks, within each repetition
    for _, group in frame[frame["method"] == "svm-rank"].groupby("repetition"):
        assert np.all(np.diff(group.sort_values("point_passes")["train_clicks"].to_numpy()) > 0)


def test_interrupted_run_resumes_with_only_the_unfinished_tasks(tiny, tmp_path):
    reference = run_tiny(tiny, tmp_path / "reference")
    workdir = tmp_path / "resumed"
    invoke("--workdir", workdir, "prepare", "synthetic", "--queries", "40", "--name", "tiny")
    spec = load_spec("tiny", tiny).resolved()
    finished = []

    def interrupt(task, reused):
        finished.append(task)
        if len(finished) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_experiment(spec, workdir, on_task_done=interrupt)
    frame, counts = run_experiment(spec, workdir)
    assert counts == {"tasks": 6, "reused": 2, "computed": 4}
    out = run_tiny(tiny, workdir)
    assert out == reference
    assert not list(workdir.rglob("*.tmp"))


def test_killed_run_resumes(tiny, tmp_path):
    """kill -9 in the middle of a run: no corrupt artifact, and the rerun finishes it."""
    reference = run_tiny(tiny, tmp_path / "reference")
    workdir = tmp_path / "killed"
    command = [sys.executable, "-m", "cltr", "--workdir", str(workdir), "figures", "tiny", "--specs", str(tiny),
               "--out", str(workdir / "results")]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    tasks = workdir / "tiny" / "tasks"
    deadline = time.time() + 60
    while time.time() < deadline and len(list(tasks.glob("*.json"))) < 1 and process.poll() is None:
        time.sleep(0.02)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    done_before = len(list(tasks.glob("*.json")))
    assert done_before < 6, "the run finished before it could be killed"
    out = run_tiny(tiny, workdir)
    assert out == reference


def test_plotted_data_match_the_csv(tiny, tmp_path):
    run_tiny(tiny, tmp_path)
    frame = pd.read_csv(tmp_path / "results" / "tiny.csv")
    spec = load_spec("tiny", tiny).resolved()
    _, data = plot(frame, spec)
    for method, label in (("svm-rank", "SVM Rank"), ("svm-proprank", "SVM PropRank")):
        rows = frame[frame["method"] == method].groupby("point_passes")
        assert np.allclose(data[label]["mean"], rows["avg_dcg"].mean().to_numpy())
        assert np.allclose(data[label]["x"], rows["train_clicks"].mean().to_numpy())
        assert np.allclose(data[label]["std"], rows["avg_dcg"].std(ddof=1).to_numpy())
    assert data["Production ranker"]["mean"][0] == pytest.approx(frame[frame["method"] == "production"]["avg_dcg"].mean())
    for suffix in ("png", "pdf", "md", "tex"):
        assert (tmp_path / "results" / f"tiny.{suffix}").stat().st_size > 0
    summary = summarise(frame, spec)
    assert set(summary["n"]) == {2}


def test_table_and_ccp_kinds_write_their_outputs(tmp_path):
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "t.toml").write_text(TINY_SPEC.replace('name = "tiny"', 'name = "t"').replace(
        'kind = "curve"', 'kind = "table"').replace('x = "passes"\nvalues = [2, 4, 8]\nplot_x = "train_clicks"\n', "")
        + '[paper.tiny]\nsvm-rank = [0.5, 1e-2]\n')
    (specs / "c.toml").write_text('name = "c"\nkind = "ccp"\ndataset = "tiny"\nmethods = ["svm-propdcg"]\n'
                                  '[synthetic]\nn_queries = 40\n[clicks]\npasses = 5\n'
                                  '[options.svm-propdcg]\ngrid = [1.0, 100.0]\n')
    invoke("--workdir", tmp_path, "figures", "t", "--specs", specs, "--out", tmp_path / "out")
    text = (tmp_path / "out" / "t.md").read_text()
    assert "paper" in text and "0.5000" in text and "paired t-tests" in text.lower()
    invoke("--workdir", tmp_path, "figures", "c", "--specs", specs, "--out", tmp_path / "out")
    frame = pd.read_csv(tmp_path / "out" / "c.csv")
    assert set(frame["C"]) == {1.0, 100.0}
    for _, group in frame.groupby("C"):
        objective = group.sort_values("iteration")["objective"].to_numpy()
        assert np.all(np.diff(objective) <= 1e-9 * np.abs(objective[:-1]))
    assert (tmp_path / "out" / "c.png").stat().st_size > 0


def test_unprepared_real_dataset_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(main, ["--workdir", str(tmp_path), "figures", "table2", "--dataset", "letor"])
    assert result.exit_code != 0 and "not prepared" in result.output


def test_readme_maps_every_spec_to_its_artifact_and_command():
    readme = (SPEC_DIR / "README.md").read_text()
    for name in spec_names():
        assert f"`{name}.toml`" in readme and f"cltr figures {name}" in readme


def test_specs_are_found_in_a_checkout_and_in_an_installed_copy(tmp_path):
    from cltr.experiments import find_spec_dir

    checkout = tmp_path / "checkout"
    (checkout / "cltr").mkdir(parents=True)
    (checkout / "experiments").mkdir()
    (checkout / "setup.cfg").write_text("")
    assert find_spec_dir(checkout / "cltr", [tmp_path / "prefix"]) == checkout / "experiments"
    # pip install . puts the package in site-packages and the specs under <prefix>/share/cltr
    site_packages = tmp_path / "prefix" / "lib" / "site-packages"
    (site_packages / "cltr").mkdir(parents=True)
    installed = tmp_path / "user" / "share" / "cltr" / "experiments"
    installed.mkdir(parents=True)
    assert find_spec_dir(site_packages / "cltr", [tmp_path / "prefix", tmp_path / "user"]) == installed
