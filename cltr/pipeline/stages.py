"""The pipeline's stages as cached workspace artifacts.

``cltr produce / simulate / train / evaluate`` and every task of ``cltr figures`` go
through these functions: one code path, one cache. An artifact is found again whenever
its config is the same (for example every spec of ``cltr figures`` that trains a method
with the same options on the same clicks). Each stage's config holds the keys of the
artifacts it was computed from, and each returns ``(artifact, reused)``.

Seeds: every random draw comes from ``stream(seed, purpose...)`` (``cltr.core.seeds``).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from cltr import clickmodels, estimators, methods
from cltr.core.clicks import (
    ClickLog,
    Displayed,
    Impressions,
    effective_sample_size,
    position_propensity,
    presented_impressions,
)
from cltr.core.policy import displayed, plackett_luce_ranks, policy_propensity
from cltr.core.queries import Dataset, Queries
from cltr.core.ranking import evaluate, rank_documents, validation_estimate
from cltr.core.scorers import LinearScorer
from cltr.core.seeds import stream
from cltr.core.selection import ESS_FRACTION, ess_fraction, parse_clip, validation_clip
from cltr.core.svm import solver_info, train_ranking_svm
from cltr.data.clicklog import (
    AggregatedRows,
    LoggedRows,
    file_format,
    read_click_log,
    read_click_log_aggregated,
    simulated_rows,
)
from cltr.distributed import engine_key
from cltr.estimators import DEFAULT_MAX_RANK
from cltr.methods import TrainingData
from cltr.options import Options, option
from cltr.pipeline import corrections
from cltr.pipeline.models import scorer_from_arrays, scorer_to_arrays
from cltr.pipeline.workspace import Artifact, Workspace, file_sha256

__all__ = ["ProductionOptions", "SimulationOptions", "ImportOptions", "ExportOptions", "EstimateOptions",
           "EvaluateOptions", "ScoreOptions",
           "production_queries", "produce", "production_stage", "logging_rankers", "simulate", "clicks_stage",
           "click_logs", "policy_propensities",
           "click_log_summary", "simulated_logs", "impressions_of", "displayed_rows", "import_stage",
           "imported_clicks_stage", "export_rows", "aggregated_rows", "imported_rows",
           "propensity_stage", "estimate_propensities", "check_estimate", "as_told", "estimate_to_arrays",
           "estimate_from_arrays", "model_stage", "evaluation_stage", "production_test_metrics"]


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


def produce(dataset: Dataset, *, fraction: float = 0.01, C: float = 1.0, seed: int = 0, ranker: int = 0,
            tol: float = 1e-3) -> tuple[LinearScorer, dict]:
    """The production ranker: a Ranking SVM on a seeded ``fraction`` of the training queries.

    ``ranker`` k > 0 draws its own sample (``--rankers K``: K logging rankers)."""
    train = dataset.train
    relevant = train.relevant(dataset.relevant_from)
    rng = stream(seed, "production") if ranker == 0 else stream(seed, "production", ranker)
    chosen = production_queries(train, relevant, fraction=fraction, rng=rng)
    sample = train.subset(chosen)
    result = train_ranking_svm(sample, sample.relevant(dataset.relevant_from), C=C, tol=tol)
    info = {"queries": chosen.tolist(), "n_queries": len(chosen),
            "n_relevant": int(sample.relevant(dataset.relevant_from).sum()), **solver_info(result)}
    return LinearScorer(result.w), info


@dataclasses.dataclass(frozen=True)
class ProductionOptions(Options):
    """Settings of the production ranker (``cltr produce``, ``Session.produce``)."""

    fraction: float = option(0.01, "Share of training queries with labels the production ranker sees.",
                             low=0, high=1, low_open=True)
    C: float = option(1.0, "Regularisation constant of the production Ranking SVM.", low=0, low_open=True,
                      flag="-C")


def production_stage(workspace: Workspace, name: str, dataset: Dataset, fingerprint: str, *,
                     fraction: float = 0.01, C: float = 1.0, seed: int = 0, ranker: int = 0) -> tuple[Artifact, bool]:
    """The production ranker (Ranking SVM on ``fraction`` of the training queries) and its test metrics."""
    config = {"dataset": fingerprint, "fraction": fraction, "C": C, "seed": seed,
              **({"ranker": ranker} if ranker else {})}

    def compute():
        scorer, info = produce(dataset, fraction=fraction, C=C, seed=seed, ranker=ranker)
        info["test"] = evaluate(scorer, dataset.test, dataset.test.relevant(dataset.relevant_from),
                                rng=stream(seed, "evaluate"), dcg_base=dataset.dcg_base)
        return scorer_to_arrays(scorer), info

    return workspace.cached(name, "production", config, compute)


def logging_rankers(workspace: Workspace, name: str, dataset: Dataset, fingerprint: str, production: Artifact,
                    rankers: int) -> list[Artifact]:
    """``production`` and ``rankers - 1`` more logging rankers made by its recipe (fraction,
    C, seed), each on its own sample of queries (``produce``'s ``ranker``)."""
    recipe = {k: production.config[k] for k in ("fraction", "C", "seed")}
    return [production] + [production_stage(workspace, name, dataset, fingerprint, ranker=k, **recipe)[0]
                           for k in range(1, rankers)]


# -- clicks ------------------------------------------------------------------------------

def simulate(queries: Queries, relevant: np.ndarray, productions: Sequence, model: str, settings: Options, *,
             passes: int, seed: int, split: str, top_k: int | None = None, logging_temperature: float | None = None,
             intervention: str | None = None, intervention_depth: int = 10,
             progress: Callable[[int], None] | None = None) -> tuple[ClickLog, np.ndarray, np.ndarray]:
    """Clicks of click model ``model`` on one split presented by the logging rankers.

    With K rankers, pass p is shown by ranker p mod K (each ranker's sessions tagged with
    it); ranker k > 0 draws its tie-breaks and clicks from its own streams, so K = 1 is
    the single-ranker simulation exactly.

    Presentation (``cltr.core.policy``): with ``top_k`` only each ranking's first ``top_k``
    documents are displayed and the click model sees only those (documents below cannot
    be clicked); with ``logging_temperature`` T every pass shows a fresh Plackett-Luce
    ranking of each query drawn from softmax(scores / T) of its ranker, instead of the
    ranker's deterministic ranking. Neither (the default) is the paper's presentation.
    With ``intervention`` (``cltr.core.interventions.intervene``: ``swap-k`` or
    ``randomize-top-k`` over ranks 1..``intervention_depth``) every pass shows its own
    intervened copy of the ranker's deterministic ranking, drawn from the stream
    ``intervention``; the log's ranks are the displayed ones, and each pass counts as a
    ranking of its own, as with a logging temperature.

    Returns
    -------
    log : ClickLog
        In pass order.
    presented_rank : ndarray of int32, shape (K, n_docs), or (passes, n_docs) with a logging temperature
        The presented ranks (of every document, displayed or not): one row per ranker, or
        per pass when every pass draws its own rankings.
    pass_ranker : ndarray of int, shape (passes,)
        The row of ``presented_rank`` that pass p shows: its ranker p mod K (int8), or p
        itself (int32) with a logging temperature, so that each sampled ranking counts as
        a logging ranker of its own for the impressions and intervention harvesting.
    """
    click_model = clickmodels.get(model)
    n_rankers = len(productions)
    pass_ranker = (np.arange(passes) % n_rankers).astype(np.int8)
    presented, parts = [], []
    done = [0] * n_rankers
    for k, production in enumerate(productions):
        suffix = () if k == 0 else (k,)
        own = int(np.sum(pass_ranker == k))

        def report(count, k=k):
            done[k] = count
            if progress is not None:
                progress(sum(done))

        if logging_temperature and intervention:
            raise ValueError("an intervention permutes the deterministic ranking; it cannot be combined with a "
                             "logging temperature")
        if logging_temperature or intervention:
            log, ranks = _simulate_sampled(click_model, production.scores(queries.X), relevant, queries.offsets,
                                           settings, top_k=top_k, temperature=logging_temperature, passes=own,
                                           presentation=stream(seed, "presentation", split, *suffix),
                                           rng=stream(seed, "clicks", split, *suffix), progress=report,
                                           intervention=intervention, intervention_depth=intervention_depth,
                                           intervention_rng=stream(seed, "intervention", split, *suffix))
            presented.append(ranks)
        else:
            rank = rank_documents(production.scores(queries.X), queries.offsets,
                                  stream(seed, "presentation", split, *suffix))
            presented.append(rank[None])
            log = _simulate_displayed(click_model, rank, relevant, queries.offsets, settings, top_k=top_k,
                                      passes=own, rng=stream(seed, "clicks", split, *suffix), progress=report)
        parts.append(log if n_rankers == 1 else log._replace(slice(None), pass_index=log.pass_index * n_rankers + k))
    if n_rankers == 1:
        log = parts[0]
    else:
        pass_index = np.concatenate([part.pass_index for part in parts])
        order = np.argsort(pass_index, kind="stable")
        merged = {name: np.concatenate([getattr(part, name) for part in parts])[order]
                  for name in ("query", "doc", "rank", "propensity", "pass_index")}
        log = ClickLog(**merged, n_passes=passes, n_queries=queries.n_queries)
    if logging_temperature or intervention:
        # ranker k's own pass i is global pass i * K + k
        rows = np.empty((passes, len(relevant)), dtype=np.int32)
        for k, ranks in enumerate(presented):
            rows[k::n_rankers] = ranks
        return log, rows, np.arange(passes, dtype=np.int32)
    return log, np.concatenate(presented).astype(np.int32), pass_ranker


def _simulate_displayed(click_model, rank, relevant, offsets, settings, *, top_k, passes, rng, progress) -> ClickLog:
    """The click model's sessions on the documents a top-``top_k`` display shows (all without it)."""
    if top_k is None:
        return click_model.simulate(rank, relevant, offsets, settings, passes=passes, rng=rng, progress=progress)
    shown, shown_offsets = displayed(rank, offsets, top_k)
    log = click_model.simulate(rank[shown], relevant[shown], shown_offsets, settings, passes=passes, rng=rng,
                               progress=progress)
    return log._replace(slice(None), doc=shown[log.doc])


def _simulate_sampled(click_model, scores, relevant, offsets, settings, *, top_k, temperature, passes, presentation,
                      rng, progress, intervention=None, intervention_depth=10,
                      intervention_rng=None) -> tuple[ClickLog, np.ndarray]:
    """Sessions on a fresh Plackett-Luce ranking per pass, or a fresh intervention on the
    deterministic ranking; returns the log and the ranks, (passes, n_docs)."""
    ranks = np.empty((passes, len(scores)), dtype=np.int32)
    parts = []
    if intervention:
        from cltr.core.interventions import intervene

        deterministic = rank_documents(scores, offsets, presentation)
    for p in range(passes):
        if intervention:
            rank = intervene(deterministic, offsets, kind=intervention, depth=intervention_depth, rng=intervention_rng)
        else:
            rank = plackett_luce_ranks(scores, offsets, temperature=temperature, rng=presentation)[0]
        ranks[p] = rank
        log = _simulate_displayed(click_model, rank, relevant, offsets, settings, top_k=top_k, passes=1, rng=rng,
                                  progress=None)
        parts.append(log._replace(slice(None), pass_index=log.pass_index + p))
        if progress is not None:
            progress(p + 1)
    merged = {name: np.concatenate([getattr(part, name) for part in parts])
              for name in ("query", "doc", "rank", "propensity", "pass_index")}
    return ClickLog(**merged, n_passes=passes, n_queries=len(offsets) - 1), ranks


def policy_propensities(queries: Queries, productions: list, model: str, settings: Options, presented_rank: np.ndarray,
                        *, passes: int, top_k: int | None, logging_temperature: float | None, seed: int, split: str,
                        samples: int = 1000) -> np.ndarray | None:
    """The policy-aware propensity of every document of a split (``cltr.core.policy``):
    its examination probability averaged over the logging policy's displayed rankings, the
    rankers mixed in proportion to their passes; None where the click model's examination
    is not a function of the rank alone.

    Deterministic rankings give it exactly (the examination of the document's rank, 0
    below ``top_k``); Plackett-Luce policies by Monte Carlo over ``samples`` rankings per
    ranker, drawn from their own stream.
    """
    click_model = clickmodels.get(model)
    if click_model.propensity is None:
        return None
    longest = int(np.diff(queries.offsets).max(initial=0))
    ranks = np.arange(1, longest + 1)
    examination = np.concatenate([[0.0], np.where(ranks <= (top_k or longest), click_model.propensity(ranks, settings),
                                                  0.0)])
    n_rankers = len(productions)
    share = np.bincount(np.arange(passes) % n_rankers, minlength=n_rankers) / passes
    total = np.zeros(int(queries.offsets[-1]))
    for k, production in enumerate(productions):
        if share[k] == 0:
            continue
        if logging_temperature:
            suffix = () if k == 0 else (k,)
            rho = policy_propensity(production.scores(queries.X), queries.offsets, examination,
                                    temperature=logging_temperature, rng=stream(seed, "policy", split, *suffix),
                                    samples=samples)
        else:
            rho = examination[presented_rank[k]]
        total += share[k] * rho
    return total


def simulated_logs(dataset: Dataset, production, *, passes: int, seed: int = 0, model: str = clickmodels.DEFAULT_MODEL,
                   settings: Options | dict | None = None, top_k: int | None = None,
                   logging_temperature: float | None = None) -> dict[str, ClickLog]:
    """The train and vali click logs ``clicks_stage`` would store, without a workspace
    (benchmarks, the Python API)."""
    settings = clickmodels.get(model).parse_settings(settings or {})
    top_k, logging_temperature = _presentation(top_k, logging_temperature)
    productions = production if isinstance(production, (list, tuple)) else [production]
    return {split: simulate(getattr(dataset, split), getattr(dataset, split).relevant(dataset.relevant_from),
                            productions, model, settings, passes=passes, seed=seed, split=split, top_k=top_k,
                            logging_temperature=logging_temperature)[0]
            for split in ("train", "vali")}


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


@dataclasses.dataclass(frozen=True)
class SimulationOptions(Options):
    """Settings of a click simulation besides the click model's own (``cltr simulate``,
    ``Session.simulate``)."""

    click_model: str = option(clickmodels.DEFAULT_MODEL, "The click model.", choices=clickmodels.models)
    passes: int | None = option(None, "Sessions per query [default: 10 for Yahoo, 100 otherwise].", low=1)
    rankers: int = option(1, "Logging rankers: the production ranker and K-1 more, each trained on its own 1% "
                             "sample; pass p is shown by ranker p mod K and its sessions are tagged with it "
                             "(what intervention harvesting needs).", low=1)
    top_k: int = option(0, "Display only the first K results of each ranking: documents below cannot be clicked "
                           "(0: the full list).", low=0)
    logging_temperature: float = option(
        0.0, "Show a fresh Plackett-Luce ranking each pass, drawn from softmax(production scores / T) "
             "(0: the deterministic ranking). With --top-k or a temperature the log also stores the "
             "policy-aware propensities (--correction policy-aware).", low=0)
    intervention: str | None = option(
        None, "Log a randomized intervention on the deterministic ranking, drawn afresh every session: "
              "swap-k trades rank 1 with a rank k drawn uniformly from 1..DEPTH (Joachims et al., "
              "WSDM 2017); randomize-top-k shuffles ranks 1..DEPTH. The log's ranks are the displayed "
              "ones; `cltr propensities estimate --method swap` reads them.", choices=("swap-k", "randomize-top-k"))
    intervention_depth: int = option(10, "DEPTH: the ranks an --intervention reaches.", low=2)


def clicks_stage(workspace: Workspace, name: str, dataset: Dataset, production, settings: Options | dict, *,
                 model: str = clickmodels.DEFAULT_MODEL, passes: int, seed: int = 0, top_k: int | None = None,
                 logging_temperature: float | None = None, intervention: str | None = None,
                 intervention_depth: int = 10,
                 progress: Callable[[str, int, int], None] | None = None) -> tuple[Artifact, bool]:
    """Clicks on the train and vali splits presented by the production ranker(s).

    ``production`` is one artifact or a list (K logging rankers); ``settings`` are the
    click model's (validated here); ``top_k`` and ``logging_temperature`` the presentation
    (``simulate``; 0 or None: the full list, the deterministic ranking); ``progress(split,
    passes_done, passes)`` is called as passes complete. With a presentation setting the
    artifact also stores ``{split}/policy_propensity`` (``policy_propensities``) where the
    click model's examination depends on the rank alone. ``intervention`` (``simulate``) logs
    a swap or top-K randomization experiment, recorded in the artifact's config and info
    (no policy propensities then: the displayed ranks carry the examination).
    """
    productions = production if isinstance(production, (list, tuple)) else [production]
    click_model = clickmodels.get(model)
    settings = click_model.parse_settings(settings)
    top_k, logging_temperature = _presentation(top_k, logging_temperature)
    keys = [p.key for p in productions]
    # presentation settings enter the key only when set, so that earlier logs keep theirs
    config = {"production": keys[0] if len(keys) == 1 else keys, "click_model": model, **settings.to_dict(),
              "passes": passes, "seed": seed, **({"top_k": top_k} if top_k else {}),
              **({"logging_temperature": logging_temperature} if logging_temperature else {}),
              **({"intervention": intervention, "intervention_depth": int(intervention_depth)} if intervention else {})}
    scorers = [scorer_from_arrays(p.arrays) for p in productions]

    def compute():
        arrays, info = {}, {}
        for split in ("train", "vali"):
            queries = getattr(dataset, split)
            relevant = queries.relevant(dataset.relevant_from)
            report = None if progress is None else (lambda done, split=split: progress(split, done, passes))
            log, presented_rank, pass_ranker = simulate(queries, relevant, scorers, model, settings, passes=passes,
                                                        seed=seed, split=split, top_k=top_k,
                                                        logging_temperature=logging_temperature,
                                                        intervention=intervention,
                                                        intervention_depth=intervention_depth, progress=report)
            arrays.update({f"{split}/{k}": v for k, v in log.arrays().items()})
            arrays[f"{split}/presented_rank"] = presented_rank
            arrays[f"{split}/pass_ranker"] = pass_ranker
            info[split] = click_log_summary(log, relevant)
            if (top_k or logging_temperature) and not intervention:
                rho = policy_propensities(queries, scorers, model, settings, presented_rank, passes=passes, top_k=top_k,
                                          logging_temperature=logging_temperature, seed=seed, split=split)
                if rho is not None:
                    arrays[f"{split}/policy_propensity"] = rho
        info["rankers"] = len(productions)
        if intervention:
            info["intervention"] = {"kind": intervention, "depth": int(intervention_depth)}
        return arrays, info

    return workspace.cached(name, "clicks", config, compute)


def _presentation(top_k, logging_temperature) -> tuple[int | None, float | None]:
    """Validated presentation settings; 0 (or None) means the full list, the deterministic ranking."""
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 0):
        raise ValueError(f"top_k must be a non-negative integer (0: the full list), found {top_k!r}")
    if logging_temperature is not None and (isinstance(logging_temperature, bool)
                                            or not isinstance(logging_temperature, (int, float))
                                            or not 0 <= logging_temperature < float("inf")):
        raise ValueError(f"logging_temperature must be a finite number >= 0 (0: the deterministic ranking), "
                         f"found {logging_temperature!r}")
    return (int(top_k) if top_k else None), (float(logging_temperature) if logging_temperature else None)


def click_logs(clicks: Artifact, *, passes: int | None = None, eta_model: float | None = None,
               propensity: Artifact | None = None, clip: float | None = None,
               correction: str | None = None, dataset: Dataset | None = None,
               validation_clip: float | None = None) -> tuple[ClickLog, ClickLog]:
    """The train and vali logs of a clicks artifact as a learner sees them.

    Parameters
    ----------
    passes : int, optional
        Only the first ``passes`` passes (nested subsets, for learning curves).
    eta_model : float, optional
        Propensities (1/r)^eta_model instead of the logged ones (misspecification).
    propensity : Artifact, optional
        A ``propensities`` artifact: its estimate per rank replaces the logged propensities.
    clip : float, optional
        The training log's propensities below ``clip`` raised to it (a correction declaring
        "clip" in its context is given it and clips its own way).
    validation_clip : float, optional
        The validation log's clipping, chosen from the validation clicks alone
        (``cltr.core.selection.validation_clip``), never from the training ``clip``, so that
        its estimate judges every training clipping alike.
    correction : str, optional
        A correction of ``cltr.pipeline.corrections`` applied before clipping [default: ips].
    dataset : Dataset, optional
        The dataset of the clicks, for corrections that read its splits (affine).
    """
    fix = corrections.get(correction or corrections.DEFAULT_CORRECTION)
    if {"queries", "dataset", "displayed"} & set(fix.context) and dataset is None:
        raise ValueError(f"correction {fix.name!r} needs the dataset of the clicks")
    shown: dict[str, Displayed] = {}

    def rows_of(split: str) -> Displayed:
        # told as these clicks are, unclipped (a correction declaring "clip" clips itself); once per split
        if split not in shown:
            assert dataset is not None  # checked above for the corrections that read the rows
            shown[split] = displayed_rows(clicks, split, dataset, passes=passes, eta_model=eta_model,
                                          propensity=propensity)
        return shown[split]

    logs = []
    for split in ("train", "vali"):
        log = _split_log(clicks.arrays, split)
        if passes is not None and passes != log.n_passes:
            log = log.first_passes(passes)
        if eta_model is not None:
            log = log.with_propensity(position_propensity(log.rank, eta_model))
        if propensity is not None:
            log = log.with_propensity(estimate_from_arrays(propensity.arrays).at(log.rank))
        tau = clip if split == "train" else validation_clip  # never the training clip
        context = {"queries": getattr(dataset, split, None), "estimate": propensity, "clip": tau, "dataset": dataset,
                   "displayed": rows_of}
        log = fix.apply(log, clicks, split, **{k: context[k] for k in fix.context})
        # a correction that takes the clipping applies it its own way (dr: to the expected examination)
        logs.append(as_told(log, None, None if "clip" in fix.context else tau))
    return logs[0], logs[1]


def as_told(log: ClickLog, estimate=None, clip: float | None = None) -> ClickLog:
    """The log with an estimate's per-rank propensities instead of its own, then clipped; a
    collapsed estimate is refused (``check_estimate``)."""
    if estimate is not None and estimate.info.get("collapsed"):
        raise ValueError(f"this {estimate.method} estimate is refused as training weights: "
                         f"{'; '.join(estimate.info['warnings'])}")
    if estimate is not None:
        log = log.with_propensity(estimate.at(log.rank))
    return log if clip is None else log.clipped(clip)


def _split_log(arrays, split: str) -> ClickLog:
    """The stored click log of one split; an import in chunks stores counts, whose clicks
    are expanded here (``AggregatedRows.click_log``)."""
    prefix = f"{split}/"
    if f"{prefix}agg/clicks" in arrays:
        return aggregated_rows(arrays, split).click_log(int(arrays[f"{prefix}n_queries"]))
    return ClickLog.from_arrays({k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)})


def aggregated_rows(arrays, split: str) -> AggregatedRows:
    """The counts an import in chunks stores under ``<split>/agg/``."""
    prefix = f"{split}/agg/"
    return AggregatedRows.from_arrays({k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)})


def impressions_of(clicks: Artifact, split: str, dataset: Dataset) -> Impressions:
    """The aggregated impressions of one split of a clicks artifact (simulated or imported)."""
    arrays = clicks.arrays
    if f"{split}/agg/clicks" in arrays:
        return aggregated_rows(arrays, split).impressions_table()
    if f"{split}/presented_rank" in arrays:
        train_log, vali_log = click_logs(clicks)
        log = train_log if split == "train" else vali_log
        return presented_impressions(arrays[f"{split}/presented_rank"], arrays[f"{split}/pass_ranker"], log,
                                     getattr(dataset, split).offsets, top_k=clicks.config.get("top_k"))
    return imported_rows(arrays, split).impressions()


def displayed_rows(clicks: Artifact, split: str, dataset: Dataset, *, passes: int | None = None,
                   eta_model: float | None = None, propensity: Artifact | None = None,
                   clip: float | None = None) -> Displayed:
    """Every displayed document of every session of one split (simulated or imported), its
    propensities told as ``click_logs`` tells the clicks' (a prefix of passes, a
    misspecified eta, an estimate, clipped)."""
    queries = getattr(dataset, split)
    offsets = np.asarray(queries.offsets, dtype=np.int64)
    arrays = clicks.arrays
    if f"{split}/presented_rank" in arrays:
        log = click_logs(clicks, passes=passes)[0 if split == "train" else 1]
        click_model = clickmodels.get(clicks.config.get("click_model", clickmodels.DEFAULT_MODEL))
        settings = click_model.parse_settings(
            {f.name: clicks.config[f.name] for f in click_model.settings.option_fields() if f.name in clicks.config})
        rank_propensity = click_model.propensity
        of_rank = None if rank_propensity is None else (lambda rank: rank_propensity(rank, settings))
        columns = simulated_rows(log, arrays[f"{split}/presented_rank"], arrays[f"{split}/pass_ranker"], queries,
                                 of_rank, top_k=clicks.config.get("top_k"))
        query = columns["session"] % queries.n_queries
        doc = columns["doc"] + offsets[query]
        told = columns.get("propensity", np.full(len(doc), np.nan))
        session, rank, click, ranker = columns["session"], columns["rank"], columns["click"], columns["ranker"]
    else:
        if clicked_only(clicks, split):
            raise ValueError(f"the {split} log {clicks.key} cannot give every displayed document: {CLICKED_ONLY}")
        rows = imported_rows(arrays, split)
        keep = slice(None)
        if passes is not None:
            session_pass, _ = rows.session_passes(queries.n_queries)
            keep = session_pass[rows.session] < passes
        session, query, doc, rank, click, told, ranker = (rows.session[keep], rows.query[keep], rows.doc[keep],
                                                          rows.rank[keep], rows.click[keep], rows.propensity[keep],
                                                          rows.ranker[keep])
    if eta_model is not None:
        told = position_propensity(rank, eta_model)
    if propensity is not None:
        told = estimate_from_arrays(propensity.arrays).at(rank)
    if clip is not None:
        told = np.maximum(told, clip)
    return Displayed.from_columns(session=session, query=query, doc=doc, rank=rank, click=click, propensity=told,
                                  ranker=ranker)


def clicked_only(clicks: Artifact, split: str) -> bool:
    """Whether ``split`` of a clicks artifact is an imported log of clicked rows only (no
    impression of a document shown and not clicked); a simulated log never is."""
    if f"{split}/agg/clicks" in clicks.arrays:
        return aggregated_rows(clicks.arrays, split).clicked_only
    click = clicks.arrays.get(f"{split}/rows/click")
    return click is not None and bool(len(click)) and not (click == 0).any()


CLICKED_ONLY = ("it holds clicked rows only (every row has click 1), no impressions of the documents shown and not "
                "clicked: propensities cannot be estimated from it, and doubly robust estimators and per-session "
                "baselines cannot use it; training weights its clicks by the log's own propensity column (without one, "
                "nothing can weight them)")


def imported_rows(arrays, split: str) -> LoggedRows:
    """The impression rows an imported split stores under ``<split>/rows/``."""
    if f"{split}/agg/clicks" in arrays:
        raise ValueError(f"the {split} log was imported in chunks (--chunk-rows), which keeps its clicks and "
                         f"impressions per document and rank, not its sessions: session-level learners, doubly "
                         f"robust corrections, export and learning curves need it imported whole")
    prefix = f"{split}/rows/"
    return LoggedRows.from_arrays({k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)})


# -- click logs from files ---------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class ImportOptions(Options):
    """How ``cltr clicks import`` reads a click log."""

    split: str = option("train", "The split of the dataset the log was recorded on (its qids and documents).",
                        choices=("train", "vali"))
    ignore_extra_columns: bool = option(
        False, "Ignore columns other than the documented ones (by default they are an error, so that a "
               "misspelt column is not silently dropped).", negatable=False)
    log_format: str = option(
        "table", "table: one documented click table (LOG) for a prepared dataset; baidu-raw: raw Baidu-ULTR "
                 "training partitions part-NNNNN.gz (LOG...), streamed one at a time into the click table "
                 "--out (session, qid, docid = url md5, rank, click, ranker = the query's displayed ordering, "
                 "dwell, first_click, last_click); no dataset is needed.", choices=("table", "baidu-raw"),
        flag="--format")
    harvest_ranks: int | None = option(
        None, "With --format baidu-raw: also print the position bias at ranks 1..N by intervention "
              "harvesting over the queries' distinct displayed orderings (global all-pairs).", low=2,
        flag="--harvest")
    chunk_rows: int | None = option(
        None, "For a log larger than memory: read it in chunks of this many rows, each checked as a whole "
              "file is, and store only its clicks and impressions per (document, rank, ranker, propensity) "
              "and its sessions per query (memory bound by those counts, not the rows; the same result for "
              "any chunk size). A session's rows must follow one another. Such a log trains every click "
              "method and gives propensity estimates; session-level learners, doubly robust corrections, "
              "export and learning curves over passes need the log imported whole.", low=1)


@dataclasses.dataclass(frozen=True)
class ExportOptions(Options):
    """What ``cltr clicks export`` writes."""

    split: str = option("train", "Which split's log to write.", choices=("train", "vali"))
    with_features: bool = option(False, "Also write each row's feature vector, as columns f1..fd after the log's "
                                        "own.", negatable=False, flag="--features")


def import_stage(workspace: Workspace, name: str, dataset: Dataset, fingerprint: str, path, *,
                 split: str, ignore_extra_columns: bool = False,
                 chunk_rows: int | None = None) -> tuple[Artifact, bool]:
    """A logged click table (``cltr.data.clicklog`` format) of one split, validated; its
    info says whether it holds clicked rows only (``clicked_only``) and which columns were
    ignored. With ``chunk_rows`` the log is streamed in chunks of that many rows and only
    its counts are stored (``read_click_log_aggregated``: the same artifact for any chunk
    size)."""
    if split not in ("train", "vali"):
        raise ValueError(f"a click log is imported for the train or vali split, not {split!r}")
    # the format read from the file's name is part of what is imported: the same bytes under a
    # name that says another format would be refused, and must not find this import's result
    separator, compression = file_format(Path(path))
    config: dict[str, Any] = {"dataset": fingerprint, "split": split, "file_sha256": file_sha256(path),
              "format": [separator, compression]}
    if ignore_extra_columns:  # only then, so that the keys of earlier imports stay the same
        config["ignore_extra_columns"] = True
    if chunk_rows is not None:
        config["aggregated"] = True

    def compute():
        queries = getattr(dataset, split)
        if chunk_rows is not None:
            counts = read_click_log_aggregated(path, queries, chunk_rows=chunk_rows,
                                               ignore_extra_columns=ignore_extra_columns)
            info = {**counts.summary(queries.relevant(dataset.relevant_from)), "file": str(path), "rows": counts.rows,
                    "rankers": counts.n_rankers, "has_propensity": counts.has_propensity,
                    "clicked_only": counts.clicked_only, "ignored_columns": list(counts.ignored_columns),
                    "aggregated": True}
            return {"n_queries": np.int64(queries.n_queries),
                    **{f"agg/{k}": v for k, v in counts.arrays().items()}}, info
        rows = read_click_log(path, queries, ignore_extra_columns=ignore_extra_columns)
        log = rows.click_log(queries.n_queries)
        relevant = queries.relevant(dataset.relevant_from)
        info = {**click_log_summary(log, relevant), "file": str(path), "rows": int(len(rows.doc)),
                "rankers": int(rows.ranker.max()) + 1, "has_propensity": rows.has_propensity,
                "clicked_only": rows.clicked_only, "ignored_columns": list(rows.ignored_columns)}
        return {**log.arrays(), **{f"rows/{k}": v for k, v in rows.arrays().items()}}, info

    return workspace.cached(name, "imports", config, compute)


def imported_clicks_stage(workspace: Workspace, name: str, train: Artifact, vali: Artifact) -> tuple[Artifact, bool]:
    """A clicks artifact (what every method trains on) from an imported train and vali log."""
    config = {"imports": {"train": train.key, "vali": vali.key}}

    def compute():
        arrays = {f"{split}/{k}": v for split, part in (("train", train), ("vali", vali))
                  for k, v in part.arrays.items()}
        return arrays, {"train": train.info, "vali": vali.info,
                        "rankers": max(train.info["rankers"], vali.info["rankers"]), "imported": True}

    return workspace.cached(name, "clicks", config, compute)


def export_rows(clicks: Artifact, split: str, dataset: Dataset) -> dict[str, np.ndarray]:
    """The impressions of one split of any clicks artifact as a click table (export)."""
    queries = getattr(dataset, split)
    arrays = clicks.arrays
    if f"{split}/presented_rank" in arrays:
        train_log, vali_log = click_logs(clicks)
        click_model = clickmodels.get(clicks.config.get("click_model", clickmodels.DEFAULT_MODEL))
        settings = click_model.parse_settings(
            {f.name: clicks.config[f.name] for f in click_model.settings.option_fields() if f.name in clicks.config})
        rank_propensity = click_model.propensity
        of_rank = None if rank_propensity is None else (lambda rank: rank_propensity(rank, settings))
        return simulated_rows(train_log if split == "train" else vali_log, arrays[f"{split}/presented_rank"],
                              arrays[f"{split}/pass_ranker"], queries, of_rank, top_k=clicks.config.get("top_k"))
    rows = imported_rows(arrays, split)
    offsets = np.asarray(queries.offsets, dtype=np.int64)
    columns = {"session": rows.session, "qid": np.asarray(queries.qid)[rows.query],
               "doc": rows.doc - offsets[rows.query], "rank": rows.rank, "click": rows.click}
    if rows.has_propensity:
        columns["propensity"] = rows.propensity
    columns["ranker"] = rows.ranker
    return columns


def feature_columns(columns: dict[str, np.ndarray], queries) -> dict[str, np.ndarray]:
    """The feature vector of each row of an exported click table (``export_rows``), as
    columns ``f1``..``fd`` (numbered from 1, as SVMlight numbers features), so that other
    tools can train on an exported log without the features file."""
    qid = np.asarray(queries.qid)
    order = np.argsort(qid, kind="stable")
    query = order[np.searchsorted(qid[order], columns["qid"])]
    rows = np.asarray(queries.offsets, dtype=np.int64)[query] + np.asarray(columns["doc"], dtype=np.int64)
    X = np.asarray(queries.X)[rows]
    return {f"f{j + 1}": X[:, j] for j in range(X.shape[1])}


# -- propensities estimated from the logs -------------------------------------------------

@dataclasses.dataclass(frozen=True)
class EstimateOptions(Options):
    """Settings of a propensity estimate besides the estimator's own options (``cltr
    propensities estimate``, ``api.estimate_propensities``)."""

    method: str = option(estimators.DEFAULT_ESTIMATOR,
                         lambda: "; ".join(f"{e.name}: {e.summary}" for e in estimators.estimators().values()) + ".",
                         choices=estimators.estimators)
    max_rank: int | None = option(None, f"Estimate ranks 1..MAX_RANK; deeper ranks take the value of MAX_RANK "
                                        f"[default: {DEFAULT_MAX_RANK}, or the deepest rank shown if less].", low=2)
    bootstrap: int = option(100, "Bootstrap resamples of the queries for the confidence band (0: no band).", low=0)
    level: float = option(0.95, "Confidence level of the band.", low=0, high=1, low_open=True, high_open=True)


def propensity_stage(workspace: Workspace, name: str, dataset: Dataset, clicks: Artifact, *, method: str,
                     max_rank: int | None = None, bootstrap: int = 100, level: float = 0.95,
                     seed: int = 0, **options) -> tuple[Artifact, bool]:
    """Observation propensity per rank, relative to rank 1, estimated from the training
    split's impressions by estimator ``method`` of ``cltr.estimators`` (``options``: its
    own, such as em's ``relevance_model``), with a bootstrap band over queries."""
    max_rank = max_rank or DEFAULT_MAX_RANK
    if clicked_only(clicks, "train"):
        raise ValueError(f"click log {clicks.key}: its train log holds clicked rows only (every row has click 1), "
                         f"so propensities cannot be estimated from it: estimation compares how often a document "
                         f"is clicked where it was shown, and the log does not say where documents were shown "
                         f"without a click. Import a log with one row per displayed document, or one with a "
                         f"propensity column")
    # an estimator's option enters the key only where it differs from its default, so that
    # earlier estimates keep theirs
    config = {"clicks": clicks.key, "method": method, "max_rank": max_rank, "bootstrap": bootstrap,
              "level": level, "seed": seed, **estimators.key_options(method, options)}

    def compute():
        table = impressions_of(clicks, "train", dataset)
        estimate = estimate_propensities(table, dataset.train.X, method=method, max_rank=max_rank,
                                         bootstrap=bootstrap, level=level, seed=seed, **options)
        return estimate_to_arrays(estimate), {"method": method, "rows": estimate.to_rows(),
                                              "rankers": table.n_rankers, **jsonable_info(estimate.info)}

    return workspace.cached(name, "propensities", config, compute)


ESTIMATORS = tuple(estimators.estimators())


def estimate_propensities(table: Impressions, X: np.ndarray, *, method: str = estimators.DEFAULT_ESTIMATOR,
                          max_rank: int | None = None, bootstrap: int = 100, level: float = 0.95, seed: int = 0,
                          **options):
    """Propensity per rank from aggregated impressions by estimator ``method``
    (``cltr.estimators.estimate``; ``X``: the split's features, ``options``: the
    estimator's own, such as em's ``relevance_model``), ranks 1..``max_rank`` (default
    ``DEFAULT_MAX_RANK``, or the deepest rank shown if less); deeper ranks take the last
    rank's value."""
    return estimators.estimate(method, table, X, options, max_rank=max_rank, bootstrap=bootstrap, level=level,
                               seed=seed)


def check_estimate(artifact: Artifact, *, workspace: Workspace | None = None, name: str | None = None,
                   dataset: Dataset | None = None) -> None:
    """Refuse a propensities artifact that a learner must not divide by, and warn about one the
    log does not identify (``cltr.core.propensity.em_identification``): a collapsed estimate,
    p_k flat while clicks fall with rank, would train the naive model under a
    propensity-corrected name. An em estimate stored before that check, or under older rules
    (``IDENTIFICATION_VERSION``), is checked again from its stored p_k on the click log it
    was estimated from (dataset ``name`` of ``workspace``); one whose log is not there is
    refused."""
    info = artifact.info
    if info.get("method") == "em":
        info = _em_checked(artifact, workspace, name, dataset)
    if info.get("collapsed"):
        raise ValueError(f"propensities {artifact.key} ({info.get('method')} on click log "
                         f"{artifact.config['clicks']}) are refused as training weights: {'; '.join(info['warnings'])}")
    for message in info.get("warnings", []):
        logging.getLogger(__name__).warning(f"propensities {artifact.key}: {message}")


def _em_checked(artifact: Artifact, workspace: Workspace | None, name: str | None,
                dataset: Dataset | None) -> dict:
    """An em artifact's info with ``em_identification``'s findings under the current rules."""
    from cltr.core.propensity import IDENTIFICATION_VERSION, em_identification_of

    info = artifact.info
    if info.get("identification_version") == IDENTIFICATION_VERSION:
        return info
    log = artifact.config.get("clicks")
    clicks = (workspace.load(name, "clicks", log) if workspace is not None and name is not None and log is not None
              and dataset is not None else None)
    if clicks is None:
        raise ValueError(f"propensities {artifact.key} (em on click log {log}) were stored before em estimates were "
                         f"checked for identification as they are now, and that click log is not at hand to check "
                         f"them: estimate them again (cltr propensities estimate --method em ...)")
    assert dataset is not None  # the click log is loaded only with the dataset at hand
    table = impressions_of(clicks, "train", dataset)
    diagnostics, warnings = em_identification_of(
        table.query, table.doc, table.rank, table.impressions, table.clicks, dataset.train.X,
        np.asarray(artifact.arrays["propensity"]), flexible=info.get("relevance_model") == "fitted",
        cross_fit=int(info.get("cross_fit", 1)))
    return {**info, **diagnostics, "warnings": warnings}


def estimate_to_arrays(estimate) -> dict[str, np.ndarray]:
    return {"rank": estimate.rank, "propensity": estimate.propensity, "low": estimate.low, "high": estimate.high}


def estimate_from_arrays(arrays):
    from cltr.core.propensity import PropensityEstimate

    return PropensityEstimate(rank=np.asarray(arrays["rank"]), propensity=np.asarray(arrays["propensity"]),
                              low=np.asarray(arrays["low"]), high=np.asarray(arrays["high"]), level=float("nan"),
                              method="stored", info={})


def jsonable_info(info: dict) -> dict:
    return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in info.items()}


def validation_tau(vali_log: ClickLog) -> float | None:
    """The validation clicks' clipping TAU_v (``cltr.core.selection.validation_clip``) from
    their propensities as told (``click_logs`` without a correction or clipping); None
    where they are unknown or the log is unclipped."""
    if vali_log.weight is not None or np.isnan(vali_log.propensity).any():
        return None
    return validation_clip(vali_log.propensity)


# -- models and their evaluation ----------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class EvaluateOptions(Options):
    """What ``cltr evaluate`` evaluates besides a trained model."""

    production: bool = option(False, "Evaluate the production ranker (the last produced) instead of a trained "
                                      "model.", negatable=False)
    run_file: str | None = option(
        None, "Evaluate an outside model instead: a TREC run (qid Q0 docid rank score run, docids as "
              "`cltr score --trec` writes them) or one score per line in the split's document order (as "
              "`cltr score --out` writes), ranked by score with cltr's tie-breaks.", path="file", flag="--run")
    split: str | None = option(None, "The split --run scores [default: test].", choices=("test", "vali", "train"))


@dataclasses.dataclass(frozen=True)
class ScoreOptions(Options):
    """How ``cltr score`` names its TREC run."""

    run_name: str = option("cltr", "The run name of the TREC file.")


def model_stage(workspace: Workspace, name: str, dataset: Dataset, clicks: Artifact, method: str,
                options: dict | Options | None, *, seed: int = 0, passes: int | None = None,
                eta_model: float | None = None, propensity: Artifact | None = None,
                clip: str | float | None = "auto", correction: str | None = None,
                progress: Callable | None = None) -> tuple[Artifact, bool]:
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
    if fix.methods is not None and method not in fix.methods:
        raise ValueError(f"correction {fix.name!r} applies to {', '.join(fix.methods)}, not {method!r}")
    # only what differs from the whole log as logged enters the key
    correction = None if fix.name == corrections.DEFAULT_CORRECTION else fix.name
    subset = {k: v for k, v in {"passes": passes, "eta_model": eta_model, "train_clip": clip, "correction": correction,
                                "propensities": None if propensity is None else propensity.key}.items()
              if v is not None}
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
        logging.getLogger(__name__).warning(f"the {' and '.join(only)} log{'s' if len(only) > 1 else ''} of click "
                                            f"log {clicks.key}: {CLICKED_ONLY}")

    def compute():
        told = {"passes": passes, "eta_model": eta_model, "propensity": propensity}
        train_log, vali_log = click_logs(clicks, **told, correction=correction, dataset=dataset,
                                         validation_clip=tau_v)

        def rows(split):
            return displayed_rows(clicks, split, dataset, **told)

        def train_log_at(tau):  # a correction that clips its own way is applied again
            return click_logs(clicks, **told, clip=tau, correction=correction, dataset=dataset)[0]

        data = TrainingData(dataset, train_log, vali_log, seed, rows=rows,
                            train_log_at=train_log_at if "clip" in fix.context else None)
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


def evaluation_stage(workspace: Workspace, name: str, dataset: Dataset, model: Artifact, clicks: Artifact, *,
                     seed: int = 0) -> tuple[Artifact, bool]:
    """Test Avg DCG, Avg Rank, nDCG@10 (both averages) of a model, and its SNIPS Avg DCG on
    validation clicks, in the dataset's convention."""
    # "ndcg": evaluations stored before it meant the relevant-queries average by "ndcg@10"
    config = {"model": model.key, "seed": seed, "ndcg": "all-and-relevant-queries"}

    def compute():
        scorer = scorer_from_arrays(model.arrays)
        info = evaluate(scorer, dataset.test, dataset.test.relevant(dataset.relevant_from),
                        rng=stream(seed, "evaluate"), dcg_base=dataset.dcg_base)
        propensity = None
        if model.config.get("propensities") is not None:
            propensity = workspace.load(name, "propensities", model.config["propensities"])
        # the validation log as the model's selection saw it, whatever the model was trained with
        _, vali_log = click_logs(clicks, passes=model.config.get("passes"), eta_model=model.config.get("eta_model"),
                                 propensity=propensity, correction=model.config.get("correction"), dataset=dataset,
                                 validation_clip=model.info.get("validation_clip"))
        info["validation_snips_avg_dcg"] = validation_estimate(scorer, dataset.vali, vali_log,
                                                               rng=stream(seed, "selection"),
                                                               dcg_base=dataset.dcg_base)
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
    return evaluate(scorer_from_arrays(production.arrays), dataset.test, dataset.test.relevant(dataset.relevant_from),
                    rng=stream(production.config["seed"], "evaluate"), dcg_base=dataset.dcg_base)
