"""Cascade propensities of DCM clicks (Vardasbi et al., SIGIR 2020): ``cltr.core.cascade``."""

from __future__ import annotations

from cltr.clickmodels import dcm
from cltr.core.cascade import cascade_propensity
from cltr.core.clicks import ClickLog
from cltr.pipeline.corrections import Correction

ORDER = 20


def apply(log: ClickLog, clicks, split: str) -> ClickLog:
    """Each click divided by prod lambda over the clicks above it in its session (DCM logs)."""
    model = clicks.config.get("click_model")
    if model != dcm.MODEL.name:
        raise ValueError(
            f"correction 'cascade' needs clicks of the dcm click model (its continuation "
            f"probabilities lambda_k); these clicks come from {model or 'an imported log'}"
        )
    settings = dcm.MODEL.parse_settings(
        {f.name: clicks.config[f.name] for f in dcm.DCMSettings.option_fields() if f.name in clicks.config}
    )
    assert isinstance(settings, dcm.DCMSettings)
    return log.with_propensity(
        cascade_propensity(log.session, log.rank, dcm.continuation_probability(log.rank, settings))
    )


CORRECTION = Correction(
    "cascade",
    "Cascade propensities of dcm clicks: the product of the continuation "
    "probabilities of the clicks above (Vardasbi et al., SIGIR 2020).",
    apply,
)
