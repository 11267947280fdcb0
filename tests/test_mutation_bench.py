"""bench/mutation.py itself: its mutants, its shards, resuming and merging, and a mutant killed end to end.

The end-to-end test guards the runner: a pytest option that moves the tests out of the forked
child (xdist's ``-n auto`` in the suite's addopts did) lets every mutant survive unnoticed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.benches import load_bench

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    module = load_bench("mutation")
    yield module
    sys.modules.pop(module.__name__, None)


SOURCE = "def f(a, b):\n    return a + b if a < b else a\n"


def test_mutants_of_a_tiny_module_are_the_slips_it_documents(bench, tmp_path):
    module = tmp_path / "tiny.py"
    module.write_text(SOURCE)
    mutants = bench.find_mutants(str(module), source=SOURCE)
    assert {m.description for m in mutants} >= {"+ -> -", "< -> <="}
    sources = {m.description: bench.mutated_source(m, SOURCE) for m in mutants}
    namespace: dict = {}
    exec(sources["+ -> -"], namespace)
    assert namespace["f"](1, 3) == -2
    exec(sources["< -> <="], namespace)
    assert namespace["f"](2, 2) == 4  # the original returns 2


def test_shards_split_the_mutants_without_overlap(bench):
    assert bench._shard("1/3") == (1, 3)
    for text in ("3/3", "-1/2", "a/b", "1"):
        with pytest.raises(Exception, match="K/N|0 <= K < N"):
            bench._shard(text)
    items = list(range(10))
    parts = [items[k::3] for k in range(3)]
    assert sorted(sum(parts, [])) == items


def test_report_merges_files_the_last_outcome_winning(bench, tmp_path):
    def record(index, outcome, equivalent=None):
        return {
            "module": "m.py",
            "index": index,
            "variant": 0,
            "line": index + 1,
            "description": "+ -> -",
            "outcome": outcome,
            "code": "x",
            "equivalent": equivalent,
        }

    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps([record(0, "passed"), record(1, "failed"), record(2, "passed", "same values")]))
    second.write_text(json.dumps([record(0, "failed")]))  # a re-run after a new test
    text = bench.report([str(first), str(second)])
    assert "| `m.py` | 3 | 2 | 0 | 1 | 0 | 2/2 (100.0%) |" in text
    assert "survivors (0)" in text
    assert "| `m.py` | 3 | 1 | 0 | 1 | 1 | 1/2 (50.0%) |" in bench.report([str(second), str(first)])
    # an entry argued after the run counts; one no longer listed stops counting
    config = {"modules": {"m.py": {"tests": [], "equivalent": [{"code": "x", "mutation": "+ -> -", "reason": "r"}]}}}
    first.write_text(json.dumps([record(0, "passed"), record(1, "timeout")]))
    assert "| `m.py` | 2 | 1 | 1 | 1 | 0 | 1/1 (100.0%) |" in bench.report([str(first)], config)
    assert "| `m.py` | 2 | 1 | 1 | 0 | 1 | 1/2 (50.0%) |" in bench.report([str(first)], {"modules": {}})


def test_a_mutant_is_killed_through_the_fork_runner_and_kept_on_resume(tmp_path):
    config = tmp_path / "mutation.toml"
    config.write_text(
        'min_timeout_fork = 60.0\n[modules."cltr/core/scorers.py"]\ntests = ["tests/core/test_mutants_scorers.py"]\n'
    )
    outcomes = tmp_path / "out.json"
    # line 27: `@dataclass(frozen=True)`, whose `frozen=False` test_mutants_scorers.py kills
    command = [sys.executable, str(ROOT / "bench" / "mutation.py"), "cltr/core/scorers.py", "--lines", "27"]
    command += ["--config", str(config), "--json", str(outcomes)]
    run = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "killed 1 of 1 mutants" in run.stdout
    assert [r["outcome"] for r in json.loads(outcomes.read_text())] == ["failed"]
    again = subprocess.run([*command, "--resume"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert "1 mutants' outcomes kept" in again.stdout and "killed 1 of 1 mutants" in again.stdout


def test_the_config_names_existing_tests_and_lines_of_today(bench):
    """An equivalent entry whose line is gone would silently never match again; a config
    that does not parse stops every run."""
    import tomllib

    config = tomllib.loads((ROOT / "bench" / "mutation.toml").read_text())
    for module, entry in config["modules"].items():
        lines = {line.strip() for line in (ROOT / module).read_text().splitlines()}
        for test in entry["tests"]:
            assert (ROOT / test.split("::")[0]).exists(), f"{module}: no test file {test}"
        for argued in entry.get("equivalent", []):
            assert argued["code"].strip() in lines, f"{module}: no line {argued['code']!r}"
            assert argued["reason"].strip(), f"{module}: {argued['code']!r} has no reason"
