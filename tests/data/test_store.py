"""Prepared datasets as one .npz (``cltr.data.store``): round trips, same bytes for the same
dataset, atomic writes, and refusal of what is not one."""

import hashlib
import time

import numpy as np
import pytest

import cltr.data.store
from cltr.core.queries import Dataset
from cltr.data.loaders import load_letor
from cltr.data.store import load_dataset, save_dataset
from cltr.data.synthetic import make_synthetic


def assert_same_dataset(a: Dataset, b: Dataset):
    assert a.name == b.name and a.relevant_from == b.relevant_from and a.meta == b.meta
    for split in ("train", "vali", "test"):
        for name in ("X", "labels", "qid", "offsets"):
            left, right = getattr(a.splits()[split], name), getattr(b.splits()[split], name)
            np.testing.assert_array_equal(left, right)
            assert left.dtype == right.dtype


def test_save_load_round_trip(tmp_path, monkeypatch):
    dataset = make_synthetic(n_queries=30, seed=5)
    path = save_dataset(dataset, tmp_path / "prepared" / "synthetic.npz")
    assert path == tmp_path / "prepared" / "synthetic.npz"
    assert sorted(p.name for p in path.parent.iterdir()) == ["synthetic.npz"]  # no temporary left
    assert_same_dataset(load_dataset(path), dataset)
    first = hashlib.sha256(path.read_bytes()).hexdigest()
    later = time.time() + 3 * 365 * 86400
    monkeypatch.setattr(time, "time", lambda: later)  # content hashes downstream need same bytes
    save_dataset(dataset, path)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == first


def test_save_load_round_trip_of_loaded_letor(tmp_path, make_letor_tree):
    dataset = load_letor(make_letor_tree(tmp_path / "MQ2008", suffix=".bz2"))
    path = save_dataset(dataset, tmp_path / "letor.npz")
    assert_same_dataset(load_dataset(path), dataset)


def test_load_dataset_rejects_what_is_not_one(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.npz"):
        load_dataset(tmp_path / "missing.npz")
    (tmp_path / "garbage.npz").write_bytes(b"not a zip file")
    with pytest.raises(ValueError, match="garbage.npz: not a prepared cltr dataset"):
        load_dataset(tmp_path / "garbage.npz")
    np.savez(tmp_path / "other.npz", X=np.zeros(3))
    with pytest.raises(ValueError, match="other.npz: not a prepared cltr dataset; missing format"):
        load_dataset(tmp_path / "other.npz")


def test_failed_save_leaves_nothing(tmp_path, monkeypatch):
    dataset = make_synthetic(n_queries=10)
    save_dataset(dataset, tmp_path / "x.npz")
    before = (tmp_path / "x.npz").read_bytes()

    def disk_full(stream, arrays):
        stream.write(b"partial")
        raise OSError("no space left on device")

    monkeypatch.setattr(cltr.data.store, "write_npz", disk_full)
    with pytest.raises(OSError, match="no space left"):
        save_dataset(make_synthetic(n_queries=10, seed=1), tmp_path / "x.npz")
    assert [p.name for p in tmp_path.iterdir()] == ["x.npz"]  # no temporary left behind ...
    assert (tmp_path / "x.npz").read_bytes() == before  # ... and the old file intact
    with pytest.raises(TypeError):
        save_dataset(
            Dataset(
                name="x",
                train=dataset.train,
                vali=dataset.vali,
                test=dataset.test,
                relevant_from=1,
                meta={"not json": object()},
            ),
            tmp_path / "y.npz",
        )
