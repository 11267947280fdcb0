"""The pipeline's stages as cached artifacts (``cltr.pipeline.stages``)."""

import numpy as np
import pytest

from cltr.clickmodels.pbm import PBMSettings
from cltr.pipeline.models import scorer_from_arrays
from cltr.pipeline.stages import click_logs, clicks_stage, produce, production_queries, production_stage
from cltr.pipeline.workspace import Workspace


def test_production_queries_are_a_seeded_fraction_with_a_relevant_document(toy_queries):
    labels = np.zeros(40, dtype=np.int64)
    labels[37] = 1  # only the last of 20 queries of 2 documents has a relevant one
    queries = toy_queries([2] * 20, labels=labels)
    relevant = queries.relevant(1)
    for seed in range(5):
        chosen = production_queries(queries, relevant, fraction=0.1, rng=np.random.default_rng(seed))
        assert len(chosen) == 2 and 18 in chosen and np.all(np.diff(chosen) > 0)
    with pytest.raises(ValueError, match=r"fraction must lie in \(0, 1\], found 0"):
        production_queries(queries, relevant, fraction=0, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="no training query has a relevant document"):
        production_queries(queries, np.zeros(40, dtype=bool), fraction=0.5, rng=np.random.default_rng(0))


def test_clicks_stage_stores_the_simulated_logs_and_reuses_them(tmp_path, synthetic_dataset, make_training_data):
    production, data, _ = make_training_data(synthetic_dataset, seed=3, passes=6, eta=1.5, eps_neg=0.2)
    space = Workspace(tmp_path)
    produced, reused = production_stage(space, "s", synthetic_dataset, "fingerprint", seed=3)
    assert not reused and produced.info["test"]["avg_dcg"] > 0
    np.testing.assert_array_equal(scorer_from_arrays(produced.arrays).w, produce(synthetic_dataset, seed=3)[0].w)
    clicks, reused = clicks_stage(space, "s", synthetic_dataset, produced, {"eta": 1.5, "eps_neg": 0.2}, passes=6,
                                  seed=3)
    assert not reused and clicks.config["click_model"] == "pbm" and clicks.config["eta"] == 1.5
    train_log, vali_log = click_logs(clicks)
    for stored, drawn in ((train_log, data.train_log), (vali_log, data.vali_log)):
        for name, value in drawn.arrays().items():
            np.testing.assert_array_equal(stored.arrays()[name], value, err_msg=name)
    assert clicks.info["train"]["clicks"] == len(train_log) and clicks.info["train"]["sessions"] == 6 * 180
    # the same settings as an instance are the same artifact
    again, reused = clicks_stage(space, "s", synthetic_dataset, produced, PBMSettings(eta=1.5, eps_neg=0.2),
                                 passes=6, seed=3)
    assert reused and again.key == clicks.key
    # nested prefixes for learning curves, and other propensities for misspecification
    short, _ = click_logs(clicks, passes=2)
    np.testing.assert_array_equal(short.doc, train_log.first_passes(2).doc)
    told, _ = click_logs(clicks, eta_model=1.0)
    np.testing.assert_allclose(told.propensity, 1.0 / train_log.rank)
    with pytest.raises(ValueError, match=r"eps_neg must be a finite number >= 0 and <= 1, found 2"):
        clicks_stage(space, "s", synthetic_dataset, produced, {"eps_neg": 2}, passes=6, seed=3)
