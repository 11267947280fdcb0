"""Tests that kill the survivors of bench/mutation.py on cltr/core/mlp.py (each names the
mutant it kills); expected values are hand-computed or from the definitions (Adam: Kingma
and Ba 2015, Algorithm 1; initialisation: Glorot and Bengio 2010, He et al. 2015)."""

import dataclasses
import math

import numpy as np
import pytest

from cltr.core.clicks import Clicks
from cltr.core.mlp import Adam, MLPScorer, click_batches, init_mlp, loss_and_gradient


def test_dtype_is_accepted_as_a_numpy_type_and_checked():
    # kills the dropped `not` of `np.dtype(dtype).name if not isinstance(dtype, str)` and the
    # removed raise
    assert init_mlp(3, hidden=(2,), dtype=np.float32, rng=np.random.default_rng(0)).dtype == np.float32
    with pytest.raises(ValueError, match="dtype must be float32 or float64, got 'int64'"):
        init_mlp(3, hidden=(2,), dtype="int64", rng=np.random.default_rng(0))


def test_networks_and_batches_are_immutable():
    # kills `@dataclass(frozen=True)` -> False on MLPScorer, Batch and the batch's Clicks
    net = init_mlp(3, hidden=(2,), rng=np.random.default_rng(0))
    with pytest.raises(dataclasses.FrozenInstanceError):
        net.activation = "relu"
    batch = click_batches(np.array([0, 2]), Clicks(np.array([0]), np.array([1])), batch_docs=4, rng=None)[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        batch.rows = np.zeros(0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        batch.clicks.cost = np.ones(1)


def test_hidden_sizes_and_the_default_network():
    # kills `w.shape[1]` -> `[2]` and `weights[:-1]` -> `[:1]` / `[:-2]`, and the default
    # hidden (200,) -> (201,)
    assert init_mlp(3, hidden=(4, 5), rng=np.random.default_rng(0)).hidden == (4, 5)
    assert init_mlp(3, hidden=(), rng=np.random.default_rng(0)).hidden == ()
    assert init_mlp(3, rng=np.random.default_rng(0)).hidden == (200,)


@pytest.mark.parametrize("n_features, hidden", [(0, (2,)), (3, (2, 0))])
def test_empty_layers_are_refused(n_features, hidden):
    # kills `or` -> `and` and the removed raise
    with pytest.raises(ValueError, match="n_features and every hidden size must be >= 1"):
        init_mlp(n_features, hidden=hidden, rng=np.random.default_rng(0))


def test_layers_of_one_unit_are_accepted():
    # kills `n_features < 1` / `h < 1` -> `<= 1` / `< 2`
    assert init_mlp(1, hidden=(1,), rng=np.random.default_rng(0)).hidden == (1,)


@pytest.mark.parametrize(
    "activation, first_limit",
    [
        ("relu", math.sqrt(6 / 50)),  # He: sqrt(6 / fan_in)
        ("sigmoid", 4 * math.sqrt(6 / 52)),  # Glorot's uniform limit, times 4 for the logistic
        ("tanh", math.sqrt(6 / 52)),  # Glorot: sqrt(6 / (fan_in + fan_out))
        ("linear", math.sqrt(6 / 52)),
    ],
)
def test_initial_weights_fill_their_documented_ranges(activation, first_limit):
    # the output layer (2 -> 1) is Glorot's sqrt(6 / 3) for every activation. The largest of
    # n uniform draws is below 0.97 of the limit with probability 0.97^n (< 1e-2 for the 200
    # output weights, 0.97^10000 for the first layer's); the seeds are fixed. Kills every
    # change of the limits, of their conditions (relu / sigmoid, hidden layer only) and of `limit *= 4`
    first, output = [], []
    for seed in range(100):
        net = init_mlp(50, hidden=(2,), activation=activation, rng=np.random.default_rng(seed))
        first.append(net.weights[0].ravel())
        output.append(net.weights[1].ravel())
    for values, limit in ((np.concatenate(first), first_limit), (np.concatenate(output), math.sqrt(6 / 3))):
        top = np.abs(values).max()
        assert 0.97 * limit <= top <= limit, (top, limit)


def test_standardised_inputs_and_their_storage():
    # kills `(X - shift) * scale` -> `+` / `/` and the removed update of to_arrays
    net = init_mlp(3, hidden=(4,), activation="tanh", rng=np.random.default_rng(0))
    shift, scale = np.array([1.0, -2.0, 0.5]), np.array([2.0, 0.5, 4.0])
    standardised = dataclasses.replace(net, shift=shift, scale=scale)
    X = np.random.default_rng(1).random((5, 3))
    np.testing.assert_allclose(standardised.scores(X), net.scores((X - shift) * scale), rtol=1e-12)
    again = MLPScorer.from_arrays(standardised.to_arrays())
    np.testing.assert_array_equal(again.scores(X), standardised.scores(X))


def test_scores_in_blocks_cover_every_row():
    # kills `range(0, ...)` -> `range(1, ...)` (the first rows left unwritten)
    net = init_mlp(3, hidden=(4,), rng=np.random.default_rng(0))
    X = np.random.default_rng(1).random((5, 3))
    expected = net.forward(X)[-1][:, 0]
    np.testing.assert_allclose(net.scores(X, block=2), expected, rtol=1e-12)
    np.testing.assert_allclose(net.scores(X), expected, rtol=1e-12)


def test_scale_multiplies_the_loss_and_every_gradient(tiny_click_problem):
    # kills `scale != 1.0` -> `==` / `!= 2.0`, the removed or inverted `grad_scores *= scale`
    # and `value * scale` -> `/`
    X, offsets, click_query, click_doc, propensity = tiny_click_problem()
    net = init_mlp(X.shape[1], hidden=(3,), rng=np.random.default_rng(0))
    clicks = Clicks.from_propensity(click_query, click_doc, propensity)
    value, grads = loss_and_gradient(net, X, offsets, clicks, "avgrank")
    doubled, doubled_grads = loss_and_gradient(net, X, offsets, clicks, "avgrank", scale=2.0)
    assert doubled == pytest.approx(2 * value, rel=1e-12)
    for g, g2 in zip(grads, doubled_grads, strict=True):
        np.testing.assert_allclose(g2, 2 * g, rtol=1e-12)


def test_click_batches_cut_at_batch_docs_in_query_order_without_rng():
    # queries of 2, 3, 1 and 4 documents, all clicked; a batch starts where the documents
    # before a query reach a multiple of batch_docs: starts 0, 2, 5, 6 // 4 = 0, 0, 1, 1.
    # Kills `// batch_docs` -> `*`, `cumsum - sizes` -> `+`, the cut `+ 1` -> `- 1` / `+ 2`,
    # and `rng is not None` -> `is None` (no rng: the queries' own order)
    offsets = np.array([0, 2, 5, 6, 10])
    # the clicks listed out of query order, so that each batch's costs must follow its clicks
    clicks = Clicks(np.array([2, 0, 3, 1]), np.array([5, 1, 9, 2]), np.array([0.5, 1.0, -2.0, 4.0]))
    batches = click_batches(offsets, clicks, batch_docs=4, rng=None)
    assert [b.rows.tolist() for b in batches] == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    assert [b.offsets.tolist() for b in batches] == [[0, 2, 5], [0, 1, 5]]
    assert [b.clicks.query.tolist() for b in batches] == [[0, 1], [0, 1]]
    assert [b.clicks.doc.tolist() for b in batches] == [[1, 2], [0, 4]]
    assert [b.clicks.cost.tolist() for b in batches] == [[1.0, 4.0], [0.5, -2.0]]
    # clicks listed in query order (a log's order, which skips the sort) give the batches of
    # the same clicks listed otherwise, each query's clicks in their listed order (stable)
    mixed = Clicks(np.array([2, 0, 3, 0, 1, 3]), np.array([5, 1, 9, 0, 2, 6]), np.arange(6.0))
    by_query = np.argsort(mixed.query, kind="stable")
    listed = Clicks(mixed.query[by_query], mixed.doc[by_query], mixed.cost[by_query])
    for a, b in zip(
        click_batches(offsets, mixed, batch_docs=4, rng=None),
        click_batches(offsets, listed, batch_docs=4, rng=None),
        strict=True,
    ):
        assert a.clicks.doc.tolist() == b.clicks.doc.tolist() and a.clicks.cost.tolist() == b.clicks.cost.tolist()
        assert a.clicks.query.tolist() == b.clicks.query.tolist()
    # clicks without costs give batches without them
    assert all(
        b.clicks.cost is None for b in click_batches(offsets, Clicks(clicks.query, clicks.doc), batch_docs=4, rng=None)
    )
    # kills `batch_docs < 1` -> `<= 1` / `< 2`: one document per batch is allowed, one query each
    assert len(click_batches(offsets, clicks, batch_docs=1, rng=None)) == 4


def test_click_batches_shuffle_queries_with_an_rng():
    offsets = np.array([0, 2, 5, 6, 10])
    order = np.random.default_rng(3).permutation(4)
    batches = click_batches(
        offsets, Clicks(np.array([0, 1, 2, 3]), np.array([1, 2, 5, 9])), batch_docs=1, rng=np.random.default_rng(3)
    )
    assert [int(b.rows[0]) for b in batches] == offsets[order].tolist()


def _adam_by_hand(p, grads, lr, *, beta1=0.9, beta2=0.999, epsilon=1e-8, l2=0.0):
    m = v = 0.0
    for t, g in enumerate(grads, 1):
        g = g + l2 * p
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        p = p - lr * (m / (1 - beta1**t)) / (math.sqrt(v / (1 - beta2**t)) + epsilon)
    return p


def test_adam_three_steps_with_changing_gradients_and_the_default_betas():
    # with a constant gradient every Adam step is lr (up to epsilon), whatever the betas:
    # gradients 1, 3, -2 tell the betas, the bias corrections (beta ** t), the moments'
    # decay (m *= beta1, v *= beta2) and epsilon's sign apart. Kills the defaults 0.9 -> 1.9,
    # 0.999 -> 1.999, `**` -> `*`, the removed or inverted `*=` and `+= epsilon` -> `-=`
    p = [np.array([0.5])]
    adam = Adam(p)
    for g in (1.0, 3.0, -2.0):
        adam.step([np.array([g])], 0.1)
    assert p[0][0] == pytest.approx(_adam_by_hand(0.5, [1.0, 3.0, -2.0], 0.1), rel=1e-13, abs=1e-15)
    assert _adam_by_hand(0.5, [1.0, 3.0, -2.0], 0.1) != pytest.approx(
        _adam_by_hand(0.5, [1.0, 3.0, -2.0], 0.1, epsilon=-1e-8), rel=1e-13, abs=1e-15
    )


def test_adam_l2_decay_adds_wd_times_w_to_the_gradient():
    # g = -0.1 with wd 0.1 at w = 2: g + wd w = 0.1 > 0 moves w down (g + wd / w = -0.05 would
    # move it up). Kills `weight_decay * p` -> `/`
    w = [np.array([2.0])]
    Adam(w, weight_decay=0.1, decay="l2").step([np.array([-0.1])], 0.1)
    assert w[0][0] == pytest.approx(_adam_by_hand(2.0, [-0.1], 0.1, l2=0.1), rel=1e-13)
    assert w[0][0] < 2.0
    # kills the removed raise: a negative decay would grow the weights
    with pytest.raises(ValueError, match="weight_decay must be >= 0, got -0.1"):
        Adam(w, weight_decay=-0.1)
