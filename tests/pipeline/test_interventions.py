"""Intervention logs through the pipeline: `clicks_stage(intervention=...)` logs the displayed
ranks of every session, and `propensity_stage(method="swap")` recovers (1/k)^eta from them;
the CLI options reach both, and em's relevance model is chosen by name."""

import numpy as np
import pytest

from cltr.data.synthetic import make_synthetic
from cltr.pipeline.stages import clicks_stage, estimate_propensities, impressions_of, production_stage, propensity_stage
from cltr.pipeline.workspace import Workspace


@pytest.fixture(scope="module")
def swap_log(tmp_path_factory):
    dataset = make_synthetic(n_queries=150, docs=(8, 20), relevant_from=1)
    space = Workspace(tmp_path_factory.mktemp("swap"))
    production, _ = production_stage(space, "d", dataset, "fp", fraction=0.1)
    clicks, _ = clicks_stage(
        space,
        "d",
        dataset,
        production,
        {"eta": 1.5, "eps_neg": 0.1},
        passes=60,
        seed=2,
        intervention="swap-k",
        intervention_depth=6,
    )
    return space, dataset, production, clicks


def test_a_swap_log_shows_each_top_document_at_the_swapped_ranks(swap_log):
    space, dataset, production, clicks = swap_log
    assert clicks.config["intervention"] == "swap-k" and clicks.info["intervention"] == {"kind": "swap-k", "depth": 6}
    assert clicks.arrays["train/presented_rank"].shape == (60, dataset.train.n_docs)
    table = impressions_of(clicks, "train", dataset)
    # a document reaches rank 1 from at most one other rank in 2..6, and nothing below 6 moves
    moved = np.unique(table.doc[table.rank == 1]).size
    assert dataset.train.n_queries < moved <= 6 * dataset.train.n_queries
    plain, _ = clicks_stage(space, "d", dataset, production, {"eta": 1.5, "eps_neg": 0.1}, passes=60, seed=2)
    assert plain.key != clicks.key and "intervention" not in plain.config
    with pytest.raises(ValueError, match="rank 2 has no"):
        estimate_propensities(
            impressions_of(plain, "train", dataset), dataset.train.X, method="swap", max_rank=6, bootstrap=0
        )


def test_swap_estimate_covers_the_truth(swap_log):
    space, dataset, _, clicks = swap_log
    artifact, _ = propensity_stage(
        space, "d", dataset, clicks, method="swap", max_rank=6, bootstrap=200, level=0.95, seed=1
    )
    rows = artifact.info["rows"]
    truth = (1.0 / np.arange(1, 7)) ** 1.5
    low = np.array([r["low"] for r in rows])
    high = np.array([r["high"] for r in rows])
    assert np.all((low <= truth + 1e-12) & (truth <= high + 1e-12)), (low, truth, high)


def test_em_relevance_model_is_chosen_by_name(swap_log):
    _, dataset, _, clicks = swap_log
    table = impressions_of(clicks, "train", dataset)
    with pytest.raises(ValueError, match="relevance_model must be one of logistic, trees, classes, found 'forest'"):
        estimate_propensities(table, dataset.train.X, method="em", relevance_model="forest", bootstrap=0)
    est = estimate_propensities(table, dataset.train.X, method="em", relevance_model="trees", max_rank=4, bootstrap=0)
    assert est.info["relevance_model"] == "fitted" and est.propensity[0] == 1.0


def test_cli_simulates_an_intervention_and_estimates_from_it(invoke, tmp_path):
    invoke("prepare", "synthetic", "--queries", "60", workdir=tmp_path)
    result = invoke(
        "simulate", "--intervention", "randomize-top-k", "--intervention-depth", "4", "--passes", "20", workdir=tmp_path
    )
    assert "intervention randomize-top-k over ranks 1..4" in result.output
    result = invoke(
        "propensities", "estimate", "--method", "swap", "--max-rank", "4", "--bootstrap", "20", workdir=tmp_path
    )
    assert "swap on click log" in result.output
