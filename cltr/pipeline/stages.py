"""The pipeline's stages as cached workspace artifacts.

``cltr produce / simulate / train / evaluate`` and every task of ``cltr figures`` go
through these functions: one code path, one cache. An artifact is found again whenever
its config is the same (for example every spec of ``cltr figures`` that trains a method
with the same options on the same clicks). Each stage's config holds the keys of the
artifacts it was computed from, and each returns ``(artifact, reused)``.

Seeds: every random draw comes from ``stream(seed, purpose...)`` (``cltr.core.seeds``).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from cltr import clickmodels, methods
from cltr.core.clicks import ClickLog, position_propensity
from cltr.core.queries import Dataset, Queries
from cltr.core.ranking import evaluate, rank_documents, validation_estimate
from cltr.core.scorers import LinearScorer
from cltr.core.seeds import stream
from cltr.core.svm import solver_info, train_ranking_svm
from cltr.methods import TrainingData
from cltr.options import Options
from cltr.pipeline.models import scorer_from_arrays, scorer_to_arrays
from cltr.pipeline.workspace import Artifact, Workspace

__all__ = ["production_queries", "produce", "production_stage", "simulate", "clicks_stage", "click_logs",
           "click_log_summary", "model_stage", "evaluation_stage"]


# -- the production ranker ---------------------------------------------------------------

def production_queries(queries: Queries, relevant: np.ndarray, *, fraction: float,
                       rng: np.random.Generator) -> np.ndarray:
    """A random ``fraction`` of the queries (at least one, and at least one with a relevant document).

    Returns the chosen query indices, sorted.
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must lie in (0, 1], found {fraction}")
    sizes = np.diff(queries.offsets)
    has_relevant = np.bincount(queries.doc_query, weights=relevant, minlength=len(sizes)) > 0
    if not has_relevant.any():
        raise ValueError("no training query has a relevant document; cannot train a ranker")
    order = rng.permutation(queries.n_queries)
    count = max(1, int(round(fraction * queries.n_queries)))
    chosen = order[:count]
    if not has_relevant[chosen].any():
        # Swap in the first query with a relevant document in the same random order.
        chosen = np.concatenate([chosen[:-1], order[has_relevant[order]][:1]])
    return np.sort(chosen)


def produce(dataset: Dataset, *, fraction: float = 0.01, C: float = 1.0, seed: int = 0,
            tol: float = 1e-3) -> tuple[LinearScorer, dict]:
    """The production ranker: a Ranking SVM on a seeded ``fraction`` of the training queries."""
    train = dataset.train
    relevant = train.relevant(dataset.relevant_from)
    chosen = production_queries(train, relevant, fraction=fraction, rng=stream(seed, "production"))
    sample = train.subset(chosen)
    result = train_ranking_svm(sample, sample.relevant(dataset.relevant_from), C=C, tol=tol)
    info = {"queries": chosen.tolist(), "n_queries": len(chosen),
            "n_relevant": int(sample.relevant(dataset.relevant_from).sum()), **solver_info(result)}
    return LinearScorer(result.w), info


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


# -- clicks ------------------------------------------------------------------------------

def simulate(queries: Queries, relevant: np.ndarray, production, model: str, settings: Options, *, passes: int,
             rng_presentation: np.random.Generator, rng_clicks: np.random.Generator,
             progress: Callable[[int], None] | None = None) -> ClickLog:
    """Clicks of click model ``model`` on one split presented in the production ranker's order."""
    rank = rank_documents(production.scores(queries.X), queries.offsets, rng_presentation)
    return clickmodels.get(model).simulate(rank, relevant, queries.offsets, settings, passes=passes,
                                           rng=rng_clicks, progress=progress)


def click_log_summary(log: ClickLog, relevant: np.ndarray) -> dict:
    """What ``cltr simulate`` prints about a log."""
    n = len(log)
    return {
        "sessions": log.n_sessions,
        "clicks": n,
        "irrelevant_click_share": float(np.mean(~relevant[log.doc])) if n else float("nan"),
        "clicks_per_query": n / log.n_sessions,
        "mean_propensity": float(log.propensity.mean()) if n else float("nan"),
        "min_propensity": float(log.propensity.min()) if n else float("nan"),
    }


def clicks_stage(workspace: Workspace, name: str, dataset: Dataset, production: Artifact, settings: Options, *,
                 model: str = clickmodels.DEFAULT_MODEL, passes: int, seed: int = 0,
                 progress: Callable[[str, int, int], None] | None = None) -> tuple[Artifact, bool]:
    """Clicks on the train and vali splits presented in the production ranker's order.

    ``settings`` are the click model's (validated here); ``progress(split, passes_done,
    passes)`` is called as passes complete.
    """
    click_model = clickmodels.get(model)
    settings = click_model.parse_settings(settings)
    config = {"production": production.key, "click_model": model, **settings.to_dict(), "passes": passes,
              "seed": seed}
    scorer = scorer_from_arrays(production.arrays)

    def compute():
        arrays, info = {}, {}
        for split in ("train", "vali"):
            queries = getattr(dataset, split)
            relevant = queries.relevant(dataset.relevant_from)
            report = None if progress is None else (lambda done, split=split: progress(split, done, passes))
            log = simulate(queries, relevant, scorer, model, settings, passes=passes,
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


# -- models and their evaluation ----------------------------------------------------------

def model_stage(workspace: Workspace, name: str, dataset: Dataset, clicks: Artifact, method: str,
                options: dict | Options | None, *, seed: int = 0, passes: int | None = None,
                eta_model: float | None = None, progress: Callable | None = None) -> tuple[Artifact, bool]:
    """``method`` trained on the clicks (optionally their first ``passes`` passes, or told
    with ``eta_model`` propensities); ``progress`` receives the method's progress dicts."""
    options = methods.get(method).parse_options(options)
    # only what differs from the whole log enters the key
    subset = {k: v for k, v in {"passes": passes, "eta_model": eta_model}.items() if v is not None}
    config = {"clicks": clicks.key, "method": method, "options": options.to_dict(), "seed": seed, **subset}

    def compute():
        train_log, vali_log = click_logs(clicks, passes=passes, eta_model=eta_model)
        scorer, info = methods.train(method, TrainingData(dataset, train_log, vali_log, seed), options,
                                     progress=progress)
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
