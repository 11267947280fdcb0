"""The click-log table (``cltr.data.clicklog``) and the commands around it: ``clicks import``
and ``export``, ``propensities estimate``, ``train --propensities / --clip``, ``score`` and
``evaluate`` across datasets.

Oracles: the simulated log a table was exported from (an import must give back the very
same clicks and the very same model), hand-made tables with known clicks and sessions, and
a log written by an independent generator below (plain numpy/pandas, its own RNG and
known propensities 1/rank) from which the learners must beat the production ranker.
"""

from __future__ import annotations

import gzip
import math
import re
from itertools import pairwise
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from cltr.core.clicks import ClickLog, effective_sample_size
from cltr.core.queries import Queries
from cltr.core.ranking import dcg_gain, evaluate, rank_documents, validation_estimate
from cltr.core.scorers import LinearScorer
from cltr.core.seeds import stream
from cltr.data.clicklog import read_click_log
from cltr.data.store import load_dataset
from cltr.pipeline.models import scorer_from_arrays
from cltr.pipeline.stages import as_told, click_log_summary, click_logs
from cltr.pipeline.workspace import Workspace

DATASET = "synthetic"
LOG_ARRAYS = ("query", "doc", "rank", "propensity", "pass_index")


def table_value(output: str, column: str) -> float:
    """The number under ``column`` in the last table of a command's output (echo_table:
    right-aligned cells joined by two spaces)."""
    lines = output.splitlines()
    header = max(i for i, line in enumerate(lines) if column in line)
    names = re.split(r"\s{2,}", lines[header].strip())
    return float(lines[header + 1].split()[names.index(column)])


def current(workdir: Path, stage: str, dataset: str = DATASET):
    workspace = Workspace(workdir)
    return workspace.load(dataset, stage, workspace.current(dataset)[stage])


def weights(model) -> np.ndarray:
    return scorer_from_arrays(model.arrays).w


def files_under(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# -- a simulated log, exported and imported back ---------------------------------------


@pytest.fixture(scope="module")
def sim(tmp_path_factory, invoke):
    """``cltr simulate --rankers 2 --passes 20`` and ``train svm-proprank -C 1`` on it."""
    work = tmp_path_factory.mktemp("simulated")
    invoke("prepare", "synthetic", "--queries", 300, "--relevant-from", 1, workdir=work)
    invoke("simulate", "--rankers", 2, "--passes", 20, workdir=work)
    clicks = current(work, "clicks")
    invoke("train", "svm-proprank", "-C", 1, "--clicks", clicks.key, workdir=work)
    model = current(work, "models")
    dataset = load_dataset(Workspace(work).dataset_path(DATASET))
    return SimpleNamespace(work=work, clicks=clicks, model=model, dataset=dataset)


@pytest.fixture(scope="module")
def exported(sim, invoke):
    """The simulated train and vali logs as TSV."""
    paths = {}
    for split in ("train", "vali"):
        paths[split] = sim.work / f"exported-{split}.tsv"
        invoke("clicks", "export", paths[split], "--split", split, "--clicks", sim.clicks.key, workdir=sim.work)
    return paths


@pytest.mark.parametrize("suffix", [".tsv", ".csv.gz", ".parquet"])
def test_export_then_import_gives_the_same_clicks_and_the_same_model(suffix, sim, tmp_path, invoke):
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    for split in ("train", "vali"):
        path = tmp_path / f"{split}{suffix}"
        out = invoke("clicks", "export", path, "--split", split, "--clicks", sim.clicks.key, workdir=sim.work).output
        # every document of every query in every pass is an impression; the clicks are the log's
        queries = getattr(sim.dataset, split)
        log = dict(zip(("train", "vali"), click_logs(sim.clicks), strict=True))[split]
        assert f"wrote {20 * queries.n_docs} impressions ({len(log)} clicks)" in out
        invoke("clicks", "import", path, "--split", split, workdir=sim.work)
    imported = current(sim.work, "clicks")
    assert imported.key != sim.clicks.key and imported.info["imported"] and imported.info["rankers"] == 2

    for simulated_log, imported_log in zip(click_logs(sim.clicks), click_logs(imported), strict=True):
        for name in LOG_ARRAYS:
            assert np.array_equal(getattr(simulated_log, name), getattr(imported_log, name)), name
        assert imported_log.n_passes == simulated_log.n_passes == 20
        assert imported_log.n_sessions == simulated_log.n_sessions
        assert np.all(imported_log.sessions_per_query == 20)

    invoke("train", "svm-proprank", "-C", 1, "--clicks", imported.key, workdir=sim.work)
    model = current(sim.work, "models")
    assert model.key != sim.model.key  # trained on another click log ...
    assert np.array_equal(weights(model), weights(sim.model))  # ... which holds the same clicks


def test_an_imported_log_exports_back_to_the_same_table(sim, exported, tmp_path, invoke):
    for split in ("train", "vali"):
        invoke("clicks", "import", exported[split], "--split", split, workdir=sim.work)
    imported = current(sim.work, "clicks")
    again = tmp_path / "again.tsv"
    invoke("clicks", "export", again, "--split", "train", "--clicks", imported.key, workdir=sim.work)
    first, second = (pd.read_csv(p, sep="\t") for p in (exported["train"], again))
    assert list(first.columns) == ["session", "qid", "doc", "rank", "click", "propensity", "ranker"]
    pd.testing.assert_frame_equal(first, second)


# -- every validation error names the file and the line, and stores nothing -------------

ROW = 250  # the corrupted data row (0-based): line 252 of a delimited file, row 251 of Parquet


def _same_session_row(frame: pd.DataFrame) -> int:
    assert frame.session[ROW] == frame.session[ROW - 1]  # so that ROW can repeat ROW - 1's values
    return ROW - 1


def _set(column, value):
    def corrupt(frame, sizes):
        frame.loc[ROW, column] = value

    return corrupt


def _doc_beyond(frame, sizes):
    frame.loc[ROW, "doc"] = str(sizes[int(frame.qid[ROW])])


def _rank_beyond(frame, sizes):
    frame.loc[ROW, "rank"] = str(sizes[int(frame.qid[ROW])] + 1)


def _repeat(column):
    def corrupt(frame, sizes):
        frame.loc[ROW, column] = frame.loc[_same_session_row(frame), column]

    return corrupt


def _other_query_session(frame, sizes):
    assert frame.qid[0] != frame.qid[ROW]
    frame.loc[ROW, "session"] = frame.session[0]


# A message as a pattern: a reader of text shows the cell as text ('2'), one of typed columns
# as a number (2); an empty Parquet cell is a missing value (nan).
CORRUPTIONS = {  # name: (corrupt(frame, sizes by qid), pattern of the message after the location)
    "unknown qid": (_set("qid", "99999"), r"qid 99999 is not a query of this split"),
    "doc beyond the query": (_doc_beyond, r"doc (\d+) is not a document of qid \d+, which has \1 "),
    "negative doc": (_set("doc", "-1"), r"doc must be >= 0, found -1"),
    "fractional doc": (_set("doc", "2.5"), r"doc must be an integer, found '?2\.5'?$"),
    "rank repeated in a session": (_repeat("rank"), r"rank \d+ appears twice in session '?\d+'?$"),
    "document repeated in a session": (_repeat("doc"), r"document \d+ appears twice in session '?\d+'?$"),
    "session over two queries": (_other_query_session, r"session '?0'? spans two queries"),
    "click 2": (_set("click", "2"), r"click must be 0 or 1, found '?2'?$"),
    "click yes": (_set("click", "yes"), r"click must be 0 or 1, found 'yes'$"),
    "click empty": (_set("click", ""), r"the click cell is empty; every row needs one$"),
    "session empty": (_set("session", ""), r"the session cell is empty; every row needs one$"),
    "ranker empty": (_set("ranker", ""), r"the ranker cell is empty; every row needs one$"),
    "qid empty": (_set("qid", ""), r"the qid cell is empty; every row needs one$"),
    "doc empty": (_set("doc", ""), r"the doc cell is empty; every row needs one$"),
    "rank empty": (_set("rank", ""), r"the rank cell is empty; every row needs one$"),
    "propensity empty": (_set("propensity", ""), r"the propensity cell is empty while other rows have one"),
    "rank beyond the query": (
        _rank_beyond,
        (
            r"rank \d+ is beyond the \d+ documents of qid \d+; a rank is a "
            r"displayed position, from 1 to at most"
        ),
    ),
    "rank 1e11": (_set("rank", "1e11"), r"rank (1e11|100000000000\.0) is beyond the \d+ documents of qid \d+"),
    "rank 1e20": (_set("rank", "1e20"), r"rank (1e20|1e\+20) is beyond the \d+ documents of qid \d+"),
    "doc 1e20": (_set("doc", "1e20"), r"doc (1e20|1e\+20) is not a document of qid \d+"),
    "qid 1e20": (_set("qid", "1e20"), r"qid (1e20|1e\+20) is not a query of this split$"),
    "propensity nan": (_set("propensity", "nan"), r"propensity must be a number in \(0, 1\], found '?nan'?$"),
    "propensity inf": (_set("propensity", "inf"), r"propensity must be a number in \(0, 1\], found '?inf'?$"),
    "propensity 0": (_set("propensity", "0"), r"propensity must be a number in \(0, 1\], found '?0(\.0)?'?$"),
    "propensity above 1": (_set("propensity", "1.5"), r"propensity must be a number in \(0, 1\], found '?1\.5'?$"),
    "propensity negative": (_set("propensity", "-0.5"), r"propensity must be a number in \(0, 1\], found '?-0\.5'?$"),
    "rank 0": (_set("rank", "0"), r"rank must be >= 1, found 0$"),
    "fractional rank": (_set("rank", "1.5"), r"rank must be an integer, found '?1\.5'?$"),
    "rank text": (_set("rank", "x"), r"rank must be an integer, found 'x'$"),
}


@pytest.fixture(scope="module")
def clean_rows(exported):
    """The first 400 rows of the exported train log, as text."""
    return pd.read_csv(exported["train"], sep="\t", dtype=str, keep_default_na=False).head(400)


def _write(frame: pd.DataFrame, path: Path) -> Path:
    if path.suffix == ".parquet":
        typed = {}
        for name, column in frame.items():  # numbers where a column holds only numbers, as a writer would
            try:
                typed[name] = pd.to_numeric(column)
            except ValueError:
                typed[name] = column
        pd.DataFrame(typed).to_parquet(path, index=False)
    else:
        frame.to_csv(path, sep="," if ".csv" in path.suffixes else "\t", index=False)
    return path


@pytest.mark.parametrize("suffix", [".tsv", ".csv.gz", ".parquet"])
def test_every_bad_row_is_reported_with_file_and_line_and_nothing_is_stored(suffix, sim, clean_rows, tmp_path, invoke):
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    train = sim.dataset.train
    sizes = dict(zip(train.qid.tolist(), np.diff(train.offsets).tolist(), strict=True))
    where = f"row {ROW + 1}" if suffix == ".parquet" else f"line {ROW + 2}"
    before = files_under(sim.work)
    # the clean rows import: the errors below are the corruptions'
    assert read_click_log(_write(clean_rows, tmp_path / f"clean{suffix}"), train).click.sum() > 0
    for name, (corrupt, message) in CORRUPTIONS.items():
        frame = clean_rows.copy()
        corrupt(frame, sizes)
        path = _write(frame, tmp_path / f"{name.replace(' ', '-')}{suffix}")
        result = invoke("clicks", "import", path, "--split", "train", workdir=sim.work, expect=1)
        pattern = re.escape(f"{where} of {path}: ") + message
        assert re.search("^Error: " + pattern, result.output, re.MULTILINE), (name, result.output)
        with pytest.raises(ValueError) as error:
            read_click_log(path, train)
        assert re.fullmatch(pattern + (".*" if not message.endswith("$") else ""), str(error.value)), (
            name,
            str(error.value),
        )
    assert files_under(sim.work) == before


def test_messages_name_the_offending_values(sim, clean_rows, tmp_path):
    train = sim.dataset.train
    frame = clean_rows.copy()
    qid, session = int(frame.qid[ROW]), frame.session[ROW]
    previous = frame.loc[ROW - 1]
    _repeat("rank")(frame, None)
    with pytest.raises(
        ValueError,
        match=re.escape(
            f"line {ROW + 2} of {tmp_path / 'a.tsv'}: rank {previous['rank']} appears twice in session {session}"
        ),
    ):
        read_click_log(_write(frame, tmp_path / "a.tsv"), train)
    frame = clean_rows.copy()
    size = int(np.diff(train.offsets)[np.flatnonzero(train.qid == qid)[0]])
    _doc_beyond(frame, {qid: size})
    with pytest.raises(ValueError, match=re.escape(f"doc {size} is not a document of qid {qid}, which has {size}")):
        read_click_log(_write(frame, tmp_path / "b.tsv"), train)
    frame = clean_rows.copy()
    _other_query_session(frame, None)
    with pytest.raises(ValueError, match=re.escape(f"session {frame.session[0]} spans two queries (qid {qid} here")):
        read_click_log(_write(frame, tmp_path / "c.tsv"), train)


def test_file_level_errors_store_nothing(sim, clean_rows, tmp_path, invoke):
    before = files_under(sim.work)
    missing = _write(clean_rows.drop(columns=["rank"]), tmp_path / "missing.tsv")
    no_doc = _write(clean_rows.drop(columns=["doc"]), tmp_path / "no-doc.tsv")
    empty = tmp_path / "empty.tsv"
    empty.write_bytes(b"")
    header_only = tmp_path / "header.tsv"
    header_only.write_text("session\tqid\tdoc\trank\tclick\n")
    unknown = _write(clean_rows, tmp_path / "log.tsv").rename(tmp_path / "log.json")
    cases = {
        missing: f"{missing}: missing column rank; found session, qid, doc, click, propensity, ranker",
        no_doc: f"{no_doc}: missing column doc (or docid); found session, qid, rank, click, propensity, ranker",
        empty: f"{empty}: the file is empty",
        header_only: f"{header_only}: the log has no rows",
        unknown: f"{unknown}: cannot tell the format from the extension .json",
    }
    for path, message in cases.items():
        assert f"Error: {message}" in invoke("clicks", "import", path, workdir=sim.work, expect=1).output
        with pytest.raises(ValueError, match=re.escape(message)):
            read_click_log(path, sim.dataset.train)
    assert files_under(sim.work) == before


def test_line_numbers_count_blank_lines_in_plain_and_compressed_files(tmp_path, toy_queries):
    queries = toy_queries([3, 4], qid_start=10)
    text = (
        "\nsession\tqid\tdoc\trank\tclick\n"  # line 2 is the header
        "a\t10\t0\t1\t1\n\n"  # lines 3, 4
        "a\t10\t1\t2\t0\r\n\n"  # lines 5, 6
        "b\t11\t3\t1\t2\n"
    )  # line 7: the bad click
    plain, packed = tmp_path / "log.tsv", tmp_path / "log.tsv.gz"
    plain.write_text(text)
    packed.write_bytes(gzip.compress(text.encode()))
    for path in (plain, packed):
        with pytest.raises(ValueError, match=re.escape(f"line 7 of {path}: click must be 0 or 1, found")):
            read_click_log(path, queries)


def test_repeats_are_found_however_deep_the_ranks(tmp_path, toy_queries):
    # ranks far beyond the number of rows: the repeat check cannot count over every
    # (session, rank) and must sort instead; the answer is the same
    queries = toy_queries([3, 4000], qid_start=10)
    path = tmp_path / "log.tsv"
    path.write_text(
        "session\tqid\tdoc\trank\tclick\na\t11\t0\t1\t1\na\t11\t1\t3999\t0\nb\t11\t0\t3999\t0\nb\t11\t1\t1\t0\n"
    )
    assert read_click_log(path, queries).rank.tolist() == [1, 3999, 3999, 1]  # two sessions: no repeat
    path.write_text(
        "session\tqid\tdoc\trank\tclick\na\t11\t0\t3999\t1\nb\t11\t0\t1\t0\na\t11\t1\t3999\t0\na\t11\t2\t1\t0\n"
    )
    with pytest.raises(ValueError, match=re.escape(f"line 4 of {path}: rank 3999 appears twice in session 'a'")):
        read_click_log(path, queries)


def test_true_false_clicks_are_rejected_by_every_reader(tmp_path, toy_queries):
    queries = toy_queries([3], qid_start=10)
    text = "session\tqid\tdoc\trank\tclick\na\t10\t0\t1\ttrue\na\t10\t1\t2\tfalse\n"
    for path in (tmp_path / "log.tsv", tmp_path / "log.tsv.gz"):
        path.write_bytes(gzip.compress(text.encode()) if path.suffix == ".gz" else text.encode())
        with pytest.raises(ValueError, match=re.escape(f"line 2 of {path}: click must be 0 or 1, found 'true'")):
            read_click_log(path, queries)


# -- what real logs get wrong: both readers, ranks, empty cells, unknown columns ---------

READERS = ("pyarrow", "pandas")
HEADER = "session\tqid\tdoc\trank\tclick\n"


def _refusal(path: Path, queries: Queries, reader: str, **options) -> str:
    with pytest.raises(ValueError) as error:
        read_click_log(path, queries, reader=reader, **options)
    return str(error.value)


@pytest.mark.parametrize("suffix", [".tsv", ".csv.gz"])
def test_both_readers_refuse_every_bad_row_with_the_same_message(suffix, sim, clean_rows, tmp_path):
    train = sim.dataset.train
    sizes = dict(zip(train.qid.tolist(), np.diff(train.offsets).tolist(), strict=True))
    for name, (corrupt, _) in CORRUPTIONS.items():
        frame = clean_rows.copy()
        corrupt(frame, sizes)
        path = _write(frame, tmp_path / f"{name.replace(' ', '-')}{suffix}")
        messages = {reader: _refusal(path, train, reader) for reader in READERS}
        assert messages["pyarrow"] == messages["pandas"], (name, messages)
        assert messages["pandas"].startswith(f"line {ROW + 2} of {path}: "), (name, messages)
    assert "-9223372036854775808" not in " ".join(messages.values())


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("suffix", [".tsv", ".tsv.gz"])
def test_a_bad_click_is_reported_on_its_own_line_by_either_reader(reader, suffix, tmp_path, toy_queries):
    # pyarrow once read a column of 0, 1 and one "true" as booleans and blamed line 2
    queries = toy_queries([3, 4], qid_start=10)
    text = (
        HEADER + "a\t10\t0\t1\t1\na\t10\t1\t2\t0\nb\t11\t0\t1\t0\nb\t11\t1\t2\t1\nb\t11\t2\t3\t0\nb\t11\t3\t4\ttrue\n"
    )
    path = tmp_path / f"log{suffix}"
    path.write_bytes(gzip.compress(text.encode()) if suffix.endswith(".gz") else text.encode())
    assert _refusal(path, queries, reader) == f"line 7 of {path}: click must be 0 or 1, found 'true'"


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("suffix", [".tsv", ".tsv.gz"])
def test_bytes_that_are_not_utf8_are_named_with_file_and_line(reader, suffix, tmp_path, toy_queries):
    queries = toy_queries([3], qid_start=10)
    for line, text in ((3, HEADER + "a\t10\t0\t1\t1\n\xe9\t10\t1\t2\t0\n"), (1, "s\xe9ssion\tqid\tdoc\trank\tclick\n")):
        path = tmp_path / f"log{line}{suffix}"
        data = text.encode("latin-1")
        path.write_bytes(gzip.compress(data) if suffix.endswith(".gz") else data)
        assert _refusal(path, queries, reader) == (
            f"line {line} of {path}: not UTF-8 text (byte 0xe9 at byte "
            f"{2 if line == 1 else 1} of the line); a click log must be saved "
            f"as UTF-8"
        )


@pytest.mark.parametrize("reader", READERS)
def test_a_row_with_another_number_of_cells_than_the_header(reader, tmp_path, toy_queries):
    queries = toy_queries([3], qid_start=10)
    path = tmp_path / "log.tsv"
    for row, cells in (("a\t10\t1\t2", 4), ("a\t10\t1\t2\t0\t7", 6)):
        path.write_text(HEADER + "a\t10\t0\t1\t1\n" + row + "\n")
        assert _refusal(path, queries, reader) == f"line 3 of {path}: {cells} cells where the header has 5"


@pytest.mark.parametrize("reader", READERS)
def test_ranks_start_at_1_and_stay_within_the_query(reader, tmp_path, toy_queries):
    queries = toy_queries([3, 4], qid_start=10)
    path = tmp_path / "log.tsv"
    beyond = (
        "is beyond the 3 documents of qid 10; a rank is a displayed position, from 1 to at most the number "
        "of the query's documents"
    )
    cases = {  # every rank shifted by 100; numbers as written, never wrapped round to -2**63
        "a\t10\t0\t101\t1\na\t10\t1\t102\t0\n": f"line 2 of {path}: rank 101 {beyond}",
        "a\t10\t0\t1\t1\na\t10\t1\t1e11\t0\n": f"line 3 of {path}: rank 1e11 {beyond}",
        "a\t10\t0\t1e20\t1\n": f"line 2 of {path}: rank 1e20 {beyond}",
        "a\t10\t0\t100000000000000000000\t1\n": f"line 2 of {path}: rank 100000000000000000000 {beyond}",
        "a\t10\t0\t1\t1\nb\t10\t0\t2\t0\nb\t10\t1\t3\t0\n": (
            f"line 3 of {path}: the smallest rank of session 'b' "
            f"is 2; the ranks of a session count from 1 (the top "
            f"of the page)"
        ),
        "7\t10\t0\t3\t1\n7\t10\t1\t2\t0\n": (
            f"line 3 of {path}: the smallest rank of session 7 is 2; the ranks of a "
            f"session count from 1 (the top of the page)"
        ),
    }
    for rows, message in cases.items():
        path.write_text(HEADER + rows)
        assert _refusal(path, queries, reader) == message
    # a top-2 page of qid 11, and a page with a gap (a document of the page missing from the log)
    path.write_text(HEADER + "a\t11\t3\t1\t1\na\t11\t0\t2\t0\nb\t10\t0\t1\t0\nb\t10\t2\t3\t1\n")
    assert read_click_log(path, queries, reader=reader).rank.tolist() == [1, 2, 1, 3]


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("column", ["session", "qid", "doc", "rank", "click", "ranker"])
def test_an_empty_cell_is_an_error_not_a_value(reader, column, tmp_path, toy_queries):
    # an empty session was a session of its own, an empty ranker a second ranker
    queries = toy_queries([3], qid_start=10)
    names = ["session", "qid", "doc", "rank", "click", "ranker"]
    second = dict(zip(names, ["a", "10", "1", "2", "0", "r"], strict=True))
    second[column] = ""
    path = tmp_path / "log.tsv"
    path.write_text("\t".join(names) + "\na\t10\t0\t1\t1\tr\n" + "\t".join(second.values()) + "\n")
    assert _refusal(path, queries, reader) == f"line 3 of {path}: the {column} cell is empty; every row needs one"


@pytest.mark.parametrize("reader", READERS)
def test_an_empty_propensity_column_means_no_propensities_a_partly_empty_one_is_an_error(reader, tmp_path, toy_queries):
    queries = toy_queries([3], qid_start=10)
    path = tmp_path / "log.tsv"
    path.write_text("session\tqid\tdoc\trank\tclick\tpropensity\na\t10\t0\t1\t1\t\na\t10\t1\t2\t0\t\n")
    rows = read_click_log(path, queries, reader=reader)
    assert not rows.has_propensity and np.isnan(rows.propensity).all()
    path.write_text("session\tqid\tdoc\trank\tclick\tpropensity\na\t10\t0\t1\t1\t1\na\t10\t1\t2\t0\t\n")
    assert _refusal(path, queries, reader) == (
        f"line 3 of {path}: the propensity cell is empty while other rows "
        f"have one; give every row its propensity, or leave the whole column "
        f"empty for a log without propensities"
    )


@pytest.mark.parametrize("reader", READERS)
def test_unknown_columns_are_refused_unless_ignored(reader, tmp_path, toy_queries):
    queries = toy_queries([3], qid_start=10)
    path = tmp_path / "log.tsv"
    path.write_text("session\tqid\tdoc\trank\tclick\tpropensty\tuser\na\t10\t0\t1\t1\t1\tu1\na\t10\t1\t2\t0\t0.5\tu1\n")
    assert _refusal(path, queries, reader) == (
        f"{path}: unknown columns 'propensty', 'user'; expected session, qid, doc or docid, rank, click "
        f"[, propensity, ranker] (to read the log without other columns: --ignore-extra-columns, or "
        f"ignore_extra_columns=True)"
    )
    rows = read_click_log(path, queries, reader=reader, ignore_extra_columns=True)
    assert rows.ignored_columns == ("propensty", "user") and not rows.has_propensity
    assert rows.click.tolist() == [1, 0]
    path.write_text("session\tqid\tdoc\trank\tclick\tclick\na\t10\t0\t1\t1\t0\n")
    assert _refusal(path, queries, reader) == f"{path}: column 'click' appears twice in the header"


def test_clicked_only_is_a_property_of_the_rows(tmp_path, toy_queries):
    queries = toy_queries([3, 4], qid_start=10)
    path = tmp_path / "log.tsv"
    path.write_text(HEADER + "a\t10\t0\t1\t1\nb\t11\t0\t1\t1\nb\t11\t1\t2\t1\n")
    assert read_click_log(path, queries).clicked_only
    path.write_text(HEADER + "a\t10\t0\t1\t1\nb\t11\t0\t1\t1\nb\t11\t1\t2\t0\n")
    assert not read_click_log(path, queries).clicked_only


@pytest.fixture(scope="module")
def small(tmp_path_factory, invoke):
    """A small synthetic dataset and a train and vali log of it by another program, as text."""
    work = tmp_path_factory.mktemp("small")
    invoke("prepare", "synthetic", "--queries", 40, "--relevant-from", 1, workdir=work)
    dataset = load_dataset(Workspace(work).dataset_path(DATASET))
    logs = {}
    for split, seed in (("train", 5), ("vali", 6)):
        path = work / f"{split}.tsv"
        write_foreign_log(getattr(dataset, split), path, passes=3, seed=seed)
        logs[split] = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    return SimpleNamespace(work=work, dataset=dataset, logs=logs)


def test_a_clicked_rows_only_log_is_marked_warned_refused_for_estimation(small, tmp_path, invoke):
    for split in ("train", "vali"):
        frame = small.logs[split]
        path = _write(frame[frame.click == "1"], tmp_path / f"{split}.tsv")
        out = invoke("clicks", "import", path, "--split", split, workdir=small.work).output
        assert f"warning: the {split} log {path}: it holds clicked rows only" in out
        assert "propensities cannot be estimated from it" in out and "doubly robust" in out
    workspace = Workspace(small.work)
    part = workspace.load(DATASET, "imports", workspace.current(DATASET)["imports/train"])
    assert part.info["clicked_only"] is True
    out = invoke("propensities", "estimate", "--bootstrap", 0, workdir=small.work, expect=1).output
    assert "holds clicked rows only (every row has click 1), so propensities cannot be estimated" in out
    out = invoke("train", "svm-rank", "-C", 1, workdir=small.work).output  # trains, and says what is lost
    assert "warning: the train and vali logs of click log" in out and "clicked rows only" in out
    # the whole log, impressions and all: no warning
    out = invoke("clicks", "import", small.work / "train.tsv", "--split", "train", workdir=small.work).output
    assert "warning" not in out
    assert workspace.load(DATASET, "imports", workspace.current(DATASET)["imports/train"]).info["clicked_only"] is False


def test_a_log_without_clicks_is_told_so(small, tmp_path, invoke):
    frame = small.logs["train"].assign(click="0")
    path = _write(frame, tmp_path / "train.tsv")
    out = invoke("clicks", "import", path, "--split", "train", workdir=small.work).output
    assert f"warning: the train log {path} has no clicks (no row has click 1)" in out
    invoke("clicks", "import", small.work / "vali.tsv", "--split", "vali", workdir=small.work)
    out = invoke("train", "svm-rank", "-C", 1, workdir=small.work, expect=1).output
    assert "the training click log has no clicks" in out and "An imported log: check that its click column" in out
    assert "simulate more passes" not in out


def test_import_refuses_unknown_columns_unless_told_to_ignore_them(small, tmp_path, invoke):
    path = _write(small.logs["train"].rename(columns={"propensity": "propensty"}), tmp_path / "train.tsv")
    out = invoke("clicks", "import", path, "--split", "train", workdir=small.work, expect=1).output
    assert f"Error: {path}: unknown column 'propensty'; expected session, qid, doc or docid, rank, click" in out
    out = invoke("clicks", "import", path, "--split", "train", "--ignore-extra-columns", workdir=small.work).output
    assert "without propensities" in out and "ignored column 'propensty' (--ignore-extra-columns)" in out


def test_pyarrow_the_fast_reader_is_installed_with_cltr():
    import configparser

    setup = configparser.ConfigParser()
    setup.read(Path(__file__).resolve().parents[2] / "setup.cfg")
    required = setup["options"]["install_requires"].split()
    assert "pyarrow>=12" in required
    assert "pyarrow>=12" in setup["options.extras_require"]["parquet"].split()  # the old extra still installs


# -- sessions without clicks, docids ----------------------------------------------------


def test_sessions_without_clicks_count_as_sessions_and_impressions(tmp_path, toy_queries):
    queries = toy_queries([3, 4], qid_start=10)  # qid 10: rows 0-2; qid 11: rows 3-6
    path = tmp_path / "log.csv"
    path.write_text(
        "session,qid,doc,rank,click,propensity\n"
        "a,10,0,1,0,1\na,10,1,2,1,0.5\na,10,2,3,0,0.25\n"  # one click
        "b,10,2,1,0,1\nb,10,1,2,0,0.5\nb,10,0,3,0,0.25\n"  # none
        "c,11,3,1,0,1\nc,11,0,2,0,0.5\n"  # none (doc 0 of qid 11 is row 3)
        "d,10,0,1,1,1\nd,10,1,2,1,0.5\n"
    )  # two
    rows = read_click_log(path, queries)
    assert rows.doc.tolist() == [0, 1, 2, 2, 1, 0, 6, 3, 0, 1]
    assert rows.session.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 3, 3]
    log = rows.click_log(queries.n_queries)
    # qid 10's sessions a, b, d are its passes 0, 1, 2; clicks in pass order, then by document
    assert log.doc.tolist() == [1, 0, 1] and log.pass_index.tolist() == [0, 2, 2]
    assert log.rank.tolist() == [2, 1, 2] and log.propensity.tolist() == [0.5, 1.0, 0.5]
    assert log.sessions_per_query.tolist() == [3, 1] and log.n_sessions == 4 and log.n_passes == 3
    assert click_log_summary(log, np.ones(7, bool))["clicks_per_query"] == 3 / 4
    table = rows.impressions()
    found = {(d, r): (n, c) for d, r, n, c in zip(table.doc, table.rank, table.impressions, table.clicks, strict=True)}
    assert found == {
        (0, 1): (2, 1),
        (0, 3): (1, 0),
        (1, 2): (3, 2),
        (2, 3): (1, 0),
        (2, 1): (1, 0),
        (6, 1): (1, 0),
        (3, 2): (1, 0),
    }
    assert table.impressions.sum() == 10  # every row, with or without a click


def _docid_queries(toy_queries):
    if "docid" not in getattr(Queries, "__dataclass_fields__", {}):
        pytest.skip("Queries has no docid field")
    plain = toy_queries([3, 4], qid_start=10)
    docid = np.array(["GX-a", "GX-b", "007", "GX-a", "x1", "x2", "x3"], dtype=object)
    return Queries(X=plain.X, labels=plain.labels, qid=plain.qid, offsets=plain.offsets, docid=docid)


@pytest.mark.parametrize("suffix", [".tsv", ".tsv.gz"])
def test_docid_column_names_documents_within_their_query(suffix, tmp_path, toy_queries):
    queries = _docid_queries(toy_queries)
    text = (
        "session\tqid\tdocid\trank\tclick\n"
        "a\t10\t007\t1\t1\na\t10\tGX-a\t2\t0\n"  # "007" stays text, not 7
        "b\t11\tGX-a\t1\t0\nb\t11\tx3\t2\t1\n"
    )  # GX-a of qid 11 is row 3, not row 0
    path = tmp_path / f"log{suffix}"
    path.write_bytes(gzip.compress(text.encode()) if suffix.endswith(".gz") else text.encode())
    rows = read_click_log(path, queries)
    assert rows.doc.tolist() == [2, 0, 3, 6] and rows.click.tolist() == [1, 0, 0, 1]
    # x9 is no document at all; x1 is one of qid 11, not of qid 10
    for wrong, line, name in (("b\t11\tx9", 4, "'x9'"), ("b\t10\tx1", 4, "'x1'")):
        changed = text.replace("b\t11\tGX-a", wrong)
        path.write_bytes(gzip.compress(changed.encode()) if suffix.endswith(".gz") else changed.encode())
        with pytest.raises(
            ValueError,
            match=re.escape(f"line {line} of {path}: docid {name} is not a document of qid {wrong.split()[1]}"),
        ):
            read_click_log(path, queries)


def test_docid_column_needs_docids_in_the_dataset(tmp_path, toy_queries):
    path = tmp_path / "log.tsv"
    path.write_text("session\tqid\tdocid\trank\tclick\na\t1\tGX-a\t1\t1\n")
    with pytest.raises(ValueError, match="the prepared dataset has no docids"):
        read_click_log(path, toy_queries([3]))


# -- a log written by a different program -------------------------------------------------


def write_foreign_log(queries: Queries, path: Path, *, passes: int, seed: int, propensity: bool = True) -> int:
    """A click log as another system would write it, independent of cltr's simulator and
    writer: two rankers ("prod", "alt") that sort each query by its labels plus their own
    Gaussian noise; each session shows one of them, chosen at random; a document at rank r
    is examined with probability 1/r and then clicked if relevant (label >= 1), or with
    probability 0.05 if not. String session ids, rows shuffled (a log need not be
    sorted). Returns the number of clicks."""
    rng = np.random.default_rng(seed)
    bounds = list(pairwise(queries.offsets))
    orders = {
        name: [np.argsort(-(queries.labels[a:b] + rng.standard_normal(b - a)), kind="stable") for a, b in bounds]
        for name in ("prod", "alt")
    }
    records = []
    session = 0
    for _ in range(passes):
        for q, (a, b) in enumerate(bounds):
            name = ("prod", "alt")[rng.integers(2)]
            order = orders[name][q]
            rank = np.arange(1, b - a + 1)
            examined = rng.random(b - a) < 1.0 / rank
            relevant = queries.labels[a + order] >= 1
            click = examined & (relevant | (rng.random(b - a) < 0.05))
            session += 1
            for d, r, c in zip(order, rank, click, strict=True):
                record = {
                    "session": f"s-{session}",
                    "qid": int(queries.qid[q]),
                    "doc": int(d),
                    "rank": int(r),
                    "click": int(c),
                }
                if propensity:
                    record["propensity"] = 1.0 / r
                record["ranker"] = name
                records.append(record)
    frame = pd.DataFrame(records).sample(frac=1.0, random_state=seed)
    frame.to_csv(path, sep="\t", index=False)
    return int(frame.click.sum())


@pytest.fixture(scope="module")
def foreign(tmp_path_factory, invoke):
    """A fresh workspace with a small synthetic dataset and the production ranker."""
    work = tmp_path_factory.mktemp("foreign")
    invoke("prepare", "synthetic", "--queries", 300, "--relevant-from", 1, workdir=work)
    production = table_value(invoke("evaluate", "--production", workdir=work).output, "test Avg DCG")
    dataset = load_dataset(Workspace(work).dataset_path(DATASET))
    return SimpleNamespace(work=work, dataset=dataset, production=production)


def test_learners_beat_production_on_a_log_written_by_another_program(foreign, invoke):
    work = foreign.work
    for split, seed in (("train", 1), ("vali", 2)):
        path = work / f"foreign-{split}.tsv"
        clicks = write_foreign_log(getattr(foreign.dataset, split), path, passes=20, seed=seed)
        out = invoke("clicks", "import", path, "--split", split, workdir=work).output
        assert f"{clicks} clicks, 2 ranker(s), with propensities" in out
    assert current(work, "clicks").info["train"]["sessions"] == 20 * foreign.dataset.train.n_queries
    for method in ("svm-proprank", "svm-propdcg"):
        invoke("train", method, workdir=work)
        dcg = table_value(invoke("evaluate", workdir=work).output, "test Avg DCG")
        assert dcg > foreign.production + 0.02, (method, dcg, foreign.production)


def test_harvested_propensities_when_the_log_has_none(foreign, invoke):
    pytest.importorskip("cltr.core.propensity")
    work = foreign.work / "harvest"
    invoke("prepare", "synthetic", "--queries", 300, "--relevant-from", 1, workdir=work)
    for split, seed in (("train", 3), ("vali", 4)):
        path = foreign.work / f"no-propensity-{split}.tsv"
        write_foreign_log(getattr(foreign.dataset, split), path, passes=20, seed=seed, propensity=False)
        out = invoke("clicks", "import", path, "--split", split, workdir=work).output
        assert "without propensities" in out
    invoke("train", "svm-proprank", "--propensities", "logged", workdir=work, expect=2)
    assert "no propensities estimated" in invoke("train", "svm-proprank", workdir=work, expect=1).output
    out = invoke(
        "propensities", "estimate", "--method", "harvest", "--max-rank", 6, "--bootstrap", 20, workdir=work
    ).output
    assert "(2 ranker(s))" in out
    estimate = current(work, "propensities")
    propensity = estimate.arrays["propensity"]
    # the generator's propensities are 1/r: the harvested ones must be close
    np.testing.assert_allclose(propensity, 1.0 / np.arange(1, 7), rtol=0.35)
    invoke("train", "svm-proprank", "--propensities", "estimated", workdir=work)
    model = current(work, "models")
    assert model.config["propensities"] == estimate.key
    dcg = table_value(invoke("evaluate", workdir=work).output, "test Avg DCG")
    assert dcg > foreign.production + 0.02


# -- clipping --------------------------------------------------------------------------


def test_clipping_weights_hand_computed():
    assert effective_sample_size([1.0, 10.0]) == pytest.approx(121 / 101)
    assert effective_sample_size([1.0, 5.0]) == pytest.approx(36 / 26)  # 1/q clipped at 1/0.2
    # one query of four documents ranked 1..4; clicks at ranks 1 and 3 with q = 1 and 0.05
    queries = Queries(
        X=np.array([[3.0], [2.0], [1.0], [0.0]]),
        labels=np.zeros(4, np.int64),
        qid=np.array([1]),
        offsets=np.array([0, 4]),
    )
    log = ClickLog(
        query=np.array([0, 0]),
        doc=np.array([0, 2]),
        rank=np.array([1, 3]),
        propensity=np.array([1.0, 0.05]),
        pass_index=np.array([0, 0]),
        n_passes=1,
        n_queries=1,
    )
    scorer = LinearScorer(np.array([1.0]))
    g1, g3 = dcg_gain(np.array([1, 3]))

    def snips(log):
        return validation_estimate(scorer, queries, log, rng=np.random.default_rng(0), dcg_base=math.e)

    assert snips(log) == pytest.approx((g1 + 20 * g3) / 21)
    assert snips(as_told(log, clip=0.1)) == pytest.approx((g1 + 10 * g3) / 11)
    assert snips(as_told(log, clip=1.0)) == pytest.approx((g1 + g3) / 2)  # clip 1: the naive estimate
    assert as_told(log, clip=0.01).propensity.tolist() == [1.0, 0.05]  # nothing below 0.01


def test_effective_sample_size_of_one_extreme_weight_is_one_not_nan():
    # squared as given, 1e300 overflows both of Kish's sums to inf and the ratio to nan
    assert effective_sample_size([1.0] * 99 + [1e300]) == pytest.approx(1.0)
    assert effective_sample_size(np.array([2.0, 2.0]) * 1e200) == pytest.approx(2.0)
    assert effective_sample_size([]) == 0.0


def test_a_click_of_propensity_1e_300_is_named_not_a_crash_or_nan(sim, exported, tmp_path, invoke):
    table = pd.read_csv(exported["train"], sep="\t")
    table.loc[table.index[table["click"] == 1][0], "propensity"] = 1e-300
    extreme = tmp_path / "extreme.tsv"
    table.to_csv(extreme, sep="\t", index=False)
    invoke("clicks", "import", extreme, "--split", "train", workdir=sim.work)
    invoke("clicks", "import", exported["vali"], "--split", "vali", workdir=sim.work)
    out = invoke("train", "svm-rank", "-C", 1, workdir=sim.work).output
    # svm-rank weights every click 1: no effective sample size of weights it does not use, no nan
    assert "svm-rank weighs no click by 1/q" in out and "effective sample size" not in out and "nan" not in out
    out = invoke("train", "svm-proprank", "-C", 1, workdir=sim.work, expect=1).output
    assert "a weight 1/q means a propensity q of" in out and "clip the propensities" in out
    assert "Traceback" not in out and "IndexError" not in out


def test_clip_changes_the_model_its_weights_and_its_selection(sim, invoke):
    out = invoke("train", "svm-proprank", "-C", 1, "--clip", 0.1, "--clicks", sim.clicks.key, workdir=sim.work).output
    clipped = current(sim.work, "models")
    assert clipped.key != sim.model.key
    assert clipped.config["train_clip"] == 0.1 and sim.model.config.get("train_clip") != 0.1
    assert "clipped at 0.1" in out
    train_log, vali_log = click_logs(sim.clicks)
    assert train_log.propensity.min() < 0.1  # clipping has something to do
    ess = effective_sample_size(1.0 / train_log.propensity)
    ess_clipped = effective_sample_size(1.0 / np.maximum(train_log.propensity, 0.1))
    assert sim.model.info["effective_sample_size"] == pytest.approx(ess)
    assert clipped.info["effective_sample_size"] == pytest.approx(ess_clipped)
    assert ess_clipped > ess
    assert not np.array_equal(weights(clipped), weights(sim.model))
    # the validation estimate never divides by the training clip: this log's validation
    # clicks are unclipped (their own TAU_v is None), so it is the plain SNIPS estimate
    assert clipped.info["validation_clip"] is None
    scorer = scorer_from_arrays(clipped.arrays)
    ranks = rank_documents(scorer.scores(sim.dataset.vali.X), sim.dataset.vali.offsets, stream(0, "selection"))
    gain = dcg_gain(ranks[vali_log.doc])
    unclipped = np.sum(gain / vali_log.propensity) / np.sum(1.0 / vali_log.propensity)
    assert clipped.info["validation_snips_avg_dcg"] == pytest.approx(unclipped)


# -- cltr score and evaluate across datasets ----------------------------------------------


def write_svmlight(queries: Queries, path: Path, docids=None) -> None:
    lines = []
    for q, (a, b) in enumerate(pairwise(queries.offsets)):
        for row in range(a, b):
            features = " ".join(f"{j + 1}:{v:.17g}" for j, v in enumerate(queries.X[row]))
            comment = f" #docid = {docids[row]}" if docids is not None else ""
            lines.append(f"{queries.labels[row]} qid:{queries.qid[q]} {features}{comment}\n")
    path.write_text("".join(lines))


def _trec_lines(path: Path) -> list[list[str]]:
    return [line.split() for line in path.read_text().splitlines()]


def test_score_writes_the_model_scores_and_a_trec_run(sim, tmp_path, invoke):
    test = sim.dataset.test
    features = tmp_path / "test.txt"
    write_svmlight(test, features)
    scores_path, run = tmp_path / "scores.txt", tmp_path / "run.txt"
    invoke(
        "score",
        "--model",
        sim.model.key,
        features,
        "--out",
        scores_path,
        "--trec",
        run,
        "--run-name",
        "mine",
        workdir=sim.work,
    )
    expected = scorer_from_arrays(sim.model.arrays).scores(test.X)
    written = np.array([float(line) for line in scores_path.read_text().splitlines()])
    np.testing.assert_allclose(written, expected, rtol=1e-9, atol=1e-12)

    lines = _trec_lines(run)
    assert len(lines) == test.n_docs and all(len(fields) == 6 for fields in lines)
    score_of = {
        f"q{test.qid[q]}-d{i}": expected[test.offsets[q] + i]
        for q in range(test.n_queries)
        for i in range(int(np.diff(test.offsets)[q]))
    }
    by_query = {}
    for qid, q0, docid, rank, score, name in lines:
        assert q0 == "Q0" and name == "mine"
        assert float(score) == pytest.approx(score_of[docid], rel=1e-9, abs=1e-12)
        assert docid.startswith(f"q{qid}-d")
        by_query.setdefault(int(qid), []).append((int(rank), float(score), docid))
    assert list(by_query) == test.qid.tolist()  # queries in file order
    for qid in test.qid:
        ranked = by_query[int(qid)]
        assert [r for r, _, _ in ranked] == list(range(1, len(ranked) + 1))
        assert all(a[1] >= b[1] for a, b in pairwise(ranked))  # descending scores
        assert {d for _, _, d in ranked} == {f"q{qid}-d{i}" for i in range(len(ranked))}

    # without --out and --trec the scores go to standard output
    out = invoke("score", "--model", sim.model.key, features, workdir=sim.work).output
    assert out.splitlines()[: test.n_docs] == scores_path.read_text().splitlines()


def test_score_uses_the_docid_comments(sim, tmp_path, invoke):
    test = sim.dataset.test
    features, run = tmp_path / "test.txt", tmp_path / "run.txt"
    write_svmlight(test, features, docids=[f"GX{row:04d}" for row in range(test.n_docs)])
    from cltr.data.svmlight import load_svmlight_split

    if getattr(load_svmlight_split(features)[0], "docid", None) is None:
        pytest.skip("the SVMlight reader keeps no docids")
    invoke("score", "--model", sim.model.key, features, "--trec", run, workdir=sim.work)
    expected = scorer_from_arrays(sim.model.arrays).scores(test.X)
    for qid, _, docid, _, score, _ in _trec_lines(run):
        row = int(docid[2:])
        assert test.qid[np.searchsorted(test.offsets, row, side="right") - 1] == int(qid)
        assert float(score) == pytest.approx(expected[row], rel=1e-9, abs=1e-12)


def test_evaluate_a_model_on_another_dataset_of_the_same_width(sim, invoke):
    invoke("prepare", "synthetic", "--queries", 40, "--seed", 5, "--name", "other", workdir=sim.work)
    invoke("prepare", "synthetic", "--queries", 40, "--features", 10, "--name", "narrow", workdir=sim.work)
    out = invoke("evaluate", "--model", sim.model.key, "--dataset", "other", workdir=sim.work).output
    assert f"trained on '{DATASET}') on 'other'" in out
    other = load_dataset(Workspace(sim.work).dataset_path("other"))
    expected = evaluate(
        scorer_from_arrays(sim.model.arrays),
        other.test,
        other.test.relevant(other.relevant_from),
        rng=stream(0, "evaluate"),
        dcg_base=other.dcg_base,
    )
    assert table_value(out, "test Avg DCG") == pytest.approx(expected["avg_dcg"], abs=5e-5)
    assert table_value(out, "test Avg Rank") == pytest.approx(expected["avg_rank"], abs=5e-3)
    out = invoke("evaluate", "--model", sim.model.key, "--dataset", "narrow", workdir=sim.work, expect=1).output
    assert f"model {sim.model.key} (of '{DATASET}') takes 46 features; 'narrow' has 10" in out


def test_the_same_bytes_under_a_name_of_another_format_are_read_again_not_reused(sim, exported, tmp_path, invoke):
    invoke("clicks", "import", exported["train"], "--split", "train", "--dataset", DATASET, workdir=sim.work)
    misnamed = tmp_path / "train.csv"  # tab-separated bytes under a comma-separated name
    misnamed.write_bytes(exported["train"].read_bytes())
    out = invoke(
        "clicks", "import", misnamed, "--split", "train", "--dataset", DATASET, workdir=sim.work, expect=1
    ).output
    assert "(reused)" not in out and "Error:" in out and "train.csv" in out
