"""Dataset loaders (``cltr.data.loaders``): LETOR 4.0 as in the paper, Yahoo! LTR set 1 on
generated files of its shape, and the real MQ2008 Fold1 against its MANIFEST.md."""

import json

import numpy as np
import pytest

from cltr.core.queries import check_queries
from cltr.data.loaders import load_letor, load_yahoo
from cltr.data.svmlight import load_svmlight_split

# -- LETOR 4.0 -----------------------------------------------------------------------------


def test_letor_mq2008_alone_and_with_mq2007(tmp_path, make_letor_tree):
    mq2008 = make_letor_tree(tmp_path / "MQ2008", suffix=".xz", qid_start=10000)
    mq2007 = make_letor_tree(tmp_path / "MQ2007", suffix=".gz", qid_start=1000, seed=1)
    alone = load_letor(mq2008)
    assert alone.name == "letor" and alone.relevant_from == 2  # the paper's convention
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


def test_letor_other_fold_and_plain_files(tmp_path, make_letor_tree):
    root = make_letor_tree(tmp_path / "MQ2008", fold=3)
    assert load_letor(root, fold=3).meta["fold"] == 3
    with pytest.raises(FileNotFoundError, match="no Fold1 directory"):
        load_letor(root)
    with pytest.raises(ValueError, match="fold must be a positive integer"):
        load_letor(root, fold=0)
    with pytest.raises(ValueError, match=r"relevant_from must be an integer in 1\.\.2"):
        load_letor(root, fold=3, relevant_from=3)


def test_letor_missing_split_file(tmp_path, make_letor_tree):
    root = make_letor_tree(tmp_path / "MQ2008")
    (root / "Fold1" / "vali.txt").unlink()
    with pytest.raises(FileNotFoundError, match=r"no vali.txt \(nor vali.txt.gz, .bz2, .xz\) in .*Fold1"):
        load_letor(root)


def test_letor_qid_collision_between_mq2007_and_mq2008(tmp_path, make_letor_tree):
    mq2008 = make_letor_tree(tmp_path / "MQ2008", qid_start=500)
    mq2007 = make_letor_tree(tmp_path / "MQ2007", qid_start=500, seed=1)
    with pytest.raises(ValueError, match="qid 500 is in both MQ2007 train .* and MQ2008 train"):
        load_letor(mq2008, mq2007_dir=mq2007)


def test_letor_feature_widths_differ_between_splits(tmp_path, make_letor_tree):
    root = make_letor_tree(tmp_path / "MQ2008", widths={"vali": 45})
    with pytest.raises(
        ValueError,
        match="feature widths differ between splits: .*train.txt has 46, .*vali.txt has 45, .*test.txt has 46 features",
    ):
        load_letor(root)


def test_letor_label_and_index_checks_apply(tmp_path, make_letor_tree):
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


def test_yahoo_shape(tmp_path, write_file):
    rng = np.random.default_rng(0)
    write_file(tmp_path / "set1.train.txt.bz2", yahoo_text(rng, [1, 2, 3]))
    write_file(tmp_path / "set1.valid.txt", yahoo_text(rng, [4, 5]) + "4 qid:6 700:1\n")
    write_file(tmp_path / "set1.test.txt.gz", yahoo_text(rng, [7, 8]))
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


def test_yahoo_checks(tmp_path, write_file):
    rng = np.random.default_rng(1)
    write_file(tmp_path / "set1.train.txt", yahoo_text(rng, [1, 2]))
    write_file(tmp_path / "set1.test.txt", yahoo_text(rng, [7]))
    with pytest.raises(FileNotFoundError, match="no set1.valid.txt"):
        load_yahoo(tmp_path)
    write_file(tmp_path / "set1.valid.txt", "1 qid:4 1:1 701:0.5\n")
    with pytest.raises(
        ValueError,
        match=r"line 1 of .*set1.valid.txt: feature index 701 is out of range; "
        r"expected 1\.\.700",
    ):
        load_yahoo(tmp_path)
    write_file(tmp_path / "set1.valid.txt", "5 qid:4 1:1\n")
    with pytest.raises(ValueError, match=r"label 5 is outside the allowed range 0\.\.4"):
        load_yahoo(tmp_path)


# -- the real LETOR 4.0 MQ2008 Fold1 (MANIFEST.md numbers) ---------------------------------


@pytest.mark.letor
def test_real_mq2008_fold1_matches_manifest(mq2008):
    train, provenance = load_svmlight_split(mq2008 / "Fold1" / "train.txt.xz", n_features=46, label_range=(0, 2))
    assert provenance["sha256"] == "9b98c14e9536f2a18c59670714c99defc63e74359c56cba219a61db248f27123"
    assert provenance["n_lines"] == 9630 and train.n_docs == 9630 and train.n_queries == 471
    assert provenance["label_counts"] == {"0": 7820, "1": 1223, "2": 587}

    dataset = load_letor(mq2008, fold=1)
    expected = {
        "train": (9630, 471, {"0": 7820, "1": 1223, "2": 587}),
        "vali": (2707, 157, {"0": 2140, "1": 400, "2": 167}),
        "test": (2874, 156, {"0": 2319, "1": 378, "2": 177}),
    }
    for split, queries in dataset.splits().items():
        lines, n_queries, counts = expected[split]
        assert (queries.n_docs, queries.n_queries, queries.n_features) == (lines, n_queries, 46)
        assert dataset.meta["label_counts"][split] == counts
        assert queries.X.min() >= 0 and queries.X.max() <= 1  # QueryLevelNorm
    assert (
        dataset.meta["files"]["vali"][0]["sha256"] == "a239850bc6fe960ad08c2b7b0d99db90fe976dd93a15358e98036591b4e7a2ac"
    )
    assert (
        dataset.meta["files"]["test"][0]["sha256"] == "c68c52feb1ecae7f17b64c8e2fda2098302681bbd4ea5fad8c73a1d32a1cf2b2"
    )
    assert dataset.train.qid[0] == 10002 and dataset.vali.qid[0] == 15928 and dataset.test.qid[0] == 18219
    assert dataset.meta["mq2007"] is False


def test_a_split_file_beside_its_compressed_copy_is_an_error(tmp_path, make_letor_tree):
    root = make_letor_tree(tmp_path / "MQ2008", suffix=".xz")
    (root / "Fold1" / "train.txt").write_text("0 qid:1 1:0.5\n")  # a stale or half decompression
    with pytest.raises(ValueError, match=r"Fold1 holds train.txt and train.txt.xz: more than one copy of train.txt"):
        load_letor(root)
