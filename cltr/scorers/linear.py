"""``linear``: f(x) = w . x, the model of every SVM (the production ranker and the skyline too)."""

from __future__ import annotations

from cltr.core.scorers import LinearScorer
from cltr.scorers import ScorerKind

ORDER = 10

SCORER = ScorerKind(
    name="linear",
    summary="f(x) = w . x (no bias term): every SVM, the production ranker and the skyline.",
    load=LinearScorer.from_arrays,
    width=lambda scorer: len(scorer.w),
)
