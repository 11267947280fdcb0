"""Tests that kill the survivors of bench/mutation.py on cltr/core/click_models_fit.py (each
names the mutant it kills); the session grid is hand-built."""

import dataclasses
import warnings

import numpy as np
import pytest

from cltr.core.click_models_fit import (
    ClickModel,
    click_probabilities,
    evaluate_click_model,
    fit_click_model,
    independent_click_scores,
    session_grid,
    simulate_clicks_of,
)

# two sessions (labels 5 and 7): session 5 shows rank 1, 2 and 4 (a gap at 3), session 7 ranks 1, 2
ROWS = {
    "session": [5, 5, 5, 7, 7],
    "query": [1, 1, 1, 2, 2],
    "doc": [10, 11, 12, 10, 13],
    "rank": [1, 2, 4, 1, 2],
    "click": [1, 0, 1, 0, 1],
}


def _grid(**changes):
    columns = {name: np.array(values) for name, values in ROWS.items()}
    columns.update({name: np.asarray(value) for name, value in changes.items()})
    return session_grid(*columns.values())


def test_session_grid_by_hand():
    # pairs sorted by (query, doc): (1, 10) (1, 11) (1, 12) (2, 10) (2, 13) -> 0..4; -1 marks an
    # empty cell. Kills the fill -1 -> 1 / -2 and the clicks' column `rank - 1` -> `rank - 2`
    grid, pair_query, pair_doc = _grid()
    np.testing.assert_array_equal(grid.pair, [[0, 1, -1, 2], [3, 4, -1, -1]])
    np.testing.assert_array_equal(grid.click, [[1, 0, 0, 1], [0, 1, 0, 0]])
    assert grid.n_pairs == 5 and grid.max_rank == 4
    assert pair_query.tolist() == [1, 1, 1, 2, 2] and pair_doc.tolist() == [10, 11, 12, 10, 13]
    # held-out rows against a fitted model's pairs: the unknown ones get index P = 2
    held_out, _, _ = session_grid(*(np.array(v) for v in ROWS.values()), pairs=(np.array([1, 2]), np.array([11, 13])))
    np.testing.assert_array_equal(held_out.pair, [[2, 0, -1, 2], [2, 1, -1, -1]])


def test_session_grid_of_one_row():
    # kills `len(rank) == 0` -> `== 1`
    grid, _, _ = session_grid([0], [0], [3], [1], [1])
    np.testing.assert_array_equal(grid.pair, [[0]])


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"click": [1, 0, 1, 0]}, "session, query, doc, rank and click must have one length; found 5, 5, 5, 5, 4"),
        ({"rank": [1, 2, 0, 1, 2]}, "ranks must be >= 1, found 0"),
        ({"click": [1, 0, 2, 0, 1]}, "clicks must be 0 or 1"),
    ],
)
def test_session_grid_refuses_bad_rows(changes, message):
    # kills the removed raises and the message's `+` -> `-`
    with pytest.raises(ValueError, match=message):
        _grid(**changes)


def test_an_empty_log_and_an_unknown_model_are_refused():
    with pytest.raises(ValueError, match="the click log is empty"):
        session_grid([], [], [], [], [])
    grid, pair_query, pair_doc = _grid()
    with pytest.raises(ValueError, match="unknown click model 'cm'"):
        fit_click_model("cm", grid, pair_query, pair_doc)


def test_grids_and_models_are_immutable_and_say_their_depth():
    # kills `@dataclass(frozen=True)` -> False on SessionGrid and ClickModel, and in
    # ClickModel.max_rank `continuation is not None` -> `is None` and the default 0 -> 1
    grid, pair_query, pair_doc = _grid()
    with pytest.raises(dataclasses.FrozenInstanceError):
        grid.n_pairs = 0
    alpha = np.full(6, 0.5)
    dcm = ClickModel(
        name="dcm", pair_query=pair_query, pair_doc=pair_doc, attractiveness=alpha, continuation=np.full(3, 0.5)
    )
    assert dcm.max_rank == 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        dcm.name = "pbm"
    assert ClickModel(name="cascade", pair_query=pair_query, pair_doc=pair_doc, attractiveness=alpha).max_rank == 0
    dbn = ClickModel(
        name="dbn",
        pair_query=pair_query,
        pair_doc=pair_doc,
        attractiveness=alpha,
        continuation=np.full(1, 0.9),
        info={"max_rank": 4},
    )
    assert dbn.max_rank == 4


@pytest.mark.parametrize("name", ["cascade", "dcm", "dbn"])
def test_an_empty_cell_is_passed_over(name):
    # the module's promise: an empty cell (a rank gap) is never clicked and passed over, so a
    # session with a gap at rank 3 has the click probabilities of the same session with the
    # gap closed (rank-independent continuation here). Kills the empty cells' kappa_skip and
    # kappa_click 1.0 -> 2.0
    grid, pair_query, pair_doc = _grid(click=[0, 1, 1, 0, 1])
    closed, _, _ = _grid(click=[0, 1, 1, 0, 1], rank=[1, 2, 3, 1, 2])
    alpha = np.array([0.3, 0.6, 0.5, 0.4, 0.7, 0.5])
    sigma = np.array([0.2, 0.5, 0.4, 0.3, 0.6, 0.4])
    extra = {
        "cascade": {},
        "dcm": {"continuation": np.full(4, 0.6)},
        "dbn": {"continuation": np.array([0.8]), "satisfaction": sigma},
    }[name]
    model = ClickModel(
        name=name, pair_query=pair_query, pair_doc=pair_doc, attractiveness=alpha, info={"max_rank": 4}, **extra
    )
    shown = [(0, 0), (0, 1), (0, 3), (1, 0), (1, 1)]
    same = [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)]
    # the closed grid is one rank shallower: DCM's lambda per rank cut to it (all 0.6)
    shallower = dataclasses.replace(model, continuation=np.full(3, 0.6)) if name == "dcm" else model
    for with_gap, without in zip(click_probabilities(model, grid), click_probabilities(shallower, closed), strict=True):
        np.testing.assert_allclose([with_gap[c] for c in shown], [without[c] for c in same], rtol=1e-12)


def test_cascade_fit_by_hand():
    # the cascade model observes each session down to its first click: session 5 (clicks 1 0 _ 1)
    # only rank 1 (pair 0, clicked), session 7 (clicks 0 1) ranks 1 and 2 (pair 3 skipped, pair
    # 4 clicked); pairs 1 and 2 keep the prior 0.5, estimates are clipped to [1e-6, 1 - 1e-6],
    # and the unseen slot is the mean of the observed pairs. Kills `argmax + 1` -> `+ 2`, the
    # clip's `1.0 - floor` -> `1.0 + floor` / `2.0 - floor`, `bottom > 0` -> `>= 0` / `> 1`
    # (pairs 0, 3, 4 have one observation each), `seen` with `>=`, `value[:-1]` -> `[:1]` /
    # `[:-2]` and the info's iterations 1 -> 2 and converged True -> False
    grid, pair_query, pair_doc = _grid()
    model = fit_click_model("cascade", grid, pair_query, pair_doc)
    high, low = 1 - 1e-6, 1e-6
    np.testing.assert_allclose(model.attractiveness, [high, 0.5, 0.5, low, high, (2 * high + low) / 3], rtol=1e-12)
    assert model.info["iterations"] == 1 and model.info["converged"] is True


def test_em_stopped_by_its_cap_is_not_converged():
    # kills `converged = False` -> True: one EM iteration cannot meet the tolerance
    grid, pair_query, pair_doc = _grid()
    model = fit_click_model("pbm", grid, pair_query, pair_doc, iterations=1)
    assert model.info["converged"] is False


HIGH = 1.0 - 1e-6  # the clip's ceiling: a parameter estimated as 1


def test_pbm_and_ubm_estimate_a_cell_shown_once_and_keep_the_start_of_one_never_shown():
    # rank 4 is shown once (session 5, clicked: examined), rank 3 never. Kills in the PBM
    # update `bottom > 0` -> `>= 0` (rank 3 set to the floor), `> 1` and `np.maximum(bottom, 1)`
    # -> `2` (rank 4 kept at 0.5 or halved); in the UBM update `np.maximum(bottom, 1)` -> `2`
    # (the cell rank 4 after a click at 1, shown once)
    grid, pair_query, pair_doc = _grid()
    pbm = fit_click_model("pbm", grid, pair_query, pair_doc)
    np.testing.assert_allclose(pbm.examination, [HIGH, HIGH, 0.5, HIGH], rtol=1e-12)
    ubm = fit_click_model("ubm", grid, pair_query, pair_doc, iterations=3)
    assert ubm.examination[3, 1] == pytest.approx(HIGH, rel=1e-12)
    np.testing.assert_array_equal(ubm.examination[2], 0.5)


def test_dcm_continuation_where_the_clicks_tell_and_where_they_do_not():
    # lambda_r is the share of clicks at r after which the user went on. Rank 1's click
    # (session 5) is followed by more clicks: 1/1, clipped. Rank 2's click (session 7) is the
    # session's last with nothing shown below it, rank 4's the last rank: nothing is learnt
    # about going on, and they keep the start 0.5, as rank 3 (never clicked) does. Kills the
    # start `np.full(k, 0.5)` -> `1.5`, `last < k` -> `<=` (a click at the deepest rank counted
    # as going on), and in the update `bottom > 0` -> `>= 0`, `> 1`, `np.maximum(bottom, 1)` -> `2`
    grid, pair_query, pair_doc = _grid()
    dcm = fit_click_model("dcm", grid, pair_query, pair_doc)
    np.testing.assert_allclose(dcm.continuation, [HIGH, 0.5, 0.5, 0.5], rtol=1e-12)


def test_one_dbn_em_step_by_hand():
    # session 0 shows documents 0, 1, 2 at ranks 1, 2, 4 (a gap at 3), clicks 1 0 _ 1; session 1
    # documents 3, 4 at ranks 1, 2, clicks 1 0. From the start alpha = sigma = 1/2, gamma = 0.9:
    # session 1's last click is at rank 1: kappa_click = gamma (1 - sigma) = 0.45, B_2 =
    # (1 - 1/2)(0.1 + 0.9 * 1) = 1/2 (ranks 3, 4 empty: passed over), tail = 1 - 0.45 + 0.45 / 2
    # = 0.775; P(E_2) = 0.45 * 0.5 / 0.775 = 9/31, P(S_1) = 0.5 / 0.775 = 20/31. Session 0's
    # last click is at the last rank: tail 1, P(S_4) = 1/2, ranks 1, 2 examined. gamma's
    # chances: unsatisfied examinations with a shown cell below, session 0 rank 1 (1) and
    # session 1 rank 1 (1 - 20/31); went on: 1 + 9/31 (rank 2 to the gap is no chance, the gap
    # to rank 4 none either): gamma = (40/31) / (42/31) = 20/21; sigma of document 3 = 20/31.
    # Kills the start's gamma 0.9 -> 1.9 and sigma 0.5 -> 1.5, alpha 0.0 -> 1.0 in the empty
    # cells, `examined = posterior * shown` -> `/` (inf in the empty cells), and the removed
    # `went *= shown * has_next` (which counts the gap to rank 4)
    grid, pair_query, pair_doc = session_grid(
        [0, 0, 0, 1, 1], [0, 0, 0, 1, 1], [0, 1, 2, 3, 4], [1, 2, 4, 1, 2], [1, 0, 1, 1, 0]
    )
    dbn = fit_click_model("dbn", grid, pair_query, pair_doc, iterations=1)
    assert dbn.continuation[0] == pytest.approx(20 / 21, rel=1e-12)
    np.testing.assert_allclose(dbn.satisfaction[:5], [1e-6, 0.5, 0.5, 20 / 31, 0.5], rtol=1e-12)


def test_em_runs_to_its_cap_of_200_unless_it_converges():
    # tolerance 0: the log-likelihood never rises by less than 0, so EM runs the default 200
    # steps (kills `iterations: int = 200` -> `201`); with the default tolerance PBM converges
    # here in a few steps and says so (kills `converged = True` -> `False`)
    grid, pair_query, pair_doc = _grid()
    capped = fit_click_model("dcm", grid, pair_query, pair_doc, tolerance=0.0)
    assert capped.info["iterations"] == 200 and capped.info["converged"] is False
    pbm = fit_click_model("pbm", grid, pair_query, pair_doc)
    assert pbm.info["converged"] is True and pbm.info["iterations"] < 200


@pytest.mark.parametrize("name", ["pbm", "ubm", "dcm", "dbn"])
def test_empty_cells_have_click_probability_zero(name):
    # the documented 0 in empty cells (kills `conditional * shown` / `unconditional * shown` ->
    # `/ shown` in the PBM, UBM and cascade family's returns, which give NaN there)
    grid, pair_query, pair_doc = _grid()
    model = fit_click_model(name, grid, pair_query, pair_doc, iterations=2)
    for probability in click_probabilities(model, grid):
        assert np.all(np.isfinite(probability))
        np.testing.assert_array_equal(probability[~grid.shown], 0.0)
        assert np.all(probability[grid.shown] > 0)


def test_click_probabilities_refuse_an_unknown_model_and_a_deeper_grid():
    # kills the removed `_check_name(model.name)` and the removed raise for a grid deeper than
    # the model's ranks
    grid, pair_query, pair_doc = _grid()
    alpha = np.full(6, 0.5)
    with pytest.raises(ValueError, match="unknown click model 'cm'"):
        click_probabilities(ClickModel("cm", pair_query, pair_doc, alpha, info={"max_rank": 4}), grid)
    shallow = ClickModel("pbm", pair_query, pair_doc, alpha, examination=np.array([1.0, 0.5]))
    with pytest.raises(ValueError, match=r"fitted on ranks 1..2; the sessions reach rank 4"):
        click_probabilities(shallow, grid)


def test_independent_click_scores_by_hand():
    # sessions 3 (ranks 1, 2: a click of probability 0.8, a skip of 0.4) and 8 (rank 1: a skip
    # of 0.5; a rank-3 row beyond max_rank is left out): log-likelihoods log(0.8 * 0.6) and
    # log 0.5; perplexity at rank 1 2^-((log2 0.8 + log2 0.5) / 2), at rank 2 1 / 0.6. Kills
    # `click > 0` -> `> 1` (a click scored as a skip)
    scores = independent_click_scores(
        np.array([0.8, 0.4, 0.5, 0.1]), [3, 3, 8, 8], [1, 2, 1, 3], [1, 0, 0, 1], max_rank=2
    )
    assert scores.sessions == 2
    assert scores.log_likelihood == pytest.approx((np.log(0.8 * 0.6) + np.log(0.5)) / 2)
    rank1, rank2 = 2 ** -((np.log2(0.8) + np.log2(0.5)) / 2), 1 / 0.6
    np.testing.assert_allclose(scores.perplexity_by_rank, [rank1, rank2])
    assert scores.perplexity == pytest.approx((rank1 + rank2) / 2)


@pytest.mark.parametrize("name", ["pbm", "ubm", "cascade"])
def test_a_simulated_click_of_probability_p_happens_exactly_below_p(name):
    # a uniform u in [0, 1) is below p with probability p exactly; `u <= p` adds the chance
    # that u equals p. The click probability of the one cell is set to the first uniform the
    # seeded generator draws, which then must not click (kills `draw < examination * alpha` ->
    # `<=` for PBM and UBM, `draw < alpha` -> `<=` for the cascade family)
    u = np.random.default_rng(0).random()
    grid, pair_query, pair_doc = session_grid([0], [0], [0], [1], [0])
    extra = {"pbm": {"examination": np.ones(1)}, "ubm": {"examination": np.ones((1, 1))}}.get(name, {})
    model = ClickModel(name, pair_query, pair_doc, np.array([u, u]), info={"max_rank": 1}, **extra)
    assert simulate_clicks_of(model, grid, np.random.default_rng(0)).click.tolist() == [[0]]
    above = dataclasses.replace(model, attractiveness=np.full(2, np.nextafter(u, 1.0)))
    assert simulate_clicks_of(above, grid, np.random.default_rng(0)).click.tolist() == [[1]]


def test_one_pbm_em_step_by_hand():
    # sessions A (ranks 1, 2; clicks 1 0) and B (rank 1 only; no click). From gamma = alpha =
    # 1/2 a skipped cell was examined with P = gamma (1 - alpha) / (1 - gamma alpha) = 1/3, a
    # clicked one surely: gamma_1 = (1 + 1/3) / 2, gamma_2 = 1/3 (B's empty rank 2 counts
    # nothing). Kills `np.sum(examined * shown)` -> `/ shown` (inf from the empty cell)
    grid, pair_query, pair_doc = session_grid([0, 0, 1], [0, 0, 1], [0, 1, 2], [1, 2, 1], [1, 0, 0])
    pbm = fit_click_model("pbm", grid, pair_query, pair_doc, iterations=1)
    np.testing.assert_allclose(pbm.examination, [2 / 3, 1 / 3], rtol=1e-12)


def test_em_stops_at_its_second_step_when_the_first_reached_the_fixed_point():
    # on these sessions DCM's first step lands on its fixed point (clicked pairs at the
    # ceiling, skipped ones at the floor, the continuations of the test above), so the second
    # step's log-likelihood is the first's and EM stops there (kills `step > 0` -> `step > 1`)
    grid, pair_query, pair_doc = _grid()
    dcm = fit_click_model("dcm", grid, pair_query, pair_doc)
    assert dcm.info["iterations"] == 2 and dcm.info["converged"] is True
    assert dcm.info["log_likelihood"][1] == dcm.info["log_likelihood"][0]


def test_evaluate_pbm_by_hand():
    # PBM with gamma = (1, 1/2, 1/2, 1/2) on the two sessions: session 5 shows pairs 0, 1, -, 2
    # (alpha 0.8, 0.6, 0.4; clicks 1 0 _ 1), session 7 pairs 3, 4 (alpha 0.5, 0.2; clicks 0 1).
    # P(C_r = c_r): 0.8, 0.7, 0.2 and 0.5, 0.1. Rank 3 is shown by no session (nan; kills
    # `count > 0` -> `>= 0`), rank 4 by one (kills `> 1` and `np.maximum(count, 1)` -> `2`), and
    # session 7's empty ranks count nothing (kills `log2(p) * shown` -> `/ shown`). Scores are
    # frozen (kills `@dataclass(frozen=True)` -> False on ClickModelScores)
    grid, pair_query, pair_doc = _grid()
    model = ClickModel(
        "pbm",
        pair_query,
        pair_doc,
        np.array([0.8, 0.6, 0.4, 0.5, 0.2, 0.5]),
        examination=np.array([1.0, 0.5, 0.5, 0.5]),
    )
    scores = evaluate_click_model(model, grid)
    by_rank = [2 ** -((np.log2(0.8) + np.log2(0.5)) / 2), 2 ** -((np.log2(0.7) + np.log2(0.1)) / 2), np.nan, 5.0]
    np.testing.assert_allclose(scores.perplexity_by_rank, by_rank)
    assert scores.perplexity == pytest.approx((by_rank[0] + by_rank[1] + 5.0) / 3)
    assert scores.log_likelihood == pytest.approx((np.log(0.8 * 0.7 * 0.2) + np.log(0.5 * 0.1)) / 2)
    assert scores.sessions == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        scores.sessions = 3


def test_independent_click_scores_of_a_rank_not_shown_and_of_no_rows():
    # rank 2 of max_rank 3 is shown by no row: nan (kills `count > 0` -> `>= 0`, which gives 1);
    # rows all beyond max_rank are no session (kills `else 0` -> `else 1`)
    scores = independent_click_scores(np.array([0.8, 0.5]), [0, 0], [1, 3], [1, 0], max_rank=3)
    np.testing.assert_allclose(scores.perplexity_by_rank, [1 / 0.8, np.nan, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the means of no session and no rank
        none = independent_click_scores(np.array([0.5]), [0], [3], [1], max_rank=2)
    assert none.sessions == 0


def test_a_simulated_examination_of_probability_p_happens_exactly_below_p():
    # as above for going on to rank 2 after a click at rank 1 (DCM's lambda_1): the second
    # uniform of the seeded generator (cell (1, 1)'s draw[.., 1]) is set as lambda_1; rank 1
    # is always clicked (alpha 1) and rank 2 would be (alpha 1) if examined. Kills the
    # examination's `draw[:, r, 1] < ...` -> `<=`
    u = np.random.default_rng(0).random(2)[1]
    grid, pair_query, pair_doc = session_grid([0, 0], [0, 0], [0, 1], [1, 2], [0, 0])
    model = ClickModel("dcm", pair_query, pair_doc, np.ones(3), continuation=np.array([u, 0.5]))
    assert simulate_clicks_of(model, grid, np.random.default_rng(0)).click.tolist() == [[1, 0]]
    above = dataclasses.replace(model, continuation=np.array([np.nextafter(u, 1.0), 0.5]))
    assert simulate_clicks_of(above, grid, np.random.default_rng(0)).click.tolist() == [[1, 1]]
