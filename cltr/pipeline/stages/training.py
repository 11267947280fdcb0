"""Models and their evaluation: training a method on a click log, evaluating a model on the test
queries, the production ranker's test metrics. Part of ``cltr.pipeline.stages``."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable

import numpy as np

from cltr import methods
from cltr.core.clicks import (
    effective_sample_size,
)
from cltr.core.queries import Dataset
from cltr.core.ranking import evaluate, validation_estimate
from cltr.core.seeds import stream
from cltr.core.selection import CLIP_GRID, ESS_FRACTION, ess_fraction, parse_clip
from cltr.distributed import engine_key
from cltr.methods import TrainingData
from cltr.options import Options, option
from cltr.pipeline import corrections
from cltr.pipeline.models import scorer_from_arrays, scorer_to_arrays
from cltr.pipeline.stages.clicks import CLICKED_ONLY, click_logs, clicked_only, displayed_rows
from cltr.pipeline.stages.propensities import check_estimate, validation_tau
from cltr.pipeline.workspace import Artifact, Workspace


@dataclasses.dataclass(frozen=True)
class EvaluateOptions(Options):
    """What ``cltr evaluate`` evaluates besides a trained model."""

    production: bool = option(
        False, "Evaluate the production ranker (the last produced) instead of a trained model.", negatable=False
    )
    run_file: str | None = option(
        None,
        "Evaluate an outside model instead: a TREC run (qid Q0 docid rank score run, docids as "
        "`cltr score --trec` writes them) or one score per line in the split's document order (as "
        "`cltr score --out` writes), ranked by score with cltr's tie-breaks.",
        path="file",
        flag="--run",
    )
    split: str | None = option(None, "The split --run scores [default: test].", choices=("test", "vali", "train"))


@dataclasses.dataclass(frozen=True)
class ScoreOptions(Options):
    """How ``cltr score`` names its TREC run."""

    run_name: str = option("cltr", "The run name of the TREC file.")


def _clip_text(text: str) -> str:
    parse_clip(text)  # raises ValueError naming the valid forms
    return text


def _correction_help(applicable) -> str:
    return "How the clicks are weighted, in training and in the SNIPS selection: " + "; ".join(
        f"{c.name}: {c.summary}" for c in applicable
    )


@dataclasses.dataclass(frozen=True)
class TrainOptions(Options):
    """How ``cltr train`` tells a method the clicks: the propensities it divides by, their
    clipping and the correction of the logged clicks (``model_stage``'s ``propensity``,
    ``clip`` and ``correction``). ``for_method`` narrows the corrections to those that
    apply to one method."""

    propensities: str | None = option(
        None,
        "Propensities to divide by (training and the SNIPS selection): the log's own, the current estimate "
        "of this log (`cltr propensities estimate`), or a propensities artifact's key [default: the log's "
        "own where it has them, else estimated].",
        metavar="logged|estimated|KEY",
    )
    clip: str = option(
        "auto",
        "Raise the training propensities below TAU to TAU (Joachims et al. 2017); the SNIPS selection "
        "reads the validation clicks unclipped, so every TAU is judged alike. auto: no clipping where the "
        f"weights' effective sample size is at least {ESS_FRACTION:.0%} of the clicks, else TAU chosen on "
        f"validation over none, {', '.join(f'{t:g}' for t in CLIP_GRID)}.",
        parse=_clip_text,
        metavar="auto|none|TAU",
    )
    correction: str = option(
        corrections.DEFAULT_CORRECTION,
        lambda: _correction_help(corrections.corrections().values()),
        choices=corrections.corrections,
    )

    @classmethod
    def for_method(cls, method: str) -> type[TrainOptions]:
        """The options of ``cltr train METHOD``: ``correction`` offers the corrections that
        apply to ``method``."""
        applicable = [c for c in corrections.corrections().values() if corrections.refusal(c, method) is None]
        return cls.narrowed(
            f"TrainOptions[{method}]",
            correction={"choices": tuple(c.name for c in applicable), "help": _correction_help(applicable)},
        )


def model_stage(
    workspace: Workspace,
    name: str,
    dataset: Dataset,
    clicks: Artifact,
    method: str,
    options: dict | Options | None,
    *,
    seed: int = 0,
    passes: int | None = None,
    eta_model: float | None = None,
    propensity: Artifact | None = None,
    clip: str | float | None = "auto",
    correction: str | None = None,
    progress: Callable | None = None,
) -> tuple[Artifact, bool]:
    """``method`` trained on the clicks as ``click_logs`` presents them (a prefix of
    passes, other propensities, a correction); ``progress`` receives the method's
    progress dicts.

    ``clip``: "auto" (TAU chosen on validation where the training weights' effective
    sample size is small), None ("none") or a TAU, for the training log only
    (``methods.train``); the chosen TAU is in the model's info (``clip``), the config keeps
    the setting as given (``train_clip``; "clip" keys were of models selected on clipped
    validation clicks, which are not reused)."""
    options = methods.get(method).parse_options(options)
    if propensity is not None:
        check_estimate(propensity, workspace=workspace, name=name, dataset=dataset)
    clip = parse_clip(clip) if methods.get(method).weighted else None  # clipping changes nothing it reads
    fix = corrections.get(correction or corrections.DEFAULT_CORRECTION)
    refused = corrections.refusal(fix, method)
    if refused is not None:
        raise ValueError(refused)
    # only what differs from the whole log as logged enters the key
    correction = None if fix.name == corrections.DEFAULT_CORRECTION else fix.name
    subset = {
        k: v
        for k, v in {
            "passes": passes,
            "eta_model": eta_model,
            "train_clip": clip,
            "correction": correction,
            "propensities": None if propensity is None else propensity.key,
        }.items()
        if v is not None
    }
    # the clicks as told, before any correction or clipping: what TAU_v and the clip search read
    plain, plain_vali = click_logs(clicks, passes=passes, eta_model=eta_model, propensity=propensity)
    if isinstance(clip, float) and correction is None and len(plain) and clip <= float(np.min(plain.propensity)):
        # a TAU at or below every training click's propensity changes no weight the plain IPS
        # learner reads (the weighted methods read the clicks alone): the unclipped model
        clip = None
        del subset["train_clip"]
    tau_v = validation_tau(plain_vali)
    if tau_v is not None:  # a hard log's validation clicks are clipped (selection.validation_clip)
        subset["validation_clip"] = tau_v
    if clip == "auto" and plain.weight is None and ess_fraction(plain.cost) < ESS_FRACTION:
        # TAU will be searched: by the one-standard-error rule (methods._select_clip)
        subset["clip_rule"] = "one-standard-error"
    recorded = engine_key(options.to_dict())  # where the solver ran: only a backend or chunks that change bits
    if recorded.get("criterion") == "snips":  # the default: the keys of models stored before the option stay
        del recorded["criterion"]
    config = {"clicks": clicks.key, "method": method, "options": recorded, "seed": seed, **subset}
    only = [split for split in ("train", "vali") if clicked_only(clicks, split)]
    if only:
        logging.getLogger(__name__).warning(
            f"the {' and '.join(only)} log{'s' if len(only) > 1 else ''} of click log {clicks.key}: {CLICKED_ONLY}"
        )

    def compute():
        told = {"passes": passes, "eta_model": eta_model, "propensity": propensity}
        train_log, vali_log = click_logs(clicks, **told, correction=correction, dataset=dataset, validation_clip=tau_v)

        def rows(split):
            return displayed_rows(clicks, split, dataset, **told)

        def train_log_at(tau):  # a correction that clips its own way is applied again
            return click_logs(clicks, **told, clip=tau, correction=correction, dataset=dataset)[0]

        # the guard compares the model with production on the validation clicks unclipped
        # (TrainingData: the clipped estimate leans to the logging ranker's order); without a
        # correction that is plain_vali, and a correction's training split is not redone for it
        guard_log = None
        if tau_v is not None:
            guard_log = (
                plain_vali
                if correction is None
                else click_logs(clicks, **told, correction=correction, dataset=dataset)[1]
            )
        data = TrainingData(
            dataset,
            train_log,
            vali_log,
            seed,
            rows=rows,
            train_log_at=train_log_at if "clip" in fix.context else None,
            guard_log=guard_log,
        )
        scorer, info = methods.train(method, data, options, progress=progress, clip=clip)
        if train_log.weight is None:
            info["train_clicks"] = len(train_log)
        else:  # the correction's examples are not the clicks (affine: displayed documents)
            info["train_clicks"] = len(plain)
            info["train_examples"] = len(train_log)
        trained = train_log if info["clip"] is None else data.clipped(info["clip"]).train_log
        info["effective_sample_size"] = effective_sample_size(trained.cost)
        info["validation_clip"] = tau_v
        return scorer_to_arrays(scorer), info

    return workspace.cached(name, "models", config, compute)


def evaluation_stage(
    workspace: Workspace, name: str, dataset: Dataset, model: Artifact, clicks: Artifact, *, seed: int = 0
) -> tuple[Artifact, bool]:
    """Test Avg DCG, Avg Rank, nDCG@10 (both averages) of a model, and its SNIPS Avg DCG on
    validation clicks, in the dataset's convention."""
    # "ndcg": evaluations stored before it meant the relevant-queries average by "ndcg@10"
    config = {"model": model.key, "seed": seed, "ndcg": "all-and-relevant-queries"}

    def compute():
        scorer = scorer_from_arrays(model.arrays)
        info = evaluate(
            scorer,
            dataset.test,
            dataset.test.relevant(dataset.relevant_from),
            rng=stream(seed, "evaluate"),
            dcg_base=dataset.dcg_base,
        )
        propensity = None
        if model.config.get("propensities") is not None:
            propensity = workspace.load(name, "propensities", model.config["propensities"])
        # the validation log as the model's selection saw it, whatever the model was trained with
        _, vali_log = click_logs(
            clicks,
            passes=model.config.get("passes"),
            eta_model=model.config.get("eta_model"),
            propensity=propensity,
            correction=model.config.get("correction"),
            dataset=dataset,
            validation_clip=model.info.get("validation_clip"),
        )
        info["validation_snips_avg_dcg"] = validation_estimate(
            scorer, dataset.vali, vali_log, rng=stream(seed, "selection"), dcg_base=dataset.dcg_base
        )
        info["method"] = model.config["method"]
        return {}, info

    return workspace.cached(name, "evaluations", config, compute)


def production_test_metrics(production: Artifact, dataset: Dataset) -> dict:
    """The production ranker's test metrics (``evaluate``'s keys) in the dataset's convention.

    A production artifact stored before both nDCG@10 averages were recorded held the
    relevant-queries average under "ndcg@10": its metrics are computed again from its
    weights (one scoring of the test split) rather than read with the wrong meaning."""
    test = production.info["test"]
    if "ndcg@10_relevant_queries" in test:
        return test
    return evaluate(
        scorer_from_arrays(production.arrays),
        dataset.test,
        dataset.test.relevant(dataset.relevant_from),
        rng=stream(production.config["seed"], "evaluate"),
        dcg_base=dataset.dcg_base,
    )
