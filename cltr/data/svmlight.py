"""SVMlight / LETOR files: one split streamed, checked line by line, into ``Queries``.

The file (plain, .gz, .bz2 or .xz) is read, decompressed and hashed in blocks of whole
lines on a helper thread, while the main thread parses each block with numpy and writes
its rows straight into the dense ``X``. Time is linear in the size of the file and memory
is the final arrays plus a few blocks. Lines whose every token has the common form
(decimal numbers, ``qid:<digits>``, ``<digits>:<number>``) are parsed in bulk; a block with
any other line is parsed line by line in Python, which finds and names the first line that
does not parse.

This module reads files but never prints or shows progress.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import lzma
import os
import queue
import re
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import Any

import numpy as np

from cltr.core.queries import Queries, label_counts
from cltr.core.resources import exceeds_memory

__all__ = ["load_svmlight_split", "find_split_file", "BLOCK_SIZE"]

# -- SVMlight / LETOR files --------------------------------------------------------------

_OPENERS = {  # each wraps the open raw file, whose position tells how much was read
    ".gz": lambda raw: gzip.GzipFile(fileobj=raw, mode="rb"),
    ".bz2": lambda raw: bz2.BZ2File(raw, "rb"),
    ".xz": lambda raw: lzma.LZMAFile(raw, "rb"),
}
_SUFFIXES = ("", ".gz", ".bz2", ".xz")
_DECOMPRESSION_ERRORS = (OSError, EOFError, lzma.LZMAError, zlib.error)

BLOCK_SIZE = 1 << 20
"""Bytes read at a time (1 MiB): large enough that per-block overheads vanish (larger
blocks are no faster), small enough that the blocks in flight and the temporaries of one
block's parse (about 15 times its size) are small next to ``X``."""

# The data part of a line that the bulk parser accepts. A value that matches _NUMBER is
# either one decimal number, which numpy's text parser and Python's float() read to the
# same double (both round correctly), or has no digit before its exponent ('', '.', '-',
# 'e5'), which stops numpy's parser and so shows as too few numbers. Integers have at most
# 15 digits, so that reading them as doubles is exact. Anything else (nan, inf, '+1', '1_0',
# a negative index, ...) sends its block to the line parser.
_SPACE = rb"[ \t\r\x0b\x0c]"
_NUMBER = rb"-?\d*+\.?\d*+(?:[eE][-+]?\d++)?+"
# Possessive quantifiers (a third faster): each part ends where a different kind of byte
# begins, so giving characters back could never make a line match.
_BULK_LINE = re.compile(
    _SPACE
    + rb"*+(?:-?\d{1,15}+(?:\.\d*+)?+"
    + _SPACE
    + rb"++qid:\d{1,15}+(?:"
    + _SPACE
    + rb"++\d{1,9}+:"
    + _NUMBER
    + rb")*+"
    + _SPACE
    + rb"*+)?+"
)
_DOCID = re.compile(rb"docid\s*=\s*(\S+)")
_BLANK_QID = bytes.maketrans(b"qid:", b"    ")


# Byte-order marks: UTF-8's is skipped (editors on Windows write it); the others mean an
# encoding whose every ASCII character comes with NUL bytes, which no line would parse in.
_UTF8_BOM = b"\xef\xbb\xbf"
_WIDE_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32 (little-endian)"),
    (b"\x00\x00\xfe\xff", "UTF-32 (big-endian)"),
    (b"\xff\xfe", "UTF-16 (little-endian)"),
    (b"\xfe\xff", "UTF-16 (big-endian)"),
)
_SNIFF_BYTES = 4


def _after_byte_order_mark(data: bytes, name: str) -> bytes:
    """The start of a file's content without a UTF-8 byte-order mark; a ValueError naming the
    encoding for UTF-16 and UTF-32, with or without their mark."""
    if data.startswith(_UTF8_BOM):
        return data[len(_UTF8_BOM) :]
    how = "SVMlight files are ASCII or UTF-8: convert it first, e.g. `iconv -f UTF-16 -t UTF-8`"
    for mark, encoding in _WIDE_BOMS:
        if data.startswith(mark):
            raise ValueError(f"{name}: the file is encoded as {encoding} (it begins with that byte-order mark); {how}")
    end = data.find(b"\n")
    if b"\x00" in data[: end if end >= 0 else len(data)]:
        raise ValueError(
            f"line 1 of {name}: NUL bytes between the characters: the file looks encoded as UTF-16 "
            f"or UTF-32 without a byte-order mark; {how}"
        )
    return data


def _show(token: bytes) -> str:
    text = token.decode("utf-8", "replace")
    return repr(text if len(text) <= 40 else text[:37] + "...")


def _is_int(token: bytes) -> bool:
    try:
        int(token)
    except ValueError:
        return False
    return True


def _is_float(token: bytes) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _line_problem(tokens: list[bytes]) -> str | None:
    """What is wrong with one data line (its tokens), or None; mirrors sklearn's grammar."""
    if not _is_float(tokens[0]):
        return f"the label {_show(tokens[0])} is not a number"
    if len(tokens) < 2 or not tokens[1].startswith(b"qid"):
        found = _show(tokens[1]) if len(tokens) > 1 else "the end of the line"
        return f"expected 'qid:<integer>' after the label, found {found}; every row must name its query"
    key, colon, value = tokens[1].partition(b":")
    if key != b"qid" or not colon or not _is_int(value):
        return f"cannot read {_show(tokens[1])} as 'qid:<integer>'"
    previous = None
    for token in tokens[2:]:
        index, colon, value = token.partition(b":")
        if index == b"qid":
            return f"{_show(token)} must come right after the label"
        if not colon:
            return f"cannot read {_show(token)} as '<index>:<value>'"
        if not _is_int(index):
            return f"the feature index of {_show(token)} is not an integer (expected '<index>:<value>')"
        if not _is_float(value):
            return f"the feature value of {_show(token)} is not a number (expected '<index>:<value>')"
        if int(index) < 0:
            return f"feature index {int(index)} is negative; feature indices are 1-based"
        if previous is not None and int(index) <= previous:
            return f"feature indices must increase along a line; {int(index)} follows {previous}"
        previous = int(index)
    return None


class _BadLine(ValueError):
    """A line that does not parse (reported before any other problem of the file)."""


_MAX_INDEX = 2**31 - 1  # sklearn's, and the old reader's, limit on a feature index


# -- one block of whole lines -> flat arrays ---------------------------------------------


@dataclass
class _Block:
    """The data rows of a block of lines, flat (``n`` rows, ``nnz`` stored features)."""

    labels: np.ndarray  # float64, shape (n,)
    qid: np.ndarray  # int64, shape (n,)
    line: np.ndarray  # int64, shape (n,): index of each row's line within the block
    sizes: np.ndarray  # int64, shape (n,): stored features of each row
    index: np.ndarray  # int64, shape (nnz,): feature index as written (1-based)
    value: np.ndarray  # float64, shape (nnz,)


def _parse_bulk(text: bytes, data: list[bytes]) -> _Block | None:
    """Parse a block whose lines (``data``: comments removed) all match ``_BULK_LINE``.

    ``text`` is the same lines joined by whitespace. Returns None when the bulk parser
    cannot vouch for the result (a line of another form, indices that do not increase), so
    that the line parser decides.
    """
    if not all(map(_BULK_LINE.fullmatch, data)):
        return None
    colons = np.fromiter(map(bytes.count, data, repeat(b":")), dtype=np.int64, count=len(data))
    line = np.flatnonzero(colons)  # a matching line has a colon iff it holds a row
    sizes = colons[line] - 1
    n_rows = line.size
    # After the regex, q, i and d only spell 'qid', and the digits right before a colon are
    # a feature index (or there are none: the colon of 'qid:'). The indices are read here,
    # then blanked with the colons and 'qid', so that numpy parses only labels, qids and
    # values (half the numbers).
    raw = np.frombuffer(text, dtype=np.uint8)
    colon = np.flatnonzero(raw == ord(":"))
    blanked = np.frombuffer(bytearray(text.translate(_BLANK_QID)), dtype=np.uint8)
    index = np.zeros(colon.size, dtype=np.int64)
    alive, scale, feature = np.ones(colon.size, dtype=bool), 1, None
    for back in range(1, 10):  # at most 9 digits
        at = np.maximum(colon - back, 0)
        digit = raw[at] - np.uint8(ord("0"))  # wraps below '0': one comparison tests a digit
        alive &= digit < 10
        if feature is None:
            feature = alive.copy()
        if not alive.any():
            break
        index[alive] += digit[alive].astype(np.int64) * scale
        blanked[at[alive]] = ord(" ")
        scale *= 10
    index = index[feature]
    if index.size != int(sizes.sum()):
        return None
    try:
        numbers = np.fromstring(blanked.tobytes(), dtype=np.float64, sep=" ")
    except ValueError:  # a value with no digit: numpy stops there (and says so)
        return None
    if numbers.size != 2 * n_rows + index.size:
        return None
    starts = 2 * np.arange(n_rows) + np.concatenate([[0], np.cumsum(sizes[:-1])])
    header = np.zeros(numbers.size, dtype=bool)
    header[starts] = True
    header[starts + 1] = True
    if index.size > 1:
        row = np.repeat(np.arange(n_rows), sizes)
        if np.any((index[1:] <= index[:-1]) & (row[1:] == row[:-1])):
            return None
    return _Block(
        labels=numbers[starts],
        qid=numbers[starts + 1].astype(np.int64),
        line=line,
        sizes=sizes,
        index=index,
        value=numbers[~header],
    )


def _parse_lines(data: list[bytes], name: str, first_line: int) -> _Block:
    """Parse a block line by line in Python with sklearn's grammar (``int``, ``float``).

    Raises the ``ValueError`` of ``_line_problem`` for the first line that does not parse.
    """
    labels, qid, line, sizes, index, value = [], [], [], [], [], []
    for number, text in enumerate(data):
        tokens = text.split()
        if not tokens:
            continue
        problem = _line_problem(tokens)
        if problem is not None:
            raise _BadLine(f"line {first_line + number} of {name}: {problem}")
        labels.append(float(tokens[0]))
        qid.append(int(tokens[1][4:]))
        line.append(number)
        sizes.append(len(tokens) - 2)
        for token in tokens[2:]:
            position, _, content = token.partition(b":")
            index.append(min(int(position), _MAX_INDEX + 1))  # larger ones are rejected later
            value.append(float(content))
    try:
        return _Block(
            labels=np.array(labels, dtype=np.float64),
            qid=np.array(qid, dtype=np.int64),
            line=np.array(line, dtype=np.int64),
            sizes=np.array(sizes, dtype=np.int64),
            index=np.array(index, dtype=np.int64),
            value=np.array(value, dtype=np.float64),
        )
    except OverflowError as error:  # a qid beyond 64 bits
        raise _BadLine(f"{name}: not a readable SVMlight file ({error})") from None


def _docids(comments: list[bytes | None], line: np.ndarray) -> list[str | None] | None:
    """The ``docid = X`` value of each row's comment (None where there is none)."""
    found = []
    for number in line.tolist():
        comment = comments[number]
        match = _DOCID.search(comment) if comment else None
        found.append(match.group(1).decode("utf-8", "replace") if match else None)
    return found if any(docid is not None for docid in found) else None


# -- reading: blocks of uncompressed bytes, hashed on the way -----------------------------


class _Reader:
    """Blocks of the uncompressed content of a file, read on a helper thread.

    File reads, zlib, bz2, lzma and sha256 release the GIL, so the decompression and the
    hash overlap with parsing. Iterating yields ``(chunk, compressed_bytes_read)``; after
    the last chunk ``sha256`` and ``n_bytes`` describe the whole content.
    """

    def __init__(self, path: Path, block_size: int):
        self.path, self.block_size = path, block_size
        self.compression = path.suffix.lower()[1:] if path.suffix.lower() in _OPENERS else None
        self.raw = open(path, "rb")
        try:
            opener = _OPENERS.get(path.suffix.lower())
            self.stream = opener(self.raw) if opener is not None else self.raw
            self.file_size = os.fstat(self.raw.fileno()).st_size
        except BaseException:
            self.raw.close()
            raise
        self.digest = hashlib.sha256()
        self.n_bytes = 0
        self.chunks: queue.Queue = queue.Queue(maxsize=2)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="svmlight-reader", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while not self.stop.is_set():
                chunk = self.stream.read(self.block_size)
                if not chunk:
                    break
                self.digest.update(chunk)
                self.n_bytes += len(chunk)
                self._put((chunk, self.raw.tell()))
            self._put(None)
        except BaseException as error:  # handed to the main thread, which raises it
            self._put(error)

    def _put(self, item) -> None:
        while not self.stop.is_set():
            try:
                self.chunks.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def __iter__(self):
        while True:
            item = self.chunks.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                if self.compression is not None and isinstance(item, _DECOMPRESSION_ERRORS):
                    raise ValueError(f"{self.path}: cannot decompress it as {self.compression} ({item})") from item
                raise item
            yield item

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.stream.close()
        self.raw.close()

    def __enter__(self) -> _Reader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# -- the split being built ----------------------------------------------------------------


class _Split:
    """Rows of a split as they arrive, block by block, written into a preallocated ``X``.

    ``X`` is allocated zeroed for an estimate of the rows (untouched pages of a zeroed
    allocation take no memory, so a generous estimate costs nothing) and shrunk in place at
    the end. When ``n_features`` is not given, its width follows the largest index so far.
    """

    def __init__(self, name: str, n_features: int | None, dtype: np.dtype):
        self.name, self.n_features, self.dtype = name, n_features, dtype
        self.X = np.zeros((0, n_features or 0), dtype=dtype)
        self.n_rows = 0
        self.n_lines = 0
        self.max_index = 0
        self.labels: list[np.ndarray] = []
        self.qid: list[np.ndarray] = []
        self.line: list[np.ndarray] = []
        self.docid: list[tuple[int, list]] = []
        self.first: dict[str, tuple[int, str]] = {}  # kind of bad entry -> (row, message)
        self.oversized: int | None = None  # first row with an index above _MAX_INDEX

    def add_lines(self, block: bytes, estimate_bytes: float, bytes_so_far: int) -> None:
        """Parse one block of whole lines (the last may lack its newline) and store its rows.

        ``estimate_bytes`` is the expected size of the whole content and ``bytes_so_far``
        the bytes up to the end of this block: they size ``X`` when it must grow.
        """
        lines = block.split(b"\n")
        if block.endswith(b"\n"):
            lines.pop()
        first_line = self.n_lines + 1
        self.n_lines += len(lines)
        if b"#" in block:  # sklearn's rule: a line's data ends at its first '#'
            parts = [line.partition(b"#") for line in lines]
            data = [part[0] for part in parts]
            comments = [part[2] if part[1] else None for part in parts]
            text = b"\n".join(data)
        else:
            data, comments, text = lines, None, block
        parsed = _parse_bulk(text, data) or _parse_lines(data, self.name, first_line)
        self._store(parsed, first_line, estimate_bytes, bytes_so_far)
        if comments is not None and parsed.line.size:
            docid = _docids(comments, parsed.line)
            if docid is not None:
                self.docid.append((self.n_rows - parsed.line.size, docid))

    def _store(self, block: _Block, first_line: int, estimate_bytes: float, bytes_so_far: int) -> None:
        n = block.labels.size
        if n == 0:
            return
        rows = np.repeat(np.arange(self.n_rows, self.n_rows + n), block.sizes)
        index, value = block.index, block.value
        huge = index > _MAX_INDEX
        if huge.any():  # noted, and left out of X; the split is rejected at the end
            if self.oversized is None:
                self.oversized = int(rows[np.argmax(huge)])
            rows, index, value = rows[~huge], index[~huge], value[~huge]
        self._note_first(
            "zero",
            rows,
            index == 0,
            lambda at: f"feature index 0 is out of range; feature indices are 1-based (1..{self.n_features or 'n'})",
        )
        if self.n_features is not None:
            self._note_first(
                "above",
                rows,
                index > self.n_features,
                lambda at: f"feature index {index[at]} is out of range; expected 1..{self.n_features}",
            )
        read = value  # float64, as written
        finite = np.isfinite(read)
        self._note_first(
            "finite",
            rows,
            ~finite,
            lambda at: f"feature {index[at]} has the value {read[at]}; feature values must be finite",
        )
        with np.errstate(over="ignore"):
            value = read.astype(self.dtype, copy=False)
        if self.dtype.itemsize < 8:
            self._note_first(
                "overflow",
                rows,
                finite & np.isinf(value),
                lambda at: (
                    f"feature {index[at]} has the value {read[at]}, beyond the "
                    f"range of {self.dtype}; read the file as float64"
                ),
            )
        if index.size:
            self.max_index = max(self.max_index, int(index.max()))
        needed_width = self.n_features if self.n_features is not None else self.max_index
        if needed_width > self.X.shape[1]:
            self._check_width(block, first_line, rows, index, needed_width, estimate_bytes, bytes_so_far)
        self._reserve(self.n_rows + n, needed_width, estimate_bytes, bytes_so_far)
        width = self.X.shape[1]
        keep = (index >= 1) & (index <= width)
        if not keep.all():  # such a split is rejected at the end; its X does not matter
            rows, index, value = rows[keep], index[keep], value[keep]
        self.X.reshape(-1)[rows * width + (index - 1)] = value
        self.labels.append(block.labels)
        self.qid.append(block.qid)
        self.line.append(first_line + block.line)
        self.n_rows += n

    def _check_width(
        self,
        block: _Block,
        first_line: int,
        rows: np.ndarray,
        index: np.ndarray,
        width: int,
        estimate_bytes: float,
        bytes_so_far: int,
    ) -> None:
        """Refuse a width whose dense X cannot fit in memory, naming the line and the index
        that set it: X is dense, so one typo ``100000000:1`` sizes every row (it made the
        reader ask for 763 GiB). With ``n_features`` given such an index is out of range
        instead, as ``cltr score`` reports it."""
        n_rows = self.n_rows + block.labels.size
        expected = max(n_rows, int(n_rows * max(estimate_bytes, bytes_so_far) / max(bytes_so_far, 1)))
        shortfall = exceeds_memory(float(expected) * width * self.dtype.itemsize)
        if shortfall is None:
            return
        at = int(np.argmax(index))
        line = first_line + int(block.line[rows[at] - self.n_rows])
        raise _BadLine(
            f"line {line} of {self.name}: feature index {index[at]} is out of range: it makes X "
            f"{width:,} columns wide, and a dense X of the file's {expected:,} rows (estimated) at that "
            f"width would need {shortfall}; feature indices are 1-based column numbers (a typo?), and "
            f"with the width given (n_features, --features N) a larger one is reported as out of range"
        )

    def _note_first(self, kind: str, rows: np.ndarray, bad: np.ndarray, message) -> None:
        if kind not in self.first:
            found = np.flatnonzero(bad)
            if found.size:
                self.first[kind] = (int(rows[found[0]]), message(found[0]))

    def _reserve(self, n_rows: int, width: int, estimate_bytes: float, bytes_so_far: int) -> None:
        capacity, current = self.X.shape
        if n_rows <= capacity and width <= current:
            return
        if n_rows > capacity:
            # rows expected in the whole file at the density seen so far, with a margin
            expected = int(1.25 * n_rows * max(estimate_bytes, bytes_so_far) / max(bytes_so_far, 1))
            # at least 1024 rows, or 64 MiB of a very wide X: zeroed pages cost nothing until
            # written, but the address space is reserved, and 1024 rows of width 1e8 are 763 GiB
            floor = max(1, min(1024, (1 << 26) // max(width * self.dtype.itemsize, 1)))
            capacity = max(expected, n_rows + n_rows // 4, floor)
        if width > current and self.n_rows:  # widen by a quarter at least: few re-layouts
            width = max(width, current + current // 4)
        grown = np.zeros((capacity, width), dtype=self.dtype)
        grown[: self.n_rows, :current] = self.X[: self.n_rows]
        self.X = grown

    def finish_X(self, width: int) -> np.ndarray:
        """``X`` of shape (n_rows, width), shrunk in place (no copy of the rows)."""
        X = self.X
        del self.X  # no second reference: the rows are shrunk in place and handed over
        allocated = X.shape[1]
        if width < allocated:  # move rows to the narrower layout, front to back, in place
            flat = X.reshape(-1)
            step = max(1, (1 << 22) // max(allocated, 1))
            for start in range(0, self.n_rows, step):
                stop = min(self.n_rows, start + step)
                flat[start * width : stop * width].reshape(stop - start, width)[...] = flat[
                    start * allocated : stop * allocated
                ].reshape(stop - start, allocated)[:, :width]
            del flat
        X.resize((self.n_rows, width), refcheck=False)
        return X

    def finish_docid(self) -> np.ndarray | None:
        if not self.docid:
            return None
        docid = np.full(self.n_rows, None, dtype=object)
        for start, values in self.docid:
            docid[start : start + len(values)] = values
        return docid


def load_svmlight_split(
    path: str | os.PathLike,
    *,
    n_features: int | None = None,
    label_range: tuple[int, int] | None = None,
    dtype: Any = np.float64,
    block_size: int = BLOCK_SIZE,
    progress: Callable[[str, int, int], None] | None = None,
) -> tuple[Queries, dict]:
    """Read one SVMlight/LETOR file into a checked ``Queries``, streamed in blocks.

    Each data line is ``label qid:N index:value ... [# comment]`` with 1-based, strictly
    increasing feature indices (omitted features are 0). Blank lines and lines holding only
    a ``#`` comment are skipped but counted in line numbers. A comment holding
    ``docid = X`` (as LETOR's do) gives the row's document id. The file may be plain or
    compressed; ``.gz``, ``.bz2`` and ``.xz`` are read with the matching standard module.
    Time is linear in the size of the file; peak memory is the returned arrays plus a few
    blocks.

    Parameters
    ----------
    path : str or path-like
        The file.
    n_features : int, optional
        Width of ``X``; a feature index above it is an error. Default: the largest index
        in the file.
    label_range : (int, int), optional
        Inclusive range the labels must lie in, e.g. ``(0, 2)`` for LETOR 4.0, ``(0, 4)``
        for Yahoo!. Labels must be integers in any case.
    dtype : numpy float dtype
        Dtype of ``X`` (float64 by default; float32 halves its memory). Values are read as
        float64 and rounded once to ``dtype``.
    block_size : int
        Bytes of uncompressed content read at a time (a block is cut at its last newline).
    progress : callable (path, bytes_read, file_size), optional
        Called after each block with the bytes of the file (compressed, if it is) read so far.

    Returns
    -------
    queries : Queries
        ``X`` dense, shape (n_rows, n_features); ``labels`` int64, shape (n_rows,);
        ``qid`` int64, shape (n_queries,) in file order; ``offsets``, shape (n_queries + 1,);
        ``docid`` object array of str (None for a row without one), shape (n_rows,), or
        None when no line names a document id.
    provenance : dict
        ``path``, ``compression``, ``sha256`` and ``bytes`` of the uncompressed content,
        ``n_lines``, ``n_rows``, ``n_queries``, ``n_features`` (width of ``X``),
        ``max_feature_index`` (largest index present) and ``label_counts``.

    Raises
    ------
    FileNotFoundError
        If ``path`` is not a file.
    ValueError
        Naming the file and the 1-based line: a line that does not parse, a row without
        ``qid``, a query whose rows are not contiguous, a feature index of 0 or above
        ``n_features``, a value that is not finite, a label that is not an integer or is
        outside ``label_range``; or a file with no data row, or one that does not
        decompress. A line that does not parse is reported before the other problems, the
        earliest of those first.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"SVMlight file not found: {path}")
    if n_features is not None and (isinstance(n_features, bool) or int(n_features) != n_features or n_features < 1):
        raise ValueError(f"n_features must be a positive integer, found {n_features!r}")
    if label_range is not None and not label_range[0] <= label_range[1]:
        raise ValueError(f"label_range must be (low, high) with low <= high, found {label_range!r}")
    try:
        dtype = np.dtype(dtype)
    except TypeError as error:
        raise ValueError(f"dtype must be a float dtype (float32 or float64), found {dtype!r}") from error
    if dtype.kind != "f":
        raise ValueError(f"dtype must be a float dtype (float32 or float64), found {dtype}")
    if isinstance(block_size, bool) or int(block_size) != block_size or block_size < 1:
        raise ValueError(f"block_size must be a positive integer, found {block_size!r}")
    name = str(path)
    split = _Split(name, None if n_features is None else int(n_features), dtype)
    bad_line: ValueError | None = None
    with _Reader(path, int(block_size)) as reader:
        pending, consumed, started = b"", 0, False
        for chunk, compressed_read in reader:
            consumed += len(chunk)
            if progress is not None:
                progress(name, compressed_read, reader.file_size)
            if bad_line is not None:
                continue  # read on: a file that does not decompress is reported first, as before
            data = pending + chunk if pending else chunk
            if not started:
                if len(data) < _SNIFF_BYTES:  # too little to tell a byte-order mark yet
                    pending = data
                    continue
                data, started = _after_byte_order_mark(data, name), True
            cut = data.rfind(b"\n") + 1
            pending = data[cut:]
            if cut:
                # the whole content, extrapolated from the compression ratio so far
                expected = reader.file_size * consumed / max(compressed_read, 1)
                try:
                    split.add_lines(data[:cut] if pending else data, expected, consumed - len(pending))
                except _BadLine as error:
                    bad_line = error
        if pending and bad_line is None:
            if not started:
                pending = _after_byte_order_mark(pending, name)
            try:
                split.add_lines(pending, consumed, consumed)
            except _BadLine as error:
                bad_line = error
        sha256, n_bytes = reader.digest.hexdigest(), reader.n_bytes
    if bad_line is not None:
        raise ValueError(str(bad_line)) from None

    n_rows, n_lines = split.n_rows, split.n_lines
    if n_rows == 0:
        raise ValueError(
            f"{name}: no data rows in its {n_lines} lines; a split must hold at least one query (an empty split)"
        )
    y = np.concatenate(split.labels)
    qid = np.concatenate(split.qid)
    row_line = np.concatenate(split.line)
    if split.oversized is not None:  # the old reader could not read it at all: reported first
        raise ValueError(
            f"line {row_line[split.oversized]} of {name}: a feature index is too large; "
            f"feature indices must be at most {_MAX_INDEX}"
        )
    problems: list[tuple[int, str]] = [
        split.first[kind] for kind in ("zero", "above", "finite", "overflow") if kind in split.first
    ]  # (row, message): earliest reported
    bad = np.flatnonzero(~np.isfinite(y) | (y != np.round(y)))
    if bad.size:
        problems.append((int(bad[0]), f"label {y[bad[0]]:g} is not an integer; labels are integer relevance grades"))
    if label_range is not None:
        low, high = label_range
        bad = np.flatnonzero((y < low) | (y > high))
        if bad.size:
            problems.append((int(bad[0]), f"label {y[bad[0]]:g} is outside the allowed range {low}..{high}"))
    starts = np.flatnonzero(np.concatenate([[True], qid[1:] != qid[:-1]]))
    run_qid = qid[starts]
    _, first_run = np.unique(run_qid, return_index=True)
    if first_run.size < run_qid.size:
        repeated = np.ones(run_qid.size, dtype=bool)
        repeated[first_run] = False
        run = int(np.flatnonzero(repeated)[0])
        problems.append(
            (
                int(starts[run]),
                f"qid {run_qid[run]} reappears after qid {run_qid[run - 1]}; a query's rows must be contiguous",
            )
        )
    if problems:
        row, message = min(problems, key=lambda problem: problem[0])
        raise ValueError(f"line {row_line[row]} of {name}: {message}")

    width = int(n_features) if n_features is not None else split.max_index
    labels = y.astype(np.int64)
    queries = Queries(
        X=split.finish_X(width),
        labels=labels,
        qid=run_qid.astype(np.int64),
        offsets=np.concatenate([starts, [n_rows]]).astype(np.int64),
        docid=split.finish_docid(),
    )
    provenance = {
        "path": name,
        "compression": reader.compression,
        "sha256": sha256,
        "bytes": n_bytes,
        "n_lines": int(n_lines),
        "n_rows": int(n_rows),
        "n_queries": int(queries.n_queries),
        "n_features": width,
        "max_feature_index": split.max_index,
        "label_counts": label_counts(labels),
    }
    return queries, provenance


def find_split_file(directory: Path, filename: str) -> Path:
    """``directory/filename``, plain or with a .gz, .bz2 or .xz suffix: exactly one of them.

    Two copies (``train.txt`` beside ``train.txt.xz``, say) are an error, not a choice: one
    may be a stale or half-written decompression of the other, and nothing tells which.
    """
    found = [directory / (filename + suffix) for suffix in _SUFFIXES if (directory / (filename + suffix)).is_file()]
    if len(found) > 1:
        raise ValueError(
            f"{directory} holds {' and '.join(path.name for path in found)}: more than one copy of "
            f"{filename}, which may differ; remove all but one (cltr does not guess which is current)"
        )
    if not found:
        raise FileNotFoundError(f"no {filename} (nor {filename}.gz, .bz2, .xz) in {directory}")
    return found[0]
