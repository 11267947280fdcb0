"""The README and the documentation pages name only files that exist.

Every path of the repository the README or a page of ``docs/`` mentions (``cltr/...py``,
``tests/...py``, ``bench/...py``, ``experiments/...toml``, ``docs/...md``, and the like)
is looked up from the repository root; a file moved or deleted without its sentence fails
here.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").rglob("*.md"))

# a repository path: one of the project's top folders, then a file with a known suffix;
# not part of a longer path (../shared/..., ~/cltr-work/...) and not a glob
PATH = re.compile(r"(?<![\w./~-])((?:cltr|tests|bench|experiments|docs|\.ci)/[\w./-]*\.(?:py|toml|md|cfg|txt))\b")


def named_paths(text: str) -> list[tuple[int, str]]:
    """``(line number, path)`` of every repository path in ``text``."""
    return [
        (number, match.group(1))
        for number, line in enumerate(text.splitlines(), start=1)
        for match in PATH.finditer(line)
    ]


def test_the_pattern_finds_paths_and_only_paths():
    text = (
        "see `cltr/core/ranking.py` and tests/core/test_ranking.py;\n"
        "run python bench/deep.py --compare, spec experiments/table2.toml\n"
        "data in ../shared/data/letor4/MQ2008/Fold1/test.txt, workspace ~/cltr-work/x.py, cltr/ alone\n"
        "[the tutorial](docs/tutorials/default.md), a page's [link](../reference/cli.md)\n"
    )
    assert [p for _, p in named_paths(text)] == [
        "cltr/core/ranking.py",
        "tests/core/test_ranking.py",
        "bench/deep.py",
        "experiments/table2.toml",
        "docs/tutorials/default.md",
    ]


def test_every_file_the_readme_names_exists():
    named = named_paths(README.read_text(encoding="utf-8"))
    assert len(named) > 20  # the README does name many files: the pattern still finds them
    missing = [f"README.md line {number}: {path}" for number, path in named if not (ROOT / path).exists()]
    assert not missing, "\n".join(missing)


def test_every_file_the_docs_name_exists():
    assert len(PAGES) > 10  # the docs tree is there
    named = [(page, number, path) for page in PAGES for number, path in named_paths(page.read_text(encoding="utf-8"))]
    assert len(named) > 40  # the pages do name many files: the pattern still finds them
    missing = [
        f"{page.relative_to(ROOT)} line {number}: {path}" for page, number, path in named if not (ROOT / path).exists()
    ]
    assert not missing, "\n".join(missing)


def test_the_readme_fits_on_two_screens_and_opens_with_the_two_commands():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines: move detail into docs/"
    commands = [line.split("#")[0].strip() for line in lines[:5] if line.startswith("    ")]
    # the first installs and runs the main job; the second installs and runs the tests (.ci/run runs it)
    assert commands == ["pip install . && cltr run", 'pip install ".[test]" && python -m pytest -q']
    assert "python -m pytest -q" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
