"""The ``cltr`` command (the console script and ``python -m cltr``): the click group
``cltr.cli.main``, with a closed standard output treated as the end of the reader's interest.

``cltr evaluate | head -1`` closes the pipe while cltr still writes. That is not an error
of cltr's: like a C program killed by SIGPIPE, cltr then stops quietly with exit status
141 (128 + SIGPIPE, what a shell reports for ``yes | head -1``), and prints nothing on
stderr. SIGPIPE itself stays ignored (Python's default), so that a broken pipe to a worker
process is still an error raised where it happens, not a silent death.
"""

from __future__ import annotations

import os
import sys

CLOSED_OUTPUT_STATUS = 141
"""The exit status when standard output was closed by its reader: 128 + SIGPIPE (13)."""

INTERRUPTED_STATUS = 130
"""The exit status of a command interrupted by Ctrl-C: 128 + SIGINT (2), as the CLI's own."""


def run() -> None:
    """Run the command line; exit 141, quietly, when standard output is closed under it.

    click handles a write to a closed pipe (EPIPE) itself: it swaps ``sys.stdout`` for a
    wrapper that ignores the final flush and exits with status 1. A swapped ``sys.stdout``
    after an exit with status 1 is therefore that case, and becomes status 141; every other
    exit passes through unchanged.
    """
    try:
        # the first second or two are imports, before click's own handling of Ctrl-C exists
        from cltr.cli import main
    except KeyboardInterrupt:
        print("interrupted while starting: nothing was done", file=sys.stderr)
        raise SystemExit(INTERRUPTED_STATUS) from None
    stdout = sys.stdout
    try:
        main.main(prog_name="cltr")
    except SystemExit as done:
        if done.code == 1 and sys.stdout is not stdout:
            _silence_stdout()
            raise SystemExit(CLOSED_OUTPUT_STATUS) from None
        raise


def _silence_stdout() -> None:
    """Point file descriptor 1 at /dev/null, so that the interpreter's last flush of
    whatever is still buffered for the closed pipe fails nowhere (Python's documented
    recipe for SIGPIPE, "Note on SIGPIPE" in the ``signal`` module)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:  # no /dev/null (a bare container): the flush may then complain; the status stands
        pass


if __name__ == "__main__":
    run()
