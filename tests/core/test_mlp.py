"""The network of Deep PropDCG (``cltr.core.mlp``): backpropagation, query batches, Adam."""

import numpy as np
import pytest

from cltr.core.clicks import Clicks
from cltr.core.mlp import Adam, MLPScorer, click_batches, init_mlp, loss_and_gradient
from cltr.core.objectives import click_pairs, risk


@pytest.mark.parametrize("activation", ["sigmoid", "tanh", "linear"])
@pytest.mark.parametrize("metric", ["dcg", "rbp:0.7", "avgrank"])
def test_gradient_matches_finite_differences_for_every_parameter(activation, metric, tiny_click_problem):
    X, offsets, click_query, click_doc, propensity = tiny_click_problem(1)
    net = init_mlp(X.shape[1], hidden=(4, 3), activation=activation, rng=np.random.default_rng(2))
    net = net.with_parameters(
        [p + 0.1 * np.random.default_rng(3).standard_normal(p.shape) for p in net.parameters()]
    )  # non-zero biases too
    clicks = Clicks.from_propensity(click_query, click_doc, propensity)
    pair_example, pair_doc = click_pairs(offsets, clicks)
    s = net.scores(X)
    margin = 1 - (s[click_doc[pair_example]] - s[pair_doc])
    assert np.min(np.abs(margin)) > 1e-3, "the check must stay away from hinge kinks"

    value, grads = loss_and_gradient(net, X, offsets, clicks, metric)
    assert value == pytest.approx(risk(s, offsets, clicks, metric))
    step = 1e-6
    for index, parameter in enumerate(net.parameters()):
        numeric = np.zeros_like(parameter)
        for position in np.ndindex(parameter.shape):
            values = []
            for sign in (1, -1):
                shifted = [p.copy() for p in net.parameters()]
                shifted[index][position] += sign * step
                values.append(risk(net.with_parameters(shifted).scores(X), offsets, clicks, metric))
            numeric[position] = (values[0] - values[1]) / (2 * step)
        np.testing.assert_allclose(
            grads[index], numeric, rtol=1e-5, atol=1e-8, err_msg=f"parameter {index} ({activation}, {metric})"
        )


def test_query_batched_loss_equals_the_clicks_one_at_a_time(tiny_click_problem):
    X, offsets, click_query, click_doc, propensity = tiny_click_problem(4, sizes=(3, 7, 2, 5, 4, 6), n_clicks=14)
    net = init_mlp(X.shape[1], hidden=(5,), rng=np.random.default_rng(0))
    n = len(click_doc)
    clicks = Clicks.from_propensity(click_query, click_doc, propensity)
    one_at_a_time = sum(risk(net.scores(X), offsets, clicks.take(slice(i, i + 1)), "dcg", n=n) for i in range(n))
    full_value, full_grads = loss_and_gradient(net, X, offsets, clicks, "dcg")
    assert full_value == pytest.approx(one_at_a_time, rel=1e-12)

    batches = click_batches(offsets, clicks, batch_docs=8, rng=np.random.default_rng(5))
    assert len(batches) > 1
    assert sum(len(b.clicks) for b in batches) == n
    total, grads = 0.0, [np.zeros_like(p) for p in net.parameters()]
    for batch in batches:
        # every candidate of the batch's queries, whole queries only
        assert len(batch.rows) == batch.offsets[-1] and len(np.unique(batch.rows)) == len(batch.rows)
        value, batch_grads = loss_and_gradient(net, X[batch.rows], batch.offsets, batch.clicks, "dcg", n=n)
        total += value
        grads = [g + b for g, b in zip(grads, batch_grads, strict=True)]
    assert total == pytest.approx(one_at_a_time, rel=1e-12)
    for g, f in zip(grads, full_grads, strict=True):
        np.testing.assert_allclose(g, f, rtol=1e-10, atol=1e-14)


def test_adam_first_step_moves_each_parameter_by_the_learning_rate():
    # bias-corrected moments: the first step is lr * sign(g) (up to epsilon), whatever |g|
    parameters = [np.array([1.0, -2.0, 0.5]), np.array([[3.0]])]
    grads = [np.array([10.0, -0.01, 0.0]), np.array([[2.5]])]
    Adam(parameters).step(grads, 0.1)
    np.testing.assert_allclose(parameters[0], [0.9, -1.9, 0.5], atol=1e-6)
    np.testing.assert_allclose(parameters[1], [[2.9]], atol=1e-6)
    # decoupled weight decay shrinks w by lr·wd·w before the adaptive step; l2 adds wd·w to g
    w = [np.array([2.0])]
    Adam(w, weight_decay=0.5, decay="decoupled").step([np.array([0.0])], 0.1)
    assert w[0][0] == pytest.approx(2.0 - 0.1 * 0.5 * 2.0)
    w = [np.array([2.0])]
    Adam(w, weight_decay=0.5, decay="l2").step([np.array([0.0])], 0.1)
    assert w[0][0] == pytest.approx(2.0 - 0.1, abs=1e-6)  # g = wd·w > 0: one step of lr
    with pytest.raises(ValueError, match="decay must be 'l2' or 'decoupled'"):
        Adam(w, decay="l1")


def test_network_checks_and_storage():
    net = init_mlp(3, hidden=(4,), activation="tanh", dtype="float32", rng=np.random.default_rng(0))
    X = np.random.default_rng(1).random((5, 3)).astype(np.float32)
    again = MLPScorer.from_arrays(net.to_arrays())
    np.testing.assert_array_equal(again.scores(X), net.scores(X))
    with pytest.raises(ValueError, match="activation must be one of"):
        init_mlp(3, hidden=(4,), activation="softplus", rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="batch_docs"):
        click_batches(np.array([0, 2]), Clicks(np.array([0]), np.array([1]), np.array([1.0])), batch_docs=0, rng=None)


def test_relu_gradient_matches_finite_differences_with_inactive_units(tiny_click_problem):
    # relu's slope is 0 for a unit at or below 0 and 1 above; a slope of 1 at a = 0 (a >= 0)
    # backpropagates through dead units. Both layers here have dead and live units, every
    # pre-activation is far from relu's kink and every pair far from the hinge's, so central
    # differences see the true derivative.
    X, offsets, click_query, click_doc, propensity = tiny_click_problem(1)
    net = init_mlp(X.shape[1], hidden=(4, 3), activation="relu", rng=np.random.default_rng(4))
    net = net.with_parameters([p + 0.3 * np.random.default_rng(14).standard_normal(p.shape) for p in net.parameters()])
    first = X @ net.weights[0] + net.biases[0]
    second = np.maximum(first, 0) @ net.weights[1] + net.biases[1]
    for z in (first, second):
        assert 0.2 < np.mean(z < 0) < 0.8 and np.min(np.abs(z)) > 0.1
    clicks = Clicks.from_propensity(click_query, click_doc, propensity)
    pair_example, pair_doc = click_pairs(offsets, clicks)
    s = net.scores(X)
    assert np.min(np.abs(1 - (s[click_doc[pair_example]] - s[pair_doc]))) > 1e-3

    value, grads = loss_and_gradient(net, X, offsets, clicks, "dcg")
    step = 1e-6
    for index, parameter in enumerate(net.parameters()):
        numeric = np.zeros_like(parameter)
        for position in np.ndindex(parameter.shape):
            values = []
            for sign in (1, -1):
                shifted = [p.copy() for p in net.parameters()]
                shifted[index][position] += sign * step
                values.append(risk(net.with_parameters(shifted).scores(X), offsets, clicks, "dcg"))
            numeric[position] = (values[0] - values[1]) / (2 * step)
        np.testing.assert_allclose(grads[index], numeric, rtol=1e-5, atol=1e-8, err_msg=f"parameter {index} (relu)")
