"""Tests that kill the survivors of bench/mutation.py on cltr/core/trust.py (each names the
mutant it kills); expected values are hand-computed."""

import numpy as np
import pytest

from cltr.core.trust import TrustBias, TrustEstimate, trust_em, weighted_estimate


def _bias(theta=(1.0, 0.5), plus=(0.9, 0.9), minus=(0.1, 0.2)) -> TrustBias:
    return TrustBias(examination=np.array(theta), relevant_trust=np.array(plus), irrelevant_trust=np.array(minus))


_NO_REPLICATES = np.empty((0, 2, 2))


def _estimate(replicates=_NO_REPLICATES, level=0.9) -> TrustEstimate:
    return TrustEstimate(
        rank=np.array([1, 2]),
        relevant_click=np.array([0.5, 0.25]),
        irrelevant_click=np.array([0.1, 0.05]),
        prior=np.array([0.5, 0.4]),
        level=level,
        replicates=replicates,
    )


def test_trust_parameters_are_hashable_values_that_cannot_be_rebound():
    # kills `@dataclass(frozen=True, eq=False)` -> frozen=False or eq=True on TrustBias and
    # TrustEstimate: eq=True with frozen generates a field hash, and arrays are unhashable
    # (the estimates are cached by identity); frozen keeps a fitted estimate as it was
    for value in (_bias(), _estimate()):
        assert isinstance(hash(value), int) and value == value
        with pytest.raises(AttributeError):
            value.level = 0.5


@pytest.mark.parametrize(
    "theta, plus, minus",
    [
        ((1.0, 0.5), (0.9,), (0.1, 0.2)),  # lengths differ
        (((1.0,), (0.5,)), ((0.9,), (0.9,)), ((0.1,), (0.2,))),  # one shape, but 2-D
        ((), (), ()),  # empty
    ],
)
def test_trust_bias_needs_flat_arrays_of_one_length(theta, plus, minus):
    # kills `or` -> `and` and the removed raise
    with pytest.raises(ValueError, match="must be flat arrays of one length >= 1"):
        _bias(theta, plus, minus)


@pytest.mark.parametrize(
    "theta, plus, minus, what",
    [
        ((1.0, 0.0), (0.9, 0.9), (0.1, 0.2), "0 < theta_k <= 1; rank 2"),
        ((1.0, 1.5), (0.9, 0.9), (0.1, 0.2), "0 < theta_k <= 1; rank 2"),
        ((1.0, 0.5), (0.9, 1.5), (0.1, 0.2), "0 <= eps-_k and eps._k <= 1; rank 2"),
        ((1.0, 0.5), (0.9, 0.9), (0.1, -0.1), "0 <= eps-_k and eps._k <= 1; rank 2"),
        ((1.0, 0.5), (0.9, 0.2), (0.1, 0.2), "eps._k > eps-_k; rank 2"),
    ],
)
def test_trust_bias_refuses_each_bound_alone(theta, plus, minus, what):
    # kills `&` -> `|`, `theta > 0` -> `>=`, `plus > minus` -> `>=` and `<= 1` -> `<= 2` (twice)
    with pytest.raises(ValueError, match=f"trust-bias parameters must satisfy {what}"):
        _bias(theta, plus, minus)


def test_trust_bias_accepts_the_closed_ends_and_converts_lists():
    # theta = 1, eps+ = 1 and eps- = 0 are allowed; kills the removed `object.__setattr__`
    # (lists kept as given would not multiply elementwise)
    bias = TrustBias(examination=[1.0, 0.5], relevant_trust=[1.0, 1.0], irrelevant_trust=[0.0, 0.25])
    assert bias.examination.dtype == np.float64
    np.testing.assert_array_equal(bias.relevant_click([1, 2, 3]), [1.0, 0.5, 0.5])
    np.testing.assert_array_equal(bias.alpha([2]), [0.375])


def test_ranks_below_one_are_refused():
    # kills the removed raise of `_at`: rank 0 would read the deepest rank's values
    with pytest.raises(ValueError, match="ranks must be >= 1, found 0"):
        _bias().relevant_click([1, 0])


def test_weighted_estimate_needs_a_session():
    # kills `n_sessions <= 0` -> `< 0` and the removed raise
    assert weighted_estimate([1.0, 2.0], [0.5, 0.25], n_sessions=2) == 0.5
    with pytest.raises(ValueError, match="n_sessions must be positive, found 0"):
        weighted_estimate([1.0], [1.0], n_sessions=0)


def test_band_reads_the_levels_quantiles_and_contains_the_fit():
    # kills every change of `tail = (1.0 - level) / 2.0`: statistic values 0..100 over 101
    # replicates, level 0.9: the 5% and 95% quantiles are 5 and 95
    replicates = np.zeros((101, 2, 2))
    replicates[:, 0, 0] = np.arange(101.0)
    low, high = _estimate(replicates).band(np.array([50.0, 0.0]), lambda plus, minus: plus)
    np.testing.assert_allclose(low, [5.0, 0.0])
    np.testing.assert_allclose(high, [95.0, 0.0])
    # widened to the fit's own value
    low, high = _estimate(replicates).band(np.array([200.0, -1.0]), lambda plus, minus: plus)
    np.testing.assert_allclose(low, [5.0, -1.0])
    np.testing.assert_allclose(high, [200.0, 0.0])
    # no bootstrap: nan
    assert np.isnan(_estimate().band(np.zeros(2), lambda plus, minus: plus)).all()


def test_propensity_estimate_divides_by_rank_1():
    # kills `relevant_click / relevant_click[0]` -> `*` and -> `[1]`, and `plus / plus[0]` ->
    # `plus[1]` in the band: theta_k = c+_k / c+_1
    replicates = np.array([[[0.4, 0.3], [0.1, 0.1]], [[0.5, 0.1], [0.1, 0.1]]])
    estimate = _estimate(replicates, level=0.5).propensity_estimate()
    np.testing.assert_allclose(estimate.propensity, [1.0, 0.5])
    # replicate examinations (1, 0.75) and (1, 0.2): quartiles 1 and 0.3375, 0.6125
    np.testing.assert_allclose(estimate.low, [1.0, 0.3375])
    np.testing.assert_allclose(estimate.high, [1.0, 0.6125])
    # kills the band index of relevant_click 0 -> 1: c+'s band from the replicates' c+ (0.4, 0.5)
    # and (0.3, 0.1), c-'s from their c- (0.1 everywhere), each widened to the fit's value
    trust = estimate.info["trust"]
    assert trust["relevant_click"] == [0.5, 0.25]
    np.testing.assert_allclose(trust["relevant_click_low"], [0.425, 0.15])
    np.testing.assert_allclose(trust["relevant_click_high"], [0.5, 0.25])
    np.testing.assert_allclose(trust["irrelevant_click_low"], [0.1, 0.05])
    np.testing.assert_allclose(trust["irrelevant_click_high"], [0.1, 0.1])


# one row per (query, document, rank): impressions and clicks; document 3's excess over its
# rank's click rate lies in (0, 1], document 4 alone at rank 3 (one impression, clicked)
EM_ROWS = np.array(
    [
        [0, 0, 1, 40, 32],
        [0, 0, 2, 40, 20],
        [0, 1, 1, 40, 4],
        [0, 1, 2, 40, 2],
        [1, 2, 2, 40, 18],
        [1, 3, 2, 3, 2],
        [1, 4, 3, 1, 1],
    ]
)
FLOOR = 1e-9


def _m_step(responsibility: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The M-step by loops: c+_k, c-_k over the rows at rank k, pi_j over the documents whose
    top rank is j, each clipped to [floor, 1 - floor]."""
    plus, minus, prior = np.zeros(3), np.zeros(3), np.zeros(3)
    for k in (1, 2, 3):
        at = [row for row in EM_ROWS if row[2] == k]
        weighted = [(responsibility[row[1]], row) for row in at]
        plus[k - 1] = sum(w * row[4] for w, row in weighted) / sum(w * row[3] for w, row in weighted)
        minus[k - 1] = sum((1 - w) * row[4] for w, row in weighted) / sum((1 - w) * row[3] for w, row in weighted)
        tops = [d for d in responsibility if min(row[2] for row in EM_ROWS if row[1] == d) == k]
        prior[k - 1] = sum(responsibility[d] for d in tops) / len(tops)
    return tuple(np.clip(v, FLOOR, 1 - FLOOR) for v in (plus, minus, prior))


def test_one_em_step_from_the_documented_start():
    # the start: a document clicked more than its ranks' average (sum of c - n rate_k > 0,
    # rate_k = clicks / impressions at rank k) is relevant with 0.9, else 0.1. Kills the
    # rate's divisor floor 1.0 -> 2.0 (rank 3 has one impression), `excess > 0` -> `>= 0`
    # (document 4's excess is 0) and -> `> 1` (document 3's is 0.98), the clips' `1 - floor`
    # -> `1 + floor` / `2 - floor` (rank 3's c+ and c- are 1), and the iteration count
    rate = {
        k: sum(row[4] for row in EM_ROWS if row[2] == k) / sum(row[3] for row in EM_ROWS if row[2] == k)
        for k in (1, 2, 3)
    }
    excess = {d: sum(row[4] - row[3] * rate[row[2]] for row in EM_ROWS if row[1] == d) for d in range(5)}
    assert 0 < excess[3] <= 1 and excess[4] == 0
    plus, minus, prior = _m_step({d: 0.9 if excess[d] > 0 else 0.1 for d in range(5)})
    estimate = trust_em(*EM_ROWS.T, iterations=1, min_clicks=0.0, bootstrap=0)
    np.testing.assert_allclose(estimate.relevant_click, plus, rtol=1e-12)
    np.testing.assert_allclose(estimate.irrelevant_click, minus, rtol=1e-12)
    np.testing.assert_allclose(estimate.prior, prior, rtol=1e-12)
    assert estimate.info["iterations"] == 1 and estimate.info["converged"] is False


def test_the_reported_log_likelihood_is_the_mixtures_at_the_returned_parameters():
    # brute force: sum over documents of log(pi_j prod Bin(c; n, c+_k) + (1 - pi_j) prod Bin(c; n, c-_k))
    # without binomial coefficients, j the document's top rank. Kills log1p(-prior) ->
    # log1p(prior) (the irrelevant component's prior), which the converged fit alone hides
    estimate = trust_em(*EM_ROWS.T, min_clicks=0.0, bootstrap=0)
    plus, minus, prior = estimate.relevant_click, estimate.irrelevant_click, estimate.prior
    total = 0.0
    for d in range(5):
        rows = [row for row in EM_ROWS if row[1] == d]
        j = min(row[2] for row in rows) - 1
        relevant = prior[j] * np.prod([plus[r[2] - 1] ** r[4] * (1 - plus[r[2] - 1]) ** (r[3] - r[4]) for r in rows])
        irrelevant = (1 - prior[j]) * np.prod(
            [minus[r[2] - 1] ** r[4] * (1 - minus[r[2] - 1]) ** (r[3] - r[4]) for r in rows]
        )
        total += np.log(relevant + irrelevant)
    assert estimate.info["converged"] is True
    np.testing.assert_allclose(estimate.info["log_likelihood"], total, rtol=1e-9)
    # every estimate stays inside [floor, 1 - floor] (rank 3's c+ and one prior reach it)
    for values in (plus, minus, prior):
        assert np.all((values >= FLOOR) & (values <= 1 - FLOOR))
    assert prior[1] == 1 - FLOOR and plus[2] == 1 - FLOOR


def test_em_stops_at_the_first_relative_rise_below_tol():
    # brute force: the log-likelihood after i iterations for i = 1.. (the fit is deterministic),
    # the stop is the first i >= 2 whose rise is <= tol |loglik|. Kills `tol * abs(loglik)` ->
    # `tol / abs(...)` and the default tol 1e-9 -> 1.000000001
    fits = [
        trust_em(*EM_ROWS.T, iterations=i, min_clicks=0.0, bootstrap=0).info["log_likelihood"] for i in range(1, 30)
    ]
    stop = next(i for i in range(2, 30) if fits[i - 1] - fits[i - 2] <= 1e-9 * abs(fits[i - 1]))
    assert stop > 2
    assert trust_em(*EM_ROWS.T, min_clicks=0.0, bootstrap=0).info["iterations"] == stop
    # kills `<=` -> `<`: with tol 0 it stops once the likelihood no longer rises
    assert trust_em(*EM_ROWS.T, min_clicks=0.0, bootstrap=0, tol=0.0).info["converged"] is True


def test_bootstrap_of_one_query_repeats_the_fit():
    # with one query every resample is the log itself, so each replicate, warm-started at the
    # fit, is the fit: kills `fit[0], fit[1]` -> `fit[1], fit[1]` and -> `fit[0], fit[2]`
    one_query = EM_ROWS.copy()
    one_query[:, 0] = 0
    estimate = trust_em(*one_query.T, min_clicks=0.0, bootstrap=3, rng=0)
    assert estimate.replicates.shape == (3, 2, 3)
    for replicate in estimate.replicates:
        np.testing.assert_allclose(replicate[0], estimate.relevant_click, rtol=1e-6)
        np.testing.assert_allclose(replicate[1], estimate.irrelevant_click, rtol=1e-6)


def test_bootstrap_defaults_and_none():
    # kills the default bootstrap 100 -> 101, and `np.empty((0, 2, K))` -> (1, 2, K) / (0, 3, K)
    assert trust_em(*EM_ROWS.T, min_clicks=0.0, rng=0).replicates.shape == (100, 2, 3)
    none = trust_em(*EM_ROWS.T, min_clicks=0.0, bootstrap=0)
    assert none.replicates.shape == (0, 2, 3)
    # kills the removed raise: a bootstrap needs a seed
    with pytest.raises(ValueError, match="the bootstrap needs rng"):
        trust_em(*EM_ROWS.T, min_clicks=0.0, bootstrap=2)


def _columns(**changes):
    columns = dict(zip(("query", "doc", "rank", "impressions", "clicks"), EM_ROWS.T.copy(), strict=True))
    for name, (row, value) in changes.items():
        columns[name][row] = value
    return columns


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"rank": (0, 0)}, "ranks must be >= 1 and 0 <= clicks <= impressions"),
        ({"clicks": (1, -1)}, "ranks must be >= 1 and 0 <= clicks <= impressions"),
        ({"clicks": (1, 41)}, "ranks must be >= 1 and 0 <= clicks <= impressions"),
    ],
)
def test_trust_em_refuses_each_bad_row(changes, message):
    # kills `or` -> `and` and the removed raise of the row check
    columns = _columns(**changes)
    with pytest.raises(ValueError, match=message):
        trust_em(*columns.values(), min_clicks=0.0, bootstrap=0)


def test_trust_em_refuses_columns_of_other_lengths_or_none():
    # kills `or` -> `and` and the removed raise of the length check
    with pytest.raises(ValueError, match="non-empty arrays of one length"):
        trust_em(*EM_ROWS[:, :4].T, EM_ROWS[:6, 4], min_clicks=0.0, bootstrap=0)
    with pytest.raises(ValueError, match="non-empty arrays of one length"):
        trust_em(*np.zeros((5, 0), dtype=np.int64), min_clicks=0.0, bootstrap=0)


def test_trust_em_accepts_a_row_without_impressions_and_max_rank_1():
    # kills `impressions.min() < 0` -> `<= 0` / `< 1` (a row never shown is valid) and
    # `max_rank < 1` -> `<= 1` / `< 2`
    columns = _columns(impressions=(6, 0), clicks=(6, 0))
    assert trust_em(*columns.values(), min_clicks=0.0, bootstrap=0).rank.tolist() == [1, 2, 3]
    assert trust_em(*EM_ROWS.T, max_rank=1, min_clicks=0.0, bootstrap=0).rank.tolist() == [1]
    with pytest.raises(ValueError, match="max_rank must be >= 1, found 0"):
        trust_em(*EM_ROWS.T, max_rank=0, min_clicks=0.0, bootstrap=0)


@pytest.mark.parametrize("bootstrap, level", [(True, 0.9), (-1, 0.9), (0, 0.0), (0, 1.0)])
def test_trust_em_refuses_a_bad_bootstrap_or_level(bootstrap, level):
    # kills `or` -> `and`, `int(bootstrap) < 0` -> `<= 0` / `< 1` (0 is accepted below),
    # `0 < level < 1` -> `<=` either side, and the removed raise
    with pytest.raises(ValueError, match="bootstrap must be >= 0 and level in"):
        trust_em(*EM_ROWS.T, min_clicks=0.0, bootstrap=bootstrap, level=level)


def test_a_rank_exactly_at_min_clicks_is_kept_and_rank_1_below_it_refused():
    # rank 3's only row is clicked once and never clicked in the variant below. Kills
    # `relevant_clicks >= min_clicks` -> `>`: 0 relevant clicks meet min_clicks = 0
    columns = _columns(clicks=(6, 0))
    assert trust_em(*columns.values(), min_clicks=0.0, bootstrap=0).rank.tolist() == [1, 2, 3]
    # kills the dropped `not`, `supported[0]` -> `[1]` and the removed raise: rank 1's
    # relevant clicks are at most 32 + 4, rank 2's about 40
    with pytest.raises(ValueError, match="fewer than 33.0 clicks on relevant documents at rank 1"):
        trust_em(*EM_ROWS.T, min_clicks=33.0, bootstrap=0)


def test_the_default_support_is_10_relevant_clicks():
    # kills the default min_clicks 10.0 -> 11.0: document 0 (relevant with posterior 1 to
    # float precision) clicked 10 times at rank 3, document 4 once with a posterior < 1/2,
    # so rank 3 has between 10 and 10.5 clicks on relevant documents
    rows = np.vstack([EM_ROWS, [0, 0, 3, 12, 10]])
    assert trust_em(*rows.T, bootstrap=0).rank.tolist() == [1, 2, 3]
    assert trust_em(*rows.T, bootstrap=0, min_clicks=10.5).rank.tolist() == [1, 2]
