"""Baidu-ULTR's preprocessed release (Hager et al., SIGIR 2024) as a prepared dataset and its click logs.

Hager, Deffayet, Renders, Zoeter, de Rijke, "Unbiased Learning to Rank Meets Reality:
Lessons from Baidu's Large-Scale Search Dataset" (SIGIR 2024) published the first four raw
partitions of Baidu-ULTR with features on Hugging Face: ``philipphager/baidu-ultr_uva-mlm-ctr``
(query-document embeddings of their own MonoBERT) and ``philipphager/baidu-ultr_baidu-mlm-ctr``
(of Baidu's). Both hold the same files (``docs/how-to/baidu-ultr.md`` says where this was read):

- ``parts/part-{P}_split-{S}.feather`` (P 0..3, S 0..9): clicks. Arrow IPC (Feather v2), one
  row per displayed document, the rows of one session (``query_no``) contiguous, in display
  order. Their loading script calls parts 1-3 "train" and part 0 "test".
- ``parts/validation.feather``: the expert annotations (despite the name, the loading
  script's only annotated split), one row per judged document, grouped by ``query_no``.

Click rows: ``query_no`` (session number in its file), ``query_id`` (Baidu's, not unique),
``query_md5`` (md5 of the query's tokens: the query), ``url_md5`` (the document), ``position``
(1-based; a missing document keeps its place, so positions can have gaps; the "others
searched" block takes none), ``click`` (0/1), display columns (``media_type``,
``displayed_time``, ``serp_height``, ``slipoff_count_after_click``), the lexical features
``LTR_FEATURES`` and ``query_document_embedding`` (768 float16). Annotation rows:
``query_no``, ``query_id``, ``query_md5``, ``frequency_bucket``, ``label`` (0-4), the same
features, no url, position or click.

The Hugging Face ``datasets`` loader turns these into one row per session (query) with
aligned lists (``click: list<int32>``, ``query_document_embedding: list<list<float16>>``,
...); such rows saved as Parquet (``Dataset.to_parquet``) are read too. Which of the two
shapes a file has is told by its ``click`` (or ``label``) column: a list, or one value a row.

``read_preprocessed`` reads either shape, from ``.feather``/``.arrow`` or ``.parquet`` files,
checking every value it keeps (file, row and column named on the first bad one);
``load_baidu_ultr`` makes the dataset ``cltr prepare baidu-ultr`` stores and writes its click
logs in the documented click-log format (``cltr.data.clicklog``).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cltr.core.queries import Dataset, Queries, check_relevant_from, label_counts

__all__ = [
    "LTR_FEATURES",
    "EMBEDDING",
    "FEATURE_SETS",
    "RANK_GAPS",
    "PreprocessedRows",
    "expand_files",
    "read_preprocessed",
    "load_baidu_ultr",
]

LTR_FEATURES = (
    "bm25",
    "bm25_title",
    "bm25_abstract",
    "tf_idf",
    "tf",
    "idf",
    "ql_jelinek_mercer_short",
    "ql_jelinek_mercer_long",
    "ql_dirichlet",
    "document_length",
    "title_length",
    "abstract_length",
)
EMBEDDING = "query_document_embedding"
FEATURE_SETS = ("ltr", "embedding", "both")
RANK_GAPS = ("drop", "close")
LABELS = (0, 4)
_SUFFIXES = {".feather": "feather", ".arrow": "feather", ".ipc": "feather", ".parquet": "parquet"}


@dataclass(frozen=True)
class PreprocessedRows:
    """Documents of preprocessed Baidu-ULTR files, one row each, sessions contiguous, in file order.

    Attributes
    ----------
    session : ndarray of int64, shape (n_rows,)
        Session (a query's result page; for annotations a judged query), numbered 0.. over
        all files read together, non-decreasing.
    query : ndarray of object (str), shape (n_rows,)
        ``query_md5``: the query (its text's hash); "" where an annotation file has none.
    url : ndarray of object (str), shape (n_rows,) or None
        ``url_md5`` (clicks only).
    position, click : ndarray of int64, shape (n_rows,), or None
        Clicks only: the 1-based position (gaps where a missing document kept its place), 0/1.
    label : ndarray of int64, shape (n_rows,), or None
        Annotations only: 0-4.
    X : ndarray of float, shape (n_rows, n_features)
    feature_names : tuple of str
    files : list of str
        The files read, in order.
    """

    session: np.ndarray
    query: np.ndarray
    url: np.ndarray | None
    position: np.ndarray | None
    click: np.ndarray | None
    label: np.ndarray | None
    X: np.ndarray
    feature_names: tuple[str, ...]
    files: list[str]

    @property
    def n_sessions(self) -> int:
        return int(self.session[-1]) + 1 if len(self.session) else 0


def expand_files(pattern: str | os.PathLike, *, what: str) -> list[Path]:
    """The files ``pattern`` names: one file, every .feather/.arrow/.parquet file of a
    directory, or a glob pattern (``parts/part-1_split-*.feather``), sorted."""
    text = os.fspath(pattern)
    path = Path(text)
    if path.is_file():
        return [path]
    if path.is_dir():
        found = sorted(p for p in path.iterdir() if p.suffix.lower() in _SUFFIXES and p.is_file())
        if not found:
            raise ValueError(f"{what}: the directory {text} holds no .feather, .arrow or .parquet file")
        return found
    found = sorted(Path(p) for p in glob.glob(text) if Path(p).is_file())
    if not found:
        raise ValueError(
            f"{what}: no file matches {text!r} (give a file, a directory or a glob pattern such as "
            f"'parts/part-1_split-*.feather')"
        )
    return found


def _read_table(path: Path, columns: list[str]):
    import pyarrow as pa
    import pyarrow.feather as feather
    import pyarrow.parquet as pq

    kind = _SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise ValueError(
            f"{path}: cannot tell the format from the extension {path.suffix or '(none)'}; the "
            f"preprocessed release is .feather (Arrow IPC); .arrow and .parquet are read too"
        )
    try:
        schema = pq.read_schema(path) if kind == "parquet" else feather.read_table(path, columns=[]).schema
        names = list(schema.names)
        wanted = [c for c in dict.fromkeys(columns) if c in names]
        table = pq.read_table(path, columns=wanted) if kind == "parquet" else feather.read_table(path, columns=wanted)
    except (pa.ArrowInvalid, OSError) as error:
        raise ValueError(
            f"{path}: cannot be read as {'Parquet' if kind == 'parquet' else 'Arrow IPC (Feather)'}: {error}"
        ) from error
    return table, names


class _File:
    """One file's columns, flattened to one value per document, with the way back to its
    rows for messages: row r holds documents ``offsets[r]:offsets[r+1]`` (one each in the flat
    shape, its list's in the sessions shape, ``nested``)."""

    def __init__(self, path: Path, table, *, aligned: str, names: list[str]):
        import pyarrow as pa

        self.path, self.table, self.names = path, table, names
        kind = table.schema.field(aligned).type
        self.nested = pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind)
        self.offsets = np.arange(table.num_rows + 1, dtype=np.int64)
        if self.nested:
            lengths = self._lengths(aligned)
            self.offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
            for name in table.column_names:
                if name == aligned or not self._is_list(name) or (name == EMBEDDING and not self._is_list(name, 2)):
                    continue
                other = self._lengths(name)
                bad = np.flatnonzero(other != lengths)
                if bad.size:
                    row = int(bad[0])
                    raise ValueError(
                        f"{path}: row {row + 1}, column {name!r}: {other[row]} values, but column "
                        f"{aligned!r} has {lengths[row]}; a session's lists must be aligned"
                    )
        self.n_rows = table.num_rows
        self.n_docs = int(self.offsets[-1])

    def _is_list(self, name: str, depth: int = 1) -> bool:
        import pyarrow as pa

        kind = self.table.schema.field(name).type
        for _ in range(depth):
            if not (pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind)):
                return False
            kind = kind.value_type
        return True

    def _lengths(self, name: str) -> np.ndarray:
        import pyarrow.compute as pc

        column = self.table.column(name)
        self._no_nulls(name, column, per_row=True)
        return pc.list_value_length(column).to_numpy().astype(np.int64)

    def where(self, doc: int, name: str) -> str:
        """Where document ``doc`` (flattened index) of column ``name`` is written."""
        if not self.nested:
            return f"{self.path}: row {doc + 1}, column {name!r}"
        row = int(np.searchsorted(self.offsets, doc, side="right")) - 1
        return f"{self.path}: row {row + 1}, element {doc - int(self.offsets[row]) + 1} of column {name!r}"

    def _no_nulls(self, name: str, column, *, per_row: bool) -> None:
        import pyarrow.compute as pc

        if column.null_count:
            index = int(np.flatnonzero(pc.is_null(column).to_numpy(zero_copy_only=False))[0])
            place = f"{self.path}: row {index + 1}, column {name!r}" if per_row else self.where(index, name)
            raise ValueError(f"{place}: the value is missing (null); every document needs one")

    def per_doc(self, name: str):
        """The column as one value per document (a sessions-shape list flattened once)."""
        column = self.table.column(name).combine_chunks()
        if self.nested and self._is_list(name):
            column = column.flatten()
        self._no_nulls(name, column, per_row=not self.nested)
        return column

    def per_session(self, name: str) -> np.ndarray:
        """A one-value-a-row column of the sessions shape, repeated for each document of the row."""
        column = self.table.column(name).combine_chunks()
        self._no_nulls(name, column, per_row=True)
        values = column.to_numpy(zero_copy_only=False)
        return np.repeat(values, np.diff(self.offsets)) if self.nested else values

    def integers(self, name: str, *, low: int | None = None, high: int | None = None) -> np.ndarray:
        values = self.per_doc(name).to_numpy(zero_copy_only=False)
        if values.dtype.kind not in "iu":
            as_float = np.asarray(values, dtype=np.float64) if values.dtype.kind in "fb" else None
            if as_float is None or not np.array_equal(as_float, np.round(as_float)) or not np.isfinite(as_float).all():
                first = (
                    0
                    if as_float is None
                    else int(np.flatnonzero(~np.isfinite(as_float) | (as_float != np.round(as_float)))[0])
                )
                raise ValueError(f"{self.where(first, name)}: an integer expected, found {values[first]!r}")
        values = np.asarray(values, dtype=np.int64)
        outside = np.zeros(len(values), dtype=bool)
        if low is not None:
            outside |= values < low
        if high is not None:
            outside |= values > high
        if outside.any():
            bad = int(np.flatnonzero(outside)[0])
            bounds = f"from {low}" + ("" if high is None else f" to {high}")
            raise ValueError(f"{self.where(bad, name)}: an integer {bounds} expected, found {values[bad]}")
        return values

    def strings(self, name: str) -> np.ndarray:
        values = self.per_doc(name).cast("string").to_numpy(zero_copy_only=False).astype(object)
        empty = np.flatnonzero(values == "")
        if empty.size:
            raise ValueError(f"{self.where(int(empty[0]), name)}: an empty string; a non-empty id expected")
        return values

    def floats(self, name: str) -> np.ndarray:
        import pyarrow as pa

        column = self.per_doc(name)
        if not (pa.types.is_floating(column.type) or pa.types.is_integer(column.type)):
            raise ValueError(f"{self.path}: column {name!r} holds {column.type}; numbers expected")
        values = column.to_numpy(zero_copy_only=False).astype(np.float64)
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            raise ValueError(f"{self.where(int(bad[0]), name)}: a finite number expected, found {values[bad[0]]}")
        return values

    def embedding(self, dtype) -> np.ndarray:
        """The ``query_document_embedding`` of every document, shape (n_docs, width)."""
        import pyarrow.compute as pc

        column = self.per_doc(EMBEDDING)
        if not self._is_list(EMBEDDING, 2 if self.nested else 1):
            raise ValueError(
                f"{self.path}: column {EMBEDDING!r} holds {self.table.schema.field(EMBEDDING).type}; a "
                f"list of numbers per document expected"
            )
        widths = pc.list_value_length(column).to_numpy().astype(np.int64)
        if len(widths) and (widths != widths[0]).any():
            bad = int(np.flatnonzero(widths != widths[0])[0])
            raise ValueError(
                f"{self.where(bad, EMBEDDING)}: {widths[bad]} values, but the first document has "
                f"{widths[0]}; every embedding must have one width"
            )
        values = column.flatten()
        width = int(widths[0]) if len(widths) else 0
        if values.null_count:
            index = int(np.flatnonzero(pc.is_null(values).to_numpy(zero_copy_only=False))[0])
            raise ValueError(
                f"{self.where(index // width, EMBEDDING)}: value {index % width + 1} of the embedding is missing (null)"
            )
        matrix = values.to_numpy(zero_copy_only=False).astype(dtype).reshape(len(widths), width)
        not_finite = np.flatnonzero(~np.isfinite(matrix).all(axis=1))
        if not_finite.size:
            raise ValueError(f"{self.where(int(not_finite[0]), EMBEDDING)}: every value must be a finite number")
        return matrix


def _feature_names(features: str, width: int | None) -> tuple[str, ...]:
    ltr = LTR_FEATURES if features in ("ltr", "both") else ()
    embedded = tuple(f"embedding_{i}" for i in range(width or 0)) if features in ("embedding", "both") else ()
    return ltr + embedded


def read_preprocessed(
    paths: Sequence[str | os.PathLike], *, kind: str = "clicks", features: str = "ltr", dtype=np.float64
) -> PreprocessedRows:
    """Read preprocessed Baidu-ULTR click or annotation files (either shape, see the module docstring).

    Parameters
    ----------
    paths : sequence of path-like
        ``.feather``/``.arrow`` or ``.parquet`` files, read in this order; sessions are numbered on
        across them.
    kind : {"clicks", "annotations"}
        Click files need ``query_md5, url_md5, position, click`` (and ``query_no`` in the flat
        shape); annotation files ``label`` (and ``query_no`` in the flat shape).
    features : {"ltr", "embedding", "both"}
        The columns of X: the twelve ``LTR_FEATURES``, the embedding, or both (in that order).
    dtype : numpy float dtype
        Dtype of X.

    Returns
    -------
    PreprocessedRows

    Raises
    ------
    ValueError
        Naming the file, the row (and element of a list) and the column of the first bad
        value: a missing column, a null, a position below 1 or not increasing down its
        session, a click not 0/1, a label outside 0-4, a feature that is not a finite number,
        an empty id, a url shown twice in a session, a session (``query_no``) whose rows are
        not contiguous or that spans two queries, lists of one session that are not aligned.
    """
    if kind not in ("clicks", "annotations"):
        raise ValueError(f"kind must be 'clicks' or 'annotations', found {kind!r}")
    if features not in FEATURE_SETS:
        raise ValueError(f"features must be one of {', '.join(FEATURE_SETS)}, found {features!r}")
    if not paths:
        raise ValueError(f"no {kind} file given")
    aligned = "click" if kind == "clicks" else "label"
    needed = ["query_md5", "url_md5", "position", "click"] if kind == "clicks" else ["label"]
    wanted_features = (list(LTR_FEATURES) if features in ("ltr", "both") else []) + (
        [EMBEDDING] if features in ("embedding", "both") else []
    )
    parts: dict[str, list] = {name: [] for name in ("session", "query", "url", "position", "click", "label", "X")}
    first_session, width = 0, None
    for path in map(Path, paths):
        table, names = _read_table(path, ["query_no", "query_md5", *needed, *wanted_features])
        missing = [c for c in [*needed, *wanted_features] if c not in names]
        if aligned in names and "query_no" not in names:
            import pyarrow as pa

            kind_type = table.schema.field(aligned).type
            if not (pa.types.is_list(kind_type) or pa.types.is_large_list(kind_type)):
                missing.append("query_no")  # one document a row: the session is told by query_no
        if missing:
            raise ValueError(
                f"{path}: missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)}; a "
                f"preprocessed Baidu-ULTR {kind} file (Hager et al.) has {', '.join(needed)}, "
                f"query_no (one row per document) and the features {', '.join(wanted_features)}; "
                f"found {', '.join(names) or 'none'}"
            )
        file = _File(path, table, aligned=aligned, names=names)
        empty = np.flatnonzero(np.diff(file.offsets) == 0) if file.nested and kind == "annotations" else np.zeros(0)
        if len(empty):  # a test query with nothing to rank (an empty click session is merely unused)
            raise ValueError(
                f"{path}: row {int(empty[0]) + 1}, column {aligned!r}: an empty list; an annotated "
                f"query has at least one document"
            )
        if file.nested:
            session = np.repeat(np.arange(file.n_rows, dtype=np.int64), np.diff(file.offsets))
        else:
            number = file.integers("query_no")
            starts = np.concatenate([[True], number[1:] != number[:-1]]) if len(number) else np.zeros(0, bool)
            session = np.cumsum(starts).astype(np.int64) - 1
            run_value = number[starts]
            if len(np.unique(run_value)) != len(run_value):
                order = np.argsort(run_value, kind="stable")
                repeat = order[1:][run_value[order[1:]] == run_value[order[:-1]]]
                row = int(np.flatnonzero(starts)[int(repeat.min())])
                raise ValueError(
                    f"{file.where(row, 'query_no')}: query_no {number[row]} reappears after other "
                    f"sessions; a session's rows must be contiguous"
                )
        if "query_md5" in names:
            query = file.per_session("query_md5").astype(object) if file.nested else file.strings("query_md5")
            if not file.nested and len(query):
                spans = np.flatnonzero((session[1:] == session[:-1]) & (query[1:] != query[:-1]))
                if spans.size:
                    row = int(spans[0]) + 1
                    raise ValueError(
                        f"{file.where(row, 'query_md5')}: query_md5 {query[row]!r} differs from the "
                        f"rows above it of the same query_no; a session is one query"
                    )
            if file.nested:
                empty = np.flatnonzero(query == "")
                if empty.size:
                    raise ValueError(
                        f"{file.where(int(empty[0]), 'query_md5')}: an empty string; a non-empty id expected"
                    )
        else:
            query = np.full(file.n_docs, "", dtype=object)
        columns = []
        if features in ("ltr", "both"):
            columns.append(np.column_stack([file.floats(name) for name in LTR_FEATURES]).astype(dtype))
        if features in ("embedding", "both"):
            matrix = file.embedding(dtype)
            if width is not None and matrix.shape[1] != width:
                raise ValueError(
                    f"{path}: column {EMBEDDING!r} has {matrix.shape[1]} values per document, the "
                    f"files before it {width}; every embedding must have one width"
                )
            width = matrix.shape[1]
            columns.append(matrix)
        X = np.hstack(columns) if len(columns) > 1 else columns[0]
        if kind == "clicks":
            url = file.strings("url_md5")
            position = file.integers("position", low=1)
            click = file.integers("click", low=0, high=1)
            same = session[1:] == session[:-1]
            down = np.flatnonzero(same & (position[1:] <= position[:-1]))
            if down.size:
                row = int(down[0]) + 1
                raise ValueError(
                    f"{file.where(row, 'position')}: position {position[row]} after {position[row - 1]} "
                    f"in the same session; positions must increase down a session's page"
                )
            _check_unique_urls(file, session, url)
            parts["url"].append(url)
            parts["position"].append(position)
            parts["click"].append(click)
        else:
            parts["label"].append(file.integers("label", low=LABELS[0], high=LABELS[1]))
        parts["session"].append(first_session + session)
        parts["query"].append(query)
        parts["X"].append(X)
        first_session += int(session[-1]) + 1 if len(session) else 0

    def joined(name: str) -> np.ndarray | None:
        return np.concatenate(parts[name]) if parts[name] else None

    session_all, query_all, X_all = (np.concatenate(parts[name]) for name in ("session", "query", "X"))
    return PreprocessedRows(
        session=session_all,
        query=query_all,
        url=joined("url"),
        position=joined("position"),
        click=joined("click"),
        label=joined("label"),
        X=np.ascontiguousarray(X_all),
        feature_names=_feature_names(features, width),
        files=[str(p) for p in paths],
    )


def _check_unique_urls(file: _File, session: np.ndarray, url: np.ndarray) -> None:
    import pandas as pd

    if not len(url):
        return
    codes = pd.factorize(url)[0].astype(np.int64)
    key = session * (int(codes.max()) + 1) + codes
    order = np.argsort(key, kind="stable")
    twice = order[1:][key[order[1:]] == key[order[:-1]]]
    if twice.size:
        row = int(twice.min())
        raise ValueError(
            f"{file.where(row, 'url_md5')}: url_md5 {url[row]!r} is shown twice in one session; a "
            f"document has one place on a page"
        )


def _close_or_drop_gaps(
    rows: PreprocessedRows, position: np.ndarray, rank_gaps: str
) -> tuple[np.ndarray, np.ndarray, int]:
    """``(kept, rank, n_gapped)``: the rows kept and their ranks. A session whose positions are
    not 1..n (a missing document kept its place) is dropped, or its ranks are closed up to 1..n."""
    session = rows.session
    n_sessions = rows.n_sessions
    count = np.bincount(session, minlength=n_sessions)
    top = np.zeros(n_sessions, dtype=np.int64)
    np.maximum.at(top, session, position)
    gapped = top != count
    starts = np.concatenate([[0], np.cumsum(count)[:-1]])
    closed = np.arange(len(session), dtype=np.int64) - starts[session] + 1
    if rank_gaps == "drop":
        kept = ~gapped[session]
        return kept, position, int(gapped.sum())
    return np.ones(len(session), dtype=bool), closed, int(gapped.sum())


def _query_normalized(X: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Every feature min-max scaled within its query (LETOR's QueryLevelNorm); a feature
    constant within a query is 0 there."""
    starts = offsets[:-1]
    low = np.minimum.reduceat(X, starts, axis=0)
    high = np.maximum.reduceat(X, starts, axis=0)
    sizes = np.diff(offsets)
    low, span = np.repeat(low, sizes, axis=0), np.repeat(high - low, sizes, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        scaled = np.where(span > 0, (X - low) / np.where(span > 0, span, 1), 0)
    return scaled.astype(X.dtype)


def _split_queries(n_queries: int, vali_fraction: float, seed: int) -> np.ndarray:
    """Whether each query (0..n_queries-1) is a validation query: a seeded share of them, at least one each way."""
    if n_queries < 2:
        raise ValueError(
            f"the kept sessions of the click files show {n_queries} query; at least 2 are needed (one "
            f"for training, one for validation)"
        )
    n_vali = min(max(1, int(round(vali_fraction * n_queries))), n_queries - 1)
    vali = np.zeros(n_queries, dtype=bool)
    vali[np.random.default_rng(seed).permutation(n_queries)[:n_vali]] = True
    return vali


def load_baidu_ultr(
    clicks: str | os.PathLike,
    annotations: str | os.PathLike,
    logs_dir: str | os.PathLike,
    *,
    features: str = "ltr",
    vali_fraction: float = 0.1,
    seed: int = 0,
    relevant_from: int = 3,
    rank_gaps: str = "drop",
    normalize: str = "query",
    name: str = "baidu-ultr",
    progress=None,
) -> Dataset:
    """The preprocessed Baidu-ULTR release as a prepared dataset and two click logs.

    train and vali: the queries (distinct ``query_md5``) of the click files, a seeded
    ``vali_fraction`` of them for vali; a query's documents are the distinct ``url_md5`` its
    sessions showed, with the features of their first showing. They carry no expert label:
    a document clicked in some session of its query gets label ``relevant_from``, any other 0
    (what the summary of `cltr prepare` counts as relevant there is "clicked"). test: the
    annotated queries (each ``query_no`` of the annotation file one query), labels 0-4.
    Query ids are numbered 0.. over the click queries, then on over the annotated ones, so
    that no two splits share one.

    The click logs ``{logs_dir}/train-clicks.parquet`` and ``vali-clicks.parquet`` hold every
    kept session's documents in the documented click-log format: session, qid, doc (0-based in
    the query's documents), rank (the position; see ``rank_gaps``), click and ranker (the
    query's displayed ordering, ``cltr.data.baidu.ordering_rankers``: the release names no
    logging ranker, and harvesting takes a document shown at different ranks by two orderings
    of its query as an intervention). Their paths are in ``meta["click_logs"]``.

    Parameters
    ----------
    clicks, annotations : path-like
        A file, a directory or a glob pattern (``expand_files``).
    logs_dir : path-like
        Where the click logs are written (created if needed).
    features : {"ltr", "embedding", "both"}
    vali_fraction : float in (0, 1)
    seed : int
        Seed of the train/vali split of the queries.
    relevant_from : int
        Annotation labels at least this are relevant (3: the project's convention for a 0-4 scale,
        as for Yahoo! LTR).
    rank_gaps : {"drop", "close"}
        A session whose positions have a gap (a missing document kept its place): dropped, so
        that every rank is the displayed position; or its ranks closed up to 1..n. The click-log
        format counts ranks from 1 within a query's documents, which a gap can break.
    normalize : {"query", "none"}
        Min-max scale every feature within each query (LETOR's QueryLevelNorm), or keep the
        raw values.
    progress : callable (path, bytes_read, file_size), optional
        Called after each file is read.
    """
    import pandas as pd

    from cltr.data.baidu import ordering_rankers
    from cltr.data.clicklog import write_click_log
    from cltr.data.files import file_sha256

    check_relevant_from(relevant_from, LABELS, "Baidu-ULTR annotations")
    if rank_gaps not in RANK_GAPS:
        raise ValueError(f"rank_gaps must be one of {', '.join(RANK_GAPS)}, found {rank_gaps!r}")
    if normalize not in ("query", "none"):
        raise ValueError(f"normalize must be 'query' or 'none', found {normalize!r}")
    if not 0 < vali_fraction < 1:
        raise ValueError(f"vali_fraction must lie in (0, 1), found {vali_fraction!r}")
    dtype = np.float64 if features == "ltr" else np.float32
    click_files = expand_files(clicks, what="--clicks")
    annotation_files = expand_files(annotations, what="--annotations")
    rows = read_preprocessed(click_files, kind="clicks", features=features, dtype=dtype)
    if progress is not None:
        for path in click_files:
            progress(str(path), path.stat().st_size, path.stat().st_size)
    judged = read_preprocessed(annotation_files, kind="annotations", features=features, dtype=dtype)
    if progress is not None:
        for path in annotation_files:
            progress(str(path), path.stat().st_size, path.stat().st_size)
    if judged.feature_names != rows.feature_names:
        raise ValueError(
            f"the annotation files have {len(judged.feature_names)} features, the click files "
            f"{len(rows.feature_names)} (their embeddings differ in width); both must come from one "
            f"release"
        )
    if rows.position is None or rows.click is None or rows.url is None or judged.label is None:
        raise AssertionError("unreachable: read_preprocessed returns these columns for its kind")  # pragma: no cover
    kept, rank, n_gapped = _close_or_drop_gaps(rows, rows.position, rank_gaps)
    session_codes = pd.factorize(rows.session[kept])[0].astype(np.int64)
    query_codes, query_names = pd.factorize(rows.query[kept])
    url_codes, _ = pd.factorize(rows.url[kept])
    query_codes, url_codes = query_codes.astype(np.int64), url_codes.astype(np.int64)
    rank, click, X_rows, url = rank[kept], rows.click[kept], rows.X[kept], rows.url[kept]
    n_queries = len(query_names)
    is_vali = _split_queries(n_queries, vali_fraction, seed)

    # a query's documents: its distinct urls, ordered by query then url (first showing first)
    pair = query_codes * (int(url_codes.max()) + 1 if len(url_codes) else 1) + url_codes
    pairs, first, pair_of_row = np.unique(pair, return_index=True, return_inverse=True)
    pair_of_row = pair_of_row.reshape(-1)
    pair_query = query_codes[first]
    clicked = np.zeros(len(pairs), dtype=bool)
    np.logical_or.at(clicked, pair_of_row, click == 1)

    logs_dir = Path(logs_dir)
    logs_dir.mkdir(parents=True, exist_ok=True)
    splits: dict[str, Queries] = {}
    click_logs: dict[str, str] = {}
    log_counts: dict[str, dict] = {}
    for split, wanted in (("train", ~is_vali), ("vali", is_vali)):
        in_split = wanted[pair_query]  # pairs are sorted by query
        pair_index = np.flatnonzero(in_split)
        qids, sizes = np.unique(pair_query[pair_index], return_counts=True)
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        X = X_rows[first[pair_index]]
        if normalize == "query":
            X = _query_normalized(X, offsets)
        labels = np.where(clicked[pair_index], relevant_from, 0).astype(np.int64)
        splits[split] = Queries(
            X=np.ascontiguousarray(X),
            labels=labels,
            qid=qids.astype(np.int64),
            offsets=offsets,
            docid=url[first[pair_index]].astype(object),
        )
        # row -> its document's place within its query's block
        local = np.full(len(pairs), -1, dtype=np.int64)
        local[pair_index] = np.arange(len(pair_index)) - np.repeat(offsets[:-1], sizes)
        row_mask = wanted[query_codes]
        row_session = session_codes[row_mask]
        table = {
            "session": pd.factorize(row_session)[0].astype(np.int64),
            "qid": query_codes[row_mask],
            "doc": local[pair_of_row[row_mask]],
            "rank": rank[row_mask],
            "click": click[row_mask],
        }
        table["ranker"] = ordering_rankers(table["session"], table["qid"], pair_of_row[row_mask], table["rank"])
        path = logs_dir / f"{split}-clicks.parquet"
        write_click_log(path, table)
        click_logs[split] = str(path.resolve())
        log_counts[split] = {
            "sessions": int(table["session"].max()) + 1 if len(row_session) else 0,
            "impressions": int(row_mask.sum()),
            "clicks": int(table["click"].sum()),
        }

    judged_sizes = np.bincount(judged.session, minlength=judged.n_sessions)
    if (judged_sizes == 0).any():  # pragma: no cover - read_preprocessed refuses an empty annotated query
        raise AssertionError("an annotated query without documents")
    test_offsets = np.concatenate([[0], np.cumsum(judged_sizes)]).astype(np.int64)
    test_X = judged.X if normalize == "none" else _query_normalized(judged.X, test_offsets)
    splits["test"] = Queries(
        X=np.ascontiguousarray(test_X),
        labels=judged.label.astype(np.int64),
        qid=n_queries + np.arange(judged.n_sessions, dtype=np.int64),
        offsets=test_offsets,
    )
    if not (judged.label >= relevant_from).any():
        raise ValueError(
            f"no annotated document has a label of at least {relevant_from} (label counts "
            f"{label_counts(judged.label)}); give a lower --relevant-from"
        )

    notes = [
        f"train and vali carry no expert labels: a document clicked in some session of its query has label "
        f"{relevant_from} (relevant), any other 0; only the test split's labels are expert judgements",
        f"vali is a seeded {vali_fraction:g} of the click queries ({int(is_vali.sum())} of {n_queries}; seed "
        f"{seed}); its click log serves model selection",
        f"click logs written to {click_logs['train']} and {click_logs['vali']}",
    ]
    if n_gapped:
        notes.append(
            f"{n_gapped} of {rows.n_sessions} sessions have a gap in their positions (a missing document "
            f"kept its place): "
            + ("dropped (--rank-gaps drop)" if rank_gaps == "drop" else "their ranks closed up (--rank-gaps close)")
        )
    shared = np.intersect1d(np.unique(judged.query[judged.query != ""]), np.asarray(query_names, dtype=object))
    if len(shared):
        notes.append(
            f"{len(shared)} annotated queries have the query_md5 of a click query (Baidu-ULTR's annotated "
            f"queries were not held out of its logs); they are kept, as Hager et al. keep them"
        )

    def provenance(path: Path) -> dict:
        return {"path": str(path), "bytes": path.stat().st_size, "sha256": file_sha256(path)}

    meta = {
        "source": "Baidu-ULTR, preprocessed release of Hager et al. (SIGIR 2024)",
        "relevant_from": int(relevant_from),
        "n_features": int(rows.X.shape[1]),
        "feature_names": list(rows.feature_names),
        "features": features,
        "normalize": normalize,
        "rank_gaps": rank_gaps,
        "vali_fraction": float(vali_fraction),
        "seed": int(seed),
        "label_range": list(LABELS),
        "files": {
            "clicks": [provenance(p) for p in click_files],
            "annotations": [provenance(p) for p in annotation_files],
        },
        "click_logs": click_logs,
        "log_counts": log_counts,
        "label_counts": {split: label_counts(q.labels) for split, q in splits.items()},
        "notes": notes,
    }
    return Dataset(
        name=name,
        train=splits["train"],
        vali=splits["vali"],
        test=splits["test"],
        relevant_from=int(relevant_from),
        meta=meta,
    )
