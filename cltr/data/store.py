"""A prepared dataset as one .npz: ``save_dataset`` / ``load_dataset``."""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from pathlib import Path
from typing import BinaryIO

import numpy as np

from cltr.core.queries import Dataset, Queries, check_queries
from cltr.core.ranking import DCG_BASE
from cltr.data.files import atomic_write, jsonable

__all__ = ["save_dataset", "load_dataset", "read_dataset", "dataset_arrays", "dataset_fingerprint", "write_npz"]

# -- the prepared dataset as one .npz ----------------------------------------------------

_FORMAT = "cltr-dataset/1"
_FIELDS = ("X", "labels", "qid", "offsets")


def write_npz(stream, arrays: dict[str, np.ndarray]) -> None:
    np.savez(stream, **arrays)  # type: ignore[arg-type]  # numpy's stub: a **dict could name allow_pickle
    # members carry a fixed time stamp: same dataset, same bytes


# Members that describe a dataset but do not determine any result: its name, and ``meta``,
# which records among other things the paths the files were read from.
_NOT_CONTENT = ("name", "meta")


def dataset_fingerprint(arrays: dict[str, np.ndarray]) -> str:
    """The sha256 of a dataset's content: every member of ``dataset_arrays`` but its name and
    ``meta`` (so the same data read through another spelling of its path, or under another
    name, has the same fingerprint), each with its name, dtype and shape."""
    digest = hashlib.sha256()
    for key in sorted(set(arrays) - set(_NOT_CONTENT)):
        array = np.ascontiguousarray(arrays[key])
        digest.update(f"{key}\0{array.dtype.str}\0{array.shape}\0".encode())
        digest.update(array.reshape(-1).view(np.uint8))  # type: ignore[arg-type]  # numpy's stubs lack the buffer protocol
    return digest.hexdigest()


def _docid_arrays(docid: np.ndarray, split: str, n_docs: int, name: str) -> dict[str, np.ndarray]:
    # stored as unicode, not objects, so that the file loads without pickle
    docid = np.asarray(docid, dtype=object)
    if docid.shape != (n_docs,):
        raise ValueError(f"{split} split of dataset {name!r}: docid must have shape ({n_docs},), found {docid.shape}")
    missing = np.array([value is None for value in docid.tolist()], dtype=bool)
    arrays = {f"{split}/docid": np.array(["" if value is None else str(value) for value in docid.tolist()], dtype=str)}
    if missing.any():
        arrays[f"{split}/docid_missing"] = missing
    return arrays


def _read_docid(archive, split: str, path: Path) -> np.ndarray | None:
    key = f"{split}/docid"
    if key not in archive.files:  # written before document ids were kept, or a source without
        return None
    docid = archive[key].astype(object)
    n_docs = archive[f"{split}/labels"].shape[0]
    if docid.shape != (n_docs,):
        raise ValueError(f"{path}: {key} has shape {docid.shape}, expected ({n_docs},), one per document")
    if f"{split}/docid_missing" in archive.files:
        missing = archive[f"{split}/docid_missing"]
        if missing.shape != (n_docs,) or missing.dtype != bool:
            raise ValueError(
                f"{path}: {split}/docid_missing must be bool of shape ({n_docs},), "
                f"found {missing.dtype} of shape {missing.shape}"
            )
        docid[missing] = None
    return docid


def dataset_arrays(dataset: Dataset) -> dict[str, np.ndarray]:
    """The members of ``dataset``'s .npz (see ``save_dataset``), every split checked."""
    arrays: dict[str, np.ndarray] = {
        "format": np.array(_FORMAT),
        "name": np.array(dataset.name),
        "relevant_from": np.array(int(dataset.relevant_from), dtype=np.int64),
        "dcg_base": np.array(float(dataset.dcg_base)),
        "meta": np.array(json.dumps(jsonable(dataset.meta), sort_keys=True)),
    }
    for split, queries in dataset.splits().items():
        check_queries(queries, where=f"{split} split of dataset {dataset.name!r}")
        for field_name in _FIELDS:
            arrays[f"{split}/{field_name}"] = np.ascontiguousarray(getattr(queries, field_name))
        if queries.docid is not None:
            arrays.update(_docid_arrays(queries.docid, split, queries.n_docs, dataset.name))
    return arrays


def save_dataset(dataset: Dataset, path: str | os.PathLike) -> Path:
    """Write ``dataset`` to ``path`` as one .npz, atomically.

    The arrays of each split are stored as ``<split>/X``, ``<split>/labels``,
    ``<split>/qid``, ``<split>/offsets``, and, when the split has document ids,
    ``<split>/docid`` (unicode; ``<split>/docid_missing`` marks the rows whose id is None);
    ``name``, ``relevant_from``, ``dcg_base`` and ``meta`` (as a JSON string) beside them. The file is
    written under a temporary name in the same directory and renamed into place, so a reader
    never sees half of it. The same dataset always gives the same bytes.

    Parameters
    ----------
    dataset : Dataset
        Its ``meta`` must be JSON-able (numpy scalars and arrays, tuples and paths are
        converted; tuples come back as lists).
    path : path-like
        Destination, used as given (no suffix is added).

    Returns
    -------
    Path
        ``path``.
    """
    path = Path(path)
    arrays = dataset_arrays(dataset)
    with atomic_write(path) as stream:
        write_npz(stream, arrays)
    return path


def load_dataset(path: str | os.PathLike) -> Dataset:
    """Read a dataset written by ``save_dataset``, checking every split.

    Parameters
    ----------
    path : path-like
        The .npz file.

    Returns
    -------
    Dataset
        Equal, array for array, to the one saved.

    Raises
    ------
    FileNotFoundError
        If ``path`` is not a file.
    ValueError
        If it is not a prepared cltr dataset, or a split breaks the ``Queries`` invariants,
        or the splits differ in feature width.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"prepared dataset not found: {path}")
    with open(path, "rb") as stream:
        return read_dataset(stream, where=path)


def read_dataset(stream: BinaryIO, *, where: str | os.PathLike) -> Dataset:
    """``load_dataset`` from an open binary file; ``where`` names it in errors."""
    try:
        archive = np.load(stream, allow_pickle=False)
    except (EOFError, ValueError, zipfile.BadZipFile) as error:
        raise ValueError(f"{where}: not a prepared cltr dataset ({error})") from error
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise ValueError(f"{where}: not a prepared cltr dataset (a single array, not an .npz)")
    try:
        return _dataset_of(archive, where)
    except (zipfile.BadZipFile, EOFError) as error:  # a member cut short or changed (its CRC fails)
        raise ValueError(f"{where}: damaged ({error}); prepare the dataset again") from error


def _dataset_of(archive, path) -> Dataset:
    with archive:
        required = ["format", "name", "relevant_from", "meta"] + [
            f"{split}/{field_name}" for split in ("train", "vali", "test") for field_name in _FIELDS
        ]
        missing = [key for key in required if key not in archive.files]
        if missing:
            raise ValueError(f"{path}: not a prepared cltr dataset; missing {', '.join(missing)}")
        if str(archive["format"]) != _FORMAT:
            raise ValueError(f"{path}: format {str(archive['format'])!r}, expected {_FORMAT!r}")
        splits = {
            split: Queries(
                **{field_name: archive[f"{split}/{field_name}"] for field_name in _FIELDS},
                docid=_read_docid(archive, split, path),
            )
            for split in ("train", "vali", "test")
        }
        name, relevant_from = str(archive["name"]), int(archive["relevant_from"])
        dcg_base = float(archive["dcg_base"]) if "dcg_base" in archive.files else DCG_BASE
        meta = json.loads(str(archive["meta"]))
    for split, queries in splits.items():
        check_queries(queries, where=f"{split} split of {path}")
    widths = {split: queries.n_features for split, queries in splits.items()}
    if len(set(widths.values())) > 1:
        raise ValueError(
            f"{path}: feature widths differ between splits ({widths}); all splits of one "
            "dataset must share one feature width"
        )
    return Dataset(name=name, relevant_from=relevant_from, meta=meta, dcg_base=dcg_base, **splits)
