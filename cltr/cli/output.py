"""What the command line prints: aligned tables, warnings, progress on stderr, the library's log."""

from __future__ import annotations

import logging
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

import click

from cltr.pipeline.session import Session as PipelineSession


def echo_table(rows: list[dict], columns: list[str] | None = None) -> None:
    """Print rows as an aligned plain-text table."""
    if not rows:
        return
    columns = columns or list(rows[0])

    def cell(value):
        if isinstance(value, float):
            return f"{value:.4g}" if abs(value) < 1e4 else f"{value:.3e}"
        return str(value)

    text = [[cell(row.get(c, "")) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in text)) for i, c in enumerate(columns)]
    click.echo("  ".join(c.rjust(w) for c, w in zip(columns, widths, strict=True)))
    for r in text:
        click.echo("  ".join(v.rjust(w) for v, w in zip(r, widths, strict=True)))
    warn_if_undefined(rows, columns)


def warn_if_undefined(rows: list[dict], columns: list[str]) -> None:
    """A NaN printed is said to be one: which columns, and what it means."""
    undefined = [c for c in columns if any(isinstance(row.get(c), float) and math.isnan(row[c]) for row in rows)]
    if undefined:
        warn(
            f"nan in {', '.join(undefined)}: undefined, an average over nothing (no relevant document, or no "
            "click, to average over)"
        )


def warn(message: str) -> None:
    """A one-line warning on stderr (shown under -q too)."""
    click.echo(f"warning: {message}", err=True)


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


class Progress:
    """The progress of one long step, on stderr.

    On a terminal, a tqdm bar (its rate and time left). Elsewhere (a log file, a batch or
    cluster job), a line whenever a task finishes (``update(..., task_done=True)``) or
    ``INTERVAL`` seconds have passed, with done/total and an estimate of the time left, so
    that a log never looks hung; steps shorter than ``INTERVAL`` print nothing. Nothing
    at all under ``-q``. ``update`` takes the count done so far, not an increment.
    """

    INTERVAL = 10.0

    def __init__(self, description: str, total: float | None = None, unit: str = "step"):
        self.description, self.total, self.unit = description, total, unit
        self.done: float = 0
        self.postfix: dict[str, object] = {}
        self.start = self.last_line = time.monotonic()
        self.printed: float | None = None  # the count of the last line printed
        self.bar = None
        shown, terminal = _verbosity() >= 0, sys.stderr.isatty()
        self.lines = shown and not terminal
        if shown and terminal:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=description, unit=unit, leave=False, file=sys.stderr)

    def update(self, done: float, total: float | None = None, *, postfix: dict | None = None, task_done: bool = False):
        if total is not None:
            self.total = total
            if self.bar is not None:
                self.bar.total = total
        self.done, self.postfix = done, postfix or self.postfix
        if self.bar is not None:
            if postfix:
                self.bar.set_postfix(postfix, refresh=False)
            self.bar.update(done - self.bar.n)
        now = time.monotonic()
        if self.lines and (task_done or now - self.last_line >= self.INTERVAL):
            self._line(now)

    def _line(self, now: float) -> None:
        elapsed = now - self.start
        text = f"{self.description}: {self.unit} {self.done:g}"
        if self.total:
            text += f"/{self.total:g} ({100 * self.done / self.total:.0f}%)"
        text += f", {_duration(elapsed)}"
        if self.total and 0 < self.done < self.total:
            text += f", about {_duration(elapsed * (self.total - self.done) / self.done)} left"
        text += "".join(f"; {key} {value}" for key, value in self.postfix.items())
        click.echo(text, err=True)
        self.last_line, self.printed = now, self.done

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        if self.lines and self.printed is not None and self.printed != self.done:
            self._line(time.monotonic())  # a log that showed the step running shows it ending

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def reading_progress() -> Callable[[str, int, int], None]:
    """The ``progress`` of the loaders: a Progress per file read, in MB of the file."""
    shown: dict[str, Progress] = {}

    def show(path: str, done: int, total: int) -> None:
        bar = shown.get(path) or shown.setdefault(
            path, Progress(f"reading {Path(path).name}", round(total / 1e6, 1), "MB")
        )
        bar.update(round(done / 1e6, 1), task_done=done == total)
        if done == total:
            bar.close()

    return show


def _verbosity() -> int:
    """-1 under -q, 1 under -v, else 0 (0 too outside a command)."""
    context = click.get_current_context(silent=True)
    session = context.find_object(PipelineSession) if context is not None else None
    return getattr(session, "verbosity", 0)


class _EchoHandler(logging.Handler):
    """The library's log records on stderr: warnings as "warning: ...", the rest (-v) as they are."""

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        click.echo(f"warning: {message}" if record.levelno >= logging.WARNING else message, err=True)


def _show_library_log(verbosity: int) -> None:
    logger = logging.getLogger("cltr")
    logger.handlers = [_EchoHandler()]
    logger.setLevel(logging.INFO if verbosity > 0 else logging.WARNING)
