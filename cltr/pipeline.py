"""The stages of the paper's pipeline as pure functions (no files, no printing).

produce -> present -> simulate -> train -> evaluate, each taking numpy data and seeds and
returning arrays plus an ``info`` dict. ``cli`` stores their results in the workspace and
``experiments`` fans them out over repetitions; both call exactly these functions.

Seeds: every random draw comes from ``stream(seed, purpose...)``, a generator derived
from the user's seed and the purpose of the draw, so that stages and repetitions never
share or disturb each other's randomness and any one can be re-run alone.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Callable

import numpy as np

from cltr.clicks import ClickLog, position_based_model, simulate_clicks
from cltr.datasets import Dataset, Queries
from cltr.models import LinearScorer
from cltr.ranking import avg_dcg, avg_rank, ndcg_at_k, rank_documents, snips_avg_dcg
from cltr.svm import SVMResult, solve_pairwise_svm

__all__ = [
    "stream",
    "production_queries",
    "train_ranking_svm",
    "produce",
    "simulate",
    "train_svm_on_clicks",
    "evaluate",
    "validation_estimate",
    "DEFAULT_C_GRID",
]

DEFAULT_C_GRID = tuple(float(c) for c in np.logspace(-3, 3, 7))


def stream(seed: int, *purpose: str | int) -> np.random.Generator:
    """A generator for one purpose (e.g. ``stream(seed, "clicks", "train", rep)``)."""
    words = [p if isinstance(p, int) else zlib.crc32(str(p).encode()) for p in purpose]
    return np.random.default_rng(np.random.SeedSequence(entropy=int(seed), spawn_key=tuple(words)))


# -- full-information Ranking SVM (production ranker, skyline) -------------------------

def production_queries(queries: Queries, relevant: np.ndarray, *, fraction: float,
                       rng: np.random.Generator) -> np.ndarray:
    """A random ``fraction`` of the queries (at least one, and at least one with a relevant document).

    Returns the chosen query indices, sorted.
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must lie in (0, 1], found {fraction}")
    sizes = np.diff(queries.offsets)
    has_relevant = np.bincount(queries.doc_query, weights=relevant, minlength=len(sizes)) > 0
    if not has_relevant.any():
        raise ValueError("no training query has a relevant document; cannot train a ranker")
    order = rng.permutation(queries.n_queries)
    count = max(1, int(round(fraction * queries.n_queries)))
    chosen = order[:count]
    if not has_relevant[chosen].any():
        # Swap in the first query with a relevant document in the same random order.
        chosen = np.concatenate([chosen[:-1], order[has_relevant[order]][:1]])
    return np.sort(chosen)


def train_ranking_svm(queries: Queries, relevant: np.ndarray, *, C: float, tol: float = 1e-3,
                      w0: np.ndarray | None = None) -> SVMResult:
    """A conventional Ranking SVM: one example per relevant document, Y_i = its query's irrelevant ones."""
    relevant = np.asarray(relevant, dtype=bool)
    click_doc = np.flatnonzero(relevant)
    return solve_pairwise_svm(
        queries.X, queries.offsets, queries.doc_query[click_doc], click_doc,
        np.ones(len(click_doc)), C, candidate=~relevant, w0=w0, tol=tol,
    )


def produce(dataset: Dataset, *, fraction: float = 0.01, C: float = 1.0, seed: int = 0,
            tol: float = 1e-3) -> tuple[LinearScorer, dict]:
    """The production ranker: a Ranking SVM on a seeded ``fraction`` of the training queries."""
    train = dataset.train
    relevant = train.relevant(dataset.relevant_from)
    chosen = production_queries(train, relevant, fraction=fraction, rng=stream(seed, "production"))
    sample = train.subset(chosen)
    result = train_ranking_svm(sample, sample.relevant(dataset.relevant_from), C=C, tol=tol)
    info = {"queries": chosen.tolist(), "n_queries": len(chosen),
            "n_relevant": int(sample.relevant(dataset.relevant_from).sum()), **solver_info(result)}
    return LinearScorer(result.w), info


def solver_info(result: SVMResult) -> dict:
    return {"objective": result.objective, "lower_bound": result.lower_bound, "gap": result.gap,
            "iterations": result.iterations, "solver_seconds": result.seconds,
            "converged": result.converged}


# -- clicks --------------------------------------------------------------------------

@dataclass(frozen=True)
class ClickSettings:
    """The position-based model of DESIGN.md, with its defaults (paper Sec. 5.1)."""

    eta: float = 1.0
    eps_pos: float = 1.0
    eps_neg: float = 0.1
    passes: int = 100
    eta_model: float | None = None


def simulate(queries: Queries, relevant: np.ndarray, production, settings: ClickSettings, *,
             rng_presentation: np.random.Generator, rng_clicks: np.random.Generator,
             progress: Callable[[int], None] | None = None) -> ClickLog:
    """Clicks on one split presented in the production ranker's order."""
    rank = rank_documents(production.scores(queries.X), queries.offsets, rng_presentation)
    click_probability, propensity = position_based_model(
        rank, relevant, eta=settings.eta, eps_pos=settings.eps_pos, eps_neg=settings.eps_neg,
        eta_model=settings.eta_model)
    return simulate_clicks(rank, click_probability, propensity, queries.offsets,
                           passes=settings.passes, rng=rng_clicks, progress=progress)


def click_log_summary(log: ClickLog, relevant: np.ndarray) -> dict:
    """What ``cltr simulate`` prints about a log."""
    n = len(log)
    return {
        "sessions": log.n_sessions,
        "clicks": n,
        "irrelevant_click_share": float(np.mean(~relevant[log.doc])) if n else float("nan"),
        "clicks_per_query": n / log.n_sessions,
        "mean_propensity": float(log.propensity.mean()) if n else float("nan"),
        "min_propensity": float(log.propensity.min()) if n else float("nan"),
    }


# -- learning from clicks ------------------------------------------------------------

def train_svm_on_clicks(queries: Queries, log: ClickLog, *, C: float, propensity_weighted: bool = True,
                        tol: float = 1e-3, w0: np.ndarray | None = None) -> SVMResult:
    """SVM PropRank (c_i = 1/q_i) or naive SVM Rank (c_i = 1): Y_i = every document of the query."""
    cost = 1.0 / log.propensity if propensity_weighted else np.ones(len(log))
    return solve_pairwise_svm(queries.X, queries.offsets, log.query, log.doc, cost, C, w0=w0, tol=tol)


# -- evaluation ----------------------------------------------------------------------

def evaluate(scorer, queries: Queries, relevant: np.ndarray, *, rng: np.random.Generator) -> dict:
    """Avg DCG, Avg Rank and nDCG@10 on a fully labelled split (binarized labels)."""
    ranks = rank_documents(scorer.scores(queries.X), queries.offsets, rng)
    return {"avg_dcg": avg_dcg(ranks, relevant), "avg_rank": avg_rank(ranks, relevant),
            "ndcg@10": ndcg_at_k(ranks, relevant, queries.offsets, k=10)}


def validation_estimate(scorer, queries: Queries, log: ClickLog, *, rng: np.random.Generator) -> float:
    """SNIPS estimate of Avg DCG on (validation) clicks: the model-selection criterion."""
    ranks = rank_documents(scorer.scores(queries.X), queries.offsets, rng)
    return snips_avg_dcg(ranks, log.doc, log.propensity)
