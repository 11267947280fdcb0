"""Artifacts: content-hash keys, atomic writes, reuse, and recomputation of what is incomplete."""

import hashlib
import json

import numpy as np
import pytest

from cltr import __version__
from cltr.pipeline.workspace import Workspace, atomic_write, config_key, file_sha256, jsonable


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
    assert second.config == {"k": 1} and second.key == first.key == config_key({"k": 1})
    # another config is another artifact
    _, reused_other = space.cached("d", "stage", {"k": 2}, compute)
    assert not reused_other and len(calls) == 2 and space.keys("d", "stage") == sorted(
        [config_key({"k": 1}), config_key({"k": 2})])


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
