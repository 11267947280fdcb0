"""The documentation site (docs/, mkdocs.yml): it builds with warnings as errors, its
generated reference pages follow the registries, and every command of a tutorial runs.

The tutorials' ``cltr ...`` commands run in-process, in a temporary directory, on small
data: the embedded default is prepared first at 40 queries (so ``cltr run`` and
``cltr prepare synthetic`` use that), the real MQ2008 path is replaced by a LETOR-shaped
tree of 60 generated queries, and ``KEY`` by the model key the last ``cltr train``
printed. A code block preceded by ``<!-- not-run: reason -->`` is not run.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
TUTORIALS = sorted((DOCS / "tutorials").glob("*.md"))
MQ2008 = "../shared/data/letor4/MQ2008"
SMALL_QUERIES = "40"

NOT_RUN = re.compile(r"^<!-- not-run: (?P<reason>.+?) -->\s*$")
MODEL_KEY = re.compile(r"^model ([0-9a-f]{16})\b", re.MULTILINE)


# -- the tutorials' commands ----------------------------------------------------------------


def fenced_blocks(markdown: str) -> list[tuple[str, str, list[str]]]:
    """``(language, the line before the opening fence, body lines)`` of every fenced block."""
    blocks = []
    lines = markdown.splitlines()
    number = 0
    while number < len(lines):
        line = lines[number]
        if line.startswith("```"):
            end = next((i for i in range(number + 1, len(lines)) if lines[i].strip() == "```"), None)
            if end is None:
                raise ValueError(f"a code block opened on line {number + 1} is not closed")
            blocks.append((line[3:].strip(), lines[number - 1].strip() if number else "", lines[number + 1 : end]))
            number = end
        number += 1
    return blocks


def shell_commands(markdown: str, where: str = "page") -> list[list[str]]:
    """The commands of every ``bash`` block of ``markdown`` that is not marked not-run,
    in order, each as its arguments after ``cltr``.

    Every line of such a block must be ``cltr ...`` (several joined by ``&&``; a trailing
    ``# comment`` is dropped): a tutorial shows no command a reader could run and the test
    could not.
    """
    commands = []
    for lang, before, body in fenced_blocks(markdown):
        if lang not in ("bash", "sh", "console") or NOT_RUN.match(before):
            continue
        for line in body:
            words = shlex.split(line, comments=True)
            if not words:
                continue
            groups: list[list[str]] = [[]]
            for word in words:
                if word == "&&":
                    groups.append([])
                else:
                    groups[-1].append(word)
            for arguments in groups:
                if not arguments or arguments[0] != "cltr":
                    raise ValueError(
                        f"{where}: {line!r} is not a cltr command; mark its block "
                        "<!-- not-run: reason --> or show it as text"
                    )
                commands.append(arguments[1:])
    return commands


def test_commands_are_read_from_bash_blocks_not_marked_not_run():
    markdown = (
        "Text.\n\n```bash\ncltr prepare synthetic\ncltr produce && cltr simulate --eta 2  # why\n```\n\n"
        "```python\ncltr = 1\n```\n\n<!-- not-run: slow -->\n```bash\ncltr figures all\n```\n"
        "```\ncltr not a command block\n```\n"
    )
    assert shell_commands(markdown) == [["prepare", "synthetic"], ["produce"], ["simulate", "--eta", "2"]]
    with pytest.raises(ValueError, match="pip install"):
        shell_commands("```bash\npip install .\n```\n")


def _write_letor_tree(root: Path, *, n_queries: int = 60) -> None:
    """A LETOR 4.0-shaped ``Fold1`` of the embedded generator's queries: SVMlight with
    46 features, qids from 10000 and ``#docid`` comments, the test split xz-compressed."""
    import lzma

    from cltr.data.synthetic import make_synthetic

    dataset = make_synthetic(n_queries=n_queries, docs=(5, 30), seed=3)
    fold = root / "Fold1"
    fold.mkdir(parents=True)
    first = 10000
    for split, queries in (("train", dataset.train), ("vali", dataset.vali), ("test", dataset.test)):
        lines = []
        for q in range(queries.n_queries):
            for row in range(queries.offsets[q], queries.offsets[q + 1]):
                features = " ".join(f"{j}:{v:.6f}" for j, v in enumerate(queries.X[row], start=1))
                lines.append(f"{queries.labels[row]} qid:{first + q} {features} #docid = GX{first + q}-{row}")
        first += queries.n_queries
        text = ("\n".join(lines) + "\n").encode()
        if split == "test":
            (fold / "test.txt.xz").write_bytes(lzma.compress(text))
        else:
            (fold / f"{split}.txt").write_bytes(text)


@pytest.mark.parametrize("tutorial", TUTORIALS, ids=[path.stem for path in TUTORIALS])
def test_every_tutorial_command_runs_on_small_data(tutorial, tmp_path, monkeypatch, invoke):
    commands = shell_commands(tutorial.read_text(encoding="utf-8"), where=str(tutorial.relative_to(ROOT)))
    assert commands, f"{tutorial.name} shows no cltr command"
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CLTR_WORKDIR", raising=False)
    text = tutorial.read_text(encoding="utf-8")
    letor = tmp_path / "MQ2008"
    if MQ2008 in text:
        _write_letor_tree(letor)
    if "--dataset" not in text:  # a tutorial on the embedded default: make it small before anything uses it
        invoke("-q", "prepare", "synthetic", "--queries", SMALL_QUERIES)
    key = None
    for arguments in commands:
        arguments = [a.replace(MQ2008, str(letor)) for a in arguments]
        if arguments[:2] == ["prepare", "synthetic"] and "--queries" not in arguments:
            arguments += ["--queries", SMALL_QUERIES]
        if "KEY" in arguments:
            assert key is not None, f"{tutorial.name}: `cltr {shlex.join(arguments)}` uses KEY before any cltr train"
            arguments = [key if a == "KEY" else a for a in arguments]
        result = invoke(*arguments, expect=None)
        assert result.exit_code == 0, (
            f"{tutorial.name}: `cltr {shlex.join(arguments)}` exited {result.exit_code}:\n{result.output}"
        )
        if arguments[0] == "train":
            found = MODEL_KEY.findall(result.output)
            assert found, f"{tutorial.name}: `cltr {shlex.join(arguments)}` printed no model key"
            key = found[-1]
    # what the tutorials say they write is there
    for written in re.findall(r"(?:--trec|export) (\S+\.(?:txt|tsv))", text):
        assert (tmp_path / written).stat().st_size > 0, f"{tutorial.name}: {written} was not written"


# -- the generated reference pages ----------------------------------------------------------


def _hooks():
    spec = importlib.util.spec_from_file_location("cltr_docs_hooks", DOCS / "hooks" / "registries.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reference_pages_list_every_registered_method_and_click_model_with_every_option():
    from cltr import clickmodels, methods

    hooks = _hooks()
    page = hooks.expand((DOCS / "reference" / "methods.md").read_text(encoding="utf-8"))
    for name, method in methods.methods().items():
        assert f"## `{name}` — {method.label}" in page
        for field in method.options.option_fields():
            assert f"| `{field.name}` | `{field.cli_name}` |" in page, f"{name}: {field.name} not documented"
    page = hooks.expand((DOCS / "reference" / "clickmodels.md").read_text(encoding="utf-8"))
    for name, model in clickmodels.models().items():
        assert f"## `{name}`" in page
        for field in model.settings.option_fields():
            assert f"| `{field.name}` | `{field.cli_name}` |" in page, f"{name}: {field.name} not documented"
    with pytest.raises(ValueError, match="unknown marker"):
        hooks.expand("<!-- cltr: figures -->")


def test_reference_pages_list_every_registered_estimator_and_correction():
    from cltr import estimators
    from cltr.pipeline import corrections

    hooks = _hooks()
    page = hooks.expand((DOCS / "reference" / "estimators.md").read_text(encoding="utf-8"))
    for name, estimator in estimators.estimators().items():
        assert f"## `{name}`" in page and f"--method {name}`" in page
        for field in estimator.options.option_fields():
            assert f"| `{field.name}` | `{field.cli_name}` |" in page, f"{name}: {field.name} not documented"
    assert "| `relevance_model` | `--relevance-model` | one of logistic, trees, classes | `logistic` |" in page
    page = hooks.expand((DOCS / "reference" / "corrections.md").read_text(encoding="utf-8"))
    for name, correction in corrections.corrections().items():
        assert f"| `{name}`" in page and correction.summary.split("(")[0].strip() in page
    assert "| `affine` | `deep-propdcg`, `tree-propdcg` | `queries`, `estimate` |" in page
    assert "| `ips` (default) | every method | nothing |" in page


def test_reference_pages_list_every_figure_kind_and_scorer_kind():
    from cltr import scorers
    from cltr.pipeline import figure_kinds

    hooks = _hooks()
    page = hooks.expand((DOCS / "reference" / "figure-kinds.md").read_text(encoding="utf-8"))
    for name in figure_kinds.kinds():
        assert f"| `{name}` |" in page
    assert "| `propensity` | `estimators`, `x`, `values`, `series` | `rank`, `propensity`, `low`, `high`," in page
    page = hooks.expand((DOCS / "reference" / "scorers.md").read_text(encoding="utf-8"))
    for name in scorers.scorer_kinds():
        assert f"| `{name}` |" in page
    assert "| `mlp` | `deep-propdcg`, `two-tower` |" in page


def test_generated_tables_show_defaults_and_ranges_as_the_options_declare_them():
    import dataclasses

    from cltr.options import Options, option

    @dataclasses.dataclass(frozen=True)
    class Toy(Options):
        rate: float = option(0.5, "How | fast.", low=0, high=1, low_open=True)
        sizes: tuple[int, ...] = option((2, 4), "Sizes.", low=1)
        mode: str | None = option(None, "A mode.", choices=("a", "b"), flag="-m")

    table = _hooks().options_table(Toy).splitlines()
    assert table[2] == "| `rate` | `--rate` | a finite number > 0 and <= 1 | `0.5` | How \\| fast. |"
    assert table[3] == "| `sizes` | `--sizes` | a list of integers >= 1 | `2,4` | Sizes. |"
    assert table[4] == "| `mode` | `-m` | one of a, b (or none) | `none` | A mode. |"


# -- the site builds with warnings as errors ------------------------------------------------


def _build(config_file: Path, site: Path) -> None:
    """``mkdocs build --strict`` in-process (the cltr modules the reference pages read are
    already imported): raises ``mkdocs.exceptions.Abort`` on any warning."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    build(load_config(config_file=str(config_file), strict=True, site_dir=str(site)))


def _needs_docs_tools() -> None:
    for module in ("mkdocs", "mkdocstrings", "mkdocstrings_handlers.python", "mkdocs_click"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (pip install '.[docs]')")


def test_a_warning_fails_the_build(tmp_path):
    _needs_docs_tools()
    from mkdocs.exceptions import Abort

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Home\n\n[a page that is not there](missing.md)\n")
    (tmp_path / "mkdocs.yml").write_text("site_name: t\n")
    with pytest.raises(Abort):
        _build(tmp_path / "mkdocs.yml", tmp_path / "site")


def test_the_docs_build_with_warnings_as_errors(tmp_path):
    _needs_docs_tools()
    site = tmp_path / "site"
    _build(ROOT / "mkdocs.yml", site)
    pages = {path.relative_to(site).as_posix() for path in site.rglob("index.html")}
    for expected in (
        "reference/cli/index.html",
        "reference/api/index.html",
        "reference/methods/index.html",
        "tutorials/default/index.html",
    ):
        assert expected in pages
    cli = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    assert "cltr train svm-propdcg" in cli and "--eps-neg" in cli
    api = (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    assert 'id="cltr.api.PropDCG"' in api and 'id="cltr.api.evaluate"' in api
