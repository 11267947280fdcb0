"""The pipeline's stages as cached workspace artifacts.

``cltr produce / simulate / train / evaluate`` and every task of ``cltr figures`` go
through these functions: one code path, one cache. An artifact is found again whenever
its config is the same (for example every spec of ``cltr figures`` that trains a method
with the same options on the same clicks); the CLI's and the specs' configs differ in
seeds and in how options are spelled, so they rarely meet. Each stage's config holds the
keys of the artifacts it was computed from, and each returns ``(artifact, reused)``.
"""

from __future__ import annotations

from typing import Callable

from cltr.clicks import ClickLog, position_propensity
from cltr.datasets import Dataset
from cltr.methods import TrainingData, train
from cltr.models import scorer_from_arrays, scorer_to_arrays
from cltr.pipeline import ClickSettings, click_log_summary, evaluate, produce, simulate, stream, validation_estimate
from cltr.workspace import Artifact, Workspace

__all__ = ["production_stage", "clicks_stage", "click_logs", "model_stage", "evaluation_stage"]


def production_stage(workspace: Workspace, name: str, dataset: Dataset, fingerprint: str, *,
                     fraction: float = 0.01, C: float = 1.0, seed: int = 0) -> tuple[Artifact, bool]:
    """The production ranker (Ranking SVM on ``fraction`` of the training queries) and its test metrics."""
    config = {"dataset": fingerprint, "fraction": fraction, "C": C, "seed": seed}

    def compute():
        scorer, info = produce(dataset, fraction=fraction, C=C, seed=seed)
        info["test"] = evaluate(scorer, dataset.test, dataset.test.relevant(dataset.relevant_from),
                                rng=stream(seed, "evaluate"))
        return scorer_to_arrays(scorer), info

    return workspace.cached(name, "production", config, compute)


def clicks_stage(workspace: Workspace, name: str, dataset: Dataset, production: Artifact,
                 settings: ClickSettings, *, seed: int = 0,
                 progress: Callable[[str, int, int], None] | None = None) -> tuple[Artifact, bool]:
    """Clicks on the train and vali splits presented in the production ranker's order.

    ``progress(split, passes_done, passes)`` is called as passes complete.
    """
    config = {"production": production.key, **settings.__dict__, "seed": seed}
    scorer = scorer_from_arrays(production.arrays)

    def compute():
        arrays, info = {}, {}
        for split in ("train", "vali"):
            queries = getattr(dataset, split)
            relevant = queries.relevant(dataset.relevant_from)
            report = None if progress is None else (lambda done, split=split: progress(split, done, settings.passes))
            log = simulate(queries, relevant, scorer, settings,
                           rng_presentation=stream(seed, "presentation", split),
                           rng_clicks=stream(seed, "clicks", split), progress=report)
            arrays.update({f"{split}/{k}": v for k, v in log.arrays().items()})
            info[split] = click_log_summary(log, relevant)
        return arrays, info

    return workspace.cached(name, "clicks", config, compute)


def click_logs(clicks: Artifact, *, passes: int | None = None,
               eta_model: float | None = None) -> tuple[ClickLog, ClickLog]:
    """The train and vali logs of a clicks artifact: their first ``passes`` passes (nested
    subsets, for learning curves) and, for misspecification, propensities of ``eta_model``."""
    logs = []
    for split in ("train", "vali"):
        prefix = f"{split}/"
        log = ClickLog.from_arrays({k[len(prefix):]: v for k, v in clicks.arrays.items() if k.startswith(prefix)})
        if passes is not None and passes != log.n_passes:
            log = log.first_passes(passes)
        if eta_model is not None:
            log = log.with_propensity(position_propensity(log.rank, eta_model))
        logs.append(log)
    return logs[0], logs[1]


def _log_config(passes, eta_model) -> dict:
    """Only what differs from the whole log, so plain `cltr train` keys stay as they were."""
    return {k: v for k, v in {"passes": passes, "eta_model": eta_model}.items() if v is not None}


def model_stage(workspace: Workspace, name: str, dataset: Dataset, clicks: Artifact, method: str,
                options: dict, *, seed: int = 0, passes: int | None = None, eta_model: float | None = None,
                progress: Callable | None = None) -> tuple[Artifact, bool]:
    """``method`` trained on the clicks (optionally their first ``passes`` passes, or told
    with ``eta_model`` propensities); ``progress`` receives each selection row."""
    config = {"clicks": clicks.key, "method": method, "options": options, "seed": seed,
              **_log_config(passes, eta_model)}

    def compute():
        train_log, vali_log = click_logs(clicks, passes=passes, eta_model=eta_model)
        scorer, info = train(method, TrainingData(dataset, train_log, vali_log, seed), options, progress=progress)
        info["train_clicks"] = len(train_log)
        return scorer_to_arrays(scorer), info

    return workspace.cached(name, "models", config, compute)


def evaluation_stage(workspace: Workspace, name: str, dataset: Dataset, model: Artifact, clicks: Artifact, *,
                     seed: int = 0) -> tuple[Artifact, bool]:
    """Test Avg DCG, Avg Rank, nDCG@10 of a model, and its SNIPS Avg DCG on validation clicks."""
    config = {"model": model.key, "seed": seed}

    def compute():
        scorer = scorer_from_arrays(model.arrays)
        info = evaluate(scorer, dataset.test, dataset.test.relevant(dataset.relevant_from),
                        rng=stream(seed, "evaluate"))
        _, vali_log = click_logs(clicks, passes=model.config.get("passes"), eta_model=model.config.get("eta_model"))
        info["validation_snips_avg_dcg"] = validation_estimate(scorer, dataset.vali, vali_log,
                                                               rng=stream(seed, "selection"))
        info["method"] = model.config["method"]
        return {}, info

    return workspace.cached(name, "evaluations", config, compute)
