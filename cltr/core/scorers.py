"""Scorers: what every trained model is to the rest of the pipeline.

A scorer maps a feature matrix to one score per document (``scores(X)``) and can be
stored as plain arrays (``to_arrays`` / ``from_arrays``), so that models of every kind are
workspace artifacts alike (``cltr.pipeline.models``; the kinds are ``cltr.scorers``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

__all__ = ["Scorer", "LinearScorer"]


class Scorer(Protocol):
    kind: str

    def scores(self, X: np.ndarray) -> np.ndarray:
        """Scores of the rows of ``X``, shape (n_docs,)."""

    def to_arrays(self) -> dict[str, np.ndarray]: ...


@dataclass(frozen=True)
class LinearScorer:
    """f(x, y) = w . phi(x, y), the scorer of every SVM of the paper (no bias term)."""

    w: np.ndarray
    kind: str = "linear"

    def scores(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(X @ self.w.astype(X.dtype, copy=False), dtype=np.float64)

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {"w": self.w}

    @classmethod
    def from_arrays(cls, arrays) -> LinearScorer:
        return cls(w=np.asarray(arrays["w"], dtype=np.float64))
