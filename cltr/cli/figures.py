"""``cltr figures NAME``: the paper's tables and figures from experiment specs, over LETOR folds."""

from __future__ import annotations

import os
import time
from pathlib import Path

import click

from cltr.cli.output import Progress, echo_table
from cltr.cli.params import settings_from, settings_params
from cltr.cli.session import Session, errors_as_usage
from cltr.pipeline.experiments import FiguresOptions, dataset_record, parse_folds

__all__ = ["figures_command", "parse_folds"]


@click.command("figures")
@click.argument("name")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default="results",
    help="Directory for NAME.csv, NAME.md, NAME.tex, NAME.png and NAME.pdf.",
)
@click.pass_obj
@errors_as_usage
def figures_command(session: Session, name, out, **values) -> None:
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

    from cltr.pipeline.experiments import SPEC_DIR, load_spec, run_experiment, run_together, spec_names
    from cltr.pipeline.report import (
        check_out_directory,
        output_paths,
        stated_rows,
        table_rows,
        training_data,
        write_figure,
        write_outputs,
    )

    options = settings_from(FiguresOptions, values, what="cltr figures")
    dataset, reps, quick, select, tune, folds = (
        options.dataset,
        options.reps,
        options.quick,
        options.select,
        options.tune,
        options.folds,
    )
    backend, scheduler, tolerance = options.backend, options.scheduler, options.tolerance
    directory = Path(options.specs) if options.specs else SPEC_DIR
    n_jobs = options.n_jobs or os.cpu_count() or 1
    names = (
        [n for n in spec_names(directory) if n != "smoke" and load_spec(n, directory).in_all]
        if name == "all"
        else [name]
    )
    failures = []

    def resolved(loaded, fold_name=None):
        return loaded.resolved(dataset=fold_name or dataset, reps=reps, quick=quick, select=select, tune=tune)

    def fold_list(loaded):
        report_spec = resolved(loaded)
        return session.fold_datasets(report_spec.dataset, list(folds)) if folds else [report_spec.dataset]

    if len(names) > 1:  # every spec's tasks in two waves, then each spec's report from them
        together = []
        for spec_name in names:
            loaded = load_spec(spec_name, directory)
            for fold_name in fold_list(loaded):
                together.append(resolved(loaded, fold_name))
                session.ensure_dataset(together[-1])
        check_out_directory(out)
        on = ", ".join(repr(name) for name in sorted({spec.dataset for spec in together}))
        click.echo(
            f"all ({len(names)} specs: {', '.join(names)}) on {on}: "
            f"the tuning tasks and the specs that tune nothing, then the tuned tasks"
        )
        start = time.perf_counter()
        with Progress("all", unit="step") as bar:
            counts = run_together(
                together,
                session.workspace.root,
                n_jobs=n_jobs,
                backend=backend,
                scheduler=scheduler,
                progress=_experiment_progress(bar),
            )
        _echo_counts(counts, start)
    # several specs: each one's PNG and PDF are drawn in a worker process while the main one
    # writes the next spec's tables (matplotlib is most of a report's time)
    drawing = _Drawing(min(n_jobs, len(names))) if len(names) > 1 and n_jobs > 1 else None
    try:
        for spec_name in names:
            loaded = load_spec(spec_name, directory)
            report_spec = resolved(loaded)
            frames, records = [], {}
            for fold_name in fold_list(loaded):
                spec = resolved(loaded, fold_name)
                session.ensure_dataset(spec)
                records[fold_name] = dataset_record(session.workspace, fold_name)
                train = training_data([fold_name], records)
                click.echo(
                    f"{spec.name} ({spec.artifact}) on {spec.dataset!r}{f' ({train})' if train else ''}: "
                    f"{spec.reps} repetition(s){'; QUICK RUN (--quick): the reduced spec' if spec.quick else ''}"
                )
                check_out_directory(out)  # now, not after the computing
                start = time.perf_counter()
                with Progress(spec.name, unit="step") as bar:
                    frame, counts = run_experiment(
                        spec,
                        session.workspace.root,
                        n_jobs=n_jobs,
                        backend=backend,
                        scheduler=scheduler,
                        progress=_experiment_progress(bar),
                    )
                frames.append(frame)
                _echo_counts(counts, start)
            frame = pd.concat(frames, ignore_index=True)
            paths = write_outputs(frame, report_spec, out, records=records, figure=drawing is None)
            if drawing is None:
                click.echo(f"wrote {', '.join(str(p) for p in paths.values())}")
            else:
                drawing.submit(write_figure, frame, report_spec, Path(out).resolve(), records=records)
                tables = ", ".join(str(paths[suffix]) for suffix in ("csv", "md", "tex"))
                click.echo(f"wrote {tables}; drawing {paths['png']}, {paths['pdf']}")
            echo_table(table_rows(frame, report_spec))
            stated = stated_rows(frame, report_spec)
            if stated:
                click.echo("numbers the paper states in its text, beside ours:")
                echo_table(stated)
            if options.check_paper:
                failures += _check_against_paper(frame, report_spec, tolerance)
    except BaseException:  # an error or Ctrl-C: the figures not yet drawn are not drawn
        if drawing is not None:
            drawing.cancel()
        raise
    if drawing is not None:
        drawn = drawing.finish()
        click.echo(f"drew {len(drawn)} figures: {', '.join(str(output_paths(spec, out)['png']) for spec in drawn)}")
    if failures:
        raise click.ClickException(
            f"{len(failures)} value(s) more than {tolerance:g} of the paper's standard "
            f"deviations from the paper: {'; '.join(failures)}"
        )


def _echo_counts(counts: dict, start: float) -> None:
    """A run's tasks, computed and reused, and the seconds since ``start``."""
    click.echo(
        f"{counts['tasks']} tasks ({counts['computed']} computed, {counts['reused']} reused) in "
        f"{time.perf_counter() - start:.1f} s"
    )


class _Drawing:
    """Figures drawn in loky worker processes, each submitted as its tables are written."""

    def __init__(self, n_jobs: int):
        # joblib's own pool (loky's, with the temporary folder joblib's later Parallel calls expect)
        from joblib.executor import get_memmapping_executor

        self._executor = get_memmapping_executor(max(1, int(n_jobs)))
        self._pending: list = []

    def submit(self, write, frame, spec, out, *, records) -> None:
        self._pending.append((spec, self._executor.submit(write, frame, spec, out, records=records)))

    def cancel(self) -> None:
        for _spec, future in self._pending:
            future.cancel()

    def finish(self) -> list:
        """Wait for every figure; the specs drawn, in order. A figure that failed raises here."""
        for _spec, future in self._pending:
            future.result()
        return [spec for spec, _ in self._pending]


def _check_against_paper(frame, spec, tolerance: float) -> list[str]:
    """Print ``--check``'s table; the failing rows, as text."""
    from cltr.pipeline.report import check

    rows = check(frame, spec, tolerance=tolerance)
    if not rows:
        click.echo(
            f"--check: the spec {spec.name!r} gives no paper values for {spec.dataset!r} ([paper.PREFIX]); "
            f"nothing to check"
        )
        return []
    click.echo(f"--check: {spec.name} against the paper; tolerance {tolerance:g} of the paper's standard deviations")
    echo_table([{**row, "within": {True: "yes", False: "NO", None: "not run"}[row["within"]]} for row in rows])
    return [f"{spec.name} {row['method']} ({row['gap (paper std)']})" for row in rows if row["within"] is False]


def _experiment_progress(bar: Progress):
    """``run_experiment``'s progress shown on ``bar``: its steps move it (bars on a terminal
    move within a task), and each finished task prints a line in a log."""
    finished = [None]

    def show(state) -> None:
        bar.update(
            state.steps_done,
            state.steps,
            postfix={"tasks": f"{state.tasks_done}/{state.tasks}"},
            task_done=state.tasks_done != finished[0],
        )
        finished[0] = state.tasks_done

    return show


figures_command.params.extend(settings_params(FiguresOptions))
