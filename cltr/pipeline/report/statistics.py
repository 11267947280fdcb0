"""Summaries and statistics of an experiment's rows: means, bootstrap intervals, paired
tests with Holm's correction, the paper's claims and the check against its values, and the
numbers the paper states in its text beside ours.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import numpy as np
import pandas as pd

from cltr.core.statistics import bootstrap_interval, holm, paired_tests
from cltr.pipeline.experiments import Spec
from cltr.pipeline.report.notes import (
    ALPHA,
    LEVEL,
    METRIC_LABELS,
    MIN_RUNS,
    RESAMPLES,
    higher_is_better,
    method_label,
    method_order,
    paper_values,
    point_columns,
)

__all__ = ["summarise", "significance", "baseline_tests", "claims", "check", "stated_rows", "p_text", "format_stated"]

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
    intervals = [
        bootstrap_interval(group[spec.metric], seed=spec.seed, level=LEVEL, resamples=RESAMPLES) for _, group in grouped
    ]
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
        rows.append(
            {
                "comparison": f"{method_label(better)} vs {method_label(worse)}",
                "claim": f"{method_label(better)} better" if claimed else "",
                "mean difference": result["mean_difference"],
                "wins": f"{int(np.sum(sign * (b.to_numpy() - a.to_numpy()) > 0))}/{result['n']}",
                "runs": result["n"],
                "p (paired t)": result["p_t"],
                "p (Wilcoxon)": result["p_wilcoxon"],
                "_gain": gain,
                "_pair": (worse, better),
            }
        )
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    table["Holm p (t)"] = holm(table["p (paired t)"])
    table["Holm p (Wilcoxon)"] = holm(table["p (Wilcoxon)"])
    table["verdict"] = [
        _verdict(gain, p, claimed, pair, runs)
        for gain, p, pair, runs in zip(table["_gain"], table["Holm p (t)"], table["_pair"], table["runs"], strict=True)
    ]
    columns = [
        "comparison",
        "claim",
        "mean difference",
        "wins",
        "runs",
        "p (paired t)",
        "Holm p (t)",
        "p (Wilcoxon)",
        "Holm p (Wilcoxon)",
        "verdict",
        "_pair",
    ]
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
            found.append(
                {
                    **{c[len("point_") :]: v for c, v in zip(points, key, strict=True)},
                    "comparison": f"{method_label(method)} vs {method_label(best)}",
                    "mean difference": result["mean_difference"],
                    "wins": f"{int(np.sum(sign * (b.to_numpy() - a.to_numpy()) > 0))}/{result['n']}",
                    "runs": result["n"],
                    "p (paired t)": result["p_t"],
                    "p (Wilcoxon)": result["p_wilcoxon"],
                }
            )
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
        texts[better] = (
            f"beats {method_label(worse)}: {row['verdict']} ({row['mean difference']:+.4f}, "
            f"{row['wins']} runs; Holm p: t {p_text(row['Holm p (t)'], runs)}, "
            f"Wilcoxon {p_text(row['Holm p (Wilcoxon)'], runs)})"
        )
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
            rows.append(
                {
                    "method": method_label(method),
                    "ours": "not run",
                    "paper": f"{value:.4f} ± {std:.0e}",
                    "gap (paper std)": "",
                    "within": None,
                }
            )
            continue
        gap = (float(means[method]) - value) / std
        rows.append(
            {
                "method": method_label(method),
                "ours": f"{means[method]:.4f}",
                "paper": f"{value:.4f} ± {std:.0e}",
                "gap (paper std)": f"{gap:+.2f}",
                "within": bool(abs(gap) <= tolerance),
            }
        )
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
        rows.append(
            {
                "the paper states": entry["text"],
                "paper": f"{format_stated(entry['measure'], entry['value'])} ({entry['dataset']})",
                "ours": f"{shown} ({spec.dataset})",
                "same dataset": "yes" if spec.dataset.startswith(entry["dataset"]) else "no",
            }
        )
    return rows
