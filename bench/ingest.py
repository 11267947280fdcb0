"""Time and memory of SVMlight ingest (`load_svmlight_split`) on Yahoo-shaped files.

    python bench/ingest.py [--sizes 150 300 585] [--out DIR] [--dtype float32] [--compression gz]

Writes seeded files of the Yahoo! shape (24 documents a query, 100 features on every line
with 6 decimals, labels 0-4, a LETOR-style ``#docid = ...`` comment on each line) of about
the given sizes in MB (whole queries, so a little more), then reads each in a fresh
subprocess and prints: size, rows, wall seconds of the call, user+sys CPU seconds of the
call (both threads), MB/s, the child's peak RSS (``ru_maxrss`` from ``wait4``, and
``VmHWM``, which counts only pages touched after exec), the final arrays (X, labels, qid,
offsets and the document ids with their strings) and peak / final. ``baseline`` is the peak
of a child that only imports numpy and cltr. Files just written are in the page cache; the
machine's other load shows in wall seconds, not in CPU seconds.
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import json
import lzma
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DOCS = 24
FEATURES = 100
DECIMALS = 6
_OPENERS = {"none": open, "gz": gzip.open, "bz2": bz2.open, "xz": lzma.open}


def _feature_template() -> tuple[np.ndarray, np.ndarray]:
    """The bytes `` 1:0.000000 2:0.000000 ...`` of one line and the positions of its digits."""
    pieces, digits, length = [], [], 0
    for j in range(1, FEATURES + 1):
        head = f" {j}:0."
        pieces.append(head + "0" * DECIMALS)
        digits.extend(range(length + len(head), length + len(head) + DECIMALS))
        length += len(head) + DECIMALS
    return np.frombuffer("".join(pieces).encode(), dtype=np.uint8), np.array(digits)


def write_yahoo_like(
    path: Path, megabytes: float, *, seed: int = 0, compression: str = "none", chunk_queries: int = 250
) -> dict:
    """Write whole queries until about ``megabytes`` MB of (uncompressed) text; return counts."""
    rng = np.random.default_rng(seed)
    template, digit_at = _feature_template()
    powers = 10 ** np.arange(DECIMALS - 1, -1, -1)
    target, written, n_queries = megabytes * 1e6, 0, 0
    with _OPENERS[compression](path, "wb") as stream:
        while written < target:
            n = chunk_queries * DOCS
            values = rng.integers(0, 10**DECIMALS, size=(n, FEATURES))
            matrix = np.tile(template, (n, 1))
            matrix[:, digit_at] = (48 + (values[:, :, None] // powers) % 10).reshape(n, -1)
            features = matrix.tobytes()
            width = template.size
            labels = rng.integers(0, 5, size=n).tolist()
            serial = rng.integers(0, 10**7, size=n).tolist()
            lines = []
            for row in range(n):
                query = n_queries + row // DOCS + 1
                lines.append(
                    b"%d qid:%d%s #docid = GX%03d-%02d-%07d\n"
                    % (
                        labels[row],
                        query,
                        features[row * width : (row + 1) * width],
                        query % 1000,
                        row % DOCS,
                        serial[row],
                    )
                )
            block = b"".join(lines)
            stream.write(block)
            written += len(block)
            n_queries += chunk_queries
    return {"queries": n_queries, "rows": n_queries * DOCS, "bytes": written, "file_bytes": path.stat().st_size}


_CHILD = """
import json, resource, sys, time
import numpy as np
from cltr.data.svmlight import load_svmlight_split
path, dtype, n_features, out = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
if path == "-":
    json.dump({}, open(out, "w")); sys.exit(0)
before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
queries, provenance = load_svmlight_split(path, n_features=None if n_features == "0" else int(n_features),
                                          label_range=(0, 4), dtype=np.dtype(dtype))
wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF)
docid = queries.docid
final = queries.X.nbytes + queries.labels.nbytes + queries.qid.nbytes + queries.offsets.nbytes
if docid is not None:
    final += docid.nbytes + sum(sys.getsizeof(d) for d in docid.tolist() if d is not None)
hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM")][0]
json.dump({"wall": wall, "cpu": after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime,
           "hwm": int(hwm.split()[1]) * 1024,
           "rows": queries.n_docs, "X": queries.X.nbytes, "final": final,
           "bytes": provenance["bytes"], "shape": list(queries.X.shape)}, open(out, "w"))
"""


def measure(path: str, dtype: str, n_features: int, workdir: Path) -> dict:
    """Run one load in a fresh interpreter; its own figures plus its peak RSS from wait4."""
    out = workdir / "child.json"
    process = subprocess.Popen([sys.executable, "-c", _CHILD, path, dtype, str(n_features), str(out)])
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"the load of {path} failed (exit code {process.returncode})")
    result = json.loads(out.read_text())
    result["peak"] = usage.ru_maxrss * 1024  # Linux reports kilobytes
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[150, 300, 585], help="File sizes in MB.")
    parser.add_argument("--out", type=Path, default=None, help="Directory for the files [a temporary one].")
    parser.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    parser.add_argument(
        "--features", type=int, default=FEATURES, help="n_features passed to the loader (0: the largest index)."
    )
    parser.add_argument("--compression", choices=sorted(_OPENERS), default="none")
    parser.add_argument("--keep", action="store_true", help="Keep the generated files.")
    parser.add_argument("--write", nargs=2, metavar=("PATH", "MB"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write:
        print(json.dumps(write_yahoo_like(Path(args.write[0]), float(args.write[1]), compression=args.compression)))
        return
    temporary = None
    if args.out is None:
        temporary = tempfile.TemporaryDirectory(prefix="cltr-ingest-")
        args.out = Path(temporary.name)
    args.out.mkdir(parents=True, exist_ok=True)
    suffix = "" if args.compression == "none" else f".{args.compression}"
    baseline = measure("-", args.dtype, args.features, args.out)["peak"]
    print(
        f"Yahoo-shaped files: {DOCS} docs a query, {FEATURES} features a line, docid comments; "
        f"dtype {args.dtype}, compression {args.compression}, {os.cpu_count()} CPUs; "
        f"baseline peak (imports only) {baseline / 1e6:.0f} MB"
    )
    print(
        f"{'size MB':>8} {'rows':>9} {'wall s':>7} {'cpu s':>7} {'MB/s':>6} {'peak MB':>8} {'VmHWM MB':>9} "
        f"{'final MB':>9} {'peak/final':>10} {'(peak-base)/final':>18}"
    )
    for size in args.sizes:
        path = args.out / f"yahoo-like-{size:g}MB.txt{suffix}"
        start = time.perf_counter()
        # in a child: a fork starts with its parent's resident pages, which would count in
        # the peak of the next child if this process had grown while writing the file
        generator = subprocess.run(
            [sys.executable, __file__, "--write", str(path), str(size), "--compression", args.compression],
            check=True,
            capture_output=True,
        )
        written = json.loads(generator.stdout)
        generated = time.perf_counter() - start
        result = measure(str(path), args.dtype, args.features, args.out)
        megabytes = written["bytes"] / 1e6
        print(
            f"{megabytes:8.0f} {result['rows']:9d} {result['wall']:7.2f} {result['cpu']:7.2f} "
            f"{megabytes / result['wall']:6.1f} {result['peak'] / 1e6:8.0f} {result['hwm'] / 1e6:9.0f} "
            f"{result['final'] / 1e6:9.0f} "
            f"{result['peak'] / result['final']:10.2f} {(result['peak'] - baseline) / result['final']:18.2f}"
            f"   (written in {generated:.0f} s)",
            flush=True,
        )
        if not args.keep:
            path.unlink()
    if temporary is not None and not args.keep:
        temporary.cleanup()


if __name__ == "__main__":
    main()
