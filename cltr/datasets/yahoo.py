"""``cltr prepare yahoo``: Yahoo! LTR set 1 (``cltr.data.loaders.load_yahoo``)."""

from __future__ import annotations

from dataclasses import dataclass

from cltr.data.loaders import YAHOO_PASSES, load_yahoo
from cltr.datasets import Loader
from cltr.options import Options, option


@dataclass(frozen=True)
class YahooOptions(Options):
    root: str = option(
        None, "Directory holding set1.train.txt, set1.valid.txt, set1.test.txt.", path="dir", required=True
    )
    relevant_from: int = option(3, "Labels at least this are relevant.")


def load(options: YahooOptions, *, name, progress=None):
    return load_yahoo(options.root, relevant_from=options.relevant_from, progress=progress)


LOADER = Loader(
    name="yahoo",
    summary="Yahoo! Learning to Rank Challenge, set 1 (700 features, labels 0-4).",
    options=YahooOptions,
    load=load,
    default_passes=YAHOO_PASSES,
)
