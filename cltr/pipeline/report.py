"""Tables (CSV, Markdown, LaTeX) and figures (PNG, PDF) of an experiment's rows.

The only module that imports matplotlib. Every plotting function returns the figure and
the data it drew (per line: x, mean, std), so tests can check a figure against the CSV.
Rows come from ``cltr.pipeline.experiments.run_experiment``: one per (task, method), with the
point's settings in ``point_*`` columns and the test metrics.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd

from cltr import methods
from cltr.pipeline.experiments import Spec
from cltr.pipeline.workspace import atomic_write

__all__ = ["summarise", "significance", "markdown_table", "latex_table", "plot", "write_outputs",
           "METRIC_LABELS"]

METRIC_LABELS = {"avg_dcg": "Avg DCG", "avg_rank": "Avg Rank", "ndcg@10": "nDCG@10"}
_X_LABELS = {"passes": "passes over the training queries", "train_clicks": "training clicks", "eta": "eta",
             "eps_neg": "eps_neg (click probability of an observed irrelevant document)",
             "eta_model": "eta of the propensity model (true eta = 1)",
             "clip": "clipping threshold TAU (propensities below TAU raised to TAU)"}


def _label(method: str) -> str:
    if method == "production":
        return "Production ranker"
    known = methods.methods()
    return known[method].label if method in known else method


def _mean_std(mean: float, std: float, n: int) -> str:
    """"mean ± std", or the mean alone for a single repetition (no spread to show)."""
    return f"{mean:.4f}" if n < 2 else f"{mean:.4f} ± {std:.4f}"


def _method_order(spec: Spec, frame: pd.DataFrame) -> list[str]:
    order = [m for m in ("production",) if m in spec.references] + list(spec.methods)
    order += [m for m in ("skyline",) if m in spec.references]
    return [m for m in order if m in set(frame["method"])]


def _point_columns(spec: Spec) -> list[str]:
    return [f"point_{k}" for k in spec.series] + ([f"point_{spec.x}"] if spec.x else [])


def summarise(frame: pd.DataFrame, spec: Spec) -> pd.DataFrame:
    """Mean, standard deviation and count over repetitions per (point, method)."""
    keys = _point_columns(spec) + ["method"]
    metrics = ["avg_dcg", "avg_rank", "ndcg@10", "train_clicks", "irrelevant_click_share"]
    grouped = frame.groupby(keys, sort=False)[metrics]
    summary = grouped.mean().add_suffix("_mean").join(grouped.std(ddof=1).add_suffix("_std"))
    summary["n"] = grouped.size()
    return summary.reset_index()


def significance(frame: pd.DataFrame, spec: Spec) -> pd.DataFrame:
    """Paired t-tests over repetitions between neighbouring methods of the table (same seeds)."""
    from scipy.stats import ttest_rel

    order = _method_order(spec, frame)
    by_method = {m: frame[frame["method"] == m].set_index("repetition")[spec.metric] for m in order}
    rows = []
    for first, second in zip(order, order[1:]):
        a, b = by_method[first].align(by_method[second], join="inner")
        p = float(ttest_rel(b, a).pvalue) if len(a) > 1 and np.any(a.values != b.values) else float("nan")
        rows.append({"comparison": f"{_label(second)} vs {_label(first)}", "mean difference": float((b - a).mean()),
                     "repetitions": len(a), "p (paired t)": p})
    return pd.DataFrame(rows)


def _paper_values(spec: Spec) -> dict:
    for prefix, values in spec.paper.items():
        if spec.dataset.startswith(prefix):
            return values
    return {}


def _table_rows(frame: pd.DataFrame, spec: Spec) -> list[dict]:
    summary = summarise(frame, spec).set_index("method")
    paper = _paper_values(spec)
    rows = []
    for method in _method_order(spec, frame):
        row = summary.loc[method]
        entry = {"method": _label(method),
                 METRIC_LABELS[spec.metric]: _mean_std(row[spec.metric + "_mean"], row[spec.metric + "_std"], row["n"])}
        if paper:
            value = paper.get(method)
            entry["paper"] = f"{value[0]:.4f} ± {value[1]:.0e}" if value else ""
        for metric in METRIC_LABELS:
            if metric != spec.metric:
                entry[METRIC_LABELS[metric]] = f"{row[metric + '_mean']:.4f}"
        entry["train clicks"] = f"{row['train_clicks_mean']:.0f}"
        entry["runs"] = int(row["n"])
        rows.append(entry)
    return rows


def _curve_rows(frame: pd.DataFrame, spec: Spec) -> list[dict]:
    summary = summarise(frame, spec)
    points = _point_columns(spec)
    rows = []
    for key, group in summary.groupby(points, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        entry = {column[len("point_"):]: value for column, value in zip(points, key)}
        entry["train clicks"] = f"{group['train_clicks_mean'].iloc[0]:.0f}"
        entry["irrelevant click share"] = f"{group['irrelevant_click_share_mean'].iloc[0]:.3f}"
        for _, row in group.iterrows():
            entry[_label(row["method"])] = _mean_std(row[spec.metric + "_mean"], row[spec.metric + "_std"], row["n"])
        rows.append(entry)
    return rows


def _ccp_rows(frame: pd.DataFrame) -> list[dict]:
    rows = []
    first = frame[frame["repetition"] == frame["repetition"].min()]
    for C, group in first.groupby("C", sort=True):
        group = group.sort_values("iteration")
        rows.append({"C": f"{C:g}", "repetition": int(group["repetition"].iloc[0]),
                     "CCP iterations": int(group["iteration"].max()),
                     "initial objective": f"{group['objective'].iloc[0]:.6g}",
                     "final objective": f"{group['objective'].iloc[-1]:.6g}",
                     "initial train SNIPS Avg DCG": f"{group['train_snips_avg_dcg'].iloc[0]:.4f}",
                     "final train SNIPS Avg DCG": f"{group['train_snips_avg_dcg'].iloc[-1]:.4f}"})
    return rows


def _propensity_table(frame: pd.DataFrame, spec: Spec) -> list[dict]:
    keys = _point_columns(spec) + ["method", "rank"]
    grouped = frame.groupby(keys, sort=False)
    rows = []
    for key, group in grouped:
        key = key if isinstance(key, tuple) else (key,)
        row = {c[len("point_"):] if c.startswith("point_") else c: v for c, v in zip(keys, key)}
        n = len(group)
        row.update({"true": f"{group['true_propensity'].mean():.4f}",
                    "estimate": _mean_std(group["propensity"].mean(), group["propensity"].std(ddof=1), n),
                    "band": f"[{group['low'].mean():.4f}, {group['high'].mean():.4f}]"})
        rows.append(row)
    return rows


def _plot_propensity(frame: pd.DataFrame, spec: Spec, plt):
    figure, axes = plt.subplots(figsize=(6.4, 4.2))
    data = {}
    points = _point_columns(spec)
    groups = frame.groupby(points, sort=False) if points else [((), frame)]
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    styles = {"harvest": "-", "em": "--"}
    for i, (point, group) in enumerate(groups):
        point = point if isinstance(point, tuple) else (point,)
        suffix = ", ".join(f"{c[len('point_'):]} = {v}" for c, v in zip(points, point))
        color = colors[i % len(colors)]
        truth = group.groupby("rank", sort=True)["true_propensity"].mean()
        axes.plot(truth.index, truth.values, color=color, linestyle=":", linewidth=2, label=f"true, {suffix}")
        data[f"true, {suffix}"] = {"x": truth.index.tolist(), "mean": truth.values.tolist(), "std": [0.0] * len(truth)}
        for estimator, rows in group.groupby("method", sort=False):
            summary = rows.groupby("rank", sort=True).agg(mean=("propensity", "mean"), low=("low", "mean"),
                                                           high=("high", "mean"), std=("propensity", "std"))
            label = f"{estimator}, {suffix}"
            axes.plot(summary.index, summary["mean"], color=color, linestyle=styles.get(estimator, "-"),
                      marker="o", markersize=3, label=label)
            axes.fill_between(summary.index, summary["low"], summary["high"], color=color, alpha=0.12)
            data[label] = {"x": summary.index.tolist(), "mean": summary["mean"].tolist(),
                           "std": np.nan_to_num(summary["std"].to_numpy()).tolist()}
    axes.set_xscale("log")
    axes.set_yscale("log")
    # estimates at deep ranks can collapse towards 0 where clicks are few: keep the truth in view
    smallest = float(frame["true_propensity"].min())
    if np.isfinite(smallest) and smallest > 0:
        axes.set_ylim(bottom=smallest / 10, top=1.5)
    axes.set_xlabel("rank")
    axes.set_ylabel("observation propensity relative to rank 1")
    reps = int(frame["repetition"].nunique())
    clicks = ", ".join(f"{k} = {v}" for k, v in spec.clicks.items())
    axes.set_title(f"{spec.artifact or spec.name} on {spec.dataset} ({clicks})\nestimated: mean of {reps} "
                   f"repetition(s), shaded: mean bootstrap band; true: dotted", fontsize=8)
    axes.grid(alpha=0.3, which="both")
    axes.legend(fontsize=6, ncol=2)
    figure.tight_layout()
    return figure, data


def table_rows(frame: pd.DataFrame, spec: Spec) -> list[dict]:
    """The rows of the experiment's summary table, as strings ready to print."""
    if spec.kind == "propensity":
        return _propensity_table(frame, spec)
    if spec.kind == "table":
        return _table_rows(frame, spec)
    if spec.kind == "ccp":
        return _ccp_rows(frame)
    return _curve_rows(frame, spec)


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

    lines = [r"\begin{table}[t]", r"\centering", r"\begin{tabular}{l" + "c" * (len(columns) - 1) + "}",
             r"\toprule", " & ".join(escape(c) for c in columns) + r" \\", r"\midrule"]
    lines += [" & ".join(escape(row.get(c, "")) for c in columns) + r" \\" for row in rows]
    lines += [r"\bottomrule", r"\end{tabular}", rf"\caption{{{escape(caption)}}}", r"\end{table}"]
    return "\n".join(lines) + "\n"


# -- figures -------------------------------------------------------------------------------


def plot(frame: pd.DataFrame, spec: Spec):
    """The experiment's figure and the data drawn: {line label: {"x", "mean", "std"}}."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if spec.kind == "ccp":
        return _plot_ccp(frame, plt)
    if spec.kind == "propensity":
        return _plot_propensity(frame, spec, plt)
    figure, axes = plt.subplots(figsize=(6.4, 4.2))
    data = {}
    metric = spec.metric
    if spec.kind == "table":
        summary = summarise(frame, spec).set_index("method")
        order = _method_order(spec, frame)
        means = [summary.loc[m, metric + "_mean"] for m in order]
        stds = [np.nan_to_num(summary.loc[m, metric + "_std"]) for m in order]
        axes.bar(range(len(order)), means, yerr=stds, capsize=4, color="tab:blue")
        axes.set_xticks(range(len(order)), [_label(m) for m in order], rotation=25, ha="right")
        low = min(m - s for m, s in zip(means, stds))
        high = max(m + s for m, s in zip(means, stds))
        axes.set_ylim(low - 0.1 * (high - low + 1e-9), high + 0.1 * (high - low + 1e-9))
        data = {m: {"x": [i], "mean": [float(v)], "std": [float(s)]} for i, (m, v, s) in enumerate(zip(order, means, stds))}
    else:
        summary = summarise(frame, spec)
        x_column = spec.plot_x or spec.x
        x_source = f"{x_column}_mean" if x_column == "train_clicks" else f"point_{x_column}"
        series_columns = [f"point_{k}" for k in spec.series]
        groups = summary.groupby(series_columns, sort=False) if series_columns else [((), summary)]
        styles = ["-", "--", ":", "-."]
        for s, (series_key, group) in enumerate(groups):
            series_key = series_key if isinstance(series_key, tuple) else (series_key,)
            suffix = "".join(f", {c[len('point_'):]} = {v}" for c, v in zip(series_columns, series_key))
            for method in [m for m in spec.methods if m in set(group["method"])]:
                rows = group[group["method"] == method]
                x = rows[x_source].to_numpy(dtype=float)
                mean = rows[metric + "_mean"].to_numpy(dtype=float)
                std = np.nan_to_num(rows[metric + "_std"].to_numpy(dtype=float))
                label = _label(method) + suffix
                axes.errorbar(x, mean, yerr=std, marker="o", capsize=3, linestyle=styles[s % len(styles)], label=label)
                data[label] = {"x": x.tolist(), "mean": mean.tolist(), "std": std.tolist()}
            for reference, color in (("production", "grey"), ("skyline", "black")):
                rows = group[group["method"] == reference]
                if len(rows):
                    level = float(rows[metric + "_mean"].mean())
                    axes.axhline(level, color=color, linestyle=styles[s % len(styles)], linewidth=1,
                                 label=_label(reference) + suffix)
                    data[_label(reference) + suffix] = {"x": [], "mean": [level], "std": [0.0]}
        if x_column in ("train_clicks", "passes", "clip"):
            axes.set_xscale("log")
        axes.set_xlabel(_X_LABELS.get(x_column, x_column))
        axes.legend(fontsize=7)
    axes.set_ylabel(f"test {METRIC_LABELS[metric]}")
    axes.set_title(spec.artifact or spec.name, fontsize=9)
    axes.grid(alpha=0.3)
    figure.tight_layout()
    return figure, data


def _plot_ccp(frame: pd.DataFrame, plt):
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    data = {}
    first = frame[frame["repetition"] == frame["repetition"].min()]
    for C, group in first.groupby("C", sort=True):
        group = group.sort_values("iteration")
        x = group["iteration"].to_numpy(dtype=float)
        objective = group["objective"].to_numpy(dtype=float)
        # objectives of different C differ by orders of magnitude: draw each relative to its end
        relative = objective / abs(objective[-1]) if objective[-1] != 0 else objective
        snips = group["train_snips_avg_dcg"].to_numpy(dtype=float)
        left.plot(x, relative, marker="o", label=f"C = {C:g}")
        right.plot(x, snips, marker="o", label=f"C = {C:g}")
        data[f"objective, C = {C:g}"] = {"x": x.tolist(), "mean": relative.tolist(), "std": [0.0] * len(x)}
        data[f"train SNIPS, C = {C:g}"] = {"x": x.tolist(), "mean": snips.tolist(), "std": [0.0] * len(x)}
    left.set_xlabel("CCP iteration")
    left.set_ylabel("objective / |final objective|")
    right.set_xlabel("CCP iteration")
    right.set_ylabel("training SNIPS Avg DCG")
    for axes in (left, right):
        axes.grid(alpha=0.3)
        axes.legend(fontsize=7)
    figure.tight_layout()
    return figure, data


# -- files ---------------------------------------------------------------------------------


def write_outputs(frame: pd.DataFrame, spec: Spec, out: Path) -> dict[str, Path]:
    """NAME.csv, NAME.md, NAME.tex, NAME.png and NAME.pdf in ``out``, each written atomically."""
    out = Path(out)
    paths = {suffix: out / f"{spec.name}.{suffix}" for suffix in ("csv", "md", "tex", "png", "pdf")}
    with atomic_write(paths["csv"], "w") as stream:
        frame.to_csv(stream, index=False, float_format="%.10g", lineterminator="\n")
    rows = table_rows(frame, spec)
    caption = f"{spec.artifact or spec.name}: {spec.description}".strip().rstrip(":")
    clicks = ", ".join(f"{k} = {v}" for k, v in spec.clicks.items())
    text = f"# {spec.name}: {spec.artifact}\n\n{spec.description}\n\nDataset `{spec.dataset}`, {clicks}.\n\n"
    text += markdown_table(rows)
    tex = latex_table(rows, caption)
    if spec.kind == "table" and len(spec.methods) + len(spec.references) > 1:
        tests = significance(frame, spec)
        tests_rows = [{k: (f"{v:.3g}" if isinstance(v, float) else v) for k, v in row.items()}
                      for row in tests.to_dict("records")]
        text += "\nPaired t-tests between neighbouring rows (same repetitions):\n\n" + markdown_table(tests_rows)
        tex += latex_table(tests_rows, f"{spec.name}: paired t-tests between neighbouring rows")
    with atomic_write(paths["md"], "w") as stream:
        stream.write(text)
    with atomic_write(paths["tex"], "w") as stream:
        stream.write(tex)
    figure, _ = plot(frame, spec)
    for suffix in ("png", "pdf"):
        buffer = io.BytesIO()
        figure.savefig(buffer, format=suffix, dpi=150)
        with atomic_write(paths[suffix]) as stream:
            stream.write(buffer.getvalue())
    import matplotlib.pyplot as plt

    plt.close(figure)
    return paths
