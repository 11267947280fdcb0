"""``cltr prepare NAME`` (a command per dataset loader of ``cltr.datasets``), ``cltr produce``
and ``cltr simulate`` (its click-model options generated from ``cltr.clickmodels``)."""

from __future__ import annotations

from pathlib import Path

import click

from cltr import clickmodels, datasets
from cltr.cli.output import echo_table, reading_progress, warn_if_undefined
from cltr.cli.params import (
    FiniteFloat,
    NameType,
    dataset_option,
    finite_float,
    given,
    parse_or_usage,
    registry_params,
    seed_option,
)
from cltr.cli.session import Session, errors_as_usage
from cltr.core.queries import default_passes, describe_convention
from cltr.pipeline.session import check_simulation_fits
from cltr.pipeline.stages import production_test_metrics


@click.group()
def prepare() -> None:
    """Load or generate a dataset and store it, checked, in the workspace."""


def _report_prepared(record: dict) -> None:
    click.echo(f"prepared {record['name']!r}: {describe_convention(record['relevant_from'], record['dcg_base'])}")
    rows = [{"split": split, **values} for split, values in record["summary"].items()]
    echo_table(rows)
    for note in record["meta"].get("notes", []):
        click.echo(f"note: {note}")


def loader_params(options_type) -> list[click.Option]:
    """The click options of a dataset loader's ``Options``: one per field, with its default
    (click shows it), choices, range, and, for a path, click's check that it exists."""
    params = []
    for field in options_type.option_fields():
        s = field.spec
        declarations = [field.cli_name, field.name] if s.flag else [field.cli_name]
        if field.base is bool and not field.sequence:
            params.append(click.Option([f"{field.cli_name}/--no-{field.cli_name[2:]}", field.name],
                                       default=field.default, help=s.help))
            continue
        kind: click.ParamType
        if s.path:
            kind = click.Path(exists=True, file_okay=s.path == "file", dir_okay=s.path == "dir", path_type=Path)
        elif field.sequence or (s.parse is not None and field.base is not str):
            kind = click.STRING
        elif field.base is float:
            kind = FiniteFloat(field)
        elif field.base is int:
            kind = click.INT if s.low is None and s.high is None else click.IntRange(
                min=None if s.low is None else int(s.low), max=None if s.high is None else int(s.high))
        elif s.choices:
            kind = click.Choice(list(s.choices))
        else:
            kind = click.STRING
        # a required option declares no default: click (8.5) skips its check when given default=None
        default = {} if s.required else {"default": field.default}
        params.append(click.Option(declarations, type=kind, required=s.required, help=s.help, metavar=s.metavar,
                                   **default))
    return params


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
        click.echo(f"imported {logs[split]} as the {split} log {part.key}{' (reused)' if reused else ''}: "
                   f"{info['rows']} impressions, {info['sessions']} sessions, {info['clicks']} clicks, "
                   f"{info['rankers']} ranker(s)")
    clicks, _ = imported_clicks_stage(session.workspace, name, parts["train"], parts["vali"])
    session.workspace.set_current(name, "clicks", clicks.key)
    click.echo(f"click log {clicks.key}: estimate its propensities with `cltr propensities estimate --dataset "
               f"{name}`, then `cltr train METHOD --dataset {name}`")


def prepare_command(loader: datasets.Loader) -> click.Command:
    """``cltr prepare NAME`` of a dataset loader (``cltr.datasets``): a flag per option of
    its ``Options``, then ``--name`` (default: the loader's name) and ``--dcg-log``."""

    def prepare_dataset(session: Session, name: str, dcg_log: str, **values) -> None:
        options = parse_or_usage(loader.parse_options, values, what=f"cltr prepare {loader.name}")
        dataset = datasets.load(loader.name, options, name=name, dcg_log=dcg_log, progress=reading_progress())
        _report_prepared(session.write_dataset(name, dataset))
        if dataset.meta.get("click_logs"):
            _import_click_logs(session, name, dataset.meta["click_logs"])

    return click.Command(
        loader.name, callback=click.pass_obj(errors_as_usage(prepare_dataset)), help=loader.summary,
        params=[*loader_params(loader.options),
                click.Option(["--name"], type=NameType(), default=loader.name, help="Name to store it under."),
                click.Option(["--dcg-log", "dcg_log"], type=click.Choice(list(datasets.DCG_LOGS)), default="e",
                             show_default=True,
                             help="Base of the log in Avg DCG's gain 1/log(1 + rank): e (the paper's) or 2. It "
                                  "only scales every Avg DCG; comparisons and model selection are the same either "
                                  "way.")])


for _loader in datasets.loaders().values():
    prepare.add_command(prepare_command(_loader))


@click.command("produce")
@dataset_option
@click.option("--fraction", type=finite_float(0, 1, low_open=True), default=0.01,
              help="Share of training queries with labels the production ranker sees.")
@click.option("-C", "C", type=finite_float(0, low_open=True), default=1.0,
              help="Regularisation constant of the production Ranking SVM.")
@seed_option
@click.pass_obj
@errors_as_usage
def produce_command(session: Session, dataset, fraction, C, seed) -> None:
    """Train the production ranker: a Ranking SVM on a seeded FRACTION of the training queries."""
    artifact, reused = session.produce(dataset, fraction=fraction, C=C, seed=seed)
    info = artifact.info
    test = production_test_metrics(artifact, session.dataset(dataset)[0])
    click.echo(f"production ranker {artifact.key}{' (reused)' if reused else ''}: "
               f"{info['n_queries']} training queries, {info['n_relevant']} relevant documents, "
               f"solver gap {info['gap']:.1e} after {info['iterations']} iterations")
    click.echo(f"test Avg DCG {test['avg_dcg']:.4f}  Avg Rank {test['avg_rank']:.2f}  "
               f"nDCG@10 {test['ndcg@10']:.4f} (over relevant queries {test['ndcg@10_relevant_queries']:.4f})")
    warn_if_undefined([test], ["avg_dcg", "avg_rank", "ndcg@10", "ndcg@10_relevant_queries"])


def _click_model_params() -> list[click.Option]:
    """Every click model's settings, once each, with the models that take them in the help."""
    return registry_params({model.name: model.settings for model in clickmodels.models().values()}, "click model")


def simulate_command(session: Session, dataset, click_model, passes, rankers, production_key, seed, top_k,
                     logging_temperature, intervention, intervention_depth, **values) -> None:
    """Simulate clicks of a click model on the production ranker's rankings of train and vali."""
    model = clickmodels.get(click_model)
    settings = parse_or_usage(model.parse_settings, given(values, model.settings),
                              what=f"click model {model.name!r}")
    unused = sorted({k for k, v in values.items() if v is not None}
                    - {f.name for f in model.settings.option_fields()})
    if unused:
        flags = ", ".join("--" + u.replace("_", "-") for u in unused)
        raise click.UsageError(f"click model {model.name!r} takes no {flags}")
    dataset_obj, _ = session.dataset(dataset)
    passes = passes or default_passes(dataset, dataset_obj.meta)
    check_simulation_fits(dataset_obj, model.name, settings, passes=passes, seed=seed, top_k=top_k,
                          logging_temperature=logging_temperature)
    artifact, reused = session.simulate(dataset, production_key=production_key, model=model.name,
                                        settings=settings, passes=passes, rankers=rankers, seed=seed, top_k=top_k,
                                        logging_temperature=logging_temperature, intervention=intervention,
                                        intervention_depth=intervention_depth)
    shown = artifact.config["production"]
    click.echo(f"click log {artifact.key}{' (reused)' if reused else ''} ({model.name}, "
               f"{'production ranker ' + shown if isinstance(shown, str) else f'{len(shown)} logging rankers'}, "
               f"{passes} passes"
               + (f", intervention {intervention} over ranks 1..{intervention_depth}" if intervention else "") + ")")
    echo_table([{"split": split, **artifact.info[split]} for split in ("train", "vali")],
               ["split", "sessions", "clicks", "irrelevant_click_share", "clicks_per_query",
                "mean_propensity", "min_propensity"])


simulate = click.Command(
    "simulate", callback=click.pass_obj(errors_as_usage(simulate_command)),
    help=(simulate_command.__doc__ or "") + "\n\n\b\nClick models:\n" + "\n".join(
        f"  {m.name:8s} {m.summary}" for m in clickmodels.models().values()),
    short_help="Simulate clicks on the production ranker's rankings.",
    params=[
        dataset_option.param(),
        click.Option(["--click-model"], type=click.Choice(list(clickmodels.models())),
                     default=clickmodels.DEFAULT_MODEL, show_default=True, help="The click model."),
        click.Option(["--passes"], type=click.IntRange(min=1), default=None,
                     help="Sessions per query [default: 10 for Yahoo, 100 otherwise]."),
        click.Option(["--rankers"], type=click.IntRange(min=1), default=1, show_default=True,
                     help="Logging rankers: the production ranker and K-1 more, each trained on its own 1% "
                          "sample; pass p is shown by ranker p mod K and its sessions are tagged with it "
                          "(what intervention harvesting needs)."),
        click.Option(["--production", "production_key"], default=None,
                     help="Key of the production ranker to present [default: the last produced]."),
        seed_option.param(),
        click.Option(["--top-k"], type=click.IntRange(min=0), default=0, show_default=True,
                     help="Display only the first K results of each ranking: documents below cannot be clicked "
                          "(0: the full list)."),
        click.Option(["--logging-temperature"], type=finite_float(0), default=0.0, show_default=True,
                     help="Show a fresh Plackett-Luce ranking each pass, drawn from softmax(production scores / T) "
                          "(0: the deterministic ranking). With --top-k or a temperature the log also stores the "
                          "policy-aware propensities (--correction policy-aware)."),
        click.Option(["--intervention"], type=click.Choice(["swap-k", "randomize-top-k"]), default=None,
                     help="Log a randomized intervention on the deterministic ranking, drawn afresh every session: "
                          "swap-k trades rank 1 with a rank k drawn uniformly from 1..DEPTH (Joachims et al., "
                          "WSDM 2017); randomize-top-k shuffles ranks 1..DEPTH. The log's ranks are the displayed "
                          "ones; `cltr propensities estimate --method swap` reads them."),
        click.Option(["--intervention-depth"], type=click.IntRange(min=2), default=10, show_default=True,
                     help="DEPTH: the ranks an --intervention reaches."),
        *_click_model_params(),
    ])
