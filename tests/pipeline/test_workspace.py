"""Artifacts: content-hash keys, atomic writes, reuse, and recomputation of what is incomplete
or damaged."""

import hashlib
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from cltr import __version__
from cltr.pipeline import workspace as workspace_module
from cltr.pipeline.workspace import (
    DamagedArtifact,
    Workspace,
    atomic_write,
    code_fingerprint,
    config_key,
    file_sha256,
    jsonable,
)


def test_config_key_is_stable_and_order_free():
    assert config_key({"a": 1, "b": [1, 2]}) == config_key({"b": [1, 2], "a": 1})
    assert config_key({"a": 1}) != config_key({"a": 2})
    # numpy scalars and tuples hash as the plain JSON values they stand for
    assert config_key({"a": np.int64(1), "b": (1, 2)}) == config_key({"a": 1, "b": [1, 2]})
    assert jsonable({"x": np.arange(2), 3: np.float32(0.5)}) == {"x": [0, 1], "3": 0.5}


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "x.bin"
    with pytest.raises(RuntimeError):
        with atomic_write(target) as stream:
            stream.write(b"half")
            raise RuntimeError("interrupted")
    assert not target.exists() and list(tmp_path.iterdir()) == []
    with atomic_write(target) as stream:
        stream.write(b"whole")
    assert target.read_bytes() == b"whole" and [p.name for p in tmp_path.iterdir()] == ["x.bin"]
    assert file_sha256(target) == hashlib.sha256(b"whole").hexdigest()


def test_cached_computes_once(tmp_path):
    space = Workspace(tmp_path)
    calls = []

    def compute():
        calls.append(1)
        return {"v": np.arange(3)}, {"note": "x"}

    first, reused_first = space.cached("d", "stage", {"k": 1}, compute)
    second, reused_second = space.cached("d", "stage", {"k": 1}, compute)
    assert (reused_first, reused_second) == (False, True) and len(calls) == 1
    assert np.array_equal(second.arrays["v"], np.arange(3)) and second.info == {"note": "x"}
    assert second.manifest["cltr_version"] == __version__ and second.manifest["seconds"] is not None
    assert 0 <= second.manifest["cpu_seconds"] <= second.manifest["seconds"] + 0.05

    def busy():  # about 50 ms of CPU: the manifest's cpu_seconds counts this process's work
        end = time.process_time() + 0.05
        while time.process_time() < end:
            pass
        return {"v": np.arange(1)}, {}

    spun, _ = space.cached("d", "busy", {"k": 1}, busy)
    assert spun.manifest["cpu_seconds"] >= 0.05
    assert second.config == {"k": 1} and second.key == first.key == config_key({"k": 1})
    # another config is another artifact
    _, reused_other = space.cached("d", "stage", {"k": 2}, compute)
    assert (
        not reused_other
        and len(calls) == 2
        and space.keys("d", "stage") == sorted([config_key({"k": 1}), config_key({"k": 2})])
    )


def test_code_fingerprint_follows_the_source_files(tmp_path, monkeypatch):
    # the hash of the package's files: stable within a process, another for another tree
    assert code_fingerprint() == code_fingerprint() and len(code_fingerprint()) == 16
    package = tmp_path / "pkg" / "cltr" / "pipeline"
    package.mkdir(parents=True)
    (package / "workspace.py").write_text("x = 1\n")
    (package.parent / "a.py").write_text("")
    monkeypatch.setattr(workspace_module, "__file__", str(package / "workspace.py"))
    code_fingerprint.cache_clear()
    try:
        first = code_fingerprint()
        code_fingerprint.cache_clear()
        (package.parent / "a.py").write_text("y = 2\n")  # one byte of one file
        assert code_fingerprint() != first
    finally:
        code_fingerprint.cache_clear()


def test_reusing_what_other_code_made_warns_once_per_stage(tmp_path, caplog, monkeypatch):
    monkeypatch.setattr(workspace_module, "_WARNED_OTHER_CODE", set())
    space = Workspace(tmp_path)

    def compute():
        return {"v": np.arange(3)}, {}

    made, _ = space.cached("d", "models", {"k": 1}, compute)
    assert made.manifest["cltr_code"] == code_fingerprint()
    space.cached("d", "models", {"k": 1}, compute)  # this code's own: silent
    assert "other cltr code" not in caplog.text
    for k in (1, 2):  # a key stored by another code, and one stored before code was recorded
        space.cached("d", "models", {"k": k}, compute)
        path = tmp_path / "d" / "models" / f"{config_key({'k': k})}.json"
        manifest = json.loads(path.read_text())
        if k == 1:
            manifest["cltr_code"] = "0123456789abcdef"
        else:
            del manifest["cltr_code"]
        path.write_text(json.dumps(manifest))
    again, reused = space.cached("d", "models", {"k": 1}, compute)
    assert reused and np.array_equal(again.arrays["v"], np.arange(3))  # reused, not recomputed
    assert caplog.text.count("other cltr code") == 1
    assert "reusing stored models made by other cltr code (code 0123456789abcdef" in caplog.text
    assert f"this code is {code_fingerprint()}" in caplog.text and "a fresh --workdir" in caplog.text
    space.cached("d", "models", {"k": 2}, compute)  # the same stage: said once
    assert caplog.text.count("other cltr code") == 1
    space.cached("d", "tasks", {"k": 1}, compute)
    path = tmp_path / "d" / "tasks" / f"{config_key({'k': 1})}.json"
    manifest = json.loads(path.read_text())
    del manifest["cltr_code"]
    path.write_text(json.dumps(manifest))
    space.cached("d", "tasks", {"k": 1}, compute)  # another stage: said again
    assert caplog.text.count("other cltr code") == 2 and "before code was recorded" in caplog.text


@pytest.mark.parametrize("lost", ["json", "npz"])
def test_incomplete_artifact_is_recomputed(tmp_path, lost):
    space = Workspace(tmp_path)
    calls = []

    def compute():
        calls.append(1)
        return {"v": np.full(2, float(len(calls)))}, {"call": len(calls)}

    artifact, reused = space.cached("d", "stage", {"k": 1}, compute)
    assert not reused and len(calls) == 1
    folder = tmp_path / "d" / "stage"
    (folder / f"{artifact.key}.{lost}").unlink()  # killed before the manifest, or the arrays lost
    assert not space.has("d", "stage", artifact.key) and space.load("d", "stage", artifact.key) is None
    # the next request computes it again, under the same key, and completes it ...
    again, reused = space.cached("d", "stage", {"k": 1}, compute)
    assert not reused and len(calls) == 2 and again.key == artifact.key
    assert space.has("d", "stage", artifact.key)
    assert sorted(p.name for p in folder.iterdir()) == [f"{artifact.key}.json", f"{artifact.key}.npz"]
    loaded = space.load("d", "stage", artifact.key)
    assert loaded.info == {"call": 2} and np.array_equal(loaded.arrays["v"], [2.0, 2.0])
    assert json.loads((folder / f"{artifact.key}.json").read_text())["config"] == {"k": 1}
    # ... after which it is reused
    third, reused = space.cached("d", "stage", {"k": 1}, compute)
    assert reused and len(calls) == 2 and third.info == {"call": 2}


def test_current_pointers(tmp_path):
    space = Workspace(tmp_path)
    assert space.current("d") == {}
    space.set_current("d", "clicks", "abc")
    space.set_current("d", "models", "def")
    space.set_current("d", "clicks", "ghi")
    assert space.current("d") == {"clicks": "ghi", "models": "def"}
    assert Workspace(tmp_path).current("d") == {"clicks": "ghi", "models": "def"}


# -- integrity: damage, interrupted writes, dead writers' temporaries ---------------------------


def _damage_arrays(folder, key):
    path = folder / f"{key}.npz"
    path.write_bytes(path.read_bytes()[:-7])  # truncated: a disk that filled, a copy cut short


def _flip_a_byte(folder, key):
    path = folder / f"{key}.npz"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def _malformed_manifest(folder, key):
    (folder / f"{key}.json").write_text('{"config":\n')


def _manifest_of_other_arrays(folder, key):
    # a kill between the two writes of a rewrite: new arrays under the old manifest
    np.savez(folder / f"{key}.npz", v=np.arange(5))


@pytest.mark.parametrize("damage", [_damage_arrays, _flip_a_byte, _malformed_manifest, _manifest_of_other_arrays])
def test_damaged_artifact_is_detected_and_recomputed_with_a_warning(tmp_path, caplog, damage):
    space = Workspace(tmp_path)
    calls = []

    def compute():
        calls.append(1)
        return {"v": np.arange(3)}, {"call": len(calls)}

    artifact, _ = space.cached("d", "stage", {"k": 1}, compute)
    damage(tmp_path / "d" / "stage", artifact.key)
    with pytest.raises(DamagedArtifact, match=f"{artifact.key}.(npz|json) is damaged"):
        space.load("d", "stage", artifact.key)
    again, reused = space.cached("d", "stage", {"k": 1}, compute)
    assert not reused and again.info == {"call": 2} and len(calls) == 2
    assert "is damaged" in caplog.text and "computing it again" in caplog.text
    assert space.load("d", "stage", artifact.key).info == {"call": 2}


def test_malformed_current_pointers_are_named_and_replaced_when_written(tmp_path, caplog):
    space = Workspace(tmp_path)
    space.set_current("d", "clicks", "abc")
    (tmp_path / "d" / "current.json").write_text("[1,")
    with pytest.raises(DamagedArtifact, match="current.json is damaged .not valid JSON"):
        space.current("d")
    space.set_current("d", "models", "def")
    assert space.current("d") == {"models": "def"} and "writing a new one" in caplog.text


def test_unchanged_pointer_is_not_written(tmp_path, monkeypatch):
    space = Workspace(tmp_path)
    space.set_current("d", "clicks", "abc")
    monkeypatch.setattr(os, "replace", lambda *args: pytest.fail("wrote an unchanged current.json"))
    space.set_current("d", "clicks", "abc")


def test_temporary_files_of_dead_writers_are_removed_by_the_next_write(tmp_path):
    from cltr.data.files import _HOST, STALE_SECONDS

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    names = {
        "dead": f".x.npz.{dead.pid}@{_HOST}.0a1b2c3d.tmp",
        "alive": f".y.npz.{os.getpid()}@{_HOST}.0a1b2c3d.tmp",
        "other host": ".z.npz.1@another-host.0a1b2c3d.tmp",
        "old, other host": ".w.npz.1@another-host.4e5f6a7b.tmp",
        "old, not cltr's": ".notes.tmp",
    }
    for name in names.values():
        (tmp_path / name).write_bytes(b"half")
    long_ago = time.time() - STALE_SECONDS - 60
    for which in ("old, other host", "old, not cltr's"):
        os.utime(tmp_path / names[which], (long_ago, long_ago))
    with atomic_write(tmp_path / "new.bin") as stream:
        stream.write(b"whole")
    left = ["new.bin", names["alive"], names["other host"], names["old, not cltr's"]]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(left)


def test_a_dataset_and_its_record_are_one_unit(tmp_path):
    from cltr.data.synthetic import make_synthetic

    space = Workspace(tmp_path)
    first, second = make_synthetic(n_queries=20, seed=1), make_synthetic(n_queries=20, seed=2)
    record = space.save_dataset("s", first)
    loaded, again = space.load_dataset("s")
    assert again == record and np.array_equal(loaded.train.X, first.train.X)
    # another dataset's arrays under the first's record (a kill between the two writes)
    space.save_dataset("other", second)
    os.replace(tmp_path / "datasets" / "other.npz", tmp_path / "datasets" / "s.npz")
    with pytest.raises(DamagedArtifact, match="s.npz is damaged"):
        space.load_dataset("s")
    # a record without arrays (a first prepare killed between its writes) is no dataset
    (tmp_path / "datasets" / "s.npz").unlink()
    assert not space.has_dataset("s")


def _compute_once(root, log_path, barrier_path):
    """One process's request for the artifact {"x": 1}: each computation appends a line."""

    def compute():
        with open(log_path, "a") as log_file:
            log_file.write(f"{os.getpid()}\n")
        time.sleep(0.5)  # long enough for the other process to ask while this one computes
        return {"a": np.arange(3)}, {"by": os.getpid()}

    while not os.path.exists(barrier_path):  # start together
        time.sleep(0.01)
    artifact, reused = Workspace(root).cached("d", "models", {"x": 1}, compute)
    return artifact.info["by"], reused


@pytest.mark.skipif(sys.platform == "win32", reason="the lock is POSIX flock")
def test_two_processes_needing_one_artifact_compute_it_once(tmp_path):
    from concurrent.futures import ProcessPoolExecutor

    log_path, barrier = tmp_path / "computed.txt", tmp_path / "go"
    with ProcessPoolExecutor(2) as pool:
        futures = [pool.submit(_compute_once, tmp_path / "w", log_path, barrier) for _ in range(2)]
        time.sleep(0.3)
        barrier.touch()
        results = [f.result() for f in futures]
    assert len(log_path.read_text().split()) == 1, "the artifact was computed twice"
    assert sorted(reused for _, reused in results) == [False, True]
    assert results[0][0] == results[1][0]  # both got the one computed artifact
    assert not list((tmp_path / "w" / "d" / "models").glob(".*.lock"))
