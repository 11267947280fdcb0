"""Tests that kill the survivors of bench/mutation.py on cltr/core/chunked_em.py and
cltr/core/chunked_propensity.py.

The oracle is the in-process estimator (``em_propensities``, ``harvest_propensities`` and
their private steps) wherever the chunked one claims to follow it; the line searches of the
chunked EM engine are checked with a scripted mapper whose maps return chosen numbers, so
that a floor, a halving or a batch of trial points can be pinned without a log that happens
to reach them. Only the local engine is used (no dask cluster: slow to start)."""

import inspect

import numpy as np
import pytest

from cltr.core import chunked_em
from cltr.core.chunked import LocalMapper
from cltr.core.chunked_em import chunked_em_propensities, em_chunk_cells, em_chunk_derivatives
from cltr.core.chunked_propensity import (
    chunked_harvest_propensities,
    harvest_chunk_replicates,
    harvest_chunks,
    harvest_on_chunks,
)
from cltr.core.clicks import Impressions
from cltr.core.propensity import em_propensities, harvest_propensities
from cltr.core.propensity.em import _em_data, _em_derivatives, _em_free, _em_loglik, _em_step, _penalty, _posteriors
from cltr.core.propensity.em_data import _logistic_objective
from cltr.core.propensity.estimate import _percentile_band
from cltr.core.propensity.harvest import _harvest_statistics

# as tests/core/test_chunked_em.py: the chunked sums differ from the in-process ones by
# rounding (~1e-13 seen); 1e-8 is far below any difference a changed step makes
ATOL = 1e-8


def _pbm_table(seed=0, n_queries=8, depth=4, theta_top=1.0, w=(1.0, -0.5), bias=0.0, rankers=2):
    """A small PBM log (query ids not in row order), relevance sigma(x . w + bias) in two
    features; ``theta_top`` < 1 with relevance near 1 for many documents (``bias`` 2) puts
    rank 1's examination MLE inside (0, 1), not held at 1."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * depth, 2))
    theta = theta_top / np.arange(1, depth + 1) ** 0.8
    rows = []
    for q in range(n_queries):
        docs = q * depth + np.arange(depth)
        for ranker in range(rankers):
            order = rng.permutation(docs) if ranker else docs[np.argsort(-X[docs, 0])]
            shown = int(rng.integers(5, 20))
            for r, d in enumerate(order, start=1):
                p = theta[r - 1] / (1.0 + np.exp(-(X[d] @ w + bias)))
                rows.append((300 - 5 * q, d, r, shown, rng.binomial(shown, p)))
    return dict(zip(("query", "doc", "rank", "impressions", "clicks"), np.array(rows).T, strict=True)), X


def _same(got, want):
    np.testing.assert_allclose(got.propensity, want.propensity, rtol=0, atol=ATOL)
    np.testing.assert_allclose(got.low, want.low, rtol=0, atol=ATOL)
    np.testing.assert_allclose(got.high, want.high, rtol=0, atol=ATOL)
    for key, value in want.info.items():
        if isinstance(value, (float, list)):
            np.testing.assert_allclose(got.info[key], value, rtol=1e-10, atol=ATOL, err_msg=key)
        else:
            assert got.info[key] == value, key


def _both(table, X, chunks=2, **options):
    want = em_propensities(**table, X=X, rng=0, **options)
    got = chunked_em_propensities(**table, X=X, chunks=chunks, mapper=LocalMapper(), rng=0, **options)
    _same(got, want)
    return got


class _Script:
    """A mapper over one chunk whose maps return ``answer(function name, keyword arguments)``,
    each map recorded; an unexpected map fails the test."""

    def __init__(self, answer):
        self.answer, self.maps = answer, []

    def scatter(self, values):
        return list(values)

    def map(self, function, *per_chunk, **same):
        self.maps.append((function.__name__, same))
        return [self.answer(function.__name__, same)]

    def gather(self, handles):
        return list(handles)


class _ReadOnly(LocalMapper):
    """The local engine handing back its results read-only (as numpy arrays unpickled from an
    immutable buffer are): a chunk's result is not the sums' scratch space, so a sum over
    chunks must not write into the first chunk's."""

    def gather(self, handles):
        def frozen(value):
            if isinstance(value, np.ndarray):
                value = value.copy()
                value.flags.writeable = False
                return value
            if isinstance(value, tuple):
                return tuple(frozen(v) for v in value)
            if isinstance(value, dict):
                return {k: frozen(v) for k, v in value.items()}
            return value

        return [frozen(v) for v in handles]


# --------------------------------------------------------------- the engine's line searches

# two coefficients (intercept unpenalised, one feature with l2 = 1), two ranks
PEN = np.array([0.0, 1.0])
COEF = np.array([0.5, 3.0])
THETA = np.array([0.5, 0.5])


def _relevance_script(penalised):
    """em_step's maps: an EM step whose M-step objective at COEF is -1000 penalised, and
    trials whose penalised values ``penalised(distance of the trial from COEF)`` gives."""

    def answer(name, same):
        if name == "em_chunk_em_step":
            # numerator, objective (unpenalised: -1000 + 0.5 * 9), gradient, Hessian: a step of
            # about (1, 1) from COEF
            return np.array([0.25, 0.25]), -995.5, np.array([1.0, 4.0]), np.array([[1.0, 0.0], [0.0, 0.0]])
        assert name == "em_chunk_relevance_values", name
        return np.array([penalised(np.linalg.norm(t - COEF)) + 0.5 * np.sum(PEN * t * t) for t in same["trials"]])

    return answer


def _run_em_step(penalised):
    mapper = _Script(_relevance_script(penalised))
    engine = chunked_em._Engine(mapper, [None], np.array([1.0, 1.0]), PEN)
    theta, coef = engine.em_step(THETA, COEF, 1)
    np.testing.assert_array_equal(theta, [0.25, 0.25])
    return coef, mapper.maps


def test_the_relevance_line_search_keeps_a_trial_by_the_penalised_floor():
    # the M-step objective at COEF is -1000 (penalised); a trial is kept when its penalised
    # value is at least -1000 - 1e-12 * 1000 = -1000 - 1e-9.
    # A full step 5e-10 below -1000 is kept, none of the halvings being any good. Kills, in
    # `value = float(sum(p[1] ...) - 0.5 * np.sum(pen * coef * coef))`, `-` -> `+` and the
    # `*` -> `/` (a floor raised by 4 or more), and in `floor=value - 1e-12 * abs(value)`,
    # `-` -> `+` and `*` -> `/` (floors above -1000 - 5e-10); and the full step alone in the
    # first map, then all its halvings (`for batch in (trials[:1], trials[1:])`, 1 -> 2), no
    # em_chunk_relevance map for the first IRLS step (`if s > 0`, > -> >=)
    coef, maps = _run_em_step(lambda r: -1000.0 - 5e-10 if r > 1.2 else -np.inf)
    assert np.linalg.norm(coef - COEF) > 1.2
    assert [(name, len(same.get("trials", []))) for name, same in maps] == [
        ("em_chunk_em_step", 0),
        ("em_chunk_relevance_values", 1),
    ]
    # A full step 5 below the floor is refused, and so is every halving: COEF stays. Kills
    # `0.5 -> 1.5` in the value (a floor 9 lower), `1e-12 -> 1.000000000001` (a floor 1000
    # lower), and in `_relevance_values`' penalty `v - 0.5 * np.sum(self.pen * t * t)`,
    # `-` -> `+` and the `*` -> `/` (a full step of coef[1] = 4 raised by 7.5 or more)
    coef, maps = _run_em_step(lambda r: -1005.0 if r > 1.2 else -np.inf)
    np.testing.assert_array_equal(coef, COEF)


def test_the_relevance_line_search_halves_the_full_step_29_times_in_one_map():
    # every trial refused: the full step alone, then its halvings step / 2**j, j = 1..29, in
    # one map (_logistic_newton's 30 tries). Kills `_RELEVANCE_TRIES = 30` -> 31, in
    # `coef + step / 2.0**j`, `/` -> `*` and 2.0 -> 3.0, and both 1 -> 2 of
    # `(trials[:1], trials[1:])`
    coef, maps = _run_em_step(lambda r: -np.inf)
    np.testing.assert_array_equal(coef, COEF)
    assert [len(same["trials"]) for _, same in maps[1:]] == [1, 29]
    trials = maps[1][1]["trials"] + maps[2][1]["trials"]
    full = trials[0] - COEF
    for j, trial in enumerate(trials):
        np.testing.assert_allclose(trial - COEF, full / 2.0**j, rtol=1e-9, atol=0)


def _newton_script(derivatives):
    def answer(name, same):
        if name == "em_chunk_derivatives":
            return derivatives
        assert name == "em_chunk_loglik", name
        return np.full(len(same["trials"]), -np.inf)  # every trial refused

    return answer


def test_the_newton_line_search_halves_9_times_and_keeps_theta_below_1():
    # theta = (0.5, 0.9), the marginal likelihood's Hessian -I: the Newton step is the gradient,
    # +5 on log theta_2, so every trial down to t = 2**-5 puts log(0.9) + 5 t above 0, where
    # theta_2 is set to 1 - 1e-12 (theta < 1 strictly, as the EM step's clip keeps it; a
    # theta of exactly 1 is a cell whose every skip is a certain non-examination).
    # Kills `_NEWTON_TRIES = 10` -> 11, in
    # `np.clip(np.exp(np.minimum(log_theta + t * step[:k_max], 0.0)), 1e-12, 1.0 - 1e-12)`
    # `-` -> `+` and 1.0 -> 2.0 (theta_2 = 1 exactly), and the batches [1, 9]
    theta = np.array([0.5, 0.9])
    derivatives = (-50.0, np.array([0.0, 5.0, 0.0, 0.0]), -np.eye(4))
    mapper = _Script(_newton_script(derivatives))
    engine = chunked_em._Engine(mapper, [None], np.array([1.0, 1.0]), np.zeros(2))
    got = engine.newton_update(theta, np.zeros(2))
    assert got[2] is False
    assert [len(same["trials"]) for name, same in mapper.maps if name == "em_chunk_loglik"] == [1, 9]
    trials = [trial for name, same in mapper.maps if name == "em_chunk_loglik" for trial in same["trials"]]
    top = np.array([trial_theta[1] for trial_theta, _ in trials])
    np.testing.assert_array_equal(top[:6], 1.0 - 1e-12)
    np.testing.assert_allclose(np.log(top[6:]), np.log(0.9) + 5.0 * 2.0 ** -np.arange(6, 10), rtol=1e-12)


def _small_data(seed=1):
    table, X = _pbm_table(seed=seed, n_queries=5, depth=3)
    t = Impressions(ranker=np.zeros_like(table["rank"]), **table)
    return _em_data(t, X, 3)


def test_the_engines_sums_are_the_in_process_penalised_values():
    # one chunk holding the whole log: the engine's penalised values are the in-process ones
    # at a point with every coefficient away from 0 (l2 = 2). Kills, in `derivatives`,
    # `value = float(sum(p[0] ...) - 0.5 * np.sum(pen * coef * coef))` 0.5 -> 1.5 and the
    # `*` -> `/`; in `_relevance_values` the `*` -> `/`, 0.5 -> 1.5 and `-` -> `+` of the
    # penalty; and `em_chunk_derivatives`' `[:3]` -> `[:4]` (it returns value, gradient,
    # Hessian, as documented)
    data = _small_data()
    pen = _penalty(data.features.shape[1], 2.0)
    coef = np.array([0.3, 0.7, -1.2])
    log_theta = np.log([0.9, 0.6, 0.4])
    engine = chunked_em._Engine(LocalMapper(), [data], np.bincount(data.cell_rank0, data.cell_impressions), pen)
    want = _em_derivatives(data, log_theta, coef, pen)
    for got, expected in zip(engine.derivatives(log_theta, coef), want[:3], strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    value, grad, hess = em_chunk_derivatives(data, log_theta, coef)
    np.testing.assert_allclose(value, want[0] + 0.5 * np.sum(pen * coef * coef), rtol=1e-12)

    theta_e, coef_e = np.array([0.8, 0.5, 0.3]), np.array([0.1, 0.4, -0.4])
    positives = _posteriors(data, theta_e, data.features @ coef_e)[1]
    trials = [coef, coef / 3.0]
    got = engine._relevance_values(theta_e, coef_e, trials)
    want = [_logistic_objective(data.features @ t, positives, data.unit_weight, t, pen) for t in trials]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    theta = np.exp(log_theta)
    assert engine.loglik(theta, coef) == pytest.approx(_em_loglik(data, theta, coef, data.features @ coef, pen))


def test_an_em_step_keeps_theta_below_1_where_every_impression_is_clicked():
    # rank 2's impressions all clicked: the theta M-step's ratio is 1 there, clipped to
    # 1 - 1e-12 as _posteriors clips it. Kills, in
    # `np.clip(_sum(...) / self.per_rank, 1e-12, 1.0 - 1e-12)`, `-` -> `+` and 1.0 -> 2.0
    data = _small_data(seed=2)
    at_2 = data.cell_rank0 == 1
    data = data._replace(cell_clicks=np.where(at_2, data.cell_impressions, data.cell_clicks))
    per_rank = np.bincount(data.cell_rank0, data.cell_impressions)
    pen = _penalty(data.features.shape[1], 1.0)
    theta, coef = np.array([0.7, 0.5, 0.3]), np.array([-0.2, 0.3, 0.1])
    engine = chunked_em._Engine(LocalMapper(), [data], per_rank, pen)
    got_theta, got_coef = engine.em_step(theta, coef, 2)
    want_theta, want_coef, _ = _em_step(data, theta, coef, data.features @ coef, pen, 2)
    assert got_theta[1] == 1.0 - 1e-12
    np.testing.assert_array_equal(got_theta, want_theta)
    np.testing.assert_allclose(got_coef, want_coef, rtol=0, atol=1e-12)


class _Steps(chunked_em._Engine):
    """An engine whose EM steps return the thetas given, in order, and whose Newton steps fail."""

    def __init__(self, thetas):
        self.thetas, self.calls = iter(thetas), []

    def em_step(self, theta, coef, newton_steps):
        self.calls.append("em")
        return next(self.thetas), coef

    def newton_update(self, theta, coef):
        self.calls.append("newton")
        return theta, coef, False


def test_the_fit_stops_only_when_p_moves_by_less_than_tol():
    # p = theta / theta_1 moves from 0.5 to 0.75, by tol = 0.25 exactly: not converged (_em_fit's
    # strict `<`), and the first iteration starts with an EM step. Kills
    # `np.max(np.abs(theta / theta[0] - previous)) < tol` < -> <=, and in
    # `converged, iteration, newton, newton_worked = False, 0, 0, False` both False -> True
    engine = _Steps([np.array([1.0, 0.75])])
    theta, coef, iteration, converged, newton = engine.fit(
        np.array([1.0, 0.5]), np.zeros(1), iterations=1, tol=0.25, newton_steps=1
    )
    assert (iteration, converged, newton) == (1, False, 0)
    assert engine.calls == ["em", "newton"]
    engine = _Steps([np.array([1.0, 0.75])])
    assert engine.fit(np.array([1.0, 0.5]), np.zeros(1), iterations=1, tol=0.2500001, newton_steps=1)[3]


# ------------------------------------------------------------ chunked_em_propensities' input


def test_chunked_em_rejects_what_em_propensities_rejects():
    # Kills `or` -> `and` and the removed raise of the iterations/newton_steps check, > -> >=
    # and the removed raise of tol's, the removed raise of l2's, and the removed raise of
    # "no row has a rank <= max_rank"
    table, X = _pbm_table(n_queries=3, depth=3)
    bad = [
        ({"iterations": True}, "iterations must be an integer >= 1"),
        ({"iterations": 2.0}, "iterations must be an integer >= 1"),
        ({"iterations": 0}, "iterations must be an integer >= 1"),
        ({"newton_steps": True}, "newton_steps must be an integer >= 1"),
        ({"newton_steps": 0}, "newton_steps must be an integer >= 1"),
        ({"tol": 0.0}, "tol must be positive"),
        ({"tol": -1.0}, "tol must be positive"),
        ({"l2": -1.0}, "l2 must be >= 0"),
    ]
    for options, message in bad:
        for estimate in (em_propensities, chunked_em_propensities):
            extra = {"chunks": 2, "mapper": LocalMapper()} if estimate is chunked_em_propensities else {}
            with pytest.raises(ValueError, match=message):
                estimate(**table, X=X, bootstrap=0, rng=0, **extra, **options)
    unseen = {**table, "impressions": np.zeros_like(table["impressions"]), "clicks": np.zeros_like(table["clicks"])}
    with pytest.raises(ValueError, match="no row has a rank <= max_rank = 3 and impressions > 0"):
        chunked_em_propensities(**unseen, X=X, chunks=2, mapper=LocalMapper(), bootstrap=0, rng=0)


def _cut(table, keep):
    return {k: v[keep] for k, v in table.items()}


def test_a_rank_without_impressions_is_named_and_one_impression_is_enough():
    table, X = _pbm_table(seed=3, n_queries=4, depth=4)
    # rank 2 shown once, once only, rank 3 never: named as the first rank without impressions,
    # the deepest max_rank that fits being 2. Kills, in `if np.any(per_rank <= 0)`, <= -> <;
    # in `missing = np.flatnonzero(per_rank <= 0) + 1` every mutant (+ -> -, 1 -> 2, <= -> <,
    # 0 -> 1); the removed raise
    at_2 = np.flatnonzero(table["rank"] == 2)
    keep = (table["rank"] != 3) & ((table["rank"] != 2) | (np.arange(len(table["rank"])) == at_2[0]))
    one = _cut(table, keep)
    one["impressions"][one["rank"] == 2] = 1
    one["clicks"][one["rank"] == 2] = 1
    message = r"rank 3 has no impressions \(ranks without any: 3\); lower max_rank to at most 2$"
    for estimate, extra in ((em_propensities, {}), (chunked_em_propensities, {"chunks": 2, "mapper": LocalMapper()})):
        with pytest.raises(ValueError, match=message):
            estimate(**one, X=X, bootstrap=0, rng=0, **extra)
    # with max_rank 2 the one impression at rank 2 is enough: kills `per_rank <= 0` 0 -> 1
    _both(one, X, max_rank=2, bootstrap=0)


def test_rows_of_one_impression_count_and_rows_of_none_do_not():
    # every row shown once, and rows of 0 impressions for documents seen nowhere else: the
    # documents count only the first (in-process: the same). Kills, in
    # `keep = (t.rank <= k_max) & (t.impressions > 0)`, > -> >= and 0 -> 1
    table, X = _pbm_table(seed=4, n_queries=6, depth=3)
    table["impressions"] = np.ones_like(table["impressions"])
    table["clicks"] = np.minimum(table["clicks"], 1)
    X = np.vstack([X, [[5.0, 5.0], [-5.0, 5.0]]])
    extra = {
        "query": [300, 295],
        "doc": [len(X) - 1, len(X) - 2],
        "rank": [1, 2],
        "impressions": [0, 0],
        "clicks": [0, 0],
    }
    table = {k: np.r_[v, extra[k]] for k, v in table.items()}
    got = _both(table, X, bootstrap=0)
    assert got.info["documents"] == 6 * 3


def test_a_non_finite_feature_of_document_0_is_named():
    # Kills `bad = [s["bad_doc"] for s in summaries if s["bad_doc"] >= 0]` >= -> > and 0 -> 1
    table, X = _pbm_table(seed=5, n_queries=3, depth=3)
    X[0, 1] = np.inf
    assert 0 in table["doc"]
    with pytest.raises(ValueError, match="row 0 of X"):
        chunked_em_propensities(**table, X=X, chunks=2, mapper=LocalMapper(), bootstrap=0, rng=0)


def test_a_log_with_one_click_is_fitted():
    # Kills `if clicked.sum() <= 0` 0 -> 1
    table, X = _pbm_table(seed=6, n_queries=4, depth=3)
    table["clicks"] = np.zeros_like(table["clicks"])
    table["clicks"][0] = 1
    _both(table, X, bootstrap=0, iterations=5)


def test_max_rank_1_is_fitted():
    # one rank: p_1 = 1. Kills `_check_options(max_rank, t.rank, bootstrap, level, minimum=1)` 1 -> 2
    table, X = _pbm_table(seed=7, n_queries=4, depth=3)
    got = _both(table, X, max_rank=1, bootstrap=0)
    np.testing.assert_array_equal(got.propensity, [1.0])


@pytest.mark.parametrize(
    ("column", "features"),
    [
        # std exactly 1e-12 at mean 0: not above 1e-12 * max(1, |mean|), dropped. Kills
        # `varying = std > 1e-12 * np.maximum(1.0, np.abs(mean))` > -> >=
        (lambda n: 1e-12 * (-1.0) ** np.arange(n), 1),
        # std 1.5e-12 at mean 0: above 1e-12, kept. Kills 1.0 -> 2.0
        (lambda n: 1.5e-12 * (-1.0) ** np.arange(n), 2),
        # std ~1e-7 at mean 1e6: below 1e-12 * 1e6, dropped. Kills `*` -> `/`
        (lambda n: 1e6 + 1e-7 * (-1.0) ** np.arange(n), 1),
    ],
)
def test_a_feature_is_dropped_as_constant_by_the_in_process_rule(column, features):
    # 8 queries of 2 documents in 2 chunks of 4 queries: sums of equal powers of two terms,
    # so the spread is exact and std is the value given
    table, X = _pbm_table(seed=8, n_queries=8, depth=2)
    X[:, 1] = column(len(X))
    got = _both(table, X, bootstrap=0, iterations=3)
    assert got.info["features"] == features


def test_the_defaults_are_those_of_the_in_process_estimators():
    # "same arguments" (the docstrings): kills `iterations: int = 100` and `bootstrap: int = 200`
    # 100 -> 101 and 200 -> 201 here, `bootstrap: int = 200` 200 -> 201 of
    # chunked_harvest_propensities and harvest_on_chunks' `level: float = 0.95` 0.95 -> 1.95
    pairs = [
        (chunked_em_propensities, em_propensities),
        (chunked_harvest_propensities, harvest_propensities),
        (harvest_on_chunks, harvest_propensities),
    ]
    for chunked, in_process in pairs:
        mine = inspect.signature(chunked).parameters
        theirs = inspect.signature(in_process).parameters
        shared = [name for name in mine if name in theirs and mine[name].default is not inspect.Parameter.empty]
        assert shared
        for name in shared:
            assert mine[name].default == theirs[name].default, (chunked.__name__, name)


# ------------------------------------------------------------------------------ the bands


def test_bands_of_one_replicate_and_of_none():
    # one replicate: a band of it; none: nan bands, and no rng needed ("unused when
    # bootstrap=0": no resamples drawn). Kills `if bootstrap > 0 and band == "refit"` and
    # `elif bootstrap > 0`, each 0 -> 1 and > -> >=
    table, X = _pbm_table(seed=16, n_queries=6, depth=3)
    for band in ("refit", "one-step"):
        got = _both(table, X, band=band, bootstrap=1)
        assert np.all(np.isfinite(got.low))
        got = _both(table, X, band=band, bootstrap=0)
        assert np.all(np.isnan(got.low)) and np.all(np.isnan(got.high))
        unseeded = chunked_em_propensities(
            **table, X=X, chunks=2, mapper=LocalMapper(), band=band, bootstrap=0, rng=None
        )
        np.testing.assert_array_equal(unseeded.propensity, got.propensity)


def test_a_one_step_band_with_rank_1_inside_the_bounds():
    # theta_1 about 0.6: its log is a free coordinate, and every replicate's p_k is its
    # theta_k over its own theta_1. Kills `np.exp(rep_log_theta - rep_log_theta[:, :1])`
    # - -> + and `rcond=1e-12` -> 1.000000000001
    table, X = _pbm_table(seed=0, n_queries=10, depth=3, theta_top=0.6, w=(2.0, -1.0), bias=2.0)
    got = _both(table, X, band="one-step", bootstrap=10)
    assert got.info["examination"][0] < 0.9


class _FlatDirection(LocalMapper):
    """The local engine with the one-step band's Hessian replaced by -diag(``flat``): every
    other map, and the per-query scores, are the log's."""

    def __init__(self, flat):
        self.flat, self.scores = flat, []

    def map(self, function, *per_chunk, **same):
        out = super().map(function, *per_chunk, **same)
        if function.__name__ == "em_chunk_scores":
            out = [(value, grad, -np.diag(self.flat), scores) for value, grad, _, scores in out]
            self.scores.extend(out)
        return out


def test_the_one_step_band_gives_a_direction_flatter_than_1e_12_no_step():
    # -H = diag(1, 1e-13, 1, ...) (l2 = 0): log theta_2's direction is flatter than 1e-12 times
    # the steepest, so lstsq gives it no step (p_2's replicates move with theta_1 only), and
    # every other coordinate free at the estimate moves by its score over 1. Kills
    # `rcond=1e-12` -> 1.000000000001 (LAPACK then cuts at machine precision: a step of
    # score / 1e-13 in log theta_2)
    table, X = _pbm_table(seed=15, n_queries=8, depth=3)
    flat = np.array([1.0, 1e-13, 1.0, 1.0, 1.0, 1.0])
    mapper = _FlatDirection(flat)
    got = chunked_em_propensities(**table, X=X, chunks=1, mapper=mapper, l2=0.0, band="one-step", bootstrap=10, rng=0)
    (_, full_grad, _, scores) = mapper.scores[0]
    log_theta = np.log(got.info["examination"])
    free = _em_free(log_theta, full_grad)
    steps = np.zeros_like(scores)
    kept = free & (flat >= 1e-12 * flat[free].max())
    steps[:, kept] = scores[:, kept] / flat[kept]
    rep = log_theta + steps[:, :3]
    low, high = _percentile_band(np.exp(rep - rep[:, :1]), got.propensity, 0.95)
    assert free[1] and not kept[1]
    np.testing.assert_allclose(got.low, low, rtol=1e-12)
    np.testing.assert_allclose(got.high, high, rtol=1e-12)


def test_unconverged_replicates_are_counted():
    # two iterations: no replicate converges. Kills `unconverged += int(not rep[3])` removed,
    # += -> -= and 3 -> 4
    table, X = _pbm_table(seed=11, n_queries=6, depth=3)
    got = _both(table, X, bootstrap=3, iterations=2)
    assert got.info["bootstrap_unconverged"] == 3


def _draws(n_queries, bootstrap):
    from cltr.core.propensity.estimate import _query_resamples

    return _query_resamples(n_queries, bootstrap, 0)


def test_refit_replicates_without_a_rank_or_a_click_are_left_out():
    # Query 0 (the first in sorted order, id 275) alone shows rank 3, in one row of one
    # impression: replicates that do not draw it lack rank 3 (left out), those that draw it
    # once show rank 3 once (kept). In the second log query 0 holds every click but one, of
    # query 5 (id 300): replicates drawing neither have no click (left out), those drawing
    # query 5 once and not query 0 have one (kept). The in-process band is the oracle, at
    # level 0.5, whose quartiles move with every replicate kept or left out (a band of 0.95
    # from 12 replicates is their range, which an inner replicate does not move). Kills, in
    # `if not np.all(rep_per_rank > 0) or sum(f[1] for f in found) <= 0`, `or` -> `and`,
    # > -> >=, <= -> <, both 0 -> 1, and `rep_per_rank = _sum([f[0] ...])` 0 -> 1
    table, X = _pbm_table(seed=12, n_queries=6, depth=3)
    first = table["query"] == table["query"].min()
    at_3 = np.flatnonzero(first & (table["rank"] == 3))
    one = _cut(table, (table["rank"] < 3) | (np.arange(len(first)) == at_3[0]))
    one["impressions"][one["rank"] == 3] = 1
    one["clicks"] = np.minimum(one["clicks"], one["impressions"])
    counts = _draws(6, 12)
    assert np.any(counts[:, 0] == 0) and np.any(counts[:, 0] == 1)  # both cases drawn
    _both(one, X, bootstrap=12, level=0.5, iterations=15)
    sparse = {**table, "clicks": np.where(first, table["clicks"], 0)}
    sparse["clicks"][np.flatnonzero(table["query"] == 300)[0]] = 1
    assert table["query"].max() == 300 and sparse["clicks"].sum() > 1
    assert np.any((counts[:, 0] == 0) & (counts[:, 5] == 0)) and np.any((counts[:, 0] == 0) & (counts[:, 5] == 1))
    _both(sparse, X, bootstrap=12, level=0.5, iterations=15)


def test_results_a_mapper_hands_back_read_only_are_summed_into_copies():
    # Kills `total = np.array(values[0], dtype=np.float64, copy=True)` True -> False in both
    # modules (the first chunk's result would be the running sum)
    table, X = _pbm_table(seed=17, n_queries=6, depth=3)
    want = em_propensities(**table, X=X, bootstrap=2, rng=0)
    got = chunked_em_propensities(**table, X=X, chunks=3, mapper=_ReadOnly(), bootstrap=2, rng=0)
    _same(got, want)
    log = _harvest_log()
    want = harvest_propensities(**log, bootstrap=4, rng=0)
    got = chunked_harvest_propensities(**log, chunks=3, mapper=_ReadOnly(), bootstrap=4, rng=0)
    np.testing.assert_allclose(got.propensity, want.propensity, rtol=1e-10)
    np.testing.assert_allclose(got.high, want.high, rtol=1e-10)


def test_the_cells_carry_no_features_until_standardised():
    # em_chunk_cells leaves the features empty ((units, 0)); em_chunk_standardise fills them.
    # Kills `features=np.empty((len(units), 0))` 0 -> 1 (a column of uninitialised memory)
    table, X = _pbm_table(seed=14, n_queries=2, depth=2)
    t = Impressions(ranker=np.zeros_like(table["rank"]), **table)
    chunk = em_chunk_cells((t, X, np.arange(len(X))), max_rank=2)
    assert chunk.data.features.shape == (4, 0)


# ------------------------------------------------------------------ chunked_propensity


def _harvest_log(seed=0, n_queries=6, depth=3, impressions=None):
    """Two rankers, each query's documents in two orders; ``impressions`` fixes every row's."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_queries):
        for ranker in (0, 1):
            shown = impressions if impressions is not None else int(rng.integers(10, 30))
            for r, d in enumerate(rng.permutation(depth), start=1):
                rows.append((50 - q, d, r, ranker, shown, rng.binomial(shown, 0.9 / r * (0.3 + 0.6 * (d % 2)))))
    return dict(zip(("query", "doc", "rank", "ranker", "impressions", "clicks"), np.array(rows).T, strict=True))


def test_harvest_chunks_cut_every_row_into_whole_queries():
    # Kills `bounds = np.unique(np.concatenate([[0], cuts, [len(order)]]))` 0 -> 1 (row 0 lost)
    log = _harvest_log(n_queries=5)
    t = Impressions(**log)
    parts = harvest_chunks(t, 3)
    assert len(parts) == 3
    assert sum(len(p.query) for p in parts) == len(log["query"])
    got = np.concatenate([p.query for p in parts])
    np.testing.assert_array_equal(got, np.sort(log["query"], kind="stable"))
    assert all(set(a.query).isdisjoint(b.query) for a in parts for b in parts if a is not b)


@pytest.mark.parametrize("chunks", [True, np.True_, 2.5, 0, -1])
def test_a_chunk_count_that_is_not_a_positive_integer_is_refused(chunks):
    # Kills `isinstance(chunks, (bool, np.bool_)) or int(chunks) != chunks or chunks < 1`
    # `or` -> `and` (either) and the removed raise
    t = Impressions(**_harvest_log(n_queries=2))
    with pytest.raises(ValueError, match="chunks must be an integer >= 1"):
        harvest_chunks(t, chunks)


def test_a_chunk_of_one_query_gives_its_replicate_totals():
    # Kills `if stats.n_queries == 0` 0 -> 1 (a chunk of one query answered with zeros)
    t = Impressions(**_harvest_log(n_queries=1))
    stats = _harvest_statistics(t, 3, design=(np.array([0, 1]), np.array([1.0, 1.0])))
    assert stats.n_queries == 1
    counts = np.array([[2.0], [0.0], [1.0]])
    clicks, shown = harvest_chunk_replicates(stats, counts)
    once_clicks, once_shown = stats.totals()
    for b, m in enumerate(counts[:, 0]):
        np.testing.assert_allclose(clicks[b], m * once_clicks, rtol=1e-12)
        np.testing.assert_allclose(shown[b], m * once_shown, rtol=1e-12)
    assert once_shown.sum() > 0


def test_harvest_max_rank_2_and_rows_of_one_impression():
    # Kills `_check_options(max_rank, t.rank, bootstrap, level, minimum=2)` 2 -> 3 and, in
    # `if not np.any((t.rank <= k_max) & (t.impressions > 0))`, 0 -> 1 (rows shown once)
    log = _harvest_log(seed=1, n_queries=8, impressions=1)
    for max_rank in (2, 3):
        want = harvest_propensities(**log, max_rank=max_rank, bootstrap=3, rng=0)
        got = chunked_harvest_propensities(**log, chunks=2, mapper=LocalMapper(), max_rank=max_rank, bootstrap=3, rng=0)
        np.testing.assert_allclose(got.propensity, want.propensity, rtol=1e-10)


def _harvest_error(estimate, log, **extra):
    with pytest.raises(ValueError) as caught:
        estimate(**log, max_rank=2, bootstrap=0, rng=0, **extra)
    return str(caught.value)


def test_harvest_names_what_is_wrong_as_the_in_process_estimator_does():
    # no row kept: every row unseen (kills `&` -> `|` and > -> >=); or every row seen below
    # rank 2 but at it (kills <= -> <: those rows are kept, and the error is the next one)
    log = _harvest_log(seed=2, n_queries=3)
    unseen = {**log, "impressions": np.zeros_like(log["impressions"]), "clicks": np.zeros_like(log["clicks"])}
    only_2 = {**log, "impressions": np.where(log["rank"] == 2, log["impressions"], 0)}
    only_2["clicks"] = np.minimum(only_2["clicks"], only_2["impressions"])
    for case in (unseen, only_2):
        want = _harvest_error(harvest_propensities, case)
        got = _harvest_error(chunked_harvest_propensities, case, chunks=2, mapper=LocalMapper())
        assert got == want
    assert "no row has a rank" in _harvest_error(harvest_propensities, unseen)
    assert "no row has a rank" not in _harvest_error(harvest_propensities, only_2)


def test_harvest_on_chunks_without_a_ranker_says_so():
    # Kills `raise ValueError(... needs logs from at least 2 rankers ...)` removed in
    # harvest_on_chunks (its public entry, which the Parquet harvest calls without the row
    # check of chunked_harvest_propensities): chunks whose rows are all below max_rank have no
    # ranker, which only this check names (one ranker is refused per chunk as well)
    log = _harvest_log(seed=3, n_queries=4)
    deep = {**log, "rank": log["rank"] + 5}
    mapper = LocalMapper()
    handles = mapper.scatter(harvest_chunks(Impressions(**deep), 2))
    with pytest.raises(ValueError, match="at least 2 rankers; found no ranker"):
        harvest_on_chunks(handles, mapper=mapper, max_rank=2, bootstrap=0, level=0.95, rng=0)
