"""The click log and the drawing of independent clicks.

Legend (paper Sec. 3 and 5.1):
    q_i                      -> ``ClickLog.propensity[i]``, the propensity a learner divides by
    p_r = (1/r)^eta          -> ``position_propensity(rank, eta)``

Click models (``cltr.clickmodels``) produce ``ClickLog``s; those whose documents are
clicked independently within a session (position-based, trust bias) draw them with
``simulate_clicks``. Each click is one training example.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["ClickLog", "position_propensity", "simulate_clicks"]


@dataclass(frozen=True)
class ClickLog:
    """Clicks logged on one split, in pass order.

    Attributes
    ----------
    query : ndarray of int64, shape (n_clicks,)
        Query index (into the split) of each click.
    doc : ndarray of int64, shape (n_clicks,)
        Row of the clicked document in the split.
    rank : ndarray of int64, shape (n_clicks,)
        Rank at which the document was presented.
    propensity : ndarray of float64, shape (n_clicks,)
        Observation propensity q_i used for learning (model eta).
    pass_index : ndarray of int64, shape (n_clicks,)
        Pass over the queries in which the click happened, non-decreasing.
    n_passes : int
        Passes simulated; every pass presents every query once (one session).
    n_queries : int
        Queries in the split (sessions per pass).
    """

    query: np.ndarray
    doc: np.ndarray
    rank: np.ndarray
    propensity: np.ndarray
    pass_index: np.ndarray
    n_passes: int
    n_queries: int

    def __len__(self) -> int:
        return len(self.doc)

    @property
    def n_sessions(self) -> int:
        return self.n_passes * self.n_queries

    def first_passes(self, passes: int) -> "ClickLog":
        """The log of the first ``passes`` passes: a nested prefix, for learning curves."""
        if not 1 <= passes <= self.n_passes:
            raise ValueError(f"passes must be between 1 and {self.n_passes}, found {passes}")
        end = int(np.searchsorted(self.pass_index, passes, side="left"))
        return ClickLog(
            query=self.query[:end],
            doc=self.doc[:end],
            rank=self.rank[:end],
            propensity=self.propensity[:end],
            pass_index=self.pass_index[:end],
            n_passes=passes,
            n_queries=self.n_queries,
        )

    def with_propensity(self, propensity: np.ndarray) -> "ClickLog":
        """The same clicks told with other propensities (misspecification experiments)."""
        return ClickLog(self.query, self.doc, self.rank, np.asarray(propensity, dtype=np.float64),
                        self.pass_index, self.n_passes, self.n_queries)

    def arrays(self) -> dict[str, np.ndarray]:
        return {"query": self.query, "doc": self.doc, "rank": self.rank,
                "propensity": self.propensity, "pass_index": self.pass_index,
                "n_passes": np.int64(self.n_passes), "n_queries": np.int64(self.n_queries)}

    @classmethod
    def from_arrays(cls, arrays) -> "ClickLog":
        return cls(
            query=np.asarray(arrays["query"], dtype=np.int64),
            doc=np.asarray(arrays["doc"], dtype=np.int64),
            rank=np.asarray(arrays["rank"], dtype=np.int64),
            propensity=np.asarray(arrays["propensity"], dtype=np.float64),
            pass_index=np.asarray(arrays["pass_index"], dtype=np.int64),
            n_passes=int(arrays["n_passes"]),
            n_queries=int(arrays["n_queries"]),
        )


def position_propensity(rank: np.ndarray, eta: float) -> np.ndarray:
    """Examination propensity p_r = (1/r)^eta of the position-based model."""
    return np.power(1.0 / np.asarray(rank, dtype=np.float64), eta)


def simulate_clicks(
    rank: np.ndarray,
    click_probability: np.ndarray,
    propensity: np.ndarray,
    offsets: np.ndarray,
    *,
    passes: int,
    rng: np.random.Generator,
    chunk_impressions: int = 1 << 22,
    progress: Callable[[int], None] | None = None,
) -> ClickLog:
    """Draw ``passes`` independent sessions of every query and log each click.

    Sessions are drawn pass by pass, so the log is in pass order and its first k passes
    are what a k-pass simulation with the same generator would have produced.

    Parameters
    ----------
    rank, click_probability, propensity : ndarray, shape (n_docs,)
        Presented rank, per-session click probability and logged propensity of each
        document (e.g. from ``position_based_model``).
    offsets : ndarray, shape (n_queries + 1,)
    passes : int
    rng : numpy.random.Generator
    chunk_impressions : int
        Upper bound on impressions drawn at once (memory), without effect on the result.
    progress : callable, optional
        Called with the number of passes completed after each chunk.
    """
    if passes < 1:
        raise ValueError(f"passes must be at least 1, found {passes}")
    click_probability = np.asarray(click_probability, dtype=np.float64)
    sizes = np.diff(np.asarray(offsets, dtype=np.int64))
    doc_query = np.repeat(np.arange(len(sizes)), sizes)
    # Only documents that can be clicked need a draw per session; drawing for the others
    # too would not change the result, only waste time.
    clickable = np.flatnonzero(click_probability > 0)
    threshold = click_probability[clickable]
    passes_per_chunk = max(1, chunk_impressions // max(1, len(clickable)))
    found_pass, found_doc = [], []
    done = 0
    while done < passes:
        chunk = min(passes_per_chunk, passes - done)
        hit_pass, hit_col = np.nonzero(rng.random((chunk, len(clickable))) < threshold)
        found_pass.append(hit_pass + done)
        found_doc.append(clickable[hit_col])
        done += chunk
        if progress is not None:
            progress(done)
    pass_index = np.concatenate(found_pass).astype(np.int64) if found_pass else np.zeros(0, np.int64)
    doc = np.concatenate(found_doc).astype(np.int64) if found_doc else np.zeros(0, np.int64)
    return ClickLog(
        query=doc_query[doc].astype(np.int64),
        doc=doc,
        rank=np.asarray(rank, dtype=np.int64)[doc],
        propensity=np.asarray(propensity, dtype=np.float64)[doc],
        pass_index=pass_index,
        n_passes=passes,
        n_queries=len(sizes),
    )
