"""`cltr figures`: specs and their validation, the cached task runner, determinism across
backends, resume after an interruption or a kill."""

import io
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

from cltr.pipeline.experiments import SPEC_DIR, find_spec_dir, load_spec, plan, run_experiment, spec_names


def test_every_spec_loads_and_plans():
    names = spec_names()
    assert {"table2", "learning-curve", "rank-curve", "eta", "noise", "misspec", "ccp", "deep", "smoke"} <= set(names)
    for name in names:
        for quick in (False, True):
            spec = load_spec(name).resolved(quick=quick)
            tasks = plan(spec, default_passes=100)
            series = int(np.prod([len(v) for v in spec.series.values()]))
            assert len(tasks) == spec.reps * max(1, len(spec.values)) * series
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
    # a curve is drawn against its x: without one its tasks would run and the report fail
    (tmp_path / "flat.toml").write_text('name = "flat"\nkind = "curve"\nmethods = ["svm-rank"]\n')
    with pytest.raises(ValueError, match=r"flat.toml: a curve needs x"):
        load_spec("flat", tmp_path)


@pytest.mark.parametrize("dataset, default", [("synthetic", 100), ("letor", 100), ("yahoo", 10)])
def test_quick_never_simulates_more_than_the_full_spec(dataset, default):
    for name in spec_names():
        full = plan(load_spec(name).resolved(dataset=dataset), default_passes=default)
        quick = plan(load_spec(name).resolved(dataset=dataset, quick=True), default_passes=default)
        assert quick[0].clicks["simulated_passes"] <= full[0].clicks["simulated_passes"], name
        assert len(quick) <= len(full), name


def test_spec_typos_fail_at_load_time(tmp_path):
    base = 'name = "{n}"\nkind = "curve"\nx = "passes"\nvalues = [1, 2]\nmethods = ["svm-rank"]\n'
    cases = {
        "m": ('methods = ["svm-proprnk"]\n', "unknown methods"),
        "p": ('plot_x = "train_click"\n', "plot_x"),
        "o": ("[options.svm-propdcg]\ngrid = [1.0]\n", "does not run"),
        "f": ("", "positive integers"),
    }
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


def _spec(tmp_path, name, extra, methods='["svm-propdcg"]'):
    (tmp_path / f"{name}.toml").write_text(f'name = "{name}"\nkind = "table"\nmethods = {methods}\n' + extra)
    return name


def test_a_misspelled_method_option_fails_at_load_time_naming_the_valid_one(tmp_path):
    name = _spec(tmp_path, "typo", "[options.svm-propdcg]\nmax_ccp_iters = 3\n")
    with pytest.raises(
        ValueError,
        match=r"\[options.svm-propdcg\]: unknown option 'max_ccp_iters' "
        r"\(did you mean 'max_ccp_iter'\?\); valid: .*max_ccp_iter",
    ):
        load_spec(name, tmp_path)
    name = _spec(tmp_path, "range", "[options.svm-propdcg]\nmax_ccp_iter = 0\n")
    with pytest.raises(ValueError, match=r"\[options.svm-propdcg\]: max_ccp_iter must be an integer >= 1, found 0"):
        load_spec(name, tmp_path)
    name = _spec(tmp_path, "kind", '[options.svm-propdcg]\ngrid = "a,b"\n')
    with pytest.raises(ValueError, match=r"\[options.svm-propdcg\]: grid: cannot read grid 'a,b'"):
        load_spec(name, tmp_path)
    name = _spec(tmp_path, "good", "[options.svm-propdcg]\nmax_ccp_iter = 3\ngrid = [1.0, 10.0]\n")
    assert load_spec(name, tmp_path).options == {"svm-propdcg": {"max_ccp_iter": 3, "grid": [1.0, 10.0]}}


def test_a_misspelled_or_invalid_click_setting_fails_at_load_time(tmp_path):
    name = _spec(tmp_path, "typo", "[clicks]\neps_nge = 0.1\n")
    with pytest.raises(
        ValueError,
        match=r"unknown settings \['eps_nge'\] of click model 'pbm'; "
        r"known: model, passes, .*eps_neg",
    ):
        load_spec(name, tmp_path)
    name = _spec(tmp_path, "range", "[clicks]\neps_neg = 2.0\n")
    with pytest.raises(ValueError, match=r"\[clicks\]: eps_neg must be a finite number >= 0 and <= 1, found 2.0"):
        load_spec(name, tmp_path)
    name = _spec(tmp_path, "type", '[clicks]\neta = "strong"\n')
    with pytest.raises(ValueError, match=r"\[clicks\]: eta must be a finite number >= 0, found 'strong'"):
        load_spec(name, tmp_path)
    name = _spec(tmp_path, "model", '[clicks]\nmodel = "cascade"\n')
    with pytest.raises(ValueError, match="unknown click model 'cascade'; known: .*pbm"):
        load_spec(name, tmp_path)
    # a varied setting is checked per point, and a bad point is refused like a bad setting
    (tmp_path / "curve.toml").write_text(
        'name = "curve"\nkind = "curve"\nmethods = ["svm-rank"]\nx = "eps_neg"\nvalues = [0.0, 0.2]\n'
    )
    assert [t.clicks["eps_neg"] for t in plan(load_spec("curve", tmp_path).resolved(), default_passes=10)] == [0.0, 0.2]


def test_smoke_spec_gives_the_same_csv_with_one_job_two_jobs_and_dask(tmp_path, invoke):
    """Every method of the smoke spec, to the last digit, whatever runs the tasks."""
    pytest.importorskip("distributed")
    import dask

    # The local dask cluster's workers are forked from this process, which has cltr,
    # LightGBM and numba loaded already: spawned, each imported them afresh (the dask run
    # took 9.6 s, forked 2.2 s, on the loaded 2-core machine). The two loky workers are fresh
    # interpreters, so a task that leans on state only this process holds still fails there.
    # Every OpenMP user here (LightGBM, XGBoost) runs one thread, so no OpenMP pool is forked.
    outputs = []
    for name, extra in (
        ("one", ["--n-jobs", "1"]),
        ("two", ["--n-jobs", "2"]),
        ("dask", ["--backend", "dask", "--n-jobs", "2"]),
    ):
        with dask.config.set({"distributed.worker.multiprocessing-method": "fork"}):
            invoke("figures", "smoke", "--out", tmp_path / name / "results", *extra, workdir=tmp_path / name)
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


def test_interrupted_run_resumes_with_only_the_unfinished_tasks(tiny_specs, tmp_path, invoke, run_tiny, tiny_run):
    reference = (tiny_run / "results" / "tiny.csv").read_text()
    workdir = tmp_path / "resumed"
    invoke("prepare", "synthetic", "--queries", "40", "--name", "tiny", workdir=workdir)
    spec = load_spec("tiny", tiny_specs).resolved()
    finished = []

    def interrupt(task, reused):
        finished.append(task)
        if len(finished) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_experiment(spec, workdir, on_task_done=interrupt)
    frame, counts = run_experiment(spec, workdir)
    assert counts == {"tasks": 6, "reused": 2, "computed": 4}
    out = run_tiny(tiny_specs, workdir)
    assert out == reference
    assert not list(workdir.rglob("*.tmp"))


def test_killed_run_resumes(tiny_specs, tmp_path, run_tiny, tiny_run):
    """kill -9 in the middle of a run: no corrupt artifact, and the rerun finishes it."""
    reference = (tiny_run / "results" / "tiny.csv").read_text()
    workdir = tmp_path / "killed"
    command = [
        sys.executable,
        "-m",
        "cltr",
        "--workdir",
        str(workdir),
        "figures",
        "tiny",
        "--specs",
        str(tiny_specs),
        "--out",
        str(workdir / "results"),
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    tasks = workdir / "tiny" / "tasks"
    deadline = time.time() + 60
    while time.time() < deadline and len(list(tasks.glob("*.json"))) < 1 and process.poll() is None:
        time.sleep(0.02)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    done_before = len(list(tasks.glob("*.json")))
    assert done_before < 6, "the run finished before it could be killed"
    out = run_tiny(tiny_specs, workdir)
    assert out == reference


def test_unprepared_real_dataset_is_a_clear_error(tmp_path, invoke):
    result = invoke("figures", "table2", "--dataset", "letor", workdir=tmp_path, expect=1)
    assert "Error: dataset 'letor' is not prepared in" in result.output and "cltr prepare" in result.output
    result = invoke("figures", "tabel2", workdir=tmp_path, expect=1)
    assert "no experiment spec 'tabel2'" in result.output and "table2" in result.output


def test_readme_maps_every_spec_to_its_artifact_and_command():
    readme = (SPEC_DIR / "README.md").read_text()
    for name in spec_names():
        assert f"`{name}.toml`" in readme and f"cltr figures {name}" in readme


def test_specs_are_found_in_a_checkout_and_in_an_installed_copy(tmp_path):
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


# -- pooled selection, claims and stated numbers in specs -------------------------------------


def test_pooled_selection_keeps_the_C_with_the_best_mean_validation_estimate():
    from cltr.pipeline.experiments import pool_selection

    # per repetition, rep 0 would pick C = 0.1 and reps 1, 2 would pick C = 1 and C = 10;
    # the means over repetitions are 0.50 (C = 0.1), 0.52 (C = 1), 0.49 (C = 10)
    validation = {0.1: [0.60, 0.45, 0.45], 1.0: [0.50, 0.56, 0.50], 10.0: [0.40, 0.52, 0.55]}
    rows = []
    for repetition in range(3):
        rows.append(
            {
                "dataset": "d",
                "repetition": repetition,
                "point_passes": 5,
                "method": "production",
                "avg_dcg": 0.3,
                "validation_snips_avg_dcg": np.nan,
                "chosen": "{}",
            }
        )
        for C, estimates in validation.items():
            rows.append(
                {
                    "dataset": "d",
                    "repetition": repetition,
                    "point_passes": 5,
                    "method": "svm-rank",
                    "avg_dcg": 10 * C + repetition,
                    "validation_snips_avg_dcg": estimates[repetition],
                    "chosen": "{}",
                    "candidate_C": C,
                }
            )
    # a second point where C = 10 is best on average, and a tie (C = 0.1 and 1) resolved to the smaller C
    for repetition in range(3):
        for C, estimate in ((0.1, 0.5), (1.0, 0.5), (10.0, 0.4)):
            rows.append(
                {
                    "dataset": "d",
                    "repetition": repetition,
                    "point_passes": 9,
                    "method": "svm-rank",
                    "avg_dcg": C,
                    "validation_snips_avg_dcg": estimate,
                    "chosen": "{}",
                    "candidate_C": C,
                }
            )
    pooled = pool_selection(pd.DataFrame(rows))
    assert "candidate_C" not in pooled.columns
    chosen = pooled[pooled["method"] == "svm-rank"]
    at_5, at_9 = chosen[chosen["point_passes"] == 5], chosen[chosen["point_passes"] == 9]
    assert at_5["avg_dcg"].tolist() == [10.0, 11.0, 12.0]  # C = 1 in every repetition, with its own test metric
    assert at_5["pooled_validation_snips_avg_dcg"].tolist() == pytest.approx([0.52] * 3)
    assert all(json.loads(c) == {"C": 1.0, "selection": "pooled"} for c in at_5["chosen"])
    assert at_9["avg_dcg"].tolist() == [0.1] * 3
    assert (pooled["method"] == "production").sum() == 3  # other rows pass through, in order


def test_pooled_run_trains_every_C_and_keeps_one_for_all_repetitions(tiny_specs, tmp_path, run_tiny, tiny_run):
    pooled = pd.read_csv(io.StringIO(run_tiny(tiny_specs, tmp_path, "--select", "pooled")))
    for _, group in pooled[pooled["method"] != "production"].groupby(["point_passes", "method"]):
        assert group["chosen"].nunique() == 1 and len(group) == 2  # one C, both repetitions
        assert group["pooled_validation_snips_avg_dcg"].iloc[0] == pytest.approx(
            group["validation_snips_avg_dcg"].mean()
        )
    per_repetition = pd.read_csv(tiny_run / "results" / "tiny.csv")
    assert "pooled_validation_snips_avg_dcg" not in per_repetition.columns
    assert (tmp_path / "results" / "tiny.md").read_text().count("pooled as in the paper") == 1


def test_specs_check_select_claims_and_stated_numbers(tmp_path):
    base = 'name = "{n}"\nkind = "table"\nmethods = ["svm-rank", "svm-proprank"]\n'
    cases = {
        "s": ('select = "best"\n', "select must be one of"),
        "c": ('claimed_order = ["svm-rank", "lambdarank"]\n', "claimed_order names methods"),
        "t": ('[[stated]]\ntext = "x"\ndataset = "yahoo"\nmeasure = "clicks"\nvalue = 1\n', "measure must be"),
        "v": (
            '[[stated]]\ntext = "x"\ndataset = "yahoo"\nmeasure = "train_clicks"\nvalue = [1, 2, 3]\n',
            "a number or \\[low, high\\]",
        ),
        "k": ('[[stated]]\ntext = "x"\nmeasure = "train_clicks"\nvalue = 1\n', "needs the keys"),
    }
    for name, (extra, message) in cases.items():
        (tmp_path / f"{name}.toml").write_text(base.format(n=name) + extra)
        with pytest.raises(ValueError, match=message):
            load_spec(name, tmp_path)
    (tmp_path / "ccp.toml").write_text('name = "ccp"\nkind = "ccp"\nmethods = ["svm-propdcg"]\nselect = "pooled"\n')
    with pytest.raises(ValueError, match="applies to kinds"):
        load_spec("ccp", tmp_path)
    table2 = load_spec("table2")
    # the paper's protocol is the spec's; --select and --tune override it
    assert table2.claimed_order[0] == "svm-rank" and (table2.select, table2.tune) == ("pooled", "once")
    # tuned once on MQ2008, Tree PropDCG fell from 0.730 to 0.693: LETOR tunes every repetition
    assert table2.resolved(dataset="letor").tune == "repetition" and table2.resolved(dataset="yahoo").tune == "once"
    assert table2.resolved(dataset="yahoo").claimed_order[1:3] == ("svm-proprank", "lambdarank")
    assert table2.resolved(dataset="letor", select="repetition", tune="once").tune == "once"
    assert [t.select for t in plan(table2.resolved(select="repetition"), default_passes=100)] == ["repetition"] * 6
    assert [t.select for t in plan(table2, default_passes=100)] == ["pooled"] * 6


def test_a_spec_clip_is_auto_none_or_a_threshold(tmp_path):
    for value in ('"auto"', '"none"', "0.1", "1.0"):
        load_spec(_spec(tmp_path, "good", f"[clicks]\nclip = {value}\n"), tmp_path)
    for value in ('"sometimes"', "2.0", "0.0"):
        with pytest.raises(ValueError, match=r"clip \"auto\", \"none\" or a number in \(0, 1\]"):
            load_spec(_spec(tmp_path, "bad", f"[clicks]\nclip = {value}\n"), tmp_path)


def test_figures_all_runs_every_spec_but_those_kept_out(tiny_specs, tmp_path, invoke, tiny_run):
    """`cltr figures all` computes every spec's tasks in two waves (the tuning tasks and the
    untuned specs, then the tuned tasks) and reports each spec from them. `in_all = false`
    keeps a spec out (robustness: hours on the default)."""
    import re
    import shutil

    (tiny_specs / "tuned.toml").write_text(
        'name = "tuned"\nkind = "curve"\ndataset = "tiny"\nmethods = ["svm-rank", "lambdarank"]\n'
        'references = ["production"]\nreps = 1\nseed = 11\ntune = "once"\nx = "passes"\nvalues = [2, 4]\n'
        "[clicks]\neta = 1.0\neps_neg = 0.1\n[options.svm-rank]\ngrid = [1.0]\n"
        "[options.lambdarank]\nnum_leaves = 4\nmax_rounds = 20\n"
    )
    together = tmp_path / "together"
    shutil.copytree(tiny_run, together, ignore=shutil.ignore_patterns("results"))
    # a spec that would fail at once if it ran: its dataset cannot be prepared
    (tiny_specs / "hours.toml").write_text(
        'name = "hours"\nkind = "curve"\nin_all = false\ndataset = "letor"\n'
        'methods = ["svm-rank"]\nx = "eta"\nvalues = [1.0]\n'
    )
    out = invoke(
        "figures", "all", "--specs", tiny_specs, "--out", together / "results", "--n-jobs", "1", workdir=together
    ).output
    assert "hours" not in out and "tiny (test)" in out
    # tiny's 6 tasks were finished; tuned's tuning task (x = 4, the first wave) and the task
    # taking its choice (x = 2, the second) are computed; each spec's report reads them
    assert "8 tasks (2 computed, 6 reused)" in out
    assert re.findall(r"(\d+) tasks \((\d+) computed", out)[1:] == [("6", "0"), ("2", "0")]
    # the reports computed nothing: the waves' tasks are run_experiment's, keys and all
    assert (together / "results" / "tiny.csv").read_text() == (tiny_run / "results" / "tiny.csv").read_text()
    tuned = pd.read_csv(together / "results" / "tuned.csv")
    chosen = [json.loads(c) for c in tuned.loc[tuned["method"] == "lambdarank", "chosen"]]
    assert len(tuned) == 2 * 3 and len(chosen) == 2 and chosen[0]["learning_rate"] == chosen[1]["learning_rate"]
    # with two processes each figure is drawn in a worker while the next spec's tables are
    # written: the same files, byte for byte
    again = invoke(
        "figures", "all", "--specs", tiny_specs, "--out", together / "again", "--n-jobs", "2", workdir=together
    ).output
    assert re.search(r"drew 2 figures: .*tiny\.png, .*tuned\.png", again)
    for name in ("tiny", "tuned"):
        for suffix in ("csv", "md", "tex", "png", "pdf"):
            first = (together / "results" / f"{name}.{suffix}").read_bytes()
            assert (together / "again" / f"{name}.{suffix}").read_bytes() == first, f"{name}.{suffix}"
    assert load_spec("robustness").in_all is False and load_spec("table2").in_all is True
    (tiny_specs / "bad.toml").write_text('name = "bad"\nkind = "table"\nin_all = "no"\n')
    with pytest.raises(ValueError, match="in_all must be true or false"):
        load_spec("bad", tiny_specs)
