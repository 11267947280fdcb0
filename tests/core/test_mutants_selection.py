"""Tests that kill the survivors of bench/mutation.py on cltr/core/selection.py (each names
the mutant it kills); expected values are hand-computed."""

import math
import time

import numpy as np
import pytest

from cltr.core.selection import (
    ALIKE_SHARE,
    ESS_FRACTION,
    alike_share,
    edges_of_grid,
    ess_fraction,
    guard_warnings,
    paired_estimate,
    parse_grid,
    select_on_validation,
    validation_clip,
    varied_queries,
)


def test_ess_fraction_by_hand():
    # kills `... if square > 0 else 0.0` -> `else 1.0`: weights that are all zero carry no
    # information, an effective sample of none
    assert ess_fraction(np.zeros(3)) == 0.0
    assert ess_fraction(np.ones(4)) == 1.0
    assert ess_fraction(np.array([1.0, 0.0, 0.0, 0.0])) == 0.25  # (1)^2 / 1 / 4
    assert ess_fraction(np.array([1.0, -1.0])) == 1.0  # |w| for signed weights


def test_ess_fraction_of_weights_whose_squares_overflow_or_underflow():
    # 1/q of propensities below 1e-154: w^2 overflowed to inf and the fraction read NaN or 0
    for scale in (1e200, 1e-200, 1.0):
        assert ess_fraction(scale * np.array([1.0, 1.0, 2.0])) == pytest.approx(16 / 6 / 3)
        assert ess_fraction(scale * np.ones(5)) == pytest.approx(1.0)


def test_a_single_document_query_does_not_vary_the_query_before_it():
    # kills `filled = np.flatnonzero(sizes > 0)` -> `sizes > 1`: the per-query spreads are
    # segment reductions from each query's start, so leaving the one-document query 1 out
    # of the starts would fold its row into query 0, whose two rows are equal
    # (and `sizes > 0` -> `sizes >= 0`: an empty last query would start past the last row)
    X = np.array([[1.0, 5.0], [1.0, 5.0], [2.0, 5.0], [0.0, 0.0], [0.0, 1.0]])
    offsets = np.array([0, 2, 3, 3, 5, 5])  # queries 2 and 4 are empty
    np.testing.assert_array_equal(varied_queries(X, offsets), [False, False, False, True, False])


def test_paired_estimate_of_weights_summing_to_zero_is_nan():
    # kills `not total > 0` -> `not total >= 0`: signed weights 1 and -1 leave nothing to
    # normalise by; the mutant divides by 0
    out = paired_estimate(np.array([1.0, 0.0]), np.array([0.0, 0.0]), np.array([1.0, -1.0]), np.array([0, 1]))
    assert all(math.isnan(v) for v in out.values())
    # (and `total > 0` -> `total > 1`): weights summing to 1/2 are as good as any
    out = paired_estimate(np.array([1.0, 0.0]), np.array([0.0, 0.0]), np.array([0.25, 0.25]), np.array([0, 1]))
    assert out["model"] == 0.5 and out["difference"] == 0.5
    # and a hand-computed pair: weights 1, 3 in two groups; a = (1, 0), b = (0, 0)
    out = paired_estimate(np.array([1.0, 0.0]), np.array([0.0, 0.0]), np.array([1.0, 3.0]), np.array([0, 1]))
    assert out["model"] == 0.25 and out["logging"] == 0.0 and out["difference"] == 0.25
    # residuals w (a - b - D): 1 * 0.75 and 3 * -0.25, one per group: sqrt(0.5625 * 2) / 4
    assert math.isclose(out["standard_error"], math.sqrt(2 * 0.5625) / 4)


def test_grid_edges_skip_rows_without_a_number_on_the_axis():
    # kills the first `and` -> `or` of the filter of tried values: a row whose TAU is None
    # (the unclipped candidate) or a word is not a value tried on the TAU axis
    table = [
        {"C": 0.1, "tau": None},
        {"C": 1.0, "tau": "none"},
        {"C": 10.0, "tau": 0.1},
        {"C": 10.0, "tau": 0.3},
        {"C": 10.0, "tau": 0.03},
        {"C": 1.0, "tau": True},
    ]
    edges = edges_of_grid(table, {"C": 10.0, "tau": 0.3}, axes=("C", "tau"))
    assert edges == [
        {"axis": "C", "value": 10.0, "side": "high", "grid": [0.1, 1.0, 10.0]},
        {"axis": "tau", "value": 0.3, "side": "high", "grid": [0.03, 0.1, 0.3]},
    ]


def test_a_grid_holding_zero_is_refused():
    # kills `v > 0` -> `v >= 0`: C = 0 (or TAU = 0) is no model
    with pytest.raises(ValueError, match="positive finite"):
        parse_grid("0,1,10")
    assert parse_grid("10, 0.5") == [0.5, 10.0]


# 99 clicks at propensity 1 and one at 1e-3: clipped at TAU_v its weights are 99 ones and
# 1/TAU_v, of ESS fraction (99 + 1/TAU_v)^2 / (100 (99 + 1/TAU_v^2)): 0.039 at 0.01, 0.145 at
# 0.03, 0.597 at 0.1, 0.951 at 0.3 (0.001 is not above the smallest propensity)
ONE_RARE_CLICK = np.array([1.0] * 99 + [1e-3])


@pytest.mark.parametrize("fraction, tau", [(0.5, 0.1), (0.9, 0.3), (0.99, 0.3)])
def test_validation_clip_is_the_smallest_threshold_of_the_list_that_reaches_the_fraction(fraction, tau):
    # kills VALIDATION_CLIPS' 0.1 -> 1.1 and 0.3 -> 1.3 (a threshold above every propensity
    # clips all weights alike, ESS 1) and, where none reaches 0.99, the largest is returned
    # (kills `VALIDATION_CLIPS[-1]` -> `[1]`, `[-2]`)
    assert validation_clip(ONE_RARE_CLICK, fraction=fraction) == tau


def test_validation_clip_at_exactly_the_fraction():
    # weights 1, 2: ESS (3^2 / 5) / 2 = 0.9 exactly, enough unclipped (kills the unclipped
    # test's `>=` -> `>`, which clips at the largest threshold)
    assert ess_fraction(np.array([1.0, 2.0])) == 0.9
    assert validation_clip(np.array([1.0, 0.5]), fraction=0.9) is None
    # eight ones and one 1e-4: clipped at 0.1 the weights are eight ones and a ten, ESS
    # 18^2 / 108 / 9 = 1/3 exactly, and every smaller threshold gives less (kills the clipped
    # test's `>=` -> `>`, which goes on to 0.3)
    assert ess_fraction(np.array([1.0] * 8 + [10.0])) == 1 / 3
    assert validation_clip(np.array([1.0] * 8 + [1e-4]), fraction=1 / 3) == 0.1


def test_validation_clip_of_weights_whose_squares_still_fit_a_float():
    # weights 1e154 and 1: their squares fit (1e308), ESS 0.5: unclipped is enough for 0.4
    # (kills `1.0 / propensity` -> `2.0 /`: squares of 2e154 overflow, the ESS is NaN and the
    # weights are clipped at 0.001)
    assert validation_clip(np.array([1e-154, 1.0]), fraction=0.4) is None


def test_every_row_records_the_seconds_its_fit_took():
    # kills `time.perf_counter() - start` -> `+`
    before = time.perf_counter()
    selection = select_on_validation([{"C": 1.0}, {"C": 2.0}], lambda p, prev: (p["C"], {}), lambda model: model)
    elapsed = time.perf_counter() - before
    assert all(0.0 <= row["seconds"] <= elapsed for row in selection.table)


def test_without_an_alike_measure_every_candidate_is_eligible_and_nothing_is_said():
    # kills `eligible = True` -> False: every candidate would be a fallback, with the warning
    # that all of them score alike
    selection = select_on_validation(
        [{"C": 1.0}, {"C": 2.0}, {"C": 3.0}], lambda p, prev: (p["C"], {}), lambda model: -abs(model - 2.0)
    )
    assert selection.best == 2.0 and selection.warnings == []
    assert all("alike_share" not in row for row in selection.table)


def test_when_every_candidate_is_alike_the_best_of_them_is_kept_and_named():
    # the fallback is the highest estimate, not the last candidate (kills `not eligible and
    # (...)` -> `or` and `fallback is None` -> `is not None`), ties go to the first (kills
    # `finite > fallback_value` -> `>=`), and the warning names the kept candidate (kills
    # `_describe(...) or "it"` -> `and`, which says "it")
    values = {0.1: 0.3, 1.0: 0.5, 10.0: 0.5, 100.0: 0.2}
    selection = select_on_validation(
        [{"C": c} for c in values], lambda p, prev: (p["C"], {}), lambda model: values[model], alike=lambda model: 1.0
    )
    assert selection.best == 1.0 and selection.best_params == {"C": 1.0} and selection.best_estimate == 0.5
    assert len(selection.warnings) == 1 and "kept C = 1 for want of another" in selection.warnings[0]
    # candidates without parameters are called "it"
    nameless = select_on_validation([{}, {}], lambda p, prev: (0, {}), lambda model: 0.0, alike=lambda model: 1.0)
    assert "kept it for want of another" in nameless.warnings[0]


def test_a_single_alike_candidate_is_kept_without_the_grid_warning():
    # kills `len(table) > 1` -> `>= 1`: with one candidate there was no choice to warn about
    # (guard_warnings says the model scores alike)
    selection = select_on_validation([{"C": 1.0}], lambda p, prev: (p["C"], {}), lambda m: 0.4, alike=lambda m: 1.0)
    assert selection.best == 1.0 and selection.warnings == []


def test_alike_share_counts_only_queries_of_two_documents_or_more():
    # no query counts: 0 (kills `return 0.0` -> 1.0)
    assert alike_share(np.array([1.0, 2.0]), np.array([0, 1, 2])) == 0.0
    # a one-document query after an alike one: its row is its own segment (kills `filled =
    # sizes > 0` -> `sizes > 1`, which folds the 5 into the first query's spread)
    assert alike_share(np.array([1.0, 1.0, 5.0]), np.array([0, 2, 3])) == 1.0
    # a trailing empty query (kills `sizes > 0` -> `>= 0`: a segment start past the last row)
    assert alike_share(np.array([1.0, 1.0, 2.0, 3.0]), np.array([0, 2, 4, 4])) == 0.5


def test_the_guard_warns_at_the_boundaries_it_documents():
    # alike exactly ALIKE_SHARE warns (kills `alike >= ALIKE_SHARE` -> `>`)
    assert len(guard_warnings(alike=ALIKE_SHARE)) == 1
    # a difference of exactly one standard error is not better (kills `not d > se` -> `not
    # d >= se`), and minus one standard error is not worse (kills `d < -se` -> `<=`)
    level = guard_warnings(versus={"model": 0.5, "logging": 0.4, "difference": 0.125, "standard_error": 0.125})
    assert len(level) == 1 and "is not better (by its standard error) than" in level[0]
    below = guard_warnings(versus={"model": 0.4, "logging": 0.5, "difference": -0.125, "standard_error": 0.125})
    assert len(below) == 1 and "is not better (by its standard error) than" in below[0]
    # a validation ESS of exactly ESS_FRACTION is enough (kills `vali_ess < ESS_FRACTION` -> `<=`)
    assert guard_warnings(vali_ess=ESS_FRACTION, n_vali=1000) == []


@pytest.mark.parametrize(
    "clip, how, advice",
    [
        ({"mode": "auto", "tau": None, "grid": [0.01, 0.1]}, "(unclipped)", "--clip auto tried clipping and kept no"),
        ({"mode": "none", "tau": None}, "(as told)", "clip the propensities (--clip auto chooses TAU"),
        (None, "(as told)", "clip the propensities (--clip auto chooses TAU"),
    ],
)
def test_a_small_training_ess_says_how_the_weights_were_clipped_and_what_to_do(clip, how, advice):
    # kills both `clip.get("mode") == "auto"` -> `!=`: --clip auto that kept no clipping is
    # "unclipped" and advises a method without weights; otherwise the weights were as told
    said = guard_warnings(train_ess=0.01, n_train=1000, clip=clip)
    assert len(said) == 1 and f"training weights {how} is 10 of 1000" in said[0] and advice in said[0]


def test_the_edge_advice_widens_the_grid_a_hundredfold_past_the_chosen_end():
    # kills `side == "low"` -> `!=`, the low end `value / 100` -> `*`, 100 -> 101 and the
    # high side's `grid[0]` -> `grid[1]`, and the high end `value * 100` -> `/`, 100 -> 101,
    # `grid[-1]` -> `grid[1]`, `grid[-2]`
    table = [{"C": c} for c in (0.1, 1.0, 10.0)]
    (low,) = guard_warnings(edges=edges_of_grid(table, {"C": 0.1}))
    assert low == (
        "C = 0.1 is the smallest value tried (0.1 .. 10): a smaller C may be better; "
        "widen the grid with --grid (e.g. '0.001:10:N' reaching past 0.1)"
    )
    (high,) = guard_warnings(edges=edges_of_grid(table, {"C": 10.0}))
    assert high == (
        "C = 10 is the largest value tried (0.1 .. 10): a larger C may be better; "
        "widen the grid with --grid (e.g. '0.1:1000:N' reaching past 10)"
    )


def test_a_grid_of_tiny_values_has_a_middle():
    # a chosen value is on an edge when it is (relatively) close to the smallest or largest
    # value tried: an absolute tolerance of 1e-8 put 1e-9 on the low edge of 1e-10 .. 1e-8
    table = [{"learning_rate": r} for r in (1e-10, 1e-9, 1e-8)]
    assert edges_of_grid(table, {"learning_rate": 1e-9}) == []
    assert [e["side"] for e in edges_of_grid(table, {"learning_rate": 1e-10})] == ["low"]
    assert [e["side"] for e in edges_of_grid(table, {"learning_rate": 1e-8})] == ["high"]


@pytest.mark.parametrize("text", ["0:10:0", "-1:10:0", "1:0:0", "0.1:-1:0", "nan:1:0", "0.1:nan:0"])
def test_a_log_grid_with_a_bad_end_is_refused_before_its_count_is_read(text):
    # with count 0 the grid would be empty ("holds no value"): the ends are checked first
    # (kills the removed raise, `and` -> `or`, `low > 0` and `high > 0` -> `>= 0`)
    with pytest.raises(ValueError, match="must hold positive finite numbers"):
        parse_grid(text)


def test_a_log_grid_below_one_is_valid():
    # kills `high > 0` -> `high > 1`
    assert np.allclose(parse_grid("0.01:0.1:2"), [0.01, 0.1])
