"""Trained models as artifacts: a scorer of any kind stored as plain arrays, and read back.

Kinds: ``linear`` (every SVM), ``mlp`` (Deep PropDCG), ``lightgbm`` (the tree methods;
its module, the only one that imports LightGBM, is imported only when such a model is
read), ``xgboost`` (``xgboost-unbiased``, an optional extra). A new scorer kind adds one
entry to ``SCORER_MODULES``.
"""

from __future__ import annotations

import importlib

import numpy as np

__all__ = ["scorer_to_arrays", "scorer_from_arrays", "SCORER_MODULES"]

# kind -> (module, class): imported on first use
SCORER_MODULES: dict[str, tuple[str, str]] = {
    "linear": ("cltr.core.scorers", "LinearScorer"),
    "mlp": ("cltr.core.mlp", "MLPScorer"),
    "lightgbm": ("cltr.methods.trees", "TreeScorer"),
    "xgboost": ("cltr.methods.xgboost_unbiased", "XGBoostScorer"),
}


def scorer_to_arrays(scorer) -> dict[str, np.ndarray]:
    """A scorer's arrays, prefixed ``scorer/`` and with its kind, for one .npz artifact."""
    arrays = {f"scorer/{name}": value for name, value in scorer.to_arrays().items()}
    arrays["scorer_kind"] = np.array(scorer.kind)
    return arrays


def scorer_from_arrays(arrays):
    """The scorer stored by ``scorer_to_arrays``."""
    kind = str(arrays["scorer_kind"])
    if kind not in SCORER_MODULES:
        raise ValueError(f"unknown scorer kind {kind!r}; known: {', '.join(sorted(SCORER_MODULES))}")
    module, name = SCORER_MODULES[kind]
    prefix = "scorer/"
    own = {key[len(prefix):]: arrays[key] for key in arrays if key.startswith(prefix)}
    return getattr(importlib.import_module(module), name).from_arrays(own)
