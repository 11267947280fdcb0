"""The ``cltr`` command's entry point (``cltr.__main__.run``): a standard output closed by
its reader (``cltr ... | head``) ends the command quietly with status 141."""

from __future__ import annotations

import errno
import subprocess
import sys

import pytest

from cltr.__main__ import CLOSED_OUTPUT_STATUS
from cltr.pipeline.workspace import Workspace


def _with_closed_stdout(*arguments: str) -> tuple[int, str]:
    """Exit status and stderr of ``python -m cltr ARGUMENTS`` writing into a pipe whose
    reader has gone before cltr writes (``| head`` after its lines, made certain: a reader
    that has read its line may otherwise still be there when a short output is written)."""
    child = subprocess.Popen(
        [sys.executable, "-m", "cltr", *arguments], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    child.stdout.close()
    error = child.stderr.read()
    return child.wait(timeout=120), error


@pytest.mark.parametrize(
    "arguments",
    [("--help",), ("prepare", "synthetic", "--queries", "40")],
    ids=["click's own output", "a command's output"],
)
def test_a_closed_stdout_ends_quietly_with_status_141(tmp_path, arguments):
    status, error = _with_closed_stdout("--workdir", str(tmp_path), *arguments)
    assert (status, error) == (CLOSED_OUTPUT_STATUS, "")


def test_a_broken_pipe_that_is_not_stdout_is_an_error(tmp_path, invoke, monkeypatch):
    def broken(*args, **kwargs):
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    monkeypatch.setattr(Workspace, "save_dataset", broken)
    result = invoke("prepare", "synthetic", "--queries", "40", workdir=tmp_path, expect=1)
    assert result.output.strip().splitlines()[-1] == "Error: a file: Broken pipe"


def test_ctrl_c_while_the_command_line_is_still_importing_is_one_line_and_status_130():
    # Ctrl-C during the imports (the first second or two) arrives before click handles it:
    # an import of cltr.cli that raises KeyboardInterrupt stands for it
    code = (
        "import builtins, sys\n"
        "real = builtins.__import__\n"
        "def interrupted(name, *args, **kwargs):\n"
        "    if name == 'cltr.cli':\n"
        "        raise KeyboardInterrupt\n"
        "    return real(name, *args, **kwargs)\n"
        "builtins.__import__ = interrupted\n"
        "from cltr.__main__ import run\n"
        "sys.argv = ['cltr', '--help']\n"
        "run()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 130, done
    assert "Traceback" not in done.stderr and done.stderr.strip().count("\n") == 0
    assert "interrupted" in done.stderr and done.stdout == ""
