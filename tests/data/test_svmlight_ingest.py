"""The streamed SVMlight reader (``cltr.data.svmlight``): scikit-learn's reader as the
oracle on random files cut into many blocks, every malformed line reported as before,
document ids kept through loaders and the prepared-dataset file, ``cltr prepare svmlight``."""

from __future__ import annotations

import bz2
import gzip
import lzma
import re
import threading
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from cltr.core.queries import Dataset, Queries, check_queries, concatenate_queries
from cltr.data.loaders import load_letor, load_svmlight_dataset, load_yahoo
from cltr.data.store import load_dataset, save_dataset
from cltr.data.svmlight import load_svmlight_split

_WRITERS = {"": open, ".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
TINY_BLOCKS = [1, 7, 64, 1 << 20]  # bytes per block: a block boundary inside every line, ..., one block


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with _WRITERS[path.suffix if path.suffix in _WRITERS else ""](path, "wb") as stream:
        stream.write(text.encode() if isinstance(text, str) else text)
    return path


# -- scikit-learn's reader as the oracle ----------------------------------------------------

_VALUES = [
    "0",
    "1",
    "0.5",
    "-0.25",
    ".5",
    "5.",
    "1e-3",
    "2.5E+02",
    "-0",
    "123456.789",
    "0.1234567890123456789",
    "3.4028234e38",
    "1e-320",
]
_SLOW_VALUES = ["+0.5", "1_0", "+2e1"]  # valid for Python's float(), not for the bulk parser


def random_file(rng: np.random.Generator, *, n_features: int, density: float, slow: float = 0.0):
    """An SVMlight text with comments, blank lines, tabs, CRLF and (with ``slow``) numbers
    only the line parser reads; and the document id of each row."""
    lines, docids, qid = [], [], int(rng.integers(1, 50))
    for _ in range(int(rng.integers(1, 12))):
        qid += int(rng.integers(1, 1000))
        for _ in range(int(rng.integers(1, 6))):
            present = np.flatnonzero(rng.random(n_features) < density) + 1
            values = [str(rng.choice(_SLOW_VALUES if rng.random() < slow else _VALUES)) for _ in present]
            label = str(rng.choice(["2.0", "+1"])) if rng.random() < slow else str(rng.integers(0, 5))
            space = [" ", "  ", "\t", " \t"][int(rng.integers(0, 4))]
            line = space.join([label, f"qid:{qid}"] + [f"{j}:{v}" for j, v in zip(present, values, strict=True)])
            docid = None
            if rng.random() < 0.6:
                docid = f"GX{rng.integers(1000):03d}-{rng.integers(100):02d}-{rng.integers(10**7):07d}"
                line += f" #docid = {docid} inc = 1 prob = {rng.random():.4f}"
            elif rng.random() < 0.2:
                line += "  # a comment without an id: 1:2 qid:3"
            lines.append(line + ("\r" if rng.random() < 0.1 else ""))
            docids.append(docid)
            if rng.random() < 0.15:
                lines.append(str(rng.choice(["", "   ", "# a comment line", "\t# 5 qid:1 1:1"])))
    return "\n".join(lines) + ("\n" if rng.random() < 0.8 else ""), docids


def oracle(path: Path, width: int):
    """X (n_rows, width), labels, qid per query, offsets by scikit-learn's reader."""
    load_svmlight_file = pytest.importorskip("sklearn.datasets").load_svmlight_file  # the oracle only

    sparse, y, qid = load_svmlight_file(
        str(path), dtype=np.float64, zero_based=True, query_id=True, n_features=width + 1
    )
    X = sparse.toarray()[:, 1:]
    starts = np.flatnonzero(np.concatenate([[True], qid[1:] != qid[:-1]]))
    return X, y.astype(np.int64), qid[starts], np.append(starts, len(y))


def assert_matches_oracle(queries: Queries, expected, dtype=np.float64):
    X, labels, qid, offsets = expected
    assert queries.X.dtype == dtype and queries.X.flags.c_contiguous and queries.X.flags.owndata
    np.testing.assert_array_equal(queries.X, X.astype(dtype))
    np.testing.assert_array_equal(queries.labels, labels)
    np.testing.assert_array_equal(queries.qid, qid)
    np.testing.assert_array_equal(queries.offsets, offsets)
    check_queries(queries)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("density", [0.05, 0.4, 1.0])
def test_same_as_sklearn_for_every_block_size(tmp_path, seed, density):
    rng = np.random.default_rng([seed, int(density * 100)])
    text, docids = random_file(rng, n_features=30, density=density)
    path = write(tmp_path / "train.txt", text)
    expected = oracle(path, 30)
    # one-byte blocks (a boundary at every byte) on the sparser files only: they hold every
    # kind of token, and a dense file (7-13 kB) read a byte at a time took 0.2-0.6 s
    for block_size in TINY_BLOCKS if density < 1.0 else TINY_BLOCKS[1:]:
        queries, provenance = load_svmlight_split(path, n_features=30, block_size=block_size)
        assert_matches_oracle(queries, expected)
        assert provenance["n_rows"] == len(docids) and provenance["bytes"] == len(text.encode())
        if any(d is not None for d in docids):
            assert queries.docid.tolist() == docids
        else:
            assert queries.docid is None
        # without n_features the width grows with the largest index seen so far
        widest, provenance = load_svmlight_split(path, block_size=block_size)
        width = provenance["max_feature_index"]
        assert widest.X.shape[1] == width
        np.testing.assert_array_equal(widest.X, queries.X[:, :width])
        assert widest.X.flags.owndata


@pytest.mark.parametrize("seed", range(4))
def test_lines_only_python_reads_go_through_the_line_parser(tmp_path, seed):
    # '+0.5', '1_0', '+1' are numbers to Python (and to sklearn), not to the bulk parser:
    # blocks holding them are parsed line by line, the others in bulk, with one result.
    rng = np.random.default_rng(100 + seed)
    text, docids = random_file(rng, n_features=12, density=0.5, slow=0.05)
    path = write(tmp_path / "mixed.txt", text)
    expected = oracle(path, 12)
    for block_size in TINY_BLOCKS:
        queries, _ = load_svmlight_split(path, n_features=12, block_size=block_size)
        assert_matches_oracle(queries, expected)


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz"])
@pytest.mark.parametrize("block_size", [5, 1 << 20])
def test_compressed_files_read_like_plain_ones(tmp_path, suffix, block_size):
    rng = np.random.default_rng(7)
    text = "".join(random_file(rng, n_features=20, density=0.3)[0] + "\n" for _ in range(4))
    plain, _ = load_svmlight_split(write(tmp_path / "train.txt", text), n_features=20)
    packed, provenance = load_svmlight_split(
        write(tmp_path / f"train.txt{suffix}", text), n_features=20, block_size=block_size
    )
    np.testing.assert_array_equal(packed.X, plain.X)
    np.testing.assert_array_equal(packed.offsets, plain.offsets)
    assert packed.docid.tolist() == plain.docid.tolist()
    assert provenance["compression"] == suffix[1:]
    assert provenance["bytes"] == len(text.encode())


def test_float32_is_the_float64_value_rounded_once(tmp_path):
    rng = np.random.default_rng(3)
    text, _ = random_file(rng, n_features=10, density=0.7)
    path = write(tmp_path / "train.txt", text)
    expected = oracle(path, 10)
    queries, _ = load_svmlight_split(path, n_features=10, dtype=np.float32, block_size=33)
    assert_matches_oracle(queries, expected, dtype=np.float32)
    default, _ = load_svmlight_split(path, n_features=10)
    assert default.X.dtype == np.float64  # the default stays float64: LETOR's numbers are float64 ones
    with pytest.raises(ValueError, match="dtype must be a float dtype"):
        load_svmlight_split(path, dtype=np.int64)
    # a value float64 holds but float32 does not is an error, not a silent inf
    big = write(tmp_path / "big.txt", "0 qid:1 1:1\n1 qid:1 1:3.4028234e38 2:-3.5e38\n")
    assert load_svmlight_split(big)[0].X[1, 1] == -3.5e38
    with pytest.raises(
        ValueError,
        match=r"line 2 of .*big.txt: feature 2 has the value -3.5e\+38, beyond the "
        "range of float32; read the file as float64",
    ):
        load_svmlight_split(big, dtype=np.float32)


def test_sha256_and_line_counts_are_of_the_whole_content(tmp_path):
    import hashlib

    text = "1 qid:1 1:1\n\n# c\n0 qid:1 2:1"  # no final newline: the last line still counts
    for block_size in TINY_BLOCKS:
        _, provenance = load_svmlight_split(write(tmp_path / "a.txt.gz", text), block_size=block_size)
        assert provenance["sha256"] == hashlib.sha256(text.encode()).hexdigest()
        assert provenance["n_lines"] == 4 and provenance["n_rows"] == 2 and provenance["bytes"] == len(text)


def test_rows_beyond_the_first_estimate_and_wide_late_indices(tmp_path):
    # short rows first, then long ones: the row estimate of the first block is far too low
    # for the compressed file, and the width jumps late; X is grown and narrowed correctly.
    short = "".join(f"0 qid:{q} 1:1\n" for q in range(1, 400))
    long = "".join(f"1 qid:{q} " + " ".join(f"{j}:{j}" for j in range(1, 200, 3)) + "\n" for q in range(400, 420))
    text = short + long + "2 qid:999 150:0.5\n"
    path = write(tmp_path / "grow.txt.xz", text)
    expected = oracle(write(tmp_path / "grow.txt", text), 199)
    for block_size in [16, 4096]:
        queries, provenance = load_svmlight_split(path, block_size=block_size)
        assert provenance["max_feature_index"] == 199
        assert_matches_oracle(queries, expected)


# -- every malformed input is reported as before (tests/test_datasets.py's 27 cases) --------

_UNPARSABLE = "0 qid:1 1:0.5 2:1\n\n{}\n0 qid:1 1:1\n"
MALFORMED = [
    # (file name, content, options, message with {file} for the escaped file name)
    ("bad.txt", _UNPARSABLE.format("abc qid:1 1:0.5"), {}, "line 3 of .*{file}: the label 'abc' is not a number"),
    (
        "bad.txt",
        _UNPARSABLE.format("1 qid:1 1:abc"),
        {},
        r"line 3 of .*{file}: the feature value of '1:abc' is not a number",
    ),
    (
        "bad.txt",
        _UNPARSABLE.format("1 qid:1 x:0.5"),
        {},
        r"line 3 of .*{file}: the feature index of 'x:0.5' is not an integer",
    ),
    (
        "bad.txt",
        _UNPARSABLE.format("1 qid:1 1:0.5 junk"),
        {},
        "line 3 of .*{file}: cannot read 'junk' as '<index>:<value>'",
    ),
    (
        "bad.txt",
        _UNPARSABLE.format("1 qid:1 3:0.5 2:1"),
        {},
        "line 3 of .*{file}: feature indices must increase along a line; 2 follows 3",
    ),
    (
        "bad.txt",
        _UNPARSABLE.format("1 qid:1 2:0.5 2:1"),
        {},
        "line 3 of .*{file}: feature indices must increase along a line; 2 follows 2",
    ),
    (
        "bad.txt",
        _UNPARSABLE.format("1 qid:1 1:0.5 qid:2"),
        {},
        "line 3 of .*{file}: 'qid:2' must come right after the label",
    ),
    ("bad.txt", _UNPARSABLE.format("1 qid:x 1:0.5"), {}, "line 3 of .*{file}: cannot read 'qid:x' as 'qid:<integer>'"),
    ("bad.txt", _UNPARSABLE.format("1 qid:1 -1:0.5"), {}, "line 3 of .*{file}: feature index -1 is negative"),
    (
        "train.txt",
        "0 qid:1 1:0.5\n# comment\n1 1:0.5 2:1\n",
        {},
        "line 3 of .*{file}: expected 'qid:<integer>' after the label, found '1:0.5'; every row must name its query",
    ),
    (
        "train.txt",
        "0 qid:42 1:1\n1 qid:42 1:0\n0 qid:43 1:1\n\n1 qid:42 1:0.5\n",
        {},
        "line 5 of .*{file}: qid 42 reappears after qid 43; a query's rows must be contiguous",
    ),
    (
        "train.txt",
        "0 qid:1 1:1\n1 qid:1 0:0.0 2:1\n",
        {"n_features": 5},
        "line 2 of .*{file}: feature index 0 is out of range; feature indices are 1-based",
    ),
    (
        "train.txt",
        "0 qid:1 1:1 5:1\n1 qid:1 2:1 6:0.5\n",
        {"n_features": 5},
        r"line 2 of .*{file}: feature index 6 is out of range; expected 1\.\.5",
    ),
    *[
        (
            "train.txt",
            f"0 qid:1 1:1\n1 qid:1 1:0.5 2:{value}\n",
            {},
            f"line 2 of .*{{file}}: feature 2 has the value {shown}; feature values must be finite",
        )
        for value, shown in [("nan", "nan"), ("inf", "inf"), ("-inf", "-inf"), ("1e400", "inf")]
    ],
    (
        "train.txt",
        "0 qid:1 1:1\n2 qid:1 1:0\n3 qid:2 1:0.5\n",
        {"label_range": (0, 2)},
        r"line 3 of .*{file}: label 3 is outside the allowed range 0\.\.2",
    ),
    (
        "negative.txt",
        "-1 qid:1 1:1\n",
        {"label_range": (0, 4)},
        r"line 1 of .*{file}: label -1 is outside the allowed range 0\.\.4",
    ),
    *[
        ("train.txt", f"0 qid:1 1:1\n{label} qid:1 1:0\n", {}, f"line 2 of .*{{file}}: label {label} is not an integer")
        for label in ["1.5", "nan"]
    ],
    *[
        ("vali.txt", text, {}, "{file}: no data rows .*an empty split")
        for text in ["", "\n\n", "# only a comment\n   \n"]
    ],
    (
        "train.txt",
        "0 qid:1 1:1\n5 qid:1 1:1\n1 qid:1 1:nan\n0 qid:2 1:0\n1 qid:1 1:0\n",
        {"label_range": (0, 2)},
        "line 2 of .*: label 5 is outside",
    ),
    (
        "train.txt",
        "0 qid:1 1:1\n1 qid:1 1:nan\n5 qid:1 1:1\n",
        {"label_range": (0, 2)},
        "line 2 of .*: feature 1 has the value nan",
    ),
    ("train.txt.xz", b"this is not xz data", {}, "{file}: cannot decompress it as xz"),
]


@pytest.mark.parametrize("block_size", [1, 1 << 20])
@pytest.mark.parametrize(
    "name, text, options, message", MALFORMED, ids=[f"{i}-{case[3][:40]}" for i, case in enumerate(MALFORMED)]
)
def test_malformed_input_is_reported_as_before(tmp_path, name, text, options, message, block_size):
    assert len(MALFORMED) == 27
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        write(path, text)
    with pytest.raises(ValueError, match=message.format(file=re.escape(name))):
        load_svmlight_split(path, block_size=block_size, **options)
    assert not any(thread.name == "svmlight-reader" for thread in threading.enumerate())  # none left behind


def _shift_lines(message: str, shift: int) -> str:
    return re.sub(r"line (\d+)", lambda m: f"line {int(m.group(1)) + shift}", message)


@pytest.mark.parametrize("suffix", ["", ".gz"])
@pytest.mark.parametrize(
    "name, text, options, message", [case for case in MALFORMED if isinstance(case[1], str) and "qid" in case[1]]
)
def test_malformed_line_far_into_the_file_names_its_line(tmp_path, name, text, options, message, suffix):
    # 300 good lines first (bulk-parsed, many blocks): the bad one is found in a later block
    prefix = "".join(f"0 qid:{100000 + q // 3} 1:0.5 3:1 #docid = D{q}\n" for q in range(300))
    path = write(tmp_path / (name + suffix), prefix + text)
    expected = _shift_lines(message, 300).format(file=re.escape(name + suffix))
    with pytest.raises(ValueError, match=expected):
        load_svmlight_split(path, block_size=4096, **options)


def test_a_line_that_does_not_parse_is_reported_before_other_problems(tmp_path):
    # as before: a line the grammar rejects wins over an earlier out-of-range label ...
    text = "0 qid:1 1:1\n7 qid:1 1:1\n" + "0 qid:2 1:1\n" * 50 + "1 qid:2 1:zz\n"
    for block_size in [8, 1 << 20]:
        with pytest.raises(ValueError, match=r"line 53 of .*: the feature value of '1:zz' is not a number"):
            load_svmlight_split(write(tmp_path / "a.txt", text), label_range=(0, 2), block_size=block_size)
    # ... and a file that does not decompress wins over a line that does not parse
    good = gzip.compress(("1 qid:1 1:zz\n" + "0 qid:1 1:1\n" * 2000).encode())
    (tmp_path / "cut.txt.gz").write_bytes(good[: len(good) // 2])
    with pytest.raises(ValueError, match="cut.txt.gz: cannot decompress it as gz"):
        load_svmlight_split(tmp_path / "cut.txt.gz", block_size=64)


def test_an_index_too_large_for_the_old_reader_is_rejected_with_its_line(tmp_path):
    path = write(tmp_path / "huge.txt", "0 qid:1 1:1\n\n1 qid:1 99999999999:1\n")
    with pytest.raises(ValueError, match="line 3 of .*huge.txt: a feature index is too large"):
        load_svmlight_split(path)


# -- document ids ---------------------------------------------------------------------------

LETOR_LINES = (
    "# header\n"
    "2 qid:7 1:0.5 2:1 #docid = GX000-00-0000001 inc = 1 prob = 0.5\n"
    "0 qid:7 1:0 2:0.5 #docid=GX000-00-0000002 inc = 1\n"
    "1 qid:3 1:1 # no id here\n"
    "0 qid:3 2:1\n"
)


def test_docids_are_captured_and_none_where_absent(tmp_path):
    for block_size in TINY_BLOCKS:
        queries, _ = load_svmlight_split(write(tmp_path / "d.txt", LETOR_LINES), block_size=block_size)
        assert queries.docid.dtype == object
        assert queries.docid.tolist() == ["GX000-00-0000001", "GX000-00-0000002", None, None]
    plain, _ = load_svmlight_split(write(tmp_path / "p.txt", "1 qid:1 1:1 # c\n0 qid:1 1:2\n"))
    assert plain.docid is None


def test_docids_follow_subset_and_concatenate(tmp_path):
    queries, _ = load_svmlight_split(write(tmp_path / "d.txt", LETOR_LINES))
    assert queries.subset(np.array([1])).docid.tolist() == [None, None]
    assert queries.subset(np.array([1, 0])).docid.tolist() == [None, None, "GX000-00-0000001", "GX000-00-0000002"]
    other, _ = load_svmlight_split(write(tmp_path / "o.txt", "1 qid:50 1:1 2:0\n"))
    both = concatenate_queries([other, queries])
    assert both.docid.tolist() == [None, "GX000-00-0000001", "GX000-00-0000002", None, None]
    plain = Queries(X=other.X, labels=other.labels, qid=np.array([60]), offsets=other.offsets)
    assert other.docid is None and concatenate_queries([other, plain]).docid is None


def _dataset(train: Queries, vali: Queries, test: Queries) -> Dataset:
    return Dataset(name="d", train=train, vali=vali, test=test, relevant_from=1, meta={"k": 1})


def test_docids_round_trip_through_the_prepared_file(tmp_path):
    with_ids, _ = load_svmlight_split(write(tmp_path / "d.txt", LETOR_LINES))
    all_ids, _ = load_svmlight_split(write(tmp_path / "a.txt", "1 qid:20 1:1 #docid = A\n0 qid:20 2:1 #docid = B\n"))
    without, _ = load_svmlight_split(write(tmp_path / "n.txt", "1 qid:30 1:1\n0 qid:30 2:1\n"))
    dataset = _dataset(with_ids, all_ids, without)
    path = save_dataset(dataset, tmp_path / "prepared.npz")
    loaded = load_dataset(path)
    assert loaded.train.docid.tolist() == with_ids.docid.tolist()
    assert loaded.vali.docid.tolist() == ["A", "B"] and loaded.vali.docid.dtype == object
    assert loaded.test.docid is None
    names = np.load(path).files
    assert "test/docid" not in names and "vali/docid_missing" not in names and "train/docid_missing" in names
    assert not any(np.load(path)[key].dtype == object for key in names)  # readable without pickle


def test_files_without_docids_still_load(tmp_path):
    queries, _ = load_svmlight_split(write(tmp_path / "n.txt", "1 qid:30 1:1\n0 qid:30 2:1\n"))
    old = Queries(X=queries.X, labels=queries.labels, qid=queries.qid, offsets=queries.offsets)
    path = save_dataset(_dataset(old, old, old), tmp_path / "old.npz")
    assert all(split.docid is None for split in load_dataset(path).splits().values())


def test_letor_and_yahoo_loaders_keep_docids(tmp_path):
    rng = np.random.default_rng(0)
    for i, split in enumerate(("train", "vali", "test")):
        lines = [
            f"{rng.integers(0, 3)} qid:{100 + 10 * i + q} "
            + " ".join(f"{j}:0.5" for j in range(1, 47))
            + f" #docid = GX{i}{q}-{d} inc = 1 prob = 0.5"
            for q in range(2)
            for d in range(3)
        ]
        write(tmp_path / "MQ2008" / "Fold1" / f"{split}.txt.xz", "\n".join(lines) + "\n")
    dataset = load_letor(tmp_path / "MQ2008")
    assert dataset.train.docid.tolist() == [f"GX0{q}-{d}" for q in range(2) for d in range(3)]
    assert dataset.test.docid[0] == "GX20-0"
    write(tmp_path / "yahoo" / "set1.train.txt", "1 qid:1 3:1 #docid = Y1\n0 qid:1 700:1 #docid = Y2\n")
    write(tmp_path / "yahoo" / "set1.valid.txt", "1 qid:2 3:1\n")
    write(tmp_path / "yahoo" / "set1.test.txt.bz2", "4 qid:3 1:1 #docid = Y3\n")
    yahoo = load_yahoo(tmp_path / "yahoo", dtype=np.float32)
    assert yahoo.train.docid.tolist() == ["Y1", "Y2"] and yahoo.vali.docid is None
    assert yahoo.test.docid.tolist() == ["Y3"] and yahoo.train.X.dtype == np.float32


# -- three files: load_svmlight_dataset and `cltr prepare svmlight` ---------------------------


def _three_files(root: Path, widths=(5, 5, 5), qids=(1, 10, 20)) -> list[Path]:
    paths = []
    for split, width, qid in zip(("train", "vali", "test"), widths, qids, strict=True):
        text = "".join(
            f"{label} qid:{qid + q} 1:0.5 {width}:1 #docid = {split}-{q}-{label}\n"
            for q in range(2)
            for label in (0, 2, 1)
        )
        paths.append(write(root / f"{split}.txt.gz", text))
    return paths


def test_load_svmlight_dataset(tmp_path):
    train, vali, test = _three_files(tmp_path)
    dataset = load_svmlight_dataset(train, vali, test, relevant_from=2, dtype=np.float32)
    assert dataset.name == "svmlight" and dataset.relevant_from == 2
    assert {q.n_features for q in dataset.splits().values()} == {5}
    assert dataset.train.X.dtype == np.float32 and dataset.meta["dtype"] == "float32"
    assert dataset.vali.docid[1] == "vali-0-2"
    assert dataset.meta["files"]["test"][0]["path"] == str(test)
    narrow = _three_files(tmp_path / "narrow", widths=(5, 4, 5))
    with pytest.raises(
        ValueError,
        match="feature widths differ between splits: .*train.txt.gz has 5, "
        ".*vali.txt.gz has 4, .*test.txt.gz has 5 features",
    ):
        load_svmlight_dataset(*narrow)
    assert load_svmlight_dataset(*narrow, n_features=6).vali.n_features == 6
    shared = _three_files(tmp_path / "shared", qids=(1, 10, 11))
    with pytest.raises(ValueError, match=r"qid 11 is in both vali \(.*\) and test"):
        load_svmlight_dataset(*shared)
    with pytest.raises(ValueError, match="no training document has a label >= relevant_from = 3"):
        load_svmlight_dataset(train, vali, test, relevant_from=3)


def _cli(workdir: Path, *args):
    from cltr.cli import main

    return CliRunner().invoke(main, ["--workdir", str(workdir), "prepare", "svmlight", *map(str, args)])


def test_cli_prepare_svmlight(tmp_path):
    train, vali, test = _three_files(tmp_path / "files")
    result = _cli(
        tmp_path / "work",
        "--train",
        train,
        "--vali",
        vali,
        "--test",
        test,
        "--relevant-from",
        2,
        "--dtype",
        "float32",
        "--name",
        "mine",
    )
    assert result.exit_code == 0, result.output
    assert "prepared 'mine'" in result.output
    dataset = load_dataset(tmp_path / "work" / "datasets" / "mine.npz")
    assert dataset.name == "mine" and dataset.relevant_from == 2 and dataset.train.X.dtype == np.float32
    assert dataset.test.docid.tolist()[:2] == ["test-0-0", "test-0-2"]
    assert [q.n_queries for q in dataset.splits().values()] == [2, 2, 2]


def test_cli_prepare_svmlight_rejects_mismatched_widths(tmp_path):
    train, vali, test = _three_files(tmp_path / "files", widths=(5, 7, 5))
    result = _cli(tmp_path / "work", "--train", train, "--vali", vali, "--test", test)
    assert result.exit_code != 0
    assert "Error: feature widths differ between splits" in result.output
    assert "vali.txt.gz has 7" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "work" / "datasets" / "svmlight.npz").exists()
    fixed = _cli(tmp_path / "work", "--train", train, "--vali", vali, "--test", test, "--features", 7)
    assert fixed.exit_code == 0, fixed.output
    bad = write(tmp_path / "files" / "bad.txt", "0 qid:99 1:x\n")
    result = _cli(tmp_path / "work", "--train", train, "--vali", vali, "--test", bad)
    assert result.exit_code != 0 and "line 1 of" in result.output and "bad.txt" in result.output
