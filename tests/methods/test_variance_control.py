"""Variance control and the selection guard every method shares (``cltr.methods.train``,
issue 22): ``--clip auto`` chosen on the unclipped validation clicks, a constant model
never chosen, the model compared with the logging ranker, edges of grids said; and SVM
PropDCG's start at a given C (issue 22 item 7)."""

import numpy as np
import pytest

from cltr import methods
from cltr.core.clicks import ClickLog
from cltr.core.scorers import LinearScorer
from cltr.core.selection import ESS_FRACTION, ess_fraction
from cltr.methods import Method, TrainingData
from cltr.methods.linear import LinearSVMOptions, select_c


def _with_noise_clicks(data: TrainingData, count: int = 20) -> TrainingData:
    """The same data with ``count`` noise clicks added to the training log: each on the
    least relevant document of a query, told with propensity 1e-4 (a weight of 10,000
    against at most 2.8 for every real click)."""
    log, queries = data.train_log, data.dataset.train
    score = queries.X[:, 0] + queries.X[:, 1] / 2
    doc = np.array(
        [queries.offsets[q] + np.argmin(score[queries.offsets[q] : queries.offsets[q + 1]]) for q in range(count)]
    )
    noisy = ClickLog(
        query=np.concatenate([log.query, np.arange(count)]),
        doc=np.concatenate([log.doc, doc]),
        rank=np.concatenate([log.rank, np.full(count, 8)]),
        propensity=np.concatenate([log.propensity, np.full(count, 1e-4)]),
        pass_index=np.concatenate([log.pass_index, np.zeros(count, dtype=np.int64)]),
        n_passes=log.n_passes,
        n_queries=log.n_queries,
    )
    return TrainingData(data.dataset, noisy, data.vali_log, data.seed)


@pytest.fixture(scope="module")
def clean(shuffled_sessions):
    # eta 0.5 on 8 documents: every real propensity is at least 8^-0.5 = 0.354, above every TAU of the grid
    data, examination = shuffled_sessions(eta=0.5, passes=50)
    assert examination.min() > 0.3
    return TrainingData(data.dataset, data.train_log, data.vali_log, data.seed)


def test_auto_clip_keeps_the_log_unclipped_where_the_effective_sample_size_is_large(clean):
    assert ess_fraction(clean.train_log.cost) >= ESS_FRACTION
    scorer, info = methods.train("svm-proprank", clean, {"C": 1.0}, clip="auto")
    assert info["clip"] is None and info["clip_mode"] == "auto" and "clip_selection" not in info
    _, plain = methods.train("svm-proprank", clean, {"C": 1.0})
    assert info["validation_snips_avg_dcg"] == plain["validation_snips_avg_dcg"]  # the same single training


def test_auto_clip_clips_a_log_whose_few_noise_clicks_carry_huge_weights(clean):
    noisy = _with_noise_clicks(clean)
    assert ess_fraction(noisy.train_log.cost) < ESS_FRACTION
    scorer, info = methods.train("svm-proprank", noisy, {"C": 1.0}, clip="auto")
    rows = {row["clip"]: row["validation_snips_avg_dcg"] for row in info["clip_selection"]}
    assert list(rows) == [None, 0.01, 0.03, 0.1, 0.3]
    # any TAU from 0.03 up tames the noise (1/TAU <= 33) and leaves every real click as told
    # (propensities >= 0.354); unclipped, the noise clicks rank their documents on top
    assert info["clip"] in (0.03, 0.1, 0.3)
    assert max(rows.values()) > rows[None] + 0.1
    # the one-standard-error rule: the kept TAU is the strongest clipping within one paired
    # standard error of the best, and every stronger one lay beyond it
    table = {row["clip"]: row for row in info["clip_selection"]}
    kept = table[info["clip"]]
    assert kept["kept"] and sum(row["kept"] for row in table.values()) == 1
    assert kept["difference_to_best"] >= -kept["standard_error"]
    for tau in (t for t in table if t is not None and t > info["clip"]):
        assert table[tau]["difference_to_best"] < -table[tau]["standard_error"]
    assert info["validation_snips_avg_dcg"] == pytest.approx(noisy.estimate(scorer))
    assert info["ess_fraction"]["trained"] > ESS_FRACTION > info["ess_fraction"]["unclipped"]
    # a fixed TAU trains once on the clipped log; the validation log stays as told
    _, fixed = methods.train("svm-proprank", noisy, {"C": 1.0}, clip=info["clip"])
    assert fixed["clip"] == info["clip"] and fixed["validation_snips_avg_dcg"] == rows[info["clip"]]


def test_a_method_without_weights_ignores_the_clipping(clean):
    noisy = _with_noise_clicks(clean)
    _, info = methods.train("svm-rank", noisy, {"C": 1.0}, clip="auto")
    assert info["clip"] is None and "clip_selection" not in info


def test_select_c_never_keeps_a_constant_model_even_with_the_best_estimate(clean):
    # C = 0.01 "fits" w = 0, and the estimate is rigged to prefer it
    def fit(C, previous):
        return (np.zeros(3) if C == 0.01 else np.array([1.0, 0.5, 0.0]) * C), {}

    def estimate(scorer):
        return 1.0 if not scorer.w.any() else clean.estimate(scorer)

    options = LinearSVMOptions(grid=(0.01, 1.0, 10.0))
    scorer, info = select_c(options, fit, estimate, alike=clean.alike_share)
    assert scorer.w.any() and info["C"] != 0.01
    assert [row["alike_share"] for row in info["selection"]] == [1.0, 0.0, 0.0]
    _, unguarded = select_c(options, fit, estimate)
    assert unguarded["C"] == 0.01  # the rigged estimate would have won without the guard


def _fake_method(monkeypatch, name, train):
    method = Method(name=name, label=name, summary="test", options=LinearSVMOptions, train=train)
    monkeypatch.setitem(methods.methods(), name, method)


def test_a_model_worse_than_the_logging_ranker_is_said(monkeypatch, shuffled_sessions):
    # sessions sorted by relevance plus noise: the logging ranker is good, the reversed model bad
    data, _ = shuffled_sessions(eta=1.0, passes=20, noise=0.3)
    data = TrainingData(data.dataset, data.train_log, data.vali_log, data.seed)
    _fake_method(
        monkeypatch, "reversed", lambda d, o, progress=None: (LinearScorer(np.array([-1.0, -0.5, 0.0])), {"chosen": {}})
    )
    _fake_method(
        monkeypatch, "right", lambda d, o, progress=None: (LinearScorer(np.array([1.0, 0.5, 0.0])), {"chosen": {}})
    )
    _, worse = methods.train("reversed", data)
    versus = worse["versus_logging"]
    assert versus["difference"] < -versus["standard_error"] < 0
    assert any("worse than the logging (production) ranker" in w for w in worse["warnings"])
    _, right = methods.train("right", data)
    assert right["versus_logging"]["difference"] >= -1e-12
    assert not any("logging (production) ranker" in w for w in right["warnings"])


def test_the_guard_compares_with_production_on_the_unclipped_validation_clicks(monkeypatch, shuffled_sessions):
    # clipping the validation clicks at TAU_v counts a deep click at q / TAU_v of its weight:
    # the comparison with production then leans to production's order; given the unclipped
    # log, the guard reads it (and says so), while selection keeps the clipped estimate
    data, _ = shuffled_sessions(eta=2.0, passes=20, noise=0.3)
    tau = float(np.quantile(data.vali_log.propensity, 0.5))
    clipped = TrainingData(data.dataset, data.train_log, data.vali_log.clipped(tau), data.seed)
    guarded = TrainingData(data.dataset, data.train_log, clipped.vali_log, data.seed, guard_log=data.vali_log)
    scorer = LinearScorer(np.array([1.0, 0.5, 0.0]))
    plain = TrainingData(data.dataset, data.train_log, data.vali_log, data.seed).versus_logging(scorer)
    assert guarded.versus_logging(scorer) == {**plain, "unclipped": True}
    assert "unclipped" not in clipped.versus_logging(scorer)
    assert clipped.versus_logging(scorer)["logging"] != plain["logging"]  # the clipping moved the estimate
    assert guarded.estimate(scorer) == clipped.estimate(scorer)
    _fake_method(
        monkeypatch, "reversed", lambda d, o, progress=None: (LinearScorer(np.array([-1.0, -0.5, 0.0])), {"chosen": {}})
    )
    _, worse = methods.train("reversed", guarded)
    assert worse["versus_logging"]["unclipped"] is True
    assert any("SNIPS Avg DCG (unclipped)" in w for w in worse["warnings"])


def test_the_pipeline_hands_the_guard_the_unclipped_log_on_a_hard_log(tmp_path, invoke, hard_log):
    hard_log(tmp_path)
    out = invoke("train", "svm-rank", "-C", 0.1, workdir=tmp_path).output
    assert "validation SNIPS Avg DCG, unclipped: model" in out


def test_a_choice_on_the_edge_of_its_grid_is_said(monkeypatch, clean):
    def train(data, options, progress=None):
        table = [{"C": c, "validation_snips_avg_dcg": c / 100} for c in (0.1, 1.0, 10.0)]
        return LinearScorer(np.array([1.0, 0.5, 0.0])), {"chosen": {"C": 10.0}, "selection": table}

    _fake_method(monkeypatch, "edgy", train)
    _, info = methods.train("edgy", clean)
    assert any("C = 10 is the largest value tried" in w for w in info["warnings"])


def test_propdcg_at_a_given_small_c_starts_from_both_and_keeps_the_better(clean):
    # at C = 0.001 the CCP from w = 0 stops after one step at w = 0: a constant model
    _, zero = methods.train("svm-propdcg", clean, {"C": 0.001, "init": "zero"})
    assert zero["selection"][0]["ccp_iterations"] == 1 and zero["selection"][0]["alike_share"] == 1.0
    assert any("stopped after one step" in w and "--init proprank" in w for w in zero["warnings"])
    assert any("alike" in w for w in zero["warnings"])
    scorer, auto = methods.train("svm-propdcg", clean, {"C": 0.001})
    starts = {row["init"]: row["validation_snips_avg_dcg"] for row in auto["selection"]}
    assert set(starts) == {"zero", "proprank"} and auto["chosen"] == {"C": 0.001, "init": "proprank"}
    assert starts["proprank"] > starts["zero"] + 0.1 and scorer.w.any()
    assert not any("stopped after one step" in w for w in auto["warnings"])
    # over the grid the start stays w = 0 (the paper's), a row per C
    _, grid = methods.train("svm-propdcg", clean, {"grid": [0.1, 1.0]})
    assert [row["init"] for row in grid["selection"]] == ["zero", "zero"]
