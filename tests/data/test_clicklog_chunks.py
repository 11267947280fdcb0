"""A click log read in chunks (``read_click_log_aggregated``, ``cltr clicks import
--chunk-rows``): the same counts for any chunk size, those of the whole-file reader, and
every error named at the file's own line whichever chunk holds it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cltr.data.clicklog import read_click_log, read_click_log_aggregated, write_click_log
from cltr.pipeline.workspace import Workspace

SIZES = (5, 4, 6, 3, 5, 5, 4, 6)  # documents of each query (qids 1..8)


def make_log(seed: int = 0, *, sessions: int = 4) -> pd.DataFrame:
    """Sessions of every query in turn: a random order of its documents shown down to a
    random depth, clicks drawn at random, propensity 1/rank, ranker "a" or "b"."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(sessions * len(SIZES)):
        q = s % len(SIZES)
        depth = int(rng.integers(2, SIZES[q] + 1))
        for rank, doc in enumerate(rng.permutation(SIZES[q])[:depth], start=1):
            rows.append(
                {
                    "session": f"s{s}",
                    "qid": q + 1,
                    "doc": int(doc),
                    "rank": rank,
                    "click": int(rng.random() < 0.6 / rank),
                    "propensity": 1.0 / rank,
                    "ranker": "ab"[int(rng.integers(2))],
                }
            )
    return pd.DataFrame(rows)


def write(frame: pd.DataFrame, path):
    # Parquet types a column: one of mixed cells (a corrupted one) is written as text
    write_click_log(
        path,
        {
            name: frame[name].astype(str).to_numpy()
            if frame[name].dtype == object and frame[name].map(type).nunique() > 1
            else frame[name].to_numpy()
            for name in frame.columns
        },
    )
    return path


@pytest.fixture
def queries(toy_queries):
    return toy_queries(list(SIZES))


SUFFIXES = [".tsv", ".csv.gz", ".parquet"]


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_every_chunk_size_gives_the_same_counts_byte_for_byte(suffix, queries, tmp_path):
    path = write(make_log(), tmp_path / f"log{suffix}")
    whole = read_click_log_aggregated(path, queries).arrays()
    for chunk_rows in (1, 2, 7, 10**9):
        chunked = read_click_log_aggregated(path, queries, chunk_rows=chunk_rows).arrays()
        assert chunked.keys() == whole.keys()
        for name, values in whole.items():
            assert chunked[name].dtype == values.dtype and chunked[name].tobytes() == values.tobytes(), (
                chunk_rows,
                name,
            )


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_the_counts_are_those_of_the_whole_file_reader(suffix, queries, tmp_path):
    path = write(make_log(1), tmp_path / f"log{suffix}")
    rows = read_click_log(path, queries)
    counts = read_click_log_aggregated(path, queries, chunk_rows=3)
    expected, found = rows.impressions(), counts.impressions_table()
    for name in ("query", "doc", "rank", "ranker", "impressions", "clicks"):
        assert np.array_equal(getattr(expected, name), getattr(found, name)), name
    # every click, as a multiset of training examples
    log, again = rows.click_log(queries.n_queries), counts.click_log(queries.n_queries)

    def examples(c):
        return sorted(zip(c.query.tolist(), c.doc.tolist(), c.rank.tolist(), c.propensity.tolist(), strict=True))

    assert examples(log) == examples(again) and len(log) == int(rows.click.sum())
    assert np.array_equal(log.sessions_per_query, again.sessions_per_query)
    assert counts.rows == len(rows.doc) and counts.has_propensity and counts.n_rankers == 2
    assert not counts.clicked_only


def _corrupt(frame: pd.DataFrame, row: int, kind: str) -> pd.DataFrame:
    frame = frame.astype(object).copy()
    if kind == "rank":
        frame.loc[row, "rank"] = "x"
    elif kind == "qid":
        frame.loc[row, "qid"] = 99
    elif kind == "click":
        frame.loc[row, "click"] = 2
    elif kind == "doc":
        frame.loc[row, "doc"] = 40
    elif kind == "propensity":
        frame.loc[row, "propensity"] = 1.5
    elif kind == "empty-propensity":
        frame.loc[row, "propensity"] = ""
    elif kind == "spans":  # the session goes on under another query
        frame.loc[row, "qid"] = frame.loc[row, "qid"] % len(SIZES) + 1
    elif kind == "repeated":
        frame.loc[row, "rank"] = frame.loc[row - 1, "rank"]
    return frame


KINDS = ["rank", "qid", "click", "doc", "propensity", "empty-propensity", "spans", "repeated"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("suffix", [".tsv", ".parquet"])
def test_an_error_in_a_late_chunk_names_its_own_line(kind, suffix, queries, tmp_path):
    frame = make_log(2)
    # a late row that is not its session's first (so that a repeated rank has one above it)
    row = int(np.flatnonzero(frame["rank"].to_numpy() > 1)[-3])
    path = write(_corrupt(frame, row, kind), tmp_path / f"log{suffix}")
    where = f"row {row + 1} of" if suffix == ".parquet" else f"line {row + 2} of"
    with pytest.raises(ValueError) as whole:
        read_click_log(path, queries)
    for chunk_rows in (3, 10**9):
        with pytest.raises(ValueError) as chunked:
            read_click_log_aggregated(path, queries, chunk_rows=chunk_rows)
        assert str(chunked.value).startswith(where), str(chunked.value)
        # the whole-file reader's words, at the same line
        assert str(chunked.value) == str(whole.value)


def test_a_session_that_comes_back_after_another_is_refused_where_both_are_read_at_once(queries, tmp_path):
    frame = make_log(3)
    # the last row of session s0 moved below session s1
    s0, s1 = (np.flatnonzero(frame["session"].to_numpy() == name) for name in ("s0", "s1"))
    order = [*s0[:-1], *s1, s0[-1], *range(s1[-1] + 1, len(frame))]
    path = write(frame.iloc[order].reset_index(drop=True), tmp_path / "log.tsv")
    line = len(s0) - 1 + len(s1) + 2
    for chunk_rows in (None, len(order)):
        with pytest.raises(ValueError, match=rf"^line {line} of .*session 's0' reappears after other sessions"):
            read_click_log_aggregated(path, queries, chunk_rows=chunk_rows)


def test_the_propensity_column_is_judged_over_the_whole_log(queries, tmp_path):
    frame = make_log(4)
    frame["propensity"] = pd.Series([""] * len(frame), dtype=object)
    counts = read_click_log_aggregated(write(frame, tmp_path / "none.tsv"), queries, chunk_rows=3)
    assert not counts.has_propensity and np.isnan(counts.propensity).all()
    # empty in the first chunks, filled later: named at the first empty cell
    frame.loc[len(frame) - 5 :, "propensity"] = 0.5
    with pytest.raises(ValueError, match=r"^line 2 of .*propensity cell is empty while other rows have one"):
        read_click_log_aggregated(write(frame, tmp_path / "partly.tsv"), queries, chunk_rows=3)


def test_a_clicked_rows_chunk_is_judged_once_a_later_chunk_shows_a_click_0(queries, tmp_path):
    frame = make_log(5)
    # the first session's rank-1 row removed and every row of it clicked: a clicked-only log
    # could do that, one with impressions cannot
    first = frame[frame["session"] == "s0"]
    frame.loc[first.index, "click"] = 1
    frame = frame.drop(index=first.index[0]).reset_index(drop=True)
    with pytest.raises(ValueError, match=r"^line 2 of .*smallest rank of session 's0' is 2"):
        read_click_log_aggregated(write(frame, tmp_path / "log.tsv"), queries, chunk_rows=len(first) - 1)


def test_cli_imports_in_chunks_store_the_same_bytes_and_train(tmp_path, invoke):
    from cltr.pipeline.stages import import_stage

    work = tmp_path / "work"
    invoke("prepare", "synthetic", "--queries", 40, "--relevant-from", 1, workdir=work)
    invoke("simulate", "--rankers", 2, "--passes", 3, workdir=work)
    paths = {split: tmp_path / f"{split}.tsv" for split in ("train", "vali")}
    for split, path in paths.items():
        invoke("clicks", "export", path, "--split", split, workdir=work)
    workspace = Workspace(work)
    dataset, record = workspace.load_dataset("synthetic")
    stored = []
    for chunk_rows in (97, 10**9):  # chunks that cut sessions, and one chunk
        other = Workspace(tmp_path / f"work-{chunk_rows}")
        part, _ = import_stage(
            other, "synthetic", dataset, record["fingerprint"], paths["train"], split="train", chunk_rows=chunk_rows
        )
        stored.append((other.root / "synthetic" / "imports" / f"{part.key}.npz").read_bytes())
    assert stored[0] == stored[1]

    for split, path in paths.items():
        out = invoke("clicks", "import", path, "--split", split, "--chunk-rows", 500, workdir=work).output
        assert "kept as counts per document and rank" in out
    # the counts train a click method and give a propensity estimate
    invoke("propensities", "estimate", "--method", "harvest", "--bootstrap", 0, workdir=work)
    invoke("train", "svm-proprank", "-C", 1, "--clip", "none", workdir=work)
    refused = invoke("clicks", "export", tmp_path / "again.tsv", workdir=work, expect=None)
    assert refused.exit_code != 0 and "imported in chunks" in refused.output
    assert "--chunk-rows" in invoke("clicks", "import", "--help").output


def test_a_column_that_stops_parsing_as_integers_late_is_read_on_as_text(queries, tmp_path, monkeypatch):
    from cltr.data import clicklog

    monkeypatch.setattr(clicklog, "_BLOCK_BYTES", 256)  # many batches: the whole numbers come late
    frame = make_log(6).astype(object)
    frame.loc[len(frame) - 3, "rank"] = f"{frame.loc[len(frame) - 3, 'rank']}.0"  # a whole number, written as a float
    path = write(frame, tmp_path / "log.tsv")
    lines = path.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join([*lines[:40], b"", b"", *lines[40:]]))  # empty lines before it
    rows = read_click_log(path, queries)
    counts = read_click_log_aggregated(path, queries, chunk_rows=25)
    expected, found = rows.impressions(), counts.impressions_table()
    for name in ("doc", "rank", "ranker", "impressions", "clicks"):
        assert np.array_equal(getattr(expected, name), getattr(found, name)), name
    assert counts.rows == len(rows.doc)


def test_a_session_that_comes_back_within_the_rows_held_is_refused(queries, tmp_path):
    frame = make_log(7)
    s0, s1 = (np.flatnonzero(frame["session"].to_numpy() == name) for name in ("s0", "s1"))
    order = [*s0[:-1], *s1, s0[-1], *range(s1[-1] + 1, len(frame))]
    path = write(frame.iloc[order].reset_index(drop=True), tmp_path / "log.tsv")
    # chunks end inside s0 and then after its last row: held back, then found among the rows before it
    with pytest.raises(ValueError, match="session 's0' reappears after other sessions"):
        read_click_log_aggregated(path, queries, chunk_rows=len(s0) + len(s1))


def test_the_affine_correction_reads_the_impressions_of_an_import_in_chunks(queries, tmp_path):
    from types import SimpleNamespace

    from cltr.data.click_artifact import ClicksArtifact, SplitClicks
    from cltr.pipeline.corrections.affine import _impressions

    path = write(make_log(8), tmp_path / "log.tsv")
    rows = read_click_log(path, queries)
    counts = read_click_log_aggregated(path, queries, chunk_rows=4)

    def stored(split: SplitClicks) -> SimpleNamespace:
        return SimpleNamespace(key="k", arrays=ClicksArtifact(train=split, vali=split).arrays(), config={})

    whole = stored(SplitClicks(log=rows.click_log(queries.n_queries), rows=rows))
    chunked = stored(SplitClicks(aggregated=counts, n_queries=queries.n_queries))
    expected = _impressions(rows.click_log(queries.n_queries), whole, "train", queries)
    found = _impressions(counts.click_log(queries.n_queries), chunked, "train", queries)
    for name in ("query", "doc", "rank", "ranker", "impressions", "clicks"):
        assert np.array_equal(getattr(expected, name), getattr(found, name)), name


@pytest.mark.parametrize("suffix", [".tsv", ".parquet"])
def test_a_session_that_comes_back_is_refused_at_its_line_for_every_chunk_size(suffix, queries, tmp_path):
    frame = make_log(9)
    # session s0's last row moved below s1 and s2: s0 comes back after two other sessions
    s0 = np.flatnonzero(frame["session"].to_numpy() == "s0")
    rest = np.flatnonzero(frame["session"].isin(["s1", "s2"]).to_numpy())
    order = [*s0[:-1], *rest, s0[-1], *range(rest[-1] + 1, len(frame))]
    path = write(frame.iloc[order].reset_index(drop=True), tmp_path / f"log{suffix}")
    back = len(s0) - 1 + len(rest)  # the 0-based row of s0's return
    where = f"row {back + 1} of" if suffix == ".parquet" else f"line {back + 2} of"
    # chunks of 1, 2 and 3 rows close s0 long before it comes back; the others hold both
    for chunk_rows in (None, 1, 2, 3, len(s0), len(s0) + 1, back, back + 1, 10**9):
        with pytest.raises(ValueError) as refused:
            read_click_log_aggregated(path, queries, chunk_rows=chunk_rows)
        assert str(refused.value).startswith(f"{where} ") and "session 's0' reappears after other sessions" in str(
            refused.value
        ), (chunk_rows, str(refused.value))
    # the whole-file reader reads rows in any order: s0 is one session there
    rows = read_click_log(path, queries)
    assert len(np.unique(rows.session)) == frame["session"].nunique()


def test_ids_that_differ_only_as_text_are_two_sessions_in_chunks(queries, tmp_path):
    frame = make_log(10, sessions=1)
    frame["session"] = frame["session"].map(
        {f"s{i}": name for i, name in enumerate(["7", "007", "7.0", " 7", "a", "A", "b", "B"])}
    )
    path = write(frame, tmp_path / "log.tsv")
    for chunk_rows in (1, 4):
        counts = read_click_log_aggregated(path, queries, chunk_rows=chunk_rows)
        assert counts.sessions_per_query.sum() == len(SIZES)


def test_the_set_of_closed_session_hashes_against_a_python_set():
    from cltr.data.clicklog import _HashSet

    rng = np.random.default_rng(11)
    hashes, oracle = _HashSet(), set()
    # random sizes with small values (many repeats), then shrinking additions of new values
    for size, high in [
        *((size, 300) for size in rng.integers(0, 40, size=60)),
        *((size, 2**63) for size in range(60, 0, -1)),
    ]:
        values = rng.integers(0, high, size=size).astype(np.uint64)
        assert hashes.holds(values).tolist() == [int(v) in oracle for v in values]
        hashes.add(values)
        oracle.update(int(v) for v in values)
        assert len(hashes) == len(oracle)
        # each array more than twice the next: at most log2(n) + 1 of them, not one per addition
        assert len(hashes.levels) <= np.log2(len(oracle)) + 1
        assert all(len(a) > 2 * len(b) for a, b in zip(hashes.levels, hashes.levels[1:], strict=False))
        assert all(np.all(level[1:] > level[:-1]) for level in hashes.levels)  # sorted, no repeats
