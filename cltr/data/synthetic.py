"""The embedded default dataset: seeded, LETOR-shaped, with partly non-linear relevance."""

from __future__ import annotations

import numpy as np

from cltr.core.queries import (
    LETOR_FEATURES,
    Dataset,
    Queries,
    check_relevant_from,
    label_counts,
)
from cltr.data.files import jsonable

__all__ = ["make_synthetic"]

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
    nonlinear = sum((_standardized(term) for term in terms), np.zeros(len(X)))
    return np.sqrt(1.0 - nonlinearity) * _standardized(linear) + np.sqrt(nonlinearity) * _standardized(nonlinear)


def _split_sizes(n_queries: int, fractions: tuple[float, float, float]) -> list[int]:
    fractions = np.asarray(fractions, dtype=float) / np.sum(fractions)
    n_train = max(1, int(round(fractions[0] * n_queries)))
    n_vali = max(1, int(round(fractions[1] * n_queries)))
    n_train = min(n_train, n_queries - n_vali - 1)
    return [n_train, n_vali, n_queries - n_train - n_vali]


def make_synthetic(
    *,
    n_queries: int = 2474,
    n_features: int = LETOR_FEATURES,
    docs: tuple[int, int] = (12, 150),
    relevant_share: float = 0.19,
    nonlinearity: float = 0.6,
    noise: float = 0.7,
    fractions: tuple[float, float, float] = (0.6, 0.2, 0.2),
    relevant_from: int = 2,
    seed: int | np.random.SeedSequence = 0,
) -> Dataset:
    """The embedded default dataset: seeded, LETOR-shaped, partly non-linear.

    Shaped like the paper's LETOR training set (1,484 training queries of MQ2007's order
    of documents, 46 features), with MQ2008's label shares: a variable number of
    candidates per query (log-normal, from ``docs[0]``, median about 2.3 times it, capped
    at ``docs[1]``: mean about 41 for the default ``(12, 150)``, 19 for ``(5, 120)``),
    features min-max normalized per query (each non-constant column of a query spans
    exactly [0, 1], a constant one is 0), labels 0..2 with about
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
        Queries over all splits (at least 3). The default, 2,474, gives the paper's 1,484
        training queries (and 495 each for vali and test), about 100,000 documents: the
        whole pipeline (``cltr run``) runs in about 10 s. A test can ask for 12.
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
        Recorded in the dataset: labels at least this are relevant (1 or 2; 2 as for LETOR,
        the paper's convention).
    seed : int or numpy.random.SeedSequence
        Every draw derives from this one seed; global random state is never touched.

    Returns
    -------
    Dataset
        Named ``"synthetic"``; splits with ``X`` float64 of shape (n_docs, n_features),
        labels int64 0..2, qids 1..n_queries; ``meta`` records the settings and the seed.
    """
    if isinstance(n_queries, bool) or int(n_queries) != n_queries or n_queries < 3:
        raise ValueError(f"n_queries must be an integer >= 3 (one query per split at least), found {n_queries!r}")
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
    check_relevant_from(relevant_from, (0, 2), "synthetic")
    n_queries, n_features = int(n_queries), int(n_features)

    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    sizes_rng, features_rng, function_rng, labels_rng = (np.random.default_rng(s) for s in root.spawn(4))

    sizes = np.round(low * np.exp(np.abs(sizes_rng.normal(0.0, 1.25, n_queries))))
    sizes = np.clip(sizes, low, high).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    X = _synthetic_features(features_rng, offsets, n_features)
    signal = _synthetic_relevance(function_rng, X, float(nonlinearity))
    latent = (
        signal
        + np.repeat(_QUERY_EFFECT * labels_rng.standard_normal(n_queries), sizes)
        + noise * labels_rng.standard_normal(len(signal))
    )
    thresholds = np.quantile(latent, [1.0 - relevant_share, 1.0 - relevant_share / 3.0])
    labels = (latent >= thresholds[0]).astype(np.int64) + (latent >= thresholds[1])

    everything = Queries(X=X, labels=labels, qid=np.arange(1, n_queries + 1, dtype=np.int64), offsets=offsets)
    bounds = np.cumsum([0] + _split_sizes(n_queries, fractions))
    splits = {}
    for name, start, stop in zip(("train", "vali", "test"), bounds[:-1], bounds[1:], strict=True):
        part = everything.subset(np.arange(start, stop))
        if not part.relevant(relevant_from).any():
            # the production ranker and every metric need a relevant document per split
            rows = slice(offsets[start], offsets[stop])
            part.labels[np.argmax(latent[rows])] = relevant_from
        splits[name] = part
    meta = {
        "source": "synthetic",
        "generator": {
            "n_queries": n_queries,
            "n_features": n_features,
            "docs": [low, high],
            "relevant_share": float(relevant_share),
            "nonlinearity": float(nonlinearity),
            "noise": float(noise),
            "fractions": [float(f) for f in fractions],
        },
        "seed": jsonable(root.entropy),
        "relevant_from": int(relevant_from),
        "n_features": n_features,
        "label_counts": {split: label_counts(q.labels) for split, q in splits.items()},
    }
    return Dataset(
        name="synthetic",
        train=splits["train"],
        vali=splits["vali"],
        test=splits["test"],
        relevant_from=int(relevant_from),
        meta=meta,
    )
