"""Tables (CSV, Markdown, LaTeX), statistics and figures (PNG, PDF) of an experiment's rows.

The only package that imports matplotlib (``plots``). Every plotting function returns the figure and
the data it drew (per line: x, mean, std, and the bootstrap interval low/high), so tests can
check a figure against the CSV. Rows come from ``cltr.pipeline.experiments.run_experiment``:
one per (task, method), with the point's settings in ``point_*`` columns and the test
metrics; rows of several datasets (``cltr figures --folds``) are pooled into "runs", one per
(dataset, repetition).

What the numbers are (printed in every output's header note):
- tables: mean ± standard deviation over runs, and a 95% percentile-bootstrap interval of
  the mean (``cltr.core.statistics.bootstrap_interval``, seeded with the spec's seed);
- figures: the mean with that bootstrap interval as a band or error bar;
- Table 2: paired t and Wilcoxon signed-rank tests, Holm-corrected over the table, between
  every pair of methods the paper orders (the spec's ``claimed_order``), and a column that
  says for each of the paper's claims whether it holds here;
- ``check``: every row with the paper's value, the gap in units of the paper's std.

``records`` (the prepared datasets' JSON records, by name) supply the metric convention and
the default number of passes; without them the header says the convention is unknown.

The sections are modules: ``notes`` (labels and header notes), ``statistics`` (summaries,
tests, claims, the paper's stated numbers), ``tables`` and ``plots``; this module writes the
files and re-exports every public name, so ``from cltr.pipeline.report import ...`` holds.
"""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd

from cltr.pipeline import figure_kinds
from cltr.pipeline.experiments import Spec
from cltr.pipeline.report.notes import (
    ALPHA,
    LEVEL,
    METRIC_LABELS,
    MIN_RUNS,
    RESAMPLES,
    click_settings,
    dataset_label,
    datasets_of,
    header_note,
    higher_is_better,
    mean_std,
    method_label,
    method_order,
    output_name,
    paper_values,
    point_columns,
    runs_note,
    training_data,
)
from cltr.pipeline.report.plots import figure_title, plot
from cltr.pipeline.report.statistics import (
    baseline_tests,
    check,
    claims,
    format_stated,
    p_text,
    significance,
    stated_rows,
    summarise,
)
from cltr.pipeline.report.tables import latex_table, markdown_table, table_rows
from cltr.pipeline.workspace import atomic_write

__all__ = [
    "summarise",
    "significance",
    "claims",
    "check",
    "stated_rows",
    "header_note",
    "click_settings",
    "dataset_label",
    "markdown_table",
    "latex_table",
    "table_rows",
    "plot",
    "write_outputs",
    "write_figure",
    "output_paths",
    "check_out_directory",
    "output_name",
    "training_data",
    "METRIC_LABELS",
    "LEVEL",
    "ALPHA",
    "MIN_RUNS",
    "RESAMPLES",
    "method_label",
    "mean_std",
    "method_order",
    "point_columns",
    "higher_is_better",
    "paper_values",
    "p_text",
    "format_stated",
    "figure_title",
    "runs_note",
    "datasets_of",
    "baseline_tests",
]


# -- files ---------------------------------------------------------------------------------


def check_out_directory(out: Path) -> Path:
    """Make ``out`` and check that files can be created in it, so that an experiment fails
    before its hours of computing, not when writing its CSV. An OSError names ``out``."""
    import tempfile

    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out):
            pass
    except OSError as error:
        raise OSError(error.errno, error.strerror, str(out)) from error
    return out


# PDFs carry their creation date unless told not to: without it the same rows give the
# same bytes (PNGs carry none)
_FIXED_METADATA = {"png": None, "pdf": {"CreationDate": None}}


def output_paths(spec: Spec, out: Path) -> dict[str, Path]:
    """The files a spec's report writes in ``out``, by suffix: csv, md, tex, png, pdf."""
    return {suffix: Path(out) / f"{output_name(spec)}.{suffix}" for suffix in ("csv", "md", "tex", "png", "pdf")}


def write_outputs(
    frame: pd.DataFrame, spec: Spec, out: Path, *, records: dict | None = None, figure: bool = True
) -> dict[str, Path]:
    """NAME.csv, NAME.md, NAME.tex, NAME.png and NAME.pdf in ``out``, each written atomically.

    ``records``: the prepared datasets' JSON records by name (the metric convention, the
    default passes and folds in the header note and titles). ``figure=False``: the tables
    only; ``write_figure`` draws the PNG and PDF (``cltr figures all`` draws them in another
    process while the next spec's tables are written).
    """
    paths = output_paths(spec, out)
    with atomic_write(paths["csv"], "w") as stream:
        frame.to_csv(stream, index=False, float_format="%.10g", lineterminator="\n")
    rows = table_rows(frame, spec)
    quick = " (QUICK RUN, --quick)" if spec.quick else ""
    caption = f"{spec.artifact or spec.name}{quick}: {spec.description}".strip().rstrip(":")
    note = header_note(frame, spec, records)
    text = f"# {spec.name}: {spec.artifact}{quick}\n\n{spec.description}\n\n{note}\n"
    stated = stated_rows(frame, spec)
    if stated:
        text += "Numbers the paper states in its text, beside ours:\n\n" + markdown_table(stated) + "\n"
    text += markdown_table(rows)
    tex = latex_table(rows, " ".join([caption, *(line.removeprefix("- ") for line in note.splitlines())]))
    further = figure_kinds.get(spec.kind).tables
    for heading, shown in further(frame, spec) if further is not None else []:
        text += f"\n{heading}\n\n" + markdown_table(shown)
        tex += latex_table(shown, f"{spec.name}: {heading}")
    baselines = baseline_tests(frame, spec)
    if not baselines.empty:
        shown = [
            {
                k: (
                    p_text(v, int(row["runs"]))
                    if k.startswith(("p ", "Holm"))
                    else f"{v:+.4f}"
                    if k == "mean difference"
                    else v
                )
                for k, v in row.items()
            }
            for row in baselines.to_dict("records")
        ]
        heading = (
            f"Every method against the best of {', '.join(method_label(m) for m in spec.compare_to)} at each "
            f"point (paired over runs; Holm over each point's comparisons):"
        )
        text += f"\n{heading}\n\n" + markdown_table(shown)
        tex += latex_table(shown, f"{spec.name}: {heading}")
    if stated:
        tex += latex_table(stated, f"{spec.name}: numbers the paper states in its text, beside ours")
    with atomic_write(paths["md"], "w") as stream:
        stream.write(text)
    with atomic_write(paths["tex"], "w") as stream:
        stream.write(tex)
    if figure:
        write_figure(frame, spec, out, records=records)
    return paths


def write_figure(frame: pd.DataFrame, spec: Spec, out: Path, *, records: dict | None = None) -> None:
    """NAME.png and NAME.pdf in ``out`` (``write_outputs``' figure), each written atomically."""
    paths = output_paths(spec, out)
    drawn, _ = plot(frame, spec, records=records)
    for suffix in ("png", "pdf"):
        buffer = io.BytesIO()
        drawn.savefig(buffer, format=suffix, dpi=150, metadata=_FIXED_METADATA[suffix])
        with atomic_write(paths[suffix]) as stream:
            stream.write(buffer.getvalue())
    import matplotlib.pyplot as plt

    plt.close(drawn)
