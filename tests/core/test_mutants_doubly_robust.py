"""Tests that kill the survivors of bench/mutation.py on cltr/core/doubly_robust.py (each
names the mutant it kills); expected values are hand-computed."""

import dataclasses
import warnings

import numpy as np
import pytest

from cltr.core.clicks import Displayed
from cltr.core.doubly_robust import (
    DRValidation,
    PropensityImpressions,
    dr_document_weights,
    dr_validation,
    fit_relevance_model,
    impressions_by_propensity,
)


def _table(doc, query, propensity, impressions, clicks):
    return PropensityImpressions(
        query=np.asarray(query, dtype=np.int64),
        doc=np.asarray(doc, dtype=np.int64),
        propensity=np.asarray(propensity, dtype=np.float64),
        impressions=np.asarray(impressions, dtype=np.int64),
        clicks=np.asarray(clicks, dtype=np.int64),
    )


def test_a_constant_feature_is_standardized_by_one():
    # kills `scale[scale == 0] = 1.0` -> `scale != 0`: a constant feature has standard
    # deviation 0; dividing by it makes every standardized value NaN. The other feature keeps
    # its own deviation: values 0, 1, 2, 3 have std sqrt(5/4).
    X = np.array([[0.0, 7.0], [1.0, 7.0], [2.0, 7.0], [3.0, 7.0]])
    table = _table(
        doc=[0, 1, 2, 3],
        query=[0, 0, 0, 0],
        propensity=[1.0, 0.5, 0.5, 0.25],
        impressions=[20, 20, 20, 20],
        clicks=[2, 3, 5, 4],
    )
    model = fit_relevance_model(X, table)
    np.testing.assert_allclose(model.mean, [1.5, 7.0])
    np.testing.assert_allclose(model.scale, [np.sqrt(1.25), 1.0])
    assert np.all(np.isfinite(model.relevance(X)))
    # the constant feature cannot tell documents apart: its weight stays at its start, 0
    assert model.w[1] == 0.0


def test_a_query_without_sessions_is_refused():
    # kills the removed `raise` under `if np.any(n <= 0)`: N_q = 0 would divide the expected
    # examination by zero and give a weight of inf or NaN
    table = _table(doc=[0, 1], query=[0, 1], propensity=[1.0, 0.5], impressions=[3, 3], clicks=[1, 1])
    with pytest.raises(ValueError, match="positive number of sessions"):
        dr_document_weights(table, np.array([0.5, 0.5]), np.array([3, 0]))
    # and with sessions: rho = (3 * 0.5) / 3 = 0.5 for document 1; unclipped, w_d = C(d) / rho
    documents, weight = dr_document_weights(table, np.array([0.5, 0.5]), np.array([3, 3]))
    np.testing.assert_array_equal(documents, [0, 1])
    np.testing.assert_allclose(weight, [1.0, 2.0])


def test_the_likelihood_of_a_single_rate_by_hand():
    # one document at propensity 1, 5 clicks in 20: the constant model's maximum is
    # gamma = 1/4 and the mean negative log-likelihood per impression the entropy
    # -(1/4 log 1/4 + 3/4 log 3/4). Kills the reported value's `/ total` -> `* total`.
    # It is also a one-row table (kills `len(table) == 0` -> `== 1` in the emptiness check).
    X = np.array([[3.0]])
    model = fit_relevance_model(X, _table(doc=[0], query=[0], propensity=[1.0], impressions=[20], clicks=[5]))
    assert model.relevance(X)[0] == pytest.approx(0.25, rel=1e-6)
    assert model.negative_log_likelihood == pytest.approx(-(0.25 * np.log(0.25) + 0.75 * np.log(0.75)), rel=1e-6)
    # a single impression is enough to fit (kills `impressions.sum() == 0` -> `== 1`)
    one = fit_relevance_model(X, _table(doc=[0], query=[0], propensity=[0.5], impressions=[1], clicks=[0]))
    assert np.isfinite(one.b)
    with pytest.raises(ValueError, match="no impressions"):
        fit_relevance_model(
            np.zeros((2, 1)), _table(doc=[0, 1], query=[0, 0], propensity=[1.0, 1.0], impressions=[0, 0], clicks=[0, 0])
        )


def test_more_clicks_than_examinations_start_the_fit_inside_the_unit_interval():
    # kills `np.clip(..., 1e-3, 1 - 1e-3)` -> `1 + 1e-3`: 5 clicks in 10 impressions at
    # propensity 1/2 are a click rate of 1 per examination; the start's logit log(r / (1 - r))
    # needs r < 1, and the mutant's r = 1 starts the fit at infinity (a NaN model)
    X = np.array([[0.0], [1.0]])
    model = fit_relevance_model(
        X, _table(doc=[0, 1], query=[0, 0], propensity=[0.5, 0.5], impressions=[10, 10], clicks=[5, 5])
    )
    assert np.isfinite(model.b) and np.all(np.isfinite(model.w))
    # the likelihood's maximum is at gamma -> 1 (p gamma = 1/2 per impression)
    assert np.all(model.relevance(X) > 0.99)


def test_the_reported_likelihood_is_that_of_the_fitted_model():
    # kills the penalty's sign flipped in the objective (`+ 0.5 * l2 * (w @ w)` -> `-`): the
    # reported value is the fit's objective less the penalty, which must be the mean negative
    # log-likelihood per impression of the model returned, recomputed here impression by
    # impression from its gamma_hat (the default l2 leaves w far from 0 on these clicks)
    X = np.array([[0.0], [1.0], [2.0]])
    table = _table(
        doc=[0, 1, 2, 2],
        query=[0, 0, 0, 0],
        propensity=[1.0, 0.5, 0.5, 1.0],
        impressions=[30, 30, 10, 20],
        clicks=[3, 9, 4, 15],
    )
    model = fit_relevance_model(X, table)
    assert abs(model.w[0]) > 0.5
    click = table.propensity * model.relevance(X)[table.doc]
    log_likelihood = table.clicks * np.log(click) + (table.impressions - table.clicks) * np.log(1.0 - click)
    assert model.negative_log_likelihood == pytest.approx(-log_likelihood.sum() / table.impressions.sum(), rel=1e-9)


def test_the_validation_estimate_of_zero_weights_is_nan_without_a_warning():
    # kills `if not total > 0` -> `not total >= 0`: the mutant divides 0 by 0, which is NaN
    # too but warns (the training loop compares candidates by this value, every epoch)
    validation = DRValidation(
        documents=np.array([0, 1]), query=np.array([0, 0]), weight=np.zeros(2), logged_gain=np.zeros(2), clip=None
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(validation.estimate(np.array([1, 2])))
    # weights 1 and 3 on ranks 1 and 3, base 2: (1 * 1 + 3 * 1/2) / 4 = 0.625 (log2(1 + 3) = 2)
    weighted = DRValidation(
        documents=np.array([0, 1]),
        query=np.array([0, 0]),
        weight=np.array([1.0, 3.0]),
        logged_gain=np.zeros(2),
        clip=None,
    )
    assert weighted.estimate(np.array([1, 3]), base=2.0) == pytest.approx(0.625)
    # (and `total > 0` -> `total > 1`): weights summing to 1/2 are as good as any
    halves = DRValidation(
        documents=np.array([0, 1]),
        query=np.array([0, 0]),
        weight=np.array([0.25, 0.25]),
        logged_gain=np.zeros(2),
        clip=None,
    )
    assert halves.estimate(np.array([1, 3]), base=2.0) == pytest.approx(0.75)


def test_no_displayed_rows_give_an_empty_table():
    # kills `np.zeros(0, ...)` -> `np.zeros(1, ...)` in the empty table
    none = np.zeros(0, dtype=np.int64)
    table = impressions_by_propensity(
        Displayed.from_columns(
            session=none, query=none, doc=none, rank=none, click=none, propensity=np.zeros(0), ranker=none
        )
    )
    assert len(table) == 0 and len(table.query) == 0 and len(table.impressions) == 0 and len(table.clicks) == 0


def test_the_fit_starts_at_the_click_rate_per_examination():
    # kills `clicks.sum() / np.sum(impressions * propensity)` -> `impressions / propensity` and
    # the start's logit `log(rate / (1 - rate))` -> `log(rate * (1 - rate))`: the start is the
    # constant model gamma = clicks / expected examinations, the likelihood's maximum when
    # the features tell nothing (here two documents alike: 5 clicks in 20 at p 1/2 each,
    # gamma = 5 / 10), so L-BFGS has nothing to do
    X = np.array([[0.0], [1.0]])
    model = fit_relevance_model(
        X, _table(doc=[0, 1], query=[0, 0], propensity=[0.5, 0.5], impressions=[20, 20], clicks=[5, 5])
    )
    assert model.iterations == 0
    np.testing.assert_allclose(model.relevance(X), [0.5, 0.5], rtol=1e-12)


def _shown(propensity, doc=(0, 1, 2), query=(0, 0, 1), session=(0, 0, 1), click=(1, 0, 1)):
    n = len(propensity)
    return Displayed.from_columns(
        session=list(session)[:n],
        query=list(query)[:n],
        doc=list(doc)[:n],
        rank=[1, 2, 1][:n],
        click=list(click)[:n],
        propensity=propensity,
        ranker=[0] * n,
    )


def test_the_tables_and_models_are_frozen():
    # kills `@dataclass(frozen=True)` -> False on PropensityImpressions, RelevanceModel and
    # DRValidation: a validation criterion or a fitted model changed in place would change
    # every candidate compared by it
    table = impressions_by_propensity(_shown([1.0, 0.5, 1.0]))
    with pytest.raises(dataclasses.FrozenInstanceError):
        table.clicks = table.impressions
    model = fit_relevance_model(np.array([[0.0], [1.0], [2.0]]), table)
    with pytest.raises(dataclasses.FrozenInstanceError):
        model.b = 0.0
    validation = dr_validation(_shown([1.0, 0.5, 1.0]), np.full(3, 0.5), np.array([1, 1]))
    with pytest.raises(dataclasses.FrozenInstanceError):
        validation.clip = 0.5


@pytest.mark.parametrize("bad", [0.0, 1.5, -0.5, np.nan])
def test_a_propensity_outside_the_unit_interval_is_refused(bad):
    # kills `propensity > 0` -> `>= 0` (0), `<= 1` -> `<= 2` (1.5), `&` -> `|` (each of the
    # bounds alone lets 1.5 and -0.5 through) and `flatnonzero(bad)[0]` -> `[1]` (one bad row
    # only: the mutant fails to index instead of naming it); 1 is allowed
    with pytest.raises(ValueError, match=rf"1 rows have none or another \(session 0, rank 2: {bad}\)"):
        impressions_by_propensity(_shown([1.0, bad, 1.0]))


def test_one_displayed_row_is_a_table_of_one_row_and_none_an_empty_one():
    # kills `len(propensity) == 0` -> `== 1` and, in the empty table, the propensity column's
    # `np.zeros(0)` -> `np.zeros(1)`
    table = impressions_by_propensity(_shown([0.5]))
    assert (table.doc.tolist(), table.propensity.tolist(), table.impressions.tolist(), table.clicks.tolist()) == (
        [0],
        [0.5],
        [1],
        [1],
    )
    none = np.zeros(0, dtype=np.int64)
    empty = impressions_by_propensity(
        Displayed.from_columns(
            session=none, query=none, doc=none, rank=none, click=none, propensity=np.zeros(0), ranker=none
        )
    )
    assert len(empty.propensity) == 0 and empty.propensity.dtype == np.float64


def test_clip_one_is_allowed_and_above_one_refused_and_one_session_is_enough():
    table = _table(doc=[0, 1], query=[0, 1], propensity=[1.0, 0.5], impressions=[1, 1], clicks=[1, 0])
    # kills `0 < clip <= 1` -> `<= 2`
    with pytest.raises(ValueError, match=r"must lie in \(0, 1\], found 1.5"):
        dr_document_weights(table, np.array([0.5, 0.5]), np.array([1, 1]), clip=1.5)
    # kills `np.any(n <= 0)` -> `n <= 1`: a query seen in one session. Document 1 (rho 0.5)
    # clipped at 1: 1 * 0.5 * (1 - 0.5) + 0 / 1 = 0.25; document 0: rho 1, its one click
    documents, weight = dr_document_weights(table, np.array([0.5, 0.5]), np.array([1, 1]), clip=1.0)
    np.testing.assert_allclose(weight, [1.0, 0.25])


def test_the_validation_terms_name_each_documents_query():
    # kills `np.unique(doc, return_index=True)[1]` -> `return_index=False` (the second document's
    # id taken for an index): documents 0, 1 of query 0 in session 0, document 2 of query 1 in
    # sessions 1 and 2; b_d is the gain of d's rank summed over its sessions over N_q
    shown = Displayed.from_columns(
        session=[0, 0, 1, 2],
        query=[0, 0, 1, 1],
        doc=[0, 1, 2, 2],
        rank=[1, 2, 1, 1],
        click=[1, 0, 0, 1],
        propensity=[1.0, 0.5, 1.0, 1.0],
        ranker=[0, 0, 0, 0],
    )
    validation = dr_validation(shown, np.full(3, 0.5), np.array([1, 2]), base=2.0)
    np.testing.assert_array_equal(validation.documents, [0, 1, 2])
    np.testing.assert_array_equal(validation.query, [0, 0, 1])
    np.testing.assert_allclose(validation.logged_gain, [1.0, 1.0 / np.log2(3.0), 1.0])


def test_the_fit_is_the_penalized_likelihoods_minimum():
    # an independent oracle: the penalized mean negative log-likelihood written impression by
    # impression (standardized features, w penalized, b not) minimized by Nelder-Mead then
    # BFGS on finite differences; the fit must agree to 1e-7 in (w, b). The fit reaches it to
    # ~1e-8 (gtol = tol = 1e-9, ftol = tol * 1e-3); kills the penalty's gradient `+ l2 * w` ->
    # `- l2 * w` (off by 0.17) and the looser `ftol` of `tol / 1e-3` and `tol * 1.001` (which
    # stop L-BFGS 4e-6 short on this table)
    from scipy.optimize import minimize
    from scipy.special import expit

    X = np.random.default_rng(0).normal(size=(6, 2))
    table = _table(
        doc=[0, 1, 2, 3, 4, 5, 0, 2],
        query=[0] * 8,
        propensity=[1.0, 0.5, 0.5, 0.25, 1.0, 0.5, 0.5, 1.0],
        impressions=[30, 30, 20, 20, 40, 10, 10, 20],
        clicks=[10, 5, 6, 1, 30, 2, 2, 12],
    )
    l2 = 1e-2
    Z = (X - X.mean(axis=0)) / X.std(axis=0)  # every document is displayed

    def objective(theta):
        click = table.propensity * expit(Z[table.doc] @ theta[:-1] + theta[-1])
        log_likelihood = table.clicks * np.log(click) + (table.impressions - table.clicks) * np.log1p(-click)
        return -log_likelihood.sum() / table.impressions.sum() + 0.5 * l2 * theta[:-1] @ theta[:-1]

    start = minimize(objective, np.zeros(3), method="Nelder-Mead", options={"xatol": 1e-12, "fatol": 1e-15})
    oracle = minimize(objective, start.x, method="BFGS", options={"gtol": 1e-12}).x
    model = fit_relevance_model(X, table, l2=l2)
    np.testing.assert_allclose(np.r_[model.w, model.b], oracle, rtol=0, atol=1e-7)
