"""Policy-aware propensities of top-k logs (Oosterhuis and de Rijke, SIGIR 2020): ``cltr.core.policy``."""

from __future__ import annotations

import numpy as np

from cltr.core.clicks import ClickLog
from cltr.data.click_artifact import ClicksArtifact
from cltr.pipeline.corrections import Correction

ORDER = 30


def apply(log: ClickLog, clicks, split: str) -> ClickLog:
    """Each click divided by its document's examination averaged over the logging policy."""
    rho = ClicksArtifact.of(clicks).split(split).policy_propensity
    if rho is None:
        raise ValueError(
            "correction 'policy-aware' needs the policy propensities that `cltr simulate --top-k K "
            "--logging-temperature T` stores (with a click model whose examination depends on the "
            "rank alone, such as pbm); these clicks have none"
        )
    return log.with_propensity(np.asarray(rho, dtype=np.float64)[log.doc])


CORRECTION = Correction(
    "policy-aware",
    "Examination averaged over the logging policy's top-k rankings (Oosterhuis and de Rijke, SIGIR 2020).",
    apply,
)
