"""A Parquet click log read chunk by chunk where it is computed (cltr.data.parquet_log): the
estimate of the log imported whole, on the local engine and on a dask LocalCluster; the
index's row groups; errors named by file and row."""

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from cltr.core.chunked import LocalMapper  # noqa: E402
from cltr.core.propensity import harvest_propensities  # noqa: E402
from cltr.core.queries import Queries  # noqa: E402
from cltr.data.clicklog import read_click_log  # noqa: E402
from cltr.data.parquet_log import harvest_parquet_log, index_click_log, plan_chunks  # noqa: E402


def _split(seed=0, n_queries=30):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 9, size=n_queries)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    labels = rng.integers(0, 3, size=offsets[-1])
    qid = 1000 - 7 * np.arange(n_queries)  # query ids not in query order
    return Queries(X=np.zeros((offsets[-1], 1)), labels=labels, qid=qid, offsets=offsets)


def _log(queries, *, seed=0, passes=6, by_query=False) -> dict:
    """Sessions of two rankers (string values) on every query, position-based clicks."""
    rng = np.random.default_rng(seed)
    sizes = np.diff(queries.offsets)
    rows = []
    for p in range(passes):
        for q in range(queries.n_queries):
            order = rng.permutation(sizes[q]) if p % 2 else np.arange(sizes[q])
            for r, d in enumerate(order, start=1):
                seen = rng.random() < 1.0 / r
                click = int(seen and rng.random() < (0.9 if queries.labels[queries.offsets[q] + d] else 0.1))
                rows.append((f"s{p}-{q}", int(queries.qid[q]), int(d), r, click, 1.0 / r, "ab"[p % 2]))
    if by_query:
        rows.sort(key=lambda row: (-row[1], row[0]))  # a log written query by query
    return {
        name: [row[i] for row in rows]
        for i, name in enumerate(("session", "qid", "doc", "rank", "click", "propensity", "ranker"))
    }


def _write(path, columns, row_group_size=50):
    pq.write_table(pa.table(columns), path, row_group_size=row_group_size)
    return path


def _in_memory(path, queries, **options):
    t = read_click_log(path, queries).impressions()
    return harvest_propensities(t.query, t.doc, t.rank, t.ranker, t.impressions, t.clicks, **options)


@pytest.mark.parametrize("by_query", [False, True])
@pytest.mark.parametrize("chunks", [1, 3])
def test_the_chunks_read_from_the_file_give_the_estimate_of_the_whole_import(tmp_path, chunks, by_query):
    queries = _split()
    path = _write(tmp_path / "log.parquet", _log(queries, by_query=by_query))
    want = _in_memory(path, queries, max_rank=6, bootstrap=20, rng=0)
    # 37 rows a batch: sessions cut across batches and row groups are completed by the next
    got = harvest_parquet_log(
        path, queries, chunks=chunks, mapper=LocalMapper(), max_rank=6, bootstrap=20, rng=0, batch_rows=37
    )
    assert got.info["chunks"] == chunks
    assert got.info["rows"] == len(read_click_log(path, queries).doc)
    for name in ("propensity", "low", "high"):
        np.testing.assert_allclose(getattr(got, name), getattr(want, name), rtol=0, atol=1e-8)
    for key in ("queries", "intervention_docs", "rank_pairs", "sessions", "iterations"):
        assert got.info[key] == want.info[key]


def test_a_log_written_query_by_query_gives_each_chunk_its_own_row_groups(tmp_path):
    queries = _split()
    by_query = _write(tmp_path / "q.parquet", _log(queries, by_query=True), row_group_size=40)
    by_pass = _write(tmp_path / "p.parquet", _log(queries), row_group_size=40)
    index = index_click_log(by_query, queries)
    assert index.rows == index.group_rows.sum() == index.rows_per_query.sum()
    np.testing.assert_array_equal(index.rows_per_query, 6 * np.diff(queries.offsets))
    specs = plan_chunks(index, 4)
    assert [s.first for s in specs] == sorted(s.first for s in specs) and specs[-1].stop == queries.n_queries
    # a chunk reads its own row groups, and at most the one it shares at each end with the next
    read = sum(len(s.groups) for s in specs)
    assert read <= len(index.group_rows) + 2 * (len(specs) - 1)
    for path in (by_query, by_pass):
        # with fewer queries than bitmap blocks, a chunk reads exactly the row groups holding
        # a row of its queries: those of a brute-force scan
        file, found = pq.ParquetFile(path), index_click_log(path, queries)
        position = {int(q): i for i, q in enumerate(queries.qid)}
        holds = [
            {position[int(q)] for q in file.read_row_group(g, columns=["qid"]).column(0).to_pylist()}
            for g in range(file.num_row_groups)
        ]
        for spec in plan_chunks(found, 4):
            want = [g for g, held in enumerate(holds) if any(spec.first <= q < spec.stop for q in held)]
            assert spec.groups.tolist() == want
    rows = [int(index.rows_per_query[s.first : s.stop].sum()) for s in specs]
    assert max(rows) - min(rows) <= 2 * int(index.rows_per_query.max())  # about equal rows, whole queries


def test_bad_rows_are_named_by_file_and_row(tmp_path):
    queries = _split()
    columns = _log(queries, passes=2)
    bad = dict(columns, qid=list(columns["qid"]))
    bad["qid"][70] = 5
    path = _write(tmp_path / "qid.parquet", bad)
    with pytest.raises(ValueError, match=r"row 71 of .*qid\.parquet: qid 5 is not a query of this split"):
        harvest_parquet_log(path, queries, chunks=2, mapper=LocalMapper(), max_rank=6, bootstrap=0, rng=0)
    bad = dict(columns, rank=list(columns["rank"]))
    last = len(bad["rank"]) - 1  # a row of the last query's chunk, read after others were kept out
    bad["rank"][last] = 99
    path = _write(tmp_path / "rank.parquet", bad)
    with pytest.raises(ValueError, match=rf"row {last + 1} of .*rank\.parquet: rank 99 is beyond the"):
        harvest_parquet_log(
            path, queries, chunks=3, mapper=LocalMapper(), max_rank=6, bootstrap=0, rng=0, batch_rows=16
        )
    # filled for the first queries' chunk, empty for the others': each chunk alone is consistent
    half = dict(
        columns, propensity=[None if q < 900 else v for q, v in zip(columns["qid"], columns["propensity"], strict=True)]
    )
    path = _write(tmp_path / "half.parquet", half)
    with pytest.raises(ValueError, match="the propensity cell is empty while other rows have one"):
        harvest_parquet_log(path, queries, chunks=3, mapper=LocalMapper(), max_rank=6, bootstrap=0, rng=0)
    clicked = {
        name: [v for v, c in zip(values, columns["click"], strict=True) if c] for name, values in columns.items()
    }
    path = _write(tmp_path / "clicked.parquet", clicked)
    with pytest.raises(ValueError, match="clicked rows only"):
        harvest_parquet_log(path, queries, chunks=2, mapper=LocalMapper(), max_rank=6, bootstrap=0, rng=0)
    tsv = tmp_path / "log.tsv"
    tsv.write_text("session\tqid\tdoc\trank\tclick\n")
    with pytest.raises(ValueError, match="must be a Parquet table"):
        harvest_parquet_log(tsv, queries, chunks=2, mapper=LocalMapper(), max_rank=6, bootstrap=0, rng=0)


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("dask.distributed")
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


def test_a_dask_cluster_reads_the_chunks_and_gives_the_estimate_of_the_whole_import(tmp_path, dask_client):
    from cltr.distributed import DaskMapper

    queries = _split(seed=3)
    path = _write(tmp_path / "log.parquet", _log(queries, seed=3))
    want = _in_memory(path, queries, max_rank=6, bootstrap=10, rng=1)
    got = harvest_parquet_log(
        path, queries, chunks=3, mapper=DaskMapper(dask_client), max_rank=6, bootstrap=10, rng=1, batch_rows=50
    )
    for name in ("propensity", "low", "high"):
        np.testing.assert_allclose(getattr(got, name), getattr(want, name), rtol=0, atol=1e-8)
