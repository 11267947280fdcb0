"""The click-log file format: import a logged click table, export any click log.

A click log is a table with one row per *displayed document* of a result page (an
impression), as CSV or TSV (by extension: ``.csv``, ``.tsv``/``.txt``, optionally
compressed ``.gz``/``.xz``/``.bz2``) or Parquet (``.parquet``).
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
header is line 1), the cell as it is written there, and nothing is kept. An empty cell is
an error (an empty session would be a session of its own, an empty ranker a second ranker),
except in a ``propensity`` column that is empty on every row: that log has no propensities.
Other columns are an error (a misspelt ``propensty`` would silently mean "no
propensities") unless ``ignore_extra_columns``. Ranks count from 1 in every session and
stay within the query's documents. Sessions without any click are kept: they count as
sessions and as impressions for propensity estimation, though they add no training
example. A log of clicked rows only is read (``LoggedRows.clicked_only``), but nothing that
needs impressions can use it.

pyarrow reads delimited files several times faster than pandas; without it pandas reads
them, and both accept and refuse the same files with the same messages.

A log larger than memory is read in chunks by ``read_click_log_aggregated`` (``cltr clicks
import --chunk-rows``): every chunk is checked as above, and only the counts per (document,
rank, ranker, propensity) and the sessions per query are kept (``AggregatedRows``).
"""

from __future__ import annotations

import csv
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from cltr.core.clicks import ClickLog, Impressions, aggregate_impressions
from cltr.core.queries import Queries
from cltr.lazy import lazy_import

if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy_import("pandas")  # imported on first use: `cltr --help` needs no pandas

__all__ = [
    "file_format",
    "LoggedRows",
    "AggregatedRows",
    "read_click_log",
    "read_click_log_aggregated",
    "write_click_log",
    "simulated_rows",
    "REQUIRED",
    "OPTIONAL",
]

REQUIRED = ("session", "qid", "rank", "click")
OPTIONAL = ("propensity", "ranker")
KNOWN = ("session", "qid", "doc", "docid", "rank", "click", "propensity", "ranker")
EXPECTED = "session, qid, doc or docid, rank, click [, propensity, ranker]"
READERS = ("auto", "pyarrow", "pandas")
# integers beyond this are no rank, document or qid of any dataset: clipped to it before the
# cast to int64 (which would wrap 1e20 round to -2**63), then named as written
_LIMIT = 2**62
_FORMATS = {".csv": ",", ".tsv": "\t", ".txt": "\t"}
_COMPRESSIONS = {".gz": "gzip", ".xz": "xz", ".bz2": "bz2"}


def file_format(path: Path) -> tuple[str, str | None]:
    """("parquet" | separator, compression) from the file's extensions."""
    suffixes = [s.lower() for s in path.suffixes]
    compression = _COMPRESSIONS.get(suffixes[-1]) if suffixes else None
    kind = suffixes[-2] if compression and len(suffixes) > 1 else (suffixes[-1] if suffixes else "")
    if kind == ".parquet":
        return "parquet", compression
    if kind not in _FORMATS:
        raise ValueError(
            f"{path}: cannot tell the format from the extension {''.join(path.suffixes) or '(none)'}; "
            f"use .csv, .tsv or .parquet (optionally .gz, .xz or .bz2)"
        )
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
    ignored_columns : tuple of str
        Columns of the file that were not read (``read_click_log(ignore_extra_columns=True)``).
    """

    session: np.ndarray
    query: np.ndarray
    doc: np.ndarray
    rank: np.ndarray
    click: np.ndarray
    propensity: np.ndarray
    ranker: np.ndarray
    ignored_columns: tuple[str, ...] = ()

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            name: getattr(self, name) for name in ("session", "query", "doc", "rank", "click", "propensity", "ranker")
        }

    @classmethod
    def from_arrays(cls, arrays) -> LoggedRows:
        return cls(
            session=np.asarray(arrays["session"]),
            query=np.asarray(arrays["query"]),
            doc=np.asarray(arrays["doc"]),
            rank=np.asarray(arrays["rank"]),
            click=np.asarray(arrays["click"]),
            propensity=np.asarray(arrays["propensity"]),
            ranker=np.asarray(arrays["ranker"]),
        )

    @property
    def clicked_only(self) -> bool:
        """Whether the log holds clicked rows only (no impression of a document shown and not
        clicked): the clicks can be trained on with their propensities, but nothing that
        needs impressions works (propensity estimation, doubly robust estimators, per-session
        baselines)."""
        return bool(len(self.click)) and not (self.click == 0).any()

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
        return ClickLog(
            query=self.query[clicked],
            doc=self.doc[clicked],
            rank=self.rank[clicked],
            propensity=self.propensity[clicked].astype(np.float64),
            pass_index=session_pass[self.session[clicked]],
            n_passes=int(per_query.max()) if n_sessions else 0,
            n_queries=n_queries,
            sessions_per_query=per_query.astype(np.int64),
        )


def _has_pyarrow() -> bool:
    try:
        import pyarrow.csv  # noqa: F401
    except ImportError:
        return False
    return True


def _opener(compression: str | None):
    import bz2
    import gzip
    import lzma

    openers: dict[str | None, Callable] = {"gzip": gzip.open, "bz2": bz2.open, "xz": lzma.open}
    return openers.get(compression, open)


def _split(line: bytes, separator: str) -> list[str]:
    """The cells of one line of a delimited file, quotes read as the readers read them."""
    text = line.rstrip(b"\r\n").decode("utf-8", "replace")
    return next(csv.reader([text], delimiter=separator), [])


def _text_columns(path, kind: str, compression, reader: str, columns) -> tuple[bool, list[str], list[str]]:
    """For a delimited text log: whether pyarrow reads it (``reader``: "pyarrow", "pandas"
    or "auto"), its header's names, and those of them ``columns`` (names -> the wanted
    ones; None: all) keeps."""
    if reader == "pyarrow" and not _has_pyarrow():
        raise ValueError("the pyarrow reader needs pyarrow: pip install pyarrow")
    arrow = reader == "pyarrow" or (reader == "auto" and _has_pyarrow())
    try:
        names = _header(path, kind, compression)
    except (OSError, EOFError) as error:
        raise ValueError(f"{path}: cannot read it ({error})") from error
    except UnicodeError as error:
        raise _unreadable(path, kind, compression, error) from error
    wanted = names if columns is None else columns([name.strip() for name in names])
    return arrow, names, [name for name in names if name.strip() in wanted]


def _header(path: Path, separator: str, compression: str | None) -> list[str]:
    """The column names, as written, on the first non-empty line of a delimited file."""
    with _opener(compression)(path, "rb") as stream:
        for line in stream:
            if line.strip(b"\r\n"):
                line.decode("utf-8")  # a header that is not UTF-8 is reported with its line
                return [name.lstrip("\ufeff") for name in _split(line, separator)]
    return []


def _first_bad_line(path: Path, separator: str, compression: str | None, last_row: int | None = None) -> str | None:
    """The first line (up to data row ``last_row``) that is not UTF-8 or whose number of
    cells differs from the header's, as a message; None when there is none."""
    header, filled = None, 0
    try:
        with _opener(compression)(path, "rb") as stream:
            for number, line in enumerate(stream, start=1):
                try:
                    line.decode("utf-8")
                except UnicodeDecodeError as bad:
                    return (
                        f"line {number} of {path}: not UTF-8 text (byte 0x{line[bad.start]:02x} at byte "
                        f"{bad.start + 1} of the line); a click log must be saved as UTF-8"
                    )
                if not line.strip(b"\r\n"):
                    continue
                filled += 1
                cells = len(_split(line, separator))
                if header is None:
                    header = cells
                elif cells != header:
                    return (
                        f"line {number} of {path}: {cells} cell{'s' if cells != 1 else ''} "
                        f"where the header has {header}"
                    )
                if last_row is not None and filled > last_row + 1:
                    return None
    except (OSError, EOFError):
        pass
    return None


def _unreadable(path: Path, separator: str, compression: str | None, error: Exception) -> ValueError:
    """Why a delimited file could not be read, said the same whichever reader failed: the
    first line that is not UTF-8 or has another number of cells than the header, else the
    reader's own words."""
    found = _first_bad_line(path, separator, compression)
    return ValueError(found or f"{path}: not a readable delimited table ({str(error).strip().splitlines()[0]})")


def _read_arrow(path: Path, separator: str, compression: str | None, names: list[str], keep: list[str]) -> pd.DataFrame:
    """pyarrow's multithreaded reader: numbers typed where a whole column holds integers (or
    floats), the rest text. Ids are always text, so that "007" and "7" stay two sessions;
    nothing is read as true/false or as missing, so that every cell is judged as written."""
    import pyarrow as pa
    import pyarrow.csv as arrow_csv

    text = {name: pa.string() for name in names if name.strip() in ("session", "ranker", "docid")}
    options = arrow_csv.ConvertOptions(
        column_types=text,
        null_values=[],
        true_values=[],
        false_values=[],
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
        include_columns=keep,
    )
    parse = arrow_csv.ParseOptions(delimiter=separator)
    if compression == "xz":  # no native codec: decompressed in Python
        with _opener(compression)(path, "rb") as stream:
            table = arrow_csv.read_csv(stream, parse_options=parse, convert_options=options)
    else:
        with pa.input_stream(str(path), compression=compression) as stream:
            table = arrow_csv.read_csv(stream, parse_options=parse, convert_options=options)
    if any(pa.types.is_binary(field.type) for field in table.schema):
        raise UnicodeError("a column that is not UTF-8 text")
    return _released(table.to_pandas())


def _read_pandas(
    path: Path, separator: str, compression: str | None, names: list[str], keep: list[str]
) -> pd.DataFrame:
    """pandas' reader, every cell as text (a row's missing last cells as ""). Every column is
    read: with ``usecols`` pandas would drop a row's extra cells silently."""
    frame = pd.read_csv(path, sep=separator, compression=compression, dtype=str, keep_default_na=False, index_col=False)
    return frame.iloc[:, [i for i, name in enumerate(names) if name in keep]]


def _read_table(path: Path, *, columns=None, reader: str = "auto") -> tuple[pd.DataFrame, bool]:
    """The table, and whether pandas read it (which fills a row's missing last cells with "").

    ``columns(names) -> names to keep`` checks the header before the rows are read.
    ``reader``: "pyarrow" (the fast one, typed columns), "pandas" (text columns) or "auto"
    (pyarrow when installed). Both report every problem with the same words and lines.
    """
    kind, compression = file_format(path)
    if kind == "parquet":
        if not _has_pyarrow():
            raise ValueError(f"{path}: reading Parquet needs pyarrow: pip install pyarrow")
        from pyarrow import parquet

        try:
            names = [str(name) for name in parquet.read_schema(path).names]
        except (OSError, EOFError, ValueError) as error:  # pyarrow's ArrowInvalid is a ValueError
            raise ValueError(f"{path}: not a readable Parquet table ({str(error).strip().splitlines()[0]})") from error
        wanted = names if columns is None else columns([name.strip() for name in names])
        keep = [name for name in names if name.strip() in wanted]
        try:
            frame = _released(pd.read_parquet(path, columns=keep))
        except (OSError, EOFError, ValueError) as error:
            raise ValueError(f"{path}: not a readable Parquet table ({str(error).strip().splitlines()[0]})") from error
        frame.columns = [name.strip() for name in keep]
        return frame, False
    arrow, names, keep = _text_columns(path, kind, compression, reader, columns)
    read = _read_arrow if arrow else _read_pandas
    try:
        frame = read(path, kind, compression, names, keep)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeError, ValueError) as error:
        # pyarrow's ArrowInvalid is a ValueError
        raise _unreadable(path, kind, compression, error) from error
    except (OSError, EOFError) as error:
        raise ValueError(f"{path}: cannot read it ({error})") from error
    frame.columns = [name.strip() for name in keep]
    return frame, not arrow


def _released(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame``, once pyarrow's pool has handed its parse buffers back to the system: they
    would otherwise stay resident (hundreds of MB for millions of rows) while the columns
    are validated."""
    import pyarrow

    pyarrow.default_memory_pool().release_unused()
    return frame


def _shown(value) -> str:
    """A typed cell as a message shows it: strings quoted, numbers plain (not ``np.int64(2)``)."""
    return repr(value) if isinstance(value, str) else str(value.item() if isinstance(value, np.generic) else value)


def _as_written(text: str) -> str:
    """A cell of a delimited file as a message shows it: exactly as written, quoted unless
    it reads as a number ('yes', '' but 2, 1e20, nan)."""
    try:
        float(text)
    except ValueError:
        return repr(text)
    return text if text == text.strip() else repr(text)


def _empty(column: pd.Series, *, parquet: bool) -> np.ndarray:
    """Rows whose cell is empty or blank, or missing in a Parquet table (a delimited file's
    readers read nothing as missing: a NaN there is a written "nan")."""
    missing = column.isna().to_numpy(dtype=bool) if parquet else np.zeros(len(column), dtype=bool)
    if pd.api.types.is_numeric_dtype(column):
        return missing
    return missing | (column.astype(str).str.strip() == "").to_numpy(dtype=bool)


def _repeated(key: np.ndarray, size: int) -> np.ndarray | None:
    """Rows whose ``key`` (in 0..size-1) occurred on an earlier row, or None when no key
    repeats; counting is linear, so a clean log is checked without sorting."""
    if size <= 4 * len(key) + 1024 and np.bincount(key, minlength=size).max(initial=0) <= 1:
        return None
    repeated = np.ones(len(key), dtype=bool)
    repeated[np.unique(key, return_index=True)[1]] = False
    return repeated if repeated.any() else None


def _raw_row(path: Path, separator: str, compression: str | None, row: int) -> tuple[int, dict[str, str]]:
    """The 1-based line of data row ``row`` (0-based) of a delimited file and its cells by
    column name, as written. The readers skip empty lines, which still count as lines; only
    an error message needs this, so the file is read again here rather than counted on
    every import."""
    filled, names = 0, []  # non-empty lines so far; the first is the header
    with _opener(compression)(path, "rb") as stream:
        for number, line in enumerate(stream, start=1):
            if line.strip(b"\r\n"):
                filled += 1
                if filled == 1:
                    names = [name.lstrip("\ufeff").strip() for name in _split(line, separator)]
                elif filled == row + 2:
                    # a short or long row is the error being reported: pair what is there
                    return number, dict(zip(names, _split(line, separator), strict=False))
    return row + 2, {}


class _Rows:
    """Validation helpers that name the file, the line and the cell as written of the first
    bad row."""

    def __init__(
        self,
        path: Path,
        frame: pd.DataFrame,
        *,
        lenient: bool = False,
        first_row: int = 0,
        row_numbers: np.ndarray | None = None,
    ):
        # first_row: the file's data rows before this frame (a chunk of a streamed import);
        # row_numbers: the file's 0-based data row of each of the frame's rows, where the frame
        # holds some of the rows only (a Parquet chunk of whole queries, cltr.data.parquet_log)
        self.path, self.frame, self.lenient, self.first_row = path, frame, lenient, first_row
        self.row_numbers = row_numbers
        self.separator, self.compression = file_format(path)
        self.parquet = self.separator == "parquet"
        self._raw: dict[int, tuple[int, dict[str, str]]] = {}
        self.beyond: dict[str, np.ndarray] = {}

    def _line(self, row: int) -> tuple[int, dict[str, str]]:
        if row not in self._raw:
            self._raw[row] = _raw_row(self.path, self.separator, self.compression, self.first_row + row)
        return self._raw[row]

    def where(self, row: int) -> str:
        if self.row_numbers is not None:
            return f"row {int(self.row_numbers[row]) + 1} of {self.path}"
        if self.parquet:
            return f"row {self.first_row + row + 1} of {self.path}"
        return f"line {self._line(row)[0]} of {self.path}"

    def cell(self, row: int, name: str) -> str:
        """The cell as written in the file (a Parquet cell as typed): pyarrow's 1e+20 for a
        written 1e20, or its 7 for a written 007, would not be what the user can find."""
        if not self.parquet:
            written = self._line(row)[1].get(name)
            if written is not None:
                return _as_written(written)
        return _shown(self.frame[name].iloc[row])

    def fail(self, mask: np.ndarray, message) -> None:
        bad = np.flatnonzero(mask)
        if len(bad):
            row = int(bad[0])
            if self.lenient:
                # pandas fills a row's missing last cells with "" where pyarrow refuses the
                # row: a short row up to here is the error both readers name
                short = _first_bad_line(self.path, self.separator, self.compression, self.first_row + row)
                if short:
                    raise ValueError(short)
            raise ValueError(f"{self.where(row)}: {message(row) if callable(message) else message}")

    def integers(self, name: str, *, low: int | None = None) -> np.ndarray:
        """The column as int64. Values beyond +-2**62 (no rank, document or qid of any
        dataset) are clipped there rather than wrapped by the cast, marked in
        ``beyond[name]``, and named as written by the checks that follow."""
        column = self.frame[name]
        if isinstance(column.dtype, np.dtype) and column.dtype.kind in "iu":
            # parsed as integers already (pyarrow, Parquet): every value is whole
            numbers = column.to_numpy(dtype=np.int64)
            self.beyond[name] = np.zeros(len(numbers), dtype=bool)
        elif (values := pd.to_numeric(column, errors="coerce")).dtype.kind == "i" and not values.hasnans:
            # text of whole numbers within int64 (the pandas reader's usual case): exact, as the
            # pyarrow reader reads it; through float64 a qid past 2**53 would match its neighbour
            # (a nullable Int64 column with a missing cell goes on below, to be named)
            numbers = values.to_numpy(dtype=np.int64)
            self.beyond[name] = np.zeros(len(numbers), dtype=bool)
        else:
            numbers = values.to_numpy(dtype=np.float64, na_value=np.nan)
            whole = np.isfinite(numbers) & (np.floor(numbers) == numbers)
            self.fail(~whole, lambda row: f"{name} must be an integer, found {self.cell(row, name)}")
            self.beyond[name] = np.abs(numbers) > _LIMIT
            numbers = np.clip(numbers, -_LIMIT, _LIMIT).astype(np.int64)
        if low is not None:
            self.fail(numbers < low, lambda row: f"{name} must be >= {low}, found {self.cell(row, name)}")
        return numbers


def _codes(column: pd.Series) -> np.ndarray:
    """Integer codes of a column's values in order of first appearance."""
    return pd.factorize(column.astype(str) if column.dtype == object else column, sort=False)[0].astype(np.int64)


def read_click_log(
    path: str | os.PathLike, queries: Queries, *, ignore_extra_columns: bool = False, reader: str = "auto"
) -> LoggedRows:
    """Read and validate a click log against the split it was logged on.

    Parameters
    ----------
    path : path-like
        The log (see the module docstring for the format).
    queries : Queries
        The split: its ``qid`` and, for a ``docid`` column, its ``docid``.
    ignore_extra_columns : bool
        Read a log with columns other than the documented ones, ignoring them (named in
        ``LoggedRows.ignored_columns``); by default they are an error, since a misspelt
        ``propensty`` would otherwise silently mean "no propensities".
    reader : {"auto", "pyarrow", "pandas"}
        The reader of a delimited file: pyarrow (fast; "auto" picks it when installed) or
        pandas. Both accept and refuse the same files with the same messages.

    Raises
    ------
    ValueError
        The file, the line and what is wrong with the first bad row, the cell as written:
        a missing, repeated or unknown column, an empty cell, an unknown qid or document, a
        rank beyond the query's documents, a session whose ranks do not start at 1, a rank
        or a document repeated within a session, a session spanning two queries, a click
        other than 0/1, a propensity not in (0, 1], a line that is not UTF-8 or has another
        number of cells than the header.
    """
    path = _checked(path, reader)
    ignored: list[str] = []
    frame, lenient = _read_table(path, columns=_column_check(path, ignore_extra_columns, ignored), reader=reader)
    if len(frame) == 0:
        raise ValueError(f"{path}: the log has no rows")
    rows = _Rows(path, frame, lenient=lenient)
    columns = _validate(rows, queries, path)
    return LoggedRows(**columns, ignored_columns=tuple(ignored))


def _checked(path, reader: str) -> Path:
    if reader not in READERS:
        raise ValueError(f"reader must be one of {', '.join(READERS)}, not {reader!r}")
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such click log")
    if path.stat().st_size == 0:
        raise ValueError(
            f"{path}: the file is empty; a click log needs a header (session, qid, doc or docid, "
            f"rank, click) and at least one row"
        )
    return path


def _column_check(path: Path, ignore_extra_columns: bool, ignored: list[str]) -> Callable[[list[str]], list[str]]:
    """``columns(names) -> the columns to read``, which checks the header first; the
    unknown columns it ignores are appended to ``ignored``."""

    def columns(names: list[str]) -> list[str]:
        twice = sorted({name for i, name in enumerate(names) if name in names[:i] and name in KNOWN})
        if twice:
            raise ValueError(f"{path}: column {twice[0]!r} appears twice in the header")
        missing = [c for c in REQUIRED if c not in names]
        if "doc" not in names and "docid" not in names:
            missing.append("doc (or docid)")
        if missing:
            raise ValueError(
                f"{path}: missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)}; "
                f"found {', '.join(names) or 'none'}; expected {EXPECTED}"
            )
        unknown = [name for name in names if name not in KNOWN]
        if unknown and not ignore_extra_columns:
            raise ValueError(
                f"{path}: unknown column{'s' if len(unknown) > 1 else ''} "
                f"{', '.join(map(repr, unknown))}; expected {EXPECTED} (to read the log without "
                f"other columns: --ignore-extra-columns, or ignore_extra_columns=True)"
            )
        ignored.extend(unknown)
        return [name for name in names if name in KNOWN]

    return columns


def _validate(rows: _Rows, queries: Queries, path: Path, stream: _Stream | None = None) -> dict[str, np.ndarray]:
    """The checked columns of ``rows.frame`` (``LoggedRows``' fields but ``ignored_columns``).
    ``stream`` carries what one chunk of a streamed import needs from the chunks before it
    (string codes, whether the log has propensities, clicks of 0); None for a whole file."""
    frame = rows.frame
    # an empty id would silently become an id of its own ("" a session, a second ranker)
    needed = [
        name
        for name in ("session", "qid", "doc" if "doc" in frame.columns else "docid", "rank", "click", "ranker")
        if name in frame.columns
    ]
    empty = {name: _empty(frame[name], parquet=rows.parquet) for name in needed}
    rows.fail(
        np.logical_or.reduce(list(empty.values())),
        lambda row: f"the {next(n for n in needed if empty[n][row])} cell is empty; every row needs one",
    )

    qid = rows.integers("qid")
    order = np.argsort(queries.qid, kind="stable")
    sorted_qid = np.asarray(queries.qid, dtype=np.int64)[order]
    position = np.clip(np.searchsorted(sorted_qid, qid), 0, len(sorted_qid) - 1)
    rows.fail(
        (sorted_qid[position] != qid) | rows.beyond["qid"],
        lambda row: f"qid {rows.cell(row, 'qid')} is not a query of this split",
    )
    query = order[position].astype(np.int64)
    sizes = np.diff(np.asarray(queries.offsets, dtype=np.int64))

    if "doc" in frame.columns:
        local = rows.integers("doc", low=0)
        rows.fail(
            local >= sizes[query],
            lambda row: (
                f"doc {rows.cell(row, 'doc')} is not a document of qid "
                f"{qid[row]}, which has {sizes[query[row]]} (doc counts from 0)"
            ),
        )
        doc = queries.offsets[query] + local
    else:
        docids = getattr(queries, "docid", None)
        if docids is None:
            raise ValueError(
                f"{path}: the log names documents by docid, but the prepared dataset has no docids "
                f"(its features file had no '#docid = ...' comments); use a doc column"
            )
        lookup = stream.docids if stream is not None and stream.docids is not None else _docid_lookup(queries)
        if stream is not None:
            stream.docids = lookup
        wanted = frame["docid"].astype(str).str.strip() + "\x00" + pd.Series(qid).astype(str)
        doc = lookup.get_indexer(wanted).astype(np.int64)
        rows.fail(doc < 0, lambda row: f"docid {rows.cell(row, 'docid')} is not a document of qid {qid[row]}")

    rank = rows.integers("rank", low=1)
    rows.fail(
        rank > sizes[query],
        lambda row: (
            f"rank {rows.cell(row, 'rank')} is beyond the {sizes[query[row]]} "
            f"documents of qid {qid[row]}; a rank is a displayed position, from "
            f"1 to at most the number of the query's documents"
        ),
    )
    click = pd.to_numeric(frame["click"], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    rows.fail((click != 0) & (click != 1), lambda row: f"click must be 0 or 1, found {rows.cell(row, 'click')}")
    click = click.astype(np.int64)

    propensity = np.full(len(frame), np.nan)
    if "propensity" in frame.columns:
        missing = _empty(frame["propensity"], parquet=rows.parquet)
        # an empty column is a log without propensities; a partly empty one is an error, as
        # a missing propensity of one impression cannot be told from a forgotten one
        if stream is not None:
            stream.propensity_cells(rows, missing)
        if not missing.all():
            rows.fail(missing, _PARTLY_EMPTY)
            propensity = pd.to_numeric(frame["propensity"], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
            rows.fail(
                ~(np.isfinite(propensity) & (propensity > 0) & (propensity <= 1)),
                lambda row: f"propensity must be a number in (0, 1], found {rows.cell(row, 'propensity')}",
            )

    ranker = np.zeros(len(frame), dtype=np.int64)
    if "ranker" in frame.columns:
        ranker = _codes(frame["ranker"]) if stream is None else stream.ranker_codes(frame["ranker"])

    session = _codes(frame["session"])
    if stream is not None:
        stream.contiguous(rows, session)
    n_sessions = int(session.max()) + 1
    first_query = np.full(n_sessions, -1, dtype=np.int64)
    first_query[session[::-1]] = query[::-1]  # the query of each session's first row
    rows.fail(
        first_query[session] != query,
        lambda row: (
            f"session {rows.cell(row, 'session')} spans two queries (qid {qid[row]} here, "
            f"another qid on its earlier rows); a session is one result page of one query"
        ),
    )
    # a page lists its documents from the top; a log of clicked rows only need not show
    # rank 1 (its other checks still hold)
    top = np.full(n_sessions, _LIMIT, dtype=np.int64)
    np.minimum.at(top, session, rank)
    not_top = (top[session] != 1) & (rank == top[session])

    def top_message(row: int) -> str:
        return (
            f"the smallest rank of session {rows.cell(row, 'session')} is {rows.cell(row, 'rank')}; the ranks "
            f"of a session count from 1 (the top of the page)"
        )

    if stream is not None:
        stream.top_ranks(rows, click, not_top, top_message)
    elif (click == 0).any():
        rows.fail(not_top, top_message)
    for what, values in (("rank", rank), ("document", doc - queries.offsets[query])):
        width = int(values.max()) + 1
        repeated = _repeated(session * width + values, n_sessions * width)
        if repeated is not None:
            rows.fail(
                repeated,
                lambda row, what=what, values=values: (
                    f"{what} {values[row]} appears twice in session {rows.cell(row, 'session')}"
                ),
            )
    return {
        "session": session,
        "query": query,
        "doc": doc.astype(np.int64),
        "rank": rank,
        "click": click,
        "propensity": propensity,
        "ranker": ranker,
    }


_PARTLY_EMPTY = (
    "the propensity cell is empty while other rows have one; give every row its propensity, or leave "
    "the whole column empty for a log without propensities"
)


def _docid_lookup(queries: Queries) -> pd.Index:
    """(docid, qid) of every document of the split, as one string key."""
    sizes: np.ndarray = np.diff(np.asarray(queries.offsets, dtype=np.int64))
    keys = (
        pd.Series(queries.docid, dtype=object).astype(str)
        + "\x00"
        + pd.Series(np.repeat(np.asarray(queries.qid), sizes)).astype(str)
    )
    lookup = pd.Index(keys)
    if not lookup.is_unique:
        raise ValueError("the prepared dataset repeats a docid within a query; use a doc column")
    return lookup


def write_click_log(path: str | os.PathLike, columns: dict[str, np.ndarray]) -> Path:
    """Write a click table (``session, qid, doc, rank, click[, propensity, ranker]``) to
    ``path`` in the format its extension names, atomically; floats with 17 significant
    digits so that they read back exactly."""
    from cltr.data.files import atomic_write

    path = Path(path)
    kind, compression = file_format(path)
    frame = pd.DataFrame(columns)
    with atomic_write(path) as stream:
        if kind == "parquet":
            try:
                frame.to_parquet(stream, index=False, compression=None if compression is None else compression)
            except ImportError:
                raise ValueError(f"{path}: writing Parquet needs pyarrow: pip install pyarrow") from None
        else:
            frame.to_csv(
                stream, sep=kind, index=False, float_format="%.17g", compression=compression and {"method": compression}
            )
    return path


def simulated_rows(
    log: ClickLog,
    presented_rank: np.ndarray,
    pass_ranker: np.ndarray,
    queries: Queries,
    propensity_of_rank=None,
    *,
    top_k: int | None = None,
) -> dict[str, np.ndarray]:
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
    columns = {
        "session": pass_of_row * n_queries + doc_query[doc],
        "qid": np.asarray(queries.qid)[doc_query[doc]],
        "doc": doc - offsets[doc_query[doc]],
        "rank": rank,
        "click": click.astype(np.int64),
    }
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


# -- a log larger than memory: streamed in chunks, reduced to counts --------------------------

_NUMERIC = ("qid", "doc", "rank", "click", "propensity")
_BLOCK_BYTES = 1 << 22  # text pyarrow's streaming reader parses at a time


@dataclass(frozen=True)
class AggregatedRows:
    """A click log reduced to what the learners and estimators read: counts per distinct
    (document, rank, ranker, propensity), and the sessions of each query. Its size is bound
    by the documents, ranks and rankers, not by the rows, so that a log larger than memory
    can be imported in chunks (``read_click_log_aggregated``).

    Attributes
    ----------
    query, doc, rank, ranker : ndarray of int64, shape (m,)
        One cell per distinct (doc, rank, ranker, propensity), sorted by them.
    propensity : ndarray of float64, shape (m,)
        NaN where the log has no propensity column.
    impressions, clicks : ndarray of int64, shape (m,)
        Rows (displays) of the cell, and those of them with click 1.
    sessions_per_query : ndarray of int64, shape (n_queries,)
    rows : int
        Rows of the log.
    ignored_columns : tuple of str
    """

    query: np.ndarray
    doc: np.ndarray
    rank: np.ndarray
    ranker: np.ndarray
    propensity: np.ndarray
    impressions: np.ndarray
    clicks: np.ndarray
    sessions_per_query: np.ndarray
    rows: int
    ignored_columns: tuple[str, ...] = ()

    _FIELDS = ("query", "doc", "rank", "ranker", "propensity", "impressions", "clicks", "sessions_per_query")

    def arrays(self) -> dict[str, np.ndarray]:
        return {**{name: getattr(self, name) for name in self._FIELDS}, "rows": np.int64(self.rows)}

    @classmethod
    def from_arrays(cls, arrays) -> AggregatedRows:
        query, doc, rank, ranker, propensity, impressions, clicks, sessions_per_query = (
            np.asarray(arrays[name]) for name in cls._FIELDS
        )
        return cls(
            query=query,
            doc=doc,
            rank=rank,
            ranker=ranker,
            propensity=propensity,
            impressions=impressions,
            clicks=clicks,
            sessions_per_query=sessions_per_query,
            rows=int(arrays["rows"]),
        )

    @property
    def clicked_only(self) -> bool:
        return bool(self.rows) and bool((self.clicks == self.impressions).all())

    @property
    def has_propensity(self) -> bool:
        return bool(len(self.propensity)) and not np.isnan(self.propensity).all()

    @property
    def n_rankers(self) -> int:
        return int(self.ranker.max()) + 1 if len(self.ranker) else 0

    def impressions_table(self) -> Impressions:
        """The aggregated impressions (per document, rank and ranker) the estimators read."""
        # cells are sorted by (doc, rank, ranker, propensity): a cell per propensity of one
        # (doc, rank, ranker) follows the one before
        new = np.ones(len(self.doc), dtype=bool)
        if len(new):
            new[1:] = (
                (self.doc[1:] != self.doc[:-1])
                | (self.rank[1:] != self.rank[:-1])
                | (self.ranker[1:] != self.ranker[:-1])
            )
        starts = np.flatnonzero(new)
        total = (
            (lambda values: np.add.reduceat(values, starts).astype(np.int64))
            if len(starts)
            else (lambda values: values[:0].astype(np.int64))
        )
        return Impressions(
            query=self.query[starts].astype(np.int64),
            doc=self.doc[starts].astype(np.int64),
            rank=self.rank[starts].astype(np.int64),
            ranker=self.ranker[starts].astype(np.int64),
            impressions=total(self.impressions),
            clicks=total(self.clicks),
        )

    def click_log(self, n_queries: int) -> ClickLog:
        """Every click as a training example, ordered by document row and rank. The counts
        keep no session order: the log is one pass (``first_passes`` refuses more), with the
        true sessions per query."""
        clicks = self.clicks
        repeat = lambda values: np.repeat(values, clicks)  # noqa: E731
        n = int(clicks.sum())
        return ClickLog(
            query=repeat(self.query),
            doc=repeat(self.doc),
            rank=repeat(self.rank),
            propensity=repeat(self.propensity).astype(np.float64),
            pass_index=np.zeros(n, np.int64),
            n_passes=1,
            n_queries=n_queries,
            sessions_per_query=self.sessions_per_query.astype(np.int64),
        )

    def summary(self, relevant: np.ndarray) -> dict:
        """``click_log_summary``'s figures, from the counts."""
        clicks = self.clicks
        n, sessions = int(clicks.sum()), int(self.sessions_per_query.sum())
        clicked = clicks > 0
        return {
            "sessions": sessions,
            "clicks": n,
            "irrelevant_click_share": float(np.sum(clicks * ~relevant[self.doc]) / n) if n else float("nan"),
            "clicks_per_query": n / sessions,
            "mean_propensity": float(np.sum(clicks * self.propensity) / n) if n else float("nan"),
            "min_propensity": float(self.propensity[clicked].min()) if n else float("nan"),
        }


def _reduce(columns: dict[str, np.ndarray], impressions: np.ndarray, clicks: np.ndarray) -> dict[str, np.ndarray]:
    """Rows (or cells) summed per distinct (doc, rank, ranker, propensity), sorted by them;
    ``columns`` holds query, doc, rank, ranker and propensity."""
    bits = np.ascontiguousarray(columns["propensity"], dtype=np.float64).view(np.int64)
    doc, rank, ranker = (np.asarray(columns[name], dtype=np.int64) for name in ("doc", "rank", "ranker"))
    if len(doc):
        ranks, rankers = int(rank.max()) + 1, int(ranker.max()) + 1
        if (int(doc.max()) + 1) * ranks * rankers < 2**62:
            # one int64 key sorts in the same order as (doc, rank, ranker), and faster
            order = np.lexsort((bits, (doc * ranks + rank) * rankers + ranker))
        else:
            order = np.lexsort((bits, ranker, rank, doc))
    else:
        order = np.zeros(0, dtype=np.int64)
    keys = [columns["doc"][order], columns["rank"][order], columns["ranker"][order], bits[order]]
    new = np.ones(len(order), dtype=bool)
    if len(order):
        new[1:] = np.logical_or.reduce([k[1:] != k[:-1] for k in keys])
    starts = np.flatnonzero(new)
    first = order[starts]
    cells = {name: np.asarray(columns[name])[first] for name in ("query", "doc", "rank", "ranker", "propensity")}
    cells["impressions"] = np.add.reduceat(impressions[order], starts) if len(order) else impressions[:0]
    cells["clicks"] = np.add.reduceat(clicks[order], starts) if len(order) else clicks[:0]
    return cells


class _HashSet:
    """A set of uint64 values in disjoint sorted arrays, each more than twice the size of
    the next (an added array is merged with those at the end not that much larger), so at
    most log2(n) arrays: 8 bytes a value (16 while a merge copies), a lookup a binary
    search per array, whatever the sizes of the additions (equal ones merge as a binary
    counter; 2,000 additions of decreasing size would otherwise leave 2,000 arrays)."""

    def __init__(self) -> None:
        self.levels: list[np.ndarray] = []

    def holds(self, values: np.ndarray) -> np.ndarray:
        order = np.argsort(values, kind="stable")  # sorted keys search a large array faster
        wanted = values[order]
        found = np.zeros(len(values), dtype=bool)
        for level in self.levels:
            at = np.minimum(np.searchsorted(level, wanted), len(level) - 1)
            found |= level[at] == wanted
        out = np.empty(len(values), dtype=bool)
        out[order] = found
        return out

    def add(self, values: np.ndarray) -> None:
        merged = np.sort(values)
        if len(merged):
            merged = merged[np.concatenate([[True], merged[1:] != merged[:-1]])]
        merged = merged[~self.holds(merged)]
        if not len(merged):
            return
        while self.levels and len(self.levels[-1]) <= 2 * len(merged):
            # two disjoint sorted runs: the stable sort (timsort) merges them in one pass
            merged = np.sort(np.concatenate([self.levels.pop(), merged]), kind="stable")
        self.levels.append(merged)

    def __len__(self) -> int:
        return sum(len(level) for level in self.levels)


class _Stream:
    """What a chunk's checks need from the chunks before it: the codes of ranker values,
    whether the propensity column is filled, whether a click 0 was seen, and a clicked-only
    chunk's first session that does not start at rank 1 (an error only once a click 0 shows
    the log is not clicked rows only)."""

    def __init__(self) -> None:
        self.rankers: dict = {}
        self.filled: bool | None = None  # the propensity column: None before any chunk
        self.first_empty: str | None = None  # where the first empty propensity cell is
        self.seen_zero = False
        self.deferred_top: str | None = None
        self.docids = None
        self.closed = _HashSet()  # the sessions of the chunks before, as 64-bit hashes of their ids

    def ranker_codes(self, column: pd.Series) -> np.ndarray:
        codes, values = pd.factorize(column.astype(str) if column.dtype == object else column, sort=False)
        known = np.array(
            [self.rankers.setdefault(value, len(self.rankers)) for value in values.tolist()], dtype=np.int64
        )
        return known[codes] if len(codes) else codes.astype(np.int64)

    def propensity_cells(self, rows: _Rows, missing: np.ndarray) -> None:
        # the whole log decides whether the column is empty: a chunk of empty cells after
        # filled ones (or the reverse) is a partly empty column, named at its first empty cell
        if self.filled is None:
            self.filled = not missing.all()
            if missing.any():
                self.first_empty = rows.where(int(np.flatnonzero(missing)[0]))
        elif self.filled and missing.all():
            rows.fail(missing, _PARTLY_EMPTY)
        elif not self.filled and not missing.all():
            raise ValueError(f"{self.first_empty}: {_PARTLY_EMPTY}")

    def contiguous(self, rows: _Rows, session: np.ndarray) -> None:
        """Refuse a session that comes back after others, whether its earlier rows are in
        this chunk or an earlier one; the chunk's sessions are then closed (a chunk never
        ends inside a session: ``read_click_log_aggregated`` holds its last one back)."""
        # codes count in order of first appearance: a code below its predecessor is a
        # session seen before another one
        back = np.zeros(len(session), dtype=bool)
        back[1:] = session[1:] < session[:-1]
        _, first = np.unique(session, return_index=True)  # each session's first row, by code
        ids = rows.frame["session"].iloc[first]
        hashes = pd.util.hash_array(ids.astype(str).to_numpy(dtype=object), categorize=False)
        seen = self.closed.holds(hashes)
        back[first[seen]] = True
        rows.fail(
            back,
            lambda row: (
                f"session {rows.cell(row, 'session')} reappears after other sessions; an import "
                f"in chunks (--chunk-rows) needs each session's rows one after another"
            ),
        )
        self.closed.add(hashes)

    def top_ranks(self, rows: _Rows, click: np.ndarray, not_top: np.ndarray, message) -> None:
        self.seen_zero = self.seen_zero or bool((click == 0).any())
        if not self.seen_zero:
            if self.deferred_top is None and not_top.any():
                row = int(np.flatnonzero(not_top)[0])
                self.deferred_top = f"{rows.where(row)}: {message(row)}"
            return
        if self.deferred_top is not None:
            raise ValueError(self.deferred_top)
        rows.fail(not_top, message)


def _typed(batch) -> pd.DataFrame:
    """A batch of text columns as pandas, each numeric column typed where all of it parses
    (as the whole-file reader types it), else left as text for the checks to name the cell."""
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = {}
    for name, column in zip(batch.schema.names, batch.columns, strict=True):
        if name.strip() in _NUMERIC:
            for kind in (pa.int64(), pa.float64()):
                try:
                    column = pc.cast(column, kind)
                    break
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                    continue
        columns[name] = column
    return pa.table(columns).to_pandas()


def _chunks(path: Path, *, columns, reader: str, chunk_rows: int):
    """``(frame, lenient)`` pieces of at most ``chunk_rows`` rows of the log, in file order,
    with the header checked (``columns``) before any row is read."""
    kind, compression = file_format(path)
    if kind == "parquet":
        if not _has_pyarrow():
            raise ValueError(f"{path}: reading Parquet needs pyarrow: pip install pyarrow")
        from pyarrow import parquet

        try:
            table = parquet.ParquetFile(path)
            names = [str(name) for name in table.schema_arrow.names]
        except (OSError, EOFError, ValueError) as error:
            raise ValueError(f"{path}: not a readable Parquet table ({str(error).strip().splitlines()[0]})") from error
        wanted = columns([name.strip() for name in names])
        keep = [name for name in names if name.strip() in wanted]
        try:
            for batch in table.iter_batches(batch_size=chunk_rows, columns=keep):
                frame = batch.to_pandas()
                frame.columns = [name.strip() for name in keep]
                yield frame, False
        except (OSError, EOFError, ValueError) as error:
            raise ValueError(f"{path}: not a readable Parquet table ({str(error).strip().splitlines()[0]})") from error
        return
    arrow, names, keep = _text_columns(path, kind, compression, reader, columns)
    try:
        if arrow:
            yield from _arrow_chunks(path, kind, compression, keep, chunk_rows)
        else:
            for frame in pd.read_csv(
                path,
                sep=kind,
                compression=compression,
                dtype=str,
                keep_default_na=False,
                index_col=False,
                chunksize=chunk_rows,
            ):
                frame = frame.iloc[:, [i for i, name in enumerate(names) if name in keep]]
                frame.columns = [name.strip() for name in keep]
                yield frame, True
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeError) as error:
        raise _unreadable(path, kind, compression, error) from error
    except (OSError, EOFError) as error:
        raise ValueError(f"{path}: cannot read it ({error})") from error


def _arrow_chunks(path: Path, separator: str, compression: str | None, keep: list[str], chunk_rows: int):
    """pyarrow's streaming reader with the numeric columns typed as they are parsed (fast);
    from a batch that does not parse so, the rest of the file as text, typed column by
    column where it can be (``_typed``), so that the checks name a bad cell as the
    whole-file reader does."""
    import pyarrow as pa

    numeric = {
        name: pa.float64() if name.strip() == "propensity" else pa.int64() for name in keep if name.strip() in _NUMERIC
    }
    done = 0  # rows handed on
    try:
        for batch in _arrow_batches(path, separator, compression, keep, numeric):
            for piece in _pieces(batch, chunk_rows):
                done += piece.num_rows
                yield _named(piece.to_pandas(), keep), False
        return
    except pa.ArrowInvalid:
        pass  # a cell that is not a number (or a line pyarrow cannot parse): read on as text
    try:
        for batch in _arrow_batches(path, separator, compression, keep, {}):
            # the rows handed on already are parsed again and dropped: pyarrow's own skipping
            # would count the empty lines that its batches leave out
            if done >= batch.num_rows:
                done -= batch.num_rows
                continue
            batch, done = batch.slice(done), 0
            for piece in _pieces(batch, chunk_rows):
                if any(pa.types.is_binary(field.type) for field in piece.schema):
                    raise UnicodeError("a column that is not UTF-8 text")
                yield _named(_typed(piece), keep), False
    except (pa.ArrowInvalid, UnicodeError) as error:
        raise _unreadable(path, separator, compression, error) from error


def _named(frame: pd.DataFrame, keep: list[str]) -> pd.DataFrame:
    frame.columns = [name.strip() for name in keep]
    return frame


def _pieces(batch, chunk_rows: int):
    for start in range(0, batch.num_rows, chunk_rows):
        yield batch.slice(start, chunk_rows)


def _arrow_batches(path: Path, separator: str, compression: str | None, keep: list[str], numeric: dict):
    """Record batches of the file's data rows, the ``numeric`` columns typed, the others text."""
    import pyarrow as pa
    import pyarrow.csv as arrow_csv

    types = {name: numeric.get(name, pa.string()) for name in keep}
    options = arrow_csv.ConvertOptions(
        column_types=types,
        null_values=[],
        true_values=[],
        false_values=[],
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
        include_columns=keep,
    )
    parse = arrow_csv.ParseOptions(delimiter=separator)
    read = arrow_csv.ReadOptions(block_size=_BLOCK_BYTES)
    opened = (
        _opener(compression)(path, "rb") if compression == "xz" else pa.input_stream(str(path), compression=compression)
    )
    with opened as stream:
        yield from arrow_csv.open_csv(stream, read_options=read, parse_options=parse, convert_options=options)


def read_click_log_aggregated(
    path: str | os.PathLike,
    queries: Queries,
    *,
    chunk_rows: int | None = None,
    ignore_extra_columns: bool = False,
    reader: str = "auto",
) -> AggregatedRows:
    """Read a click log in chunks of ``chunk_rows`` rows, check every chunk as
    ``read_click_log`` checks a whole file (same messages, the file's own line numbers), and
    keep only its counts (``AggregatedRows``): memory is bound by a chunk and the counts,
    not by the log.

    A session's rows must follow one another (a chunk ends before the last session it
    holds, which the next chunk completes): a session id that reappears after other
    sessions is an error, named at the line of its return, for every chunk size and
    ``chunk_rows`` None alike (``read_click_log``, which holds every row, reads rows in any
    order and makes them one session). To catch an id that returns chunks later, the ids of
    the sessions read are kept as 64-bit hashes: 8 bytes a session (80 MB for 10 million),
    so memory grows with the sessions, not the rows. Two distinct ids of one log share a
    hash with odds of about n**2 / 2**65 for n sessions (3 in a million for 10 million
    sessions), which would refuse a valid log naming the later id. ``chunk_rows`` None
    reads the file as one chunk; the result is the same, byte for byte, for any chunk size.
    An error is that of the first chunk holding a bad row: where a log has several, it may
    name another than ``read_click_log``, which checks one rule at a time over all rows.
    """
    path = _checked(path, reader)
    if chunk_rows is not None and chunk_rows < 1:
        raise ValueError(f"chunk_rows must be at least 1, found {chunk_rows}")
    ignored: list[str] = []
    check = _column_check(path, ignore_extra_columns, ignored)
    stream = _Stream()
    total: dict[str, np.ndarray] | None = None
    sessions_per_query = np.zeros(queries.n_queries, dtype=np.int64)
    first_row = 0  # data rows of the file before the next chunk
    n_rows = 0

    def absorb(frame: pd.DataFrame, lenient: bool) -> None:
        nonlocal total, first_row, n_rows
        rows = _Rows(path, frame.reset_index(drop=True), lenient=lenient, first_row=first_row)
        columns = _validate(rows, queries, path, stream)
        starts = np.flatnonzero(np.diff(columns["session"], prepend=-1) != 0)
        sessions_per_query[:] += np.bincount(columns["query"][starts], minlength=queries.n_queries)
        # the chunk's rows and the counts so far, summed in one pass
        impressions, clicks = np.ones(len(frame), dtype=np.int64), columns["click"]
        if total is not None:
            columns = {
                name: np.concatenate([total[name], columns[name]])
                for name in ("query", "doc", "rank", "ranker", "propensity")
            }
            impressions = np.concatenate([total["impressions"], impressions])
            clicks = np.concatenate([total["clicks"], clicks])
        total = _reduce(columns, impressions, clicks)
        first_row += len(frame)
        n_rows += len(frame)

    lenient = False
    buffer: list[pd.DataFrame] = []  # pieces not yet checked, the last session of the previous chunk first
    buffered = 0
    for piece, lenient in _chunks(path, columns=check, reader=reader, chunk_rows=chunk_rows or (1 << 62)):
        buffer.append(piece)
        buffered += len(piece)
        if chunk_rows is None or buffered < chunk_rows:
            continue
        frame = pd.concat(buffer, ignore_index=True) if len(buffer) > 1 else buffer[0]
        session = _codes(frame["session"])
        # the start of the last session, which the next piece may go on with (a session's
        # rows follow one another: checked with the chunk)
        other = np.flatnonzero(session != session[-1])
        last = int(other[-1]) + 1 if len(other) else 0
        if last and (session[:last] == session[-1]).any():
            last = len(frame)  # the last session came back after others: the chunk's checks name it
        if last == 0:
            buffer = [frame]
            continue
        absorb(frame.iloc[:last], lenient)
        buffer, buffered = [frame.iloc[last:]], len(frame) - last
        if not buffered:
            buffer = []
    if buffered:
        absorb(pd.concat(buffer, ignore_index=True) if len(buffer) > 1 else buffer[0], lenient)
    if total is None or n_rows == 0:
        raise ValueError(f"{path}: the log has no rows")
    return AggregatedRows(**total, sessions_per_query=sessions_per_query, rows=n_rows, ignored_columns=tuple(ignored))
