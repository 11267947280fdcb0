"""Propensity estimators: one file each, found by a registry.

An estimator module in this package defines ``ESTIMATOR = Estimator(...)``: its name, a
one-line summary, optionally an ``Options`` dataclass of its own settings
(``cltr.options``: typed, defaulted, a help text per field; the only place its defaults
live) and an estimating function

    estimate(table, X, options, *, max_rank, bootstrap, level, rng, seed) -> PropensityEstimate

``table`` is the training split's aggregated impressions (``cltr.core.clicks.Impressions``:
how often each document was shown, and clicked, at each rank by each logging ranker),
``X`` that split's features, ``max_rank`` the deepest rank to estimate (already capped at
the deepest rank shown), ``bootstrap`` and ``level`` the resamples and confidence level of
the band over queries, ``rng`` the generator of the band (``stream(seed, "propensity")``)
and ``seed`` the stage's seed for any further stream. It returns the observation
propensity per rank relative to rank 1 (``cltr.core.propensity.PropensityEstimate``;
ranks deeper than ``max_rank`` take the last rank's value). The maths lives in
``cltr.core``; a module here only says which of it an estimator calls.

``cltr propensities estimate --method NAME`` (its choices, its help, and a flag per option),
a figure spec's ``estimators``, ``cltr.api.estimate_propensities`` and the docs' reference
page are derived from ``ESTIMATOR``: adding an estimator is adding a file here. An option
enters the propensities artifact's cache key where it differs from its default, so that
adding an option keeps every earlier estimate's key, and always where the Options type
names it in ``always_keyed()`` (``key_options``): an option whose new default changes what
earlier estimates computed (em's ``cross_fit`` with trees, whose earlier estimates were
fitted in sample), so that none of those is reused under the new meaning.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from cltr.core.clicks import Impressions
from cltr.core.propensity import PropensityEstimate
from cltr.core.seeds import stream
from cltr.options import Options
from cltr.registry import lookup, registered

__all__ = [
    "Estimator",
    "NoOptions",
    "estimators",
    "get",
    "estimate",
    "key_options",
    "DEFAULT_ESTIMATOR",
    "DEFAULT_MAX_RANK",
]

DEFAULT_ESTIMATOR = "harvest"
# Clicks on deep ranks are rare and few (query, document) pairs move between deep ranks, so
# estimates there are noisy; 20 ranks cover the first two result pages.
DEFAULT_MAX_RANK = 20


@dataclass(frozen=True)
class NoOptions(Options):
    """The options of an estimator that has none."""


@dataclass(frozen=True)
class Estimator:
    """A propensity estimator as the rest of cltr sees it.

    Attributes
    ----------
    name : str
        ``--method NAME``, a figure spec's ``estimators`` entry.
    summary : str
        One line for ``cltr propensities estimate --help``.
    estimate : callable
        ``(table, X, options, *, max_rank, bootstrap, level, rng, seed) -> PropensityEstimate``.
    options : type
        Its ``Options`` dataclass (``NoOptions`` where it has none).
    description : str
        The long text of the reference page (defaults to the summary).
    """

    name: str
    summary: str
    estimate: Callable[..., PropensityEstimate]
    options: type[Options] = NoOptions
    description: str = ""

    def parse_options(self, values: dict | Options | None, *, where: str | None = None) -> Options:
        """Validated options from a dict (a caller's keywords, the command line) or an instance."""
        return self.options.parse(values, where=where or f"options of estimator {self.name}")


_REGISTRY: dict[str, Estimator] | None = None


def estimators() -> dict[str, Estimator]:
    """Every estimator, by name, in the order of ``--method``'s help (the modules' ``ORDER``, then name)."""
    return registered(__name__, "ESTIMATOR", Estimator)


def get(name: str) -> Estimator:
    return lookup(estimators(), name, "estimator")


def key_options(name: str, options: dict | Options | None) -> dict[str, Any]:
    """The options of estimator ``name`` that differ from their defaults: what enters a
    propensities artifact's key (an option at its default does not, so that estimates
    made before the option existed keep their keys). An Options type whose new default
    changes what earlier estimates computed names the fields that always enter, given the
    options, in ``always_keyed()``."""
    estimator = get(name)
    parsed = estimator.parse_options(options)
    told = parsed.to_dict()
    defaults = estimator.options().to_dict()
    always = set(parsed.always_keyed()) if hasattr(parsed, "always_keyed") else set()
    # the engine's scheduler changes nothing computed (cltr.distributed.engine_key)
    return {
        key: value for key, value in told.items() if (value != defaults[key] or key in always) and key != "scheduler"
    }


def estimate(
    name: str,
    table: Impressions,
    X: np.ndarray,
    options: dict | Options | None = None,
    *,
    max_rank: int | None = None,
    bootstrap: int = 100,
    level: float = 0.95,
    seed: int = 0,
) -> PropensityEstimate:
    """Propensity per rank, relative to rank 1, by estimator ``name`` from the aggregated
    impressions ``table`` (``X``: the split's features), over ranks 1..``max_rank`` (default
    ``DEFAULT_MAX_RANK``, or the deepest rank shown if less), with a ``bootstrap`` band
    over queries at ``level``; ``options`` are the estimator's own (validated here)."""
    estimator = get(name)
    options = estimator.parse_options(options)
    max_rank = int(min(max_rank or DEFAULT_MAX_RANK, table.rank.max()))
    # threadpoolctl here, not at the top: `cltr --help` imports this module and needs none of it
    from threadpoolctl import threadpool_limits

    # small dense solves: one BLAS thread is faster and never stalls on a shared machine (bench/propensity.py)
    with threadpool_limits(1):
        return estimator.estimate(
            table,
            X,
            options,
            max_rank=max_rank,
            bootstrap=bootstrap,
            level=level,
            rng=stream(seed, "propensity"),
            seed=seed,
        )
