"""Scorer kinds: how a trained model is stored and read back, one file each, found by a
registry.

A scorer (``cltr.core.scorers.Scorer``) maps a feature matrix to one score per document,
names its ``kind`` and gives its state as plain arrays (``to_arrays()``), so that models of
every kind are workspace artifacts alike (``cltr.pipeline.models``). A module in this
package defines ``SCORER = ScorerKind(...)``: the kind's name (what a stored model records
as its ``scorer_kind``), a one-line summary, ``load(arrays) -> scorer`` (the stored
arrays, without their ``scorer/`` prefix) and ``width(scorer)``, the number of features
the model reads (None where it cannot tell), which ``cltr score`` checks a file against.
A method names the kind of the models it trains in ``Method(scorer=...)``, and training
checks that its models are of that kind.

Reading a model, ``cltr score``'s width check and the docs' reference page are derived
from ``SCORER``: a method with a new kind of model adds its scorer class (in its own
module, or in the kind's) and one file here. A kind's module imports what its models need
(LightGBM, XGBoost) only when a model is read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cltr.registry import lookup, registered

__all__ = ["ScorerKind", "scorer_kinds", "get"]


@dataclass(frozen=True)
class ScorerKind:
    """A scorer kind as the rest of cltr sees it.

    Attributes
    ----------
    name : str
        The ``kind`` of its scorers, stored with every model as ``scorer_kind``.
    summary : str
        One line for the reference page.
    load : callable
        ``(arrays) -> scorer``: the scorer from the arrays its ``to_arrays()`` gave.
    width : callable
        ``(scorer) -> int or None``: the number of features it reads.
    description : str
        The long text of the reference page (defaults to the summary).
    """

    name: str
    summary: str
    load: Callable[[Any], Any]
    width: Callable[[Any], int | None]
    description: str = ""


_REGISTRY: dict[str, ScorerKind] | None = None


def scorer_kinds() -> dict[str, ScorerKind]:
    """Every scorer kind, by name, in the order of the modules' ``ORDER``, then name. The
    same dict on every call, so that a test may add to it."""
    return registered(__name__, "SCORER", ScorerKind)


def get(name: str) -> ScorerKind:
    return lookup(scorer_kinds(), name, "scorer kind")
