"""The two-tower click model (relevance tower + bias tower; issue 22 item 3)."""

import itertools

import numpy as np
import pytest

from cltr.methods import train
from cltr.methods.two_tower import click_loss, fit_linear_towers

QUICK = {"tower": "mlp", "hidden": (16,), "learning_rates": (1e-2,), "epochs": 60, "batch_rows": 256, "patience": 60}


@pytest.mark.parametrize("combination", ["additive", "multiplicative"])
def test_click_loss_is_the_binomial_likelihood_and_its_gradients_are_its_derivatives(combination):
    rng = np.random.default_rng(0)
    relevance, bias = rng.normal(scale=2, size=6), rng.normal(scale=2, size=6)
    impressions = rng.integers(1, 20, size=6).astype(float)
    clicks = np.floor(impressions * rng.random(6))
    loss, grad_relevance, grad_bias = click_loss(relevance, bias, impressions, clicks, combination=combination)
    sigma = (
        1 / (1 + np.exp(-relevance - bias))
        if combination == "additive"
        else 1 / (1 + np.exp(-relevance)) / (1 + np.exp(-bias))
    )
    assert loss == pytest.approx(-np.sum(clicks * np.log(sigma) + (impressions - clicks) * np.log(1 - sigma)))
    step = 1e-6
    for grad, which in ((grad_relevance, 0), (grad_bias, 1)):
        for e in np.eye(6):
            shifted = [relevance, bias]
            up, down = [a.copy() for a in shifted], [a.copy() for a in shifted]
            up[which] += step * e
            down[which] -= step * e
            numeric = (
                click_loss(*up, impressions, clicks, combination=combination)[0]
                - click_loss(*down, impressions, clicks, combination=combination)[0]
            ) / (2 * step)
            assert grad @ e == pytest.approx(numeric, rel=1e-5, abs=1e-7)
    with pytest.raises(ValueError, match="combination must be one of additive, multiplicative"):
        click_loss(relevance, bias, impressions, clicks, combination="product")


@pytest.mark.parametrize("combination", ["additive", "multiplicative"])
def test_the_linear_towers_reach_a_stationary_point_of_the_penalised_likelihood(combination):
    # Numerical derivatives of the objective written out from click_loss vanish at the fit:
    # a sign or scale slip in the fit's own gradient would stop L-BFGS elsewhere.
    rng = np.random.default_rng(1)
    features = rng.normal(size=(40, 3))
    row_doc, row_bias = np.repeat(np.arange(40), 2), np.tile([0, 1], 40)
    n = rng.integers(5, 30, size=80).astype(float)
    c = rng.binomial(n.astype(int), 1 / (1 + np.exp(-(features @ [1.0, -0.5, 0.0])[row_doc] + row_bias))).astype(float)
    l2 = 0.01

    def objective(theta):
        w, bias = theta[:3], theta[3:]
        loss = click_loss((features @ w)[row_doc], bias[row_bias], n, c, combination=combination)[0]
        return loss / n.sum() + 0.5 * l2 * w @ w

    theta = fit_linear_towers(features, row_doc, row_bias, n, c, np.zeros(5), l2=l2, combination=combination)
    step = 1e-6
    numeric = [(objective(theta + step * e) - objective(theta - step * e)) / (2 * step) for e in np.eye(5)]
    np.testing.assert_allclose(numeric, 0, atol=1e-5)
    assert objective(theta) < objective(np.zeros(5)) - 0.01


def _naive_ratio(data):
    """Click-through rate per rank over rank 1's: what a bias tower that learnt nothing keeps."""
    shown = data.displayed("train").impressions()
    rate = np.bincount(shown.rank - 1, shown.clicks) / np.bincount(shown.rank - 1, shown.impressions)
    return rate / rate[0]


def test_the_multiplicative_bias_tower_recovers_the_examination_probabilities(shuffled_sessions):
    # Sessions order documents by relevance plus Gumbel noise: relevant ones sit higher, so
    # the click-through rate per rank (the bias tower's starting point) falls faster than
    # p_k = 1/k; the towers, fitted jointly, take relevance out. Measured: within 7% of p_k
    # for k <= 5 (the rates alone are 12-48% off); 15% allowed.
    data, examination = shuffled_sessions(noise=1.0, eps_pos=1.0, eps_neg=0.1, passes=1000)
    naive = _naive_ratio(data)
    assert np.max(np.abs(naive[:5] / examination[:5] - 1)) > 0.3
    _, info = train("two-tower", data, {**QUICK, "combination": "multiplicative"})
    np.testing.assert_allclose(info["position_bias"]["relative"][:5], examination[:5], rtol=0.15)
    assert info["position_bias"]["rank"] == list(range(1, 9))


def test_the_additive_bias_tower_recovers_click_odds_ratios(shuffled_sessions):
    # exp(b_k - b_1) is an odds ratio, which is p_k / p_1 only where clicks are rare. With
    # attraction 0.1 (relevant) and 0.01 it is within 10% of p_k for k <= 5 (15% allowed).
    rare, examination = shuffled_sessions(noise=1.0, eps_pos=0.1, eps_neg=0.01, passes=1000)
    _, info = train("two-tower", rare, QUICK)
    np.testing.assert_allclose(info["position_bias"]["relative"][:5], examination[:5], rtol=0.15)
    # Where a relevant document at rank 1 is always clicked (odds infinite), the additive
    # towers report a far steeper bias than the examination's (measured 0.18-0.22 p_k).
    common, _ = shuffled_sessions(noise=1.0, eps_pos=1.0, eps_neg=0.1, passes=1000)
    _, info = train("two-tower", common, QUICK)
    assert np.all(np.array(info["position_bias"]["relative"][1:5]) < 0.5 * examination[1:5])


def test_cli_two_tower_beats_production_on_a_hard_log_and_prints_its_bias_tower(tmp_path, invoke, hard_log):
    # At its defaults (linear relevance tower, L-BFGS, l2 chosen on validation clicks), 300
    # queries, 30 passes, eta 2, eps- 0.3, data and click seeds 0-5: test Avg DCG minus
    # production +0.122 +0.032 +0.261 -0.023 -0.001 +0.033 (the MLP tower, the old default:
    # +0.088 -0.126 +0.196 -0.056 -0.036 -0.026). Seed 1 here, held to +0.015.
    scores = hard_log(tmp_path, seed=1)
    out = invoke("train", "two-tower", workdir=tmp_path).output
    assert "penalties:" in out
    at = out.index("bias tower per rank (exp(b_k - b_1), a click-odds ratio")
    rows = [line.split() for line in out[at:].splitlines()[2:7]]
    assert [row[0] for row in rows] == ["1", "2", "3", "4", "5"]
    bias = [float(row[1]) for row in rows]
    assert bias[0] == 1 and all(a > b for a, b in itertools.pairwise(bias))
    production, model = scores()
    assert model > production + 0.015


@pytest.mark.parametrize("name", ["l2", "learning_rates"])
def test_an_empty_grid_is_refused_by_name(name):
    """Each tower keeps the best of its grid: an empty one (`--l2 ""`, `l2 = []`) has nothing to
    keep, and is refused with the option's name before any training."""
    from cltr import methods

    with pytest.raises(ValueError, match=f"{name} must list at least one"):
        methods.get("two-tower").parse_options({name: []})
