"""The workspace: where every stage's artifacts live, keyed by what determines them.

Layout under the workspace root (``--workdir``, ``$CLTR_WORKDIR`` or ``./cltr-work``)::

    datasets/<name>.npz, <name>.json          prepared datasets (``cltr prepare``): arrays + record
    <dataset>/<stage>/<key>.npz, <key>.json   artifacts of a stage: arrays + manifest
    <dataset>/current.json                    the artifact each stage used last
    current.json                              the dataset prepared last (the default --dataset)

An artifact's key is a hash of its config, which includes the keys of the artifacts it
was computed from (for a dataset: its fingerprint, the hash of its content), so a
finished stage is found again instead of recomputed, and two configs never share a file.

Integrity. An artifact (and a prepared dataset) is one unit: its arrays are written first,
then its JSON manifest, which records the sha256 of the arrays' file; a load checks the
arrays against it. So a manifest never stands for arrays it was not written with: an
interrupted write (the manifest missing) is an artifact not yet made, and arrays that were
truncated, changed or replaced are reported as damaged (``DamagedArtifact``), which a
cached stage recomputes with a warning. Each file is written to a temporary name in its
directory and renamed into place, so a reader never sees half a file, and concurrent
workers computing the same artifact cannot corrupt it (the last rename wins; both wrote
the same content, and arrays that differ from the surviving manifest's would be found on
load); temporary files of writers that died are removed by the next write into their
directory. Files are created with the user's umask, and nothing is
written when nothing changes, so a finished workspace can be used read-only.

Work done once. A process about to compute an artifact takes an advisory lock on it; another
process that needs the same artifact meanwhile waits and reuses it (``_computing``).

Which code made it. A key says what an artifact was computed from, not by which code: a
fix to a solver changes no config. Each manifest records ``cltr_code``, a hash of the
package's source files (``code_fingerprint``), and reusing an artifact that another code
made warns, once per stage and process, so that results are never silently an older
version's (a fresh ``--workdir`` recomputes them).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import platform
import re
import time
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from cltr import __version__

# atomic_write, file_sha256, jsonable and remove_stale_temporaries live in data/files.py (data
# is the floor below the pipeline) and are re-exported here for the modules that import them
# from the workspace
from cltr.data.files import atomic_write, file_sha256, jsonable, remove_stale_temporaries, stream_sha256
from cltr.data.store import dataset_arrays, dataset_fingerprint, read_dataset, write_npz

__all__ = [
    "Workspace",
    "Artifact",
    "DamagedArtifact",
    "config_key",
    "atomic_write",
    "default_workdir",
    "jsonable",
    "file_sha256",
    "remove_stale_temporaries",
    "check_name",
    "NAME_CHARACTERS",
]

log = logging.getLogger(__name__)


NAME_CHARACTERS = "letters, digits, '_', '-' and '.', starting with a letter or digit, at most 100 characters"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


def check_name(name: str, what: str = "name") -> str:
    """``name`` if it is a name, never a path: {NAME_CHARACTERS}, no ``..``.

    Datasets, specs, stages and artifact keys become file and folder names in the
    workspace; a separator or a ``..`` would let a name (typed, or in a shared spec) write
    outside it."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or ".." in name:
        raise ValueError(f"{what} {name!r} is not a valid name: use {NAME_CHARACTERS} (no path separators, no '..')")
    return name


check_name.__doc__ = (check_name.__doc__ or "").format(NAME_CHARACTERS=NAME_CHARACTERS)  # "" under python -OO


def default_workdir() -> Path:
    return Path(os.environ.get("CLTR_WORKDIR", "cltr-work"))


def config_key(config: dict) -> str:
    """A short stable hash of a JSON-able config (key order does not matter)."""
    text = json.dumps(jsonable(config), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class DamagedArtifact(ValueError):
    """A file of the workspace that cannot be read back whole: truncated, changed, not
    valid JSON, or not the arrays its manifest was written with."""

    def __init__(self, path: Path | str, problem: str):
        super().__init__(f"{path} is damaged ({problem})")
        self.path, self.problem = Path(path), problem


# -- artifacts ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Artifact:
    """A stored stage result: its arrays and its manifest (config, timing, provenance)."""

    key: str
    arrays: dict[str, np.ndarray]
    manifest: dict

    @property
    def config(self) -> dict:
        return self.manifest["config"]

    @property
    def info(self) -> dict:
        return self.manifest.get("info", {})


@functools.cache
def code_fingerprint() -> str:
    """The first 16 hex digits of the sha256 of every source file of the installed ``cltr``
    package (relative path and content, in path order): equal for equal code, whatever the
    version string says. Once per process (a few milliseconds)."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


_WARNED_OTHER_CODE: set[str] = set()


def _note_other_code(stage: str, manifest: dict, path: Path) -> None:
    """Warn, once per stage in this process, that a reused artifact was made by other code."""
    made_by = manifest.get("cltr_code")
    if made_by == code_fingerprint() or stage in _WARNED_OTHER_CODE:
        return
    _WARNED_OTHER_CODE.add(stage)
    log.warning(
        "reusing stored %s made by other cltr code (%s; this code is %s), e.g. %s: they are that "
        "code's results; a fresh --workdir computes everything with this code",
        stage,
        f"code {made_by}, {manifest.get('created', 'date unknown')}" if made_by else "before code was recorded",
        code_fingerprint(),
        path,
    )


def _provenance() -> dict:
    return {
        "cltr_version": __version__,
        "cltr_code": code_fingerprint(),
        "numpy_version": np.__version__,
        "python": platform.python_version(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def _read_json(path: Path) -> dict:
    """A JSON object from ``path``; DamagedArtifact when it is not one."""
    try:
        value = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DamagedArtifact(path, f"not valid JSON: {error}") from None
    if not isinstance(value, dict):
        raise DamagedArtifact(path, f"a JSON {type(value).__name__}, not an object")
    return value


@contextmanager
def _computing(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock (``flock``) on ``lock_path`` while one process
    computes an artifact, so that another process needing the same artifact (two parallel
    tasks of one repetition, say, sharing its production ranker, clicks or skyline) waits and
    then reuses it instead of computing it again. The lock is released when the process
    ends, however it ends. Where ``flock`` is unavailable (Windows, some network file
    systems) or the lock file cannot be made, both compute, and the atomic writes keep that
    correct: it only costs time. The lock file is removed once the artifact is written, and
    a waiting process that then takes the old file's lock finds the artifact."""
    try:
        import fcntl
    except ImportError:  # not POSIX
        yield
        return
    try:
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:
        yield  # the save that follows reports an unwritable workspace
        return
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
        except OSError:
            pass
        yield
    finally:
        try:
            lock_path.unlink()
        except OSError:
            pass
        os.close(descriptor)


def _save_unit(
    arrays_path: Path, manifest_path: Path, write_arrays: Callable[[BinaryIO], None], manifest: dict
) -> dict:
    """Write the arrays, then the manifest that records their sha256 (so a manifest exists
    only for arrays written whole, and names them). Returns the manifest as written."""
    written: dict[str, str] = {}
    with atomic_write(
        arrays_path, before_rename=lambda temporary: written.update(sha256=file_sha256(temporary))
    ) as stream:
        write_arrays(stream)
    manifest = {**manifest, "arrays_sha256": written["sha256"]}
    with atomic_write(manifest_path, "w") as stream:
        json.dump(manifest, stream, indent=2, sort_keys=True, default=str)
    return manifest


@contextmanager
def _open_unit(arrays_path: Path, manifest_path: Path) -> Iterator[tuple[dict, BinaryIO]]:
    """The manifest and the open arrays' file, checked against the sha256 the manifest
    records (the open file is the one checked, whatever is renamed onto its path meanwhile)."""
    manifest = _read_json(manifest_path)
    if "arrays_sha256" not in manifest:
        raise DamagedArtifact(manifest_path, "it records no arrays_sha256: written by an older cltr, or by hand")
    with open(arrays_path, "rb") as stream:
        if stream_sha256(stream) != manifest["arrays_sha256"]:
            raise DamagedArtifact(
                arrays_path,
                f"its bytes are not those {manifest_path.name} was written with: "
                "truncated, changed, or left by an interrupted write",
            )
        stream.seek(0)
        yield manifest, stream


def _read_arrays(stream: BinaryIO, path: Path) -> dict[str, np.ndarray]:
    try:
        with np.load(stream, allow_pickle=False) as stored:
            return {name: stored[name] for name in stored.files}
    except (zipfile.BadZipFile, EOFError, ValueError, KeyError) as error:
        raise DamagedArtifact(path, f"not a readable .npz: {error}") from None


class Workspace:
    """Artifact store rooted at one directory."""

    def __init__(self, root: Path | str | None = None):
        self.root = Path(root) if root is not None else default_workdir()

    # -- prepared datasets -------------------------------------------------------------
    def dataset_path(self, name: str) -> Path:
        return self.root / "datasets" / f"{check_name(name, 'dataset')}.npz"

    def has_dataset(self, name: str) -> bool:
        """Whether the dataset was prepared completely (its record is written last)."""
        path = self.dataset_path(name)
        return path.exists() and path.with_suffix(".json").exists()

    def save_dataset(self, name: str, dataset, record: dict | None = None) -> dict:
        """Store ``dataset`` as ``name`` with its record: ``record``, the ``fingerprint`` (the
        hash of its content, not of where it was read from) and provenance. Returns the record."""
        path = self.dataset_path(name)
        arrays = dataset_arrays(dataset)
        record = {
            "name": name,
            "fingerprint": dataset_fingerprint(arrays),
            "relevant_from": dataset.relevant_from,
            "dcg_base": dataset.dcg_base,
            "meta": jsonable(dataset.meta),
            **(record or {}),
            **_provenance(),
        }
        saved = _save_unit(path, path.with_suffix(".json"), lambda stream: write_npz(stream, arrays), record)
        if self.last_dataset() != name:
            with atomic_write(self.root / "current.json", "w") as stream:
                json.dump({"dataset": name}, stream)
        return saved

    def last_dataset(self) -> str | None:
        """The dataset prepared last (the default ``--dataset``), or None."""
        path = self.root / "current.json"
        if not path.exists():
            return None
        try:
            name = _read_json(path).get("dataset")
        except DamagedArtifact:
            return None
        return name if isinstance(name, str) and self.has_dataset(name) else None

    def datasets(self) -> list[str]:
        """The names of the prepared datasets."""
        folder = self.root / "datasets"
        if not folder.is_dir():
            return []
        return sorted(
            p.stem
            for p in folder.glob("*.npz")
            if _NAME.fullmatch(p.stem) and ".." not in p.stem and self.has_dataset(p.stem)
        )

    def dataset_record(self, name: str) -> dict:
        """The record of a prepared dataset (its arrays are not read)."""
        if not self.has_dataset(name):
            raise ValueError(f"dataset {name!r} is not prepared in {self.root}; run `cltr prepare` first")
        return _read_json(self.dataset_path(name).with_suffix(".json"))

    def load_dataset(self, name: str):
        """``(Dataset, record)`` of a prepared dataset, its arrays checked against its record."""
        if not self.has_dataset(name):
            raise ValueError(f"dataset {name!r} is not prepared in {self.root}; run `cltr prepare` first")
        path = self.dataset_path(name)
        with _open_unit(path, path.with_suffix(".json")) as (record, stream):
            return read_dataset(stream, where=path), record

    # -- stage artifacts ---------------------------------------------------------------
    def _paths(self, dataset: str, stage: str, key: str) -> tuple[Path, Path]:
        folder = self.root / check_name(dataset, "dataset") / check_name(stage, "stage")
        check_name(key, f"{stage} key")
        return folder / f"{key}.npz", folder / f"{key}.json"

    def has(self, dataset: str, stage: str, key: str) -> bool:
        """Whether the artifact with this key was completely written (nothing is read)."""
        arrays_path, manifest_path = self._paths(dataset, stage, key)
        # The manifest is written last, so its presence means the artifact is complete.
        return manifest_path.exists() and arrays_path.exists()

    def load(self, dataset: str, stage: str, key: str) -> Artifact | None:
        """The artifact with this key, or None if it was never (completely) written.

        Raises
        ------
        DamagedArtifact
            If its files cannot be read back as they were written.
        """
        if not self.has(dataset, stage, key):
            return None
        arrays_path, manifest_path = self._paths(dataset, stage, key)
        try:
            with _open_unit(arrays_path, manifest_path) as (manifest, stream):
                return Artifact(key, _read_arrays(stream, arrays_path), manifest)
        except FileNotFoundError:  # removed since has() looked
            return None

    def save(
        self,
        dataset: str,
        stage: str,
        config: dict,
        arrays: dict[str, np.ndarray],
        info: dict | None = None,
        seconds: float | None = None,
        *,
        cpu_seconds: float | None = None,
    ) -> Artifact:
        """Store an artifact; ``seconds`` (wall) and ``cpu_seconds`` (this process's CPU,
        every thread) are what computing it took, nested stages included (bench/figures.py
        reads them)."""
        key = config_key(config)
        arrays_path, manifest_path = self._paths(dataset, stage, key)
        manifest = {
            "stage": stage,
            "dataset": dataset,
            "key": key,
            "config": jsonable(config),
            "info": jsonable(info or {}),
            "seconds": seconds,
            "cpu_seconds": cpu_seconds,
            **_provenance(),
        }
        manifest = _save_unit(arrays_path, manifest_path, lambda stream: write_npz(stream, arrays), manifest)
        log.info("computed %s in %.1f s", arrays_path, seconds or 0.0)
        return Artifact(key, arrays, manifest)

    def cached(
        self, dataset: str, stage: str, config: dict, compute: Callable[[], tuple[dict[str, np.ndarray], dict]]
    ) -> tuple[Artifact, bool]:
        """Load the artifact of ``config`` or compute, store and return it.

        ``compute`` returns (arrays, info). The second value returned says whether the
        artifact was reused. A damaged artifact is recomputed, with a warning.
        """
        key = config_key(config)
        arrays_path, _ = self._paths(dataset, stage, key)

        def reuse(warn: bool) -> Artifact | None:
            try:
                found = self.load(dataset, stage, key)
            except DamagedArtifact as error:
                if warn:
                    log.warning("%s; computing it again", error)
                return None
            if found is not None:
                log.info("reused %s", arrays_path)
                _note_other_code(stage, found.manifest, arrays_path)
            return found

        found = reuse(warn=True)
        if found is not None:
            return found, True
        with _computing(arrays_path.parent / f".{key}.lock"):
            # another process may have computed it while this one waited for the lock
            found = reuse(warn=False)
            if found is not None:
                return found, True
            start, cpu = time.perf_counter(), time.process_time()
            arrays, info = compute()
            return self.save(
                dataset, stage, config, arrays, info, time.perf_counter() - start, cpu_seconds=time.process_time() - cpu
            ), False

    # -- what each stage used last -----------------------------------------------------
    def current(self, dataset: str) -> dict:
        """The key of the artifact each stage used last ({} before any)."""
        path = self.root / check_name(dataset, "dataset") / "current.json"
        return _read_json(path) if path.exists() else {}

    def set_current(self, dataset: str, stage: str, key: str) -> None:
        try:
            pointers = self.current(dataset)
        except DamagedArtifact as error:
            log.warning("%s; writing a new one", error)
            pointers = {}
        if pointers.get(stage) == key:
            return  # unchanged: a finished workspace is used without writing to it
        pointers[stage] = key
        with atomic_write(self.root / dataset / "current.json", "w") as stream:
            json.dump(pointers, stream, indent=2, sort_keys=True)

    def keys(self, dataset: str, stage: str) -> list[str]:
        folder = self.root / check_name(dataset, "dataset") / check_name(stage, "stage")
        return sorted(p.stem for p in folder.glob("*.json")) if folder.exists() else []
