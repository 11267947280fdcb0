"""The raw Baidu-ULTR reader's pyarrow path returns exactly what the line-by-line reader
returns, and declines every partition that the line-by-line reader would refuse, so that
the line-by-line reader names the line."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from cltr.data import baidu
from cltr.data.baidu_generator import write_raw_partitions

pytest.importorskip("pyarrow")

FIELDS = ("session", "qid", "url", "rank", "click", "dwell", "first_click", "last_click")


def _line_by_line(path, monkeypatch, first_session=0):
    with monkeypatch.context() as patch:
        patch.setattr(baidu, "_read_with_arrow", lambda *args, **kwargs: None)
        return baidu.read_raw_partition(path, first_session=first_session)


def _same(fast, slow):
    for name in FIELDS:
        a, b = getattr(fast, name), getattr(slow, name)
        assert a.dtype == b.dtype and a.shape == b.shape, name
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), name
    assert (fast.n_sessions, fast.n_lines) == (slow.n_sessions, slow.n_lines)


@pytest.mark.parametrize("compressed", [True, False])
@pytest.mark.parametrize("newline", [b"\n", b"\r\n"])
def test_the_arrow_path_reads_what_the_line_reader_reads(compressed, newline, tmp_path, monkeypatch):
    truth = write_raw_partitions(
        tmp_path, n_queries=8, sessions_per_query=12, missing_rate=0.1, others_rate=0.5, seed=3
    )
    path = truth.paths[0]
    text = gzip.open(path).read().replace(b"\n", newline)
    target = tmp_path / ("part-x.gz" if compressed else "part-x")
    target.write_bytes(gzip.compress(text) if compressed else text)
    fast = baidu._read_with_arrow(target, gzipped=compressed, first_session=5)
    assert fast is not None
    _same(fast, _line_by_line(target, monkeypatch, first_session=5))
    assert len(fast.rank) and (np.diff(fast.rank)[np.diff(fast.session) == 0] > 1).any()  # a rank gap was read


def _document(position=b"1", url=b"a", *, click=b"0", title=b"7\x018", dwell=b"12", first=b"0", last=b"-"):
    fields = [b"0"] * 32
    fields[0], fields[1], fields[2], fields[5] = position, url, title, click
    fields[16], fields[12], fields[28] = dwell, first, last
    return b"\t".join(fields)


@pytest.mark.parametrize(
    "line",
    [
        b"1\t2",  # another field count
        b"",  # an empty line
        _document(position=b"0"),  # position out of 1..30
        _document(position=b"-"),
        _document(click=b"2"),
        _document(click=b"x"),
        _document(dwell=b"-3"),  # negative
        _document(first=b""),  # empty, not "-"
        _document(url=b""),
    ],
)
def test_the_arrow_path_declines_what_the_line_reader_refuses(line, tmp_path, monkeypatch):
    path = tmp_path / "part-00003.gz"
    path.write_bytes(gzip.compress(b"\n".join([b"1\tq\t-", _document(), line, _document(b"3", b"c")]) + b"\n"))
    assert baidu._read_with_arrow(path, gzipped=True, first_session=0) is None
    with pytest.raises(ValueError, match=r"part-00003.gz: line 3: "):
        baidu.read_raw_partition(path)


def test_a_bad_query_id_or_a_document_before_any_session_is_the_line_reader_s_to_name(tmp_path):
    for lines, where in (
        ([b"x1\tq\t-", _document()], "line 2: its session's query id"),
        ([_document(), b"1\tq\t-"], "line 1: a document line"),
    ):
        path = tmp_path / "part-00004.gz"
        path.write_bytes(gzip.compress(b"\n".join(lines) + b"\n"))
        assert baidu._read_with_arrow(path, gzipped=True, first_session=0) is None
        with pytest.raises(ValueError, match=where):
            baidu.read_raw_partition(path)
