"""``kind = "curve"``: the metric of every method against a varied setting (the x axis), one
line per method and series (Figures 1-5 and 7)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from cltr.pipeline.experiments import METHOD_COLUMNS, Spec, method_rows
from cltr.pipeline.figure_kinds import FigureKind
from cltr.pipeline.report import (
    LEVEL,
    METRIC_LABELS,
    figure_title,
    higher_is_better,
    mean_std,
    method_label,
    point_columns,
    runs_note,
    summarise,
)

ORDER = 20

_X_LABELS = {
    "passes": "passes over the training queries",
    "train_clicks": "training clicks",
    "eta": "eta",
    "eps_neg": "eps- (click probability of an observed irrelevant document)",
    "eta_model": "eta of the propensity model (true eta = 1)",
    "clip": "clipping threshold TAU (propensities below TAU raised to TAU)",
    "continuation": "continuation probability c (after a click at rank k the user goes on with c / k)",
    "top_k": "K (results displayed)",
}


def table_rows(frame: pd.DataFrame, spec: Spec) -> list[dict]:
    summary = summarise(frame, spec)
    points = point_columns(spec)
    rows = []
    for key, group in summary.groupby(points, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        entry = {column[len("point_") :]: value for column, value in zip(points, key, strict=True)}
        entry["train clicks"] = f"{group['train_clicks_mean'].iloc[0]:.0f}"
        entry["irrelevant click share"] = f"{group['irrelevant_click_share_mean'].iloc[0]:.3f}"
        for _, row in group.iterrows():
            entry[method_label(row["method"])] = mean_std(
                row[spec.metric + "_mean"], row[spec.metric + "_std"], row["n"]
            )
        rows.append(entry)
    return rows


def plot(frame: pd.DataFrame, spec: Spec, plt, records):
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    data = {}
    metric = spec.metric
    summary = summarise(frame, spec)
    x_column = spec.plot_x or spec.x
    assert x_column is not None  # a curve spec names its x (validate)
    x_source = f"{x_column}_mean" if x_column == "train_clicks" else f"point_{x_column}"
    series_columns = [f"point_{k}" for k in spec.series]
    groups = list(summary.groupby(series_columns, sort=False)) if series_columns else [((), summary)]
    # many methods times several series cannot be told apart by line style on one axes: one
    # panel per series, sharing the y axis, the methods' colours the same in each
    panels = len(groups) > 1 and len(spec.methods) > 5
    # constrained layout makes room for the legend below the axes, where it hides no line
    figure, grid = plt.subplots(
        1,
        len(groups) if panels else 1,
        figsize=(5.0 * len(groups) if panels else 7.2, 5.6),
        sharey=True,
        layout="constrained",
        squeeze=False,
    )
    axes_of = [grid[0, s if panels else 0] for s in range(len(groups))]
    styles = ["-", "--", ":", "-."]
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    # seven markers against the ten colours: no two of the first 70 series look alike (with
    # five, the 11th series repeated the 1st's colour and marker)
    markers = ["o", "s", "^", "D", "v", "P", "X"]
    for s, (series_key, group) in enumerate(groups):
        series_key = series_key if isinstance(series_key, tuple) else (series_key,)
        suffix = "".join(f", {c[len('point_') :]} = {v}" for c, v in zip(series_columns, series_key, strict=True))
        axes = axes_of[s]
        if panels:
            axes.set_title(suffix[2:], fontsize=9)
        for k, method in enumerate(spec.methods):
            rows = group[group["method"] == method]
            if rows.empty:
                continue
            x = rows[x_source].to_numpy(dtype=float)
            mean = rows[metric + "_mean"].to_numpy(dtype=float)
            std = np.nan_to_num(rows[metric + "_std"].to_numpy(dtype=float))
            low, high = rows[metric + "_low"].to_numpy(dtype=float), rows[metric + "_high"].to_numpy(dtype=float)
            label = method_label(method) + suffix
            color = colors[k % len(colors)]
            at = _positions(x, spec) if x_column == "top_k" else x
            axes.plot(
                at,
                mean,
                marker=markers[k % len(markers)],
                markersize=4,
                linestyle="-" if panels else styles[s % len(styles)],
                color=color,
                label=method_label(method) if panels else label,
            )
            axes.fill_between(at, low, high, color=color, alpha=0.15 if not panels else 0.1, linewidth=0)
            data[label] = {
                "x": x.tolist(),
                "mean": mean.tolist(),
                "std": std.tolist(),
                "low": low.tolist(),
                "high": high.tolist(),
            }
    # the references see no clicks (the production ranker, the skyline on labels): one level each
    for reference, color in (("production", "grey"), ("skyline", "black")):
        rows = frame[frame["method"] == reference]
        if len(rows):
            level = float(rows[metric].mean())
            for p, axes in enumerate(dict.fromkeys(axes_of)):
                axes.axhline(
                    level,
                    color=color,
                    linestyle="-.",
                    linewidth=1,
                    label=f"{method_label(reference)} (mean over runs)" if p == 0 else None,
                )
            data[method_label(reference)] = {"x": [], "mean": [level], "std": [0.0], "low": [], "high": []}
    for axes in dict.fromkeys(axes_of):
        if x_column in ("train_clicks", "passes", "clip"):
            axes.set_xscale("log")
            if x_column != "clip":
                # counts read as 2,000 rather than 2x10^3; ticks at 1, 2, 5 of each decade
                axes.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
                axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))
                axes.xaxis.set_minor_formatter(NullFormatter())
        if x_column == "top_k":
            shown = sorted(spec.values, key=lambda k: (k == 0, k))
            axes.set_xticks(_positions(np.asarray(shown, dtype=float), spec), [str(k) if k else "full" for k in shown])
        axes.set_xlabel(_X_LABELS.get(x_column, x_column))
        axes.grid(alpha=0.3)
    axes_of[0].set_ylabel(f"test {METRIC_LABELS[metric]}" + ("" if higher_is_better(metric) else " (lower is better)"))
    title = figure_title(
        frame,
        spec,
        records,
        f"test {METRIC_LABELS[metric]}",
        f"lines: mean; bands: {LEVEL:.0%} bootstrap CI of the mean over runs",
    )
    if panels:
        figure.suptitle(title, fontsize=8)
    else:
        axes_of[0].set_title(title, fontsize=8)
    handles, labels = axes_of[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncol=4 if panels else 2, fontsize=7)
    return figure, data


def validate(raw: dict, where: str) -> None:
    if raw.get("x") is None:  # the table and the plot are drawn against it
        raise ValueError(
            f"{where}: a curve needs x, the click setting on its x axis, and its values (e.g. x = "
            f'"passes", values = [10, 100]); a comparison at one setting is kind = "table"'
        )


def _positions(top_k: np.ndarray, spec: Spec) -> np.ndarray:
    """Evenly spaced places for the K values of a top-k curve, the full list (0) last."""
    order = sorted(spec.values, key=lambda k: (k == 0, k))
    return np.array([order.index(int(k)) for k in top_k], dtype=float)


FIGURE_KIND = FigureKind(
    name="curve",
    summary="The metric of every method against the x setting, one line per method (and series).",
    task_rows=method_rows,
    table_rows=table_rows,
    plot=plot,
    keys=(
        "methods",
        "references",
        "options",
        "metric",
        "x",
        "values",
        "plot_x",
        "series",
        "select",
        "tune",
        "tune_at",
        "compare_to",
    ),
    columns=METHOD_COLUMNS,
    validate=validate,
    notes=lambda frame, spec: [runs_note(spec)],
)
