"""Evaluate anything (issue 22 item 5): ``cltr evaluate --run`` on a TREC run or a scores
file, and ``cltr clicks export --features``."""

import re

import numpy as np
import pandas as pd
import pytest

from cltr.data.runs import read_run
from cltr.data.store import load_dataset
from cltr.pipeline.workspace import Workspace

DATASET = "synthetic"
METRICS = ("Avg DCG", "Avg Rank", "nDCG@10")


def table_row(output: str, prefix: str) -> dict:
    lines = output.splitlines()
    header = max(i for i, line in enumerate(lines) if f"{prefix} Avg DCG" in line)
    names = re.split(r"\s{2,}", lines[header].strip())
    return dict(zip(names, map(float, lines[header + 1].split()), strict=True))


def write_svmlight(queries, path):
    lines = [
        f"{queries.labels[row]} qid:{queries.qid[q]} "
        + " ".join(f"{j + 1}:{v:.17g}" for j, v in enumerate(queries.X[row]))
        + "\n"
        for q in range(queries.n_queries)
        for row in range(queries.offsets[q], queries.offsets[q + 1])
    ]
    path.write_text("".join(lines))


@pytest.fixture(scope="module")
def scored(tmp_path_factory, invoke):
    work = tmp_path_factory.mktemp("runs")
    invoke("prepare", "synthetic", "--queries", 60, workdir=work)
    invoke("simulate", "--passes", 5, workdir=work)
    invoke("train", "svm-rank", "-C", 1, workdir=work)
    workspace = Workspace(work)
    model = workspace.current(DATASET)["models"]
    dataset = load_dataset(workspace.dataset_path(DATASET))
    features, run, scores = work / "test.txt", work / "run.txt", work / "scores.txt"
    write_svmlight(dataset.test, features)
    invoke("score", "--model", model, features, "--trec", run, "--out", scores, workdir=work)
    return work, dataset, model, run, scores


@pytest.mark.parametrize("seed", [0, 3])
def test_a_run_of_cltr_score_evaluates_to_the_models_own_numbers(scored, invoke, seed):
    work, _, model, run, scores = scored
    expected = table_row(invoke("evaluate", "--model", model, "--seed", seed, workdir=work).output, "test")
    for path in (run, scores):
        got = table_row(
            invoke("evaluate", "--run", path, "--split", "test", "--seed", seed, workdir=work).output, "test"
        )
        assert {m: got[f"test {m}"] for m in METRICS} == {m: expected[f"test {m}"] for m in METRICS}


def test_a_shuffled_run_reads_back_the_same_scores(scored, tmp_path):
    _, dataset, _, run, scores = scored
    lines = run.read_text().splitlines()
    shuffled = tmp_path / "shuffled.txt"
    shuffled.write_text("\n".join(np.random.default_rng(0).permutation(lines)) + "\n")
    expected = np.array([float(x) for x in scores.read_text().split()])
    np.testing.assert_array_equal(read_run(shuffled, dataset.test), expected)
    np.testing.assert_array_equal(read_run(scores, dataset.test), expected)


def _broken(tmp_path, run, edit):
    lines = run.read_text().splitlines()
    lines = edit(lines)
    path = tmp_path / "broken.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda ls: ["999999 " + ls[0].split(" ", 1)[1]] + ls[1:],
            r"line 1 of .*broken.txt: qid 999999 is not a query",
        ),
        (
            lambda ls: [ls[0]] + [" ".join(ls[1].split()[:2] + ["nope"] + ls[1].split()[3:])] + ls[2:],
            r"line 2 of .*: docid nope is not a document of qid",
        ),
        (
            lambda ls: ls[:2] + [" ".join(ls[2].split()[:4] + ["high"] + ls[2].split()[5:])] + ls[3:],
            r"line 3 of .*: score 'high' is not a number",
        ),
        (
            lambda ls: ls[:-1],
            r"broken.txt: 1 of the test split's \d+ documents have no line, e.g. qid \d+ docid q\d+-d\d+",
        ),
        (lambda ls: ls + [ls[0]], r"line \d+ of .*: qid \d+ docid q\d+-d\d+ is scored a second time"),
        (lambda ls: ["1 2 3"] + ls, r"line 1 of .*: 3 fields; expected a TREC run line"),
    ],
)
def test_a_broken_run_names_file_and_line(scored, tmp_path, edit, message):
    _, dataset, _, run, _ = scored
    with pytest.raises(ValueError, match=message):
        read_run(_broken(tmp_path, run, edit), dataset.test)


def test_a_broken_scores_file_names_file_and_line(scored, tmp_path, invoke):
    work, dataset, _, _, scores = scored
    with pytest.raises(ValueError, match=r"line 2 of .*: score 'x' is not a number"):
        read_run(_broken(tmp_path, scores, lambda ls: [ls[0], "x"] + ls[2:]), dataset.test)
    short = _broken(tmp_path, scores, lambda ls: ls[:-1])
    out = invoke("evaluate", "--run", short, workdir=work, expect=1).output
    assert f"{dataset.test.n_docs - 1} scores, but the test split has {dataset.test.n_docs} documents" in out
    out = invoke("evaluate", "--run", scores, "--split", "vali", workdir=work, expect=1).output
    assert "the vali split has" in out


def test_clicks_export_features_writes_each_rows_feature_vector(scored, invoke, tmp_path):
    work, dataset, _, _, _ = scored
    plain, wide = tmp_path / "plain.csv", tmp_path / "wide.csv"
    invoke("clicks", "export", plain, workdir=work)
    invoke("clicks", "export", wide, "--features", workdir=work)
    plain_table, wide_table = pd.read_csv(plain), pd.read_csv(wide)
    d = dataset.train.n_features
    assert list(wide_table.columns) == list(plain_table.columns) + [f"f{j}" for j in range(1, d + 1)]
    assert not any(c.startswith("f") and c[1:].isdigit() for c in plain_table.columns)
    pd.testing.assert_frame_equal(wide_table[plain_table.columns], plain_table)
    query = (
        np.searchsorted(dataset.train.qid, wide_table["qid"])
        if np.all(np.diff(dataset.train.qid) > 0)
        else np.array([list(dataset.train.qid).index(q) for q in wide_table["qid"]])
    )
    rows = dataset.train.offsets[query] + wide_table["doc"].to_numpy()
    np.testing.assert_array_equal(wide_table[[f"f{j}" for j in range(1, d + 1)]].to_numpy(), dataset.train.X[rows])
