"""``cltr clicks import | fit | export``: logged click tables in and out, and click models fitted to them."""

from __future__ import annotations

import time
from pathlib import Path

import click
import numpy as np

from cltr.cli.output import echo_table, warn
from cltr.cli.params import clicks_option, dataset_option, seed_option, settings_from, settings_params
from cltr.cli.session import Session, errors_as_usage
from cltr.pipeline.click_prediction import FitOptions
from cltr.pipeline.stages import ExportOptions, ImportOptions


@click.group("clicks")
def clicks_group() -> None:
    """Import a logged click table, or export any click log, in the documented format.

    \b
    One row per displayed document of a result page, CSV/TSV (.gz/.xz) or Parquet:
      session  qid  doc (or docid)  rank  click  [propensity]  [ranker]
    (docs/reference/clicklog.md).
    """


def _settings(options_type):
    """A command's decorator adding the flags of ``options_type`` (``settings_params``)."""

    def add(command: click.Command) -> click.Command:
        command.params.extend(settings_params(options_type))
        return command

    return add


@_settings(ImportOptions)
@clicks_group.command("import")
@click.argument("log", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@dataset_option
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="With --format baidu-raw: the click table to write (.parquet, .tsv or .csv).",
)
@click.pass_obj
@errors_as_usage
def clicks_import(session: Session, log, dataset, out, **values) -> None:
    """Validate a click log and store it for the given split. Once both the train and the
    vali split have a log, they form a click log that every `cltr train` method uses
    exactly as a simulated one (the vali log serves model selection).

    With --format baidu-raw, read raw Baidu-ULTR partitions into a click table instead
    (README, "Baidu-ULTR")."""
    from cltr.pipeline.stages import CLICKED_ONLY, import_stage, imported_clicks_stage

    options = settings_from(ImportOptions, values, what="cltr clicks import")
    split, log_format, harvest_ranks, chunk_rows = (
        options.split,
        options.log_format,
        options.harvest_ranks,
        options.chunk_rows,
    )
    if log_format == "baidu-raw":
        if chunk_rows is not None:
            raise click.UsageError("--chunk-rows goes with --format table (baidu-raw partitions are streamed already)")
        _import_baidu_raw(log, out, harvest_ranks, jobs=options.jobs)
        return
    if out is not None or harvest_ranks is not None or options.jobs != 1:
        raise click.UsageError("--out, --harvest and --jobs go with --format baidu-raw")
    if len(log) != 1:
        raise click.UsageError(f"--format table reads one LOG; found {len(log)}")
    log = log[0]
    dataset_obj, fingerprint = session.dataset(dataset)
    part, reused = import_stage(
        session.workspace,
        dataset,
        dataset_obj,
        fingerprint,
        log,
        split=split,
        ignore_extra_columns=options.ignore_extra_columns,
        chunk_rows=chunk_rows,
    )
    session.workspace.set_current(dataset, f"imports/{split}", part.key)
    info = part.info
    click.echo(
        f"imported {log} as the {split} log {part.key}{' (reused)' if reused else ''}: {info['rows']} "
        f"impressions, {info['sessions']} sessions, {info['clicks']} clicks, {info['rankers']} ranker(s), "
        f"{'with' if info['has_propensity'] else 'without'} propensities"
        + (" (kept as counts per document and rank)" if info.get("aggregated") else "")
    )
    if info.get("ignored_columns"):
        click.echo(
            f"ignored column{'s' if len(info['ignored_columns']) > 1 else ''} "
            f"{', '.join(map(repr, info['ignored_columns']))} (--ignore-extra-columns)"
        )
    if info.get("clicked_only"):
        warn(f"the {split} log {log}: {CLICKED_ONLY}")
    if info["clicks"] == 0:
        warn(
            f"the {split} log {log} has no clicks (no row has click 1): there is nothing to train on"
            + (" or to select models with" if split == "vali" else "")
        )
    other = "vali" if split == "train" else "train"
    other_key = session.workspace.current(dataset).get(f"imports/{other}")
    other_part = session.workspace.load(dataset, "imports", other_key) if other_key else None
    if other_part is None:
        click.echo(
            f"import the {other} split's log too to train on it: "
            f"`cltr clicks import LOG --dataset {dataset} --split {other}`"
        )
        return
    parts = {split: part, other: other_part}
    clicks, _ = imported_clicks_stage(session.workspace, dataset, parts["train"], parts["vali"])
    session.workspace.set_current(dataset, "clicks", clicks.key)
    click.echo(
        f"click log {clicks.key}: train {parts['train'].key} + vali {parts['vali'].key}; "
        f"train with `cltr train METHOD --dataset {dataset}`"
        + ("" if info["has_propensity"] else f" after `cltr propensities estimate --dataset {dataset}`")
    )


def _import_baidu_raw(paths, out: Path | None, harvest_ranks: int | None, *, jobs: int = 1) -> None:
    from cltr.core.clicks import aggregate_impressions
    from cltr.core.propensity import harvest_propensities
    from cltr.data.baidu import import_raw_partitions

    if out is None:
        raise click.UsageError("--format baidu-raw needs --out TABLE (.parquet, .tsv or .csv)")
    started = time.perf_counter()
    counts, table = import_raw_partitions(
        paths,
        out,
        n_jobs=jobs,
        progress=lambda rows, done: click.echo(
            f"read partition {done}/{len(paths)}: {rows.n_lines} lines, {rows.n_sessions} sessions", err=True
        ),
    )
    seconds = time.perf_counter() - started
    click.echo(
        f"wrote {out}: {counts['rows']} displayed documents of {counts['sessions']} sessions, "
        f"{counts['clicks']} clicks, {counts['orderings']} distinct (query, ordering)s, from "
        f"{counts['partitions']} partition(s) of {counts['lines']} lines "
        f"({counts['lines'] / max(seconds, 1e-9):,.0f} lines/s)"
    )
    if harvest_ranks is not None:
        _, doc = np.unique(table["docid"], return_inverse=True)
        impressions = aggregate_impressions(
            table["qid"], doc.reshape(-1), table["rank"], table["ranker"], table["click"]
        )
        estimate = harvest_propensities(
            impressions.query,
            impressions.doc,
            impressions.rank,
            impressions.ranker,
            impressions.impressions,
            impressions.clicks,
            max_rank=harvest_ranks,
            bootstrap=0,
            rng=0,
        )
        click.echo("position bias by intervention harvesting (global all-pairs over displayed orderings):")
        echo_table([{"rank": row["rank"], "propensity": row["propensity"]} for row in estimate.to_rows()])


@_settings(FitOptions)
@clicks_group.command("fit")
@dataset_option
@clicks_option
@seed_option
@click.pass_obj
@errors_as_usage
def clicks_fit(session: Session, dataset, clicks_key, seed, **values) -> None:
    """Fit a click model (PBM, cascade, DCM, UBM or DBN) to a click log and print its
    parameters and its held-out log-likelihood and perplexity per rank (Chuklin, Markov,
    de Rijke, "Click Models for Web Search"). PBM's examination per rank, relative to rank 1,
    is one more propensity estimate."""
    from cltr.core.click_models_fit import evaluate_click_model, fit_click_model, session_grid

    options = settings_from(FitOptions, values, what="cltr clicks fit")
    model_name, max_rank, held_out, iterations = (
        options.model_name,
        options.max_rank,
        options.held_out,
        options.iterations,
    )
    log_path = None if options.log_path is None else Path(options.log_path)

    if log_path is not None:
        from cltr.data.baidu import read_session_table

        rows = read_session_table(log_path, max_rank=max_rank)
        source = str(log_path)
    else:
        from cltr.pipeline.stages import export_rows

        dataset_obj, _ = session.dataset(dataset)
        clicks = session.clicks(dataset, clicks_key)
        columns = export_rows(clicks, "train", dataset_obj)
        keep = columns["rank"] <= max_rank
        rows = {
            "session": columns["session"][keep],
            "query": np.asarray(columns["qid"])[keep],
            "doc": np.asarray(columns["doc"])[keep],
            "rank": columns["rank"][keep],
            "click": columns["click"][keep],
        }
        source = f"the training split of click log {clicks.key}"
    sessions = np.unique(rows["session"])
    rng = np.random.default_rng(seed)
    test_sessions = rng.choice(sessions, size=max(1, int(round(held_out * len(sessions)))), replace=False)
    is_test = np.isin(rows["session"], test_sessions)
    if is_test.all():
        raise click.UsageError(f"{source} has {len(sessions)} session(s): too few to hold {held_out:g} out")
    train = {name: values[~is_test] for name, values in rows.items()}
    test = {name: values[is_test] for name, values in rows.items()}
    depth = int(rows["rank"].max())
    grid, pair_query, pair_doc = session_grid(
        *(train[name] for name in ("session", "query", "doc", "rank", "click")), max_rank=depth
    )
    model = fit_click_model(model_name, grid, pair_query, pair_doc, iterations=iterations)
    held, _, _ = session_grid(
        *(test[name] for name in ("session", "query", "doc", "rank", "click")),
        max_rank=depth,
        pairs=(pair_query, pair_doc),
    )
    scores = evaluate_click_model(model, held)
    info = model.info
    click.echo(
        f"{model_name} fitted on {grid.pair.shape[0]} sessions of {source} ({grid.n_pairs} (query, document)s, "
        f"ranks 1..{depth}): {info['iterations']} EM iteration(s)"
        f"{'' if info['converged'] else ' (not converged: raise --iterations)'}; "
        f"mean attractiveness {model.attractiveness[-1]:.4f}"
    )
    per_rank: list[dict[str, float]] = [{"rank": r + 1} for r in range(depth)]
    # each model's fit sets its own parameters (cltr.core.click_models_fit.ClickModel)
    examination, continuation, satisfaction = model.examination, model.continuation, model.satisfaction
    if model_name == "pbm":
        assert examination is not None
        for row, value in zip(per_rank, examination, strict=True):
            row["examination"] = value
            row["propensity"] = value / examination[0]
    elif model_name == "ubm":
        assert examination is not None
        for r, row in enumerate(per_rank):  # examination after no click above, and right after a click above
            row["examination_no_click"] = examination[r, 0]
            row["examination_after_click_above"] = examination[r, r] if r > 0 else float("nan")
    elif model_name == "dcm":
        assert continuation is not None
        for row, value in zip(per_rank, continuation, strict=True):
            row["continue_after_click"] = value
    elif model_name == "dbn":
        assert continuation is not None and satisfaction is not None
        click.echo(f"continuation gamma {continuation[0]:.4f}; mean satisfaction {satisfaction[-1]:.4f}")
    for row, value in zip(per_rank, scores.perplexity_by_rank, strict=True):
        row["held_out_perplexity"] = value
    click.echo(
        f"held out: {scores.sessions} sessions, log-likelihood {scores.log_likelihood:.4f} per session, "
        f"perplexity {scores.perplexity:.4f}"
    )
    echo_table(per_rank)
    if log_path is None:  # stored, for `cltr evaluate` to judge on the vali split's sessions
        from cltr.pipeline.click_prediction import STAGE, model_to_arrays

        config = {
            "clicks": clicks.key,
            "model": model_name,
            "max_rank": max_rank,
            "held_out": held_out,
            "iterations": iterations,
            "seed": seed,
        }
        stored, _ = session.workspace.cached(
            dataset,
            STAGE,
            config,
            lambda: (
                model_to_arrays(model),
                {
                    "max_rank": depth,
                    "iterations": int(info["iterations"]),
                    "converged": bool(info["converged"]),
                    "sessions": int(grid.pair.shape[0]),
                },
            ),
        )
        session.workspace.set_current(dataset, STAGE, stored.key)
        click.echo(
            f"stored as click model {stored.key}; `cltr evaluate --dataset {dataset}` judges it on the vali "
            f"split's sessions"
        )


@_settings(ExportOptions)
@clicks_group.command("export")
@click.argument("out", type=click.Path(dir_okay=False, path_type=Path))
@dataset_option
@clicks_option
@click.pass_obj
@errors_as_usage
def clicks_export(session: Session, out, dataset, clicks_key, **values) -> None:
    """Write a click log (simulated or imported) in the documented format: OUT's extension
    picks CSV, TSV or Parquet (optionally .gz/.xz)."""
    options = settings_from(ExportOptions, values, what="cltr clicks export")
    split, with_features = options.split, options.with_features
    from cltr.data.clicklog import write_click_log
    from cltr.pipeline.stages import export_rows

    dataset_obj, _ = session.dataset(dataset)
    clicks = session.clicks(dataset, clicks_key)
    columns = export_rows(clicks, split, dataset_obj)
    if with_features:
        from cltr.pipeline.stages import feature_columns

        columns.update(feature_columns(columns, getattr(dataset_obj, split)))
    write_click_log(out, columns)
    click.echo(
        f"wrote {len(columns['doc'])} impressions ({int(np.sum(columns['click']))} clicks) of the {split} "
        f"log {clicks.key} to {out}"
    )
