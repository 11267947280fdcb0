"""Files written whole or not at all, and the JSON form of the values they record.

The lowest floor of file handling that every writer shares: prepared datasets
(``cltr.data.store``), click logs (``cltr.data.clicklog``), the workspace's artifacts
(``cltr.pipeline.workspace``) and the report's tables and figures all write through
``atomic_write``, and every JSON record passes through ``jsonable``. It lives in ``data``
(below ``pipeline``) so that data never imports the pipeline.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

__all__ = ["atomic_write", "jsonable", "file_sha256", "stream_sha256", "remove_stale_temporaries", "STALE_SECONDS"]


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


def stream_sha256(stream: BinaryIO) -> str:
    """The sha256 of the rest of an open binary stream, read in blocks."""
    digest = hashlib.sha256()
    for block in iter(lambda: stream.read(1 << 20), b""):
        digest.update(block)
    return digest.hexdigest()


def file_sha256(path) -> str:
    """The sha256 of a file's bytes, read in blocks."""
    with open(path, "rb") as stream:
        return stream_sha256(stream)


# -- files written whole or not at all -----------------------------------------------------

# platform.node() is the host name, as socket.gethostname() gives it, without importing socket
# (about 5 ms at every `cltr` start); numpy has imported platform already
_HOST = re.sub(r"[^A-Za-z0-9_-]", "_", platform.node()) or "host"
# .<target>.<pid>@<host>.<token>.tmp: who is writing it, so that another process can tell
# whether its writer still runs (and no file but cltr's own is ever taken for one)
_TEMPORARY = re.compile(r"^\..+\.(?P<pid>\d+)@(?P<host>[A-Za-z0-9_-]+)\.[0-9a-f]{8}\.tmp$")
STALE_SECONDS = 24 * 3600
"""A temporary file of another host untouched this long is a dead writer's: writing one
file takes seconds, not a day."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def remove_stale_temporaries(folder: Path | str) -> list[Path]:
    """Delete the temporary files that cltr's writers which died (killed, out of memory,
    power loss) left in ``folder``: those of a process of this host that no longer runs, and
    those of another host untouched for ``STALE_SECONDS``. Returns the files removed."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return removed
    now = time.time()
    for entry in entries:
        match = _TEMPORARY.match(entry.name)
        if match is None or not entry.is_file():
            continue
        try:
            if match["host"] == _HOST:
                stale = not _alive(int(match["pid"]))
            else:
                stale = now - entry.stat().st_mtime > STALE_SECONDS
            if stale:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:  # gone already (another cleaner), or not ours to remove: left to its owner
            continue
    return removed


def _create_temporary(path: Path) -> tuple[int, Path]:
    """A new file beside ``path``, created with mode 0o666 less the umask (as ``open`` would;
    ``tempfile.mkstemp`` would make it private)."""
    while True:
        temporary = path.parent / f".{path.name}.{os.getpid()}@{_HOST}.{secrets.token_hex(4)}.tmp"
        try:
            return os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), temporary
        except FileExistsError:
            continue
        except OSError as error:  # said of the file meant, not of its temporary name
            raise OSError(error.errno, error.strerror, str(path)) from error


@contextmanager
def atomic_write(
    path: Path | str, mode: str = "wb", *, before_rename: Callable[[Path], None] | None = None
) -> Iterator[Any]:
    """Open a temporary file beside ``path``; rename it onto ``path`` only on success.

    ``before_rename(temporary)`` runs on the complete temporary file (to hash it, say).
    An OSError names ``path`` (not the temporary) when the system did not name a file, so
    that a full disk or a file-size limit says where it struck. Stale temporary files of
    dead writers in the directory are removed first.
    """
    path = Path(path)
    temporary = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(path.parent)
        handle, temporary = _create_temporary(path)
        with os.fdopen(handle, mode) as stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        if before_rename is not None:
            before_rename(temporary)
        os.replace(temporary, path)
    except BaseException as error:
        if temporary is not None and os.path.exists(temporary):
            os.unlink(temporary)
        if (
            isinstance(error, OSError)
            and error.errno is not None
            and error.filename in (None, str(temporary), temporary)
        ):
            raise OSError(error.errno, error.strerror, str(path)) from error
        raise
