"""Outside models' scores read back: a TREC run file or a plain scores file for one split
of a prepared dataset, so that ``cltr evaluate --run`` ranks them with the project's
metrics and tie-breaks.

Formats:
- TREC run: ``qid Q0 docid rank score run`` per line (whitespace-separated). Documents
  are named as ``cltr score --trec`` names them: the ``#docid = ...`` comment of the
  features file where the prepared split kept one, else ``q<qid>-d<i>`` (the i-th
  document of that query, 0-based, in file order). The rank column is not read: like
  trec_eval, cltr ranks by score, and it breaks ties by its seeded permutation.
- Scores: one number per line, in the split's document order (``cltr score --out``).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from cltr.core.queries import Queries

__all__ = ["document_names", "read_run"]


def document_names(queries: Queries) -> np.ndarray:
    """The name of each document of a split in a TREC run, shape (n_docs,), object."""
    offsets = np.asarray(queries.offsets, dtype=np.int64)
    sizes = np.diff(offsets)
    doc_query = np.repeat(np.arange(queries.n_queries), sizes)
    local = np.arange(queries.n_docs) - offsets[doc_query]
    names = np.array(
        [f"q{qid}-d{i}" for qid, i in zip(np.asarray(queries.qid)[doc_query], local, strict=True)], dtype=object
    )
    docid = getattr(queries, "docid", None)
    if docid is not None:
        known = np.array([d is not None for d in docid], dtype=bool)
        names[known] = np.asarray(docid, dtype=object)[known].astype(str)
    return names


def _number(text: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{where}: score {text!r} is not a number") from None
    if not np.isfinite(value):
        raise ValueError(f"{where}: score {text!r} is not finite")
    return value


def read_run(path: str | os.PathLike, queries: Queries, *, split: str = "test") -> np.ndarray:
    """Scores of every document of ``queries`` from a TREC run or a scores file.

    Parameters
    ----------
    path : path-like
        The run (format detected from its first non-empty line: six fields, or one).
    queries : Queries
        The split the run scores.
    split : str
        Its name, for messages.

    Returns
    -------
    scores : ndarray of float64, shape (n_docs,)

    Raises
    ------
    ValueError
        Naming file and line: an unknown qid or docid, a document scored twice, a score
        that is not a finite number, a malformed line; or the documents the run misses.
    """
    path = Path(path)
    with open(path, encoding="utf-8") as handle:
        lines = [(number, line.split()) for number, line in enumerate(handle, start=1) if line.strip()]
    if not lines:
        raise ValueError(
            f"{path}: the file is empty; expected a TREC run (qid Q0 docid rank score run) or one score per line"
        )
    width = len(lines[0][1])
    if width == 1:
        if len(lines) != queries.n_docs:
            raise ValueError(
                f"{path}: {len(lines)} scores, but the {split} split has {queries.n_docs} documents; a "
                "scores file has one score per line in the split's document order"
            )
        scores = np.empty(len(lines))
        for row, (number, fields) in enumerate(lines):
            if len(fields) != 1:
                raise ValueError(f"line {number} of {path}: {len(fields)} fields in a scores file (one score per line)")
            scores[row] = _number(fields[0], f"line {number} of {path}")
        return scores
    if width != 6:
        raise ValueError(
            f"line {lines[0][0]} of {path}: {width} fields; expected a TREC run line (qid Q0 docid rank "
            "score run) or one score per line"
        )
    names = document_names(queries)
    offsets = np.asarray(queries.offsets, dtype=np.int64)
    query_of = {str(qid): q for q, qid in enumerate(np.asarray(queries.qid))}
    row_of: dict[tuple[int, str], int] = {}
    for q in range(queries.n_queries):
        for row in range(offsets[q], offsets[q + 1]):
            row_of[(q, names[row])] = row
    scores = np.full(queries.n_docs, np.nan)
    for number, fields in lines:
        where = f"line {number} of {path}"
        if len(fields) != 6:
            raise ValueError(f"{where}: {len(fields)} fields; a TREC run line is qid Q0 docid rank score run")
        qid, _, docid, _, score, _ = fields
        if qid not in query_of:
            raise ValueError(f"{where}: qid {qid} is not a query of the {split} split")
        at = row_of.get((query_of[qid], docid))
        if at is None:
            raise ValueError(
                f"{where}: docid {docid} is not a document of qid {qid} in the {split} split (documents "
                "are named by their '#docid = ...' comment, else q<qid>-d<i>, as cltr score --trec "
                "writes them)"
            )
        if not np.isnan(scores[at]):
            raise ValueError(f"{where}: qid {qid} docid {docid} is scored a second time")
        scores[at] = _number(score, where)
    missing = np.flatnonzero(np.isnan(scores))
    if len(missing):
        first = int(missing[0])
        q = int(np.searchsorted(offsets, first, side="right") - 1)
        raise ValueError(
            f"{path}: {len(missing)} of the {split} split's {queries.n_docs} documents have no line, "
            f"e.g. qid {queries.qid[q]} docid {names[first]}; cltr ranks every candidate document, so "
            "a run must score them all"
        )
    return scores
