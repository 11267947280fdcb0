"""Tests that kill the survivors of bench/mutation.py on cltr/core/clicks.py (each names the
mutant it kills); expected values are hand-computed or a brute-force count."""

import dataclasses
from collections import Counter

import numpy as np
import pytest

from cltr.core.clicks import (
    ClickLog,
    Displayed,
    Impressions,
    aggregate_impressions,
    draw_sessions,
    effective_sample_size,
    presented_impressions,
)


def _log(weight=None):
    # two passes of two queries: clicks on documents 0 (query 0, rank 1) and 3 (query 1, rank 2)
    return ClickLog(
        query=np.array([0, 1, 0]),
        doc=np.array([0, 3, 0]),
        rank=np.array([1, 2, 1]),
        propensity=np.array([1.0, 0.25, 1.0]),
        pass_index=np.array([0, 0, 1]),
        n_passes=2,
        n_queries=2,
        weight=weight,
    )


def test_effective_sample_size_by_hand():
    # (1 + 2)^2 / (1 + 4) = 9/5; kills `not np.isfinite` -> `np.isfinite` (raises on finite
    # weights) and the ratio's `/ square` -> `* square`
    assert effective_sample_size([1.0, 2.0]) == pytest.approx(1.8)
    # weights below 1 count as any (kills `largest > 0` -> `largest > 1`)
    assert effective_sample_size([0.5, 0.5]) == pytest.approx(2.0)
    # no weight, or weights all 0: no sample (kills `initial=0.0` -> `1.0`, which gives 0/0)
    assert effective_sample_size([]) == 0.0 and effective_sample_size([0.0, 0.0]) == 0.0
    # one huge weight: about one example, not NaN (kills `weights / largest` -> `* largest`,
    # which overflows)
    assert effective_sample_size([1.0] * 9 + [1e300]) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="must be finite, found inf"):  # kills the removed raise
        effective_sample_size([1.0, np.inf])


def test_cost_clipping_and_passes_of_a_log():
    log = _log()
    np.testing.assert_array_equal(log.cost, [1.0, 4.0, 1.0])  # 1 / q (kills 1.0 -> 2.0, is -> is not)
    np.testing.assert_array_equal(_log(weight=np.array([2.0, 3.0, 5.0])).cost, [2.0, 3.0, 5.0])
    np.testing.assert_array_equal(log.clipped(0.5).propensity, [1.0, 0.5, 1.0])  # kills `is not` -> `is`
    with pytest.raises(ValueError, match=r"clipping threshold must lie in \(0, 1\], found 0"):
        log.clipped(0.0)  # kills the removed raise
    with pytest.raises(ValueError, match="without --clip"):
        _log(weight=np.ones(3)).clipped(0.5)
    first = log.first_passes(1)  # kills `1 <= passes` -> `1 < passes`
    assert len(first) == 2 and first.n_passes == 1
    assert len(log.first_passes(2)) == 3  # and `passes <= n_passes` -> `<`
    # a weighted log survives the round trip with its weights (kills `weight is None` -> `is not`)
    weighted = ClickLog.from_arrays(_log(weight=np.array([2.0, 3.0, 5.0])).arrays())
    np.testing.assert_array_equal(weighted.weight, [2.0, 3.0, 5.0])


def test_the_tables_are_frozen():
    # kills `@dataclass(frozen=True)` -> `frozen=False` on Impressions and Displayed: the stages
    # share these tables, and one that could be changed in place would change them for all
    empty = np.zeros(0, dtype=np.int64)
    with pytest.raises(dataclasses.FrozenInstanceError):
        Impressions(empty, empty, empty, empty, empty, empty).doc = empty
    with pytest.raises(dataclasses.FrozenInstanceError):
        _displayed().doc = empty


def _displayed():
    # sessions labelled 7, 3, 7, 5 in file order: renumbered 0, 1, 0, 2 by first appearance
    return Displayed.from_columns(
        session=[7, 3, 7, 5, 3],
        query=[0, 1, 0, 0, 1],
        doc=[1, 4, 0, 2, 5],
        rank=[2, 1, 1, 1, 2],
        click=[1, 0, 0, 1, 1],
        propensity=[0.5, 1.0, 1.0, 1.0, 0.5],
        ranker=[0, 1, 0, 0, 1],
    )


def test_displayed_rows_sessions_and_offsets_by_hand():
    # kills `return_index=True` -> `False` in from_columns, `session[-1]` -> `session[1]` and
    # `else 0` -> `else 1` in n_sessions, and the offsets' leading 0 -> 1
    shown = _displayed()
    np.testing.assert_array_equal(shown.session, [0, 0, 1, 1, 2])
    np.testing.assert_array_equal(shown.doc, [0, 1, 4, 5, 2])  # sorted by (session, rank)
    assert shown.n_sessions == 3
    np.testing.assert_array_equal(shown.session_offsets(), [0, 2, 4, 5])
    none = np.zeros(0, dtype=np.int64)
    empty = Displayed(none, none, none, none, none.astype(np.int8), np.zeros(0), none)
    assert empty.n_sessions == 0
    np.testing.assert_array_equal(empty.session_offsets(), [0])


def _rows(table):
    return sorted(
        zip(
            table.query.tolist(),
            table.doc.tolist(),
            table.rank.tolist(),
            table.ranker.tolist(),
            table.impressions.tolist(),
            table.clicks.tolist(),
            strict=True,
        )
    )


def test_aggregate_impressions_is_a_count_per_document_rank_and_ranker():
    # a brute-force count (Counter over the rows) on rows whose documents, ranks and rankers
    # would share a key under `ranks = rank.max() + 1` -> `- 1` (either of the two), under
    # `(doc * ranks + rank) * rankers` with a `*` -> `/`, and return_index -> False
    rng = np.random.default_rng(0)
    n = 400
    doc = rng.integers(0, 12, n)
    query = doc // 4
    rank = rng.integers(1, 5, n)
    ranker = rng.integers(0, 3, n)
    click = rng.integers(0, 2, n)
    shown, clicked = Counter(), Counter()
    for row in zip(query.tolist(), doc.tolist(), rank.tolist(), ranker.tolist(), click.tolist(), strict=True):
        shown[row[:4]] += 1
        clicked[row[:4]] += row[4]
    expected = sorted((*key, shown[key], clicked[key]) for key in shown)
    assert _rows(aggregate_impressions(query, doc, rank, ranker, click)) == expected
    # one row is a table of one row (kills `len(doc) == 0` -> `== 1`)
    assert _rows(aggregate_impressions([0], [3], [2], [1], [1])) == [(0, 3, 2, 1, 1, 1)]


def test_presented_impressions_by_hand():
    # two queries of two documents; ranker 0 shows them at ranks 1, 2 | 1, 2, ranker 1 at
    # 2, 1 | 2, 1. Passes 0, 1, 2 use rankers 1, 0, 0: ranker 1 holds one session (kills
    # `sessions > 0` -> `> 1`). Clicks: doc 1 in pass 0 (ranker 1), doc 0 and doc 3 in pass 1,
    # doc 0 in pass 2 (ranker 0). Kills the key `click_ranker * n_docs + doc` mutants.
    log = ClickLog(
        query=np.array([0, 0, 1, 0]),
        doc=np.array([1, 0, 3, 0]),
        rank=np.array([1, 1, 2, 1]),
        propensity=np.ones(4),
        pass_index=np.array([0, 1, 1, 2]),
        n_passes=3,
        n_queries=2,
    )
    # (a third ranker never used: no rows, not rows of no impressions; kills `> 0` -> `>= 0`)
    presented = np.array([[1, 2, 1, 2], [2, 1, 2, 1], [1, 2, 1, 2]])
    offsets = np.array([0, 2, 4])
    table = presented_impressions(presented, np.array([1, 0, 0]), log, offsets)
    assert _rows(table) == sorted(
        [
            (0, 0, 1, 0, 2, 2),
            (0, 1, 2, 0, 2, 0),
            (1, 2, 1, 0, 2, 0),
            (1, 3, 2, 0, 2, 1),
            (0, 0, 2, 1, 1, 0),
            (0, 1, 1, 1, 1, 1),
            (1, 2, 2, 1, 1, 0),
            (1, 3, 1, 1, 1, 0),
        ]
    )
    # a top-1 display keeps the rows at rank 1 only (kills `is None` -> `is not None` and
    # `rank <= top_k` -> `<`)
    top = presented_impressions(presented, np.array([1, 0, 0]), log, offsets, top_k=1)
    assert _rows(top) == sorted([(0, 0, 1, 0, 2, 2), (1, 2, 1, 0, 2, 0), (0, 1, 1, 1, 1, 1), (1, 3, 1, 1, 1, 0)])


def test_draw_sessions_draws_each_pass_once_in_chunks():
    # 5 passes of 3 draws each in chunks of at most 2 passes (6 impressions): chunks 2, 2, 1
    # (kills `passes - done` -> `+ done`, which draws past the last pass, and `max(1, ...)` ->
    # `max(2, ...)` where a pass alone exceeds the chunk), progress after each
    chunks, progress = [], []

    def draw(chunk):
        chunks.append(chunk)
        return np.arange(chunk), np.zeros(chunk, dtype=np.int64)  # one click per pass, on document 0

    pass_index, doc = draw_sessions(draw, passes=5, draws_per_pass=3, chunk_impressions=6, progress=progress.append)
    assert chunks == [2, 2, 1] and progress == [2, 4, 5]
    np.testing.assert_array_equal(pass_index, [0, 1, 2, 3, 4])
    chunks.clear()
    progress.clear()
    draw_sessions(draw, passes=2, draws_per_pass=10, chunk_impressions=6, progress=progress.append)
    assert chunks == [1, 1] and progress == [1, 2]
    # one draw per pass: chunks of 3 passes (kills the inner `max(1, draws_per_pass)` -> `max(2, ...)`)
    chunks.clear()
    draw_sessions(draw, passes=7, draws_per_pass=1, chunk_impressions=3)
    assert chunks == [3, 3, 1]
    # a single pass is allowed (kills `passes < 1` -> `<= 1`)
    assert draw_sessions(draw, passes=1, draws_per_pass=3, chunk_impressions=6)[0].tolist() == [0]
