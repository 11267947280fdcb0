"""A Parquet click log read where its chunks are computed: the client never holds the log.

The click-log format (``cltr.data.clicklog``) as a Parquet table, the one ``cltr clicks
import`` reads, is cut into chunks of whole queries that each worker of the chunk engine
(``cltr.core.chunked``: in process, or a dask cluster) reads from the file itself:

1. ``index_click_log``: one streaming pass over the ``qid`` (and ``ranker``) columns, one
   row group at a time, gives the rows of each query of the split, the query blocks present
   in each row group (``BLOCKS`` blocks of consecutive queries, a bitmap of bytes per row
   group) and the ranker values in order of first appearance (the codes an import gives
   them). An unknown qid or an empty qid or ranker cell is named there, by file and row.
2. ``plan_chunks``: contiguous ranges of the split's query indices with about equal rows,
   and for each the row groups that hold any of its queries' blocks. A log written query by
   query gives each chunk its own row groups; a log written pass by pass has every query in
   every row group, and every chunk then reads every row group and keeps its own rows.
3. ``read_chunk`` (on the worker): the chunk's row groups in batches, its rows kept, checked
   as ``cltr clicks import --chunk-rows`` checks a chunk (``clicklog._validate``: same
   messages, the file's own row numbers; a session's rows must follow one another) and
   reduced to counts per (document, rank, ranker) of its queries (``Impressions``). A
   worker holds at most ``batch_rows`` rows of the log and its chunk's counts.

``harvest_parquet_log`` runs intervention harvesting on those chunks
(``cltr.core.chunked_propensity.harvest_on_chunks``): the same estimate and band as
``harvest_propensities`` on the whole import's impressions, to rounding.

What a whole import checks across the log and a chunk cannot see alone is checked here
from each chunk's summary (a propensity column filled in some chunks and empty in others; a
log of clicked rows only; a session that does not start at rank 1 in a log with a click 0
elsewhere). One check is not made: a session id reused by two queries that fall in two
different chunks (a whole import refuses it as "a session spanning two queries"); within a
chunk it is refused as there.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from cltr.core.clicks import Impressions
from cltr.core.queries import Queries
from cltr.data.clicklog import (
    _PARTLY_EMPTY,
    AggregatedRows,
    _checked,
    _codes,
    _column_check,
    _empty,
    _reduce,
    _Rows,
    _Stream,
    _validate,
    file_format,
    pd,
)

__all__ = [
    "SplitIds",
    "LogIndex",
    "ChunkSpec",
    "ChunkCounts",
    "index_click_log",
    "plan_chunks",
    "read_chunk",
    "chunk_impressions",
    "chunk_summary",
    "harvest_parquet_log",
    "file_sha256",
    "BLOCKS",
    "BATCH_ROWS",
]

# query blocks of the row-group bitmap: a chunk reads a row group holding any query of a block
# it overlaps, so at most one block at each end of a chunk is read in excess
BLOCKS = 4096
BATCH_ROWS = 1 << 20  # rows of the log a worker (or the index pass) holds at a time


@dataclass(frozen=True)
class SplitIds:
    """What a worker needs of the split to check and place rows: its qids, query offsets and
    document ids (None where it has none); not its features."""

    qid: np.ndarray
    offsets: np.ndarray
    docid: np.ndarray | None = None

    @property
    def n_queries(self) -> int:
        return len(self.qid)

    @classmethod
    def of(cls, queries: Queries) -> SplitIds:
        return cls(
            qid=np.asarray(queries.qid, dtype=np.int64),
            offsets=np.asarray(queries.offsets, dtype=np.int64),
            docid=getattr(queries, "docid", None),
        )


@dataclass(frozen=True)
class LogIndex:
    """One streaming pass over a Parquet click log (``index_click_log``).

    Attributes
    ----------
    path : str
    rows : int
    group_rows : ndarray of int64, shape (n_groups,)
        Rows of each row group.
    rows_per_query : ndarray of int64, shape (n_queries,)
        Rows of each query of the split (by query index).
    present : ndarray of bool, shape (n_groups, n_blocks)
        Whether a row group holds a row of a query of block b (query q is in block
        q * n_blocks // n_queries).
    rankers : dict
        Ranker value -> code, in order of first appearance in the file (an import's codes).
    columns : tuple of str
        The file's columns to read, as named there.
    ignored : tuple of str
        Its columns of no known name (not read).
    """

    path: str
    rows: int
    group_rows: np.ndarray
    rows_per_query: np.ndarray
    present: np.ndarray
    rankers: dict
    columns: tuple[str, ...]
    ignored: tuple[str, ...] = ()


@dataclass(frozen=True)
class ChunkSpec:
    """A chunk of whole queries as a worker reads it: queries ``first:stop`` (query indices
    of the split), the row groups that hold them, and what it needs to read them."""

    path: str
    first: int
    stop: int
    groups: np.ndarray
    group_starts: np.ndarray
    columns: tuple[str, ...]
    rankers: dict
    batch_rows: int = BATCH_ROWS


@dataclass
class ChunkCounts:
    """A chunk as read: its counts per (document, rank, ranker) and what the checks across
    chunks need (``chunk_summary``)."""

    table: Impressions
    rows: int
    clicks: int
    deepest: int
    filled: bool | None
    first_empty: str | None
    seen_zero: bool
    deferred_top: str | None
    groups_read: int = field(default=0)


def file_sha256(path: str | os.PathLike, *, block: int = 1 << 22) -> str:
    """The sha256 of a file's bytes, read ``block`` bytes at a time."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        while chunk := stream.read(block):
            digest.update(chunk)
    return digest.hexdigest()


def _parquet(path: Path):
    kind, _ = file_format(path)
    if kind != "parquet":
        raise ValueError(
            f"{path}: a click log read chunk by chunk where it is computed must be a Parquet table "
            f"(.parquet), whose row groups can be read apart; import a delimited log with "
            f"`cltr clicks import --chunk-rows N`, or write it as Parquet"
        )
    try:
        from pyarrow import parquet
    except ImportError:
        raise ValueError(f"{path}: reading Parquet needs pyarrow: pip install pyarrow") from None
    try:
        return parquet.ParquetFile(path)
    except (OSError, EOFError, ValueError) as error:
        raise ValueError(f"{path}: not a readable Parquet table ({str(error).strip().splitlines()[0]})") from error


def _named(names, wanted: str) -> str | None:
    return next((name for name in names if name.strip() == wanted), None)


def _query_index(
    path: Path,
    frame: pd.DataFrame,
    first_row: int,
    sorted_qid: np.ndarray,
    order: np.ndarray,
    row_numbers: np.ndarray | None = None,
) -> np.ndarray:
    """The split's query index of each row's qid; an empty or unknown qid is named by row."""
    rows = _Rows(path, frame, first_row=first_row, row_numbers=row_numbers)
    rows.fail(_empty(frame["qid"], parquet=True), "the qid cell is empty; every row needs one")
    qid = rows.integers("qid")
    position = np.clip(np.searchsorted(sorted_qid, qid), 0, len(sorted_qid) - 1)
    rows.fail(
        (sorted_qid[position] != qid) | rows.beyond["qid"],
        lambda row: f"qid {rows.cell(row, 'qid')} is not a query of this split",
    )
    return order[position].astype(np.int64)


def _sorted_ids(split: SplitIds) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(split.qid, kind="stable")
    return split.qid[order], order


def index_click_log(path: str | os.PathLike, split: SplitIds | Queries, *, batch_rows: int = BATCH_ROWS) -> LogIndex:
    """One streaming pass over a Parquet click log's qid and ranker columns (``batch_rows``
    rows at a time): the rows of each query, the query blocks of each row group, the ranker
    codes. The header is checked as an import checks it; columns of no known name are
    ignored (named in ``LogIndex.ignored``)."""
    path = _checked(path, "auto")
    split = split if isinstance(split, SplitIds) else SplitIds.of(split)
    table = _parquet(path)
    names = [str(name) for name in table.schema_arrow.names]
    ignored: list[str] = []
    wanted = _column_check(path, True, ignored)([name.strip() for name in names])
    columns = tuple(name for name in names if name.strip() in wanted)
    qid_name, ranker_name = _named(columns, "qid"), _named(columns, "ranker")
    assert qid_name is not None  # _column_check: qid is required
    sorted_qid, order = _sorted_ids(split)
    n_queries = split.n_queries
    blocks = max(1, min(BLOCKS, n_queries))
    groups = table.metadata.num_row_groups
    present = np.zeros((groups, blocks), dtype=bool)
    group_rows = np.array([table.metadata.row_group(g).num_rows for g in range(groups)], dtype=np.int64)
    rows_per_query = np.zeros(n_queries, dtype=np.int64)
    stream = _Stream()  # its ranker codes: in order of first appearance, as an import's
    done = 0
    read = [qid_name] + ([ranker_name] if ranker_name is not None else [])
    try:
        for g in range(groups):
            for batch in table.iter_batches(batch_size=batch_rows, row_groups=[g], columns=read):
                frame = batch.to_pandas()
                frame.columns = [name.strip() for name in read]
                query = _query_index(path, frame, done, sorted_qid, order)
                rows_per_query += np.bincount(query, minlength=n_queries)
                present[g, (query * blocks) // n_queries] = True
                if ranker_name is not None:
                    rows = _Rows(path, frame, first_row=done)
                    rows.fail(_empty(frame["ranker"], parquet=True), "the ranker cell is empty; every row needs one")
                    stream.ranker_codes(frame["ranker"])
                done += len(frame)
    except (OSError, EOFError) as error:
        raise ValueError(f"{path}: not a readable Parquet table ({str(error).strip().splitlines()[0]})") from error
    if done == 0:
        raise ValueError(f"{path}: the log has no rows")
    return LogIndex(
        path=str(path),
        rows=done,
        group_rows=group_rows,
        rows_per_query=rows_per_query,
        present=present,
        rankers=dict(stream.rankers),
        columns=columns,
        ignored=tuple(ignored),
    )


def plan_chunks(index: LogIndex, chunks: int, *, batch_rows: int = BATCH_ROWS) -> list[ChunkSpec]:
    """``chunks`` contiguous ranges of query indices of about equal rows (queries are never
    split, so there may be fewer), each with the row groups that hold its queries."""
    if isinstance(chunks, (bool, np.bool_)) or int(chunks) != chunks or chunks < 1:
        raise ValueError(f"chunks must be an integer >= 1, found {chunks!r}")
    n_queries = len(index.rows_per_query)
    cumulative = np.cumsum(index.rows_per_query)
    targets = cumulative[-1] * np.arange(1, int(chunks)) / int(chunks)
    cuts = np.searchsorted(cumulative, targets, side="left") + 1
    bounds = np.unique(np.concatenate([[0], np.minimum(cuts, n_queries), [n_queries]])).astype(np.int64)
    blocks = index.present.shape[1]
    starts = np.concatenate([[0], np.cumsum(index.group_rows)[:-1]]).astype(np.int64)
    specs = []
    for first, stop in zip(bounds[:-1], bounds[1:], strict=True):
        low, high = (int(first) * blocks) // n_queries, ((int(stop) - 1) * blocks) // n_queries
        groups = np.flatnonzero(index.present[:, low : high + 1].any(axis=1))
        specs.append(
            ChunkSpec(
                path=index.path,
                first=int(first),
                stop=int(stop),
                groups=groups,
                group_starts=starts[groups],
                columns=index.columns,
                rankers=index.rankers,
                batch_rows=int(batch_rows),
            )
        )
    return specs


def _cut(frame: pd.DataFrame) -> int:
    """Rows of ``frame`` before the start of its last session (0: one session only)."""
    session = _codes(frame["session"])
    other = np.flatnonzero(session != session[-1])
    last = int(other[-1]) + 1 if len(other) else 0
    if last and (session[:last] == session[-1]).any():
        return len(frame)  # the last session came back after others: the chunk's checks name it
    return last


def read_chunk(spec: ChunkSpec, split: SplitIds) -> ChunkCounts:
    """Read one chunk where this runs: its row groups ``spec.batch_rows`` rows at a time,
    its queries' rows kept and checked as an import in chunks checks them, reduced to counts
    (``Impressions``) per (document, rank, ranker) of its queries."""
    path = Path(spec.path)
    table = _parquet(path)
    sorted_qid, order = _sorted_ids(split)
    stream = _Stream()
    stream.rankers = dict(spec.rankers)  # the whole log's codes, from the index pass
    total: dict[str, np.ndarray] | None = None
    rows = clicks = deepest = 0
    pending: list[tuple[pd.DataFrame, np.ndarray]] = []  # rows kept, not yet checked, with their file rows
    buffered = 0

    def absorb(frame: pd.DataFrame, numbers: np.ndarray) -> None:
        nonlocal total, rows, clicks, deepest
        checked = _validate(_Rows(path, frame, row_numbers=numbers), split, path, stream)  # type: ignore[arg-type]
        impressions = np.ones(len(frame), dtype=np.int64)
        counts, columns = (
            checked["click"],
            {name: checked[name] for name in ("query", "doc", "rank", "ranker", "propensity")},
        )
        rows, clicks = rows + len(frame), clicks + int(counts.sum())
        deepest = max(deepest, int(checked["rank"].max()))
        if total is not None:
            columns = {name: np.concatenate([total[name], columns[name]]) for name in columns}
            impressions = np.concatenate([total["impressions"], impressions])
            counts = np.concatenate([total["clicks"], counts])
        total = _reduce(columns, impressions, counts)

    def flush(final: bool) -> None:
        nonlocal pending, buffered
        if not pending:
            return
        frame = pd.concat([p[0] for p in pending], ignore_index=True) if len(pending) > 1 else pending[0][0]
        numbers = np.concatenate([p[1] for p in pending])
        last = len(frame) if final else _cut(frame)
        if last == 0:
            return  # one session so far: read on
        absorb(frame.iloc[:last].reset_index(drop=True), numbers[:last])
        pending = [] if last == len(frame) else [(frame.iloc[last:].reset_index(drop=True), numbers[last:])]
        buffered = len(frame) - last

    try:
        for group, start in zip(spec.groups.tolist(), spec.group_starts.tolist(), strict=True):
            done = int(start)
            for batch in table.iter_batches(batch_size=spec.batch_rows, row_groups=[group], columns=list(spec.columns)):
                qid = batch.column(spec.columns.index(_named(spec.columns, "qid"))).to_pandas()
                query = _query_index(path, pd.DataFrame({"qid": qid}), done, sorted_qid, order)
                mine = np.flatnonzero((query >= spec.first) & (query < spec.stop))
                if len(mine):
                    frame = batch.take(mine).to_pandas()
                    frame.columns = [name.strip() for name in spec.columns]
                    pending.append((frame, done + mine))
                    buffered += len(mine)
                    if buffered >= spec.batch_rows:
                        flush(final=False)
                done += batch.num_rows
    except (OSError, EOFError) as error:
        raise ValueError(f"{path}: not a readable Parquet table ({str(error).strip().splitlines()[0]})") from error
    flush(final=True)
    if total is None:
        empty = np.zeros(0, dtype=np.int64)
        impressions_table = Impressions(empty, empty, empty, empty, empty, empty)
    else:
        counted = AggregatedRows(
            query=total["query"],
            doc=total["doc"],
            rank=total["rank"],
            ranker=total["ranker"],
            propensity=total["propensity"],
            impressions=total["impressions"],
            clicks=total["clicks"],
            sessions_per_query=np.zeros(0, dtype=np.int64),
            rows=rows,
        )
        impressions_table = counted.impressions_table()
    return ChunkCounts(
        table=impressions_table,
        rows=rows,
        clicks=clicks,
        deepest=deepest,
        filled=stream.filled,
        first_empty=stream.first_empty,
        seen_zero=stream.seen_zero,
        deferred_top=stream.deferred_top,
        groups_read=len(spec.groups),
    )


def chunk_impressions(counts: ChunkCounts) -> Impressions:
    """The chunk's counts, as the estimators read them."""
    return counts.table


def chunk_summary(counts: ChunkCounts) -> ChunkCounts:
    """The chunk's figures without its counts (what crosses back to the client)."""
    empty = np.zeros(0, dtype=np.int64)
    return ChunkCounts(
        table=Impressions(empty, empty, empty, empty, empty, empty),
        rows=counts.rows,
        clicks=counts.clicks,
        deepest=counts.deepest,
        filled=counts.filled,
        first_empty=counts.first_empty,
        seen_zero=counts.seen_zero,
        deferred_top=counts.deferred_top,
        groups_read=counts.groups_read,
    )


def _check_across(path: str, summaries: list[ChunkCounts]) -> None:
    """What an import checks over the whole log and one chunk cannot: the propensity column
    filled everywhere or nowhere, a click 0 somewhere (else a log of clicked rows only,
    which estimation cannot use), and then every session starting at rank 1."""
    filled = [s for s in summaries if s.filled is not None]
    if any(s.filled for s in filled) and not all(s.filled for s in filled):
        where = next(s.first_empty for s in filled if not s.filled)
        raise ValueError(f"{where}: {_PARTLY_EMPTY}")
    if not any(s.seen_zero for s in summaries):
        raise ValueError(
            f"{path}: every row has click 1 (a log of clicked rows only), so propensities cannot be "
            f"estimated from it: estimation compares how often a document is clicked where it was "
            f"shown, and the log does not say where documents were shown without a click"
        )
    deferred = next((s.deferred_top for s in summaries if s.deferred_top is not None), None)
    if deferred is not None:
        raise ValueError(deferred)


def harvest_parquet_log(
    path: str | os.PathLike,
    split: SplitIds | Queries,
    *,
    chunks: int,
    mapper,
    max_rank: int,
    bootstrap: int = 200,
    level: float = 0.95,
    rng,
    batch_rows: int = BATCH_ROWS,
):
    """Intervention harvesting (AllPairs) on a Parquet click log that the client never holds:
    ``index_click_log`` here, then each chunk read and counted where ``mapper`` computes it
    (``read_chunk``), then ``harvest_on_chunks``. The same estimate and band as
    ``harvest_propensities`` on the impressions of the log imported whole, to rounding.

    Parameters
    ----------
    path : path-like
        The log, in the click-log format, as a Parquet table.
    split : SplitIds or Queries
        The split the log was logged on.
    chunks : int
        Chunks of whole queries (about equal rows; fewer where there are fewer queries).
    mapper
        ``cltr.core.chunked.LocalMapper`` or ``cltr.distributed.DaskMapper``.
    max_rank : int
        Estimate ranks 1..``max_rank``, capped at the deepest rank shown (>= 2).
    bootstrap, level, rng
        As ``harvest_propensities``.
    batch_rows : int
        Rows of the log the index pass and each worker hold at a time.

    Returns
    -------
    PropensityEstimate
        ``info`` adds ``chunks``, ``rows``, ``row_groups`` (of the file) and ``row_groups_read``
        (summed over the chunks).
    """
    from cltr.core.chunked_propensity import harvest_on_chunks
    from cltr.core.propensity import _check_options

    if isinstance(batch_rows, (bool, np.bool_)) or int(batch_rows) != batch_rows or batch_rows < 1:
        raise ValueError(f"batch_rows must be an integer >= 1, found {batch_rows!r}")
    split = split if isinstance(split, SplitIds) else SplitIds.of(split)
    index = index_click_log(path, split, batch_rows=batch_rows)
    specs = plan_chunks(index, chunks, batch_rows=batch_rows)
    counted = mapper.map(read_chunk, mapper.scatter(specs), split=split)
    summaries = mapper.gather(mapper.map(chunk_summary, counted))
    _check_across(index.path, summaries)
    deepest = max(s.deepest for s in summaries)
    # capped at the deepest rank shown, as cltr.estimators.estimate caps it
    k_max = _check_options(min(int(max_rank), deepest), np.array([deepest]), bootstrap, level, minimum=2)
    estimate = harvest_on_chunks(
        mapper.map(chunk_impressions, counted), mapper=mapper, max_rank=k_max, bootstrap=bootstrap, level=level, rng=rng
    )
    estimate.info.update(
        rows=index.rows, row_groups=len(index.group_rows), row_groups_read=int(sum(s.groups_read for s in summaries))
    )
    return estimate
