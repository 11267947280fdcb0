"""A clicks artifact as typed values: ``ClicksArtifact`` (train and vali) of ``SplitClicks``.

The workspace stores a clicks artifact as flat arrays under string keys; this module is the
one place that knows those keys. Each split is stored under ``<split>/`` in one of three
forms, and an imported log of one split (an ``imports`` artifact) is the same form without
the prefix:

simulated
    the click log (``query``, ``doc``, ``rank``, ``propensity``, ``pass_index``,
    ``n_passes``, ``n_queries``: ``ClickLog.arrays``), the presented rankings
    (``presented_rank``, ``pass_ranker``) and, for a top-k or sampled presentation, the
    policy-aware propensity of every document (``policy_propensity``);
imported whole
    the click log, and every impression row under ``rows/`` (``LoggedRows.arrays``);
imported in chunks
    the split's ``n_queries`` and the counts under ``agg/`` (``AggregatedRows.arrays``);
    no click log is stored, it is expanded from the counts (``SplitClicks.click_log``).

Reading checks that every key a form needs is there, with the kind of dtype and the shape
it must have, and names the artifact and the key where one is not; keys of no form are
left alone. Writing gives the keys in the order the stages have always written them, so
that an artifact written before this view and one written through it hold the same arrays.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from cltr.core.clicks import ClickLog
from cltr.data.clicklog import AggregatedRows, LoggedRows

__all__ = ["ClicksArtifact", "SplitClicks", "Presented", "SPLITS", "CHUNKED"]

SPLITS = ("train", "vali")

# the on-disk names: members of a split (a ClickLog's own are ClickLog.arrays'), and the
# sub-prefixes of an imported split's rows and counts
_LOG = ("query", "doc", "rank", "propensity", "pass_index", "n_passes", "n_queries")
_PRESENTED_RANK, _PASS_RANKER, _POLICY_PROPENSITY = "presented_rank", "pass_ranker", "policy_propensity"
_ROWS, _AGG = "rows/", "agg/"
_ROW_FIELDS = ("session", "query", "doc", "rank", "click", "propensity", "ranker")
_AGG_FIELDS = ("query", "doc", "rank", "ranker", "propensity", "impressions", "clicks", "sessions_per_query", "rows")
_N_QUERIES = "n_queries"

_INTEGER, _FLOAT = "iu", "f"
_KIND_NAMES = {_INTEGER: "integers", _FLOAT: "floats"}

CHUNKED = (
    "was imported in chunks (--chunk-rows), which keeps its clicks and impressions per document and rank, "
    "not its sessions: session-level learners, doubly robust corrections, export and learning curves need "
    "it imported whole"
)


class _Stored(Protocol):
    @property
    def key(self) -> str: ...

    @property
    def arrays(self) -> Mapping[str, np.ndarray]: ...


class _Reader:
    """Checked access to the members of one split: ``name`` is the key without the split's
    prefix, named in errors with it."""

    def __init__(self, arrays: Mapping[str, np.ndarray], where: str, prefix: str):
        self.arrays, self.where, self.prefix = arrays, where, prefix

    def has(self, name: str) -> bool:
        return name in self.arrays

    def fail(self, name: str, problem: str) -> ValueError:
        return ValueError(f"{self.where}: {self.prefix}{name} {problem}")

    def array(self, name: str, kind: str, *, ndim: int = 1, length: int | None = None, what: str = "") -> np.ndarray:
        if name not in self.arrays:
            raise ValueError(
                f"{self.where}: missing {self.prefix}{name}; the artifact is not a click log "
                f"this version of cltr reads (simulate or import it again)"
            )
        value = np.asarray(self.arrays[name])
        if value.dtype.kind not in kind:
            raise self.fail(name, f"holds {value.dtype}, expected {_KIND_NAMES[kind]}")
        if value.ndim != ndim:
            shape = "a scalar" if ndim == 0 else f"{ndim}-dimensional"
            raise self.fail(name, f"has shape {value.shape}, expected {shape}")
        if length is not None and value.shape[0] != length:
            raise self.fail(name, f"has length {value.shape[0]}, expected {length}{what}")
        return value

    def scalar(self, name: str) -> int:
        return int(self.array(name, _INTEGER, ndim=0))

    def columns(
        self, kinds: Mapping[str, str | None], *, sub: str = "", own: Mapping[str, tuple[int, str]] | None = None
    ) -> dict[str, np.ndarray]:
        """The members ``sub + name`` of ``kinds``: an integer scalar where the kind is None,
        else a 1-D array as long as the first one, or of the (length, what) ``own`` gives it."""
        found: dict[str, np.ndarray] = {}
        first: str | None = None
        for name, kind in kinds.items():
            if kind is None:
                found[name] = self.array(sub + name, _INTEGER, ndim=0)
            elif own and name in own:
                length, what = own[name]
                found[name] = self.array(sub + name, kind, length=length, what=what)
            elif first is None:
                first = name
                found[name] = self.array(sub + name, kind)
            else:
                found[name] = self.array(
                    sub + name, kind, length=found[first].shape[0], what=f", as {self.prefix}{sub}{first}"
                )
        return found


@dataclass(frozen=True)
class Presented:
    """The rankings a simulated log was presented with.

    Attributes
    ----------
    rank : ndarray of int, shape (K, n_docs)
        The presented rank of every document, one row per logging ranker (or per pass,
        where every pass draws its own ranking).
    pass_ranker : ndarray of int, shape (n_passes,)
        The row of ``rank`` each pass shows.
    """

    rank: np.ndarray
    pass_ranker: np.ndarray


@dataclass(frozen=True)
class SplitClicks:
    """One split of a clicks artifact.

    Exactly one of ``log`` and ``aggregated`` is set.

    Attributes
    ----------
    log : ClickLog or None
        The clicks, in pass order (simulated, or imported whole); None for an import in chunks.
    presented : Presented, optional
        A simulated log's presented rankings.
    policy_propensity : ndarray of float, shape (n_docs,), optional
        The examination of every document averaged over the logging policy (a top-k or
        sampled presentation whose click model's examination depends on the rank alone).
    rows : LoggedRows, optional
        Every impression row of a log imported whole.
    aggregated : AggregatedRows or None
        The counts of a log imported in chunks.
    n_queries : int
        Queries of the split (the log's own where there is a log).
    """

    log: ClickLog | None = None
    presented: Presented | None = None
    policy_propensity: np.ndarray | None = None
    rows: LoggedRows | None = None
    aggregated: AggregatedRows | None = None
    n_queries: int = -1

    def __post_init__(self) -> None:
        if (self.log is None) == (self.aggregated is None):
            raise ValueError(
                "a split of a clicks artifact holds either a click log or the counts of an import in "
                "chunks, exactly one"
            )
        if self.log is not None:
            if self.n_queries not in (-1, self.log.n_queries):
                raise ValueError(f"n_queries {self.n_queries} differs from the log's {self.log.n_queries}")
            object.__setattr__(self, "n_queries", self.log.n_queries)
        elif self.n_queries < 0:
            raise ValueError("the counts of an import in chunks need the split's n_queries")
        if self.aggregated is not None and (self.rows is not None or self.presented is not None):
            raise ValueError("an import in chunks keeps its counts only: no rows, no presented rankings")

    @property
    def simulated(self) -> bool:
        """Whether the clicks were simulated here (the presented rankings are known)."""
        return self.presented is not None

    def click_log(self) -> ClickLog:
        """The stored click log; an import in chunks stores counts, whose clicks are expanded
        here (``AggregatedRows.click_log``)."""
        if self.log is not None:
            return self.log
        assert self.aggregated is not None  # __post_init__: one of the two
        return self.aggregated.click_log(self.n_queries)

    @property
    def logged_propensity(self) -> np.ndarray:
        """The propensities the log came with (NaN where it has none): per click, or per cell
        of an import in chunks."""
        if self.log is not None:
            return self.log.propensity
        assert self.aggregated is not None
        return self.aggregated.propensity

    @property
    def clicked_only(self) -> bool:
        """Whether this is an imported log of clicked rows only (no impression of a document
        shown and not clicked); a simulated log never is."""
        if self.aggregated is not None:
            return self.aggregated.clicked_only
        return self.rows is not None and self.rows.clicked_only

    def logged_rows(self, split: str) -> LoggedRows:
        """The impression rows of a log imported whole; ``split`` names it in the error of any
        other."""
        if self.aggregated is not None:
            raise ValueError(f"the {split} log {CHUNKED}")
        if self.rows is None:
            raise ValueError(f"the {split} log was simulated: it keeps its presented rankings, not impression rows")
        return self.rows

    def arrays(self) -> dict[str, np.ndarray]:
        """The stored members, without the split's prefix (an ``imports`` artifact's arrays)."""
        arrays: dict[str, np.ndarray] = {}
        if self.aggregated is not None:
            arrays[_N_QUERIES] = np.int64(self.n_queries)  # type: ignore[assignment]  # a 0-d member
            arrays.update({_AGG + k: v for k, v in self.aggregated.arrays().items()})
        else:
            assert self.log is not None
            arrays.update(self.log.arrays())  # type: ignore[arg-type]  # its counts are 0-d members
        if self.rows is not None:
            arrays.update({_ROWS + k: v for k, v in self.rows.arrays().items()})
        if self.presented is not None:
            arrays[_PRESENTED_RANK] = self.presented.rank
            arrays[_PASS_RANKER] = self.presented.pass_ranker
        if self.policy_propensity is not None:
            arrays[_POLICY_PROPENSITY] = self.policy_propensity
        return arrays

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], *, where: str, prefix: str = "") -> SplitClicks:
        """The split stored in ``arrays`` (keys without its prefix), checked; ``where`` names
        the artifact and ``prefix`` the split in errors."""
        read = _Reader(arrays, where, prefix)
        if read.has(_AGG + "clicks"):
            n_queries = read.scalar(_N_QUERIES)
            kinds: dict[str, str | None] = {name: _INTEGER for name in _AGG_FIELDS}
            kinds.update(propensity=_FLOAT, rows=None)
            counts = read.columns(kinds, sub=_AGG, own={"sessions_per_query": (n_queries, ", one per query")})
            return cls(aggregated=AggregatedRows.from_arrays(counts), n_queries=n_queries)
        kinds = {name: _INTEGER for name in _LOG}
        kinds.update(propensity=_FLOAT, n_passes=None, n_queries=None)
        members = read.columns(kinds)
        n_clicks, n_queries = members["query"].shape[0], int(members["n_queries"])
        if read.has("sessions_per_query"):
            members["sessions_per_query"] = read.array(
                "sessions_per_query", _INTEGER, length=n_queries, what=", one per query"
            )
        if read.has("weight"):
            members["weight"] = read.array("weight", _FLOAT, length=n_clicks, what=", one per click")
        rows = None
        if any(read.has(_ROWS + name) for name in _ROW_FIELDS):
            kinds = {name: _INTEGER for name in _ROW_FIELDS}
            kinds.update(propensity=_FLOAT)
            rows = LoggedRows.from_arrays(read.columns(kinds, sub=_ROWS))
        presented = policy = None
        if read.has(_PRESENTED_RANK) or read.has(_PASS_RANKER):
            presented = Presented(
                rank=read.array(_PRESENTED_RANK, _INTEGER, ndim=2),
                pass_ranker=read.array(_PASS_RANKER, _INTEGER, length=int(members["n_passes"]), what=", one per pass"),
            )
        if read.has(_POLICY_PROPENSITY):
            n_docs = None if presented is None else presented.rank.shape[1]
            policy = read.array(_POLICY_PROPENSITY, _FLOAT, length=n_docs, what=", one per document")
        return cls(log=ClickLog.from_arrays(members), presented=presented, policy_propensity=policy, rows=rows)


@dataclass(frozen=True)
class ClicksArtifact:
    """The train and vali clicks of a clicks artifact (``SplitClicks``)."""

    train: SplitClicks
    vali: SplitClicks

    def split(self, name: str) -> SplitClicks:
        if name not in SPLITS:
            raise ValueError(f"a clicks artifact holds the splits {', '.join(SPLITS)}, not {name!r}")
        return self.train if name == "train" else self.vali

    def arrays(self) -> dict[str, np.ndarray]:
        """The stored members: each split's under ``<split>/``."""
        return {f"{name}/{k}": v for name in SPLITS for k, v in self.split(name).arrays().items()}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], *, where: str) -> ClicksArtifact:
        """The artifact stored in ``arrays``, every split checked; ``where`` names it in errors."""
        splits = {}
        for name in SPLITS:
            prefix = f"{name}/"
            members = {k[len(prefix) :]: v for k, v in arrays.items() if k.startswith(prefix)}
            splits[name] = SplitClicks.from_arrays(members, where=where, prefix=prefix)
        return cls(**splits)

    @classmethod
    def of(cls, artifact: _Stored) -> ClicksArtifact:
        """The view of a stored clicks artifact (anything with ``key`` and ``arrays``)."""
        return cls.from_arrays(artifact.arrays, where=f"clicks artifact {artifact.key}")
