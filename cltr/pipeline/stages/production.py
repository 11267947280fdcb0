"""The production ranker (a Ranking SVM on a small fraction of the training queries) and the
further logging rankers made by its recipe. Part of ``cltr.pipeline.stages``."""

from __future__ import annotations

import dataclasses

import numpy as np

from cltr.core.queries import Dataset, Queries
from cltr.core.ranking import evaluate
from cltr.core.scorers import LinearScorer
from cltr.core.seeds import stream
from cltr.core.svm import solver_info, train_ranking_svm
from cltr.options import Options, option
from cltr.pipeline.models import scorer_to_arrays
from cltr.pipeline.workspace import Artifact, Workspace


def production_queries(
    queries: Queries, relevant: np.ndarray, *, fraction: float, rng: np.random.Generator
) -> np.ndarray:
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


def produce(
    dataset: Dataset, *, fraction: float = 0.01, C: float = 1.0, seed: int = 0, ranker: int = 0, tol: float = 1e-3
) -> tuple[LinearScorer, dict]:
    """The production ranker: a Ranking SVM on a seeded ``fraction`` of the training queries.

    ``ranker`` k > 0 draws its own sample (``--rankers K``: K logging rankers)."""
    train = dataset.train
    relevant = train.relevant(dataset.relevant_from)
    rng = stream(seed, "production") if ranker == 0 else stream(seed, "production", ranker)
    chosen = production_queries(train, relevant, fraction=fraction, rng=rng)
    sample = train.subset(chosen)
    result = train_ranking_svm(sample, sample.relevant(dataset.relevant_from), C=C, tol=tol)
    info = {
        "queries": chosen.tolist(),
        "n_queries": len(chosen),
        "n_relevant": int(sample.relevant(dataset.relevant_from).sum()),
        **solver_info(result),
    }
    return LinearScorer(result.w), info


@dataclasses.dataclass(frozen=True)
class ProductionOptions(Options):
    """Settings of the production ranker (``cltr produce``, ``Session.produce``)."""

    fraction: float = option(
        0.01, "Share of training queries with labels the production ranker sees.", low=0, high=1, low_open=True
    )
    C: float = option(1.0, "Regularisation constant of the production Ranking SVM.", low=0, low_open=True, flag="-C")


def production_stage(
    workspace: Workspace,
    name: str,
    dataset: Dataset,
    fingerprint: str,
    *,
    fraction: float = 0.01,
    C: float = 1.0,
    seed: int = 0,
    ranker: int = 0,
) -> tuple[Artifact, bool]:
    """The production ranker (Ranking SVM on ``fraction`` of the training queries) and its test metrics."""
    config = {
        "dataset": fingerprint,
        "fraction": fraction,
        "C": C,
        "seed": seed,
        **({"ranker": ranker} if ranker else {}),
    }

    def compute():
        scorer, info = produce(dataset, fraction=fraction, C=C, seed=seed, ranker=ranker)
        info["test"] = evaluate(
            scorer,
            dataset.test,
            dataset.test.relevant(dataset.relevant_from),
            rng=stream(seed, "evaluate"),
            dcg_base=dataset.dcg_base,
        )
        return scorer_to_arrays(scorer), info

    return workspace.cached(name, "production", config, compute)


def logging_rankers(
    workspace: Workspace, name: str, dataset: Dataset, fingerprint: str, production: Artifact, rankers: int
) -> list[Artifact]:
    """``production`` and ``rankers - 1`` more logging rankers made by its recipe (fraction,
    C, seed), each on its own sample of queries (``produce``'s ``ranker``)."""
    recipe = {k: production.config[k] for k in ("fraction", "C", "seed")}
    return [production] + [
        production_stage(workspace, name, dataset, fingerprint, ranker=k, **recipe)[0] for k in range(1, rankers)
    ]
