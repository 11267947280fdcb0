"""Artifacts: content-hash keys, atomic writes, reuse, selection."""

import numpy as np
import pytest

from cltr.selection import parse_grid, select_on_validation
from cltr.workspace import Workspace, atomic_write, config_key


def test_config_key_is_stable_and_order_free():
    assert config_key({"a": 1, "b": [1, 2]}) == config_key({"b": [1, 2], "a": 1})
    assert config_key({"a": 1}) != config_key({"a": 2})


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "x.bin"
    with pytest.raises(RuntimeError):
        with atomic_write(target) as stream:
            stream.write(b"half")
            raise RuntimeError("interrupted")
    assert not target.exists() and list(tmp_path.iterdir()) == []


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
    assert second.manifest["cltr_version"] and second.manifest["seconds"] is not None


def test_incomplete_artifact_is_recomputed(tmp_path):
    space = Workspace(tmp_path)
    artifact, _ = space.cached("d", "stage", {"k": 1}, lambda: ({"v": np.ones(2)}, {}))
    (tmp_path / "d" / "stage" / f"{artifact.key}.json").unlink()  # killed before the manifest
    assert space.load("d", "stage", artifact.key) is None


def test_selection_keeps_best_and_ties_go_to_first():
    values = {0.1: 0.5, 1.0: 0.7, 10.0: 0.7}
    selection = select_on_validation([{"C": c} for c in values], lambda p, prev: (p["C"], {}),
                                     lambda model: values[model])
    assert selection.best == 1.0 and selection.best_estimate == 0.7 and len(selection.table) == 3


def test_selection_skips_nan():
    selection = select_on_validation([{"C": 1.0}, {"C": 2.0}], lambda p, prev: (p["C"], {}),
                                     lambda model: float("nan") if model == 1.0 else 0.3)
    assert selection.best == 2.0


def test_parse_grid():
    assert parse_grid("1,0.1") == [0.1, 1.0]
    assert np.allclose(parse_grid("0.001:1000:7"), [1e-3, 1e-2, 1e-1, 1, 10, 100, 1000])
    with pytest.raises(ValueError, match="positive"):
        parse_grid("-1,2")
