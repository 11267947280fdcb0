"""Tests that kill the survivors of bench/mutation.py on cltr/core/click_models_fit.py (each
names the mutant it kills); the session grid is hand-built."""

import dataclasses

import numpy as np
import pytest

from cltr.core.click_models_fit import ClickModel, click_probabilities, fit_click_model, session_grid

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
