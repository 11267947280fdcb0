"""SVM PropRank: the linear SVM on clicks weighted 1/propensity, the Avg Rank bound."""

import numpy as np

from cltr.core.svm import solve_pairwise_svm
from cltr.methods import train


def test_svm_proprank_is_the_propensity_weighted_svm_and_svm_propdcg_on_average_rank(biased_clicks):
    dataset, _, data, _ = biased_clicks
    scorer, _ = train("svm-proprank", data, {"C": 1.0, "tol": 1e-7})
    train_split, log = dataset.train, data.train_log
    reference = solve_pairwise_svm(
        train_split.X, train_split.offsets, log.query, log.doc, 1.0 / log.propensity, 1.0, tol=1e-7
    )
    np.testing.assert_allclose(scorer.w, reference.w, atol=1e-3 * np.abs(reference.w).max())
    # lambda(r) = r is linear: CCP takes one step, the PropRank solve
    ccp, info = train("svm-propdcg", data, {"C": 1.0, "tol": 1e-7, "metric": "avgrank"})
    assert info["metric"] == "avgrank" and info["selection"][0]["ccp_iterations"] == 1
    np.testing.assert_allclose(ccp.w, reference.w, atol=1e-3 * np.abs(reference.w).max())
