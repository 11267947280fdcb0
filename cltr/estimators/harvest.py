"""Intervention harvesting, AllPairs (Agarwal et al., WSDM 2019): ``cltr.core.propensity``."""

from __future__ import annotations

from dataclasses import dataclass

from cltr.core.chunked_propensity import chunked_harvest_propensities
from cltr.core.propensity import harvest_propensities
from cltr.distributed import EngineOptions, engine
from cltr.estimators import Estimator
from cltr.options import option

ORDER = 10


@dataclass(frozen=True)
class HarvestOptions(EngineOptions):
    """Where harvest's counting runs: its counts are sums over queries, so over chunks of them
    (``cltr.core.chunked_propensity``), and, with ``log_path``, where the log is read from."""

    log_path: str | None = option(
        None,
        "Read the training split's log from this Parquet click table (session, qid, doc or docid, rank, "
        "click[, propensity, ranker]; the file `cltr clicks import` reads) instead of the dataset's click "
        "log: one streaming pass over its qid and ranker columns here, then each chunk of whole queries "
        "(--chunks, --backend) reads its own rows from the file where it is computed, so this process never "
        "holds the log. Gives the estimate of the log imported whole. The estimate is stored under the "
        "file's sha256 and not made current: train with --propensities KEY.",
        path="file",
        flag="--log",
        metavar="PARQUET",
    )


def estimate(table, X, options, *, max_rank, bootstrap, level, rng, seed):
    if options.log_path is not None:
        raise ValueError(
            "log_path (--log) names a Parquet log that cltr propensities estimate reads chunk by chunk "
            "itself (cltr.pipeline.stages.parquet_propensity_stage); an estimate from impressions "
            "already in memory takes none"
        )
    columns = (table.query, table.doc, table.rank, table.ranker, table.impressions, table.clicks)
    with engine(options) as (mapper, chunks):
        if mapper is None:
            return harvest_propensities(*columns, max_rank=max_rank, bootstrap=bootstrap, level=level, rng=rng)
        return chunked_harvest_propensities(
            *columns, chunks=chunks, mapper=mapper, max_rank=max_rank, bootstrap=bootstrap, level=level, rng=rng
        )


ESTIMATOR = Estimator(
    name="harvest",
    summary="intervention harvesting, AllPairs (Agarwal et al., WSDM 2019; needs logs of two or more rankers)",
    estimate=estimate,
    options=HarvestOptions,
    description="""Intervention harvesting with the AllPairs extremum estimator (Agarwal et al., WSDM
    2019): a (query, document) shown at rank k by one logging ranker and at rank k' by
    another is an intervention that happened by itself, its click rates there differing only
    by p_k / p_k'. The harvested clicks and impressions of every pair of ranks enter one
    likelihood, maximised by Newton's method over the propensities (each rank pair's
    relevance profiled out in closed form). Needs logs of two or more rankers (`cltr
    simulate --rankers 2`, or an imported log with a `ranker` column).""",
)
