"""``kind = "table"``: one row per method over runs (Table 2), with paired tests between the
methods the paper orders and the paper's values beside ours."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from cltr.pipeline.experiments import METHOD_COLUMNS, Spec, method_rows
from cltr.pipeline.figure_kinds import FigureKind
from cltr.pipeline.report import (
    ALPHA,
    LEVEL,
    METRIC_LABELS,
    MIN_RUNS,
    datasets_of,
    figure_title,
    mean_std,
    method_label,
    method_order,
    p_text,
    paper_values,
    runs_note,
    significance,
    summarise,
)
from cltr.pipeline.report import (
    claims as paper_claims,
)

ORDER = 10


def table_rows(frame: pd.DataFrame, spec: Spec) -> list[dict]:
    summary = summarise(frame, spec).set_index("method")
    paper = paper_values(spec)
    names = datasets_of(frame, spec)
    claimed = paper_claims(frame, spec)
    label = METRIC_LABELS[spec.metric]
    rows = []
    for method in method_order(spec, frame):
        row = summary.loc[method]
        entry: dict[str, Any]
        entry = {
            "method": method_label(method),
            label: mean_std(row[spec.metric + "_mean"], row[spec.metric + "_std"], row["n"]),
            f"{LEVEL:.0%} CI": f"[{row[spec.metric + '_low']:.4f}, {row[spec.metric + '_high']:.4f}]"
            if row["n"] >= MIN_RUNS
            else f"n/a ({int(row['n'])} runs)",
        }
        if paper:
            value = paper.get(method)
            entry["paper"] = f"{value[0]:.4f} ± {value[1]:.0e}" if value else ""
            entry["gap (paper std)"] = f"{(row[spec.metric + '_mean'] - value[0]) / value[1]:+.1f}" if value else ""
        if len(names) > 1:
            per_dataset = frame[frame["method"] == method].groupby("dataset", sort=False)[spec.metric]
            for name, values in per_dataset:
                entry[f"{label} {name}"] = mean_std(values.mean(), values.std(ddof=1), len(values))
        for metric in METRIC_LABELS:
            if metric != spec.metric and metric + "_mean" in row:
                entry[METRIC_LABELS[metric]] = f"{row[metric + '_mean']:.4f}"
        entry["train clicks"] = f"{row['train_clicks_mean']:.0f}"
        entry["runs"] = int(row["n"])
        if claimed:
            entry["paper's claim here"] = claimed.get(method, "")
        rows.append(entry)
    return rows


def plot(frame: pd.DataFrame, spec: Spec, plt, records):
    """Points with bootstrap intervals, every run as a grey dot, and the paper's mean ± std:
    points rather than bars, so that an axis not starting at 0 truncates nothing."""
    figure, axes = plt.subplots(figsize=(7.6, 5.0))
    metric, label = spec.metric, METRIC_LABELS[spec.metric]
    summary = summarise(frame, spec).set_index("method")
    order = method_order(spec, frame)
    paper = paper_values(spec)
    data: dict[str, dict[str, list[float]]] = {}
    for i, method in enumerate(order):
        runs = frame.loc[frame["method"] == method, metric].to_numpy(dtype=float)
        spread = np.linspace(-0.08, 0.08, len(runs)) if len(runs) > 1 else np.zeros(len(runs))
        axes.scatter(i - 0.12 + spread, runs, s=7, color="0.65", zorder=1, label="one run" if i == 0 else None)
        row = summary.loc[method]
        mean, low, high = row[metric + "_mean"], row[metric + "_low"], row[metric + "_high"]
        reference = method in ("production", "skyline")
        legend = "references (production, skyline)" if reference else f"ours: mean, {LEVEL:.0%} bootstrap CI"
        bars = [[mean - low], [high - mean]] if np.isfinite(low) and np.isfinite(high) else None
        axes.errorbar(
            [i - 0.12],
            [mean],
            yerr=bars,
            fmt="o",
            capsize=4,
            zorder=3,
            color="0.35" if reference else "tab:blue",
            label=legend if legend not in axes.get_legend_handles_labels()[1] else None,
        )
        if method in paper:
            value, std = paper[method]
            axes.errorbar(
                [i + 0.14],
                [value],
                yerr=[std],
                fmt="D",
                color="tab:red",
                capsize=4,
                zorder=3,
                label="paper: mean ± std" if not any(k.startswith("paper ") for k in data) else None,
            )
            data[f"paper {method}"] = {
                "x": [i],
                "mean": [value],
                "std": [std],
                "low": [value - std],
                "high": [value + std],
            }
        data[method] = {
            "x": [i],
            "mean": [float(mean)],
            "std": [float(np.nan_to_num(row[metric + "_std"]))],
            "low": [float(low)],
            "high": [float(high)],
        }
    axes.set_xticks(range(len(order)), [method_label(m) for m in order], rotation=25, ha="right", fontsize=8)
    axes.set_ylabel(f"test {label} (points, not bars: the axis does not start at 0)", fontsize=8)
    axes.set_title(
        figure_title(
            frame,
            spec,
            records,
            f"test {label}",
            f"points: mean, bars: {LEVEL:.0%} bootstrap CI over runs; grey dots: single runs"
            + ("; red: the paper's mean ± std" if paper else ""),
        ),
        fontsize=8,
    )
    axes.grid(alpha=0.3, axis="y")
    axes.legend(fontsize=7)
    figure.tight_layout()
    return figure, data


def tests(frame: pd.DataFrame, spec: Spec) -> list[tuple[str, list[dict]]]:
    """The paired tests between the methods (``report.significance``), as one further table."""
    if len(spec.methods) + len(spec.references) <= 1:
        return []
    found = significance(frame, spec)
    if found.empty:
        return []
    return [(_tests_heading(found, spec), _tests_rows(found))]


def pooled_choices(frame: pd.DataFrame, spec: Spec) -> str:
    """The C each method kept under pooled selection, per dataset where there are several."""
    if "pooled_validation_snips_avg_dcg" not in frame.columns:
        return ""
    pooled = frame[frame["pooled_validation_snips_avg_dcg"].notna()]
    chosen = pooled.groupby(["method", "dataset"], sort=False)["chosen"].first()
    listed = [
        f"{method_label(m)} {json.loads(c)['C']:g}" + (f" ({d})" if pooled["dataset"].nunique() > 1 else "")
        for (m, d), c in chosen.items()
    ]
    return f" (C: {', '.join(listed)})"


def _tests_rows(tests: pd.DataFrame) -> list[dict]:
    shown = tests.drop(columns="_pair")
    return [
        {
            k: (
                f"{v:+.4f}"
                if k == "mean difference"
                else p_text(v, int(row["runs"]))
                if k.startswith(("p ", "Holm"))
                else f"{v:.2g}"
                if isinstance(v, float)
                else v
            )
            for k, v in row.items()
        }
        for row in shown.to_dict("records")
    ]


def _tests_heading(tests: pd.DataFrame, spec: Spec) -> str:
    if "claim" in tests.columns:
        order = " < ".join(method_label(m) for m in spec.claimed_order)
        what = f"every pair the paper orders ({order}; each claimed better than every one before it)"
    else:
        what = "neighbouring rows"
    return (
        f"Paired tests between {what}, over the same runs (a run is a (dataset, repetition): the same "
        f"seeds, production ranker and clicks for every method); two-sided, Holm-corrected over the "
        f"{len(tests)} comparisons of the table. Verdict: the sign of the mean difference, significant where "
        f"the Holm-adjusted paired-t p is below {ALPHA}; the Wilcoxon signed-rank p checks that no single run "
        f"carries it (with 6 runs its smallest possible two-sided p is 0.031, before correction)."
    )


FIGURE_KIND = FigureKind(
    name="table",
    summary="One row per method: the metric's mean over runs with its interval, paired tests between methods.",
    task_rows=method_rows,
    table_rows=table_rows,
    plot=plot,
    keys=(
        "methods",
        "references",
        "options",
        "metric",
        "select",
        "tune",
        "tune_at",
        "paper",
        "claimed_order",
        "compare_to",
    ),
    columns=METHOD_COLUMNS,
    tables=tests,
    notes=lambda frame, spec: [runs_note(spec)],
    selection_detail=pooled_choices,
)
