"""Tests that kill the survivors of bench/mutation.py on cltr/core/interventions.py (each
names the mutant it kills); expected values are hand-computed."""

import numpy as np
import pytest

from cltr.core.interventions import intervene, swap_propensities


@pytest.mark.parametrize("kind", ["swap-k", "randomize-top-k"])
def test_depth_two_swaps_the_top_two_or_leaves_them(kind):
    # kills `depth < 2` -> `depth < 3`: K = 2 is the smallest intervention (the top two trade
    # places or not); the third document never moves
    rank, offsets = np.array([1, 2, 3]), np.array([0, 3])
    rng = np.random.default_rng(0)
    seen = {tuple(intervene(rank, offsets, kind=kind, depth=2, rng=rng)) for _ in range(50)}
    assert seen == {(1, 2, 3), (2, 1, 3)}  # each arm has probability 1/2: both occur in 50 draws


def test_the_missing_rank_named_is_the_first_without_a_pair():
    # kills `np.any(size[1:] == 0)` -> `size[2:]`: rank 2 has no (query, document) also shown
    # at rank 1 (only rank 3 has), which must be named as such, not reach the division
    table = {"query": [0, 0, 0], "doc": [0, 0, 1], "rank": [1, 3, 2], "impressions": [5, 5, 5], "clicks": [1, 1, 1]}
    with pytest.raises(ValueError, match="rank 2 has no"):
        swap_propensities(**table, bootstrap=0, rng=0)


def test_the_rank_never_clicked_at_one_is_named():
    # kills `... + 2` -> `+ 3` in the message: with ranks 1..3 identified through one pair
    # each, rank 3's pair (document 1) was never clicked at rank 1, rank 2's was
    table = {
        "query": [0, 0, 0, 0],
        "doc": [0, 0, 1, 1],
        "rank": [1, 2, 1, 3],
        "impressions": [5, 5, 5, 5],
        "clicks": [2, 1, 0, 1],
    }
    with pytest.raises(
        ValueError,
        match=r"rank 3: the documents also shown at rank 1 were never clicked there, "
        r"so p_3 / p_1",
    ):
        swap_propensities(**table, bootstrap=0, rng=0)


def test_a_document_id_shared_by_queries_counts_once_per_query():
    # kills `qi * len(docs) + di` -> `qi / len(docs) + di`: D_k holds (query, document) pairs.
    # Documents 0 and 1 (len(docs) = 2) under queries 0, 1, 2; the mutant's key q/2 + d makes
    # (query 0, doc 1) and (query 2, doc 0) one pair. Click rates at ranks 1 and 2:
    # (q0, d1) 4/10 and 2/10, (q1, d0) 5/10 and 1/10, (q2, d0) 2/10 and 2/10, so
    # p_2 = (0.2 + 0.1 + 0.2) / (0.4 + 0.5 + 0.2) = 5/11 (the mutant: 0.3 / 0.8)
    table = {
        "query": [0, 0, 1, 1, 2, 2],
        "doc": [1, 1, 0, 0, 0, 0],
        "rank": [1, 2, 1, 2, 1, 2],
        "impressions": [10] * 6,
        "clicks": [4, 2, 5, 1, 2, 2],
    }
    est = swap_propensities(**table, bootstrap=0, rng=0)
    np.testing.assert_allclose(est.propensity, [1.0, 5 / 11])
    assert est.info["pairs"] == [0, 3] and est.info["queries"] == 3


def test_the_band_by_hand_on_two_queries():
    # kills `rep_den > 0` -> `rep_den > 1` (either of the two): the replicates' denominators
    # here are sums of click rates below 1. Query A's pair has click rates 0.4 at rank 1 and
    # 0.2 at rank 2, query B's 0.2 and 0.05. A resample draws A m times of 2: its p_2 is
    # (0.2 m + 0.05 (2 - m)) / (0.4 m + 0.2 (2 - m)): 0.25, 5/12 or 0.5 for m = 0, 1, 2, with
    # probabilities 1/4, 1/2, 1/4. The 2.5% and 97.5% quantiles of 200 replicates are the
    # extremes 0.25 and 0.5 unless fewer than 6 of them land on one (expected 50; binomial
    # probability below 1e-15).
    table = {
        "query": [0, 0, 1, 1],
        "doc": [0, 0, 1, 1],
        "rank": [1, 2, 1, 2],
        "impressions": [20] * 4,
        "clicks": [8, 4, 4, 1],
    }
    est = swap_propensities(**table, bootstrap=200, level=0.95, rng=0)
    np.testing.assert_allclose(est.propensity, [1.0, 5 / 12])
    np.testing.assert_allclose(est.low[1:], [0.25])
    np.testing.assert_allclose(est.high[1:], [0.5])


_TWO_QUERIES = {
    "query": [0, 0, 1, 1],
    "doc": [0, 0, 1, 1],
    "rank": [1, 2, 1, 2],
    "impressions": [20] * 4,
    "clicks": [8, 4, 4, 1],
}


def test_the_band_defaults_to_200_resamples_and_rank_one_is_one():
    # kills `bootstrap: int = 200` -> `201` (the documented default) and the replicates'
    # rank-1 column `1.0` -> `2.0` (p_1 / p_1 is 1 in every replicate: a band of [1, 1])
    est = swap_propensities(**_TWO_QUERIES, rng=0)
    assert est.info["bootstrap"] == 200
    assert est.low[0] == 1.0 and est.high[0] == 1.0


def test_one_resample_gives_a_band_and_none_needs_no_generator():
    # kills `bootstrap > 0` -> `> 1`: one replicate is a band (its value and the estimate's);
    # and `> 0` -> `>= 0`: without a bootstrap nothing is drawn, so rng may be None (the
    # resampler's own refusal says the *bootstrap* needs rng), with nan bands
    one = swap_propensities(**_TWO_QUERIES, bootstrap=1, rng=0)
    assert np.all(np.isfinite(one.low)) and np.all(np.isfinite(one.high)) and one.low[0] == 1.0
    none = swap_propensities(**_TWO_QUERIES, bootstrap=0, rng=None)
    assert np.all(np.isnan(none.low)) and np.all(np.isnan(none.high))
    np.testing.assert_allclose(none.propensity, [1.0, 5 / 12])


def test_rows_without_impressions_are_left_out():
    # kills `impressions > 0` -> `>= 0`: a third query with a row of no impressions is no query
    # of the estimate; and the removed raise when no row has an impression
    table = {
        name: values + [extra] for (name, values), extra in zip(_TWO_QUERIES.items(), [2, 5, 1, 0, 0], strict=True)
    }
    est = swap_propensities(**table, bootstrap=0, rng=0)
    assert est.info["queries"] == 2
    np.testing.assert_allclose(est.propensity, [1.0, 5 / 12])
    with pytest.raises(ValueError, match="no row has a rank <= max_rank = 2 and impressions > 0"):
        swap_propensities(**{**_TWO_QUERIES, "impressions": [0] * 4, "clicks": [0] * 4}, bootstrap=0, rng=0)
