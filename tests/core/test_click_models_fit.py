"""Click models fitted by EM: each recovers its own parameters; held-out perplexity tells them apart."""

from __future__ import annotations

import numpy as np
import pytest

from cltr.core.click_models_fit import (
    ClickModel,
    click_probabilities,
    evaluate_click_model,
    fit_click_model,
    session_grid,
    simulate_clicks_of,
)

QUERIES, DOCS, RANKS = 10, 10, 10


def _sessions(n: int, rng: np.random.Generator):
    """n sessions of random queries, each showing its query's documents in a random order."""
    query = rng.integers(0, QUERIES, n)
    order = np.argsort(rng.random((n, DOCS)), axis=1)[:, :RANKS]
    return (
        np.repeat(np.arange(n), RANKS),
        np.repeat(query, RANKS),
        order.reshape(-1),
        np.tile(np.arange(1, RANKS + 1), n),
    )


def _truth(name: str, pair_query, pair_doc, rng) -> ClickModel:
    p = len(pair_query)
    alpha = np.r_[rng.uniform(0.1, 0.9, p), 0.5]
    ranks = np.arange(1, RANKS + 1)
    if name == "pbm":
        return ClickModel("pbm", pair_query, pair_doc, alpha, examination=ranks**-0.8)
    if name == "ubm":
        distance = ranks[:, None] - np.arange(RANKS)[None, :]
        examination = np.where(distance > 0, 0.05 + 0.9 / (np.maximum(distance, 1) + 0.5), 0.5)
        return ClickModel("ubm", pair_query, pair_doc, alpha, examination=examination)
    if name == "cascade":
        return ClickModel("cascade", pair_query, pair_doc, alpha * 0.5, info={"max_rank": RANKS})
    if name == "dcm":
        return ClickModel("dcm", pair_query, pair_doc, alpha, continuation=np.linspace(0.8, 0.3, RANKS))
    return ClickModel(
        "dbn",
        pair_query,
        pair_doc,
        alpha,
        continuation=np.array([0.85]),
        satisfaction=np.r_[rng.uniform(0.2, 0.8, p), 0.5],
        info={"max_rank": RANKS},
    )


def _simulated(name: str, n: int, seed: int):
    rng = np.random.default_rng(seed)
    session, query, doc, rank = _sessions(n, rng)
    grid, pair_query, pair_doc = session_grid(session, query, doc, rank, np.zeros(len(rank), int))
    truth = _truth(name, pair_query, pair_doc, rng)
    return truth, simulate_clicks_of(truth, grid, rng)


# 4,000 sessions over 100 (query, document)s, each shown about 400 times
@pytest.mark.parametrize(
    "name, alpha_mean, alpha_max",
    [("pbm", 0.06, 0.2), ("cascade", 0.05, 0.15), ("dcm", 0.05, 0.15), ("ubm", 0.1, 0.3), ("dbn", 0.06, 0.15)],
)
def test_each_model_recovers_its_own_parameters(name, alpha_mean, alpha_max):
    truth, grid = _simulated(name, 4000, seed=1)
    fitted = fit_click_model(name, grid, truth.pair_query, truth.pair_doc)
    error = np.abs(fitted.attractiveness[:-1] - truth.attractiveness[:-1])
    assert error.mean() < alpha_mean and error.max() < alpha_max
    history = fitted.info["log_likelihood"]
    assert all(b >= a - 1e-9 for a, b in zip(history, history[1:], strict=False))  # EM never goes down
    if name == "pbm":
        np.testing.assert_allclose(fitted.examination, truth.examination, atol=0.05)
    elif name == "ubm":
        below = np.tril(np.ones((RANKS, RANKS), bool))
        assert np.abs(fitted.examination - truth.examination)[below].mean() < 0.08
    elif name == "dcm":  # lambda at the last rank is never seen at work
        np.testing.assert_allclose(fitted.continuation[:-1], truth.continuation[:-1], atol=0.06)
    elif name == "dbn":
        assert abs(fitted.continuation[0] - truth.continuation[0]) < 0.02
        assert np.abs(fitted.satisfaction[:-1] - truth.satisfaction[:-1]).mean() < 0.12


@pytest.mark.parametrize(
    "generator, better, worse", [("pbm", "pbm", "cascade"), ("cascade", "cascade", "pbm"), ("dbn", "dbn", "pbm")]
)
def test_the_generating_model_has_the_lower_held_out_perplexity(generator, better, worse):
    truth, grid = _simulated(generator, 4000, seed=2)
    train = type(grid)(pair=grid.pair[:3000], click=grid.click[:3000], n_pairs=grid.n_pairs)
    held_out = type(grid)(pair=grid.pair[3000:], click=grid.click[3000:], n_pairs=grid.n_pairs)
    scores = {
        name: evaluate_click_model(fit_click_model(name, train, truth.pair_query, truth.pair_doc), held_out)
        for name in (better, worse)
    }
    assert scores[better].perplexity < scores[worse].perplexity
    assert scores[better].log_likelihood > scores[worse].log_likelihood
    # the truth itself is no worse than its fit by more than noise
    assert evaluate_click_model(truth, held_out).perplexity < scores[better].perplexity + 0.01


def test_perplexity_by_hand_on_two_sessions():
    # PBM with gamma = (1, 0.5), alpha = 0.8 for both documents: P(C_1) = 0.8, P(C_2) = 0.4
    grid, pq, pd = session_grid([0, 0, 1, 1], [0, 0, 0, 0], [0, 1, 1, 0], [1, 2, 1, 2], [1, 0, 0, 1])
    model = ClickModel("pbm", pq, pd, np.array([0.8, 0.8, 0.8]), examination=np.array([1.0, 0.5]))
    scores = evaluate_click_model(model, grid)
    rank1 = 2 ** -((np.log2(0.8) + np.log2(0.2)) / 2)
    rank2 = 2 ** -((np.log2(0.6) + np.log2(0.4)) / 2)
    np.testing.assert_allclose(scores.perplexity_by_rank, [rank1, rank2])
    assert scores.perplexity == pytest.approx((rank1 + rank2) / 2)
    assert scores.log_likelihood == pytest.approx((np.log(0.8 * 0.6) + np.log(0.2 * 0.4)) / 2)


def test_cascade_family_marginals_match_monte_carlo():
    truth, grid = _simulated("dbn", 300, seed=3)
    _, unconditional = click_probabilities(truth, grid)
    rng = np.random.default_rng(4)
    mean = np.mean([simulate_clicks_of(truth, grid, rng).click for _ in range(400)], axis=0)
    # 120,000 draws per rank: a standard error of about 0.0015 on each rank's click rate
    np.testing.assert_allclose(mean.mean(axis=0), unconditional.mean(axis=0), atol=0.006)


def test_ubm_marginals_match_monte_carlo():
    truth, grid = _simulated("ubm", 300, seed=5)
    _, unconditional = click_probabilities(truth, grid)
    rng = np.random.default_rng(6)
    mean = np.mean([simulate_clicks_of(truth, grid, rng).click for _ in range(400)], axis=0)
    # 120,000 draws per rank: a standard error of about 0.0015 on each rank's click rate
    np.testing.assert_allclose(mean.mean(axis=0), unconditional.mean(axis=0), atol=0.006)


def test_held_out_pairs_unseen_in_training_get_the_mean_attractiveness():
    grid, pq, pd = session_grid([0, 0], [3, 3], [1, 2], [1, 2], [1, 0])
    held, _, _ = session_grid([5, 5], [3, 4], [2, 1], [1, 2], [0, 0], pairs=(pq, pd))
    assert held.pair.tolist() == [[1, 2]]  # (3, 2) is pair 1; (4, 1) is unseen: index P = 2
    fitted = fit_click_model("pbm", grid, pq, pd, iterations=5)
    assert fitted.attractiveness[-1] == pytest.approx(fitted.attractiveness[:-1].mean())


def test_a_session_with_two_documents_at_one_rank_is_refused():
    with pytest.raises(ValueError, match="two documents at one rank"):
        session_grid([0, 0], [1, 1], [1, 2], [1, 1], [0, 0])
