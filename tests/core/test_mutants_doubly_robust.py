"""Tests that kill the survivors of bench/mutation.py on cltr/core/doubly_robust.py (each
names the mutant it kills); expected values are hand-computed."""

import warnings

import numpy as np
import pytest

from cltr.core.clicks import Displayed
from cltr.core.doubly_robust import (
    DRValidation,
    PropensityImpressions,
    dr_document_weights,
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
