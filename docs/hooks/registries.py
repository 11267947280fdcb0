"""MkDocs hook: reference pages generated from cltr's registries at build time.

A page marks where a generated section goes with an HTML comment on a line of its own:

    <!-- cltr: methods -->       every method of ``cltr.methods.methods()`` and its options
    <!-- cltr: clickmodels -->   every click model of ``cltr.clickmodels.models()`` and its settings
    <!-- cltr: estimators -->    every propensity estimator of ``cltr.estimators.estimators()`` and its options
    <!-- cltr: corrections -->   every correction of ``cltr.pipeline.corrections.corrections()``
    <!-- cltr: datasets -->      every dataset loader of ``cltr.datasets.loaders()`` and its options
    <!-- cltr: figurekinds -->   every figure kind of ``cltr.pipeline.figure_kinds.kinds()`` and its spec keys
    <!-- cltr: scorers -->       every scorer kind of ``cltr.scorers.scorer_kinds()`` and the methods that train it
    <!-- cltr: docstring MODULE -->   the docstring of MODULE, verbatim

The tables are read from the ``Options`` declarations (``cltr.options.option``), the same
ones the command line, the spec validation and the API are built from, so the pages cannot
disagree with the code. A marker naming something unknown fails the build.
"""

from __future__ import annotations

import importlib
import inspect
import re

MARKER = re.compile(r"^<!-- cltr: (\w+)(?: ([\w.]+))? -->$", re.MULTILINE)


def _cell(text: str) -> str:
    """Text fit for one Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _default(field) -> str:
    if field.spec.required:
        return "required"
    value = field.default
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(f"{item:g}" if isinstance(item, float) else str(item) for item in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _allowed(field) -> str:
    from cltr.options import _describe_type

    return _describe_type(field)


def options_table(options_type, name_column: str = "option (spec key)") -> str:
    """A Markdown table of every option of an ``Options`` dataclass."""
    rows = [f"| {name_column} | flag | allowed | default | meaning |", "|---|---|---|---|---|"]
    for field in options_type.option_fields():
        rows.append(f"| `{field.name}` | `{field.cli_name}` | {_cell(_allowed(field))} | `{_default(field)}` "
                    f"| {_cell(field.spec.text())} |")
    return "\n".join(rows)


def methods_section() -> str:
    from cltr import methods

    parts = []
    for name, method in methods.methods().items():
        description = inspect.cleandoc(method.description or method.summary)
        parts.append(
            f"## `{name}` — {method.label}\n\n{description}\n\n"
            f"Selects its hyperparameters on: {method.selects_on}. "
            f"Reads the clicks' weights (so `--clip` applies): {'yes' if method.weighted else 'no'}. "
            f"Command line: `cltr train {name} --help`; spec: `[options.{name}]`.\n\n"
            f"{options_table(method.options)}\n")
    return "\n".join(parts)


def clickmodels_section() -> str:
    from cltr import clickmodels

    parts = []
    for name, model in clickmodels.models().items():
        description = inspect.cleandoc(model.description or model.summary)
        parts.append(
            f"## `{name}`\n\n{description}\n\n"
            f"Command line: `cltr simulate --click-model {name}`; spec: `[clicks] model = \"{name}\"` with its "
            f"settings as keys of `[clicks]`.\n\n{options_table(model.settings)}\n")
    return "\n".join(parts)


def estimators_section() -> str:
    from cltr import estimators

    parts = []
    for name, estimator in estimators.estimators().items():
        description = inspect.cleandoc(estimator.description or estimator.summary)
        fields = estimator.options.option_fields()
        table = options_table(estimator.options, "option (API keyword)") if fields else "It has no options of its own."
        parts.append(
            f"## `{name}`\n\n{description}\n\n"
            f"Command line: `cltr propensities estimate --method {name}`; Python: "
            f"`api.estimate_propensities(log, queries, method=\"{name}\")`.\n\n{table}\n")
    return "\n".join(parts)


def corrections_section() -> str:
    from cltr.pipeline import corrections

    rows = ["| correction | applies to | reads besides the clicks | what it does |", "|---|---|---|---|"]
    for name, correction in corrections.corrections().items():
        methods = ", ".join(f"`{m}`" for m in correction.methods) if correction.methods else "every method"
        context = ", ".join(f"`{c}`" for c in correction.context) or "nothing"
        default = " (default)" if name == corrections.DEFAULT_CORRECTION else ""
        rows.append(f"| `{name}`{default} | {methods} | {context} | {_cell(correction.summary)} |")
    return "\n".join(rows)


def datasets_section() -> str:
    from cltr import datasets

    parts = []
    for name, loader in datasets.loaders().items():
        description = inspect.cleandoc(loader.description or loader.summary)
        passes = (f"{loader.default_passes}" if loader.default_passes is not None else
                  "10 for a dataset named `yahoo...`, else 100")
        parts.append(
            f"## `{name}`\n\n{description}\n\n"
            f"Default passes of simulated clicks (`cltr simulate`, a spec's `passes = \"default\"`): {passes}. "
            f"Command line: `cltr prepare {name}` (with `--name`, default `{name}`, and `--dcg-log`); Python: "
            f"`api.load_dataset(\"{name}\", ...)`.\n\n{options_table(loader.options, 'option (API keyword)')}\n")
    return "\n".join(parts)


def figurekinds_section() -> str:
    from cltr.pipeline import figure_kinds

    common = ", ".join(f"`{key}`" for key in figure_kinds.COMMON_KEYS)
    rows = [f"Every kind takes {common}; the table says which further keys each takes.", "",
            "| kind | further spec keys | columns its rows add | what it computes |", "|---|---|---|---|"]
    for name, kind in figure_kinds.kinds().items():
        keys = ", ".join(f"`{key}`" for key in kind.keys) or "none"
        columns = ", ".join(f"`{column}`" for column in kind.columns) or "none"
        rows.append(f"| `{name}` | {keys} | {columns} | {_cell(kind.description or kind.summary)} |")
    return "\n".join(rows)


def scorers_section() -> str:
    from cltr import methods, scorers

    rows = ["| scorer kind | trained by | what it is |", "|---|---|---|"]
    for name, kind in scorers.scorer_kinds().items():
        trained = ", ".join(f"`{m}`" for m, method in methods.methods().items() if method.scorer == name) or "none"
        rows.append(f"| `{name}` | {trained} | {_cell(kind.description or kind.summary)} |")
    return "\n".join(rows)


def docstring_section(module_name: str) -> str:
    module = importlib.import_module(module_name)
    if not module.__doc__:
        raise ValueError(f"{module_name} has no docstring")
    return inspect.cleandoc(module.__doc__)


def expand(markdown: str, where: str = "page") -> str:
    """``markdown`` with every marker replaced by its generated section."""
    def replace(match: re.Match) -> str:
        kind, argument = match.group(1), match.group(2)
        if kind == "methods" and argument is None:
            return methods_section()
        if kind == "clickmodels" and argument is None:
            return clickmodels_section()
        if kind == "estimators" and argument is None:
            return estimators_section()
        if kind == "corrections" and argument is None:
            return corrections_section()
        if kind == "datasets" and argument is None:
            return datasets_section()
        if kind == "figurekinds" and argument is None:
            return figurekinds_section()
        if kind == "scorers" and argument is None:
            return scorers_section()
        if kind == "docstring" and argument:
            return docstring_section(argument)
        raise ValueError(f"{where}: unknown marker {match.group(0)!r}")

    return MARKER.sub(replace, markdown)


def on_page_markdown(markdown, page, config, files):
    return expand(markdown, where=page.file.src_path)
