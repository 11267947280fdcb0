"""Top-k display, Plackett-Luce logging and the cascade / policy-aware corrections in the pipeline."""

import numpy as np
import pytest

from cltr.clickmodels.dcm import DCMSettings, continuation_probability
from cltr.clickmodels.pbm import PBMSettings
from cltr.core.cascade import cascade_propensity
from cltr.core.queries import Queries
from cltr.core.scorers import LinearScorer
from cltr.data.synthetic import make_synthetic
from cltr.pipeline.experiments import load_spec
from cltr.pipeline.stages import (
    click_logs,
    clicks_stage,
    evaluation_stage,
    export_rows,
    impressions_of,
    model_stage,
    policy_propensities,
    production_stage,
    simulate,
)
from cltr.pipeline.workspace import Workspace


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """``(dataset, workspace, production)``: a small synthetic dataset and its production ranker."""
    dataset = make_synthetic(n_queries=40, docs=(5, 30))
    space = Workspace(tmp_path_factory.mktemp("presentation"))
    production, _ = production_stage(space, "s", dataset, "fingerprint", seed=1)
    return dataset, space, production


def _copies(scores, relevant, copies):
    """``copies`` identical queries with one feature, the production score."""
    n = len(scores)
    X = np.tile(np.asarray(scores, dtype=np.float64), copies)[:, None]
    labels = np.tile(np.asarray(relevant, dtype=np.int64), copies)
    queries = Queries(X=X, labels=labels, qid=np.arange(1, copies + 1), offsets=np.arange(0, n * copies + 1, n))
    return queries, labels.astype(bool)


def test_top_k_shows_only_the_first_k_and_keeps_the_defaults(small):
    dataset, space, production = small
    plain, _ = clicks_stage(space, "s", dataset, production, {"eta": 0.5}, passes=5, seed=1)
    assert "top_k" not in plain.config and "logging_temperature" not in plain.config
    assert "train/policy_propensity" not in plain.arrays
    shown, _ = clicks_stage(space, "s", dataset, production, {"eta": 0.5}, passes=5, seed=1, top_k=3)
    assert shown.config["top_k"] == 3 and shown.key != plain.key
    train, _ = click_logs(shown)
    presented = shown.arrays["train/presented_rank"]
    assert presented.shape == (1, len(dataset.train.labels)) and train.rank.max() <= 3
    np.testing.assert_array_equal(train.rank, presented[0, train.doc])
    # top_k = 0 is the full list: the plain log itself
    again, reused = clicks_stage(space, "s", dataset, production, {"eta": 0.5}, passes=5, seed=1, top_k=0)
    assert reused and again.key == plain.key
    # a deterministic policy's propensity is exact: theta of the rank, 0 below k
    rho = shown.arrays["train/policy_propensity"]
    np.testing.assert_allclose(rho, np.where(presented[0] <= 3, (1.0 / presented[0]) ** 0.5, 0.0))
    # impressions and exports hold only displayed documents
    table = impressions_of(shown, "train", dataset)
    assert table.rank.max() == 3 and len(table.rank) == np.minimum(np.diff(dataset.train.offsets), 3).sum()
    rows = export_rows(shown, "train", dataset)
    assert rows["rank"].max() == 3 and rows["click"].sum() == len(train)
    with pytest.raises(ValueError, match="top_k must be a non-negative integer"):
        clicks_stage(space, "s", dataset, production, {}, passes=5, seed=1, top_k=-1)


def test_a_logging_temperature_draws_a_ranking_per_pass(small):
    dataset, space, production = small
    rankers = [production, production_stage(space, "s", dataset, "fingerprint", seed=1, ranker=1)[0]]
    clicks, _ = clicks_stage(space, "s", dataset, rankers, {}, passes=6, seed=1, top_k=4, logging_temperature=0.5)
    assert clicks.config["logging_temperature"] == 0.5
    presented, pass_ranker = clicks.arrays["train/presented_rank"], clicks.arrays["train/pass_ranker"]
    assert presented.shape == (6, len(dataset.train.labels))
    np.testing.assert_array_equal(pass_ranker, np.arange(6))
    train, _ = click_logs(clicks)
    np.testing.assert_array_equal(train.rank, presented[train.pass_index, train.doc])
    assert train.rank.max() <= 4 and not np.array_equal(presented[0], presented[2])
    # every pass ranks each query 1..n_q
    offsets = dataset.train.offsets
    for p in range(6):
        for q in range(dataset.train.n_queries):
            assert sorted(presented[p, offsets[q] : offsets[q + 1]]) == list(range(1, offsets[q + 1] - offsets[q] + 1))
    table = impressions_of(clicks, "train", dataset)
    assert table.clicks.sum() == len(train) and table.rank.max() == 4
    rho = clicks.arrays["train/policy_propensity"]
    assert np.all((rho > 0) & (rho <= 1))


def test_the_policy_aware_estimate_is_unbiased_where_plain_ips_is_not():
    """Relevant documents per session, estimated from a top-2 display of Plackett-Luce rankings:
    the policy-aware propensity hits the truth; the displayed rank's propensity misses the
    relevant documents that are rarely displayed."""
    queries, relevant = _copies([2.0, 1.0, 0.0, -1.0], [True, False, True, True], copies=30)
    production = LinearScorer(np.array([1.0]))
    settings = PBMSettings(eta=1.0, eps_neg=0.0)
    passes = 300
    log, presented, _ = simulate(
        queries,
        relevant,
        [production],
        "pbm",
        settings,
        passes=passes,
        seed=3,
        split="train",
        top_k=2,
        logging_temperature=1.0,
    )
    rho = policy_propensities(
        queries,
        [production],
        "pbm",
        settings,
        presented,
        passes=passes,
        top_k=2,
        logging_temperature=1.0,
        seed=3,
        split="train",
        samples=4000,
    )
    truth = relevant.sum() / queries.n_queries
    for propensity, unbiased in ((rho[log.doc], True), (log.propensity, False)):
        per_session = np.bincount(log.session, weights=1.0 / propensity, minlength=log.n_sessions)
        estimate, error = per_session.mean(), per_session.std() / np.sqrt(log.n_sessions)
        if unbiased:
            assert abs(estimate - truth) < 4 * error, (estimate, truth, error)
        else:
            assert truth - estimate > 10 * error, (estimate, truth, error)


def test_the_corrections_read_their_clicks(small):
    dataset, space, production = small
    settings = DCMSettings(continuation=0.7)
    cascading, _ = clicks_stage(space, "s", dataset, production, settings, model="dcm", passes=4, seed=1)
    logged, _ = click_logs(cascading)
    told, vali = click_logs(cascading, correction="cascade")
    np.testing.assert_allclose(
        told.propensity,
        cascade_propensity(logged.session, logged.rank, continuation_probability(logged.rank, settings)),
    )
    np.testing.assert_array_equal(told.doc, logged.doc)
    assert told.propensity.min() < 1 and np.all(vali.propensity <= 1)
    # the correction survives a prefix of passes (learning curves)
    short, _ = click_logs(cascading, passes=2, correction="cascade")
    np.testing.assert_allclose(short.propensity, told.propensity[: len(short)])
    positional, _ = clicks_stage(space, "s", dataset, production, {}, passes=4, seed=1)
    with pytest.raises(ValueError, match="correction 'cascade' needs clicks of the dcm click model.*from pbm"):
        click_logs(positional, correction="cascade")
    with pytest.raises(ValueError, match="correction 'policy-aware' needs the policy propensities"):
        click_logs(positional, correction="policy-aware")
    topk, _ = clicks_stage(space, "s", dataset, production, {}, passes=4, seed=1, top_k=2, logging_temperature=1.0)
    aware, _ = click_logs(topk, correction="policy-aware")
    np.testing.assert_array_equal(aware.propensity, topk.arrays["train/policy_propensity"][aware.doc])
    # a cascade log has no per-rank examination: no policy propensities to store
    cascade_topk, _ = clicks_stage(space, "s", dataset, production, settings, model="dcm", passes=4, seed=1, top_k=3)
    assert "train/policy_propensity" not in cascade_topk.arrays


def test_the_figure_specs_vary_what_the_issue_asks():
    cascade, topk = load_spec("cascade"), load_spec("topk")
    assert cascade.clicks["model"] == "dcm" and cascade.x == "continuation"
    assert cascade.series == {"correction": ["ips", "cascade"]}
    assert topk.x == "top_k" and sorted(topk.values) == [0, 5, 10, 20] and topk.clicks["logging_temperature"] > 0
    assert topk.series == {"correction": ["ips", "policy-aware"]}
    for spec in (cascade, topk):
        assert spec.methods == ("svm-proprank", "svm-propdcg", "deep-propdcg", "tree-propdcg")
        assert spec.references == ("production", "skyline")


def _paired_gains(tmp_path, correction, seeds, **clicks) -> np.ndarray:
    """Test Avg DCG of SVM PropRank (C = 1) told ``correction`` minus told plain IPS, per seed,
    on the same clicks of a 600-query synthetic dataset (lists of 5 to 60 documents)."""
    dataset = make_synthetic(n_queries=600, docs=(5, 60))
    space = Workspace(tmp_path)
    gains = []
    for seed in seeds:
        production, _ = production_stage(space, "s", dataset, "fingerprint", seed=seed)
        log, _ = clicks_stage(space, "s", dataset, production, passes=50, seed=seed, **clicks)
        value = {}
        for told in ("ips", correction):
            # corrections compared as told: no variance control (--clip auto would clip plain IPS here)
            trained, _ = model_stage(
                space, "s", dataset, log, "svm-proprank", {"grid": [1.0]}, seed=seed, correction=told, clip=None
            )
            value[told] = evaluation_stage(space, "s", dataset, trained, log, seed=seed)[0].info["avg_dcg"]
        gains.append(value[correction] - value["ips"])
    return np.array(gains)


def test_the_cascade_correction_beats_plain_ips_on_cascade_clicks(tmp_path):
    # noisy cascade clicks (eps- = 0.3): position-based IPS overweights the noise clicks deep in
    # lists whose users never stopped (measured: +0.040 on average, 7 of 8 seeds)
    gains = _paired_gains(
        tmp_path, "cascade", range(6), model="dcm", settings={"continuation": 1.0, "decay": 1.0, "eps_neg": 0.3}
    )
    assert gains.mean() > 0.015 and (gains > 0).sum() >= 4, gains


def test_the_policy_aware_correction_beats_plain_ips_on_top_k_clicks(tmp_path):
    # top-5 of Plackett-Luce rankings at temperature 0.5 (measured: +0.061 on average, 8 of 8 seeds)
    gains = _paired_gains(
        tmp_path, "policy-aware", range(4), settings={"eta": 1.0, "eps_neg": 0.1}, top_k=5, logging_temperature=0.5
    )
    assert gains.mean() > 0.02 and (gains > 0).all(), gains
