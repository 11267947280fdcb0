"""Intervention harvesting, AllPairs (Agarwal et al., WSDM 2019): ``cltr.core.propensity``."""

from __future__ import annotations

from dataclasses import dataclass

from cltr.core.chunked_propensity import chunked_harvest_propensities
from cltr.core.propensity import harvest_propensities
from cltr.distributed import EngineOptions, engine
from cltr.estimators import Estimator

ORDER = 10


@dataclass(frozen=True)
class HarvestOptions(EngineOptions):
    """Where harvest's counting runs: its counts are sums over queries, so over chunks of them
    (``cltr.core.chunked_propensity``)."""


def estimate(table, X, options, *, max_rank, bootstrap, level, rng, seed):
    columns = (table.query, table.doc, table.rank, table.ranker, table.impressions, table.clicks)
    with engine(options) as (mapper, chunks):
        if mapper is None:
            return harvest_propensities(*columns, max_rank=max_rank, bootstrap=bootstrap, level=level, rng=rng)
        return chunked_harvest_propensities(*columns, chunks=chunks, mapper=mapper, max_rank=max_rank,
                                            bootstrap=bootstrap, level=level, rng=rng)


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
    simulate --rankers 2`, or an imported log with a `ranker` column).""")
