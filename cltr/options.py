"""Typed options: the one place where a plug-in's settings, defaults and help live.

A method's options and a click model's settings are frozen dataclasses deriving from
``Options`` whose fields are declared with ``option(default, help, ...)``. From that one
declaration come

- ``Options.from_dict(values, where=...)``: validation of a spec's ``[options.METHOD]``
  table, of a Python caller's keywords or of the command line's values; a misspelled
  name is an error naming the valid ones, a bad value one naming what must hold;
- ``Options.to_dict()``: the JSON-able record stored in artifact configs;
- the command line (``cltr.cli`` turns every field into a click option, with its help,
  default, choices and range).

The stages' settings are declared the same way, beside the stage that owns them
(``cltr.pipeline.stages``: ``ProductionOptions``, ``SimulationOptions``, ``ImportOptions``,
``ExportOptions``, ``EstimateOptions``, ``TrainOptions``, ``EvaluateOptions``,
``ScoreOptions``; ``cltr.pipeline.click_prediction.FitOptions``,
``cltr.pipeline.experiments.FiguresOptions``, ``cltr.pipeline.session.RunOptions`` and
``PrepareOptions``), and the commands' flags are generated from them
(``cltr.cli.params.settings_params``). Where one command offers less, or defaults otherwise,
than the declaration (``cltr train METHOD``'s ``--correction``: the corrections that apply to
METHOD; ``cltr prepare LOADER``'s ``--name``: LOADER), it reads the type
``Options.narrowed`` derives from it. What stays a hand-declared click parameter is what no
stage takes as a setting:

- the command line's own: ``--workdir``, ``-q``, ``-v``, ``--version``, ``--help``;
- where output goes: ``--out`` (``cltr score``, ``cltr figures``, ``cltr clicks import
  --format baidu-raw``) and ``--trec``, and the positional arguments naming what a command
  reads or writes (``FILE``, ``LOG``, ``OUT``, ``NAME``);
- which workspace artifact to read, declared once each (``cltr.cli.params.SharedOption``):
  ``--dataset`` (its default is the workspace's last prepared dataset), ``--clicks``,
  ``--model``, ``--production``, ``--click-model``, and ``--seed``; the API takes them as
  ``Session`` arguments, not as settings.

Supported field types: ``bool``, ``int``, ``float``, ``str`` (with ``choices``, or the
``path`` of an existing file or directory, or a ``parse`` that checks it), and
``tuple[int, ...]`` / ``tuple[float, ...]``, each optionally ``| None``. Floats must be
finite. A ``required`` option has no default (its declared default is None): the command
line and ``from_dict`` refuse its absence. This module imports only the standard library.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import os
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["option", "Options", "OptionSpec"]


def option(
    default: Any,
    help: str | Callable[[], str],
    *,
    choices: tuple[str, ...] | Callable[[], Iterable[str]] | None = None,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    parse: Callable[[str], Any] | None = None,
    flag: str | None = None,
    metavar: str | None = None,
    path: str | None = None,
    required: bool = False,
    negatable: bool = True,
    repeat: bool = False,
) -> Any:
    """Declare one option of an ``Options`` dataclass.

    Parameters
    ----------
    default
        The default (the only place it is written). Tuples for sequence options.
    help : str or callable () -> str
        One or two sentences for ``--help`` and the docs; a callable when they are read
        from a registry as it is when asked (``OptionSpec.text``).
    choices : tuple of str, or callable () -> iterable of str, optional
        Allowed values of a ``str`` option (or of each element of a sequence); a callable
        for the names of a registry as it is when asked (``OptionSpec.allowed``), so that
        an entry added later is a choice too.
    low, high : float, optional
        Range of a number (or of every element of a sequence); ``low_open`` /
        ``high_open`` exclude the bound.
    parse : callable str -> value, optional
        How a string (the command line) becomes the value, e.g. a grid ``"0.1,1,10"``; of a
        ``str`` option, its check: the text it accepts, returned as is (``"auto"``, a
        threshold ``"0.1"``), a ValueError naming the valid forms otherwise.
    flag : str, optional
        The command-line flag, when not ``--name-with-dashes`` (e.g. ``"-C"``).
    metavar : str, optional
        The command line's placeholder for the value.
    path : {"file", "dir"}, optional
        A ``str`` option naming an existing file or directory (a path-like is taken as
        its ``os.fspath``).
    required : bool
        The option must be given; declare its default None, which stands for none given.
    negatable : bool
        A ``bool`` option: False makes the command line a bare switch (``--quick``) with
        no ``--no-quick``; its default must then be False.
    repeat : bool
        A ``tuple[str, ...]`` option given by repeating the flag on the command line
        (``--method a --method b``) instead of one comma-separated value.
    """
    if path not in (None, "file", "dir"):
        raise ValueError(f"path must be 'file' or 'dir', found {path!r}")
    spec = OptionSpec(
        help=help,
        choices=choices,
        low=low,
        high=high,
        low_open=low_open,
        high_open=high_open,
        parse=parse,
        flag=flag,
        metavar=metavar,
        path=path,
        required=required,
        negatable=negatable,
        repeat=repeat,
    )
    return dataclasses.field(default=default, metadata={"cltr": spec})


@dataclasses.dataclass(frozen=True)
class OptionSpec:
    """What ``option`` records about a field besides its default."""

    help: str | Callable[[], str]
    choices: tuple[str, ...] | Callable[[], Iterable[str]] | None = None
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    parse: Callable[[str], Any] | None = None
    flag: str | None = None
    metavar: str | None = None
    path: str | None = None  # "file" or "dir": a str naming an existing one
    required: bool = False
    negatable: bool = True  # a bool's --no-NAME form on the command line
    repeat: bool = False  # a sequence given by repeating the flag

    def text(self) -> str:
        """The help, read now when declared as a callable."""
        return self.help() if callable(self.help) else self.help

    def allowed(self) -> tuple[str, ...] | None:
        """The choices, read now when declared as a callable (a registry's names)."""
        return tuple(self.choices()) if callable(self.choices) else self.choices


@dataclasses.dataclass(frozen=True)
class Field:
    """One option as the command line and the validators see it."""

    name: str
    base: type  # bool, int, float or str
    sequence: bool  # a tuple of ``base``
    optional: bool  # None allowed
    default: Any
    spec: OptionSpec

    @property
    def cli_name(self) -> str:
        return self.spec.flag or "--" + self.name.replace("_", "-")

    def range_text(self) -> str:
        s = self.spec
        parts = []
        if s.low is not None:
            parts.append(f"{'>' if s.low_open else '>='} {s.low:g}")
        if s.high is not None:
            parts.append(f"{'<' if s.high_open else '<='} {s.high:g}")
        return " and ".join(parts)


def _describe_type(field: Field) -> str:
    what = {bool: "true or false", int: "an integer", float: "a finite number", str: "a string"}[field.base]
    allowed = field.spec.allowed()
    if allowed:
        what = "one of " + ", ".join(allowed)
    if field.spec.path:
        what = f"the path of an existing {'directory' if field.spec.path == 'dir' else 'file'}"
    if field.range_text():
        what += " " + field.range_text()
    if field.sequence:
        what = f"a list of {what.replace('an integer', 'integers').replace('a finite number', 'finite numbers')}"
    return what + (" (or none)" if field.optional and not field.spec.required else "")


@functools.cache
def _option_fields(cls: type) -> tuple[Field, ...]:
    # a class's fields never change, and resolving its type hints is the costly part of
    # parsing options (a figures report parses a method's options for every task it reads)
    hints = typing.get_type_hints(cls)
    found = []
    for f in dataclasses.fields(cls):
        spec = f.metadata.get("cltr")
        if spec is None:
            raise TypeError(f"{cls.__name__}.{f.name} must be declared with cltr.options.option(...)")
        base, sequence, optional = _unpack(hints[f.name], f"{cls.__name__}.{f.name}")
        found.append(Field(f.name, base, sequence, optional, f.default, spec))
    return tuple(found)


class Options:
    """Base of every options dataclass (see the module docstring)."""

    # Set on each subclass by @dataclass; declared here so that type checkers see every
    # Options as a dataclass (dataclasses.fields(cls) and replace).
    __dataclass_fields__: typing.ClassVar[dict[str, dataclasses.Field[Any]]]

    @classmethod
    def option_fields(cls) -> list[Field]:
        return list(_option_fields(typing.cast(type, cls)))

    @classmethod
    def parse(cls, values, *, where: str = "options"):
        """``values`` when already an instance of this type, else ``from_dict(values)``."""
        return values if isinstance(values, cls) else cls.from_dict(values, where=where)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any] | None = None, *, where: str = "options"):
        """Validated options from a mapping; absent names take their defaults.

        Raises
        ------
        ValueError
            An unknown name (with the valid ones and the closest match), or a value of
            the wrong type or out of range.
        """
        values = dict(values or {})
        fields = {f.name: f for f in cls.option_fields()}
        unknown = sorted(set(values) - set(fields))
        if unknown:
            hints = []
            for name in unknown:
                close = difflib.get_close_matches(name, fields, n=1)
                hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
            raise ValueError(
                f"{where}: unknown option{'s' if len(unknown) > 1 else ''} {', '.join(hints)}; "
                f"valid: {', '.join(fields)}"
            )
        missing = [name for name, f in fields.items() if f.spec.required and values.get(name) is None]
        if missing:
            raise ValueError(f"{where}: {', '.join(missing)} must be given")
        return cls(**{name: _check(fields[name], value, where) for name, value in values.items()})

    def to_dict(self) -> dict:
        """Every option's value, JSON-able (tuples become lists)."""
        return {
            f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v for f in dataclasses.fields(self)
        }

    def replace(self, **changes):
        """A copy with ``changes`` applied and validated."""
        return type(self).from_dict({**self.to_dict(), **changes})

    @classmethod
    def narrowed(cls, class_name: str, /, **changes: Mapping[str, Any]):
        """A subclass named ``class_name`` whose fields in ``changes`` are declared anew, each with
        its mapping (``default``, and ``option``'s keywords: ``help``, ``choices``...) over
        its declaration here: one command's view of shared options (the corrections that
        apply to one method, the name one loader stores under by default)."""
        hints = typing.get_type_hints(cls)
        fields = {f.name: f for f in dataclasses.fields(cls)}
        declared = []
        for field_name, change in changes.items():
            old = fields[field_name]
            spec = old.metadata["cltr"]
            keywords = {**{f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)}, **change}
            declared.append((field_name, hints[field_name], option(keywords.pop("default", old.default), **keywords)))
        narrowed = dataclasses.make_dataclass(class_name, declared, bases=(cls,), frozen=True)
        narrowed.__module__ = cls.__module__
        return narrowed


def _unpack(hint, where: str) -> tuple[type, bool, bool]:
    optional = False
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        optional = len(rest) < len(args)
        if len(rest) != 1:
            raise TypeError(f"{where}: unsupported option type {hint}")
        hint = rest[0]
        args = typing.get_args(hint)
    sequence = typing.get_origin(hint) is tuple
    if sequence:
        if len(args) != 2 or args[1] is not Ellipsis:
            raise TypeError(f"{where}: sequence options are tuple[T, ...], found {hint}")
        hint = args[0]
    if hint not in (bool, int, float, str):
        raise TypeError(f"{where}: unsupported option type {hint}")
    return hint, sequence, optional


def _check(field: Field, value: Any, where: str) -> Any:
    def bad() -> ValueError:
        return ValueError(f"{where}: {field.name} must be {_describe_type(field)}, found {value!r}")

    if field.spec.path and isinstance(value, os.PathLike):
        value = os.fspath(value)  # its str is what is checked, stored and named in an error
    if value is None:
        if field.optional:
            return None
        raise bad()
    if isinstance(value, str) and field.spec.parse is not None:
        try:
            value = field.spec.parse(value)
        except ValueError as error:
            raise ValueError(f"{where}: {field.name}: {error}") from None
    if field.sequence:
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            raise bad()
        return tuple(_scalar(field, item, bad) for item in value)
    return _scalar(field, value, bad)


def _scalar(field: Field, value: Any, bad: Callable[[], ValueError]) -> Any:
    base, s = field.base, field.spec
    if base is bool:
        if not isinstance(value, bool):
            raise bad()
        return value
    if base is str:
        allowed = s.allowed()
        if not isinstance(value, str) or (allowed and value not in allowed):
            raise bad()
        if s.path and not (os.path.isdir(value) if s.path == "dir" else os.path.isfile(value)):
            raise bad()
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise bad()
    if base is int:
        if isinstance(value, float):
            if not value.is_integer():
                raise bad()
            value = int(value)
    else:
        value = float(value)
        if not math.isfinite(value):
            raise bad()
    if s.low is not None and (value < s.low or (s.low_open and value == s.low)):
        raise bad()
    if s.high is not None and (value > s.high or (s.high_open and value == s.high)):
        raise bad()
    return value
