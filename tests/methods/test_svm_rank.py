"""SVM Rank on clicks: the naive baseline, the linear SVM with every click weighted 1."""

import numpy as np

from cltr.core.svm import solve_pairwise_svm
from cltr.methods import train


def test_svm_rank_is_the_linear_svm_on_clicks_with_unit_costs(noise_free_clicks):
    dataset, _, data, _ = noise_free_clicks
    scorer, info = train("svm-rank", data, {"C": 1.0, "tol": 1e-6})
    assert info["chosen"] == {"C": 1.0} and len(info["selection"]) == 1
    train_split, log = dataset.train, data.train_log
    reference = solve_pairwise_svm(
        train_split.X, train_split.offsets, log.query, log.doc, np.ones(len(log)), 1.0, tol=1e-6
    )
    np.testing.assert_allclose(scorer.w, reference.w, rtol=1e-3, atol=1e-3 * np.abs(reference.w).max())
    weighted = solve_pairwise_svm(
        train_split.X, train_split.offsets, log.query, log.doc, 1.0 / log.propensity, 1.0, tol=1e-6
    )
    assert np.abs(weighted.w - scorer.w).max() > 10 * np.abs(reference.w - scorer.w).max()


def test_C_is_chosen_on_validation_clicks_over_the_grid(noise_free_clicks):
    _, _, data, _ = noise_free_clicks
    scorer, info = train("svm-rank", data, {"grid": "10,0.01,1"})
    table = info["selection"]
    assert [row["C"] for row in table] == [0.01, 1.0, 10.0]  # most regularised first
    best = max(table, key=lambda row: row["validation_snips_avg_dcg"])
    assert info["chosen"] == {"C": best["C"]} and info["C"] == best["C"]
    assert info["validation_snips_avg_dcg"] == data.estimate(scorer) == best["validation_snips_avg_dcg"]
    assert all(row["converged"] and row["gap"] <= 1e-3 for row in table)
