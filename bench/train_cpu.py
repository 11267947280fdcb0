"""CPU and wall time of single `cltr train` runs on the embedded default, for one or more
checkouts of the code side by side (e.g. today's and an earlier commit's).

    python bench/train_cpu.py [--methods tree-propdcg,deep-propdcg] [--code DIR ...]
        [--repeats 2] [--workdir DIR]

Each ``--code`` directory is a checkout of cltr (``git worktree add /tmp/old COMMIT``); it
runs with that directory first on PYTHONPATH (default: this checkout). Per checkout, a
workspace gets the default dataset, production ranker and clicks (``cltr prepare
synthetic``, ``produce``, ``simulate``: the usage example's eta 1, eps- 0.1), then each
method is trained ``--repeats`` times in turn, checkouts interleaved so that a busy machine
weighs on each alike; every training deletes its cached model first. Prints the CPU seconds
(the command and its threads: user + system of the child) and the wall seconds of each,
and per method the ratio of each checkout's median CPU to the first's.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def cltr(code: Path, workdir: Path, *args: str) -> tuple[float, float]:
    """Run ``cltr ARGS`` with ``code`` first on the path; (CPU seconds, wall seconds)."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "cltr", "--workdir", str(workdir), *args], env=env, check=True, stdout=subprocess.DEVNULL
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", default="tree-propdcg,deep-propdcg")
    parser.add_argument("--code", type=Path, action="append", default=None)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args(argv)
    codes = args.code or [HERE]
    root = Path(tempfile.mkdtemp(prefix="cltr-train-cpu-")) if args.workdir is None else args.workdir
    spaces = {code: root / f"ws{i}" for i, code in enumerate(codes)}
    for code, space in spaces.items():
        for step in (["prepare", "synthetic"], ["produce"], ["simulate", "--eta", "1", "--eps-neg", "0.1"]):
            cltr(code, space, *step)
    results: dict[tuple[str, Path], list[tuple[float, float]]] = {}
    for method in args.methods.split(","):
        for repeat in range(args.repeats):
            for code, space in spaces.items():
                for models in space.glob("*/models"):
                    shutil.rmtree(models)  # train afresh, not from the cache
                cpu, wall = cltr(code, space, "train", method)
                results.setdefault((method, code), []).append((cpu, wall))
                print(
                    f"{method:<16} {str(code):<40} repeat {repeat + 1}: {cpu:7.1f} s CPU, {wall:7.1f} s wall",
                    flush=True,
                )
    print()
    for method in args.methods.split(","):
        first = statistics.median(c for c, _ in results[(method, codes[0])])
        for code in codes:
            cpu = statistics.median(c for c, _ in results[(method, code)])
            wall = statistics.median(w for _, w in results[(method, code)])
            print(
                f"{method:<16} {str(code):<40} median {cpu:7.1f} s CPU ({cpu / first:.2f} of the first), "
                f"{wall:7.1f} s wall"
            )
    if args.workdir is None:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
