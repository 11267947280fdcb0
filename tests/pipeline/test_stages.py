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
    clicks, reused = clicks_stage(
        space, "s", synthetic_dataset, produced, {"eta": 1.5, "eps_neg": 0.2}, passes=6, seed=3
    )
    assert not reused and clicks.config["click_model"] == "pbm" and clicks.config["eta"] == 1.5
    train_log, vali_log = click_logs(clicks)
    for stored, drawn in ((train_log, data.train_log), (vali_log, data.vali_log)):
        for name, value in drawn.arrays().items():
            np.testing.assert_array_equal(stored.arrays()[name], value, err_msg=name)
    assert clicks.info["train"]["clicks"] == len(train_log) and clicks.info["train"]["sessions"] == 6 * 180
    # the same settings as an instance are the same artifact
    again, reused = clicks_stage(
        space, "s", synthetic_dataset, produced, PBMSettings(eta=1.5, eps_neg=0.2), passes=6, seed=3
    )
    assert reused and again.key == clicks.key
    # nested prefixes for learning curves, and other propensities for misspecification
    short, _ = click_logs(clicks, passes=2)
    np.testing.assert_array_equal(short.doc, train_log.first_passes(2).doc)
    told, _ = click_logs(clicks, eta_model=1.0)
    np.testing.assert_allclose(told.propensity, 1.0 / train_log.rank)
    with pytest.raises(ValueError, match=r"eps_neg must be a finite number >= 0 and <= 1, found 2"):
        clicks_stage(space, "s", synthetic_dataset, produced, {"eps_neg": 2}, passes=6, seed=3)


def test_displayed_rows_hold_every_session_and_agree_with_the_clicks(tmp_path, synthetic_dataset):
    from cltr.pipeline.stages import displayed_rows, impressions_of

    space = Workspace(tmp_path)
    produced, _ = production_stage(space, "s", synthetic_dataset, "fingerprint", seed=1)
    clicks, _ = clicks_stage(space, "s", synthetic_dataset, produced, {"eta": 1.0, "eps_neg": 0.2}, passes=4, seed=1)
    train_log, _ = click_logs(clicks)
    rows = displayed_rows(clicks, "train", synthetic_dataset)
    queries = synthetic_dataset.train
    # every session shows its query's every document once, at ranks 1..n in order
    assert rows.n_sessions == 4 * queries.n_queries and len(rows) == 4 * queries.n_docs
    starts = rows.session_offsets()
    sizes = np.diff(starts)
    np.testing.assert_array_equal(sizes, np.tile(np.diff(queries.offsets), 4))
    np.testing.assert_array_equal(rows.rank, np.concatenate([np.arange(1, n + 1) for n in sizes]))
    # the clicked rows are the log's clicks, with its propensities
    clicked = rows.click == 1
    assert clicked.sum() == len(train_log)
    np.testing.assert_array_equal(np.sort(rows.doc[clicked]), np.sort(train_log.doc))
    np.testing.assert_allclose(np.sort(rows.propensity[clicked]), np.sort(train_log.propensity))
    np.testing.assert_allclose(rows.propensity, 1.0 / rows.rank)
    # aggregated, they are the impressions the estimators read
    mine, theirs = rows.impressions(), impressions_of(clicks, "train", synthetic_dataset)
    order_mine, order_theirs = np.lexsort((mine.rank, mine.doc)), np.lexsort((theirs.rank, theirs.doc))
    for name in ("doc", "rank", "impressions", "clicks"):
        np.testing.assert_array_equal(getattr(mine, name)[order_mine], getattr(theirs, name)[order_theirs])
    # a prefix of passes is a prefix of the rows; told propensities follow eta_model and clip
    two = displayed_rows(clicks, "train", synthetic_dataset, passes=2, eta_model=2.0, clip=0.05)
    assert two.n_sessions == 2 * queries.n_queries
    np.testing.assert_array_equal(two.doc, rows.doc[: len(two)])
    np.testing.assert_allclose(two.propensity, np.maximum(1.0 / two.rank.astype(float) ** 2, 0.05))


def test_clipping_reaches_the_training_log_only_and_a_correction_may_clip_itself(
    tmp_path, synthetic_dataset, monkeypatch
):
    from cltr.pipeline import corrections

    space = Workspace(tmp_path)
    produced, _ = production_stage(space, "s", synthetic_dataset, "fingerprint", seed=1)
    clicks, _ = clicks_stage(space, "s", synthetic_dataset, produced, {"eta": 1.0, "eps_neg": 0.1}, passes=2, seed=1)
    train, vali = click_logs(clicks)
    assert train.propensity.min() < 0.1 and vali.propensity.min() < 0.1
    for tau in (0.01, 0.1):
        clipped_train, clipped_vali = click_logs(clicks, clip=tau)
        # the validation criterion never depends on the training clip
        np.testing.assert_array_equal(clipped_vali.propensity, vali.propensity)
        np.testing.assert_array_equal(clipped_train.propensity, np.maximum(train.propensity, tau))
    # a correction declaring "clip" is given it (the training split's only) and is not clipped afterwards
    calls = []

    def probe(log, clicks, split, *, clip):
        calls.append((split, clip))
        return log.with_propensity(log.propensity * 2)

    monkeypatch.setitem(
        corrections.CORRECTIONS, "probe", corrections.Correction("probe", "test", probe, context=("clip",))
    )
    told_train, told_vali = click_logs(clicks, clip=0.5, correction="probe")
    assert calls == [("train", 0.5), ("vali", None)]
    np.testing.assert_array_equal(told_train.propensity, train.propensity * 2)
    np.testing.assert_array_equal(told_vali.propensity, vali.propensity * 2)


def test_model_stage_keys_the_clip_setting_and_evaluation_reads_unclipped_validation(tmp_path, synthetic_dataset):
    from cltr.core.ranking import validation_estimate
    from cltr.core.seeds import stream
    from cltr.pipeline.stages import evaluation_stage, model_stage

    space = Workspace(tmp_path)
    produced, _ = production_stage(space, "s", synthetic_dataset, "fingerprint", seed=1)
    clicks, _ = clicks_stage(space, "s", synthetic_dataset, produced, {"eta": 1.0, "eps_neg": 0.1}, passes=2, seed=1)
    _, vali = click_logs(clicks)
    model, _ = model_stage(space, "s", synthetic_dataset, clicks, "svm-proprank", {"C": 1.0}, clip=0.1)
    assert model.config["train_clip"] == 0.1 and "clip" not in model.config and model.info["clip"] == 0.1
    unclipped = validation_estimate(
        scorer_from_arrays(model.arrays),
        synthetic_dataset.vali,
        vali,
        rng=stream(0, "selection"),
        dcg_base=synthetic_dataset.dcg_base,
    )
    assert model.info["validation_snips_avg_dcg"] == pytest.approx(unclipped)
    evaluation, _ = evaluation_stage(space, "s", synthetic_dataset, model, clicks)
    assert evaluation.info["validation_snips_avg_dcg"] == pytest.approx(unclipped)
    assert {"versus_logging", "warnings", "ess_fraction"} <= set(model.info)
    default, _ = model_stage(space, "s", synthetic_dataset, clicks, "svm-proprank", {"C": 1.0})
    assert default.config["train_clip"] == "auto"
    none, _ = model_stage(space, "s", synthetic_dataset, clicks, "svm-proprank", {"C": 1.0}, clip="none")
    assert "train_clip" not in none.config and none.info["clip"] is None
    # clipping changes nothing a method without weights reads: not in its key
    naive, _ = model_stage(space, "s", synthetic_dataset, clicks, "svm-rank", {"C": 1.0}, clip=0.1)
    assert "train_clip" not in naive.config
    # a TAU at or below every training click's propensity clips nothing: the unclipped model
    lowest = float(click_logs(clicks)[0].propensity.min())
    below, reused = model_stage(space, "s", synthetic_dataset, clicks, "svm-proprank", {"C": 1.0}, clip=lowest)
    assert reused and below.key == none.key
    above, reused = model_stage(space, "s", synthetic_dataset, clicks, "svm-proprank", {"C": 1.0}, clip=lowest * 1.01)
    assert not reused and above.config["train_clip"] == lowest * 1.01
