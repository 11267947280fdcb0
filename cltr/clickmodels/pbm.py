"""The position-based model (paper Sec. 5.1, following Joachims et al. 2017).

Legend:
    p_r = (1/r)^eta          -> ``position_propensity(rank, eta)``: rank r is observed
    eps_+, eps_-             -> ``eps_pos``, ``eps_neg``: click probability of an observed
                                relevant / irrelevant document
    q_i                      -> the logged propensity of a click, p_r under the *model*
                                eta (``eta_model``; equal to ``eta`` unless misspecified)

Each document is clicked independently with probability p_r · eps(rel), so sessions are
drawn by ``cltr.core.clicks.simulate_clicks``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cltr.clickmodels import ClickModel
from cltr.core.clicks import ClickLog, position_propensity, simulate_clicks
from cltr.core.trust import TrustBias
from cltr.options import Options, option

__all__ = ["PBMSettings", "position_based_model", "MODEL"]


@dataclass(frozen=True)
class PBMSettings(Options):
    eta: float = option(1.0, "Severity of position bias: rank r is observed with probability (1/r)^eta.", low=0)
    eps_pos: float = option(1.0, "Click probability of an observed relevant document.", low=0, high=1)
    eps_neg: float = option(0.1, "Click probability of an observed irrelevant document (noise).", low=0, high=1)
    eta_model: float | None = option(
        None,
        "The eta of the logged propensities, if it differs from the true one (misspecification) [default: eta].",
        low=0,
    )


def position_based_model(
    rank: np.ndarray, relevant: np.ndarray, settings: PBMSettings
) -> tuple[np.ndarray, np.ndarray]:
    """Per-document click probability and logged propensity under the position-based model.

    Parameters
    ----------
    rank : ndarray, shape (n_docs,)
        Presented 1-based rank of every document.
    relevant : ndarray of bool, shape (n_docs,)
    settings : PBMSettings

    Returns
    -------
    click_probability : ndarray, shape (n_docs,)
        p_r(eta) * (eps_pos if relevant else eps_neg).
    propensity : ndarray, shape (n_docs,)
        p_r(eta_model), what each click is logged with.
    """
    observed = position_propensity(rank, settings.eta)
    click_probability = observed * np.where(np.asarray(relevant, dtype=bool), settings.eps_pos, settings.eps_neg)
    propensity = observed if settings.eta_model is None else position_propensity(rank, settings.eta_model)
    return click_probability, propensity


def simulate(
    rank, relevant, offsets, settings: PBMSettings, *, passes: int, rng: np.random.Generator, progress=None
) -> ClickLog:
    click_probability, propensity = position_based_model(rank, relevant, settings)
    return simulate_clicks(rank, click_probability, propensity, offsets, passes=passes, rng=rng, progress=progress)


def propensity(rank, settings: PBMSettings) -> np.ndarray:
    """The logged propensity of each rank: p_r under the model eta."""
    return position_propensity(rank, settings.eta if settings.eta_model is None else settings.eta_model)


def trust_bias(settings: PBMSettings, max_rank: int) -> TrustBias:
    """The position-based model as a trust-bias model with constant eps+ and eps- (under
    the model eta, as the logged propensities), for ``--correction bayes-ips | affine``,
    which then also correct the click noise eps_neg."""
    k = np.arange(1, int(max_rank) + 1)
    return TrustBias(propensity(k, settings), np.full(len(k), settings.eps_pos), np.full(len(k), settings.eps_neg))


MODEL = ClickModel(
    name="pbm",
    settings=PBMSettings,
    simulate=simulate,
    propensity=propensity,
    trust=trust_bias,
    summary="Position-based model: rank r observed with (1/r)^eta, observed documents clicked with eps+/eps-.",
)
