"""Mutation testing: how many deliberate small bugs in a module do its fast tests catch?

    python bench/mutation.py cltr/core/statistics.py [MODULE ...] [--config bench/mutation.toml]
                             [--sample N] [--seed S] [--lines L1,L2] [--shard K/N] [--list] [--json FILE]
    python bench/mutation.py MODULE [MODULE ...] --jobs 16 --out DIR [--per-shard 25]
    python bench/mutation.py --report FILE.json [FILE.json ...]

``--shard K/N`` runs every N-th mutant from the K-th (0-based), so that N processes on N cores
share a module; ``--json`` is rewritten after every mutant, so an interrupted run keeps what it
ran and ``--resume`` runs only the rest; ``--jobs J --out DIR`` cuts every module named into
shards of about ``--per-shard`` mutants and runs them J at a time, in the order the modules are
named, each shard's outcomes in DIR/<module>-<k>-of-<n>.json and its output beside it in .log
(``--resume`` passed on to each shard); ``--report`` merges such files
(a mutant found in several counts once, the last file winning) into a kill rate per module and
in all.

A mutant is the module with one small change, the kind a slip of the keyboard makes:

- an operator swapped: + and -, * and /, // and ** to *, & and | (numpy masks), in
  expressions and augmented assignments;
- a comparison flipped at its boundary or negated: < and <=, > and >=, == and !=, is and
  is not, in and not in;
- ``and`` and ``or`` swapped; a ``not``, unary minus or ``~`` dropped;
- a constant tweaked: an int or float n to n + 1, True and False swapped;
- a statement removed (replaced by ``pass``): an expression statement (a call), an
  augmented assignment, a ``raise``.

Docstrings, f-strings, annotations, ``__all__`` and lines ending in ``# pragma: no mutate``
are left alone. The tests that should kill each module's mutants, and the timeout, come
from bench/mutation.toml. Every mutant runs those tests (``pytest -x``), with hypothesis'
shrinking off (CLTR_NO_SHRINK) and the checkout never edited (others work and test meanwhile):
by default (``--runner fork``, ForkRunner) in a child forked from an interpreter that imported
pytest, numpy and the tests once, the mutated module and the modules importing it imported
afresh in the child from the mutant's source (about 0.3 s a mutant where a fresh pytest takes
1.3 s); with ``--runner subprocess`` in a new pytest on a private copy of ``cltr/`` and
``tests/`` with bytecode caching off. Both give the same outcomes (policy.py: 57 of 57). The
module is read once per run, so a mutant refers to the text its line and index came from. A mutant is
killed when a test fails or the run exceeds the timeout. It prints the kill rate and every survivor with its line;
a survivor is either a gap in the tests or an equivalent mutant (one that changes no
behaviour), which only reading it can tell. A module's ``equivalent`` list in
bench/mutation.toml names the survivors argued equivalent (by the source line's code and
the mutation, so that edits elsewhere do not unmatch them), each with its reason; they are
printed as such and left out of the second kill rate ("killed of the non-equivalent").

Why not mutmut or cosmic-ray: this needs no install and no copy of the whole suite's
baseline run (mutmut 3 first runs every test to map tests to functions, ~100 s here), and
runs exactly the tests named per module. It is a bench, not CI: a module of ~100 mutants
takes a minute or more.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib
import importlib.abc
import importlib.util
import json
import os
import random
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_BINARY = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Mult,
    ast.Pow: ast.Mult,
    ast.BitAnd: ast.BitOr,
    ast.BitOr: ast.BitAnd,
    ast.Mod: ast.FloorDiv,
}
_COMPARE = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
_SYMBOL = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Pow: "**",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.Mod: "%",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.And: "and",
    ast.Or: "or",
    ast.Not: "not",
    ast.USub: "-",
    ast.Invert: "~",
}


@dataclass(frozen=True)
class Mutant:
    """One change: the ``index``-th node of ``ast.walk`` order, ``variant`` of its mutations."""

    module: str
    index: int
    variant: int
    line: int
    description: str


# -------------------------------------------------------------------------------- finding mutants


def _skipped_nodes(tree: ast.Module, source_lines: list[str], functions: list[str] | None) -> set[int]:
    """ids of nodes never mutated: docstrings, f-strings, annotations, __all__, pragma lines,
    and (with ``functions``) everything outside those functions and classes."""
    skipped: set[int] = set()

    def skip_all(node):
        skipped.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            skip_all(body[0])
        if isinstance(node, ast.JoinedStr):
            skip_all(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for argument in [
                *node.args.args,
                *node.args.kwonlyargs,
                *node.args.posonlyargs,
                node.args.vararg,
                node.args.kwarg,
            ]:
                if argument is not None and argument.annotation is not None:
                    skip_all(argument.annotation)
            if node.returns is not None:
                skip_all(node.returns)
        if isinstance(node, ast.AnnAssign):
            skip_all(node.annotation)
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            skip_all(node)
        line = getattr(node, "lineno", None)
        if line is not None and source_lines[line - 1].rstrip().endswith("# pragma: no mutate"):
            skipped.add(id(node))
    if functions is not None:
        inside: set[int] = set()
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name in functions:
                inside.update(id(n) for n in ast.walk(node))
        skipped.update(id(n) for n in ast.walk(tree) if id(n) not in inside)
    return skipped


def _variants(node: ast.AST) -> list[str]:
    """Descriptions of the mutations of one node (empty: none)."""
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return [f"{_SYMBOL[type(node.op)]} -> {_SYMBOL[_BINARY[type(node.op)]]}"]
    if isinstance(node, ast.AugAssign) and type(node.op) in _BINARY:
        return [f"{_SYMBOL[type(node.op)]}= -> {_SYMBOL[_BINARY[type(node.op)]]}=", "statement removed"]
    if isinstance(node, ast.Compare):
        return [f"{_SYMBOL[type(op)]} -> {_SYMBOL[_COMPARE[type(op)]]}" for op in node.ops if type(op) in _COMPARE]
    if isinstance(node, ast.BoolOp):
        return [f"{_SYMBOL[type(node.op)]} -> {'or' if isinstance(node.op, ast.And) else 'and'}"]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub, ast.Invert)):
        return [f"{_SYMBOL[type(node.op)]} dropped"]
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool):
            return [f"{node.value} -> {not node.value}"]
        if isinstance(node.value, (int, float)):
            return [f"{node.value!r} -> {node.value + 1!r}"]
    if isinstance(node, ast.Expr) and not isinstance(node.value, ast.Constant):
        return ["statement removed"]
    if isinstance(node, ast.Raise):
        return ["raise removed"]
    return []


def _apply(node: ast.AST, variant: int, parent_of: dict[int, tuple[ast.AST, str, int | None]]) -> None:
    """Mutate ``node`` in place (or replace it in its parent)."""

    def replace(new):
        parent, field, position = parent_of[id(node)]
        if position is None:
            setattr(parent, field, new)
        else:
            getattr(parent, field)[position] = new

    if isinstance(node, ast.BinOp):
        node.op = _BINARY[type(node.op)]()
    elif isinstance(node, ast.AugAssign):
        if variant == 0:
            node.op = _BINARY[type(node.op)]()
        else:
            replace(ast.Pass())
    elif isinstance(node, ast.Compare):
        positions = [i for i, op in enumerate(node.ops) if type(op) in _COMPARE]
        i = positions[variant]
        node.ops[i] = _COMPARE[type(node.ops[i])]()
    elif isinstance(node, ast.BoolOp):
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif isinstance(node, ast.UnaryOp):
        replace(node.operand)
    elif isinstance(node, ast.Constant):
        node.value = (not node.value) if isinstance(node.value, bool) else node.value + 1
    elif isinstance(node, (ast.Expr, ast.Raise)):
        replace(ast.Pass())


def _parents(tree: ast.AST) -> dict[int, tuple[ast.AST, str, int | None]]:
    parent_of = {}
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if isinstance(value, list):
                for position, child in enumerate(value):
                    if isinstance(child, ast.AST):
                        parent_of[id(child)] = (parent, field, position)
            elif isinstance(value, ast.AST):
                parent_of[id(value)] = (parent, field, None)
    return parent_of


def find_mutants(module: str, functions: list[str] | None = None, source: str | None = None) -> list[Mutant]:
    """The mutants of ``module`` (of ``source``, its text read once, when given: a mutant's node index
    refers to that text, so a run reads the file once and mutates that snapshot)."""
    source = (ROOT / module).read_text() if source is None else source
    tree = ast.parse(source)
    skipped = _skipped_nodes(tree, source.splitlines(), functions)
    mutants = []
    for index, node in enumerate(ast.walk(tree)):
        if id(node) in skipped:
            continue
        for variant, description in enumerate(_variants(node)):
            mutants.append(Mutant(module, index, variant, getattr(node, "lineno", 0), description))
    return sorted(mutants, key=lambda m: (m.line, m.index, m.variant))


def mutated_source(mutant: Mutant, source: str | None = None) -> str:
    tree = ast.parse((ROOT / mutant.module).read_text() if source is None else source)
    parent_of = _parents(tree)
    node = next(n for i, n in enumerate(ast.walk(tree)) if i == mutant.index)
    _apply(node, mutant.variant, parent_of)
    return ast.unparse(ast.fix_missing_locations(tree))


# -------------------------------------------------------------------------------- running them

# what every mutant's test run sees: one BLAS thread (and so no OpenBLAS thread pool to be forked),
# no bytecode written, hypothesis without shrinking (tests/core/test_properties.py)
_ENVIRONMENT = {"OPENBLAS_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1", "CLTR_NO_SHRINK": "1"}
# the suite's addopts replaced: its `-n auto` would run the tests in xdist workers, fresh
# interpreters that import the checkout's module rather than the mutant
_PYTEST = ["-x", "-q", "-p", "no:cacheprovider", "-o", "addopts=", "-m", "not slow"]


class SubprocessRunner:
    """Each mutant's tests in a new ``python -m pytest`` on a private copy of ``cltr/`` and ``tests/``:
    a cold interpreter per mutant (about 1 s of imports and collection before the first test)."""

    name = "subprocess"

    def __init__(self, module: str, tests: list[str]):
        self.module, self.tests = module, tests
        self._folder = tempfile.TemporaryDirectory(prefix="cltr-mutation-")
        self.work = Path(self._folder.name)
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis")
        for name in ("cltr", "tests"):
            shutil.copytree(ROOT / name, self.work / name, ignore=ignore)
        shutil.copy(ROOT / "setup.cfg", self.work / "setup.cfg")

    def run(self, source: str, timeout: float) -> tuple[str, float]:
        """("passed" | "failed" | "timeout", seconds) of pytest -x over the tests with ``source`` as the module."""
        (self.work / self.module).write_text(source)
        env = {**os.environ, **_ENVIRONMENT, "PYTHONPATH": str(self.work)}
        start = time.perf_counter()
        try:
            done = subprocess.run(
                [sys.executable, "-m", "pytest", *_PYTEST, *self.tests],
                cwd=self.work,
                env=env,
                capture_output=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            return "timeout", time.perf_counter() - start
        return ("passed" if done.returncode == 0 else "failed"), time.perf_counter() - start

    def close(self) -> None:
        self._folder.cleanup()


def _imported_names(path: Path, package: str) -> set[str]:
    """Every module name an ``import`` anywhere in the file at ``path`` may load (relative ones
    resolved against ``package``; ``from a import b`` counts both a and a.b)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{parent}.{base}" if base else parent
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


class _MutantLoader(importlib.abc.Loader):
    """Executes a given source text as the module (compiled under its real file name)."""

    def __init__(self, source: str, filename: str):
        self.source, self.filename = source, filename

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        exec(compile(self.source, self.filename, "exec", dont_inherit=True), module.__dict__)


class _MutantFinder(importlib.abc.MetaPathFinder):
    def __init__(self, name: str, loader: _MutantLoader):
        self.name, self.loader = name, loader

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        spec = importlib.util.spec_from_loader(fullname, self.loader, origin=self.loader.filename)
        spec.has_location = True
        return spec


class ForkRunner:
    """Each mutant's tests in a child forked from a warm interpreter.

    The parent imports pytest, numpy and the rest once, and collects the tests once
    (``--collect-only``), which imports their modules. A child forked per mutant drops from
    ``sys.modules`` the mutated module and every loaded ``cltr``/``tests`` module that imports
    it, directly or through another one (any ``import`` in the file counts, also one inside a
    function), and unsets them as attributes of their packages (which ``from package import
    module`` reads first): those are imported afresh, the mutated module from the mutant's source through a
    meta-path finder, so no object of the unmutated module is left where the tests can reach it.
    Modules that do not import it are kept as they were imported (never run: the parent runs no
    test). Then ``pytest.main`` runs the tests as the subprocess runner does and the exit status
    is the outcome; past the timeout the child's process group is killed. The checkout is
    never written. A module using numba gets a fresh numba cache folder per mutant, since numba's
    cache is keyed by file name and time stamp, which every mutant shares.
    """

    name = "fork"

    def __init__(self, module: str, tests: list[str]):
        self.module, self.tests = module, tests
        self.name_of = ".".join(Path(module).with_suffix("").parts)
        for key, value in _ENVIRONMENT.items():
            os.environ[key] = value
        os.chdir(ROOT)
        if str(ROOT) not in sys.path:
            sys.path.insert(0, str(ROOT))
        import pytest

        self._pytest = pytest
        with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
            collected = pytest.main(["--collect-only", *_PYTEST, *tests])
        if collected != 0:
            raise RuntimeError(f"collecting {' '.join(tests)} failed (pytest exit status {collected})")
        self._uses_numba = "numba" in (ROOT / module).read_text()
        if not self._uses_numba:
            self._warm_kernels()
        self.dropped = self._dependents()
        # dropped packages whose other submodules stay loaded: a package imported afresh has as
        # attributes only the submodules its __init__ imports, so `package.sibling` (a test
        # reading cltr.core.propensity.harvest while em.py is mutated) would fail in every child
        self.kept_children = {
            package: [name for name in sys.modules if name.rpartition(".")[0] == package and name not in self.dropped]
            for package in self.dropped
            if hasattr(sys.modules.get(package), "__path__")
        }

    def _warm_kernels(self) -> None:
        """Load the compiled risk-gradient kernels once, here, rather than in every child."""
        kernels = sys.modules.get("cltr.core.kernels")
        if kernels is None or not kernels.enabled():
            return
        import numpy as np

        order, start, first, own, _, _ = kernels.hinges(
            np.array([0.5, 1.0]), np.array([0, 2]), np.array([0]), np.array([0]), None
        )
        kernels.spread(np.ones(1), order, start, first, own, np.array([0]), np.array([0]), 2)

    def _dependents(self) -> list[str]:
        """The mutated module and every loaded cltr/tests module that imports it, transitively."""
        local = {
            name: Path(module.__file__)
            for name, module in list(sys.modules.items())
            if name.split(".")[0] in ("cltr", "tests") and getattr(module, "__file__", None)
        }
        imports = {
            name: _imported_names(path, name if path.name == "__init__.py" else name.rpartition(".")[0])
            for name, path in local.items()
        }
        dropped, frontier = {self.name_of}, [self.name_of]
        while frontier:
            target = frontier.pop()
            for name, names in imports.items():
                if name not in dropped and target in names:
                    dropped.add(name)
                    frontier.append(name)
        return sorted(dropped)

    def run(self, source: str, timeout: float) -> tuple[str, float]:
        """("passed" | "failed" | "timeout", seconds) of pytest -x over the tests with ``source`` as the module."""
        cache = tempfile.mkdtemp(prefix="cltr-mutation-numba-") if self._uses_numba else None
        start = time.perf_counter()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            status = 3
            try:
                os.setpgid(0, 0)
                sink = os.open(os.devnull, os.O_WRONLY)
                os.dup2(sink, 1)
                os.dup2(sink, 2)
                if cache is not None:
                    os.environ["NUMBA_CACHE_DIR"] = cache
                    if "numba" in sys.modules:
                        sys.modules["numba"].config.CACHE_DIR = cache
                for name in self.dropped:
                    sys.modules.pop(name, None)
                    # `from cltr.core import kernels` reads the package's attribute before
                    # sys.modules: unset it, so that the import goes through the finder again
                    package, _, leaf = name.rpartition(".")
                    if package in sys.modules and package not in self.dropped:
                        sys.modules[package].__dict__.pop(leaf, None)
                sys.meta_path.insert(0, _MutantFinder(self.name_of, _MutantLoader(source, str(ROOT / self.module))))
                for package, children in self.kept_children.items():
                    fresh = importlib.import_module(package)  # a mutant that breaks the import fails here
                    for name in children:
                        fresh.__dict__.setdefault(name.rpartition(".")[2], sys.modules[name])
                status = int(self._pytest.main([*_PYTEST, *self.tests]))
            except BaseException:
                status = 3
            finally:
                os._exit(status)
        with contextlib.suppress(OSError):
            os.setpgid(pid, pid)
        handle = os.pidfd_open(pid)
        try:
            ready, _, _ = select.select([handle], [], [], timeout)
            if not ready:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
        finally:
            os.close(handle)
            if cache is not None:
                shutil.rmtree(cache, ignore_errors=True)
        seconds = time.perf_counter() - start
        if not ready:
            return "timeout", seconds
        return ("passed" if os.waitstatus_to_exitcode(status) == 0 else "failed"), seconds

    def close(self) -> None:
        pass


RUNNERS = {"fork": ForkRunner, "subprocess": SubprocessRunner}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help="modules to mutate, as paths from the repository root")
    parser.add_argument("--config", default=str(ROOT / "bench" / "mutation.toml"))
    parser.add_argument("--sample", type=int, default=None, help="run a seeded random sample of this many mutants")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--list", action="store_true", help="list the mutants and run nothing")
    parser.add_argument(
        "--lines", default=None, help="only the mutants on these source lines, comma-separated (to re-check survivors)"
    )
    parser.add_argument(
        "--runner",
        choices=sorted(RUNNERS),
        default="fork",
        help="fork: each mutant's tests in a child of a warm interpreter (the default, "
        "several times faster); subprocess: a fresh pytest per mutant on a copy of the tree",
    )
    parser.add_argument(
        "--shard",
        default=None,
        type=_shard,
        help="K/N: only every N-th mutant from the K-th (0-based), to share a module among N processes",
    )
    parser.add_argument(
        "--json", default=None, help="write every mutant's outcome to this file (rewritten after each mutant)"
    )
    parser.add_argument(
        "--report", nargs="+", default=None, metavar="FILE", help="merge --json files' outcomes into kill rates"
    )
    parser.add_argument(
        "--resume", action="store_true", help="keep the outcomes already in --json (or --out's files), run the rest"
    )
    parser.add_argument("--jobs", type=int, default=None, help="run the modules' shards this many at a time")
    parser.add_argument("--out", default=None, help="with --jobs: the folder of the shards' outcomes and logs")
    parser.add_argument("--per-shard", type=int, default=25, help="with --jobs: about this many mutants a shard")
    args = parser.parse_args(argv)
    config = tomllib.loads(Path(args.config).read_text())
    if args.report is not None:
        print(report(args.report, config))
        return 0
    if not args.modules:
        parser.error("name at least one module (or --report FILE ...)")
    for module in args.modules:
        if module not in config["modules"]:
            parser.error(f"{module} has no entry in {args.config}; known: {', '.join(config['modules'])}")
    if args.jobs is not None:
        if args.out is None:
            parser.error("--jobs needs --out DIR")
        return run_parallel(args.modules, args.jobs, Path(args.out), args.per_shard, args.config, args.resume)
    results, failures = [], 0
    previous = {}
    if args.resume and args.json and Path(args.json).exists():
        previous = {(r["module"], r["index"], r["variant"]): r for r in json.loads(Path(args.json).read_text())}
    started = time.perf_counter()
    for module in args.modules:
        entry = config["modules"][module]
        source = (ROOT / module).read_text()  # one snapshot: others may edit the file meanwhile
        mutants = find_mutants(module, entry.get("functions"), source)
        if args.lines is not None:
            lines = {int(line) for line in args.lines.split(",")}
            mutants = [m for m in mutants if m.line in lines]
        if args.sample is not None and args.sample < len(mutants):
            mutants = sorted(random.Random(args.seed).sample(mutants, args.sample), key=lambda m: (m.index, m.variant))
        if args.shard is not None:
            k, n = args.shard
            mutants = mutants[k::n]
        if previous:
            done = [previous[key] for m in mutants if (key := (module, m.index, m.variant)) in previous]
            lines = source.splitlines()
            for r in done:
                if lines[r["line"] - 1].strip() != r["code"]:
                    parser.error(f"{module} changed since {args.json} was written (line {r['line']}); drop --resume")
            results += done
            mutants = [m for m in mutants if (module, m.index, m.variant) not in previous]
            print(f"{module}: {len(done)} mutants' outcomes kept from {args.json}", flush=True)
            if not mutants:
                continue
        if args.list:
            for m in mutants:
                print(f"{module}:{m.line}: {m.description}")
            continue
        runner = RUNNERS[args.runner](module, entry["tests"])
        try:
            # the baseline runs the unparsed module, so that only the mutation differs
            outcome, seconds = runner.run(ast.unparse(ast.parse(source)), timeout=600)
            if outcome != "passed":
                print(f"{module}: the tests do not pass on the unmutated module ({outcome}); skipped")
                failures += 1
                continue
            least = config.get("min_timeout_fork", 5.0) if runner.name == "fork" else config.get("min_timeout", 20.0)
            # a module whose mutants compile (numba, a fresh cache per mutant) names its own floor
            least = max(least, entry.get("min_timeout", 0.0))
            timeout = max(least, config.get("timeout_factor", 4.0) * seconds)
            print(
                f"{module}: {len(mutants)} mutants; tests {' '.join(entry['tests'])} take {seconds:.1f} s "
                f"unmutated (timeout {timeout:.0f} s, {runner.name} runner)",
                flush=True,
            )
            source_lines = source.splitlines()
            equivalent = {(e["code"].strip(), e["mutation"]): e["reason"] for e in entry.get("equivalent", [])}
            for number, mutant in enumerate(mutants, 1):
                outcome, seconds = runner.run(mutated_source(mutant, source), timeout)
                code = source_lines[mutant.line - 1].strip() if mutant.line else ""
                reason = equivalent.get((code, mutant.description)) if outcome == "passed" else None
                results.append(
                    {
                        **asdict(mutant),
                        "outcome": outcome,
                        "seconds": round(seconds, 2),
                        "code": code,
                        "equivalent": reason,
                    }
                )
                if args.json:
                    _write_json(Path(args.json), results)
                mark = {"failed": "killed", "timeout": "killed (timeout)", "passed": "SURVIVED"}[outcome]
                if reason is not None:
                    mark = "survived, equivalent"
                print(
                    f"  [{number}/{len(mutants)}] line {mutant.line}: {mutant.description}: {mark} ({seconds:.1f} s)",
                    flush=True,
                )
        finally:
            runner.close()
    if args.list:
        return 0
    if results:
        elapsed = time.perf_counter() - started
        killed = sum(r["outcome"] != "passed" for r in results)
        print(
            f"\nkilled {killed} of {len(results)} mutants ({100.0 * killed / len(results):.1f}%); "
            f"{sum(r['outcome'] == 'timeout' for r in results)} of them by the timeout; "
            f"{elapsed:.0f} s in all, {len(results) / elapsed:.2f} mutants/s"
        )
        argued = [r for r in results if r["outcome"] == "passed" and r["equivalent"] is not None]
        if argued:
            print(
                f"killed {killed} of the {len(results) - len(argued)} non-equivalent mutants "
                f"({100.0 * killed / max(1, len(results) - len(argued)):.1f}%); equivalent (bench/mutation.toml):"
            )
            for r in argued:
                print(f"  {r['module']}:{r['line']}: {r['description']}    {r['code']}    -- {r['equivalent']}")
        survivors = [r for r in results if r["outcome"] == "passed" and r["equivalent"] is None]
        if survivors:
            print("survivors (a gap in the tests, or an equivalent mutant not yet argued):")
            for r in survivors:
                print(f"  {r['module']}:{r['line']}: {r['description']}    {r['code']}")
    if args.json:
        _write_json(Path(args.json), results)
    return 1 if failures else 0


def run_parallel(modules: list[str], jobs: int, out: Path, per_shard: int, config: str, resume: bool) -> int:
    """Every module's mutants in shards, ``jobs`` processes at a time; then the merged report."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    out.mkdir(parents=True, exist_ok=True)
    entries = tomllib.loads(Path(config).read_text())["modules"]
    work = []
    for module in modules:
        count = len(find_mutants(module, entries[module].get("functions")))
        shards = max(1, -(-count // per_shard))
        stem = module.replace("/", "-").removesuffix(".py")
        work += [(module, k, shards, out / f"{stem}-{k}-of-{shards}") for k in range(shards)]
    print(f"{len(work)} shards of {len(modules)} modules, {jobs} at a time", flush=True)
    started = time.perf_counter()

    def one(module: str, k: int, shards: int, stem: Path) -> int:
        command = [sys.executable, __file__, module, "--shard", f"{k}/{shards}", "--json", f"{stem}.json"]
        command += ["--resume"] if resume else []
        with open(f"{stem}.log", "w") as log:
            return subprocess.run([*command, "--config", config], stdout=log, stderr=subprocess.STDOUT).returncode

    failed = 0
    with ThreadPoolExecutor(jobs) as pool:
        futures = {pool.submit(one, *item): item for item in work}
        for done, future in enumerate(as_completed(futures), 1):
            module, k, shards, _ = futures[future]
            status = future.result()
            failed += status != 0
            print(
                f"[{done}/{len(work)}] {module} shard {k}/{shards}: "
                f"{'done' if status == 0 else f'exit {status}'} ({time.perf_counter() - started:.0f} s)",
                flush=True,
            )
    print(report([str(path) for path in sorted(out.glob("*.json"))], tomllib.loads(Path(config).read_text())))
    return 1 if failed else 0


def _shard(text: str) -> tuple[int, int]:
    try:
        k, n = (int(part) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected K/N such as 0/4, got {text!r}") from None
    if not 0 <= k < n:
        raise argparse.ArgumentTypeError(f"expected 0 <= K < N, got {text!r}")
    return k, n


def _write_json(path: Path, results: list[dict]) -> None:
    """Atomically, so that a run stopped mid-write leaves the previous mutant's file."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(results, indent=1))
    partial.replace(path)


def report(paths: list[str], config: dict | None = None) -> str:
    """Kill rates per module and in all over --json files (one mutant: module, index, variant).

    With ``config``, a survivor is equivalent by today's entries of bench/mutation.toml, so that
    an entry argued after a run counts without running its mutant again."""
    outcomes: dict[tuple[str, int, int], dict] = {}
    for path in paths:
        for r in json.loads(Path(path).read_text()):
            outcomes[(r["module"], r["index"], r["variant"])] = r
    if config is not None:
        argued = {
            (module, e["code"].strip(), e["mutation"]): e["reason"]
            for module, entry in config["modules"].items()
            for e in entry.get("equivalent", [])
        }
        outcomes = {
            key: {**r, "equivalent": argued.get((r["module"], r["code"], r["description"]))}
            if r["outcome"] == "passed"
            else r
            for key, r in outcomes.items()
        }
    rows = [
        "| module | mutants run | killed | of them by the timeout | equivalent | survivors | rate |",
        "|---|---|---|---|---|---|---|",
    ]
    totals = [0, 0, 0, 0]
    for module in sorted({key[0] for key in outcomes}):
        results = [r for key, r in outcomes.items() if key[0] == module]
        killed = sum(r["outcome"] != "passed" for r in results)
        timeouts = sum(r["outcome"] == "timeout" for r in results)
        equivalent = sum(r["outcome"] == "passed" and r["equivalent"] is not None for r in results)
        counted = len(results) - equivalent
        totals = [totals[0] + len(results), totals[1] + killed, totals[2] + timeouts, totals[3] + equivalent]
        rows.append(
            f"| `{module}` | {len(results)} | {killed} | {timeouts} | {equivalent} | {counted - killed} | "
            f"{killed}/{counted} ({100.0 * killed / max(1, counted):.1f}%) |"
        )
    run, killed, timeouts, equivalent = totals
    rows.append(
        f"| all | {run} | {killed} | {timeouts} | {equivalent} | {run - equivalent - killed} | "
        f"{killed}/{run - equivalent} ({100.0 * killed / max(1, run - equivalent):.1f}%) |"
    )
    survivors = sorted(
        (r for r in outcomes.values() if r["outcome"] == "passed" and r["equivalent"] is None),
        key=lambda r: (r["module"], r["line"]),
    )
    lines = [*rows, "", f"survivors ({len(survivors)}):"]
    lines += [f"  {r['module']}:{r['line']}: {r['description']}    {r['code']}" for r in survivors]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
