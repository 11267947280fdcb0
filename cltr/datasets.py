"""Learning-to-rank datasets: the ``Queries`` container, loaders and the synthetic default.

Legend (paper Sec. 3 and 5.1):
    x_i, query instance      -> one query, rows ``offsets[q]:offsets[q+1]`` of ``X``
    phi(x, y)                -> ``X[doc]``, the feature vector of a (query, document) pair
    rel_i(y) in {0, 1}       -> ``labels[doc] >= relevant_from`` (graded labels binarized)

Every split is a flat array of documents plus query offsets: no padding.

Sources (DESIGN.md, "Datasets"):
    ``load_svmlight_split``  one SVMlight/LETOR file (plain, .gz, .bz2, .xz), checked
    ``load_letor``           LETOR 4.0: MQ2007+MQ2008 FoldK train, MQ2008 vali and test
    ``load_yahoo``           Yahoo! LTR set 1 (700 features, labels 0-4)
    ``make_synthetic``       the embedded default: seeded, LETOR-shaped, partly non-linear
    ``save_dataset`` / ``load_dataset``  the prepared dataset as one .npz

This module reads files but never prints or shows progress.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import json
import lzma
import os
import zlib
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cltr.workspace import atomic_write, jsonable

__all__ = [
    "Queries",
    "Dataset",
    "load_svmlight_split",
    "load_letor",
    "load_yahoo",
    "make_synthetic",
    "save_dataset",
    "load_dataset",
    "describe_split",
    "default_passes",
    "concatenate_queries",
    "check_queries",
    "LETOR_FEATURES",
    "YAHOO_FEATURES",
]

LETOR_FEATURES = 46
YAHOO_FEATURES = 700

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


# -- checks shared by every source -------------------------------------------------------

def check_queries(queries: Queries, *, where: str = "queries") -> None:
    """Raise ``ValueError`` unless ``queries`` satisfies the container's invariants.

    Parameters
    ----------
    queries : Queries
        ``X`` of shape (n_docs, n_features), finite floats; ``labels`` of shape (n_docs,)
        integers; ``offsets`` of shape (n_queries + 1,) from 0 to n_docs, strictly
        increasing; ``qid`` of shape (n_queries,), distinct.
    where : str
        Named in the message (e.g. ``"train split of letor.npz"``).
    """
    X, labels, qid, offsets = queries.X, queries.labels, queries.qid, queries.offsets
    if X.ndim != 2 or X.dtype.kind != "f":
        raise ValueError(f"{where}: X must be a 2-D float array, found {X.ndim}-D {X.dtype}")
    if labels.ndim != 1 or labels.shape[0] != X.shape[0] or labels.dtype.kind not in "iu":
        raise ValueError(f"{where}: labels must be integers of shape ({X.shape[0]},), "
                         f"found {labels.dtype} of shape {labels.shape}")
    if offsets.ndim != 1 or offsets.dtype.kind not in "iu" or len(offsets) < 2:
        raise ValueError(f"{where}: offsets must be integers of shape (n_queries + 1,) with "
                         f"n_queries >= 1, found {offsets.dtype} of shape {offsets.shape}")
    if offsets[0] != 0 or offsets[-1] != X.shape[0]:
        raise ValueError(f"{where}: offsets must run from 0 to n_docs = {X.shape[0]}, "
                         f"found {offsets[0]} to {offsets[-1]}")
    empty = np.flatnonzero(np.diff(offsets) <= 0)
    if empty.size:
        raise ValueError(f"{where}: offsets must increase strictly (no empty query); query "
                         f"{empty[0]} has {offsets[empty[0] + 1] - offsets[empty[0]]} rows")
    if qid.shape != (len(offsets) - 1,):
        raise ValueError(f"{where}: qid must have shape ({len(offsets) - 1},), found {qid.shape}")
    values, counts = np.unique(qid, return_counts=True)
    if values.size < qid.size:
        raise ValueError(f"{where}: qid {values[np.argmax(counts > 1)]} names two queries; "
                         "a query's rows must be contiguous")
    if not np.isfinite(X).all():
        row = int(np.flatnonzero(~np.isfinite(X).all(axis=1))[0])
        raise ValueError(f"{where}: row {row} of X is not finite; feature values must be finite")


def concatenate_queries(parts: list[Queries]) -> Queries:
    """Stack splits with disjoint query ids into one, in the given order.

    Parameters
    ----------
    parts : list of Queries
        All with the same number of features.

    Returns
    -------
    Queries
        ``X`` of shape (sum of n_docs, n_features); offsets shifted accordingly.
    """
    if not parts:
        raise ValueError("nothing to concatenate: parts is empty")
    widths = {q.n_features for q in parts}
    if len(widths) > 1:
        raise ValueError(f"cannot concatenate splits of different feature widths {sorted(widths)}")
    qid = np.concatenate([q.qid for q in parts])
    values, counts = np.unique(qid, return_counts=True)
    if values.size < qid.size:
        raise ValueError(f"cannot concatenate: qid {values[np.argmax(counts > 1)]} is in two parts; "
                         "query ids must be disjoint")
    shifts = np.cumsum([0] + [q.n_docs for q in parts[:-1]])
    offsets = np.concatenate([parts[0].offsets[:1]] + [q.offsets[1:] + s for q, s in zip(parts, shifts)])
    return Queries(
        X=np.ascontiguousarray(np.concatenate([q.X for q in parts])),
        labels=np.concatenate([q.labels for q in parts]),
        qid=qid,
        offsets=offsets.astype(np.int64),
    )


def default_passes(name: str, meta: dict) -> int:
    """Passes of simulated clicks over the training queries as in the paper: the prepared
    dataset's ``default_passes``, else 10 for Yahoo and 100 for the others."""
    return int(meta.get("default_passes", 10 if name.startswith("yahoo") else 100))


def describe_split(queries: Queries, relevant_from: int) -> dict:
    """Counts of one split, as ``cltr prepare`` prints them.

    Parameters
    ----------
    queries : Queries
        The split, ``n_docs`` rows in ``n_queries`` queries.
    relevant_from : int
        Labels at least this are relevant.

    Returns
    -------
    dict
        ``queries``, ``documents``, ``relevant`` (relevant documents),
        ``queries_without_relevant`` (queries with no relevant document) and ``features``,
        all plain ints.
    """
    relevant = queries.relevant(relevant_from)
    per_query = np.add.reduceat(relevant.astype(np.int64), queries.offsets[:-1]) if queries.n_docs else []
    return {
        "queries": int(queries.n_queries),
        "documents": int(queries.n_docs),
        "relevant": int(relevant.sum()),
        "queries_without_relevant": int(np.sum(np.asarray(per_query) == 0)),
        "features": int(queries.n_features),
    }


def _label_counts(labels: np.ndarray) -> dict[str, int]:
    values, counts = np.unique(labels, return_counts=True)
    return {str(int(v)): int(c) for v, c in zip(values, counts)}


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

    from sklearn.datasets import load_svmlight_file  # heavy import, kept off module import

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
        "label_counts": _label_counts(labels),
    }
    return queries, provenance


def _find_split_file(directory: Path, filename: str) -> Path:
    """``directory/filename`` plain or with a .gz, .bz2 or .xz suffix (plain first)."""
    for suffix in _SUFFIXES:
        candidate = directory / (filename + suffix)
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"no {filename} (nor {filename}.gz, .bz2, .xz) in {directory}")


def _check_relevant_from(relevant_from: int, label_range: tuple[int, int], source: str) -> None:
    low, high = label_range
    if isinstance(relevant_from, bool) or int(relevant_from) != relevant_from \
            or not low < relevant_from <= high:
        raise ValueError(f"relevant_from must be an integer in {low + 1}..{high} for {source} "
                         f"labels {low}..{high}, found {relevant_from!r}")


def _check_disjoint(named: dict[str, Queries]) -> None:
    names = list(named)
    for i, first in enumerate(names):
        for second in names[i + 1:]:
            common = np.intersect1d(named[first].qid, named[second].qid)
            if common.size:
                raise ValueError(f"qid {common[0]} is in both {first} and {second} "
                                 f"({common.size} shared query ids); their queries must be disjoint")


def load_letor(
    mq2008_dir: str | os.PathLike,
    *,
    mq2007_dir: str | os.PathLike | None = None,
    fold: int = 1,
    relevant_from: int = 1,
) -> Dataset:
    """LETOR 4.0 as in the paper: train = MQ2007 FoldK train + MQ2008 FoldK train.

    vali = MQ2008 FoldK vali, test = MQ2008 FoldK test. Each file is
    ``FoldK/{train,vali,test}.txt``, plain or with a ``.gz``, ``.bz2`` or ``.xz`` suffix.
    Every file must have 46 features and labels 0..2. LETOR rows list every feature, so
    the largest feature index of every file must be the same (else the files are not of
    one dataset). Query ids must be disjoint between MQ2007 and MQ2008 and between splits.

    Parameters
    ----------
    mq2008_dir : path-like
        Directory holding ``Fold1`` .. ``Fold5`` of MQ2008.
    mq2007_dir : path-like, optional
        The same for MQ2007; when absent, train is MQ2008's alone and ``meta`` says so.
    fold : int
        Which fold (1..5).
    relevant_from : int
        Labels at least this are relevant (1 or 2).

    Returns
    -------
    Dataset
        Named ``"letor"``; splits with ``X`` of shape (n_docs, 46); ``meta`` records the
        files with their sha256, the fold, ``mq2007`` (bool), ``relevant_from``, label
        counts per split and ``notes``.
    """
    label_range = (0, 2)
    _check_relevant_from(relevant_from, label_range, "LETOR 4.0")
    if isinstance(fold, bool) or int(fold) != fold or fold < 1:
        raise ValueError(f"fold must be a positive integer (LETOR 4.0 has folds 1..5), found {fold!r}")
    fold = int(fold)

    def fold_dir(root, source: str) -> Path:
        directory = Path(root) / f"Fold{fold}"
        if not directory.is_dir():
            raise FileNotFoundError(f"no Fold{fold} directory in {root} (expected the {source} "
                                    f"layout Fold{fold}/{{train,vali,test}}.txt)")
        return directory

    options = {"n_features": LETOR_FEATURES, "label_range": label_range}
    mq2008 = fold_dir(mq2008_dir, "MQ2008")
    loaded: dict[str, tuple[Queries, dict]] = {}
    if mq2007_dir is not None:
        mq2007 = fold_dir(mq2007_dir, "MQ2007")
        loaded["MQ2007 train"] = load_svmlight_split(_find_split_file(mq2007, "train.txt"), **options)
    for split in ("train", "vali", "test"):
        loaded[f"MQ2008 {split}"] = load_svmlight_split(_find_split_file(mq2008, f"{split}.txt"),
                                                        **options)
    widths = {provenance["path"]: provenance["max_feature_index"] for _, provenance in loaded.values()}
    if len(set(widths.values())) > 1:
        listed = ", ".join(f"{path} has {width}" for path, width in widths.items())
        raise ValueError(f"feature widths differ between splits: {listed} features; all splits "
                         "of one dataset must share one feature width")
    _check_disjoint({f"{key} ({provenance['path']})": queries
                     for key, (queries, provenance) in loaded.items()})

    train_keys = [key for key in loaded if key.endswith("train")]
    splits = {
        "train": concatenate_queries([loaded[key][0] for key in train_keys]),
        "vali": loaded["MQ2008 vali"][0],
        "test": loaded["MQ2008 test"][0],
    }
    notes = []
    if mq2007_dir is None:
        notes.append(f"MQ2007 was not given: the training split is MQ2008 Fold{fold} train alone "
                     f"(the paper trains on MQ2007 + MQ2008 Fold{fold} train)")
    meta = {
        "source": "LETOR 4.0",
        "fold": fold,
        "mq2007": mq2007_dir is not None,
        "relevant_from": int(relevant_from),
        "n_features": LETOR_FEATURES,
        "label_range": list(label_range),
        "files": {
            "train": [loaded[key][1] for key in train_keys],
            "vali": [loaded["MQ2008 vali"][1]],
            "test": [loaded["MQ2008 test"][1]],
        },
        "label_counts": {split: _label_counts(q.labels) for split, q in splits.items()},
        "default_passes": 100,
        "notes": notes,
    }
    return Dataset(name="letor", relevant_from=int(relevant_from), meta=meta, **splits)


def load_yahoo(
    root: str | os.PathLike,
    *,
    relevant_from: int = 3,
    dtype: Any = np.float64,
) -> Dataset:
    """Yahoo! Learning to Rank Challenge, set 1.

    Files ``set1.train.txt``, ``set1.valid.txt``, ``set1.test.txt`` in ``root``, plain or
    with a ``.gz``, ``.bz2`` or ``.xz`` suffix; 700 features (rows are sparse, so every
    split is read at the declared width and an index above 700 is an error); labels 0..4.

    Parameters
    ----------
    root : path-like
        Directory holding the three files.
    relevant_from : int
        Labels at least this are relevant (3, as in Joachims et al. 2017).
    dtype : numpy float dtype
        Dtype of ``X``; float32 halves the memory of the full set (~4 GB as float64).

    Returns
    -------
    Dataset
        Named ``"yahoo"``; splits with ``X`` of shape (n_docs, 700); ``meta`` records the
        files with their sha256, ``relevant_from`` and label counts per split.
    """
    label_range = (0, 4)
    _check_relevant_from(relevant_from, label_range, "Yahoo! LTR")
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"Yahoo! LTR directory not found: {root}")
    options = {"n_features": YAHOO_FEATURES, "label_range": label_range, "dtype": dtype}
    loaded = {split: load_svmlight_split(_find_split_file(root, f"set1.{stem}.txt"), **options)
              for split, stem in (("train", "train"), ("vali", "valid"), ("test", "test"))}
    splits = {split: queries for split, (queries, _) in loaded.items()}
    meta = {
        "source": "Yahoo! Learning to Rank Challenge, set 1",
        "relevant_from": int(relevant_from),
        "n_features": YAHOO_FEATURES,
        "label_range": list(label_range),
        "files": {split: [provenance] for split, (_, provenance) in loaded.items()},
        "label_counts": {split: _label_counts(q.labels) for split, q in splits.items()},
        "default_passes": 10,
        "notes": [],
    }
    return Dataset(name="yahoo", relevant_from=int(relevant_from), meta=meta, **splits)


# -- the embedded synthetic dataset ------------------------------------------------------

_LATENT_FACTORS = 8  # hidden document properties that the raw features measure
_QUERY_EFFECT = 1.2  # spread of a query's overall relevance: queries with no relevant doc


def _minmax_per_query(Z: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """LETOR's QueryLevelNorm: each column of each query to [0, 1]; a constant column to 0."""
    sizes = np.diff(offsets)
    low = np.repeat(np.minimum.reduceat(Z, offsets[:-1], axis=0), sizes, axis=0)
    span = np.repeat(np.maximum.reduceat(Z, offsets[:-1], axis=0), sizes, axis=0) - low
    with np.errstate(invalid="ignore", divide="ignore"):
        X = np.where(span > 0, (Z - low) / np.where(span > 0, span, 1.0), 0.0)
    return np.clip(X, 0.0, 1.0)


def _standardized(values: np.ndarray) -> np.ndarray:
    spread = values.std()
    return (values - values.mean()) / spread if spread > 0 else np.zeros_like(values)


def _synthetic_features(rng: np.random.Generator, offsets: np.ndarray, n_features: int) -> np.ndarray:
    """Raw LETOR-like features, correlated through latent factors, then query-normalized.

    Each column measures one or two latent document properties with its own noise, through
    one of the transforms LETOR's features show: linear, skewed (term-frequency-like),
    sparse (zero for most documents, so often constant within a query) or coarse counts.
    """
    n_docs, n_queries = int(offsets[-1]), len(offsets) - 1
    factors = rng.standard_normal((n_docs, _LATENT_FACTORS))
    factors += np.repeat(0.5 * rng.standard_normal((n_queries, _LATENT_FACTORS)), np.diff(offsets), axis=0)
    loadings = np.zeros((_LATENT_FACTORS, n_features))
    for column in range(n_features):
        if rng.random() < 0.15:
            continue  # a pure-noise feature
        chosen = rng.choice(_LATENT_FACTORS, size=1 + int(rng.random() < 0.4), replace=False)
        loadings[chosen, column] = rng.uniform(0.5, 1.5, chosen.size)
    noise = rng.uniform(0.3, 1.0, n_features)
    Z = factors @ loadings + noise * rng.standard_normal((n_docs, n_features))
    kind = rng.choice(4, size=n_features, p=[0.25, 0.25, 0.4, 0.1])
    cut = rng.uniform(0.5, 2.0, n_features)
    Z = np.where(kind == 1, np.exp(0.7 * Z), Z)
    Z = np.where(kind == 2, np.maximum(Z - cut, 0.0), Z)
    Z = np.where(kind == 3, np.floor(2.0 * Z), Z)
    return _minmax_per_query(Z, offsets)


def _synthetic_relevance(rng: np.random.Generator, X: np.ndarray, nonlinearity: float) -> np.ndarray:
    """The noiseless relevance f(x) on the normalized features, shape (n_docs,).

    A linear part over up to 12 features plus a non-linear part over up to 5 others: an
    interaction (both signals needed), a threshold, and two non-monotone terms (a sine and a
    preference for middle values) that no linear scorer can express.
    """
    n_features = X.shape[1]
    columns = rng.permutation(n_features)
    column = [columns[i % n_features] for i in range(17)]
    n_linear = min(12, n_features)
    weights = rng.uniform(0.2, 1.0, n_linear) * np.where(rng.random(n_linear) < 0.85, 1.0, -1.0)
    linear = X[:, column[:n_linear]] @ weights
    a, b, c, e, g = (X[:, j] for j in column[12:17])
    terms = [(a - 0.5) * (b - 0.5), (c > 0.5).astype(float), np.sin(2.0 * np.pi * e), -((g - 0.5) ** 2)]
    nonlinear = sum(_standardized(term) for term in terms)
    return (np.sqrt(1.0 - nonlinearity) * _standardized(linear)
            + np.sqrt(nonlinearity) * _standardized(nonlinear))


def _split_sizes(n_queries: int, fractions: tuple[float, float, float]) -> list[int]:
    fractions = np.asarray(fractions, dtype=float) / np.sum(fractions)
    n_train = max(1, int(round(fractions[0] * n_queries)))
    n_vali = max(1, int(round(fractions[1] * n_queries)))
    n_train = min(n_train, n_queries - n_vali - 1)
    return [n_train, n_vali, n_queries - n_train - n_vali]


def make_synthetic(
    *,
    n_queries: int = 300,
    n_features: int = LETOR_FEATURES,
    docs: tuple[int, int] = (5, 120),
    relevant_share: float = 0.19,
    nonlinearity: float = 0.6,
    noise: float = 0.7,
    fractions: tuple[float, float, float] = (0.6, 0.2, 0.2),
    relevant_from: int = 1,
    seed: int | np.random.SeedSequence = 0,
) -> Dataset:
    """The embedded default dataset: seeded, LETOR-shaped, partly non-linear.

    Like LETOR 4.0 MQ2008: a variable number of candidates per query (log-normal, from
    ``docs[0]``, median about 2.3 times it, capped at ``docs[1]``: mean about 19 for the
    default ``(5, 120)``), features min-max normalized per query (each non-constant column
    of a query spans exactly [0, 1], a constant one is 0), labels 0..2 with about
    ``relevant_share`` of documents at 1 or 2 and a third of those at 2, and some queries
    with no relevant document. A document's latent relevance is

        s = sqrt(1 - nonlinearity) * linear(x) + sqrt(nonlinearity) * nonlinear(x)
            + query effect + noise * N(0, 1)

    (both parts standardized), so a linear ranker learns much of it and a non-linear one
    can learn more; labels are thresholds of s at the quantiles given by
    ``relevant_share``. Every split gets at least one relevant document. Queries are
    split in order: the first ``fractions[0]`` train, then vali, then test.

    Parameters
    ----------
    n_queries : int
        Queries over all splits (at least 3). The default, 300, makes about 5,700
        documents: the whole pipeline runs in seconds. A test can ask for 12.
    n_features : int
        Width of ``X``.
    docs : (int, int)
        Smallest and largest number of candidates of a query (at least 2).
    relevant_share : float
        Share of documents with label >= 1, in (0, 1).
    nonlinearity : float
        Share of the signal's variance in the non-linear part, in [0, 1].
    noise : float
        Standard deviation of the per-document noise (signal parts have variance 1).
    fractions : (float, float, float)
        Relative sizes of train, vali and test (by queries; each gets at least one).
    relevant_from : int
        Recorded in the dataset: labels at least this are relevant (1 or 2).
    seed : int or numpy.random.SeedSequence
        Every draw derives from this one seed; global random state is never touched.

    Returns
    -------
    Dataset
        Named ``"synthetic"``; splits with ``X`` float64 of shape (n_docs, n_features),
        labels int64 0..2, qids 1..n_queries; ``meta`` records the settings and the seed.
    """
    if isinstance(n_queries, bool) or int(n_queries) != n_queries or n_queries < 3:
        raise ValueError(f"n_queries must be an integer >= 3 (one query per split at least), "
                         f"found {n_queries!r}")
    if isinstance(n_features, bool) or int(n_features) != n_features or n_features < 1:
        raise ValueError(f"n_features must be a positive integer, found {n_features!r}")
    low, high = (int(v) for v in docs)
    if not 2 <= low <= high:
        raise ValueError(f"docs must be (smallest, largest) with 2 <= smallest <= largest, found {docs!r}")
    if not 0.0 < relevant_share < 1.0:
        raise ValueError(f"relevant_share must be in (0, 1), found {relevant_share!r}")
    if not 0.0 <= nonlinearity <= 1.0:
        raise ValueError(f"nonlinearity must be in [0, 1], found {nonlinearity!r}")
    if not noise >= 0.0:
        raise ValueError(f"noise must be >= 0, found {noise!r}")
    if len(fractions) != 3 or min(fractions) <= 0:
        raise ValueError(f"fractions must be three positive numbers (train, vali, test), found {fractions!r}")
    _check_relevant_from(relevant_from, (0, 2), "synthetic")
    n_queries, n_features = int(n_queries), int(n_features)

    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    sizes_rng, features_rng, function_rng, labels_rng = (np.random.default_rng(s) for s in root.spawn(4))

    sizes = np.round(low * np.exp(np.abs(sizes_rng.normal(0.0, 1.25, n_queries))))
    sizes = np.clip(sizes, low, high).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    X = _synthetic_features(features_rng, offsets, n_features)
    signal = _synthetic_relevance(function_rng, X, float(nonlinearity))
    latent = (signal + np.repeat(_QUERY_EFFECT * labels_rng.standard_normal(n_queries), sizes)
              + noise * labels_rng.standard_normal(len(signal)))
    thresholds = np.quantile(latent, [1.0 - relevant_share, 1.0 - relevant_share / 3.0])
    labels = (latent >= thresholds[0]).astype(np.int64) + (latent >= thresholds[1])

    everything = Queries(X=X, labels=labels, qid=np.arange(1, n_queries + 1, dtype=np.int64),
                         offsets=offsets)
    bounds = np.cumsum([0] + _split_sizes(n_queries, fractions))
    splits = {}
    for name, start, stop in zip(("train", "vali", "test"), bounds[:-1], bounds[1:]):
        part = everything.subset(np.arange(start, stop))
        if not part.relevant(relevant_from).any():
            # the production ranker and every metric need a relevant document per split
            rows = slice(offsets[start], offsets[stop])
            part.labels[np.argmax(latent[rows])] = relevant_from
        splits[name] = part
    meta = {
        "source": "synthetic",
        "generator": {
            "n_queries": n_queries, "n_features": n_features, "docs": [low, high],
            "relevant_share": float(relevant_share), "nonlinearity": float(nonlinearity),
            "noise": float(noise), "fractions": [float(f) for f in fractions],
        },
        "seed": jsonable(root.entropy),
        "relevant_from": int(relevant_from),
        "n_features": n_features,
        "label_counts": {split: _label_counts(q.labels) for split, q in splits.items()},
    }
    return Dataset(name="synthetic", relevant_from=int(relevant_from), meta=meta, **splits)


# -- the prepared dataset as one .npz ----------------------------------------------------

_FORMAT = "cltr-dataset/1"
_FIELDS = ("X", "labels", "qid", "offsets")


def _write_npz(stream, arrays: dict[str, np.ndarray]) -> None:
    np.savez(stream, **arrays)  # members carry a fixed time stamp: same dataset, same bytes


def save_dataset(dataset: Dataset, path: str | os.PathLike) -> Path:
    """Write ``dataset`` to ``path`` as one .npz, atomically.

    The arrays of each split are stored as ``<split>/X``, ``<split>/labels``,
    ``<split>/qid``, ``<split>/offsets``; ``name``, ``relevant_from`` and ``meta`` (as a
    JSON string) beside them. The file is written under a temporary name in the same
    directory and renamed into place, so a reader never sees half of it. The same dataset
    always gives the same bytes.

    Parameters
    ----------
    dataset : Dataset
        Its ``meta`` must be JSON-able (numpy scalars and arrays, tuples and paths are
        converted; tuples come back as lists).
    path : path-like
        Destination, used as given (no suffix is added).

    Returns
    -------
    Path
        ``path``.
    """
    path = Path(path)
    arrays: dict[str, np.ndarray] = {
        "format": np.array(_FORMAT),
        "name": np.array(dataset.name),
        "relevant_from": np.array(int(dataset.relevant_from), dtype=np.int64),
        "meta": np.array(json.dumps(jsonable(dataset.meta), sort_keys=True)),
    }
    for split, queries in dataset.splits().items():
        check_queries(queries, where=f"{split} split of dataset {dataset.name!r}")
        for field_name in _FIELDS:
            arrays[f"{split}/{field_name}"] = np.ascontiguousarray(getattr(queries, field_name))
    with atomic_write(path) as stream:
        _write_npz(stream, arrays)
    return path


def load_dataset(path: str | os.PathLike) -> Dataset:
    """Read a dataset written by ``save_dataset``, checking every split.

    Parameters
    ----------
    path : path-like
        The .npz file.

    Returns
    -------
    Dataset
        Equal, array for array, to the one saved.

    Raises
    ------
    FileNotFoundError
        If ``path`` is not a file.
    ValueError
        If it is not a prepared cltr dataset, or a split breaks the ``Queries`` invariants,
        or the splits differ in feature width.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"prepared dataset not found: {path}")
    try:
        archive = np.load(path, allow_pickle=False)
    except (OSError, ValueError, zipfile.BadZipFile) as error:
        raise ValueError(f"{path}: not a prepared cltr dataset ({error})") from error
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise ValueError(f"{path}: not a prepared cltr dataset (a single array, not an .npz)")
    with archive:
        required = ["format", "name", "relevant_from", "meta"] + [
            f"{split}/{field_name}" for split in ("train", "vali", "test") for field_name in _FIELDS]
        missing = [key for key in required if key not in archive.files]
        if missing:
            raise ValueError(f"{path}: not a prepared cltr dataset; missing {', '.join(missing)}")
        if str(archive["format"]) != _FORMAT:
            raise ValueError(f"{path}: format {str(archive['format'])!r}, expected {_FORMAT!r}")
        splits = {split: Queries(**{field_name: archive[f"{split}/{field_name}"] for field_name in _FIELDS})
                  for split in ("train", "vali", "test")}
        name, relevant_from = str(archive["name"]), int(archive["relevant_from"])
        meta = json.loads(str(archive["meta"]))
    for split, queries in splits.items():
        check_queries(queries, where=f"{split} split of {path}")
    widths = {split: queries.n_features for split, queries in splits.items()}
    if len(set(widths.values())) > 1:
        raise ValueError(f"{path}: feature widths differ between splits ({widths}); all splits of one "
                         "dataset must share one feature width")
    return Dataset(name=name, relevant_from=relevant_from, meta=meta, **splits)
