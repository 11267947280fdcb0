"""Tree PBM: trees fitted by the position-based model's likelihood at the log's propensities (issue 22)."""

import dataclasses

import numpy as np
import pytest

from cltr.core.doubly_robust import PropensityImpressions, impressions_by_propensity
from cltr.methods import train
from cltr.methods.tree_pbm import PBMObjective, held_out_likelihood
from cltr.pipeline import corrections


def _rows(q, n, c):
    size = len(q)
    zeros = np.zeros(size, dtype=np.int64)
    return PropensityImpressions(
        query=zeros,
        doc=np.arange(size, dtype=np.int64),
        propensity=np.asarray(q, dtype=np.float64),
        impressions=np.asarray(n, dtype=np.int64),
        clicks=np.asarray(c),
    )


def _brute_loss(q, n, c, f):
    # the PBM's binomial likelihood written out: P = q / (1 + exp(-f))
    p = q / (1.0 + np.exp(-f))
    return float(np.sum(-c * np.log(p) - (n - c) * np.log(1.0 - p)))


def test_loss_gradient_and_fisher_curvature_against_the_written_out_likelihood():
    rng = np.random.default_rng(0)
    q = rng.uniform(0.01, 1.0, size=25)
    q[0] = 1.0  # examined for sure: 1 - P = σ(-f) exactly
    n = rng.integers(1, 40, size=25)
    c = rng.binomial(n, q * 0.5)
    objective = PBMObjective(_rows(q, n, c))
    f = rng.normal(scale=2.0, size=25)
    assert objective.loss(f) == pytest.approx(_brute_loss(q, n, c, f), rel=1e-12)
    grad, hess = objective.terms(f)
    h = 1e-6
    for r in range(25):  # row r's own loss: the other rows' terms do not move, only round
        qr, nr, cr, fr = q[r : r + 1], n[r : r + 1], c[r : r + 1], f[r : r + 1]
        numeric = (_brute_loss(qr, nr, cr, fr + h) - _brute_loss(qr, nr, cr, fr - h)) / (2 * h)
        assert numeric == pytest.approx(grad[r], rel=1e-6, abs=1e-8)
    # Fisher scoring: the curvature is the expected second derivative, i.e. the second
    # derivative where the clicks are their expectation n P (the loss is linear in c)
    p = q / (1.0 + np.exp(-f))
    expected = PBMObjective(_rows(q, n, n * p))
    for r in range(25):
        step = np.zeros(25)
        step[r] = h
        second = (expected.terms(f + step)[0][r] - expected.terms(f - step)[0][r]) / (2 * h)
        assert second == pytest.approx(hess[r], rel=1e-5)
    assert np.all(hess > 0)
    # q = 1 is logistic regression on the clicks
    logistic = PBMObjective(_rows(np.ones(25), n, c))
    g1, h1 = logistic.terms(f)
    s = 1.0 / (1.0 + np.exp(-f))
    np.testing.assert_allclose(g1, n * s - c, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(h1, n * s * (1 - s), rtol=1e-10)


def test_terms_stay_finite_where_the_click_probability_saturates():
    objective = PBMObjective(_rows([1.0, 1.0, 1e-6, 0.5], [10, 10, 10, 10], [10, 0, 1, 5]))
    grad, hess = objective.terms(np.array([60.0, -60.0, 60.0, 0.0]))
    assert np.all(np.isfinite(grad)) and np.all(np.isfinite(hess))
    assert grad[0] == pytest.approx(0.0, abs=1e-12)  # every click at P -> 1: nothing to gain
    assert np.isfinite(objective.loss(np.array([60.0, -60.0, 60.0, 0.0])))


def test_a_log_without_a_click_is_refused(shuffled_sessions):
    data, _ = shuffled_sessions(passes=5)
    rows = data.displayed("train")
    silent = dataclasses.replace(rows, click=np.zeros_like(rows.click))
    with pytest.raises(ValueError, match="no click on a displayed document"):
        train("tree-pbm", dataclasses.replace(data, rows=lambda split: silent, _displayed={}), {"n_estimators": 5})


def test_held_out_likelihood_is_the_mean_log_likelihood_per_impression():
    rng = np.random.default_rng(1)
    q = rng.uniform(0.01, 1.0, size=12)
    n = rng.integers(1, 30, size=12)
    c = rng.binomial(n, q * 0.4)
    rows = dataclasses.replace(_rows(q, n, c), doc=np.arange(12)[::-1].copy())  # rows index the split's documents
    scores = rng.normal(size=12)
    expected = -_brute_loss(q, n, c, scores[rows.doc]) / n.sum()
    assert held_out_likelihood(rows)(scores) == pytest.approx(expected, rel=1e-12)
    # no click at all is still a likelihood (of the impressions), not an error
    assert np.isfinite(held_out_likelihood(_rows(q, n, np.zeros(12)))(scores))


def test_each_candidate_stops_at_its_best_held_out_likelihood(shuffled_sessions):
    data, _ = shuffled_sessions(eps_pos=0.8, eps_neg=0.1, passes=30)
    options = {"learning_rate": 0.1, "num_leaves": 4, "eval_every": 5}
    _, info = train("tree-pbm", data, options)
    (row,) = info["selection"]
    criterion = held_out_likelihood(impressions_by_propensity(data.displayed("vali")))
    assert info["stopping"] == "validation_log_likelihood"
    assert row["validation_log_likelihood"] == row["best_criterion"] == max(v for _, v in row["trace"])
    assert row["n_estimators"] == max(row["trace"], key=lambda kv: kv[1])[0]
    # the trace is that criterion of the trees' validation scores, not the SNIPS estimate
    fixed, _ = train("tree-pbm", data, {**options, "n_estimators": row["n_estimators"]})
    assert criterion(fixed.scores(data.dataset.vali.X)) == pytest.approx(row["best_criterion"], rel=1e-9)
    _, by_criterion = train("tree-pbm", data, {**options, "stopping": "criterion"})
    (other,) = by_criterion["selection"]
    assert "stopping" not in by_criterion and other["best_criterion"] == other["validation_snips_avg_dcg"]


def test_the_trees_recover_the_attraction_at_known_examination(shuffled_sessions):
    # P(click) = p_k * attraction (0.8 relevant, 0.1 not) on shuffled sessions: the maximum-
    # likelihood σ(f) is the attraction itself. Measured with 200 trees: mean σ(f) 0.776 on
    # relevant and 0.110 on irrelevant documents; told q = 1 instead, 0.260 and 0.041 (about
    # the attraction times the mean examination, 0.34), so 0.05 is allowed.
    data, examination = shuffled_sessions(eps_pos=0.8, eps_neg=0.1, passes=500)
    scorer, info = train("tree-pbm", data, {"learning_rate": 0.1, "num_leaves": 4, "n_estimators": 200})
    attraction = 1.0 / (1.0 + np.exp(-scorer.scores(data.dataset.train.X)))
    relevant = data.dataset.train.labels > 0
    assert np.mean(attraction[relevant]) == pytest.approx(0.8, abs=0.05)
    assert np.mean(attraction[~relevant]) == pytest.approx(0.1, abs=0.05)
    assert info["training_impressions"] == 500 * 40 * 8


def test_a_displayed_row_without_a_propensity_is_named(shuffled_sessions):
    data, _ = shuffled_sessions(passes=5)
    rows = data.displayed("train")
    unknown = dataclasses.replace(rows, propensity=np.where(rows.rank == 3, np.nan, rows.propensity))
    with pytest.raises(ValueError, match="tree-pbm needs the examination propensity of every displayed row"):
        train("tree-pbm", dataclasses.replace(data, rows=lambda split: unknown, _displayed={}), {"n_estimators": 5})


def test_corrections_of_click_weights_are_refused():
    for name, correction in corrections.corrections().items():
        refused = corrections.refusal(correction, "tree-pbm")
        assert (refused is None) == (name == corrections.DEFAULT_CORRECTION), name
    assert "accepts the correction ips only, not 'cascade'" in corrections.refusal(
        corrections.get("cascade"), "tree-pbm"
    )
    # a method that accepts every correction is refused only where the correction names its methods
    assert corrections.refusal(corrections.get("cascade"), "tree-propdcg") is None
    assert "applies to" in corrections.refusal(corrections.get("affine"), "svm-rank")


def test_clipping_does_not_apply(shuffled_sessions):
    data, _ = shuffled_sessions(noise=1.0, eps_pos=1.0, eps_neg=0.1, passes=50)
    options = {"learning_rate": 0.1, "num_leaves": 4, "n_estimators": 20}
    plain, info = train("tree-pbm", data, options)
    clipped, clipped_info = train("tree-pbm", data, options, clip=0.5)
    assert clipped_info["clip"] is None and info["clip"] is None
    X = data.dataset.test.X
    np.testing.assert_array_equal(plain.scores(X), clipped.scores(X))


def test_cli_tree_pbm_beats_production_on_a_hard_log(tmp_path, invoke, hard_log):
    # the tree two-tower's test log (300 queries, 30 passes, eta 2, eps- 0.3, data and click
    # seed 0) at the same settings: held to +0.02 above production
    scores = hard_log(tmp_path)
    out = invoke(
        "train", "tree-pbm", "--learning-rate", 0.1, "--num-leaves", 4, "--max-rounds", 60, workdir=tmp_path
    ).output
    assert "candidates" in out
    refused = invoke("train", "tree-pbm", "--correction", "cascade", workdir=tmp_path, expect=2)
    assert "cascade" in refused.output
    production, model = scores()
    assert model > production + 0.02
