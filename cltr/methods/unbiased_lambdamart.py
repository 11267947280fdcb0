"""Unbiased LambdaMART (pairwise debiasing; Hu, Wang, Peng, Li, WWW 2019): LambdaMART on
the (clicked, non-clicked) pairs of every session, each pair's lambda divided by a
position bias of its clicked document's rank and one of its non-clicked document's rank,
both biases estimated jointly with the trees.

Legend (Hu et al. 2019, Sec. 3-4; their Eq. numbers differ between versions):
    (i, j)             -> a pair of one session: ``high`` clicked, ``low`` not clicked
    t+_k, t-_k         -> ``click_bias[k]``, ``nonclick_bias[k]``: the position bias of
                          clicks and of non-clicks at rank k (bin k; see ``positions``),
                          normalised to t+_1 = t-_1 = 1
    L(f(x_i), f(x_j))  -> ``pair_cost``: |ΔDCG_ij| · log(1 + exp(-σ (f_i - f_j))), the
                          LambdaMART pair loss (σ = 1)
    lambda_ij          -> |ΔDCG_ij| · σ / (1 + exp(σ (f_i - f_j))), divided by
                          t+_{k_i} · t-_{k_j}
    p                  -> ``bias_norm``: the L_p regulariser of the biases; the closed
                          form below raises the ratios to 1 / (p + 1)

**The biases** (the paper's closed form, with the other bias held fixed):

    t+_k = ( Σ_{pairs with k_i = k} L_ij / t-_{k_j}  /  Σ_{pairs with k_i = 1} L_ij / t-_{k_j} )^(1/(p+1))
    t-_l = ( Σ_{pairs with k_j = l} L_ij / t+_{k_i}  /  Σ_{pairs with k_j = 1} L_ij / t+_{k_i} )^(1/(p+1))

recomputed from the current trees' losses after every boosting round (the lambdas of
tree m use the biases from the model of m - 1 trees; the first tree uses t = 1, plain
LambdaMART on click labels). p = 0, the paper's estimator, is the default; the authors'
LightGBM code regularises with exponent 1/2 (p = 1) and XGBoost's ``lambdarank_unbiased``
with p = 2 (``lambdarank_bias_norm``), which both shrink the biases towards 1. Under the
position-based model with examination p_k, a clicked document's rank is drawn in
proportion to p_k, so t+_k / t+_1 estimates p_k / p_1 (test: the method recovers the
biases of a log whose rankings are shuffled in every session). Where one deterministic
ranker logged every session, relevance also falls with the rank, and t+ takes that in too:
on the embedded default with eta 2, t+_2..5 = 0.21, 0.078, 0.041, 0.024 against
p_k = 0.25, 0.111, 0.0625, 0.04 (the clicks at lower ranks are weighted up more than the
examination alone would).

**The data** (``session_pairs``): every pair (clicked i, non-clicked j) of every
displayed session of ``TrainingData.displayed("train")``. Identical pairs of different
sessions (same two documents at the same two ranks) are merged into one pair weighing
the number of sessions it occurred in: with a deterministic production ranker every pass
shows the same list and only the clicks differ, so 100 passes of the embedded default's
4.5 M session pairs merge into about 0.5 M. The merge is exact because nothing of a pair
depends on its session: LambdaMART's ΔNDCG normalises by each session's ideal DCG (which
depends on its number of clicks); we use |ΔDCG| instead, |1/ln(1 + r_i) - 1/ln(1 + r_j)|
with r the current model's ranks among the query's training documents (the documents of
its sessions with a pair), which weighs a session's pairs the same whatever its other
clicks. LightGBM sees each document once; the objective sums its pairs' lambdas.

**Positions**: ranks from ``positions`` on share one bias (one bin), as the authors' code
does (its ``position_bins``): deep ranks get few clicks, and a bias estimated from few is
noisy, while every bin's pairs get the same total weight after the division (the
closed form makes Σ_{k_i = k} L_ij / (t+_k t-_{k_j}) equal for every k).

Selection: learning rate, leaves and trees on validation clicks as for every tree method
(``trees.select_trees``); the biases of the chosen candidate at its chosen tree count go
into ``info`` (``position_bias``). The log's propensities are not used.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cltr.core.clicks import Displayed
from cltr.methods import Method, TrainingData
from cltr.methods.trees import TreeOptions, candidate_key, floored_curvature, select_trees, state_of_choice
from cltr.options import option

__all__ = ["METHOD", "PairwiseDebiasingObjective", "SessionPairs", "UnbiasedLambdaMARTOptions", "session_pairs"]

ORDER = 65
SIGMA = 1.0  # LightGBM's and XGBoost's default sigmoid of the pair loss
PAIR_CHUNK = 1 << 22  # session pairs expanded at a time before merging


@dataclass(frozen=True)
class SessionPairs:
    """The (clicked, non-clicked) pairs of a log's sessions, identical ones merged.

    Attributes
    ----------
    rows : ndarray of int64, shape (n_rows,)
        Row of the split's ``X`` behind each training row (increasing, so grouped by query).
    offsets : ndarray of int64, shape (n_queries + 1,)
        Training rows of each query that has a pair: ``offsets[q]:offsets[q + 1]``.
    high, low : ndarray of int64, shape (n_pairs,)
        Training row of the clicked and of the non-clicked document.
    high_bin, low_bin : ndarray of int64, shape (n_pairs,)
        Their position bins: rank - 1, ranks from ``positions`` on sharing bin positions - 1.
    count : ndarray of float64, shape (n_pairs,)
        Sessions in which the pair occurred, at those ranks.
    positions : int
        Number of bins.
    n_sessions : int
        Sessions with at least one pair.
    """

    rows: np.ndarray
    offsets: np.ndarray
    high: np.ndarray
    low: np.ndarray
    high_bin: np.ndarray
    low_bin: np.ndarray
    count: np.ndarray
    positions: int
    n_sessions: int

    def __len__(self) -> int:
        return len(self.high)

    @property
    def session_pairs(self) -> int:
        """Pairs before merging."""
        return int(self.count.sum())


def _ranges(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Concatenation of arange(s, s + k) over (s, k), without a Python loop."""
    first = np.cumsum(sizes) - sizes
    return np.arange(int(sizes.sum()), dtype=np.int64) + np.repeat(starts - first, sizes)


def session_pairs(displayed: Displayed, *, positions: int) -> SessionPairs:
    """Every (clicked, non-clicked) pair of every session, merged over sessions.

    Parameters
    ----------
    displayed : Displayed
        Every displayed document of every session (``TrainingData.displayed``).
    positions : int
        Bins of position bias: ranks 1..positions-1 each their own, the rest one (>= 1).

    Returns
    -------
    SessionPairs
    """
    if isinstance(positions, bool) or int(positions) != positions or positions < 1:
        raise ValueError(f"positions must be an integer >= 1, found {positions!r}")
    click = np.asarray(displayed.click) == 1
    session = np.asarray(displayed.session, dtype=np.int64)
    n_sessions = displayed.n_sessions
    clicked_rows = np.flatnonzero(click)
    other_rows = np.flatnonzero(~click)
    # the non-clicked rows are in session order: each session's are one contiguous range
    others = np.bincount(session[other_rows], minlength=n_sessions)
    other_start = np.cumsum(others) - others
    partners = others[session[clicked_rows]]
    if partners.sum() == 0:
        raise ValueError(
            "no training session has both a clicked and a non-clicked displayed document; "
            "pairwise debiasing has no pair to learn from"
        )
    doc = np.asarray(displayed.doc, dtype=np.int64)
    rows, row_of = np.unique(doc, return_inverse=True)  # training rows: the displayed documents
    bins = np.minimum(np.asarray(displayed.rank, dtype=np.int64), int(positions)) - 1
    n_items = len(rows) * int(positions)
    if n_items >= 3_037_000_499:  # item codes are squared into one int64 key
        raise ValueError(
            f"{len(rows)} documents x {positions} positions are too many to key pairs; use fewer --positions"
        )
    item = row_of.ravel() * int(positions) + bins  # (training row, bin) of every displayed row
    # Expand a chunk of clicked rows' pairs at a time and merge them there, so that memory
    # stays bounded by the chunk and by the merged pairs, not by every session's pairs.
    keys, counts = [], []
    ends = np.cumsum(partners)
    start = 0
    while start < len(clicked_rows):
        done = int(ends[start - 1]) if start else 0
        stop = max(int(np.searchsorted(ends, done + PAIR_CHUNK, side="right")), start + 1)
        chunk = clicked_rows[start:stop]
        sizes = partners[start:stop]
        high = np.repeat(item[chunk], sizes)
        low = item[other_rows[_ranges(other_start[session[chunk]], sizes)]]
        key, count = np.unique(high * n_items + low, return_counts=True)
        keys.append(key)
        counts.append(count)
        start = stop
    key, inverse = np.unique(np.concatenate(keys), return_inverse=True)
    count = np.bincount(inverse.ravel(), weights=np.concatenate(counts).astype(np.float64), minlength=len(key))
    high_item, low_item = np.divmod(key, n_items)
    query = np.asarray(displayed.query, dtype=np.int64)
    row_query = np.zeros(len(rows), dtype=np.int64)
    row_query[row_of.ravel()] = query
    _, per_query = np.unique(row_query, return_counts=True)
    used_sessions = np.count_nonzero(np.bincount(session[clicked_rows], weights=partners, minlength=n_sessions))
    return SessionPairs(
        rows=rows.astype(np.int64),
        offsets=np.concatenate([[0], np.cumsum(per_query)]).astype(np.int64),
        high=high_item // positions,
        low=low_item // positions,
        high_bin=high_item % positions,
        low_bin=low_item % positions,
        count=count,
        positions=int(positions),
        n_sessions=int(used_sessions),
    )


class PairwiseDebiasingObjective:
    """LightGBM custom objective of Unbiased LambdaMART, with its biases (module docs).

    Called once per boosting round with the current scores: returns the debiased
    LambdaMART gradient and curvature per training row, then re-estimates t+ and t- from
    the current pair losses for the next round. ``start`` (called by ``select_trees``
    before each grid candidate) resets the biases to 1, and the biases behind each tree
    of each candidate are kept in ``runs``.

    Gradient and curvature per pair, with w_ij = count_ij / (t+_{k_i} t-_{k_j}),
    ρ_ij = 1 / (1 + exp(σ (f_i - f_j))) and Δ_ij = |ΔDCG_ij|:

        dL/df_i = -σ ρ Δ w,  dL/df_j = +σ ρ Δ w,  curvature σ² ρ (1 - ρ) Δ w on both,

    LambdaMART's own (LightGBM's lambdarank), summed over each document's pairs.

    Parameters
    ----------
    pairs : SessionPairs
    bias_norm : float
        p of the L_p regulariser (>= 0).
    """

    def __init__(self, pairs: SessionPairs, *, bias_norm: float = 0.0):
        if not bias_norm >= 0:
            raise ValueError(f"bias_norm must be >= 0, found {bias_norm!r}")
        self.pairs = pairs
        self.exponent = 1.0 / (1.0 + float(bias_norm))
        self.n_rows = len(pairs.rows)
        self.row_query = np.repeat(np.arange(len(pairs.offsets) - 1), np.diff(pairs.offsets))
        self.weighted_pairs = {
            "clicked": np.bincount(pairs.high_bin, weights=pairs.count, minlength=pairs.positions),
            "non_clicked": np.bincount(pairs.low_bin, weights=pairs.count, minlength=pairs.positions),
        }
        if self.weighted_pairs["clicked"][0] == 0 or self.weighted_pairs["non_clicked"][0] == 0:
            raise ValueError(
                "no session pair has its clicked (or its non-clicked) document at rank 1; pairwise "
                "debiasing normalises the position biases at rank 1"
            )
        self.runs: dict = {}
        self.start(None)

    def start(self, params: dict | None) -> None:
        """Biases back to 1 for a new candidate (``params``: its learning rate and leaves)."""
        self.click_bias = np.ones(self.pairs.positions)
        self.nonclick_bias = np.ones(self.pairs.positions)
        self.history: list[tuple[np.ndarray, np.ndarray]] = []
        if params is not None:
            self.runs[candidate_key(params)] = self.history

    def discounts(self, scores: np.ndarray) -> np.ndarray:
        """1/ln(1 + r) of every training row at its rank r under ``scores`` within its
        query (ties broken by row order), shape (n_rows,)."""
        order = np.lexsort((-scores, self.row_query))
        rank = np.empty(self.n_rows, dtype=np.float64)
        rank[order] = np.arange(self.n_rows) - self.pairs.offsets[self.row_query[order]] + 1
        return 1.0 / np.log1p(rank)

    def pair_terms(self, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(delta, rho, cost)`` per pair: |ΔDCG|, 1/(1 + exp(σ(f_i - f_j))), and
        count · |ΔDCG| · log(1 + exp(-σ(f_i - f_j)))."""
        pairs = self.pairs
        discount = self.discounts(scores)
        delta = np.abs(discount[pairs.high] - discount[pairs.low])
        margin = SIGMA * (scores[pairs.high] - scores[pairs.low])
        # one exp serves both: with e = exp(-|m|), ρ = σ(-m) and log(1 + exp(-m)) = max(-m, 0) + log1p(e)
        tail = np.exp(-np.abs(margin))
        rho = np.where(margin >= 0, tail, 1.0) / (1.0 + tail)
        return delta, rho, pairs.count * delta * (np.maximum(-margin, 0.0) + np.log1p(tail))

    def update_biases(self, cost: np.ndarray) -> None:
        """The closed form of the module docs, from each pair's (count-weighted) cost."""
        pairs, size = self.pairs, self.pairs.positions
        clicked = np.bincount(pairs.high_bin, weights=cost / self.nonclick_bias[pairs.low_bin], minlength=size)
        non_clicked = np.bincount(pairs.low_bin, weights=cost / self.click_bias[pairs.high_bin], minlength=size)
        # a bin without pairs keeps bias 1: no pair divides by it
        self.click_bias = np.where(clicked > 0, clicked / clicked[0], 1.0) ** self.exponent
        self.nonclick_bias = np.where(non_clicked > 0, non_clicked / non_clicked[0], 1.0) ** self.exponent

    def __call__(self, preds, _dataset) -> tuple[np.ndarray, np.ndarray]:
        scores = np.asarray(preds, dtype=np.float64)
        pairs = self.pairs
        delta, rho, cost = self.pair_terms(scores)
        weight = pairs.count / (self.click_bias[pairs.high_bin] * self.nonclick_bias[pairs.low_bin])
        lam = SIGMA * rho * delta * weight
        curvature = (SIGMA * SIGMA) * rho * (1.0 - rho) * delta * weight
        grad = np.bincount(pairs.low, weights=lam, minlength=self.n_rows) - np.bincount(
            pairs.high, weights=lam, minlength=self.n_rows
        )
        hess = np.bincount(pairs.high, weights=curvature, minlength=self.n_rows) + np.bincount(
            pairs.low, weights=curvature, minlength=self.n_rows
        )
        self.history.append((self.click_bias, self.nonclick_bias))
        self.update_biases(cost)
        # well separated pairs have ρ(1 - ρ) -> 0: a tiny floor keeps every sum positive
        return grad, floored_curvature(hess)


@dataclass(frozen=True)
class UnbiasedLambdaMARTOptions(TreeOptions):
    positions: int = option(
        8,
        "Ranks with their own position biases t+ and t-: ranks 1..N-1 each, the rest "
        "share one (the authors' position_bins, 12 there; deep ranks get few clicks).",
        low=2,
    )
    bias_norm: float = option(
        0.0,
        "p of the L_p regulariser of the biases: the closed-form ratios are raised "
        "to 1/(p+1); 0 is the paper's estimator, XGBoost uses 2.",
        low=0,
    )


def train(data: TrainingData, options: UnbiasedLambdaMARTOptions, *, progress=None):
    displayed = data.displayed("train")
    positions = int(min(options.positions, max(int(displayed.rank.max()) if len(displayed) else 1, 1)))
    pairs = session_pairs(displayed, positions=positions)
    objective = PairwiseDebiasingObjective(pairs, bias_norm=options.bias_norm)
    scorer, info = select_trees(
        data,
        options,
        name="unbiased-lambdamart",
        X=data.dataset.train.X[pairs.rows],
        label=np.zeros(len(pairs.rows)),
        group=None,
        objective=objective,
        progress=progress,
    )
    click_bias, nonclick_bias = state_of_choice(objective.runs, info["chosen"])
    info.update(
        {
            "position_bias": {
                "rank": list(range(1, positions + 1)),
                "click": click_bias.tolist(),
                "non_click": nonclick_bias.tolist(),
                "clicked_pairs": objective.weighted_pairs["clicked"].tolist(),
                "non_clicked_pairs": objective.weighted_pairs["non_clicked"].tolist(),
            },
            "positions": positions,
            "bias_norm": float(options.bias_norm),
            "training_rows": len(pairs.rows),
            "training_pairs": len(pairs),
            "session_pairs": pairs.session_pairs,
            "training_sessions": pairs.n_sessions,
        }
    )
    return scorer, info


def tables(info: dict) -> list:
    """The selection grid, and the biases behind the chosen model's last tree."""
    rows = info["selection"]
    columns = [c for c in rows[0] if c not in ("trace",) and not isinstance(rows[0][c], (list, dict))]
    bias = info["position_bias"]
    last = len(bias["rank"])
    position_rows = [
        {
            "rank": f">={r}" if r == last and last == info["positions"] and r > 1 else str(r),
            "t_plus": bias["click"][i],
            "t_minus": bias["non_click"][i],
            "clicked_pairs": bias["clicked_pairs"][i],
            "non_clicked_pairs": bias["non_clicked_pairs"][i],
        }
        for i, r in enumerate(bias["rank"])
    ]
    return [
        ("selection:", rows, columns),
        (
            "position biases of the chosen model (t+ of clicks, t- of non-clicks, 1 at rank 1):",
            position_rows,
            ["rank", "t_plus", "t_minus", "clicked_pairs", "non_clicked_pairs"],
        ),
    ]


METHOD = Method(
    name="unbiased-lambdamart",
    label="Unbiased LambdaMART",
    options=UnbiasedLambdaMARTOptions,
    train=train,
    tuned_once=("learning_rate", "num_leaves"),
    tables=tables,
    weighted=False,  # the biases are learned; no 1/q is read
    summary="Pairwise debiasing: LambdaMART with click / non-click position biases learned jointly.",
    description="Unbiased LambdaMART (Hu et al., WWW 2019): LambdaMART (LightGBM, custom objective) on the "
    "clicked vs non-clicked pairs of every training session, each pair's lambda divided by the "
    "position bias t+ of the clicked document's rank and t- of the non-clicked one's, both estimated "
    "in closed form from the pair losses after every tree. Learning rate and leaves are chosen, and "
    "trees early-stopped, by SNIPS Avg DCG on validation clicks. Needs every displayed document of "
    "every session (a simulated log, or an imported one with its impressions).",
    scorer="lightgbm",
)
