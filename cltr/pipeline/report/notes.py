"""What the data and the numbers are: the report's labels and constants, and the header
notes every output carries (the dataset, its metric convention, the click settings, the
selection and tuning, the paper's values).
"""

from __future__ import annotations

import pandas as pd

from cltr import clickmodels, methods
from cltr.core.queries import default_passes, describe_convention
from cltr.core.ranking import DCG_BASE, NDCG_CONVENTION
from cltr.pipeline import figure_kinds
from cltr.pipeline.experiments import Spec

__all__ = [
    "header_note",
    "click_settings",
    "dataset_label",
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
    "runs_note",
    "datasets_of",
]

METRIC_LABELS = {
    "avg_dcg": "Avg DCG",
    "avg_rank": "Avg Rank",
    "ndcg@10": "nDCG@10",
    "ndcg@10_relevant_queries": "nDCG@10 relevant queries",
}
LEVEL = 0.95  # of every bootstrap interval
ALPHA = 0.05  # a Holm-adjusted p below it is "significant"
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
    """ "mean ± std", or the mean alone for a single run (no spread to show)."""
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
    listed = ", ".join(
        f"{name} {'with' if meta['mq2007'] else 'without'} MQ2007" for name, meta in zip(names, metas, strict=True)
    )
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
        where = (
            "by the first repetition"
            if spec.x is None
            else f"once per series, by its first repetition at x = {spec.tuned_at},"
        )
        return f"{what} {where} and fixed for the others (as the paper tuned LambdaRank){rest}"
    return ""


def _selection_text(frame: pd.DataFrame, spec: Spec) -> str:
    tuning = _tuning_text(spec)
    if spec.select != "pooled":
        return (
            "hyperparameters selected per repetition, by SNIPS Avg DCG on that repetition's validation clicks" + tuning
        )
    text = (
        "linear SVMs' C pooled as in the paper: one C per point (and fold) for all repetitions, the one "
        "with the best mean validation SNIPS Avg DCG" + (tuning or "; other hyperparameters per repetition")
    )
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
    runs = f"{reps} repetition(s)" + (
        f" on each of {len(names)} datasets, {_runs(frame)} runs" if len(names) > 1 else ""
    )
    lines = [
        f"- Data: {dataset_label(frame, spec, records)}; clicks: {click_settings(spec, records)}; {runs}.",
        f"- Metric convention: {convention(frame, spec, records)}.",
        f"- Selection: {_selection_text(frame, spec)}.",
    ]
    if spec.quick:
        lines.insert(
            0,
            f"- QUICK RUN (--quick): the spec's reduced version (fewer repetitions and points), "
            f"written as {output_name(spec)}.*; not the full result.",
        )
    notes = figure_kinds.get(spec.kind).notes
    lines += notes(frame, spec) if notes is not None else []
    return "\n".join(lines + _paper_note(spec)) + "\n"


def runs_note(spec: Spec) -> str:
    """The header note's line for rows summarised over runs (means, intervals, tests)."""
    return (
        f"- Numbers: mean ± standard deviation over runs; CI: {LEVEL:.0%} percentile bootstrap "
        f"interval of the mean over runs ({RESAMPLES} resamples, seed {spec.seed}). The figure "
        f"shows the mean and that interval. Intervals and p-values need at least {MIN_RUNS} "
        f"(paired) runs: with fewer they read n/a."
    )
