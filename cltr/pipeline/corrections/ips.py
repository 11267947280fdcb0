"""The log as logged: every click divided by its own propensity (the paper's IPS)."""

from __future__ import annotations

from cltr.core.clicks import ClickLog
from cltr.pipeline.corrections import Correction

ORDER = 10


def apply(log: ClickLog, clicks, split: str) -> ClickLog:
    return log


CORRECTION = Correction("ips", "Divide every click by its logged propensity (the paper's IPS).", apply)
