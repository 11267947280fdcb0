"""Tests that kill the survivors of bench/mutation.py on cltr/core/queries.py (each names the
mutant it kills): the container checks one violation at a time, concatenation of more than
two parts and of document ids, and the label-threshold check's boundaries."""

import dataclasses

import numpy as np
import pytest

from cltr.core.queries import (
    LETOR_FEATURES,
    YAHOO_FEATURES,
    Dataset,
    Queries,
    check_queries,
    check_relevant_from,
    concatenate_queries,
    label_counts,
)

X = np.arange(6.0).reshape(3, 2)
LABELS = np.array([0, 1, 2])
QID = np.array([7, 8])
OFFSETS = np.array([0, 1, 3])


def _queries(**changes) -> Queries:
    return Queries(**{"X": X, "labels": LABELS, "qid": QID, "offsets": OFFSETS, **changes})


def test_the_feature_widths_of_the_published_datasets():
    # kills 46 -> 47 and 700 -> 701: LETOR 4.0 has 46 features, Yahoo! LTR set 1 has 700
    assert (LETOR_FEATURES, YAHOO_FEATURES) == (46, 700)


def test_the_containers_are_immutable(toy_queries):
    # kills `@dataclass(frozen=True)` -> False on Queries and Dataset: splits are shared
    # between stages and cached by key, so they cannot be rebound
    queries = toy_queries([1, 2])
    with pytest.raises(dataclasses.FrozenInstanceError):
        queries.X = X
    dataset = Dataset(name="toy", train=queries, vali=queries, test=queries, relevant_from=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        dataset.relevant_from = 2


@pytest.mark.parametrize(
    "changes, message",
    [
        # each breaks one condition only (kills `or` -> `and` and every removed raise)
        ({"X": np.arange(6.0)}, "X must be a 2-D float array, found 1-D"),
        ({"X": np.arange(6).reshape(3, 2)}, "X must be a 2-D float array, found 2-D int"),
        ({"labels": np.array([[0, 1, 2]])}, r"labels must be integers of shape \(3,\)"),
        ({"labels": np.array([0, 1])}, r"labels must be integers of shape \(3,\)"),
        ({"labels": np.array([0.0, 1.0, 2.0])}, r"labels must be integers of shape \(3,\)"),
        ({"offsets": np.array([[0, 1, 3]])}, "offsets must be integers of shape"),
        ({"offsets": np.array([0.0, 1.0, 3.0])}, "offsets must be integers of shape"),
        ({"offsets": np.array([0]), "qid": np.array([], dtype=np.int64)}, "offsets must be integers of shape"),
        ({"offsets": np.array([1, 2, 3])}, "offsets must run from 0 to n_docs = 3, found 1 to 3"),
        ({"offsets": np.array([0, 1, 2])}, "offsets must run from 0 to n_docs = 3, found 0 to 2"),
        ({"qid": np.array([7, 8, 9])}, r"qid must have shape \(2,\), found \(3,\)"),
    ],
)
def test_check_queries_names_each_violation(changes, message):
    with pytest.raises(ValueError, match=message):
        check_queries(_queries(**changes), where="toy")


def test_check_queries_accepts_one_query_and_names_the_first_non_finite_row():
    # kills `len(offsets) < 2` -> `<= 2` and -> `< 3`: one query (two offsets) is a split
    check_queries(Queries(X=X, labels=LABELS, qid=np.array([7]), offsets=np.array([0, 3])))
    # kills `[0]` -> `[1]` of the non-finite rows: only row 1 is bad
    bad = X.copy()
    bad[1, 0] = np.inf
    with pytest.raises(ValueError, match="row 1 of X is not finite"):
        check_queries(_queries(X=bad))


def test_concatenate_one_three_and_no_parts(toy_queries):
    a = toy_queries([1, 2], labels=[0, 1, 1])
    b = toy_queries([2], labels=[2, 0], qid_start=10)
    c = toy_queries([1], labels=[1], qid_start=20)
    # kills `parts[0].offsets` -> `parts[1]` (one part is a valid stack: itself)
    alone = concatenate_queries([a])
    np.testing.assert_array_equal(alone.offsets, a.offsets)
    # kills `parts[:-1]` -> `parts[:1]`: the third part's rows are shifted by both before it
    three = concatenate_queries([a, b, c])
    assert three.offsets.tolist() == [0, 1, 3, 5, 6] and three.qid.tolist() == [1, 2, 10, 20]
    with pytest.raises(ValueError, match="nothing to concatenate: parts is empty"):
        concatenate_queries([])
    # kills `len(widths) > 1` -> `> 2` and the removed raise
    with pytest.raises(ValueError, match=r"different feature widths \[2, 3\]"):
        concatenate_queries([a, toy_queries([1], n_features=3, qid_start=30)])


def test_concatenate_keeps_document_ids_and_fills_none(toy_queries):
    # kills `is not None` -> `is None` and `q.docid is None` -> `is not None`
    a = toy_queries([1, 2], labels=[0, 1, 1])
    b = toy_queries([2], labels=[2, 0], qid_start=10)
    named = dataclasses.replace(b, docid=np.array(["d1", "d2"], dtype=object))
    both = concatenate_queries([a, named])
    assert both.docid.tolist() == [None, None, None, "d1", "d2"]
    assert concatenate_queries([a, b]).docid is None


def test_label_counts_of_three_grades():
    # kills `return_counts=True` -> False (two distinct labels would unpack by chance)
    assert label_counts(np.array([0, 2, 2, 1, 2])) == {"0": 1, "1": 1, "2": 3}


@pytest.mark.parametrize("relevant_from", [1, 4])
def test_relevant_from_accepts_the_ends_of_its_range(relevant_from):
    # kills `<= high` -> `< high` and a dropped `not`
    check_relevant_from(relevant_from, (0, 4), "toy")


@pytest.mark.parametrize("relevant_from", [0, 5, 1.5, True])
def test_relevant_from_refuses_outside_its_range_fractions_and_booleans(relevant_from):
    # kills `or` -> `and`, `!=` -> `==`, `low < relevant_from` -> `<=` and the removed raise
    with pytest.raises(ValueError, match=r"relevant_from must be an integer in 1..4 for toy labels 0..4"):
        check_relevant_from(relevant_from, (0, 4), "toy")
