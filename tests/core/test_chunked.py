"""The chunked SVM (cltr.core.chunked): per-chunk sums against a double loop over the pairs,
the solver against OCAS's certificate, and a dask LocalCluster against the in-process loop."""

import numpy as np
import pytest

from cltr.core.ccp import propdcg_ccp
from cltr.core.chunked import ChunkedProblem, chunk_planes, chunk_weights, split_queries
from cltr.core.objectives import rank_weight
from cltr.core.svm import PairwiseProblem, pairwise_objective, solve_pairwise_svm


def _problem(seed=0, n_queries=40, n_features=5, n_examples=200):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 9, size=n_queries)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    X = rng.normal(size=(offsets[-1], n_features))
    query = rng.integers(0, n_queries, size=n_examples)
    doc = offsets[query] + (rng.random(n_examples) * sizes[query]).astype(np.int64)
    cost = 1.0 / rng.uniform(0.1, 1.0, size=n_examples)
    return X, offsets, query, doc, cost


def _brute_force(w, X, offsets, query, doc, cost, C):
    """R(w) and the plane (b, g) at w by a double loop over examples and their pairs."""
    n = len(doc)
    risk, b, g = 0.0, 0.0, np.zeros(X.shape[1])
    for i in range(n):
        a = C * cost[i] / n
        for y in range(offsets[query[i]], offsets[query[i] + 1]):
            if y == doc[i]:
                continue
            d = X[doc[i]] - X[y]
            hinge = 1.0 - w @ d
            if hinge > 0:
                risk += a * hinge
                b += a
                g += a * d
    return risk, b, g


def test_split_queries_cuts_whole_queries_into_chunks_of_about_equal_work():
    X, offsets, query, doc, _ = _problem(n_queries=200, n_examples=2000)
    bounds = split_queries(offsets, query, 4)
    assert bounds[0] == 0 and bounds[-1] == 200 and np.all(np.diff(bounds) > 0)
    sizes = np.diff(offsets)
    work = np.bincount(query, minlength=200) * sizes + sizes
    shares = np.add.reduceat(work, bounds[:-1]) / work.sum()
    assert len(shares) == 4 and shares.max() < 0.25 + 0.05  # one query of ~0.5% of the work can tip a cut
    assert split_queries(offsets, query, 1000)[-1] == 200  # more chunks than queries: one query each at most
    with pytest.raises(ValueError, match="chunks must be an integer >= 1"):
        split_queries(offsets, query, 0)


def test_chunk_sums_equal_a_double_loop_over_the_pairs():
    X, offsets, query, doc, cost = _problem()
    C = 2.0
    problem = ChunkedProblem(X, offsets, query, doc, chunks=3)
    assert problem.n_chunks == 3
    rng = np.random.default_rng(1)
    points = rng.normal(size=(3, X.shape[1])) * 0.5
    weights = problem._weights(cost, C)
    b, g, risk = problem._evaluate(weights, points)
    for j, w in enumerate(points):
        want_risk, want_b, want_g = _brute_force(w, X, offsets, query, doc, cost, C)
        assert risk[j] == pytest.approx(want_risk, rel=1e-12)
        assert b[j] == pytest.approx(want_b, rel=1e-12)
        np.testing.assert_allclose(g[j], want_g, rtol=1e-10, atol=1e-12)
        # the plane touches R at its point (R(w) = b - g.w)
        assert b[j] - g[j] @ w == pytest.approx(risk[j], rel=1e-10)
    # ... and lies below it elsewhere
    for w in rng.normal(size=(5, X.shape[1])):
        r, _, _ = _brute_force(w, X, offsets, query, doc, cost, C)
        assert np.all(b - g @ w <= r + 1e-9)
    w = points[0]
    assert problem.objective(w, cost, C) == pytest.approx(
        pairwise_objective(w, X, offsets, query, doc, cost, C), rel=1e-12
    )
    np.testing.assert_allclose(
        problem.slack_sums(w), PairwiseProblem(X, offsets, query, doc).slack_sums(w), rtol=1e-12, atol=1e-12
    )


def test_chunk_weights_add_the_costs_of_one_documents_examples():
    X, offsets, query, doc, cost = _problem(n_examples=50)
    problem = ChunkedProblem(X, offsets, query, doc, chunks=1)
    chunk = problem.chunks[0]
    weight = chunk_weights(chunk, cost[problem.examples[0]], 0.5)
    for k, d in enumerate(chunk.problem.doc):
        assert weight[k] == pytest.approx(0.5 * cost[doc == d].sum())
    empty = ChunkedProblem(X, offsets, query[:0], doc[:0], chunks=2)
    b, g, risk = chunk_planes(empty.chunks[0], chunk_weights(empty.chunks[0], cost[:0], 1.0), np.ones((2, 5)))
    assert not b.any() and not g.any() and not risk.any()


@pytest.mark.parametrize("ranking", [False, True])
def test_the_chunked_solver_meets_ocas_within_both_certificates(ranking):
    X, offsets, query, doc, cost = _problem(seed=2)
    candidate = None
    if ranking:  # a full-information Ranking SVM: relevant documents against the others only
        relevant = np.zeros(len(X), dtype=bool)
        relevant[doc[::3]] = True
        doc = np.flatnonzero(relevant)
        query = np.searchsorted(offsets, doc, side="right") - 1
        cost, candidate = np.ones(len(doc)), ~relevant
    for C in (0.1, 10.0):
        tol = 1e-4
        ocas = solve_pairwise_svm(X, offsets, query, doc, cost, C, candidate=candidate, tol=tol)
        chunked = ChunkedProblem(X, offsets, query, doc, chunks=4, candidate=candidate).solve(cost, C, tol=tol)
        assert chunked.converged and chunked.gap <= tol
        # both lower bounds are certified: each one lies below the other's objective
        assert chunked.lower_bound <= ocas.objective * (1 + 1e-12)
        assert ocas.lower_bound <= chunked.objective * (1 + 1e-12)
        assert chunked.objective == pytest.approx(
            pairwise_objective(chunked.w, X, offsets, query, doc, cost, C, candidate=candidate), rel=1e-12
        )


def test_the_number_of_chunks_changes_the_model_by_rounding_only():
    X, offsets, query, doc, cost = _problem(seed=3)
    one = ChunkedProblem(X, offsets, query, doc, chunks=1).solve(cost, 1.0, tol=1e-5)
    five = ChunkedProblem(X, offsets, query, doc, chunks=5).solve(cost, 1.0, tol=1e-5)
    assert one.iterations == five.iterations
    np.testing.assert_allclose(five.w, one.w, rtol=0, atol=1e-8)


def test_ccp_runs_on_a_chunked_problem():
    X, offsets, query, doc, cost = _problem(seed=4)
    propensity = 1.0 / cost
    weight = rank_weight("dcg")
    plain = propdcg_ccp(X, offsets, query, doc, propensity, 1.0, weight, tol=1e-5, inner_tol=1e-5)
    chunked = propdcg_ccp(
        X,
        offsets,
        query,
        doc,
        propensity,
        1.0,
        weight,
        tol=1e-5,
        inner_tol=1e-5,
        problem=ChunkedProblem(X, offsets, query, doc, chunks=3),
    )
    objectives = [step.objective for step in chunked.trace]
    assert all(np.diff(objectives) <= 0)  # CCP never rises on chunks either
    # CCP's local optima of the two inner solvers may differ; the DCG bound they reach, barely
    assert chunked.objective == pytest.approx(plain.objective, rel=1e-3)


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("dask.distributed")
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


def test_a_dask_cluster_gives_the_in_process_model(dask_client):
    from cltr.distributed import DaskMapper

    X, offsets, query, doc, cost = _problem(seed=5)
    local = ChunkedProblem(X, offsets, query, doc, chunks=4)
    remote = ChunkedProblem(X, offsets, query, doc, chunks=4, mapper=DaskMapper(dask_client))
    assert remote.mapper.workers == 2
    for C in (0.1, 3.0):
        want = local.solve(cost, C, tol=1e-5)
        got = remote.solve(cost, C, tol=1e-5)
        assert got.iterations == want.iterations
        np.testing.assert_allclose(got.w, want.w, rtol=0, atol=1e-8)
        assert got.objective == pytest.approx(want.objective, rel=1e-12)
    weight = rank_weight("dcg")
    ccp = [propdcg_ccp(X, offsets, query, doc, 1.0 / cost, 1.0, weight, problem=p) for p in (local, remote)]
    np.testing.assert_allclose(ccp[1].w, ccp[0].w, rtol=0, atol=1e-8)


def _harvest_table(seed=6, n_queries=30, depth=6):
    """Two rankers showing each query's documents in different orders, clicks of a PBM."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_queries):
        for ranker in (0, 1):
            order = rng.permutation(depth)
            shown = rng.integers(20, 60)
            for r, d in enumerate(order, start=1):
                clicked = rng.binomial(shown, 0.8 / r * (0.2 + 0.8 * (d % 2)))
                rows.append((1000 - 7 * q, d, r, ranker, shown, clicked))  # query ids not in row order
    return dict(zip(("query", "doc", "rank", "ranker", "impressions", "clicks"), np.array(rows).T, strict=True))


@pytest.mark.parametrize("chunks", [1, 4])
def test_chunked_harvest_gives_the_in_process_estimate(chunks):
    from cltr.core.chunked import LocalMapper
    from cltr.core.chunked_propensity import chunked_harvest_propensities
    from cltr.core.propensity import harvest_propensities

    table = _harvest_table()
    want = harvest_propensities(**table, max_rank=6, bootstrap=20, rng=0)
    got = chunked_harvest_propensities(**table, chunks=chunks, mapper=LocalMapper(), max_rank=6, bootstrap=20, rng=0)
    assert got.info["chunks"] == chunks
    np.testing.assert_allclose(got.propensity, want.propensity, rtol=1e-10)
    np.testing.assert_allclose(got.low, want.low, rtol=1e-10)
    np.testing.assert_allclose(got.high, want.high, rtol=1e-10)
    for key in ("queries", "intervention_docs", "rank_pairs", "sessions", "iterations"):
        assert got.info[key] == want.info[key]
    one_ranker = {**table, "ranker": np.zeros_like(table["ranker"])}
    with pytest.raises(ValueError, match="at least 2 rankers"):
        chunked_harvest_propensities(**one_ranker, chunks=chunks, mapper=LocalMapper(), rng=0)


def test_harvest_on_a_dask_cluster_gives_the_in_process_estimate(dask_client):
    from cltr.core.chunked import LocalMapper
    from cltr.core.chunked_propensity import chunked_harvest_propensities
    from cltr.distributed import DaskMapper

    table = _harvest_table(seed=7)
    runs = [
        chunked_harvest_propensities(**table, chunks=3, mapper=mapper, max_rank=6, bootstrap=10, rng=1)
        for mapper in (LocalMapper(), DaskMapper(dask_client))
    ]
    np.testing.assert_allclose(runs[1].propensity, runs[0].propensity, rtol=0, atol=1e-12)
    np.testing.assert_allclose(runs[1].low, runs[0].low, rtol=0, atol=1e-12)


def test_a_malformed_scheduler_address_is_named_as_the_option():
    pytest.importorskip("distributed")
    from cltr.distributed import EngineOptions, engine

    with pytest.raises(ValueError, match="cannot reach the dask scheduler at foo"):
        with engine(EngineOptions(backend="dask", scheduler="foo")):
            pass
