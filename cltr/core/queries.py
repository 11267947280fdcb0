"""The ``Queries`` and ``Dataset`` containers: a split is flat arrays plus query offsets.

Legend (paper Sec. 3 and 5.1):
    x_i, query instance      -> one query, rows ``offsets[q]:offsets[q+1]`` of ``X``
    phi(x, y)                -> ``X[doc]``, the feature vector of a (query, document) pair
    rel_i(y) in {0, 1}       -> ``labels[doc] >= relevant_from`` (graded labels binarized)

Every split is a flat array of documents plus query offsets: no padding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "Queries",
    "Dataset",
    "describe_convention",
    "check_queries",
    "concatenate_queries",
    "describe_split",
    "label_counts",
    "check_relevant_from",
    "default_passes",
    "passes_by_name",
    "LETOR_FEATURES",
    "YAHOO_FEATURES",
]

LETOR_FEATURES = 46
YAHOO_FEATURES = 700


@dataclass(frozen=True)
class Queries:
    """One split of a learning-to-rank dataset, stored flat.

    Attributes
    ----------
    X : ndarray, shape (n_docs, n_features)
        Feature matrix, C-contiguous float32 or float64, rows grouped by query.
    labels : ndarray, shape (n_docs,)
        Graded relevance labels (integers).
    qid : ndarray, shape (n_queries,)
        The query id of each query, as in the source file.
    offsets : ndarray, shape (n_queries + 1,)
        Query ``q`` owns rows ``offsets[q]:offsets[q+1]``; ``offsets[0] == 0``,
        ``offsets[-1] == n_docs``, strictly increasing (no empty query).
    docid : ndarray of object, shape (n_docs,), optional
        The document id of each row (str, or None where the source names none), as in
        LETOR's ``#docid = ...`` comments; None when the source has no document ids.
    """

    X: np.ndarray
    labels: np.ndarray
    qid: np.ndarray
    offsets: np.ndarray
    docid: np.ndarray | None = None

    @property
    def n_queries(self) -> int:
        return len(self.offsets) - 1

    @property
    def n_docs(self) -> int:
        return len(self.labels)

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def sizes(self) -> np.ndarray:
        """Number of candidate documents of each query, shape (n_queries,)."""
        return np.diff(self.offsets)

    @property
    def doc_query(self) -> np.ndarray:
        """Index of the query of each document, shape (n_docs,)."""
        return np.repeat(np.arange(self.n_queries), self.sizes)

    def relevant(self, relevant_from: int) -> np.ndarray:
        """Binarized relevance, shape (n_docs,) bool: ``labels >= relevant_from``."""
        return self.labels >= relevant_from

    def subset(self, queries: np.ndarray) -> Queries:
        """The split restricted to the given query indices (in the given order)."""
        queries = np.asarray(queries, dtype=np.int64)
        starts, ends = self.offsets[queries], self.offsets[queries + 1]
        sizes = ends - starts
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        rows = np.repeat(starts - offsets[:-1], sizes) + np.arange(offsets[-1])
        return Queries(
            X=np.ascontiguousarray(self.X[rows]),
            labels=self.labels[rows],
            qid=self.qid[queries],
            offsets=offsets,
            docid=None if self.docid is None else self.docid[rows],
        )


@dataclass(frozen=True)
class Dataset:
    """A prepared dataset: three splits, the metric convention and provenance.

    The convention is the binarization threshold ``relevant_from`` (relevant = label >=
    it) and ``dcg_base``, the base of the log in Avg DCG's gain 1/log(1 + rank) (e: the
    paper's; see ``cltr.core.ranking``). ``meta`` records where the data came from (files
    and their sha256, generator settings) so that the prepared artifact documents itself.
    """

    name: str
    train: Queries
    vali: Queries
    test: Queries
    relevant_from: int
    meta: dict = field(default_factory=dict)
    dcg_base: float = math.e

    def splits(self) -> dict[str, Queries]:
        return {"train": self.train, "vali": self.vali, "test": self.test}

    @property
    def convention(self) -> str:
        """The metric convention in words, printed with every table."""
        return describe_convention(self.relevant_from, self.dcg_base)


def describe_convention(relevant_from: int, dcg_base: float) -> str:
    log = "ln" if math.isclose(dcg_base, math.e) else f"log{dcg_base:g}"
    return (
        f"Avg DCG = mean of 1/{log}(1 + rank) over relevant test documents (label >= {relevant_from}); "
        f"Avg Rank = their mean rank"
    )


# -- checks shared by every source -------------------------------------------------------


def check_queries(queries: Queries, *, where: str = "queries") -> None:
    """Raise ``ValueError`` unless ``queries`` satisfies the container's invariants.

    Parameters
    ----------
    queries : Queries
        ``X`` of shape (n_docs, n_features), finite floats; ``labels`` of shape (n_docs,)
        integers; ``offsets`` of shape (n_queries + 1,) from 0 to n_docs, strictly
        increasing; ``qid`` of shape (n_queries,), distinct.
    where : str
        Named in the message (e.g. ``"train split of letor.npz"``).
    """
    X, labels, qid, offsets = queries.X, queries.labels, queries.qid, queries.offsets
    if X.ndim != 2 or X.dtype.kind != "f":
        raise ValueError(f"{where}: X must be a 2-D float array, found {X.ndim}-D {X.dtype}")
    if labels.ndim != 1 or labels.shape[0] != X.shape[0] or labels.dtype.kind not in "iu":
        raise ValueError(
            f"{where}: labels must be integers of shape ({X.shape[0]},), found {labels.dtype} of shape {labels.shape}"
        )
    if offsets.ndim != 1 or offsets.dtype.kind not in "iu" or len(offsets) < 2:
        raise ValueError(
            f"{where}: offsets must be integers of shape (n_queries + 1,) with "
            f"n_queries >= 1, found {offsets.dtype} of shape {offsets.shape}"
        )
    if offsets[0] != 0 or offsets[-1] != X.shape[0]:
        raise ValueError(
            f"{where}: offsets must run from 0 to n_docs = {X.shape[0]}, found {offsets[0]} to {offsets[-1]}"
        )
    empty = np.flatnonzero(np.diff(offsets) <= 0)
    if empty.size:
        raise ValueError(
            f"{where}: offsets must increase strictly (no empty query); query "
            f"{empty[0]} has {offsets[empty[0] + 1] - offsets[empty[0]]} rows"
        )
    if qid.shape != (len(offsets) - 1,):
        raise ValueError(f"{where}: qid must have shape ({len(offsets) - 1},), found {qid.shape}")
    values, counts = np.unique(qid, return_counts=True)
    if values.size < qid.size:
        raise ValueError(
            f"{where}: qid {values[np.argmax(counts > 1)]} names two queries; a query's rows must be contiguous"
        )
    if not np.isfinite(X).all():
        row = int(np.flatnonzero(~np.isfinite(X).all(axis=1))[0])
        raise ValueError(f"{where}: row {row} of X is not finite; feature values must be finite")


def concatenate_queries(parts: list[Queries]) -> Queries:
    """Stack splits with disjoint query ids into one, in the given order.

    Parameters
    ----------
    parts : list of Queries
        All with the same number of features.

    Returns
    -------
    Queries
        ``X`` of shape (sum of n_docs, n_features); offsets shifted accordingly; ``docid``
        when any part has one (None for the rows of a part without).
    """
    if not parts:
        raise ValueError("nothing to concatenate: parts is empty")
    widths = {q.n_features for q in parts}
    if len(widths) > 1:
        raise ValueError(f"cannot concatenate splits of different feature widths {sorted(widths)}")
    qid = np.concatenate([q.qid for q in parts])
    values, counts = np.unique(qid, return_counts=True)
    if values.size < qid.size:
        raise ValueError(
            f"cannot concatenate: qid {values[np.argmax(counts > 1)]} is in two parts; query ids must be disjoint"
        )
    shifts = np.cumsum([0] + [q.n_docs for q in parts[:-1]])
    offsets = np.concatenate([parts[0].offsets[:1]] + [q.offsets[1:] + s for q, s in zip(parts, shifts, strict=True)])
    docid = None
    if any(q.docid is not None for q in parts):  # a part without ids gets None for its rows
        docid = np.concatenate(
            [
                np.full(q.n_docs, None, dtype=object) if q.docid is None else np.asarray(q.docid, dtype=object)
                for q in parts
            ]
        )
    return Queries(
        X=np.ascontiguousarray(np.concatenate([q.X for q in parts])),
        labels=np.concatenate([q.labels for q in parts]),
        qid=qid,
        offsets=offsets.astype(np.int64),
        docid=docid,
    )


def default_passes(name: str, meta: dict) -> int:
    """Passes of simulated clicks over the training queries as in the paper: the
    ``default_passes`` its loader recorded in the prepared dataset's ``meta``; for a
    dataset recorded without (prepared by an older cltr, or generated on demand), by its
    name (``passes_by_name``)."""
    return int(meta.get("default_passes", passes_by_name(name)))


def passes_by_name(name: str) -> int:
    """The default passes of a dataset whose loader declares none: 10 for a name starting
    with "yahoo" (a Yahoo! subset given as SVMlight files, read as Yahoo by the figure specs'
    ``[datasets.yahoo]`` overrides too), 100 for any other."""
    return 10 if name.startswith("yahoo") else 100


def describe_split(queries: Queries, relevant_from: int) -> dict:
    """Counts of one split, as ``cltr prepare`` prints them.

    Parameters
    ----------
    queries : Queries
        The split, ``n_docs`` rows in ``n_queries`` queries.
    relevant_from : int
        Labels at least this are relevant.

    Returns
    -------
    dict
        ``queries``, ``documents``, ``relevant`` (relevant documents),
        ``queries_without_relevant`` (queries with no relevant document) and ``features``,
        all plain ints.
    """
    relevant = queries.relevant(relevant_from)
    per_query: np.ndarray | list[int] = (
        np.add.reduceat(relevant.astype(np.int64), queries.offsets[:-1]) if queries.n_docs else []
    )
    return {
        "queries": int(queries.n_queries),
        "documents": int(queries.n_docs),
        "relevant": int(relevant.sum()),
        "queries_without_relevant": int(np.sum(np.asarray(per_query) == 0)),
        "features": int(queries.n_features),
    }


def label_counts(labels: np.ndarray) -> dict[str, int]:
    values, counts = np.unique(labels, return_counts=True)
    return {str(int(v)): int(c) for v, c in zip(values, counts, strict=True)}


def check_relevant_from(relevant_from: int, label_range: tuple[int, int], source: str) -> None:
    low, high = label_range
    if isinstance(relevant_from, bool) or int(relevant_from) != relevant_from or not low < relevant_from <= high:
        raise ValueError(
            f"relevant_from must be an integer in {low + 1}..{high} for {source} "
            f"labels {low}..{high}, found {relevant_from!r}"
        )
