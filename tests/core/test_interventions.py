"""Swap and top-K randomization interventions, and the swap estimator of propensities."""

import numpy as np
import pytest
from scipy.special import expit

from cltr.core.interventions import intervene, swap_propensities


def _ranking(sizes, rng):
    offsets = np.r_[0, np.cumsum(sizes)]
    rank = np.concatenate([rng.permutation(n) + 1 for n in sizes]).astype(np.int64)
    return rank, offsets


@pytest.mark.parametrize("kind", ["swap-k", "randomize-top-k"])
def test_interventions_permute_only_the_top_ranks(kind):
    rng = np.random.default_rng(0)
    sizes = np.array([1, 2, 5, 12, 0, 7])
    rank, offsets = _ranking(sizes, rng)
    moved = np.zeros(len(rank), dtype=bool)
    for _ in range(200):
        shown = intervene(rank, offsets, kind=kind, depth=4, rng=rng)
        for q in range(len(sizes)):
            part = slice(offsets[q], offsets[q + 1])
            assert sorted(shown[part]) == list(range(1, sizes[q] + 1))
        deep = rank > 4
        np.testing.assert_array_equal(shown[deep], rank[deep])
        if kind == "swap-k":  # at most the documents at rank 1 and one partner move
            changed = shown != rank
            assert np.all(rank[changed & (shown == 1)] <= 4) and np.all(rank[changed & (shown != 1)] == 1)
        moved |= shown != rank
    # every top-4 document of a query with >= 2 documents moves some time; a lone document never
    top4 = (rank <= 4) & (np.repeat(sizes, sizes) >= 2)
    assert np.all(moved[top4]) and not np.any(moved[~top4])


def test_swap_partner_is_uniform():
    rng = np.random.default_rng(1)
    rank, offsets = np.arange(1, 11), np.array([0, 10])
    where_top = np.array([intervene(rank, offsets, kind="swap-k", depth=5, rng=rng)[0] for _ in range(5000)])
    counts = np.bincount(where_top, minlength=6)[1:]
    assert np.all(np.abs(counts / 5000 - 0.2) < 0.025), counts


def _swap_log(n_queries, n_docs, *, eta, sessions, depth, kind, rng):
    """Impression table of a swap (or randomization) log on one deterministic ranker, position-
    based clicks with relevance decreasing down the ranking (what makes naive ratios wrong)."""
    sizes = np.full(n_queries, n_docs)
    offsets = np.r_[0, np.cumsum(sizes)]
    rank = np.tile(np.arange(1, n_docs + 1), n_queries)
    relevance = expit(rng.normal(size=len(rank)) + 1.0 - 0.4 * rank)
    rows = {name: [] for name in ("query", "doc", "rank", "impressions", "clicks")}
    query = np.repeat(np.arange(n_queries), n_docs)
    for _ in range(sessions):
        shown = intervene(rank, offsets, kind=kind, depth=depth, rng=rng)
        rows["query"].append(query)
        rows["doc"].append(np.arange(len(rank)))
        rows["rank"].append(shown)
        rows["impressions"].append(np.ones(len(rank), dtype=np.int64))
        rows["clicks"].append(rng.random(len(rank)) < (1.0 / shown) ** eta * relevance)
    return {name: np.concatenate(v).astype(np.int64) for name, v in rows.items()}


@pytest.mark.parametrize("kind", ["swap-k", "randomize-top-k"])
def test_swap_estimator_recovers_the_truth_within_its_band(kind):
    # (1/k)^1.5 at ranks 2-6 lies inside the 95% band, and the estimate within 25% of it; the
    # naive click-rate ratio of the unswapped ranking is far off (relevance falls with rank).
    rng = np.random.default_rng(2)
    table = _swap_log(400, 8, eta=1.5, sessions=30, depth=6, kind=kind, rng=rng)
    est = swap_propensities(**table, max_rank=6, bootstrap=200, level=0.95, rng=3)
    truth = (1.0 / np.arange(1, 7)) ** 1.5
    assert est.method == "swap-intervention" and est.propensity[0] == 1.0
    assert np.all((est.low <= truth) & (truth <= est.high)), (est.low, truth, est.high)
    assert np.all(np.abs(est.propensity / truth - 1.0) < 0.25), est.propensity
    assert np.all(est.high[1:] - est.low[1:] < 0.5 * truth[1:])


@pytest.mark.parametrize("kind", ["swap-k", "randomize-top-k"])
def test_swap_band_covers_the_truth_at_its_level(kind):
    # 40 small logs; pooled over ranks 2-6 (200 correlated events) the 90% band must cover
    # (1/k) at a rate in [0.78, 0.97]: for a near-normal estimate a band half as wide covers
    # about 60%, one twice as wide nearly 100%. bench/propensity_coverage.py measures every
    # rank over 200 MQ2008 logs (88.7-90.2% there for swap and randomize, docs/how-to/propensities.md).
    covered = np.zeros(6)
    truth = 1.0 / np.arange(1, 7)
    for rep in range(40):
        rng = np.random.default_rng([7, rep])
        table = _swap_log(150, 6, eta=1.0, sessions=20, depth=6, kind=kind, rng=rng)
        est = swap_propensities(**table, max_rank=6, bootstrap=60, level=0.9, rng=rng)
        covered += (est.low <= truth) & (truth <= est.high)
    assert covered[0] == 40
    assert 0.78 <= covered[1:].sum() / 200 <= 0.97, covered


def test_swap_estimator_by_hand_and_its_errors():
    # One query, two documents. d0 at rank 1: 4 clicks in 10; at rank 2: 1 in 5. d1 at rank 2:
    # 2 in 10; at rank 1: 3 in 5. p_2 = (1/5 + 2/10) / (4/10 + 3/5) = 0.4.
    table = {
        "query": [0, 0, 0, 0],
        "doc": [0, 0, 1, 1],
        "rank": [1, 2, 2, 1],
        "impressions": [10, 5, 10, 5],
        "clicks": [4, 1, 2, 3],
    }
    est = swap_propensities(**table, bootstrap=0, rng=0)
    np.testing.assert_allclose(est.propensity, [1.0, 0.4])
    assert est.info["pairs"] == [0, 2]
    with pytest.raises(ValueError, match="rank 3 has no"):
        swap_propensities(
            query=[0, 0, 0], doc=[0, 0, 1], rank=[1, 2, 3], impressions=[5, 5, 5], clicks=[1, 1, 1], bootstrap=0, rng=0
        )
    with pytest.raises(ValueError, match="never clicked there"):
        swap_propensities(**{**table, "clicks": [0, 1, 2, 0]}, bootstrap=0, rng=0)
    with pytest.raises(ValueError, match="unknown intervention"):
        intervene(np.array([1, 2]), np.array([0, 2]), kind="shuffle", depth=2, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="depth must be"):
        intervene(np.array([1, 2]), np.array([0, 2]), kind="swap-k", depth=1, rng=np.random.default_rng(0))
