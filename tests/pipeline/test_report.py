"""The report (``cltr.pipeline.report``): figures drawn from exactly the CSV's numbers, and
the tables and files of every spec kind."""

import numpy as np
import pandas as pd
import pytest

from cltr.core.statistics import bootstrap_interval, holm, paired_tests
from cltr.pipeline.experiments import Spec, load_spec
from cltr.pipeline.report import check, claims, plot, significance, stated_rows, summarise


def test_plotted_data_match_the_csv(tiny_run):
    frame = pd.read_csv(tiny_run / "results" / "tiny.csv")
    spec = load_spec("tiny", tiny_run / "specs").resolved()
    _, data = plot(frame, spec)
    for method, label in (("svm-rank", "SVM Rank"), ("svm-proprank", "SVM PropRank")):
        rows = frame[frame["method"] == method].groupby("point_passes")
        assert np.allclose(data[label]["mean"], rows["avg_dcg"].mean().to_numpy())
        assert np.allclose(data[label]["x"], rows["train_clicks"].mean().to_numpy())
        assert np.allclose(data[label]["std"], rows["avg_dcg"].std(ddof=1).to_numpy())
        # two runs are too few for an interval: no band is drawn (issue 21)
        assert np.isnan(data[label]["low"]).all() and np.isnan(data[label]["high"]).all()
    # with a third repetition the band is the seeded bootstrap interval of each point's mean
    third = frame[frame["repetition"] == frame["repetition"].min()].assign(
        repetition=frame["repetition"].max() + 1, avg_dcg=lambda rows: rows["avg_dcg"] - 0.01
    )
    three = pd.concat([frame, third], ignore_index=True)
    _, banded = plot(three, spec)
    for method, label in (("svm-rank", "SVM Rank"), ("svm-proprank", "SVM PropRank")):
        rows = three[three["method"] == method].groupby("point_passes")
        expected = [bootstrap_interval(group, seed=spec.seed) for _, group in rows["avg_dcg"]]
        assert np.allclose(banded[label]["low"], [low for low, _ in expected])
        assert np.allclose(banded[label]["high"], [high for _, high in expected])
    assert data["Production ranker"]["mean"][0] == pytest.approx(
        frame[frame["method"] == "production"]["avg_dcg"].mean()
    )
    for suffix in ("png", "pdf", "md", "tex"):
        assert (tiny_run / "results" / f"tiny.{suffix}").stat().st_size > 0
    summary = summarise(frame, spec)
    assert set(summary["n"]) == {2}


def test_table_and_ccp_kinds_write_their_outputs(tmp_path, invoke, tiny_spec_text):
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "t.toml").write_text(
        tiny_spec_text.replace('name = "tiny"', 'name = "t"')
        .replace('kind = "curve"', 'kind = "table"')
        .replace('x = "passes"\nvalues = [2, 4, 8]\nplot_x = "train_clicks"\n', "")
        + "[paper.tiny]\nsvm-rank = [0.5, 1e-2]\n"
    )
    (specs / "c.toml").write_text(
        'name = "c"\nkind = "ccp"\ndataset = "tiny"\nmethods = ["svm-propdcg"]\n'
        "[synthetic]\nn_queries = 40\n[clicks]\npasses = 5\n"
        "[options.svm-propdcg]\ngrid = [1.0, 100.0]\n"
    )
    invoke("figures", "t", "--specs", specs, "--out", tmp_path / "out", workdir=tmp_path)
    text = (tmp_path / "out" / "t.md").read_text()
    assert "paper" in text and "0.5000" in text and "paired tests between neighbouring rows" in text.lower()
    # the header note names the data, the click settings, the repetitions and the convention
    assert "- Data: tiny; clicks: eta = 1, eps+ = 1, eps- = 0.1, 100 passes; 2 repetition(s)." in text
    assert "Metric convention: Avg DCG = mean of 1/ln(1 + rank) over relevant test documents (label >= " in text
    assert "95% percentile bootstrap" in text and "Holm" in text
    invoke("figures", "c", "--specs", specs, "--out", tmp_path / "out", workdir=tmp_path)
    frame = pd.read_csv(tmp_path / "out" / "c.csv")
    assert set(frame["C"]) == {1.0, 100.0}
    for _, group in frame.groupby("C"):
        objective = group.sort_values("iteration")["objective"].to_numpy()
        assert np.all(np.diff(objective) <= 1e-9 * np.abs(objective[:-1]))
    assert (tmp_path / "out" / "c.png").stat().st_size > 0


# -- statistics -----------------------------------------------------------------------------


def test_holm_matches_a_hand_computation():
    # sorted: .005 (x4 = .02), .01 (x3 = .03), .03 (x2 = .06), .04 (x1 = .04, raised to .06: monotone)
    adjusted = holm([0.01, 0.04, 0.03, np.nan, 0.005])
    assert np.allclose(adjusted, [0.03, 0.06, 0.06, np.nan, 0.02], equal_nan=True)
    assert holm([0.5, 0.9]).tolist() == [1.0, 1.0]  # capped at 1
    assert np.isnan(holm([np.nan])).all()


def test_paired_tests_agree_with_scipy():
    from scipy.stats import ttest_rel, wilcoxon

    a = np.array([0.61, 0.64, 0.60, 0.66, 0.63, 0.62, 0.65])
    b = a + np.array([0.010, 0.004, -0.002, 0.012, 0.007, 0.001, 0.009])
    result = paired_tests(a, b)
    assert result["p_t"] == pytest.approx(ttest_rel(b, a).pvalue)
    assert result["p_wilcoxon"] == pytest.approx(wilcoxon(b - a).pvalue)
    assert result["wins"] == 6 and result["n"] == 7 and result["mean_difference"] == pytest.approx(np.mean(b - a))
    assert np.isnan(paired_tests(a, a)["p_t"]) and np.isnan(paired_tests(a[:1], b[:1])["p_wilcoxon"])


def test_bootstrap_interval_is_seeded_and_brackets_the_mean():
    values = np.array([0.2, 0.5, 0.4, 0.9, 0.3, 0.6])
    low, high = bootstrap_interval(values, seed=3)
    assert (low, high) == bootstrap_interval(values, seed=3)
    assert values.min() <= low < values.mean() < high <= values.max()
    narrow = bootstrap_interval(values, seed=3, level=0.5)
    assert low < narrow[0] < narrow[1] < high
    assert bootstrap_interval([0.7], seed=0) == (0.7, 0.7)


def test_intervals_hold_their_mean_when_every_run_is_equal(tmp_path):
    # six equal runs (the skyline's): pandas' mean of these is one ulp below numpy's resampled
    # means, which made the error bar negative and the Table 2 plot fail on MQ2008 Fold 1
    spec = _toy_spec(methods=("a-rank",), references=("skyline",), name="t", seed=2019)
    equal = float.fromhex("0x1.6d1ee3cdb223ep-1")  # the MQ2008 Fold 1 skyline's Avg DCG
    other = [0.5, 0.6, 0.55, 0.52, 0.58, 0.61]
    # one task's rows per repetition, as run_experiment gives them
    frame = pd.DataFrame(
        {
            "method": ["a-rank", "skyline"] * 6,
            "dataset": "letor",
            "repetition": np.repeat(np.arange(6), 2),
            "avg_dcg": [x for value in other for x in (value, equal)],
            "avg_rank": 3.0,
            "ndcg@10": 0.5,
            "train_clicks": 100,
            "irrelevant_click_share": 0.1,
        }
    )
    summary = summarise(frame, spec)
    assert (summary["avg_dcg_low"] <= summary["avg_dcg_mean"]).all()
    assert (summary["avg_dcg_mean"] <= summary["avg_dcg_high"]).all()
    plot(frame, spec)


def test_every_line_of_a_crowded_curve_has_its_own_colour_and_marker():
    # the robustness figure draws 13 methods: with five markers against ten colours the
    # 11th looked exactly like the 1st (LightGBM's baseline like SVM Rank)
    from cltr.methods import get, methods

    names = tuple(name for name in methods() if name != "skyline")
    spec = Spec(name="crowded", kind="curve", dataset="d", methods=names, x="eta", values=(1.0, 2.0), seed=5)
    frame = pd.DataFrame(
        [
            {
                "dataset": "d",
                "repetition": r,
                "method": m,
                "point_eta": eta,
                "avg_dcg": 0.5 + 0.01 * k + 0.001 * r,
                "avg_rank": 5.0,
                "ndcg@10": 0.5,
                "train_clicks": 100,
                "irrelevant_click_share": 0.2,
            }
            for k, m in enumerate(names)
            for eta in (1.0, 2.0)
            for r in range(3)
        ]
    )
    figure, _ = plot(frame, spec)
    labels = {get(name).label for name in names}
    lines = [line for axes in figure.axes for line in axes.get_lines() if line.get_label() in labels]
    assert len(lines) == len(names) > 10
    looks = {(line.get_color(), line.get_marker()) for line in lines}
    assert len(looks) == len(names)


def _toy_spec(**fields) -> Spec:
    base = {"name": "toy", "kind": "table", "dataset": "letor", "methods": ("a-rank", "b-rank", "c-rank"), "seed": 5}
    return Spec(**{**base, **fields})


def _toy_frame(gains: dict, runs: int = 8, datasets=("letor",)) -> pd.DataFrame:
    """Rows of three made-up methods over the same runs: method m scores base + gains[m] + noise."""
    rng = np.random.default_rng(0)
    rows = []
    for dataset in datasets:
        for repetition in range(runs):
            base = rng.normal(0.6, 0.02)
            for method, gain in gains.items():
                rows.append(
                    {
                        "dataset": dataset,
                        "repetition": repetition,
                        "method": method,
                        "avg_dcg": base + gain + rng.normal(0, 0.002),
                        "avg_rank": 5.0,
                        "ndcg@10": 0.5,
                        "train_clicks": 100,
                        "irrelevant_click_share": 0.25,
                    }
                )
    return pd.DataFrame(rows)


def test_significance_tests_every_claimed_pair_paired_and_holm_corrected():
    from scipy.stats import ttest_rel, wilcoxon

    frame = _toy_frame({"a-rank": 0.0, "b-rank": 0.01, "c-rank": 0.0}, datasets=("letor", "letor-fold2"))
    spec = _toy_spec(claimed_order=("a-rank", "b-rank", "c-rank"))
    tests = significance(frame, spec)
    assert [pair for pair in tests["_pair"]] == [("a-rank", "b-rank"), ("a-rank", "c-rank"), ("b-rank", "c-rank")]
    # pairs are matched on (dataset, repetition): 2 folds x 8 repetitions
    assert set(tests["runs"]) == {16}
    runs = frame.set_index(["dataset", "repetition", "method"])["avg_dcg"].unstack()
    expected_t = [ttest_rel(runs[b], runs[a]).pvalue for a, b in tests["_pair"]]
    expected_w = [wilcoxon(runs[b] - runs[a]).pvalue for a, b in tests["_pair"]]
    assert np.allclose(tests["p (paired t)"], expected_t) and np.allclose(tests["p (Wilcoxon)"], expected_w)
    assert np.allclose(tests["Holm p (t)"], holm(expected_t))
    verdicts = dict(zip(tests["_pair"], tests["verdict"], strict=True))
    assert verdicts[("a-rank", "b-rank")] == "holds"
    assert verdicts[("b-rank", "c-rank")] == "reversed"
    assert verdicts[("a-rank", "c-rank")].endswith("not significant")
    texts = claims(frame, spec, tests)
    assert set(texts) == {"b-rank", "c-rank"} and texts["b-rank"].startswith("beats a-rank: holds (+0.0")


def test_check_gives_the_gap_in_paper_standard_deviations():
    frame = _toy_frame({"a-rank": 0.0, "b-rank": 0.01, "c-rank": 0.02})
    means = frame.groupby("method")["avg_dcg"].mean()
    spec = _toy_spec(
        paper={
            "letor": {
                "a-rank": [float(means["a-rank"]) + 0.01, 0.004],
                "b-rank": [float(means["b-rank"]), 0.01],
                "d-rank": [0.5, 0.1],
            },
            "yahoo": {"a-rank": [0.0, 1.0]},
        }
    )
    rows = {row["method"]: row for row in check(frame, spec, tolerance=2.0)}
    assert rows["a-rank"]["gap (paper std)"] == "-2.50" and rows["a-rank"]["within"] is False
    assert rows["b-rank"]["gap (paper std)"] == "+0.00" and rows["b-rank"]["within"] is True
    assert rows["d-rank"]["within"] is None  # the paper has it, the spec did not run it
    assert check(frame, spec, tolerance=3.0)[0]["within"] is True
    assert check(frame, _toy_spec(dataset="synthetic", paper=spec.paper)) == []  # no paper values for it


def test_stated_numbers_are_measured_at_their_point():
    frame = pd.DataFrame(
        {
            "dataset": "d",
            "repetition": [0, 0, 1, 1, 0, 1],
            "method": "a-rank",
            "point_eps_neg": [0.0, 0.0, 0.0, 0.0, 0.3, 0.3],
            "irrelevant_click_share": [0.1, 0.1, 0.2, 0.2, 0.5, 0.7],
            "train_clicks": 10,
        }
    )
    stated = (
        {
            "text": "noise",
            "dataset": "yahoo",
            "measure": "irrelevant_click_share",
            "value": 0.598,
            "point": {"eps_neg": 0.3},
        },
        {"text": "n", "dataset": "d", "measure": "train_clicks", "value": [5, 20]},
        {"text": "absent", "dataset": "d", "measure": "train_clicks", "value": 1, "point": {"eta": 2}},
    )
    rows = stated_rows(frame, _toy_spec(kind="curve", dataset="d", x="eps_neg", values=(0.0, 0.3), stated=stated))
    assert rows[0]["paper"] == "59.8% (yahoo)" and rows[0]["ours"] == "60.0% (d)" and rows[0]["same dataset"] == "no"
    assert rows[1]["paper"] == "5–20 (d)" and rows[1]["ours"] == "10 (d)" and rows[1]["same dataset"] == "yes"
    assert rows[2]["ours"].startswith("n/a")


def test_every_method_is_tested_against_the_best_library_baseline_at_each_point():
    from cltr.pipeline.report import baseline_tests

    spec = Spec(
        name="r",
        kind="curve",
        methods=("svm-proprank", "xgboost-unbiased", "lightgbm-position"),
        x="eta",
        values=(1.0, 2.0),
        compare_to=("xgboost-unbiased", "lightgbm-position"),
    )
    # at eta 1 XGBoost is the better baseline, at eta 2 LightGBM; PropRank is +0.01 over
    # XGBoost at eta 1 on every run, and -0.05 under LightGBM at eta 2
    base = np.array([0.60, 0.62, 0.61, 0.63, 0.59, 0.64])
    values = {
        1.0: {"xgboost-unbiased": base, "lightgbm-position": base - 0.02, "svm-proprank": base + 0.01},
        2.0: {"xgboost-unbiased": base - 0.03, "lightgbm-position": base, "svm-proprank": base - 0.05},
    }
    rows = [
        {"dataset": "d", "repetition": r, "method": m, "point_eta": eta, "avg_dcg": v[r]}
        for eta, by in values.items()
        for m, v in by.items()
        for r in range(len(base))
    ]
    tests = baseline_tests(pd.DataFrame(rows), spec)
    one = tests[tests["eta"] == 1.0].set_index("comparison")
    two = tests[tests["eta"] == 2.0].set_index("comparison")
    from cltr.methods import get

    xgb, lgb, prop = (get(m).label for m in ("xgboost-unbiased", "lightgbm-position", "svm-proprank"))
    assert set(one.index) == {f"{prop} vs {xgb}", f"{lgb} vs {xgb}"}
    assert set(two.index) == {f"{prop} vs {lgb}", f"{xgb} vs {lgb}"}
    proprank_one = one[one.index.str.startswith("SVM PropRank")].iloc[0]
    proprank_two = two[two.index.str.startswith("SVM PropRank")].iloc[0]
    assert proprank_one["mean difference"] == pytest.approx(0.01) and proprank_one["wins"] == "6/6"
    assert proprank_two["mean difference"] == pytest.approx(-0.05) and proprank_two["wins"] == "0/6"
    # Holm over each point's two comparisons: the larger adjusted p is at least the raw one
    assert (one["Holm p (t)"] >= one["p (paired t)"] - 1e-15).all()
    assert baseline_tests(pd.DataFrame(rows), Spec(name="r", kind="curve", x="eta")).empty


# -- runs label themselves (issue 21) --------------------------------------------------------


def test_p_values_and_intervals_need_three_paired_runs():
    from cltr.pipeline.report import MIN_RUNS, table_rows

    assert MIN_RUNS == 3
    spec = _toy_spec(claimed_order=("a-rank", "b-rank", "c-rank"))
    two = _toy_frame({"a-rank": 0.0, "b-rank": 0.01, "c-rank": 0.02}, runs=2)
    tests = significance(two, spec)
    assert tests["p (paired t)"].isna().all() and tests["Holm p (Wilcoxon)"].isna().all()
    assert set(tests["verdict"]) == {"untestable (2 runs; a test needs at least 3)"}
    rows = table_rows(two, spec)
    assert {row["95% CI"] for row in rows} == {"n/a (2 runs)"}
    assert "Holm p: t n/a (2 runs), Wilcoxon n/a (2 runs)" in claims(two, spec)["b-rank"]
    three = _toy_frame({"a-rank": 0.0, "b-rank": 0.01, "c-rank": 0.02}, runs=3)
    assert significance(three, spec)["p (paired t)"].notna().all()
    assert all(row["95% CI"].startswith("[") for row in table_rows(three, spec))


def test_quick_runs_write_their_own_files_and_say_quick(tmp_path, tiny_specs):
    from cltr.pipeline.report import output_name, write_outputs

    spec = load_spec("tiny", tiny_specs).resolved(quick=True)
    assert spec.quick and not load_spec("tiny", tiny_specs).resolved().quick
    assert output_name(spec) == "tiny-quick"
    frame = _toy_frame({"svm-rank": 0.0, "svm-proprank": 0.01}, runs=2).assign(point_passes=2)
    out = tmp_path / "results"
    paths = write_outputs(frame, spec, out)
    assert sorted(p.name for p in out.iterdir()) == [f"tiny-quick.{s}" for s in ("csv", "md", "pdf", "png", "tex")]
    assert set(paths.values()) == set(out.iterdir())
    text = (out / "tiny-quick.md").read_text()
    assert "(QUICK RUN, --quick)" in text.splitlines()[0]
    assert "- QUICK RUN (--quick): the spec's reduced version" in text
    assert "QUICK RUN" in (out / "tiny-quick.tex").read_text()
    figure, _ = plot(frame, spec)
    assert figure.axes[0].get_title().startswith("QUICK RUN (--quick, reduced): ")
    assert "2 runs: too few for an interval, none drawn" in figure.axes[0].get_title().replace("\n", " ")


def test_table_outputs_name_the_training_data_actually_used(tmp_path):
    from cltr.pipeline.report import dataset_label, header_note, training_data

    spec = _toy_spec(claimed_order=("a-rank", "b-rank"))
    frame = _toy_frame({"a-rank": 0.0, "b-rank": 0.01}, runs=3)
    alone = {"letor": {"relevant_from": 2, "meta": {"fold": 1, "mq2007": False}}}
    both = {"letor": {"relevant_from": 2, "meta": {"fold": 1, "mq2007": True}}}
    assert training_data(["letor"], alone) == "train: MQ2008 Fold 1 only (MQ2007 absent)"
    assert training_data(["letor"], both) == "train: MQ2007 + MQ2008 Fold 1"
    assert training_data(["synthetic"], {"synthetic": {"meta": {"generator": "x"}}}) is None
    assert dataset_label(frame, spec, alone) == "letor (Fold 1; train: MQ2008 Fold 1 only (MQ2007 absent))"
    assert "- Data: letor (Fold 1; train: MQ2008 Fold 1 only (MQ2007 absent));" in header_note(frame, spec, alone)
    figure, _ = plot(frame, spec, records=alone)
    assert "train: MQ2008 Fold 1 only (MQ2007 absent)" in figure.axes[0].get_title().replace("\n", " ")
    folds = _toy_frame({"a-rank": 0.0, "b-rank": 0.01}, runs=3, datasets=("letor", "letor-fold2"))
    records = {"letor": alone["letor"], "letor-fold2": {"relevant_from": 2, "meta": {"fold": 2, "mq2007": False}}}
    assert dataset_label(folds, spec, records) == "letor, folds 1, 2; train: MQ2008 only (MQ2007 absent)"
