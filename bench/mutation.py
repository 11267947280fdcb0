"""Mutation testing: how many deliberate small bugs in a module do its fast tests catch?

    python bench/mutation.py cltr/core/statistics.py [MODULE ...] [--config bench/mutation.toml]
                             [--sample N] [--seed S] [--lines L1,L2] [--list] [--json FILE]

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
from bench/mutation.toml. Every mutant runs those tests (``pytest -x``) on a private copy
of ``cltr/`` and ``tests/`` in a temporary directory (the checkout is never edited, so
others can work and test meanwhile), with bytecode caching off so no stale .pyc is used,
and hypothesis' shrinking off (CLTR_NO_SHRINK). A mutant is killed when a test fails or
the run exceeds the timeout. It prints the kill rate and every survivor with its line;
a survivor is either a gap in the tests or an equivalent mutant (one that changes no
behaviour), which only reading it can tell. A module's ``equivalent`` list in
bench/mutation.toml names the survivors argued equivalent (by the source line's code and
the mutation, so that edits elsewhere do not unmatch them), each with its reason; they are
printed as such and left out of the second kill rate ("killed of the non-equivalent").

Why not mutmut or cosmic-ray: this needs no install and no copy of the whole suite's
baseline run (mutmut 3 first runs every test to map tests to functions, ~100 s here), and
runs exactly the tests named per module. It is a bench, not CI: a module of ~100 mutants
takes minutes.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_BINARY = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.FloorDiv: ast.Mult,
           ast.Pow: ast.Mult, ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd, ast.Mod: ast.FloorDiv}
_COMPARE = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
            ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn, ast.NotIn: ast.In}
_SYMBOL = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Pow: "**",
           ast.BitAnd: "&", ast.BitOr: "|", ast.Mod: "%", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
           ast.Eq: "==", ast.NotEq: "!=", ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in",
           ast.And: "and", ast.Or: "or", ast.Not: "not", ast.USub: "-", ast.Invert: "~"}


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
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            skip_all(body[0])
        if isinstance(node, ast.JoinedStr):
            skip_all(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for argument in [*node.args.args, *node.args.kwonlyargs, *node.args.posonlyargs,
                             node.args.vararg, node.args.kwarg]:
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


def find_mutants(module: str, functions: list[str] | None = None) -> list[Mutant]:
    source = (ROOT / module).read_text()
    tree = ast.parse(source)
    skipped = _skipped_nodes(tree, source.splitlines(), functions)
    mutants = []
    for index, node in enumerate(ast.walk(tree)):
        if id(node) in skipped:
            continue
        for variant, description in enumerate(_variants(node)):
            mutants.append(Mutant(module, index, variant, getattr(node, "lineno", 0), description))
    return sorted(mutants, key=lambda m: (m.line, m.index, m.variant))


def mutated_source(mutant: Mutant) -> str:
    tree = ast.parse((ROOT / mutant.module).read_text())
    parent_of = _parents(tree)
    node = next(n for i, n in enumerate(ast.walk(tree)) if i == mutant.index)
    _apply(node, mutant.variant, parent_of)
    return ast.unparse(ast.fix_missing_locations(tree))


# -------------------------------------------------------------------------------- running them


def _copy_tree(destination: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis")
    for name in ("cltr", "tests"):
        shutil.copytree(ROOT / name, destination / name, ignore=ignore)
    shutil.copy(ROOT / "setup.cfg", destination / "setup.cfg")


def _run_tests(workdir: Path, tests: list[str], timeout: float) -> tuple[str, float]:
    """("passed" | "failed" | "timeout", seconds) of pytest -x over ``tests`` in ``workdir``."""
    env = {**os.environ, "PYTHONPATH": str(workdir), "PYTHONDONTWRITEBYTECODE": "1", "CLTR_NO_SHRINK": "1"}
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
                              cwd=workdir, env=env, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.perf_counter() - start
    return ("passed" if done.returncode == 0 else "failed"), time.perf_counter() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="+", help="modules to mutate, as paths from the repository root")
    parser.add_argument("--config", default=str(ROOT / "bench" / "mutation.toml"))
    parser.add_argument("--sample", type=int, default=None, help="run a seeded random sample of this many mutants")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--list", action="store_true", help="list the mutants and run nothing")
    parser.add_argument("--lines", default=None,
                        help="only the mutants on these source lines, comma-separated (to re-check survivors)")
    parser.add_argument("--json", default=None, help="write every mutant's outcome to this file")
    args = parser.parse_args(argv)
    config = tomllib.loads(Path(args.config).read_text())
    results, failures = [], 0
    for module in args.modules:
        if module not in config["modules"]:
            parser.error(f"{module} has no entry in {args.config}; known: {', '.join(config['modules'])}")
        entry = config["modules"][module]
        mutants = find_mutants(module, entry.get("functions"))
        if args.lines is not None:
            lines = {int(line) for line in args.lines.split(",")}
            mutants = [m for m in mutants if m.line in lines]
        if args.sample is not None and args.sample < len(mutants):
            mutants = sorted(random.Random(args.seed).sample(mutants, args.sample), key=lambda m: (m.index, m.variant))
        if args.list:
            for m in mutants:
                print(f"{module}:{m.line}: {m.description}")
            continue
        with tempfile.TemporaryDirectory(prefix="cltr-mutation-") as folder:
            work = Path(folder)
            _copy_tree(work)
            target = work / module
            # the baseline runs the unparsed module, so that only the mutation differs
            target.write_text(ast.unparse(ast.parse((ROOT / module).read_text())))
            outcome, seconds = _run_tests(work, entry["tests"], timeout=600)
            if outcome != "passed":
                print(f"{module}: the tests do not pass on the unmutated module ({outcome}); skipped")
                failures += 1
                continue
            timeout = max(config.get("min_timeout", 20.0), config.get("timeout_factor", 4.0) * seconds)
            print(f"{module}: {len(mutants)} mutants; tests {' '.join(entry['tests'])} take {seconds:.1f} s "
                  f"unmutated (timeout {timeout:.0f} s)", flush=True)
            source_lines = (ROOT / module).read_text().splitlines()
            equivalent = {(e["code"].strip(), e["mutation"]): e["reason"] for e in entry.get("equivalent", [])}
            for number, mutant in enumerate(mutants, 1):
                target.write_text(mutated_source(mutant))
                outcome, seconds = _run_tests(work, entry["tests"], timeout)
                code = source_lines[mutant.line - 1].strip() if mutant.line else ""
                reason = equivalent.get((code, mutant.description)) if outcome == "passed" else None
                results.append({**asdict(mutant), "outcome": outcome, "seconds": round(seconds, 2),
                                "code": code, "equivalent": reason})
                mark = {"failed": "killed", "timeout": "killed (timeout)", "passed": "SURVIVED"}[outcome]
                if reason is not None:
                    mark = "survived, equivalent"
                print(f"  [{number}/{len(mutants)}] line {mutant.line}: {mutant.description}: {mark} "
                      f"({seconds:.1f} s)", flush=True)
    if args.list:
        return 0
    if results:
        killed = sum(r["outcome"] != "passed" for r in results)
        print(f"\nkilled {killed} of {len(results)} mutants ({100.0 * killed / len(results):.1f}%); "
              f"{sum(r['outcome'] == 'timeout' for r in results)} of them by the timeout")
        argued = [r for r in results if r["outcome"] == "passed" and r["equivalent"] is not None]
        if argued:
            print(f"killed {killed} of the {len(results) - len(argued)} non-equivalent mutants "
                  f"({100.0 * killed / max(1, len(results) - len(argued)):.1f}%); equivalent (bench/mutation.toml):")
            for r in argued:
                print(f"  {r['module']}:{r['line']}: {r['description']}    {r['code']}    -- {r['equivalent']}")
        survivors = [r for r in results if r["outcome"] == "passed" and r["equivalent"] is None]
        if survivors:
            print("survivors (a gap in the tests, or an equivalent mutant not yet argued):")
            for r in survivors:
                print(f"  {r['module']}:{r['line']}: {r['description']}    {r['code']}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
