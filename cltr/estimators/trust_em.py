"""The trust-bias click probabilities by EM (after Agarwal et al., WWW 2019): ``cltr.core.trust``."""

from __future__ import annotations

from cltr.core.trust import trust_em
from cltr.estimators import Estimator

ORDER = 30


def estimate(table, X, options, *, max_rank, bootstrap, level, rng, seed):
    return trust_em(
        table.query,
        table.doc,
        table.rank,
        table.impressions,
        table.clicks,
        max_rank=max_rank,
        bootstrap=bootstrap,
        level=level,
        rng=rng,
    ).propensity_estimate()


ESTIMATOR = Estimator(
    name="trust-em",
    summary="the trust-bias click probabilities c+_k, c-_k of relevant and irrelevant documents per rank by EM "
    "over documents shown at several ranks (after Agarwal et al., WWW 2019; best with --rankers >= 2), "
    "for --correction bayes-ips | affine",
    estimate=estimate,
    description="""The trust-bias parameters (after Agarwal et al., WWW 2019): the click probabilities c+_k
    and c-_k of relevant and irrelevant documents at each rank, by EM over documents shown
    at several ranks; the estimate stores them (under `trust` in its info, what `--correction
    bayes-ips` and `affine` read with `--propensities estimated`) and gives the examination
    c+_k / c+_1 as the propensity. Best with logs of two or more rankers.""",
)
