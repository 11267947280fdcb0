"""``tune = "once"``: a method's ``tuned_once`` settings chosen by one task per series and
fixed for the others (the paper's practice for LambdaRank), with the per-model search kept
for what they do not name."""

import json
import tomllib

import pytest

from cltr.pipeline.experiments import _spec_from_dict, load_spec, plan, run_experiment, tuned, tuning_tasks

SPEC = """
name = "tuned"
kind = "curve"
dataset = "tiny"
methods = ["lambdarank", "svm-rank"]
references = ["production"]
reps = 2
seed = 3
x = "eta"
values = [0.5, 1.0, 2.0]
tune = "once"

[series]
passes = [5, 20]

[options.lambdarank]
max_rounds = 20
eval_every = 5
[options.svm-rank]
grid = [1.0]
"""


@pytest.fixture(scope="module")
def tuned_runs(tmp_path_factory):
    from tests.conftest import _invoke

    root = tmp_path_factory.mktemp("tuned")
    (root / "specs").mkdir()
    # one series and max 10 trees keep it cheap; the series are tuning_tasks' (tested alone)
    (root / "specs" / "tuned.toml").write_text(
        SPEC.replace("passes = [5, 20]", "passes = [10]").replace("max_rounds = 20", "max_rounds = 10")
    )
    _invoke("prepare", "synthetic", "--queries", "40", "--name", "tiny", workdir=root)
    spec = load_spec("tuned", root / "specs").resolved()
    once, counts = run_experiment(spec, root)
    # the tuning task's rows are its point's: 6 tasks, 5 computed with the choice fixed
    assert counts == {"tasks": 6, "reused": 1, "computed": 5}
    every, _ = run_experiment(load_spec("tuned", root / "specs").resolved(tune="repetition"), root)
    return spec, once, every


def _choice(row):
    chosen = json.loads(row["chosen"])
    return chosen["learning_rate"], chosen["num_leaves"]


def test_one_task_per_series_tunes_at_the_middle_x():
    spec = _spec_from_dict(tomllib.loads(SPEC), where="test")
    tasks = plan(spec, default_passes=100)
    tuning = tuning_tasks(spec, tasks)
    assert sorted(tuning) == [(5,), (20,)]
    assert all(t.repetition == 0 and t.point["eta"] == 1.0 for t in tuning.values())
    assert tuning_tasks(_spec_from_dict({**tomllib.loads(SPEC), "tune": "repetition"}, where="t"), tasks) == {}


def test_point_tuning_tunes_each_point_by_its_first_repetition():
    spec = _spec_from_dict({**tomllib.loads(SPEC), "tune": "point"}, where="test")
    tasks = plan(spec, default_passes=100)
    tuning = tuning_tasks(spec, tasks)
    assert sorted(tuning) == [(p, eta) for p in (5, 20) for eta in (0.5, 1.0, 2.0)]
    assert all(t.repetition == 0 and (t.point["passes"], t.point["eta"]) == key for key, t in tuning.items())
    rows = {
        key: [{"method": "lambdarank", "chosen": json.dumps({"learning_rate": 0.1, "num_leaves": 2 + i})}]
        for i, key in enumerate(sorted(tuning))
    }
    for task in tuned(spec, tasks, rows):
        key = (task.point["passes"], task.point["eta"])
        assert task.options["lambdarank"]["num_leaves"] == 2 + sorted(tuning).index(key)


def test_every_task_of_a_series_takes_the_tuning_tasks_choice(tuned_runs):
    spec, once, every = tuned_runs
    trees = once[once["method"] == "lambdarank"]
    for passes, group in trees.groupby("point_passes"):
        choices = {_choice(row) for _, row in group.iterrows()}
        # the choice the per-model search made at the tuning task (repetition 0, eta 1)
        reference = every[
            (every["method"] == "lambdarank")
            & (every["point_passes"] == passes)
            & (every["repetition"] == 0)
            & (every["point_eta"] == 1.0)
        ]
        assert choices == {_choice(reference.iloc[0])}
    # the tuning task's own model is the searched one: the same trees, the same test numbers
    at = (once["repetition"] == 0) & (once["point_eta"] == 1.0) & (once["method"] == "lambdarank")
    same = (every["repetition"] == 0) & (every["point_eta"] == 1.0) & (every["method"] == "lambdarank")
    assert once.loc[at, "avg_dcg"].tolist() == every.loc[same, "avg_dcg"].tolist()
    # methods without tuned_once settings are untouched: the same rows either way
    assert (
        once[once["method"] == "svm-rank"]["avg_dcg"].tolist()
        == every[every["method"] == "svm-rank"]["avg_dcg"].tolist()
    )
    # the per-model search does choose differently somewhere, or the test shows nothing
    assert len({_choice(row) for _, row in every[every["method"] == "lambdarank"].iterrows()}) > 1


def test_an_option_the_spec_fixes_is_kept():
    raw = tomllib.loads(SPEC)
    raw["options"]["lambdarank"]["num_leaves"] = 4
    spec = _spec_from_dict(raw, where="test")
    tasks = plan(spec, default_passes=100)
    row = {"method": "lambdarank", "chosen": json.dumps({"learning_rate": 0.01, "num_leaves": 8, "n_estimators": 5})}
    fixed = tuned(spec, tasks, {(5,): [row], (20,): [row]})
    assert {(t.options["lambdarank"]["learning_rate"], t.options["lambdarank"]["num_leaves"]) for t in fixed} == {
        (0.01, 4)
    }
    assert all(t.options["svm-rank"] == {"grid": [1.0]} for t in fixed)


@pytest.mark.parametrize(
    "tuning, message",
    [
        ('tune = "sometimes"', "tune must be one of"),
        ('tune = "once"\ntune_at = 1.5', "tune_at must be one of the x values"),
        ('tune = "point"\ntune_at = 1.0', 'tune_at applies to tune = "once"'),
    ],
)
def test_bad_tuning_keys_are_refused(tmp_path, tuning, message):
    (tmp_path / "tuned.toml").write_text(SPEC.replace('tune = "once"', tuning))
    with pytest.raises(ValueError, match=message):
        load_spec("tuned", tmp_path)


def test_a_tune_at_stays_behind_where_a_dataset_or_the_command_tunes_otherwise(tmp_path):
    # the spec tunes once at eta 1.0; LETOR per repetition (robustness's shape): its tune_at is
    # dropped there, not refused, and kept wherever tune = "once" still holds
    text = SPEC.replace('tune = "once"', 'tune = "once"\ntune_at = 1.0') + '\n[datasets.letor]\ntune = "repetition"\n'
    (tmp_path / "tuned.toml").write_text(text)
    spec = load_spec("tuned", tmp_path)
    assert (spec.resolved().tune, spec.resolved().tuned_at) == ("once", 1.0)
    assert spec.resolved(dataset="letor").tune == "repetition"
    assert spec.resolved(tune="point").tune == "point"
    assert (spec.resolved(dataset="letor", tune="once").tuned_at) == 1.0
    # a table that sets tune_at itself beside another tuning is still refused
    (tmp_path / "tuned.toml").write_text(text.replace('tune = "repetition"\n', 'tune = "point"\ntune_at = 2.0\n'))
    with pytest.raises(ValueError, match='tune_at applies to tune = "once"'):
        load_spec("tuned", tmp_path).resolved(dataset="letor")


def test_select_and_tune_reach_only_the_kinds_that_select():
    # `cltr figures all --tune once --select pooled` runs ccp and propensity too
    for name in ("ccp", "propensity"):
        spec = load_spec(name).resolved(select="pooled", tune="once")
        assert (spec.select, spec.tune) == ("repetition", "repetition")
    assert load_spec("eta").resolved(select="repetition", tune="point").tune == "point"


def test_pooling_refuses_a_method_told_another_criterion():
    raw = tomllib.loads(SPEC.replace("grid = [1.0]", 'grid = [1.0, 10.0]\ncriterion = "dr"'))
    with pytest.raises(ValueError, match="pools C by the validation SNIPS estimate"):
        _spec_from_dict({**raw, "select": "pooled"}, where="test")
    assert _spec_from_dict({**raw, "select": "repetition"}, where="test").select == "repetition"


def test_the_report_says_how_settings_were_tuned():
    import pandas as pd

    from cltr.pipeline.report.notes import _selection_text

    spec = _spec_from_dict(tomllib.loads(SPEC), where="test")
    assert "once per series, by its first repetition at x = 1.0" in _selection_text(pd.DataFrame(), spec)
    point = _spec_from_dict({**tomllib.loads(SPEC), "tune": "point"}, where="test")
    assert "each point's first repetition" in _selection_text(pd.DataFrame(), point)
    plain = _spec_from_dict({**tomllib.loads(SPEC), "tune": "repetition"}, where="test")
    assert "learning rate" not in _selection_text(pd.DataFrame(), plain)


def test_a_changed_method_default_changes_the_tasks_that_train_it(monkeypatch):
    # a task's key held the spec's options only: after a method's default changed, a figure
    # re-used the rows its old default gave (the tree two-tower's patience, 50 -> 100)
    import cltr.pipeline.experiments as experiments

    spec = _spec_from_dict(tomllib.loads(SPEC), where="test")
    task = plan(spec, default_passes=100)[0]
    before = task.config("fingerprint")
    assert set(before["resolved"]) == {"lambdarank", "svm-rank"}  # "production" is no method
    real = experiments.methods.methods()

    class Changed:
        @staticmethod
        def parse_options(options):
            parsed = real["lambdarank"].parse_options(options)
            return type("Parsed", (), {"to_dict": lambda self: {**parsed.to_dict(), "patience": 100}})()

    monkeypatch.setattr(experiments.methods, "methods", lambda: {**real, "lambdarank": Changed})
    after = task.config("fingerprint")
    assert after["resolved"]["lambdarank"] != before["resolved"]["lambdarank"]
    assert after["resolved"]["svm-rank"] == before["resolved"]["svm-rank"]
    assert experiments.config_key(after) != experiments.config_key(before)
