"""Tree PBM: gradient-boosted trees fitted to the clicks by the position-based model's
likelihood, with the log's propensities as the examination; the trees alone rank.

Legend (paper Sec. 2's click model, DESIGN.md "Propensities"):
    q           -> the examination propensity of a displayed (document, rank) as the log tells
                   it (simulated, estimated with ``--propensities estimated``, or misspecified
                   with ``--eta-model``): ``TrainingData.displayed("train").propensity``
    f(x)        -> the trees (LightGBM, custom objective; every score starts at 0)
    σ(f(x))     -> the probability of a click once examined (relevance, with its noise:
                   eps+ for relevant, eps- for irrelevant documents in the simulator)
    P           -> q σ(f), the click probability of one impression (the PBM itself)
    n, c        -> impressions and clicks of one (document, propensity) over the whole log
                   (``cltr.core.doubly_robust.impressions_by_propensity``, one training row each)
    loss        -> Σ -c log P - (n - c) log(1 - P), the negative log-likelihood of the clicks

**Why.** The propensity-weighted methods (SVM PropDCG, Tree PropDCG, Deep PropDCG) weigh a
click by 1/q: unbiased, but at a steep bias (eta 2: q = 1/100 at rank 10) a few deep clicks
carry most of the weight and the effective sample size falls to 1% of the clicks, where
clipping buys variance with bias. The likelihood reads q where it belongs, in the click
probability: a deep impression that was not clicked says little (P is small whatever the
relevance) and a deep click says much, each by exactly the information it holds, and no
weight explodes. ``tree-two-tower`` and LightGBM's position debiasing also model the
examination, but learn it from the clicks, and with one deterministic production ranker can
confuse a rank's documents with its examination; this model takes the examination as known,
as the propensity methods do. It maximises the likelihood that Wang et al.'s regression EM
(WSDM 2018) maximises jointly with unknown propensities, here with q fixed and with trees;
``cltr.core.doubly_robust`` fits the same likelihood with a linear model as its regression
term. Unlike an IPS estimate, the likelihood depends on the absolute scale of q: a q below
the true examination (e.g. ``--eta-model`` steeper than the log's) leaves rows with more
clicks than n q can explain, whose σ(f) is pushed towards 1.

**One boosting round** (``PBMObjective``). With P = q σ(f) and dP/df = P σ(-f):

    gradient  g = (n P - c) · σ(-f) / (1 - P)
    curvature h = n P · σ(-f) / (1 - P) · σ(-f)     (Fisher: n (dP/df)² / (P (1 - P)))

where σ(-f) / (1 - P) = 1 / (1 + (1 - q) e^f) = σ(-(f + log(1 - q))) stays finite as P -> 1.

The log-likelihood's own second derivative can be positive (it is not concave in f for every
q), so the curvature is its expectation, Fisher scoring, as ``tree-two-tower``'s is. The leaf
penalty (``--leaf-l2``, LightGBM's ``lambda_l2``, default 1 as in ``tree-two-tower``): a leaf's
value is -Σg / (Σh + λ), and the curvature of rows shown deep is tiny.

Selection: learning rate and leaves over the grids of ``cltr.methods.trees``, compared by
``TrainingData.estimate`` (SNIPS Avg DCG on validation clicks) as every tree method here, each
candidate at its own number of trees. **That number is chosen by the held-out likelihood**
(``--stopping likelihood``): the mean log-likelihood per impression of every displayed
validation document under P = q σ(f), every 5 trees, patience 50. The other tree methods stop
on the SNIPS estimate, and so did this one (``--stopping criterion``), but on a hard log that
estimate rewards the way this model overfits. The validation clicks are clipped there
at their own TAU_v (``cltr.core.selection.validation_clip``: 0.003 at eta 2), which counts a
deep click at q / TAU_v of its weight, so the estimate favours a ranking that pushes what
production showed deep further down; a PBM fit grown too far likely learns just that (a region
of deep impressions without a click pushed towards σ = 0 on a few expected clicks' evidence).
What was seen (``python bench/stopping_path.py``, seed 0 below, rate 0.1, 256 leaves): from
20 to 200 trees the clipped estimate rose from 0.479 to 0.504 (unclipped, 0.383 to 0.389)
while the test Avg DCG fell from 0.628 to 0.620 and the likelihood from -0.04039 to -0.04129;
the 4-leaf candidate at 200 trees scored 0.494 clipped (below), 0.395 unclipped (above) and
0.671 on test. Stopped on the clipped estimate, the grid preferred the largest trees grown
longest. The likelihood reads every impression, without weights or clipping, and is the
quantity the trees fit: it turns down where they start to fit noise, and smoothly (its paths
in that script), so the tree methods' patience of 50 trees serves it. On six hard logs
of the embedded default's data (one production ranker, eta 2, eps- 0.3, click seeds 0-5;
``python bench/hard_logs.py --synthetic --seeds 6 --logs 2:0.3 --methods
tree-pbm,tree-pbm@stopping=criterion@patience=1000,lightgbm-position@learning_rate=0.1@num_leaves=4``)
the default scored 0.6731 ± 0.0033 on test, stopping on the estimate (every candidate grown
its whole budget, as this method did before) 0.6489 ± 0.0026, having chosen 256 leaves
at rate 0.01 and 920-1,000 trees on every seed: 0.0242 lower on all six, paired t p 4e-5 (the
default above LightGBM's position debiasing at rate 0.1, 4 leaves on all six, +0.0189, p
0.006), in two thirds of the time (192 s against 290 s a training).
Clipping (``--clip``) does not apply: no click is weighted, and for the same reason no
``--correction`` but the default applies.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cltr.core.doubly_robust import PropensityImpressions, impressions_by_propensity
from cltr.methods import Method, TrainingData
from cltr.methods.trees import LeafPenaltyOptions, expit, floored_curvature, select_trees, selection_table
from cltr.options import option

__all__ = ["METHOD", "PBMObjective", "TreePBMOptions", "held_out_likelihood"]

ORDER = 77


class PBMObjective:
    """LightGBM custom objective: the clicks' negative log-likelihood under P = q σ(f)
    (module docs), one row per (document, propensity) of the training log.

    Parameters
    ----------
    rows : PropensityImpressions
        ``propensity`` (q), ``impressions`` (n) and ``clicks`` (c) of each row.
    """

    def __init__(self, rows: PropensityImpressions):
        self.q = np.asarray(rows.propensity, dtype=np.float64)
        self.n = np.asarray(rows.impressions, dtype=np.float64)
        self.c = np.asarray(rows.clicks, dtype=np.float64)
        with np.errstate(divide="ignore"):  # q = 1: log(1 - q) = -inf, and every formula below takes it
            self.log_unexamined = np.log1p(-self.q)

    def terms(self, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Gradient and Fisher curvature of each row's loss in its score f."""
        f = np.asarray(scores, dtype=np.float64)
        p = self.q * expit(f)
        # σ(-f) / (1 - P) = 1 / (1 + (1 - q) e^f) = σ(-(f + log(1 - q))): finite where P -> 1
        ratio = expit(-(f + self.log_unexamined))
        return (self.n * p - self.c) * ratio, self.n * p * ratio * expit(-f)

    def loss(self, scores: np.ndarray) -> float:
        """Σ -c log P - (n - c) log(1 - P) at the scores f."""
        f = np.asarray(scores, dtype=np.float64)
        log_click = np.log(self.q) - np.logaddexp(0.0, -f)
        # log(1 - P) = log σ(-f) - log(σ(-f) / (1 - P))
        log_no_click = np.logaddexp(0.0, f + self.log_unexamined) - np.logaddexp(0.0, f)
        return float(np.sum(-self.c * log_click - (self.n - self.c) * log_no_click))

    def __call__(self, preds, _dataset) -> tuple[np.ndarray, np.ndarray]:
        grad, hess = self.terms(preds)
        return grad, floored_curvature(hess)


def held_out_likelihood(rows: PropensityImpressions):
    """The early-stopping criterion: the mean log-likelihood per impression of held-out
    rows (the validation split's, by (document, propensity)) under P = q σ(f), from the
    split's scores f; higher is better."""
    model = PBMObjective(rows)
    impressions = max(float(np.sum(rows.impressions)), 1.0)

    def criterion(scores: np.ndarray) -> float:
        return -model.loss(np.asarray(scores, dtype=np.float64)[rows.doc]) / impressions

    return criterion


STOPPINGS = ("likelihood", "criterion")


@dataclass(frozen=True)
class TreePBMOptions(LeafPenaltyOptions):
    stopping: str = option(
        "likelihood",
        "What each candidate's number of trees is chosen by on the validation split: likelihood (the "
        "position-based model's log-likelihood of every displayed validation document, the model's own "
        "fit) or criterion (the selection criterion, --criterion, as the other tree methods; on a hard log "
        "with --patience 1000, so that a noisy estimate's early fluke stops no run). The candidates are "
        "compared by --criterion either way (module docs).",
        choices=STOPPINGS,
    )


def train(data: TrainingData, options: TreePBMOptions, *, progress=None):
    rows = impressions_by_propensity(data.displayed("train"), needed_by="tree-pbm")
    if not len(rows.doc) or int(np.sum(rows.clicks)) == 0:
        raise ValueError(
            "the training log has no click on a displayed document; the position-based model has nothing to learn from"
        )
    stopping = None
    if options.stopping == "likelihood" and options.n_estimators is None:
        stopping = held_out_likelihood(impressions_by_propensity(data.displayed("vali"), needed_by="tree-pbm"))
    scorer, info = select_trees(
        data,
        options,
        name="tree-pbm",
        X=data.dataset.train.X[rows.doc],
        label=np.zeros(len(rows.doc)),
        group=None,
        objective=PBMObjective(rows),
        progress=progress,
        extra_params={"lambda_l2": float(options.leaf_l2)},
        stopping=stopping,
    )
    info.update({"training_rows": len(rows.doc), "training_impressions": int(rows.impressions.sum())})
    if stopping is not None:
        info["stopping"] = "validation_log_likelihood"
        for row in info["selection"]:
            row["validation_log_likelihood"] = row["best_criterion"]
    return scorer, info


def tables(info: dict) -> list:
    title, rows, columns = selection_table(info)
    if info.get("stopping") == "validation_log_likelihood":
        columns = [*columns[:3], "validation_log_likelihood", *columns[3:]]
    return [(title, rows, columns)]


METHOD = Method(
    name="tree-pbm",
    label="Tree PBM",
    options=TreePBMOptions,
    train=train,
    tables=tables,
    tuned_once=("learning_rate", "num_leaves"),
    weighted=False,  # the propensities enter the likelihood, not as 1/q weights: nothing to clip
    corrections=("ips",),  # nor a weight for a correction to change
    summary="Trees fitted by the position-based model's click likelihood at the log's propensities.",
    description="Gradient-boosted trees (LightGBM, custom objective) whose score gives the probability of a "
    "click once examined, σ(f(x)), fitted to the clicks of every displayed document by the likelihood of the "
    "position-based model P(click) = q σ(f(x)) with the log's propensities q as the examination: no 1/q "
    "weights, so no variance to clip at a steep bias. Each candidate's number of trees is chosen by the "
    "model's log-likelihood of the validation impressions, learning rate and leaves by SNIPS Avg DCG on "
    "validation clicks.",
    scorer="lightgbm",
)
