"""SVMlight / LETOR files: one split read, checked line by line, into ``Queries``.

This module reads files but never prints or shows progress.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import lzma
import os
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from cltr.core.queries import Queries, label_counts

__all__ = ['load_svmlight_split', 'find_split_file']

# -- SVMlight / LETOR files --------------------------------------------------------------

_OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
_SUFFIXES = ("", ".gz", ".bz2", ".xz")


def _read_bytes(path: Path) -> tuple[bytes, str | None]:
    """The uncompressed bytes of ``path`` and the compression named by its extension."""
    suffix = path.suffix.lower()
    opener = _OPENERS.get(suffix)
    if opener is None:
        return path.read_bytes(), None
    try:
        with opener(path, "rb") as stream:
            return stream.read(), suffix[1:]
    except (OSError, EOFError, lzma.LZMAError, zlib.error) as error:
        raise ValueError(f"{path}: cannot decompress it as {suffix[1:]} ({error})") from error


def _tokens(line: bytes) -> list[bytes]:
    # sklearn's rule: drop everything from the first '#', split on ASCII whitespace; a line
    # with no token left is skipped, so row numbers count only the lines with tokens.
    return line.split(b"#", 1)[0].split()


def _show(token: bytes) -> str:
    text = token.decode("utf-8", "replace")
    return repr(text if len(text) <= 40 else text[:37] + "...")


def _is_int(token: bytes) -> bool:
    try:
        int(token)
    except ValueError:
        return False
    return True


def _is_float(token: bytes) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _line_problem(tokens: list[bytes]) -> str | None:
    """What is wrong with one data line (its tokens), or None; mirrors sklearn's grammar."""
    if not _is_float(tokens[0]):
        return f"the label {_show(tokens[0])} is not a number"
    if len(tokens) < 2 or not tokens[1].startswith(b"qid"):
        found = _show(tokens[1]) if len(tokens) > 1 else "the end of the line"
        return f"expected 'qid:<integer>' after the label, found {found}; every row must name its query"
    key, colon, value = tokens[1].partition(b":")
    if key != b"qid" or not colon or not _is_int(value):
        return f"cannot read {_show(tokens[1])} as 'qid:<integer>'"
    previous = None
    for token in tokens[2:]:
        index, colon, value = token.partition(b":")
        if index == b"qid":
            return f"{_show(token)} must come right after the label"
        if not colon:
            return f"cannot read {_show(token)} as '<index>:<value>'"
        if not _is_int(index):
            return f"the feature index of {_show(token)} is not an integer (expected '<index>:<value>')"
        if not _is_float(value):
            return f"the feature value of {_show(token)} is not a number (expected '<index>:<value>')"
        if int(index) < 0:
            return f"feature index {int(index)} is negative; feature indices are 1-based"
        if previous is not None and int(index) <= previous:
            return (f"feature indices must increase along a line; {int(index)} follows {previous}")
        previous = int(index)
    return None


def _first_bad_line(raw: bytes, name: str) -> ValueError | None:
    """A pure-Python pass that finds the first line that does not parse (slow path only)."""
    for number, line in enumerate(raw.split(b"\n"), start=1):
        tokens = _tokens(line)
        if tokens:
            problem = _line_problem(tokens)
            if problem is not None:
                return ValueError(f"line {number} of {name}: {problem}")
    return None


def _line_of_row(raw: bytes, row: int) -> int:
    """The 1-based line number of data row ``row`` (blank and comment lines count as lines)."""
    seen = -1
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if _tokens(line):
            seen += 1
            if seen == row:
                return number
    raise IndexError(f"row {row} is past the last data line")


def load_svmlight_split(
    path: str | os.PathLike,
    *,
    n_features: int | None = None,
    label_range: tuple[int, int] | None = None,
    dtype: Any = np.float64,
) -> tuple[Queries, dict]:
    """Read one SVMlight/LETOR file into a checked ``Queries``.

    Each data line is ``label qid:N index:value ... [# comment]`` with 1-based, strictly
    increasing feature indices (omitted features are 0). Blank lines and lines holding only
    a ``#`` comment are skipped but counted in line numbers. The file may be plain or
    compressed; ``.gz``, ``.bz2`` and ``.xz`` are read with the matching standard module.

    Parameters
    ----------
    path : str or path-like
        The file.
    n_features : int, optional
        Width of ``X``; a feature index above it is an error. Default: the largest index
        in the file.
    label_range : (int, int), optional
        Inclusive range the labels must lie in, e.g. ``(0, 2)`` for LETOR 4.0, ``(0, 4)``
        for Yahoo!. Labels must be integers in any case.
    dtype : numpy float dtype
        Dtype of ``X`` (float64 by default).

    Returns
    -------
    queries : Queries
        ``X`` dense, shape (n_rows, n_features); ``labels`` int64, shape (n_rows,);
        ``qid`` int64, shape (n_queries,) in file order; ``offsets``, shape (n_queries + 1,).
    provenance : dict
        ``path``, ``compression``, ``sha256`` and ``bytes`` of the uncompressed content,
        ``n_lines``, ``n_rows``, ``n_queries``, ``n_features`` (width of ``X``),
        ``max_feature_index`` (largest index present) and ``label_counts``.

    Raises
    ------
    FileNotFoundError
        If ``path`` is not a file.
    ValueError
        Naming the file and the 1-based line: a line that does not parse, a row without
        ``qid``, a query whose rows are not contiguous, a feature index of 0 or above
        ``n_features``, a value that is not finite, a label that is not an integer or is
        outside ``label_range``; or a file with no data row.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"SVMlight file not found: {path}")
    if n_features is not None and (isinstance(n_features, bool) or int(n_features) != n_features
                                   or n_features < 1):
        raise ValueError(f"n_features must be a positive integer, found {n_features!r}")
    if label_range is not None and not label_range[0] <= label_range[1]:
        raise ValueError(f"label_range must be (low, high) with low <= high, found {label_range!r}")
    name = str(path)
    raw, compression = _read_bytes(path)
    n_lines = raw.count(b"\n") + int(bool(raw) and not raw.endswith(b"\n"))

    from sklearn.datasets import (
        load_svmlight_file,  # heavy import, kept off module import
    )

    try:
        # zero_based=True keeps the file's indices as they are, so index 0 can be reported.
        sparse, y, qid = load_svmlight_file(io.BytesIO(raw), dtype=np.float64, zero_based=True,
                                            query_id=True)
    except Exception as error:  # sklearn's message names no line: find it ourselves
        located = _first_bad_line(raw, name)
        if located is not None:
            raise located from None
        raise ValueError(f"{name}: not a readable SVMlight file ({error})") from error

    n_rows = sparse.shape[0]
    if n_rows == 0:
        raise ValueError(f"{name}: no data rows in its {n_lines} lines; a split must hold at "
                         "least one query (an empty split)")
    if len(qid) != n_rows:  # sklearn silently skips a missing qid
        located = _first_bad_line(raw, name)
        raise located or ValueError(f"{name}: {n_rows - len(qid)} rows have no qid")

    indices, data, indptr = sparse.indices.astype(np.int64), sparse.data, sparse.indptr
    problems: list[tuple[int, str]] = []  # (row, message): the earliest row is reported

    def row_of(entry: int) -> int:
        return int(np.searchsorted(indptr, entry, side="right") - 1)

    bad = np.flatnonzero(indices == 0)
    if bad.size:
        problems.append((row_of(bad[0]), "feature index 0 is out of range; feature indices are "
                                         f"1-based (1..{n_features or 'n'})"))
    if n_features is not None:
        bad = np.flatnonzero(indices > n_features)
        if bad.size:
            problems.append((row_of(bad[0]), f"feature index {indices[bad[0]]} is out of range; "
                                             f"expected 1..{n_features}"))
    bad = np.flatnonzero(~np.isfinite(data))
    if bad.size:
        problems.append((row_of(bad[0]), f"feature {indices[bad[0]]} has the value "
                                         f"{data[bad[0]]}; feature values must be finite"))
    bad = np.flatnonzero(~np.isfinite(y) | (y != np.round(y)))
    if bad.size:
        problems.append((int(bad[0]), f"label {y[bad[0]]:g} is not an integer; labels are "
                                      "integer relevance grades"))
    if label_range is not None:
        low, high = label_range
        bad = np.flatnonzero((y < low) | (y > high))
        if bad.size:
            problems.append((int(bad[0]), f"label {y[bad[0]]:g} is outside the allowed range "
                                          f"{low}..{high}"))
    starts = np.flatnonzero(np.concatenate([[True], qid[1:] != qid[:-1]]))
    run_qid = qid[starts]
    _, first_run = np.unique(run_qid, return_index=True)
    if first_run.size < run_qid.size:
        repeated = np.ones(run_qid.size, dtype=bool)
        repeated[first_run] = False
        run = int(np.flatnonzero(repeated)[0])
        problems.append((int(starts[run]), f"qid {run_qid[run]} reappears after qid "
                                           f"{run_qid[run - 1]}; a query's rows must be contiguous"))
    if problems:
        row, message = min(problems, key=lambda problem: problem[0])
        raise ValueError(f"line {_line_of_row(raw, row)} of {name}: {message}")

    max_index = int(indices.max()) if indices.size else 0
    width = int(n_features) if n_features is not None else max_index
    X = np.zeros((n_rows, width), dtype=dtype)
    X[np.repeat(np.arange(n_rows), np.diff(indptr)), indices - 1] = data
    labels = y.astype(np.int64)
    queries = Queries(
        X=X,
        labels=labels,
        qid=run_qid.astype(np.int64),
        offsets=np.concatenate([starts, [n_rows]]).astype(np.int64),
    )
    provenance = {
        "path": name,
        "compression": compression,
        "sha256": hashlib.sha256(raw).hexdigest(),
        "bytes": len(raw),
        "n_lines": int(n_lines),
        "n_rows": int(n_rows),
        "n_queries": int(queries.n_queries),
        "n_features": width,
        "max_feature_index": max_index,
        "label_counts": label_counts(labels),
    }
    return queries, provenance


def find_split_file(directory: Path, filename: str) -> Path:
    """``directory/filename`` plain or with a .gz, .bz2 or .xz suffix (plain first)."""
    for suffix in _SUFFIXES:
        candidate = directory / (filename + suffix)
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"no {filename} (nor {filename}.gz, .bz2, .xz) in {directory}")
