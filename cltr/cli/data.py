"""``cltr prepare NAME`` (a command per dataset loader of ``cltr.datasets``), ``cltr produce``
and ``cltr simulate`` (its click-model options generated from ``cltr.clickmodels``)."""

from __future__ import annotations

import click

from cltr import clickmodels, datasets
from cltr.cli.output import echo_table, reading_progress, warn_if_undefined
from cltr.cli.params import (
    dataset_option,
    given,
    parse_or_usage,
    production_option,
    registry_params,
    seed_option,
    settings_from,
    settings_params,
)
from cltr.cli.session import Session, errors_as_usage
from cltr.core.queries import default_passes, describe_convention
from cltr.pipeline.session import PrepareOptions, check_simulation_fits
from cltr.pipeline.stages import ProductionOptions, SimulationOptions, production_test_metrics


@click.group()
def prepare() -> None:
    """Load or generate a dataset and store it, checked, in the workspace."""


def _report_prepared(record: dict) -> None:
    click.echo(f"prepared {record['name']!r}: {describe_convention(record['relevant_from'], record['dcg_base'])}")
    rows = [{"split": split, **values} for split, values in record["summary"].items()]
    echo_table(rows)
    for note in record["meta"].get("notes", []):
        click.echo(f"note: {note}")


def _import_click_logs(session: Session, name: str, logs: dict[str, str]) -> None:
    """Import the click logs a loader wrote with its dataset (``meta["click_logs"]``: a click
    table per split, e.g. Baidu-ULTR's) as `cltr clicks import` would, and make them the
    dataset's click log."""
    from cltr.pipeline.stages import import_stage, imported_clicks_stage

    dataset, fingerprint = session.dataset(name)
    parts = {}
    for split in ("train", "vali"):
        part, reused = import_stage(session.workspace, name, dataset, fingerprint, logs[split], split=split)
        session.workspace.set_current(name, f"imports/{split}", part.key)
        parts[split] = part
        info = part.info
        click.echo(
            f"imported {logs[split]} as the {split} log {part.key}{' (reused)' if reused else ''}: "
            f"{info['rows']} impressions, {info['sessions']} sessions, {info['clicks']} clicks, "
            f"{info['rankers']} ranker(s)"
        )
    clicks, _ = imported_clicks_stage(session.workspace, name, parts["train"], parts["vali"])
    session.workspace.set_current(name, "clicks", clicks.key)
    click.echo(
        f"click log {clicks.key}: estimate its propensities with `cltr propensities estimate --dataset "
        f"{name}`, then `cltr train METHOD --dataset {name}`"
    )


def prepare_command(loader: datasets.Loader) -> click.Command:
    """``cltr prepare NAME`` of a dataset loader (``cltr.datasets``): a flag per option of
    its ``Options``, then ``PrepareOptions``' ``--name`` (default: the loader's name) and
    ``--dcg-log``."""
    where_type = PrepareOptions.for_loader(loader.name)
    stored = {f.name for f in where_type.option_fields()}

    def prepare_dataset(session: Session, **values) -> None:
        where = settings_from(where_type, values, what=f"cltr prepare {loader.name}")
        options = parse_or_usage(
            loader.parse_options,
            {k: v for k, v in values.items() if k not in stored},
            what=f"cltr prepare {loader.name}",
        )
        dataset = datasets.load(
            loader.name, options, name=where.name, dcg_log=where.dcg_log, progress=reading_progress()
        )
        _report_prepared(session.write_dataset(where.name, dataset))
        if dataset.meta.get("click_logs"):
            _import_click_logs(session, where.name, dataset.meta["click_logs"])

    return click.Command(
        loader.name,
        callback=click.pass_obj(errors_as_usage(prepare_dataset)),
        help=loader.summary,
        params=[*settings_params(loader.options), *settings_params(where_type)],
    )


for _loader in datasets.loaders().values():
    prepare.add_command(prepare_command(_loader))


def produce_ranker(session: Session, dataset, seed, **values) -> None:
    """Train the production ranker: a Ranking SVM on a seeded FRACTION of the training queries."""
    options = settings_from(ProductionOptions, values, what="cltr produce")
    artifact, reused = session.produce(dataset, options, seed=seed)
    info = artifact.info
    test = production_test_metrics(artifact, session.dataset(dataset)[0])
    click.echo(
        f"production ranker {artifact.key}{' (reused)' if reused else ''}: "
        f"{info['n_queries']} training queries, {info['n_relevant']} relevant documents, "
        f"solver gap {info['gap']:.1e} after {info['iterations']} iterations"
    )
    click.echo(
        f"test Avg DCG {test['avg_dcg']:.4f}  Avg Rank {test['avg_rank']:.2f}  "
        f"nDCG@10 {test['ndcg@10']:.4f} (over relevant queries {test['ndcg@10_relevant_queries']:.4f})"
    )
    warn_if_undefined([test], ["avg_dcg", "avg_rank", "ndcg@10", "ndcg@10_relevant_queries"])


produce_command = click.Command(
    "produce",
    callback=click.pass_obj(errors_as_usage(produce_ranker)),
    help=produce_ranker.__doc__,
    params=[dataset_option.param(), *settings_params(ProductionOptions), seed_option.param()],
)


def _click_model_params() -> list[click.Option]:
    """Every click model's settings, once each, with the models that take them in the help."""
    return registry_params({model.name: model.settings for model in clickmodels.models().values()}, "click model")


def simulate_command(session: Session, dataset, production_key, seed, **values) -> None:
    """Simulate clicks of a click model on the production ranker's rankings of train and vali."""
    simulation = settings_from(SimulationOptions, values, what="cltr simulate")
    values = {k: v for k, v in values.items() if k not in SimulationOptions.__dataclass_fields__}
    model = clickmodels.get(simulation.click_model)
    settings = parse_or_usage(model.parse_settings, given(values, model.settings), what=f"click model {model.name!r}")
    unused = sorted({k for k, v in values.items() if v is not None} - {f.name for f in model.settings.option_fields()})
    if unused:
        flags = ", ".join("--" + u.replace("_", "-") for u in unused)
        raise click.UsageError(f"click model {model.name!r} takes no {flags}")
    dataset_obj, _ = session.dataset(dataset)
    passes = simulation.passes or default_passes(dataset, dataset_obj.meta)
    check_simulation_fits(
        dataset_obj,
        model.name,
        settings,
        passes=passes,
        seed=seed,
        top_k=simulation.top_k,
        logging_temperature=simulation.logging_temperature,
    )
    artifact, reused = session.simulate(
        dataset, simulation.replace(passes=passes), production_key=production_key, settings=settings, seed=seed
    )
    intervention, intervention_depth = simulation.intervention, simulation.intervention_depth
    shown = artifact.config["production"]
    click.echo(
        f"click log {artifact.key}{' (reused)' if reused else ''} ({model.name}, "
        f"{'production ranker ' + shown if isinstance(shown, str) else f'{len(shown)} logging rankers'}, "
        f"{passes} passes"
        + (f", intervention {intervention} over ranks 1..{intervention_depth}" if intervention else "")
        + ")"
    )
    echo_table(
        [{"split": split, **artifact.info[split]} for split in ("train", "vali")],
        [
            "split",
            "sessions",
            "clicks",
            "irrelevant_click_share",
            "clicks_per_query",
            "mean_propensity",
            "min_propensity",
        ],
    )


simulate = click.Command(
    "simulate",
    callback=click.pass_obj(errors_as_usage(simulate_command)),
    help=(simulate_command.__doc__ or "")
    + "\n\n\b\nClick models:\n"
    + "\n".join(f"  {m.name:8s} {m.summary}" for m in clickmodels.models().values()),
    short_help="Simulate clicks on the production ranker's rankings.",
    params=[
        dataset_option.param(),
        *settings_params(SimulationOptions),
        production_option.param(help="Key of the production ranker to present [default: the last produced]."),
        seed_option.param(),
        *_click_model_params(),
    ],
)
