"""Learning-to-rank datasets: the ``Queries`` container, loaders and the synthetic default.

Legend (paper Sec. 3 and 5.1):
    x_i, query instance      -> one query, rows ``offsets[q]:offsets[q+1]`` of ``X``
    phi(x, y)                -> ``X[doc]``, the feature vector of a (query, document) pair
    rel_i(y) in {0, 1}       -> ``labels[doc] >= relevant_from`` (graded labels binarized)

Every split is a flat array of documents plus query offsets: no padding.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Queries", "Dataset"]


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
    """

    X: np.ndarray
    labels: np.ndarray
    qid: np.ndarray
    offsets: np.ndarray

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

    def subset(self, queries: np.ndarray) -> "Queries":
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
        )


@dataclass(frozen=True)
class Dataset:
    """A prepared dataset: three splits, the binarization threshold and provenance.

    ``meta`` records where the data came from (files and their sha256, generator
    settings) so that the prepared artifact documents itself.
    """

    name: str
    train: Queries
    vali: Queries
    test: Queries
    relevant_from: int
    meta: dict = field(default_factory=dict)

    def splits(self) -> dict[str, Queries]:
        return {"train": self.train, "vali": self.vali, "test": self.test}
