"""Model selection on validation estimates and the grid option (``cltr.core.selection``)."""

import numpy as np
import pytest

from cltr.core.ranking import dcg_gain, snips_avg_dcg
from cltr.core.selection import (
    ALIKE_SHARE,
    ESS_FRACTION,
    alike_share,
    clip_grid,
    edges_of_grid,
    ess_fraction,
    guard_warnings,
    parse_clip,
    parse_grid,
    select_on_validation,
    varied_queries,
    versus_logging,
)


def test_selection_keeps_best_and_ties_go_to_first():
    values = {0.1: 0.5, 1.0: 0.7, 10.0: 0.7}
    selection = select_on_validation(
        [{"C": c} for c in values], lambda p, prev: (p["C"], {}), lambda model: values[model]
    )
    assert selection.best == 1.0 and selection.best_estimate == 0.7 and len(selection.table) == 3


def test_selection_skips_nan():
    selection = select_on_validation(
        [{"C": 1.0}, {"C": 2.0}], lambda p, prev: (p["C"], {}), lambda model: float("nan") if model == 1.0 else 0.3
    )
    assert selection.best == 2.0


def test_each_candidate_warm_starts_from_the_previous_and_reports_its_row():
    previous, rows = [], []
    selection = select_on_validation(
        [{"C": 1.0}, {"C": 2.0}, {"C": 3.0}],
        lambda p, prev: (previous.append(prev) or p["C"], {"extra": p["C"] * 2}),
        lambda model: -abs(model - 2.0),
        progress=rows.append,
        criterion="score",
    )
    assert previous == [None, 1.0, 2.0]
    assert [row["extra"] for row in rows] == [2.0, 4.0, 6.0] and rows == selection.table
    assert [row["score"] for row in rows] == [-1.0, 0.0, -1.0]
    assert selection.best_params == {"C": 2.0}
    with pytest.raises(ValueError, match="grid is empty"):
        select_on_validation([], lambda p, prev: (None, {}), lambda model: 0.0)


def test_parse_grid():
    assert parse_grid("1,0.1") == [0.1, 1.0]
    assert np.allclose(parse_grid("0.001:1000:7"), [1e-3, 1e-2, 1e-1, 1, 10, 100, 1000])
    with pytest.raises(ValueError, match="positive"):
        parse_grid("-1,2")
    with pytest.raises(ValueError, match=r"cannot read grid 'a,b': expected 'a,b,c' or 'low:high:count'"):
        parse_grid("a,b")


def test_parse_grid_refuses_non_finite_values_and_a_grid_that_cannot_fit(monkeypatch):
    import cltr.core.resources as resources

    for text in ("nan,1", "0.1,inf", "0.1:nan:3"):
        with pytest.raises(ValueError, match="must hold positive finite numbers"):
            parse_grid(text)
    with pytest.raises(ValueError, match="holds no value"):
        parse_grid("0.1:10:0")
    # refused before the grid exists: 0.1:10:1000000000 grew to 15.7 GB in 40 s
    monkeypatch.setattr(resources, "physical_memory", lambda: 8 << 30)
    with pytest.raises(
        ValueError,
        match=r"grid '0.1:10:1000000000' has 1,000,000,000 values, one training each, "
        r"and .* would need about 279 GiB, more than this machine's 8 GiB",
    ):
        parse_grid("0.1:10:1000000000")
    assert len(parse_grid("0.1:10:1000")) == 1000


def test_a_grid_that_cannot_fit_is_a_usage_error_before_any_work(tmp_path, invoke, monkeypatch):
    import cltr.core.resources as resources

    monkeypatch.setattr(resources, "physical_memory", lambda: 8 << 30)
    out = invoke("train", "svm-rank", "--grid", "0.1:10:1000000000", workdir=tmp_path / "work", expect=2).output
    assert "1,000,000,000 values" in out and "279 GiB" in out and "Usage: cltr" in out
    assert not (tmp_path / "work").exists()


# -- the guard (issue 22) ---------------------------------------------------------------------


def test_guard_never_picks_a_constant_scorer_even_with_the_best_raw_estimate():
    # the constant model's estimate (a lucky random ranking) is the highest of the grid
    values = {"constant": 0.9, "weak": 0.5, "good": 0.7}
    share = {"constant": 1.0, "weak": 0.0, "good": 0.2}
    selection = select_on_validation(
        [{"name": n} for n in values],
        lambda p, prev: (p["name"], {}),
        lambda model: values[model],
        alike=lambda model: share[model],
    )
    assert selection.best == "good" and selection.best_estimate == 0.7 and not selection.warnings
    assert [row["alike_share"] for row in selection.table] == [1.0, 0.0, 0.2]
    # without the guard the constant one wins: the test can fail
    assert (
        select_on_validation(
            [{"name": n} for n in values], lambda p, prev: (p["name"], {}), lambda model: values[model]
        ).best
        == "constant"
    )


def test_when_every_candidate_is_constant_the_best_is_kept_and_said():
    selection = select_on_validation(
        [{"C": 1.0}, {"C": 2.0}],
        lambda p, prev: (p["C"], {}),
        lambda model: model / 10,
        alike=lambda model: ALIKE_SHARE,
    )
    assert selection.best == 2.0 and len(selection.warnings) == 1 and "alike" in selection.warnings[0]


def test_alike_share_by_hand():
    offsets = np.array([0, 3, 5, 6, 9, 12])
    scores = np.array(
        [
            1.0,
            1.0,
            1.0,  # alike
            2.0,
            3.0,  # ranked
            7.0,  # one document: not counted
            5.0,
            5.0 + 1e-12,
            5.0,  # spread 1e-12 <= 1e-9 * 7: alike
            0.0,
            1e-3,
            0.0,
        ]
    )  # ranked
    assert alike_share(scores, offsets) == pytest.approx(2 / 4)
    # a linear model's scale is arbitrary: a tiny w still ranks
    assert alike_share(scores * 1e-8, offsets) == pytest.approx(2 / 4)
    assert alike_share(np.zeros(12), offsets) == 1.0
    varied = np.array([False, True, True, True, True])  # the first query's documents are identical
    assert alike_share(scores, offsets, varied=varied) == pytest.approx(1 / 3)
    X = np.array([[1, 2]] * 3 + [[0, 1], [1, 1], [3, 3], [0, 0], [0, 1], [0, 0], [1, 1], [1, 1], [1, 2]])
    np.testing.assert_array_equal(varied_queries(X.astype(float), offsets), [False, True, False, True, True])


def test_versus_logging_is_the_difference_of_two_snips_estimates_with_a_clustered_standard_error():
    rng = np.random.default_rng(3)
    n = 40
    model_rank, logged_rank = rng.integers(1, 9, n), rng.integers(1, 9, n)
    propensity = rng.uniform(0.05, 1.0, n)
    group = rng.integers(0, 6, n)
    result = versus_logging(model_rank, logged_rank, 1.0 / propensity, group)
    docs = np.arange(n)
    assert result["model"] == pytest.approx(snips_avg_dcg(model_rank, docs, propensity))
    assert result["logging"] == pytest.approx(snips_avg_dcg(logged_rank, docs, propensity))
    assert result["difference"] == pytest.approx(result["model"] - result["logging"])
    # the delta method by a double loop over clusters and clicks
    w, d = 1.0 / propensity, dcg_gain(model_rank) - dcg_gain(logged_rank)
    D = sum(w[i] * d[i] for i in range(n)) / sum(w)
    variance = sum(sum(w[i] * (d[i] - D) for i in range(n) if group[i] == g) ** 2 for g in set(group)) / sum(w) ** 2
    assert result["standard_error"] == pytest.approx(np.sqrt(variance))
    # identical rankings: no difference, no error
    same = versus_logging(logged_rank, logged_rank, 1.0 / propensity, group)
    assert same["difference"] == 0 and same["standard_error"] == 0


def test_parse_clip_and_the_grid():
    assert parse_clip("auto") == "auto" and parse_clip("none") is None and parse_clip(None) is None
    assert parse_clip("0.1") == 0.1 and parse_clip(1) == 1.0
    for bad in ("0", 1.5, "sometimes", True):
        with pytest.raises(ValueError, match="'auto', 'none' or a threshold"):
            parse_clip(bad)
    assert clip_grid(0.001) == [0.01, 0.03, 0.1, 0.3]
    # thresholds at or below the smallest propensity would give the unclipped log again
    assert clip_grid(0.03) == [0.1, 0.3] and clip_grid(0.5) == []


def test_ess_fraction():
    assert ess_fraction(np.ones(10)) == pytest.approx(1.0)
    assert ess_fraction(np.array([1.0] * 9 + [1e6])) == pytest.approx(0.1, rel=1e-4)
    assert ess_fraction(np.array([2.0, -2.0])) == pytest.approx(1.0)


def test_edges_of_grid():
    table = [{"C": c} for c in (0.1, 1.0, 10.0)]
    assert edges_of_grid(table, {"C": 10.0}) == [{"axis": "C", "value": 10.0, "side": "high", "grid": [0.1, 1.0, 10.0]}]
    assert edges_of_grid(table, {"C": 0.1})[0]["side"] == "low"
    assert edges_of_grid(table, {"C": 1.0}) == []
    assert edges_of_grid(table[:2], {"C": 1.0}) == []  # two values: every choice is an edge
    trees = [{"learning_rate": r, "num_leaves": n} for r in (0.001, 0.01, 0.1) for n in (2, 4, 8)]
    assert [e["axis"] for e in edges_of_grid(trees, {"learning_rate": 0.1, "num_leaves": 8})] == ["learning_rate"]


def test_guard_warnings_say_what_happened_and_what_to_do():
    worse = {"model": 0.40, "logging": 0.45, "difference": -0.05, "standard_error": 0.01}
    level = {"model": 0.46, "logging": 0.45, "difference": 0.01, "standard_error": 0.02}
    better = {"model": 0.50, "logging": 0.45, "difference": 0.05, "standard_error": 0.01}
    assert "worse than the logging (production) ranker" in guard_warnings(versus=worse)[0]
    assert "not better (by its standard error) than the logging" in guard_warnings(versus=level)[0]
    assert "more clicks" in guard_warnings(versus=worse)[0] and "--clip" in guard_warnings(versus=worse)[0]
    assert guard_warnings(versus=better) == []
    low = guard_warnings(train_ess=ESS_FRACTION / 2, n_train=1000)
    assert len(low) == 1 and "effective sample size" in low[0] and "--clip auto" in low[0]
    assert guard_warnings(train_ess=ESS_FRACTION, n_train=1000) == []
    assert "validation estimate rests on" in guard_warnings(vali_ess=0.01, n_vali=500)[0]
    edge = guard_warnings(edges=edges_of_grid([{"C": c} for c in (0.1, 1.0, 10.0)], {"C": 10.0}))
    assert len(edge) == 1 and "C = 10 is the largest value tried" in edge[0] and "--grid" in edge[0]
    strongest = guard_warnings(clip={"mode": "auto", "tau": 0.3, "grid": [0.01, 0.1, 0.3]})
    assert len(strongest) == 1 and "strongest clipping" in strongest[0]
    assert guard_warnings(clip={"mode": "auto", "tau": 0.1, "grid": [0.01, 0.1, 0.3]}) == []
    assert "alike" in guard_warnings(alike=1.0)[0]


def test_validation_clip_is_the_least_clipping_that_gives_the_estimate_a_usable_sample():
    from cltr.core.selection import ESS_FRACTION, VALIDATION_CLIPS, ess_fraction, validation_clip

    easy = 1.0 / np.arange(1, 11, dtype=float)  # eta 1 over ten ranks: fraction well above 5%
    assert ess_fraction(1 / easy) >= ESS_FRACTION and validation_clip(easy) is None
    # a hard log: most clicks near the top, a few with tiny propensities
    hard = np.concatenate([np.full(990, 0.8), np.full(10, 1e-4)])
    assert ess_fraction(1 / hard) < ESS_FRACTION
    tau = validation_clip(hard)
    assert tau in VALIDATION_CLIPS and ess_fraction(1 / np.maximum(hard, tau)) >= ESS_FRACTION
    smaller = [t for t in VALIDATION_CLIPS if t < tau]
    assert all(ess_fraction(1 / np.maximum(hard, t)) < ESS_FRACTION for t in smaller)
    assert validation_clip(np.array([])) is None and validation_clip(np.array([np.nan, 1.0])) is None


def test_the_validation_clip_follows_the_validation_clicks_never_the_training_clip(tmp_path, synthetic_dataset):
    from cltr.pipeline.stages import clicks_stage, evaluation_stage, model_stage, production_stage
    from cltr.pipeline.workspace import Workspace

    space = Workspace(tmp_path)
    produced, _ = production_stage(space, "s", synthetic_dataset, "fingerprint", seed=0)
    hard, _ = clicks_stage(space, "s", synthetic_dataset, produced, {"eta": 2.0, "eps_neg": 0.3}, passes=10, seed=0)
    models = [
        model_stage(space, "s", synthetic_dataset, hard, "svm-proprank", {"C": 1.0}, clip=clip)[0]
        for clip in (None, 0.05)
    ]
    taus = {m.info["validation_clip"] for m in models}
    assert len(taus) == 1 and taus != {None}
    assert all(m.config["validation_clip"] == m.info["validation_clip"] for m in models)
    # the evaluation stage reads the validation clicks as the selection did
    for model in models:
        evaluation, _ = evaluation_stage(space, "s", synthetic_dataset, model, hard)
        assert evaluation.info["validation_snips_avg_dcg"] == pytest.approx(model.info["validation_snips_avg_dcg"])
    easy, _ = clicks_stage(space, "s", synthetic_dataset, produced, {"eta": 0.5, "eps_neg": 0.1}, passes=10, seed=0)
    model, _ = model_stage(space, "s", synthetic_dataset, easy, "svm-proprank", {"C": 1.0}, clip=None)
    assert model.info["validation_clip"] is None and "validation_clip" not in model.config
