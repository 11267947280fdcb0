"""``cltr prepare svmlight``: any three SVMlight files (``cltr.data.loaders.load_svmlight_dataset``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cltr.data.loaders import load_svmlight_dataset
from cltr.datasets import Loader
from cltr.options import Options, option


@dataclass(frozen=True)
class SVMlightOptions(Options):
    train: str = option(None, "Training split (plain, .gz, .bz2 or .xz).", path="file", required=True)
    vali: str = option(None, "Validation split.", path="file", required=True)
    test: str = option(None, "Test split.", path="file", required=True)
    n_features: int | None = option(
        None,
        "Width of X for every split [default: the largest feature index, the same in all three].",
        low=1,
        flag="--features",
    )
    relevant_from: int = option(1, "Labels at least this are relevant.")
    dtype: str = option("float64", "Dtype of the features (float32 halves the memory).", choices=("float32", "float64"))


def load(options: SVMlightOptions, *, name, progress=None):
    return load_svmlight_dataset(
        options.train,
        options.vali,
        options.test,
        n_features=options.n_features,
        relevant_from=options.relevant_from,
        dtype=np.dtype(options.dtype),
        name=name,
        progress=progress,
    )


# default_passes left to the name: a Yahoo! subset prepared from its files as "yahoo-..." gets Yahoo's
LOADER = Loader(
    name="svmlight",
    summary="Any three SVMlight/LETOR files: one width, disjoint query ids, every line checked.",
    options=SVMlightOptions,
    load=load,
)
