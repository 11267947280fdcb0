"""``cltr prepare synthetic``: the embedded default dataset (``cltr.data.synthetic``)."""

from __future__ import annotations

from dataclasses import dataclass

from cltr.data.synthetic import make_synthetic
from cltr.datasets import Loader
from cltr.options import Options, option


@dataclass(frozen=True)
class SyntheticOptions(Options):
    n_queries: int | None = option(
        None, "Number of queries over all splits [default: the generator's].", low=3, flag="--queries"
    )
    n_features: int | None = option(
        None, "Number of features [default: the generator's, LETOR's 46].", low=1, flag="--features"
    )
    seed: int = option(0, "Seed of the generator.", low=0)
    relevant_from: int | None = option(
        None, "Labels (0..2) at least this are relevant [default: 2, as for LETOR].", low=1, high=2
    )


def load(options: SyntheticOptions, *, name, progress=None):
    given = {key: value for key, value in options.to_dict().items() if value is not None}
    return make_synthetic(**given)


LOADER = Loader(
    name="synthetic",
    summary="The embedded default: a seeded dataset shaped like the paper's LETOR training set (1,484 training "
    "queries, about 41 documents each, 46 features), with partly non-linear relevance.",
    options=SyntheticOptions,
    load=load,
)
