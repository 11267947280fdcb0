"""Click logs from files: importing a documented click table (or raw Baidu-ULTR partitions) and
exporting a log's rows. Part of ``cltr.pipeline.stages``."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from cltr import clickmodels
from cltr.core.queries import Dataset
from cltr.data.click_artifact import ClicksArtifact, SplitClicks
from cltr.data.clicklog import (
    file_format,
    read_click_log,
    read_click_log_aggregated,
    simulated_rows,
)
from cltr.options import Options, option
from cltr.pipeline.stages.clicks import click_log_summary, click_logs
from cltr.pipeline.workspace import Artifact, Workspace, file_sha256


@dataclasses.dataclass(frozen=True)
class ImportOptions(Options):
    """How ``cltr clicks import`` reads a click log."""

    split: str = option(
        "train", "The split of the dataset the log was recorded on (its qids and documents).", choices=("train", "vali")
    )
    ignore_extra_columns: bool = option(
        False,
        "Ignore columns other than the documented ones (by default they are an error, so that a "
        "misspelt column is not silently dropped).",
        negatable=False,
    )
    log_format: str = option(
        "table",
        "table: one documented click table (LOG) for a prepared dataset; baidu-raw: raw Baidu-ULTR "
        "training partitions part-NNNNN.gz (LOG...), streamed one at a time into the click table "
        "--out (session, qid, docid = url md5, rank, click, ranker = the query's displayed ordering, "
        "dwell, first_click, last_click); no dataset is needed.",
        choices=("table", "baidu-raw"),
        flag="--format",
    )
    harvest_ranks: int | None = option(
        None,
        "With --format baidu-raw: also print the position bias at ranks 1..N by intervention "
        "harvesting over the queries' distinct displayed orderings (global all-pairs).",
        low=2,
        flag="--harvest",
    )
    chunk_rows: int | None = option(
        None,
        "For a log larger than memory: read it in chunks of this many rows, each checked as a whole "
        "file is, and store only its clicks and impressions per (document, rank, ranker, propensity) "
        "and its sessions per query (memory bound by those counts, not the rows; the same result for "
        "any chunk size). A session's rows must follow one another. Such a log trains every click "
        "method and gives propensity estimates; session-level learners, doubly robust corrections, "
        "export and learning curves over passes need the log imported whole.",
        low=1,
    )
    jobs: int = option(
        1,
        "With --format baidu-raw: read this many partitions side by side in worker processes "
        "(parsing a partition is one core's work; the same table).",
        low=1,
    )


@dataclasses.dataclass(frozen=True)
class ExportOptions(Options):
    """What ``cltr clicks export`` writes."""

    split: str = option("train", "Which split's log to write.", choices=("train", "vali"))
    with_features: bool = option(
        False,
        "Also write each row's feature vector, as columns f1..fd after the log's own.",
        negatable=False,
        flag="--features",
    )


def import_stage(
    workspace: Workspace,
    name: str,
    dataset: Dataset,
    fingerprint: str,
    path,
    *,
    split: str,
    ignore_extra_columns: bool = False,
    chunk_rows: int | None = None,
) -> tuple[Artifact, bool]:
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
    config: dict[str, Any] = {
        "dataset": fingerprint,
        "split": split,
        "file_sha256": file_sha256(path),
        "format": [separator, compression],
    }
    if ignore_extra_columns:  # only then, so that the keys of earlier imports stay the same
        config["ignore_extra_columns"] = True
    if chunk_rows is not None:
        config["aggregated"] = True

    def compute():
        queries = getattr(dataset, split)
        if chunk_rows is not None:
            counts = read_click_log_aggregated(
                path, queries, chunk_rows=chunk_rows, ignore_extra_columns=ignore_extra_columns
            )
            info = {
                **counts.summary(queries.relevant(dataset.relevant_from)),
                "file": str(path),
                "rows": counts.rows,
                "rankers": counts.n_rankers,
                "has_propensity": counts.has_propensity,
                "clicked_only": counts.clicked_only,
                "ignored_columns": list(counts.ignored_columns),
                "aggregated": True,
            }
            return SplitClicks(aggregated=counts, n_queries=queries.n_queries).arrays(), info
        rows = read_click_log(path, queries, ignore_extra_columns=ignore_extra_columns)
        log = rows.click_log(queries.n_queries)
        relevant = queries.relevant(dataset.relevant_from)
        info = {
            **click_log_summary(log, relevant),
            "file": str(path),
            "rows": int(len(rows.doc)),
            "rankers": int(rows.ranker.max()) + 1,
            "has_propensity": rows.has_propensity,
            "clicked_only": rows.clicked_only,
            "ignored_columns": list(rows.ignored_columns),
        }
        return SplitClicks(log=log, rows=rows).arrays(), info

    return workspace.cached(name, "imports", config, compute)


def imported_clicks_stage(workspace: Workspace, name: str, train: Artifact, vali: Artifact) -> tuple[Artifact, bool]:
    """A clicks artifact (what every method trains on) from an imported train and vali log."""
    config = {"imports": {"train": train.key, "vali": vali.key}}

    def compute():
        stored = ClicksArtifact(
            **{
                split: SplitClicks.from_arrays(part.arrays, where=f"imported {split} log {part.key}")
                for split, part in (("train", train), ("vali", vali))
            }
        )
        return stored.arrays(), {
            "train": train.info,
            "vali": vali.info,
            "rankers": max(train.info["rankers"], vali.info["rankers"]),
            "imported": True,
        }

    return workspace.cached(name, "clicks", config, compute)


def export_rows(clicks: Artifact, split: str, dataset: Dataset) -> dict[str, np.ndarray]:
    """The impressions of one split of any clicks artifact as a click table (export)."""
    queries = getattr(dataset, split)
    stored = ClicksArtifact.of(clicks).split(split)
    if stored.presented is not None:
        train_log, vali_log = click_logs(clicks)
        click_model = clickmodels.get(clicks.config.get("click_model", clickmodels.DEFAULT_MODEL))
        settings = click_model.parse_settings(
            {f.name: clicks.config[f.name] for f in click_model.settings.option_fields() if f.name in clicks.config}
        )
        rank_propensity = click_model.propensity
        of_rank = None if rank_propensity is None else (lambda rank: rank_propensity(rank, settings))
        return simulated_rows(
            train_log if split == "train" else vali_log,
            stored.presented.rank,
            stored.presented.pass_ranker,
            queries,
            of_rank,
            top_k=clicks.config.get("top_k"),
        )
    rows = stored.logged_rows(split)
    offsets = np.asarray(queries.offsets, dtype=np.int64)
    columns = {
        "session": rows.session,
        "qid": np.asarray(queries.qid)[rows.query],
        "doc": rows.doc - offsets[rows.query],
        "rank": rows.rank,
        "click": rows.click,
    }
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
