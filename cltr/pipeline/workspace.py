"""The workspace: where every stage's artifacts live, keyed by what determines them.

Layout under the workspace root (``--workdir``, ``$CLTR_WORKDIR`` or ``./cltr-work``)::

    datasets/<name>.npz, <name>.json          prepared datasets (``cltr prepare``)
    <dataset>/<stage>/<key>.npz, <key>.json   artifacts of a stage: arrays + manifest
    <dataset>/current.json                    the artifact each stage used last

An artifact's key is a hash of its config, which includes the keys of the artifacts it
was computed from, so a finished stage is found again instead of recomputed, and two
configs never share a file. Writes go to a temporary file in the same directory and are
renamed into place, so an interrupted run leaves no half-written artifact and concurrent
workers computing the same artifact cannot corrupt it (the last rename wins, and both
wrote the same content).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from cltr import __version__

__all__ = ["Workspace", "Artifact", "config_key", "atomic_write", "default_workdir", "jsonable"]


def default_workdir() -> Path:
    return Path(os.environ.get("CLTR_WORKDIR", "cltr-work"))


def jsonable(value: Any) -> Any:
    """``value`` with numpy scalars/arrays and paths turned into plain JSON types."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    return value


def config_key(config: dict) -> str:
    """A short stable hash of a JSON-able config (key order does not matter)."""
    text = json.dumps(jsonable(config), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def file_sha256(path) -> str:
    """The sha256 of a file's bytes, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@contextmanager
def atomic_write(path: Path, mode: str = "wb") -> Iterator[Any]:
    """Open a temporary file beside ``path``; rename it onto ``path`` only on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, mode) as stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


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


class Workspace:
    """Artifact store rooted at one directory."""

    def __init__(self, root: Path | str | None = None):
        self.root = Path(root) if root is not None else default_workdir()

    # -- prepared datasets -------------------------------------------------------------
    def dataset_path(self, name: str) -> Path:
        return self.root / "datasets" / f"{name}.npz"

    def has_dataset(self, name: str) -> bool:
        return self.dataset_path(name).exists()

    # -- stage artifacts ---------------------------------------------------------------
    def _paths(self, dataset: str, stage: str, key: str) -> tuple[Path, Path]:
        folder = self.root / dataset / stage
        return folder / f"{key}.npz", folder / f"{key}.json"

    def has(self, dataset: str, stage: str, key: str) -> bool:
        """Whether the artifact with this key was completely written (nothing is read)."""
        arrays_path, manifest_path = self._paths(dataset, stage, key)
        # The manifest is written last, so its presence means the artifact is complete.
        return manifest_path.exists() and arrays_path.exists()

    def load(self, dataset: str, stage: str, key: str) -> Artifact | None:
        """The artifact with this key, or None if it was never (completely) written."""
        if not self.has(dataset, stage, key):
            return None
        arrays_path, manifest_path = self._paths(dataset, stage, key)
        manifest = json.loads(manifest_path.read_text())
        with np.load(arrays_path, allow_pickle=False) as stored:
            arrays = {name: stored[name] for name in stored.files}
        return Artifact(key, arrays, manifest)

    def save(self, dataset: str, stage: str, config: dict, arrays: dict[str, np.ndarray],
             info: dict | None = None, seconds: float | None = None) -> Artifact:
        key = config_key(config)
        arrays_path, manifest_path = self._paths(dataset, stage, key)
        with atomic_write(arrays_path) as stream:
            np.savez(stream, **arrays)
        manifest = {
            "stage": stage,
            "dataset": dataset,
            "key": key,
            "config": jsonable(config),
            "info": jsonable(info or {}),
            "seconds": seconds,
            "cltr_version": __version__,
            "numpy_version": np.__version__,
            "python": platform.python_version(),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        with atomic_write(manifest_path, "w") as stream:
            json.dump(manifest, stream, indent=2, sort_keys=True)
        return Artifact(key, arrays, manifest)

    def cached(self, dataset: str, stage: str, config: dict,
               compute: Callable[[], tuple[dict[str, np.ndarray], dict]]) -> tuple[Artifact, bool]:
        """Load the artifact of ``config`` or compute, store and return it.

        ``compute`` returns (arrays, info). The second value returned says whether the
        artifact was reused.
        """
        found = self.load(dataset, stage, config_key(config))
        if found is not None:
            return found, True
        start = time.perf_counter()
        arrays, info = compute()
        return self.save(dataset, stage, config, arrays, info, time.perf_counter() - start), False

    # -- what each stage used last -----------------------------------------------------
    def current(self, dataset: str) -> dict:
        path = self.root / dataset / "current.json"
        return json.loads(path.read_text()) if path.exists() else {}

    def set_current(self, dataset: str, stage: str, key: str) -> None:
        pointers = self.current(dataset)
        pointers[stage] = key
        with atomic_write(self.root / dataset / "current.json", "w") as stream:
            json.dump(pointers, stream, indent=2, sort_keys=True)

    def keys(self, dataset: str, stage: str) -> list[str]:
        folder = self.root / dataset / stage
        return sorted(p.stem for p in folder.glob("*.json")) if folder.exists() else []
