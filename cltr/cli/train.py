"""``cltr train METHOD`` (a command per method of ``cltr.methods``, its flags generated from
the method's options type), ``cltr evaluate`` and ``cltr score``."""

from __future__ import annotations

import math
from pathlib import Path

import click
import numpy as np

from cltr import methods
from cltr.cli.output import Progress, echo_table, warn
from cltr.cli.params import (
    click_model_option,
    clicks_option,
    dataset_option,
    given,
    model_option,
    option_params,
    parse_or_usage,
    seed_option,
    settings_from,
    settings_params,
)
from cltr.cli.session import Session, errors_as_usage
from cltr.core.ranking import NDCG_CONVENTION
from cltr.core.selection import ESS_FRACTION
from cltr.pipeline.stages import EvaluateOptions, ScoreOptions, TrainOptions, production_test_metrics
from cltr.pipeline.workspace import atomic_write


@click.group("train")
def train_group() -> None:
    """Train a method on the training clicks; hyperparameters not given are chosen on
    validation clicks (SNIPS Avg DCG), never on test labels.

    Each method's own options: `cltr train METHOD --help`.
    """


train_group.help = (
    (train_group.help or "") + "\n\n\b\n" + "\n".join(f"{m.name:13s} {m.summary}" for m in methods.methods().values())
)


def describe_chosen(info: dict) -> str:
    return ", ".join(
        f"{k} = {v:g}" if isinstance(v, float) else f"{k} = {v}" for k, v in info.get("chosen", {}).items()
    )


_HIDDEN_COLUMNS = (
    "lower_bound",
    "solver_seconds",
    "ccp_trace",
    "trace",
    "initial_objective",
    "initial_train_snips_avg_dcg",
)


def train_method(session: Session, method, options, dataset: str, clicks_key, seed, training=None) -> dict:
    """Train (or reuse) with a progress bar; print the selection table, the model's key and
    chosen hyperparameters, and the method's own tables; return its info."""
    bar = None
    done = {"units": 0, "candidates": 0}

    def progress(row):
        nonlocal bar
        if row.get("event") == "progress":  # inner units (epochs, trees) with their total
            if bar is None:
                bar = Progress(method.name, row["total"], row.get("unit", "step"))
            done["units"] += row.get("advance", 1)
            bar.update(done["units"], row["total"], postfix=row.get("postfix"))
        elif not done["units"]:  # a fitted candidate of the grid (their number is the method's)
            if bar is None:
                bar = Progress(method.name, unit="candidate")
            done["candidates"] += 1
            bar.update(done["candidates"])

    try:
        artifact, reused = session.train(
            dataset, method.name, options, training, clicks_key=clicks_key, seed=seed, progress=progress
        )
    finally:
        if bar is not None:
            bar.close()
    info = artifact.info
    rows = info.get("selection", [])
    if rows and method.tables is None:
        echo_table(rows, [c for c in rows[0] if c not in _HIDDEN_COLUMNS and not isinstance(rows[0][c], (list, dict))])
    criterion = "DR" if info.get("validation_criterion") == "dr" else "SNIPS"
    click.echo(
        f"model {artifact.key}{' (reused)' if reused else ''}: {method.name}, {describe_chosen(info)}, "
        f"validation {criterion} Avg DCG {info['validation_snips_avg_dcg']:.4f}"
        + (
            " (--criterion dr: the tables' validation_snips_avg_dcg columns are DR estimates)"
            if criterion == "DR"
            else ""
        )
    )
    if "effective_sample_size" in info and not method.weighted:  # its 1/q's ESS would describe no weight it uses
        click.echo(f"{info['train_clicks']} training clicks ({method.name} weighs no click by 1/q)")
    elif "effective_sample_size" in info:
        where = f", propensities {artifact.config['propensities']}" if "propensities" in artifact.config else ""
        clipped = f", clipped at {info['clip']:g}" if info.get("clip") is not None else ""
        examples = (
            f" as {info['train_examples']} examples (displayed documents) with signed weights"
            if "train_examples" in info
            else ""
        )
        click.echo(
            f"{info['train_clicks']} training clicks{examples}, effective sample size of the weights "
            f"{'' if examples else '1/q '}{info['effective_sample_size']:.1f}{where}{clipped}"
        )
        if "warnings" not in info and info["effective_sample_size"] < 0.01 * info.get(
            "train_examples", info["train_clicks"]
        ):
            warn(
                f"an effective sample size of {info['effective_sample_size']:.1f} means a few extreme weights "
                f"carry the whole training loss (1/q of a tiny propensity): clip the propensities (--clip TAU) "
                f"or check the log's propensity column"
            )
    for title, table, columns in method.tables(info) if method.tables else []:
        click.echo(title)
        echo_table(table, columns)
    if info.get("ccp_inner_misses"):
        steps = ", ".join(
            f"{m['iteration']} (gap {m['inner_gap']:.3g} > {m['inner_tol']:.3g})" for m in info["ccp_inner_misses"]
        )
        warn(
            f"the inner SVM solve of CCP step{'s' if len(info['ccp_inner_misses']) > 1 else ''} {steps} ran out "
            f"of cutting planes before its duality gap: those steps are approximate (the true objective still "
            f"never rose); a smaller C or a looser --tol solves in fewer planes"
        )
    _echo_guard(info)
    return info


def _echo_guard(info: dict) -> None:
    """The clipping chosen by --clip auto (a row per TAU), the model against the logging
    ranker on the validation clicks, and the guard's warnings (``methods.train``)."""
    if info.get("clip_selection"):
        ess = info["ess_fraction"]["unclipped"]
        tau_v = info.get("validation_clip")
        click.echo(
            f"--clip auto: the training weights' effective sample size is {ess:.1%} of the examples (below "
            f"{ESS_FRACTION:.0%}), so TAU was chosen on the validation clicks "
            f"({'unclipped' if tau_v is None else f'clipped at their own TAU_v = {tau_v:g}'}): the most "
            f"clipped model within one standard error of the best is kept"
        )
        echo_table(
            [
                {
                    "clip": "none" if row["clip"] is None else row["clip"],
                    "validation_snips_avg_dcg": row["validation_snips_avg_dcg"],
                    "difference_to_best": row.get("difference_to_best", float("nan")),
                    "standard_error": row.get("standard_error", float("nan")),
                    "ess_fraction": row["ess_fraction"],
                    "alike_share": row["alike_share"],
                    "kept": "yes" if row.get("kept") else "",
                    "chosen": describe_chosen(row),
                    "seconds": row["seconds"],
                }
                for row in info["clip_selection"]
            ],
            [
                "clip",
                "validation_snips_avg_dcg",
                "difference_to_best",
                "standard_error",
                "ess_fraction",
                "alike_share",
                "kept",
                "chosen",
                "seconds",
            ],
        )
    versus = info.get("versus_logging")
    if versus and math.isfinite(versus["difference"]):
        click.echo(
            f"validation SNIPS Avg DCG{', unclipped' if versus.get('unclipped') else ''}: model "
            f"{versus['model']:.4f}, logging ranker {versus['logging']:.4f} "
            f"(difference {versus['difference']:+.4f} +- {versus['standard_error']:.4f}, same clicks)"
        )
    for message in info.get("warnings", []):
        warn(message)


def _train_command(method) -> click.Command:
    training_type = TrainOptions.for_method(method.name)

    def callback(session: Session, dataset, clicks_key, seed, **values):
        training = settings_from(training_type, values, what=f"cltr train {method.name}")
        options = parse_or_usage(method.parse_options, given(values, method.options), what=f"cltr train {method.name}")
        train_method(session, method, options, dataset, clicks_key, seed, training)

    return click.Command(
        method.name,
        callback=click.pass_obj(errors_as_usage(callback)),
        help=method.description or method.summary,
        short_help=method.summary,
        params=[
            *option_params(method.options),
            dataset_option.param(),
            clicks_option.param(help="Key of the click log [default: the last simulated or imported]."),
            *settings_params(training_type),
            seed_option.param(),
        ],
    )


for _method in methods.methods().values():
    train_group.add_command(_train_command(_method))


def evaluate_model(session: Session, dataset, model_key, click_model_key, seed, **values) -> None:
    """Avg DCG, Avg Rank and nDCG@10 on the test set, and the SNIPS Avg DCG on validation clicks;
    with a click model fitted by `cltr clicks fit`, its click prediction on the vali split's
    sessions beside them: log-likelihood and perplexity per rank (Chuklin et al.)."""
    options = settings_from(EvaluateOptions, values, what="cltr evaluate")
    production, split = options.production, options.split
    run_file = None if options.run_file is None else Path(options.run_file)
    if split is not None and run_file is None:
        raise click.UsageError("--split applies to --run only (trained models are evaluated on the test split)")
    if run_file is not None:
        _evaluate_run(session, dataset, run_file, split or "test", seed)
        return
    if production:
        clicks_key = session.workspace.current(dataset).get("clicks")
        clicks = session.workspace.load(dataset, "clicks", clicks_key) if clicks_key else None
        if session.workspace.current(dataset).get("production") is None and (
            (clicks is not None and "imports" in clicks.config)
            or any(f"imports/{split}" in session.workspace.current(dataset) for split in ("train", "vali"))
        ):
            raise click.ClickException(
                f"dataset {dataset!r}'s click log was imported, and cltr does not have the ranker that logged it: "
                f"score your production ranker's run with `cltr evaluate --run RUN --dataset {dataset}`, or make a "
                f"stand-in with `cltr produce --dataset {dataset}` first"
            )
        artifact = session.production(dataset)
        test = production_test_metrics(artifact, session.dataset(dataset)[0])
        click.echo(
            f"production ranker {artifact.key} (C = {artifact.config['C']:g}, "
            f"{artifact.info['n_queries']} labelled training queries) on {dataset!r}:"
        )
        echo_table([_test_row(test)])
        echo_convention(session, dataset)
        return
    if model_key is not None and session.workspace.load(dataset, "models", model_key) is None:
        # a model trained on another prepared dataset: scored on this one's test split
        from cltr.core.ranking import evaluate
        from cltr.core.seeds import stream
        from cltr.pipeline.models import scorer_from_arrays

        origin, model = session.find_model(model_key)
        dataset_obj, _ = session.dataset(dataset)
        scorer = scorer_from_arrays(model.arrays)
        width = _model_width(scorer)
        if width is not None and width != dataset_obj.test.n_features:
            raise click.ClickException(
                f"model {model_key} (of {origin!r}) takes {width} features; {dataset!r} has "
                f"{dataset_obj.test.n_features}"
            )
        test = evaluate(
            scorer,
            dataset_obj.test,
            dataset_obj.test.relevant(dataset_obj.relevant_from),
            rng=stream(seed, "evaluate"),
            dcg_base=dataset_obj.dcg_base,
        )
        click.echo(f"model {model.key} ({model.config['method']} trained on {origin!r}) on {dataset!r}:")
        echo_table([_test_row(test)])
        echo_convention(session, dataset)
        return
    artifact, model, _ = session.evaluate(dataset, model_key, seed)
    info = artifact.info
    click.echo(f"model {model.key} ({info['method']}, {describe_chosen(model.info)}) on {dataset!r}:")
    echo_table([{**_test_row(info), "vali SNIPS Avg DCG": info["validation_snips_avg_dcg"]}])
    echo_convention(session, dataset)
    _echo_click_prediction(session, dataset, click_model_key, model)


evaluate_command = click.Command(
    "evaluate",
    callback=click.pass_obj(errors_as_usage(evaluate_model)),
    help=evaluate_model.__doc__,
    params=[
        dataset_option.param(),
        model_option.param(),
        *settings_params(EvaluateOptions),
        click_model_option.param(
            help="Key of a click model stored by `cltr clicks fit` to judge on the vali split's sessions "
            "(log-likelihood, perplexity per rank) [default: the dataset's last fitted one, if any]."
        ),
        seed_option.param(),
    ],
)


def _echo_click_prediction(session: Session, dataset: str, key: str | None, model=None) -> None:
    """The held-out click prediction of a two-tower ``model``, and of a click model stored
    by `cltr clicks fit` (the dataset's last one unless ``key``), on the vali split's
    sessions, both at the same ranks (``compared_depth``: the click model's, 1..10 without
    one, no deeper than the two-tower's bias tower); nothing when neither."""
    from cltr.pipeline.click_prediction import STAGE, compared_depth, held_out_scores, score_table, two_tower_scores

    key = key or session.workspace.current(dataset).get(STAGE)
    fitted = None
    if key is not None:
        fitted = session.workspace.load(dataset, STAGE, key)
        if fitted is None:
            raise click.ClickException(
                f"no click model {key} of dataset {dataset!r}; fit one with `cltr clicks fit --dataset {dataset}`"
            )
    found = []
    depth = compared_depth(model, fitted)
    if model is not None and model.config.get("method") == "two-tower":
        clicks = session.workspace.load(dataset, "clicks", model.config["clicks"])
        scores = (
            None if clicks is None else two_tower_scores(model, clicks, session.dataset(dataset)[0], max_rank=depth)
        )
        if scores is not None:
            found.append((f"model {model.key} (relevance tower x bias tower, {model.info['combination']})", scores))
    if fitted is not None:
        clicks = session.workspace.load(dataset, "clicks", fitted.config["clicks"])
        if clicks is None:
            raise click.ClickException(
                f"click model {key} was fitted on click log {fitted.config['clicks']}, which "
                f"is no longer in the workspace"
            )
        found.append(
            (
                f"click model {key} ({fitted.config['model']}, fitted on training sessions of click log {clicks.key})",
                held_out_scores(fitted, clicks, session.dataset(dataset)[0], max_rank=depth),
            )
        )
    for what, scores in found:
        click.echo(
            f"click prediction of {what} on its {scores.sessions} vali sessions at ranks 1..{depth}: "
            f"log-likelihood "
            f"{scores.log_likelihood:.4f} per session, perplexity {scores.perplexity:.4f}"
        )
        echo_table(score_table(scores))


def _evaluate_run(session: Session, dataset_name: str, run_file: Path, split: str, seed: int) -> None:
    """``cltr evaluate --run``: an outside model's scores with cltr's metrics and tie-breaks."""
    from cltr.core.ranking import evaluate
    from cltr.core.seeds import stream
    from cltr.data.runs import read_run

    dataset, _ = session.dataset(dataset_name)
    queries = getattr(dataset, split)
    scores = read_run(run_file, queries, split=split)

    class _Scores:  # the run's scores, ranked by ``evaluate`` exactly as a model's
        def scores(self, X):
            return scores

    metrics = evaluate(
        _Scores(),
        queries,
        queries.relevant(dataset.relevant_from),
        rng=stream(seed, "evaluate"),
        dcg_base=dataset.dcg_base,
    )
    click.echo(f"run {run_file} on the {split} split of {dataset_name!r}:")
    labels = {
        "avg_dcg": "Avg DCG",
        "avg_rank": "Avg Rank",
        "ndcg@10": "nDCG@10",
        "ndcg@10_relevant_queries": "nDCG@10 relevant queries",
    }
    echo_table([{f"{split} {label}": metrics[key] for key, label in labels.items() if key in metrics}])
    echo_convention(session, dataset_name)


def _test_row(metrics: dict) -> dict:
    """The test metrics of ``evaluate`` under the names the tables print."""
    return {
        "test Avg DCG": metrics["avg_dcg"],
        "test Avg Rank": metrics["avg_rank"],
        "test nDCG@10": metrics["ndcg@10"],
        "test nDCG@10 relevant queries": metrics["ndcg@10_relevant_queries"],
    }


def echo_convention(session: Session, dataset_name: str) -> None:
    click.echo(session.dataset(dataset_name)[0].convention)
    click.echo(NDCG_CONVENTION)


def score_file(session: Session, file, model_key, out, trec, seed, **values) -> None:
    """Score an SVMlight/LETOR FILE with a trained model. Ranks in the run file break ties
    by a seeded random permutation, as every cltr ranking does."""
    run_name = settings_from(ScoreOptions, values, what="cltr score").run_name
    from cltr.core.ranking import rank_documents
    from cltr.core.seeds import stream
    from cltr.data.svmlight import load_svmlight_split
    from cltr.pipeline.models import scorer_from_arrays

    _, model = session.find_model(model_key)
    scorer = scorer_from_arrays(model.arrays)
    width = _model_width(scorer)
    queries, _ = load_svmlight_split(file, n_features=width)
    if width is not None and queries.n_features != width:
        raise click.ClickException(f"{file} has {queries.n_features} features, the model {model_key} {width}")
    scores = scorer.scores(queries.X)
    if out is not None or trec is None:
        text = "".join(f"{s:.10g}\n" for s in scores)
        if out is None:
            click.echo(text, nl=False)
        else:
            with atomic_write(out, "w") as stream_:
                stream_.write(text)
    if trec is not None:
        # the stream of `cltr evaluate`: the run of a test file ranks as evaluate ranks it
        ranks = rank_documents(scores, queries.offsets, stream(seed, "evaluate"))
        doc_query = queries.doc_query
        docid = getattr(queries, "docid", None)
        local = np.arange(queries.n_docs) - queries.offsets[doc_query]
        names = [
            str(d) if docid is not None and d is not None else f"q{queries.qid[q]}-d{i}"
            for d, q, i in zip(docid if docid is not None else [None] * queries.n_docs, doc_query, local, strict=True)
        ]
        order = np.lexsort((ranks, doc_query))
        with atomic_write(trec, "w") as stream_:
            for row in order:
                stream_.write(
                    f"{queries.qid[doc_query[row]]} Q0 {names[row]} {ranks[row]} {scores[row]:.10g} {run_name}\n"
                )
    written = [str(p) for p in (out, trec) if p is not None]
    if written:
        click.echo(
            f"scored {queries.n_docs} documents of {queries.n_queries} queries; wrote {', '.join(written)}",
            err=out is None and trec is None,
        )


score_command = click.Command(
    "score",
    callback=click.pass_obj(errors_as_usage(score_file)),
    help=score_file.__doc__,
    params=[
        click.Argument(["file"], type=click.Path(exists=True, dir_okay=False, path_type=Path)),
        model_option.param(required=True, help="Key of a trained model (any prepared dataset)."),
        click.Option(
            ["--out"],
            type=click.Path(dir_okay=False, path_type=Path),
            default=None,
            help="Write one score per line, in the file's row order [default: standard output, unless --trec].",
        ),
        click.Option(
            ["--trec"],
            type=click.Path(dir_okay=False, path_type=Path),
            default=None,
            help="Write a TREC run file: qid Q0 docid rank score name (docids from the '#docid = ...' "
            "comments, else q<qid>-d<i>).",
        ),
        *settings_params(ScoreOptions),
        seed_option.param(),
    ],
)


def _model_width(scorer) -> int | None:
    from cltr import scorers

    return scorers.get(scorer.kind).width(scorer)
