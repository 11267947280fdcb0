"""How a learner is told a click log: corrections of the logged clicks, one file each,
found by a registry.

The paper's learners divide each click by its observation propensity (IPS). Click models
beyond the position-based one break that weighting in known ways, and each has a
published correction: a correction turns the clicks of one split of a clicks artifact
into the ``ClickLog`` a learner trains on (and the SNIPS selection reads), usually by
replacing every click's propensity with the inverse of its corrected weight.

A correction module in this package defines ``CORRECTION = Correction(...)``: its name, a
one-line summary, the function that applies it, the methods it applies to (if not every
method) and the further context it reads (see ``Correction``). ``cltr train METHOD
--correction NAME`` (its choices and help), a spec's ``[clicks] correction = NAME``, the
model's cache key and the docs' reference page are derived from ``CORRECTION``: adding a
correction is adding a file here. ``ips`` (the log's own propensities) is the default.
The maths of each correction lives in ``cltr.core``; a module here only says which arrays
of a clicks artifact it reads. Modules without ``CORRECTION`` (``trust_parameters``) hold
what several corrections share.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cltr.core.clicks import ClickLog
from cltr.registry import lookup, registered

__all__ = ["Correction", "CORRECTIONS", "DEFAULT_CORRECTION", "corrections", "get", "refusal"]

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
    context : tuple of str
        Further keyword arguments ``apply`` takes: ``"queries"`` (the split's ``Queries``),
        ``"estimate"`` (the ``propensities`` artifact the learner was told to use, or
        None), ``"dataset"`` (the ``Dataset``), ``"displayed"`` (a function of a split,
        "train" or "vali", to its ``Displayed`` rows, told as the log is, unclipped) and
        ``"clip"`` (the clipping threshold or None: a correction that takes it clips its own
        way, and its log is not clipped afterwards).
    """

    name: str
    summary: str
    apply: Callable[..., ClickLog]
    methods: tuple[str, ...] | None = None
    context: tuple[str, ...] = ()


_REGISTRY: dict[str, Correction] | None = None


def corrections() -> dict[str, Correction]:
    """Every correction, by name, in the order of ``--correction``'s help (the modules'
    ``ORDER``, then name). The same dict on every call, so that a test may add to it."""
    return registered(__name__, "CORRECTION", Correction)


def __getattr__(name: str):
    # ``CORRECTIONS``: the registry, found on first use (a module-level dict would import
    # every correction with this package)
    if name == "CORRECTIONS":
        return corrections()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get(name: str) -> Correction:
    return lookup(corrections(), name, "correction")


def refusal(correction: Correction, method: str) -> str | None:
    """Why ``correction`` does not apply to ``method`` (the correction names the methods it
    applies to, or the method the corrections it accepts: ``Method.corrections``), or None."""
    from cltr import methods

    if correction.methods is not None and method not in correction.methods:
        return f"correction {correction.name!r} applies to {', '.join(correction.methods)}, not {method!r}"
    accepted = methods.get(method).corrections
    if accepted is not None and correction.name not in accepted:
        return (
            f"method {method!r} accepts the correction{'s' if len(accepted) > 1 else ''} {', '.join(accepted)} "
            f"only, not {correction.name!r}: it weighs no click, so a correction would change only its selection"
        )
    return None
