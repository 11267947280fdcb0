"""Doubly robust estimation under the position-based model: the closed form against the
per-session definition, DR without clipping is IPS, Monte Carlo unbiasedness against the
analytic expectation (clipped IPS biased), its variance against IPS, the likelihood fit."""

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from cltr.core.clicks import Displayed
from cltr.core.doubly_robust import (
    PropensityImpressions,
    dr_document_weights,
    dr_estimate,
    fit_relevance_model,
    impressions_by_propensity,
)
from cltr.core.ranking import dcg_gain

ETA = 2.0


def _examination(rank):
    return (1.0 / np.asarray(rank, dtype=np.float64)) ** ETA


def _displayed_sessions(ranks_of_ranker, doc_query, sessions_of_ranker, gamma, rng):
    """Sessions of every query shown by deterministic rankers (ranker r: ``sessions_of_ranker[r]``
    sessions of each query, its ranks ``ranks_of_ranker[r]``), clicks drawn by the PBM."""
    columns = {k: [] for k in ("session", "query", "doc", "rank", "click", "propensity", "ranker")}
    n_queries = int(doc_query.max()) + 1
    session = 0
    for ranker, (rank, n) in enumerate(zip(ranks_of_ranker, sessions_of_ranker, strict=True)):
        for _ in range(n):
            for q in range(n_queries):
                docs = np.flatnonzero(doc_query == q)
                p = _examination(rank[docs])
                columns["session"].append(np.full(len(docs), session))
                columns["query"].append(np.full(len(docs), q))
                columns["doc"].append(docs)
                columns["rank"].append(rank[docs])
                columns["click"].append((rng.random(len(docs)) < p * gamma[docs]).astype(np.int8))
                columns["propensity"].append(p)
                columns["ranker"].append(np.full(len(docs), ranker))
                session += 1
    return Displayed.from_columns(**{k: np.concatenate(v) for k, v in columns.items()})


# a tiny fixed problem: 2 queries (4 and 3 documents), 2 logging rankers; ranker 1 swaps the
# first two documents of query 0 and reverses query 1, the other documents keep their rank
DOC_QUERY = np.array([0, 0, 0, 0, 1, 1, 1])
RANKS = (np.array([1, 2, 3, 4, 1, 2, 3]), np.array([2, 1, 3, 4, 3, 2, 1]))
SESSIONS = (30, 20)  # per query, by ranker
GAMMA = np.array([0.9, 0.2, 0.6, 0.35, 0.8, 0.15, 0.5])
TAU = 0.5


def _expected_examination():
    n = sum(SESSIONS)
    return sum(s * _examination(rank) for s, rank in zip(SESSIONS, RANKS, strict=True)) / n


def test_the_closed_form_is_the_per_session_definition():
    """w_d = Σ_j [gamma_hat + (c_j - p_j gamma_hat) / max(rho_d, tau)] summed session by session."""
    rng = np.random.default_rng(3)
    shown = _displayed_sessions(RANKS, DOC_QUERY, SESSIONS, GAMMA, rng)
    table = impressions_by_propensity(shown)
    relevance = np.array([0.5, 0.1, 0.9, 0.3, 0.7, 0.4, 0.2])
    n = sum(SESSIONS)
    rho = np.zeros(len(DOC_QUERY))
    np.add.at(rho, shown.doc, shown.propensity / n)
    for clip in (None, TAU):
        documents, weight = dr_document_weights(table, relevance, np.full(2, n), clip=clip)
        expected = np.zeros(len(DOC_QUERY))
        for d, c, p in zip(shown.doc, shown.click, shown.propensity, strict=True):
            denominator = rho[d] if clip is None else max(rho[d], clip)
            expected[d] += relevance[d] + (c - p * relevance[d]) / denominator
        np.testing.assert_array_equal(documents, np.arange(len(DOC_QUERY)))
        np.testing.assert_allclose(weight, expected, rtol=1e-12, atol=1e-12)


def test_dr_without_clipping_is_ips_on_deterministic_logging():
    rng = np.random.default_rng(4)
    shown = _displayed_sessions(RANKS[:1], DOC_QUERY, (40,), GAMMA, rng)
    table = impressions_by_propensity(shown)
    ips = np.bincount(shown.doc, weights=shown.click / shown.propensity, minlength=len(DOC_QUERY))
    for relevance in (GAMMA, np.zeros(7), np.ones(7), rng.random(7)):
        documents, weight = dr_document_weights(table, relevance, np.full(2, 40))
        np.testing.assert_allclose(weight, ips[documents], rtol=1e-12, atol=1e-12)
    # with several rankers it is the policy-aware IPS estimate C(d) / rho_d
    shown = _displayed_sessions(RANKS, DOC_QUERY, SESSIONS, GAMMA, rng)
    clicks = np.bincount(shown.doc, weights=shown.click, minlength=7)
    documents, weight = dr_document_weights(impressions_by_propensity(shown), rng.random(7), np.full(2, 50))
    np.testing.assert_allclose(weight, clicks / _expected_examination(), rtol=1e-12)


def _monte_carlo_tables(n_logs, rng):
    """``n_logs`` independent logs of the tiny problem in one table: log i's documents are
    7 i .. 7 i + 6 (of its queries 2 i, 2 i + 1), so one call weighs every log; clicks per
    (document, ranker) drawn as Binomial(sessions, p_k gamma)."""
    n_docs = len(DOC_QUERY)
    rows = [(d, _examination(rank[d]), s) for rank, s in zip(RANKS, SESSIONS, strict=True) for d in range(n_docs)]
    doc = np.array([r[0] for r in rows])
    propensity = np.array([r[1] for r in rows])
    impressions = np.array([r[2] for r in rows])
    clicks = rng.binomial(impressions, propensity * GAMMA[doc], size=(n_logs, len(rows)))
    shift = np.arange(n_logs)[:, None]
    table = PropensityImpressions(
        query=(DOC_QUERY[doc] + 2 * shift).ravel(),
        doc=(doc + n_docs * shift).ravel(),
        propensity=np.tile(propensity, n_logs),
        impressions=np.tile(impressions, n_logs),
        clicks=clicks.ravel(),
    )
    clipped_ips = (clicks / np.maximum(propensity, TAU)) @ np.eye(n_docs)[doc] / sum(SESSIONS)
    ips = (clicks / propensity) @ np.eye(n_docs)[doc] / sum(SESSIONS)
    return table, ips, clipped_ips


def _estimates(table, relevance, n_logs, clip):
    _, weight = dr_document_weights(table, np.tile(relevance, n_logs), np.full(2 * n_logs, sum(SESSIONS)), clip=clip)
    return weight.reshape(n_logs, len(DOC_QUERY)) / sum(SESSIONS)


def test_dr_is_unbiased_by_monte_carlo_where_clipped_ips_is_not():
    rng = np.random.default_rng(5)
    n_logs = 4000
    table, ips, clipped_ips = _monte_carlo_tables(n_logs, rng)
    rho = _expected_examination()
    assert (rho < TAU).sum() >= 4  # the clipping bites on most documents
    wrong = 1.0 - GAMMA

    def check(estimates, expected, what):
        error = np.abs(estimates.mean(axis=0) - expected)
        standard_error = estimates.std(axis=0, ddof=1) / np.sqrt(n_logs)
        assert np.all(error < 4 * standard_error + 1e-12), (what, error / standard_error)

    check(_estimates(table, GAMMA, n_logs, TAU), GAMMA, "DR clipped, right model")
    check(_estimates(table, wrong, n_logs, None), GAMMA, "DR unclipped, wrong model")
    check(ips, GAMMA, "IPS")
    # clipped with a wrong model: gamma_hat (1 - rho / max(rho, tau)) + gamma rho / max(rho, tau)
    share = rho / np.maximum(rho, TAU)
    check(_estimates(table, wrong, n_logs, TAU), wrong * (1 - share) + GAMMA * share, "DR clipped, wrong model")
    # clipped IPS, a click at rank k weighing 1 / max(p_k, tau), has the mean
    # gamma Σ_r (sessions_r / N) p_k(r) / max(p_k(r), tau): far from gamma wherever p_k < tau
    share_clipped = sum(
        s * _examination(rank) / np.maximum(_examination(rank), TAU) for s, rank in zip(SESSIONS, RANKS, strict=True)
    ) / sum(SESSIONS)
    check(clipped_ips, GAMMA * share_clipped, "clipped IPS")
    bias = np.abs(clipped_ips.mean(axis=0) - GAMMA) / (clipped_ips.std(axis=0, ddof=1) / np.sqrt(n_logs))
    assert np.all(bias[share_clipped < 1] > 20), bias


def test_clipped_dr_with_a_good_model_has_less_variance_than_ips():
    rng = np.random.default_rng(6)
    n_logs = 4000
    table, ips, _ = _monte_carlo_tables(n_logs, rng)
    good = np.clip(GAMMA + rng.normal(0, 0.05, len(GAMMA)), 0, 1)
    dr = _estimates(table, good, n_logs, TAU)
    ratio = dr.var(axis=0, ddof=1) / ips.var(axis=0, ddof=1)
    rho = _expected_examination()
    message = f"variance DR-clip (tau {TAU}) / IPS per document: {np.round(ratio, 3)}; rho {np.round(rho, 3)}"
    assert np.all(ratio[rho < TAU] < 0.9), message
    assert dr.var(axis=0).sum() / ips.var(axis=0).sum() < 0.25, message
    # where one ranker shows the document at a single rank, the ratio is (p_k / tau)^2
    same = (RANKS[0] == RANKS[1]) & (rho < TAU)
    np.testing.assert_allclose(ratio[same], (rho[same] / TAU) ** 2, rtol=0.15, err_msg=message)
    # and the mean squared error, bias included, of a slightly wrong model is still far lower
    mse = ((dr - GAMMA) ** 2).mean(axis=0).sum() / ((ips - GAMMA) ** 2).mean(axis=0).sum()
    assert mse < 0.25, message + f"; MSE ratio {mse:.3f}"


def test_expected_clicks_give_the_true_relevance_and_the_true_avg_dcg():
    """At the expected clicks n p_k gamma (the weights are linear in the clicks) clipped DR with
    the right model returns N gamma exactly, and its Avg DCG estimate the true one."""
    n_docs = len(DOC_QUERY)
    doc = np.concatenate([np.arange(n_docs)] * 2)
    propensity = np.concatenate([_examination(rank) for rank in RANKS])
    impressions = np.repeat(SESSIONS, n_docs)
    table = PropensityImpressions(
        query=DOC_QUERY[doc],
        doc=doc,
        propensity=propensity,
        impressions=impressions,
        clicks=impressions * propensity * GAMMA[doc],
    )
    _, weight = dr_document_weights(table, GAMMA, np.full(2, 50), clip=TAU)
    np.testing.assert_allclose(weight, 50 * GAMMA, rtol=1e-12)
    ranks = np.array([4, 3, 2, 1, 1, 3, 2])
    truth = np.sum(GAMMA * dcg_gain(ranks)) / GAMMA.sum()
    assert dr_estimate(ranks, table, GAMMA, np.full(2, 50), clip=TAU) == pytest.approx(truth, rel=1e-12)
    # a wrong model moves the clipped estimate; clipped IPS (rho_d raised to tau for every impression) too
    assert abs(dr_estimate(ranks, table, 1 - GAMMA, np.full(2, 50), clip=TAU) - truth) > 1e-3


def test_weights_are_nonnegative_for_a_model_in_the_unit_interval():
    rng = np.random.default_rng(7)
    for _ in range(50):
        m = 40
        impressions = rng.integers(1, 30, m)
        table = PropensityImpressions(
            query=np.zeros(m, dtype=np.int64),
            doc=rng.integers(0, 15, m),
            propensity=rng.uniform(0.001, 1, m),
            impressions=impressions,
            clicks=rng.binomial(impressions, 0.3),
        )
        relevance = rng.random(15) * rng.integers(0, 2, 15)
        for clip in (None, 0.01, 0.5, 1.0):
            _, weight = dr_document_weights(table, relevance, np.array([impressions.sum()]), clip=clip)
            assert np.all(weight >= 0)


def test_impressions_by_propensity_aggregate_the_displayed_rows():
    rng = np.random.default_rng(8)
    shown = _displayed_sessions(RANKS, DOC_QUERY, SESSIONS, GAMMA, rng)
    table = impressions_by_propensity(shown)
    assert len(table) == len(np.unique(np.stack([shown.doc, shown.rank]), axis=1).T)
    np.testing.assert_array_equal(np.bincount(table.doc, weights=table.impressions), np.full(7, 50))
    np.testing.assert_array_equal(
        np.bincount(table.doc, weights=table.clicks), np.bincount(shown.doc, weights=shown.click)
    )
    np.testing.assert_array_equal(table.query, DOC_QUERY[table.doc])
    unknown = Displayed.from_columns(
        session=shown.session,
        query=shown.query,
        doc=shown.doc,
        rank=shown.rank,
        click=shown.click,
        propensity=np.where(shown.rank == 3, np.nan, 1.0),
        ranker=shown.ranker,
    )
    with pytest.raises(ValueError, match=r"rank 3: nan\).*--propensities estimated"):
        impressions_by_propensity(unknown)
    with pytest.raises(ValueError, match="clipping threshold"):
        dr_document_weights(table, GAMMA, np.full(2, 50), clip=0.0)


def test_the_likelihood_fit_recovers_the_click_probability():
    """Simulated impressions of 400 documents with gamma = sigmoid(x . w + b) at ranks 1..10
    (eta 1): the fitted model is within 0.04 of gamma everywhere."""
    rng = np.random.default_rng(9)
    n_docs, n_features = 400, 4
    X = rng.random((n_docs, n_features))
    w, b = np.array([3.0, -2.0, 1.0, 0.0]), -1.0
    gamma = 1 / (1 + np.exp(-(X @ w + b)))
    doc = np.repeat(np.arange(n_docs), 3)
    rank = rng.integers(1, 11, len(doc))
    propensity = 1.0 / rank
    impressions = rng.integers(100, 300, len(doc))
    table = PropensityImpressions(
        query=np.zeros(len(doc), dtype=np.int64),
        doc=doc,
        propensity=propensity,
        impressions=impressions,
        clicks=rng.binomial(impressions, propensity * gamma[doc]),
    )
    with threadpool_limits(1):  # as the pipeline fits it: BLAS threads only contend on 5 weights
        model = fit_relevance_model(X, table, l2=1e-6)  # next to no penalty: the likelihood alone
    fitted = model.relevance(X)
    assert np.abs(fitted - gamma).max() < 0.04, np.abs(fitted - gamma).max()
    np.testing.assert_allclose(model.w / model.scale, w, atol=0.3)
    # the default penalty shrinks the weights
    assert np.linalg.norm(fit_relevance_model(X, table).w) < np.linalg.norm(model.w)
    # the model knows it is at the optimum: no other model is more likely
    other = fit_relevance_model(X, table, l2=1e-6, max_iterations=2)
    assert model.negative_log_likelihood < other.negative_log_likelihood
    with pytest.raises(ValueError, match="no impressions"):
        fit_relevance_model(
            X,
            PropensityImpressions(
                *(np.zeros(0, dtype=np.int64),) * 2, np.zeros(0), *(np.zeros(0, dtype=np.int64),) * 2
            ),
        )


# The validation criterion (``DRValidation``): many independent logs of 8 queries stacked as
# the queries of one split (log i's queries 8 i .. 8 i + 7), each query's 6 documents shown by
# one deterministic ranker at ranks 1..6 in every one of its 25 sessions, eta 2 (p_k 1 .. 1/36).
N_LOGS, QUERIES, DOCS, SESSIONS_PER_QUERY, VALIDATION_TAU = 1500, 8, 6, 25, 0.1


def _stacked_validation_logs(rng):
    n_queries = N_LOGS * QUERIES
    gamma = rng.uniform(0.2, 0.9, (n_queries, DOCS))  # eps- 0.2 and up: noisy, hard-log clicks
    doc = np.arange(n_queries * DOCS).reshape(n_queries, DOCS)
    rank = np.broadcast_to(np.arange(1, DOCS + 1), (n_queries, DOCS))
    p = _examination(rank)
    shape = (SESSIONS_PER_QUERY, n_queries, DOCS)
    click = (rng.random(shape) < p * gamma).astype(np.int8)
    shown = Displayed.from_columns(
        session=np.broadcast_to(
            (np.arange(SESSIONS_PER_QUERY)[:, None] * n_queries + np.arange(n_queries))[..., None], shape
        ).ravel(),
        query=np.broadcast_to(np.arange(n_queries)[:, None], shape).ravel(),
        doc=np.broadcast_to(doc, shape).ravel(),
        rank=np.broadcast_to(rank, shape).ravel(),
        click=click.ravel(),
        propensity=np.broadcast_to(p, shape).ravel(),
        ranker=np.zeros(click.size, dtype=np.int64),
    )
    return shown, gamma.ravel(), click.sum(axis=0).ravel(), p.ravel()


def _per_log(values, weight):
    """The self-normalised estimate Σ w v / Σ w of every log."""
    log = np.arange(len(weight)) // (QUERIES * DOCS)
    return np.bincount(log, weights=weight * values) / np.bincount(log, weights=weight)


def test_the_dr_validation_estimate_is_unbiased_under_clipping_and_steadier_than_clipped_snips():
    """The DR criterion's Avg DCG of a fixed ranking (the logged one reversed: the rarely
    examined documents on top, where clipping bites) against the analytic truth
    Σ gamma g(rank) / Σ gamma of each log, averaged over logs, with the right relevance model
    and tau = 0.1 (ranks 4..6 clipped); clipped SNIPS (every click 1 / max(p, tau)) is biased
    toward the logging order there, and unclipped SNIPS has a far larger variance."""
    from cltr.core.doubly_robust import dr_validation

    rng = np.random.default_rng(10)
    shown, gamma, clicks, p = _stacked_validation_logs(rng)
    assert (p < VALIDATION_TAU).mean() == pytest.approx(0.5)  # ranks 4, 5, 6 of every query
    ranking = np.tile(np.arange(DOCS, 0, -1), N_LOGS * QUERIES)  # the logged order reversed
    gain = dcg_gain(ranking)
    truth = _per_log(gain, gamma)
    terms = dr_validation(shown, gamma, np.full(N_LOGS * QUERIES, SESSIONS_PER_QUERY), clip=VALIDATION_TAU)
    np.testing.assert_array_equal(terms.documents, np.arange(len(gamma)))
    dr = _per_log(gain, terms.weight)
    # DRValidation.estimate is the same self-normalised sum (over the one log it is given)
    first = slice(0, QUERIES * DOCS)
    alone = dr_validation(
        Displayed.from_columns(
            **{
                k: getattr(shown, k)[shown.query < QUERIES]
                for k in ("session", "query", "doc", "rank", "click", "propensity", "ranker")
            }
        ),
        gamma[first],
        np.full(QUERIES, SESSIONS_PER_QUERY),
        clip=VALIDATION_TAU,
    )
    assert alone.estimate(ranking[first]) == pytest.approx(dr[0], rel=1e-12)
    clipped_snips = _per_log(gain, clicks / np.maximum(p, VALIDATION_TAU))
    snips = _per_log(gain, clicks / p)

    def z(estimates):  # the mean error in Monte Carlo standard errors
        return (estimates - truth).mean() / ((estimates - truth).std(ddof=1) / np.sqrt(N_LOGS))

    # 4 standard errors: a correct estimator fails 6e-5 of the time; the self-normalisation's
    # own bias (of order Var(Σ w) / (Σ w)^2 per log) stays below one standard error for DR
    # (z from -0.8 to 2.2 over seeds 0-7; unclipped SNIPS, its weights up to 36, -1.4 to -4.6)
    assert abs(z(dr)) < 4, z(dr)
    assert z(clipped_snips) < -20, z(clipped_snips)  # clipped SNIPS underrates the reversed ranking (-145)
    # the variance: clipping's, with the estimate's mass kept (its denominator is not
    # clipped); measured ratios 0.66-0.71 and 0.16-0.17 over seeds 0-7
    assert dr.var() < 0.8 * clipped_snips.var(), (dr.var(), clipped_snips.var())
    assert dr.var() < 0.25 * snips.var(), (dr.var(), snips.var())
    # the logging ranker's value on the same weights (``versus_logging``'s reference) is unbiased too
    logged = _per_log(terms.logged_gain, terms.weight)
    logged_truth = _per_log(dcg_gain(np.tile(np.arange(1, DOCS + 1), N_LOGS * QUERIES)), gamma)
    assert abs((logged - logged_truth).mean() / ((logged - logged_truth).std(ddof=1) / np.sqrt(N_LOGS))) < 4
