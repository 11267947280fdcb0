"""The embedded synthetic dataset (``cltr.data.synthetic``): seeded, LETOR-shaped, with
learnable and partly non-linear relevance."""

import json
from itertools import pairwise

import numpy as np
import pytest

from cltr.core.queries import check_queries, describe_split
from cltr.data.synthetic import make_synthetic


def test_synthetic_is_deterministic_for_a_seed():
    # 300 queries: the draws do not depend on the size (the default's three took 2 s)
    a, b = make_synthetic(n_queries=300, seed=3), make_synthetic(n_queries=300, seed=3)
    c = make_synthetic(n_queries=300, seed=4)
    for split in ("train", "vali", "test"):
        for name in ("X", "labels", "qid", "offsets"):
            np.testing.assert_array_equal(getattr(a.splits()[split], name), getattr(b.splits()[split], name))
    assert a.meta == b.meta
    assert not np.array_equal(a.train.labels[:50], c.train.labels[:50]) or a.train.n_docs != c.train.n_docs
    same = make_synthetic(n_queries=300, seed=np.random.SeedSequence(3))
    np.testing.assert_array_equal(same.test.X, a.test.X)
    state = np.random.get_state()[1].copy()
    make_synthetic(n_queries=10)
    assert np.array_equal(np.random.get_state()[1], state)  # global random state untouched


def test_synthetic_default_is_letor_shaped():
    # the paper's LETOR training set: 1,484 queries, MQ2007's ~41 documents a query, 46 features
    dataset = make_synthetic()
    assert dataset.name == "synthetic" and dataset.relevant_from == 2
    assert [q.n_queries for q in dataset.splits().values()] == [1484, 495, 495]
    qids = np.concatenate([q.qid for q in dataset.splits().values()])
    assert sorted(qids.tolist()) == list(range(1, 2475))
    sizes = np.concatenate([q.sizes for q in dataset.splits().values()])
    assert sizes.min() >= 12 and sizes.max() <= 150 and 36 <= sizes.mean() <= 46  # MQ2007: 41
    labels = np.concatenate([q.labels for q in dataset.splits().values()])
    assert set(np.unique(labels)) == {0, 1, 2}
    assert 0.17 <= np.mean(labels >= 1) <= 0.21  # LETOR MQ2008: 0.19
    assert 0.04 <= np.mean(labels == 2) <= 0.08  # LETOR MQ2008: 0.06
    without = sum(describe_split(q, 2)["queries_without_relevant"] for q in dataset.splits().values())
    assert 0.2 <= without / 2474 <= 0.7  # LETOR MQ2008 at label 2: 0.58
    for queries in dataset.splits().values():
        check_queries(queries)
        assert queries.n_features == 46 and queries.X.dtype == np.float64
        assert queries.relevant(2).any()
    json.dumps(dataset.meta)


def test_synthetic_features_are_min_max_normalized_per_query():
    dataset = make_synthetic(n_queries=40, seed=2)
    for queries in dataset.splits().values():
        X, offsets = queries.X, queries.offsets
        assert X.min() >= 0 and X.max() <= 1
        low = np.minimum.reduceat(X, offsets[:-1], axis=0)
        high = np.maximum.reduceat(X, offsets[:-1], axis=0)
        constant = low == high
        assert np.all(low == 0)  # a constant column is all 0, a varying one starts at 0
        assert np.all(high[~constant] == 1)
        assert constant.any() and not constant.all()  # like LETOR, some columns are constant


def test_synthetic_tiny_and_options():
    tiny = make_synthetic(n_queries=3, n_features=4, docs=(2, 4), seed=1)
    assert [q.n_queries for q in tiny.splits().values()] == [1, 1, 1]
    for queries in tiny.splits().values():
        assert queries.n_features == 4 and 2 <= queries.sizes.min() and queries.sizes.max() <= 4
        assert queries.relevant(1).any()  # every split keeps a relevant document
    wide = make_synthetic(n_queries=20, n_features=1, fractions=(1, 1, 2), relevant_from=2)
    assert [q.n_queries for q in wide.splits().values()] == [5, 5, 10] and wide.relevant_from == 2
    assert all(q.relevant(2).any() for q in wide.splits().values())
    for bad, message in [
        ({"n_queries": 2}, "n_queries"),
        ({"docs": (1, 5)}, "docs"),
        ({"relevant_share": 1.0}, "relevant_share"),
        ({"nonlinearity": 2}, "nonlinearity"),
        ({"fractions": (1, 0, 1)}, "fractions"),
        ({"relevant_from": 3}, "relevant_from"),
    ]:
        with pytest.raises(ValueError, match=message):
            make_synthetic(**bad)


def pair_accuracy(scores, queries):
    """Share of (relevant, irrelevant) pairs of a query ordered correctly (ties count half)."""
    right = total = 0.0
    relevant = queries.relevant(1)
    for start, stop in pairwise(queries.offsets):
        s, r = scores[start:stop], relevant[start:stop]
        difference = s[r][:, None] - s[~r][None, :]
        right += np.sum(difference > 0) + 0.5 * np.sum(difference == 0)
        total += difference.size
    return right / total


def linear_fit_accuracy(dataset):
    design = np.column_stack([dataset.train.X, np.ones(dataset.train.n_docs)])
    w, *_ = np.linalg.lstsq(design, dataset.train.labels.astype(float), rcond=None)
    return pair_accuracy(dataset.test.X @ w[:-1], dataset.test)


def test_synthetic_relevance_is_learnable_and_partly_nonlinear():
    # A least-squares linear scorer learns much of the default dataset ...
    assert linear_fit_accuracy(make_synthetic(n_queries=600, seed=0)) > 0.75
    # ... and the non-linear part is real: without it (and without noise) a linear scorer does better.
    linear_world = make_synthetic(n_queries=600, seed=0, nonlinearity=0.0, noise=0.0)
    nonlinear_world = make_synthetic(n_queries=600, seed=0, nonlinearity=1.0, noise=0.0)
    assert linear_fit_accuracy(linear_world) > 0.95
    assert linear_fit_accuracy(nonlinear_world) < linear_fit_accuracy(linear_world) - 0.1
