"""The ``cltr`` command line: click commands only; the work is done in ``cltr.pipeline``.

``cltr train METHOD`` and ``cltr simulate``'s click-model options are generated from the
methods' and click models' options types (``cltr.options``).

Every stage reads what the stage before it wrote in the workspace. When an upstream
artifact is missing, the stage builds it with default settings and says so, so that
``cltr train svm-proprank`` works on a fresh machine.
"""

from __future__ import annotations

from pathlib import Path

import click

from cltr import __version__
from cltr.cli.clicks import clicks_group
from cltr.cli.data import prepare, prepare_command, produce_command, simulate
from cltr.cli.figures import figures_command, parse_folds
from cltr.cli.output import Progress, _show_library_log, echo_table, warn
from cltr.cli.params import (
    FiniteFloat,
    SharedOption,
    WorkdirPath,
    clicks_option,
    dataset_option,
    finite_float,
    option_params,
    registry_params,
    seed_option,
)
from cltr.cli.propensities import estimate_command, propensities_group
from cltr.cli.run import run_command
from cltr.cli.session import Session
from cltr.cli.train import _train_command, evaluate_command, score_command, train_group
from cltr.pipeline.workspace import Workspace

__all__ = [
    "main",
    "Session",
    "Progress",
    "echo_table",
    "warn",
    "FiniteFloat",
    "finite_float",
    "SharedOption",
    "dataset_option",
    "seed_option",
    "clicks_option",
    "option_params",
    "registry_params",
    "prepare",
    "prepare_command",
    "simulate",
    "train_group",
    "run_command",
    "clicks_group",
    "propensities_group",
    "estimate_command",
    "parse_folds",
    "_train_command",
]


class _Interruptible(click.Group):
    """The top command: Ctrl-C ends any command with one line and exit status 130 (128 +
    SIGINT, as shells report it), not click's "Aborted!" with status 1 or a traceback."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo(
                "\ninterrupted: what finished is kept in the workspace; the same command goes on from there", err=True
            )
            raise click.exceptions.Exit(130) from None


@click.group(cls=_Interruptible, context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@click.option(
    "--workdir",
    type=WorkdirPath(),
    envvar="CLTR_WORKDIR",
    default="cltr-work",
    help="Workspace directory holding every artifact ($CLTR_WORKDIR); also accepted after the command.",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress on stderr (warnings and errors still).")
@click.option("-v", "--verbose", is_flag=True, help="Also say which artifact each stage computed or reused.")
@click.version_option(__version__, prog_name="cltr")
@click.pass_context
def main(ctx: click.Context, workdir: Path, quiet: bool, verbose: bool) -> None:
    """Counterfactual learning-to-rank from simulated clicks (Agarwal et al., SIGIR 2019).

    \b
    The pipeline, each stage reusing what the one before wrote in the workspace:
      cltr prepare   synthetic | letor | yahoo | svmlight
      cltr produce   the production ranker (Ranking SVM on 1% of training queries)
      cltr simulate  position-biased clicks on its rankings
      cltr train     svm-rank | svm-proprank | svm-propdcg | deep-propdcg | lambdarank |
                     tree-propdcg | skyline
                     (see `cltr train --help`)
      cltr evaluate  Avg DCG, Avg Rank, nDCG@10 (two averages) on the test set
      cltr figures   the paper's Table 2 and figures (`cltr figures --help`)
    `cltr run` runs the pipeline on the embedded synthetic dataset and trains the
    paper's three linear methods, svm-rank, svm-proprank and svm-propdcg (--method
    for others).

    \b
    Progress goes to stderr: bars on a terminal, otherwise a line per finished task or
    per 10 s with the time left (-q: none). Errors are one line, exit status 1 (2 for
    a bad option); output cut short by its reader (`cltr ... | head`) ends quietly, exit
    status 141 (128 + SIGPIPE, as for `yes | head`).
    """
    if quiet and verbose:
        raise click.UsageError("-q and -v contradict each other; give one")
    verbosity = -1 if quiet else int(verbose)
    _show_library_log(verbosity)
    ctx.obj = Session(workdir, verbosity)


def _workdir_after_command(ctx: click.Context, param, value: Path | None) -> None:
    """``cltr COMMAND ... --workdir DIR``: DIR replaces the workspace that ``cltr --workdir``
    (or $CLTR_WORKDIR, or the default) named, unless the two disagree on the command line."""
    if value is None:
        return
    root = ctx.find_root()
    given = root.params.get("workdir")
    given_here = root.get_parameter_source("workdir") == click.core.ParameterSource.COMMANDLINE
    if given_here and given is not None and Path(given) != value:
        raise click.UsageError(f"--workdir is given twice, as {given} and as {value}; give it once")
    session = ctx.find_object(Session)
    assert session is not None  # main() puts the Session on the context before any command runs
    session.workspace = Workspace(value)


def _accept_workdir_after_commands(group: click.Group) -> None:
    for command in group.commands.values():
        if isinstance(command, click.Group):
            _accept_workdir_after_commands(command)
        else:
            command.params.append(
                click.Option(
                    ["--workdir"],
                    type=WorkdirPath(),
                    default=None,
                    expose_value=False,
                    is_eager=True,
                    callback=_workdir_after_command,
                    help="Workspace directory (the same as `cltr --workdir DIR COMMAND`).",
                )
            )


for _command in (
    prepare,
    produce_command,
    simulate,
    train_group,
    evaluate_command,
    score_command,
    run_command,
    clicks_group,
    propensities_group,
    figures_command,
):
    main.add_command(_command)

_accept_workdir_after_commands(main)
