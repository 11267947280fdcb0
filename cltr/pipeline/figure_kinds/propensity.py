"""``kind = "propensity"``: the observation propensity per rank estimated from the click log
by each of the spec's ``estimators``, with its bootstrap band and the truth (1/r)^eta."""

from __future__ import annotations

import numpy as np
import pandas as pd

from cltr import estimators as estimator_registry
from cltr.pipeline.experiments import Spec, TaskContext
from cltr.pipeline.figure_kinds import FigureKind
from cltr.pipeline.report import figure_title, mean_std, point_columns
from cltr.pipeline.stages import propensity_stage

ORDER = 40


def validate(raw: dict, where: str) -> None:
    estimators = raw.get("estimators", [])
    known = tuple(estimator_registry.estimators())
    if not estimators or set(estimators) - set(known):
        raise ValueError(f'{where}: kind = "propensity" needs estimators among {known}, found {estimators}')


def task_rows(context: TaskContext) -> list[dict]:
    """One row per (estimator, rank): the estimate, its band and the truth (1/r)^eta."""
    task = context.task
    rows = _propensity_rows(context.workspace, task.dataset, context.dataset, context.clicks, task.clicks, task.seed)
    context.step()
    return rows


def _propensity_rows(workspace, name, dataset, clicks, clicks_config, seed) -> list[dict]:
    """One row per (estimator, rank): the estimate, its band and the truth (1/r)^eta."""
    rows = []
    eta = clicks_config.get("eta_model") if clicks_config.get("eta_model") is not None else clicks_config.get("eta")
    for estimator in clicks_config["estimators"]:
        estimate, _ = propensity_stage(workspace, name, dataset, clicks, method=estimator, seed=seed)
        for row in estimate.info["rows"]:
            truth = float((1.0 / row["rank"]) ** eta) if eta is not None else float("nan")
            rows.append(
                {
                    "method": estimator,
                    "rank": int(row["rank"]),
                    "propensity": float(row["propensity"]),
                    "low": float(row["low"]),
                    "high": float(row["high"]),
                    "true_propensity": truth,
                }
            )
    return rows


def table_rows(frame: pd.DataFrame, spec: Spec) -> list[dict]:
    keys = point_columns(spec) + ["method", "rank"]
    grouped = frame.groupby(keys, sort=False)
    rows = []
    for key, group in grouped:
        key = key if isinstance(key, tuple) else (key,)
        row = {c[len("point_") :] if c.startswith("point_") else c: v for c, v in zip(keys, key, strict=True)}
        n = len(group)
        row.update(
            {
                "true": f"{group['true_propensity'].mean():.4f}",
                "estimate": mean_std(group["propensity"].mean(), group["propensity"].std(ddof=1), n),
                "band": f"[{group['low'].mean():.4f}, {group['high'].mean():.4f}]",
            }
        )
        rows.append(row)
    return rows


def plot(frame: pd.DataFrame, spec: Spec, plt, records):
    figure, axes = plt.subplots(figsize=(7.2, 5.0))
    data = {}
    points = point_columns(spec)
    groups = frame.groupby(points, sort=False) if points else [((), frame)]
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    styles = {"harvest": "-", "em": "--"}
    for i, (point, group) in enumerate(groups):
        point = point if isinstance(point, tuple) else (point,)
        suffix = ", ".join(f"{c[len('point_') :]} = {v}" for c, v in zip(points, point, strict=True))
        color = colors[i % len(colors)]
        truth = group.groupby("rank", sort=True)["true_propensity"].mean()
        axes.plot(truth.index, truth.values, color=color, linestyle=":", linewidth=2, label=f"true, {suffix}")
        data[f"true, {suffix}"] = {"x": truth.index.tolist(), "mean": truth.values.tolist(), "std": [0.0] * len(truth)}
        for estimator, rows in group.groupby("method", sort=False):
            summary = rows.groupby("rank", sort=True).agg(
                mean=("propensity", "mean"), low=("low", "mean"), high=("high", "mean"), std=("propensity", "std")
            )
            label = f"{estimator}, {suffix}"
            axes.plot(
                summary.index,
                summary["mean"],
                color=color,
                linestyle=styles.get(estimator, "-"),
                marker="o",
                markersize=3,
                label=label,
            )
            axes.fill_between(summary.index, summary["low"], summary["high"], color=color, alpha=0.12)
            data[label] = {
                "x": summary.index.tolist(),
                "mean": summary["mean"].tolist(),
                "std": np.nan_to_num(summary["std"].to_numpy()).tolist(),
            }
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:.0f}"))
    axes.xaxis.set_minor_formatter(NullFormatter())
    # estimates at deep ranks can collapse towards 0 where clicks are few: keep the truth in view
    smallest = float(frame["true_propensity"].min())
    if np.isfinite(smallest) and smallest > 0:
        axes.set_ylim(bottom=smallest / 10, top=1.5)
    axes.set_xlabel("rank")
    axes.set_ylabel("observation propensity relative to rank 1")
    axes.set_title(
        figure_title(
            frame,
            spec,
            records,
            "observation propensity per rank",
            "solid: harvest, dashed: EM (means over runs), shaded: their bootstrap band over "
            "queries; dotted: true (1/r)^eta",
            over_runs=False,
        ),
        fontsize=8,
    )
    axes.grid(alpha=0.3, which="both")
    axes.legend(fontsize=6, ncol=2)
    figure.tight_layout()
    return figure, data


FIGURE_KIND = FigureKind(
    name="propensity",
    summary="The propensity per rank estimated from the log by each estimator, its band, and the truth.",
    task_rows=task_rows,
    table_rows=table_rows,
    plot=plot,
    keys=("estimators", "x", "values", "series"),
    columns=("rank", "propensity", "low", "high", "true_propensity"),
    validate=validate,
    # the estimators enter every task's key
    clicks=lambda spec: {"estimators": list(spec.estimators)},
    # the production ranker, the click log, then every estimate together
    steps=lambda task: 3,
)
