"""The report's tables: the rows of a spec's table (its figure kind's), as Markdown and LaTeX."""

from __future__ import annotations

import pandas as pd

from cltr.pipeline import figure_kinds
from cltr.pipeline.experiments import Spec

__all__ = ["markdown_table", "latex_table", "table_rows"]

# -- tables --------------------------------------------------------------------------------


def table_rows(frame: pd.DataFrame, spec: Spec) -> list[dict]:
    """The rows of the experiment's summary table, as strings ready to print (its kind's)."""
    return figure_kinds.get(spec.kind).table_rows(frame, spec)


def markdown_table(rows: list[dict]) -> str:
    if not rows:
        return ""
    columns = list(dict.fromkeys(c for row in rows for c in row))
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(str(row.get(c, "")) for c in columns) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def latex_table(rows: list[dict], caption: str) -> str:
    if not rows:
        return ""
    columns = list(dict.fromkeys(c for row in rows for c in row))

    def escape(text) -> str:
        return str(text).replace("±", r"$\pm$").replace("_", r"\_").replace("%", r"\%").replace("&", r"\&")

    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\begin{tabular}{l" + "c" * (len(columns) - 1) + "}",
        r"\toprule",
        " & ".join(escape(c) for c in columns) + r" \\",
        r"\midrule",
    ]
    lines += [" & ".join(escape(row.get(c, "")) for c in columns) + r" \\" for row in rows]
    lines += [r"\bottomrule", r"\end{tabular}", rf"\caption{{{escape(caption)}}}", r"\end{table}"]
    return "\n".join(lines) + "\n"
