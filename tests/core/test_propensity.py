"""Propensity estimation from click logs: intervention harvesting (AllPairs) and regression EM.

Everything is checked against a position-based-model simulator defined here (numpy only):
recovery of (1/k)^eta, hand-computed swaps, a brute-force AllPairs likelihood maximised by
a generic scipy minimiser, finite-difference derivatives, bootstrap bands (containment,
shrinkage, coverage) and the errors at the boundary.
"""

from collections import defaultdict

import numpy as np
import pytest
from scipy import optimize
from scipy.special import expit

from cltr.core import propensity as P
from cltr.core.propensity import (
    PropensityEstimate,
    em_propensities,
    harvest_propensities,
)

COLUMNS = ("query", "doc", "rank", "ranker", "impressions", "clicks")


# --------------------------------------------------------------------------- simulator


def simulate_table(
    n_queries, n_docs, *, eta, sessions, rng, n_rankers=2, noise=1.0, n_features=5, offset=-1.0, max_rank=None
):
    """A position-based-model impression table with a known propensity curve.

    Relevance gamma = sigma(x . beta + offset) from Gaussian features; ranker 0 sorts by a
    noisy copy of x . beta, ranker i > 0 by that score plus N(0, noise^2) (noisy permutations
    of each other); every (query, ranker) gets ``sessions`` sessions (an int, or one per
    ranker); the top ``max_rank`` documents of a session are shown, and clicks at rank k are
    Binomial(sessions, (1/k)^eta * gamma).

    Returns
    -------
    table : dict of ndarray, one per column of the impression table
    X : ndarray, shape (n_queries * n_docs, n_features)
    gamma : ndarray, shape (n_queries * n_docs,)
    """
    n = n_queries * n_docs
    X = rng.normal(size=(n, n_features))
    beta = rng.normal(size=n_features) * 1.5 / np.sqrt(n_features)
    gamma = expit(X @ beta + offset)
    base = (X @ beta + rng.normal(scale=0.5, size=n)).reshape(n_queries, n_docs)
    per_ranker = np.broadcast_to(np.asarray(sessions), (n_rankers,))
    shown = n_docs if max_rank is None else max_rank
    parts = []
    for ranker in range(n_rankers):
        score = base + (rng.normal(scale=noise, size=base.shape) if ranker else 0.0)
        rank = np.empty(base.shape, dtype=np.int64)
        np.put_along_axis(rank, np.argsort(-score, axis=1), np.arange(1, n_docs + 1)[None, :], axis=1)
        rank = rank.ravel()
        keep = rank <= shown
        s = int(per_ranker[ranker])
        clicks = rng.binomial(s, (1.0 / rank[keep]) ** eta * gamma[keep])
        parts.append(
            (
                np.repeat(np.arange(n_queries), n_docs)[keep],
                np.arange(n)[keep],
                rank[keep],
                np.full(keep.sum(), ranker),
                np.full(keep.sum(), s),
                clicks,
            )
        )
    table = {name: np.concatenate([p[i] for p in parts]) for i, name in enumerate(COLUMNS)}
    return table, X, gamma


def one_ranker(table, ranker=0):
    keep = table["ranker"] == ranker
    return {name: values[keep] for name, values in table.items() if name != "ranker"}


def max_relative_error(estimate, eta, ranks=slice(1, 10)):
    truth = (1.0 / estimate.rank) ** eta
    return float(np.max(np.abs(estimate.propensity[ranks] / truth[ranks] - 1.0)))


# --------------------------------------------------------------------------- recovery


@pytest.mark.parametrize("eta", [0.5, 1.0, 2.0])
def test_harvest_recovers_power_law(eta):
    rng = np.random.default_rng(11)
    table, _, _ = simulate_table(2000, 10, eta=eta, sessions=2000, rng=rng)
    est = harvest_propensities(**table, bootstrap=0, rng=rng)
    assert est.method == "allpairs-harvest" and est.info["converged"]
    assert est.propensity[0] == 1.0
    assert max_relative_error(est, eta) < 0.10, est.propensity


@pytest.mark.parametrize("eta", [0.5, 1.0, 2.0])
def test_em_recovers_power_law_from_one_ranker(eta):
    rng = np.random.default_rng(12)
    table, X, _ = simulate_table(2000, 10, eta=eta, sessions=2000, rng=rng, n_rankers=1)
    est = em_propensities(**one_ranker(table), X=X, bootstrap=0, rng=rng)
    assert est.method == "regression-em" and est.info["converged"]
    assert est.propensity[0] == 1.0
    assert max_relative_error(est, eta) < 0.10, est.propensity


def test_harvest_on_truncated_lists():
    # 20 candidates, the top 10 shown: a document may be shown by one ranker only.
    rng = np.random.default_rng(15)
    table, _, _ = simulate_table(2000, 20, eta=1.0, sessions=2000, rng=rng, max_rank=10)
    assert table["rank"].max() == 10
    est = harvest_propensities(**table, bootstrap=0, rng=rng)
    assert est.max_rank == 10 and max_relative_error(est, 1.0) < 0.10, est.propensity


def test_harvest_weights_rankers_by_their_sessions():
    # One ranker logs 20x the sessions of the other; unweighted pooling would compare
    # different documents at k and k' and miss rank 10 by -80% (or +400% the other way round).
    for sessions in ((2000, 100), (100, 2000)):
        rng = np.random.default_rng(13)
        table, _, _ = simulate_table(3000, 10, eta=1.0, sessions=sessions, rng=rng, noise=1.5)
        est = harvest_propensities(**table, bootstrap=0, rng=rng)
        assert max_relative_error(est, 1.0) < 0.10, est.propensity
        assert est.info["sessions"] == {0: 3000.0 * sessions[0], 1: 3000.0 * sessions[1]}


def test_harvest_swap_by_hand():
    # One query, documents a and b swapped between ranks 1 and 2 by two rankers with 300 and
    # 100 sessions. w = N / n_i = 4/3 for ranker 0's cells and 4 for ranker 1's, so rank 1
    # has (120 * 4/3 + 20 * 4) / 800 = 0.3 and rank 2 (20 * 4 + 30 * 4/3) / 800 = 0.15 weighted
    # click rate: with one rank pair the likelihood is saturated and p_2 = 0.15 / 0.3.
    # (Unweighted pooling would give (50 / 400) / (140 / 400) = 0.357.)
    table = {
        "query": [7, 7, 7, 7],
        "doc": [0, 1, 0, 1],
        "rank": [1, 2, 2, 1],
        "ranker": [0, 0, 1, 1],
        "impressions": [300, 300, 100, 100],
        "clicks": [120, 30, 20, 20],
    }
    est = harvest_propensities(**table, bootstrap=0, rng=0)
    np.testing.assert_allclose(est.propensity, [1.0, 0.5], rtol=1e-9)
    assert est.info["intervention_docs"] == 2 and est.info["rank_pairs"] == 1


def test_harvest_swap_with_a_rank_clicked_every_time():
    # Rank 1 clicked on all 20 impressions: c* sits on its bound 1 / p_1, theta_1 = 1 and
    # p_2 = the click rate at rank 2, (4 + 2) / 20.
    table = {
        "query": [0, 0, 0, 0],
        "doc": [0, 1, 0, 1],
        "rank": [1, 2, 2, 1],
        "ranker": [0, 0, 1, 1],
        "impressions": [10, 10, 10, 10],
        "clicks": [10, 2, 4, 10],
    }
    est = harvest_propensities(**table, bootstrap=0, rng=0)
    np.testing.assert_allclose(est.propensity, [1.0, 0.3], rtol=1e-9)
    assert est.info["converged"]


def test_em_without_informative_features_is_the_click_rate_ratio():
    # A constant feature leaves one relevance for all documents: the model is saturated and
    # theta_k is proportional to the click rate at k, whatever the truth (the confounding the
    # features are there to break).
    query = np.repeat(np.arange(50), 3)
    rank = np.tile([1, 2, 3], 50)
    impressions = np.full(150, 40)
    rng = np.random.default_rng(14)
    clicks = rng.binomial(40, np.array([0.3, 0.2, 0.12])[rank - 1])
    X = np.ones((150, 2))
    est = em_propensities(query, np.arange(150), rank, impressions, clicks, X, bootstrap=0, rng=0, tol=1e-12)
    rate = np.bincount(rank - 1, weights=clicks) / np.bincount(rank - 1, weights=impressions)
    np.testing.assert_allclose(est.propensity, rate / rate[0], rtol=1e-6)
    assert est.info["features"] == 0


# --------------------------------------------------------------------------- brute force


def _tiny_log(seed):
    """3 rankers with 5..40 sessions per query, 12 queries x 4 documents, K = 4."""
    rng = np.random.default_rng(seed)
    rows, sessions = [], defaultdict(float)
    gamma = rng.uniform(0.05, 0.6, size=(12, 4))
    for q in range(12):
        for r in range(3):
            s = int(rng.integers(5, 41))
            sessions[r] += s
            order = rng.permutation(4)
            for k, d in enumerate(order, start=1):
                rows.append((q, 100 * q + d, k, r, s, int(rng.binomial(s, (1.0 / k) ** 0.8 * gamma[q, d]))))
    table = {name: np.array([row[i] for row in rows]) for i, name in enumerate(COLUMNS)}
    return table, dict(sessions)


def _brute_force_allpairs(table, sessions, K):
    """Harvest with dicts and loops, then minimise the written-out AllPairs NLL generically."""
    N = sum(sessions.values())
    cells = defaultdict(lambda: [0.0, 0.0, set()])
    for q, d, k, r, n, c in zip(*(table[name] for name in COLUMNS), strict=True):
        if k <= K:
            cell = cells[(q, d, k)]
            cell[0] += n
            cell[1] += c
            cell[2].add(r)
    by_doc = defaultdict(dict)
    for (q, d, k), (n, c, rankers) in cells.items():
        w = N / sum(sessions[r] for r in rankers)
        by_doc[(q, d)][k] = (w * c, w * n)
    clicks, shown = np.zeros((K, K)), np.zeros((K, K))
    for at in by_doc.values():
        for k in at:
            for k2 in at:
                if k != k2:
                    clicks[k - 1, k2 - 1] += at[k][0]
                    shown[k - 1, k2 - 1] += at[k][1]
    pairs = [(k, k2) for k in range(K) for k2 in range(k + 1, K) if shown[k, k2] > 0]

    def nll(x):
        log_p = np.r_[0.0, x[: K - 1]]
        total = 0.0
        for index, (k, k2) in enumerate(pairs):
            for a, b in ((k, k2), (k2, k)):
                theta = np.exp(log_p[a] + x[K - 1 + index])
                if theta >= 1.0:
                    return 1e6
                total -= clicks[a, b] * np.log(theta) + (shown[a, b] - clicks[a, b]) * np.log1p(-theta)
        return total / shown.sum()

    x0 = np.r_[np.zeros(K - 1), np.full(len(pairs), np.log(0.2))]
    result = optimize.minimize(nll, x0, method="BFGS", options={"gtol": 1e-11, "maxiter": 10000})
    result = optimize.minimize(
        nll,
        result.x,
        method="Nelder-Mead",
        options={"xatol": 1e-11, "fatol": 1e-15, "maxiter": 200000, "maxfev": 200000},
    )
    return np.exp(np.r_[0.0, result.x[: K - 1]]), clicks, shown


@pytest.mark.parametrize("seed", [0, 1])
def test_allpairs_equals_generic_minimiser_of_written_out_likelihood(seed):
    table, sessions = _tiny_log(seed)
    oracle, clicks, shown = _brute_force_allpairs(table, sessions, K=4)
    est = harvest_propensities(**table, bootstrap=0, rng=0)
    np.testing.assert_allclose(est.propensity, oracle, atol=1e-5)
    stats = P._harvest_statistics(P._check_table(**table), 4)
    got_clicks, got_shown = stats.totals()
    np.testing.assert_allclose(got_clicks, clicks, rtol=1e-12)
    np.testing.assert_allclose(got_shown, shown, rtol=1e-12)
    assert est.info["sessions"] == {r: float(s) for r, s in sessions.items()}


@pytest.mark.parametrize("saturated", [False, True])
def test_allpairs_profile_derivatives_match_finite_differences(saturated):
    table, _ = _tiny_log(2)
    clicks, shown = P._harvest_statistics(P._check_table(**table), 4).totals()
    log_p = np.array([0.0, -0.4, -0.9, -0.7])
    if saturated:  # rank 1 clicked on every impression it shares with rank 3: c* on its bound 1 / p_1
        clicks[0, 2] = shown[0, 2]
        log_p[2] = -2.5
        p = np.exp(log_p)
        relevance = P._pair_relevance(p[0], p[2], clicks[0, 2], 0.0, clicks[2, 0], shown[2, 0] - clicks[2, 0])
        assert p[0] * relevance == pytest.approx(1.0, abs=1e-12)
    _, grad, hess = P._allpairs_profile(log_p, clicks, shown)
    eps = 1e-6
    for k in range(4):
        e = np.zeros(4)
        e[k] = eps
        up, down = P._allpairs_profile(log_p + e, clicks, shown), P._allpairs_profile(log_p - e, clicks, shown)
        assert (up[0] - down[0]) / (2 * eps) == pytest.approx(grad[k], rel=1e-6, abs=1e-6)
        np.testing.assert_allclose((up[1] - down[1]) / (2 * eps), hess[k], rtol=1e-5, atol=1e-5)


def _em_problem(seed=3):
    rng = np.random.default_rng(seed)
    table, X, _ = simulate_table(150, 5, eta=1.0, sessions=30, rng=rng, n_rankers=1, n_features=2)
    t = one_ranker(table)
    checked = P._check_table(t["query"], t["doc"], t["rank"], np.zeros_like(t["rank"]), t["impressions"], t["clicks"])
    return t, X, P._em_data(checked, X, 5)


def test_em_derivatives_match_finite_differences():
    _, _, data = _em_problem()
    pen = P._penalty(data.features.shape[1], 1.0)
    phi = np.r_[np.log([0.9, 0.5, 0.35, 0.3, 0.2]), -1.0, 0.4, -0.3]

    def value(x):
        return P._em_derivatives(data, x[:5], x[5:], pen)[0]

    _, grad, hess, scores = P._em_derivatives(data, phi[:5], phi[5:], pen, per_query=True)
    eps = 1e-6
    for i in range(len(phi)):
        e = np.zeros(len(phi))
        e[i] = eps
        assert (value(phi + e) - value(phi - e)) / (2 * eps) == pytest.approx(grad[i], rel=1e-5, abs=1e-4)
        up = P._em_derivatives(data, (phi + e)[:5], (phi + e)[5:], pen)[1]
        down = P._em_derivatives(data, (phi - e)[:5], (phi - e)[5:], pen)[1]
        np.testing.assert_allclose((up - down) / (2 * eps), hess[i], rtol=1e-5, atol=1e-3)
    # The per-query scores add up to the gradient less the penalty's part.
    np.testing.assert_allclose(scores.sum(axis=0) - np.r_[np.zeros(5), pen * phi[5:]], grad, rtol=1e-10, atol=1e-8)


def test_em_reaches_the_maximum_of_the_marginal_likelihood():
    # EM's fixed point against a generic minimiser of the written-out marginal likelihood
    # Σ c log(theta_k gamma) + (n - c) log(1 - theta_k gamma) - l2/2 |w|^2, on the same
    # standardised features.
    t, X, data = _em_problem()
    est = em_propensities(**t, X=X, bootstrap=0, rng=0, tol=1e-10, iterations=500)
    assert est.info["converged"]
    z, k0, unit = data.features, data.cell_rank0, data.cell_unit
    n, c = data.cell_impressions, data.cell_clicks

    def nll(x):
        theta = expit(x[:5])
        pi = theta[k0] * expit(z @ x[5:])[unit]
        return -(np.sum(c * np.log(pi) + (n - c) * np.log1p(-pi)) - 0.5 * np.sum(x[6:] ** 2)) / n.sum()

    result = optimize.minimize(
        nll, np.r_[np.zeros(5), np.zeros(z.shape[1])], method="BFGS", options={"gtol": 1e-10, "maxiter": 10000}
    )
    theta = expit(result.x[:5])
    assert est.info["log_likelihood"] >= -result.fun * n.sum() - 1e-6
    np.testing.assert_allclose(est.propensity, theta / theta[0], atol=2e-4)


# --------------------------------------------------------------------------- bootstrap bands


@pytest.mark.parametrize("estimator", ["harvest", "em"])
def test_band_contains_estimate_and_shrinks_with_data(estimator):
    widths = []
    for n_queries in (300, 3000):
        rng = np.random.default_rng(21)
        table, X, _ = simulate_table(n_queries, 10, eta=1.0, sessions=20, rng=rng)
        if estimator == "harvest":
            est = harvest_propensities(**table, bootstrap=100, level=0.9, rng=rng)
        else:
            est = em_propensities(**one_ranker(table), X=X, bootstrap=100, level=0.9, rng=rng, band="one-step")
        assert np.all(est.low <= est.propensity) and np.all(est.propensity <= est.high)
        assert est.low[0] == est.high[0] == 1.0
        assert np.all(est.high[1:] > est.low[1:])
        widths.append(est.high - est.low)
    # Ten times the queries: bands about sqrt(10) = 3.2 times narrower.
    assert np.all(widths[1][1:] < widths[0][1:] / 2.0), widths


@pytest.mark.parametrize("estimator", ["harvest", "em"])
def test_band_covers_the_truth_at_its_level(estimator):
    # 40 small simulations; the 90% band should cover p_3 = 1/3 about 36 times. A count
    # below 30 (rate < 0.75) has probability about 0.003 under Binomial(40, 0.9). Pooled
    # over ranks 2-10 (360 correlated events) the rate must lie in [0.78, 0.97]: a band half
    # as wide covers about 60%, one twice as wide nearly 100%. bench/propensity.py prints
    # the coverage of every rank over more simulations.
    covered = np.zeros(10)
    truth = 1.0 / np.arange(1, 11)
    for rep in range(40):
        rng = np.random.default_rng([5, rep])
        table, X, _ = simulate_table(300, 10, eta=1.0, sessions=20, rng=rng)
        if estimator == "harvest":
            est = harvest_propensities(**table, bootstrap=60, level=0.9, rng=rng)
        else:
            est = em_propensities(**one_ranker(table), X=X, bootstrap=60, level=0.9, rng=rng, band="one-step")
        covered += (est.low <= truth) & (truth <= est.high)
    assert covered[2] >= 30, covered
    assert 0.78 <= covered[1:].sum() / 360 <= 0.97, covered


def test_no_bootstrap_gives_nan_bands_and_seeds_reproduce_them():
    rng = np.random.default_rng(22)
    table, X, _ = simulate_table(200, 6, eta=1.0, sessions=20, rng=rng)
    for est in (
        harvest_propensities(**table, bootstrap=0, rng=0),
        em_propensities(**one_ranker(table), X=X, bootstrap=0, rng=0),
    ):
        assert np.all(np.isnan(est.low)) and np.all(np.isnan(est.high))
        assert np.all(np.isfinite(est.propensity))
    a = harvest_propensities(**table, bootstrap=30, rng=np.random.default_rng(4))
    b = harvest_propensities(**table, bootstrap=30, rng=np.random.SeedSequence(4))
    np.testing.assert_array_equal(a.low, b.low)
    np.testing.assert_array_equal(a.high, b.high)


# --------------------------------------------------------------------------- invariants


def test_row_order_ids_and_split_rows_change_nothing():
    rng = np.random.default_rng(23)
    table, X, _ = simulate_table(200, 6, eta=1.0, sessions=20, rng=rng)
    base = harvest_propensities(**table, bootstrap=0, rng=0)
    order = rng.permutation(len(table["query"]))
    shuffled = {name: values[order] for name, values in table.items()}
    shuffled["query"] = shuffled["query"] * 7 + 1000
    shuffled["ranker"] = np.where(shuffled["ranker"] == 0, 5, 2)
    np.testing.assert_allclose(
        harvest_propensities(**shuffled, bootstrap=0, rng=0).propensity, base.propensity, rtol=1e-9
    )
    # A row split into two (the impressions and clicks divided between them) is the same data.
    first = {name: values[:1].copy() for name, values in table.items()}
    first["impressions"][:] = 3
    first["clicks"][:] = min(int(table["clicks"][0]), 3)
    rest = {name: values.copy() for name, values in table.items()}
    rest["impressions"][0] -= 3
    rest["clicks"][0] -= first["clicks"][0]
    split = {name: np.r_[first[name], rest[name]] for name in COLUMNS}
    np.testing.assert_allclose(harvest_propensities(**split, bootstrap=0, rng=0).propensity, base.propensity, rtol=1e-9)
    em_base = em_propensities(**one_ranker(table), X=X, bootstrap=0, rng=0, tol=1e-10)
    em_shuffled = em_propensities(**one_ranker(shuffled, ranker=5), X=X, bootstrap=0, rng=0, tol=1e-10)
    np.testing.assert_allclose(em_shuffled.propensity, em_base.propensity, rtol=1e-6)


def test_max_rank_limits_the_estimate_and_at_extends_it_flat():
    rng = np.random.default_rng(24)
    table, _, _ = simulate_table(500, 12, eta=1.0, sessions=50, rng=rng)
    est = harvest_propensities(**table, max_rank=6, bootstrap=0, rng=0)
    assert est.max_rank == 6 and list(est.rank) == [1, 2, 3, 4, 5, 6]
    np.testing.assert_array_equal(
        est.at(np.array([[1, 6], [7, 40]])), [[1.0, est.propensity[5]], [est.propensity[5], est.propensity[5]]]
    )
    rows = est.to_rows()
    assert rows[2] == {
        "rank": 3,
        "propensity": float(est.propensity[2]),
        "low": rows[2]["low"],
        "high": rows[2]["high"],
    }
    assert np.isnan(rows[2]["low"])
    with pytest.raises(ValueError, match=">= 1"):
        est.at([0, 2])


def test_estimate_validates_its_shapes():
    with pytest.raises(ValueError, match="shape"):
        PropensityEstimate(np.arange(1, 4), np.ones(3), np.ones(2), np.ones(3), 0.9, "x")


# --------------------------------------------------------------------------- errors


def test_harvest_needs_two_rankers():
    rng = np.random.default_rng(25)
    table, _, _ = simulate_table(50, 5, eta=1.0, sessions=10, rng=rng, n_rankers=1)
    with pytest.raises(ValueError, match="at least 2 rankers; found only ranker 0"):
        harvest_propensities(**table, bootstrap=0, rng=0)


def test_harvest_rejects_a_rank_without_interventions():
    # Both rankers agree on ranks 3 and 4: nothing connects them to rank 1.
    query = np.zeros(8, dtype=int)
    doc = np.array([0, 1, 2, 3, 0, 1, 2, 3])
    rank = np.array([1, 2, 3, 4, 2, 1, 3, 4])
    ranker = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    impressions = np.full(8, 10)
    clicks = np.array([5, 3, 2, 1, 4, 4, 2, 1])
    with pytest.raises(ValueError, match="rank 3 has no intervention pair connecting it to rank 1"):
        harvest_propensities(query, doc, rank, ranker, impressions, clicks, bootstrap=0, rng=0)
    est = harvest_propensities(query, doc, rank, ranker, impressions, clicks, max_rank=2, bootstrap=0, rng=0)
    assert est.max_rank == 2


@pytest.mark.parametrize("estimator", ["harvest", "em"])
@pytest.mark.parametrize(
    "column,value,message",
    [
        ("clicks", 11, "clicks must not exceed impressions; row 1 has 11 clicks and 10 impressions"),
        ("clicks", -1, "clicks must be >= 0; row 1 has -1"),
        ("impressions", -2, "impressions must be >= 0; row 1 has -2"),
        ("rank", 0, "rank must be >= 1; row 1 has 0"),
    ],
)
def test_bad_counts_are_rejected(estimator, column, value, message):
    table = {
        "query": np.zeros(4, dtype=int),
        "doc": np.array([0, 1, 0, 1]),
        "rank": np.array([1, 2, 2, 1]),
        "ranker": np.array([0, 0, 1, 1]),
        "impressions": np.full(4, 10),
        "clicks": np.array([3, 1, 2, 2]),
    }
    table[column] = table[column].copy()
    table[column][1] = value
    with pytest.raises(ValueError, match=message):
        if estimator == "harvest":
            harvest_propensities(**table, bootstrap=0, rng=0)
        else:
            em_propensities(
                **one_ranker({**table, "ranker": np.zeros(4, dtype=int)}), X=np.ones((2, 1)), bootstrap=0, rng=0
            )


def test_mismatched_lengths_and_bad_options_are_rejected():
    ok = {
        "query": np.zeros(4, dtype=int),
        "doc": np.array([0, 1, 0, 1]),
        "rank": np.array([1, 2, 2, 1]),
        "ranker": np.array([0, 0, 1, 1]),
        "impressions": np.full(4, 10),
        "clicks": np.array([3, 1, 2, 2]),
    }
    with pytest.raises(ValueError, match="one length; found query 4, doc 4, rank 3"):
        harvest_propensities(**{**ok, "rank": np.array([1, 2, 2])}, bootstrap=0, rng=0)
    with pytest.raises(
        ValueError,
        match="query, doc, rank, impressions, clicks must have one length; "
        "found query 4, doc 4, rank 4, impressions 2, clicks 4",
    ):
        em_propensities(
            ok["query"], ok["doc"], ok["rank"], ok["impressions"][:2], ok["clicks"], np.ones((2, 1)), bootstrap=0, rng=0
        )
    with pytest.raises(ValueError, match="whole numbers; row 0"):
        harvest_propensities(**{**ok, "clicks": np.array([0.5, 1, 2, 2])}, bootstrap=0, rng=0)
    with pytest.raises(ValueError, match="empty"):
        harvest_propensities(*([np.array([], dtype=int)] * 6), bootstrap=0, rng=0)
    with pytest.raises(ValueError, match="max_rank must be an integer >= 2"):
        harvest_propensities(**ok, max_rank=1, bootstrap=0, rng=0)
    with pytest.raises(ValueError, match="level must lie strictly between 0 and 1"):
        harvest_propensities(**ok, level=1.0, bootstrap=10, rng=0)
    with pytest.raises(ValueError, match="bootstrap must be an integer >= 0"):
        harvest_propensities(**ok, bootstrap=-1, rng=0)
    em_ok = one_ranker(ok)
    with pytest.raises(ValueError, match=r"must be in \[0, 1\); row 1 has doc 1"):
        em_propensities(**em_ok, X=np.ones((1, 3)), bootstrap=0, rng=0)
    with pytest.raises(ValueError, match=r"row 0 has doc -1"):
        em_propensities(**{**em_ok, "doc": np.array([-1, 1])}, X=np.ones((2, 3)), bootstrap=0, rng=0)
    with pytest.raises(ValueError, match="X must be finite; row 1 of X"):
        em_propensities(**em_ok, X=np.array([[1.0], [np.nan]]), bootstrap=0, rng=0)
    with pytest.raises(ValueError, match="X must be a 2-D array"):
        em_propensities(**em_ok, X=np.ones(2), bootstrap=0, rng=0)
    with pytest.raises(ValueError, match="rank 3 has no impressions"):
        em_propensities(**em_ok, X=np.ones((2, 1)), max_rank=3, bootstrap=0, rng=0)
    with pytest.raises(ValueError, match="no clicks"):
        em_propensities(**{**em_ok, "clicks": np.zeros(2, dtype=int)}, X=np.ones((2, 1)), bootstrap=0, rng=0)


def test_one_em_step_never_lowers_the_likelihood():
    # EM's defining property, step by step: from any point, one E-step with the current
    # posteriors and the M-steps (theta in closed form, a damped logistic regression that never
    # lowers its own objective) cannot lower the penalised marginal likelihood. A step built
    # on the wrong posterior may still reach the same fixed point, so the fit's result cannot
    # tell; single steps from scattered starts can.
    _, _, data = _em_problem()
    pen = P._penalty(data.features.shape[1], 1.0)
    rng = np.random.default_rng(0)
    gains = []
    for _ in range(12):
        theta = np.sort(rng.uniform(0.05, 0.95, data.max_rank))[::-1]
        coef = rng.normal(scale=1.0, size=data.features.shape[1])
        eta = data.features @ coef
        before = P._em_loglik(data, theta, coef, eta, pen)
        new_theta, new_coef, new_eta = P._em_step(data, theta, coef, eta, pen, 3)
        np.testing.assert_allclose(new_eta, data.features @ new_coef)
        after = P._em_loglik(data, new_theta, new_coef, new_eta, pen)
        assert after >= before - 1e-9 * abs(before), (theta, coef)
        gains.append(after - before)
    assert min(gains) > 0  # away from the fixed point every step gains


def test_em_step_uses_the_posteriors_of_bayes_rule():
    # The posteriors written out by enumerating the four (examined, relevant) states of an
    # impression: a click means both; a skip rules out (1, 1) only. The theta M-step is then
    # the expected share of examined impressions per rank, and the relevance M-step is the
    # maximiser of the penalised logistic likelihood of the expected relevant impressions
    # (its gradient vanishes at the new coefficients once Newton has converged).
    _, _, data = _em_problem()
    pen = P._penalty(data.features.shape[1], 1.0)
    rng = np.random.default_rng(1)
    theta = np.sort(rng.uniform(0.1, 0.9, data.max_rank))[::-1]
    coef = rng.normal(size=data.features.shape[1])
    eta = data.features @ coef
    new_theta, new_coef, _ = P._em_step(data, theta, coef, eta, pen, 30)

    t, g = theta[data.cell_rank0], expit(eta)[data.cell_unit]
    joint = {(e, r): (t if e else 1 - t) * (g if r else 1 - g) for e in (0, 1) for r in (0, 1)}
    not_clicked = joint[0, 0] + joint[0, 1] + joint[1, 0]
    examined = joint[1, 0] / not_clicked
    relevant = joint[0, 1] / not_clicked
    n, c = data.cell_impressions, data.cell_clicks
    expected_theta = np.array(
        [
            np.sum((c + (n - c) * examined)[data.cell_rank0 == k]) / np.sum(n[data.cell_rank0 == k])
            for k in range(data.max_rank)
        ]
    )
    np.testing.assert_allclose(new_theta, expected_theta, rtol=1e-10)
    positives = np.bincount(data.cell_unit, weights=c + (n - c) * relevant, minlength=len(data.unit_weight))
    gradient = data.features.T @ (positives - data.unit_weight * expit(data.features @ new_coef)) - pen * new_coef
    assert np.max(np.abs(gradient)) < 1e-6 * np.sum(n)
