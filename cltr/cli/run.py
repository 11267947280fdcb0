"""``cltr run``: the whole path with default settings."""

from __future__ import annotations

import time

import click

from cltr.cli.output import echo_table
from cltr.cli.params import dataset_option, seed_option, settings_from, settings_params
from cltr.cli.session import Session, errors_as_usage
from cltr.cli.train import describe_chosen, echo_convention
from cltr.pipeline.session import RunOptions
from cltr.pipeline.stages import production_test_metrics


def run_path(session: Session, dataset, seed, **values) -> None:
    """The whole path with default settings: produce, simulate, then train and evaluate the
    paper's three linear methods (svm-rank, svm-proprank, svm-propdcg; a few seconds in all),
    or the methods given by --method (e.g. --method deep-propdcg --method lambdarank)."""
    method_names = settings_from(RunOptions, values, what="cltr run").method_names
    start = time.perf_counter()
    production, _ = session.produce(dataset, seed=seed)
    clicks, _ = session.simulate(dataset, production_key=production.key, seed=seed)
    rows = [
        {
            "method": "production",
            "chosen": f"C = {production.config['C']:g}",
            **production_test_metrics(production, session.dataset(dataset)[0]),
        }
    ]
    for method in method_names:
        where = "labels (an oracle reference)" if method == "skyline" else "clicks"
        click.echo(f"training {method} (hyperparameters selected on validation {where})")
        # the last method trained becomes the current model; one pointer write, none on a rerun
        model, _ = session.train(
            dataset, method, {}, clicks_key=clicks.key, seed=seed, remember=method == method_names[-1]
        )
        evaluation, _, _ = session.evaluate(dataset, model.key, seed)
        rows.append(
            {
                "method": method,
                "chosen": describe_chosen(model.info),
                **{k: evaluation.info[k] for k in ("avg_dcg", "avg_rank", "ndcg@10", "ndcg@10_relevant_queries")},
            }
        )
    click.echo(
        f"test metrics on {dataset!r} ({clicks.info['train']['clicks']} training clicks, "
        f"{time.perf_counter() - start:.1f} s):"
    )
    echo_table(rows, ["method", "chosen", "avg_dcg", "avg_rank", "ndcg@10", "ndcg@10_relevant_queries"])
    echo_convention(session, dataset)


run_command = click.Command(
    "run",
    callback=click.pass_obj(errors_as_usage(run_path)),
    help=run_path.__doc__,
    params=[dataset_option.param(), *settings_params(RunOptions), seed_option.param()],
)
