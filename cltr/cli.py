"""The ``cltr`` command line: click commands only; the work is done in ``cltr.pipeline``.

``cltr train METHOD`` and ``cltr simulate``'s click-model options are generated from the
methods' and click models' options types (``cltr.options``).

Every stage reads what the stage before it wrote in the workspace. When an upstream
artifact is missing, the stage builds it with default settings and says so, so that
``cltr train svm-proprank`` works on a fresh machine.
"""

from __future__ import annotations

import errno
import logging
import math
import os
import sys
import time
from pathlib import Path
from typing import Callable

import click
import numpy as np

from cltr import __version__, clickmodels, datasets, estimators, methods
from cltr.options import Field, OptionSpec
from cltr.core.queries import default_passes, describe_convention
from cltr.core.ranking import NDCG_CONVENTION
from cltr.core.selection import CLIP_GRID, ESS_FRACTION, parse_clip
from cltr.pipeline import corrections
from cltr.pipeline.experiments import SELECTIONS, TUNINGS, dataset_record
from cltr.pipeline.session import DEFAULT_DATASET, RequestError, SessionProgress, check_simulation_fits
from cltr.pipeline.session import Session as PipelineSession
from cltr.pipeline.stages import production_test_metrics
from cltr.pipeline.workspace import DamagedArtifact, Workspace, atomic_write, check_name



# -- printing ----------------------------------------------------------------------------

def echo_table(rows: list[dict], columns: list[str] | None = None) -> None:
    """Print rows as an aligned plain-text table."""
    if not rows:
        return
    columns = columns or list(rows[0])

    def cell(value):
        if isinstance(value, float):
            return f"{value:.4g}" if abs(value) < 1e4 else f"{value:.3e}"
        return str(value)

    text = [[cell(row.get(c, "")) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in text)) for i, c in enumerate(columns)]
    click.echo("  ".join(c.rjust(w) for c, w in zip(columns, widths)))
    for r in text:
        click.echo("  ".join(v.rjust(w) for v, w in zip(r, widths)))
    warn_if_undefined(rows, columns)


def warn_if_undefined(rows: list[dict], columns: list[str]) -> None:
    """A NaN printed is said to be one: which columns, and what it means."""
    undefined = [c for c in columns if any(isinstance(row.get(c), float) and math.isnan(row[c]) for row in rows)]
    if undefined:
        warn(f"nan in {', '.join(undefined)}: undefined, an average over nothing (no relevant document, or no "
             "click, to average over)")


def warn(message: str) -> None:
    """A one-line warning on stderr (shown under -q too)."""
    click.echo(f"warning: {message}", err=True)


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


class Progress:
    """The progress of one long step, on stderr.

    On a terminal, a tqdm bar (its rate and time left). Elsewhere (a log file, a batch or
    cluster job), a line whenever a task finishes (``update(..., task_done=True)``) or
    ``INTERVAL`` seconds have passed, with done/total and an estimate of the time left, so
    that a log never looks hung; steps shorter than ``INTERVAL`` print nothing. Nothing
    at all under ``-q``. ``update`` takes the count done so far, not an increment.
    """

    INTERVAL = 10.0

    def __init__(self, description: str, total: int | None = None, unit: str = "step"):
        self.description, self.total, self.unit = description, total, unit
        self.done, self.postfix = 0, {}
        self.start = self.last_line = time.monotonic()
        self.printed = None  # the count of the last line printed
        self.bar = None
        shown, terminal = _verbosity() >= 0, sys.stderr.isatty()
        self.lines = shown and not terminal
        if shown and terminal:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=description, unit=unit, leave=False, file=sys.stderr)

    def update(self, done, total: int | None = None, *, postfix: dict | None = None, task_done: bool = False):
        if total is not None:
            self.total = total
            if self.bar is not None:
                self.bar.total = total
        self.done, self.postfix = done, postfix or self.postfix
        if self.bar is not None:
            if postfix:
                self.bar.set_postfix(postfix, refresh=False)
            self.bar.update(done - self.bar.n)
        now = time.monotonic()
        if self.lines and (task_done or now - self.last_line >= self.INTERVAL):
            self._line(now)

    def _line(self, now: float) -> None:
        elapsed = now - self.start
        text = f"{self.description}: {self.unit} {self.done:g}"
        if self.total:
            text += f"/{self.total:g} ({100 * self.done / self.total:.0f}%)"
        text += f", {_duration(elapsed)}"
        if self.total and 0 < self.done < self.total:
            text += f", about {_duration(elapsed * (self.total - self.done) / self.done)} left"
        text += "".join(f"; {key} {value}" for key, value in self.postfix.items())
        click.echo(text, err=True)
        self.last_line, self.printed = now, self.done

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        if self.lines and self.printed is not None and self.printed != self.done:
            self._line(time.monotonic())  # a log that showed the step running shows it ending

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def reading_progress() -> Callable[[str, int, int], None]:
    """The ``progress`` of the loaders: a Progress per file read, in MB of the file."""
    shown: dict[str, Progress] = {}

    def show(path: str, done: int, total: int) -> None:
        bar = shown.get(path) or shown.setdefault(path, Progress(f"reading {Path(path).name}", round(total / 1e6, 1),
                                                                 "MB"))
        bar.update(round(done / 1e6, 1), task_done=done == total)
        if done == total:
            bar.close()

    return show


def _verbosity() -> int:
    """-1 under -q, 1 under -v, else 0 (0 too outside a command)."""
    context = click.get_current_context(silent=True)
    session = context.find_object(Session) if context is not None else None
    return session.verbosity if session is not None else 0


class _EchoHandler(logging.Handler):
    """The library's log records on stderr: warnings as "warning: ...", the rest (-v) as they are."""

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        click.echo(f"warning: {message}" if record.levelno >= logging.WARNING else message, err=True)


def _show_library_log(verbosity: int) -> None:
    logger = logging.getLogger("cltr")
    logger.handlers = [_EchoHandler()]
    logger.setLevel(logging.INFO if verbosity > 0 else logging.WARNING)


# -- option types --------------------------------------------------------------------------

class FiniteFloat(click.ParamType):
    """A finite float within an optional range (click's FloatRange lets nan and inf through)."""

    name = "float"

    def __init__(self, field):
        self.field = field

    def convert(self, value, param, ctx):
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        s = self.field.spec
        if (s.low is not None and (number < s.low or (s.low_open and number == s.low))) or \
                (s.high is not None and (number > s.high or (s.high_open and number == s.high))):
            self.fail(f"{value} is not {self.field.range_text()}", param, ctx)
        return number


def finite_float(low: float | None = None, high: float | None = None, *, low_open: bool = False,
                 high_open: bool = False) -> FiniteFloat:
    """The type of a hand-written float option (generated ones take their field's range)."""
    return FiniteFloat(Field("value", float, sequence=False, optional=False, default=None,
                             spec=OptionSpec(help="", low=low, high=high, low_open=low_open, high_open=high_open)))


# -- the session: the pipeline's, printing what it says and showing progress -------------

class _Bars(SessionProgress):
    """Progress of a session's long steps on stderr (``Progress``)."""

    def clicks(self):
        shown: dict[str, Progress] = {}

        def progress(split, done, total):
            bar = shown.get(split) or shown.setdefault(split, Progress(f"clicks on {split}", total, "pass"))
            bar.update(done)
            if done == total:
                bar.close()

        return progress

    def reading(self):
        return reading_progress()


class Session(PipelineSession):
    """The pipeline's session (``cltr.pipeline.session``: which artifact each stage uses),
    saying what it does on stdout, showing progress on stderr, at the verbosity of -q / -v."""

    def __init__(self, workdir: Path, verbosity: int = 0):
        super().__init__(workdir, say=click.echo, progress=_Bars())
        self.verbosity = verbosity


_OS_ADVICE = {
    errno.EROFS: "the file system is read-only; give a --workdir (or --out) on a writable one",
    errno.EACCES: "permission denied; give a --workdir (or --out) you can write to, or change its permissions",
    errno.EPERM: "operation not permitted; give a --workdir (or --out) you can write to, or change its permissions",
    errno.ENOSPC: "no space left on the device; free some, or give a --workdir (or --out) on another disk",
    errno.EDQUOT: "disk quota exceeded; free some space, or give a --workdir (or --out) on another disk",
    errno.EFBIG: "file too large for the file-size limit in force (ulimit -f); raise the limit",
    errno.ENOTDIR: "a part of this path is a file, not a directory; give another path",
    errno.EISDIR: "this is a directory, not a file; give another path",
    errno.ENOENT: "no such file or directory",
}

# The command that makes (and remakes) the artifacts of each stage directory.
_STAGE_COMMANDS = {"production": "`cltr produce`", "clicks": "`cltr simulate` (or `cltr clicks import`)",
                   "models": "`cltr train METHOD`", "evaluations": "`cltr evaluate`",
                   "propensities": "`cltr propensities estimate`", "imports": "`cltr clicks import`",
                   "tasks": "`cltr figures NAME`"}


def describe_os_error(error: OSError) -> str:
    """One line: the file and what to do."""
    if error.errno is None:
        return str(error)  # a message of ours, which names its file
    where = error.filename if error.filename is not None else "a file"
    return f"{where}: {_OS_ADVICE.get(error.errno, error.strerror)}"


def stdout_closed() -> bool:
    """Whether standard output is a pipe or socket that its reader has closed (``| head``
    has read its lines): poll reports an error condition on the writing end."""
    import select

    if not hasattr(select, "poll"):  # Windows: no pipe closes that way to tell apart
        return True
    poller = select.poll()
    poller.register(1, select.POLLOUT)
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


def describe_damage(error: DamagedArtifact) -> str:
    """One line: the damaged file, what is wrong, and how to make it again."""
    path = error.path
    if path.name == "current.json":
        fix = "delete it: it only records which artifact each stage used last (the artifacts stay)"
    elif path.parent.name == "datasets":
        fix = f"prepare the dataset again (`cltr prepare ... --name {path.stem}`)"
    else:
        fix = (f"run {_STAGE_COMMANDS.get(path.parent.name, 'the command that made it')} again with the same "
               "options: it computes it anew")
    return f"{error}; {fix}"


def _errors_as_usage(function):
    """Turn the library's ValueErrors (bad input), damaged artifacts and OSErrors (full disk,
    read-only workspace, ...) into clean one-line CLI errors."""
    import functools

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except DamagedArtifact as error:
            raise click.ClickException(describe_damage(error)) from error
        except RequestError as error:
            raise click.UsageError(str(error)) from error
        except ValueError as error:
            raise click.ClickException(str(error)) from error
        except BrokenPipeError as error:
            if not stdout_closed():  # another pipe (a worker's, say) broke: an error
                raise click.ClickException(describe_os_error(error)) from error
            raise  # stdout closed by its reader (`| head`): click and cltr.__main__.run end quietly, status 141
        except OSError as error:
            raise click.ClickException(describe_os_error(error)) from error

    return wrapper


# -- commands ------------------------------------------------------------------------

class _Interruptible(click.Group):
    """The top command: Ctrl-C ends any command with one line and exit status 130 (128 +
    SIGINT, as shells report it), not click's "Aborted!" with status 1 or a traceback."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo("\ninterrupted: what finished is kept in the workspace; the same command goes on from there",
                       err=True)
            raise click.exceptions.Exit(130) from None


class WorkdirPath(click.Path):
    """--workdir: a directory path, never the empty string (``Path("")`` is the current
    directory, which an unset variable in ``--workdir "$DIR"`` would silently mean)."""

    def __init__(self):
        super().__init__(file_okay=False, path_type=Path)

    def convert(self, value, param, ctx):
        if isinstance(value, str) and not value.strip():
            self.fail("the workspace directory is empty; give a path (. for the current directory)", param, ctx)
        return super().convert(value, param, ctx)


@click.group(cls=_Interruptible, context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@click.option("--workdir", type=WorkdirPath(), envvar="CLTR_WORKDIR",
              default="cltr-work", help="Workspace directory holding every artifact ($CLTR_WORKDIR); also "
                                        "accepted after the command.")
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


class NameType(click.ParamType):
    """A dataset (or other workspace) name, never a path (``workspace.check_name``)."""

    name = "NAME"

    def convert(self, value, param, ctx):
        try:
            return check_name(value, "dataset")
        except ValueError as error:
            self.fail(str(error), param, ctx)


def _resolve_dataset(ctx: click.Context, param, value: str | None) -> str:
    """``--dataset`` left out: the dataset prepared last in the workspace, else the
    embedded synthetic default (generated on first use)."""
    if value is not None:
        return value
    session = ctx.find_object(Session)
    last = session.workspace.last_dataset() if session is not None else None
    if last is not None and len(session.workspace.datasets()) > 1 and session.verbosity >= 0:
        click.echo(f"dataset {last!r} (the last prepared; --dataset NAME for another: "
                   f"{', '.join(session.workspace.datasets())})", err=True)
    return last or DEFAULT_DATASET


class SharedOption:
    """An option that several commands take, declared once: a decorator for a hand-written
    command, and ``param()`` for a generated one (``param(help=...)`` where one command says
    more about it)."""

    def __init__(self, *declarations: str, **attributes):
        self.declarations, self.attributes = declarations, attributes

    def __call__(self, function):
        return click.option(*self.declarations, **self.attributes)(function)

    def param(self, **changes) -> click.Option:
        return click.Option(list(self.declarations), **{**self.attributes, **changes})


dataset_option = SharedOption(
    "--dataset", type=NameType(), default=None, callback=_resolve_dataset, show_default=False,
    help="Name of a prepared dataset in the workspace [default: the last prepared, or the embedded synthetic one "
         "in a workspace with none].")
"""--dataset, of every command that works on one prepared dataset."""

seed_option = SharedOption("--seed", type=click.IntRange(min=0), default=0, show_default=True,
                           help="Seed of every random draw of this stage.")
"""--seed, of every stage that draws."""

clicks_option = SharedOption("--clicks", "clicks_key", default=None,
                             help="Key of the click log [default: the current one].")
"""--clicks, of every command that reads a click log."""


@main.group()
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


def prepare_command(loader: datasets.Loader) -> click.Command:
    """``cltr prepare NAME`` of a dataset loader (``cltr.datasets``): a flag per option of
    its ``Options``, then ``--name`` (default: the loader's name) and ``--dcg-log``."""

    def prepare_dataset(session: Session, name: str, dcg_log: str, **values) -> None:
        options = parse_or_usage(loader.parse_options, values, what=f"cltr prepare {loader.name}")
        dataset = datasets.load(loader.name, options, name=name, dcg_log=dcg_log, progress=reading_progress())
        _report_prepared(session.write_dataset(name, dataset))

    return click.Command(
        loader.name, callback=click.pass_obj(_errors_as_usage(prepare_dataset)), help=loader.summary,
        params=[*loader_params(loader.options),
                click.Option(["--name"], type=NameType(), default=loader.name, help="Name to store it under."),
                click.Option(["--dcg-log", "dcg_log"], type=click.Choice(list(datasets.DCG_LOGS)), default="e",
                             show_default=True,
                             help="Base of the log in Avg DCG's gain 1/log(1 + rank): e (the paper's) or 2. It "
                                  "only scales every Avg DCG; comparisons and model selection are the same either "
                                  "way.")])


for _loader in datasets.loaders().values():
    prepare.add_command(prepare_command(_loader))


@main.command("produce")
@dataset_option
@click.option("--fraction", type=finite_float(0, 1, low_open=True), default=0.01,
              help="Share of training queries with labels the production ranker sees.")
@click.option("-C", "C", type=finite_float(0, low_open=True), default=1.0,
              help="Regularisation constant of the production Ranking SVM.")
@seed_option
@click.pass_obj
@_errors_as_usage
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


def option_params(options_type, *, only_for: str | None = None) -> list[click.Option]:
    """The click options of an ``Options`` dataclass: one per field, default None ("not
    given"), the field's default, choices and range in the help."""
    params = []
    for field in options_type.option_fields():
        s = field.spec
        default = field.default
        shown = ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in default) \
            if isinstance(default, tuple) else (f"{default:g}" if isinstance(default, float) else default)
        help_text = s.help + (f" [default: {shown}]" if default is not None and "[default" not in s.help else "")
        if only_for:
            help_text += f" ({only_for})"
        declarations = [field.cli_name, field.name] if s.flag else [field.cli_name]
        if field.base is bool and not field.sequence:
            name = field.cli_name
            params.append(click.Option([f"{name}/--no-{name[2:]}", field.name], default=None, help=help_text))
            continue
        if field.sequence or (s.parse is not None and field.base is not str):
            kind = click.STRING
        elif field.base is float:
            kind = FiniteFloat(field)
        elif field.base is int:
            kind = click.IntRange(min=None if s.low is None else int(s.low), max=None if s.high is None else int(s.high))
        elif s.choices:
            kind = click.Choice(list(s.choices))
        else:
            kind = click.STRING
        params.append(click.Option(declarations, type=kind, default=None, help=help_text, metavar=s.metavar,
                                   show_default=False))
    return params


def given(values: dict, options_type) -> dict:
    """The options the user gave (click passes None for the others)."""
    names = {f.name for f in options_type.option_fields()}
    return {k: v for k, v in values.items() if k in names and v is not None}


def parse_or_usage(parse, values: dict, *, what: str):
    """``parse(values)``, a bad value becoming a usage error (exit 2) before any work."""
    try:
        return parse(values, where=what)
    except ValueError as error:
        raise click.UsageError(str(error)) from None


def registry_params(options_of: dict[str, type], owner: str) -> list[click.Option]:
    """The options of every entry of a registry (``{name: its Options type}``), once each,
    with the entries that take them in the help (``owner``: what an entry is called)."""
    owners: dict[str, list[tuple[str, click.Option]]] = {}
    for entry, options_type in options_of.items():
        for param in option_params(options_type):
            owners.setdefault(param.name, []).append((entry, param))
    params = []
    for entries in owners.values():
        param = entries[0][1]
        helps = {p.help for _, p in entries}
        if len(helps) > 1:  # entries mean different things by it (and may default differently)
            by_help: dict[str, list[str]] = {}
            for entry, p in entries:
                by_help.setdefault(p.help, []).append(entry)
            param.help = " ".join(f"{', '.join(names)}: {text}" for text, names in by_help.items())
        elif len(options_of) > 1:
            param.help += f" ({owner}: {', '.join(entry for entry, _ in entries)})"
        params.append(param)
    return params


def _click_model_params() -> list[click.Option]:
    """Every click model's settings, once each, with the models that take them in the help."""
    return registry_params({model.name: model.settings for model in clickmodels.models().values()}, "click model")


def simulate_command(session: Session, dataset, click_model, passes, rankers, production_key, seed, top_k,
                     logging_temperature, intervention, intervention_depth, **values) -> None:
    """Simulate clicks of a click model on the production ranker's rankings of train and vali."""
    model = clickmodels.get(click_model)
    settings = parse_or_usage(model.parse_settings, given(values, model.settings),
                              what=f"click model {model.name!r}")
    unused = sorted(set(k for k, v in values.items() if v is not None) - {f.name for f in model.settings.option_fields()})
    if unused:
        raise click.UsageError(f"click model {model.name!r} takes no {', '.join('--' + u.replace('_', '-') for u in unused)}")
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


main.add_command(click.Command(
    "simulate", callback=click.pass_obj(_errors_as_usage(simulate_command)),
    help=simulate_command.__doc__ + "\n\n\b\nClick models:\n" + "\n".join(
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
    ]))


@main.group("train")
def train_group() -> None:
    """Train a method on the training clicks; hyperparameters not given are chosen on
    validation clicks (SNIPS Avg DCG), never on test labels.

    Each method's own options: `cltr train METHOD --help`.
    """


train_group.help += "\n\n\b\n" + "\n".join(f"{m.name:13s} {m.summary}" for m in methods.methods().values())


def _describe_chosen(info: dict) -> str:
    return ", ".join(f"{k} = {v:g}" if isinstance(v, float) else f"{k} = {v}"
                     for k, v in info.get("chosen", {}).items())


_HIDDEN_COLUMNS = ("lower_bound", "solver_seconds", "ccp_trace", "trace", "initial_objective",
                   "initial_train_snips_avg_dcg")


def train_method(session: Session, method, options, dataset: str, clicks_key, seed, *, propensities=None,
                 clip="auto", correction=None) -> dict:
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
        artifact, reused = session.train(dataset, method.name, options, clicks_key=clicks_key, seed=seed,
                                        progress=progress, propensities=propensities, clip=clip,
                                        correction=correction)
    finally:
        if bar is not None:
            bar.close()
    info = artifact.info
    rows = info.get("selection", [])
    if rows and method.tables is None:
        echo_table(rows, [c for c in rows[0] if c not in _HIDDEN_COLUMNS and not isinstance(rows[0][c], (list, dict))])
    criterion = "DR" if info.get("validation_criterion") == "dr" else "SNIPS"
    click.echo(f"model {artifact.key}{' (reused)' if reused else ''}: {method.name}, {_describe_chosen(info)}, "
               f"validation {criterion} Avg DCG {info['validation_snips_avg_dcg']:.4f}"
               + (" (--criterion dr: the tables' validation_snips_avg_dcg columns are DR estimates)"
                  if criterion == "DR" else ""))
    if "effective_sample_size" in info:
        where = f", propensities {artifact.config['propensities']}" if "propensities" in artifact.config else ""
        clipped = f", clipped at {info['clip']:g}" if info.get("clip") is not None else ""
        examples = (f" as {info['train_examples']} examples (displayed documents) with signed weights"
                    if "train_examples" in info else "")
        click.echo(f"{info['train_clicks']} training clicks{examples}, effective sample size of the weights "
                   f"{'' if examples else '1/q '}{info['effective_sample_size']:.1f}{where}{clipped}")
        if "warnings" not in info and info["effective_sample_size"] < 0.01 * info.get("train_examples",
                                                                                     info["train_clicks"]):
            warn(f"an effective sample size of {info['effective_sample_size']:.1f} means a few extreme weights "
                 f"carry the whole training loss (1/q of a tiny propensity): clip the propensities (--clip TAU) "
                 f"or check the log's propensity column")
    for title, table, columns in (method.tables(info) if method.tables else []):
        click.echo(title)
        echo_table(table, columns)
    if info.get("ccp_inner_misses"):
        steps = ", ".join(f"{m['iteration']} (gap {m['inner_gap']:.3g} > {m['inner_tol']:.3g})"
                          for m in info["ccp_inner_misses"])
        warn(f"the inner SVM solve of CCP step{'s' if len(info['ccp_inner_misses']) > 1 else ''} {steps} ran out "
             f"of cutting planes before its duality gap: those steps are approximate (the true objective still "
             f"never rose); a smaller C or a looser --tol solves in fewer planes")
    _echo_guard(info)
    return info


def _echo_guard(info: dict) -> None:
    """The clipping chosen by --clip auto (a row per TAU), the model against the logging
    ranker on the validation clicks, and the guard's warnings (``methods.train``)."""
    if info.get("clip_selection"):
        ess = info["ess_fraction"]["unclipped"]
        tau_v = info.get("validation_clip")
        click.echo(f"--clip auto: the training weights' effective sample size is {ess:.1%} of the examples (below "
                   f"{ESS_FRACTION:.0%}), so TAU was chosen on the validation clicks "
                   f"({'unclipped' if tau_v is None else f'clipped at their own TAU_v = {tau_v:g}'}): the most "
                   f"clipped model within one standard error of the best is kept")
        echo_table([{"clip": "none" if row["clip"] is None else row["clip"],
                     "validation_snips_avg_dcg": row["validation_snips_avg_dcg"],
                     "difference_to_best": row.get("difference_to_best", float("nan")),
                     "standard_error": row.get("standard_error", float("nan")),
                     "ess_fraction": row["ess_fraction"], "alike_share": row["alike_share"],
                     "kept": "yes" if row.get("kept") else "", "chosen": _describe_chosen(row),
                     "seconds": row["seconds"]} for row in info["clip_selection"]],
                   ["clip", "validation_snips_avg_dcg", "difference_to_best", "standard_error", "ess_fraction",
                    "alike_share", "kept", "chosen", "seconds"])
    versus = info.get("versus_logging")
    if versus and math.isfinite(versus["difference"]):
        click.echo(f"validation SNIPS Avg DCG: model {versus['model']:.4f}, logging ranker {versus['logging']:.4f} "
                   f"(difference {versus['difference']:+.4f} +- {versus['standard_error']:.4f}, same clicks)")
    for message in info.get("warnings", []):
        warn(message)


class ClipType(click.ParamType):
    """--clip: auto, none, or a threshold in (0, 1] (``cltr.core.selection.parse_clip``)."""

    name = "clip"

    def convert(self, value, param, ctx):
        try:
            return parse_clip(value)
        except ValueError as error:
            self.fail(str(error), param, ctx)


def _train_command(method) -> click.Command:
    def callback(session: Session, dataset, clicks_key, seed, propensities, clip, correction, **values):
        options = parse_or_usage(method.parse_options, given(values, method.options), what=f"cltr train {method.name}")
        train_method(session, method, options, dataset, clicks_key, seed, propensities=propensities, clip=clip,
                     correction=correction)

    applicable = [c for c in corrections.CORRECTIONS.values() if c.methods is None or method.name in c.methods]

    return click.Command(
        method.name, callback=click.pass_obj(_errors_as_usage(callback)),
        help=method.description or method.summary, short_help=method.summary,
        params=[*option_params(method.options),
                dataset_option.param(),
                clicks_option.param(help="Key of the click log [default: the last simulated or imported]."),
                click.Option(["--propensities"], default=None, metavar="logged|estimated|KEY",
                             help="Propensities to divide by (training and the SNIPS selection): the log's own, "
                                  "the current estimate of this log (`cltr propensities estimate`), or a "
                                  "propensities artifact's key [default: the log's own where it has them, else "
                                  "estimated]."),
                click.Option(["--clip"], type=ClipType(), default="auto", metavar="auto|none|TAU",
                             help="Raise the training propensities below TAU to TAU (Joachims et al. 2017); the "
                                  "SNIPS selection reads the validation clicks unclipped, so every TAU is judged "
                                  "alike. auto: no clipping where the weights' effective sample size is at least "
                                  f"{ESS_FRACTION:.0%} of the clicks, else TAU chosen on validation over none, "
                                  f"{', '.join(f'{t:g}' for t in CLIP_GRID)}."),
                click.Option(["--correction"], type=click.Choice([c.name for c in applicable]),
                             default=corrections.DEFAULT_CORRECTION, show_default=True,
                             help="How the clicks are weighted, in training and in the SNIPS selection: "
                                  + "; ".join(f"{c.name}: {c.summary}" for c in applicable)),
                seed_option.param()])


for _method in methods.methods().values():
    train_group.add_command(_train_command(_method))


@main.command("evaluate")
@dataset_option
@click.option("--model", "model_key", default=None, help="Key of the model [default: the last trained].")
@click.option("--production", "production", is_flag=True,
              help="Evaluate the production ranker (the last produced) instead of a trained model.")
@click.option("--run", "run_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Evaluate an outside model instead: a TREC run (qid Q0 docid rank score run, docids as "
                   "`cltr score --trec` writes them) or one score per line in the split's document order (as "
                   "`cltr score --out` writes), ranked by score with cltr's tie-breaks.")
@click.option("--split", type=click.Choice(["test", "vali", "train"]), default=None,
              help="The split --run scores [default: test].")
@click.option("--click-model", "click_model_key", default=None,
              help="Key of a click model stored by `cltr clicks fit` to judge on the vali split's sessions "
                   "(log-likelihood, perplexity per rank) [default: the dataset's last fitted one, if any].")
@seed_option
@click.pass_obj
@_errors_as_usage
def evaluate_command(session: Session, dataset, model_key, production, run_file, split, click_model_key,
                     seed) -> None:
    """Avg DCG, Avg Rank and nDCG@10 on the test set, and the SNIPS Avg DCG on validation clicks;
    with a click model fitted by `cltr clicks fit`, its click prediction on the vali split's
    sessions beside them: log-likelihood and perplexity per rank (Chuklin et al.)."""
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
                or any(f"imports/{split}" in session.workspace.current(dataset) for split in ("train", "vali"))):
            raise click.ClickException(
                f"dataset {dataset!r}'s click log was imported, and cltr does not have the ranker that logged it: "
                f"score your production ranker's run with `cltr evaluate --run RUN --dataset {dataset}`, or make a "
                f"stand-in with `cltr produce --dataset {dataset}` first")
        artifact = session.production(dataset)
        test = production_test_metrics(artifact, session.dataset(dataset)[0])
        click.echo(f"production ranker {artifact.key} (C = {artifact.config['C']:g}, "
                   f"{artifact.info['n_queries']} labelled training queries) on {dataset!r}:")
        echo_table([_test_row(test)])
        _echo_convention(session, dataset)
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
            raise click.ClickException(f"model {model_key} (of {origin!r}) takes {width} features; {dataset!r} has "
                                       f"{dataset_obj.test.n_features}")
        test = evaluate(scorer, dataset_obj.test, dataset_obj.test.relevant(dataset_obj.relevant_from),
                        rng=stream(seed, "evaluate"), dcg_base=dataset_obj.dcg_base)
        click.echo(f"model {model.key} ({model.config['method']} trained on {origin!r}) on {dataset!r}:")
        echo_table([_test_row(test)])
        _echo_convention(session, dataset)
        return
    artifact, model, _ = session.evaluate(dataset, model_key, seed)
    info = artifact.info
    click.echo(f"model {model.key} ({info['method']}, {_describe_chosen(model.info)}) on {dataset!r}:")
    echo_table([{**_test_row(info), "vali SNIPS Avg DCG": info["validation_snips_avg_dcg"]}])
    _echo_convention(session, dataset)
    _echo_click_prediction(session, dataset, click_model_key, model)


def _echo_click_prediction(session: Session, dataset: str, key: str | None, model=None) -> None:
    """The held-out click prediction of a two-tower ``model``, and of a click model stored
    by `cltr clicks fit` (the dataset's last one unless ``key``), on the vali split's
    sessions at the click model's ranks (1..10 without one); nothing when neither."""
    from cltr.pipeline.click_prediction import STAGE, held_out_scores, score_table, two_tower_scores

    key = key or session.workspace.current(dataset).get(STAGE)
    fitted = None
    if key is not None:
        fitted = session.workspace.load(dataset, STAGE, key)
        if fitted is None:
            raise click.ClickException(f"no click model {key} of dataset {dataset!r}; fit one with "
                                       f"`cltr clicks fit --dataset {dataset}`")
    found = []
    if model is not None and model.config.get("method") == "two-tower":
        clicks = session.workspace.load(dataset, "clicks", model.config["clicks"])
        scores = None if clicks is None else two_tower_scores(
            model, clicks, session.dataset(dataset)[0], max_rank=fitted.info["max_rank"] if fitted else 10)
        if scores is not None:
            found.append((f"model {model.key} (relevance tower x bias tower, {model.info['combination']})", scores))
    if fitted is not None:
        clicks = session.workspace.load(dataset, "clicks", fitted.config["clicks"])
        if clicks is None:
            raise click.ClickException(f"click model {key} was fitted on click log {fitted.config['clicks']}, which "
                                       f"is no longer in the workspace")
        found.append((f"click model {key} ({fitted.config['model']}, fitted on training sessions of click log "
                      f"{clicks.key})", held_out_scores(fitted, clicks, session.dataset(dataset)[0])))
    for what, scores in found:
        click.echo(f"click prediction of {what} on its {scores.sessions} vali sessions: log-likelihood "
                   f"{scores.log_likelihood:.4f} per session, perplexity {scores.perplexity:.4f}")
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

    metrics = evaluate(_Scores(), queries, queries.relevant(dataset.relevant_from), rng=stream(seed, "evaluate"),
                       dcg_base=dataset.dcg_base)
    click.echo(f"run {run_file} on the {split} split of {dataset_name!r}:")
    labels = {"avg_dcg": "Avg DCG", "avg_rank": "Avg Rank", "ndcg@10": "nDCG@10",
              "ndcg@10_relevant_queries": "nDCG@10 relevant queries"}
    echo_table([{f"{split} {label}": metrics[key] for key, label in labels.items() if key in metrics}])
    _echo_convention(session, dataset_name)


def _test_row(metrics: dict) -> dict:
    """The test metrics of ``evaluate`` under the names the tables print."""
    return {"test Avg DCG": metrics["avg_dcg"], "test Avg Rank": metrics["avg_rank"],
            "test nDCG@10": metrics["ndcg@10"], "test nDCG@10 relevant queries": metrics["ndcg@10_relevant_queries"]}


def _echo_convention(session: Session, dataset_name: str) -> None:
    click.echo(session.dataset(dataset_name)[0].convention)
    click.echo(NDCG_CONVENTION)


@main.command("run")
@dataset_option
@click.option("--method", "method_names", multiple=True, type=click.Choice(list(methods.methods())),
              default=("svm-rank", "svm-proprank", "svm-propdcg"), help="Methods to train (repeat the option).")
@seed_option
@click.pass_obj
@_errors_as_usage
def run_command(session: Session, dataset, method_names, seed) -> None:
    """The whole path with default settings: produce, simulate, then train and evaluate the
    paper's three linear methods (svm-rank, svm-proprank, svm-propdcg; a few seconds in all),
    or the methods given by --method (e.g. --method deep-propdcg --method lambdarank)."""
    start = time.perf_counter()
    production, _ = session.produce(dataset, seed=seed)
    clicks, _ = session.simulate(dataset, production_key=production.key, seed=seed)
    rows = [{"method": "production", "chosen": f"C = {production.config['C']:g}",
             **production_test_metrics(production, session.dataset(dataset)[0])}]
    for method in method_names:
        where = "labels (an oracle reference)" if method == "skyline" else "clicks"
        click.echo(f"training {method} (hyperparameters selected on validation {where})")
        # the last method trained becomes the current model; one pointer write, none on a rerun
        model, _ = session.train(dataset, method, {}, clicks_key=clicks.key, seed=seed,
                                 remember=method == method_names[-1])
        evaluation, _, _ = session.evaluate(dataset, model.key, seed)
        rows.append({"method": method, "chosen": _describe_chosen(model.info),
                     **{k: evaluation.info[k] for k in ("avg_dcg", "avg_rank", "ndcg@10", "ndcg@10_relevant_queries")}})
    click.echo(f"test metrics on {dataset!r} ({clicks.info['train']['clicks']} training clicks, "
               f"{time.perf_counter() - start:.1f} s):")
    echo_table(rows, ["method", "chosen", "avg_dcg", "avg_rank", "ndcg@10", "ndcg@10_relevant_queries"])
    _echo_convention(session, dataset)


# -- click logs, propensities, scores ------------------------------------------------


@main.group("clicks")
def clicks_group() -> None:
    """Import a logged click table, or export any click log, in the documented format.

    \b
    One row per displayed document of a result page, CSV/TSV (.gz/.xz) or Parquet:
      session  qid  doc (or docid)  rank  click  [propensity]  [ranker]
    (docs/reference/clicklog.md).
    """


@clicks_group.command("import")
@click.argument("log", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@dataset_option
@click.option("--split", type=click.Choice(["train", "vali"]), default="train", show_default=True,
              help="The split of the dataset the log was recorded on (its qids and documents).")
@click.option("--ignore-extra-columns", is_flag=True,
              help="Ignore columns other than the documented ones (by default they are an error, so that a "
                   "misspelt column is not silently dropped).")
@click.option("--format", "log_format", type=click.Choice(["table", "baidu-raw"]), default="table",
              show_default=True,
              help="table: one documented click table (LOG) for a prepared dataset; baidu-raw: raw Baidu-ULTR "
                   "training partitions part-NNNNN.gz (LOG...), streamed one at a time into the click table "
                   "--out (session, qid, docid = url md5, rank, click, ranker = the query's displayed ordering, "
                   "dwell, first_click, last_click); no dataset is needed.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="With --format baidu-raw: the click table to write (.parquet, .tsv or .csv).")
@click.option("--harvest", "harvest_ranks", type=click.IntRange(min=2), default=None,
              help="With --format baidu-raw: also print the position bias at ranks 1..N by intervention "
                   "harvesting over the queries' distinct displayed orderings (global all-pairs).")
@click.option("--chunk-rows", type=click.IntRange(min=1), default=None,
              help="For a log larger than memory: read it in chunks of this many rows, each checked as a whole "
                   "file is, and store only its clicks and impressions per (document, rank, ranker, propensity) "
                   "and its sessions per query (memory bound by those counts, not the rows; the same result for "
                   "any chunk size). A session's rows must follow one another. Such a log trains every click "
                   "method and gives propensity estimates; session-level learners, doubly robust corrections, "
                   "export and learning curves over passes need the log imported whole.")
@click.pass_obj
@_errors_as_usage
def clicks_import(session: Session, log, dataset, split, ignore_extra_columns, log_format, out,
                  harvest_ranks, chunk_rows) -> None:
    """Validate a click log and store it for the given split. Once both the train and the
    vali split have a log, they form a click log that every `cltr train` method uses
    exactly as a simulated one (the vali log serves model selection).

    With --format baidu-raw, read raw Baidu-ULTR partitions into a click table instead
    (README, "Baidu-ULTR")."""
    from cltr.pipeline.stages import CLICKED_ONLY, import_stage, imported_clicks_stage

    if log_format == "baidu-raw":
        if chunk_rows is not None:
            raise click.UsageError("--chunk-rows goes with --format table (baidu-raw partitions are streamed already)")
        _import_baidu_raw(log, out, harvest_ranks)
        return
    if out is not None or harvest_ranks is not None:
        raise click.UsageError("--out and --harvest go with --format baidu-raw")
    if len(log) != 1:
        raise click.UsageError(f"--format table reads one LOG; found {len(log)}")
    log = log[0]
    dataset_obj, fingerprint = session.dataset(dataset)
    part, reused = import_stage(session.workspace, dataset, dataset_obj, fingerprint, log, split=split,
                                ignore_extra_columns=ignore_extra_columns, chunk_rows=chunk_rows)
    session.workspace.set_current(dataset, f"imports/{split}", part.key)
    info = part.info
    click.echo(f"imported {log} as the {split} log {part.key}{' (reused)' if reused else ''}: {info['rows']} "
               f"impressions, {info['sessions']} sessions, {info['clicks']} clicks, {info['rankers']} ranker(s), "
               f"{'with' if info['has_propensity'] else 'without'} propensities"
               + (" (kept as counts per document and rank)" if info.get("aggregated") else ""))
    if info.get("ignored_columns"):
        click.echo(f"ignored column{'s' if len(info['ignored_columns']) > 1 else ''} "
                   f"{', '.join(map(repr, info['ignored_columns']))} (--ignore-extra-columns)")
    if info.get("clicked_only"):
        warn(f"the {split} log {log}: {CLICKED_ONLY}")
    if info["clicks"] == 0:
        warn(f"the {split} log {log} has no clicks (no row has click 1): there is nothing to train on"
             + (" or to select models with" if split == "vali" else ""))
    other = "vali" if split == "train" else "train"
    other_key = session.workspace.current(dataset).get(f"imports/{other}")
    other_part = session.workspace.load(dataset, "imports", other_key) if other_key else None
    if other_part is None:
        click.echo(f"import the {other} split's log too to train on it: "
                   f"`cltr clicks import LOG --dataset {dataset} --split {other}`")
        return
    parts = {split: part, other: other_part}
    clicks, _ = imported_clicks_stage(session.workspace, dataset, parts["train"], parts["vali"])
    session.workspace.set_current(dataset, "clicks", clicks.key)
    click.echo(f"click log {clicks.key}: train {parts['train'].key} + vali {parts['vali'].key}; "
               f"train with `cltr train METHOD --dataset {dataset}`"
               + ("" if info["has_propensity"] else f" after `cltr propensities estimate --dataset {dataset}`"))


def _import_baidu_raw(paths, out: Path | None, harvest_ranks: int | None) -> None:
    from cltr.core.clicks import aggregate_impressions
    from cltr.core.propensity import harvest_propensities
    from cltr.data.baidu import import_raw_partitions

    if out is None:
        raise click.UsageError("--format baidu-raw needs --out TABLE (.parquet, .tsv or .csv)")
    started = time.perf_counter()
    counts, table = import_raw_partitions(paths, out, progress=lambda rows, done: click.echo(
        f"read partition {done}/{len(paths)}: {rows.n_lines} lines, {rows.n_sessions} sessions", err=True))
    seconds = time.perf_counter() - started
    click.echo(f"wrote {out}: {counts['rows']} displayed documents of {counts['sessions']} sessions, "
               f"{counts['clicks']} clicks, {counts['orderings']} distinct (query, ordering)s, from "
               f"{counts['partitions']} partition(s) of {counts['lines']} lines "
               f"({counts['lines'] / max(seconds, 1e-9):,.0f} lines/s)")
    if harvest_ranks is not None:
        _, doc = np.unique(table["docid"], return_inverse=True)
        impressions = aggregate_impressions(table["qid"], doc.reshape(-1), table["rank"], table["ranker"],
                                            table["click"])
        estimate = harvest_propensities(impressions.query, impressions.doc, impressions.rank, impressions.ranker,
                                        impressions.impressions, impressions.clicks, max_rank=harvest_ranks,
                                        bootstrap=0, rng=0)
        click.echo("position bias by intervention harvesting (global all-pairs over displayed orderings):")
        echo_table([{"rank": row["rank"], "propensity": row["propensity"]} for row in estimate.to_rows()])


@clicks_group.command("fit")
@click.option("--log", "log_path", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="A click table (session, qid, doc or docid, rank, click; e.g. from `cltr clicks import "
                   "--format baidu-raw`) [default: the training split's impressions of the dataset's current "
                   "click log].")
@dataset_option
@clicks_option
@click.option("--model", "model_name", type=click.Choice(["pbm", "cascade", "dcm", "ubm", "dbn"]), default="pbm",
              show_default=True, help="The click model to fit by EM.")
@click.option("--max-rank", type=click.IntRange(min=1), default=10, show_default=True,
              help="Fit and judge ranks 1..MAX_RANK.")
@click.option("--held-out", type=finite_float(0, 1, low_open=True, high_open=True), default=0.2,
              show_default=True, help="Share of the sessions held out (seeded) for log-likelihood and perplexity.")
@click.option("--iterations", type=click.IntRange(min=1), default=200, show_default=True,
              help="At most this many EM iterations.")
@seed_option
@click.pass_obj
@_errors_as_usage
def clicks_fit(session: Session, log_path, dataset, clicks_key, model_name, max_rank, held_out, iterations,
               seed) -> None:
    """Fit a click model (PBM, cascade, DCM, UBM or DBN) to a click log and print its
    parameters and its held-out log-likelihood and perplexity per rank (Chuklin, Markov,
    de Rijke, "Click Models for Web Search"). PBM's examination per rank, relative to rank 1,
    is one more propensity estimate."""
    from cltr.core.click_models_fit import evaluate_click_model, fit_click_model, session_grid

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
        rows = {"session": columns["session"][keep], "query": np.asarray(columns["qid"])[keep],
                "doc": np.asarray(columns["doc"])[keep], "rank": columns["rank"][keep],
                "click": columns["click"][keep]}
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
    grid, pair_query, pair_doc = session_grid(**train, max_rank=depth)
    model = fit_click_model(model_name, grid, pair_query, pair_doc, iterations=iterations)
    held, _, _ = session_grid(**test, max_rank=depth, pairs=(pair_query, pair_doc))
    scores = evaluate_click_model(model, held)
    info = model.info
    click.echo(f"{model_name} fitted on {grid.pair.shape[0]} sessions of {source} ({grid.n_pairs} (query, document)s, "
               f"ranks 1..{depth}): {info['iterations']} EM iteration(s)"
               f"{'' if info['converged'] else ' (not converged: raise --iterations)'}; "
               f"mean attractiveness {model.attractiveness[-1]:.4f}")
    per_rank = [{"rank": r + 1} for r in range(depth)]
    if model_name == "pbm":
        for row, value in zip(per_rank, model.examination, strict=True):
            row["examination"] = value
            row["propensity"] = value / model.examination[0]
    elif model_name == "ubm":
        for r, row in enumerate(per_rank):  # examination after no click above, and right after a click above
            row["examination_no_click"] = model.examination[r, 0]
            row["examination_after_click_above"] = model.examination[r, r] if r > 0 else float("nan")
    elif model_name == "dcm":
        for row, value in zip(per_rank, model.continuation, strict=True):
            row["continue_after_click"] = value
    elif model_name == "dbn":
        click.echo(f"continuation gamma {model.continuation[0]:.4f}; mean satisfaction {model.satisfaction[-1]:.4f}")
    for row, value in zip(per_rank, scores.perplexity_by_rank, strict=True):
        row["held_out_perplexity"] = value
    click.echo(f"held out: {scores.sessions} sessions, log-likelihood {scores.log_likelihood:.4f} per session, "
               f"perplexity {scores.perplexity:.4f}")
    echo_table(per_rank)
    if log_path is None:  # stored, for `cltr evaluate` to judge on the vali split's sessions
        from cltr.pipeline.click_prediction import STAGE, model_to_arrays

        config = {"clicks": clicks.key, "model": model_name, "max_rank": max_rank, "held_out": held_out,
                  "iterations": iterations, "seed": seed}
        stored, _ = session.workspace.cached(dataset, STAGE, config, lambda: (model_to_arrays(model), {
            "max_rank": depth, "iterations": int(info["iterations"]), "converged": bool(info["converged"]),
            "sessions": int(grid.pair.shape[0])}))
        session.workspace.set_current(dataset, STAGE, stored.key)
        click.echo(f"stored as click model {stored.key}; `cltr evaluate --dataset {dataset}` judges it on the vali "
                   f"split's sessions")


@clicks_group.command("export")
@click.argument("out", type=click.Path(dir_okay=False, path_type=Path))
@dataset_option
@click.option("--split", type=click.Choice(["train", "vali"]), default="train", show_default=True,
              help="Which split's log to write.")
@clicks_option
@click.option("--features", "with_features", is_flag=True,
              help="Also write each row's feature vector, as columns f1..fd after the log's own.")
@click.pass_obj
@_errors_as_usage
def clicks_export(session: Session, out, dataset, split, clicks_key, with_features) -> None:
    """Write a click log (simulated or imported) in the documented format: OUT's extension
    picks CSV, TSV or Parquet (optionally .gz/.xz)."""
    from cltr.data.clicklog import write_click_log
    from cltr.pipeline.stages import export_rows

    dataset_obj, _ = session.dataset(dataset)
    clicks = session.clicks(dataset, clicks_key)
    columns = export_rows(clicks, split, dataset_obj)
    if with_features:
        from cltr.pipeline.stages import feature_columns

        columns.update(feature_columns(columns, getattr(dataset_obj, split)))
    write_click_log(out, columns)
    click.echo(f"wrote {len(columns['doc'])} impressions ({int(np.sum(columns['click']))} clicks) of the {split} "
               f"log {clicks.key} to {out}")


@main.group("propensities")
def propensities_group() -> None:
    """Estimate the observation propensity of each rank from a click log."""


def propensities_estimate(session: Session, dataset, method, clicks_key, max_rank, bootstrap, level, seed,
                          **values) -> None:
    """Estimate p_r / p_1 per rank from the training log's impressions and print it with its
    bootstrap band. `cltr train ... --propensities estimated` then divides by it."""
    from cltr.pipeline.stages import propensity_stage

    estimator = estimators.get(method)
    # another estimator's options are not this one's: left out, as its help says whose they are
    options = parse_or_usage(estimator.parse_options, given(values, estimator.options),
                             what=f"estimator {estimator.name!r}")
    dataset_obj, _ = session.dataset(dataset)
    clicks = session.clicks(dataset, clicks_key)
    artifact, reused = propensity_stage(session.workspace, dataset, dataset_obj, clicks, method=method,
                                        max_rank=max_rank, bootstrap=bootstrap, level=level, seed=seed,
                                        **options.to_dict())
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
        "estimate", callback=click.pass_obj(_errors_as_usage(propensities_estimate)),
        help=propensities_estimate.__doc__,
        params=[dataset_option.param(),
                click.Option(["--method"], type=click.Choice(list(known)), default=estimators.DEFAULT_ESTIMATOR,
                             show_default=True,
                             help="; ".join(f"{e.name}: {e.summary}" for e in known.values()) + "."),
                *registry_params({e.name: e.options for e in known.values()}, "estimator"),
                clicks_option.param(),
                click.Option(["--max-rank"], type=click.IntRange(min=2), default=None,
                             help=f"Estimate ranks 1..MAX_RANK; deeper ranks take the value of MAX_RANK "
                                  f"[default: {estimators.DEFAULT_MAX_RANK}, or the deepest rank shown if less]."),
                click.Option(["--bootstrap"], type=click.IntRange(min=0), default=100, show_default=True,
                             help="Bootstrap resamples of the queries for the confidence band (0: no band)."),
                click.Option(["--level"], type=finite_float(0, 1, low_open=True, high_open=True), default=0.95,
                             show_default=True, help="Confidence level of the band."),
                seed_option.param()])


propensities_group.add_command(estimate_command())


@main.command("score")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--model", "model_key", required=True, help="Key of a trained model (any prepared dataset).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write one score per line, in the file's row order [default: standard output, unless --trec].")
@click.option("--trec", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write a TREC run file: qid Q0 docid rank score name (docids from the '#docid = ...' "
                   "comments, else q<qid>-d<i>).")
@click.option("--run-name", default="cltr", show_default=True, help="The run name of the TREC file.")
@seed_option
@click.pass_obj
@_errors_as_usage
def score_command(session: Session, file, model_key, out, trec, run_name, seed) -> None:
    """Score an SVMlight/LETOR FILE with a trained model. Ranks in the run file break ties
    by a seeded random permutation, as every cltr ranking does."""
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
        names = [str(d) if docid is not None and d is not None else f"q{queries.qid[q]}-d{i}"
                 for d, q, i in zip(docid if docid is not None else [None] * queries.n_docs, doc_query, local)]
        order = np.lexsort((ranks, doc_query))
        with atomic_write(trec, "w") as stream_:
            for row in order:
                stream_.write(f"{queries.qid[doc_query[row]]} Q0 {names[row]} {ranks[row]} {scores[row]:.10g} "
                              f"{run_name}\n")
    written = [str(p) for p in (out, trec) if p is not None]
    if written:
        click.echo(f"scored {queries.n_docs} documents of {queries.n_queries} queries; wrote {', '.join(written)}",
                   err=out is None and trec is None)


def _model_width(scorer) -> int | None:
    if hasattr(scorer, "n_features"):
        return int(scorer.n_features)
    if hasattr(scorer, "w"):
        return len(scorer.w)
    if hasattr(scorer, "weights"):
        return scorer.weights[0].shape[0]
    if hasattr(scorer, "booster"):
        return scorer.booster.num_feature()
    return None


# -- figures ---------------------------------------------------------------------------


@main.command("figures")
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
                   "SNIPS Avg DCG [default: the spec's select, else repetition].")
@click.option("--tune", type=click.Choice(TUNINGS), default=None,
              help="How the tree methods' learning rate and leaves (Deep PropDCG's learning rate) are chosen: "
                   "per model over the whole grid (repetition), once per series by the first repetition at "
                   "the spec's tune_at point and then fixed, as the paper tuned LambdaRank (once), or by the "
                   "first repetition of each point for the others (point); tree counts and epochs are "
                   "early-stopped per model either way [default: the spec's tune, else repetition].")
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
@_errors_as_usage
def figures_command(session: Session, name, dataset, reps, n_jobs, backend, scheduler, quick, out, specs, select,
                    tune, folds, check_paper, tolerance) -> None:
    """Regenerate a table or figure of the paper: NAME is a spec in experiments/ or `all`.

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
    from cltr.pipeline.experiments import SPEC_DIR, load_spec, run_experiment, spec_names
    import pandas as pd

    from cltr.pipeline.report import check_out_directory, stated_rows, table_rows, training_data, write_outputs

    directory = specs or SPEC_DIR
    n_jobs = n_jobs or os.cpu_count() or 1
    names = [n for n in spec_names(directory) if n != "smoke"] if name == "all" else [name]
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
    folds = []
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


# -- --workdir after the command -----------------------------------------------------------

def _workdir_after_command(ctx: click.Context, param, value: Path | None) -> None:
    """``cltr COMMAND ... --workdir DIR``: DIR replaces the workspace that ``cltr --workdir``
    (or $CLTR_WORKDIR, or the default) named, unless the two disagree on the command line."""
    if value is None:
        return
    root = ctx.find_root()
    given = root.params.get("workdir")
    if root.get_parameter_source("workdir") == click.core.ParameterSource.COMMANDLINE and Path(given) != value:
        raise click.UsageError(f"--workdir is given twice, as {given} and as {value}; give it once")
    ctx.find_object(Session).workspace = Workspace(value)


def _accept_workdir_after_commands(group: click.Group) -> None:
    for command in group.commands.values():
        if isinstance(command, click.Group):
            _accept_workdir_after_commands(command)
        else:
            command.params.append(click.Option(
                ["--workdir"], type=WorkdirPath(), default=None, expose_value=False,
                is_eager=True, callback=_workdir_after_command,
                help="Workspace directory (the same as `cltr --workdir DIR COMMAND`)."))


_accept_workdir_after_commands(main)
