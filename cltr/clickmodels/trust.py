"""Trust bias: the TrustPBM of Agarwal, Wang, Li, Bendersky, Najork (WWW 2019, "Addressing
Trust Bias for Unbiased Learning-to-Rank").

Legend (``cltr.core.trust``):
    theta_k = (1/k)^eta        -> examination of rank k (``eta``), the logged propensity
    eps+_k                     -> click probability of an examined relevant document:
                                  eps_pos - eps_pos_step · (min(k, eps_pos_ranks) - 1)
    eps-_k                     -> click probability of an examined irrelevant document:
                                  eps_neg / min(k, eps_neg_ranks)

A document at rank k is clicked with theta_k · (eps+_k if relevant else eps-_k),
independently of the others. The defaults, eta = 1, eps+_k = 1 - (min(k, 20) + 1) / 100
and eps-_k = 0.65 / min(k, 10), are the trust-bias simulation of Vardasbi, Oosterhuis,
de Rijke (CIKM 2020, affine corrections; reused in their SIGIR 2021 mixture-based
corrections, Eqs. 10-11), the standard semi-synthetic setting for trust bias. They were
taken from a public re-implementation citing those equations, not from the papers' text,
and the WWW 2019 paper itself evaluated on real personal-search logs: that these values
match the trust bias it measured (high eps- at the top, falling with rank) is our reading,
not a quotation.

Each click is logged with the examination propensity theta_k, so the paper's learners
(plain IPS) divide by the true examination and keep the trust bias; the corrections
(``--correction bayes-ips | affine``) read the parameters through ``trust_bias``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cltr.clickmodels import ClickModel
from cltr.core.clicks import ClickLog, position_propensity, simulate_clicks
from cltr.core.trust import TrustBias
from cltr.options import Options, option

__all__ = ["TrustSettings", "trust_bias", "MODEL"]


@dataclass(frozen=True)
class TrustSettings(Options):
    eta: float = option(1.0, "Severity of position bias: rank r is observed with probability (1/r)^eta.", low=0)
    eps_pos: float = option(
        0.98, "eps+_1: click probability of an examined relevant document at rank 1.", low=0, high=1
    )
    eps_pos_step: float = option(
        0.01, "eps+_k falls by this much per rank down to rank --eps-pos-ranks.", low=0, high=1
    )
    eps_pos_ranks: int = option(20, "eps+_k is constant from this rank on.", low=1)
    eps_neg: float = option(
        0.65,
        "eps-_1: click probability of an examined irrelevant document at rank 1 "
        "(the strength of trust bias); eps-_k = eps-_1 / min(k, --eps-neg-ranks).",
        low=0,
        high=1,
    )
    eps_neg_ranks: int = option(10, "eps-_k is constant from this rank on.", low=1)

    def __post_init__(self):
        trust_bias(self, max(self.eps_pos_ranks, self.eps_neg_ranks))  # eps+_k > eps-_k >= 0 at every rank


def trust_bias(settings: TrustSettings, max_rank: int) -> TrustBias:
    """The parameters theta_k, eps+_k, eps-_k for ranks 1..``max_rank`` (validated)."""
    k = np.arange(1, int(max_rank) + 1)
    relevant = settings.eps_pos - settings.eps_pos_step * (np.minimum(k, settings.eps_pos_ranks) - 1)
    irrelevant = settings.eps_neg / np.minimum(k, settings.eps_neg_ranks)
    try:
        return TrustBias(position_propensity(k, settings.eta), relevant, irrelevant)
    except ValueError as error:
        raise ValueError(
            f"trust settings eps_pos = {settings.eps_pos:g}, eps_pos_step = {settings.eps_pos_step:g}, "
            f"eps_pos_ranks = {settings.eps_pos_ranks}, eps_neg = {settings.eps_neg:g}, eps_neg_ranks = "
            f"{settings.eps_neg_ranks}: {error}"
        ) from None


def simulate(
    rank, relevant, offsets, settings: TrustSettings, *, passes: int, rng: np.random.Generator, progress=None
) -> ClickLog:
    rank = np.asarray(rank, dtype=np.int64)
    trust = trust_bias(settings, int(rank.max()) if len(rank) else 1)
    return simulate_clicks(
        rank,
        trust.click_probability(rank, relevant),
        position_propensity(rank, settings.eta),
        offsets,
        passes=passes,
        rng=rng,
        progress=progress,
    )


def propensity(rank, settings: TrustSettings) -> np.ndarray:
    """The logged propensity of each rank: the examination theta_k = (1/k)^eta."""
    return position_propensity(rank, settings.eta)


MODEL = ClickModel(
    name="trust",
    settings=TrustSettings,
    simulate=simulate,
    propensity=propensity,
    trust=trust_bias,
    summary="Trust bias (TrustPBM, Agarwal et al. WWW 2019): rank k examined with (1/k)^eta, examined documents "
    "clicked with eps+_k / eps-_k, irrelevant ones more often near the top.",
)
