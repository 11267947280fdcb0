"""Regression EM with the latent-class relevance model (``cltr.core.propensity.em_classes``):
its marginal likelihood against a written-out double loop, EM's monotonicity, and recovery of
(1/k)^eta from one deterministic ranker's log whose relevance is a function of a hidden label
(where the logistic relevance model is misspecified)."""

import numpy as np
import pytest

from cltr.core import propensity as P
from cltr.core.propensity import em_classes as C
from cltr.core.propensity import em_propensities


def label_log(*, n_queries=150, n_docs=10, eta=1.0, sessions=100, seed=0):
    """One deterministic ranker's log, the simulator's clicks: relevance 1 for label-relevant
    documents and 0.1 otherwise (eps- 0.1), the label hidden; the features are the label's
    noisy copy and noise; the ranker sorts by a noisy score of the features, so each document is
    shown at one rank and the share of relevant documents per rank is not logistic in anything."""
    rng = np.random.default_rng(seed)
    n = n_queries * n_docs
    # per-query share of relevant documents varies, as it does between MQ2008 queries
    share = rng.beta(1.0, 3.0, size=n_queries).repeat(n_docs)
    relevant = rng.random(n) < share
    X = np.column_stack([relevant + rng.normal(scale=1.0, size=n), rng.normal(size=(n, 3))])
    score = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.5, size=n)).reshape(n_queries, n_docs)
    rank = np.empty_like(score, dtype=np.int64)
    np.put_along_axis(rank, np.argsort(-score, axis=1), np.arange(1, n_docs + 1)[None, :], axis=1)
    rank = rank.ravel()
    gamma = np.where(relevant, 1.0, 0.1)
    clicks = rng.binomial(sessions, (1.0 / rank) ** eta * gamma)
    query = np.repeat(np.arange(n_queries), n_docs)
    return (query, np.arange(n), rank, np.full(n, sessions), clicks), X


def small_data(seed, n_units=12, k_max=3):
    """A few units over a few ranks (some at two ranks), with features: for the oracles."""
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(n_units):
        for k in rng.choice(k_max, size=rng.integers(1, 3), replace=False):
            n = int(rng.integers(1, 6))
            rows.append((u // 3, u, k + 1, n, int(rng.integers(0, n + 1))))
    query, doc, rank, n, c = map(np.array, zip(*rows, strict=True))
    for k in range(1, k_max + 1):  # every rank shown
        if not np.any(rank == k):
            query, doc, rank, n, c = (np.r_[query, 0], np.r_[doc, 0], np.r_[rank, k], np.r_[n, 2], np.r_[c, 1])
    X = rng.normal(size=(n_units, 2))
    t = P._check_table(query, doc, rank, None, n, c)
    return P._em_data(t, X, k_max)


@pytest.mark.parametrize("classes", [2, 3])
def test_marginal_likelihood_equals_the_double_loop(classes):
    data = small_data(0)
    rng = np.random.default_rng(1)
    Z = C.prior_features(data)
    theta, levels = rng.uniform(0.2, 0.9, size=data.max_rank), rng.uniform(0.1, 0.9, size=classes)
    W = rng.normal(size=(Z.shape[1], classes - 1))
    pen = P._penalty(Z.shape[1], 0.7)
    expected = 0.0
    for u in range(len(data.unit_weight)):
        scores = np.exp(np.r_[0.0, Z[u] @ W])
        prior = scores / scores.sum()
        mixture = 0.0
        for j in range(classes):
            like = prior[j]
            for cell in np.flatnonzero(data.cell_unit == u):  # every impression, one at a time
                p = theta[data.cell_rank0[cell]] * levels[j]
                clicks, n = int(data.cell_clicks[cell]), int(data.cell_impressions[cell])
                for i in range(n):
                    like *= p if i < clicks else 1.0 - p
            mixture += like
        expected += np.log(mixture)
    expected -= 0.5 * sum(pen[i] * W[i, j] ** 2 for i in range(Z.shape[1]) for j in range(classes - 1))
    assert C.classes_loglik(data, Z, theta, levels, W, pen) == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("classes", [2, 3])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_em_step_never_lowers_the_likelihood(classes, seed):
    # EM in (z, E, R): the closed-form theta and levels maximise their part of the expected
    # complete-data log-likelihood and the prior step does not lower its part, so the
    # penalised marginal likelihood cannot fall (from any start, not only EM's own).
    data = small_data(seed)
    rng = np.random.default_rng(seed + 10)
    Z = C.prior_features(data)
    pen = P._penalty(Z.shape[1], 1.0)
    theta, levels = rng.uniform(0.05, 0.95, size=data.max_rank), rng.uniform(0.05, 0.95, size=classes)
    W = rng.normal(size=(Z.shape[1], classes - 1))
    value = C.classes_loglik(data, Z, theta, levels, W, pen)
    for _ in range(15):
        theta, levels, W = C.classes_step(data, Z, theta, levels, W, pen)
        new = C.classes_loglik(data, Z, theta, levels, W, pen)
        assert new >= value - 1e-9 * abs(value)
        value = new


def test_recovers_the_power_law_where_logistic_em_is_biased():
    # 150 queries x 10 ranks x 100 sessions; a relevance that is a hidden label's function. The
    # logistic model's per-rank misfit goes into theta; the latent classes' error is the clicks'
    # noise. Threshold: 5% mean absolute relative error at ranks 2..10 (the clicks' own noise
    # with the true relevance known is about 2-3% here), and at most half logistic EM's error.
    table, X = label_log()
    truth = 1.0 / np.arange(2, 11)
    errors = {}
    for model in ("logistic", "classes"):
        est = em_propensities(*table, X, relevance_model=model, bootstrap=0, rng=0)
        errors[model] = np.mean(np.abs(est.propensity[1:] / truth - 1.0))
    assert errors["classes"] < 0.05
    assert errors["classes"] < 0.5 * errors["logistic"]


def test_classes_are_reported_from_least_to_most_relevant_and_in_the_info():
    table, X = label_log(n_queries=60, seed=3)
    est = em_propensities(*table, X, relevance_model="classes", classes=2, bootstrap=0, rng=0)
    levels = est.info["relevance_levels"]
    assert len(levels) == 2 and levels[0] < levels[1]
    assert est.info["relevance_model"] == "classes" and est.info["classes"] == 2
    # the levels' ratio is the simulator's eps-/eps+ = 0.1, up to the clicks' noise
    assert levels[0] / levels[1] == pytest.approx(0.1, abs=0.03)


def test_classes_option_is_checked():
    table, X = label_log(n_queries=20)
    with pytest.raises(ValueError, match="classes must be an integer >= 2"):
        em_propensities(*table, X, relevance_model="classes", classes=1, bootstrap=0, rng=0)
    with pytest.raises(ValueError, match="classes applies to relevance_model 'classes'"):
        em_propensities(*table, X, classes=3, bootstrap=0, rng=0)


def test_a_log_without_repeated_impressions_is_warned_about():
    # one impression per (query, document): a mixture of Bernoullis says nothing about the
    # classes' levels, so the estimate rests on the prior's form and says so
    (query, doc, rank, n, clicks), X = label_log(n_queries=60, sessions=1)
    est = em_propensities(query, doc, rank, n, clicks, X, relevance_model="classes", iterations=20, bootstrap=0, rng=0)
    assert est.info["repeated_share"] == 0.0
    assert any("repeated impressions" in w for w in est.info["warnings"])
    table, X = label_log(n_queries=60)
    est = em_propensities(*table, X, relevance_model="classes", iterations=20, bootstrap=0, rng=0)
    assert est.info["repeated_share"] == 1.0 and not est.info["warnings"]


def test_a_bootstrap_copy_is_the_query_shown_again_not_its_counts_doubled():
    # Oracle: the table with each query written out as often as it is drawn, each copy a query
    # of its own with documents of their own, prepared by _em_data from scratch.
    data = small_data(4)
    counts = np.array([2.0, 0.0, 1.0, 3.0])
    query, doc, rank, n, c, X_rows = [], [], [], [], [], []
    for cell in range(len(data.cell_unit)):
        u = int(data.cell_unit[cell])
        for copy in range(int(counts[data.unit_query[u]])):
            query.append(int(data.unit_query[u]) * 10 + copy)
            doc.append(len(X_rows))
            X_rows.append(data.features[u, 1:])
            rank.append(int(data.cell_rank0[cell]) + 1)
            n.append(int(data.cell_impressions[cell]))
            c.append(int(data.cell_clicks[cell]))
    # one row of X per (copy, cell): the same (query, document) copy must have one doc id
    key = {}
    doc = [key.setdefault((q, tuple(x)), i) for q, x, i in zip(query, X_rows, doc, strict=True)]
    t = P._check_table(np.array(query), np.array(doc), np.array(rank), None, np.array(n), np.array(c))
    written = P._em_data(t, np.array(X_rows), data.max_rank)
    copies = P.em._em_resample_copies(data, counts)
    assert len(copies.unit_weight) == len(written.unit_weight) == int(counts[data.unit_query].sum())
    rng = np.random.default_rng(5)
    theta, levels = rng.uniform(0.2, 0.9, size=data.max_rank), np.array([0.15, 0.8])

    # the prior's features are standardised afresh by _em_data; compare the class likelihoods,
    # which depend on the cells alone, unit by unit in a canonical order
    def per_unit(d):
        ll = C.class_logliks(d, theta, levels)
        return ll[np.lexsort(ll.T)]

    np.testing.assert_allclose(per_unit(copies), per_unit(written), rtol=1e-12)
    # doubling the counts instead is a different likelihood for the mixture (not for one class)
    scaled, _ = P.em._em_resample(data, counts)
    mixture = lambda d: np.sum(np.logaddexp.reduce(C.class_logliks(d, theta, levels) + np.log(0.5), axis=1))  # noqa: E731
    assert mixture(copies) != pytest.approx(mixture(scaled), rel=1e-6)
    assert np.sum(C.class_logliks(copies, theta, levels)[:, 0]) == pytest.approx(
        np.sum(C.class_logliks(scaled, theta, levels)[:, 0]), rel=1e-12
    )


def test_the_band_re_runs_the_whole_estimate_on_copies_of_the_drawn_queries():
    # Each replicate is the estimate itself (logistic EM's start and every start of
    # classes_starts, the likeliest fixed point kept) on the resampled queries, each drawn query
    # as many copies of its documents as it was drawn: the band is the percentile band of those.
    # A warm start at the full-data fit, or counts multiplied instead of copied, gives other
    # replicates (checked below, so that this test can fail).
    table, X = label_log(n_queries=20, n_docs=4, sessions=30, seed=6)
    est = em_propensities(*table, X, relevance_model="classes", iterations=8, bootstrap=3, level=0.8, rng=9)
    data = P._em_data(P._check_table(*table[:3], None, *table[3:]), X, 4)
    counts = P._query_resamples(data.n_queries, 3, 9)
    replicates, warm, scaled = [], [], []
    full = C.classes_fit(
        data,
        classes=2,
        iterations=8,
        tol=1e-6,
        l2=1.0,
        logistic_theta=P.em._em_fit(data, iterations=100, tol=1e-6, l2=1.0, newton_steps=1)[0],
    )
    for b in range(3):
        for out, d, start in (
            (replicates, P.em._em_resample_copies(data, counts[b]), None),
            (warm, P.em._em_resample_copies(data, counts[b]), full[:3]),
            (scaled, P.em._em_resample(data, counts[b])[0], None),
        ):
            logistic = None if start else P.em._em_fit(d, iterations=100, tol=1e-6, l2=1.0, newton_steps=1)[0]
            theta = C.classes_fit(d, classes=2, iterations=8, tol=1e-6, l2=1.0, start=start, logistic_theta=logistic)[0]
            out.append(theta / theta[0])
    np.testing.assert_allclose(full[0] / full[0][0], est.propensity, rtol=1e-12)
    low, high = P._percentile_band(np.array(replicates), est.propensity, 0.8)
    np.testing.assert_allclose(est.low, low, rtol=1e-10)
    np.testing.assert_allclose(est.high, high, rtol=1e-10)
    for other in (warm, scaled):
        assert np.max(np.abs(np.array(other) - np.array(replicates))) > 1e-3
