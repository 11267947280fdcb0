"""The command line's session (the pipeline's, printing what it says and showing progress) and
how errors become one-line messages."""

from __future__ import annotations

import errno
from collections.abc import Callable
from pathlib import Path

import click

from cltr.cli.output import Progress, reading_progress
from cltr.pipeline.session import RequestError, SessionProgress
from cltr.pipeline.session import Session as PipelineSession
from cltr.pipeline.workspace import DamagedArtifact


class _Bars(SessionProgress):
    """Progress of a session's long steps on stderr (``Progress``)."""

    def clicks(self) -> Callable[[str, int, int], None]:
        shown: dict[str, Progress] = {}

        def progress(split: str, done: int, total: int) -> None:
            bar = shown.get(split) or shown.setdefault(split, Progress(f"clicks on {split}", total, "pass"))
            bar.update(done)
            if done == total:
                bar.close()

        return progress

    def reading(self) -> Callable[[str, int, int], None]:
        return reading_progress()


class Session(PipelineSession):
    """The pipeline's session (``cltr.pipeline.session``: which artifact each stage uses),
    saying what it does on stdout, showing progress on stderr, at the verbosity of -q / -v."""

    def __init__(self, workdir: Path, verbosity: int = 0):
        super().__init__(workdir, say=click.echo, progress=_Bars())
        self.verbosity = verbosity


_OS_ADVICE = {
    errno.EROFS: "the file system is read-only; give a --workdir (or --out) on a writable one",
    errno.EACCES: "permission denied; give a --workdir (or --out) you can write to, or change its permissions",
    errno.EPERM: "operation not permitted; give a --workdir (or --out) you can write to, or change its permissions",
    errno.ENOSPC: "no space left on the device; free some, or give a --workdir (or --out) on another disk",
    errno.EDQUOT: "disk quota exceeded; free some space, or give a --workdir (or --out) on another disk",
    errno.EFBIG: "file too large for the file-size limit in force (ulimit -f); raise the limit",
    errno.ENOTDIR: "a part of this path is a file, not a directory; give another path",
    errno.EISDIR: "this is a directory, not a file; give another path",
    errno.ENOENT: "no such file or directory",
}


# The command that makes (and remakes) the artifacts of each stage directory.
_STAGE_COMMANDS = {
    "production": "`cltr produce`",
    "clicks": "`cltr simulate` (or `cltr clicks import`)",
    "models": "`cltr train METHOD`",
    "evaluations": "`cltr evaluate`",
    "propensities": "`cltr propensities estimate`",
    "imports": "`cltr clicks import`",
    "tasks": "`cltr figures NAME`",
}


def describe_os_error(error: OSError) -> str:
    """One line: the file and what to do."""
    if error.errno is None:
        return str(error)  # a message of ours, which names its file
    where = error.filename if error.filename is not None else "a file"
    return f"{where}: {_OS_ADVICE.get(error.errno, error.strerror)}"


def stdout_closed() -> bool:
    """Whether standard output is a pipe or socket that its reader has closed (``| head``
    has read its lines): poll reports an error condition on the writing end."""
    import select

    if not hasattr(select, "poll"):  # Windows: no pipe closes that way to tell apart
        return True
    poller = select.poll()
    poller.register(1, select.POLLOUT)
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


def describe_damage(error: DamagedArtifact) -> str:
    """One line: the damaged file, what is wrong, and how to make it again."""
    path = error.path
    if path.name == "current.json":
        fix = "delete it: it only records which artifact each stage used last (the artifacts stay)"
    elif path.parent.name == "datasets":
        fix = f"prepare the dataset again (`cltr prepare ... --name {path.stem}`)"
    else:
        fix = (
            f"run {_STAGE_COMMANDS.get(path.parent.name, 'the command that made it')} again with the same "
            "options: it computes it anew"
        )
    return f"{error}; {fix}"


def errors_as_usage(function):
    """Turn the library's ValueErrors (bad input), damaged artifacts and OSErrors (full disk,
    read-only workspace, ...) into clean one-line CLI errors."""
    import functools

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except DamagedArtifact as error:
            raise click.ClickException(describe_damage(error)) from error
        except RequestError as error:
            raise click.UsageError(str(error)) from error
        except ValueError as error:
            raise click.ClickException(str(error)) from error
        except BrokenPipeError as error:
            if not stdout_closed():  # another pipe (a worker's, say) broke: an error
                raise click.ClickException(describe_os_error(error)) from error
            raise  # stdout closed by its reader (`| head`): click and cltr.__main__.run end quietly, status 141
        except OSError as error:
            raise click.ClickException(describe_os_error(error)) from error

    return wrapper
