"""The ``Queries`` and ``Dataset`` containers and their checks (``cltr.core.queries``)."""

import numpy as np
import pytest

from cltr.core.queries import Queries, check_queries, concatenate_queries, default_passes, describe_split


def test_describe_split_hand_computed(toy_queries):
    queries = toy_queries([3, 2, 3], labels=[0, 2, 1, 0, 0, 0, 0, 1], n_features=5)
    assert describe_split(queries, 1) == {
        "queries": 3,
        "documents": 8,
        "relevant": 3,
        "queries_without_relevant": 1,
        "features": 5,
    }
    assert describe_split(queries, 2) == {
        "queries": 3,
        "documents": 8,
        "relevant": 1,
        "queries_without_relevant": 2,
        "features": 5,
    }


def test_concatenate_and_check_queries(toy_queries):
    a = toy_queries([1, 2], labels=[0, 1, 1])
    b = toy_queries([2], labels=[2, 0], qid_start=10)
    both = concatenate_queries([a, b])
    assert both.offsets.tolist() == [0, 1, 3, 5] and both.qid.tolist() == [1, 2, 10]
    np.testing.assert_array_equal(both.X, np.concatenate([a.X, b.X]))
    with pytest.raises(ValueError, match="qid 1 is in two parts"):
        concatenate_queries([a, a])
    with pytest.raises(ValueError, match="strictly"):
        check_queries(Queries(X=a.X, labels=a.labels, qid=np.array([1, 2, 3]), offsets=np.array([0, 1, 1, 3])))
    with pytest.raises(ValueError, match="qid 1 names two queries"):
        check_queries(Queries(X=a.X, labels=a.labels, qid=np.array([1, 1]), offsets=a.offsets))
    with pytest.raises(ValueError, match="not finite"):
        check_queries(Queries(X=a.X * np.nan, labels=a.labels, qid=a.qid, offsets=a.offsets))


def test_subset_relevant_and_default_passes(toy_queries):
    queries = toy_queries([3, 2, 3], labels=[0, 2, 1, 0, 0, 0, 0, 1])
    part = queries.subset(np.array([2, 0]))
    assert part.qid.tolist() == [3, 1] and part.offsets.tolist() == [0, 3, 6]
    np.testing.assert_array_equal(part.X, queries.X[[5, 6, 7, 0, 1, 2]])
    assert part.labels.tolist() == [0, 0, 1, 0, 2, 1]
    assert queries.relevant(2).tolist() == [False, True] + [False] * 6
    assert queries.doc_query.tolist() == [0, 0, 0, 1, 1, 2, 2, 2] and queries.sizes.tolist() == [3, 2, 3]
    check_queries(part)
    assert default_passes("yahoo", {}) == 10 and default_passes("letor", {}) == 100
    assert default_passes("mine", {"default_passes": 7}) == 7
