"""The click-log file format: import a logged click table, export any click log.

A click log is a table with one row per *displayed document* of a result page (an
impression), as CSV or TSV (by extension: ``.csv``, ``.tsv``/``.txt``, optionally
compressed ``.gz``/``.xz``/``.bz2``) or Parquet (``.parquet``, with the optional pyarrow).
Columns:

    session     one result page shown to one user (string or integer)
    qid         the query, as in the features file
    doc         the document's 0-based position within its query's block of the
                features file, **or** ``docid``: the id of the features file's
                ``#docid = ...`` comment
    rank        the 1-based position at which it was displayed
    click       0 or 1
    propensity  optional: a known observation propensity of that impression, in (0, 1]
    ranker      optional: which logging ranker produced the page (integer or string)

Every row is validated; the first bad row is reported with the file and its line (the
header is line 1) and nothing is kept. Sessions without any click are kept: they count
as sessions and as impressions for propensity estimation, though they add no training
example.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from cltr.core.clicks import ClickLog, Impressions, aggregate_impressions
from cltr.core.queries import Queries

__all__ = ["LoggedRows", "read_click_log", "write_click_log", "simulated_rows", "REQUIRED", "OPTIONAL"]

REQUIRED = ("session", "qid", "rank", "click")
OPTIONAL = ("propensity", "ranker")
_FORMATS = {".csv": ",", ".tsv": "\t", ".txt": "\t"}
_COMPRESSIONS = {".gz": "gzip", ".xz": "xz", ".bz2": "bz2"}


def _format(path: Path) -> tuple[str, str | None]:
    """("parquet" | separator, compression) from the file's extensions."""
    suffixes = [s.lower() for s in path.suffixes]
    compression = _COMPRESSIONS.get(suffixes[-1]) if suffixes else None
    kind = suffixes[-2] if compression and len(suffixes) > 1 else (suffixes[-1] if suffixes else "")
    if kind == ".parquet":
        return "parquet", compression
    if kind not in _FORMATS:
        raise ValueError(f"{path}: cannot tell the format from the extension {''.join(path.suffixes) or '(none)'}; "
                         f"use .csv, .tsv or .parquet (optionally .gz, .xz or .bz2)")
    return _FORMATS[kind], compression


@dataclass(frozen=True)
class LoggedRows:
    """A validated click table, one row per impression, in file order.

    Attributes
    ----------
    session : ndarray of int64, shape (n_rows,)
        Session index, 0.. in order of first appearance.
    query : ndarray of int64, shape (n_rows,)
        Query index into the split.
    doc : ndarray of int64, shape (n_rows,)
        Row of the document in the split.
    rank, click : ndarray of int64, shape (n_rows,)
    propensity : ndarray of float64, shape (n_rows,)
        NaN where the log has no propensity column.
    ranker : ndarray of int64, shape (n_rows,)
        0 where the log has no ranker column; strings are numbered in order of appearance.
    session_names, ranker_names : list of str
        The file's session and ranker values, for export.
    """

    session: np.ndarray
    query: np.ndarray
    doc: np.ndarray
    rank: np.ndarray
    click: np.ndarray
    propensity: np.ndarray
    ranker: np.ndarray

    def arrays(self) -> dict[str, np.ndarray]:
        return {name: getattr(self, name) for name in ("session", "query", "doc", "rank", "click", "propensity",
                                                       "ranker")}

    @classmethod
    def from_arrays(cls, arrays) -> "LoggedRows":
        return cls(**{name: np.asarray(arrays[name]) for name in ("session", "query", "doc", "rank", "click",
                                                                   "propensity", "ranker")})

    @property
    def has_propensity(self) -> bool:
        return bool(len(self.propensity)) and not np.isnan(self.propensity).all()

    def impressions(self) -> Impressions:
        return aggregate_impressions(self.query, self.doc, self.rank, self.ranker, self.click)

    def session_passes(self, n_queries: int) -> tuple[np.ndarray, np.ndarray]:
        """``(session_pass, per_query)``: the pass of each session (its position among its
        query's sessions in file order), shape (n_sessions,), and the sessions of each query,
        shape (n_queries,)."""
        n_sessions = int(self.session.max()) + 1 if len(self.session) else 0
        session_query = np.zeros(n_sessions, dtype=np.int64)
        session_query[self.session] = self.query
        # sessions are numbered by first appearance, so a stable sort by query keeps file
        # order within a query
        order = np.argsort(session_query, kind="stable")
        per_query = np.bincount(session_query, minlength=n_queries)
        starts = np.concatenate([[0], np.cumsum(per_query)[:-1]])
        session_pass = np.empty(n_sessions, dtype=np.int64)
        session_pass[order] = np.arange(n_sessions) - np.repeat(starts, per_query)
        return session_pass, per_query

    def click_log(self, n_queries: int) -> ClickLog:
        """The training examples: every click, in pass order (pass k of a query = its k-th
        session in file order), then by document row, as a simulated log is ordered."""
        n_sessions = int(self.session.max()) + 1 if len(self.session) else 0
        session_pass, per_query = self.session_passes(n_queries)
        clicked = np.flatnonzero(self.click == 1)
        pass_index = session_pass[self.session[clicked]]
        clicked = clicked[np.lexsort((self.doc[clicked], pass_index))]
        return ClickLog(query=self.query[clicked], doc=self.doc[clicked], rank=self.rank[clicked],
                        propensity=self.propensity[clicked].astype(np.float64),
                        pass_index=session_pass[self.session[clicked]],
                        n_passes=int(per_query.max()) if n_sessions else 0, n_queries=n_queries,
                        sessions_per_query=per_query.astype(np.int64))


def _read_table(path: Path) -> pd.DataFrame:
    kind, compression = _format(path)
    try:
        if kind == "parquet":
            try:
                import pyarrow  # noqa: F401  (the optional extra)
            except ImportError:
                raise ValueError(f"{path}: reading Parquet needs pyarrow: pip install 'cltr[parquet]'") from None
            return _released(pd.read_parquet(path))
        engine = {}
        try:
            import pyarrow  # noqa: F401

            engine = {"engine": "pyarrow"} if compression is None else {}
        except ImportError:
            pass
        # docids are text even when they look like numbers ("007" is not 7); asking pyarrow
        # for that costs pandas a slower conversion of every column, so only when needed
        text = {"docid": str} if engine and "docid" in _header(path, kind) else None
        frame = pd.read_csv(path, sep=kind, compression=compression, dtype=text if engine else str,
                            keep_default_na=False, **engine)
        if not engine:
            return frame
        for name in frame.columns[frame.dtypes == bool]:
            # pyarrow reads a column of true/false as booleans; the other engine keeps the
            # text, which no numeric column accepts: so must this one
            frame[name] = np.where(frame[name].to_numpy(), "true", "false")
        return _released(frame)
    except (OSError, EOFError) as error:
        raise ValueError(f"{path}: cannot read it ({error})") from error
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as error:
        raise ValueError(f"{path}: not a readable {'Parquet' if kind == 'parquet' else 'delimited'} table "
                         f"({str(error).strip().splitlines()[0]})") from error


def _header(path: Path, separator: str) -> list[str]:
    """The column names on the first non-empty line of an uncompressed delimited file."""
    with open(path, "rb") as stream:
        for line in stream:
            if line.strip(b"\r\n"):
                return [name.strip().lstrip("\ufeff") for name in line.decode("utf-8", "replace").split(separator)]
    return []


def _released(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame``, once pyarrow's pool has handed its parse buffers back to the system: they
    would otherwise stay resident (hundreds of MB for millions of rows) while the columns
    are validated."""
    import pyarrow

    pyarrow.default_memory_pool().release_unused()
    return frame


def _shown(value) -> str:
    """A cell as a message shows it: strings quoted, numbers plain (not ``np.int64(2)``)."""
    return repr(value) if isinstance(value, str) else str(value.item() if isinstance(value, np.generic) else value)


def _repeated(key: np.ndarray, size: int) -> np.ndarray | None:
    """Rows whose ``key`` (in 0..size-1) occurred on an earlier row, or None when no key
    repeats; counting is linear, so a clean log is checked without sorting."""
    if size <= 4 * len(key) + 1024 and np.bincount(key, minlength=size).max(initial=0) <= 1:
        return None
    repeated = np.ones(len(key), dtype=bool)
    repeated[np.unique(key, return_index=True)[1]] = False
    return repeated if repeated.any() else None


def _line_of_row(path: Path, row: int) -> int:
    """The 1-based line of data row ``row`` (0-based) of a delimited file. The readers skip
    empty lines, which still count as lines; only an error message needs this, so the file
    is read again here rather than counted on every import."""
    import bz2
    import gzip
    import lzma

    opener = {"gzip": gzip.open, "bz2": bz2.open, "xz": lzma.open}.get(_format(path)[1], open)
    filled = 0  # non-empty lines so far; the first is the header
    with opener(path, "rb") as stream:
        for number, line in enumerate(stream, start=1):
            if line.strip(b"\r\n"):
                filled += 1
                if filled == row + 2:
                    return number
    return row + 2


class _Rows:
    """Validation helpers that name the file and line of the first bad row."""

    def __init__(self, path: Path, frame: pd.DataFrame, parquet: bool):
        self.path, self.frame, self.parquet = path, frame, parquet

    def where(self, row: int) -> str:
        if self.parquet:
            return f"row {row + 1} of {self.path}"
        return f"line {_line_of_row(self.path, row)} of {self.path}"

    def fail(self, mask: np.ndarray, message) -> None:
        bad = np.flatnonzero(mask)
        if len(bad):
            row = int(bad[0])
            raise ValueError(f"{self.where(row)}: {message(row) if callable(message) else message}")

    def integers(self, name: str, *, low: int | None = None) -> np.ndarray:
        column = self.frame[name]
        if isinstance(column.dtype, np.dtype) and column.dtype.kind in "iu":
            # parsed as integers already (pyarrow, Parquet): every value is whole
            numbers = column.to_numpy(dtype=np.int64)
        else:
            values = pd.to_numeric(column, errors="coerce")
            numbers = values.to_numpy(dtype=np.float64, na_value=np.nan)
            whole = np.isfinite(numbers) & (np.floor(numbers) == numbers)
            self.fail(~whole, lambda row: f"{name} must be an integer, found {_shown(column.iloc[row])}")
            numbers = numbers.astype(np.int64)
        if low is not None:
            self.fail(numbers < low, lambda row: f"{name} must be >= {low}, found {numbers[row]}")
        return numbers


def _codes(column: pd.Series) -> np.ndarray:
    """Integer codes of a column's values in order of first appearance."""
    return pd.factorize(column.astype(str) if column.dtype == object else column, sort=False)[0].astype(np.int64)


def read_click_log(path: str | os.PathLike, queries: Queries) -> LoggedRows:
    """Read and validate a click log against the split it was logged on.

    Parameters
    ----------
    path : path-like
        The log (see the module docstring for the format).
    queries : Queries
        The split: its ``qid`` and, for a ``docid`` column, its ``docid``.

    Raises
    ------
    ValueError
        The file, the line and what is wrong with the first bad row: a missing column, an
        unknown qid or document, a rank repeated within a session, a document shown twice
        in a session, a session spanning two queries, a click other than 0/1, a rank
        below 1, a propensity not in (0, 1].
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such click log")
    if path.stat().st_size == 0:
        raise ValueError(f"{path}: the file is empty; a click log needs a header (session, qid, doc or docid, "
                         f"rank, click) and at least one row")
    frame = _read_table(path)
    frame.columns = [str(c).strip().lstrip("\ufeff") for c in frame.columns]
    missing = [c for c in REQUIRED if c not in frame.columns]
    if "doc" not in frame.columns and "docid" not in frame.columns:
        missing.append("doc (or docid)")
    if missing:
        raise ValueError(f"{path}: missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)}; "
                         f"found {', '.join(frame.columns) or 'none'}; expected session, qid, doc or docid, "
                         f"rank, click [, propensity, ranker]")
    if len(frame) == 0:
        raise ValueError(f"{path}: the log has no rows")
    rows = _Rows(path, frame, parquet=_format(path)[0] == "parquet")

    qid = rows.integers("qid")
    order = np.argsort(queries.qid, kind="stable")
    sorted_qid = np.asarray(queries.qid, dtype=np.int64)[order]
    position = np.clip(np.searchsorted(sorted_qid, qid), 0, len(sorted_qid) - 1)
    rows.fail(sorted_qid[position] != qid, lambda row: f"qid {qid[row]} is not a query of this split")
    query = order[position].astype(np.int64)
    sizes = np.diff(np.asarray(queries.offsets, dtype=np.int64))

    if "doc" in frame.columns:
        local = rows.integers("doc", low=0)
        rows.fail(local >= sizes[query], lambda row: f"doc {local[row]} is not a document of qid {qid[row]}, "
                                                      f"which has {sizes[query[row]]} (doc counts from 0)")
        doc = queries.offsets[query] + local
    else:
        docids = getattr(queries, "docid", None)
        if docids is None:
            raise ValueError(f"{path}: the log names documents by docid, but the prepared dataset has no docids "
                             f"(its features file had no '#docid = ...' comments); use a doc column")
        keys = pd.Series(docids, dtype=object).astype(str) + "\x00" + pd.Series(
            np.repeat(np.asarray(queries.qid), sizes)).astype(str)
        lookup = pd.Index(keys)
        if not lookup.is_unique:
            raise ValueError("the prepared dataset repeats a docid within a query; use a doc column")
        wanted = frame["docid"].astype(str).str.strip() + "\x00" + pd.Series(qid).astype(str)
        doc = lookup.get_indexer(wanted).astype(np.int64)
        rows.fail(doc < 0, lambda row: f"docid {_shown(frame['docid'].iloc[row])} is not a document of qid "
                                       f"{qid[row]}")

    rank = rows.integers("rank", low=1)
    click_text = frame["click"]
    click = pd.to_numeric(click_text, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    rows.fail((click != 0) & (click != 1), lambda row: f"click must be 0 or 1, found {_shown(click_text.iloc[row])}")
    click = click.astype(np.int64)

    propensity = np.full(len(frame), np.nan)
    if "propensity" in frame.columns:
        text = frame["propensity"]
        propensity = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        rows.fail(~(np.isfinite(propensity) & (propensity > 0) & (propensity <= 1)),
                  lambda row: f"propensity must be a number in (0, 1], found {_shown(text.iloc[row])}")

    ranker = np.zeros(len(frame), dtype=np.int64)
    if "ranker" in frame.columns:
        ranker = _codes(frame["ranker"])

    session = _codes(frame["session"])
    n_sessions = int(session.max()) + 1
    first_query = np.full(n_sessions, -1, dtype=np.int64)
    first_query[session[::-1]] = query[::-1]  # the query of each session's first row
    rows.fail(first_query[session] != query,
              lambda row: f"session {_shown(frame['session'].iloc[row])} spans two queries (qid {qid[row]} here, "
                          f"another qid on its earlier rows); a session is one result page of one query")
    for what, values in (("rank", rank), ("document", doc - queries.offsets[query])):
        width = int(values.max()) + 1
        repeated = _repeated(session * width + values, n_sessions * width)
        if repeated is not None:
            rows.fail(repeated, lambda row, what=what, values=values: (
                f"{what} {values[row]} appears twice in session {_shown(frame['session'].iloc[row])}"))
    return LoggedRows(session=session, query=query, doc=doc.astype(np.int64), rank=rank, click=click,
                      propensity=propensity, ranker=ranker)


def write_click_log(path: str | os.PathLike, columns: dict[str, np.ndarray]) -> Path:
    """Write a click table (``session, qid, doc, rank, click[, propensity, ranker]``) to
    ``path`` in the format its extension names, atomically; floats with 17 significant
    digits so that they read back exactly."""
    from cltr.data.files import atomic_write

    path = Path(path)
    kind, compression = _format(path)
    frame = pd.DataFrame(columns)
    with atomic_write(path) as stream:
        if kind == "parquet":
            try:
                frame.to_parquet(stream, index=False, compression=None if compression is None else compression)
            except ImportError:
                raise ValueError(f"{path}: writing Parquet needs pyarrow: pip install 'cltr[parquet]'") from None
        else:
            frame.to_csv(stream, sep=kind, index=False, float_format="%.17g",
                         compression=compression and {"method": compression})
    return path


def simulated_rows(log: ClickLog, presented_rank: np.ndarray, pass_ranker: np.ndarray, queries: Queries,
                   propensity_of_rank=None, *, top_k: int | None = None) -> dict[str, np.ndarray]:
    """The impressions of a simulated log as a click table: session p · n_queries + q shows
    every document of query q at ranker ``pass_ranker[p]``'s ranks (only ranks 1..``top_k``
    with a top-k display), ordered by session and rank.

    Parameters
    ----------
    log : ClickLog
    presented_rank : ndarray, shape (n_rankers, n_docs)
    pass_ranker : ndarray, shape (n_passes,)
    queries : Queries
        The split (for qids and query offsets).
    propensity_of_rank : callable rank -> propensity, optional
        The click model's observation propensity, written for every impression; clicked
        impressions carry the log's own propensity.
    """
    presented_rank = np.atleast_2d(np.asarray(presented_rank, dtype=np.int64))
    offsets = np.asarray(queries.offsets, dtype=np.int64)
    n_docs, n_queries, n_passes = int(offsets[-1]), queries.n_queries, log.n_passes
    doc_query = queries.doc_query
    # one block per pass: every document ordered by (query, presented rank)
    blocks = [np.lexsort((presented_rank[k], doc_query)) for k in range(len(presented_rank))]
    ranker = np.asarray(pass_ranker, dtype=np.int64)[:n_passes]
    doc = np.concatenate([blocks[k] for k in ranker]) if n_passes else np.zeros(0, np.int64)
    pass_of_row = np.repeat(np.arange(n_passes), n_docs)
    rank = presented_rank[np.repeat(ranker, n_docs), doc]
    clicked = np.zeros(n_passes * n_docs, dtype=bool)
    clicked[log.pass_index * n_docs + log.doc] = True
    click = clicked[pass_of_row * n_docs + doc]
    columns = {"session": pass_of_row * n_queries + doc_query[doc], "qid": np.asarray(queries.qid)[doc_query[doc]],
               "doc": doc - offsets[doc_query[doc]], "rank": rank, "click": click.astype(np.int64)}
    if propensity_of_rank is not None:
        propensity = np.asarray(propensity_of_rank(rank), dtype=np.float64)
        logged = np.full(n_passes * n_docs, np.nan)
        logged[log.pass_index * n_docs + log.doc] = log.propensity
        row_logged = logged[pass_of_row * n_docs + doc]
        columns["propensity"] = np.where(click, row_logged, propensity)
    columns["ranker"] = ranker[pass_of_row]
    if top_k is not None:
        shown = rank <= top_k
        columns = {name: values[shown] for name, values in columns.items()}
    return columns
