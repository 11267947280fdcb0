"""Baidu-ULTR readers: raw training partitions into the click-log table, and the preprocessed release.

Two shapes of the public Baidu-ULTR data (Zou et al., NeurIPS 2022 datasets track; Hager et
al., SIGIR 2024) are read here; ``cltr.data.baidu_generator`` writes small seeded files of
both shapes for the tests.

**Raw partitions** ``part-NNNNN.gz``: gzip text, tab-separated, newline-ended, bytes. A
session opens with a line of exactly 3 fields (query id, query tokens, reformulation
tokens); each following line is one displayed document with 32 fields (``RAW_FIELDS``).
Token sequences are integer ids joined by byte 0x01. As in Hager et al.'s preprocessing,

- a document whose title is ``21429`` (``MISSING_TITLE``) is missing: it is dropped, but it
  keeps its place, so the documents below it keep their ranks (a rank gap);
- the "what other people searched for" block (title ``OTHERS_SEARCHED_TITLE``) is dropped
  and does not take a place: the documents below it move up one rank.

So a document's rank is its place among the session's document lines that are not such a
block, counted here; the written position field is checked (an integer 1-30) but not used.

Rows read (``RawRows``): session (numbered 0.. over all partitions read together, in file
order), qid, url (the document's url md5), rank, click, and the optional columns dwell
(field 16), first_click (12) and last_click (28) (NaN where written ``-``). Every malformed
line is an error naming its partition and line (1-based).

Raw logs name no logging ranker. ``ordering_rankers`` numbers the distinct displayed
orderings of each query, so that intervention harvesting (``cltr.core.propensity``) can take
the sessions of one query that show one document at different ranks as its interventions
(the "global all-pairs" estimate of Baidu-ULTR's position bias).

**Preprocessed release** (Hager et al.'s Feather files, or Parquet of their rows): read by
``cltr.data.baidu_preprocessed``.
"""

from __future__ import annotations

import dataclasses
import gzip
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "RAW_FIELDS",
    "MISSING_TITLE",
    "OTHERS_SEARCHED_TITLE",
    "RawRows",
    "read_raw_partition",
    "read_raw_partitions",
    "ordering_rankers",
    "raw_table",
    "concatenate_rows",
    "import_raw_partitions",
    "read_session_table",
]

RAW_FIELDS = (
    "position",
    "url_md5",
    "title",
    "abstract",
    "multimedia_type",
    "click",
    "unused_6",
    "unused_7",
    "skip",
    "serp_height",
    "displayed_time",
    "displayed_time_middle",
    "first_click",
    "displayed_count",
    "serp_max_show_height",
    "slipoff_count_after_click",
    "dwelling_time",
    "displayed_time_top",
    "serp_to_top",
    "displayed_count_top",
    "displayed_count_bottom",
    "slipoff_count",
    "unused_22",
    "final_click",
    "displayed_time_bottom",
    "click_count",
    "displayed_count_2",
    "unused_27",
    "last_click",
    "reverse_display_count",
    "displayed_count_middle",
    "unused_31",
)
SESSION_FIELDS = 3
DOCUMENT_FIELDS = len(RAW_FIELDS)  # 32
MISSING_TITLE = b"21429"
OTHERS_SEARCHED_TITLE = b"\x01".join(b"3742 11492 12169 5061 16905".split())
MAX_POSITION = 30
_FIELD = {name: i for i, name in enumerate(RAW_FIELDS)}


@dataclass(frozen=True)
class RawRows:
    """Displayed documents of raw Baidu-ULTR sessions, one row each, in file order.

    Attributes
    ----------
    session : ndarray of int64, shape (n_rows,)
        Session number, non-decreasing (sessions without a kept document have no row).
    qid : ndarray of int64, shape (n_rows,)
        Baidu's query id of the session.
    url : ndarray of bytes (dtype S), shape (n_rows,)
        The document's url md5 as written.
    rank : ndarray of int64, shape (n_rows,)
        1-based rank (see the module docstring for missing documents and "others searched" blocks).
    click : ndarray of int8, shape (n_rows,)
    dwell, first_click, last_click : ndarray of float64, shape (n_rows,)
        Fields 16, 12 and 28; NaN where written ``-``.
    n_sessions : int
        Sessions read (including those without a kept document).
    n_lines : int
        Lines read.
    """

    session: np.ndarray
    qid: np.ndarray
    url: np.ndarray
    rank: np.ndarray
    click: np.ndarray
    dwell: np.ndarray
    first_click: np.ndarray
    last_click: np.ndarray
    n_sessions: int
    n_lines: int

    def __len__(self) -> int:
        return len(self.rank)


def _numbers(
    raw: list[bytes],
    *,
    name: str,
    where: list[int],
    path: Path,
    integer: bool,
    allow_missing: bool = False,
    low: float | None = None,
    high: float | None = None,
) -> np.ndarray:
    """One column parsed at once; on failure the first bad cell is found and named."""
    text = np.array(raw, dtype=bytes)
    values: np.ndarray | None = None
    if not allow_missing:
        try:
            values = text.astype(np.int64 if integer else np.float64)
        except ValueError:
            values = None
    else:
        missing = text == b"-"
        try:
            values = np.where(missing, b"nan", text).astype(np.float64)
        except ValueError:
            values = None
    if values is not None:
        finite = ~np.isnan(values) if values.dtype.kind == "f" else np.ones(len(values), np.bool_)
        in_range = np.ones(len(values), np.bool_)
        if low is not None:
            in_range &= ~finite | (values >= low)
        if high is not None:
            in_range &= ~finite | (values <= high)
        if in_range.all():
            return values
    # the slow path runs only to name the first bad cell
    for i, cell in enumerate(raw):
        if allow_missing and cell == b"-":
            continue
        try:
            value = int(cell) if integer else float(cell)
        except ValueError:
            value = None
        if value is None or (low is not None and value < low) or (high is not None and value > high):
            bounds = f" in {low:g}..{high:g}" if low is not None and high is not None else ""
            kind = "an integer" if integer else "a number"
            missing = " or -" if allow_missing else ""
            line = where[i]
            raise ValueError(
                f"{path}: line {line}: field {_FIELD[name]} ({name}) must be {kind}{bounds}{missing}, "
                f"found {cell.decode('latin-1')!r}"
            )
    raise AssertionError("unreachable: a column failed to parse but no cell is bad")  # pragma: no cover


def read_raw_partition(path: str | os.PathLike, *, first_session: int = 0) -> RawRows:
    """Read one raw partition (gzip or plain text) into ``RawRows``.

    Parameters
    ----------
    path : path-like
        ``part-NNNNN.gz`` (gzip, by its magic bytes) or the same text uncompressed.
    first_session : int, keyword-only
        Number of the partition's first session (to number sessions across partitions).

    Returns
    -------
    RawRows

    pyarrow's CSV parser reads the partition when it is well formed (about 4.5 times as fast as
    splitting its lines in Python, ``bench/baidu_raw.py``); at the first sign that it is not,
    the partition is read again line by line, which names the line.

    Raises
    ------
    ValueError
        Naming the partition and line of the first malformed line: a field count other than 3
        or 32, a document line before any session line, or a cell that is not what its field
        holds.
    """
    path = Path(path)
    with open(path, "rb") as handle:
        gzipped = handle.read(2) == b"\x1f\x8b"
    fast = _read_with_arrow(path, gzipped=gzipped, first_session=first_session)
    if fast is not None:
        return fast
    opener = gzip.open if gzipped else open
    try:
        with opener(path, "rb") as handle:
            data = handle.read()
    except (OSError, EOFError) as error:
        raise ValueError(f"{path}: cannot be read as {'gzip' if gzipped else 'text'}: {error}") from error
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    kept, row_session, row_qid, row_rank, where = [], [], [], [], []
    session = first_session - 1
    qid_text = None
    place = 0
    # One pass over the lines keeps each document line's fields whole; the columns are taken
    # out of them afterwards by comprehension and parsed as arrays (the per-line work is the split).
    for number, line in enumerate(lines, start=1):
        fields = line.split(b"\t")
        n = len(fields)
        if n == DOCUMENT_FIELDS:
            if qid_text is None:
                raise ValueError(
                    f"{path}: line {number}: a document line (32 fields) before any session line "
                    "(3 fields: query id, query tokens, reformulation tokens)"
                )
            heading = fields[2]
            if heading == OTHERS_SEARCHED_TITLE:
                continue  # the block takes no place
            place += 1
            if heading == MISSING_TITLE:
                continue  # a missing document keeps its place (a rank gap)
            kept.append(fields)
            row_session.append(session)
            row_qid.append(qid_text)
            row_rank.append(place)
            where.append(number)
        elif n == SESSION_FIELDS:
            session += 1
            qid_text = fields[0]
            place = 0
        elif line.strip() == b"":
            raise ValueError(
                f"{path}: line {number}: an empty line; every line is a session line (3 "
                "tab-separated fields) or a document line (32)"
            )
        else:
            raise ValueError(
                f"{path}: line {number}: {n} tab-separated fields; a session line has 3 (query id, "
                f"query tokens, reformulation tokens) and a document line 32"
            )
    position = [f[0] for f in kept]
    url = [f[1] for f in kept]
    click = [f[5] for f in kept]
    first = [f[12] for f in kept]
    dwell = [f[16] for f in kept]
    last = [f[28].rstrip(b"\r") for f in kept]
    kwargs: dict[str, Any] = {"where": where, "path": path}
    _numbers(position, name="position", integer=True, low=1, high=MAX_POSITION, **kwargs)
    clicks = _numbers(click, name="click", integer=True, low=0, high=1, **kwargs).astype(np.int8)
    try:
        qids = np.array(row_qid, dtype=bytes).astype(np.int64)
    except ValueError:
        for line_number, text in zip(where, row_qid, strict=True):
            try:
                int(text)
            except ValueError:
                raise ValueError(
                    f"{path}: line {line_number}: its session's query id must be an integer, "
                    f"found {text.decode('latin-1')!r}"
                ) from None
    urls = np.array(url, dtype=bytes)
    if len(urls) and (urls == b"").any():
        line_number = where[int(np.flatnonzero(urls == b"")[0])]
        raise ValueError(f"{path}: line {line_number}: field 1 (url_md5) is empty")
    return RawRows(
        session=np.array(row_session, dtype=np.int64),
        qid=qids,
        url=urls,
        rank=np.array(row_rank, dtype=np.int64),
        click=clicks,
        dwell=_numbers(dwell, name="dwelling_time", integer=False, allow_missing=True, low=0, **kwargs),
        first_click=_numbers(first, name="first_click", integer=False, allow_missing=True, low=0, **kwargs),
        last_click=_numbers(last, name="last_click", integer=False, allow_missing=True, low=0, **kwargs),
        n_sessions=session - first_session + 1,
        n_lines=len(lines),
    )


# the columns the reader keeps, by field number, as pyarrow types them ("-" read as missing)
_ARROW_FIELDS = {0: "int64", 1: "binary", 2: "binary", 5: "int64", 12: "float64", 16: "float64", 28: "float64"}


def _read_with_arrow(path: Path, *, gzipped: bool, first_session: int) -> RawRows | None:
    """The partition read by pyarrow's CSV parser (several times faster than splitting lines
    in Python), or None wherever it is not exactly what the line-by-line reader would
    return: pyarrow missing, a line of another field count than 3 or 32, an empty line, a
    cell that does not parse as its field or lies outside its range, a document before any
    session. The line-by-line reader then reads the partition again and names the line."""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.csv as arrow_csv
    except ImportError:
        return None
    session_lines: list[int] = []
    session_qids: list[str] = []
    other_lines = []

    def session_line(row) -> str:
        # pyarrow hands over every line whose field count is not 32: a session line is kept
        if row.actual_columns == SESSION_FIELDS and row.number is not None:
            session_lines.append(row.number)
            session_qids.append(row.text.split("\t", 1)[0])
        else:
            other_lines.append(row.number)
        return "skip"

    names = [f"f{i}" for i in range(DOCUMENT_FIELDS)]
    types = {f"f{i}": getattr(pa, kind)() for i, kind in _ARROW_FIELDS.items()}
    read = arrow_csv.ReadOptions(column_names=names, use_threads=False, block_size=1 << 24)
    parse = arrow_csv.ParseOptions(
        delimiter="\t",
        quote_char=False,
        double_quote=False,
        escape_char=False,
        newlines_in_values=False,
        ignore_empty_lines=False,
        invalid_row_handler=session_line,
    )
    convert = arrow_csv.ConvertOptions(
        include_columns=list(types), column_types=types, null_values=["-"], strings_can_be_null=False
    )
    try:
        with pa.input_stream(str(path), compression="gzip" if gzipped else None) as stream:
            table = arrow_csv.read_csv(stream, read_options=read, parse_options=parse, convert_options=convert)
    except (pa.ArrowInvalid, OSError, EOFError):
        return None
    n_documents, n_sessions = table.num_rows, len(session_lines)
    if other_lines or (n_documents and not n_sessions):
        return None
    n_lines = n_documents + n_sessions
    starts = np.asarray(session_lines, dtype=np.int64)
    is_document = np.ones(n_lines + 1, dtype=bool)
    is_document[0] = False
    is_document[starts] = False
    document_line = np.flatnonzero(is_document)
    of_session = np.searchsorted(starts, document_line) - 1  # index of the session line above
    if len(of_session) and of_session[0] < 0:
        return None
    title = table.column("f2")
    others = pc.equal(title, pa.scalar(OTHERS_SEARCHED_TITLE, pa.binary())).to_numpy(zero_copy_only=False)
    missing = pc.equal(title, pa.scalar(MISSING_TITLE, pa.binary())).to_numpy(zero_copy_only=False)
    # a document's place: the session's document lines down to it that are not an "others" block
    counted = np.cumsum(~others)
    before = np.concatenate([[0], counted])[np.searchsorted(of_session, np.arange(n_sessions))]
    place = counted - before[of_session]
    kept = ~others & ~missing
    columns = {}
    for i, kind in _ARROW_FIELDS.items():
        if i == 2:
            continue
        column = table.column(f"f{i}").filter(pa.array(kept))
        if column.null_count:
            if kind != "float64":
                return None
        columns[i] = column
    position = columns[0].to_numpy()
    click = columns[5].to_numpy()
    if ((position < 1) | (position > MAX_POSITION)).any() or ((click != 0) & (click != 1)).any():
        return None
    floats = {}
    for i in (12, 16, 28):
        values = columns[i].to_numpy(zero_copy_only=False)
        if (~np.isnan(values) & (values < 0)).any():
            return None
        floats[i] = values
    url = np.array(columns[1].to_numpy(zero_copy_only=False), dtype=bytes)
    if len(url) and (url == b"").any():
        return None
    try:
        qid = np.array([int(text) for text in session_qids], dtype=np.int64)
    except ValueError:
        return None
    row_session = of_session[kept]
    return RawRows(
        session=first_session + row_session,
        qid=qid[row_session],
        url=url,
        rank=place[kept].astype(np.int64),
        click=click.astype(np.int8),
        dwell=floats[16],
        first_click=floats[12],
        last_click=floats[28],
        n_sessions=n_sessions,
        n_lines=n_lines,
    )


def read_raw_partitions(paths: Iterable[str | os.PathLike], *, n_jobs: int = 1) -> Iterator[RawRows]:
    """Each partition's rows in turn, sessions numbered on across partitions (a stream: one
    partition is in memory at a time).

    With ``n_jobs`` > 1, worker processes read partitions side by side (parsing is one core's
    work per partition), at most ``2 * n_jobs`` ahead of the one yielded; the rows, their
    order and their session numbers are those of one process."""
    paths = list(paths)
    first = 0
    if n_jobs <= 1 or len(paths) <= 1:
        for path in paths:
            rows = read_raw_partition(path, first_session=first)
            first += rows.n_sessions
            yield rows
        return
    import collections
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # forked workers start at once with the modules this process holds; the reader needs no
    # state of it but the function
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
    with ProcessPoolExecutor(max_workers=n_jobs, mp_context=context) as pool:
        ahead = collections.deque(pool.submit(read_raw_partition, path) for path in paths[: 2 * n_jobs])
        waiting = iter(paths[2 * n_jobs :])
        while ahead:
            rows = ahead.popleft().result()  # a malformed partition's ValueError, naming its line
            following = next(waiting, None)
            if following is not None:
                ahead.append(pool.submit(read_raw_partition, following))
            yield dataclasses.replace(rows, session=rows.session + first)
            first += rows.n_sessions


def ordering_rankers(session: np.ndarray, query: np.ndarray, doc: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """A logging-ranker id per row: the number of its session's displayed ordering.

    Two sessions get the same id when they show the same query with the same document at
    every rank (gaps included); the ids are global (one id is one (query, ordering)), so the
    estimator's n_i is the sessions of that ordering, and a document shown at rank k by one
    ordering and k' by another of its query is an intervention (Agarwal et al., WSDM 2019,
    "global all-pairs"). Exact: the orderings are compared as whole rows, not hashed.

    Parameters
    ----------
    session, query, doc, rank : array_like of int, shape (n_rows,)
        ``doc`` an integer id of the document (e.g. its url factorized), ``rank`` 1-based.

    Returns
    -------
    ndarray of int64, shape (n_rows,)
        0.. in order of the orderings' (query, documents) values.
    """
    session = np.asarray(session, dtype=np.int64)
    if len(session) == 0:
        return np.zeros(0, dtype=np.int64)
    rank = np.asarray(rank, dtype=np.int64)
    sessions, row_session = np.unique(session, return_inverse=True)
    depth = int(rank.max())
    grid = np.full((len(sessions), depth + 1), -1, dtype=np.int64)
    grid[row_session, rank] = np.asarray(doc, dtype=np.int64)
    grid[row_session, 0] = np.asarray(query, dtype=np.int64)
    _, ordering = np.unique(grid, axis=0, return_inverse=True)
    return ordering.reshape(-1)[row_session].astype(np.int64)


def raw_table(rows: RawRows) -> dict[str, np.ndarray]:
    """The click-log table of raw rows: ``session, qid, docid, rank, click, ranker, dwell,
    first_click, last_click`` (``ranker`` from ``ordering_rankers``; ``docid`` the url md5)."""
    _, doc = np.unique(rows.url, return_inverse=True)
    ranker = ordering_rankers(rows.session, rows.qid, doc.reshape(-1), rows.rank)
    return {
        "session": rows.session,
        "qid": rows.qid,
        "docid": rows.url.astype(str),
        "rank": rows.rank,
        "click": rows.click,
        "ranker": ranker,
        "dwell": rows.dwell,
        "first_click": rows.first_click,
        "last_click": rows.last_click,
    }


def concatenate_rows(parts: list[RawRows]) -> RawRows:
    """One ``RawRows`` of several partitions' (read with ``read_raw_partitions``)."""
    if not parts:
        raise ValueError("no partition was read")
    columns = ("session", "qid", "url", "rank", "click", "dwell", "first_click", "last_click")
    joined = {name: np.concatenate([getattr(p, name) for p in parts]) for name in columns}
    return RawRows(**joined, n_sessions=sum(p.n_sessions for p in parts), n_lines=sum(p.n_lines for p in parts))


def import_raw_partitions(
    paths: Iterable[str | os.PathLike], out: str | os.PathLike, *, progress=None, n_jobs: int = 1
) -> tuple[dict[str, int], dict[str, np.ndarray]]:
    """Read raw partitions (``n_jobs`` side by side: ``read_raw_partitions``) and write their
    click-log table to ``out``.

    The table (``raw_table``: session, qid, docid, rank, click, ranker, dwell, first_click,
    last_click) is written in the format ``out``'s extension names (``.parquet``, ``.tsv``,
    ``.csv``, optionally compressed), atomically. ``progress(path, rows)`` is called after
    each partition. Returns (counts, table): counts of partitions, lines, sessions, rows,
    clicks and orderings, and the table's columns.
    """
    from cltr.data.clicklog import write_click_log

    parts = []
    for rows in read_raw_partitions(paths, n_jobs=n_jobs):
        parts.append(rows)
        if progress is not None:
            progress(rows, len(parts))
    rows = concatenate_rows(parts)
    table = raw_table(rows)
    write_click_log(out, table)
    counts = {
        "partitions": len(parts),
        "lines": rows.n_lines,
        "sessions": rows.n_sessions,
        "rows": len(rows),
        "clicks": int(rows.click.sum()),
        "orderings": int(table["ranker"].max()) + 1 if len(rows) else 0,
    }
    return counts, table


def read_session_table(path: str | os.PathLike, *, max_rank: int | None = None) -> dict[str, np.ndarray]:
    """The columns click models need from any click table (``session, qid, doc`` or ``docid``,
    ``rank, click``), with sessions, queries and documents numbered as integers.

    Returns
    -------
    dict of ndarray of int64, shape (n_rows,)
        ``session, query, doc, rank, click`` (query and doc factorized; ``doc`` is per query).
    """
    import pandas as pd

    path = Path(path)
    name = path.name.lower()
    if name.endswith(".parquet"):
        frame = pd.read_parquet(path)
    else:
        frame = pd.read_csv(path, sep="," if ".csv" in name else "\t")
    missing = [c for c in ("session", "qid", "rank", "click") if c not in frame.columns]
    if "doc" not in frame.columns and "docid" not in frame.columns:
        missing.append("doc or docid")
    if missing:
        raise ValueError(
            f"{path}: a click table needs the columns {', '.join(missing)}; found {', '.join(map(str, frame.columns))}"
        )
    document = frame["doc"] if "doc" in frame.columns else frame["docid"]
    rank = frame["rank"].to_numpy()
    if max_rank is not None:
        keep = rank <= max_rank
        frame, document, rank = frame[keep], document[keep], rank[keep]
    codes = {name: pd.factorize(frame[name])[0] for name in ("session", "qid")}
    return {
        "session": codes["session"].astype(np.int64),
        "query": codes["qid"].astype(np.int64),
        "doc": pd.factorize(document)[0].astype(np.int64),
        "rank": rank.astype(np.int64),
        "click": frame["click"].to_numpy().astype(np.int64),
    }
