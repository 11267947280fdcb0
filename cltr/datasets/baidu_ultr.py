"""``cltr prepare baidu-ultr``: Hager et al.'s preprocessed Baidu-ULTR release
(``cltr.data.baidu_preprocessed.load_baidu_ultr``), with its click logs."""

from __future__ import annotations

from dataclasses import dataclass

from cltr.data.baidu_preprocessed import FEATURE_SETS, RANK_GAPS, load_baidu_ultr
from cltr.datasets import Loader
from cltr.options import Options, option


@dataclass(frozen=True)
class BaiduUltrOptions(Options):
    clicks: str = option(
        None,
        "The click files: a file, a directory or a quoted glob pattern, e.g. "
        "'parts/part-1_split-*.feather' (.feather/.arrow as released, or .parquet; one row "
        "per document with query_no, or one row per session with lists).",
        required=True,
        metavar="FILES",
    )
    annotations: str = option(
        None,
        "The expert annotations: parts/validation.feather as released (or a .parquet "
        "of its rows); they are the test split.",
        required=True,
        metavar="FILES",
    )
    logs_dir: str = option(
        None,
        "Directory to write the click logs to (train-clicks.parquet, vali-clicks.parquet, "
        "in the documented click-log format); created if needed. `cltr prepare` imports "
        "them as the dataset's click log.",
        required=True,
        metavar="DIR",
    )
    features: str = option(
        "ltr",
        "The features: ltr (the 12 lexical ones: bm25 ... abstract_length), embedding "
        "(the 768-d query_document_embedding) or both; with the embedding X is float32.",
        choices=FEATURE_SETS,
    )
    normalize: str = option(
        "query",
        "query: min-max scale every feature within its query (LETOR's QueryLevelNorm); none: the raw values.",
        choices=("query", "none"),
    )
    vali_fraction: float = option(
        0.1,
        "Share of the click queries held out as the validation split (its clicks select hyperparameters).",
        low=0,
        high=1,
        low_open=True,
        high_open=True,
    )
    seed: int = option(0, "Seed of the train/vali split of the click queries.", low=0)
    rank_gaps: str = option(
        "drop",
        "A session whose positions have a gap (a missing document kept its place): drop "
        "it (every rank stays the displayed position), or close its ranks up to 1..n.",
        choices=RANK_GAPS,
    )
    relevant_from: int = option(
        3, "Annotation labels (0-4) at least this are relevant (3, as for the 0-4 labels of Yahoo! LTR).", low=1, high=4
    )


def load(options: BaiduUltrOptions, *, name, progress=None):
    return load_baidu_ultr(
        options.clicks,
        options.annotations,
        options.logs_dir,
        features=options.features,
        vali_fraction=options.vali_fraction,
        seed=options.seed,
        relevant_from=options.relevant_from,
        rank_gaps=options.rank_gaps,
        normalize=options.normalize,
        name=name,
        progress=progress,
    )


LOADER = Loader(
    name="baidu-ultr",
    summary="Baidu-ULTR as preprocessed by Hager et al. (SIGIR 2024): click queries for train and vali with their "
    "logged clicks, the expert-annotated queries (labels 0-4) as the test split.",
    options=BaiduUltrOptions,
    load=load,
    description="Reads the Feather files of the Hugging Face datasets philipphager/baidu-ultr_uva-mlm-ctr and "
    "philipphager/baidu-ultr_baidu-mlm-ctr (or Parquet files of the same rows), writes the clicks as "
    "two click logs in the documented format, and `cltr prepare` imports them as the dataset's click "
    "log: the next commands are `cltr propensities estimate`, `cltr train` and `cltr evaluate`. See "
    "docs/how-to/baidu-ultr.md.",
)
