"""Experiments: the paper's tables and figures as specs, run as independent cached tasks.

A spec (one TOML file in ``experiments/``) names a dataset, click settings, methods, the
setting on the x axis and its values, an optional second setting drawn as separate series,
repetitions and a seed. ``plan`` turns it into tasks, one per (point, repetition);
``run_task`` computes one task through the cached stages of ``cltr.pipeline.stages``; and
``run_experiment`` fans the unfinished tasks out with joblib (loky processes, or a
dask.distributed cluster) and gathers one row per (task, method) into a DataFrame.

Reproducibility: repetition k of a spec draws every seed (1% sample, clicks, tie-breaks,
initialisation) from ``SeedSequence([spec seed, k])``, shared by every point of that
repetition so that points are paired (the same production ranker, nested click logs), and
every task runs with one BLAS thread, so results do not depend on the backend or on
``--n-jobs`` to the last digit. A finished task is a workspace artifact keyed by a hash of
everything that determines it: re-running, or resuming after an interruption, computes
only what is missing.

Spec keys (see ``experiments/README.md`` for the files):

    name, artifact, description   identification; ``artifact`` names the paper's table/figure
    kind                          a figure kind (``cltr.pipeline.figure_kinds``): "table", "curve",
                                  "ccp", "propensity"; each takes the keys below that its module
                                  names besides the common ones (name, kind, artifact, description,
                                  dataset, reps, seed, [clicks], [synthetic], [datasets], [quick],
                                  [[stated]])
    dataset                       default dataset ("synthetic": generated when missing)
    methods, references           trained methods; "production" and/or "skyline" lines
    reps, seed                    repetitions and the experiment seed
    metric                        the plotted metric (avg_dcg, avg_rank, ndcg@10,
                                  ndcg@10_relevant_queries)
    x, values                     the varied setting (passes, eta, eps_neg, eta_model, continuation,
                                  top_k, ...) and its values
    plot_x                        the plotted x column (e.g. train_clicks for x = passes)
    series                        {setting: [values]}: one line per value (e.g. two data sizes)
    [clicks]                      model, the click model's settings (eta, eps_pos, eps_neg, ...),
                                  passes ("default": the dataset's), rankers, top_k (0: the full
                                  list), logging_temperature (0: deterministic), correction, ...
    [options.METHOD]              method options (grids, presets)
    [synthetic]                   make_synthetic options when the dataset must be generated
    [datasets.PREFIX]             overrides for datasets whose name starts with PREFIX
    [quick]                       overrides for ``--quick``
    [paper.PREFIX]                the paper's values (table2), {method: [mean, std]}; `cltr figures --check`
                                  compares every row with them
    claimed_order                 methods in the order the paper claims them to be, worst first
                                  (Table 2's "SVM Rank < LambdaRank < ..."): the report tests every pair
    [[stated]]                    numbers the paper states in its text, printed beside ours: text,
                                  dataset (the paper's), measure (STATED_MEASURES), value (a number
                                  or [low, high]), optionally point ({setting: value})
    compare_to                    methods the others are held to (e.g. the tree libraries' own
                                  debiasing): at every point, each method is tested (paired, Holm over
                                  the point's comparisons) against the best of them there
    select                        "repetition" (default: every repetition selects its own C) or
                                  "pooled" (the paper's: one C per point for all repetitions, the one
                                  with the best mean validation SNIPS Avg DCG); ``--select``
    tune, tune_at                 "repetition" (default: every model searches its method's whole grid),
                                  "once" (the paper's practice for LambdaRank: the settings a method
                                  lists in ``tuned_once``, e.g. the trees' learning rate and leaves, are
                                  chosen once per series, by the first repetition at x = ``tune_at``
                                  (default: the middle value), and fixed for every task of that series)
                                  or "point" (chosen by the first repetition of each point, for the
                                  others: where x changes the regime, e.g. the data size); tree counts
                                  and epochs are still early-stopped per model; ``--tune``
    in_all                        false keeps the spec out of ``cltr figures all`` (default true; the
                                  robustness figure, hours on the default, runs by name)
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import site
import sys
import threading
import time
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from cltr import clickmodels, methods
from cltr import estimators as estimator_registry
from cltr.core.queries import Dataset, default_passes
from cltr.core.selection import parse_clip
from cltr.lazy import lazy_import
from cltr.options import Options, option
from cltr.pipeline import corrections, figure_kinds
from cltr.pipeline.stages import (
    click_logs,
    clicks_stage,
    evaluation_stage,
    logging_rankers,
    model_stage,
    production_stage,
    production_test_metrics,
    propensity_stage,
)
from cltr.pipeline.workspace import Artifact, Workspace, check_name, config_key

if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy_import("pandas")  # imported on first use: `cltr --help` needs no pandas

__all__ = [
    "Spec",
    "Task",
    "ExperimentProgress",
    "SPEC_DIR",
    "find_spec_dir",
    "load_spec",
    "spec_names",
    "plan",
    "task_steps",
    "run_task",
    "run_experiment",
    "run_together",
    "TaskContext",
    "method_rows",
    "METHOD_COLUMNS",
    "METRICS",
    "repetition_seed",
    "CLICK_SETTINGS",
    "SELECTIONS",
    "TUNINGS",
    "tuning_tasks",
    "tuned",
    "STATED_MEASURES",
    "dataset_record",
    "pool_selection",
    "poolable",
    "propensity_choices",
    "FiguresOptions",
    "parse_folds",
]


def find_spec_dir(package_dir: Path, prefixes: Iterable[Path]) -> Path:
    """Where the specs are: ``experiments/`` of a source checkout (``package_dir``'s parent
    holds ``setup.cfg``), else the copy ``pip install`` puts in ``<prefix>/share/cltr/experiments``
    (setup.cfg's data_files) under the first prefix that has it."""
    checkout = Path(package_dir).parent
    if (checkout / "setup.cfg").exists() and (checkout / "experiments").is_dir():
        return checkout / "experiments"
    installed = [Path(prefix) / "share" / "cltr" / "experiments" for prefix in prefixes]
    return next((path for path in installed if path.is_dir()), installed[0] if installed else checkout / "experiments")


SPEC_DIR = find_spec_dir(Path(__file__).resolve().parents[1], [Path(sys.prefix), Path(site.USER_BASE or sys.prefix)])
# "model" names the click model; "passes" and "rankers" (logging rankers) are the
# simulation's, "top_k" (0: the full list) and "logging_temperature" (0: the deterministic
# ranking) its presentation; "propensities" ("logged", or an estimator: "harvest", "em"),
# "correction" (cltr.pipeline.corrections) and "clip" are how the learner is told the log
# ("clip": "auto", the default, chooses TAU on validation; "none"; or a TAU, for the training
# log only); the rest are the click models' settings
LOG_SETTINGS = ("model", "passes", "rankers", "top_k", "logging_temperature", "propensities", "correction", "clip")
CLICK_SETTINGS = (
    *LOG_SETTINGS,
    *dict.fromkeys(f.name for m in clickmodels.models().values() for f in m.settings.option_fields()),
)


def propensity_choices() -> tuple[str, ...]:
    """What a spec's ``propensities`` may be: the log's own, or a registered estimator."""
    return ("logged", *estimator_registry.estimators())


REFERENCES = ("production", "skyline")
METRICS = ("avg_dcg", "avg_rank", "ndcg@10", "ndcg@10_relevant_queries")
SELECTIONS = ("repetition", "pooled")
TUNINGS = ("repetition", "point", "once")
# what a [[stated]] number of the paper is compared with: a column of the rows, or the CCP's
# iterations per C
STATED_MEASURES = ("irrelevant_click_share", "train_clicks", "ccp_iterations")


def parse_folds(text: str) -> list[int]:
    """``"1-5"`` -> [1, 2, 3, 4, 5]; ``"1,3"`` -> [1, 3]; ``"2-3,5"`` -> [2, 3, 5]; each fold once, in order."""
    folds: list[int] = []
    for part in text.split(","):
        low, dash, high = part.strip().partition("-")
        if not low.strip().isdigit() or (dash and not high.strip().isdigit()):
            raise ValueError(f"{part.strip()!r} is not a fold number or a range like 1-5 (folds: e.g. 1-5 or 1,3)")
        first, last = int(low), int(high) if dash else int(low)
        if first < 1 or last < first:
            raise ValueError(f"{part.strip()!r}: folds are numbered from 1 and a range runs upwards, e.g. 1-5")
        folds.extend(range(first, last + 1))
    return list(dict.fromkeys(folds))


@dataclass(frozen=True)
class FiguresOptions(Options):
    """How ``cltr figures`` runs a spec: its dataset, repetitions, fan-out, selection and
    tuning overrides, folds, and the check against the paper."""

    dataset: str | None = option(None, "Prepared dataset to run on [default: the spec's, the embedded synthetic one].")
    reps: int | None = option(None, "Repetitions [default: the spec's].", low=1)
    n_jobs: int | None = option(
        None, "Tasks run in parallel [default: one per CPU core]; results do not depend on it.", low=1
    )
    backend: str = option(
        "loky",
        "Local processes (loky) or a dask.distributed cluster (pip install 'cltr[dask]').",
        choices=("loky", "dask"),
    )
    scheduler: str | None = option(
        None,
        "dask scheduler address, e.g. tcp://host:8786 [default: a local cluster "
        "of --n-jobs workers]. Workers must see the same --workdir.",
    )
    quick: bool = option(False, "The spec's reduced version (fewer repetitions and points).", negatable=False)
    specs: str | None = option(None, "Directory of experiment specs [default: the project's experiments/].", path="dir")
    select: str | None = option(
        None,
        "How the linear SVMs' C is chosen: per repetition, each on its own validation clicks, or "
        "pooled, the paper's way: one C per point for all repetitions, by their mean validation "
        "SNIPS Avg DCG; table and curve specs only (ccp and propensity keep theirs) [default: the "
        "spec's select, else repetition].",
        choices=SELECTIONS,
    )
    tune: str | None = option(
        None,
        "How the tree methods' learning rate and leaves (Deep PropDCG's learning rate) are chosen: "
        "per model over the whole grid (repetition), once per series by the first repetition at "
        "the spec's tune_at point and then fixed, as the paper tuned LambdaRank (once), or by the "
        "first repetition of each point for the others (point); tree counts and epochs are "
        "early-stopped per model either way; table and curve specs only [default: the spec's tune, "
        "else repetition].",
        choices=TUNINGS,
    )
    folds: tuple[int, ...] | None = option(
        None,
        "LETOR folds to run, e.g. 1-5 or 1,3: the --dataset (prepared by `cltr prepare letor`) "
        "is its own fold; every other fold K runs on DATASET-foldK, prepared like it when missing. "
        "Reports per fold and over all (fold, repetition) runs.",
        low=1,
        parse=parse_folds,
    )
    check_paper: bool = option(
        False,
        "Compare every row with the paper's value ([paper.PREFIX] of the spec) and fail when one is "
        "more than --tolerance of the paper's standard deviations away.",
        negatable=False,
        flag="--check",
    )
    tolerance: float = option(
        2.0, "--check's tolerance, in units of the paper's standard deviation.", low=0, low_open=True
    )


@dataclass(frozen=True)
class Spec:
    """One experiment: what ``cltr figures NAME`` runs (see the module docstring)."""

    name: str
    kind: str
    artifact: str = ""
    description: str = ""
    dataset: str = "synthetic"
    methods: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    reps: int = 1
    seed: int = 0
    metric: str = "avg_dcg"
    x: str | None = None
    values: tuple = ()
    plot_x: str | None = None
    series: dict = field(default_factory=dict)
    clicks: dict = field(default_factory=dict)
    options: dict = field(default_factory=dict)
    synthetic: dict = field(default_factory=dict)
    paper: dict = field(default_factory=dict)
    estimators: tuple[str, ...] = ()
    claimed_order: tuple[str, ...] = ()
    stated: tuple[dict, ...] = ()
    compare_to: tuple[str, ...] = ()
    select: str = "repetition"
    tune: str = "repetition"
    tune_at: object = None
    in_all: bool = True  # whether ``cltr figures all`` runs it (a spec of hours is run by name)
    quick: bool = False  # resolved with --quick: its outputs say so and take their own names
    raw: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def tuned_at(self):
        """The x value whose first repetition tunes a series under ``tune = "once"``:
        ``tune_at``, else the middle x value (None without an x axis)."""
        if self.tune_at is not None:
            return self.tune_at
        return self.values[len(self.values) // 2] if self.x is not None else None

    def resolved(
        self,
        *,
        dataset: str | None = None,
        reps: int | None = None,
        quick: bool = False,
        select: str | None = None,
        tune: str | None = None,
    ) -> Spec:
        """The spec for one dataset, ``--quick`` and ``--reps``.

        Order: the spec, then ``[quick]``, then the dataset's ``[datasets.PREFIX]`` (whose
        values are the dataset's own scale, e.g. Yahoo's 10 passes, so they win over
        ``[quick]``'s), then its ``[datasets.PREFIX.quick]``; ``reps``, ``select`` and ``tune``
        last.
        """
        raw = dict(self.raw)
        name = dataset or raw.get("dataset", "synthetic")
        if quick:
            raw = _merge(raw, raw.get("quick", {}))
        for prefix, overrides in raw.get("datasets", {}).items():
            if name.startswith(prefix):
                overrides = dict(overrides)
                own_quick = overrides.pop("quick", {})
                raw = _merge(raw, overrides)
                if quick:
                    raw = _merge(raw, own_quick)
        raw["dataset"] = name
        if reps is not None:
            raw["reps"] = reps
        # --select and --tune reach the kinds that select among models, those whose specs take
        # the keys (``cltr figures all`` runs ccp and propensity too, which keep their own)
        if select is not None and raw.get("kind") in figure_kinds.taking("select"):
            raw["select"] = select
        if tune is not None and raw.get("kind") in figure_kinds.taking("tune"):
            raw["tune"] = tune
        inherited = raw.get("tune_at") == self.raw.get("tune_at") and raw.get("tune") != self.raw.get("tune")
        if inherited and raw.get("tune") != "once":
            # the spec's tune_at belongs to its tune = "once": a dataset table or --tune that
            # tunes otherwise leaves it behind instead of being refused for it
            raw.pop("tune_at", None)
        spec = _spec_from_dict(raw, where=f"spec {self.name!r}")
        return replace(spec, quick=True) if quick else spec


def _merge(base: dict, overrides: dict) -> dict:
    merged = dict(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _spec_from_dict(raw: dict, *, where: str) -> Spec:
    known = {
        "name",
        "kind",
        "artifact",
        "description",
        "dataset",
        "methods",
        "references",
        "reps",
        "seed",
        "metric",
        "x",
        "values",
        "plot_x",
        "series",
        "clicks",
        "options",
        "synthetic",
        "paper",
        "datasets",
        "quick",
        "estimators",
        "claimed_order",
        "stated",
        "select",
        "compare_to",
        "tune",
        "tune_at",
        "in_all",
    }
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ValueError(f"{where}: unknown keys {unknown}; known: {sorted(known)}")
    for key in ("name", "kind"):
        if key not in raw:
            raise ValueError(f"{where}: missing the key {key!r}")
    for key in ("name", "dataset"):
        if key in raw:
            try:
                check_name(raw[key], key)
            except ValueError as error:
                raise ValueError(f"{where}: {error}") from None
    known_kinds = tuple(figure_kinds.kinds())
    if raw["kind"] not in known_kinds:
        raise ValueError(f"{where}: kind must be one of {known_kinds}, found {raw['kind']!r}")
    kind = figure_kinds.get(raw["kind"])
    outside = sorted(set(raw) - set(figure_kinds.COMMON_KEYS) - set(kind.keys))
    if outside:
        raise ValueError(
            f"{where}: {outside[0]} applies to kinds {', '.join(figure_kinds.taking(outside[0]))}, not {kind.name!r}"
        )
    references = tuple(raw.get("references", ()))
    if set(references) - set(REFERENCES):
        raise ValueError(f"{where}: references must be among {REFERENCES}, found {list(references)}")
    x = raw.get("x")
    for setting in [x, *raw.get("series", {})]:
        if setting is not None and setting not in CLICK_SETTINGS:
            raise ValueError(f"{where}: x and series must be click settings {CLICK_SETTINGS}, found {setting!r}")
    if x is not None and x in raw.get("series", {}):
        raise ValueError(f"{where}: {x!r} is both the x axis and a series; give it once")
    if x is not None and not raw.get("values"):
        raise ValueError(f"{where}: x = {x!r} needs a non-empty list of values")
    if raw.get("plot_x") not in (None, x, "train_clicks"):
        raise ValueError(f"{where}: plot_x must be the x setting ({x!r}) or 'train_clicks', found {raw['plot_x']!r}")
    known_methods = methods.methods()
    unknown = sorted(set(raw.get("methods", ())) - set(known_methods))
    if unknown:
        raise ValueError(f"{where}: unknown methods {unknown}; known: {sorted(known_methods)}")
    unknown = sorted(set(raw.get("options", {})) - set(raw.get("methods", ())) - set(references))
    if unknown:
        raise ValueError(f"{where}: [options.X] for methods the spec does not run: {unknown}")
    for method, options in raw.get("options", {}).items():
        if method in known_methods:
            known_methods[method].parse_options(options, where=f"{where}: [options.{method}]")
    passes = [
        raw.get("clicks", {}).get("passes"),
        *raw.get("series", {}).get("passes", ()),
        *(raw.get("values", ()) if x == "passes" else ()),
    ]
    bad = [p for p in passes if p not in (None, "default") and (not isinstance(p, int) or p < 1)]
    if bad:
        raise ValueError(f'{where}: passes must be positive integers (or "default"), found {bad}')
    clicks = raw.get("clicks", {})
    model = clickmodels.get(clicks.get("model", clickmodels.DEFAULT_MODEL))
    own = {f.name for f in model.settings.option_fields()}
    unknown = sorted(set(clicks) - own - set(LOG_SETTINGS))
    if unknown:
        raise ValueError(
            f"{where}: unknown settings {unknown} of click model {model.name!r}; "
            f"known: {', '.join(LOG_SETTINGS)}, {', '.join(sorted(own))}"
        )
    values_of = {
        k: [clicks[k]] if k in clicks else []
        for k in ("rankers", "top_k", "logging_temperature", "propensities", "correction", "clip")
    }
    for key, values in raw.get("series", {}).items():
        values_of.setdefault(key, []).extend(values)
    if x is not None:
        values_of.setdefault(x, []).extend(raw.get("values", ()))
    bad = [v for v in values_of.get("rankers", ()) if not isinstance(v, int) or v < 1]
    choices = propensity_choices()
    bad += [v for v in values_of.get("propensities", ()) if v not in choices]
    bad += [v for v in values_of.get("clip", ()) if not _is_clip(v)]
    bad += [v for v in values_of.get("correction", ()) if v not in corrections.CORRECTIONS]
    bad += [v for v in values_of.get("top_k", ()) if isinstance(v, bool) or not isinstance(v, int) or v < 0]
    bad += [
        v
        for v in values_of.get("logging_temperature", ())
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < float("inf")
    ]
    if bad:
        raise ValueError(
            f"{where}: rankers must be positive integers, propensities one of {choices}, "
            f'clip "auto", "none" or a number in (0, 1], correction one of '
            f"{tuple(corrections.CORRECTIONS)}, top_k a non-negative integer, logging_temperature a "
            f"number >= 0; found {bad}"
        )
    if kind.validate is not None:
        kind.validate(raw, where)
    varied = {k for k in [x, *raw.get("series", {})] if k in own}
    model.parse_settings({k: v for k, v in clicks.items() if k in own and k not in varied}, where=f"{where}: [clicks]")
    reps = raw.get("reps", 1)
    if not isinstance(reps, int) or reps < 1:
        raise ValueError(f"{where}: reps must be a positive integer, found {reps!r}")
    if raw.get("metric", "avg_dcg") not in METRICS:
        raise ValueError(f"{where}: metric must be one of {METRICS}, found {raw.get('metric')!r}")
    unknown = sorted(set(raw.get("claimed_order", ())) - set(raw.get("methods", ())))
    if unknown:
        raise ValueError(f"{where}: claimed_order names methods the spec does not run: {unknown}")
    unknown = sorted(set(raw.get("compare_to", ())) - set(raw.get("methods", ())))
    if unknown:
        raise ValueError(f"{where}: compare_to names methods the spec does not run: {unknown}")
    select = raw.get("select", "repetition")
    if select not in SELECTIONS:
        raise ValueError(f"{where}: select must be one of {SELECTIONS}, found {select!r}")
    if select == "pooled":
        # pooling averages each C's validation SNIPS estimate over repetitions; a method
        # told to select by another criterion would be pooled by SNIPS without a word
        other = sorted(
            m
            for m in raw.get("methods", ())
            if poolable(m, raw.get("options", {}).get(m, {}))
            and getattr(known_methods[m].parse_options(raw.get("options", {}).get(m, {})), "criterion", "snips")
            != "snips"
        )
        if other:
            raise ValueError(
                f'{where}: select = "pooled" pools C by the validation SNIPS estimate; {other} '
                f'select by another criterion: set select = "repetition" (--select repetition)'
            )
    tune = raw.get("tune", "repetition")
    if tune not in TUNINGS:
        raise ValueError(f"{where}: tune must be one of {TUNINGS}, found {tune!r}")
    tune_at = raw.get("tune_at")
    if tune_at is not None and tune != "once":
        raise ValueError(f'{where}: tune_at applies to tune = "once", not {tune!r}')
    if tune_at is not None and (x is None or tune_at not in raw.get("values", ())):
        raise ValueError(
            f"{where}: tune_at must be one of the x values {list(raw.get('values', ()))}, found {tune_at!r}"
        )
    if not isinstance(raw.get("in_all", True), bool):
        raise ValueError(f"{where}: in_all must be true or false, found {raw['in_all']!r}")
    stated = raw.get("stated", [])
    if not isinstance(stated, list):
        raise ValueError(f"{where}: stated must be an array of tables ([[stated]]), found {stated!r}")
    for i, entry in enumerate(stated):
        what = f"{where}: [[stated]] entry {i + 1}"
        if (
            not isinstance(entry, dict)
            or not {"text", "dataset", "measure", "value"} <= set(entry)
            or set(entry) - {"text", "dataset", "measure", "value", "point"}
        ):
            raise ValueError(
                f"{what} needs the keys text, dataset, measure, value (and optionally point), "
                f"found {sorted(entry) if isinstance(entry, dict) else entry!r}"
            )
        if entry["measure"] not in STATED_MEASURES:
            raise ValueError(f"{what}: measure must be one of {STATED_MEASURES}, found {entry['measure']!r}")
        value = entry["value"]
        numbers = value if isinstance(value, list) else [value]
        if not 1 <= len(numbers) <= 2 or not all(isinstance(v, (int, float)) for v in numbers):
            raise ValueError(f"{what}: value must be a number or [low, high], found {value!r}")
    return Spec(
        name=raw["name"],
        kind=raw["kind"],
        artifact=raw.get("artifact", ""),
        description=raw.get("description", ""),
        dataset=raw.get("dataset", "synthetic"),
        methods=tuple(raw.get("methods", ())),
        references=references,
        reps=reps,
        seed=int(raw.get("seed", 0)),
        metric=raw.get("metric", "avg_dcg"),
        x=x,
        values=tuple(raw.get("values", ())),
        plot_x=raw.get("plot_x"),
        series=dict(raw.get("series", {})),
        clicks=dict(raw.get("clicks", {})),
        options=dict(raw.get("options", {})),
        synthetic=dict(raw.get("synthetic", {})),
        paper=dict(raw.get("paper", {})),
        estimators=tuple(raw.get("estimators", ())),
        claimed_order=tuple(raw.get("claimed_order", ())),
        stated=tuple(raw.get("stated", ())),
        select=select,
        compare_to=tuple(raw.get("compare_to", ())),
        tune=tune,
        tune_at=tune_at,
        in_all=raw.get("in_all", True),
        raw=raw,
    )


def spec_names(directory: Path = SPEC_DIR) -> list[str]:
    """Every spec in ``directory`` (the ``name`` of each ``*.toml``), smoke last."""
    names = sorted(p.stem for p in Path(directory).glob("*.toml"))
    return [n for n in names if n != "smoke"] + (["smoke"] if "smoke" in names else [])


def load_spec(name_or_path: str | Path, directory: Path = SPEC_DIR) -> Spec:
    """A spec by name (``experiments/NAME.toml``) or by path."""
    path = Path(name_or_path)
    if path.suffix != ".toml":
        path = Path(directory) / f"{name_or_path}.toml"
    if not path.exists():
        raise ValueError(
            f"no experiment spec {str(name_or_path)!r}: {path} does not exist; "
            f"known: {', '.join(spec_names(directory)) or 'none'}"
        )
    try:
        raw = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{path}: not valid TOML: {error}") from None
    spec = _spec_from_dict(raw, where=str(path))
    if spec.name != path.stem:
        raise ValueError(f"{path}: name = {spec.name!r} must match the file name {path.stem!r}")
    return spec


# -- tasks ---------------------------------------------------------------------------------


def repetition_seed(experiment_seed: int, repetition: int) -> int:
    """The seed of every draw of repetition ``repetition`` (independent of points and jobs)."""
    return int(np.random.SeedSequence([experiment_seed, repetition]).generate_state(1)[0])


@dataclass(frozen=True)
class Task:
    """One point of one spec in one repetition: everything ``run_task`` needs, JSON-able."""

    experiment: str
    kind: str
    dataset: str
    point: dict  # the varied settings of this point, e.g. {"passes": 20}
    clicks: dict  # every click setting, with the point applied
    methods: tuple
    references: tuple
    options: dict
    repetition: int
    seed: int
    select: str = "repetition"  # "pooled": poolable methods give a row per C candidate

    def config(self, fingerprint: str) -> dict:
        """What determines the task's rows (not its experiment's name: identical tasks of
        two specs are computed once)."""
        # select enters only when pooled, so that per-repetition tasks keep their keys
        # "ndcg": rows stored before it meant the relevant-queries average by "ndcg@10"
        return {
            "dataset": fingerprint,
            "kind": self.kind,
            "clicks": self.clicks,
            "methods": list(self.methods),
            "references": list(self.references),
            "options": self.options,
            "resolved": self.resolved_options(),
            "seed": self.seed,
            "ndcg": "all-and-relevant-queries",
            **({"select": self.select} if self.select != "repetition" else {}),
        }

    def resolved_options(self) -> dict:
        """Each method's options as it will train with them, defaults filled in, as a key: a
        changed default of a method changes the tasks that train it (the spec's ``options``
        name only what it sets, so a task keyed by them alone kept its rows of the old default)."""
        known = methods.methods()
        return {
            name: config_key(known[name].parse_options(self.options.get(name, {})).to_dict())
            for name in (*self.methods, *self.references)
            if name in known
        }


def plan(spec: Spec, *, default_passes: int) -> list[Task]:
    """The tasks of a resolved spec, in a fixed order: repetition, series, x value.

    ``default_passes`` stands for passes = "default" (the dataset's: 100 LETOR, 10 Yahoo).
    """
    model = clickmodels.get(spec.clicks.get("model", clickmodels.DEFAULT_MODEL))
    base = {"model": model.name, **model.settings().to_dict(), "passes": "default", **spec.clicks}
    # the log settings enter a task's config only where the spec sets them, so that specs
    # without them keep their tasks' keys
    extra = figure_kinds.get(spec.kind).clicks
    if extra is not None:
        base.update(extra(spec))
    series_keys = list(spec.series)
    series_points = list(itertools.product(*(spec.series[k] for k in series_keys))) or [()]
    x_values = list(spec.values) if spec.x is not None else [None]
    # Clicks are simulated once per repetition at the largest pass count of the spec, and
    # each point takes their first passes, so that points are nested and paired.
    tasks = []
    for repetition in range(spec.reps):
        seed = repetition_seed(spec.seed, repetition)
        for combination in series_points:
            for value in x_values:
                point = dict(zip(series_keys, combination, strict=True))
                if spec.x is not None:
                    point[spec.x] = value
                clicks = {**base, **point}
                if clicks["passes"] in (None, "default"):
                    clicks["passes"] = default_passes
                clicks["passes"] = int(clicks["passes"])
                tasks.append(
                    Task(
                        spec.name,
                        spec.kind,
                        spec.dataset,
                        point,
                        clicks,
                        spec.methods,
                        spec.references,
                        spec.options,
                        repetition,
                        seed,
                        spec.select,
                    )
                )
    most = max(task.clicks["passes"] for task in tasks)
    return [
        Task(
            t.experiment,
            t.kind,
            t.dataset,
            t.point,
            {**t.clicks, "simulated_passes": most},
            t.methods,
            t.references,
            t.options,
            t.repetition,
            t.seed,
            t.select,
        )
        for t in tasks
    ]


def dataset_record(workspace: Workspace, name: str) -> dict:
    """The JSON record ``cltr prepare`` wrote beside a prepared dataset (its fingerprint,
    convention ``relevant_from`` and ``dcg_base``, ``meta``)."""
    return workspace.dataset_record(name)


def task_key(task: Task, fingerprint: str) -> str:
    return config_key(task.config(fingerprint))


def task_steps(task: Task) -> int:
    """The steps of a task that progress counts: the production ranker(s), the click log,
    then each method trained and evaluated, or what its kind counts (``FigureKind.steps``)."""
    steps = figure_kinds.get(task.kind).steps
    if steps is not None:
        return steps(task)
    return 2 + len(task.methods) + ("skyline" in task.references)


def run_task(root: str | Path, task: Task, step: Callable[[], None] | None = None) -> tuple[list[dict], bool]:
    """Compute (or find) one task's rows; returns (rows, reused). Runs with one BLAS thread.
    ``step()`` is called as each of its ``task_steps`` is done, when it is computed."""
    from threadpoolctl import threadpool_limits

    workspace = Workspace(root)
    fingerprint = dataset_record(workspace, task.dataset)["fingerprint"]

    def compute():
        with threadpool_limits(1):  # only where computed: a reused task's limits cost 2 ms for nothing
            dataset, _ = workspace.load_dataset(task.dataset)
            return {}, {"rows": _task_rows(workspace, dataset, fingerprint, task, step or (lambda: None))}

    artifact, reused = workspace.cached(task.dataset, "tasks", task.config(fingerprint), compute)
    base = {
        "experiment": task.experiment,
        "dataset": task.dataset,
        "repetition": task.repetition,
        "seed": task.seed,
        **{f"point_{k}": v for k, v in task.point.items()},
    }
    return [{**base, **row} for row in artifact.info["rows"]], reused


def _task_rows(
    workspace: Workspace, dataset: Dataset, fingerprint: str, task: Task, step: Callable[[], None]
) -> list[dict]:
    name, seed, clicks_config = task.dataset, task.seed, task.clicks
    production, _ = production_stage(workspace, name, dataset, fingerprint, seed=seed)
    rankers = int(clicks_config.get("rankers", 1))
    productions = logging_rankers(workspace, name, dataset, fingerprint, production, rankers)
    step()
    model = clickmodels.get(clicks_config["model"])
    # eta_model is applied when the log is read, so that its points share one simulation
    settings = {f.name: clicks_config[f.name] for f in model.settings.option_fields() if f.name != "eta_model"}
    simulated = clicks_config["simulated_passes"]
    clicks, _ = clicks_stage(
        workspace,
        name,
        dataset,
        productions if rankers > 1 else production,
        settings,
        model=model.name,
        passes=simulated,
        seed=seed,
        top_k=clicks_config.get("top_k"),
        logging_temperature=clicks_config.get("logging_temperature"),
    )
    step()
    context = TaskContext(workspace, dataset, fingerprint, task, production, clicks, step)
    return figure_kinds.get(task.kind).task_rows(context)


@dataclass(frozen=True)
class TaskContext:
    """What a figure kind's ``task_rows`` is given: one task, its dataset, and what every
    kind shares, already computed: the production ranker and the click log (simulated at
    the task's ``clicks["simulated_passes"]``). ``step()`` is to be called as each further
    step of ``task_steps`` is done."""

    workspace: Workspace
    dataset: Dataset
    fingerprint: str
    task: Task
    production: Artifact
    clicks: Artifact
    step: Callable[[], None]


def method_rows(context: TaskContext, *, expand: Callable[[dict, Artifact], list[dict]] | None = None) -> list[dict]:
    """A task's methods (and its references: the production ranker, the skyline) trained on
    its click log and evaluated: one row per method (``METHOD_COLUMNS``), or the rows
    ``expand(row, trained model artifact)`` makes of it; under pooled selection one row per
    candidate C. The ``task_rows`` of the kinds that compare methods."""
    workspace, dataset, task, production, clicks, step = (
        context.workspace,
        context.dataset,
        context.task,
        context.production,
        context.clicks,
        context.step,
    )
    name, seed, clicks_config = task.dataset, task.seed, task.clicks
    simulated = clicks_config["simulated_passes"]
    passes, eta_model = clicks_config["passes"], clicks_config.get("eta_model")
    passes = None if passes == simulated else passes
    told = clicks_config.get("propensities", "logged")
    propensity = None
    if told != "logged":
        propensity, _ = propensity_stage(workspace, name, dataset, clicks, method=told, seed=seed)
        eta_model = None  # the estimate replaces every logged propensity
    # "auto" (the default): TAU chosen on validation where the weights' effective sample size is small
    clip, correction = parse_clip(clicks_config.get("clip", "auto")), clicks_config.get("correction")
    # the clicks as logged: a correction may turn them into other examples (affine: displayed documents)
    train_log, _ = click_logs(clicks, passes=passes)
    relevant = dataset.train.relevant(dataset.relevant_from)
    common = {
        "train_clicks": len(train_log),
        "irrelevant_click_share": float(np.mean(~relevant[train_log.doc])) if len(train_log) else float("nan"),
    }
    rows = []
    if "production" in task.references:
        test = production_test_metrics(production, dataset)
        rows.append({"method": "production", **common, **{m: test[m] for m in METRICS}})
    methods_ = list(task.methods) + (["skyline"] if "skyline" in task.references else [])
    fix = corrections.get(correction or corrections.DEFAULT_CORRECTION)
    for method in methods_:
        if method != "skyline" and corrections.refusal(fix, method) is not None:
            step()  # a series over corrections leaves out the methods a correction does not apply to
            continue
        options = dict(task.options.get(method, {}))
        # the skyline sees labels, not clicks: one per repetition, shared by every point
        subset: dict[str, Any] = (
            {}
            if method == "skyline"
            else {
                "passes": passes,
                "eta_model": eta_model,
                "propensity": propensity,
                "clip": clip,
                "correction": correction,
            }
        )
        candidates = poolable(method, options) if task.select == "pooled" else []
        if candidates:
            # pooled selection: one row per C, each a model trained at that fixed C (its own
            # cached artifact); pool_selection keeps one C per point after every repetition ran
            for C in candidates:
                trained, _ = model_stage(
                    workspace, name, dataset, clicks, method, {**options, "C": C}, seed=seed, **subset
                )
                evaluation, _ = evaluation_stage(workspace, name, dataset, trained, clicks, seed=seed)
                rows.append({**_method_row(method, common, trained, evaluation), "candidate_C": C})
            step()
            continue
        trained, _ = model_stage(workspace, name, dataset, clicks, method, options, seed=seed, **subset)
        evaluation, _ = evaluation_stage(workspace, name, dataset, trained, clicks, seed=seed)
        row = _method_row(method, common, trained, evaluation)
        rows.extend(expand(row, trained) if expand is not None else [row])
        step()
    return rows  # no timings: they live in the artifacts' manifests, the rows are deterministic


def _method_row(method: str, common: dict, trained, evaluation) -> dict:
    return {
        "method": method,
        **common,
        **{m: evaluation.info[m] for m in METRICS},
        "validation_snips_avg_dcg": evaluation.info["validation_snips_avg_dcg"],
        "chosen": json.dumps(trained.info.get("chosen", {}), sort_keys=True),
    }


def _is_clip(value) -> bool:
    """Whether a spec's clip value is "auto", "none" or a number in (0, 1]."""
    try:
        parse_clip(value)
    except ValueError:
        return False
    return value is not None


def poolable(method: str, options: dict) -> list[float]:
    """The C grid that pooled selection searches for ``method`` (ascending), or [] where it
    does not apply: methods without a linear SVM's C, the skyline (it selects on validation
    labels, not clicks), and a C fixed in the options. LambdaRank's, Tree and Deep
    PropDCG's grids stay per repetition: a model per candidate and repetition costs too much."""
    from cltr.methods.linear import LinearSVMOptions, c_candidates

    found = methods.get(method)
    if not issubclass(found.options, LinearSVMOptions) or found.selects_on != "clicks":
        return []
    parsed = found.parse_options(options)
    assert isinstance(parsed, LinearSVMOptions)  # its options type is one (checked above)
    return [] if parsed.C is not None else [c["C"] for c in c_candidates(parsed)]


def pool_selection(frame: pd.DataFrame) -> pd.DataFrame:
    """Keep, per (dataset, point, method), the rows of the C candidate with the best mean
    validation SNIPS Avg DCG over repetitions (the paper's selection, Sec. 5.2).

    Rows with a ``candidate_C`` are candidates (``select = "pooled"``); others pass
    through. Ties go to the smallest C (the most regularised), as in per-repetition
    selection. The kept rows record the choice in ``chosen`` and the pooled estimate in
    ``pooled_validation_snips_avg_dcg``; ``candidate_C`` is dropped. Row order is kept.
    """
    if "candidate_C" not in frame.columns:
        return frame
    is_candidate = frame["candidate_C"].notna()
    keys = ["dataset", *sorted(c for c in frame.columns if c.startswith("point_")), "method"]
    candidates = frame[is_candidate]
    means = (
        candidates.groupby([*keys, "candidate_C"], sort=True, dropna=False)["validation_snips_avg_dcg"]
        .mean()
        .rename("pooled_validation_snips_avg_dcg")
        .reset_index()
    )
    # sorted by C ascending within each group: idxmax's first maximum is the smallest C
    best = means.loc[means.groupby(keys, sort=False, dropna=False)["pooled_validation_snips_avg_dcg"].idxmax()]
    kept = candidates.reset_index().merge(best, on=[*keys, "candidate_C"], how="inner").set_index("index")
    kept["chosen"] = [json.dumps({"C": float(C), "selection": "pooled"}, sort_keys=True) for C in kept["candidate_C"]]
    result = pd.concat([frame[~is_candidate], kept]).sort_index().drop(columns="candidate_C")
    return result.reset_index(drop=True)


# -- fan-out -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExperimentProgress:
    """Where ``run_experiment`` stands: tasks finished, and steps done (``task_steps``; those
    of running tasks too, so that progress moves while a task runs)."""

    tasks_done: int
    tasks: int
    steps_done: int
    steps: int


def run_experiment(
    spec: Spec,
    root: str | Path,
    *,
    n_jobs: int = 1,
    backend: str = "loky",
    scheduler: str | None = None,
    progress: Callable[[ExperimentProgress], None] | None = None,
    on_task_done: Callable[[Task, bool], None] | None = None,
) -> tuple[pd.DataFrame, dict]:
    """Run every task of a resolved spec; return (rows in plan order, counts).

    Parameters
    ----------
    spec : Spec
        Resolved (``Spec.resolved``); its dataset must be prepared in the workspace.
    root : path
        The workspace root.
    n_jobs : int
        Parallel tasks (processes for loky, worker processes of a local cluster for dask).
    backend : {"loky", "dask"}
        joblib backend; "dask" connects to ``scheduler`` (``tcp://host:8786``) or starts a
        local cluster.
    progress : callable (ExperimentProgress), optional
        Called once with the finished tasks found, then as each step or task finishes.
        Steps of running tasks are reported in-process and from loky workers, not from
        dask workers (their tasks count as they finish).
    on_task_done : callable (task, reused), optional
        Called in this process as each task finishes (in completion order).

    Returns
    -------
    rows : DataFrame
        One row per (task, method), ordered as the plan, so independent of completion order.
    counts : dict
        ``tasks``, ``computed`` and ``reused``.
    """
    workspace = Workspace(root)
    record = dataset_record(workspace, spec.dataset)
    fingerprint = record["fingerprint"]
    tasks = plan(spec, default_passes=default_passes(record["name"], record.get("meta", {})))
    if backend not in ("loky", "dask"):
        raise ValueError(f"backend must be 'loky' or 'dask', found {backend!r}")
    tuning = tuning_tasks(spec, tasks)
    # a tuning task is one of the tasks (its rows are its point's): it counts once
    total = _Totals(len(tasks), sum(task_steps(task) for task in tasks))
    counts = {"tasks": len(tasks), "reused": 0, "computed": 0}
    run = dict(
        root=root,
        fingerprint=fingerprint,
        n_jobs=n_jobs,
        backend=backend,
        scheduler=scheduler,
        progress=progress,
        total=total,
    )
    known = {}
    if tuning:
        chosen = dict(zip(tuning, _run_tasks(list(tuning.values()), **run), strict=True))
        tasks = tuned(spec, tasks, chosen)
        # a tuning task's own rows are its point's: its models searched the grid whose choice
        # the others take (the paper's tuned run), so they are not trained again fixed
        for index, task in enumerate(tasks):
            if _is_tuning(spec, tuning, task):
                known[index] = chosen[_tuned_by(spec, task)]
    results = _run_tasks(tasks, counts=counts, on_task_done=on_task_done, known=known, **run)
    frame = pool_selection(pd.DataFrame([row for rows in results for row in rows]))
    return frame[_column_order(frame.columns, spec.kind)], counts


def run_together(
    specs: list[Spec],
    root: str | Path,
    *,
    n_jobs: int = 1,
    backend: str = "loky",
    scheduler: str | None = None,
    progress: Callable[[ExperimentProgress], None] | None = None,
) -> dict:
    """Compute the tasks of several resolved specs in two waves, for ``cltr figures all``.

    Run one spec after another, every spec ends with its slowest tasks running while other
    workers wait, and a spec that tunes once waits for its few tuning tasks before it starts
    the rest: on two workers one of them idles at each of those joins. Here the first wave
    holds every spec's tuning tasks (first: they are the longest and the second wave waits
    for them) and every task of the specs that tune nothing; the second wave the tasks that
    take a tuning task's choices. A task two specs share runs once. The tasks, their keys and
    so their rows are ``run_experiment``'s, which then finds every one of them finished.

    Returns
    -------
    dict
        ``tasks``, ``computed`` and ``reused``, over the distinct tasks.
    """
    workspace = Workspace(root)
    first: dict[str, Task] = {}
    untuned: dict[str, Task] = {}
    later = []
    for spec in specs:
        record = dataset_record(workspace, spec.dataset)
        fingerprint = record["fingerprint"]
        tasks = plan(spec, default_passes=default_passes(record["name"], record.get("meta", {})))
        tuning = tuning_tasks(spec, tasks)
        for task in tuning.values():
            first.setdefault(task_key(task, fingerprint), task)
        if tuning:
            later.append((spec, tasks, tuning, fingerprint))
        else:
            untuned.update((task_key(task, fingerprint), task) for task in tasks)
    first.update((key, task) for key, task in untuned.items() if key not in first)
    waves = [first]
    counts = {"tasks": 0, "reused": 0, "computed": 0}
    total = _Totals(len(first), sum(task_steps(task) for task in first.values()))

    def run(wave: dict[str, Task]) -> None:
        _run_tasks(
            list(wave.values()),
            root=root,
            fingerprint=None,
            n_jobs=n_jobs,
            backend=backend,
            scheduler=scheduler,
            progress=progress,
            total=total,
            counts=counts,
        )

    run(first)
    second: dict[str, Task] = {}
    for spec, tasks, tuning, fingerprint in later:
        chosen = {by: run_task(root, task)[0] for by, task in tuning.items()}  # finished: read
        for task in tuned(spec, tasks, chosen):
            if not _is_tuning(spec, tuning, task):  # its rows are the tuning task's
                key = task_key(task, fingerprint)
                if key not in first:
                    second.setdefault(key, task)
    waves.append(second)
    total.tasks += len(second)
    total.steps += sum(task_steps(task) for task in second.values())
    run(second)
    counts["tasks"] = sum(len(wave) for wave in waves)
    return counts


@dataclass
class _Totals:
    """The progress of a whole run, over its phases (tuning, then every task)."""

    tasks: int
    steps: int
    tasks_done: int = 0
    steps_done: int = 0


def _run_tasks(
    tasks: list[Task],
    *,
    root,
    fingerprint: str | None,
    n_jobs: int,
    backend: str,
    scheduler: str | None,
    progress,
    total: _Totals,
    counts: dict | None = None,
    known: dict[int, list[dict]] | None = None,
    on_task_done: Callable[[Task, bool], None] | None = None,
) -> list[list[dict]]:
    """The rows of every task of ``tasks``, in their order: ``known`` ones (by index) as
    given, finished ones read, the others fanned out. ``fingerprint``: of the tasks' one
    dataset (None: each task's own, read from the workspace)."""
    workspace = Workspace(root)
    results: dict[int, list[dict]] = dict(known or {})
    pending = []
    for index, task in enumerate(tasks):
        if index in results:
            continue
        found = fingerprint or dataset_record(workspace, task.dataset)["fingerprint"]
        if workspace.has(task.dataset, "tasks", task_key(task, found)):
            results[index] = run_task(root, task)[0]  # reads the finished task's rows
        else:
            pending.append(index)
    steps = [task_steps(task) for task in tasks]
    read = [index for index in results if index not in (known or {})]
    if counts is not None:
        counts["reused"] += len(results)
    total.tasks_done += len(read)
    total.steps_done += sum(steps[index] for index in read)
    running = dict.fromkeys(pending, 0)  # steps done by each unfinished task
    lock = threading.Lock()  # steps arrive on a relay thread, tasks on this one

    def tell() -> None:
        if progress is not None:
            progress(ExperimentProgress(total.tasks_done, total.tasks, total.steps_done, total.steps))

    def on_step(index: int) -> None:
        with lock:
            # a task's last step is counted when its rows arrive
            if index in running and running[index] < steps[index] - 1:
                running[index] += 1
                total.steps_done += 1
                tell()

    tell()
    for index, (rows, reused) in _fan_out(
        root, [tasks[i] for i in pending], pending, n_jobs=n_jobs, backend=backend, scheduler=scheduler, on_step=on_step
    ):
        with lock:
            results[index] = rows
            total.steps_done += steps[index] - running.pop(index)
            total.tasks_done += 1
            if counts is not None:
                counts["reused" if reused else "computed"] += 1
            if on_task_done is not None:
                on_task_done(tasks[index], reused)
            tell()
    return [results[index] for index in range(len(tasks))]


def _tuned_by(spec: Spec, task: Task) -> tuple:
    """The tasks that take one tuning task's choices share this: their series values, and
    with ``tune = "point"`` their x value."""
    series = tuple(task.point[key] for key in spec.series)
    return (*series, task.point[spec.x]) if spec.tune == "point" and spec.x is not None else series


def _is_tuning(spec: Spec, tuning: dict[tuple, Task], task: Task) -> bool:
    """Whether ``task`` is (at the point and repetition of) the tuning task whose choice it takes."""
    tuner = tuning[_tuned_by(spec, task)]
    return (tuner.repetition, tuner.point) == (task.repetition, task.point)


def tuning_tasks(spec: Spec, tasks: list[Task]) -> dict[tuple, Task]:
    """The tasks whose choices the others take (``_tuned_by``): with ``tune = "once"`` the
    first repetition at x = ``tune_at`` (the middle x value unless given) of each series,
    with ``tune = "point"`` the first repetition of each point. Empty for ``tune =
    "repetition"`` or where no method of the spec lists ``tuned_once`` settings."""
    if spec.tune == "repetition" or not any(methods.get(m).tuned_once for m in spec.methods):
        return {}
    return {
        _tuned_by(spec, task): task
        for task in tasks
        if task.repetition == 0 and (spec.x is None or spec.tune == "point" or task.point[spec.x] == spec.tuned_at)
    }


def tuned(spec: Spec, tasks: list[Task], rows: dict[tuple, list[dict]]) -> list[Task]:
    """``tasks`` with each method's ``tuned_once`` options fixed at what their tuning task
    chose (``rows``: the tuning tasks' rows, keyed as ``tuning_tasks``). An option the spec
    fixes itself is kept; a method without a row there (a correction it does not take) is
    left to choose per model."""
    fixed = {}
    for series, found in rows.items():
        options = {method: dict(values) for method, values in spec.options.items()}
        for row in found:
            method = methods.get(row["method"]) if row["method"] in spec.methods else None
            if method is None or not method.tuned_once:
                continue
            chosen = json.loads(row["chosen"])
            parsed = method.parse_options(options.get(method.name, {}))
            fixed_here = {
                name: chosen[name] for name in method.tuned_once if getattr(parsed, name) is None and name in chosen
            }
            if fixed_here:
                options[method.name] = {**options.get(method.name, {}), **fixed_here}
        fixed[series] = options
    return [replace(task, options=fixed[_tuned_by(spec, task)]) for task in tasks]


# the columns of method_rows' rows after "method", in the CSV's order
METHOD_COLUMNS = (
    "train_clicks",
    "irrelevant_click_share",
    *METRICS,
    "validation_snips_avg_dcg",
    "pooled_validation_snips_avg_dcg",
    "chosen",
)
_LEADING = ("experiment", "dataset", "repetition", "seed")


def _column_order(columns, kind: str) -> list[str]:
    """A fixed column order (rows read back from JSON manifests come with sorted keys): the
    task's, its point's, then the method and its kind's columns (``FigureKind.columns``)."""
    points = sorted(c for c in columns if c.startswith("point_"))
    after = ("method", *figure_kinds.get(kind).columns)
    known = [c for c in _LEADING if c in columns] + points + [c for c in after if c in columns]
    return known + sorted(set(columns) - set(known))


def _indexed_task(root, index, task, steps=None):
    """Run one task in a worker; its steps go to the ``steps`` queue as its index."""
    return index, run_task(root, task, None if steps is None else (lambda: steps.put(index)))


def _relay(steps, on_step: Callable[[int], None]) -> None:
    try:
        for index in iter(steps.get, None):
            on_step(index)
    except (EOFError, OSError):
        # the manager is gone (the run is being interrupted): nothing more will come, and a
        # ConnectionResetError traceback from this thread would only hide the one-line message
        return


def _exit_with(parent: int) -> None:
    """Run in the step queue's manager process: exit once ``parent`` is gone, so that a run
    killed with SIGKILL leaves no process behind (loky's workers exit by themselves).

    The manager ignores Ctrl-C, which the terminal sends to the whole process group: the
    parent handles it and shuts the manager down (a manager killed by it first made the relay
    die with a ConnectionResetError traceback)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch():
        while os.getppid() == parent:
            time.sleep(1)
        os._exit(0)

    threading.Thread(target=watch, name="cltr-exit-with-parent", daemon=True).start()


@contextlib.contextmanager
def _children_ignore_interrupts():
    """Processes started inside ignore SIGINT (an ignored signal stays ignored across exec,
    and Python then installs no KeyboardInterrupt handler): Ctrl-C reaches the whole process
    group, and workers still importing printed a KeyboardInterrupt traceback each. This
    process handles it, and joblib then stops the workers. Only in the main thread, where
    signal handlers live; a Ctrl-C during the start itself (milliseconds) is ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _fan_out(
    root,
    tasks: list[Task],
    indices: list[int],
    *,
    n_jobs: int,
    backend: str,
    scheduler: str | None,
    on_step: Callable[[int], None],
) -> Iterable[tuple[int, tuple[list[dict], bool]]]:
    if not tasks:
        return
    if n_jobs == 1 and backend == "loky":
        for index, task in zip(indices, tasks, strict=True):
            yield index, run_task(root, task, partial(on_step, index))
        return
    from joblib import Parallel, delayed, parallel_config

    if backend == "loky":
        # the workers put their steps on a queue of a manager process; a thread here relays them
        from multiprocessing.managers import SyncManager

        manager = SyncManager()
        manager.start(_exit_with, (os.getpid(),))
        with manager:
            steps = manager.Queue()
            relay = threading.Thread(target=_relay, args=(steps, on_step), name="cltr-steps", daemon=True)
            relay.start()
            calls = (
                delayed(_indexed_task)(str(root), index, task, steps)
                for index, task in zip(indices, tasks, strict=True)
            )
            try:
                with parallel_config(backend="loky", n_jobs=n_jobs, inner_max_num_threads=1):
                    with _children_ignore_interrupts():  # the workers are started here
                        results = Parallel(return_as="generator_unordered")(calls)
                    yield from results
            finally:
                try:
                    steps.put(None)
                except (EOFError, OSError):
                    pass  # the manager is gone already; so is what the relay waited for
                relay.join(timeout=5)
        return
    calls = (delayed(_indexed_task)(str(root), index, task) for index, task in zip(indices, tasks, strict=True))
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise ValueError("the dask backend needs dask.distributed: pip install 'cltr[dask]'") from None
    cluster = None
    if scheduler is None:
        cluster = LocalCluster(n_workers=n_jobs, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(scheduler or cluster)
    try:
        with parallel_config(backend="dask", n_jobs=n_jobs):
            yield from Parallel(return_as="generator_unordered")(calls)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
