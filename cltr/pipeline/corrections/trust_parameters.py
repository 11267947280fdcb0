"""The trust-bias parameters the trust-bias corrections (``bayes_ips``, ``affine``) read."""

from __future__ import annotations

import numpy as np

from cltr import clickmodels
from cltr.core.trust import TrustBias, trust_from_clicks


def trust_parameters(rank: np.ndarray, clicks, estimate, name: str) -> TrustBias:
    """The trust-bias parameters a correction uses at these ranks: those estimated
    (``--propensities`` naming a ``trust-em`` estimate), else those of the click model that
    simulated the log."""
    if estimate is not None:
        if "trust" not in estimate.info:
            raise ValueError(
                f"correction {name!r} needs trust-bias parameters, and propensities {estimate.key} "
                f"({estimate.config.get('method')}) has none: estimate them with `cltr propensities "
                f"estimate --method trust-em`"
            )
        return trust_from_clicks(estimate.info["trust"]["relevant_click"], estimate.info["trust"]["irrelevant_click"])
    name_of_model = clicks.config.get("click_model")
    model = clickmodels.get(name_of_model) if name_of_model else None
    if model is None or model.trust is None:
        raise ValueError(
            f"correction {name!r} needs trust-bias parameters: these clicks come from "
            f"{name_of_model or 'an imported log'}, which has none; estimate them with `cltr propensities "
            f"estimate --method trust-em` and train with --propensities estimated"
        )
    settings = model.parse_settings(
        {f.name: clicks.config[f.name] for f in model.settings.option_fields() if f.name in clicks.config}
    )
    return model.trust(settings, int(rank.max()) if len(rank) else 1)
