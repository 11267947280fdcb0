"""How a learner is told a click log: one entry per correction of the logged clicks.

The paper's learners divide each click by its observation propensity (IPS). Click models
beyond the position-based one break that weighting in known ways, and each has a
published correction: a correction turns the clicks of one split of a clicks artifact
into the ``ClickLog`` a learner trains on (and the SNIPS selection reads), usually by
replacing every click's propensity with the inverse of its corrected weight.

``cltr train METHOD --correction NAME`` and a spec's ``[clicks] correction = NAME``
select one; ``ips`` (the log's own propensities) is the default. The maths of each
correction lives in ``cltr.core``; this module only says which arrays of a clicks
artifact it reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from cltr.core.clicks import ClickLog

__all__ = ["Correction", "CORRECTIONS", "DEFAULT_CORRECTION", "get"]

DEFAULT_CORRECTION = "ips"


@dataclass(frozen=True)
class Correction:
    """A correction as the rest of cltr sees it.

    Attributes
    ----------
    name : str
        ``--correction NAME``.
    summary : str
        One line for ``--help``.
    apply : callable
        ``(log, clicks, split) -> ClickLog``: ``log`` is the split's log as read (a prefix
        of passes, possibly other propensities), ``clicks`` the clicks artifact (its config
        names the click model and settings; its arrays hold the presented rankings of
        simulated logs or the impression rows of imported ones), ``split`` "train" or "vali".
    methods : tuple of str, optional
        The methods it applies to, if not every method.
    """

    name: str
    summary: str
    apply: Callable[[ClickLog, object, str], ClickLog]
    methods: tuple[str, ...] | None = None


def _as_logged(log: ClickLog, clicks, split: str) -> ClickLog:
    return log


CORRECTIONS: dict[str, Correction] = {
    "ips": Correction("ips", "Divide every click by its logged propensity (the paper's IPS).", _as_logged),
}


def get(name: str) -> Correction:
    if name not in CORRECTIONS:
        raise ValueError(f"unknown correction {name!r}; known: {', '.join(CORRECTIONS)}")
    return CORRECTIONS[name]
