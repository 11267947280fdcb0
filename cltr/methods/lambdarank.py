"""LambdaRank on click labels (paper Sec. 5's baseline): LightGBM's lambdarank objective
with clicks as relevance labels; learning rate and leaves chosen, and trees
early-stopped, on validation clicks (``trees.select_trees``).

Legend (paper Sec. 5, "LambdaRank" baseline; DESIGN.md "Baselines"):
    clicks as labels       -> ``ClickLabels.label``: 1 for a clicked document, else 0
    one LightGBM query     -> ``ClickLabels.group``: a group of consecutive rows
    "no split uses more than 50% of the features" -> ``feature_fraction_bynode = 0.5``
    learning rate, leaves  -> chosen on validation clicks by the SNIPS Avg DCG estimate
    number of trees        -> early stopping on the same estimate

Presets: ``tuned`` (the default) chooses learning rate and leaves over the grids of
``trees`` by SNIPS Avg DCG on validation clicks. ``paper`` is the baseline as the paper
ran it (Sec. 5.2): learning rate 0.1, 4 leaves on LETOR-width data and 64 on Yahoo's (the
values its grid search chose), trees early-stopped on the average DCG of the clicked
validation documents, each click weighted 1 (``TrainingData.clicked_avg_dcg``).

Click labels (the choice, documented): with ``labels="documents"`` (the default, as the
paper describes the baseline) a document is relevant iff it was clicked at least once in
the click log in use, and each query is one group of all its candidate documents. With
``labels="sessions"`` every session (query, pass) with at least one click is its own
group of all the query's candidates, labelled 1 where clicked in that session, so a
document clicked in many sessions weighs more. In both, a group without any clicked
document is left out of the training set: LambdaRank has no pair to order there (its
gradients are zero), and keeping its rows would only make ``min_data_in_leaf`` count
documents that carry no information. Validation documents are never left out: the
selection criterion ranks every candidate of every validation query.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from cltr.core.clicks import ClickLog
from cltr.core.queries import Queries
from cltr.methods import Method, TrainingData
from cltr.methods.trees import TreeOptions, select_trees
from cltr.options import option

__all__ = ["ClickLabels", "click_labels", "LambdaRankOptions", "paper_leaves", "METHOD"]

ORDER = 20
LABEL_CHOICES = ("documents", "sessions")


PRESETS = ("tuned", "paper")
# the paper's chosen leaves: 4 on LETOR (46 features), 64 on Yahoo (700)
PAPER_LEAVES = {"letor": 4, "yahoo": 64}
PAPER_LEARNING_RATE = 0.1


@dataclass(frozen=True)
class LambdaRankOptions(TreeOptions):
    labels: str = option(
        "documents",
        "documents: one group per query, relevant iff clicked at least once; "
        "sessions: one group per session with a click, relevant iff clicked in it.",
        choices=LABEL_CHOICES,
    )
    preset: str = option(
        "tuned",
        "tuned: learning rate and leaves chosen by SNIPS Avg DCG on validation clicks; "
        "paper: the paper's run (learning rate 0.1, 4 leaves, or 64 on Yahoo-width data "
        "of 500+ features; trees early-stopped on the unweighted average DCG of the "
        "clicked validation documents).",
        choices=PRESETS,
    )


def paper_leaves(n_features: int) -> int:
    """The paper's leaves for data of this width: Yahoo's 64 from 500 features, else LETOR's 4."""
    return PAPER_LEAVES["yahoo"] if n_features >= 500 else PAPER_LEAVES["letor"]


@dataclass(frozen=True)
class ClickLabels:
    """A LightGBM ranking training set made from clicks.

    Attributes
    ----------
    rows : ndarray of int64, shape (n_rows,)
        Row of the split's ``X`` behind each training row (a row repeats under
        ``labels="sessions"``).
    label : ndarray of float64, shape (n_rows,)
        1.0 for a clicked document, 0.0 otherwise.
    group : ndarray of int64, shape (n_groups,)
        Sizes of consecutive groups; ``group.sum() == n_rows``.
    group_query : ndarray of int64, shape (n_groups,)
        Query (index into the split) of each group.
    """

    rows: np.ndarray
    label: np.ndarray
    group: np.ndarray
    group_query: np.ndarray


def _query_rows(offsets: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of the given queries, concatenated in order, and the start of each block."""
    starts, sizes = offsets[queries], offsets[queries + 1] - offsets[queries]
    block_start = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    rows = np.repeat(starts - block_start[:-1], sizes) + np.arange(block_start[-1])
    return rows.astype(np.int64), block_start[:-1]


def click_labels(queries: Queries, log: ClickLog, *, labels: str = "documents") -> ClickLabels:
    """Turn a click log into LightGBM ranking rows, labels and groups (see the module doc).

    Parameters
    ----------
    queries : Queries
        The split the clicks were logged on (``n_docs`` rows).
    log : ClickLog
        Its clicks; ``log.doc`` indexes ``queries`` rows.
    labels : {"documents", "sessions"}
        One group per query with a click, a document relevant iff ever clicked; or one
        group per session with a click, relevant iff clicked in that session.

    Returns
    -------
    ClickLabels
        Groups without any click are left out.
    """
    if labels not in LABEL_CHOICES:
        raise ValueError(f"labels must be one of {', '.join(LABEL_CHOICES)}, found {labels!r}")
    offsets = np.asarray(queries.offsets, dtype=np.int64)
    if len(log) and (log.doc.max() >= queries.n_docs or log.query.max() >= queries.n_queries):
        raise ValueError(
            f"the click log refers to documents beyond the split's {queries.n_docs} rows; "
            "it was logged on another split"
        )
    if labels == "documents":
        clicked = np.bincount(log.doc, minlength=queries.n_docs) > 0
        kept = np.flatnonzero(np.bincount(log.query, minlength=queries.n_queries) > 0)
        rows, _ = _query_rows(offsets, kept)
        return ClickLabels(
            rows=rows,
            label=clicked[rows].astype(np.float64),
            group=(offsets[kept + 1] - offsets[kept]).astype(np.int64),
            group_query=kept.astype(np.int64),
        )
    # One group per (pass, query) with a click, in log (pass) order.
    session = log.pass_index.astype(np.int64) * queries.n_queries + log.query
    unique_sessions, session_of_click = np.unique(session, return_inverse=True)
    group_query = (unique_sessions % queries.n_queries).astype(np.int64)
    rows, block_start = _query_rows(offsets, group_query)
    label = np.zeros(len(rows))
    label[block_start[session_of_click] + (log.doc - offsets[log.query])] = 1.0
    return ClickLabels(
        rows=rows,
        label=label,
        group=(offsets[group_query + 1] - offsets[group_query]).astype(np.int64),
        group_query=group_query,
    )


def train(data: TrainingData, options: LambdaRankOptions, *, progress=None):
    """Grid over learning rate and leaves, trees by early stopping, all on validation clicks."""
    click = click_labels(data.dataset.train, data.train_log, labels=options.labels)
    if len(click.group) == 0:
        raise ValueError("no training query has a clicked document; LambdaRank has nothing to learn from")
    X = data.dataset.train.X[click.rows]
    common = {
        "name": "lambdarank",
        "X": X,
        "label": click.label,
        "group": click.group,
        "objective": None,
        "progress": progress,
    }
    if options.preset == "paper":
        options = replace(
            options,
            learning_rate=options.learning_rate or PAPER_LEARNING_RATE,
            num_leaves=options.num_leaves or paper_leaves(X.shape[1]),
        )
        scorer, info = select_trees(
            data, options, estimate=data.clicked_avg_dcg, criterion_name="validation_clicked_avg_dcg", **common
        )
        info["validation_snips_avg_dcg"] = data.estimate(scorer)
    else:
        scorer, info = select_trees(data, options, **common)
    info.update(
        {
            "labels": options.labels,
            "preset": options.preset,
            "training_rows": int(len(click.rows)),
            "training_groups": int(len(click.group)),
        }
    )
    return scorer, info


METHOD = Method(
    name="lambdarank",
    label="LambdaRank",
    options=LambdaRankOptions,
    train=train,
    weighted=False,
    tuned_once=("learning_rate", "num_leaves"),
    summary="LightGBM LambdaRank on click labels (trees, early stopping).",
    description="LambdaRank (LightGBM) with clicks as labels, as the paper's baseline: with --labels documents a "
    "document is relevant iff clicked at least once in the log; queries (or sessions) without a click "
    "are left out, having no pair to order. Learning rate and leaves are chosen, and the number of "
    "trees early-stopped, by SNIPS Avg DCG on validation clicks (--preset tuned), or fixed at the "
    "paper's learning rate 0.1 and 4 leaves (64 on Yahoo) with trees early-stopped on the clicked "
    "validation documents' average DCG (--preset paper); no split uses more than half of the features.",
    scorer="lightgbm",
)
