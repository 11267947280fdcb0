"""``xgboost``: an XGBoost model kept as its JSON text (``xgboost-unbiased``, an optional
extra: XGBoost is imported when such a model is scored)."""

from __future__ import annotations

from cltr.scorers import ScorerKind

ORDER = 40


def load(arrays):
    from cltr.methods.xgboost_unbiased import XGBoostScorer

    return XGBoostScorer.from_arrays(arrays)


SCORER = ScorerKind(
    name="xgboost",
    summary="Gradient-boosted trees of XGBoost, kept as the booster's JSON text and its feature count.",
    load=load,
    width=lambda scorer: int(scorer.n_features),
)
