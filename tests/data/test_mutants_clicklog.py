"""Tests that kill the survivors of bench/mutation.py on cltr/data/clicklog.py (each names the
mutant it kills); hand-made logs of a few rows and hand-made repeat keys."""

import re

import numpy as np
import pandas as pd
import pytest

from cltr.data import clicklog
from cltr.data.clicklog import _repeated, read_click_log
from cltr.data.parquet_log import index_click_log


def _page_keys(sessions: int, docs: int) -> tuple[np.ndarray, int]:
    """The (session, rank) keys of a clean log of ``sessions`` pages of ``docs`` ranks each,
    as the repeat check builds them: session * width + rank, width = max rank + 1."""
    width = docs + 1
    session = np.repeat(np.arange(sessions), docs)
    rank = np.tile(np.arange(1, docs + 1), sessions)
    return session * width + rank, sessions * width


@pytest.mark.parametrize(("sessions", "docs"), [(2, 3), (300, 5)])
def test_a_clean_log_is_checked_for_repeats_without_sorting(sessions, docs, monkeypatch):
    # the docstring's promise ("counting is linear, so a clean log is checked without
    # sorting"), at the sizes the repeat check is called with: a full page per session makes
    # size = rows * (docs + 1) / docs. Kills, on `size <= 4 * len(key) + 1024 and
    # np.bincount(key, minlength=size).max(initial=0) <= 1`: `max(...) <= 1` -> `< 1`
    # (every non-empty clean log sorted), `+ 1024` -> `- 1024` (2 pages of 3: size 8 >
    # 24 - 1024) and `4 * len(key)` -> `/` (300 pages of 5: size 1800 > 1500 / 4 + 1024)
    key, size = _page_keys(sessions, docs)

    def no_sorting(*args, **kwargs):
        raise AssertionError("a clean log was sorted")

    monkeypatch.setattr(clicklog.np, "unique", no_sorting)
    assert _repeated(key, size) is None


def test_repeats_found_by_counting_match_a_double_loop():
    # the fast path only ever answers "no repeat"; a repeat is marked on its later rows
    key, size = _page_keys(4, 3)
    key = np.concatenate([key, key[[2, 0, 2]]])
    expected = [any(key[j] == key[i] for j in range(i)) for i in range(len(key))]
    np.testing.assert_array_equal(_repeated(key, size), expected)


def test_an_invalid_qid_of_a_parquet_log_is_named_by_its_row(tmp_path, toy_queries):
    # kills `lenient: bool = False` -> `True`: cltr.data.parquet_log builds _Rows with the
    # default, and a lenient check would read the Parquet bytes as delimited text (a csv
    # TypeError) instead of naming the row
    path = tmp_path / "log.parquet"
    frame = {"session": ["a", "a"], "qid": [10, 99], "doc": [0, 1], "rank": [1, 2], "click": [1, 0]}
    pd.DataFrame(frame).to_parquet(path, index=False)
    with pytest.raises(ValueError, match=re.escape(f"row 2 of {path}: qid 99 is not a query of this split")):
        index_click_log(path, toy_queries([3, 3], qid_start=10))


def test_a_qid_of_exactly_2_to_the_62_is_a_qid_not_beyond_the_limit(tmp_path, toy_queries):
    # kills `np.abs(numbers) > _LIMIT` -> `>=`: 2**62 itself is the largest value kept as it
    # is (beyond it a value is clipped and refused); written as a float (2**62 exactly), the
    # pandas reader's qid goes through the float check. A split may hold qid 2**62 (an
    # SVMlight qid fits 64 bits)
    toy = toy_queries([3, 3], qid_start=10)
    queries = type(toy)(X=toy.X, labels=toy.labels, qid=np.array([10, 2**62]), offsets=toy.offsets)
    path = tmp_path / "log.tsv"
    path.write_text(f"session\tqid\tdoc\trank\tclick\na\t{2**62}.0\t0\t1\t1\na\t{2**62}\t1\t2\t0\n")
    assert read_click_log(path, queries, reader="pandas").query.tolist() == [1, 1]


@pytest.mark.parametrize("reader", ["pandas", "pyarrow"])
def test_a_qid_past_2_to_the_53_is_matched_exactly_by_both_readers(tmp_path, toy_queries, reader):
    # through float64, 2**53 + 1 rounds to 2**53: the pandas reader matched it to that query
    toy = toy_queries([3, 3], qid_start=10)
    queries = type(toy)(X=toy.X, labels=toy.labels, qid=np.array([10, 2**53]), offsets=toy.offsets)
    path = tmp_path / "log.tsv"
    path.write_text(f"session\tqid\tdoc\trank\tclick\na\t{2**53 + 1}\t0\t1\t1\n")
    with pytest.raises(ValueError, match=f"qid {2**53 + 1} is not a query of this split"):
        read_click_log(path, queries, reader=reader)
    path.write_text(f"session\tqid\tdoc\trank\tclick\na\t{2**53}\t0\t1\t1\n")
    assert read_click_log(path, queries, reader=reader).query.tolist() == [1]


def test_sessions_of_a_numeric_parquet_column_are_told_apart_by_value(tmp_path, toy_queries):
    # kills `column.astype(str) if column.dtype == object else column` -> `!=`: a float64
    # session column is grouped by value, so 0.0 and -0.0 are one page (ranks 1 and 2);
    # grouped by text they would be two, the second starting at rank 2
    path = tmp_path / "log.parquet"
    frame = {"session": [0.0, -0.0], "qid": [10, 10], "doc": [0, 1], "rank": [1, 2], "click": [1, 0]}
    pd.DataFrame(frame).to_parquet(path, index=False)
    assert read_click_log(path, toy_queries([3], qid_start=10)).session.tolist() == [0, 0]


def test_a_missing_cell_of_a_nullable_integer_column_is_named(tmp_path):
    # pandas' nullable Int64 has dtype kind "i" whatever its cells: a missing one reached the
    # exact int64 path and failed in numpy's words instead of the file's row and column
    from pathlib import Path

    from cltr.data.clicklog import _Rows

    frame = pd.DataFrame({"rank": pd.array([1, None, 3], dtype="Int64")})
    rows = _Rows(Path(tmp_path / "log.parquet"), frame)
    with pytest.raises(ValueError, match=r"row 2 of .*log\.parquet: rank must be an integer, found"):
        rows.integers("rank")
    whole = _Rows(Path(tmp_path / "log.parquet"), pd.DataFrame({"rank": pd.array([1, 2, 3], dtype="Int64")}))
    assert whole.integers("rank").tolist() == [1, 2, 3]
