"""``kind = "ccp"``: SVM PropDCG's convex-concave procedure (Figure 6): the true objective and
the training SNIPS Avg DCG at every CCP iteration, one line per C."""

from __future__ import annotations

import pandas as pd

from cltr.pipeline.experiments import METHOD_COLUMNS, Spec, TaskContext, method_rows
from cltr.pipeline.figure_kinds import FigureKind
from cltr.pipeline.report import click_settings, dataset_label, format_stated
from cltr.pipeline.workspace import Artifact

ORDER = 30


def task_rows(context: TaskContext) -> list[dict]:
    """Every method's rows, one per (C of its grid, CCP iteration), iteration 0 the start w = 0."""
    return method_rows(context, expand=_iterations)


def _iterations(row: dict, trained: Artifact) -> list[dict]:
    rows: list[dict] = []
    for selection in trained.info["selection"]:
        start = {
            "iteration": 0,
            "objective": selection["initial_objective"],
            "train_snips_avg_dcg": selection["initial_train_snips_avg_dcg"],
            "inner_iterations": 0,
        }
        rows.extend({**row, **_ccp_row(ccp_step, selection)} for ccp_step in [start, *selection["ccp_trace"]])
    return rows


def _ccp_row(step: dict, selection: dict) -> dict:
    return {
        "C": selection["C"],
        "iteration": step["iteration"],
        "objective": step["objective"],
        "train_snips_avg_dcg": step["train_snips_avg_dcg"],
        "inner_iterations": step["inner_iterations"],
    }


def _table_rows(frame: pd.DataFrame) -> list[dict]:
    rows = []
    first = frame[frame["repetition"] == frame["repetition"].min()]
    for C, group in first.groupby("C", sort=True):
        group = group.sort_values("iteration")
        rows.append(
            {
                "C": f"{C:g}",
                "repetition": int(group["repetition"].iloc[0]),
                "CCP iterations": int(group["iteration"].max()),
                "initial objective": f"{group['objective'].iloc[0]:.6g}",
                "final objective": f"{group['objective'].iloc[-1]:.6g}",
                "initial train SNIPS Avg DCG": f"{group['train_snips_avg_dcg'].iloc[0]:.4f}",
                "final train SNIPS Avg DCG": f"{group['train_snips_avg_dcg'].iloc[-1]:.4f}",
            }
        )
    return rows


def plot(frame: pd.DataFrame, spec: Spec, plt, records):
    from matplotlib.ticker import MaxNLocator

    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.8))
    data = {}
    first = frame[frame["repetition"] == frame["repetition"].min()]
    grid = sorted(first["C"].unique())
    markers = ["o", "s", "^", "D", "v", "P", "X", "*"]
    for k, (C, group) in enumerate(first.groupby("C", sort=True)):
        group = group.sort_values("iteration")
        x = group["iteration"].to_numpy(dtype=float)
        objective = group["objective"].to_numpy(dtype=float)
        # objectives of different C differ by orders of magnitude: draw each relative to its end
        relative = objective / abs(objective[-1]) if objective[-1] != 0 else objective
        snips = group["train_snips_avg_dcg"].to_numpy(dtype=float)
        # hollow markers, larger for earlier lines, so that coinciding points of every C stay visible
        style = {
            "marker": markers[k % len(markers)],
            "markersize": 4 + 1.2 * (len(grid) - 1 - k),
            "markerfacecolor": "none",
            "linewidth": 1,
            "label": f"C = {C:g}",
        }
        left.plot(x, relative, **style)
        right.plot(x, snips, **style)
        data[f"objective, C = {C:g}"] = {"x": x.tolist(), "mean": relative.tolist(), "std": [0.0] * len(x)}
        data[f"train SNIPS, C = {C:g}"] = {"x": x.tolist(), "mean": snips.tolist(), "std": [0.0] * len(x)}
    for entry in spec.stated:
        if entry["measure"] == "ccp_iterations":
            low, high = entry["value"] if isinstance(entry["value"], list) else (entry["value"],) * 2
            left.axvspan(
                low,
                high,
                color="0.88",
                zorder=0,
                label=f"paper: converges in {format_stated('ccp_iterations', entry['value'])} iterations",
            )
    left.set_ylabel("true objective / |its final value| (lower is better)")
    right.set_ylabel("training SNIPS Avg DCG")
    # the curves start high on the left and flatten low on the right: the centre right is free
    for axes, where in ((left, "center right"), (right, "lower right")):
        axes.set_xlabel("CCP iteration (0: the starting point w = 0)")
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        axes.grid(alpha=0.3)
        axes.legend(fontsize=7, ncol=2, loc=where)
    clicks = int(first["train_clicks"].iloc[0]) if "train_clicks" in first.columns and len(first) else 0
    reps = frame["repetition"].nunique()
    figure.suptitle(
        f"{spec.artifact or spec.name}: SVM PropDCG's convex-concave procedure, one line per C, on "
        f"{dataset_label(frame, spec, records)}\n{click_settings(spec, records)}; {clicks:,} training "
        f"clicks; repetition {int(first['repetition'].iloc[0])} of {reps} (no error bars: one run)",
        fontsize=9,
    )
    figure.tight_layout()
    return figure, data


FIGURE_KIND = FigureKind(
    name="ccp",
    summary="SVM PropDCG's CCP: the objective and training SNIPS Avg DCG per iteration, one line per C.",
    task_rows=task_rows,
    table_rows=lambda frame, spec: _table_rows(frame),
    plot=plot,
    keys=("methods", "options"),
    columns=(*METHOD_COLUMNS, "C", "iteration", "objective", "train_snips_avg_dcg", "inner_iterations"),
)
