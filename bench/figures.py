"""What `cltr figures` costs: wall time per spec, tasks and models computed, CPU by method.

    python bench/figures.py [--specs all | NAME,NAME,...] [--workdir DIR] [--n-jobs 2]
        [--quick] [--select repetition|pooled] [--tune repetition|once] [--dataset NAME]

With ``--specs all`` (the default) it runs ``cltr figures all`` as one command in a fresh
workspace (a temporary one unless ``--workdir`` is given; an existing one resumes and counts
only what it computes), exactly as a user would, and times it; named specs run one command
each, in the order given, in one workspace (tasks shared between specs are computed once,
by the first). Per spec it prints the wall time and the task counts the command printed;
then, from the workspace's model manifests (each stores the wall and CPU seconds its
training took), the models trained and their CPU by method: the figures that tell where
the next change should go.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

SPEC_LINE = re.compile(
    r"^(?P<tasks>\d+) tasks \((?P<computed>\d+) computed, (?P<reused>\d+) reused\) in "
    r"(?P<seconds>[\d.]+) s$"
)
HEADER = re.compile(r"^(?P<spec>[\w.-]+) \(.*\) on '")


def model_manifests(workdir: Path) -> dict[str, dict]:
    """Every model artifact's manifest in the workspace, by path."""
    return {str(path): json.loads(path.read_text()) for path in workdir.glob("*/models/*.json")}


def run(command: list[str]) -> tuple[float, list[str]]:
    """Run ``command``, echoing its output; its wall time and output lines."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    for line in process.stdout:
        if "\r" not in line:  # progress bars redraw with \r: keep the finished lines
            sys.stdout.write(line)
        lines.append(line.rstrip("\n").split("\r")[-1])
    if process.wait() != 0:
        raise SystemExit(f"{' '.join(command)} exited with {process.returncode}")
    return time.perf_counter() - start, lines


def spec_rows(lines: list[str]) -> list[dict]:
    """(spec, tasks, computed, reused, seconds) of each spec, from the command's output."""
    rows, current = [], None
    for line in lines:
        if (header := HEADER.match(line)) is not None:
            current = header["spec"]
        elif (found := SPEC_LINE.match(line.strip())) is not None and current is not None:
            rows.append(
                {"spec": current, **{k: float(v) if k == "seconds" else int(v) for k, v in found.groupdict().items()}}
            )
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", default="all", help="all (one `cltr figures all`) or NAME,NAME,...")
    parser.add_argument("--workdir", type=Path, default=None, help="workspace [default: a fresh temporary one]")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--select", choices=("repetition", "pooled"), default=None)
    parser.add_argument("--tune", choices=("repetition", "once"), default=None)
    parser.add_argument("--dataset", default=None)
    args = parser.parse_args(argv)

    temporary = tempfile.TemporaryDirectory(prefix="cltr-bench-figures-") if args.workdir is None else None
    workdir = Path(temporary.name) if temporary else args.workdir
    extra = [
        "--n-jobs",
        str(args.n_jobs),
        "--out",
        str(workdir / "results"),
        *(["--quick"] if args.quick else []),
        *(["--select", args.select] if args.select else []),
        *(["--tune", args.tune] if args.tune else []),
        *(["--dataset", args.dataset] if args.dataset else []),
    ]
    before = set(model_manifests(workdir))
    base = [sys.executable, "-m", "cltr", "--workdir", str(workdir), "figures"]
    names = ["all"] if args.specs == "all" else args.specs.split(",")
    total, rows = 0.0, []
    cpu_start = resource.getrusage(resource.RUSAGE_CHILDREN)
    for name in names:
        seconds, lines = run([*base, name, *extra])
        total += seconds
        found = spec_rows(lines)
        if name != "all" and found:
            found[-1]["seconds"] = seconds  # the whole command's, dataset generation and reports included
        rows.extend(found)

    cpu_end = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = (cpu_end.ru_utime - cpu_start.ru_utime) + (cpu_end.ru_stime - cpu_start.ru_stime)
    models = {path: m for path, m in model_manifests(workdir).items() if path not in before}
    cpu, wall, count = defaultdict(float), defaultdict(float), defaultdict(int)
    for manifest in models.values():
        method = manifest["config"]["method"]
        cpu[method] += manifest.get("cpu_seconds") or 0.0
        wall[method] += manifest.get("seconds") or 0.0
        count[method] += 1
    print()
    print(f"cltr figures {args.specs} ({' '.join(extra[:2] + extra[4:])}) in {workdir}")
    print(f"{'spec':<16}{'tasks':>7}{'computed':>10}{'reused':>8}{'seconds':>10}")
    for row in rows:
        print(f"{row['spec']:<16}{row['tasks']:>7}{row['computed']:>10}{row['reused']:>8}{row['seconds']:>10.1f}")
    print(
        f"total wall: {total:.1f} s ({total / 60:.1f} min); CPU of the commands and their workers: {used:.1f} s "
        f"({used / max(total, 1e-9):.2f} cores busy on average)"
    )
    spent = sum(cpu.values())
    print(f"\n{len(models)} models trained, {spent:.1f} s of training CPU (evaluation and simulation not included)")
    print(f"{'method':<22}{'models':>7}{'CPU s':>10}{'share':>8}{'wall s':>10}")
    for method in sorted(cpu, key=cpu.get, reverse=True):
        print(
            f"{method:<22}{count[method]:>7}{cpu[method]:>10.1f}{cpu[method] / max(spent, 1e-9):>8.1%}"
            f"{wall[method]:>10.1f}"
        )
    if temporary is not None:
        temporary.cleanup()


if __name__ == "__main__":
    main()
