"""Option types, the options several commands share (declared once), and the options
generated from an ``Options`` type (``cltr.options``)."""

from __future__ import annotations

import math
from pathlib import Path

import click

from cltr.cli.session import Session
from cltr.options import Field, OptionSpec
from cltr.pipeline.session import DEFAULT_DATASET
from cltr.pipeline.workspace import check_name


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
        if (s.low is not None and (number < s.low or (s.low_open and number == s.low))) or (
            s.high is not None and (number > s.high or (s.high_open and number == s.high))
        ):
            self.fail(f"{value} is not {self.field.range_text()}", param, ctx)
        return number


def finite_float(
    low: float | None = None, high: float | None = None, *, low_open: bool = False, high_open: bool = False
) -> FiniteFloat:
    """The type of a hand-written float option (generated ones take their field's range)."""
    return FiniteFloat(
        Field(
            "value",
            float,
            sequence=False,
            optional=False,
            default=None,
            spec=OptionSpec(help="", low=low, high=high, low_open=low_open, high_open=high_open),
        )
    )


class WorkdirPath(click.Path):
    """--workdir: a directory path, never the empty string (``Path("")`` is the current
    directory, which an unset variable in ``--workdir "$DIR"`` would silently mean)."""

    def __init__(self):
        super().__init__(file_okay=False, path_type=Path)

    def convert(self, value, param, ctx):
        if isinstance(value, str) and not value.strip():
            self.fail("the workspace directory is empty; give a path (. for the current directory)", param, ctx)
        return super().convert(value, param, ctx)


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
    if session is not None and last is not None and len(session.workspace.datasets()) > 1 and session.verbosity >= 0:
        click.echo(
            f"dataset {last!r} (the last prepared; --dataset NAME for another: "
            f"{', '.join(session.workspace.datasets())})",
            err=True,
        )
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
    "--dataset",
    type=NameType(),
    default=None,
    callback=_resolve_dataset,
    show_default=False,
    help="Name of a prepared dataset in the workspace [default: the last prepared, or the embedded synthetic one "
    "in a workspace with none].",
)


"""--dataset, of every command that works on one prepared dataset."""


seed_option = SharedOption(
    "--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of every random draw of this stage."
)


"""--seed, of every stage that draws."""


clicks_option = SharedOption(
    "--clicks", "clicks_key", default=None, help="Key of the click log [default: the current one]."
)


"""--clicks, of every command that reads a click log."""


production_option = SharedOption(
    "--production", "production_key", default=None, help="Key of the production ranker [default: the last produced]."
)


"""--production KEY, of every command that reads a production ranker."""


model_option = SharedOption("--model", "model_key", default=None, help="Key of the model [default: the last trained].")


"""--model, of every command that reads a trained model."""


click_model_option = SharedOption(
    "--click-model",
    "click_model_key",
    default=None,
    help="Key of a click model stored by `cltr clicks fit` [default: the dataset's last fitted one, if any].",
)


"""--click-model KEY, of every command that reads a click model fitted by `cltr clicks fit`."""


def option_params(options_type, *, only_for: str | None = None) -> list[click.Option]:
    """The click options of an ``Options`` dataclass: one per field, default None ("not
    given"), the field's default, choices and range in the help."""
    params = []
    for field in options_type.option_fields():
        s = field.spec
        default = field.default
        shown = (
            ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in default)
            if isinstance(default, tuple)
            else (f"{default:g}" if isinstance(default, float) else default)
        )
        help_text = s.text() + (f" [default: {shown}]" if default is not None and "[default" not in s.text() else "")
        if only_for:
            help_text += f" ({only_for})"
        declarations = [field.cli_name, field.name] if s.flag else [field.cli_name]
        if field.base is bool and not field.sequence:
            name = field.cli_name
            params.append(click.Option([f"{name}/--no-{name[2:]}", field.name], default=None, help=help_text))
            continue
        kind: click.ParamType
        if field.sequence or (s.parse is not None and field.base is not str):
            kind = click.STRING
        elif field.base is float:
            kind = FiniteFloat(field)
        elif field.base is int:
            kind = click.IntRange(
                min=None if s.low is None else int(s.low), max=None if s.high is None else int(s.high)
            )
        elif s.allowed():
            kind = click.Choice(list(s.allowed() or ()))
        else:
            kind = click.STRING
        params.append(
            click.Option(declarations, type=kind, default=None, help=help_text, metavar=s.metavar, show_default=False)
        )
    return params


def settings_params(options_type) -> list[click.Option]:
    """The click options of a stage's (or a dataset loader's) ``Options``: one per field
    with the field's own default, which click shows, its choices and range, click's check
    that a ``path`` exists, a bare switch for a bool that is not ``negatable`` and a
    repeated flag for a ``repeat`` sequence. Unlike ``option_params`` (a method's
    options, where "not given" lets validation choose), every value reaches the command;
    ``settings_from`` turns them into the options."""
    params = []
    for field in options_type.option_fields():
        s = field.spec
        declarations = [field.cli_name, field.name] if s.flag else [field.cli_name]
        if field.base is bool and not field.sequence:
            if not s.negatable:
                params.append(
                    click.Option([field.cli_name, field.name], is_flag=True, default=bool(field.default), help=s.text())
                )
            else:
                params.append(
                    click.Option(
                        [f"{field.cli_name}/--no-{field.cli_name[2:]}", field.name],
                        default=field.default,
                        help=s.text(),
                    )
                )
            continue
        kind: click.ParamType
        if s.path:
            kind = click.Path(exists=True, file_okay=s.path == "file", dir_okay=s.path == "dir", path_type=Path)
        elif s.repeat and s.allowed():
            kind = click.Choice(list(s.allowed() or ()))
        elif s.parse is not None:
            kind = _Parsed(field)
        elif field.sequence:
            kind = click.STRING
        elif field.base is float:
            kind = FiniteFloat(field)
        elif field.base is int:
            kind = (
                click.INT
                if s.low is None and s.high is None
                else click.IntRange(
                    min=None if s.low is None else int(s.low), max=None if s.high is None else int(s.high)
                )
            )
        elif s.allowed():
            kind = click.Choice(list(s.allowed() or ()))
        else:
            kind = click.STRING
        # a required option declares no default: click (8.5) skips its check when given default=None
        default = {} if s.required else {"default": field.default}
        params.append(
            click.Option(
                declarations,
                type=kind,
                required=s.required,
                help=s.text(),
                metavar=s.metavar,
                multiple=s.repeat,
                **default,
            )
        )
    return params


class _Parsed(click.ParamType):
    """A value its field's ``parse`` reads from the command line (``--folds 1-5``), a bad one
    an error naming the flag."""

    name = "text"

    def __init__(self, field):
        self.field = field

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            return value
        try:
            return self.field.spec.parse(value)
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint=self.field.cli_name) from None


def settings_from(options_type, values: dict, *, what: str):
    """The ``Options`` of ``settings_params``' values (the command's other values are left
    out), a bad value a usage error (exit 2)."""
    names = {f.name for f in options_type.option_fields()}
    return parse_or_usage(options_type.from_dict, {k: v for k, v in values.items() if k in names}, what=what)


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
            assert param.name is not None  # option_params declares each with its field's name
            owners.setdefault(param.name, []).append((entry, param))
    params = []
    for entries in owners.values():
        param = entries[0][1]
        helps = {p.help for _, p in entries}
        if len(helps) > 1:  # entries mean different things by it (and may default differently)
            by_help: dict[str | None, list[str]] = {}
            for entry, p in entries:
                by_help.setdefault(p.help, []).append(entry)
            param.help = " ".join(f"{', '.join(names)}: {text}" for text, names in by_help.items())
        elif len(options_of) > 1:
            param.help = (param.help or "") + f" ({owner}: {', '.join(entry for entry, _ in entries)})"
        params.append(param)
    return params
