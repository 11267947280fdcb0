"""Seeded Baidu-ULTR-shaped files with a known position bias and relevance (for tests and demos).

Baidu-ULTR is not shipped and cannot be downloaded here; these files have its shapes (see
``cltr.data.baidu`` for the raw partitions, ``cltr.data.baidu_preprocessed`` for Hager et al.'s
preprocessed release) so that every reader and estimator runs end to end on small data.

Clicks follow the position-based model: a document at rank k of a session is clicked with
probability ``propensity[k - 1] * relevance(query, document)``. Each query has a pool of
documents and a few displayed orderings (its "rankers"), each a random permutation of the pool
truncated to ``displayed``; a session shows one of its query's orderings, drawn uniformly, so
a document is seen at several ranks (the interventions that harvesting needs).
"""

from __future__ import annotations

import gzip
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cltr.data.baidu import MISSING_TITLE, OTHERS_SEARCHED_TITLE

__all__ = ["BAIDU_PROPENSITY", "RawTruth", "write_raw_partitions", "PreprocessedTruth", "write_preprocessed"]

# Baidu-ULTR's position bias at ranks 1-10 by intervention harvesting over three partitions
# (issue 26; Zou et al. 2022): the generator's default, so estimates face the real curve.
BAIDU_PROPENSITY = np.array([1.0, 0.674, 0.414, 0.293, 0.208, 0.171, 0.136, 0.117, 0.084, 0.058])


@dataclass(frozen=True)
class RawTruth:
    """What generated a set of raw partitions.

    Attributes
    ----------
    paths : list of Path
        The partitions written, ``part-00000.gz``, ...
    propensity : ndarray of float64, shape (displayed,)
        Click probability factor per rank (rank 1 = 1).
    qid : ndarray of int64, shape (n_pairs,)
    url : ndarray of str, shape (n_pairs,)
    relevance : ndarray of float64, shape (n_pairs,)
        Click probability of each (query, document) at a rank of propensity 1.
    n_sessions, n_document_lines : int
    """

    paths: list
    propensity: np.ndarray
    qid: np.ndarray
    url: np.ndarray
    relevance: np.ndarray
    n_sessions: int
    n_document_lines: int


def _tokens(rng: np.random.Generator, size: int) -> bytes:
    return b"\x01".join(str(t).encode() for t in rng.integers(1, 30000, size=size))


def _url(seed: int, qid: int, doc: int) -> str:
    return hashlib.md5(f"{seed}/{qid}/{doc}".encode()).hexdigest()


def write_raw_partitions(
    directory: str | os.PathLike,
    *,
    n_queries: int = 50,
    sessions_per_query: int = 100,
    pool: int = 14,
    displayed: int = 10,
    orderings: int = 4,
    partitions: int = 1,
    propensity: np.ndarray | None = None,
    missing_rate: float = 0.02,
    others_rate: float = 0.1,
    seed: int = 0,
) -> RawTruth:
    """Write raw Baidu-ULTR-shaped partitions ``part-NNNNN.gz`` under ``directory``.

    Parameters
    ----------
    directory : path-like
        Created if needed.
    n_queries, sessions_per_query : int, keyword-only
        Sessions are ``n_queries * sessions_per_query``, in random order, split evenly over
        ``partitions`` files.
    pool, displayed, orderings : int, keyword-only
        Documents per query, shown per session (ranks 1..displayed), orderings per query.
    propensity : array_like of float, shape (displayed,), optional
        Click factor per rank [default: ``BAIDU_PROPENSITY``, which needs displayed = 10].
    missing_rate : float, keyword-only
        Chance that a displayed place holds a missing document (title ``21429``, never
        clicked): the place stays, a rank gap.
    others_rate : float, keyword-only
        Chance that a session shows a "what other people searched for" block, after a
        random place; it takes no rank, but its position field and those below count it.
    seed : int, keyword-only

    Returns
    -------
    RawTruth
    """
    propensity = BAIDU_PROPENSITY if propensity is None else np.asarray(propensity, dtype=np.float64)
    if propensity.shape != (displayed,):
        raise ValueError(f"propensity must have one value per displayed rank ({displayed}), found {propensity.shape}")
    if pool < displayed:
        raise ValueError(f"pool ({pool}) must hold at least the displayed documents ({displayed})")
    rng = np.random.default_rng(seed)
    qids = 1000 + np.arange(n_queries, dtype=np.int64) * 7
    relevance = rng.beta(0.8, 1.6, size=(n_queries, pool)).clip(0.02, 0.98)
    urls = np.array([[_url(seed, int(q), d) for d in range(pool)] for q in qids])
    order = np.argsort(rng.random((n_queries, orderings, pool)), axis=2)[:, :, :displayed]
    session_query = rng.permutation(np.repeat(np.arange(n_queries), sessions_per_query))
    session_ordering = rng.integers(0, orderings, size=len(session_query))
    shown = order[session_query, session_ordering]  # (S, displayed) pool index
    shown_relevance = np.take_along_axis(relevance[session_query], shown, axis=1)
    missing = rng.random(shown.shape) < missing_rate
    click = (rng.random(shown.shape) < propensity * shown_relevance) & ~missing
    others_after = np.where(
        rng.random(len(session_query)) < others_rate, rng.integers(0, displayed + 1, size=len(session_query)), -1
    )
    dwell = rng.exponential(30.0, size=shown.shape).round(1)

    # Token sequences and the fields no reader here uses are drawn once and reused: the
    # generator's cost is then the lines themselves.
    variety = 64
    query_text = [b"\t".join((_tokens(rng, 3), _tokens(rng, 2))) for _ in range(variety)]
    titles = [_tokens(rng, 6) for _ in range(variety)]
    tails = [_document_tail(rng) for _ in range(variety)]
    pick = rng.integers(0, variety, size=(len(session_query), displayed + 2, 3))

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    bounds = np.linspace(0, len(session_query), partitions + 1).astype(int)
    paths, lines_written = [], 0
    url_bytes = np.char.encode(urls, "ascii")
    for part in range(partitions):
        lines = []
        for s in range(bounds[part], bounds[part + 1]):
            q = session_query[s]
            lines.append(str(qids[q]).encode() + b"\t" + query_text[pick[s, 0, 0]])
            clicked = np.flatnonzero(click[s])
            first = clicked[0] if clicked.size else -1
            last = clicked[-1] if clicked.size else -1
            written = 0
            for place in range(displayed + 1):
                if place == others_after[s]:
                    written += 1
                    lines.append(
                        _document_line(written, b"-", OTHERS_SEARCHED_TITLE, tails[pick[s, place, 1]], 0, 0, 0, 0)
                    )
                if place == displayed:
                    break
                written += 1
                title = MISSING_TITLE if missing[s, place] else titles[pick[s, place + 1, 2]]
                c = int(click[s, place])
                lines.append(
                    _document_line(
                        written,
                        url_bytes[q, shown[s, place]],
                        title,
                        tails[pick[s, place + 1, 1]],
                        c,
                        dwell[s, place] if c else 0,
                        int(place == first),
                        int(place == last),
                    )
                )
        lines_written += len(lines)
        path = directory / f"part-{part:05d}.gz"
        with gzip.open(path, "wb", compresslevel=1) as handle:
            handle.write(b"\n".join(lines) + b"\n")
        paths.append(path)
    return RawTruth(
        paths=paths,
        propensity=propensity,
        qid=np.repeat(qids, pool),
        url=urls.reshape(-1),
        relevance=relevance.reshape(-1),
        n_sessions=len(session_query),
        n_document_lines=lines_written - len(session_query),
    )


def _document_tail(rng: np.random.Generator) -> tuple[bytes, ...]:
    """Abstract tokens, media type and plausible integers for the fields no reader here uses."""
    media = str(int(rng.integers(0, 20))).encode() if rng.random() < 0.7 else b"-"
    return (_tokens(rng, 8), media, *(str(int(v)).encode() for v in rng.integers(0, 500, size=14)))


def _document_line(
    position: int, url: bytes, title: bytes, tail: tuple[bytes, ...], click: int, dwell, first: int, last: int
) -> bytes:
    """One 32-field document line."""
    abstract, media, *f = tail
    c = str(click).encode()
    fields = (
        str(position).encode(),
        url,
        title,
        abstract,
        media,
        c,
        b"-",
        b"-",
        str(1 - click).encode(),
        f[0],
        f[1],
        f[2],
        str(first).encode(),
        f[3],
        f[4],
        f[5],
        str(dwell).encode(),
        f[6],
        f[7],
        f[8],
        f[9],
        f[10],
        b"-",
        str(last).encode(),
        f[11],
        c,
        f[12],
        b"-",
        str(last).encode(),
        f[13],
        b"0",
        b"-",
    )
    return b"\t".join(fields)


@dataclass(frozen=True)
class PreprocessedTruth:
    """What generated a set of preprocessed files (``write_preprocessed``).

    Attributes
    ----------
    clicks : list of Path
        The click files, ``part-1_split-0.feather``, ... (or ``.parquet``).
    annotations : Path
        The annotation file, ``validation.feather`` (or ``.parquet``).
    propensity : ndarray of float64, shape (displayed,)
        Click probability factor per displayed position (position 1 = 1).
    weights : ndarray of float64, shape (12,)
        How each lexical feature loads on the latent relevance (0: a feature that carries none).
    n_sessions, n_gapped : int
        Sessions written, and those of them with a gap in their positions (a missing document).
    """

    clicks: list
    annotations: Path
    propensity: np.ndarray
    weights: np.ndarray
    n_sessions: int
    n_gapped: int


# the lexical features of the release: offset and scale of each raw value around the latent
# relevance, so that raw columns look like scores and counts (lengths are integers)
_LEXICAL = (
    ("bm25", 8.0, 3.0),
    ("bm25_title", 4.0, 2.0),
    ("bm25_abstract", 6.0, 2.5),
    ("tf_idf", 5.0, 2.0),
    ("tf", 3.0, 1.5),
    ("idf", 4.0, 1.0),
    ("ql_jelinek_mercer_short", -20.0, 3.0),
    ("ql_jelinek_mercer_long", -22.0, 3.0),
    ("ql_dirichlet", -21.0, 3.0),
    ("document_length", 120.0, 30.0),
    ("title_length", 12.0, 3.0),
    ("abstract_length", 60.0, 15.0),
)
_INTEGER_FEATURES = {"document_length", "title_length", "abstract_length"}


def _lexical_features(rng: np.random.Generator, latent: np.ndarray, weights: np.ndarray) -> dict[str, np.ndarray]:
    noise = rng.normal(size=(len(latent), len(_LEXICAL)))
    raw = latent[:, None] * weights + noise
    columns = {}
    for j, (name, offset, scale) in enumerate(_LEXICAL):
        value = offset + scale * raw[:, j]
        columns[name] = (
            np.maximum(np.round(value), 1).astype(np.int32) if name in _INTEGER_FEATURES else value.astype(np.float32)
        )
    return columns


def _label_of(latent: np.ndarray) -> np.ndarray:
    """Expert labels 0-4 from the latent relevance (quantiles of a standard normal)."""
    return np.searchsorted(np.array([-0.5, 0.4, 1.0, 1.6]), latent).astype(np.int32)


def write_preprocessed(
    directory: str | os.PathLike,
    *,
    n_queries: int = 120,
    sessions_per_query: int = 30,
    pool: int = 14,
    displayed: int = 10,
    orderings: int = 4,
    n_files: int = 2,
    n_annotated: int = 60,
    annotated_docs: int = 15,
    propensity: np.ndarray | None = None,
    missing_rate: float = 0.02,
    embedding_width: int = 8,
    shape: str = "flat",
    file_format: str = "feather",
    seed: int = 0,
) -> PreprocessedTruth:
    """Write files shaped like Hager et al.'s preprocessed Baidu-ULTR release under ``directory``.

    Relevance is latent: each (query, document) has a standard-normal ``z``; its twelve lexical
    features (``cltr.data.baidu_preprocessed.LTR_FEATURES``) are ``offset + scale * (w_j z +
    noise)`` with half the ``w_j`` zero, and its embedding ``z`` plus noise in every
    coordinate. Click files: sessions in random order over ``n_files`` files; each shows one of
    its query's ``orderings`` (random permutations of its ``pool`` documents cut to
    ``displayed``), and the document at position k is clicked with probability
    ``propensity[k-1] * sigmoid(2 z - 1)``. A displayed place holds a missing document with
    chance ``missing_rate``: it is not written, but its place is counted (a gap in the
    positions, as in the release). The annotation file: ``n_annotated`` other queries of
    ``annotated_docs`` documents, labelled 0-4 by thresholds on ``z``.

    Parameters
    ----------
    directory : path-like
        Created if needed; the click files are ``part-1_split-{S}.{ext}``, the annotations
        ``validation.{ext}``, as the release names them.
    shape : {"flat", "sessions"}
        One row per document with ``query_no`` (the release's files), or one row per session
        with aligned lists (what the Hugging Face loader yields, saved as Parquet).
    file_format : {"feather", "parquet"}
    embedding_width : int
        Width of ``query_document_embedding`` (the release's is 768; small here for speed).
    seed : int

    Returns
    -------
    PreprocessedTruth
    """
    import pyarrow as pa
    import pyarrow.feather as feather
    import pyarrow.parquet as pq

    if shape not in ("flat", "sessions") or file_format not in ("feather", "parquet"):
        raise ValueError(
            f"shape must be flat or sessions and file_format feather or parquet, found {shape!r}, {file_format!r}"
        )
    propensity = BAIDU_PROPENSITY if propensity is None else np.asarray(propensity, dtype=np.float64)
    if propensity.shape != (displayed,):
        raise ValueError(f"propensity must have one value per displayed rank ({displayed}), found {propensity.shape}")
    if pool < displayed:
        raise ValueError(f"pool ({pool}) must hold at least the displayed documents ({displayed})")
    rng = np.random.default_rng(seed)
    weights = np.where(np.arange(len(_LEXICAL)) % 2 == 0, rng.uniform(0.5, 1.5, len(_LEXICAL)), 0.0)
    latent = rng.normal(size=(n_queries, pool))
    relevance = 1 / (1 + np.exp(-(2 * latent - 1)))
    features = _lexical_features(rng, latent.reshape(-1), weights)
    embedding = latent.reshape(-1, 1) + rng.normal(scale=0.5, size=(n_queries * pool, embedding_width))
    urls = np.array([_url(seed, q, d) for q in range(n_queries) for d in range(pool)])
    query_md5 = np.array([hashlib.md5(f"query/{seed}/{q}".encode()).hexdigest() for q in range(n_queries)])

    order = np.argsort(rng.random((n_queries, orderings, pool)), axis=2)[:, :, :displayed]
    session_query = rng.permutation(np.repeat(np.arange(n_queries), sessions_per_query))
    shown = order[session_query, rng.integers(0, orderings, size=len(session_query))]  # (S, displayed)
    click = rng.random(shown.shape) < propensity * np.take_along_axis(relevance[session_query], shown, axis=1)
    present = rng.random(shown.shape) >= missing_rate
    # a session keeps at least one document (a page of missing documents only is not in the release)
    present[~present.any(axis=1), 0] = True
    doc_index = (session_query[:, None] * pool + shown)[present]  # flat over (session, place)
    session_of = np.repeat(np.arange(len(session_query)), present.sum(axis=1))
    position = np.broadcast_to(np.arange(1, displayed + 1), shown.shape)[present]
    last_place = displayed - np.argmax(present[:, ::-1], axis=1)  # 1-based position of the last one
    n_gapped = int((present.sum(axis=1) != last_place).sum())
    columns = {
        "query_id": np.array([str(900000 + s) for s in range(len(session_query))])[session_of],
        "query_md5": query_md5[session_query][session_of],
        "url_md5": urls[doc_index],
        "text_md5": np.array([hashlib.md5(u.encode()).hexdigest() for u in urls])[doc_index],
        "position": position.astype(np.int32),
        "click": click[present].astype(np.int32),
        "media_type": rng.integers(0, 20, size=len(doc_index)).astype(np.int32),
        "displayed_time": rng.exponential(8.0, size=len(doc_index)).astype(np.float32),
        "serp_height": rng.integers(80, 400, size=len(doc_index)).astype(np.int32),
        "slipoff_count_after_click": rng.integers(0, 3, size=len(doc_index)).astype(np.int32),
        **{name: values[doc_index] for name, values in features.items()},
        "query_document_embedding": embedding[doc_index].astype(np.float16),
    }

    judged_latent = rng.normal(size=n_annotated * annotated_docs)
    judged_features = _lexical_features(rng, judged_latent, weights)
    judged_query = np.repeat(np.arange(n_annotated), annotated_docs)
    annotated = {
        "query_id": np.array([str(500 + q % max(1, n_annotated // 2)) for q in judged_query]),
        "query_md5": np.array([hashlib.md5(f"judged/{seed}/{q}".encode()).hexdigest() for q in judged_query]),
        "frequency_bucket": (judged_query % 10).astype(np.int32),
        "text_md5": np.array([hashlib.md5(f"text/{seed}/{i}".encode()).hexdigest() for i in range(len(judged_latent))]),
        "label": _label_of(judged_latent),
        **judged_features,
        "query_document_embedding": (
            judged_latent[:, None] + rng.normal(scale=0.5, size=(len(judged_latent), embedding_width))
        ).astype(np.float16),
    }

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    extension = "feather" if file_format == "feather" else "parquet"

    def write(path: Path, values: dict[str, np.ndarray], session: np.ndarray, per_session: tuple[str, ...]) -> None:
        if shape == "flat":
            first = np.concatenate([[True], session[1:] != session[:-1]])
            arrays = {"query_no": pa.array(np.cumsum(first) - 1)}
            for key, value in values.items():
                arrays[key] = (
                    pa.FixedSizeListArray.from_arrays(pa.array(value.reshape(-1)), value.shape[1])
                    if value.ndim == 2
                    else pa.array(value)
                )
        else:
            starts = np.flatnonzero(np.concatenate([[True], session[1:] != session[:-1]]))
            offsets = pa.array(np.concatenate([starts, [len(session)]]).astype(np.int32))
            arrays = {"n": pa.array(np.diff(np.concatenate([starts, [len(session)]])).astype(np.int32))}
            for key, value in values.items():
                if key in per_session:
                    arrays[key] = pa.array(value[starts])
                elif value.ndim == 2:
                    inner = pa.ListArray.from_arrays(
                        pa.array(np.arange(0, value.size + 1, value.shape[1], dtype=np.int32)),
                        pa.array(value.reshape(-1)),
                    )
                    arrays[key] = pa.ListArray.from_arrays(offsets, inner)
                else:
                    arrays[key] = pa.ListArray.from_arrays(offsets, pa.array(value))
        table = pa.table(arrays)
        if file_format == "feather":
            feather.write_feather(table, path)
        else:
            pq.write_table(table, path)

    bounds = np.linspace(0, len(session_query), n_files + 1).astype(int)
    clicks = []
    for part in range(n_files):
        rows = (session_of >= bounds[part]) & (session_of < bounds[part + 1])
        path = directory / f"part-1_split-{part}.{extension}"
        write(path, {key: value[rows] for key, value in columns.items()}, session_of[rows], ("query_id", "query_md5"))
        clicks.append(path)
    annotation_path = directory / f"validation.{extension}"
    write(annotation_path, annotated, judged_query, ("query_id", "query_md5", "frequency_bucket"))
    return PreprocessedTruth(
        clicks=clicks,
        annotations=annotation_path,
        propensity=propensity,
        weights=weights,
        n_sessions=len(session_query),
        n_gapped=n_gapped,
    )
