"""Scorers: what every trained model is to the rest of the pipeline.

A scorer maps a feature matrix to one score per document (``scores(X)``) and can be
stored as plain arrays (``to_arrays`` / ``from_arrays``), so that models of every kind are
workspace artifacts alike. New model families register a class in ``SCORERS``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from cltr.deep import MLPScorer

__all__ = ["Scorer", "LinearScorer", "SCORERS", "scorer_to_arrays", "scorer_from_arrays"]


class Scorer(Protocol):
    kind: str

    def scores(self, X: np.ndarray) -> np.ndarray:
        """Scores of the rows of ``X``, shape (n_docs,)."""

    def to_arrays(self) -> dict[str, np.ndarray]:
        ...


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
    def from_arrays(cls, arrays) -> "LinearScorer":
        return cls(w=np.asarray(arrays["w"], dtype=np.float64))


SCORERS: dict[str, type] = {"linear": LinearScorer}
SCORERS["mlp"] = MLPScorer  # Deep PropDCG's multilayer perceptron (cltr.deep)


def scorer_to_arrays(scorer) -> dict[str, np.ndarray]:
    """A scorer's arrays, prefixed ``scorer/`` and with its kind, for one .npz artifact."""
    arrays = {f"scorer/{name}": value for name, value in scorer.to_arrays().items()}
    arrays["scorer_kind"] = np.array(scorer.kind)
    return arrays


# Kinds whose module registers them on import, imported only when such a model is loaded
# (LightGBM stays unimported until a tree model is trained or read).
LAZY_SCORERS: dict[str, str] = {"lightgbm": "cltr.lambdarank"}


def scorer_from_arrays(arrays) -> "Scorer":
    kind = str(arrays["scorer_kind"])
    if kind not in SCORERS and kind in LAZY_SCORERS:
        import importlib

        importlib.import_module(LAZY_SCORERS[kind])
    if kind not in SCORERS:
        raise ValueError(f"unknown scorer kind {kind!r}; known: {', '.join(sorted(SCORERS))}")
    prefix = "scorer/"
    own = {name[len(prefix):]: arrays[name] for name in arrays if name.startswith(prefix)}
    return SCORERS[kind].from_arrays(own)
