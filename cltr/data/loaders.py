"""Dataset loaders: LETOR 4.0 (the paper's split) and Yahoo! LTR set 1, from SVMlight files.

Sources (DESIGN.md, "Datasets"):
    ``load_letor``  LETOR 4.0: MQ2007+MQ2008 FoldK train, MQ2008 vali and test
    ``load_yahoo``  Yahoo! LTR set 1 (700 features, labels 0-4)
    ``load_svmlight_dataset``  any three SVMlight files (train, vali, test)
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from cltr.core.queries import (
    LETOR_FEATURES,
    YAHOO_FEATURES,
    Dataset,
    Queries,
    check_relevant_from,
    concatenate_queries,
    label_counts,
)
from cltr.data.svmlight import find_split_file, load_svmlight_split

__all__ = ["LETOR_RELEVANT_FROM", "LETOR_PASSES", "YAHOO_PASSES", "load_letor", "load_yahoo", "load_svmlight_dataset"]

# Passes of simulated clicks over the training queries, as in the paper.
LETOR_PASSES = 100
YAHOO_PASSES = 10


def _check_disjoint(named: dict[str, Queries]) -> None:
    names = list(named)
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            common = np.intersect1d(named[first].qid, named[second].qid)
            if common.size:
                raise ValueError(
                    f"qid {common[0]} is in both {first} and {second} "
                    f"({common.size} shared query ids); their queries must be disjoint"
                )


# The paper's LETOR convention as far as the data can tell (see
# docs/explanation/inferred.md): with label 2 MQ2008 gives the paper's Table 1 click count and Table 2
# values, with label >= 1 twice the clicks and far lower values.
LETOR_RELEVANT_FROM = 2


def load_letor(
    mq2008_dir: str | os.PathLike,
    *,
    mq2007_dir: str | os.PathLike | None = None,
    fold: int = 1,
    relevant_from: int = LETOR_RELEVANT_FROM,
    progress: Callable[[str, int, int], None] | None = None,
) -> Dataset:
    """LETOR 4.0 as in the paper: train = MQ2007 FoldK train + MQ2008 FoldK train.

    vali = MQ2008 FoldK vali, test = MQ2008 FoldK test. Each file is
    ``FoldK/{train,vali,test}.txt``, plain or with a ``.gz``, ``.bz2`` or ``.xz`` suffix.
    Every file must have 46 features and labels 0..2. LETOR rows list every feature, so
    the largest feature index of every file must be the same (else the files are not of
    one dataset). Query ids must be disjoint between MQ2007 and MQ2008 and between splits.

    Parameters
    ----------
    mq2008_dir : path-like
        Directory holding ``Fold1`` .. ``Fold5`` of MQ2008.
    mq2007_dir : path-like, optional
        The same for MQ2007; when absent, train is MQ2008's alone and ``meta`` says so.
    fold : int
        Which fold (1..5).
    relevant_from : int
        Labels at least this are relevant (1 or 2; 2 is the paper's convention).
    progress : callable (path, bytes_read, file_size), optional
        Called as each file is read (``load_svmlight_split``'s).

    Returns
    -------
    Dataset
        Named ``"letor"``; splits with ``X`` of shape (n_docs, 46); ``meta`` records the
        files with their sha256, the fold, ``mq2007`` (bool), the source ``directories``,
        ``relevant_from``, label counts per split and ``notes``.
    """
    label_range = (0, 2)
    check_relevant_from(relevant_from, label_range, "LETOR 4.0")
    if isinstance(fold, bool) or int(fold) != fold or fold < 1:
        raise ValueError(f"fold must be a positive integer (LETOR 4.0 has folds 1..5), found {fold!r}")
    fold = int(fold)

    def fold_dir(root, source: str) -> Path:
        directory = Path(root) / f"Fold{fold}"
        if not directory.is_dir():
            raise FileNotFoundError(
                f"no Fold{fold} directory in {root} (expected the {source} layout Fold{fold}/{{train,vali,test}}.txt)"
            )
        return directory

    options: dict[str, Any] = {"n_features": LETOR_FEATURES, "label_range": label_range, "progress": progress}
    mq2008 = fold_dir(mq2008_dir, "MQ2008")
    loaded: dict[str, tuple[Queries, dict]] = {}
    if mq2007_dir is not None:
        mq2007 = fold_dir(mq2007_dir, "MQ2007")
        loaded["MQ2007 train"] = load_svmlight_split(find_split_file(mq2007, "train.txt"), **options)
    for split in ("train", "vali", "test"):
        loaded[f"MQ2008 {split}"] = load_svmlight_split(find_split_file(mq2008, f"{split}.txt"), **options)
    widths = {provenance["path"]: provenance["max_feature_index"] for _, provenance in loaded.values()}
    if len(set(widths.values())) > 1:
        listed = ", ".join(f"{path} has {width}" for path, width in widths.items())
        raise ValueError(
            f"feature widths differ between splits: {listed} features; all splits "
            "of one dataset must share one feature width"
        )
    _check_disjoint({f"{key} ({provenance['path']})": queries for key, (queries, provenance) in loaded.items()})

    train_keys = [key for key in loaded if key.endswith("train")]
    splits = {
        "train": concatenate_queries([loaded[key][0] for key in train_keys]),
        "vali": loaded["MQ2008 vali"][0],
        "test": loaded["MQ2008 test"][0],
    }
    notes = []
    if mq2007_dir is None:
        notes.append(
            f"MQ2007 was not given: the training split is MQ2008 Fold{fold} train alone "
            f"(the paper trains on MQ2007 + MQ2008 Fold{fold} train)"
        )
    meta = {
        "source": "LETOR 4.0",
        "fold": fold,
        "mq2007": mq2007_dir is not None,
        # where the folds lie, so that `cltr figures --folds` prepares the other folds alike
        "directories": {
            "mq2008": str(Path(mq2008_dir).resolve()),
            "mq2007": None if mq2007_dir is None else str(Path(mq2007_dir).resolve()),
        },
        "relevant_from": int(relevant_from),
        "n_features": LETOR_FEATURES,
        "label_range": list(label_range),
        "files": {
            "train": [loaded[key][1] for key in train_keys],
            "vali": [loaded["MQ2008 vali"][1]],
            "test": [loaded["MQ2008 test"][1]],
        },
        "label_counts": {split: label_counts(q.labels) for split, q in splits.items()},
        "default_passes": LETOR_PASSES,
        "notes": notes,
    }
    return Dataset(
        name="letor",
        train=splits["train"],
        vali=splits["vali"],
        test=splits["test"],
        relevant_from=int(relevant_from),
        meta=meta,
    )


def load_yahoo(
    root: str | os.PathLike,
    *,
    relevant_from: int = 3,
    dtype: Any = np.float64,
    progress: Callable[[str, int, int], None] | None = None,
) -> Dataset:
    """Yahoo! Learning to Rank Challenge, set 1.

    Files ``set1.train.txt``, ``set1.valid.txt``, ``set1.test.txt`` in ``root``, plain or
    with a ``.gz``, ``.bz2`` or ``.xz`` suffix; 700 features (rows are sparse, so every
    split is read at the declared width and an index above 700 is an error); labels 0..4.

    Parameters
    ----------
    root : path-like
        Directory holding the three files.
    relevant_from : int
        Labels at least this are relevant (3, as in Joachims et al. 2017).
    dtype : numpy float dtype
        Dtype of ``X``; float32 halves the memory of the full set (~4 GB as float64).
    progress : callable (path, bytes_read, file_size), optional
        Called as each file is read (``load_svmlight_split``'s).

    Returns
    -------
    Dataset
        Named ``"yahoo"``; splits with ``X`` of shape (n_docs, 700); ``meta`` records the
        files with their sha256, ``relevant_from`` and label counts per split.
    """
    label_range = (0, 4)
    check_relevant_from(relevant_from, label_range, "Yahoo! LTR")
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"Yahoo! LTR directory not found: {root}")
    options = {"n_features": YAHOO_FEATURES, "label_range": label_range, "dtype": dtype, "progress": progress}
    loaded = {
        split: load_svmlight_split(find_split_file(root, f"set1.{stem}.txt"), **options)
        for split, stem in (("train", "train"), ("vali", "valid"), ("test", "test"))
    }
    splits = {split: queries for split, (queries, _) in loaded.items()}
    meta = {
        "source": "Yahoo! Learning to Rank Challenge, set 1",
        "relevant_from": int(relevant_from),
        "n_features": YAHOO_FEATURES,
        "label_range": list(label_range),
        "files": {split: [provenance] for split, (_, provenance) in loaded.items()},
        "label_counts": {split: label_counts(q.labels) for split, q in splits.items()},
        "default_passes": YAHOO_PASSES,
        "notes": [],
    }
    return Dataset(
        name="yahoo",
        train=splits["train"],
        vali=splits["vali"],
        test=splits["test"],
        relevant_from=int(relevant_from),
        meta=meta,
    )


def load_svmlight_dataset(
    train: str | os.PathLike,
    vali: str | os.PathLike,
    test: str | os.PathLike,
    *,
    n_features: int | None = None,
    relevant_from: int = 1,
    label_range: tuple[int, int] | None = None,
    dtype: Any = np.float64,
    name: str = "svmlight",
    progress: Callable[[str, int, int], None] | None = None,
) -> Dataset:
    """Any dataset given as three SVMlight files: train, vali and test.

    Each file is plain or ``.gz``, ``.bz2``, ``.xz`` and is read with every check of
    ``load_svmlight_split``. The splits must share one feature width and have disjoint
    query ids.

    Parameters
    ----------
    train, vali, test : path-like
        The three files.
    n_features : int, optional
        Width of ``X`` for every split (an index above it is an error). Default: the largest
        feature index, which must then be the same in the three files (give ``n_features``
        for sparse files whose splits need not reach the last feature).
    relevant_from : int
        Labels at least this are relevant; some training document must be.
    label_range : (int, int), optional
        Inclusive range the labels must lie in.
    dtype : numpy float dtype
        Dtype of ``X`` (float32 halves its memory).
    name : str
        The dataset's name.
    progress : callable (path, bytes_read, file_size), optional
        Called as each file is read (``load_svmlight_split``'s).

    Returns
    -------
    Dataset
        Splits with ``X`` of shape (n_docs, n_features) and document ids where the files
        give them; ``meta`` records the files with their sha256, ``relevant_from``, the
        width and label counts per split.
    """
    if isinstance(relevant_from, bool) or not isinstance(relevant_from, (int, np.integer)):
        raise ValueError(f"relevant_from must be an integer, found {relevant_from!r}")
    if label_range is not None:
        check_relevant_from(relevant_from, label_range, "these")
    options = {"n_features": n_features, "label_range": label_range, "dtype": dtype, "progress": progress}
    loaded = {
        split: load_svmlight_split(path, **options)
        for split, path in (("train", train), ("vali", vali), ("test", test))
    }
    widths = {provenance["path"]: provenance["n_features"] for _, provenance in loaded.values()}
    if len(set(widths.values())) > 1:
        listed = ", ".join(f"{path} has {width}" for path, width in widths.items())
        raise ValueError(
            f"feature widths differ between splits: {listed} features; all splits "
            "of one dataset must share one feature width (to read sparse files whose largest "
            "index differs, give the width: n_features, or --features N)"
        )
    _check_disjoint({f"{split} ({provenance['path']})": queries for split, (queries, provenance) in loaded.items()})
    splits = {split: queries for split, (queries, _) in loaded.items()}
    if not splits["train"].relevant(relevant_from).any():
        raise ValueError(
            f"no training document has a label >= relevant_from = {relevant_from} "
            f"(label counts {label_counts(splits['train'].labels)}); nothing would be relevant"
        )
    meta = {
        "source": "SVMlight files",
        "relevant_from": int(relevant_from),
        "n_features": int(splits["train"].n_features),
        "label_range": None if label_range is None else list(label_range),
        "dtype": np.dtype(dtype).name,
        "files": {split: [provenance] for split, (_, provenance) in loaded.items()},
        "label_counts": {split: label_counts(q.labels) for split, q in splits.items()},
        "notes": [],
    }
    return Dataset(
        name=name,
        train=splits["train"],
        vali=splits["vali"],
        test=splits["test"],
        relevant_from=int(relevant_from),
        meta=meta,
    )
