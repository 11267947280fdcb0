"""``cltr prepare letor``: LETOR 4.0 as in the paper (``cltr.data.loaders.load_letor``)."""

from __future__ import annotations

from dataclasses import dataclass

from cltr.data.loaders import LETOR_PASSES, LETOR_RELEVANT_FROM, load_letor
from cltr.datasets import Loader
from cltr.options import Options, option


@dataclass(frozen=True)
class LetorOptions(Options):
    mq2008: str = option(
        None, "MQ2008 directory holding Fold1..Fold5 (plain, .gz, .bz2 or .xz files).", path="dir", required=True
    )
    mq2007: str | None = option(
        None, "MQ2007 directory; its FoldK train split is added to the training set.", path="dir"
    )
    fold: int = option(1, "Which fold.", low=1, high=5)
    relevant_from: int = option(
        LETOR_RELEVANT_FROM,
        "Labels at least this are relevant (2: the paper's "
        "convention, see docs/explanation/inferred.md; 1: every partly relevant document).",
    )


def load(options: LetorOptions, *, name, progress=None):
    return load_letor(
        options.mq2008,
        mq2007_dir=options.mq2007,
        fold=options.fold,
        relevant_from=options.relevant_from,
        progress=progress,
    )


LOADER = Loader(
    name="letor",
    summary="LETOR 4.0 as in the paper: MQ2007+MQ2008 train, MQ2008 vali and test.",
    options=LetorOptions,
    load=load,
    default_passes=LETOR_PASSES,
)
