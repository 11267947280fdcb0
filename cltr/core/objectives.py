"""Rank weights lambda(r), the hinge rank bound and the propensity-weighted risk R(f).

Legend (paper Sec. 3, Table 1, and Sec. 4, Eq. riskhinge):
    y_i, clicked result of example i  -> ``clicks.doc[i]`` (a row of the split's X)
    Y_i, candidate set of example i   -> rows ``offsets[clicks.query[i]]:offsets[clicks.query[i]+1]``
    1/q_i, the click's weight c_i     -> ``clicks.cost[i]``
    lambda(r), rank weighting         -> a ``RankWeight``
    f(x_i, y), score                  -> ``scores[doc]``
    1 + Σ_y max(0, 1 - (f(y_i) - f(y)))  -> ``hinge_rank_bound(...)[i]``
    R_IPS^hinge(f)                    -> ``risk(...)``

    R(f) = (1/n) Σ_i (1/q_i) · lambda(1 + Σ_{y in Y_i, y != y_i} max(0, 1 - (f(y_i) - f(y))))

Because rank(y_i) - 1 = Σ_y 1[f(y) > f(y_i)] is at most the sum of hinges (a tie counts 1
in the hinge and 0 in the rank), and lambda is non-decreasing, R(f) bounds the IPS estimate
of the metric from above for every scorer. Everything here works on flat arrays plus query
offsets.

The examples come as one value, ``cltr.core.clicks.Clicks``: (query, doc, cost) per example,
three arrays and nothing else, not the whole ``ClickLog``. Every learner gives example i a
single weight c_i -- 1/q_i from a propensity or a correction's explicit, possibly negative,
weight (``ClickLog.cost`` merges the two) -- so the objectives take that cost rather than a
propensity and an override of it; ``Clicks.from_log(log)`` builds the value without copying
the log's index arrays, and ``Clicks.from_propensity`` builds it from propensities (checked
> 0). The hinge bound and the pair expansion read only the rows, and accept a ``Clicks``
without costs. The private helpers and the compiled kernels below work on the bare arrays,
unpacked once at each public function.

Two computations of the hinges give the same active pairs (the same comparison, in the same
floating point): by default each query's scores are sorted once and every example finds its
active documents, a suffix of its query's order, by binary search, so a call costs
O(n_docs log n_docs + n_examples log docs-per-query) and nothing per pair; with ``pairs``
(``click_pairs``) every (example, other candidate) pair is expanded, O(n_pairs), the direct
transcription of the formula that the tests use as the oracle of the sorted one.

The sorted computation runs in compiled kernels (``cltr.core.kernels``, numba, compiled on
first use and cached on disk) when numba is installed; ``_sorted_hinges`` below is its
pure-numpy version, the tests' oracle for the kernels, and what runs without numba or with the
environment variable ``CLTR_NO_NUMBA=1``. Both give the same active pairs and agree to about
1e-13 relative.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Literal, overload

import numpy as np

from cltr.core import kernels
from cltr.core.clicks import Clicks

__all__ = [
    "RankWeight",
    "average_rank",
    "dcg",
    "rbp",
    "precision_at_k",
    "rank_weight",
    "click_pairs",
    "check_example_rows",
    "hinge_rank_bound",
    "risk",
    "risk_gradient",
    "check_signed_weights",
]


# --------------------------------------------------------------------------- rank weights


@dataclass(frozen=True)
class RankWeight:
    """A rank weighting function lambda(r) of an additive metric, written as a loss.

    Parameters
    ----------
    name : str
        Its spec; ``rank_weight(w.name)`` gives ``w`` back for the trainable weights.
        Two weights are equal when their names are.
    value : callable
        ``value(r) -> lambda(r)``, elementwise on a float ndarray of real ranks r >= 1
        (the hinge bound is real-valued), same shape out.
    derivative : callable
        ``derivative(r) -> lambda'(r)``, elementwise, same shape out.
    concave : bool
        Whether lambda is concave on r >= 1 (DCG, RBP; average rank, being linear, is
        both concave and convex). A concave lambda makes the SVM objective a difference
        of convex functions, which CCP solves (paper Sec. 4.1).
    differentiable : bool, default True
        False for step weights (Prec@k), which serve evaluation only: ``risk_gradient``
        refuses them.

    Notes
    -----
    Every weight is non-decreasing in r (a lower rank is a smaller loss); the hinge
    upper bound on the risk needs exactly that (paper Sec. 4).
    """

    name: str
    value: Callable[[np.ndarray], np.ndarray] = field(compare=False, repr=False)
    derivative: Callable[[np.ndarray], np.ndarray] = field(compare=False, repr=False)
    concave: bool
    differentiable: bool = True


# Module-level functions (and partials of them) rather than lambdas, so that a RankWeight
# pickles with the standard library as well as with cloudpickle.


def _identity(r):
    return np.asarray(r, dtype=np.float64) * 1.0


def _ones(r):
    return np.ones_like(np.asarray(r, dtype=np.float64))


def _dcg_value(r):
    return -1.0 / np.log1p(np.asarray(r, dtype=np.float64))


def _dcg_derivative(r):
    r = np.asarray(r, dtype=np.float64)
    log = np.log1p(r)
    return 1.0 / ((1.0 + r) * log * log)


def _rbp_value(r, *, p):
    return -(1.0 - p) * np.power(p, np.asarray(r, dtype=np.float64) - 1.0)


def _rbp_derivative(r, *, p):
    return -(1.0 - p) * np.log(p) * np.power(p, np.asarray(r, dtype=np.float64) - 1.0)


def _precision_value(r, *, k):
    return np.where(np.asarray(r, dtype=np.float64) <= k, -1.0 / k, 0.0)


def _precision_derivative(r, *, k):
    return np.zeros_like(np.asarray(r, dtype=np.float64))


def average_rank() -> RankWeight:
    """Average rank, lambda(r) = r (paper Table 1); lambda'(r) = 1.

    Returns
    -------
    RankWeight
        Named ``"avgrank"``; linear, so ``concave`` is True (and it is convex too): a
        single propensity-weighted Ranking SVM solve minimises it (SVM PropRank).
    """
    return RankWeight("avgrank", _identity, _ones, concave=True)


def dcg() -> RankWeight:
    """DCG, lambda(r) = -1/log(1 + r) with the natural log (paper Table 1).

    The base of the logarithm only scales the loss (-1/log_b(1+r) = -log(b)/log(1+r)), so
    the minimiser is the same for log2 (the reported Avg DCG) and ln.
    lambda'(r) = 1 / ((1 + r) log²(1 + r)) > 0, and lambda is concave on r >= 1.

    Returns
    -------
    RankWeight
        Named ``"dcg"``.
    """
    return RankWeight("dcg", _dcg_value, _dcg_derivative, concave=True)


def rbp(p: float) -> RankWeight:
    """Rank-biased precision RBP-p as a loss, lambda(r) = -(1 - p) · p^(r - 1).

    The paper's Table 1 prints -(1-p)/p^rank, which *decreases* in the rank and so is no
    loss the hinge bound can serve (its bound needs lambda non-decreasing). RBP's own rank
    weight (Moffat and Zobel, 2008) is (1 - p) p^(r - 1); its negative is what we use. It
    increases in r, lambda'(r) = -(1 - p) log(p) p^(r - 1) > 0, and it is concave:
    lambda''(r) = -(1 - p) log²(p) p^(r - 1) < 0.

    Parameters
    ----------
    p : float
        Persistence, 0 < p < 1.

    Returns
    -------
    RankWeight
        Named ``"rbp:<p>"``.
    """
    p = _check_persistence(p, "rbp(p)")
    return RankWeight(f"rbp:{p!r}", partial(_rbp_value, p=p), partial(_rbp_derivative, p=p), concave=True)


def precision_at_k(k: int) -> RankWeight:
    """Precision at k as a loss, lambda(r) = -1[r <= k] / k (paper Table 1). Evaluation only.

    It is non-decreasing, so ``risk`` still bounds its IPS estimate from above, but it is a
    step function whose derivative is zero almost everywhere: ``risk_gradient`` refuses it
    and ``rank_weight`` does not parse it.

    Parameters
    ----------
    k : int
        Cut-off, k >= 1.

    Returns
    -------
    RankWeight
        Named ``"prec@<k>"``, ``concave=False``, ``differentiable=False``.
    """
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"precision_at_k(k): k must be an integer >= 1, got {k!r}")
    k = int(k)
    return RankWeight(
        f"prec@{k}",
        partial(_precision_value, k=k),
        partial(_precision_derivative, k=k),
        concave=False,
        differentiable=False,
    )


def _check_persistence(p, where: str) -> float:
    try:
        p = float(p)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: the persistence p must be a number in (0, 1), got {p!r}") from None
    if not 0.0 < p < 1.0:
        raise ValueError(f"{where}: the persistence p must lie strictly between 0 and 1, got {p!r}")
    return p


def rank_weight(spec: str | RankWeight) -> RankWeight:
    """The trainable rank weight named by ``spec``.

    Parameters
    ----------
    spec : str or RankWeight
        ``"avgrank"``, ``"dcg"`` or ``"rbp:<p>"`` with 0 < p < 1 (e.g. ``"rbp:0.8"``);
        case and surrounding blanks are ignored. A ``RankWeight`` is returned as is.

    Returns
    -------
    RankWeight

    Raises
    ------
    ValueError
        For any other spec, saying which are accepted.
    """
    if isinstance(spec, RankWeight):
        return spec
    accepted = "accepted: 'avgrank', 'dcg', 'rbp:<p>' with 0 < p < 1 (e.g. 'rbp:0.8')"
    if not isinstance(spec, str):
        raise ValueError(f"rank weight spec must be a string, got {spec!r}; {accepted}")
    key = spec.strip().lower()
    if key == "avgrank":
        return average_rank()
    if key == "dcg":
        return dcg()
    if key.startswith("rbp:"):
        return rbp(_check_persistence(key[4:], f"rank weight {spec!r}"))
    hint = ""
    if key.startswith("prec"):
        hint = " (Prec@k is a step function, for evaluation only: see precision_at_k)"
    elif key == "rbp":
        hint = " (RBP needs its persistence, e.g. 'rbp:0.8')"
    raise ValueError(f"unknown rank weight {spec!r}{hint}; {accepted}")


# --------------------------------------------------------------------------- hinge bound and risk


def click_pairs(
    offsets: np.ndarray,
    clicks: Clicks,
    candidate: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Every (example, other candidate) pair, as two flat index arrays.

    Parameters
    ----------
    offsets : ndarray, shape (n_queries + 1,)
        Query offsets of the split.
    clicks : Clicks
        The examples: query index of each and row (document index in the split) of its
        clicked/positive document; the costs are not read.
    candidate : ndarray of bool, shape (n_docs,), optional
        Which documents may stand on the other side of a pair. ``None``: every
        document of the query (click data). For full-information Ranking SVMs pass
        ``~relevant`` so that Y_i is the query's irrelevant documents.

    Returns
    -------
    pair_example : ndarray of int64, shape (n_pairs,)
        Example index i of each pair, non-decreasing.
    pair_doc : ndarray of int64, shape (n_pairs,)
        The other document y of each pair, never equal to ``clicks.doc[i]``.
    """
    return _click_pairs(offsets, clicks.query, clicks.doc, candidate)


def _click_pairs(offsets, click_query, click_doc, candidate):
    offsets = np.asarray(offsets, dtype=np.int64)
    click_query = np.asarray(click_query, dtype=np.int64)
    click_doc = np.asarray(click_doc, dtype=np.int64)
    starts = offsets[click_query]
    sizes = offsets[click_query + 1] - starts
    n_pairs = int(sizes.sum())
    pair_example = np.repeat(np.arange(len(click_query), dtype=np.int64), sizes)
    first_pair = np.cumsum(sizes) - sizes
    pair_doc = np.arange(n_pairs, dtype=np.int64) + np.repeat(starts - first_pair, sizes)
    keep = pair_doc != click_doc[pair_example]
    if candidate is not None:
        keep &= np.asarray(candidate, dtype=bool)[pair_doc]
    return pair_example[keep], pair_doc[keep]


def _pairs(offsets, click_query, click_doc, candidate, pairs):
    """Expand the pairs, or check and return the ones given."""
    if pairs is None:
        return _click_pairs(offsets, click_query, click_doc, candidate)
    if candidate is not None:
        raise ValueError(
            "pass either candidate or precomputed pairs, not both: the pairs already encode the candidate sets"
        )
    try:
        pair_example, pair_doc = pairs
    except (TypeError, ValueError):
        raise ValueError("pairs must be a tuple (pair_example, pair_doc) as click_pairs returns it") from None
    pair_example = np.asarray(pair_example, dtype=np.int64)
    pair_doc = np.asarray(pair_doc, dtype=np.int64)
    if pair_example.shape != pair_doc.shape or pair_example.ndim != 1:
        raise ValueError(
            f"pairs: pair_example and pair_doc must be 1-D of one length, got "
            f"shapes {pair_example.shape} and {pair_doc.shape}"
        )
    return pair_example, pair_doc


def _check_examples(scores, offsets, clicks: Clicks):
    """The arrays of a public call, checked: scores, offsets and the examples' query and doc."""
    if not isinstance(clicks, Clicks):
        raise ValueError(
            f"clicks must be a cltr.core.clicks.Clicks (Clicks.from_log(log) of a ClickLog), "
            f"got {type(clicks).__name__}"
        )
    scores = np.asarray(scores, dtype=np.float64)
    offsets = np.asarray(offsets, dtype=np.int64)
    click_query, click_doc = clicks.query, clicks.doc
    if scores.ndim != 1:
        raise ValueError(f"scores must be 1-D (one per document), got shape {scores.shape}")
    if offsets.ndim != 1 or len(offsets) < 1 or offsets[0] != 0 or offsets[-1] != len(scores):
        raise ValueError(
            f"offsets must run from 0 to the number of documents ({len(scores)}), "
            f"got {offsets[:1].tolist()}...{offsets[-1:].tolist()}"
        )
    if click_query.shape != click_doc.shape or click_query.ndim != 1:
        raise ValueError(
            f"clicks.query and clicks.doc must be 1-D of one length, got shapes "
            f"{click_query.shape} and {click_doc.shape}"
        )
    _check_rows(offsets, click_query, click_doc)
    return scores, offsets, click_query, click_doc


def check_example_rows(offsets: np.ndarray, clicks: Clicks) -> None:
    """Each example's query lies in ``offsets`` and its clicked document in that query's rows.

    Parameters
    ----------
    offsets : ndarray of int64, shape (n_queries + 1,)
    clicks : Clicks
        Of 1-D ``query`` and ``doc`` of one length; the costs are not read.

    Raises
    ------
    ValueError
        Naming the first example that breaks either rule.
    """
    _check_rows(np.asarray(offsets, dtype=np.int64), clicks.query, clicks.doc)


def _check_rows(offsets, click_query, click_doc) -> None:
    if not len(click_query):
        return
    n_queries = len(offsets) - 1
    bad = (click_query < 0) | (click_query >= n_queries)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"example {i}: query {int(click_query[i])} is outside the {n_queries} queries of offsets")
    bad = (click_doc < offsets[click_query]) | (click_doc >= offsets[click_query + 1])
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        q = int(click_query[i])
        raise ValueError(
            f"example {i}: clicked document {int(click_doc[i])} is not a row "
            f"of its query {q} (rows {int(offsets[q])}..{int(offsets[q + 1]) - 1})"
        )


def _example_costs(clicks: Clicks, n_examples) -> np.ndarray:
    """c_i of every example, ``clicks.cost``: present, one per example, finite (of either
    sign: the affine correction's)."""
    cost = clicks.cost
    if cost is None:
        raise ValueError(
            "these clicks carry no costs c_i, which the risk weighs them by: build them with "
            "Clicks.from_log(log), Clicks.from_propensity(query, doc, propensity) or "
            "Clicks(query, doc, cost)"
        )
    if cost.shape != (n_examples,):
        raise ValueError(f"clicks.cost must have one entry per example, shape ({n_examples},), got {cost.shape}")
    bad = ~np.isfinite(cost)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"example {i}: its cost c_i must be finite, got {cost[i]!r}")
    return cost


def check_signed_weights(cost, weight: RankWeight | str) -> None:
    """Refuse negative example weights under an unbounded rank weight.

    A negative c_i (the affine correction's penalty on displayed documents) rewards pushing
    that document down, by c_i lambda(bound_i). DCG's and RBP's lambda are bounded above
    (-1/log(1 + r) and -(1-p) p^(r-1) tend to 0), so the reward is too; average rank's
    lambda(r) = r is not, and the risk would have no minimum.
    """
    weight = _weight(weight)
    if weight.name == "avgrank" and np.any(np.asarray(cost) < 0):
        raise ValueError(
            "negative example weights (the affine correction) need a bounded rank weight: train on "
            "'dcg' or 'rbp:<p>', not 'avgrank', whose risk would have no minimum"
        )


def _normaliser(n, n_examples) -> float:
    if n is None:
        if n_examples == 0:
            raise ValueError("no examples: the risk (1/n) Σ_i is undefined; pass n explicitly for an empty minibatch")
        return float(n_examples)
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be an integer >= 1 (the number of examples R is averaged over), got {n!r}")
    return float(n)


def _margins(scores, click_doc, pair_example, pair_doc):
    """Hinge 1 - (f(y_i) - f(y)) of every pair, before the max with 0."""
    return 1.0 - (scores[click_doc[pair_example]] - scores[pair_doc])


@dataclass(frozen=True)
class _Hinges:
    """The hinges of every example at some scores: its bound, how many of its pairs are
    active (A_i, margin > 0), and ``spread`` for sums over the active pairs."""

    bound: np.ndarray  # 1 + Σ_y max(0, 1 - (f(y_i) - f(y))), shape (n_examples,)
    n_active: np.ndarray  # |A_i|, shape (n_examples,)
    spread: Callable[[np.ndarray], np.ndarray]  # w -> Σ_{i : y in A_i} w_i per document, shape (n_docs,)


def _pair_hinges(scores, click_doc, pair_example, pair_doc) -> _Hinges:
    """The hinges from expanded pairs, O(n_pairs)."""
    n_examples, n_docs = len(click_doc), len(scores)
    margin = _margins(scores, click_doc, pair_example, pair_doc)
    active = margin > 0.0
    bound = 1.0 + np.bincount(pair_example, weights=np.where(active, margin, 0.0), minlength=n_examples)
    active_example, active_doc = pair_example[active], pair_doc[active]

    def spread(w):
        # bincount returns int64 when no pair is active
        return np.bincount(active_doc, weights=w[active_example], minlength=n_docs).astype(np.float64, copy=False)

    return _Hinges(bound, np.bincount(active_example, minlength=n_examples), spread)


def _sorted_hinges(scores, offsets, click_query, click_doc, candidate) -> _Hinges:
    """The hinges by sorting each query's scores once, with no pair expanded.

    y is in A_i iff 1 - (f(y_i) - f(y)) > 0, evaluated exactly as ``_margins`` does; in
    floating point that expression is non-decreasing in f(y), so A_i is a suffix of y_i's
    query sorted by score (clicked document included: its own margin is 1), found by binary
    search with that very comparison. Then |A_i| and Σ_{y in A_i} f(y) are suffix counts and
    sums, the bound is |A_i|(1 - f(y_i)) + Σ f(y) less the clicked document's own 1, and a
    sum over active pairs is a prefix sum, within the query, of the weights put at each
    example's first active position. The running sums are in extended precision so that
    subtracting one query's start from them loses nothing of the per-query values.
    """
    n_docs, n_examples, n_queries = len(scores), len(click_doc), len(offsets) - 1
    doc_query = np.repeat(np.arange(n_queries, dtype=np.int64), np.diff(offsets))
    docs = np.arange(n_docs, dtype=np.int64) if candidate is None else np.flatnonzero(candidate)
    # candidate documents sorted by (query, score): a quicksort on the scores, then a stable
    # sort on the query (a radix sort for 16-bit keys)
    by_score = docs[np.argsort(scores[docs])]
    query_of = doc_query[by_score]
    order = by_score[np.argsort(query_of.astype(np.int16 if n_queries < 2**15 else np.int64), kind="stable")]
    sorted_scores = scores[order]
    start = np.concatenate([[0], np.cumsum(np.bincount(doc_query[docs], minlength=n_queries))])
    lo, hi = start[click_query], start[click_query + 1]
    end = hi.copy()
    clicked = scores[click_doc]
    # every example's first position with margin > 0: a binary search run on all examples at
    # once, about log2(largest query) rounds
    while True:
        open_ = lo < hi
        if not open_.any():
            break
        mid = (lo + hi) // 2
        inactive = open_ & ~(1.0 - (clicked - sorted_scores[np.minimum(mid, len(order) - 1)]) > 0.0)
        lo = np.where(inactive, mid + 1, lo)
        hi = np.where(open_ & ~inactive, mid, hi)
    first = lo
    own = np.ones(n_examples, dtype=bool) if candidate is None else np.asarray(candidate, dtype=bool)[click_doc]
    count = end - first  # active documents, the clicked one included when a candidate
    running = np.concatenate([[0.0], np.cumsum(sorted_scores, dtype=np.longdouble)])
    total = running[end] - running[first]
    bound = 1.0 + (count * (1.0 - clicked.astype(np.longdouble)) + total) - own
    query_start = start[doc_query[order]]  # for every sorted position, its query's first

    def spread(w):
        # each example's weight at its first active position (none when no document is active)
        at = np.bincount(first, weights=np.where(first < end, w, 0.0), minlength=len(order) + 1)
        prefix = np.cumsum(at, dtype=np.longdouble)
        within = prefix[: len(order)] - np.concatenate([[0.0], prefix])[query_start]
        out = np.zeros(n_docs, dtype=np.longdouble)
        out[order] = within
        # the clicked document is in its own suffix, not a pair of its example
        out -= np.bincount(click_doc, weights=np.where(own, w, 0.0), minlength=n_docs)
        return out.astype(np.float64)

    return _Hinges(bound.astype(np.float64), count - own, spread)


class SortHint:
    """The per-query order of one problem's last evaluation, for a caller that evaluates the
    same examples again and again at slowly moving scores (Tree PropDCG: once per tree). The
    compiled hinges start each query's sort from it (``kernels.hinges``); the results are the
    same with or without it, only faster. Unused by the numpy version."""

    def __init__(self) -> None:
        self.order: np.ndarray | None = None


def _compiled_hinges(scores, offsets, click_query, click_doc, candidate, hint: SortHint | None = None) -> _Hinges:
    """``_sorted_hinges`` by the compiled kernels of ``cltr.core.kernels`` (same active pairs)."""
    order, start, first, own, bound, n_active = kernels.hinges(
        scores, offsets, click_query, click_doc, candidate, hint=None if hint is None else hint.order
    )
    if hint is not None:
        hint.order = order

    def spread(w):
        return kernels.spread(w, order, start, first, own, click_query, click_doc, len(scores))

    return _Hinges(bound, n_active, spread)


def _hinges(scores, offsets, click_query, click_doc, candidate, pairs, hint: SortHint | None = None) -> _Hinges:
    if pairs is None:
        if kernels.enabled():
            return _compiled_hinges(scores, offsets, click_query, click_doc, candidate, hint)
        return _sorted_hinges(scores, offsets, click_query, click_doc, candidate)
    pair_example, pair_doc = _pairs(offsets, click_query, click_doc, candidate, pairs)
    return _pair_hinges(scores, click_doc, pair_example, pair_doc)


def hinge_rank_bound(
    scores: np.ndarray,
    offsets: np.ndarray,
    clicks: Clicks,
    *,
    candidate: np.ndarray | None = None,
    pairs: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """Hinge upper bound on the rank of each example's clicked document (paper Sec. 4).

    bound_i = 1 + Σ_{y in Y_i, y != y_i} max(0, 1 - (f(y_i) - f(y))) >= rank(y_i).

    Parameters
    ----------
    scores : ndarray, shape (n_docs,)
        f(x, y) of every document of the split.
    offsets : ndarray, shape (n_queries + 1,)
        Query offsets of the split.
    clicks : Clicks
        The examples: query index of each and row of its clicked document y_i, within its
        query's rows; the costs are not read.
    candidate : ndarray of bool, shape (n_docs,), optional
        Which documents may be y in Y_i (see ``click_pairs``); ``None``: all of the query.
    pairs : tuple of ndarray, optional
        ``(pair_example, pair_doc)`` from ``click_pairs`` on the same examples: compute over
        these expanded pairs instead of sorting (the module docstring); the same active
        pairs, O(n_pairs) a call. Exclusive with ``candidate``.

    Returns
    -------
    ndarray of float64, shape (n_examples,)
        The bound, >= 1; a tie counts a full 1.
    """
    scores, offsets, click_query, click_doc = _check_examples(scores, offsets, clicks)
    return _hinges(scores, offsets, click_query, click_doc, candidate, pairs).bound


def _weight(weight) -> RankWeight:
    if isinstance(weight, str):
        return rank_weight(weight)
    if not isinstance(weight, RankWeight):
        raise ValueError(f"weight must be a RankWeight or a spec such as 'dcg', got {weight!r}")
    return weight


def risk(
    scores: np.ndarray,
    offsets: np.ndarray,
    clicks: Clicks,
    weight: RankWeight | str,
    *,
    n: int | None = None,
    candidate: np.ndarray | None = None,
    pairs: tuple[np.ndarray, np.ndarray] | None = None,
) -> float:
    """Propensity-weighted hinge bound on the risk, R(f) (paper Eq. riskhinge).

    R(f) = (1/n) Σ_i c_i · lambda(bound_i), c_i = 1/q_i, with bound_i from ``hinge_rank_bound``.
    It is at least the IPS estimate (1/n) Σ_i (1/q_i) lambda(rank_f(y_i)) whenever lambda is
    non-decreasing, which every ``RankWeight`` here is (Prec@k included).

    Parameters
    ----------
    scores, offsets
        As in ``hinge_rank_bound``: shapes (n_docs,), (n_queries + 1,).
    clicks : Clicks
        The examples and their costs c_i (``clicks.cost``, shape (n_examples,)): 1/q_i of a
        click of propensity q_i, or an explicit weight, which may be negative (the affine
        correction's displayed documents), and then R(f) is an estimate, not a bound.
    weight : RankWeight or str
        lambda; a string is parsed by ``rank_weight``.
    n : int, optional
        Normaliser; default the number of examples. A minibatch passes the full data's n so
        that its risks add up to the full risk.
    candidate : ndarray of bool, shape (n_docs,), optional
        See ``hinge_rank_bound``.
    pairs : tuple of ndarray, optional
        See ``hinge_rank_bound``.

    Returns
    -------
    float
    """
    weight = _weight(weight)
    bound = hinge_rank_bound(scores, offsets, clicks, candidate=candidate, pairs=pairs)
    cost = _example_costs(clicks, len(bound))
    scale = _normaliser(n, len(bound))
    return float(np.sum(weight.value(bound) * cost) / scale)


# with_curvature picks the shape of the result: (value, grad) or (value, grad, curvature)
@overload
def risk_gradient(
    scores: np.ndarray,
    offsets: np.ndarray,
    clicks: Clicks,
    weight: RankWeight | str,
    *,
    n: int | None = None,
    candidate: np.ndarray | None = None,
    pairs: tuple[np.ndarray, np.ndarray] | None = None,
    with_curvature: Literal[False] = False,
    hint: SortHint | None = None,
) -> tuple[float, np.ndarray]: ...


@overload
def risk_gradient(
    scores: np.ndarray,
    offsets: np.ndarray,
    clicks: Clicks,
    weight: RankWeight | str,
    *,
    n: int | None = None,
    candidate: np.ndarray | None = None,
    pairs: tuple[np.ndarray, np.ndarray] | None = None,
    with_curvature: Literal[True],
    hint: SortHint | None = None,
) -> tuple[float, np.ndarray, np.ndarray]: ...


@overload
def risk_gradient(
    scores: np.ndarray,
    offsets: np.ndarray,
    clicks: Clicks,
    weight: RankWeight | str,
    *,
    n: int | None = None,
    candidate: np.ndarray | None = None,
    pairs: tuple[np.ndarray, np.ndarray] | None = None,
    with_curvature: bool = False,
    hint: SortHint | None = None,
) -> tuple[float, np.ndarray] | tuple[float, np.ndarray, np.ndarray]: ...


def risk_gradient(
    scores: np.ndarray,
    offsets: np.ndarray,
    clicks: Clicks,
    weight: RankWeight | str,
    *,
    n: int | None = None,
    candidate: np.ndarray | None = None,
    pairs: tuple[np.ndarray, np.ndarray] | None = None,
    with_curvature: bool = False,
    hint: SortHint | None = None,
) -> tuple[float, np.ndarray] | tuple[float, np.ndarray, np.ndarray]:
    """R(f) and its (sub)gradient with respect to the scores, for any scorer.

    With c_i = lambda'(bound_i) c_i' / n (c_i' = ``clicks.cost[i]``) and the active pairs
    A_i = {y : 1 - (f(y_i) - f(y)) > 0} (a hinge exactly at its kink counts as inactive: the zero subgradient),

        dR/df(y)   = Σ_{i : y in A_i} c_i            (for y != y_i)
        dR/df(y_i) = -c_i |A_i|                      (summed over the examples clicking y_i)

    A linear scorer takes ``X.T @ grad``, an MLP backpropagates ``grad`` from its output, a
    gradient-boosted model uses it as its custom objective's gradient.

    Parameters
    ----------
    scores, offsets, clicks, weight, n, candidate, pairs
        As in ``risk``. ``weight`` must be differentiable (not Prec@k).
    with_curvature : bool
        Also return the pair curvature h(y) = Σ_{i : y in A_i} |c_i| + Σ_{i : y = y_i} |c_i| |A_i|,
        the sum of the absolute pair terms at y (Tree PropDCG's Gauss-Newton curvature).
    hint : SortHint, optional
        Kept up to date by the call: a caller that evaluates the same examples at slowly
        moving scores passes one ``SortHint`` to every call, and each query's sort starts
        from the last order (the compiled kernels only; the same results).

    Returns
    -------
    value : float
        R(f), equal to ``risk(...)``.
    grad : ndarray of float64, shape (n_docs,)
        dR/d scores; zero for documents in no pair.
    curvature : ndarray of float64, shape (n_docs,)
        Only with ``with_curvature``.
    """
    weight = _weight(weight)
    if not weight.differentiable:
        raise ValueError(
            f"rank weight {weight.name!r} is a step function, for evaluation only; "
            f"train on 'avgrank', 'dcg' or 'rbp:<p>'"
        )
    scores, offsets, click_query, click_doc = _check_examples(scores, offsets, clicks)
    n_examples = len(click_doc)
    cost = _example_costs(clicks, n_examples)
    scale = _normaliser(n, n_examples)

    hinges = _hinges(scores, offsets, click_query, click_doc, candidate, pairs, hint)
    value = float(np.sum(weight.value(hinges.bound) * cost) / scale)
    coef = weight.derivative(hinges.bound) * cost / scale
    grad = hinges.spread(coef)
    clicked = np.bincount(click_doc, weights=coef * hinges.n_active, minlength=len(scores))
    if with_curvature:
        if np.all(coef >= 0):
            return value, grad - clicked, grad + clicked
        # signed example weights: the curvature sums the pair terms' absolute values
        size = np.abs(coef)
        curvature = hinges.spread(size) + np.bincount(click_doc, weights=size * hinges.n_active, minlength=len(scores))
        return value, grad - clicked, curvature
    grad -= clicked
    return value, grad
