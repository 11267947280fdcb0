"""Baidu-ULTR raw partitions: the reader, the generator, and harvesting without a ranker label."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from cltr.core.clicks import aggregate_impressions
from cltr.core.propensity import harvest_propensities
from cltr.data.baidu import (
    MISSING_TITLE,
    OTHERS_SEARCHED_TITLE,
    concatenate_rows,
    ordering_rankers,
    raw_table,
    read_raw_partition,
    read_raw_partitions,
)
from cltr.data.baidu_generator import write_raw_partitions


def _document(position, url, *, click=0, title=b"7\x018", dwell=b"12", first=b"0", last=b"0") -> bytes:
    fields = [b"0"] * 32
    fields[0], fields[1], fields[2], fields[5] = str(position).encode(), url, title, str(click).encode()
    fields[6] = fields[7] = fields[22] = fields[27] = fields[31] = b"-"
    fields[16], fields[12], fields[28] = dwell, first, last
    return b"\t".join(fields)


def _session(qid) -> bytes:
    return str(qid).encode() + b"\t11\x0112\t-"


def _write(path, lines: list[bytes]):
    with gzip.open(path, "wb") as handle:
        handle.write(b"\n".join(lines) + b"\n")
    return path


def test_missing_documents_leave_a_gap_and_the_others_block_takes_no_place(tmp_path):
    lines = [
        _session(5),
        _document(1, b"a", click=1, dwell=b"40", first=b"1"),
        _document(2, b"-", title=MISSING_TITLE),
        _document(3, b"c"),
        _document(4, b"-", title=OTHERS_SEARCHED_TITLE),
        _document(5, b"d", click=1, dwell=b"-", last=b"1"),
        _session(9),
        _document(1, b"c"),
    ]
    rows = read_raw_partition(_write(tmp_path / "part-00000.gz", lines), first_session=3)
    assert rows.url.tolist() == [b"a", b"c", b"d", b"c"]
    assert rows.rank.tolist() == [1, 3, 4, 1]  # the gap at 2 stays; the block is no place
    assert rows.session.tolist() == [3, 3, 3, 4]
    assert rows.qid.tolist() == [5, 5, 5, 9]
    assert rows.click.tolist() == [1, 0, 1, 0]
    assert rows.dwell[0] == 40 and np.isnan(rows.dwell[2])
    assert rows.first_click.tolist() == [1, 0, 0, 0] and rows.last_click.tolist() == [0, 0, 1, 0]
    assert rows.n_sessions == 2 and rows.n_lines == 8


@pytest.mark.parametrize(
    "line, message",
    [
        (b"1\t2", "line 3: 2 tab-separated fields"),
        (_document(2, b"b", click=2), "line 3: field 5 (click) must be an integer in 0..1, found '2'"),
        (_document(31, b"b"), "line 3: field 0 (position) must be an integer in 1..30, found '31'"),
        (_document(2, b"b", dwell=b"long"), "line 3: field 16 (dwelling_time) must be a number or -, found 'long'"),
        (b"", "line 3: an empty line"),
    ],
)
def test_a_malformed_line_is_named_by_partition_and_line(tmp_path, line, message):
    path = _write(tmp_path / "part-00007.gz", [_session(1), _document(1, b"a"), line, _document(3, b"c")])
    with pytest.raises(ValueError, match="part-00007.gz: " + message.replace("(", r"\(").replace(")", r"\)")):
        read_raw_partition(path)


def test_a_document_before_any_session_is_an_error(tmp_path):
    path = _write(tmp_path / "part-00001.gz", [_document(1, b"a")])
    with pytest.raises(ValueError, match="part-00001.gz: line 1: a document line"):
        read_raw_partition(path)


def test_ordering_rankers_number_each_query_s_distinct_orderings():
    # sessions 0 and 2 show query 1 in one order; 1 shows it swapped; 3 shows query 2 in 0's order
    session = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    query = np.array([1, 1, 1, 1, 1, 1, 2, 2])
    doc = np.array([10, 11, 11, 10, 10, 11, 10, 11])
    rank = np.array([1, 2, 1, 2, 1, 2, 1, 2])
    ranker = ordering_rankers(session, query, doc, rank)
    assert ranker[0] == ranker[1] == ranker[4] == ranker[5]
    assert ranker[2] == ranker[3] != ranker[0]
    assert ranker[6] == ranker[7] and ranker[6] not in (ranker[0], ranker[2])
    # a gap is part of the ordering
    assert len(set(ordering_rankers([0, 0, 1], [1, 1, 1], [10, 11, 10], [1, 2, 1]))) == 2


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    directory = tmp_path_factory.mktemp("baidu-raw")
    truth = write_raw_partitions(directory, n_queries=60, sessions_per_query=100, partitions=2, seed=3)
    return truth, concatenate_rows(list(read_raw_partitions(truth.paths)))


def test_partitions_read_side_by_side_are_the_rows_read_in_turn(generated, tmp_path):
    """Worker processes change neither the rows, their order nor the session numbers, and a
    malformed partition is still named by file and line."""
    truth, rows = generated
    # more partitions than workers ahead, so the queue refills: the two generated ones, three times
    paths = truth.paths * 3
    serial = concatenate_rows(list(read_raw_partitions(paths)))
    parallel = concatenate_rows(list(read_raw_partitions(paths, n_jobs=2)))
    for name in ("session", "qid", "url", "rank", "click", "dwell", "first_click", "last_click"):
        np.testing.assert_array_equal(getattr(parallel, name), getattr(serial, name))
    assert parallel.n_sessions == 3 * rows.n_sessions and parallel.session[-1] == 3 * rows.n_sessions - 1
    bad = _write(tmp_path / "part-00009.gz", [_session(1), _document(1, b"a"), b"1\t2"])
    with pytest.raises(ValueError, match="part-00009.gz: line 3"):
        list(read_raw_partitions([*truth.paths, bad], n_jobs=2))


def test_the_generated_partitions_are_read_whole(generated):
    truth, rows = generated
    assert rows.n_sessions == truth.n_sessions
    assert np.all(np.diff(rows.session) >= 0) and rows.session[-1] == truth.n_sessions - 1
    assert rows.rank.min() == 1 and rows.rank.max() == 10
    # about 2% of the places hold missing documents, about 10% of sessions an others block
    assert 0.95 * truth.n_sessions * 10 < len(rows) < truth.n_sessions * 10
    urls = set(truth.url.tolist())
    assert set(rows.url.astype(str).tolist()) <= urls


def test_harvesting_by_ordering_recovers_the_generated_position_bias(generated):
    truth, rows = generated
    table = raw_table(rows)
    _, doc = np.unique(table["docid"], return_inverse=True)
    impressions = aggregate_impressions(table["qid"], doc, table["rank"], table["ranker"], table["click"])
    estimate = harvest_propensities(
        impressions.query,
        impressions.doc,
        impressions.rank,
        impressions.ranker,
        impressions.impressions,
        impressions.clicks,
        max_rank=10,
        bootstrap=0,
        rng=0,
    )
    # 6,000 sessions of 60 queries with 4 orderings each: within 0.08 of the truth at every rank
    # (seeds 0-4 gave errors of at most 0.068, mostly at rank 2)
    np.testing.assert_allclose(estimate.propensity, truth.propensity, atol=0.08)
    # without the ordering ids there is one ranker and nothing to harvest
    with pytest.raises(ValueError, match="at least 2 rankers"):
        harvest_propensities(
            impressions.query,
            impressions.doc,
            impressions.rank,
            np.zeros_like(impressions.ranker),
            impressions.impressions,
            impressions.clicks,
            max_rank=10,
            bootstrap=0,
            rng=0,
        )


def test_cli_imports_raw_partitions_harvests_and_fits_a_click_model(generated, tmp_path, invoke):
    truth, _ = generated
    table = tmp_path / "log.parquet"
    result = invoke(
        "clicks",
        "import",
        "--format",
        "baidu-raw",
        *truth.paths,
        "--out",
        table,
        "--harvest",
        "10",
        workdir=tmp_path / "ws",
    )
    assert f"of {truth.n_sessions} sessions" in result.output and table.exists()
    harvested = [float(line.split()[1]) for line in result.output.splitlines()[-10:]]
    np.testing.assert_allclose(harvested, truth.propensity, atol=0.08)
    side_by_side = tmp_path / "log-jobs.parquet"
    invoke(
        "clicks",
        "import",
        "--format",
        "baidu-raw",
        *truth.paths,
        "--out",
        side_by_side,
        "--jobs",
        "2",
        workdir=tmp_path / "ws",
    )
    assert side_by_side.read_bytes() == table.read_bytes()
    fitted = invoke(
        "clicks", "fit", "--log", table, "--model", "pbm", "--iterations", "40", workdir=tmp_path / "ws"
    ).output
    lines = fitted.splitlines()
    assert "held out: 1200 sessions" in fitted and lines[2].split() == [
        "rank",
        "examination",
        "propensity",
        "held_out_perplexity",
    ]
    propensity = [float(line.split()[2]) for line in lines[3:13]]
    np.testing.assert_allclose(propensity, truth.propensity, atol=0.08)


def test_cli_names_the_bad_line_of_a_raw_partition(tmp_path, invoke):
    path = _write(tmp_path / "part-00003.gz", [_session(1), _document(1, b"a"), b"1\t2"])
    result = invoke(
        "clicks",
        "import",
        "--format",
        "baidu-raw",
        path,
        "--out",
        tmp_path / "t.parquet",
        workdir=tmp_path / "ws",
        expect=1,
    )
    assert "part-00003.gz: line 3: 2 tab-separated fields" in result.output
