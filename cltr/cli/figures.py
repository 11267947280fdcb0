"""``cltr figures NAME``: the paper's tables and figures from experiment specs, over LETOR folds."""

from __future__ import annotations

import os
import time
from pathlib import Path

import click

from cltr.cli.output import Progress, echo_table
from cltr.cli.params import finite_float
from cltr.cli.session import Session, errors_as_usage
from cltr.pipeline.experiments import SELECTIONS, TUNINGS, dataset_record


@click.command("figures")
@click.argument("name")
@click.option("--dataset", default=None,
              help="Prepared dataset to run on [default: the spec's, the embedded synthetic one].")
@click.option("--reps", type=click.IntRange(min=1), default=None, help="Repetitions [default: the spec's].")
@click.option("--n-jobs", type=click.IntRange(min=1), default=None,
              help="Tasks run in parallel [default: one per CPU core]; results do not depend on it.")
@click.option("--backend", type=click.Choice(["loky", "dask"]), default="loky",
              help="Local processes (loky) or a dask.distributed cluster (pip install 'cltr[dask]').")
@click.option("--scheduler", default=None,
              help="dask scheduler address, e.g. tcp://host:8786 [default: a local cluster of --n-jobs "
                   "workers]. Workers must see the same --workdir.")
@click.option("--quick", is_flag=True, help="The spec's reduced version (fewer repetitions and points).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default="results",
              help="Directory for NAME.csv, NAME.md, NAME.tex, NAME.png and NAME.pdf.")
@click.option("--specs", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Directory of experiment specs [default: the project's experiments/].")
@click.option("--select", type=click.Choice(SELECTIONS), default=None,
              help="How the linear SVMs' C is chosen: per repetition, each on its own validation clicks, or "
                   "pooled, the paper's way: one C per point for all repetitions, by their mean validation "
                   "SNIPS Avg DCG; table and curve specs only (ccp and propensity keep theirs) [default: the "
                   "spec's select, else repetition].")
@click.option("--tune", type=click.Choice(TUNINGS), default=None,
              help="How the tree methods' learning rate and leaves (Deep PropDCG's learning rate) are chosen: "
                   "per model over the whole grid (repetition), once per series by the first repetition at "
                   "the spec's tune_at point and then fixed, as the paper tuned LambdaRank (once), or by the "
                   "first repetition of each point for the others (point); tree counts and epochs are "
                   "early-stopped per model either way; table and curve specs only [default: the spec's tune, "
                   "else repetition].")
@click.option("--folds", default=None, callback=lambda ctx, param, value: _folds_option(value),
              help="LETOR folds to run, e.g. 1-5 or 1,3: the --dataset (prepared by `cltr prepare letor`) "
                   "is its own fold; every other fold K runs on DATASET-foldK, prepared like it when missing. "
                   "Reports per fold and over all (fold, repetition) runs.")
@click.option("--check", "check_paper", is_flag=True,
              help="Compare every row with the paper's value ([paper.PREFIX] of the spec) and fail when one is "
                   "more than --tolerance of the paper's standard deviations away.")
@click.option("--tolerance", type=finite_float(0, low_open=True), default=2.0,
              help="--check's tolerance, in units of the paper's standard deviation.")
@click.pass_obj
@errors_as_usage
def figures_command(session: Session, name, dataset, reps, n_jobs, backend, scheduler, quick, out, specs, select,
                    tune, folds, check_paper, tolerance) -> None:
    """Regenerate a table or figure of the paper: NAME is a spec in experiments/ or `all`
    (every spec but smoke and those with `in_all = false`: robustness, hours on the default,
    runs by name).

    \b
    table2          Table 2: the five methods, Tree PropDCG, production and skyline
    learning-curve  Figure 1: Avg DCG against training clicks
    rank-curve      Figure 2: Avg Rank against training clicks
    eta             Figure 3: Avg DCG as position bias grows
    noise           Figure 4: Avg DCG as click noise grows
    misspec         Figure 5: Avg DCG under misspecified propensities
    ccp             Figure 6: CCP objective and training DCG per iteration
    deep            Figure 7: Deep PropDCG against SVM PropDCG
    clipping        beyond the paper: propensity clipping
    propensity      beyond the paper: propensities estimated from logs
    trust           beyond the paper: trust bias (IPS, Bayes-IPS, affine)
    cascade         beyond the paper: cascade clicks (DCM)
    topk            beyond the paper: top-k display, policy-aware propensities
    robustness      beyond the paper: every method on easy and hard logs, with the tree
                    libraries' own debiasing
    smoke           a tiny version of everything (CI)
    Every (point, repetition) is a cached task: an interrupted run resumes where it stopped.
    """
    import pandas as pd

    from cltr.pipeline.experiments import SPEC_DIR, load_spec, run_experiment, spec_names
    from cltr.pipeline.report import check_out_directory, stated_rows, table_rows, training_data, write_outputs

    directory = specs or SPEC_DIR
    n_jobs = n_jobs or os.cpu_count() or 1
    names = [n for n in spec_names(directory) if n != "smoke" and load_spec(n, directory).in_all] \
        if name == "all" else [name]
    failures = []
    for spec_name in names:
        loaded = load_spec(spec_name, directory)
        report_spec = loaded.resolved(dataset=dataset, reps=reps, quick=quick, select=select, tune=tune)
        fold_names = session.fold_datasets(report_spec.dataset, folds) if folds else [report_spec.dataset]
        frames, records = [], {}
        for fold_name in fold_names:
            spec = loaded.resolved(dataset=fold_name, reps=reps, quick=quick, select=select, tune=tune)
            session.ensure_dataset(spec)
            records[fold_name] = dataset_record(session.workspace, fold_name)
            train = training_data([fold_name], records)
            click.echo(f"{spec.name} ({spec.artifact}) on {spec.dataset!r}{f' ({train})' if train else ''}: "
                       f"{spec.reps} repetition(s){'; QUICK RUN (--quick): the reduced spec' if spec.quick else ''}")
            check_out_directory(out)  # now, not after the computing
            start = time.perf_counter()
            with Progress(spec.name, unit="step") as bar:
                frame, counts = run_experiment(spec, session.workspace.root, n_jobs=n_jobs, backend=backend,
                                               scheduler=scheduler, progress=_experiment_progress(bar))
            frames.append(frame)
            click.echo(f"{counts['tasks']} tasks ({counts['computed']} computed, {counts['reused']} reused) in "
                       f"{time.perf_counter() - start:.1f} s")
        frame = pd.concat(frames, ignore_index=True)
        paths = write_outputs(frame, report_spec, out, records=records)
        click.echo(f"wrote {', '.join(str(p) for p in paths.values())}")
        echo_table(table_rows(frame, report_spec))
        stated = stated_rows(frame, report_spec)
        if stated:
            click.echo("numbers the paper states in its text, beside ours:")
            echo_table(stated)
        if check_paper:
            failures += _check_against_paper(frame, report_spec, tolerance)
    if failures:
        raise click.ClickException(f"{len(failures)} value(s) more than {tolerance:g} of the paper's standard "
                                   f"deviations from the paper: {'; '.join(failures)}")


def _folds_option(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        return parse_folds(text)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--folds") from None


def parse_folds(text: str) -> list[int]:
    """``"1-5"`` -> [1, 2, 3, 4, 5]; ``"1,3"`` -> [1, 3]; ``"2-3,5"`` -> [2, 3, 5]; each fold once, in order."""
    folds: list[int] = []
    for part in text.split(","):
        low, dash, high = part.strip().partition("-")
        if not low.strip().isdigit() or (dash and not high.strip().isdigit()):
            raise ValueError(f"{part.strip()!r} is not a fold number or a range like 1-5 (folds: e.g. 1-5 or 1,3)")
        first, last = int(low), int(high) if dash else int(low)
        if first < 1 or last < first:
            raise ValueError(f"{part.strip()!r}: folds are numbered from 1 and a range runs upwards, e.g. 1-5")
        folds.extend(range(first, last + 1))
    return list(dict.fromkeys(folds))


def _check_against_paper(frame, spec, tolerance: float) -> list[str]:
    """Print ``--check``'s table; the failing rows, as text."""
    from cltr.pipeline.report import check

    rows = check(frame, spec, tolerance=tolerance)
    if not rows:
        click.echo(f"--check: the spec {spec.name!r} gives no paper values for {spec.dataset!r} ([paper.PREFIX]); "
                   f"nothing to check")
        return []
    click.echo(f"--check: {spec.name} against the paper; tolerance {tolerance:g} of the paper's standard deviations")
    echo_table([{**row, "within": {True: "yes", False: "NO", None: "not run"}[row["within"]]} for row in rows])
    return [f"{spec.name} {row['method']} ({row['gap (paper std)']})" for row in rows if row["within"] is False]


def _experiment_progress(bar: Progress):
    """``run_experiment``'s progress shown on ``bar``: its steps move it (bars on a terminal
    move within a task), and each finished task prints a line in a log."""
    finished = [None]

    def show(state) -> None:
        bar.update(state.steps_done, state.steps, postfix={"tasks": f"{state.tasks_done}/{state.tasks}"},
                   task_done=state.tasks_done != finished[0])
        finished[0] = state.tasks_done

    return show
