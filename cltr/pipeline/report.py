"""Tables (CSV, Markdown, LaTeX), statistics and figures (PNG, PDF) of an experiment's rows.

The only module that imports matplotlib. Every plotting function returns the figure and
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
"""

from __future__ import annotations

import io
import textwrap
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cltr import clickmodels, methods
from cltr.core.queries import default_passes, describe_convention
from cltr.core.ranking import DCG_BASE, NDCG_CONVENTION
from cltr.core.statistics import bootstrap_interval, holm, paired_tests
from cltr.pipeline import figure_kinds
from cltr.pipeline.experiments import Spec
from cltr.pipeline.workspace import atomic_write

__all__ = ["summarise", "significance", "claims", "check", "stated_rows", "header_note", "click_settings",
           "dataset_label", "markdown_table", "latex_table", "table_rows", "plot", "write_outputs",
           "check_out_directory", "output_name", "training_data", "METRIC_LABELS", "LEVEL", "ALPHA", "MIN_RUNS",
           "RESAMPLES", "method_label", "mean_std", "method_order", "point_columns", "higher_is_better",
           "paper_values", "p_text", "format_stated", "figure_title", "runs_note", "datasets_of"]

METRIC_LABELS = {"avg_dcg": "Avg DCG", "avg_rank": "Avg Rank", "ndcg@10": "nDCG@10",
                 "ndcg@10_relevant_queries": "nDCG@10 relevant queries"}
LEVEL = 0.95        # of every bootstrap interval
ALPHA = 0.05        # a Holm-adjusted p below it is "significant"
# Fewest (paired) runs with which a p-value or an interval is printed: with two, a paired t
# has one degree of freedom and a percentile bootstrap of the mean is the two runs' range;
# below it they read "n/a (k runs)" and figures draw no band.
MIN_RUNS = 3
RESAMPLES = 2000
_SETTING_LABELS = {"eps_pos": "eps+", "eps_neg": "eps-", "rankers": "logging rankers"}


def method_label(method: str) -> str:
    if method == "production":
        return "Production ranker"
    known = methods.methods()
    return known[method].label if method in known else method


def mean_std(mean: float, std: float, n: int) -> str:
    """"mean ± std", or the mean alone for a single run (no spread to show)."""
    return f"{mean:.4f}" if n < 2 else f"{mean:.4f} ± {std:.4f}"


def method_order(spec: Spec, frame: pd.DataFrame) -> list[str]:
    order = [m for m in ("production",) if m in spec.references] + list(spec.methods)
    order += [m for m in ("skyline",) if m in spec.references]
    return [m for m in order if m in set(frame["method"])]


def point_columns(spec: Spec) -> list[str]:
    return [f"point_{k}" for k in spec.series] + ([f"point_{spec.x}"] if spec.x else [])


def datasets_of(frame: pd.DataFrame, spec: Spec) -> list[str]:
    return list(dict.fromkeys(frame["dataset"])) if "dataset" in frame.columns else [spec.dataset]


def _runs(frame: pd.DataFrame) -> int:
    """Independent runs: (dataset, repetition) pairs."""
    keys = [c for c in ("dataset", "repetition") if c in frame.columns]
    return len(frame[keys].drop_duplicates()) if keys else 1


def higher_is_better(metric: str) -> bool:
    return metric != "avg_rank"


# -- what the data and the numbers are -----------------------------------------------------


def dataset_label(frame: pd.DataFrame, spec: Spec, records: dict | None = None) -> str:
    """``letor (Fold 1)``, or ``letor, folds 1, 2, 3, 4, 5`` for the rows of several folds,
    with the training data actually used where the record says (``training_data``)."""
    names, records = datasets_of(frame, spec), records or {}
    folds = [records.get(name, {}).get("meta", {}).get("fold") for name in names]
    train = training_data(names, records)
    if len(names) == 1:
        within = [f"Fold {folds[0]}"] * (folds[0] is not None) + ([train] if train else [])
        return f"{names[0]} ({'; '.join(within)})" if within else names[0]
    after = f"; {train}" if train else ""
    if all(f is not None for f in folds):
        return f"{spec.dataset}, folds {', '.join(str(f) for f in folds)}{after}"
    return ", ".join(names) + after


def training_data(names: list[str], records: dict | None) -> str | None:
    """What the training split of LETOR datasets is made of, from their records' ``mq2007``:
    "train: MQ2008 Fold 1 only (MQ2007 absent)" or "train: MQ2007 + MQ2008 Fold 1" (the
    paper's); None for datasets that do not say (synthetic, Yahoo, SVMlight)."""
    metas = [(records or {}).get(name, {}).get("meta", {}) for name in names]
    if not metas or any("mq2007" not in meta for meta in metas):
        return None
    folds = [meta.get("fold") for meta in metas]
    fold = f" Fold {folds[0]}" if len(folds) == 1 and folds[0] is not None else ""
    with_mq2007 = {bool(meta["mq2007"]) for meta in metas}
    if with_mq2007 == {False}:
        return f"train: MQ2008{fold} only (MQ2007 absent)"
    if with_mq2007 == {True}:
        return f"train: MQ2007 + MQ2008{fold}"
    listed = ", ".join(f"{name} {'with' if meta['mq2007'] else 'without'} MQ2007"
                       for name, meta in zip(names, metas, strict=True))
    return f"train: MQ2008, with MQ2007 for some folds only ({listed})"


def output_name(spec: Spec) -> str:
    """The stem of a run's files: NAME, or NAME-quick for a ``--quick`` run, so that a quick
    run never overwrites (or passes for) the full one."""
    return f"{spec.name}-quick" if spec.quick else spec.name


def convention(frame: pd.DataFrame, spec: Spec, records: dict | None = None) -> str:
    """The metric convention of the datasets the rows come from, from their records."""
    texts = []
    for name in datasets_of(frame, spec):
        record = (records or {}).get(name)
        if record is not None:
            # records written before dcg_base was recorded were read with the default base
            texts.append(describe_convention(record["relevant_from"], record.get("dcg_base", DCG_BASE)))
    texts = list(dict.fromkeys(texts))
    return f"{'; '.join(texts)}; {NDCG_CONVENTION}" if texts else "not recorded (no dataset record given)"


def click_settings(spec: Spec, records: dict | None = None) -> str:
    """The click settings the spec holds fixed, e.g. ``eta = 1, eps+ = 1, eps- = 0.1, 100 passes``
    (the varied ones are on the x axis or in the legend)."""
    model = clickmodels.get(spec.clicks.get("model", clickmodels.DEFAULT_MODEL))
    settings = {**model.settings().to_dict(), **spec.clicks}
    varied = {spec.x, *spec.series}
    parts = [] if model.name == clickmodels.DEFAULT_MODEL else [f"click model {model.name}"]
    for key, value in settings.items():
        if key in varied or key in ("model", "passes") or value is None:
            continue
        shown = f"{value:g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)
        parts.append(f"{_SETTING_LABELS.get(key, key)} = {shown}")
    if "passes" not in varied:
        passes = settings.get("passes", "default")
        if passes in (None, "default"):
            known = {default_passes(name, record.get("meta", {})) for name, record in (records or {}).items()}
            passes = known.pop() if len(known) == 1 else "the dataset's default"
        parts.append(f"{passes} passes")
    return ", ".join(parts)


def _tuning_text(spec: Spec) -> str:
    """How the settings a method tunes once (``tune``) were chosen, or "" per model."""
    what = "; the tree methods' learning rate and leaves and Deep PropDCG's rate chosen"
    rest = "; tree counts and epochs per model"
    if spec.tune == "point":
        return f"{what} by each point's first repetition and fixed for its others{rest}"
    if spec.tune == "once":
        where = ("by the first repetition" if spec.x is None
                 else f"once per series, by its first repetition at x = {spec.tuned_at},")
        return f"{what} {where} and fixed for the others (as the paper tuned LambdaRank){rest}"
    return ""


def _selection_text(frame: pd.DataFrame, spec: Spec) -> str:
    tuning = _tuning_text(spec)
    if spec.select != "pooled":
        return ("hyperparameters selected per repetition, by SNIPS Avg DCG on that repetition's validation "
                "clicks" + tuning)
    text = ("linear SVMs' C pooled as in the paper: one C per point (and fold) for all repetitions, the one "
            "with the best mean validation SNIPS Avg DCG" + (tuning or "; other hyperparameters per repetition"))
    detail = figure_kinds.get(spec.kind).selection_detail
    return text + (detail(frame, spec) if detail is not None else "")


def paper_values(spec: Spec) -> dict:
    for prefix, values in spec.paper.items():
        if spec.dataset.startswith(prefix):
            return values
    return {}


def _paper_note(spec: Spec) -> list[str]:
    if not spec.paper:
        return []
    lines = []
    for prefix, values in spec.paper.items():
        listed = ", ".join(f"{method_label(m)} {v[0]:.4f} ± {v[1]:.0e}" for m, v in values.items())
        compared = "compared below" if spec.dataset.startswith(prefix) else f"not comparable with {spec.dataset}"
        lines.append(f"- The paper's {spec.artifact or spec.name} on {prefix} ({compared}): {listed}.")
    return lines


def header_note(frame: pd.DataFrame, spec: Spec, records: dict | None = None) -> str:
    """What every table and figure of the run needs said beside it, as Markdown bullets."""
    reps = frame["repetition"].nunique() if "repetition" in frame.columns else spec.reps
    names = datasets_of(frame, spec)
    runs = f"{reps} repetition(s)" + (f" on each of {len(names)} datasets, {_runs(frame)} runs" if len(names) > 1
                                       else "")
    lines = [f"- Data: {dataset_label(frame, spec, records)}; clicks: {click_settings(spec, records)}; {runs}.",
             f"- Metric convention: {convention(frame, spec, records)}.",
             f"- Selection: {_selection_text(frame, spec)}."]
    if spec.quick:
        lines.insert(0, f"- QUICK RUN (--quick): the spec's reduced version (fewer repetitions and points), "
                        f"written as {output_name(spec)}.*; not the full result.")
    notes = figure_kinds.get(spec.kind).notes
    lines += notes(frame, spec) if notes is not None else []
    return "\n".join(lines + _paper_note(spec)) + "\n"


def runs_note(spec: Spec) -> str:
    """The header note's line for rows summarised over runs (means, intervals, tests)."""
    return (f"- Numbers: mean ± standard deviation over runs; CI: {LEVEL:.0%} percentile bootstrap "
            f"interval of the mean over runs ({RESAMPLES} resamples, seed {spec.seed}). The figure "
            f"shows the mean and that interval. Intervals and p-values need at least {MIN_RUNS} "
            f"(paired) runs: with fewer they read n/a.")


# -- summaries and statistics --------------------------------------------------------------


def summarise(frame: pd.DataFrame, spec: Spec) -> pd.DataFrame:
    """Per (point, method) over runs: mean, standard deviation, count, and for the spec's
    metric the bootstrap interval of the mean (``{metric}_low``, ``{metric}_high``; NaN with
    fewer than ``MIN_RUNS`` runs)."""
    keys = point_columns(spec) + ["method"]
    # results written before nDCG@10 was reported over all queries lack the relevant-queries column
    metrics = [m for m in [*METRIC_LABELS, "train_clicks", "irrelevant_click_share"] if m in frame]
    grouped = frame.groupby(keys, sort=False)
    summary = grouped[metrics].mean().add_suffix("_mean").join(grouped[metrics].std(ddof=1).add_suffix("_std"))
    summary["n"] = grouped.size()
    intervals = [bootstrap_interval(group[spec.metric], seed=spec.seed, level=LEVEL, resamples=RESAMPLES)
                 for _, group in grouped]
    # pandas' mean (compensated summation) and numpy's resampled means can round equal runs
    # (the skyline's) one ulp apart: the interval is widened to hold the mean it is drawn around
    mean = summary[f"{spec.metric}_mean"].to_numpy()
    few = summary["n"].to_numpy() < MIN_RUNS  # too few runs for an interval: NaN, never drawn
    summary[f"{spec.metric}_low"] = np.where(few, np.nan, np.fmin([low for low, _ in intervals], mean))
    summary[f"{spec.metric}_high"] = np.where(few, np.nan, np.fmax([high for _, high in intervals], mean))
    return summary.reset_index()


def _tested_pairs(frame: pd.DataFrame, spec: Spec) -> tuple[list[tuple[str, str]], bool]:
    """Every pair the paper orders (worse, better), or neighbouring table rows without a claim."""
    present = set(frame["method"])
    claimed = [m for m in spec.claimed_order if m in present]
    if len(claimed) > 1:
        return [(claimed[i], claimed[j]) for i in range(len(claimed)) for j in range(i + 1, len(claimed))], True
    order = method_order(spec, frame)
    return list(pairwise(order)), False


def significance(frame: pd.DataFrame, spec: Spec) -> pd.DataFrame:
    """Paired tests between methods over the same runs ((dataset, repetition): same seeds).

    The pairs are every pair of the spec's ``claimed_order`` (the paper claims the later
    method better), else neighbouring rows of the table. Each pair gets the paired t and the
    Wilcoxon signed-rank test (two-sided), each Holm-corrected over all pairs of the table,
    and a verdict: the claim "holds" or is "reversed" by the sign of the mean difference,
    "not significant" unless the Holm-adjusted paired-t p is below ``ALPHA``.
    """
    pairs, claimed = _tested_pairs(frame, spec)
    keys = [c for c in ("dataset", "repetition") if c in frame.columns]
    by_method = {m: frame[frame["method"] == m].set_index(keys)[spec.metric] for m in {m for p in pairs for m in p}}
    sign = 1.0 if higher_is_better(spec.metric) else -1.0
    rows = []
    for worse, better in pairs:
        a, b = by_method[worse].align(by_method[better], join="inner")
        result = _enough_runs(paired_tests(a.to_numpy(), b.to_numpy()))
        gain = sign * result["mean_difference"]
        rows.append({"comparison": f"{method_label(better)} vs {method_label(worse)}",
                     "claim": f"{method_label(better)} better" if claimed else "",
                     "mean difference": result["mean_difference"],
                     "wins": f"{int(np.sum(sign * (b.to_numpy() - a.to_numpy()) > 0))}/{result['n']}",
                     "runs": result["n"], "p (paired t)": result["p_t"], "p (Wilcoxon)": result["p_wilcoxon"],
                     "_gain": gain, "_pair": (worse, better)})
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    table["Holm p (t)"] = holm(table["p (paired t)"])
    table["Holm p (Wilcoxon)"] = holm(table["p (Wilcoxon)"])
    table["verdict"] = [_verdict(gain, p, claimed, pair, runs) for gain, p, pair, runs in
                        zip(table["_gain"], table["Holm p (t)"], table["_pair"], table["runs"], strict=True)]
    columns = ["comparison", "claim", "mean difference", "wins", "runs", "p (paired t)", "Holm p (t)",
               "p (Wilcoxon)", "Holm p (Wilcoxon)", "verdict", "_pair"]
    return table[[c for c in columns if c != "claim" or claimed]]


def baseline_tests(frame: pd.DataFrame, spec: Spec) -> pd.DataFrame:
    """At every point, every method against the best (by mean) of the spec's ``compare_to``
    methods there: paired t and Wilcoxon over the point's runs, Holm-corrected over the
    point's comparisons. Empty without ``compare_to``."""
    if not spec.compare_to:
        return pd.DataFrame()
    points = point_columns(spec)
    keys = [c for c in ("dataset", "repetition") if c in frame.columns]
    sign = 1.0 if higher_is_better(spec.metric) else -1.0
    rows = []
    groups = frame.groupby(points, sort=False) if points else [((), frame)]
    for key, group in groups:
        key = key if isinstance(key, tuple) else (key,)
        by_method = {m: g.set_index(keys)[spec.metric] for m, g in group.groupby("method")}
        present = [m for m in spec.compare_to if m in by_method]
        if not present:
            continue
        best = max(present, key=lambda m: sign * by_method[m].mean())
        found = []
        for method in method_order(spec, group):
            if method == best:
                continue
            a, b = by_method[best].align(by_method[method], join="inner")
            result = _enough_runs(paired_tests(a.to_numpy(), b.to_numpy()))
            found.append({**{c[len("point_"):]: v for c, v in zip(points, key, strict=True)},
                          "comparison": f"{method_label(method)} vs {method_label(best)}",
                          "mean difference": result["mean_difference"],
                          "wins": f"{int(np.sum(sign * (b.to_numpy() - a.to_numpy()) > 0))}/{result['n']}",
                          "runs": result["n"], "p (paired t)": result["p_t"], "p (Wilcoxon)": result["p_wilcoxon"]})
        if found:
            holm_t = holm([r["p (paired t)"] for r in found])
            for row, p in zip(found, holm_t, strict=True):
                row["Holm p (t)"] = p
            rows.extend(found)
    return pd.DataFrame(rows)


def _enough_runs(result: dict) -> dict:
    """``paired_tests``' result, its p-values NaN (n/a) with fewer than ``MIN_RUNS`` pairs."""
    if result["n"] < MIN_RUNS:
        return {**result, "p_t": float("nan"), "p_wilcoxon": float("nan")}
    return result


def _verdict(gain: float, holm_p: float, claimed: bool, pair: tuple[str, str], runs: int = MIN_RUNS) -> str:
    if runs < MIN_RUNS:
        return f"untestable ({runs} runs; a test needs at least {MIN_RUNS})"
    if not np.isfinite(holm_p):
        return "untestable (no difference)"
    worse, better = pair
    up, down = ("holds", "reversed") if claimed else (f"{method_label(better)} better", f"{method_label(worse)} better")
    direction = up if gain > 0 else down
    return direction if holm_p < ALPHA else f"{direction}, not significant"


def claims(frame: pd.DataFrame, spec: Spec, tests: pd.DataFrame | None = None) -> dict[str, str]:
    """For each method of ``claimed_order`` after the first, the paper's claim that it beats
    the one before it, and whether it holds here: {method: text}."""
    tests = significance(frame, spec) if tests is None else tests
    if tests.empty or "claim" not in tests.columns:
        return {}
    present = [m for m in spec.claimed_order if m in set(frame["method"])]
    by_pair = {row["_pair"]: row for _, row in tests.iterrows()}
    texts = {}
    for worse, better in pairwise(present):
        row = by_pair[(worse, better)]
        runs = int(row["runs"])
        texts[better] = (f"beats {method_label(worse)}: {row['verdict']} ({row['mean difference']:+.4f}, "
                         f"{row['wins']} runs; Holm p: t {p_text(row['Holm p (t)'], runs)}, "
                         f"Wilcoxon {p_text(row['Holm p (Wilcoxon)'], runs)})")
    return texts


def p_text(value: float, runs: int | None = None) -> str:
    """A p-value as printed: "n/a (2 runs)" where too few runs make it meaningless."""
    if runs is not None and runs < MIN_RUNS:
        return f"n/a ({runs} runs)"
    return "n/a" if not np.isfinite(value) else f"{value:.2g}"


def check(frame: pd.DataFrame, spec: Spec, *, tolerance: float = 2.0) -> list[dict]:
    """Every method the paper reports for this dataset (``[paper.PREFIX]``) against ours.

    Ours is the mean over all runs; the gap is (ours - paper) / paper's std. Rows:
    ``method``, ``ours``, ``paper``, ``gap (paper std)``, ``within`` (|gap| <= tolerance;
    None where the method did not run). Empty when the paper has no values for the dataset.
    """
    paper = paper_values(spec)
    means = frame.groupby("method")[spec.metric].mean()
    rows: list[dict[str, Any]] = []
    for method, (value, std) in paper.items():
        if method not in means.index:
            rows.append({"method": method_label(method), "ours": "not run", "paper": f"{value:.4f} ± {std:.0e}",
                         "gap (paper std)": "", "within": None})
            continue
        gap = (float(means[method]) - value) / std
        rows.append({"method": method_label(method), "ours": f"{means[method]:.4f}",
                     "paper": f"{value:.4f} ± {std:.0e}", "gap (paper std)": f"{gap:+.2f}",
                     "within": bool(abs(gap) <= tolerance)})
    return rows


# -- numbers the paper states in its text ----------------------------------------------------


def _format_measure(measure: str, value: float) -> str:
    if measure == "irrelevant_click_share":
        return f"{100 * value:.1f}%"
    return f"{value:,.0f}"


def format_stated(measure: str, value) -> str:
    if isinstance(value, (list, tuple)):
        low, high = value
        return f"{_format_measure(measure, low)}–{_format_measure(measure, high)}"
    return _format_measure(measure, value)


def _measured(frame: pd.DataFrame, entry: dict) -> list[float] | None:
    """Our values of a stated measure, one per matching point (per C for CCP iterations)."""
    rows = frame
    for setting, value in entry.get("point", {}).items():
        column = f"point_{setting}"
        if column not in rows.columns:
            return None
        rows = rows[np.isclose(rows[column].astype(float), float(value))]
    if rows.empty:
        return None
    measure = entry["measure"]
    if measure == "ccp_iterations":
        if "iteration" not in rows.columns:
            return None
        return rows.groupby(["dataset", "repetition", "C"])["iteration"].max().astype(float).tolist()
    points = sorted(c for c in rows.columns if c.startswith("point_"))
    per_run = rows.drop_duplicates([*points, "dataset", "repetition"])
    grouped = per_run.groupby(points)[measure].mean() if points else per_run[measure].mean()
    return np.atleast_1d(np.asarray(grouped, dtype=float)).tolist()


def stated_rows(frame: pd.DataFrame, spec: Spec) -> list[dict]:
    """The paper's stated numbers (spec ``[[stated]]``) beside ours; a range where ours
    varies over the matching points (or over C, for CCP iterations)."""
    rows = []
    for entry in spec.stated:
        ours = _measured(frame, entry)
        if ours:
            low, high = min(ours), max(ours)
            shown = format_stated(entry["measure"], [low, high] if low != high else low)
        else:
            shown = "n/a (not measured at this point)"
        rows.append({"the paper states": entry["text"],
                     "paper": f"{format_stated(entry['measure'], entry['value'])} ({entry['dataset']})",
                     "ours": f"{shown} ({spec.dataset})",
                     "same dataset": "yes" if spec.dataset.startswith(entry["dataset"]) else "no"})
    return rows


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

    lines = [r"\begin{table}[t]", r"\centering", r"\begin{tabular}{l" + "c" * (len(columns) - 1) + "}",
             r"\toprule", " & ".join(escape(c) for c in columns) + r" \\", r"\midrule"]
    lines += [" & ".join(escape(row.get(c, "")) for c in columns) + r" \\" for row in rows]
    lines += [r"\bottomrule", r"\end{tabular}", rf"\caption{{{escape(caption)}}}", r"\end{table}"]
    return "\n".join(lines) + "\n"


# -- figures -------------------------------------------------------------------------------


_TITLE_WIDTH = 110  # characters of a title line at the figures' width and font size


def figure_title(frame: pd.DataFrame, spec: Spec, records: dict | None, what: str, bars: str, *,
           over_runs: bool = True) -> str:
    """Three lines: what on which data; the fixed click settings and runs; what the bars are
    (``over_runs``: intervals over runs, which one run cannot have)."""
    reps = frame["repetition"].nunique() if "repetition" in frame.columns else spec.reps
    runs = _runs(frame)
    count = f"{reps} repetition(s)" + (f" x {runs // max(reps, 1)} datasets = {runs} runs" if runs != reps else "")
    if runs < MIN_RUNS and over_runs:
        bars += f" ({runs} run{'s' if runs != 1 else ''}: too few for an interval, none drawn)"
    quick = "QUICK RUN (--quick, reduced): " if spec.quick else ""
    lines = [f"{quick}{spec.artifact or spec.name}: {what} on {dataset_label(frame, spec, records)}",
             f"{click_settings(spec, records)}; {count}", bars]
    # long settings (a click model with many parameters) wrap instead of running off the figure
    return "\n".join(textwrap.fill(line, _TITLE_WIDTH, break_on_hyphens=False) for line in lines)


def plot(frame: pd.DataFrame, spec: Spec, *, records: dict | None = None):
    """The experiment's figure and the data drawn: {line: {"x", "mean", "std", "low", "high"}}."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return figure_kinds.get(spec.kind).plot(frame, spec, plt, records)


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


def write_outputs(frame: pd.DataFrame, spec: Spec, out: Path, *, records: dict | None = None) -> dict[str, Path]:
    """NAME.csv, NAME.md, NAME.tex, NAME.png and NAME.pdf in ``out``, each written atomically.

    ``records``: the prepared datasets' JSON records by name (the metric convention, the
    default passes and folds in the header note and titles).
    """
    out = Path(out)
    paths = {suffix: out / f"{output_name(spec)}.{suffix}" for suffix in ("csv", "md", "tex", "png", "pdf")}
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
        shown = [{k: (p_text(v, int(row["runs"])) if k.startswith(("p ", "Holm"))
                      else f"{v:+.4f}" if k == "mean difference" else v)
                  for k, v in row.items()} for row in baselines.to_dict("records")]
        heading = (f"Every method against the best of {', '.join(method_label(m) for m in spec.compare_to)} at each "
                   f"point (paired over runs; Holm over each point's comparisons):")
        text += f"\n{heading}\n\n" + markdown_table(shown)
        tex += latex_table(shown, f"{spec.name}: {heading}")
    if stated:
        tex += latex_table(stated, f"{spec.name}: numbers the paper states in its text, beside ours")
    with atomic_write(paths["md"], "w") as stream:
        stream.write(text)
    with atomic_write(paths["tex"], "w") as stream:
        stream.write(tex)
    figure, _ = plot(frame, spec, records=records)
    for suffix in ("png", "pdf"):
        buffer = io.BytesIO()
        figure.savefig(buffer, format=suffix, dpi=150, metadata=_FIXED_METADATA[suffix])
        with atomic_write(paths[suffix]) as stream:
            stream.write(buffer.getvalue())
    import matplotlib.pyplot as plt

    plt.close(figure)
    return paths
