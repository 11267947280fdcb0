"""The two-tower click model with a tree relevance tower (issue 22)."""

import numpy as np
import pytest

from cltr.core.clicks import Impressions
from cltr.methods import train
from cltr.methods.tree_two_tower import TowerObjective, profile_likelihood


def _impressions(rank, n, c):
    size = len(rank)
    zeros = np.zeros(size, dtype=np.int64)
    return Impressions(
        query=zeros,
        doc=np.arange(size, dtype=np.int64),
        rank=np.asarray(rank, dtype=np.int64),
        ranker=zeros,
        impressions=np.asarray(n, dtype=np.int64),
        clicks=np.asarray(c, dtype=np.int64),
    )


def test_gradient_and_curvature_are_the_likelihoods_derivatives_and_the_bias_step_is_newtons():
    rng = np.random.default_rng(0)
    rank = rng.integers(1, 5, size=30)
    n = rng.integers(1, 50, size=30)
    objective = TowerObjective(_impressions(rank, n, rng.binomial(n, 0.2)))
    # the bias tower starts at each rank's click logit
    shown = np.bincount(rank - 1, weights=n)
    clicked = np.bincount(rank - 1, weights=objective.c)
    np.testing.assert_allclose(objective.bias, np.log(clicked / shown) - np.log1p(-clicked / shown))
    f = rng.normal(size=30)
    grad, hess = objective.terms(f)
    # central finite differences of the loss in each row's score
    h = 1e-6
    for r in range(30):
        step = np.zeros(30)
        step[r] = h
        numeric = (objective.loss(f + step) - objective.loss(f - step)) / (2 * h)
        curvature = (objective.terms(f + step)[0][r] - objective.terms(f - step)[0][r]) / (2 * h)
        assert numeric == pytest.approx(grad[r], rel=1e-6, abs=1e-8)
        assert curvature == pytest.approx(hess[r], rel=1e-6, abs=1e-8)
    # one round: the tree gets (grad, hess) at the current biases, then each bias takes the
    # Newton step of the loss in b_k with the scores fixed, which lowers the loss
    before, loss_before = objective.bias.copy(), objective.loss(f)
    g_round, h_round = objective(f, None)
    np.testing.assert_array_equal(g_round, grad)
    assert np.all(h_round >= hess)
    assert len(objective.history) == 1 and np.array_equal(objective.history[0], before)
    expected = before - np.bincount(rank - 1, weights=grad) / np.bincount(rank - 1, weights=hess)
    np.testing.assert_allclose(objective.bias, expected)
    assert objective.loss(f) < loss_before
    # a new candidate starts from the initial logits again
    objective.start({"learning_rate": 0.1, "num_leaves": 4})
    np.testing.assert_array_equal(objective.bias, objective.initial)


def test_the_bias_tower_recovers_click_odds_ratios_on_a_shuffled_log(shuffled_sessions):
    # Additive towers: exp(b_k - b_1) is the click-odds ratio of rank k to rank 1, p_k / p_1
    # where clicks are rare (attraction 0.1 relevant, 0.01 not). Sessions order documents by
    # relevance plus Gumbel noise, so the click-through rates alone fall faster than p_k.
    # With 200 trees the bias tower is within 11-12% of p_k for k <= 5 (measured; the odds
    # ratio of an attraction of 0.1 alone puts it about 5% below p_k), where the rates alone,
    # what a bias tower that learnt nothing keeps, are 16-51% off; 15% allowed.
    data, examination = shuffled_sessions(noise=1.0, eps_pos=0.1, eps_neg=0.01, passes=1000)
    shown = data.displayed("train").impressions()
    rate = np.bincount(shown.rank - 1, shown.clicks) / np.bincount(shown.rank - 1, shown.impressions)
    assert np.max(np.abs(rate[:5] / rate[0] / examination[:5] - 1)) > 0.3
    _, info = train("tree-two-tower", data, {"learning_rate": 0.1, "num_leaves": 4, "n_estimators": 200})
    bias = info["position_bias"]
    np.testing.assert_allclose(bias["relative"][:5], examination[:5], rtol=0.15)
    assert bias["rank"] == list(range(1, 9)) and bias["relative"][0] == 1


def test_an_empty_log_is_refused():
    with pytest.raises(ValueError, match="no click on a displayed document"):
        TowerObjective(_impressions([1, 2], [10, 10], [0, 0]))


def test_cli_tree_two_tower_beats_production_on_a_hard_log(tmp_path, invoke, hard_log):
    # 300 queries, 30 passes, eta 2, eps- 0.3, learning rate 0.1, 4 leaves, data and click
    # seed 0 (the unbiased LambdaMART's test log): held to +0.02 above production.
    scores = hard_log(tmp_path)
    out = invoke(
        "train", "tree-two-tower", "--learning-rate", 0.1, "--num-leaves", 4, "--max-rounds", 60, workdir=tmp_path
    ).output
    assert "bias tower per rank" in out
    # the linear model it was boosted from, and the candidates by their validation likelihood
    assert "boosted from (--base linear" in out and "two-tower (linear)" in out
    assert "validation_log_likelihood" in out
    production, model = scores()
    assert model > production + 0.02


def test_profile_likelihood_is_the_held_out_likelihood_at_each_ranks_best_logit():
    # oracle: each rank's logit maximised by a generic bounded scalar solver
    from scipy.optimize import minimize_scalar

    rng = np.random.default_rng(3)
    rank = rng.integers(1, 5, size=40)
    n = rng.integers(1, 30, size=40)
    c = rng.binomial(n, 0.3)
    f = rng.normal(size=40)

    def nll(b, k):
        z = f[rank == k] + b
        return float(np.sum(n[rank == k] * np.logaddexp(0, z) - c[rank == k] * z))

    best = sum(
        minimize_scalar(nll, args=(k,), bounds=(-20, 20), method="bounded", options={"xatol": 1e-10}).fun
        for k in range(1, 5)
    )
    value = profile_likelihood(_impressions(rank, n, c))(f)
    assert value == pytest.approx(-best / n.sum(), rel=1e-7)
    # a score that is constant within every rank explains nothing beyond the logits
    assert profile_likelihood(_impressions(rank, n, c))(np.full(40, 3.0)) == pytest.approx(
        profile_likelihood(_impressions(rank, n, c))(np.zeros(40)), rel=1e-9
    )


def test_likelihood_selection_stops_and_compares_by_the_validation_likelihood(shuffled_sessions):
    data, _ = shuffled_sessions(eps_pos=0.8, eps_neg=0.1, passes=30)
    options = {"learning_rate": 0.1, "eval_every": 5, "max_rounds": 60}
    _, info = train("tree-two-tower", data, {**options, "selection": "criterion", "num_leaves": 4})
    (row,) = info["selection"]
    assert info["selection_criterion"] == "validation_snips_avg_dcg"
    assert row["best_criterion"] == row["validation_snips_avg_dcg"]
    scorer, info = train("tree-two-tower", data, options)  # the default: the likelihood, leaves 2..
    rows = info["selection"]
    assert info["selection_criterion"] == "validation_log_likelihood" and len(rows) > 1
    likelihood = profile_likelihood(data.displayed("vali").impressions())
    for row in rows:  # each candidate stopped at its best held-out likelihood
        assert row["best_criterion"] == max(v for _, v in row["trace"]) == row["validation_log_likelihood"] < 0
        assert row["n_estimators"] == max(row["trace"], key=lambda kv: kv[1])[0]
    chosen = max(rows, key=lambda r: r["validation_log_likelihood"])
    assert info["chosen"]["num_leaves"] == chosen["num_leaves"]
    assert info["chosen"]["n_estimators"] == chosen["n_estimators"]
    # the criterion is the model's: its predictions on the validation split give the same value
    vali_X = np.array(data.dataset.vali.X)  # another array: predicted, not the known scores
    assert likelihood(scorer.scores(vali_X)) == pytest.approx(chosen["validation_log_likelihood"], rel=1e-9)
    assert info["validation_snips_avg_dcg"] == pytest.approx(data.estimate(scorer), rel=1e-12)


def test_the_trees_are_boosted_from_the_linear_two_tower(shuffled_sessions):
    from cltr.methods.trees import TreeScorer, linear_scores

    data, _ = shuffled_sessions(eps_pos=0.8, eps_neg=0.1, passes=30)
    linear, linear_info = train("two-tower", data, {})
    fixed = {"learning_rate": 0.1, "num_leaves": 4, "n_estimators": 3}
    scorer, info = train("tree-two-tower", data, fixed)
    assert info["base"]["l2"] == linear_info["chosen"]["l2"]
    X = np.array(data.dataset.test.X)
    base = linear_scores(X, scorer.linear, scorer.offset)
    # the base is two-tower's relevance tower (up to its float32 precision and a constant)
    np.testing.assert_allclose(base - base.mean(), linear.scores(X) - linear.scores(X).mean(), atol=2e-4)
    trees = np.asarray(scorer.booster.predict(X, raw_score=True))
    np.testing.assert_allclose(scorer.scores(X), trees + base, rtol=1e-12)
    assert np.ptp(trees) > 0  # the trees add to it
    # the base travels with the stored model; trees from 0 store their model string alone
    again = TreeScorer.from_arrays(scorer.to_arrays())
    assert again == scorer
    np.testing.assert_array_equal(again.scores(X), scorer.scores(X))
    plain, _ = train("tree-two-tower", data, {**fixed, "base": "none"})
    assert plain.linear is None and set(plain.to_arrays()) == {"model_string"}
    # the rank logits start where two-tower's bias tower ended (those behind the first tree)
    _, one = train("tree-two-tower", data, {**fixed, "n_estimators": 1})
    np.testing.assert_array_equal(one["position_bias"]["logit"], linear_info["position_bias"]["logit"])
