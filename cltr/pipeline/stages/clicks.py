"""Clicks: simulated click logs (``simulate``, ``clicks_stage``), the logs an artifact holds
(``click_logs``, ``as_told``), their impressions and displayed rows, and the stored form of a
propensity estimate that ``click_logs`` reads. Part of ``cltr.pipeline.stages``."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from cltr import clickmodels
from cltr.core.clicks import (
    ClickLog,
    Displayed,
    Impressions,
    position_propensity,
    presented_impressions,
)
from cltr.core.policy import displayed, plackett_luce_ranks, policy_propensity
from cltr.core.queries import Dataset, Queries
from cltr.core.ranking import rank_documents
from cltr.core.seeds import stream
from cltr.data.click_artifact import SPLITS, ClicksArtifact, Presented, SplitClicks
from cltr.data.clicklog import simulated_rows
from cltr.options import Options, option
from cltr.pipeline import corrections
from cltr.pipeline.models import scorer_from_arrays
from cltr.pipeline.workspace import Artifact, Workspace


def simulate(
    queries: Queries,
    relevant: np.ndarray,
    productions: Sequence,
    model: str,
    settings: Options,
    *,
    passes: int,
    seed: int,
    split: str,
    top_k: int | None = None,
    logging_temperature: float | None = None,
    intervention: str | None = None,
    intervention_depth: int = 10,
    progress: Callable[[int], None] | None = None,
) -> tuple[ClickLog, np.ndarray, np.ndarray]:
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
            raise ValueError(
                "an intervention permutes the deterministic ranking; it cannot be combined with a logging temperature"
            )
        if logging_temperature or intervention:
            log, ranks = _simulate_sampled(
                click_model,
                production.scores(queries.X),
                relevant,
                queries.offsets,
                settings,
                top_k=top_k,
                temperature=logging_temperature,
                passes=own,
                presentation=stream(seed, "presentation", split, *suffix),
                rng=stream(seed, "clicks", split, *suffix),
                progress=report,
                intervention=intervention,
                intervention_depth=intervention_depth,
                intervention_rng=stream(seed, "intervention", split, *suffix),
            )
            presented.append(ranks)
        else:
            rank = rank_documents(
                production.scores(queries.X), queries.offsets, stream(seed, "presentation", split, *suffix)
            )
            presented.append(rank[None])
            log = _simulate_displayed(
                click_model,
                rank,
                relevant,
                queries.offsets,
                settings,
                top_k=top_k,
                passes=own,
                rng=stream(seed, "clicks", split, *suffix),
                progress=report,
            )
        parts.append(log if n_rankers == 1 else log._replace(slice(None), pass_index=log.pass_index * n_rankers + k))
    if n_rankers == 1:
        log = parts[0]
    else:
        pass_index = np.concatenate([part.pass_index for part in parts])
        order = np.argsort(pass_index, kind="stable")
        merged = {
            name: np.concatenate([getattr(part, name) for part in parts])[order]
            for name in ("query", "doc", "rank", "propensity", "pass_index")
        }
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
    log = click_model.simulate(
        rank[shown], relevant[shown], shown_offsets, settings, passes=passes, rng=rng, progress=progress
    )
    return log._replace(slice(None), doc=shown[log.doc])


def _simulate_sampled(
    click_model,
    scores,
    relevant,
    offsets,
    settings,
    *,
    top_k,
    temperature,
    passes,
    presentation,
    rng,
    progress,
    intervention=None,
    intervention_depth=10,
    intervention_rng=None,
) -> tuple[ClickLog, np.ndarray]:
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
        log = _simulate_displayed(
            click_model, rank, relevant, offsets, settings, top_k=top_k, passes=1, rng=rng, progress=None
        )
        parts.append(log._replace(slice(None), pass_index=log.pass_index + p))
        if progress is not None:
            progress(p + 1)
    merged = {
        name: np.concatenate([getattr(part, name) for part in parts])
        for name in ("query", "doc", "rank", "propensity", "pass_index")
    }
    return ClickLog(**merged, n_passes=passes, n_queries=len(offsets) - 1), ranks


def policy_propensities(
    queries: Queries,
    productions: list,
    model: str,
    settings: Options,
    presented_rank: np.ndarray,
    *,
    passes: int,
    top_k: int | None,
    logging_temperature: float | None,
    seed: int,
    split: str,
    samples: int = 1000,
) -> np.ndarray | None:
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
    examination = np.concatenate(
        [[0.0], np.where(ranks <= (top_k or longest), click_model.propensity(ranks, settings), 0.0)]
    )
    n_rankers = len(productions)
    share = np.bincount(np.arange(passes) % n_rankers, minlength=n_rankers) / passes
    total = np.zeros(int(queries.offsets[-1]))
    for k, production in enumerate(productions):
        if share[k] == 0:
            continue
        if logging_temperature:
            suffix = () if k == 0 else (k,)
            rho = policy_propensity(
                production.scores(queries.X),
                queries.offsets,
                examination,
                temperature=logging_temperature,
                rng=stream(seed, "policy", split, *suffix),
                samples=samples,
            )
        else:
            rho = examination[presented_rank[k]]
        total += share[k] * rho
    return total


def simulated_logs(
    dataset: Dataset,
    production,
    *,
    passes: int,
    seed: int = 0,
    model: str = clickmodels.DEFAULT_MODEL,
    settings: Options | dict | None = None,
    top_k: int | None = None,
    logging_temperature: float | None = None,
) -> dict[str, ClickLog]:
    """The train and vali click logs ``clicks_stage`` would store, without a workspace
    (benchmarks, the Python API)."""
    settings = clickmodels.get(model).parse_settings(settings or {})
    top_k, logging_temperature = _presentation(top_k, logging_temperature)
    productions = production if isinstance(production, (list, tuple)) else [production]
    return {
        split: simulate(
            getattr(dataset, split),
            getattr(dataset, split).relevant(dataset.relevant_from),
            productions,
            model,
            settings,
            passes=passes,
            seed=seed,
            split=split,
            top_k=top_k,
            logging_temperature=logging_temperature,
        )[0]
        for split in ("train", "vali")
    }


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
    rankers: int = option(
        1,
        "Logging rankers: the production ranker and K-1 more, each trained on its own 1% "
        "sample; pass p is shown by ranker p mod K and its sessions are tagged with it "
        "(what intervention harvesting needs).",
        low=1,
    )
    top_k: int = option(
        0,
        "Display only the first K results of each ranking: documents below cannot be clicked (0: the full list).",
        low=0,
    )
    logging_temperature: float = option(
        0.0,
        "Show a fresh Plackett-Luce ranking each pass, drawn from softmax(production scores / T) "
        "(0: the deterministic ranking). With --top-k or a temperature the log also stores the "
        "policy-aware propensities (--correction policy-aware).",
        low=0,
    )
    intervention: str | None = option(
        None,
        "Log a randomized intervention on the deterministic ranking, drawn afresh every session: "
        "swap-k trades rank 1 with a rank k drawn uniformly from 1..DEPTH (Joachims et al., "
        "WSDM 2017); randomize-top-k shuffles ranks 1..DEPTH. The log's ranks are the displayed "
        "ones; `cltr propensities estimate --method swap` reads them.",
        choices=("swap-k", "randomize-top-k"),
    )
    intervention_depth: int = option(10, "DEPTH: the ranks an --intervention reaches.", low=2)


def clicks_stage(
    workspace: Workspace,
    name: str,
    dataset: Dataset,
    production,
    settings: Options | dict,
    *,
    model: str = clickmodels.DEFAULT_MODEL,
    passes: int,
    seed: int = 0,
    top_k: int | None = None,
    logging_temperature: float | None = None,
    intervention: str | None = None,
    intervention_depth: int = 10,
    progress: Callable[[str, int, int], None] | None = None,
) -> tuple[Artifact, bool]:
    """Clicks on the train and vali splits presented by the production ranker(s).

    ``production`` is one artifact or a list (K logging rankers); ``settings`` are the
    click model's (validated here); ``top_k`` and ``logging_temperature`` the presentation
    (``simulate``; 0 or None: the full list, the deterministic ranking); ``progress(split,
    passes_done, passes)`` is called as passes complete. With a presentation setting each
    split also stores its ``policy_propensity`` (``policy_propensities``) where the
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
    config = {
        "production": keys[0] if len(keys) == 1 else keys,
        "click_model": model,
        **settings.to_dict(),
        "passes": passes,
        "seed": seed,
        **({"top_k": top_k} if top_k else {}),
        **({"logging_temperature": logging_temperature} if logging_temperature else {}),
        **({"intervention": intervention, "intervention_depth": int(intervention_depth)} if intervention else {}),
    }
    scorers = [scorer_from_arrays(p.arrays) for p in productions]

    def compute():
        splits, info = {}, {}
        for split in SPLITS:
            queries = getattr(dataset, split)
            relevant = queries.relevant(dataset.relevant_from)
            report = None if progress is None else (lambda done, split=split: progress(split, done, passes))
            log, presented_rank, pass_ranker = simulate(
                queries,
                relevant,
                scorers,
                model,
                settings,
                passes=passes,
                seed=seed,
                split=split,
                top_k=top_k,
                logging_temperature=logging_temperature,
                intervention=intervention,
                intervention_depth=intervention_depth,
                progress=report,
            )
            info[split] = click_log_summary(log, relevant)
            rho = None
            if (top_k or logging_temperature) and not intervention:
                rho = policy_propensities(
                    queries,
                    scorers,
                    model,
                    settings,
                    presented_rank,
                    passes=passes,
                    top_k=top_k,
                    logging_temperature=logging_temperature,
                    seed=seed,
                    split=split,
                )
            splits[split] = SplitClicks(
                log=log, presented=Presented(rank=presented_rank, pass_ranker=pass_ranker), policy_propensity=rho
            )
        info["rankers"] = len(productions)
        if intervention:
            info["intervention"] = {"kind": intervention, "depth": int(intervention_depth)}
        return ClicksArtifact(**splits).arrays(), info

    return workspace.cached(name, "clicks", config, compute)


def _presentation(top_k, logging_temperature) -> tuple[int | None, float | None]:
    """Validated presentation settings; 0 (or None) means the full list, the deterministic ranking."""
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 0):
        raise ValueError(f"top_k must be a non-negative integer (0: the full list), found {top_k!r}")
    if logging_temperature is not None and (
        isinstance(logging_temperature, bool)
        or not isinstance(logging_temperature, (int, float))
        or not 0 <= logging_temperature < float("inf")
    ):
        raise ValueError(
            f"logging_temperature must be a finite number >= 0 (0: the deterministic ranking), "
            f"found {logging_temperature!r}"
        )
    return (int(top_k) if top_k else None), (float(logging_temperature) if logging_temperature else None)


def click_logs(
    clicks: Artifact,
    *,
    passes: int | None = None,
    eta_model: float | None = None,
    propensity: Artifact | None = None,
    clip: float | None = None,
    correction: str | None = None,
    dataset: Dataset | None = None,
    validation_clip: float | None = None,
) -> tuple[ClickLog, ClickLog]:
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
            shown[split] = displayed_rows(
                clicks, split, dataset, passes=passes, eta_model=eta_model, propensity=propensity
            )
        return shown[split]

    stored = ClicksArtifact.of(clicks)
    logs = []
    for split in SPLITS:
        log = stored.split(split).click_log()
        if passes is not None and passes != log.n_passes:
            log = log.first_passes(passes)
        if eta_model is not None:
            log = log.with_propensity(position_propensity(log.rank, eta_model))
        if propensity is not None:
            log = log.with_propensity(estimate_from_arrays(propensity.arrays).at(log.rank))
        tau = clip if split == "train" else validation_clip  # never the training clip
        context = {
            "queries": getattr(dataset, split, None),
            "estimate": propensity,
            "clip": tau,
            "dataset": dataset,
            "displayed": rows_of,
        }
        log = fix.apply(log, clicks, split, **{k: context[k] for k in fix.context})
        # a correction that takes the clipping applies it its own way (dr: to the expected examination)
        logs.append(as_told(log, None, None if "clip" in fix.context else tau))
    return logs[0], logs[1]


def as_told(log: ClickLog, estimate=None, clip: float | None = None) -> ClickLog:
    """The log with an estimate's per-rank propensities instead of its own, then clipped; a
    collapsed estimate is refused (``check_estimate``)."""
    if estimate is not None and estimate.info.get("collapsed"):
        raise ValueError(
            f"this {estimate.method} estimate is refused as training weights: {'; '.join(estimate.info['warnings'])}"
        )
    if estimate is not None:
        log = log.with_propensity(estimate.at(log.rank))
    return log if clip is None else log.clipped(clip)


def impressions_of(clicks: Artifact, split: str, dataset: Dataset) -> Impressions:
    """The aggregated impressions of one split of a clicks artifact (simulated or imported)."""
    stored = ClicksArtifact.of(clicks).split(split)
    if stored.aggregated is not None:
        return stored.aggregated.impressions_table()
    if stored.presented is not None:
        train_log, vali_log = click_logs(clicks)
        log = train_log if split == "train" else vali_log
        return presented_impressions(
            stored.presented.rank,
            stored.presented.pass_ranker,
            log,
            getattr(dataset, split).offsets,
            top_k=clicks.config.get("top_k"),
        )
    return stored.logged_rows(split).impressions()


def displayed_rows(
    clicks: Artifact,
    split: str,
    dataset: Dataset,
    *,
    passes: int | None = None,
    eta_model: float | None = None,
    propensity: Artifact | None = None,
    clip: float | None = None,
) -> Displayed:
    """Every displayed document of every session of one split (simulated or imported), its
    propensities told as ``click_logs`` tells the clicks' (a prefix of passes, a
    misspecified eta, an estimate, clipped)."""
    queries = getattr(dataset, split)
    offsets = np.asarray(queries.offsets, dtype=np.int64)
    stored = ClicksArtifact.of(clicks).split(split)
    if stored.presented is not None:
        log = click_logs(clicks, passes=passes)[0 if split == "train" else 1]
        click_model = clickmodels.get(clicks.config.get("click_model", clickmodels.DEFAULT_MODEL))
        settings = click_model.parse_settings(
            {f.name: clicks.config[f.name] for f in click_model.settings.option_fields() if f.name in clicks.config}
        )
        rank_propensity = click_model.propensity
        of_rank = None if rank_propensity is None else (lambda rank: rank_propensity(rank, settings))
        columns = simulated_rows(
            log, stored.presented.rank, stored.presented.pass_ranker, queries, of_rank, top_k=clicks.config.get("top_k")
        )
        query = columns["session"] % queries.n_queries
        doc = columns["doc"] + offsets[query]
        told = columns.get("propensity", np.full(len(doc), np.nan))
        session, rank, click, ranker = columns["session"], columns["rank"], columns["click"], columns["ranker"]
    else:
        if stored.clicked_only:
            raise ValueError(f"the {split} log {clicks.key} cannot give every displayed document: {CLICKED_ONLY}")
        rows = stored.logged_rows(split)
        keep = slice(None)
        if passes is not None:
            session_pass, _ = rows.session_passes(queries.n_queries)
            keep = session_pass[rows.session] < passes
        session, query, doc, rank, click, told, ranker = (
            rows.session[keep],
            rows.query[keep],
            rows.doc[keep],
            rows.rank[keep],
            rows.click[keep],
            rows.propensity[keep],
            rows.ranker[keep],
        )
    if eta_model is not None:
        told = position_propensity(rank, eta_model)
    if propensity is not None:
        told = estimate_from_arrays(propensity.arrays).at(rank)
    if clip is not None:
        told = np.maximum(told, clip)
    return Displayed.from_columns(
        session=session, query=query, doc=doc, rank=rank, click=click, propensity=told, ranker=ranker
    )


def clicked_only(clicks: Artifact, split: str) -> bool:
    """Whether ``split`` of a clicks artifact is an imported log of clicked rows only (no
    impression of a document shown and not clicked); a simulated log never is."""
    return ClicksArtifact.of(clicks).split(split).clicked_only


CLICKED_ONLY = (
    "it holds clicked rows only (every row has click 1), no impressions of the documents shown and not "
    "clicked: propensities cannot be estimated from it, and doubly robust estimators and per-session "
    "baselines cannot use it; training weights its clicks by the log's own propensity column (without one, "
    "nothing can weight them)"
)


def estimate_to_arrays(estimate) -> dict[str, np.ndarray]:
    return {"rank": estimate.rank, "propensity": estimate.propensity, "low": estimate.low, "high": estimate.high}


def estimate_from_arrays(arrays):
    from cltr.core.propensity import PropensityEstimate

    return PropensityEstimate(
        rank=np.asarray(arrays["rank"]),
        propensity=np.asarray(arrays["propensity"]),
        low=np.asarray(arrays["low"]),
        high=np.asarray(arrays["high"]),
        level=float("nan"),
        method="stored",
        info={},
    )
