"""``mlp``: a multilayer perceptron scoring each document (Deep PropDCG, the two-tower model's
relevance tower)."""

from __future__ import annotations

from cltr.core.mlp import MLPScorer
from cltr.scorers import ScorerKind

ORDER = 20

SCORER = ScorerKind(
    name="mlp",
    summary="A multilayer perceptron with its input standardisation (Deep PropDCG, two-tower).",
    load=MLPScorer.from_arrays,
    width=lambda scorer: int(scorer.weights[0].shape[0]),
)
