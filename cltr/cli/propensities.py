"""``cltr propensities estimate``, its --method and options generated from ``cltr.estimators``."""

from __future__ import annotations

import click

from cltr import estimators
from cltr.cli.output import echo_table, warn
from cltr.cli.params import (
    clicks_option,
    dataset_option,
    given,
    parse_or_usage,
    registry_params,
    seed_option,
    settings_from,
    settings_params,
)
from cltr.cli.session import Session, errors_as_usage
from cltr.pipeline.stages import EstimateOptions


@click.group("propensities")
def propensities_group() -> None:
    """Estimate the observation propensity of each rank from a click log."""


def propensities_estimate(session: Session, dataset, clicks_key, seed, **values) -> None:
    """Estimate p_r / p_1 per rank from the training log's impressions and print it with its
    bootstrap band. `cltr train ... --propensities estimated` then divides by it."""
    from cltr.pipeline.stages import propensity_stage

    settings = settings_from(EstimateOptions, values, what="cltr propensities estimate")
    method, bootstrap, level = settings.method, settings.bootstrap, settings.level
    values = {k: v for k, v in values.items() if k not in EstimateOptions.__dataclass_fields__}
    estimator = estimators.get(method)
    # another estimator's options are not this one's: left out, as its help says whose they are
    options = parse_or_usage(estimator.parse_options, given(values, estimator.options),
                             what=f"estimator {estimator.name!r}")
    dataset_obj, _ = session.dataset(dataset)
    clicks = session.clicks(dataset, clicks_key)
    artifact, reused = propensity_stage(session.workspace, dataset, dataset_obj, clicks, **settings.to_dict(),
                                        seed=seed, **options.to_dict())
    session.workspace.set_current(dataset, "propensities", artifact.key)
    # --bootstrap 0: no band, said as such (its empty columns were warned about as "no relevant document")
    band = f"{level:.0%} bootstrap over queries" if bootstrap else "off (--bootstrap 0)"
    bounds = ("low", "high") if bootstrap else ()
    click.echo(f"propensities {artifact.key}{' (reused)' if reused else ''}: {method} on click log {clicks.key} "
               f"({artifact.info['rankers']} ranker(s)); band: {band}")
    echo_table(artifact.info["rows"], ["rank", "propensity", *bounds])
    for message in artifact.info.get("warnings", []):  # an estimate the log does not identify
        warn(message)
    if "trust" in artifact.info:
        trust = artifact.info["trust"]
        click.echo(f"trust bias: click probability of relevant (c+) and irrelevant (c-) documents per rank; "
                   f"share of relevant documents {artifact.info['relevant_share']:.3f}")
        columns = ["rank", *(f"{kind}_click{bound}" for kind in ("relevant", "irrelevant")
                             for bound in ("", *(f"_{b}" for b in bounds)))]
        echo_table([{"rank": k + 1, **{name: trust[name][k] for name in columns[1:]}}
                    for k in range(len(trust["relevant_click"]))], columns)


def estimate_command() -> click.Command:
    """``cltr propensities estimate``, its --method choices, their help and a flag per
    estimator option generated from the registry (``cltr.estimators``)."""
    known = estimators.estimators()
    return click.Command(
        "estimate", callback=click.pass_obj(errors_as_usage(propensities_estimate)),
        help=propensities_estimate.__doc__,
        params=[dataset_option.param(),
                *settings_params(EstimateOptions),
                *registry_params({e.name: e.options for e in known.values()}, "estimator"),
                clicks_option.param(),
                seed_option.param()])


propensities_group.add_command(estimate_command())
