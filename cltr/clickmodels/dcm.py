"""The dependent click model (DCM): cascade clicks (Guo, Liu, Wang, WSDM 2009).

Legend (symbols of ``cltr.core.cascade``):
    gamma = eps_pos, eps_neg    -> ``eps_pos``, ``eps_neg``: click probability of an examined
                                   relevant / irrelevant document
    lambda_k = c * k^(-decay)   -> ``continuation_probability``: probability of going on after a
                                   click at rank k (``continuation`` c, ``decay``); without a
                                   click the user always goes on
    q_k                         -> the logged propensity of a click at rank k: the position-based
                                   summary of the examination (below)

A session scans the ranking from the top: at each rank it reaches, the document is clicked
with probability eps(rel); after a click it goes on with probability lambda_k, else it ends.
lambda_k = c * k^(-decay) is the parameterisation of Vardasbi, de Rijke and Markov's DCM
simulation (SIGIR 2020; their code, github.com/AliVard/CM-IPS-SIGIR20,
prepare_data/clicks_gen.py, draws c in {0.6, 0.8, 1.0} and decay in {0.5, 1, 2}); the
defaults c = 1, decay = 1 are that code's default ("dcm_1.0"): after a click at rank k the
user goes on with probability 1/k.

What a click is logged with (the propensity plain IPS divides by): the examination
probability of its rank under the position-based model that best fits the same sessions,
theta_k = sum_q gamma_qk P(E_qk = 1) / sum_q gamma_qk over the split's queries with a
document at rank k: the expected clicks at k over the clicks at k if every document there
were examined, the position-based model's maximum-likelihood theta_k given the true
attractions. Without noise (eps_neg = 0) it is the oracle PBM propensity of Vardasbi et
al.'s experiments (clicks at k over relevant documents at k); where no document at k can
be clicked it is the plain mean of P(E_qk = 1). It is the best any per-rank propensity can
do, and still biased, because a document's examination depends on the clicks above it in
its own session. The correction ``cascade`` (``cltr.pipeline.corrections``) replaces it
by the cascade propensity prod_{clicked i above} lambda_i.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cltr.clickmodels import ClickModel
from cltr.core.cascade import cascade_examination, simulate_cascade
from cltr.core.clicks import ClickLog
from cltr.options import Options, option

__all__ = ["DCMSettings", "continuation_probability", "attraction", "position_propensity", "MODEL"]


@dataclass(frozen=True)
class DCMSettings(Options):
    continuation: float = option(
        1.0,
        "Probability c of going on after a click at rank 1; after a click at rank k it is c * k^(-decay).",
        low=0,
        high=1,
    )
    decay: float = option(
        1.0, "How fast going on after a click falls with the rank: lambda_k = continuation * k^(-decay).", low=0
    )
    eps_pos: float = option(1.0, "Click probability of an observed relevant document.", low=0, high=1)
    eps_neg: float = option(0.1, "Click probability of an observed irrelevant document (noise).", low=0, high=1)


def continuation_probability(rank: np.ndarray, settings: DCMSettings) -> np.ndarray:
    """lambda_k = continuation * k^(-decay) of each (1-based) rank."""
    return settings.continuation * np.power(np.asarray(rank, dtype=np.float64), -settings.decay)


def attraction(relevant: np.ndarray, settings: DCMSettings) -> np.ndarray:
    """gamma of each document: eps_pos if relevant else eps_neg."""
    return np.where(np.asarray(relevant, dtype=bool), settings.eps_pos, settings.eps_neg)


def position_propensity(
    rank: np.ndarray, relevant: np.ndarray, offsets: np.ndarray, settings: DCMSettings
) -> np.ndarray:
    """The logged propensity of each document, shape (n_docs,): theta_k of its rank k,
    sum_q gamma_qk P(E_qk = 1) / sum_q gamma_qk (the mean of P(E_qk = 1) where every gamma_qk is 0)."""
    rank = np.asarray(rank, dtype=np.int64)
    gamma = attraction(relevant, settings)
    examination = cascade_examination(rank, gamma, continuation_probability(rank, settings), offsets)
    size = int(rank.max(initial=0)) + 1
    weight = np.bincount(rank, weights=gamma, minlength=size)
    clicks = np.bincount(rank, weights=gamma * examination, minlength=size)
    count = np.bincount(rank, minlength=size)
    mean = np.bincount(rank, weights=examination, minlength=size) / np.maximum(count, 1)
    per_rank = np.where(weight > 0, clicks / np.where(weight > 0, weight, 1.0), mean)
    return per_rank[rank]


def simulate(
    rank, relevant, offsets, settings: DCMSettings, *, passes: int, rng: np.random.Generator, progress=None
) -> ClickLog:
    return simulate_cascade(
        rank,
        attraction(relevant, settings),
        continuation_probability(rank, settings),
        position_propensity(rank, relevant, offsets, settings),
        offsets,
        passes=passes,
        rng=rng,
        progress=progress,
    )


MODEL = ClickModel(
    name="dcm",
    settings=DCMSettings,
    simulate=simulate,
    summary="Dependent click model: scan from the top, click with eps+/eps-, go on after a click at k with "
    "continuation * k^-decay.",
)
