"""Click-rate ratios in a log of interventions (Joachims et al., WSDM 2017): ``cltr.core.interventions``."""

from __future__ import annotations

from cltr.core.interventions import swap_propensities
from cltr.estimators import Estimator

ORDER = 40


def estimate(table, X, options, *, max_rank, bootstrap, level, rng, seed):
    return swap_propensities(
        table.query,
        table.doc,
        table.rank,
        table.impressions,
        table.clicks,
        max_rank=max_rank,
        bootstrap=bootstrap,
        level=level,
        rng=rng,
    )


ESTIMATOR = Estimator(
    name="swap",
    summary="click-rate ratios of the same documents at rank 1 and rank k in a log of interventions (`cltr "
    "simulate --intervention`; Joachims et al., WSDM 2017)",
    estimate=estimate,
    description="""Click-rate ratios of the same documents shown at rank 1 and at rank k, in a log of
    randomized interventions (`cltr simulate --intervention swap-k` or `randomize-top-k`;
    Joachims et al., WSDM 2017): ranks the interventions never reach cannot be estimated, and
    are refused with the ranks that lack one.""",
)
