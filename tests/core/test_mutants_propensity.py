"""Tests that kill the survivors of bench/mutation.py on cltr/core/propensity/ (estimate.py,
harvest.py, em.py): the estimate's and the table's checks, the bootstrap's pieces, harvesting
against loops (a messy log of duplicate, empty and deep rows), the pair relevance against a
bounded 1-D maximiser, the EM data, resamples and options by hand, and the collapse rule at its
boundaries. Each test says what it pins."""

import inspect
import warnings
from collections import defaultdict

import numpy as np
import pytest

from cltr.core import propensity as P
from cltr.core.propensity import PropensityEstimate, em_identification, em_propensities, harvest_propensities
from cltr.core.propensity import em as EM  # (from-imports: a mutated sibling's run re-imports the package)
from cltr.core.propensity import harvest as H
from tests.core.test_propensity import (
    COLUMNS,
    _brute_force_allpairs,
    _em_problem,
    _tiny_log,
    one_ranker,
    simulate_table,
)

# --------------------------------------------------------------------------- the estimate's own checks
# (each test names the mutants of cltr/core/propensity/estimate.py it kills; bench/mutation.py)


def _estimate(k=3):
    return PropensityEstimate(
        np.arange(1, k + 1), 1.0 / np.arange(1, k + 1), np.full(k, np.nan), np.full(k, np.nan), 0.9, "x"
    )


def test_an_estimate_is_immutable_compared_by_identity_and_checks_its_ranks():
    # frozen=True, eq=False: a field cannot be rebound; two estimates of equal values are
    # different objects (eq=True would compare arrays, ambiguous, and make it unhashable).
    est, same = _estimate(), _estimate()
    with pytest.raises(AttributeError):
        est.level = 0.5
    assert est == est and est != same and len({est, same}) == 2
    for rank in ([1, 3, 2], [0, 1, 2], [2, 3, 4]):
        with pytest.raises(ValueError, match=r"rank must be 1, 2, \.\.\., K"):
            PropensityEstimate(np.array(rank), np.ones(3), np.ones(3), np.ones(3), 0.9, "x")


def test_at_takes_whole_ranks_of_any_dtype_and_refuses_the_rest():
    est = _estimate()
    np.testing.assert_array_equal(est.at(np.array([1.0, 3.0, 9.0])), [1.0, 1.0 / 3.0, 1.0 / 3.0])
    np.testing.assert_array_equal(est.at(np.array([1, 2], dtype=np.uint8)), [1.0, 0.5])
    for empty in (np.zeros(0, dtype=np.int64), np.zeros(0)):
        assert est.at(empty).shape == (0,)
    for bad in ([1.5], [2.0, np.nan], [np.inf]):
        with pytest.raises(ValueError, match="ranks must be whole numbers"):
            est.at(np.array(bad))
    with pytest.raises(ValueError, match="ranks must be >= 1, found 0"):
        est.at(np.array([0.0, 2.0]))


_OK = {
    "query": np.zeros(4, dtype=int),
    "doc": np.array([0, 1, 0, 1]),
    "rank": np.array([1, 2, 2, 1]),
    "ranker": np.array([0, 0, 1, 1]),
    "impressions": np.full(4, 10),
    "clicks": np.array([3, 1, 2, 2]),
}


def test_the_table_takes_whole_floats_bools_and_empty_rows_and_names_the_first_bad_row():
    t = P._check_table(
        **{**_OK, "rank": np.array([1.0, 2.0, 2.0, 1.0]), "ranker": np.array([False, False, True, True])}
    )
    np.testing.assert_array_equal(t.rank, [1, 2, 2, 1])
    assert t.rank.dtype == np.int64 and t.ranker.dtype == np.int64
    # a row never shown (0 impressions, 0 clicks) is allowed, and harvesting ignores it
    zero = {name: np.r_[values, values[:1]] for name, values in _OK.items()}
    zero["impressions"][-1] = zero["clicks"][-1] = 0
    zero["rank"][-1] = 2
    np.testing.assert_allclose(
        harvest_propensities(**zero, bootstrap=0, rng=0).propensity,
        harvest_propensities(**_OK, bootstrap=0, rng=0).propensity,
        rtol=1e-12,
    )
    with pytest.raises(ValueError, match=r"clicks must hold whole numbers; row 1 has .*inf"):
        P._check_table(**{**_OK, "clicks": np.array([1.0, np.inf, 2.0, 0.5])})
    with pytest.raises(ValueError, match=r"clicks must be a flat array, found shape \(2, 2\)"):
        P._check_table(**{**_OK, "clicks": np.ones((2, 2), dtype=int)})
    with pytest.raises(ValueError, match="doc must be an integer array, found dtype <U1"):
        P._check_table(**{**_OK, "doc": np.array(list("abab"))})
    with pytest.raises(ValueError, match=r"ranker must be >= 0; row 2 has -1 \(2 such rows\)"):
        P._check_table(**{**_OK, "ranker": np.array([0, 0, -1, -3])})
    with pytest.raises(ValueError, match=r"row 0 has 11 clicks and 10 impressions \(2 such rows\)"):
        P._check_table(**{**_OK, "clicks": np.array([11, 1, 12, 2])})


def test_options_are_checked_as_documented():
    rank = np.array([1, 2, 5])
    assert P._check_options(None, rank, 0, 0.5, minimum=2) == 5
    assert P._check_options(np.int64(3), rank, np.int64(4), 0.5, minimum=3) == 3
    for max_rank in (True, 3.0, 2):
        with pytest.raises(ValueError, match="max_rank must be an integer >= 3"):
            P._check_options(max_rank, rank, 0, 0.5, minimum=3)
    for bootstrap in (True, 2.0):
        with pytest.raises(ValueError, match="bootstrap must be an integer >= 0"):
            P._check_options(3, rank, bootstrap, 0.5, minimum=2)
    for level in (0.0, 1.0):
        with pytest.raises(ValueError, match="level must lie strictly between 0 and 1"):
            P._check_options(3, rank, 0, level, minimum=2)


def test_percentile_band_is_the_quantiles_of_the_usable_replicates_widened_to_the_estimate():
    # 5 replicates x 4 ranks: a column with NaNs uses its finite entries only, one with a single
    # finite replicate gets that value, an all-NaN column stays NaN, and the band is widened to
    # hold the estimate.
    replicates = np.array(
        [
            [1.0, 0.1, np.nan, np.nan],
            [1.0, 0.5, 0.4, np.nan],
            [1.0, 0.3, np.nan, np.nan],
            [1.0, 0.2, np.nan, np.nan],
            [1.0, 0.4, np.nan, np.nan],
        ]
    )
    estimate = np.array([1.0, 0.05, 0.6, 0.7])
    with warnings.catch_warnings():  # the all-NaN column is left out, not quantiled ("All-NaN slice")
        warnings.simplefilter("error")
        low, high = P._percentile_band(replicates, estimate, 0.5)
    # level 0.5: the (B + 1) 25% = 1.5th and (B + 1) 75% = 4.5th order statistics of 0.1..0.5
    # are 0.15 and 0.45; the low one is widened to the estimate 0.05
    np.testing.assert_allclose(low, [1.0, 0.05, 0.4, np.nan])
    np.testing.assert_allclose(high, [1.0, 0.45, 0.6, np.nan])
    low, high = P._percentile_band(replicates[:, :2], np.array([1.0, 0.3]), 0.6)
    # level 0.6: positions 6 x 0.2 = 1.2 and 6 x 0.8 = 4.8, between 0.1 and 0.2, 0.4 and 0.5
    np.testing.assert_allclose([low[1], high[1]], [0.12, 0.48])
    low, high = P._percentile_band(replicates[:, :2], np.array([1.0, 0.3]), 0.9)
    # level 0.9: positions 0.3 and 5.7 lie beyond the sample; the extremes bound the band
    np.testing.assert_allclose([low[1], high[1]], [0.1, 0.5])


@pytest.mark.parametrize("bootstrap", [20, 50])
def test_percentile_band_covers_an_exchangeable_draw_at_its_level(bootstrap):
    # Oracle: a draw exchangeable with the B replicates lands in each of the B + 1 gaps between
    # them with probability 1 / (B + 1), so the band covers it with probability `level` (0.9,
    # up to the interpolation between order statistics). 5,000 Monte Carlo bands: the share's
    # standard error is 0.0042, the threshold 0.015 is 3.5 of them; numpy's linear quantile
    # gives 0.82 (B = 20) and 0.865 (B = 50), outside it.
    rng = np.random.default_rng(bootstrap)
    trials = 5000
    replicates = rng.normal(size=(bootstrap, trials))
    draw = rng.normal(size=trials)
    # the estimate at the replicates' median: inside the band, so the widening to hold it is idle
    low, high = P._percentile_band(replicates, np.median(replicates, axis=0), 0.9)
    covered = np.mean((low <= draw) & (draw <= high))
    assert covered == pytest.approx(0.9, abs=0.015)


def test_query_resamples_draw_every_query_alike_and_need_an_rng():
    counts = P._query_resamples(4, 3000, 7)
    assert counts.shape == (3000, 4) and counts.dtype == np.float64
    np.testing.assert_array_equal(counts.sum(axis=1), 4.0)
    # each query's count is Binomial(4, 1/4): mean 1, standard error sqrt(0.75 / 3000) = 0.016
    np.testing.assert_allclose(counts.mean(axis=0), 1.0, atol=0.08)
    with pytest.raises(ValueError, match="the bootstrap needs rng"):
        P._query_resamples(4, 3, None)


# --------------------------------------------------------------------------- harvesting, piece by piece
# (each test names what of cltr/core/propensity/harvest.py it pins; bench/mutation.py)


def _messy_log(seed):
    """_tiny_log with duplicate rows, unequal sessions per rank, a zero-impression row, rows
    below K and a third ranker that shows only some documents: what _ranker_sessions and the
    cells must sum, max and skip."""
    table, _ = _tiny_log(seed)
    rng = np.random.default_rng(seed)
    t = {name: values.copy() for name, values in table.items()}
    t["impressions"] = t["impressions"] + rng.integers(0, 3, size=len(t["query"]))
    t["clicks"] = np.minimum(t["clicks"], t["impressions"])
    extra = rng.choice(len(t["query"]), size=15, replace=False)
    dup = {name: values[extra].copy() for name, values in t.items()}
    dup["impressions"] = rng.integers(0, 4, size=15)
    dup["clicks"] = np.minimum(dup["clicks"], dup["impressions"])
    deep = {name: values[:6].copy() for name, values in t.items()}
    deep["rank"] = deep["rank"] + 4  # ranks 5..8, beyond K = 4
    return {name: np.r_[t[name], dup[name], deep[name]] for name in COLUMNS}


def _brute_force_sessions(table, K):
    """n_i by loops: per (query, ranker), the impressions summed per rank, at its most-shown rank."""
    per = defaultdict(lambda: defaultdict(float))
    for q, k, r, n in zip(table["query"], table["rank"], table["ranker"], table["impressions"], strict=True):
        if k <= K and n > 0:
            per[(q, r)][k] += n
    sessions = defaultdict(float)
    for (_, r), at in per.items():
        sessions[r] += max(at.values())
    return dict(sessions)


@pytest.mark.parametrize("seed", [3, 4])
def test_harvest_statistics_of_a_messy_log_match_loops(seed):
    table = _messy_log(seed)
    t = P._check_table(**table)
    sessions = _brute_force_sessions(table, 4)
    rankers, n_i = P._ranker_sessions(t, 4)
    assert dict(zip(rankers.tolist(), n_i.tolist(), strict=True)) == pytest.approx(sessions, rel=1e-12)
    kept = {name: values[(table["rank"] <= 4) & (table["impressions"] > 0)] for name, values in table.items()}
    _, clicks, shown = _brute_force_allpairs(kept, sessions, K=4)
    stats = P._harvest_statistics(t, 4)
    got_clicks, got_shown = stats.totals()
    np.testing.assert_allclose(got_clicks, clicks, rtol=1e-12)
    np.testing.assert_allclose(got_shown, shown, rtol=1e-12)
    shown_at = defaultdict(set)
    for q, d, k in zip(kept["query"], kept["doc"], kept["rank"], strict=True):
        shown_at[(q, d)].add(k)
    assert stats.n_intervention_docs == sum(len(ranks) >= 2 for ranks in shown_at.values())
    assert stats.n_queries == len(np.unique(kept["query"]))


def test_query_weighted_totals_are_sums_of_each_querys_statistics_under_the_whole_design():
    # totals(counts), replicate_totals and a query's own statistics under the whole log's
    # design (the chunked path) all add up to the same weighted sums.
    table = _messy_log(5)
    t = P._check_table(**table)
    design = P._ranker_sessions(t, 4)
    stats = P._harvest_statistics(t, 4, design=design)
    whole = P._harvest_statistics(t, 4)
    np.testing.assert_allclose(stats.totals()[1], whole.totals()[1], rtol=1e-12)
    np.testing.assert_array_equal(stats.rankers, whole.rankers)
    np.testing.assert_array_equal(stats.sessions, whole.sessions)
    counts = np.random.default_rng(0).integers(0, 4, size=(3, stats.n_queries)).astype(float)
    rep_c, rep_n = stats.replicate_totals(counts)
    queries = np.unique(t.query[(t.rank <= 4) & (t.impressions > 0)])
    for b in range(3):
        c, n = stats.totals(counts[b])
        np.testing.assert_allclose(rep_c[b], c, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(rep_n[b], n, rtol=1e-12, atol=1e-12)
        by_query = [P._harvest_statistics(P._rows(t, t.query == q), 4, design=design).totals() for q in queries]
        np.testing.assert_allclose(sum(w * s[0] for w, s in zip(counts[b], by_query, strict=True)), c, atol=1e-9)
        np.testing.assert_allclose(sum(w * s[1] for w, s in zip(counts[b], by_query, strict=True)), n, atol=1e-9)


def test_a_chunk_without_kept_rows_or_interventions_has_empty_statistics():
    table = _messy_log(6)
    t = P._check_table(**table)
    design = P._ranker_sessions(t, 4)
    below = P._rows(t, t.rank > 4)
    empty = P._harvest_statistics(below, 4, design=design)
    assert empty.n_queries == 0 and empty.entry_query.size == 0 and empty.n_intervention_docs == 0
    assert empty.entry_clicks.size == 0 and empty.entry_impressions.size == 0
    np.testing.assert_array_equal(empty.sessions, design[1])
    np.testing.assert_array_equal(empty.rankers, design[0])
    assert empty.totals()[1].shape == (4, 4) and not empty.totals()[1].any()
    assert not empty.replicate_totals(np.ones((2, 0)))[0].any()
    one_rank = P._rows(t, (t.query == 0) & (t.ranker == 0))  # one ranker: every document at one rank
    stats = P._harvest_statistics(one_rank, 4, design=design)
    assert stats.n_queries == 1 and stats.n_intervention_docs == 0 and stats.entry_query.size == 0
    with pytest.raises(ValueError, match="no row has a rank <= max_rank = 4 and impressions > 0"):
        P._harvest_statistics(below, 4)


def test_pair_relevance_maximises_the_pair_likelihood():
    from scipy.optimize import minimize_scalar

    rng = np.random.default_rng(8)
    for _ in range(20):
        pa, pb = rng.uniform(0.05, 1.0, 2)
        # weighted counts, some below 1 (where the closed form's denominator is below 1 too)
        ca, ua, cb, ub = rng.integers(0, 30, 4) * rng.choice([1.0, 0.01])
        if ca + cb == 0:
            assert P._pair_relevance(pa, pb, ca, ua, cb, ub) == 0.0
            continue
        top = 1.0 / max(pa, pb)

        def nll(c, pa=pa, pb=pb, ca=ca, ua=ua, cb=cb, ub=ub):
            return -(
                ca * np.log(pa * c)
                + ua * np.log1p(-min(pa * c, 1 - 1e-15))
                + cb * np.log(pb * c)
                + ub * np.log1p(-min(pb * c, 1 - 1e-15))
            )

        best = minimize_scalar(nll, bounds=(1e-12, top), method="bounded", options={"xatol": 1e-12})
        got = P._pair_relevance(pa, pb, ca, ua, cb, ub)
        assert got == pytest.approx(best.x, rel=1e-5, abs=1e-9)
    assert P._pair_relevance(0.5, 0.25, 0.0, 7.0, 0.0, 3.0) == 0.0


def test_a_rank_never_clicked_goes_to_the_lower_bound():
    # rank 2 never clicked in its pair: the likelihood rises as p_2 -> 0, held at the bound 1e-8.
    table = {
        "query": [0, 0, 0, 0],
        "doc": [0, 1, 0, 1],
        "rank": [1, 2, 2, 1],
        "ranker": [0, 0, 1, 1],
        "impressions": [10, 10, 10, 10],
        "clicks": [4, 0, 0, 3],
    }
    est = harvest_propensities(**table, bootstrap=0, rng=0)
    assert est.propensity[1] == pytest.approx(1e-8, rel=1e-9) and est.info["converged"]


def test_harvest_info_and_the_disconnected_replicates():
    # Query 0 swaps ranks 1 and 2, query 1 ranks 2 and 3: a resample without query 0 leaves
    # ranks 2 and 3 unconnected to rank 1, one without query 1 leaves rank 3.
    table = {
        "query": [0, 0, 0, 0, 1, 1, 1, 1],
        "doc": [0, 1, 0, 1, 2, 3, 2, 3],
        "rank": [1, 2, 2, 1, 2, 3, 3, 2],
        "ranker": [0, 0, 1, 1, 0, 0, 1, 1],
        "impressions": [20, 20, 20, 20, 30, 30, 30, 30],
        "clicks": [8, 3, 4, 6, 9, 5, 6, 7],
    }
    est = harvest_propensities(**table, bootstrap=40, rng=3)
    counts = P._query_resamples(2, 40, 3)
    assert est.info["bootstrap_disconnected"] == int(2 * np.sum(counts[:, 0] == 0) + np.sum(counts[:, 1] == 0))
    assert est.info["bootstrap_disconnected"] > 0
    assert est.info["rank_pairs"] == 2 and est.info["queries"] == 2 and est.info["intervention_docs"] == 4
    assert est.info["bootstrap"] == 40 and est.info["sessions"] == {0: 50.0, 1: 50.0}
    assert est.method == "allpairs-harvest" and est.level == 0.95
    assert np.all(est.low <= est.propensity) and np.all(est.propensity <= est.high)
    # ranks 2..12 unconnected: the message lists ten of them and says there are more
    wide = {name: np.r_[np.asarray(v)[:4], np.asarray(v)[:4]] for name, v in table.items()}
    wide["query"] = np.r_[np.zeros(4, int), np.ones(4, int)]
    wide["rank"] = np.r_[[1, 2, 2, 1], [12, 13, 13, 12]]
    with pytest.raises(
        ValueError,
        match=r"rank 3 has no intervention pair connecting it to rank 1 \(ranks without "
        r"one: 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, \.\.\.\)",
    ):
        harvest_propensities(**wide, bootstrap=0, rng=0)


# --------------------------------------------------------------------------- regression EM, piece by piece
# (each test names what of cltr/core/propensity/em.py it pins; bench/mutation.py)


def _hand_em_data():
    """Two queries; a duplicate row, a row below K = 3 and one never shown; X has a constant
    column and one whose spread is below 1e-12 of its mean."""
    query = np.array([5, 5, 5, 5, 9, 9, 9, 9])
    doc = np.array([0, 1, 0, 2, 1, 3, 3, 0])
    rank = np.array([1, 2, 1, 3, 1, 2, 4, 3])
    impressions = np.array([4, 6, 2, 5, 3, 7, 9, 0])
    clicks = np.array([2, 1, 1, 0, 3, 2, 4, 0])
    X = np.array([[1.0, 7.0, 1e6], [2.0, 7.0, 1e6], [4.0, 7.0, 1e6 + 1e-7], [0.0, 7.0, 1e6]])
    t = P._check_table(query, doc, rank, None, impressions, clicks)
    return P._em_data(t, X, 3), X


def test_em_data_sums_cells_and_standardises_over_the_tables_documents():
    data, X = _hand_em_data()
    # units (query, doc): (5,0) (5,1) (5,2) (9,1) (9,3); the never-shown (9,0) and rank 4 dropped
    assert data.n_queries == 2 and data.max_rank == 3
    np.testing.assert_array_equal(data.cell_unit, [0, 1, 2, 3, 4])
    np.testing.assert_array_equal(data.cell_rank0, [0, 1, 2, 0, 1])
    np.testing.assert_array_equal(data.cell_impressions, [6, 6, 5, 3, 7])
    np.testing.assert_array_equal(data.cell_clicks, [3, 1, 0, 3, 2])
    np.testing.assert_array_equal(data.unit_query, [0, 0, 0, 1, 1])
    np.testing.assert_array_equal(data.unit_weight, [6, 6, 5, 3, 7])
    x = X[[0, 1, 2, 1, 3], 0]  # the units' documents; the constant columns are dropped
    np.testing.assert_allclose(data.features, np.c_[np.ones(5), (x - x.mean()) / x.std()], rtol=1e-12)
    # (rank 1's single impression counts)
    with pytest.raises(ValueError, match="rank 2 has no impressions .*lower max_rank to at most 1"):
        P._em_data(P._check_table([0, 0], [0, 1], [1, 3], None, [1, 2], [1, 1]), np.eye(2), 3)
    with pytest.raises(ValueError, match="X must be numeric"):
        em_propensities([0], [0], [1], [2], [1], X=np.array([["a"]]), bootstrap=0, rng=0)


def test_weighted_gram_in_chunks_and_the_em_start():
    data, _ = _hand_em_data()
    rng = np.random.default_rng(2)
    f, w = rng.normal(size=(7, 3)), rng.uniform(size=7)
    np.testing.assert_allclose(EM._weighted_gram(f, w, chunk=3), f.T @ np.diag(w) @ f, rtol=1e-12)
    theta, coef = P._em_start(data)
    rate = 9.0 / 27.0 / 0.5  # clicks / impressions over theta = 1/2
    np.testing.assert_allclose(theta, [0.5, 0.5, 0.5])
    np.testing.assert_allclose(coef, [np.log(rate / (1.0 - rate)), 0.0], rtol=1e-12)
    np.testing.assert_array_equal(P._penalty(3, 2.5), [0.0, 2.5, 2.5])


def test_a_resample_is_the_data_with_each_query_repeated():
    # Query 0 drawn twice and query 1 not: its counts double and query 1's units go.
    data, _ = _hand_em_data()
    resampled, kept = EM._em_resample(data, np.array([2.0, 0.0]))
    np.testing.assert_array_equal(kept, [0, 1, 2])
    np.testing.assert_array_equal(resampled.cell_unit, [0, 1, 2])
    np.testing.assert_array_equal(resampled.cell_rank0, [0, 1, 2])
    np.testing.assert_array_equal(resampled.cell_impressions, [12, 12, 10])
    np.testing.assert_array_equal(resampled.cell_clicks, [6, 2, 0])
    np.testing.assert_array_equal(resampled.unit_weight, [12, 12, 10])
    np.testing.assert_array_equal(resampled.unit_query, [0, 0, 0])
    np.testing.assert_array_equal(resampled.features, data.features[:3])
    assert resampled.n_queries == 2 and resampled.max_rank == 3
    resampled, kept = EM._em_resample(data, np.array([0.0, 3.0]))
    np.testing.assert_array_equal(kept, [3, 4])
    np.testing.assert_array_equal(resampled.cell_unit, [0, 1])
    np.testing.assert_array_equal(resampled.cell_clicks, [9, 6])


def test_a_theta_at_one_pushed_beyond_is_held_and_newton_needs_a_negative_definite_hessian():
    grad = np.array([2.0, 1.0, -1.0, 0.5])
    np.testing.assert_array_equal(EM._em_free(np.array([0.0, -0.5, 0.0]), grad), [False, True, True, True])
    np.testing.assert_array_equal(EM._em_free(np.array([-1e-10, -0.5, 0.0]), grad), [False, True, True, True])
    np.testing.assert_array_equal(EM._em_free(np.array([-1e-8, -0.5, 0.0]), grad), [True, True, True, True])
    hess = -np.diag([1.0, 2.0, 4.0, 5.0])
    step = EM._em_newton_direction(np.array([0.0, -0.5, 0.0]), grad, hess)
    np.testing.assert_allclose(step, [0.0, 0.5, -0.25, 0.1])
    assert EM._em_newton_direction(np.array([-1.0, -0.5, -0.2]), grad, -hess) is None


@pytest.mark.parametrize(
    "name,value,message",
    [
        ("iterations", 0, "iterations must be an integer >= 1"),
        ("iterations", True, "iterations must be an integer >= 1"),
        ("iterations", 2.0, "iterations must be an integer >= 1"),
        ("tol", 0.0, "tol must be positive"),
        ("l2", -1e-9, "l2 must be >= 0"),
        ("newton_steps", 0, "newton_steps must be an integer >= 1"),
        ("newton_steps", True, "newton_steps must be an integer >= 1"),
        ("newton_steps", 1.0, "newton_steps must be an integer >= 1"),
        ("cross_fit", True, "cross_fit must be an integer >= 1"),
        ("cross_fit", 2.0, "cross_fit must be an integer >= 1"),
    ],
)
def test_em_options_are_checked(name, value, message):
    with pytest.raises(ValueError, match=message):
        em_propensities([0, 0], [0, 1], [1, 2], [5, 5], [2, 1], X=np.eye(2), bootstrap=0, rng=0, **{name: value})


def test_em_accepts_the_boundary_options_and_reports_its_info():
    rng = np.random.default_rng(9)
    table, X, _ = simulate_table(40, 4, eta=1.0, sessions=20, rng=rng, n_rankers=1, n_features=2)
    t = one_ranker(table)
    est = em_propensities(
        **t,
        X=X,
        l2=0.0,
        iterations=1,
        newton_steps=np.int64(2),
        cross_fit=np.int64(1),
        bootstrap=np.int64(3),
        level=0.8,
        rng=0,
    )
    info = est.info
    assert info["iterations"] == 1 and not info["converged"] and 0 <= info["newton_steps"] <= 1
    assert info["documents"] == 160 and info["features"] == 2
    assert info["impressions"] == float(np.sum(t["impressions"])) and info["clicks"] == float(np.sum(t["clicks"]))
    assert len(info["examination"]) == 4 and len(info["relevance_coefficients"]) == 3
    np.testing.assert_allclose(est.propensity, np.array(info["examination"]) / info["examination"][0])
    assert info["relevance_model"] == "logistic" and info["cross_fit"] == 1 and info["band"] == "refit"
    assert info["bootstrap"] == 3 and est.level == 0.8 and est.method == "regression-em"
    assert info["identification_version"] == P.IDENTIFICATION_VERSION
    data = P._em_data(P._check_table(t["query"], t["doc"], t["rank"], None, t["impressions"], t["clicks"]), X, 4)
    coef = np.array(info["relevance_coefficients"])
    assert info["log_likelihood"] == pytest.approx(
        P._em_loglik(data, np.array(info["examination"]), coef, data.features @ coef, np.zeros(3)), rel=1e-12
    )


def _rank_counts(clicks, impressions, moved=0):
    """EM data of one unit per rank (units shown at one rank each), plus ``moved`` impressions
    of one extra unit shown at ranks 1 and 2 (rank variation), features unused."""
    k = len(clicks)
    cells = [(u, u, n, c) for u, (n, c) in enumerate(zip(impressions, clicks, strict=True))]
    if moved:
        cells += [(k, 0, moved // 2, 0), (k, 1, moved - moved // 2, 0)]
    unit, rank0, n, c = (np.array(v) for v in zip(*cells, strict=True))
    units = unit.max() + 1
    return EM._EMData(
        n_queries=units,
        max_rank=k,
        cell_unit=unit,
        cell_rank0=rank0,
        cell_impressions=n.astype(float),
        cell_clicks=c.astype(float),
        unit_query=np.arange(units),
        unit_weight=np.bincount(unit, weights=n).astype(float),
        features=np.ones((units, 1)),
    )


@pytest.mark.parametrize("m,third,falls", [(600, 0.3, True), (580, 0.3, False), (100000, 0.32, False)])
def test_the_collapse_rule_at_its_boundaries(m, third, falls):
    # K = 4: rank 1 clicked 50%, rank 2 45%, ranks 3..4 (K/2+1..K) 30% and 50% (so which ranks
    # count matters), together 40%, exactly FALL_RATIO = 0.8 of rank 1. With m impressions a rank
    # the gap is 0.1 / sqrt(p (1 - p) (1/m + 1/2m)) standard errors, p the pooled rate 0.4333:
    # 4.04 at m = 600, 3.97 at m = 580, either side of FALL_Z = 4. With rank 3 at 32% the
    # bottom's 41% is above 0.8 of rank 1's however many standard errors it lies below.
    clicks = [m // 2, round(0.45 * m), round(third * m), m // 2]
    data = _rank_counts(clicks, [m] * 4)
    diagnostics, warnings = em_identification(data, np.ones(4), flexible=False)
    bottom = (third + 0.5) / 2
    assert diagnostics["click_rate_top"] == 0.5 and diagnostics["click_rate_bottom"] == pytest.approx(bottom)
    assert diagnostics["rank_variation"] == 0.0
    assert diagnostics["collapsed"] is falls and diagnostics["identified"] is not falls
    assert (len(warnings) == 1) is falls
    # spread of exactly FLAT_SPREAD is not flat
    assert not em_identification(data, np.array([0.05, 0.0, 0.025, 0.0]), flexible=False)[0]["collapsed"]
    assert em_identification(data, np.array([0.05, 0.001, 0.025, 0.001]), flexible=False)[0]["collapsed"] is falls


def test_rank_variation_of_exactly_the_threshold_is_not_one_rank():
    # 5 of 100 impressions on a unit shown at two ranks: RANK_VARIATION = 0.05 exactly, not below it
    data = _rank_counts([24, 23, 10, 20], [24, 24, 24, 23], moved=5)
    diagnostics, warnings = em_identification(data, np.ones(4), flexible=True)
    assert diagnostics["rank_variation"] == 0.05
    assert diagnostics["identified"] and not warnings
    one_rank = _rank_counts([24, 23, 10, 20], [24, 24, 24, 23], moved=4)
    assert not em_identification(one_rank, np.ones(4), flexible=True)[0]["identified"]


def test_document_ids_are_per_query_and_may_repeat_across_queries():
    # More queries than distinct document ids, each id in every query: (query, document) keys
    # must stay one per pair (a key q / n_docs + d would merge (2, 0) with (0, 1) here).
    table, _ = _tiny_log(7)
    local = {**table, "doc": table["doc"] % 100}  # ids 0..3 in each of the 12 queries
    np.testing.assert_allclose(
        harvest_propensities(**local, bootstrap=0, rng=0).propensity,
        harvest_propensities(**table, bootstrap=0, rng=0).propensity,
        rtol=1e-12,
    )
    assert (
        P._harvest_statistics(P._check_table(**local), 4).n_intervention_docs
        == P._harvest_statistics(P._check_table(**table), 4).n_intervention_docs
        > 40
    )
    single = one_ranker(table)
    X = np.random.default_rng(0).normal(size=(1200, 2))
    local_single = {**single, "doc": single["doc"] % 100}
    X_local = X[:4]  # the same features for document d of every query
    X_global = X_local[single["doc"] % 100]
    by_row = {**single, "doc": np.arange(len(single["doc"]))}
    a = em_propensities(**local_single, X=X_local, bootstrap=0, rng=0, tol=1e-10)
    b = em_propensities(**by_row, X=X_global, bootstrap=0, rng=0, tol=1e-10)
    np.testing.assert_allclose(a.propensity, b.propensity, rtol=1e-8)
    assert a.info["documents"] == b.info["documents"] == 48


def test_ranker_sessions_of_rows_all_beyond_k_are_empty():
    table = _messy_log(3)
    t = P._check_table(**table)
    rankers, sessions = P._ranker_sessions(P._rows(t, t.rank > 4), 4)
    assert rankers.size == 0 and sessions.size == 0


def test_harvest_swap_with_the_lower_rank_clicked_every_time():
    # Rank 2 clicked on all 20 impressions and rank 1 on 6 of 20: c* sits on the bound 1 / p_2,
    # theta_2 = 1 and the click rate at rank 1 is p_1 / p_2 = 0.3, so p_2 = 1 / 0.3.
    table = {
        "query": [0, 0, 0, 0],
        "doc": [0, 1, 0, 1],
        "rank": [1, 2, 2, 1],
        "ranker": [0, 0, 1, 1],
        "impressions": [10, 10, 10, 10],
        "clicks": [3, 10, 10, 3],
    }
    est = harvest_propensities(**table, bootstrap=0, rng=0)
    np.testing.assert_allclose(est.propensity, [1.0, 1.0 / 0.3], rtol=1e-9)
    assert est.info["converged"]


# (pair (i, j) of 0-based ranks, which side is clicked on every impression, log p, whether c* is on its bound)
_SATURATED = {
    # rank 3 of (1, 3) clicked every time with p_3 >> p_1: c* = 1 / p_3 and the pair's term is
    # rank 1's alone, T(log p_1 - log p_3)
    "second": ((0, 2), "j", [-2.5, -0.4, 0.0, -0.7], True),
    # rank 1 of (1, 3) clicked every time, on fewer clicks than rank 3 has (c* = 1 / p_1 still)
    "first-fewer-clicks": ((0, 2), "i", [0.0, -0.4, -2.5, -0.7], True),
    # a saturated rank with the smaller p of its pair: the other rank's skips keep c* interior
    "first-below": ((1, 3), "i", [0.0, -0.9, -0.6, -0.2], False),
    "second-below": ((0, 2), "j", [0.0, -0.4, -0.9, -0.7], False),
}


@pytest.mark.parametrize("case", sorted(_SATURATED))
@pytest.mark.parametrize("scale", [1.0, 1e-4])
def test_allpairs_profile_derivatives_where_a_rank_is_clicked_every_time(case, scale):
    # Finite differences of the profile wherever a rank of a pair is clicked on every
    # impression, at the bound of c* and inside it; scale 1e-4 makes every weighted count
    # below 1 (the function is linear in the counts, so the check is the same).
    (i, j), side, log_p, bound = _SATURATED[case]
    table, _ = _tiny_log(2)
    clicks, shown = P._harvest_statistics(P._check_table(**table), 4).totals()
    if case == "first-fewer-clicks":
        shown[j, i], clicks[j, i] = 10 * shown[i, j], 3 * shown[i, j]
    a, b = (i, j) if side == "i" else (j, i)
    clicks[a, b] = shown[a, b]
    clicks, shown = clicks * scale, shown * scale
    log_p = np.array(log_p)
    p = np.exp(log_p)
    relevance = P._pair_relevance(
        p[i], p[j], clicks[i, j], shown[i, j] - clicks[i, j], clicks[j, i], shown[j, i] - clicks[j, i]
    )
    if bound:
        assert p[a] * relevance == pytest.approx(1.0, abs=1e-12)
    else:
        assert max(p[i], p[j]) * relevance < 1.0 - 1e-6
    _, grad, hess = P._allpairs_profile(log_p, clicks, shown)
    eps = 1e-6
    for k in range(4):
        e = np.zeros(4)
        e[k] = eps
        up, down = P._allpairs_profile(log_p + e, clicks, shown), P._allpairs_profile(log_p - e, clicks, shown)
        assert (up[0] - down[0]) / (2 * eps) == pytest.approx(grad[k], rel=1e-6, abs=1e-6 * scale)
        np.testing.assert_allclose((up[1] - down[1]) / (2 * eps), hess[k], rtol=1e-5, atol=1e-5 * scale)


def test_a_rank_clicked_where_rank_1_never_is_goes_to_the_upper_bound():
    # rank 1 never clicked in its pair, rank 2 clicked: the likelihood rises as p_2 -> infinity,
    # held at the bound 1e4
    table = {
        "query": [0, 0, 0, 0],
        "doc": [0, 1, 0, 1],
        "rank": [1, 2, 2, 1],
        "ranker": [0, 0, 1, 1],
        "impressions": [10, 10, 10, 10],
        "clicks": [0, 4, 3, 0],
    }
    est = harvest_propensities(**table, bootstrap=0, rng=0)
    assert est.propensity[1] == pytest.approx(1e4, rel=1e-9) and est.info["converged"]


def test_allpairs_fit_stopped_by_its_iteration_cap_is_not_converged():
    table, _ = _tiny_log(0)
    clicks, shown = P._harvest_statistics(P._check_table(**table), 4).totals()
    capped = H._allpairs_fit(clicks, shown, max_iter=1)
    assert capped.iterations == 1 and not capped.converged
    full = H._allpairs_fit(clicks, shown)
    assert full.converged and 1 < full.iterations < 50
    assert full.loglik > capped.loglik


def test_harvest_statistics_where_every_document_is_shown_at_every_rank():
    # 4 rankers showing 4 documents in the 4 cyclic orders: each (query, document) has a run of
    # 4 cells, and every rank pair (also 1-3, 1-4, 2-4) holds all of them.
    rng = np.random.default_rng(11)
    rows = [
        (q, 10 * q + d, (d + r) % 4 + 1, r, 20, int(rng.integers(0, 21)))
        for q in range(3)
        for r in range(4)
        for d in range(4)
    ]
    table = {name: np.array([row[i] for row in rows]) for i, name in enumerate(COLUMNS)}
    _, clicks, shown = _brute_force_allpairs(table, {r: 60.0 for r in range(4)}, K=4)
    got_clicks, got_shown = P._harvest_statistics(P._check_table(**table), 4).totals()
    np.testing.assert_allclose(got_clicks, clicks, rtol=1e-12)
    np.testing.assert_allclose(got_shown, shown, rtol=1e-12)
    assert np.all(got_shown[~np.eye(4, dtype=bool)] > 0)


def test_allpairs_profile_derivatives_with_a_pair_never_clicked():
    # c* = 0 for a pair without clicks: its terms vanish, and so must its gradient and
    # Hessian entries (no 0 / 0 from the profile's elimination of its log c)
    table, _ = _tiny_log(2)
    clicks, shown = P._harvest_statistics(P._check_table(**table), 4).totals()
    clicks[1, 3] = clicks[3, 1] = 0.0
    log_p = np.array([0.0, -0.4, -0.9, -0.7])
    _, grad, hess = P._allpairs_profile(log_p, clicks, shown)
    assert np.all(np.isfinite(hess))
    eps = 1e-6
    for k in range(4):
        e = np.zeros(4)
        e[k] = eps
        up, down = P._allpairs_profile(log_p + e, clicks, shown), P._allpairs_profile(log_p - e, clicks, shown)
        assert (up[0] - down[0]) / (2 * eps) == pytest.approx(grad[k], rel=1e-6, abs=1e-6)
        np.testing.assert_allclose((up[1] - down[1]) / (2 * eps), hess[k], rtol=1e-5, atol=1e-5)


def test_the_one_step_band_runs_no_em_and_the_refit_band_counts_unconverged_replicates():
    # One EM iteration stops every refit replicate short of convergence (counted); the one-step
    # band refits nothing. Newton steps are counted, at most one an iteration.
    rng = np.random.default_rng(12)
    table, X, _ = simulate_table(60, 4, eta=1.0, sessions=20, rng=rng, n_rankers=1, n_features=2)
    t = one_ranker(table)
    refit = em_propensities(**t, X=X, iterations=1, bootstrap=3, rng=0)
    one_step = em_propensities(**t, X=X, iterations=1, bootstrap=3, rng=0, band="one-step")
    assert refit.info["bootstrap_unconverged"] == 3 and one_step.info["bootstrap_unconverged"] == 0
    assert one_step.info["band"] == "one-step"
    full = em_propensities(**t, X=X, bootstrap=0, rng=0, tol=1e-10)
    assert full.info["converged"] and 1 <= full.info["newton_steps"] <= full.info["iterations"]


def test_the_identification_check_on_two_ranks_one_impression_and_two_folds():
    # K = 2: rank 2 is the bottom half; clicks fall from 50% to 30% on 2000 impressions a rank
    data = _rank_counts([1000, 600], [2000, 2000])
    assert em_identification(data, np.ones(2), flexible=False)[0]["collapsed"]
    # one impression at rank 1 is a click rate, not "no impressions"
    assert em_identification(_rank_counts([1, 0], [1, 3]), np.ones(2), flexible=False)[0]["click_rate_top"] == 1.0
    # trees cross-fitted over two folds on a one-rank log: identified by their form only, said so
    diagnostics, warnings = em_identification(data, np.array([1.0, 0.6]), flexible=True, cross_fit=2)
    assert not diagnostics["identified"] and len(warnings) == 1
    assert "identified only by the relevance model's form across queries" in warnings[0]
    assert "cross-fitted over 2 folds" in warnings[0]


def test_the_e_step_keeps_theta_inside_zero_one():
    # rank 1 clicked on every impression: the theta M-step gives exactly 1, held at 1 - 1e-12
    # (the likelihood's log(1 - theta gamma) and the Newton step's log theta stay finite)
    data = _rank_counts([10, 3, 0], [10, 10, 10])
    # and rank 3, never clicked and believed never examined, at 1e-12 rather than 0
    theta, _ = EM._posteriors(data, np.array([0.9, 0.5, 0.0]), np.zeros(3))
    assert theta[0] == 1.0 - 1e-12 and 0.0 < theta[1] < 1.0 and theta[2] == 1e-12


def test_tree_em_starts_where_logistic_em_does():
    # theta flat at 1/2, every relevance logit at the overall click rate over 1/2: the first
    # refit sees the posterior relevance from there
    _, _, data = _em_problem()
    seen = []

    def record(features, label, weight):
        seen.append(label.copy())
        return np.zeros(len(label))

    EM._em_fit_trees(data, record, iterations=1, tol=1e-6)
    theta, coef = P._em_start(data)
    _, positives = EM._posteriors(data, theta, np.full(len(data.unit_weight), coef[0]))
    np.testing.assert_allclose(seen[0], np.clip(positives / data.unit_weight, 0.0, 1.0), rtol=1e-12)


def test_a_resample_that_never_shows_a_rank_is_left_out_and_one_replicate_makes_a_band():
    rng = np.random.default_rng(16)
    table, X, _ = simulate_table(30, 4, eta=1.0, sessions=30, rng=rng, n_rankers=1, n_features=2)
    t = one_ranker(table)
    keep = (t["rank"] < 4) | (t["query"] == 0)  # rank 4 shown in query 0 only
    t = {name: values[keep] for name, values in t.items()}
    est = em_propensities(**t, X=X, bootstrap=12, rng=1)
    counts = P._query_resamples(30, 12, 1)
    assert np.sum(counts[:, 0] == 0) >= 3  # resamples without query 0 (rank 4) exist
    # left out rather than fitted (a fit without rank 4's impressions never converges)
    assert est.info["bootstrap_unconverged"] == 0
    assert np.all(np.isfinite(est.low)) and np.all(est.low <= est.propensity)
    assert P._query_resamples(30, 1, 0)[0, 0] > 0  # this one resample shows rank 4
    one = em_propensities(**t, X=X, bootstrap=1, rng=0)
    assert np.all(np.isfinite(one.high)) and np.all(one.low <= one.propensity) and np.all(one.propensity <= one.high)


@pytest.mark.parametrize("top,bottom,collapsed", [(1, 12, False), (1, 16, True), (12, 1, False), (16, 1, True)])
def test_the_collapse_rule_with_a_single_impression_on_one_side(top, bottom, collapsed):
    # K = 2, every impression at one side clicked and none at the other: with n impressions on
    # the other side the gap is sqrt(n + 1) standard errors (p = 1 / (n + 1) or n / (n + 1)),
    # 3.6 at n = 12 and 4.1 at n = 16, either side of FALL_Z; a standard error that counted the
    # single impression as two would put n = 12 at 4.9
    clicks = [top, 0] if bottom == 1 else [1, 0]
    data = _rank_counts(clicks, [top, bottom])
    assert em_identification(data, np.ones(2), flexible=False)[0]["collapsed"] is collapsed


def test_tree_em_with_an_intercept_only_model_converges():
    # an intercept-only relevance model is EM's saturated case: it converges to the click-rate
    # ratio within the iterations, and says so
    _, _, data = _em_problem()

    def intercept(features, label, weight):
        rate = np.clip(np.sum(label * weight) / np.sum(weight), 1e-6, 1 - 1e-6)
        return np.full(len(label), np.log(rate / (1.0 - rate)))

    theta, _, iterations, converged, _ = EM._em_fit_trees(data, intercept, iterations=200, tol=1e-8)
    assert converged and iterations < 200
    rate = np.bincount(data.cell_rank0, weights=data.cell_clicks) / np.bincount(
        data.cell_rank0, weights=data.cell_impressions
    )
    np.testing.assert_allclose(theta / theta[0], rate / rate[0], rtol=1e-5)


def test_the_one_step_band_is_one_newton_step_per_resample():
    # phi_b = phi_hat - H^-1 sum_q m_bq s_q on the free coordinates (Hu and Kalbfleisch), solved
    # here directly: its percentile band is the estimate's
    t, X, data = _em_problem()
    est = em_propensities(**t, X=X, bootstrap=40, level=0.8, rng=3, band="one-step", tol=1e-10)
    theta, coef = np.array(est.info["examination"]), np.array(est.info["relevance_coefficients"])
    pen = P._penalty(data.features.shape[1], 1.0)
    _, grad, hess, scores = P._em_derivatives(data, np.log(theta), coef, pen, per_query=True)
    counts = P._query_resamples(data.n_queries, 40, 3)
    g = counts @ scores
    g[:, 5:] -= pen * coef
    free = EM._em_free(np.log(theta), grad)
    steps = np.zeros_like(g)
    steps[:, free] = np.linalg.solve(-hess[np.ix_(free, free)], g[:, free].T).T
    log_theta = np.log(theta) + steps[:, :5]
    low, high = P._percentile_band(np.exp(log_theta - log_theta[:, :1]), est.propensity, 0.8)
    np.testing.assert_allclose(est.low, low, rtol=1e-6)
    np.testing.assert_allclose(est.high, high, rtol=1e-6)


def test_harvest_statistics_where_only_the_first_document_has_the_longest_run():
    # Three rankers order A, B, C as ABC, BAC and CBA: A (the first (query, document)) is shown
    # at ranks 1, 2, 3, B and C at two ranks each, so only A's run of cells pairs ranks 1 and 3.
    order = {0: "ABC", 1: "BAC", 2: "CBA"}
    rows = [(0, "ABC".index(d), k, r, 10, 4 - k) for r, o in order.items() for k, d in enumerate(o, start=1)]
    table = {name: np.array([row[i] for row in rows]) for i, name in enumerate(COLUMNS)}
    _, clicks, shown = _brute_force_allpairs(table, {0: 10.0, 1: 10.0, 2: 10.0}, K=3)
    got_clicks, got_shown = P._harvest_statistics(P._check_table(**table), 3).totals()
    np.testing.assert_allclose(got_clicks, clicks, rtol=1e-12)
    np.testing.assert_allclose(got_shown, shown, rtol=1e-12)
    assert got_shown[0, 2] > 0


def test_the_em_start_clips_a_click_rate_above_one_half():
    # 15 clicks in 20 impressions over theta = 1/2 is a relevance of 1.5: clipped to 1 - 1e-6,
    # so the start's logit is finite
    theta, coef = P._em_start(_rank_counts([8, 7], [10, 10]))
    np.testing.assert_allclose(theta, [0.5, 0.5])
    assert coef[0] == pytest.approx(np.log((1.0 - 1e-6) / 1e-6), rel=1e-9)  # 1 - rate rounds at 1e-10


# --------------------------------------------------------------------------- AllPairs' fit at its edges
# (the survivors of the whole run of cltr/core/propensity/harvest.py; each test names the mutants it kills)

_LO, _HI = H._LOG_P_BOUNDS


def _two_ranks(c1, n1, c2, n2):
    """AllPairs totals (K = 2) of one rank pair: rank 1 clicked c1 of n1 times, rank 2 c2 of n2."""
    return np.array([[0.0, c1], [c2, 0.0]]), np.array([[0.0, n1], [n2, 0.0]])


def test_harvest_refuses_a_log_without_interventions():
    # two rankers that show every document at the same rank: no (query, document) at two ranks
    # (raise removed: the statistics would be empty, and the error only the connectivity one)
    table = {
        "query": [0, 0, 0, 0],
        "doc": [0, 1, 0, 1],
        "rank": [1, 2, 1, 2],
        "ranker": [0, 0, 1, 1],
        "impressions": [10, 10, 10, 10],
        "clicks": [4, 2, 3, 1],
    }
    with pytest.raises(ValueError, match=r"no \(query, document\) was shown at two different ranks <= 2"):
        harvest_propensities(**table, bootstrap=0, rng=0)


def test_a_pair_clicked_every_time_at_its_larger_p_has_probability_at_most_one():
    # A pair shown only at its rank of larger p, clicked every time: c* = 1 / p, theta = p c* = 1
    # up to rounding, and the profile log-likelihood is c log(theta) with theta clamped to 1, so
    # <= 0 (and 0 up to rounding). Kills ``ta = np.minimum(p[i] * c, 1.0)`` and the same line of
    # tb, 1.0 -> 2.0: a product rounded above 1 would give a log-likelihood above 0.
    rng = np.random.default_rng(0)
    for side in (0, 1):
        for _ in range(100):
            d = rng.uniform(0.01, 3.0)
            clicks, shown = np.zeros((2, 2)), np.zeros((2, 2))
            a, b = (0, 1) if side == 0 else (1, 0)
            clicks[a, b] = shown[a, b] = 7.0
            loglik = P._allpairs_profile(np.array([0.0, -d if side == 0 else d]), clicks, shown)[0]
            assert -1e-12 < loglik <= 0.0


def test_a_tie_of_two_ranks_clicked_every_time_is_a_kink_the_fit_lands_on():
    # Both ranks clicked on every impression: the profile is c1 min(0, -x) + c2 min(0, x) in
    # x = log p_2, a kink at 0 with no smooth part, so at x = 0 the gradient and Hessian are 0
    # (tie: 0.0 -> 1.0 would give them 1).
    clicks, shown = _two_ranks(20.0, 20.0, 20.0, 20.0)
    loglik, grad, hess = P._allpairs_profile(np.zeros(2), clicks, shown)
    assert loglik == 0.0
    np.testing.assert_array_equal(grad, 0.0)
    np.testing.assert_array_equal(hess, 0.0)
    # From x = -1 the step of 2 lands on x = 1, where the likelihood is as low (-20) as at -1:
    # Armijo refuses it and the halved step lands on the kink (+ -> - in the Armijo test would
    # take x = 1, then x = -1, ... to the iteration cap; trial - log_p -> + in ``moved`` stops
    # at once, unconverged).
    fit = H._allpairs_fit(clicks, shown, start=np.array([0.0, -1.0]))
    assert fit.converged and fit.log_p[1] == 0.0 and fit.iterations == 2


def test_allpairs_fit_next_to_a_kink_is_not_converged():
    # Rank 2 of (1, 2) clicked 30 of 30 times, rank 1 10 of 10: a kink at log p_2 = 0 with
    # slopes 30 / 40 and -10 / 40 per impression. Started 1e-11 below it, every step the line
    # search tries (t >= 2^-33, a move >= 2.3e-10) overshoots to a lower value: no ascent left,
    # and a gradient of 0.75 is not "nearly stationary" (1e-08 -> 1.00000001 calls it converged).
    clicks, shown = _two_ranks(10.0, 10.0, 30.0, 30.0)
    fit = H._allpairs_fit(clicks, shown, start=np.array([0.0, -1e-11]))
    assert not fit.converged and fit.iterations == 1 and fit.log_p[1] == -1e-11


def test_allpairs_fit_backtracks_to_a_kink_from_near_it():
    # Close to the kink of two ranks clicked every time the capped step of 2 overshoots it and
    # only steps of t < 1e-2 are ascents; halving down to t = 1e-10 the fit ends far nearer the
    # maximum (x = 0) than it started (Armijo's 1e-4 t slope -> 1e-4 / t slope refuses every
    # such step and leaves it within 1e-2 of where it was).
    for (c1, c2), start in (((20.0, 20.0), -0.1), ((10.0, 30.0), -0.3)):
        fit = H._allpairs_fit(*_two_ranks(c1, c1, c2, c2), start=np.array([0.0, start]))
        assert abs(fit.log_p[1]) < 1e-3, (c1, c2, fit.log_p)


def test_allpairs_fit_takes_capped_newton_steps_along_a_linear_profile():
    # Rank 2 vs rank 1 both clicked every time (the kink above, at p_2 = 1: a profile linear on
    # either side, zero Hessian row), rank 3 vs rank 1 clicked 998 and 999 of 1000 times (a
    # steep curvature, diag(-H) / scale far above 1): the MLE is log p_2 = 0, log p_3 =
    # log(998 / 999). The ridge 1e-12 (1 + max diag) keeps the zero row solvable with a step
    # that the cap of 2 bounds; removed (a singular solve, gradient steps), subtracted, or
    # 1e-12 (1 - max diag) < 0 (a step downhill, gradient steps) the fit crawls to the cap,
    # and 1e-12 (2 + max diag) lands off the maximum.
    clicks = np.array([[0.0, 10.0, 999.0], [30.0, 0.0, 0.0], [998.0, 0.0, 0.0]])
    shown = np.array([[0.0, 10.0, 1000.0], [30.0, 0.0, 0.0], [1000.0, 0.0, 0.0]])
    for start in (None, [0.0, -5.0, 0.0], [0.0, -1.0, -1.0], [0.0, 1.0, 1.0]):
        fit = H._allpairs_fit(clicks, shown, start=start)
        assert fit.converged and fit.iterations < 50, start
        np.testing.assert_allclose(fit.log_p, [0.0, 0.0, np.log(998.0 / 999.0)], atol=1e-9)


def test_allpairs_fit_from_the_bounds():
    # Started at the lower bound with an interior maximum: a rank at a bound is held only while
    # its gradient pushes beyond it (g < 0 -> g < 1 would hold it at 1e-8 for good).
    clicks = np.array([[0.0, 6.0, 5.0], [2.0, 0.0, 4.0], [3.0, 3.0, 0.0]])
    shown = np.array([[0.0, 20.0, 20.0], [20.0, 0.0, 20.0], [20.0, 20.0, 0.0]])
    free = H._allpairs_fit(clicks, shown)
    assert free.converged and np.all((_LO + 1 < free.log_p[1:]) & (free.log_p[1:] < 0.0))
    for start in ([0.0, _LO, _HI], [0.0, _LO, _LO], [0.0, _HI, _LO]):
        fit = H._allpairs_fit(clicks, shown, start=np.array(start))
        assert fit.converged
        np.testing.assert_allclose(fit.log_p, free.log_p, atol=1e-9)
    # Rank 2 never clicked (to its lower bound 1e-8) and rank 3 clicked once in 20000 times
    # against rank 1, half the time against rank 2: p_3 about 1e-4, so rank 2's gradient at its
    # bound is -U theta / (1 - theta) with theta = 1e-8 c*_23 ~ 5e-5, about 2.5e-8 a unit of
    # scale. Held there (x <= lo), the fit converges; freed (x <= lo -> x < lo) its step is
    # clipped away and no line search passes while that gradient stays above 1e-8.
    clicks = np.array([[0.0, 5.0, 10.0], [0.0, 0.0, 0.0], [1.0, 10.0, 0.0]])
    shown = np.array([[0.0, 20.0, 20.0], [20.0, 0.0, 20.0], [20000.0, 20.0, 0.0]])
    fit = H._allpairs_fit(clicks, shown)
    assert fit.converged and fit.log_p[1] == _LO
    grad = P._allpairs_profile(fit.log_p, clicks, shown)[1] / shown.sum()
    assert grad[1] < -1e-8 and abs(grad[2]) < 1e-8


def test_allpairs_fit_is_the_same_on_counts_scaled_below_one():
    # The profile is linear in the counts and the fit's tests divide by their total, so counts
    # scaled by 1e-6 (a total below 1) give the same fit; with the total floored at 1 (1e-300 ->
    # 1.0) the gradient test is 1e6 times looser and rank 2 stops far from its lower bound.
    for clicks, shown in (
        (np.array([[0.0, 6.0, 5.0], [0.0, 0.0, 0.0], [3.0, 0.0, 0.0]]), np.full((3, 3), 20.0) - 20.0 * np.eye(3)),
        (np.array([[0.0, 6.0, 5.0], [2.0, 0.0, 4.0], [3.0, 3.0, 0.0]]), np.full((3, 3), 20.0) - 20.0 * np.eye(3)),
    ):
        fit, small = H._allpairs_fit(clicks, shown), H._allpairs_fit(clicks * 1e-6, shown * 1e-6)
        assert fit.converged and small.converged
        np.testing.assert_allclose(small.log_p, fit.log_p, atol=1e-10)


def test_allpairs_fit_stops_at_200_iterations_by_default(monkeypatch):
    # A profile that rises at every call while its gradient flips sign with log p_2: Newton
    # steps of 1 back and forth, each accepted, never converging; the default cap (200) stops it.
    calls = []

    def endless(log_p, pair_clicks, pair_impressions):
        calls.append(1)
        return float(len(calls)), np.array([0.0, 1.0 if log_p[1] <= 0 else -1.0]), -np.eye(2)

    monkeypatch.setattr(H, "_allpairs_profile", endless)
    fit = H._allpairs_fit(*_two_ranks(1.0, 0.5, 0.0, 0.5))
    assert fit.iterations == 200 and not fit.converged


def test_harvest_bootstrap_defaults_to_200_and_its_edges():
    # the documented default (200 -> 201); 200 replicates take half a second, so read off the signature
    assert inspect.signature(harvest_propensities).parameters["bootstrap"].default == 200
    table = {  # two queries swapping ranks 1 and 2
        "query": [0, 0, 0, 0, 1, 1, 1, 1],
        "doc": [0, 1, 0, 1, 2, 3, 2, 3],
        "rank": [1, 2, 2, 1, 1, 2, 2, 1],
        "ranker": [0, 0, 1, 1, 0, 0, 1, 1],
        "impressions": [20, 20, 20, 20, 30, 30, 30, 30],
        "clicks": [8, 3, 4, 6, 9, 5, 6, 7],
    }
    # bootstrap=0 runs no resample, so rng may be None (> -> >= would draw 0 replicates from it)
    none = harvest_propensities(**table, bootstrap=0, rng=None)
    assert np.all(np.isnan(none.low)) and np.all(np.isnan(none.high))
    # one replicate makes a band (0 -> 1 would leave it NaN)
    one = harvest_propensities(**table, bootstrap=1, rng=0)
    np.testing.assert_array_equal(none.propensity, one.propensity)
    assert np.all(np.isfinite(one.low)) and np.all(one.low <= one.propensity) and np.all(one.propensity <= one.high)


# --------------------------------------------------------------------------- regression EM at its edges
# (the survivors of the whole run of cltr/core/propensity/em.py; each test names the mutants it kills)


def test_em_data_refusals_at_their_boundaries():
    # every row unshown: the table's own message, not a later one about rank 1 (raise removed)
    with pytest.raises(ValueError, match="no row has a rank <= max_rank = 2 and impressions > 0"):
        em_propensities([0, 0], [0, 1], [1, 2], [0, 0], [0, 0], X=np.eye(2), bootstrap=0, rng=0)
    # a rank shown once is shown (per_rank <= 0 -> <= 1 would refuse it)
    t = P._check_table([0, 0], [0, 1], [1, 2], None, [4, 1], [1, 0])
    data = P._em_data(t, np.eye(2), 2)
    np.testing.assert_array_equal(np.bincount(data.cell_rank0, weights=data.cell_impressions), [4, 1])
    # a feature spread 1.5e-12 around a mean below 1 varies (the floor is 1e-12 max(1, |mean|);
    # 1.0 -> 2.0 drops it)
    t = P._check_table([0, 0], [0, 1], [1, 2], None, [3, 3], [1, 1])
    data = P._em_data(t, np.array([[0.0], [3e-12]]), 2)
    np.testing.assert_allclose(data.features, [[1.0, -1.0], [1.0, 1.0]], rtol=1e-9)
    # one click is a click (sum <= 0 -> <= 1 would refuse the table)
    est = em_propensities(
        [0, 0, 1, 1], [0, 1, 2, 3], [1, 2, 1, 2], [5, 5, 5, 5], [1, 0, 0, 0], X=np.eye(4), bootstrap=0, rng=0
    )
    assert est.info["clicks"] == 1.0 and np.all(np.isfinite(est.propensity))


def test_cross_fitting_predicts_each_fold_from_the_others_and_skips_empty_folds():
    # A fake learner that predicts, for every held-out row, the total weight it was fitted on.
    calls = []

    def fit(features, label, weight, predict=None):
        calls.append(None if predict is None else len(predict))
        return np.full(len(label) if predict is None else len(predict), float(weight.sum()))

    features, label, weight = np.arange(5.0)[:, None], np.full(5, 0.5), np.arange(1.0, 6.0)
    unit_query = np.array([0, 0, 1, 1, 3])
    # two folds (queries 0 | 1, 3): each fold's units get the other fold's weight (folds <= 1 ->
    # <= 2 would fit all units at once)
    np.testing.assert_array_equal(EM._cross_fitted(fit, features, label, weight, unit_query, 2), [12, 12, 3, 3, 3])
    assert calls == [2, 3]
    # three folds, fold 2 empty: two fits only (and -> or would fit one more, predicting nothing)
    calls.clear()
    np.testing.assert_array_equal(EM._cross_fitted(fit, features, label, weight, unit_query, 3), [7, 7, 8, 8, 7])
    assert calls == [3, 2]


def _tree_step_at(delta):
    """One unit at rank 1 (3 clicks in 10) with theta 1/2 and its relevance logit eta delta
    below the M-step's maximiser logit(P(eta) / W) (P from eta's own E-step)."""
    from scipy.optimize import brentq
    from scipy.special import logit

    data = _rank_counts([3], [10])
    theta = np.array([0.5])

    def gap(eta):
        positives = EM._posteriors(data, theta, np.array([eta]))[1]
        return logit(positives[0] / data.unit_weight[0]) - eta - delta

    return data, theta, np.array([brentq(gap, -5.0, 5.0, xtol=1e-15)])


def test_the_tree_step_halves_a_refit_twelve_times_at_most():
    # The refit proposes eta + 1 from eta = e* - delta; the concave objective rises (to third
    # order) only along steps d <= 2 delta. delta = 1.8e-4: the 12 tries 1, 1/2, ..., 2^-11 =
    # 4.9e-4 all overshoot, so eta stays (12 -> 13 takes 2^-12; halving -> /3 takes 3^-8).
    data, theta, eta = _tree_step_at(1.8e-4)
    _, got = EM._em_tree_step(data, theta, eta, lambda f, label, w: eta + 1.0)
    np.testing.assert_array_equal(got, eta)
    # delta = 3e-4: 2^-11 <= 6e-4 is the first step taken
    data, theta, eta = _tree_step_at(3e-4)
    _, got = EM._em_tree_step(data, theta, eta, lambda f, label, w: eta + 1.0)
    np.testing.assert_array_equal(got, eta + 2.0**-11)


def test_the_reported_log_likelihood_is_the_penalised_marginal_one():
    # sum c log(pi) + (n - c) log(1 - pi) - l2 / 2 |w|^2, the intercept unpenalised, written out
    # (- -> + on the penalty would add it)
    t, X, data = _em_problem()
    est = em_propensities(**t, X=X, l2=3.0, bootstrap=0, rng=0)
    theta, coef = np.array(est.info["examination"]), np.array(est.info["relevance_coefficients"])
    pi = theta[data.cell_rank0] / (1.0 + np.exp(-(data.features @ coef)[data.cell_unit]))
    n, c = data.cell_impressions, data.cell_clicks
    expected = np.sum(c * np.log(pi) + (n - c) * np.log1p(-pi)) - 1.5 * np.sum(coef[1:] ** 2)
    assert abs(coef[1:]).max() > 0.05
    assert est.info["log_likelihood"] == pytest.approx(expected, rel=1e-12)


def test_a_theta_at_one_is_held_by_any_positive_gradient():
    # grad 0.5 > 0 at theta = 1 holds it (grad > 0 -> grad > 1 would free it); the derivatives
    # come without per-query scores unless asked (per_query False -> True)
    grad = np.array([0.5, 1.0, -1.0])
    np.testing.assert_array_equal(EM._em_free(np.array([0.0, -0.5]), grad), [False, True, True])
    _, _, data = _em_problem()
    pen = P._penalty(data.features.shape[1], 1.0)
    assert P._em_derivatives(data, np.log(np.full(5, 0.5)), np.zeros(data.features.shape[1]), pen)[3] is None


def _near_the_maximum():
    """_em_problem's data, the penalty and a point 1e-3 (in log theta and w) off the maximum."""
    _, _, data = _em_problem()
    pen = P._penalty(data.features.shape[1], 1.0)
    theta, coef, *_ = EM._em_fit(data, iterations=100, tol=1e-10, l2=1.0, newton_steps=1)
    rng = np.random.default_rng(0)
    theta = np.clip(theta * np.exp(rng.normal(0.0, 1e-3, size=5)), 1e-12, 1.0 - 1e-12)  # theta_1 = 1 held
    return data, pen, theta, coef + rng.normal(0.0, 1e-3, size=len(coef))


def test_the_newton_update_halves_its_step_ten_times_at_most(monkeypatch):
    # Near the maximum the likelihood along the Newton direction N rises for u N, 0 < u < 2 (to
    # third order). The direction scaled by 1.4 * 2^10: the ten tries u = 1.4 * 2^10, ..., 2.8
    # all fall, so nothing is taken and the flag says so (10 -> 11 takes u = 1.4; False -> True
    # in the last return claims a step); scaled by 1.4 * 2^9 the tenth try, u = 1.4, is taken.
    data, pen, theta, coef = _near_the_maximum()
    eta = data.features @ coef
    direction = EM._em_newton_direction

    for scale, taken in ((1.4 * 2**10, False), (1.4 * 2**9, True)):
        monkeypatch.setattr(EM, "_em_newton_direction", lambda lt, g, h, s=scale: s * direction(lt, g, h))
        new_theta, new_coef, _, flag = EM._em_newton_update(data, theta, coef, eta, pen)
        assert flag is taken
        if taken:
            _, grad, hess, _ = P._em_derivatives(data, np.log(theta), coef, pen)
            step = 1.4 * direction(np.log(theta), grad, hess)
            np.testing.assert_allclose(new_coef, coef + step[5:], rtol=1e-12)
            np.testing.assert_allclose(np.log(new_theta), np.log(theta) + step[:5], rtol=1e-12)
        else:
            assert new_theta is theta and new_coef is coef


def test_em_counts_the_iterations_that_took_a_newton_step(monkeypatch):
    data, _, theta, coef = _near_the_maximum()
    update = EM._em_newton_update
    flags = []

    def recording(*args):
        out = update(*args)
        flags.append(out[3])
        return out

    # one iteration is an EM step and one Newton try, taken near the maximum: counted when taken
    # (or -> and would not)
    monkeypatch.setattr(EM, "_em_newton_update", recording)
    *_, newton = EM._em_fit(data, iterations=1, tol=1e-6, l2=1.0, newton_steps=1, start=(theta, coef))
    assert flags == [True] and newton == 1
    # no Newton step ever (an indefinite Hessian): none counted, logistic or trees (0 -> 1)
    monkeypatch.setattr(EM, "_em_newton_update", update)
    monkeypatch.setattr(EM, "_em_newton_direction", lambda lt, g, h: None)
    assert EM._em_fit(data, iterations=3, tol=1e-6, l2=1.0, newton_steps=1)[-1] == 0
    intercept = lambda f, label, w: np.full(len(label), np.log(label @ w / (w.sum() - label @ w)))  # noqa: E731
    assert EM._em_fit_trees(data, intercept, iterations=3, tol=1e-6)[-1] == 0


def test_tree_em_counts_its_one_iteration_and_its_convergence():
    # iterations=1: one refit, iteration 1, not converged (p moves from flat; converged False
    # -> True at the start would report it converged, range(1, ...) -> range(2, ...) no refit)
    _, _, data = _em_problem()
    calls = []

    def intercept(features, label, weight):
        calls.append(1)
        return np.full(len(label), np.log(label @ weight / (weight.sum() - label @ weight)))

    _, _, iteration, converged, _ = EM._em_fit_trees(data, intercept, iterations=1, tol=1e-6)
    assert iteration == 1 and not converged and calls == [1]
    # Click rates equal at every rank: from theta flat at 1/2 the E-step and the refit keep it
    # there (theta' = r + (1 - r) (1/2)(1 - 2r) / (1 - r) = 1/2), so p = theta / theta_1 = 1
    # does not move and iteration 1 converges; theta_1 = 1/2 tells the normalised change apart
    # from theta * theta_1 (either / -> *)
    flat = _rank_counts([6, 6, 6], [20, 20, 20])
    theta, _, iteration, converged, _ = EM._em_fit_trees(flat, intercept, iterations=20, tol=1e-6)
    assert converged and iteration == 1
    np.testing.assert_allclose(theta, 0.5, rtol=1e-12)


def test_em_option_defaults_and_the_bands_at_zero_and_one_replicate():
    t, X, data = _em_problem()
    # the documented defaults: 200 replicates (one-step: one solve for all), 100 iterations
    # (a learner that never settles: random logits)
    assert em_propensities(**t, X=X, band="one-step", rng=0).info["bootstrap"] == 200
    noise = np.random.default_rng(0)
    est = em_propensities(
        **t, X=X, relevance_model=lambda f, label, w: noise.normal(size=len(label)), bootstrap=0, rng=0
    )
    assert est.info["iterations"] == 100 and not est.info["converged"]
    # bootstrap=0 draws nothing, so rng may be None (> -> >= would draw 0 replicates from it)
    for band in ("refit", "one-step"):
        none = em_propensities(**t, X=X, band=band, bootstrap=0, rng=None)
        assert np.all(np.isnan(none.low)) and none.info["bootstrap"] == 0
    # one replicate makes a band, refit (a refit replicate, unconverged in one iteration: the
    # refit branch with bootstrap > 0 -> > 1 would take the one-step one) or one-step (0 -> 1)
    refit = em_propensities(**t, X=X, iterations=1, bootstrap=1, rng=0)
    assert refit.info["bootstrap_unconverged"] == 1 and np.all(np.isfinite(refit.low))
    one_step = em_propensities(**t, X=X, band="one-step", bootstrap=1, rng=0)
    assert np.all(np.isfinite(one_step.low)) and np.all(np.isfinite(one_step.high))


def test_em_identification_of_an_estimate_defaults_to_no_cross_fitting():
    # trees on a one-rank log, cross_fit left at its default 1: "not identified" (1 -> 2 would
    # call them cross-fitted and word it as identified by their form across queries)
    query, doc, rank = np.array([0, 0, 1, 1]), np.array([0, 1, 2, 3]), np.array([1, 2, 1, 2])
    impressions, clicks = np.full(4, 50), np.array([20, 8, 25, 10])
    diagnostics, warnings = P.em_identification_of(
        query, doc, rank, impressions, clicks, np.eye(4), np.array([1.0, 0.7]), flexible=True
    )
    assert not diagnostics["identified"] and len(warnings) == 1 and warnings[0].startswith("not identified")


def test_latent_classes_start_from_logistic_em_and_warn_below_half_repeated(monkeypatch):
    # Half the impressions (6 of 12) in cells of >= 2m - 1 = 3: repeated_share exactly 0.5 is
    # not below one half, so no warning (< -> <=). The start is logistic EM's own fit (100
    # iterations, tol 1e-6: 100 -> 101), and no Newton step is counted (0 -> 1).
    fits = []
    em_fit = EM._em_fit

    def spy(data, **kwargs):
        fits.append(kwargs)
        return em_fit(data, **kwargs)

    monkeypatch.setattr(EM, "_em_fit", spy)
    query, doc, rank = np.array([0, 0, 1, 1, 2, 2]), np.arange(6), np.array([1, 2, 1, 2, 1, 2])
    impressions, clicks = np.array([3, 3, 2, 2, 1, 1]), np.array([2, 1, 1, 0, 1, 0])
    X = np.random.default_rng(0).normal(size=(6, 2))
    est = em_propensities(
        query, doc, rank, impressions, clicks, X, relevance_model="classes", iterations=5, bootstrap=0, rng=0
    )
    assert est.info["repeated_share"] == 0.5
    assert not any("repeated impressions" in w for w in est.info["warnings"])
    assert est.info["newton_steps"] == 0
    assert fits == [{"iterations": 100, "tol": 1e-6, "l2": 1.0, "newton_steps": 1}]


def test_refit_replicates_are_left_out_only_without_a_rank_or_any_click(monkeypatch):
    # Query 0 shows rank 2 once (its only click at rank 1), query 1 has no clicks, query 2 one
    # click. A resample of query 0 alone shows rank 2 once: fitted (shown > 0 -> > 1 would
    # leave it out); of query 1 alone it has no clicks: left out (<= 0 -> < 0 would fit it); of
    # query 2 alone one click: fitted (<= 0 -> <= 1 would leave it out). Left out, the one
    # replicate leaves the band NaN.
    query, doc, rank = np.array([0, 0, 1, 1, 2, 2]), np.arange(6), np.array([1, 2, 1, 2, 1, 2])
    impressions, clicks = np.array([10, 1, 5, 5, 5, 5]), np.array([3, 0, 0, 0, 1, 0])
    X = np.random.default_rng(1).normal(size=(6, 1))
    for counts, fitted in (([1.0, 0.0, 0.0], True), ([0.0, 1.0, 0.0], False), ([0.0, 0.0, 1.0], True)):
        monkeypatch.setattr(EM, "_query_resamples", lambda n, b, rng, c=counts: np.array([c]))
        est = em_propensities(query, doc, rank, impressions, clicks, X, iterations=5, bootstrap=1, rng=0)
        assert bool(np.all(np.isfinite(est.low))) is fitted, counts


def test_the_one_step_band_drops_the_hessians_directions_below_1e_12():
    # Two features equal up to 1e-6 noise and l2 = 0: the free Hessian's smallest singular value
    # is ~1e-13 of its largest. The one-step replicates are the least-squares Newton steps with
    # the singular values below 1e-12 of the largest dropped, here written out with an SVD
    # (rcond 1e-12 -> 1.000000000001, which numpy reads as machine precision, keeps that
    # direction and moves the band by about 0.01).
    rng = np.random.default_rng(0)
    table, X, _ = simulate_table(30, 3, eta=1.0, sessions=10, rng=rng, n_rankers=1, n_features=2)
    t = one_ranker(table)
    X = np.c_[X[:, :1], X[:, :1] + 1e-6 * rng.normal(size=(X.shape[0], 1))]
    est = em_propensities(**t, X=X, l2=0.0, bootstrap=30, rng=3, band="one-step")
    data = P._em_data(P._check_table(t["query"], t["doc"], t["rank"], None, t["impressions"], t["clicks"]), X, 3)
    theta, coef = np.array(est.info["examination"]), np.array(est.info["relevance_coefficients"])
    _, grad, hess, scores = P._em_derivatives(data, np.log(theta), coef, np.zeros(3), per_query=True)
    g = P._query_resamples(data.n_queries, 30, 3) @ scores
    free = EM._em_free(np.log(theta), grad)
    u, s, vt = np.linalg.svd(-hess[np.ix_(free, free)])
    assert 1e12 < s[0] / s[-1] < 1e15  # one direction below the cut, far above machine precision
    keep = s > 1e-12 * s[0]
    steps = np.zeros_like(g)
    steps[:, free] = (vt[keep].T @ ((u[:, keep].T @ g[:, free].T) / s[keep][:, None])).T
    log_theta = np.log(theta) + steps[:, :3]
    low, high = P._percentile_band(np.exp(log_theta - log_theta[:, :1]), est.propensity, 0.95)
    np.testing.assert_allclose(est.low, low, rtol=1e-9)
    np.testing.assert_allclose(est.high, high, rtol=1e-9)
