"""Tests that kill the survivors of bench/mutation.py on cltr/core/clicks.py (each names the
mutant it kills); expected values are hand-computed or a brute-force count."""

import dataclasses
from collections import Counter

import numpy as np
import pytest

from cltr.core.clicks import (
    ClickLog,
    Clicks,
    Displayed,
    Impressions,
    aggregate_impressions,
    draw_sessions,
    effective_sample_size,
    presented_impressions,
    simulate_clicks,
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


def test_clicks_hold_int64_indices_and_float_costs_and_are_frozen():
    # kills the removed `object.__setattr__(self, "query"/"doc"/"cost", np.asarray(...))`
    # (lists kept as lists), `cost is not None` -> `is None` (no cost stays None, not NaN) and
    # `@dataclass(frozen=True)` -> False on Clicks
    clicks = Clicks([0, 1], [2, 3], [1, 4])
    assert clicks.query.dtype == np.int64 and clicks.doc.dtype == np.int64 and clicks.cost.dtype == np.float64
    assert Clicks([0], [1]).cost is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        clicks.cost = None


def test_clicks_from_propensity_cost_one_over_q_and_refuse_bad_propensities():
    # kills `1.0 / propensity` -> `2.0 /` and `* propensity`
    np.testing.assert_array_equal(Clicks.from_propensity([0, 1], [2, 3], [0.5, 0.25]).cost, [2.0, 4.0])
    # kills `propensity.shape != query.shape` -> `==` and its removed raise
    with pytest.raises(ValueError, match=r"one entry per example, shape \(2,\), got \(3,\)"):
        Clicks.from_propensity([0, 1], [2, 3], [1.0, 1.0, 1.0])
    # a propensity of 1 (kills `> 0` -> `> 1`) and one just above 0 are fine; 0, inf and NaN
    # are not (kills `> 0` -> `>= 0`, `&` -> `|`, the removed raise); the first bad one is
    # named (kills `[0]` -> `[1]`, which names the second, or fails to index with one)
    assert len(Clicks.from_propensity([0, 0], [0, 1], [1.0, 1e-300])) == 2
    for bad, shown in [(0.0, "0.0"), (np.inf, "inf"), (np.nan, "nan")]:
        # the value as a number reads, not numpy's repr (np.float64(0.0))
        with pytest.raises(ValueError, match=f"example 1: propensity must be finite and > 0, got {shown}$"):
            Clicks.from_propensity([0, 0, 0], [0, 1, 2], [0.5, bad, 0.0])
    # (`~` dropped refuses every good propensity)
    with pytest.raises(ValueError, match="example 0"):
        Clicks.from_propensity([0], [0], [-1.0])


def test_take_keeps_or_leaves_out_the_cost():
    # kills `None if self.cost is None` -> `is not None`
    clicks = Clicks([0, 1, 2], [3, 4, 5], [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(clicks.take(np.array([2, 0])).cost, [3.0, 1.0])
    assert Clicks([0, 1], [3, 4]).take(slice(1, None)).cost is None


def test_click_log_sessions_and_refusals():
    log = _log()
    with pytest.raises(dataclasses.FrozenInstanceError):  # kills frozen=True -> False on ClickLog
        log.n_passes = 1
    # every query once a pass (kills `sessions_per_query is None` -> `is not None`)
    np.testing.assert_array_equal(log.query_sessions, [2, 2])
    # pass * n_queries + query, by hand (kills `+` -> `-` and `*` -> `/`)
    np.testing.assert_array_equal(log.session, [0, 1, 2])
    imported = dataclasses.replace(log, sessions_per_query=np.array([2, 1]))
    np.testing.assert_array_equal(imported.query_sessions, [2, 1])
    # the sessions per query survive the round trip (kills `is not None` -> `is` in arrays())
    np.testing.assert_array_equal(ClickLog.from_arrays(imported.arrays()).sessions_per_query, [2, 1])
    # a weighted log cannot be cut into passes or told other propensities (kills both removed raises)
    weighted = _log(weight=np.ones(3))
    with pytest.raises(ValueError, match="take the first passes before the correction"):
        weighted.first_passes(1)
    with pytest.raises(ValueError, match="change the propensities before the correction"):
        weighted.with_propensity(np.ones(3))
    # tau = 1 clips every propensity to 1 (kills `tau <= 1` -> `< 1`); tau above 1 is refused
    # (kills `<= 1` -> `<= 2`)
    np.testing.assert_array_equal(log.clipped(1.0).propensity, [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match=r"must lie in \(0, 1\], found 1.5"):
        log.clipped(1.5)


def test_rankers_of_an_impression_table():
    # rankers 0 and 2 used: three rankers; none for an empty table (kills `max() + 1` -> `- 1`
    # / `+ 2` and `else 0` -> `else 1`)
    def table(ranker):
        ranker = np.asarray(ranker, dtype=np.int64)
        return Impressions(ranker, ranker, ranker, ranker, ranker, ranker)

    assert table([0, 2]).n_rankers == 3 and table([]).n_rankers == 0


def test_no_rows_aggregate_to_an_empty_table():
    # kills `np.zeros(0, ...)` -> `np.zeros(1, ...)` in aggregate_impressions' empty table
    table = aggregate_impressions([], [], [], [], [])
    assert _rows(table) == [] and len(table.impressions) == 0


def test_a_click_of_probability_p_happens_exactly_below_p():
    # a uniform u in [0, 1) is below p with probability p exactly; `u <= p` adds the chance
    # that u equals p. Kills `rng.random(...) < threshold` -> `<=`: p is set to the first
    # uniform the seeded generator draws, which then must not click
    u = np.random.default_rng(0).random()
    log = simulate_clicks(
        np.array([1]), np.array([u]), np.ones(1), np.array([0, 1]), passes=1, rng=np.random.default_rng(0)
    )
    assert len(log) == 0
    assert (
        len(
            simulate_clicks(
                np.array([1]),
                np.array([np.nextafter(u, 1)]),
                np.ones(1),
                np.array([0, 1]),
                passes=1,
                rng=np.random.default_rng(0),
            )
        )
        == 1
    )


def test_progress_is_heard_every_two_to_the_22_impressions_by_default():
    # the default chunk bound is 1 << 22 impressions (32 MiB of uniforms): with one clickable
    # document, 2^22 + 1 passes take two chunks, and progress hears both (kills `1 << 22` ->
    # `2 << 22` / `1 << 23`, which draw them at once and report once); ~0.1 s
    heard = []
    log = simulate_clicks(
        np.array([1]),
        np.array([1e-12]),
        np.ones(1),
        np.array([0, 1]),
        passes=(1 << 22) + 1,
        rng=np.random.default_rng(0),
        progress=heard.append,
    )
    assert heard == [1 << 22, (1 << 22) + 1] and log.n_passes == (1 << 22) + 1


def test_documents_that_cannot_be_clicked_draw_nothing():
    # only the one document of click probability > 0 draws a uniform per session, so a bound
    # of 2 impressions holds 2 passes (kills `click_probability > 0` -> `>= 0`, under which the
    # two unclickable documents draw too and each chunk holds one pass); they are never clicked
    heard = []
    log = simulate_clicks(
        np.array([1, 2, 3]),
        np.array([0.0, 0.5, 0.0]),
        np.ones(3),
        np.array([0, 3]),
        passes=4,
        rng=np.random.default_rng(0),
        chunk_impressions=2,
        progress=heard.append,
    )
    assert heard == [2, 4] and set(log.doc.tolist()) <= {1}
