"""Regression EM cut into chunks of whole queries (cltr.core.chunked_em) against the
in-process EM (cltr.core.propensity.em_propensities), which is its oracle: the same
estimate, band and diagnostics to 1e-8, on the local engine with several chunk counts and
on a dask LocalCluster."""

import numpy as np
import pytest

from cltr.core.chunked import LocalMapper
from cltr.core.chunked_em import chunked_em_propensities, em_chunk_cells, em_chunk_summary
from cltr.core.propensity import em_propensities

# the estimates agree to rounding (sums over chunks in another order): 1e-8 is far above the
# ~1e-13 seen and far below any difference a wrong sum or a different EM path would make
ATOL = 1e-8


def _em_table(seed=0, n_queries=30, depth=6, rankers=2):
    """A PBM log: each query's documents shown by a feature ranker and (rankers 2) a random
    permutation, relevance logistic in three features; query ids not in row order."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * depth, 3))
    w = np.array([1.0, -0.5, 0.3])
    theta = 1.0 / np.arange(1, depth + 1) ** 0.8
    rows = []
    for q in range(n_queries):
        docs = q * depth + np.arange(depth)
        for ranker in range(rankers):
            order = rng.permutation(docs) if ranker else docs[np.argsort(-(X[docs] @ w))]
            shown = rng.integers(5, 30)
            for r, d in enumerate(order, start=1):
                p = theta[r - 1] / (1.0 + np.exp(-(X[d] @ w - 0.5)))
                rows.append((500 - 3 * q, d, r, shown, rng.binomial(shown, p)))
    columns = np.array(rows).T
    return dict(zip(("query", "doc", "rank", "impressions", "clicks"), columns, strict=True)), X


def _assert_same(got, want):
    np.testing.assert_allclose(got.propensity, want.propensity, rtol=0, atol=ATOL)
    np.testing.assert_allclose(got.low, want.low, rtol=0, atol=ATOL)
    np.testing.assert_allclose(got.high, want.high, rtol=0, atol=ATOL)
    assert set(got.info) - {"chunks"} == set(want.info)  # a field added in process must be added here too
    for key, value in want.info.items():
        if isinstance(value, (float, list)):
            np.testing.assert_allclose(got.info[key], value, rtol=1e-10, atol=ATOL, err_msg=key)
        else:
            assert got.info[key] == value, key


@pytest.mark.parametrize("chunks", [1, 3, 7])
@pytest.mark.parametrize("band", ["refit", "one-step"])
def test_chunked_em_gives_the_in_process_estimate(chunks, band):
    table, X = _em_table()
    want = em_propensities(**table, X=X, bootstrap=8, band=band, rng=0)
    got = chunked_em_propensities(**table, X=X, chunks=chunks, mapper=LocalMapper(), bootstrap=8, band=band, rng=0)
    assert got.info["chunks"] == chunks
    assert want.info["newton_steps"] > 0 and want.info["converged"]
    _assert_same(got, want)


@pytest.mark.parametrize(
    "options",
    [
        {"l2": 0.0, "newton_steps": 3, "max_rank": 4},  # unpenalised, several IRLS steps a M-step, rows cut by rank
        # stopped before convergence: the same iterate, not just the same fixed point
        {"iterations": 3},
        {"iterations": 2, "newton_steps": 3, "l2": 5.0},
    ],
)
def test_chunked_em_follows_the_in_process_path_under_other_options(options):
    table, X = _em_table(seed=3, n_queries=25)
    want = em_propensities(**table, X=X, bootstrap=0, rng=0, **options)
    got = chunked_em_propensities(**table, X=X, chunks=4, mapper=LocalMapper(), bootstrap=0, rng=0, **options)
    _assert_same(got, want)


def test_a_single_rankers_log_gives_the_in_process_diagnostics():
    # no document moves between ranks: rank_variation 0, the identification check's other branch
    table, X = _em_table(seed=4, rankers=1)
    X[:, 2] = 7.0  # a constant feature is dropped from the standardised features in both
    want = em_propensities(**table, X=X, bootstrap=0, rng=0)
    got = chunked_em_propensities(**table, X=X, chunks=5, mapper=LocalMapper(), bootstrap=0, rng=0)
    assert want.info["rank_variation"] == 0.0 and want.info["features"] == 2
    _assert_same(got, want)


def test_a_chunk_summary_counts_moved_units_by_a_loop():
    table, X = _em_table(seed=5, n_queries=4, depth=3)
    from cltr.core.clicks import Impressions

    t = Impressions(
        query=table["query"],
        doc=table["doc"],
        rank=table["rank"],
        ranker=np.zeros_like(table["rank"]),
        impressions=table["impressions"],
        clicks=table["clicks"],
    )
    summary = em_chunk_summary(em_chunk_cells((t, X, np.arange(len(X))), max_rank=3))
    want = np.zeros((2, 3))
    for q, d in set(zip(table["query"], table["doc"], strict=True)):
        mine = (table["query"] == q) & (table["doc"] == d)
        moved = len(set(table["rank"][mine])) > 1
        for r, n in zip(table["rank"][mine], table["impressions"][mine], strict=True):
            want[int(moved), r - 1] += n
    np.testing.assert_array_equal(summary["impressions"], want)
    assert summary["queries"] == 4 and summary["units"] == 12


def test_chunked_em_names_what_is_wrong():
    table, X = _em_table(seed=6, n_queries=6)
    bad = X.copy()
    bad[int(table["doc"][5])] = np.nan
    with pytest.raises(ValueError, match=f"row {int(table['doc'][5])} of X"):
        chunked_em_propensities(**table, X=bad, chunks=2, mapper=LocalMapper(), bootstrap=0, rng=0)
    no_clicks = {**table, "clicks": np.zeros_like(table["clicks"])}
    with pytest.raises(ValueError, match="no clicks"):
        chunked_em_propensities(**no_clicks, X=X, chunks=2, mapper=LocalMapper(), bootstrap=0, rng=0)
    with pytest.raises(ValueError, match="chunks must be an integer >= 1"):
        chunked_em_propensities(**table, X=X, chunks=0, mapper=LocalMapper(), bootstrap=0, rng=0)
    with pytest.raises(ValueError, match="band must be"):
        chunked_em_propensities(**table, X=X, chunks=2, mapper=LocalMapper(), band="x", rng=0)


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("dask.distributed")
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


def test_chunked_em_on_a_dask_cluster_gives_the_in_process_estimate(dask_client):
    from cltr.distributed import DaskMapper

    table, X = _em_table(seed=7, n_queries=20)
    want = em_propensities(**table, X=X, bootstrap=4, rng=1)
    got = chunked_em_propensities(**table, X=X, chunks=3, mapper=DaskMapper(dask_client), bootstrap=4, rng=1)
    _assert_same(got, want)
    local = chunked_em_propensities(**table, X=X, chunks=3, mapper=LocalMapper(), bootstrap=4, rng=1)
    np.testing.assert_array_equal(got.propensity, local.propensity)  # the same chunks add up to the same bits
