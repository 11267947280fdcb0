"""Trained models as artifacts: a scorer of any kind stored as plain arrays, and read back.

The kinds (``linear``, ``mlp``, ``lightgbm``, ``xgboost``, ...) are the registry of
``cltr.scorers``, one file each: a new scorer kind is a new file there.
"""

from __future__ import annotations

import numpy as np

from cltr import scorers

__all__ = ["scorer_to_arrays", "scorer_from_arrays"]


def scorer_to_arrays(scorer) -> dict[str, np.ndarray]:
    """A scorer's arrays, prefixed ``scorer/`` and with its kind, for one .npz artifact."""
    arrays = {f"scorer/{name}": value for name, value in scorer.to_arrays().items()}
    arrays["scorer_kind"] = np.array(scorer.kind)
    return arrays


def scorer_from_arrays(arrays):
    """The scorer stored by ``scorer_to_arrays``."""
    kind = scorers.get(str(arrays["scorer_kind"]))
    prefix = "scorer/"
    own = {key[len(prefix) :]: arrays[key] for key in arrays if key.startswith(prefix)}
    return kind.load(own)
