"""The report (``cltr.pipeline.report``): figures drawn from exactly the CSV's numbers, and
the tables and files of every spec kind."""

import numpy as np
import pandas as pd
import pytest

from cltr.pipeline.experiments import load_spec
from cltr.pipeline.report import plot, summarise


def test_plotted_data_match_the_csv(tiny_specs, tmp_path, run_tiny):
    run_tiny(tiny_specs, tmp_path)
    frame = pd.read_csv(tmp_path / "results" / "tiny.csv")
    spec = load_spec("tiny", tiny_specs).resolved()
    _, data = plot(frame, spec)
    for method, label in (("svm-rank", "SVM Rank"), ("svm-proprank", "SVM PropRank")):
        rows = frame[frame["method"] == method].groupby("point_passes")
        assert np.allclose(data[label]["mean"], rows["avg_dcg"].mean().to_numpy())
        assert np.allclose(data[label]["x"], rows["train_clicks"].mean().to_numpy())
        assert np.allclose(data[label]["std"], rows["avg_dcg"].std(ddof=1).to_numpy())
    assert data["Production ranker"]["mean"][0] == pytest.approx(frame[frame["method"] == "production"]["avg_dcg"].mean())
    for suffix in ("png", "pdf", "md", "tex"):
        assert (tmp_path / "results" / f"tiny.{suffix}").stat().st_size > 0
    summary = summarise(frame, spec)
    assert set(summary["n"]) == {2}


def test_table_and_ccp_kinds_write_their_outputs(tmp_path, invoke, tiny_spec_text):
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "t.toml").write_text(tiny_spec_text.replace('name = "tiny"', 'name = "t"').replace(
        'kind = "curve"', 'kind = "table"').replace('x = "passes"\nvalues = [2, 4, 8]\nplot_x = "train_clicks"\n', "")
        + '[paper.tiny]\nsvm-rank = [0.5, 1e-2]\n')
    (specs / "c.toml").write_text('name = "c"\nkind = "ccp"\ndataset = "tiny"\nmethods = ["svm-propdcg"]\n'
                                  '[synthetic]\nn_queries = 40\n[clicks]\npasses = 5\n'
                                  '[options.svm-propdcg]\ngrid = [1.0, 100.0]\n')
    invoke("figures", "t", "--specs", specs, "--out", tmp_path / "out", workdir=tmp_path)
    text = (tmp_path / "out" / "t.md").read_text()
    assert "paper" in text and "0.5000" in text and "paired t-tests" in text.lower()
    invoke("figures", "c", "--specs", specs, "--out", tmp_path / "out", workdir=tmp_path)
    frame = pd.read_csv(tmp_path / "out" / "c.csv")
    assert set(frame["C"]) == {1.0, 100.0}
    for _, group in frame.groupby("C"):
        objective = group.sort_values("iteration")["objective"].to_numpy()
        assert np.all(np.diff(objective) <= 1e-9 * np.abs(objective[:-1]))
    assert (tmp_path / "out" / "c.png").stat().st_size > 0
