"""Click models: one file each, found by a registry.

A click model module in this package defines ``MODEL = ClickModel(...)``: its name, a
one-line summary, a settings type (``cltr.options.Options``: typed, defaulted, a help
text per field) and a simulator

    simulate(rank, relevant, offsets, settings, *, passes, rng, progress=None) -> ClickLog

Given the presented ranking of every query (``rank``, 1-based, flat over documents with
query ``offsets``), binary relevance and a generator, it draws ``passes`` sessions of
every query, pass by pass, and returns every click with its rank and the propensity a
learner should divide by. A simulator sees whole rankings, so a click may depend on the
documents above it (cascade models), and it decides what it logs as the learner's
correction (for the position-based model the observation propensity; a model whose
correction is not a pure 1/propensity weight logs its own per-click weight as
1/propensity). ``cltr simulate --click-model NAME`` and a spec's ``[clicks] model = NAME``
select one; its settings become options and spec keys. Adding a click model is adding a
file here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cltr.core.clicks import ClickLog
from cltr.options import Options
from cltr.registry import by_name, lookup, registered

__all__ = ["ClickModel", "models", "get", "DEFAULT_MODEL"]

DEFAULT_MODEL = "pbm"


@dataclass(frozen=True)
class ClickModel:
    """A click model as the rest of cltr sees it (see the module docstring)."""

    name: str
    summary: str
    settings: type[Options]
    simulate: Callable[..., ClickLog]
    description: str = ""
    propensity: Callable | None = None  # (rank, settings) -> the propensity a learner uses, if per rank
    trust: Callable | None = None  # (settings, max_rank) -> cltr.core.trust.TrustBias, for the trust-bias corrections

    def parse_settings(self, values: dict | Options | None, *, where: str | None = None) -> Options:
        return self.settings.parse(values, where=where or f"settings of click model {self.name}")


_REGISTRY: dict[str, ClickModel] | None = None


def models() -> dict[str, ClickModel]:
    """Every click model, by name."""
    return registered(__name__, "MODEL", ClickModel, by_name)


def get(name: str) -> ClickModel:
    return lookup(models(), name, "click model")
