"""Trust bias: Bayes-IPS (Agarwal et al., WWW 2019): ``cltr.core.trust``."""

from __future__ import annotations

from cltr.core.clicks import ClickLog
from cltr.core.trust import bayes_ips_weight
from cltr.pipeline.corrections import Correction
from cltr.pipeline.corrections.trust_parameters import trust_parameters

ORDER = 40


def apply(log: ClickLog, clicks, split: str, *, estimate=None) -> ClickLog:
    """Each click weighted by Pr(R = 1 | C = 1, k) / theta_k, kept as propensity 1 / weight."""
    return log.with_propensity(
        1.0 / bayes_ips_weight(log.rank, trust_parameters(log.rank, clicks, estimate, "bayes-ips"))
    )


CORRECTION = Correction(
    "bayes-ips",
    "Trust bias: each click weighted by the posterior probability of relevance "
    "given a click at its rank over the examination propensity (Agarwal et "
    "al., WWW 2019).",
    apply,
    context=("estimate",),
)
