"""``cltr propensities estimate``, its --method and options generated from ``cltr.estimators``."""

from __future__ import annotations

import click

from cltr import estimators
from cltr.cli.output import echo_table, warn
from cltr.cli.params import (
    clicks_option,
    dataset_option,
    given,
    option_params,
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


def _refuse_foreign_options(values: dict, estimator) -> None:
    """An option given for another estimator would change nothing: say so rather than run an
    estimate that silently differs from what was asked."""
    own = {field.name for field in estimator.options.option_fields()}
    for name, value in values.items():
        if value is None or name in own:
            continue
        takers = [
            (other.name, param.opts[0])
            for other in estimators.estimators().values()
            for param in option_params(other.options)
            if param.name == name
        ]
        if takers:
            flag = takers[0][1]
            raise click.UsageError(
                f"{flag} is an option of --method {', '.join(taker for taker, _ in takers)}; "
                f"--method {estimator.name} does not take it"
            )


def propensities_estimate(session: Session, dataset, clicks_key, seed, **values) -> None:
    """Estimate p_r / p_1 per rank from the training log's impressions and print it with its
    bootstrap band. `cltr train ... --propensities estimated` then divides by it."""
    from cltr.pipeline.stages import propensity_stage

    settings = settings_from(EstimateOptions, values, what="cltr propensities estimate")
    method, bootstrap, level = settings.method, settings.bootstrap, settings.level
    values = {k: v for k, v in values.items() if k not in EstimateOptions.__dataclass_fields__}
    estimator = estimators.get(method)
    if values.get("log_path") is not None and "log_path" not in estimator.options.__dataclass_fields__:
        # left out silently, --log would estimate from the workspace's log instead of the file
        raise click.UsageError(
            f"--log goes with --method harvest (estimators that read a Parquet log chunk by "
            f"chunk); --method {method} estimates from the dataset's click log"
        )
    _refuse_foreign_options(values, estimator)
    options = parse_or_usage(
        estimator.parse_options, given(values, estimator.options), what=f"estimator {estimator.name!r}"
    )
    dataset_obj, _ = session.dataset(dataset)
    if getattr(options, "log_path", None) is not None:
        _estimate_from_parquet(session, dataset, dataset_obj, options, clicks_key, settings, seed)
        return
    clicks = session.clicks(dataset, clicks_key)
    artifact, reused = propensity_stage(
        session.workspace, dataset, dataset_obj, clicks, **settings.to_dict(), seed=seed, **options.to_dict()
    )
    session.workspace.set_current(dataset, "propensities", artifact.key)
    # --bootstrap 0: no band, said as such (its empty columns were warned about as "no relevant document")
    band = f"{level:.0%} bootstrap over queries" if bootstrap else "off (--bootstrap 0)"
    bounds = ("low", "high") if bootstrap else ()
    click.echo(
        f"propensities {artifact.key}{' (reused)' if reused else ''}: {method} on click log {clicks.key} "
        f"({artifact.info['rankers']} ranker(s)); band: {band}"
    )
    echo_table(artifact.info["rows"], ["rank", "propensity", *bounds])
    for message in artifact.info.get("warnings", []):  # an estimate the log does not identify
        warn(message)
    if "trust" in artifact.info:
        trust = artifact.info["trust"]
        click.echo(
            f"trust bias: click probability of relevant (c+) and irrelevant (c-) documents per rank; "
            f"share of relevant documents {artifact.info['relevant_share']:.3f}"
        )
        columns = [
            "rank",
            *(
                f"{kind}_click{bound}"
                for kind in ("relevant", "irrelevant")
                for bound in ("", *(f"_{b}" for b in bounds))
            ),
        ]
        echo_table(
            [
                {"rank": k + 1, **{name: trust[name][k] for name in columns[1:]}}
                for k in range(len(trust["relevant_click"]))
            ],
            columns,
        )


def _estimate_from_parquet(session: Session, dataset, dataset_obj, options, clicks_key, settings, seed) -> None:
    """--log: harvest on a Parquet log read chunk by chunk where the engine computes it."""
    from cltr.pipeline.stages.propensities import parquet_propensity_stage

    if clicks_key is not None:
        raise click.UsageError(f"--log {options.log_path} and --clicks {clicks_key} name two logs; give one")
    told = {k: v for k, v in options.to_dict().items() if k != "log_path"}
    artifact, reused = parquet_propensity_stage(
        session.workspace,
        dataset,
        dataset_obj,
        options.log_path,
        max_rank=settings.max_rank,
        bootstrap=settings.bootstrap,
        level=settings.level,
        seed=seed,
        **told,
    )
    info, bootstrap = artifact.info, settings.bootstrap
    band = f"{settings.level:.0%} bootstrap over queries" if bootstrap else "off (--bootstrap 0)"
    click.echo(
        f"propensities {artifact.key}{' (reused)' if reused else ''}: harvest on {options.log_path} "
        f"({info['log_rows']} rows read in {info['chunks']} chunk(s) of whole queries where they were "
        f"computed; {info['rankers']} ranker(s)); band: {band}"
    )
    echo_table(info["rows"], ["rank", "propensity", *(("low", "high") if bootstrap else ())])
    click.echo(
        f"not made current: train on the log imported from this file with `cltr train METHOD --dataset "
        f"{dataset} --propensities {artifact.key}`"
    )


def estimate_command() -> click.Command:
    """``cltr propensities estimate``, its --method choices, their help and a flag per
    estimator option generated from the registry (``cltr.estimators``)."""
    known = estimators.estimators()
    return click.Command(
        "estimate",
        callback=click.pass_obj(errors_as_usage(propensities_estimate)),
        help=propensities_estimate.__doc__,
        params=[
            dataset_option.param(),
            *settings_params(EstimateOptions),
            *registry_params({e.name: e.options for e in known.values()}, "estimator"),
            clicks_option.param(),
            seed_option.param(),
        ],
    )


propensities_group.add_command(estimate_command())
