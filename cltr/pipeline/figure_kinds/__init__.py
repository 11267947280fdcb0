"""Figure kinds: what the tasks of a spec compute and how its rows are reported, one file
each, found by a registry.

A spec's ``kind`` names one. A module in this package defines ``FIGURE_KIND =
FigureKind(...)``: its name, a one-line summary, the spec keys it takes besides the ones
every spec takes (``COMMON_KEYS``), the columns its rows add, and its hooks:

- planning (``cltr.pipeline.experiments``): ``validate(raw, where)`` checks a spec of the
  kind further (raising a ValueError that starts with ``where``); ``clicks(spec)`` gives
  entries every task's click settings get (they enter the task's key);
- running: ``steps(task)``, the steps that progress counts for a task (default: the
  production ranker, the click log, then one per method and skyline); ``task_rows(context)``,
  the rows of one task, given a ``cltr.pipeline.experiments.TaskContext`` (the workspace,
  the dataset, the task, its production ranker and click log, already computed, and
  ``step()`` to call as each further step is done); ``experiments.method_rows`` trains and
  evaluates the task's methods and references, for the kinds that compare methods;
- reporting (``cltr.pipeline.report``): ``table_rows(frame, spec)``, the summary table;
  ``plot(frame, spec, plt, records)``, the figure and the data it drew; optionally
  ``tables(frame, spec)``, further tables as ``(heading, rows)``; ``notes(frame, spec)``,
  further lines of the header note; ``selection_detail(frame, spec)``, what the note's
  selection line adds under pooled selection.

``cltr figures``, the spec's validation (its ``kind`` and the keys each kind takes) and the
docs' reference page are derived from ``FIGURE_KIND``: adding a kind is adding a file here.
A kind's module is imported when a spec is first checked, never by ``cltr --help``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cltr.registry import lookup, registered

__all__ = ["FigureKind", "COMMON_KEYS", "kinds", "get", "taking"]

# what every spec may hold, whatever its kind (see cltr.pipeline.experiments)
COMMON_KEYS = (
    "name",
    "kind",
    "artifact",
    "description",
    "dataset",
    "reps",
    "seed",
    "clicks",
    "synthetic",
    "datasets",
    "quick",
    "stated",
    "in_all",
)


@dataclass(frozen=True)
class FigureKind:
    """A figure kind as the rest of cltr sees it (see the module docstring for the hooks).

    Attributes
    ----------
    name : str
        A spec's ``kind``.
    summary : str
        One line for the reference page.
    task_rows : callable
        ``(context) -> rows``: one task's rows (a list of dicts, JSON-able).
    table_rows : callable
        ``(frame, spec) -> rows``: the summary table, as strings ready to print.
    plot : callable
        ``(frame, spec, plt, records) -> (figure, data)``: ``data`` is ``{line: {"x",
        "mean", "std", ...}}``, what was drawn.
    keys : tuple of str
        The spec keys it takes besides ``COMMON_KEYS``.
    columns : tuple of str
        The columns its rows add, in the CSV's order, after ``method`` (others follow, sorted).
    validate, clicks, steps, tables, notes, selection_detail : callable, optional
        The further hooks of the module docstring.
    description : str
        The long text of the reference page (defaults to the summary).
    """

    name: str
    summary: str
    task_rows: Callable[..., list[dict]]
    table_rows: Callable[..., list[dict]]
    plot: Callable[..., tuple[Any, dict]]
    keys: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()
    validate: Callable[[dict, str], None] | None = None
    clicks: Callable[..., dict] | None = None
    steps: Callable[..., int] | None = None
    tables: Callable[..., list[tuple[str, list[dict]]]] | None = None
    notes: Callable[..., list[str]] | None = None
    selection_detail: Callable[..., str] | None = None
    description: str = ""


_REGISTRY: dict[str, FigureKind] | None = None


def kinds() -> dict[str, FigureKind]:
    """Every figure kind, by name, in the order of the modules' ``ORDER``, then name. The
    same dict on every call, so that a test may add to it."""
    return registered(__name__, "FIGURE_KIND", FigureKind)


def get(name: str) -> FigureKind:
    return lookup(kinds(), name, "figure kind")


def taking(key: str) -> list[str]:
    """The kinds whose specs take ``key`` (every kind for a common key)."""
    return [name for name, kind in kinds().items() if key in COMMON_KEYS or key in kind.keys]
