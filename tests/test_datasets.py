"""Loading SVMlight/LETOR/Yahoo files with their checks, the synthetic generator, persistence."""

import bz2
import gzip
import hashlib
import json
import lzma
import time
from pathlib import Path

import numpy as np
import pytest

from cltr.datasets import (Dataset, Queries, check_queries, concatenate_queries, describe_split,
                           load_dataset, load_letor, load_svmlight_split, load_yahoo, make_synthetic,
                           save_dataset)

LETOR4 = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "letor4"
MQ2008 = LETOR4 / "MQ2008"

WRITERS = {"": open, ".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with WRITERS[path.suffix if path.suffix in WRITERS else ""](path, "wb") as stream:
        stream.write(text.encode())
    return path


SMALL = (
    "# a header comment\n"
    "2 qid:7 1:0.5 2:1 3:0 4:0.25 5:1 #docid = GX000-00-0000001 inc = 1 prob = 0.5\n"
    "0 qid:7 1:0 2:0.5 3:1 4:1 5:0 #docid = GX000-00-0000002 inc = 1 prob = 0.1\n"
    "\n"
    "1 qid:3 1:1 3:0.75 5:0.5\n"
    "0 qid:3 2:1\n"
    "0 qid:3 1:0.125 4:1\n"
)
SMALL_X = np.array([
    [0.5, 1, 0, 0.25, 1],
    [0, 0.5, 1, 1, 0],
    [1, 0, 0.75, 0, 0.5],
    [0, 1, 0, 0, 0],
    [0.125, 0, 0, 1, 0],
])


# -- one file: round trips ---------------------------------------------------------------

@pytest.mark.parametrize("suffix", ["", ".gz", ".bz2", ".xz"])
def test_round_trip_plain_and_compressed(tmp_path, suffix):
    path = write(tmp_path / f"train.txt{suffix}", SMALL)
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


def test_width_defaults_to_largest_index_and_can_be_padded(tmp_path):
    path = write(tmp_path / "sparse.txt", "1 qid:1 2:3\n0 qid:1 4:1\n")
    queries, provenance = load_svmlight_split(path)
    assert queries.X.shape == (2, 4) and provenance["max_feature_index"] == 4
    padded, provenance = load_svmlight_split(path, n_features=10, dtype=np.float32)
    assert padded.X.shape == (2, 10) and padded.X.dtype == np.float32
    assert provenance["n_features"] == 10 and provenance["max_feature_index"] == 4
    np.testing.assert_array_equal(padded.X[:, :4], queries.X)


def test_crlf_line_endings_and_tabs_read_like_lf(tmp_path):
    lf, _ = load_svmlight_split(write(tmp_path / "lf.txt", SMALL), n_features=5)
    crlf, _ = load_svmlight_split(write(tmp_path / "crlf.txt", SMALL.replace("\n", "\r\n").replace(" 1:", "\t1:")),
                                  n_features=5)
    np.testing.assert_array_equal(lf.X, crlf.X)
    np.testing.assert_array_equal(lf.offsets, crlf.offsets)


# -- one file: every bad input names the file and the line --------------------------------

def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere.txt"):
        load_svmlight_split(tmp_path / "nowhere.txt")


@pytest.mark.parametrize("line, message", [
    ("abc qid:1 1:0.5", "line 3 of .*bad.txt: the label 'abc' is not a number"),
    ("1 qid:1 1:abc", r"line 3 of .*bad.txt: the feature value of '1:abc' is not a number"),
    ("1 qid:1 x:0.5", r"line 3 of .*bad.txt: the feature index of 'x:0.5' is not an integer"),
    ("1 qid:1 1:0.5 junk", "line 3 of .*bad.txt: cannot read 'junk' as '<index>:<value>'"),
    ("1 qid:1 3:0.5 2:1", "line 3 of .*bad.txt: feature indices must increase along a line; 2 follows 3"),
    ("1 qid:1 2:0.5 2:1", "line 3 of .*bad.txt: feature indices must increase along a line; 2 follows 2"),
    ("1 qid:1 1:0.5 qid:2", "line 3 of .*bad.txt: 'qid:2' must come right after the label"),
    ("1 qid:x 1:0.5", "line 3 of .*bad.txt: cannot read 'qid:x' as 'qid:<integer>'"),
    ("1 qid:1 -1:0.5", "line 3 of .*bad.txt: feature index -1 is negative"),
])
def test_unparsable_line_is_located(tmp_path, line, message):
    text = "0 qid:1 1:0.5 2:1\n\n" + line + "\n0 qid:1 1:1\n"
    with pytest.raises(ValueError, match=message):
        load_svmlight_split(write(tmp_path / "bad.txt", text))


def test_missing_qid(tmp_path):
    text = "0 qid:1 1:0.5\n# comment\n1 1:0.5 2:1\n"
    with pytest.raises(ValueError, match="line 3 of .*train.txt: expected 'qid:<integer>' after the "
                                         "label, found '1:0.5'; every row must name its query"):
        load_svmlight_split(write(tmp_path / "train.txt", text))


def test_qid_that_reappears(tmp_path):
    text = "0 qid:42 1:1\n1 qid:42 1:0\n0 qid:43 1:1\n\n1 qid:42 1:0.5\n"
    with pytest.raises(ValueError, match="line 5 of .*train.txt: qid 42 reappears after qid 43; "
                                         "a query's rows must be contiguous"):
        load_svmlight_split(write(tmp_path / "train.txt", text))


def test_feature_index_zero_in_one_based_file(tmp_path):
    text = "0 qid:1 1:1\n1 qid:1 0:0.0 2:1\n"
    with pytest.raises(ValueError, match="line 2 of .*train.txt: feature index 0 is out of range; "
                                         "feature indices are 1-based"):
        load_svmlight_split(write(tmp_path / "train.txt", text), n_features=5)


def test_feature_index_above_n_features(tmp_path):
    text = "0 qid:1 1:1 5:1\n1 qid:1 2:1 6:0.5\n"
    with pytest.raises(ValueError, match="line 2 of .*train.txt: feature index 6 is out of range; "
                                         r"expected 1\.\.5"):
        load_svmlight_split(write(tmp_path / "train.txt", text), n_features=5)
    assert load_svmlight_split(tmp_path / "train.txt")[0].n_features == 6


@pytest.mark.parametrize("value, shown", [("nan", "nan"), ("inf", "inf"), ("-inf", "-inf"), ("1e400", "inf")])
def test_non_finite_value(tmp_path, value, shown):
    text = f"0 qid:1 1:1\n1 qid:1 1:0.5 2:{value}\n"
    with pytest.raises(ValueError, match=f"line 2 of .*train.txt: feature 2 has the value {shown}; "
                                         "feature values must be finite"):
        load_svmlight_split(write(tmp_path / "train.txt", text))


def test_label_outside_range(tmp_path):
    text = "0 qid:1 1:1\n2 qid:1 1:0\n3 qid:2 1:0.5\n"
    path = write(tmp_path / "train.txt", text)
    with pytest.raises(ValueError, match=r"line 3 of .*train.txt: label 3 is outside the allowed range 0\.\.2"):
        load_svmlight_split(path, label_range=(0, 2))
    assert load_svmlight_split(path, label_range=(0, 4))[0].labels.tolist() == [0, 2, 3]
    negative = write(tmp_path / "negative.txt", "-1 qid:1 1:1\n")
    with pytest.raises(ValueError, match=r"line 1 of .*negative.txt: label -1 is outside the allowed range 0\.\.4"):
        load_svmlight_split(negative, label_range=(0, 4))


@pytest.mark.parametrize("label", ["1.5", "nan"])
def test_label_not_an_integer(tmp_path, label):
    text = f"0 qid:1 1:1\n{label} qid:1 1:0\n"
    with pytest.raises(ValueError, match=f"line 2 of .*train.txt: label {label} is not an integer"):
        load_svmlight_split(write(tmp_path / "train.txt", text))


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n   \n"])
def test_empty_split(tmp_path, text):
    with pytest.raises(ValueError, match="vali.txt: no data rows .*an empty split"):
        load_svmlight_split(write(tmp_path / "vali.txt", text))


def test_first_bad_line_is_reported_when_there_are_several(tmp_path):
    text = "0 qid:1 1:1\n5 qid:1 1:1\n1 qid:1 1:nan\n0 qid:2 1:0\n1 qid:1 1:0\n"
    with pytest.raises(ValueError, match="line 2 of .*: label 5 is outside"):
        load_svmlight_split(write(tmp_path / "train.txt", text), label_range=(0, 2))
    text = "0 qid:1 1:1\n1 qid:1 1:nan\n5 qid:1 1:1\n"
    with pytest.raises(ValueError, match="line 2 of .*: feature 1 has the value nan"):
        load_svmlight_split(write(tmp_path / "train.txt", text), label_range=(0, 2))


def test_corrupt_compressed_file(tmp_path):
    path = tmp_path / "train.txt.xz"
    path.write_bytes(b"this is not xz data")
    with pytest.raises(ValueError, match="train.txt.xz: cannot decompress it as xz"):
        load_svmlight_split(path)


# -- LETOR 4.0 -----------------------------------------------------------------------------

def letor_text(rng, qids, n_features=46, docs=4):
    lines = []
    for q in qids:
        for d in range(docs):
            values = " ".join(f"{j}:{v:.6f}" for j, v in enumerate(rng.random(n_features), start=1))
            lines.append(f"{rng.integers(0, 3)} qid:{q} {values} #docid = GX{q:03d}-{d:02d} inc = 1 prob = 0.5")
    return "\n".join(lines) + "\n"


def make_letor_tree(root: Path, *, fold=1, suffix="", qid_start=10000, widths=None, seed=0):
    rng = np.random.default_rng(seed)
    widths = widths or {}
    for i, split in enumerate(("train", "vali", "test")):
        qids = range(qid_start + 10 * i, qid_start + 10 * i + (3 if split == "train" else 2))
        write(root / f"Fold{fold}" / f"{split}.txt{suffix}", letor_text(rng, qids, widths.get(split, 46)))
    return root


def test_letor_mq2008_alone_and_with_mq2007(tmp_path):
    mq2008 = make_letor_tree(tmp_path / "MQ2008", suffix=".xz", qid_start=10000)
    mq2007 = make_letor_tree(tmp_path / "MQ2007", suffix=".gz", qid_start=1000, seed=1)
    alone = load_letor(mq2008)
    assert alone.name == "letor" and alone.relevant_from == 1
    assert [q.n_queries for q in alone.splits().values()] == [3, 2, 2]
    assert alone.meta["mq2007"] is False and "MQ2007 was not given" in alone.meta["notes"][0]
    assert alone.meta["fold"] == 1 and alone.meta["default_passes"] == 100
    assert alone.meta["files"]["train"][0]["path"].endswith("train.txt.xz")
    json.dumps(alone.meta)

    both = load_letor(mq2008, mq2007_dir=mq2007, relevant_from=2)
    assert both.meta["mq2007"] is True and both.meta["notes"] == [] and both.relevant_from == 2
    mq2007_train, _ = load_svmlight_split(mq2007 / "Fold1" / "train.txt.gz")
    assert both.train.qid.tolist() == mq2007_train.qid.tolist() + alone.train.qid.tolist()
    np.testing.assert_array_equal(both.train.X, np.concatenate([mq2007_train.X, alone.train.X]))
    assert both.train.offsets.tolist() == [0, 4, 8, 12, 16, 20, 24]
    np.testing.assert_array_equal(both.test.X, alone.test.X)
    counts = both.meta["label_counts"]["train"]
    assert sum(counts.values()) == 24 and len(both.meta["files"]["train"]) == 2


def test_letor_other_fold_and_plain_files(tmp_path):
    root = make_letor_tree(tmp_path / "MQ2008", fold=3)
    assert load_letor(root, fold=3).meta["fold"] == 3
    with pytest.raises(FileNotFoundError, match="no Fold1 directory"):
        load_letor(root)
    with pytest.raises(ValueError, match="fold must be a positive integer"):
        load_letor(root, fold=0)
    with pytest.raises(ValueError, match=r"relevant_from must be an integer in 1\.\.2"):
        load_letor(root, fold=3, relevant_from=3)


def test_letor_missing_split_file(tmp_path):
    root = make_letor_tree(tmp_path / "MQ2008")
    (root / "Fold1" / "vali.txt").unlink()
    with pytest.raises(FileNotFoundError, match=r"no vali.txt \(nor vali.txt.gz, .bz2, .xz\) in .*Fold1"):
        load_letor(root)


def test_letor_qid_collision_between_mq2007_and_mq2008(tmp_path):
    mq2008 = make_letor_tree(tmp_path / "MQ2008", qid_start=500)
    mq2007 = make_letor_tree(tmp_path / "MQ2007", qid_start=500, seed=1)
    with pytest.raises(ValueError, match="qid 500 is in both MQ2007 train .* and MQ2008 train"):
        load_letor(mq2008, mq2007_dir=mq2007)


def test_letor_feature_widths_differ_between_splits(tmp_path):
    root = make_letor_tree(tmp_path / "MQ2008", widths={"vali": 45})
    with pytest.raises(ValueError, match="feature widths differ between splits: .*train.txt has 46, "
                                         ".*vali.txt has 45, .*test.txt has 46 features"):
        load_letor(root)


def test_letor_label_and_index_checks_apply(tmp_path):
    root = make_letor_tree(tmp_path / "MQ2008")
    path = root / "Fold1" / "test.txt"
    lines = path.read_text().splitlines()
    lines[0] = "0 qid:10020 " + " ".join(f"{j}:0.5" for j in range(1, 48))
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"line 1 of .*test.txt: feature index 47 is out of range; expected 1\.\.46"):
        load_letor(root)
    lines[0] = "3 qid:10020 " + " ".join(f"{j}:0.5" for j in range(1, 47))
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"line 1 of .*test.txt: label 3 is outside the allowed range 0\.\.2"):
        load_letor(root)


# -- Yahoo! LTR set 1 (licensed: tested on generated files of the same shape) ----------------

def yahoo_text(rng, qids):
    lines = []
    for q in qids:
        for _ in range(rng.integers(2, 6)):
            columns = np.sort(rng.choice(np.arange(1, 701), size=rng.integers(5, 40), replace=False))
            values = " ".join(f"{j}:{rng.random():.4f}" for j in columns)
            lines.append(f"{rng.integers(0, 5)} qid:{q} {values}")
    return "\n".join(lines) + "\n"


def test_yahoo_shape(tmp_path):
    rng = np.random.default_rng(0)
    write(tmp_path / "set1.train.txt.bz2", yahoo_text(rng, [1, 2, 3]))
    write(tmp_path / "set1.valid.txt", yahoo_text(rng, [4, 5]) + "4 qid:6 700:1\n")
    write(tmp_path / "set1.test.txt.gz", yahoo_text(rng, [7, 8]))
    dataset = load_yahoo(tmp_path)
    assert dataset.name == "yahoo" and dataset.relevant_from == 3
    assert {q.n_features for q in dataset.splits().values()} == {700}
    assert [q.n_queries for q in dataset.splits().values()] == [3, 3, 2]
    assert dataset.vali.X[-1, 699] == 1 and dataset.vali.labels[-1] == 4
    assert dataset.meta["default_passes"] == 10
    assert dataset.meta["files"]["vali"][0]["path"].endswith("set1.valid.txt")
    for queries in dataset.splits().values():
        check_queries(queries)
        assert set(np.unique(queries.labels)) <= {0, 1, 2, 3, 4}
    assert load_yahoo(tmp_path, dtype=np.float32).train.X.dtype == np.float32


def test_yahoo_checks(tmp_path):
    rng = np.random.default_rng(1)
    write(tmp_path / "set1.train.txt", yahoo_text(rng, [1, 2]))
    write(tmp_path / "set1.test.txt", yahoo_text(rng, [7]))
    with pytest.raises(FileNotFoundError, match="no set1.valid.txt"):
        load_yahoo(tmp_path)
    write(tmp_path / "set1.valid.txt", "1 qid:4 1:1 701:0.5\n")
    with pytest.raises(ValueError, match=r"line 1 of .*set1.valid.txt: feature index 701 is out of range; "
                                         r"expected 1\.\.700"):
        load_yahoo(tmp_path)
    write(tmp_path / "set1.valid.txt", "5 qid:4 1:1\n")
    with pytest.raises(ValueError, match=r"label 5 is outside the allowed range 0\.\.4"):
        load_yahoo(tmp_path)


# -- the synthetic default -----------------------------------------------------------------

def test_synthetic_is_deterministic_for_a_seed():
    a, b = make_synthetic(seed=3), make_synthetic(seed=3)
    c = make_synthetic(seed=4)
    for split in ("train", "vali", "test"):
        for name in ("X", "labels", "qid", "offsets"):
            np.testing.assert_array_equal(getattr(a.splits()[split], name), getattr(b.splits()[split], name))
    assert a.meta == b.meta
    assert not np.array_equal(a.train.labels[:50], c.train.labels[:50]) or a.train.n_docs != c.train.n_docs
    same = make_synthetic(seed=np.random.SeedSequence(3))
    np.testing.assert_array_equal(same.test.X, a.test.X)
    state = np.random.get_state()[1].copy()
    make_synthetic(n_queries=10)
    assert np.array_equal(np.random.get_state()[1], state)  # global random state untouched


def test_synthetic_default_is_letor_shaped():
    dataset = make_synthetic()
    assert dataset.name == "synthetic" and dataset.relevant_from == 1
    assert [q.n_queries for q in dataset.splits().values()] == [180, 60, 60]
    qids = np.concatenate([q.qid for q in dataset.splits().values()])
    assert sorted(qids.tolist()) == list(range(1, 301))
    sizes = np.concatenate([q.sizes for q in dataset.splits().values()])
    assert sizes.min() >= 5 and sizes.max() <= 120 and 15 <= sizes.mean() <= 24
    labels = np.concatenate([q.labels for q in dataset.splits().values()])
    assert set(np.unique(labels)) == {0, 1, 2}
    assert 0.17 <= np.mean(labels >= 1) <= 0.21  # LETOR MQ2008: 0.19
    assert 0.04 <= np.mean(labels == 2) <= 0.08  # LETOR MQ2008: 0.06
    without = sum(describe_split(q, 1)["queries_without_relevant"] for q in dataset.splits().values())
    assert 0.1 <= without / 300 <= 0.4  # LETOR MQ2008: about a quarter
    for queries in dataset.splits().values():
        check_queries(queries)
        assert queries.n_features == 46 and queries.X.dtype == np.float64
        assert queries.relevant(1).any()
    json.dumps(dataset.meta)


def test_synthetic_features_are_min_max_normalized_per_query():
    dataset = make_synthetic(n_queries=40, seed=2)
    for queries in dataset.splits().values():
        X, offsets = queries.X, queries.offsets
        assert X.min() >= 0 and X.max() <= 1
        low = np.minimum.reduceat(X, offsets[:-1], axis=0)
        high = np.maximum.reduceat(X, offsets[:-1], axis=0)
        constant = low == high
        assert np.all(low == 0)  # a constant column is all 0, a varying one starts at 0
        assert np.all(high[~constant] == 1)
        assert constant.any() and not constant.all()  # like LETOR, some columns are constant


def test_synthetic_tiny_and_options():
    tiny = make_synthetic(n_queries=3, n_features=4, docs=(2, 4), seed=1)
    assert [q.n_queries for q in tiny.splits().values()] == [1, 1, 1]
    for queries in tiny.splits().values():
        assert queries.n_features == 4 and 2 <= queries.sizes.min() and queries.sizes.max() <= 4
        assert queries.relevant(1).any()  # every split keeps a relevant document
    wide = make_synthetic(n_queries=20, n_features=1, fractions=(1, 1, 2), relevant_from=2)
    assert [q.n_queries for q in wide.splits().values()] == [5, 5, 10] and wide.relevant_from == 2
    assert all(q.relevant(2).any() for q in wide.splits().values())
    for bad, message in [({"n_queries": 2}, "n_queries"), ({"docs": (1, 5)}, "docs"),
                         ({"relevant_share": 1.0}, "relevant_share"), ({"nonlinearity": 2}, "nonlinearity"),
                         ({"fractions": (1, 0, 1)}, "fractions"), ({"relevant_from": 3}, "relevant_from")]:
        with pytest.raises(ValueError, match=message):
            make_synthetic(**bad)


def pair_accuracy(scores, queries):
    """Share of (relevant, irrelevant) pairs of a query ordered correctly (ties count half)."""
    right = total = 0.0
    relevant = queries.relevant(1)
    for start, stop in zip(queries.offsets[:-1], queries.offsets[1:]):
        s, r = scores[start:stop], relevant[start:stop]
        difference = s[r][:, None] - s[~r][None, :]
        right += np.sum(difference > 0) + 0.5 * np.sum(difference == 0)
        total += difference.size
    return right / total


def linear_fit_accuracy(dataset):
    design = np.column_stack([dataset.train.X, np.ones(dataset.train.n_docs)])
    w, *_ = np.linalg.lstsq(design, dataset.train.labels.astype(float), rcond=None)
    return pair_accuracy(dataset.test.X @ w[:-1], dataset.test)


def test_synthetic_relevance_is_learnable_and_partly_nonlinear():
    # A least-squares linear scorer learns much of the default dataset ...
    assert linear_fit_accuracy(make_synthetic(n_queries=600, seed=0)) > 0.75
    # ... and the non-linear part is real: without it (and without noise) a linear scorer does better.
    linear_world = make_synthetic(n_queries=600, seed=0, nonlinearity=0.0, noise=0.0)
    nonlinear_world = make_synthetic(n_queries=600, seed=0, nonlinearity=1.0, noise=0.0)
    assert linear_fit_accuracy(linear_world) > 0.95
    assert linear_fit_accuracy(nonlinear_world) < linear_fit_accuracy(linear_world) - 0.1


# -- prepared datasets ---------------------------------------------------------------------

def assert_same_dataset(a: Dataset, b: Dataset):
    assert a.name == b.name and a.relevant_from == b.relevant_from and a.meta == b.meta
    for split in ("train", "vali", "test"):
        for name in ("X", "labels", "qid", "offsets"):
            left, right = getattr(a.splits()[split], name), getattr(b.splits()[split], name)
            np.testing.assert_array_equal(left, right)
            assert left.dtype == right.dtype


def test_save_load_round_trip(tmp_path, monkeypatch):
    dataset = make_synthetic(n_queries=30, seed=5)
    path = save_dataset(dataset, tmp_path / "prepared" / "synthetic.npz")
    assert path == tmp_path / "prepared" / "synthetic.npz"
    assert sorted(p.name for p in path.parent.iterdir()) == ["synthetic.npz"]  # no temporary left
    assert_same_dataset(load_dataset(path), dataset)
    first = hashlib.sha256(path.read_bytes()).hexdigest()
    later = time.time() + 3 * 365 * 86400
    monkeypatch.setattr(time, "time", lambda: later)  # content hashes downstream need same bytes
    save_dataset(dataset, path)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == first


def test_save_load_round_trip_of_loaded_letor(tmp_path):
    dataset = load_letor(make_letor_tree(tmp_path / "MQ2008", suffix=".bz2"))
    path = save_dataset(dataset, tmp_path / "letor.npz")
    assert_same_dataset(load_dataset(path), dataset)


def test_load_dataset_rejects_what_is_not_one(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.npz"):
        load_dataset(tmp_path / "missing.npz")
    (tmp_path / "garbage.npz").write_bytes(b"not a zip file")
    with pytest.raises(ValueError, match="garbage.npz: not a prepared cltr dataset"):
        load_dataset(tmp_path / "garbage.npz")
    np.savez(tmp_path / "other.npz", X=np.zeros(3))
    with pytest.raises(ValueError, match="other.npz: not a prepared cltr dataset; missing format"):
        load_dataset(tmp_path / "other.npz")


def test_failed_save_leaves_nothing(tmp_path, monkeypatch):
    import cltr.datasets

    dataset = make_synthetic(n_queries=10)
    save_dataset(dataset, tmp_path / "x.npz")
    before = (tmp_path / "x.npz").read_bytes()

    def disk_full(stream, arrays):
        stream.write(b"partial")
        raise OSError("no space left on device")

    monkeypatch.setattr(cltr.datasets, "_write_npz", disk_full)
    with pytest.raises(OSError, match="no space left"):
        save_dataset(make_synthetic(n_queries=10, seed=1), tmp_path / "x.npz")
    assert [p.name for p in tmp_path.iterdir()] == ["x.npz"]  # no temporary left behind ...
    assert (tmp_path / "x.npz").read_bytes() == before  # ... and the old file intact
    with pytest.raises(TypeError):
        save_dataset(Dataset(name="x", train=dataset.train, vali=dataset.vali, test=dataset.test,
                             relevant_from=1, meta={"not json": object()}), tmp_path / "y.npz")


# -- small helpers -------------------------------------------------------------------------

def toy(labels, sizes, qid_start=1, width=2):
    labels = np.asarray(labels, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return Queries(X=np.arange(len(labels) * width, dtype=float).reshape(-1, width), labels=labels,
                   qid=np.arange(qid_start, qid_start + len(sizes), dtype=np.int64), offsets=offsets)


def test_describe_split_hand_computed():
    queries = toy([0, 2, 1, 0, 0, 0, 0, 1], [3, 2, 3], width=5)
    assert describe_split(queries, 1) == {"queries": 3, "documents": 8, "relevant": 3,
                                          "queries_without_relevant": 1, "features": 5}
    assert describe_split(queries, 2) == {"queries": 3, "documents": 8, "relevant": 1,
                                          "queries_without_relevant": 2, "features": 5}


def test_concatenate_and_check_queries():
    a, b = toy([0, 1, 1], [1, 2]), toy([2, 0], [2], qid_start=10)
    both = concatenate_queries([a, b])
    assert both.offsets.tolist() == [0, 1, 3, 5] and both.qid.tolist() == [1, 2, 10]
    np.testing.assert_array_equal(both.X, np.concatenate([a.X, b.X]))
    with pytest.raises(ValueError, match="qid 1 is in two parts"):
        concatenate_queries([a, a])
    with pytest.raises(ValueError, match="strictly"):
        check_queries(Queries(X=a.X, labels=a.labels, qid=np.array([1, 2, 3]),
                              offsets=np.array([0, 1, 1, 3])))
    with pytest.raises(ValueError, match="qid 1 names two queries"):
        check_queries(Queries(X=a.X, labels=a.labels, qid=np.array([1, 1]), offsets=a.offsets))
    with pytest.raises(ValueError, match="not finite"):
        check_queries(Queries(X=a.X * np.nan, labels=a.labels, qid=a.qid, offsets=a.offsets))


# -- the real LETOR 4.0 MQ2008 Fold1 (MANIFEST.md numbers) ---------------------------------

@pytest.mark.letor
@pytest.mark.skipif(not (MQ2008 / "Fold1").is_dir(), reason=f"real LETOR 4.0 MQ2008 data not found at {MQ2008}")
def test_real_mq2008_fold1_matches_manifest():
    train, provenance = load_svmlight_split(MQ2008 / "Fold1" / "train.txt.xz", n_features=46, label_range=(0, 2))
    assert provenance["sha256"] == "9b98c14e9536f2a18c59670714c99defc63e74359c56cba219a61db248f27123"
    assert provenance["n_lines"] == 9630 and train.n_docs == 9630 and train.n_queries == 471
    assert provenance["label_counts"] == {"0": 7820, "1": 1223, "2": 587}

    dataset = load_letor(MQ2008, fold=1)
    expected = {"train": (9630, 471, {"0": 7820, "1": 1223, "2": 587}),
                "vali": (2707, 157, {"0": 2140, "1": 400, "2": 167}),
                "test": (2874, 156, {"0": 2319, "1": 378, "2": 177})}
    for split, queries in dataset.splits().items():
        lines, n_queries, counts = expected[split]
        assert (queries.n_docs, queries.n_queries, queries.n_features) == (lines, n_queries, 46)
        assert dataset.meta["label_counts"][split] == counts
        assert queries.X.min() >= 0 and queries.X.max() <= 1  # QueryLevelNorm
    assert dataset.meta["files"]["vali"][0]["sha256"] == \
        "a239850bc6fe960ad08c2b7b0d99db90fe976dd93a15358e98036591b4e7a2ac"
    assert dataset.meta["files"]["test"][0]["sha256"] == \
        "c68c52feb1ecae7f17b64c8e2fda2098302681bbd4ea5fad8c73a1d32a1cf2b2"
    assert dataset.train.qid[0] == 10002 and dataset.vali.qid[0] == 15928 and dataset.test.qid[0] == 18219
    assert dataset.meta["mq2007"] is False
