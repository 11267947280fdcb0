"""Seeded Baidu-ULTR-shaped files with a known position bias and relevance (for tests and demos).

Baidu-ULTR is not shipped and cannot be downloaded here; these files have its shapes (see
``cltr.data.baidu``) so that every reader and estimator runs end to end on small data.

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

__all__ = ["BAIDU_PROPENSITY", "RawTruth", "write_raw_partitions"]

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


def write_raw_partitions(directory: str | os.PathLike, *, n_queries: int = 50, sessions_per_query: int = 100,
                         pool: int = 14, displayed: int = 10, orderings: int = 4, partitions: int = 1,
                         propensity: np.ndarray | None = None, missing_rate: float = 0.02,
                         others_rate: float = 0.1, seed: int = 0) -> RawTruth:
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
    shown = order[session_query, session_ordering]                       # (S, displayed) pool index
    shown_relevance = np.take_along_axis(relevance[session_query], shown, axis=1)
    missing = rng.random(shown.shape) < missing_rate
    click = (rng.random(shown.shape) < propensity * shown_relevance) & ~missing
    others_after = np.where(rng.random(len(session_query)) < others_rate,
                            rng.integers(0, displayed + 1, size=len(session_query)), -1)
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
                    lines.append(_document_line(written, b"-", OTHERS_SEARCHED_TITLE, tails[pick[s, place, 1]],
                                                0, 0, 0, 0))
                if place == displayed:
                    break
                written += 1
                title = MISSING_TITLE if missing[s, place] else titles[pick[s, place + 1, 2]]
                c = int(click[s, place])
                lines.append(_document_line(written, url_bytes[q, shown[s, place]], title,
                                            tails[pick[s, place + 1, 1]], c, dwell[s, place] if c else 0,
                                            int(place == first), int(place == last)))
        lines_written += len(lines)
        path = directory / f"part-{part:05d}.gz"
        with gzip.open(path, "wb", compresslevel=1) as handle:
            handle.write(b"\n".join(lines) + b"\n")
        paths.append(path)
    return RawTruth(paths=paths, propensity=propensity, qid=np.repeat(qids, pool), url=urls.reshape(-1),
                    relevance=relevance.reshape(-1), n_sessions=len(session_query),
                    n_document_lines=lines_written - len(session_query))


def _document_tail(rng: np.random.Generator) -> tuple[bytes, ...]:
    """Abstract tokens, media type and plausible integers for the fields no reader here uses."""
    media = str(int(rng.integers(0, 20))).encode() if rng.random() < 0.7 else b"-"
    return (_tokens(rng, 8), media, *(str(int(v)).encode() for v in rng.integers(0, 500, size=14)))


def _document_line(position: int, url: bytes, title: bytes, tail: tuple[bytes, ...], click: int, dwell,
                   first: int, last: int) -> bytes:
    """One 32-field document line."""
    abstract, media, *f = tail
    c = str(click).encode()
    fields = (str(position).encode(), url, title, abstract, media, c, b"-", b"-", str(1 - click).encode(),
              f[0], f[1], f[2], str(first).encode(), f[3], f[4], f[5], str(dwell).encode(), f[6], f[7], f[8], f[9],
              f[10], b"-", str(last).encode(), f[11], c, f[12], b"-", str(last).encode(), f[13], b"0", b"-")
    return b"\t".join(fields)
