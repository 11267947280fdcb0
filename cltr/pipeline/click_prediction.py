"""Click prediction beside ranking: a click model fitted with ``cltr clicks fit``, stored,
and judged on the held-out validation split's sessions by ``cltr evaluate`` (Hager et al.,
SIGIR 2024, report click prediction beside expert-label ranking metrics).

The scores are those of the click-model literature (Chuklin, Markov, de Rijke, "Click
Models for Web Search", Sec. 5.1-5.2; ``cltr.core.click_models_fit.evaluate_click_model``):
the log-likelihood of a session's clicks, Σ_r log P(C_r = c_r | c_<r), averaged over
sessions, and perplexity at rank r, 2 ** (-mean over sessions of log2 P(C_r = c_r)), with
the model's unconditional click probability at r, and its mean over the ranks.

The two-tower method (``cltr.methods.two_tower``) is a click model too: a document d at
rank k is clicked with probability sigmoid(r(d)) sigmoid(b_k) (multiplicative towers) or
sigmoid(r(d) + b_k) (additive), independently of the other ranks; its relevance tower
scores the validation documents from their features (``two_tower_scores``).

A click model fitted by ``cltr clicks fit`` is different. The validation split holds other
queries than the training split, so every (query, document) of its sessions is one the
model has not seen: it takes the fitted mean attractiveness, and what is judged is what the
model knows of ranks (examination, continuation) and of clicks in general.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from cltr.core.click_models_fit import (
    MODELS,
    ClickModel,
    ClickModelScores,
    evaluate_click_model,
    independent_click_scores,
    session_grid,
)
from cltr.core.queries import Dataset
from cltr.options import Options, option
from cltr.pipeline.workspace import Artifact

__all__ = [
    "FitOptions",
    "STAGE",
    "model_to_arrays",
    "model_from_arrays",
    "held_out_rows",
    "held_out_scores",
    "score_rows",
    "compared_depth",
    "two_tower_probability",
    "two_tower_scores",
]

STAGE = "clickmodels"
_PARAMETERS = ("attractiveness", "examination", "continuation", "satisfaction")


@dataclasses.dataclass(frozen=True)
class FitOptions(Options):
    """What ``cltr clicks fit`` fits, to which log, and how much it holds out."""

    log_path: str | None = option(
        None,
        "A click table (session, qid, doc or docid, rank, click; e.g. from `cltr clicks import "
        "--format baidu-raw`) [default: the training split's impressions of the dataset's current "
        "click log].",
        path="file",
        flag="--log",
    )
    model_name: str = option("pbm", "The click model to fit by EM.", choices=MODELS, flag="--model")
    max_rank: int = option(10, "Fit and judge ranks 1..MAX_RANK.", low=1)
    held_out: float = option(
        0.2,
        "Share of the sessions held out (seeded) for log-likelihood and perplexity.",
        low=0,
        high=1,
        low_open=True,
        high_open=True,
    )
    iterations: int = option(200, "At most this many EM iterations.", low=1)


def model_to_arrays(model: ClickModel) -> dict[str, np.ndarray]:
    arrays = {"pair_query": model.pair_query, "pair_doc": model.pair_doc}
    arrays.update({name: getattr(model, name) for name in _PARAMETERS if getattr(model, name) is not None})
    return arrays


def model_from_arrays(name: str, arrays, info: dict | None = None) -> ClickModel:
    return ClickModel(
        name=name,
        pair_query=np.asarray(arrays["pair_query"]),
        pair_doc=np.asarray(arrays["pair_doc"]),
        **{key: np.asarray(arrays[key]) for key in _PARAMETERS if key in arrays},
        info=dict(info or {}),
    )


def held_out_rows(clicks: Artifact, dataset: Dataset, *, split: str = "vali") -> dict[str, np.ndarray]:
    """The sessions of ``split`` of a click log as rows (session, query, doc, rank, click).
    Queries are told apart from the training split's by their sign (query = -1 - qid), so
    that a qid that both splits use never lends one split's parameters to the other's
    documents."""
    from cltr.pipeline.stages import export_rows

    columns = export_rows(clicks, split, dataset)
    return {
        "session": np.asarray(columns["session"]),
        "query": -1 - np.asarray(columns["qid"], dtype=np.int64),
        "doc": np.asarray(columns["doc"], dtype=np.int64),
        "rank": np.asarray(columns["rank"], dtype=np.int64),
        "click": np.asarray(columns["click"], dtype=np.int64),
    }


def score_rows(model: ClickModel, rows: dict[str, np.ndarray], max_rank: int) -> ClickModelScores:
    """Log-likelihood and perplexity per rank of ``model`` on the sessions of ``rows``
    (ranks 1..``max_rank``)."""
    grid, _, _ = session_grid(**rows, max_rank=max_rank, pairs=(model.pair_query, model.pair_doc))
    return evaluate_click_model(model, grid)


def held_out_scores(
    fitted: Artifact, clicks: Artifact, dataset: Dataset, *, max_rank: int | None = None
) -> ClickModelScores:
    """The stored click model ``fitted`` judged on the validation sessions of ``clicks``, ranks
    1..``max_rank`` (default: those it was fitted on; fewer keep the first terms of each
    session's likelihood, as its clicks at a rank depend on the ranks above only)."""
    model = model_from_arrays(fitted.config["model"], fitted.arrays, fitted.info)
    depth = int(fitted.info["max_rank"]) if max_rank is None else min(int(max_rank), int(fitted.info["max_rank"]))
    return score_rows(model, held_out_rows(clicks, dataset), depth)


def compared_depth(model: Artifact | None, fitted: Artifact | None, default: int = 10) -> int:
    """The ranks 1..d at which a two-tower ``model`` and a fitted click model are judged, the
    same for both so that their scores compare: the click model's ranks (``default`` without
    one), no deeper than the two-tower's bias tower reaches (where it is one)."""
    depth = int(fitted.info["max_rank"]) if fitted is not None else int(default)
    bias = None if model is None else model.info.get("position_bias", {}).get("logit")
    if model is not None and model.config.get("method") == "two-tower" and bias is not None:
        depth = min(depth, len(bias))
    return depth


def score_table(scores: ClickModelScores) -> list[dict]:
    """Perplexity per rank as table rows."""
    return [{"rank": r + 1, "perplexity": float(value)} for r, value in enumerate(scores.perplexity_by_rank)]


def two_tower_probability(relevance: np.ndarray, bias: np.ndarray, rank: np.ndarray, combination: str) -> np.ndarray:
    """P(click) of documents with relevance logits ``relevance`` shown at 1-based ``rank``
    under the two-tower model with bias logits ``bias`` (one per rank)."""
    from scipy.special import expit

    logit = np.asarray(bias, dtype=np.float64)[np.asarray(rank) - 1]
    if combination == "additive":
        return expit(np.asarray(relevance, dtype=np.float64) + logit)
    return expit(np.asarray(relevance, dtype=np.float64)) * expit(logit)


def two_tower_scores(
    model: Artifact, clicks: Artifact, dataset: Dataset, *, max_rank: int = 10
) -> ClickModelScores | None:
    """A two-tower model's click prediction on the validation sessions of ``clicks``, ranks
    1..``max_rank`` or those its bias tower has if fewer (``compared_depth`` gives a click
    model the same), or None for a model of another method."""
    from cltr.pipeline.models import scorer_from_arrays
    from cltr.pipeline.stages import export_rows

    bias = model.info.get("position_bias", {}).get("logit")
    if model.config.get("method") != "two-tower" or bias is None:
        return None
    vali = dataset.vali
    columns = export_rows(clicks, "vali", dataset)
    order = np.argsort(vali.qid, kind="stable")
    query = order[np.searchsorted(np.asarray(vali.qid)[order], np.asarray(columns["qid"]))]
    row = np.asarray(vali.offsets)[query] + np.asarray(columns["doc"], dtype=np.int64)
    rank = np.asarray(columns["rank"], dtype=np.int64)
    depth = min(int(max_rank), len(bias))
    shown = rank <= depth
    relevance = scorer_from_arrays(model.arrays).scores(vali.X)
    probability = np.zeros(len(rank))
    probability[shown] = two_tower_probability(relevance[row[shown]], bias, rank[shown], model.info["combination"])
    return independent_click_scores(
        probability, np.asarray(columns["session"]), rank, np.asarray(columns["click"]), max_rank=depth
    )
