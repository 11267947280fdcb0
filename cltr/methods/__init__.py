"""Learning methods: one file each, found by a registry.

A method module in this package defines ``METHOD = Method(...)``: its name, a one-line
summary, an ``Options`` dataclass (``cltr.options``: typed, defaulted, a help text per
field; the only place its defaults live) and a training function

    train(data: TrainingData, options: <its Options>, *, progress) -> (scorer, info)

``info`` records everything worth keeping: ``chosen`` (the selected hyperparameters),
``validation_snips_avg_dcg``, the ``selection`` table, solver certificates, traces.
``progress`` receives dicts: a selection row per fitted candidate, or
``{"event": "progress", "done": k, "total": n, "unit": ..., "postfix": {...}}`` for inner
units (epochs, trees). The command line (``cltr train NAME``), spec validation and the
report's labels are derived from ``METHOD``: adding a method is adding a file here.

Modules without ``METHOD`` (``linear``, ``trees``) hold machinery that several methods share.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from cltr.core.clicks import ClickLog, Displayed
from cltr.core.queries import Dataset
from cltr.core.ranking import validation_estimate
from cltr.core.seeds import stream
from cltr.options import Options
from cltr.registry import discover

__all__ = ["Method", "TrainingData", "methods", "get", "train"]


@dataclass(frozen=True)
class Method:
    """A learning method as the rest of cltr sees it.

    Attributes
    ----------
    name : str
        ``cltr train NAME``, the spec's ``methods`` entry.
    label : str
        How tables and figures name it ("SVM PropDCG").
    summary : str
        One line for ``cltr train --help``.
    options : type
        Its ``Options`` dataclass.
    train : callable
        ``(data, options, *, progress) -> (scorer, info)``.
    description : str
        The long help of ``cltr train NAME --help`` (defaults to the summary).
    selects_on : str
        What its hyperparameters are chosen on: "clicks" or "labels" (the skyline).
    tables : callable, optional
        ``info -> [(title, rows, columns)]``: extra tables ``cltr train`` prints.
    """

    name: str
    label: str
    summary: str
    options: type
    train: Callable[..., tuple[Any, dict]]
    description: str = ""
    selects_on: str = "clicks"
    tables: Callable[[dict], list] | None = field(default=None, compare=False)

    def parse_options(self, values: dict | Options | None, *, where: str | None = None) -> Options:
        """Validated options from a dict (a spec, a caller) or an instance."""
        if isinstance(values, self.options):
            return values
        return self.options.from_dict(values, where=where or f"options of {self.name}")


@dataclass(frozen=True)
class TrainingData:
    """What a method learns from: the dataset and the train / validation click logs."""

    dataset: Dataset
    train_log: ClickLog
    vali_log: ClickLog
    seed: int = 0
    rows: Callable[[str], Displayed] | None = field(default=None, compare=False, repr=False)
    _displayed: dict = field(default_factory=dict, compare=False, repr=False)

    def displayed(self, split: str) -> Displayed:
        """Every displayed document of every session of ``split`` ("train" or "vali"), for
        learners that need the non-clicked impressions too; computed once."""
        if split not in self._displayed:
            if self.rows is None:
                raise ValueError("this method needs the displayed documents of every session (impressions), and "
                                 "it was given clicks only; train it through the pipeline (cltr train, "
                                 "cltr.api) on a simulated log or an imported log with every impression")
            self._displayed[split] = self.rows(split)
        return self._displayed[split]

    def estimate(self, scorer) -> float:
        """SNIPS Avg DCG on validation clicks, with the same tie-breaks for every candidate."""
        return validation_estimate(scorer, self.dataset.vali, self.vali_log, rng=stream(self.seed, "selection"),
                                   dcg_base=self.dataset.dcg_base)

    def clicked_avg_dcg(self, scorer) -> float:
        """The average DCG of the clicked validation documents, every click weighted 1: the
        paper's criterion for its LambdaRank baseline (a biased one, unlike ``estimate``)."""
        log = self.vali_log.with_propensity(np.ones(len(self.vali_log)))
        return validation_estimate(scorer, self.dataset.vali, log, rng=stream(self.seed, "selection"),
                                   dcg_base=self.dataset.dcg_base)


_REGISTRY: dict[str, Method] | None = None


def methods() -> dict[str, Method]:
    """Every method, by name, in the order of ``cltr train --help`` (the modules' ``ORDER``, then name)."""
    global _REGISTRY
    if _REGISTRY is None:
        found = sorted((getattr(module, "ORDER", 100), method.name, method)
                       for module, method in discover(__name__, __path__, "METHOD", Method))
        _REGISTRY = {name: method for _, name, method in found}
    return _REGISTRY


def get(name: str) -> Method:
    known = methods()
    if name not in known:
        raise ValueError(f"unknown method {name!r}; known: {', '.join(known)}")
    return known[name]


def train(name: str, data: TrainingData, options: dict | Options | None = None, *,
          progress: Callable[[dict], None] | None = None):
    """Train method ``name`` on ``data``; see the module docstring."""
    method = get(name)
    options = method.parse_options(options)
    if len(data.train_log) == 0:
        raise ValueError("the training click log has no clicks (no row of it has click 1): there is nothing to learn "
                         "from. An imported log: check that its click column marks the clicked rows with 1, or "
                         "import a log that has clicks; a simulated one: run `cltr simulate` again with more "
                         "--passes or a larger --eps-pos or --eps-neg")
    for split, log in (("training", data.train_log), ("validation", data.vali_log)):
        if np.isnan(log.propensity).any():
            raise ValueError(f"the {split} click log has no propensities (a log imported without a propensity "
                             f"column): estimate them (`cltr propensities estimate`) and train with "
                             f"--propensities estimated")
    return method.train(data, options, progress=progress)
