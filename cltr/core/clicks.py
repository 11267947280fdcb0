"""The click log and the drawing of independent clicks.

Legend (paper Sec. 3 and 5.1):
    q_i                      -> ``ClickLog.propensity[i]``, the propensity a learner divides by
    p_r = (1/r)^eta          -> ``position_propensity(rank, eta)``

Click models (``cltr.clickmodels``) produce ``ClickLog``s; those whose documents are
clicked independently within a session (position-based, trust bias) draw them with
``simulate_clicks``. Each click is one training example.

The objectives (``cltr.core.objectives``, ``cltr.core.mlp``) read examples as ``Clicks``, the
three columns of a log they need -- query, document and cost c_i -- and nothing else:
``Clicks.from_log`` takes them from a ``ClickLog`` without copying the index columns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Clicks",
    "ClickLog",
    "Impressions",
    "Displayed",
    "presented_impressions",
    "aggregate_impressions",
    "effective_sample_size",
    "position_propensity",
    "simulate_clicks",
    "draw_sessions",
    "logged_clicks",
]


@dataclass(frozen=True)
class Clicks:
    """Training examples as the objectives read them: (query, document, cost) of each.

    The smallest value every caller of ``objectives.risk`` / ``risk_gradient`` /
    ``hinge_rank_bound`` and ``mlp.loss_and_gradient`` / ``click_batches`` needs: a learner
    gives example i the weight c_i alone, whether it came from a propensity (1/q_i) or a
    correction (the affine one's signed weights), so the objectives take the merged cost,
    not a propensity and an optional override. The hinge bound and the pair expansion read
    only ``query`` and ``doc``, and ``cost`` may then be left out.

    Attributes
    ----------
    query : ndarray of int64, shape (n_examples,)
        Query index (into the split, or a batch's local queries) of each example.
    doc : ndarray of int64, shape (n_examples,)
        Row of each example's clicked (positive) document, within its query's rows.
    cost : ndarray of float64, shape (n_examples,), optional
        c_i: 1 / q_i for a click of propensity q_i, or an explicit finite weight of either
        sign. None where only the rows matter (the bound, the pairs).

    Notes
    -----
    Arrays already of the right dtype are held as given, not copied.
    """

    query: np.ndarray
    doc: np.ndarray
    cost: np.ndarray | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "query", np.asarray(self.query, dtype=np.int64))
        object.__setattr__(self, "doc", np.asarray(self.doc, dtype=np.int64))
        if self.cost is not None:
            object.__setattr__(self, "cost", np.asarray(self.cost, dtype=np.float64))

    def __len__(self) -> int:
        return len(self.doc)

    @classmethod
    def from_log(cls, log: ClickLog) -> Clicks:
        """The examples of a click log: its ``query``, ``doc`` and ``cost`` (``weight`` if
        set, else 1 / ``propensity``)."""
        return cls(log.query, log.doc, log.cost)

    @classmethod
    def from_propensity(cls, query, doc, propensity) -> Clicks:
        """Clicks of propensities q_i, costing c_i = 1 / q_i.

        Raises
        ------
        ValueError
            Unless ``propensity`` has one entry per example, each finite and > 0, naming
            the first that is not.
        """
        query = np.asarray(query, dtype=np.int64)
        propensity = np.asarray(propensity, dtype=np.float64)
        if propensity.shape != query.shape:
            raise ValueError(f"propensity must have one entry per example, shape {query.shape}, got {propensity.shape}")
        bad = ~(np.isfinite(propensity) & (propensity > 0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"example {i}: propensity must be finite and > 0, got {float(propensity[i])}")
        return cls(query, doc, 1.0 / propensity)

    def take(self, index) -> Clicks:
        """The examples at ``index`` (an integer array, a mask or a slice), in that order."""
        return Clicks(self.query[index], self.doc[index], None if self.cost is None else self.cost[index])


@dataclass(frozen=True)
class ClickLog:
    """Clicks logged on one split, in pass order.

    A *pass* presents every query once; for an imported log, pass k of a query is its
    k-th session (in file order), so that the first k passes are a nested subset for
    learning curves either way.

    Attributes
    ----------
    query : ndarray of int64, shape (n_clicks,)
        Query index (into the split) of each click.
    doc : ndarray of int64, shape (n_clicks,)
        Row of the clicked document in the split.
    rank : ndarray of int64, shape (n_clicks,)
        Rank at which the document was presented.
    propensity : ndarray of float64, shape (n_clicks,)
        Observation propensity q_i used for learning (NaN where unknown: an imported log
        without a ``propensity`` column, to be estimated).
    pass_index : ndarray of int64, shape (n_clicks,)
        Pass over the queries in which the click happened, non-decreasing.
    n_passes : int
        Passes in the log (the most sessions any query has).
    n_queries : int
        Queries in the split.
    sessions_per_query : ndarray of int64, shape (n_queries,), optional
        Sessions of each query; None means ``n_passes`` for every query (simulated logs).
    weight : ndarray of float64, shape (n_clicks,), optional
        An explicit, possibly negative weight c_i per example, which learners use instead
        of 1 / propensity (``cost``). Set by corrections whose examples are not clicks
        divided by a propensity: the affine correction's examples are displayed documents
        with signed weights, aggregated over every pass (such a log cannot be cut into
        passes or clipped).
    """

    query: np.ndarray
    doc: np.ndarray
    rank: np.ndarray
    propensity: np.ndarray
    pass_index: np.ndarray
    n_passes: int
    n_queries: int
    sessions_per_query: np.ndarray | None = None
    weight: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.doc)

    @property
    def n_sessions(self) -> int:
        if self.sessions_per_query is None:
            return self.n_passes * self.n_queries
        return int(self.sessions_per_query.sum())

    @property
    def query_sessions(self) -> np.ndarray:
        """Sessions per query, shape (n_queries,): ``sessions_per_query`` of an imported log,
        else every query was shown once a pass."""
        if self.sessions_per_query is None:
            return np.full(self.n_queries, self.n_passes, dtype=np.int64)
        return self.sessions_per_query

    @property
    def session(self) -> np.ndarray:
        """A session id per click, shape (n_clicks,): pass · n_queries + query."""
        return self.pass_index * self.n_queries + self.query

    @property
    def cost(self) -> np.ndarray:
        """The weight c_i a learner gives each example: ``weight`` if set, else 1 / propensity."""
        return 1.0 / self.propensity if self.weight is None else self.weight

    def _replace(self, keep, **changes) -> ClickLog:
        fields = {
            "query": self.query[keep],
            "doc": self.doc[keep],
            "rank": self.rank[keep],
            "propensity": self.propensity[keep],
            "pass_index": self.pass_index[keep],
            "n_passes": self.n_passes,
            "n_queries": self.n_queries,
            "sessions_per_query": self.sessions_per_query,
            "weight": None if self.weight is None else self.weight[keep],
        }
        fields.update(changes)
        return ClickLog(**fields)

    def first_passes(self, passes: int) -> ClickLog:
        """The log of the first ``passes`` passes: a nested prefix, for learning curves."""
        if not 1 <= passes <= self.n_passes:
            raise ValueError(f"passes must be between 1 and {self.n_passes}, found {passes}")
        if self.weight is not None:
            raise ValueError(
                "this log's examples are weighted over all its passes (a correction such as affine); "
                "take the first passes before the correction"
            )
        end = int(np.searchsorted(self.pass_index, passes, side="left"))
        spq = None if self.sessions_per_query is None else np.minimum(self.sessions_per_query, passes)
        return self._replace(slice(0, end), n_passes=passes, sessions_per_query=spq)

    def with_propensity(self, propensity: np.ndarray) -> ClickLog:
        """The same clicks told with other propensities (misspecification, estimates)."""
        if self.weight is not None:
            raise ValueError(
                "this log's examples carry explicit weights (a correction such as affine), which "
                "propensities would not change; change the propensities before the correction"
            )
        return self._replace(slice(None), propensity=np.asarray(propensity, dtype=np.float64))

    def clipped(self, tau: float) -> ClickLog:
        """Propensities below ``tau`` raised to ``tau`` (Joachims et al. 2017's clipping)."""
        if not 0 < tau <= 1:
            raise ValueError(f"the clipping threshold must lie in (0, 1], found {tau}")
        if self.weight is not None:
            raise ValueError(
                "clipping raises propensities, and this log's examples carry explicit weights instead "
                "(a correction such as affine): train it without --clip"
            )
        return self.with_propensity(np.maximum(self.propensity, tau))

    def arrays(self) -> dict[str, np.ndarray | np.int64]:
        arrays: dict[str, np.ndarray | np.int64] = {
            "query": self.query,
            "doc": self.doc,
            "rank": self.rank,
            "propensity": self.propensity,
            "pass_index": self.pass_index,
            "n_passes": np.int64(self.n_passes),
            "n_queries": np.int64(self.n_queries),
        }
        if self.sessions_per_query is not None:
            arrays["sessions_per_query"] = self.sessions_per_query
        if self.weight is not None:
            arrays["weight"] = self.weight
        return arrays

    @classmethod
    def from_arrays(cls, arrays) -> ClickLog:
        spq = arrays.get("sessions_per_query") if hasattr(arrays, "get") else None
        weight = arrays.get("weight") if hasattr(arrays, "get") else None
        return cls(
            query=np.asarray(arrays["query"], dtype=np.int64),
            doc=np.asarray(arrays["doc"], dtype=np.int64),
            rank=np.asarray(arrays["rank"], dtype=np.int64),
            propensity=np.asarray(arrays["propensity"], dtype=np.float64),
            pass_index=np.asarray(arrays["pass_index"], dtype=np.int64),
            n_passes=int(arrays["n_passes"]),
            n_queries=int(arrays["n_queries"]),
            sessions_per_query=None if spq is None else np.asarray(spq, dtype=np.int64),
            weight=None if weight is None else np.asarray(weight, dtype=np.float64),
        )


def effective_sample_size(weights: np.ndarray) -> float:
    """Kish's effective sample size (Σ w)² / Σ w² of importance weights (e.g. 1/q_i).

    The weights are divided by the largest |w| first (the ratio is scale-free): squared as
    given, one weight of 1e300 (a propensity of 1e-300) overflows both sums to inf and the
    ratio to NaN, where the answer is about 1, one click carrying the whole estimate.
    """
    weights = np.asarray(weights, dtype=np.float64)
    largest = float(np.max(np.abs(weights), initial=0.0))
    if not largest > 0:
        return 0.0
    if not np.isfinite(largest):
        raise ValueError(f"importance weights must be finite, found {largest!r}")
    scaled = weights / largest
    square = float(np.sum(scaled * scaled))
    return float(np.sum(scaled) ** 2 / square)


@dataclass(frozen=True)
class Impressions:
    """Aggregated impressions: one row per distinct (document, rank, ranker).

    What the propensity estimators read (``cltr.core.propensity``): how often each
    document was shown at each rank by each logging ranker, and clicked there.

    Attributes
    ----------
    query, doc, rank, ranker, impressions, clicks : ndarray of int64, shape (m,)
    """

    query: np.ndarray
    doc: np.ndarray
    rank: np.ndarray
    ranker: np.ndarray
    impressions: np.ndarray
    clicks: np.ndarray

    @property
    def n_rankers(self) -> int:
        return int(self.ranker.max()) + 1 if len(self.ranker) else 0


@dataclass(frozen=True)
class Displayed:
    """Every displayed document of every session of one split: what session-level learners
    (the tree libraries' position debiasing, pairwise debiasing, two-tower models) and the
    doubly robust correction read, where ``ClickLog`` holds the clicks alone.

    Rows are ordered by session, then rank; sessions are numbered 0.. in pass order (a
    simulated log's session p · n_queries + q, an imported log's in file order within its
    pass), so the rows of the first k passes are a prefix.

    Attributes
    ----------
    session : ndarray of int64, shape (n_rows,)
        Session of each row, 0..n_sessions-1, non-decreasing.
    query : ndarray of int64, shape (n_rows,)
        Query index into the split.
    doc : ndarray of int64, shape (n_rows,)
        Row of the document in the split.
    rank : ndarray of int64, shape (n_rows,)
        1-based displayed rank.
    click : ndarray of int8, shape (n_rows,)
        1 where the document was clicked in that session.
    propensity : ndarray of float64, shape (n_rows,)
        The observation propensity of the row's rank as the learner is told it (the log's
        own, an estimate, a misspecified eta, clipped; NaN where unknown): for clicked rows
        the same q_i as the ``ClickLog``.
    ranker : ndarray of int64, shape (n_rows,)
        Logging ranker of the session.
    """

    session: np.ndarray
    query: np.ndarray
    doc: np.ndarray
    rank: np.ndarray
    click: np.ndarray
    propensity: np.ndarray
    ranker: np.ndarray

    def __len__(self) -> int:
        return len(self.doc)

    @property
    def n_sessions(self) -> int:
        return int(self.session[-1]) + 1 if len(self.session) else 0

    def session_offsets(self) -> np.ndarray:
        """Row offsets of the sessions, shape (n_sessions + 1,)."""
        return np.concatenate([[0], np.cumsum(np.bincount(self.session, minlength=self.n_sessions))]).astype(np.int64)

    def impressions(self) -> Impressions:
        """Aggregated by (document, rank, ranker)."""
        return aggregate_impressions(self.query, self.doc, self.rank, self.ranker, self.click)

    @classmethod
    def from_columns(cls, *, session, query, doc, rank, click, propensity, ranker) -> Displayed:
        """Rows in any order, with any session labels: renumbered 0.. in order of first
        appearance and sorted by (session, rank)."""
        session = np.asarray(session)
        _, first, inverse = np.unique(session, return_index=True, return_inverse=True)
        renumber = np.empty(len(first), dtype=np.int64)
        renumber[np.argsort(first, kind="stable")] = np.arange(len(first))
        session = renumber[inverse.ravel()]
        rank = np.asarray(rank, dtype=np.int64)
        order = np.lexsort((rank, session))
        return cls(
            session=session[order],
            query=np.asarray(query, dtype=np.int64)[order],
            doc=np.asarray(doc, dtype=np.int64)[order],
            rank=rank[order],
            click=np.asarray(click, dtype=np.int8)[order],
            propensity=np.asarray(propensity, dtype=np.float64)[order],
            ranker=np.asarray(ranker, dtype=np.int64)[order],
        )


def presented_impressions(
    presented_rank: np.ndarray, pass_ranker: np.ndarray, log: ClickLog, offsets: np.ndarray, *, top_k: int | None = None
) -> Impressions:
    """Impressions of a simulated log: pass p shows every document of every query at
    ``presented_rank[pass_ranker[p], doc]`` (only ranks 1..``top_k`` with a top-k display).

    Parameters
    ----------
    presented_rank : ndarray of int, shape (n_rankers, n_docs)
    pass_ranker : ndarray of int, shape (n_passes,)
    log : ClickLog
    offsets : ndarray, shape (n_queries + 1,)
    top_k : int, optional
    """
    presented_rank = np.atleast_2d(np.asarray(presented_rank, dtype=np.int64))
    pass_ranker = np.asarray(pass_ranker, dtype=np.int64)[: log.n_passes]
    n_rankers, n_docs = presented_rank.shape
    sizes: np.ndarray = np.diff(np.asarray(offsets, dtype=np.int64))
    doc_query = np.repeat(np.arange(len(offsets) - 1), sizes)
    sessions = np.bincount(pass_ranker, minlength=n_rankers)
    click_ranker = pass_ranker[log.pass_index]
    clicks = np.bincount(click_ranker * n_docs + log.doc, minlength=n_rankers * n_docs).reshape(n_rankers, n_docs)
    used = np.flatnonzero(sessions > 0)
    docs = np.arange(n_docs)
    table = Impressions(
        query=np.tile(doc_query, len(used)),
        doc=np.tile(docs, len(used)),
        rank=presented_rank[used].ravel(),
        ranker=np.repeat(used, n_docs),
        impressions=np.repeat(sessions[used], n_docs),
        clicks=clicks[used].ravel(),
    )
    if top_k is None:
        return table
    shown = table.rank <= top_k
    return Impressions(
        *(getattr(table, name)[shown] for name in ("query", "doc", "rank", "ranker", "impressions", "clicks"))
    )


def aggregate_impressions(query, doc, rank, ranker, click) -> Impressions:
    """Impressions of explicit rows (an imported log): one row per displayed document of a
    session, aggregated over sessions by (document, rank, ranker)."""
    doc = np.asarray(doc, dtype=np.int64)
    rank = np.asarray(rank, dtype=np.int64)
    ranker = np.asarray(ranker, dtype=np.int64)
    if len(doc) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return Impressions(empty, empty, empty, empty, empty, empty)
    # one int64 key per (document, rank, ranker): a 1-D unique sorts far faster than rows
    ranks, rankers = int(rank.max()) + 1, int(ranker.max()) + 1
    key = (doc * ranks + rank) * rankers + ranker
    unique, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return Impressions(
        query=np.asarray(query, dtype=np.int64)[first],
        doc=doc[first],
        rank=rank[first],
        ranker=ranker[first],
        impressions=np.bincount(inverse, minlength=len(unique)),
        clicks=np.bincount(inverse, weights=np.asarray(click, dtype=np.float64), minlength=len(unique)).astype(
            np.int64
        ),
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
    click_probability = np.asarray(click_probability, dtype=np.float64)
    # Only documents that can be clicked need a draw per session; drawing for the others
    # too would not change the result, only waste time.
    clickable = np.flatnonzero(click_probability > 0)
    threshold = click_probability[clickable]

    def draw(chunk):
        hit_pass, hit_col = np.nonzero(rng.random((chunk, len(clickable))) < threshold)
        return hit_pass, clickable[hit_col]

    pass_index, doc = draw_sessions(
        draw, passes=passes, draws_per_pass=len(clickable), chunk_impressions=chunk_impressions, progress=progress
    )
    return logged_clicks(doc, pass_index, rank=rank, propensity=propensity, offsets=offsets, passes=passes)


def draw_sessions(
    draw: Callable[[int], tuple[np.ndarray, np.ndarray]],
    *,
    passes: int,
    draws_per_pass: int,
    chunk_impressions: int,
    progress: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The pass loop every click simulator shares: ``draw(chunk)`` simulates ``chunk``
    passes at once and returns (pass within the chunk, document) of each click; chunks hold
    at most ``chunk_impressions`` of the ``draws_per_pass`` random draws a pass needs (at
    least one pass), and ``progress`` hears the passes done after each. Returns the clicks'
    (pass_index, doc), int64, in the order drawn."""
    if passes < 1:
        raise ValueError(f"passes must be at least 1, found {passes}")
    passes_per_chunk = max(1, chunk_impressions // max(1, draws_per_pass))
    found_pass, found_doc = [], []
    done = 0
    while done < passes:
        chunk = min(passes_per_chunk, passes - done)
        hit_pass, hit_doc = draw(chunk)
        found_pass.append(hit_pass + done)
        found_doc.append(hit_doc)
        done += chunk
        if progress is not None:
            progress(done)
    pass_index = np.concatenate(found_pass).astype(np.int64) if found_pass else np.zeros(0, np.int64)
    doc = np.concatenate(found_doc).astype(np.int64) if found_doc else np.zeros(0, np.int64)
    return pass_index, doc


def logged_clicks(doc: np.ndarray, pass_index: np.ndarray, *, rank, propensity, offsets, passes: int) -> ClickLog:
    """The ``ClickLog`` of simulated clicks (int64 ``doc``, ``pass_index``): each document's
    query, presented rank and logged propensity looked up from the per-document arrays."""
    sizes: np.ndarray = np.diff(np.asarray(offsets, dtype=np.int64))
    doc_query = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
    return ClickLog(
        query=doc_query[doc],
        doc=doc,
        rank=np.asarray(rank, dtype=np.int64)[doc],
        propensity=np.asarray(propensity, dtype=np.float64)[doc],
        pass_index=pass_index,
        n_passes=passes,
        n_queries=len(sizes),
    )
