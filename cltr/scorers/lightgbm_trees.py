"""``lightgbm``: a LightGBM model kept as its model string (LambdaRank, Tree PropDCG and the
other LightGBM methods). ``cltr.methods.trees`` holds the scorer, and is the one module that
imports LightGBM: it is imported when such a model is read."""

from __future__ import annotations

from cltr.scorers import ScorerKind

ORDER = 30


def load(arrays):
    from cltr.methods.trees import TreeScorer

    return TreeScorer.from_arrays(arrays)


SCORER = ScorerKind(
    name="lightgbm",
    summary="Gradient-boosted trees of LightGBM, kept as the booster's model string.",
    load=load,
    width=lambda scorer: int(scorer.booster.num_feature()),
)
