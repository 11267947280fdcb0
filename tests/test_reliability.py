"""Nothing silently wrong (README, "What cltr guarantees"): each test injects one fault a
user or a machine can cause (a kill between two writes, a damaged file, a read-only or full
disk, a file-size limit, a bad option, a dataset without relevant documents, a batch log)
and checks that cltr says what happened in one line, or recovers, and never goes on with
stale or meaningless results."""

import errno
import os
import resource
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cltr.data.store import dataset_arrays, dataset_fingerprint, load_dataset
from cltr.pipeline.workspace import Workspace

SMALL = ("prepare", "synthetic", "--queries", "40")


def _one_line_error(result, *needles) -> str:
    """The error of a failed command: one line, no traceback, holding every needle."""
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, result.output
    for needle in needles:
        assert str(needle) in errors[0], (needle, errors[0])
    return errors[0]


def _files(root: Path) -> dict:
    """Every file under root with what a write would change (inode, size, mtime)."""
    return {
        path: (path.stat().st_ino, path.stat().st_size, path.stat().st_mtime_ns)
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


@pytest.fixture(scope="module")
def finished(tmp_path_factory, invoke):
    """A workspace where `cltr run` finished on a small synthetic dataset."""
    work = tmp_path_factory.mktemp("finished")
    invoke(*SMALL, workdir=work)
    invoke("run", workdir=work)
    return work


def _read_only_file_system(monkeypatch):
    """Every file creation fails as on a read-only mount (works as root, unlike chmod)."""
    real_open = os.open

    def open_(path, flags, *args, **kwargs):
        if flags & os.O_CREAT:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_)


# -- 1. stale results ---------------------------------------------------------------------------


@pytest.mark.parametrize("killed_at", [1, 2])
def test_prepare_killed_between_its_writes_never_leaves_a_stale_record(
    tmp_path, invoke, make_letor_tree, monkeypatch, killed_at
):
    """A prepare of Fold 2 killed at its first or second rename, on a workspace holding Fold 1:
    the next command either uses Fold 1 whole, or names the damage; never Fold 2's arrays
    under Fold 1's record (which reused Fold 1's production ranker)."""
    root = tmp_path / "MQ2008"
    for fold in (1, 2):
        make_letor_tree(root, fold=fold, seed=fold)
    work = tmp_path / "work"
    invoke("prepare", "letor", "--mq2008", root, "--relevant-from", "1", workdir=work)
    invoke("produce", "--dataset", "letor", workdir=work)
    real_replace, calls = os.replace, []

    def killed(source, target):
        calls.append(target)
        if len(calls) == killed_at:
            raise KeyboardInterrupt  # as SIGINT would, between two writes
        return real_replace(source, target)

    monkeypatch.setattr(os, "replace", killed)
    invoke("prepare", "letor", "--mq2008", root, "--fold", "2", "--relevant-from", "1", workdir=work, expect=130)
    monkeypatch.setattr(os, "replace", real_replace)
    assert not list(work.rglob("*.tmp"))
    result = invoke("produce", "--dataset", "letor", workdir=work, expect=None)
    if result.exit_code == 0:  # Fold 1 whole, its production ranker rightly reused
        assert "(reused)" in result.output and load_dataset(work / "datasets" / "letor.npz").meta["fold"] == 1
        dataset, record = Workspace(work).load_dataset("letor")
        assert record["fingerprint"] == dataset_fingerprint(dataset_arrays(dataset))
    else:
        _one_line_error(result, work / "datasets" / "letor.npz", "is damaged", "prepare the dataset again")


def test_a_first_prepare_killed_between_its_writes_is_no_dataset(tmp_path, invoke, make_letor_tree, monkeypatch):
    root = make_letor_tree(tmp_path / "MQ2008")
    real_replace = os.replace

    def killed(source, target):
        if str(target).endswith(".json"):
            raise KeyboardInterrupt
        return real_replace(source, target)

    monkeypatch.setattr(os, "replace", killed)
    invoke("prepare", "letor", "--mq2008", root, "--relevant-from", "1", workdir=tmp_path, expect=130)
    monkeypatch.setattr(os, "replace", real_replace)
    result = invoke("produce", "--dataset", "letor", workdir=tmp_path, expect=1)
    _one_line_error(
        result, "dataset 'letor' is not prepared", "an interrupted `cltr prepare` left", "--name letor` first"
    )


def test_a_fingerprint_is_the_content_not_the_spelling_of_its_path(tmp_path, invoke, make_letor_tree, monkeypatch):
    root = make_letor_tree(tmp_path / "data" / "MQ2008")
    work = tmp_path / "work"
    invoke("prepare", "letor", "--mq2008", root, "--relevant-from", "1", workdir=work)
    invoke("produce", "--dataset", "letor", workdir=work)
    monkeypatch.chdir(tmp_path / "data")
    invoke("prepare", "letor", "--mq2008", Path("..") / "data" / "MQ2008", "--relevant-from", "1", workdir=work)
    assert "(reused)" in invoke("produce", "--dataset", "letor", workdir=work).output


# -- 2. filesystem errors -----------------------------------------------------------------------


def test_a_finished_workspace_is_used_without_writing_to_it(finished, invoke):
    before = _files(finished)
    invoke("run", workdir=finished)
    invoke("evaluate", workdir=finished)
    invoke("produce", workdir=finished)
    assert _files(finished) == before


_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH, _CAP_FOWNER = 1, 2, 3  # linux/capability.h
_PR_CAPBSET_DROP = 24  # linux/prctl.h

# Runs the given cltr commands with click's CliRunner and prints [[exit code, output], ...].
_COMMANDS_IN_A_CHILD = """
import json, sys
from click.testing import CliRunner
from cltr.cli import main
print(json.dumps([[r.exit_code, r.output] for r in
                  (CliRunner().invoke(main, args, prog_name="cltr") for args in json.loads(sys.argv[1]))]))
"""


def _without_permission_overrides():
    """preexec_fn: drop the capabilities that let root write whatever the permissions say
    from the bounding set, which is what root's next program gets, so that the child obeys
    the permission bits (of files root owns too) like any user."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH, _CAP_FOWNER):
        if libc.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def _run_obeying_permissions(*commands: list) -> list:
    """``[(exit code, output)]`` of cltr ``commands`` run in one child process that the
    permission bits bind: as root, one without the capabilities that override them (or a
    skip where they cannot be dropped); otherwise an ordinary child."""
    import json

    preexec = _without_permission_overrides if os.geteuid() == 0 else None
    probe = [sys.executable, "-c", "import sys; open(sys.argv[1], 'a')"]
    try:
        # a file without write permission must refuse the child, or the test means nothing
        locked = Path(os.environ.get("TMPDIR", "/tmp")) / f"cltr-permission-probe-{os.getpid()}"
        locked.touch(mode=0o444)
        locked.chmod(0o444)
        try:
            refused = subprocess.run([*probe, str(locked)], preexec_fn=preexec, capture_output=True).returncode != 0
        finally:
            locked.unlink()
    except (OSError, subprocess.SubprocessError) as error:
        pytest.skip(f"cannot start a child process without root's permission overrides: {error}")
    if not refused:
        pytest.skip(
            "a child process here writes to a file without write permission (root's overrides could "
            "not be dropped), so a read-only workspace cannot be made"
        )
    child = [sys.executable, "-c", _COMMANDS_IN_A_CHILD, json.dumps([list(map(str, c)) for c in commands])]
    done = subprocess.run(child, preexec_fn=preexec, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return [tuple(pair) for pair in json.loads(done.stdout)]


def test_a_read_only_workspace_works_until_something_must_be_written(finished):
    from types import SimpleNamespace

    modes = {path: path.stat().st_mode for path in [finished, *finished.rglob("*")]}
    for path in modes:
        path.chmod(stat.S_IMODE(modes[path]) & ~0o222)
    try:
        (ran, ran_output), (trained, trained_output) = _run_obeying_permissions(
            ["--workdir", finished, "run"], ["--workdir", finished, "train", "svm-rank", "-C", "0.5"]
        )
        assert ran == 0, ran_output
        _one_line_error(
            SimpleNamespace(exit_code=trained, output=trained_output),
            finished / "synthetic" / "models",
            "permission denied",
        )
    finally:
        for path, mode in modes.items():
            path.chmod(stat.S_IMODE(mode))


def test_a_read_only_file_system_is_one_line_naming_the_file(finished, invoke, monkeypatch):
    _read_only_file_system(monkeypatch)
    invoke("run", workdir=finished)  # everything reused: nothing to write
    result = invoke("train", "svm-rank", "-C", "0.5", workdir=finished, expect=1)
    _one_line_error(result, finished / "synthetic" / "models", ".npz: the file system is read-only", "--workdir")


def test_a_full_disk_is_one_line_naming_the_file(tmp_path, invoke, monkeypatch):
    def full(descriptor):  # where file systems with delayed allocation report it
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    result = invoke(*SMALL, workdir=tmp_path, expect=1)
    _one_line_error(result, tmp_path / "datasets" / "synthetic.npz", "no space left on the device")
    assert not list(tmp_path.rglob("*.tmp"))


def test_a_file_size_limit_is_one_line_naming_the_file(tmp_path):
    def limited():
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))

    result = subprocess.run(
        [sys.executable, "-m", "cltr", "--workdir", str(tmp_path), *SMALL],
        capture_output=True,
        text=True,
        preexec_fn=limited,
        timeout=120,
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"Error: {tmp_path / 'datasets' / 'synthetic.npz'}: file too large for the file-size limit in force "
        "(ulimit -f); raise the limit"
    ]
    assert not list(tmp_path.rglob("*.tmp"))


@pytest.mark.parametrize("blocked", ["a file where the directory should be", "a read-only file system"])
def test_figures_checks_out_before_computing(tmp_path, invoke, tiny_specs, monkeypatch, blocked):
    (tmp_path / "file").write_text("")
    out = tmp_path / "file" / "results"
    if blocked == "a read-only file system":
        out = tmp_path / "results"
        invoke("prepare", "synthetic", "--queries", "40", "--name", "tiny", workdir=tmp_path)
        _read_only_file_system(monkeypatch)
    result = invoke("figures", "tiny", "--specs", tiny_specs, "--out", out, workdir=tmp_path, expect=1)
    _one_line_error(result, out if blocked == "a read-only file system" else tmp_path / "file")
    assert not (tmp_path / "tiny" / "tasks").exists()  # nothing computed


# -- 3. damaged artifacts -----------------------------------------------------------------------


def test_a_truncated_model_is_named_when_asked_for_and_recomputed_by_its_stage(tmp_path, invoke):
    invoke(*SMALL, workdir=tmp_path)
    invoke("train", "svm-proprank", "-C", "1", workdir=tmp_path)
    key = Workspace(tmp_path).current("synthetic")["models"]
    model = tmp_path / "synthetic" / "models" / f"{key}.npz"
    model.write_bytes(model.read_bytes()[:100])
    _one_line_error(invoke("evaluate", workdir=tmp_path, expect=1), model, "is damaged", "cltr train METHOD")
    result = invoke("train", "svm-proprank", "-C", "1", workdir=tmp_path)
    assert f"warning: {model} is damaged" in result.stderr and "computing it again" in result.stderr
    assert "(reused)" not in result.output
    assert "test Avg DCG" in invoke("evaluate", workdir=tmp_path).output


def test_a_malformed_current_json_is_named(tmp_path, invoke):
    invoke(*SMALL, workdir=tmp_path)
    invoke("produce", workdir=tmp_path)
    pointers = tmp_path / "synthetic" / "current.json"
    pointers.write_text('{\n"production":\n')
    _one_line_error(
        invoke("evaluate", "--production", workdir=tmp_path, expect=1), pointers, "not valid JSON", "delete it"
    )


# -- 4. permissions -----------------------------------------------------------------------------


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600)])
def test_files_honour_the_umask(tmp_path, invoke, umask, mode):
    previous = os.umask(umask)
    try:
        invoke(*SMALL, workdir=tmp_path)
        invoke("produce", workdir=tmp_path)
    finally:
        os.umask(previous)
    files = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert len(files) >= 5 and {stat.S_IMODE(path.stat().st_mode) for path in files} == {mode}


# -- 6. meaningless results -----------------------------------------------------------------------


def test_prepare_refuses_a_split_without_relevant_documents(tmp_path, invoke, write_file):
    text = {
        split: "".join(f"{label} qid:{qid} 1:{label}.5 2:0.25\n" for qid in qids for label in labels)
        for split, qids, labels in (("train", (1, 2), (0, 2)), ("vali", (3,), (0, 2)), ("test", (4, 5), (0, 1)))
    }
    paths = [write_file(tmp_path / f"{split}.txt", text[split]) for split in ("train", "vali", "test")]
    result = invoke(
        "prepare",
        "svmlight",
        "--train",
        paths[0],
        "--vali",
        paths[1],
        "--test",
        paths[2],
        "--relevant-from",
        "2",
        workdir=tmp_path / "work",
        expect=1,
    )
    _one_line_error(result, "the test split of 'svmlight' has no relevant document at relevant_from = 2")
    assert not (tmp_path / "work" / "datasets").exists()


def test_nan_metrics_are_said_not_just_printed(tmp_path, invoke):
    from cltr.data.synthetic import make_synthetic

    dataset = make_synthetic(n_queries=40)
    test = dataset.test
    # stored directly, as a cltr that did not check would have prepared it
    no_relevant = type(test)(X=test.X, labels=np.zeros_like(test.labels), qid=test.qid, offsets=test.offsets)
    Workspace(tmp_path).save_dataset("synthetic", type(dataset)(**{**dataset.__dict__, "test": no_relevant}))
    result = invoke("evaluate", "--production", workdir=tmp_path)
    # nDCG@10 over all queries is 0 there (trec_eval's), over the queries with a relevant document undefined
    assert "warning: nan in test Avg DCG, test Avg Rank, test nDCG@10 relevant queries: undefined" in result.stderr
    assert (
        "warning: nan in avg_dcg, avg_rank, ndcg@10_relevant_queries: undefined"
        in invoke("produce", workdir=tmp_path).stderr
    )


# -- 7. progress ----------------------------------------------------------------------------------


def test_progress_in_a_log_is_a_line_per_interval_with_the_time_left(tmp_path, invoke, monkeypatch):
    from cltr.cli import Progress

    invoke(*SMALL, workdir=tmp_path)
    monkeypatch.setattr(Progress, "INTERVAL", 0.0)  # every update is an interval's worth
    deep = ("train", "deep-propdcg", "--epochs", "4", "--hidden", "4", "--lr", "0.01")
    result = invoke(*deep, workdir=tmp_path)
    lines = [line for line in result.stderr.splitlines() if line.startswith("deep-propdcg: epoch ")]
    assert len(lines) == 4 and lines[0].startswith("deep-propdcg: epoch 1/4 (25%), ") and " left; " in lines[0]
    assert lines[-1].startswith("deep-propdcg: epoch 4/4 (100%)")
    quiet = invoke("-q", *deep, "--seed", "1", workdir=tmp_path)
    assert "deep-propdcg: epoch" not in quiet.stderr and "validation SNIPS Avg DCG" in quiet.output
    assert (
        f"computed {tmp_path / 'synthetic' / 'clicks'}"
        in invoke("-v", "simulate", "--passes", "5", workdir=tmp_path).stderr
    )
    assert (
        f"reused {tmp_path / 'synthetic' / 'clicks'}"
        in invoke("-v", "simulate", "--passes", "5", workdir=tmp_path).stderr
    )


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_experiment_progress_moves_within_a_task(tmp_path, invoke, tiny_specs, n_jobs):
    from cltr.pipeline.experiments import load_spec, run_experiment

    invoke("prepare", "synthetic", "--queries", "40", "--name", "tiny", workdir=tmp_path)
    spec = load_spec("tiny", tiny_specs).resolved(reps=1)
    seen = []
    run_experiment(spec, tmp_path, n_jobs=n_jobs, progress=seen.append)
    assert seen[0].steps_done == 0 and seen[-1].steps_done == seen[-1].steps == 3 * (2 + 2)
    assert any(state.tasks_done == 0 and state.steps_done > 0 for state in seen)  # before any task finished
    assert [state.tasks_done for state in seen] == sorted(state.tasks_done for state in seen)


# -- 8. smaller things ------------------------------------------------------------------------------


def test_workdir_is_accepted_after_the_command(tmp_path, invoke):
    invoke(*SMALL, "--workdir", tmp_path / "after")
    assert Workspace(tmp_path / "after").has_dataset("synthetic")
    result = invoke("produce", "--workdir", tmp_path / "after", workdir=tmp_path / "before", expect=2)
    assert "--workdir is given twice" in result.output


def test_train_prints_its_selection_table_once(tmp_path, invoke):
    invoke(*SMALL, workdir=tmp_path)
    out = invoke("train", "svm-proprank", "--grid", "0.1,1,10", workdir=tmp_path).output
    assert sum(line.split()[:2] == ["C", "validation_snips_avg_dcg"] for line in out.splitlines()) == 1


def test_run_says_what_it_trains(invoke):
    from cltr.cli import run_command

    trained = next(p for p in run_command.params if p.name == "method_names").default
    for help_text in (invoke("--help").output, invoke("run", "--help").output):
        text = " ".join(help_text.split())
        assert "all of it" not in text and all(method in text for method in trained), text
    readme = " ".join((Path(__file__).resolve().parents[1] / "README.md").read_text().split())
    assert "cltr run prepare, produce, simulate, then " + ", ".join(trained[:-1]) + " and " + trained[-1] in readme


def test_figures_are_the_same_bytes_when_run_again(tmp_path, invoke, tiny_specs):
    invoke("figures", "tiny", "--specs", tiny_specs, "--out", tmp_path / "first", "--reps", "1", workdir=tmp_path)
    invoke("figures", "tiny", "--specs", tiny_specs, "--out", tmp_path / "again", "--reps", "1", workdir=tmp_path)
    for suffix in ("csv", "png", "pdf"):
        first = (tmp_path / "first" / f"tiny.{suffix}").read_bytes()
        assert first == (tmp_path / "again" / f"tiny.{suffix}").read_bytes(), suffix
    assert b"/CreationDate" not in (tmp_path / "first" / "tiny.pdf").read_bytes()
