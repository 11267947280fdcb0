"""LightGBM's own position debiasing (LightGBM >= 4.1): LambdaMART on one group per
session, clicks as labels, the displayed rank as each row's position, with an additive
position bias learned alongside the trees; the practitioner's baseline of issue 22.

Legend (LightGBM docs, "Support for Position Bias Treatment"):
    s(x, pos) = f(x) + g(pos)   -> LambdaRank fits the compound score on the clicks;
                                   ``f`` (the trees) is the returned model, ``g`` one
                                   number per displayed rank, updated by a Newton step
                                   from the summed gradients of its rows at every tree
    pos                          -> ``Dataset(position=rank - 1)``; LightGBM treats
                                   positions as categories, so only their identity counts
    label                        -> 1 where clicked in the session, else 0
    group                        -> one session (its displayed documents, in rank order)
    ``lambdarank_position_bias_regularization`` -> ``--position-bias-regularization``
                                   (L2 on g, LightGBM's default 0)

The data (``cltr.methods.sessions``): sessions without a click are left out (no pair,
so no gradient and no position-bias update), and identical sessions (same documents, ranks
and clicks; a deterministic production ranker repeats its list in every pass) are merged
into one group whose rows weigh the number of sessions it stands for. LightGBM scales each
row's gradient and curvature by its weight and updates the position biases from those
weighted sums, so the merged data give the full log's gradients and position-bias
updates; only what counts rows (``min_data_in_leaf``, the feature bins' quantiles, the
position-bias regularisation) sees distinct rows instead of sessions.

Selection: learning rate and leaves over the grids of ``cltr.methods.trees``, trees early
stopped, all by ``TrainingData.estimate`` (SNIPS Avg DCG on validation clicks), like every
tree method here. The propensities of the log are not used: the position bias is learned.
"""

from __future__ import annotations

from dataclasses import dataclass

from cltr.methods import Method, TrainingData
from cltr.methods.sessions import clicked_sessions, session_groups
from cltr.methods.trees import TreeOptions, select_trees
from cltr.options import option

__all__ = ["METHOD", "LightGBMPositionOptions"]

ORDER = 80


@dataclass(frozen=True)
class LightGBMPositionOptions(TreeOptions):
    position_bias_regularization: float = option(
        0.0,
        "LightGBM's lambdarank_position_bias_regularization: L2 penalty on the learned position biases "
        "(larger values shrink them).",
        low=0,
    )
    merge: bool = option(
        True,
        "Merge identical sessions into one weighted group (the full log's gradients, "
        "far fewer rows; see the module docs).",
    )


def train(data: TrainingData, options: LightGBMPositionOptions, *, progress=None):
    """Grid over learning rate and leaves, trees by early stopping, on validation clicks."""
    displayed = data.displayed("train")
    groups = session_groups(displayed, clicked_sessions(displayed), merge=options.merge)
    if len(groups.group) == 0:
        raise ValueError("no training session has a click; LightGBM's LambdaRank has no pair to learn from")
    scorer, info = select_trees(
        data,
        options,
        name="lightgbm-position",
        X=data.dataset.train.X[groups.doc],
        label=groups.label,
        group=groups.group,
        objective=None,
        progress=progress,
        weight=groups.row_weight if options.merge else None,
        position=groups.position,
        extra_params={"lambdarank_position_bias_regularization": float(options.position_bias_regularization)},
    )
    info.update(groups.info())
    info["position_bias_regularization"] = float(options.position_bias_regularization)
    return scorer, info


METHOD = Method(
    name="lightgbm-position",
    label="LightGBM position-debiased",
    options=LightGBMPositionOptions,
    train=train,
    tuned_once=("learning_rate", "num_leaves"),
    weighted=False,  # the position biases are learned; no 1/q is read, so clipping changes nothing
    summary="LightGBM LambdaRank on sessions with its own learned position bias (Dataset(position=...)).",
    description="LightGBM's position debiasing (LightGBM >= 4.1): one LambdaRank group per session with a click, "
    "clicks as labels, the displayed rank as position; LightGBM learns an additive bias per position "
    "with the trees and returns the trees alone. Identical sessions are merged into weighted groups "
    "(the full log's gradients). Learning rate and leaves are chosen, and trees early-stopped, by SNIPS "
    "Avg DCG on validation clicks.",
    scorer="lightgbm",
)
