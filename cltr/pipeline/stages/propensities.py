"""Propensities estimated from the logs: the estimate stage, the registered estimators and the
check of a stored estimate before training on it. Part of ``cltr.pipeline.stages``."""

from __future__ import annotations

import dataclasses
import logging

import numpy as np

from cltr import estimators
from cltr.core.clicks import (
    ClickLog,
    Impressions,
)
from cltr.core.queries import Dataset
from cltr.core.selection import validation_clip
from cltr.estimators import DEFAULT_MAX_RANK
from cltr.options import Options, option
from cltr.pipeline.stages.clicks import clicked_only, estimate_to_arrays, impressions_of
from cltr.pipeline.workspace import Artifact, Workspace


@dataclasses.dataclass(frozen=True)
class EstimateOptions(Options):
    """Settings of a propensity estimate besides the estimator's own options (``cltr
    propensities estimate``, ``api.estimate_propensities``)."""

    method: str = option(
        estimators.DEFAULT_ESTIMATOR,
        lambda: "; ".join(f"{e.name}: {e.summary}" for e in estimators.estimators().values()) + ".",
        choices=estimators.estimators,
    )
    max_rank: int | None = option(
        None,
        f"Estimate ranks 1..MAX_RANK; deeper ranks take the value of MAX_RANK "
        f"[default: {DEFAULT_MAX_RANK}, or the deepest rank shown if less].",
        low=2,
    )
    bootstrap: int = option(100, "Bootstrap resamples of the queries for the confidence band (0: no band).", low=0)
    level: float = option(0.95, "Confidence level of the band.", low=0, high=1, low_open=True, high_open=True)


def propensity_stage(
    workspace: Workspace,
    name: str,
    dataset: Dataset,
    clicks: Artifact,
    *,
    method: str,
    max_rank: int | None = None,
    bootstrap: int = 100,
    level: float = 0.95,
    seed: int = 0,
    **options,
) -> tuple[Artifact, bool]:
    """Observation propensity per rank, relative to rank 1, estimated from the training
    split's impressions by estimator ``method`` of ``cltr.estimators`` (``options``: its
    own, such as em's ``relevance_model``), with a bootstrap band over queries."""
    max_rank = max_rank or DEFAULT_MAX_RANK
    if clicked_only(clicks, "train"):
        raise ValueError(
            f"click log {clicks.key}: its train log holds clicked rows only (every row has click 1), "
            f"so propensities cannot be estimated from it: estimation compares how often a document "
            f"is clicked where it was shown, and the log does not say where documents were shown "
            f"without a click. Import a log with one row per displayed document, or one with a "
            f"propensity column"
        )
    # an estimator's option enters the key only where it differs from its default, so that
    # earlier estimates keep theirs
    config = {
        "clicks": clicks.key,
        "method": method,
        "max_rank": max_rank,
        "bootstrap": bootstrap,
        "level": level,
        "seed": seed,
        **estimators.key_options(method, options),
    }

    def compute():
        table = impressions_of(clicks, "train", dataset)
        estimate = estimate_propensities(
            table,
            dataset.train.X,
            method=method,
            max_rank=max_rank,
            bootstrap=bootstrap,
            level=level,
            seed=seed,
            **options,
        )
        return estimate_to_arrays(estimate), {
            "method": method,
            "rows": estimate.to_rows(),
            "rankers": table.n_rankers,
            **jsonable_info(estimate.info),
        }

    return workspace.cached(name, "propensities", config, compute)


def parquet_propensity_stage(
    workspace: Workspace,
    name: str,
    dataset: Dataset,
    path,
    *,
    max_rank: int | None = None,
    bootstrap: int = 100,
    level: float = 0.95,
    seed: int = 0,
    **options,
) -> tuple[Artifact, bool]:
    """Intervention harvesting on the training split's log in a Parquet file that this
    process never holds: each chunk of whole queries is read from the file where the engine
    computes it (``options``: harvest's, ``log_path`` among them, and the engine's;
    ``cltr.data.parquet_log.harvest_parquet_log``). The same estimate as ``propensity_stage``
    on the log imported. The artifact's key holds the file's sha256, not its path, and its
    config ``clicks`` None: no click log of the workspace was read."""
    from threadpoolctl import threadpool_limits

    from cltr.core.chunked import LocalMapper
    from cltr.core.seeds import stream
    from cltr.data.parquet_log import file_sha256, harvest_parquet_log
    from cltr.distributed import engine

    parsed = estimators.get("harvest").parse_options({**options, "log_path": str(path)})
    max_rank = max_rank or DEFAULT_MAX_RANK
    keyed = {k: v for k, v in estimators.key_options("harvest", parsed).items() if k != "log_path"}
    config = {
        "clicks": None,
        "log_sha256": file_sha256(path),
        "method": "harvest",
        "max_rank": max_rank,
        "bootstrap": bootstrap,
        "level": level,
        "seed": seed,
        **keyed,
    }

    def compute():
        with engine(parsed) as (mapper, chunks):  # HarvestOptions is an EngineOptions
            # small dense solves on one BLAS thread, as cltr.estimators.estimate runs them
            with threadpool_limits(1):
                estimate = harvest_parquet_log(
                    path,
                    dataset.train,
                    chunks=chunks,
                    mapper=LocalMapper() if mapper is None else mapper,
                    max_rank=max_rank,
                    bootstrap=bootstrap,
                    level=level,
                    rng=stream(seed, "propensity"),
                )
        return estimate_to_arrays(estimate), {
            "method": "harvest",
            "log": str(path),
            "rows": estimate.to_rows(),
            "rankers": len(estimate.info["sessions"]),
            **{k: v for k, v in jsonable_info(estimate.info).items() if k != "rows"},
            "log_rows": estimate.info["rows"],
        }

    return workspace.cached(name, "propensities", config, compute)


ESTIMATORS = tuple(estimators.estimators())


def estimate_propensities(
    table: Impressions,
    X: np.ndarray,
    *,
    method: str = estimators.DEFAULT_ESTIMATOR,
    max_rank: int | None = None,
    bootstrap: int = 100,
    level: float = 0.95,
    seed: int = 0,
    **options,
):
    """Propensity per rank from aggregated impressions by estimator ``method``
    (``cltr.estimators.estimate``; ``X``: the split's features, ``options``: the
    estimator's own, such as em's ``relevance_model``), ranks 1..``max_rank`` (default
    ``DEFAULT_MAX_RANK``, or the deepest rank shown if less); deeper ranks take the last
    rank's value."""
    return estimators.estimate(
        method, table, X, options, max_rank=max_rank, bootstrap=bootstrap, level=level, seed=seed
    )


def check_estimate(
    artifact: Artifact, *, workspace: Workspace | None = None, name: str | None = None, dataset: Dataset | None = None
) -> None:
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
        raise ValueError(
            f"propensities {artifact.key} ({info.get('method')} on click log "
            f"{artifact.config['clicks']}) are refused as training weights: {'; '.join(info['warnings'])}"
        )
    for message in info.get("warnings", []):
        logging.getLogger(__name__).warning(f"propensities {artifact.key}: {message}")


def _em_checked(artifact: Artifact, workspace: Workspace | None, name: str | None, dataset: Dataset | None) -> dict:
    """An em artifact's info with ``em_identification``'s findings under the current rules."""
    from cltr.core.propensity import IDENTIFICATION_VERSION, em_identification_of

    info = artifact.info
    if info.get("identification_version") == IDENTIFICATION_VERSION:
        return info
    log = artifact.config.get("clicks")
    clicks = (
        workspace.load(name, "clicks", log)
        if workspace is not None and name is not None and log is not None and dataset is not None
        else None
    )
    if clicks is None:
        raise ValueError(
            f"propensities {artifact.key} (em on click log {log}) were stored before em estimates were "
            f"checked for identification as they are now, and that click log is not at hand to check "
            f"them: estimate them again (cltr propensities estimate --method em ...)"
        )
    assert dataset is not None  # the click log is loaded only with the dataset at hand
    table = impressions_of(clicks, "train", dataset)
    diagnostics, warnings = em_identification_of(
        table.query,
        table.doc,
        table.rank,
        table.impressions,
        table.clicks,
        dataset.train.X,
        np.asarray(artifact.arrays["propensity"]),
        flexible=info.get("relevance_model") == "fitted",
        cross_fit=int(info.get("cross_fit", 1)),
    )
    return {**info, **diagnostics, "warnings": warnings}


def jsonable_info(info: dict) -> dict:
    return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in info.items()}


def validation_tau(vali_log: ClickLog) -> float | None:
    """The validation clicks' clipping TAU_v (``cltr.core.selection.validation_clip``) from
    their propensities as told (``click_logs`` without a correction or clipping); None
    where they are unknown or the log is unclipped."""
    if vali_log.weight is not None or np.isnan(vali_log.propensity).any():
        return None
    return validation_clip(vali_log.propensity)
