"""Reading one SVMlight/LETOR file (``cltr.data.svmlight``): round trips, compression, and
every bad input located by file and line."""

import hashlib
import re

import numpy as np
import pytest

from cltr.core.queries import check_queries
from cltr.data.svmlight import load_svmlight_split

SMALL = (
    "# a header comment\n"
    "2 qid:7 1:0.5 2:1 3:0 4:0.25 5:1 #docid = GX000-00-0000001 inc = 1 prob = 0.5\n"
    "0 qid:7 1:0 2:0.5 3:1 4:1 5:0 #docid = GX000-00-0000002 inc = 1 prob = 0.1\n"
    "\n"
    "1 qid:3 1:1 3:0.75 5:0.5\n"
    "0 qid:3 2:1\n"
    "0 qid:3 1:0.125 4:1\n"
)
SMALL_X = np.array(
    [
        [0.5, 1, 0, 0.25, 1],
        [0, 0.5, 1, 1, 0],
        [1, 0, 0.75, 0, 0.5],
        [0, 1, 0, 0, 0],
        [0.125, 0, 0, 1, 0],
    ]
)


# -- one file: round trips ---------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["", ".gz", ".bz2", ".xz"])
def test_round_trip_plain_and_compressed(tmp_path, suffix, write_file):
    path = write_file(tmp_path / f"train.txt{suffix}", SMALL)
    queries, provenance = load_svmlight_split(path, n_features=5, label_range=(0, 2))
    np.testing.assert_array_equal(queries.X, SMALL_X)
    assert queries.X.dtype == np.float64 and queries.X.flags.c_contiguous
    assert queries.labels.tolist() == [2, 0, 1, 0, 0] and queries.labels.dtype == np.int64
    assert queries.qid.tolist() == [7, 3]
    assert queries.offsets.tolist() == [0, 2, 5]
    assert provenance["sha256"] == hashlib.sha256(SMALL.encode()).hexdigest()
    assert provenance["compression"] == (suffix[1:] or None)
    assert provenance["n_lines"] == 7 and provenance["n_rows"] == 5 and provenance["n_queries"] == 2
    assert provenance["label_counts"] == {"0": 3, "1": 1, "2": 1}
    assert provenance["path"] == str(path)
    check_queries(queries)


def test_width_defaults_to_largest_index_and_can_be_padded(tmp_path, write_file):
    path = write_file(tmp_path / "sparse.txt", "1 qid:1 2:3\n0 qid:1 4:1\n")
    queries, provenance = load_svmlight_split(path)
    assert queries.X.shape == (2, 4) and provenance["max_feature_index"] == 4
    padded, provenance = load_svmlight_split(path, n_features=10, dtype=np.float32)
    assert padded.X.shape == (2, 10) and padded.X.dtype == np.float32
    assert provenance["n_features"] == 10 and provenance["max_feature_index"] == 4
    np.testing.assert_array_equal(padded.X[:, :4], queries.X)


def test_crlf_line_endings_and_tabs_read_like_lf(tmp_path, write_file):
    lf, _ = load_svmlight_split(write_file(tmp_path / "lf.txt", SMALL), n_features=5)
    crlf, _ = load_svmlight_split(
        write_file(tmp_path / "crlf.txt", SMALL.replace("\n", "\r\n").replace(" 1:", "\t1:")), n_features=5
    )
    np.testing.assert_array_equal(lf.X, crlf.X)
    np.testing.assert_array_equal(lf.offsets, crlf.offsets)


# -- one file: every bad input names the file and the line --------------------------------


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere.txt"):
        load_svmlight_split(tmp_path / "nowhere.txt")


@pytest.mark.parametrize(
    "line, message",
    [
        ("abc qid:1 1:0.5", "line 3 of .*bad.txt: the label 'abc' is not a number"),
        ("1 qid:1 1:abc", r"line 3 of .*bad.txt: the feature value of '1:abc' is not a number"),
        ("1 qid:1 x:0.5", r"line 3 of .*bad.txt: the feature index of 'x:0.5' is not an integer"),
        ("1 qid:1 1:0.5 junk", "line 3 of .*bad.txt: cannot read 'junk' as '<index>:<value>'"),
        ("1 qid:1 3:0.5 2:1", "line 3 of .*bad.txt: feature indices must increase along a line; 2 follows 3"),
        ("1 qid:1 2:0.5 2:1", "line 3 of .*bad.txt: feature indices must increase along a line; 2 follows 2"),
        ("1 qid:1 1:0.5 qid:2", "line 3 of .*bad.txt: 'qid:2' must come right after the label"),
        ("1 qid:x 1:0.5", "line 3 of .*bad.txt: cannot read 'qid:x' as 'qid:<integer>'"),
        ("1 qid:1 -1:0.5", "line 3 of .*bad.txt: feature index -1 is negative"),
    ],
)
def test_unparsable_line_is_located(tmp_path, line, message, write_file):
    text = "0 qid:1 1:0.5 2:1\n\n" + line + "\n0 qid:1 1:1\n"
    with pytest.raises(ValueError, match=message):
        load_svmlight_split(write_file(tmp_path / "bad.txt", text))


def test_missing_qid(tmp_path, write_file):
    text = "0 qid:1 1:0.5\n# comment\n1 1:0.5 2:1\n"
    with pytest.raises(
        ValueError,
        match="line 3 of .*train.txt: expected 'qid:<integer>' after the "
        "label, found '1:0.5'; every row must name its query",
    ):
        load_svmlight_split(write_file(tmp_path / "train.txt", text))


def test_qid_that_reappears(tmp_path, write_file):
    text = "0 qid:42 1:1\n1 qid:42 1:0\n0 qid:43 1:1\n\n1 qid:42 1:0.5\n"
    with pytest.raises(
        ValueError, match="line 5 of .*train.txt: qid 42 reappears after qid 43; a query's rows must be contiguous"
    ):
        load_svmlight_split(write_file(tmp_path / "train.txt", text))


def test_feature_index_zero_in_one_based_file(tmp_path, write_file):
    text = "0 qid:1 1:1\n1 qid:1 0:0.0 2:1\n"
    with pytest.raises(
        ValueError, match="line 2 of .*train.txt: feature index 0 is out of range; feature indices are 1-based"
    ):
        load_svmlight_split(write_file(tmp_path / "train.txt", text), n_features=5)


def test_feature_index_above_n_features(tmp_path, write_file):
    text = "0 qid:1 1:1 5:1\n1 qid:1 2:1 6:0.5\n"
    with pytest.raises(
        ValueError,
        match="line 2 of .*train.txt: feature index 6 is out of range; "
        r"expected 1\.\.5",
    ):
        load_svmlight_split(write_file(tmp_path / "train.txt", text), n_features=5)
    assert load_svmlight_split(tmp_path / "train.txt")[0].n_features == 6


def _typo_file(tmp_path, write_file):
    """300 rows of 3 features; line 124 holds the typo ``100000000:1``."""
    rng = np.random.default_rng(0)
    lines = [
        f"{rng.integers(0, 3)} qid:{row // 10 + 1} 1:{rng.random():.3f} 2:{rng.random():.3f} 3:0.5"
        for row in range(300)
    ]
    lines[123] = "1 qid:13 1:0.1 100000000:1"
    return write_file(tmp_path / "train.txt", "\n".join(lines) + "\n")


def test_a_feature_index_whose_dense_X_cannot_fit_is_refused_with_its_line_and_size(tmp_path, write_file, monkeypatch):
    # the reader sized X by the largest index and asked for 1024 rows x 1e8 columns: 763 GiB
    import cltr.core.resources as resources

    monkeypatch.setattr(resources, "physical_memory", lambda: 8 << 30)
    path = _typo_file(tmp_path, write_file)
    with pytest.raises(
        ValueError,
        match=r"line 124 of .*train.txt: feature index 100000000 is out of range: it "
        r"makes X 100,000,000 columns wide, and a dense X of the file's 300 rows "
        r"\(estimated\) at that width would need about 224 GiB, more than this "
        r"machine's 8 GiB of memory",
    ):
        load_svmlight_split(path)
    # with the width given, the same index is out of range, as cltr score reports it
    with pytest.raises(
        ValueError,
        match=r"line 124 of .*train.txt: feature index 100000000 is out of range; "
        r"expected 1\.\.3",
    ):
        load_svmlight_split(path, n_features=3)


def test_prepare_svmlight_refuses_the_typo_before_allocating(tmp_path, write_file, invoke, monkeypatch):
    import cltr.core.resources as resources

    monkeypatch.setattr(resources, "physical_memory", lambda: 8 << 30)
    path = _typo_file(tmp_path / "data", write_file)
    out = invoke(
        "prepare", "svmlight", "--train", path, "--vali", path, "--test", path, workdir=tmp_path / "work", expect=1
    ).output
    assert "line 124 of" in out and "feature index 100000000" in out and "224 GiB" in out
    assert "Traceback" not in out and "MemoryError" not in out


@pytest.mark.parametrize("value, shown", [("nan", "nan"), ("inf", "inf"), ("-inf", "-inf"), ("1e400", "inf")])
def test_non_finite_value(tmp_path, value, shown, write_file):
    text = f"0 qid:1 1:1\n1 qid:1 1:0.5 2:{value}\n"
    with pytest.raises(
        ValueError, match=f"line 2 of .*train.txt: feature 2 has the value {shown}; feature values must be finite"
    ):
        load_svmlight_split(write_file(tmp_path / "train.txt", text))


def test_label_outside_range(tmp_path, write_file):
    text = "0 qid:1 1:1\n2 qid:1 1:0\n3 qid:2 1:0.5\n"
    path = write_file(tmp_path / "train.txt", text)
    with pytest.raises(ValueError, match=r"line 3 of .*train.txt: label 3 is outside the allowed range 0\.\.2"):
        load_svmlight_split(path, label_range=(0, 2))
    assert load_svmlight_split(path, label_range=(0, 4))[0].labels.tolist() == [0, 2, 3]
    negative = write_file(tmp_path / "negative.txt", "-1 qid:1 1:1\n")
    with pytest.raises(ValueError, match=r"line 1 of .*negative.txt: label -1 is outside the allowed range 0\.\.4"):
        load_svmlight_split(negative, label_range=(0, 4))


@pytest.mark.parametrize("label", ["1.5", "nan"])
def test_label_not_an_integer(tmp_path, label, write_file):
    text = f"0 qid:1 1:1\n{label} qid:1 1:0\n"
    with pytest.raises(ValueError, match=f"line 2 of .*train.txt: label {label} is not an integer"):
        load_svmlight_split(write_file(tmp_path / "train.txt", text))


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n   \n"])
def test_empty_split(tmp_path, text, write_file):
    with pytest.raises(ValueError, match="vali.txt: no data rows .*an empty split"):
        load_svmlight_split(write_file(tmp_path / "vali.txt", text))


def test_first_bad_line_is_reported_when_there_are_several(tmp_path, write_file):
    text = "0 qid:1 1:1\n5 qid:1 1:1\n1 qid:1 1:nan\n0 qid:2 1:0\n1 qid:1 1:0\n"
    with pytest.raises(ValueError, match="line 2 of .*: label 5 is outside"):
        load_svmlight_split(write_file(tmp_path / "train.txt", text), label_range=(0, 2))
    text = "0 qid:1 1:1\n1 qid:1 1:nan\n5 qid:1 1:1\n"
    with pytest.raises(ValueError, match="line 2 of .*: feature 1 has the value nan"):
        load_svmlight_split(write_file(tmp_path / "train.txt", text), label_range=(0, 2))


def test_corrupt_compressed_file(tmp_path):
    path = tmp_path / "train.txt.xz"
    path.write_bytes(b"this is not xz data")
    with pytest.raises(ValueError, match="train.txt.xz: cannot decompress it as xz"):
        load_svmlight_split(path)


# -- encodings ----------------------------------------------------------------------------


@pytest.mark.parametrize("block_size", [1, 2, 1 << 20])
def test_utf8_byte_order_mark_is_skipped(tmp_path, block_size):
    plain, marked = tmp_path / "plain.txt", tmp_path / "marked.txt"
    plain.write_bytes(SMALL.encode())
    marked.write_bytes(b"\xef\xbb\xbf" + SMALL.encode())
    expected, _ = load_svmlight_split(plain)
    found, _ = load_svmlight_split(marked, block_size=block_size)
    np.testing.assert_array_equal(found.X, expected.X)
    assert found.labels.tolist() == expected.labels.tolist() and found.qid.tolist() == expected.qid.tolist()


@pytest.mark.parametrize(
    "encoding, named",
    [("utf-16", "UTF-16 (little-endian)"), ("utf-16-be", "UTF-16 or UTF-32"), ("utf-32", "UTF-32 (little-endian)")],
)
def test_wide_encodings_are_named(tmp_path, encoding, named):
    path = tmp_path / "wide.txt"
    path.write_bytes(SMALL.encode(encoding))
    with pytest.raises(ValueError, match=rf"wide.txt: .*{re.escape(named)}.*iconv"):
        load_svmlight_split(path)
