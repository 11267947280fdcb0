"""Tree PropDCG: gradient-boosted trees (LightGBM) fitted to the propensity-weighted hinge
bound R(f) of paper Sec. 4 through a custom objective (the open question of the paper's
conclusion: a tree model trained in the counterfactual framework; see
``PropensityObjective``). Learning rate, leaves and trees are chosen on validation clicks
exactly as for LambdaRank (``trees.select_trees``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cltr.core.clicks import ClickLog, Clicks
from cltr.core.objectives import SortHint, check_signed_weights, rank_weight, risk_gradient
from cltr.core.queries import Queries
from cltr.methods import Method, TrainingData
from cltr.methods.lambdarank import click_labels
from cltr.methods.trees import TreeOptions, select_trees
from cltr.options import option

__all__ = ["PropensityObjective", "propensity_objective", "TreePropDCGOptions", "METHOD"]

ORDER = 60
HESSIAN_CHOICES = ("pairs", "constant")


def _metric(text: str) -> str:
    rank_weight(text)
    return text


@dataclass(frozen=True)
class TreePropDCGOptions(TreeOptions):
    metric: str = option("dcg", "Rank weight of the bound: dcg, rbp:P (e.g. rbp:0.8) or avgrank.", parse=_metric)
    hessian: str = option(
        "pairs",
        "Curvature given to LightGBM: per document, its active pairs' lambda'/q summed (pairs), or one constant.",
        choices=HESSIAN_CHOICES,
    )

    def __post_init__(self):
        rank_weight(self.metric)


class PropensityObjective:
    """LightGBM custom objective: the propensity-weighted hinge bound R(f) on the scores.

    Legend (paper Sec. 4, Eq. riskhinge; DESIGN.md "The general objective"):
        f(y), the tree ensemble's score -> ``preds`` (LightGBM's raw training scores)
        y_i, 1/q_i, Y_i                 -> ``clicks.doc``, ``clicks.cost`` (c_i), the rows of ``clicks.query``
        lambda                          -> ``weight`` (``rank_weight("dcg" | "rbp:P" | "avgrank")``)

    **Gradient.** ``n · dR/df``, i.e. ``objectives.risk_gradient`` with ``n=1``: for a
    document y and example i with active pair (hinge > 0), c_i = lambda'(bound_i) / q_i
    is added to y's gradient and subtracted from y_i's. The factor n (the number of
    clicks) changes no minimiser and, with the curvature below, no leaf value (LightGBM's
    leaf value is -Σg / (Σh + lambda_l2), a ratio); it only keeps g and h per click of
    order lambda'/q whatever the log's size, so that LightGBM's absolute thresholds
    (``min_sum_hessian_in_leaf`` = 1e-3, split gains) mean the same thing on 200 clicks
    and on 200,000, where (1/n)-scaled values would fall below them.

    **Curvature** (``hessian="pairs"``, the default). R is piecewise linear in the scores
    inside every hinge and lambda is concave, so its true second derivative is 0 or
    negative: there is no Newton curvature to take, and LightGBM needs a positive one.
    We take, per document, the sum of the absolute values of its pair terms,

        h(y) = Σ_{i : y in A_i} c_i  +  Σ_{i : y = y_i} c_i |A_i|,

    the count of active pairs times lambda'/q. It is the Gauss–Newton curvature of the
    squared hinge ½ c_i max(0, 1 - (f(y_i) - f(y)))², whose slope equals the hinge's,
    c_i, where the pair sits at the tie f(y_i) = f(y) (every pair of the first tree), and
    it bounds the gradient: |g(y)| <= h(y) for every document, hence |Σg| <= Σh in every
    leaf. So each tree moves a leaf's scores by at most 1 (times the learning rate), the
    width of a hinge's linear piece: a step cannot jump a pair across its whole margin,
    and the step does not depend on the overall scale of the propensities or of lambda'.
    Documents in no active pair have g = h = 0 and pull no leaf either way (a floor of
    1e-9 of the initial mean curvature keeps every sum positive).

    ``hessian="constant"`` uses one number for every document instead, the mean of the
    pair curvature over the training documents at the start (all scores 0), so that both
    choices take steps of the same size at the first tree. Then a leaf's value is the
    mean gradient of its documents, in units of that constant: frequently clicked
    documents (many 1/q-weighted pairs) take larger steps than others. On validation
    clicks the pair curvature does better (docs/explanation/methods.md, "Tree PropDCG"), so it is the default.

    Parameters
    ----------
    offsets : ndarray, shape (n_queries + 1,)
        Query offsets of the training rows handed to LightGBM.
    clicks : Clicks
        Query and row (within those training rows) of each example, and its cost c_i: 1/q_i,
        or a correction's weight (the affine correction's are signed; the curvature then sums
        absolute pair terms).
    weight : RankWeight or str
        lambda, e.g. ``"dcg"``.
    hessian : {"pairs", "constant"}
    """

    def __init__(self, offsets, clicks: Clicks, weight, *, hessian: str = "pairs"):
        if hessian not in HESSIAN_CHOICES:
            raise ValueError(f"hessian must be one of {', '.join(HESSIAN_CHOICES)}, found {hessian!r}")
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.clicks = clicks
        self.weight = rank_weight(weight)
        if len(self.clicks) == 0:
            raise ValueError("no clicks: Tree PropDCG has nothing to learn from")
        self.hessian = hessian
        self.n_docs = int(self.offsets[-1])
        self.hint = SortHint()  # boosting moves the scores a little per tree: each sort starts from the last
        start = self.pair_curvature(np.zeros(self.n_docs))
        self.scale = float(start.mean())
        if not self.scale > 0:
            raise ValueError(
                "no clicked document has another candidate in its query; Tree PropDCG has no pair to order"
            )
        self.floor = 1e-9 * self.scale

    def gradient(self, scores: np.ndarray, *, with_curvature: bool = False):
        """``(n · R(f), n · dR/df)`` at ``scores``, shape (n_docs,), by ``risk_gradient``
        (and the pair curvature, with ``with_curvature``)."""
        return risk_gradient(
            scores, self.offsets, self.clicks, self.weight, n=1, with_curvature=with_curvature, hint=self.hint
        )

    def pair_curvature(self, scores: np.ndarray) -> np.ndarray:
        """h(y) = Σ over y's active pairs of lambda'(bound_i) |c_i|, shape (n_docs,)."""
        return self.gradient(scores, with_curvature=True)[2]

    def __call__(self, preds, _dataset) -> tuple[np.ndarray, np.ndarray]:
        """LightGBM's custom objective: the gradient and a positive curvature, shape (n_docs,)."""
        _, grad, curvature = self.gradient(np.asarray(preds, dtype=np.float64), with_curvature=True)
        if self.hessian == "constant":
            return grad, np.full(self.n_docs, self.scale)
        return grad, curvature + self.floor


def propensity_objective(queries: Queries, log: ClickLog, weight, *, hessian: str = "pairs"):
    """Tree PropDCG's training rows and objective from a click log.

    Parameters
    ----------
    queries : Queries
        The split the clicks were logged on.
    log : ClickLog
        Its examples (queries, documents, weights ``log.cost``).
    weight : RankWeight or str
    hessian : {"pairs", "constant"}

    Returns
    -------
    rows : ndarray of int64, shape (n_rows,)
        Rows of ``queries.X`` given to LightGBM: every candidate of every query with a click
        (a query without one has no term in R(f)).
    objective : PropensityObjective
        Over those rows, in that order; repeated examples (one document, one weight c)
        merged into one example of weight m·c, which leaves n·R(f) unchanged.
    """
    click = click_labels(queries, log, labels="documents")
    if len(click.group) == 0:
        raise ValueError("no training query has a clicked document; Tree PropDCG has nothing to learn from")
    offsets = np.concatenate([[0], np.cumsum(click.group)]).astype(np.int64)
    position = np.searchsorted(click.group_query, log.query)
    doc = offsets[position] + (log.doc - np.asarray(queries.offsets, dtype=np.int64)[log.query])
    # m clicks on one document with one weight c are m equal terms c lambda(bound): one
    # term with weight m·c is the same sum, exactly, for R, its gradient and the
    # curvature. Over 100 passes of a fixed production ranking this merges most clicks.
    key = np.stack([doc.astype(np.float64), np.asarray(log.cost, dtype=np.float64)], axis=1)
    unique, count = np.unique(key, axis=0, return_counts=True)
    unique_doc = unique[:, 0].astype(np.int64)
    unique_query = np.searchsorted(offsets, unique_doc, side="right") - 1
    return click.rows, PropensityObjective(
        offsets, Clicks(unique_query, unique_doc, unique[:, 1] * count), weight, hessian=hessian
    )


def train(data: TrainingData, options: TreePropDCGOptions, *, progress=None):
    weight = rank_weight(options.metric)
    check_signed_weights(data.train_log.cost, weight)
    rows, objective = propensity_objective(data.dataset.train, data.train_log, weight, hessian=options.hessian)
    scorer, info = select_trees(
        data,
        options,
        name="tree-propdcg",
        X=data.dataset.train.X[rows],
        label=np.zeros(len(rows)),
        group=None,
        objective=objective,
        progress=progress,
    )
    info.update(
        {
            "metric": weight.name,
            "hessian": options.hessian,
            "training_rows": int(len(rows)),
            "training_clicks": int(len(data.train_log)),
        }
    )
    return scorer, info


METHOD = Method(
    name="tree-propdcg",
    label="Tree PropDCG",
    options=TreePropDCGOptions,
    train=train,
    tuned_once=("learning_rate", "num_leaves"),
    summary="LightGBM on the propensity-weighted DCG bound (custom objective).",
    description="Tree PropDCG: gradient-boosted trees (LightGBM) fitted to the propensity-weighted hinge bound "
    "R(f) on DCG (or --metric), the paper's objective, through a custom objective whose gradient is "
    "dR/dscores. Learning rate and leaves are chosen, and the number of trees early-stopped, by "
    "SNIPS Avg DCG on validation clicks, as for lambdarank.",
    scorer="lightgbm",
)
