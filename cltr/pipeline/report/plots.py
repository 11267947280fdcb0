"""The report's figures: a spec's plot (its figure kind's) drawn with matplotlib, and its title."""

from __future__ import annotations

import textwrap

import pandas as pd

from cltr.pipeline import figure_kinds
from cltr.pipeline.experiments import Spec
from cltr.pipeline.report.notes import MIN_RUNS, _runs, click_settings, dataset_label

__all__ = ["plot", "figure_title"]

# -- figures -------------------------------------------------------------------------------


_TITLE_WIDTH = 110  # characters of a title line at the figures' width and font size


def figure_title(
    frame: pd.DataFrame, spec: Spec, records: dict | None, what: str, bars: str, *, over_runs: bool = True
) -> str:
    """Three lines: what on which data; the fixed click settings and runs; what the bars are
    (``over_runs``: intervals over runs, which one run cannot have)."""
    reps = frame["repetition"].nunique() if "repetition" in frame.columns else spec.reps
    runs = _runs(frame)
    count = f"{reps} repetition(s)" + (f" x {runs // max(reps, 1)} datasets = {runs} runs" if runs != reps else "")
    if runs < MIN_RUNS and over_runs:
        bars += f" ({runs} run{'s' if runs != 1 else ''}: too few for an interval, none drawn)"
    quick = "QUICK RUN (--quick, reduced): " if spec.quick else ""
    lines = [
        f"{quick}{spec.artifact or spec.name}: {what} on {dataset_label(frame, spec, records)}",
        f"{click_settings(spec, records)}; {count}",
        bars,
    ]
    # long settings (a click model with many parameters) wrap instead of running off the figure
    return "\n".join(textwrap.fill(line, _TITLE_WIDTH, break_on_hyphens=False) for line in lines)


def plot(frame: pd.DataFrame, spec: Spec, *, records: dict | None = None):
    """The experiment's figure and the data drawn: {line: {"x", "mean", "std", "low", "high"}}."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return figure_kinds.get(spec.kind).plot(frame, spec, plt, records)
