"""The direction of imports between the package's floors (DESIGN.md, "Architecture").

Every module of ``cltr`` is parsed with ``ast`` (nothing is imported or run) and each
import, at module level or inside a function, is checked against the rules:

- ``cltr/core/*`` (the maths core) imports only numpy, scipy, the standard library and
  ``cltr.core``, and ``cltr/core/kernels.py`` numba (the compiled twins of numpy code that
  stays the oracle);
- ``cltr/methods/*``, ``cltr/clickmodels/*``, ``cltr/estimators/*`` and ``cltr/scorers/*`` (plug-ins) import no
  ``cltr.pipeline``, ``cltr.data`` or ``cltr.cli``;
- ``cltr/data/*`` (datasets and click logs in and out, the floor below the pipeline) imports no
  ``cltr.pipeline`` or ``cltr.cli``, so that no import loop runs between the two;
- ``cltr/datasets/*`` (dataset loaders, plug-ins over ``cltr.data``) imports no ``cltr.pipeline``
  or ``cltr.cli``;
- ``cltr/options.py`` imports only the standard library;
- only ``cltr.cli`` (the package ``cltr/cli/``) imports click or tqdm; only
  ``cltr/pipeline/report/`` and the figure kinds (``cltr/pipeline/figure_kinds/``, whose
  plots the report draws) import matplotlib; only ``cltr/methods/trees.py`` imports lightgbm;
- nothing imports ``cltr.cli`` but ``cltr/__main__.py`` and ``cltr.cli``'s own modules;
- no two modules of ``cltr`` import each other, directly or round a longer loop
  (``import_loops``).

The checker is tested on a small fake package first, so a rule that could never fire
would fail here.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import cltr

PACKAGE = Path(cltr.__file__).resolve().parent
STANDARD_LIBRARY = set(sys.stdlib_module_names) | {"__future__"}


def module_name(path: Path, root: Path) -> str:
    """``cltr/core/svm.py`` -> ``cltr.core.svm``; ``cltr/methods/__init__.py`` -> ``cltr.methods``."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, root: Path) -> list[tuple[int, str]]:
    """``(line, absolute module name)`` of every import in a file; ``from cltr import cli``
    names ``cltr.cli``, and relative imports are resolved."""
    tree = ast.parse(path.read_text(), filename=str(path))
    here = module_name(path, root)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            # ``from cltr import cli`` imports the module cltr.cli; ``from cltr.core.svm import
            # solve`` the module cltr.core.svm
            directory = root.parent / Path(*module.split("."))
            for alias in node.names:
                submodule = directory / alias.name
                if _top(module) == root.name and (
                    submodule.with_suffix(".py").exists() or (submodule / "__init__.py").exists()
                ):
                    found.append((node.lineno, f"{module}.{alias.name}"))
                else:
                    found.append((node.lineno, module))
    return sorted(set(found))


def _top(module: str) -> str:
    return module.split(".")[0]


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def violations(root: Path) -> list[str]:
    """Every broken rule in the package at ``root``, as ``file:line: what``."""
    name = root.name
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root.parent).as_posix()
        here = module_name(path, root)

        def bad(line, module, rule, relative=relative):
            found.append(f"{relative}:{line}: imports {module} ({rule})")

        for line, module in imports_of(path, root):
            top = _top(module)
            if _within(here, f"{name}.core"):
                if not (
                    top in STANDARD_LIBRARY
                    or top in ("numpy", "scipy")
                    or _within(module, f"{name}.core")
                    or (top == "numba" and path.name == "kernels.py")
                ):
                    bad(line, module, f"the core imports only numpy, scipy, the standard library and {name}.core")
            if any(
                _within(here, f"{name}.{plugins}") for plugins in ("methods", "clickmodels", "estimators", "scorers")
            ):
                for floor in ("pipeline", "data", "cli"):
                    if _within(module, f"{name}.{floor}"):
                        bad(line, module, f"plug-ins do not import {name}.{floor}")
            if _within(here, f"{name}.data"):
                for floor in ("pipeline", "cli"):
                    if _within(module, f"{name}.{floor}"):
                        bad(line, module, f"data does not import {name}.{floor}")
            if _within(here, f"{name}.datasets"):
                for floor in ("pipeline", "cli"):
                    if _within(module, f"{name}.{floor}"):
                        bad(line, module, f"dataset loaders do not import {name}.{floor}")
            if here == f"{name}.options" and top not in STANDARD_LIBRARY:
                bad(line, module, "options imports only the standard library")
            if top in ("click", "tqdm") and not _within(here, f"{name}.cli"):
                bad(line, module, f"only {name}.cli imports click and tqdm")
            if (
                top == "matplotlib"
                and not _within(here, f"{name}.pipeline.report")
                and not _within(here, f"{name}.pipeline.figure_kinds")
            ):
                bad(line, module, f"only {name}/pipeline/report/ and {name}/pipeline/figure_kinds/ import matplotlib")
            if top == "lightgbm" and here != f"{name}.methods.trees":
                bad(line, module, f"only {name}/methods/trees.py imports lightgbm")
            if _within(module, f"{name}.cli") and here != f"{name}.__main__" and not _within(here, f"{name}.cli"):
                bad(line, module, f"nothing imports {name}.cli but {name}/__main__.py")
    return found


def import_loops(root: Path) -> list[list[str]]:
    """The modules of the package at ``root`` that import each other, round a loop of any
    length (function-level imports included): the strongly connected components of the import
    graph with more than one module, each sorted, found by Tarjan's algorithm."""
    paths = {module_name(path, root): path for path in root.rglob("*.py")}
    graph = {
        module: sorted({imported for _, imported in imports_of(path, root) if imported in paths and imported != module})
        for module, path in paths.items()
    }
    index: dict[str, int] = {}
    lowest: dict[str, int] = {}
    stack: list[str] = []
    loops = []

    def visit(module):
        index[module] = lowest[module] = len(index)
        stack.append(module)
        for imported in graph[module]:
            if imported not in index:
                visit(imported)
                lowest[module] = min(lowest[module], lowest[imported])
            elif imported in stack:
                lowest[module] = min(lowest[module], index[imported])
        if lowest[module] == index[module]:
            component = stack[stack.index(module) :]
            del stack[stack.index(module) :]
            if len(component) > 1:
                loops.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(loops)


def test_the_package_keeps_its_import_direction():
    assert violations(PACKAGE) == []


def test_no_modules_import_each_other():
    assert import_loops(PACKAGE) == []


def test_every_module_is_seen():
    modules = {module_name(p, PACKAGE) for p in PACKAGE.rglob("*.py")}
    assert {
        "cltr.cli",
        "cltr.cli.train",
        "cltr.options",
        "cltr.core.svm",
        "cltr.methods.trees",
        "cltr.pipeline.report",
        "cltr.clickmodels.pbm",
        "cltr.data.loaders",
        "cltr.estimators.em",
        "cltr.pipeline.corrections.dr",
        "cltr.datasets.letor",
    } <= modules
    assert "cltr.core.svm" in {module for _, module in imports_of(PACKAGE / "core" / "ccp.py", PACKAGE)}


FAKE = {
    "__init__.py": "",
    "__main__.py": "from fake.cli import main\n",
    "cli/__init__.py": "import click\nfrom fake.cli import commands\n",
    "cli/commands.py": "from tqdm import tqdm\nfrom fake.cli.output import echo\n",
    "cli/output.py": "import click\n",
    "options.py": "import dataclasses\nimport numpy\n",
    "api.py": "from fake import cli\n",
    "core/__init__.py": "",
    "core/maths.py": "import numpy as np\nfrom scipy import sparse\nimport json\nfrom . import other\n"
    "import pandas\nfrom fake.pipeline import stages\nfrom ..methods import linear\n",
    "core/other.py": "def f():\n    import sklearn\n",
    "methods/__init__.py": "",
    "methods/linear.py": "from fake.core import maths\nfrom fake.data import loaders\nimport lightgbm\n",
    "methods/trees.py": "def fit():\n    import lightgbm\n",
    "clickmodels/__init__.py": "",
    "clickmodels/pbm.py": "from ..pipeline.stages import x\nimport matplotlib.pyplot as plt\n",
    "estimators/__init__.py": "",
    "estimators/ctr.py": "from fake.core.maths import f\nfrom fake.data import loaders\n",
    "data/__init__.py": "",
    "data/loaders.py": "from fake.core.maths import f\n",
    "data/store.py": "from fake.data import loaders\nfrom ..pipeline.workspace import atomic_write\n"
    "def save():\n    from fake.cli import main\n",
    "datasets/__init__.py": "",
    "datasets/toy.py": "from fake.data import loaders\nfrom fake.pipeline.stages import x\n",
    "pipeline/__init__.py": "",
    "pipeline/stages.py": "import tqdm\nfrom fake.cli import main\n",
    "pipeline/report.py": "import matplotlib\n",
    "pipeline/workspace.py": "def save():\n    from fake.data.store import dataset_arrays\n",
}


def test_the_checker_finds_every_kind_of_violation(tmp_path):
    root = tmp_path / "fake"
    for name, text in FAKE.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    found = violations(root)
    expected = [
        "fake/api.py:1: imports fake.cli (nothing imports fake.cli but fake/__main__.py)",
        "fake/clickmodels/pbm.py:1: imports fake.pipeline.stages (plug-ins do not import fake.pipeline)",
        "fake/clickmodels/pbm.py:2: imports matplotlib.pyplot (only fake/pipeline/report/ and "
        "fake/pipeline/figure_kinds/ import matplotlib)",
        "fake/core/maths.py:5: imports pandas (the core imports only numpy, scipy, the standard library and fake.core)",
        "fake/core/maths.py:6: imports fake.pipeline.stages (the core imports only numpy, scipy, the standard "
        "library and fake.core)",
        "fake/core/maths.py:7: imports fake.methods.linear (the core imports only numpy, scipy, the standard "
        "library and fake.core)",
        "fake/data/store.py:2: imports fake.pipeline.workspace (data does not import fake.pipeline)",
        "fake/data/store.py:4: imports fake.cli (data does not import fake.cli)",
        "fake/data/store.py:4: imports fake.cli (nothing imports fake.cli but fake/__main__.py)",
        "fake/core/other.py:2: imports sklearn (the core imports only numpy, scipy, the standard library and "
        "fake.core)",
        "fake/methods/linear.py:2: imports fake.data.loaders (plug-ins do not import fake.data)",
        "fake/estimators/ctr.py:2: imports fake.data.loaders (plug-ins do not import fake.data)",
        "fake/methods/linear.py:3: imports lightgbm (only fake/methods/trees.py imports lightgbm)",
        "fake/datasets/toy.py:2: imports fake.pipeline.stages (dataset loaders do not import fake.pipeline)",
        "fake/options.py:2: imports numpy (options imports only the standard library)",
        "fake/pipeline/stages.py:1: imports tqdm (only fake.cli imports click and tqdm)",
        "fake/pipeline/stages.py:2: imports fake.cli (nothing imports fake.cli but fake/__main__.py)",
    ]
    assert sorted(found) == sorted(expected)
    # core.maths imports methods.linear, which imports data.loaders, which imports core.maths;
    # data.store imports pipeline.workspace, which imports it back inside a function
    assert import_loops(root) == [
        ["fake.core.maths", "fake.data.loaders", "fake.methods.linear"],
        ["fake.data.store", "fake.pipeline.workspace"],
    ]
