"""The typed view of a clicks artifact (``cltr.data.click_artifact``): round trips of every
form a split takes, the on-disk layout the stages wrote before the view (spelt out here,
independently of the view, so that a change of a key name fails), and errors that name the
artifact and the key."""

from __future__ import annotations

import re

import numpy as np
import pytest

from cltr.core.clicks import ClickLog
from cltr.data.click_artifact import CHUNKED, ClicksArtifact, Presented, SplitClicks
from cltr.data.clicklog import AggregatedRows, LoggedRows


def _log(n_clicks: int = 3, *, sessions_per_query=None) -> ClickLog:
    return ClickLog(
        query=np.array([0, 0, 1][:n_clicks], np.int64),
        doc=np.array([0, 2, 4][:n_clicks], np.int64),
        rank=np.array([1, 3, 2][:n_clicks], np.int64),
        propensity=np.array([1.0, 1 / 3, 0.5][:n_clicks]),
        pass_index=np.array([0, 1, 1][:n_clicks], np.int64),
        n_passes=2,
        n_queries=2,
        sessions_per_query=sessions_per_query,
    )


def _simulated() -> SplitClicks:
    # 5 documents in 2 queries, two logging rankers taking turns
    rank = np.array([[1, 2, 3, 1, 2], [3, 1, 2, 2, 1]], np.int32)
    return SplitClicks(
        log=_log(),
        presented=Presented(rank=rank, pass_ranker=np.array([0, 1], np.int8)),
        policy_propensity=np.array([0.9, 0.6, 0.4, 0.8, 0.7]),
    )


def _rows() -> LoggedRows:
    return LoggedRows(
        session=np.array([0, 0, 1, 1]),
        query=np.array([0, 0, 0, 0]),
        doc=np.array([0, 2, 0, 2]),
        rank=np.array([1, 2, 1, 2]),
        click=np.array([1, 0, 0, 1]),
        propensity=np.array([1.0, 0.5, 1.0, 0.5]),
        ranker=np.array([0, 0, 0, 0]),
    )


def _imported() -> SplitClicks:
    return SplitClicks(log=_log(2, sessions_per_query=np.array([2, 0], np.int64)), rows=_rows())


def _aggregated() -> SplitClicks:
    counts = AggregatedRows(
        query=np.array([0, 0]),
        doc=np.array([0, 2]),
        rank=np.array([1, 2]),
        ranker=np.array([0, 0]),
        propensity=np.array([1.0, 0.5]),
        impressions=np.array([2, 2]),
        clicks=np.array([1, 1]),
        sessions_per_query=np.array([2, 0]),
        rows=4,
    )
    return SplitClicks(aggregated=counts, n_queries=2)


def _same(found: dict, expected: dict) -> None:
    assert list(found) == list(expected)
    for key, value in expected.items():
        found_value = np.asarray(found[key])
        assert found_value.dtype == np.asarray(value).dtype, key
        np.testing.assert_array_equal(found_value, value, err_msg=key)


@pytest.mark.parametrize("make", [_simulated, _imported, _aggregated])
def test_every_form_of_a_split_comes_back_as_it_was_stored(make):
    stored = ClicksArtifact(train=make(), vali=_simulated())
    arrays = stored.arrays()
    again = ClicksArtifact.from_arrays(arrays, where="clicks artifact k")
    _same(again.arrays(), arrays)
    for name in ("train", "vali"):
        expected, found = stored.split(name), again.split(name)
        for field in ("query", "doc", "rank", "propensity", "pass_index", "n_passes", "n_queries"):
            np.testing.assert_array_equal(getattr(found.click_log(), field), getattr(expected.click_log(), field))
        assert found.simulated == expected.simulated and found.n_queries == expected.n_queries
        assert found.clicked_only == expected.clicked_only


def test_the_layout_is_the_one_the_stages_wrote_before_the_view():
    # the keys as `clicks_stage`, `import_stage` and `imported_clicks_stage` spelt them, so
    # that workspaces written before the view are read, and the view writes the same bytes
    simulated, imported, aggregated = _simulated(), _imported(), _aggregated()
    assert simulated.log is not None and simulated.presented is not None and imported.log is not None
    old_simulated = {
        **{f"train/{k}": v for k, v in simulated.log.arrays().items()},
        "train/presented_rank": simulated.presented.rank,
        "train/pass_ranker": simulated.presented.pass_ranker,
        "train/policy_propensity": simulated.policy_propensity,
    }
    old_imported = {**imported.log.arrays(), **{f"rows/{k}": v for k, v in _rows().arrays().items()}}
    assert aggregated.aggregated is not None
    old_aggregated = {"n_queries": np.int64(2), **{f"agg/{k}": v for k, v in aggregated.aggregated.arrays().items()}}
    old = {**old_simulated, **{f"vali/{k}": v for k, v in old_imported.items()}}
    _same(ClicksArtifact(train=simulated, vali=imported).arrays(), old)
    _same(imported.arrays(), old_imported)
    _same(aggregated.arrays(), old_aggregated)
    read = ClicksArtifact.from_arrays(old, where="clicks artifact k")
    assert read.train.presented is not None
    np.testing.assert_array_equal(read.train.presented.rank, simulated.presented.rank)
    np.testing.assert_array_equal(read.train.policy_propensity, simulated.policy_propensity)
    assert read.vali.rows is not None and not read.vali.simulated
    np.testing.assert_array_equal(read.vali.rows.click, _rows().click)
    chunked = SplitClicks.from_arrays(old_aggregated, where="imports artifact k")
    assert chunked.n_queries == 2 and chunked.aggregated is not None
    np.testing.assert_array_equal(chunked.logged_propensity, [1.0, 0.5])


def test_a_real_stage_artifact_reads_back(tmp_path):
    # the arrays exactly as the workspace stores and loads them (0-d counts, int32 ranks)
    from cltr.pipeline.workspace import Workspace

    workspace = Workspace(tmp_path)
    stored = ClicksArtifact(train=_simulated(), vali=_imported())
    artifact, _ = workspace.cached("d", "clicks", {"x": 1}, lambda: (stored.arrays(), {}))
    loaded = workspace.load("d", "clicks", artifact.key)
    assert loaded is not None
    _same(ClicksArtifact.of(loaded).arrays(), stored.arrays())


@pytest.mark.parametrize(
    "key",
    [
        "train/doc",
        "vali/n_passes",
        "train/pass_ranker",
        "train/presented_rank",
        "vali/rows/click",
        "train/agg/impressions",
        "train/n_queries",
    ],
)
def test_a_missing_key_is_named_with_the_artifact(key):
    train = _aggregated() if "agg" in key or key == "train/n_queries" else _simulated()
    arrays = ClicksArtifact(train=train, vali=_imported()).arrays()
    del arrays[key]
    with pytest.raises(ValueError, match=f"^clicks artifact k: missing {re.escape(key)};"):
        ClicksArtifact.from_arrays(arrays, where="clicks artifact k")


@pytest.mark.parametrize(
    "key, value, problem",
    [
        ("train/doc", np.array([0, 2], np.int64), "has length 2, expected 3, as train/query"),
        ("train/propensity", np.ones(4), "has length 4, expected 3, as train/query"),
        ("train/pass_ranker", np.zeros(3, np.int8), "has length 3, expected 2, one per pass"),
        ("train/policy_propensity", np.ones(4), "has length 4, expected 5, one per document"),
        ("vali/sessions_per_query", np.ones(3, np.int64), "has length 3, expected 2, one per query"),
        ("vali/rows/rank", np.ones(3, np.int64), "has length 3, expected 4, as vali/rows/session"),
        ("train/query", np.zeros(3), "holds float64, expected integers"),
        ("train/propensity", np.ones(3, np.int64), "holds int64, expected floats"),
        ("train/presented_rank", np.ones(5, np.int32), r"has shape \(5,\), expected 2-dimensional"),
        ("train/n_passes", np.array([2]), r"has shape \(1,\), expected a scalar"),
    ],
)
def test_a_bad_array_is_named_with_what_was_expected(key, value, problem):
    arrays = ClicksArtifact(train=_simulated(), vali=_imported()).arrays()
    arrays[key] = value
    with pytest.raises(ValueError, match=f"^clicks artifact k: {re.escape(key)} {problem}$"):
        ClicksArtifact.from_arrays(arrays, where="clicks artifact k")


def test_a_stored_artifact_is_named_by_its_key():
    class Stored:
        key = "abc123"
        arrays = {
            k: v for k, v in ClicksArtifact(train=_simulated(), vali=_simulated()).arrays().items() if k != "vali/query"
        }

    with pytest.raises(ValueError, match="^clicks artifact abc123: missing vali/query;"):
        ClicksArtifact.of(Stored())


def test_what_each_form_gives():
    aggregated = _aggregated()
    assert aggregated.aggregated is not None
    expanded = aggregated.click_log()
    expected = aggregated.aggregated.click_log(2)
    np.testing.assert_array_equal(expanded.doc, expected.doc)
    assert len(expanded) == 2 and expanded.n_queries == 2
    with pytest.raises(ValueError, match=re.escape(f"the vali log {CHUNKED}")):
        aggregated.logged_rows("vali")
    with pytest.raises(ValueError, match="the train log was simulated"):
        _simulated().logged_rows("train")
    assert _imported().logged_rows("train").click.tolist() == [1, 0, 0, 1]
    clicked = _rows()
    clicked_only = SplitClicks(log=_log(2), rows=LoggedRows(**{**clicked.arrays(), "click": np.ones(4, np.int64)}))
    assert clicked_only.clicked_only and not _imported().clicked_only and not _simulated().clicked_only
    np.testing.assert_array_equal(_simulated().logged_propensity, [1.0, 1 / 3, 0.5])


def test_a_split_holds_one_log():
    with pytest.raises(ValueError, match="exactly one"):
        SplitClicks()
    with pytest.raises(ValueError, match="exactly one"):
        SplitClicks(log=_log(), aggregated=_aggregated().aggregated, n_queries=2)
    with pytest.raises(ValueError, match="need the split's n_queries"):
        SplitClicks(aggregated=_aggregated().aggregated)
    with pytest.raises(ValueError, match="differs from the log's 2"):
        SplitClicks(log=_log(), n_queries=3)
    with pytest.raises(ValueError, match="not 'test'"):
        ClicksArtifact(train=_simulated(), vali=_simulated()).split("test")
