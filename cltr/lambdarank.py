"""Gradient-boosted trees (LightGBM) on clicks: the LambdaRank baseline and Tree PropDCG.

LambdaRank treats clicks as relevance labels (the paper's baseline, Sec. 5); Tree PropDCG
fits the trees to the propensity-weighted hinge bound R(f) of Sec. 4 through a custom
objective (the open question of the paper's conclusion: a tree model trained in the
counterfactual framework; see ``PropensityObjective``). Both choose learning rate and
leaves on validation clicks and stop growing trees on the same estimate, by one
function, ``select_trees``.

Legend (paper Sec. 5, "LambdaRank" baseline; DESIGN.md "Baselines"):
    clicks as labels       -> ``ClickLabels.label``: 1 for a clicked document, else 0
    one LightGBM query     -> ``ClickLabels.group``: a group of consecutive rows
    "no split uses more than 50% of the features" -> ``feature_fraction_bynode = 0.5``
    learning rate, leaves  -> chosen on validation clicks by the SNIPS Avg DCG estimate
    number of trees        -> early stopping on the same estimate

Click labels (the choice, documented): with ``labels="documents"`` (the default, as the
paper describes the baseline) a document is relevant iff it was clicked at least once in
the click log in use, and each query is one group of all its candidate documents. With
``labels="sessions"`` every session (query, pass) with at least one click is its own
group of all the query's candidates, labelled 1 where clicked in that session, so a
document clicked in many sessions weighs more. In both, a group without any clicked
document is left out of the training set: LambdaRank has no pair to order there (its
gradients are zero), and keeping its rows would only make ``min_data_in_leaf`` count
documents that carry no information. Validation documents are never left out: the
selection criterion ranks every candidate of every validation query.

This is the only module that imports ``lightgbm``, and it does so inside functions, so
that importing ``cltr`` (and its command line) stays fast and works without it until a
tree model is trained or loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Callable

import numpy as np

from cltr.clicks import ClickLog
from cltr.datasets import Queries
from cltr.models import SCORERS
from cltr.objectives import click_pairs, rank_weight, risk_gradient
from cltr.pipeline import stream
from cltr.selection import select_on_validation

__all__ = ["ClickLabels", "click_labels", "TreeScorer", "fit_lambdarank", "train_lambdarank",
           "PropensityObjective", "propensity_objective", "fit_tree_propdcg", "train_tree_propdcg",
           "select_trees", "usable_leaves", "LEARNING_RATE_GRID", "NUM_LEAVES_GRID", "LABEL_CHOICES"]

LEARNING_RATE_GRID = (0.001, 0.01, 0.1)
NUM_LEAVES_GRID = tuple(2 ** k for k in range(1, 9))  # 2, 4, ..., 256
LABEL_CHOICES = ("documents", "sessions")


# -- click labels ---------------------------------------------------------------------

@dataclass(frozen=True)
class ClickLabels:
    """A LightGBM ranking training set made from clicks.

    Attributes
    ----------
    rows : ndarray of int64, shape (n_rows,)
        Row of the split's ``X`` behind each training row (a row repeats under
        ``labels="sessions"``).
    label : ndarray of float64, shape (n_rows,)
        1.0 for a clicked document, 0.0 otherwise.
    group : ndarray of int64, shape (n_groups,)
        Sizes of consecutive groups; ``group.sum() == n_rows``.
    group_query : ndarray of int64, shape (n_groups,)
        Query (index into the split) of each group.
    """

    rows: np.ndarray
    label: np.ndarray
    group: np.ndarray
    group_query: np.ndarray


def _query_rows(offsets: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of the given queries, concatenated in order, and the start of each block."""
    starts, sizes = offsets[queries], offsets[queries + 1] - offsets[queries]
    block_start = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    rows = np.repeat(starts - block_start[:-1], sizes) + np.arange(block_start[-1])
    return rows.astype(np.int64), block_start[:-1]


def click_labels(queries: Queries, log: ClickLog, *, labels: str = "documents") -> ClickLabels:
    """Turn a click log into LightGBM ranking rows, labels and groups (see the module doc).

    Parameters
    ----------
    queries : Queries
        The split the clicks were logged on (``n_docs`` rows).
    log : ClickLog
        Its clicks; ``log.doc`` indexes ``queries`` rows.
    labels : {"documents", "sessions"}
        One group per query with a click, a document relevant iff ever clicked; or one
        group per session with a click, relevant iff clicked in that session.

    Returns
    -------
    ClickLabels
        Groups without any click are left out.
    """
    if labels not in LABEL_CHOICES:
        raise ValueError(f"labels must be one of {', '.join(LABEL_CHOICES)}, found {labels!r}")
    offsets = np.asarray(queries.offsets, dtype=np.int64)
    if len(log) and (log.doc.max() >= queries.n_docs or log.query.max() >= queries.n_queries):
        raise ValueError(f"the click log refers to documents beyond the split's {queries.n_docs} rows; "
                         "it was logged on another split")
    if labels == "documents":
        clicked = np.bincount(log.doc, minlength=queries.n_docs) > 0
        kept = np.flatnonzero(np.bincount(log.query, minlength=queries.n_queries) > 0)
        rows, _ = _query_rows(offsets, kept)
        return ClickLabels(rows=rows, label=clicked[rows].astype(np.float64),
                           group=(offsets[kept + 1] - offsets[kept]).astype(np.int64),
                           group_query=kept.astype(np.int64))
    # One group per (pass, query) with a click, in log (pass) order.
    session = log.pass_index.astype(np.int64) * queries.n_queries + log.query
    unique_sessions, session_of_click = np.unique(session, return_inverse=True)
    group_query = (unique_sessions % queries.n_queries).astype(np.int64)
    rows, block_start = _query_rows(offsets, group_query)
    label = np.zeros(len(rows))
    label[block_start[session_of_click] + (log.doc - offsets[log.query])] = 1.0
    return ClickLabels(rows=rows, label=label,
                       group=(offsets[group_query + 1] - offsets[group_query]).astype(np.int64),
                       group_query=group_query)


# -- the scorer -----------------------------------------------------------------------

@dataclass(frozen=True)
class TreeScorer:
    """A LightGBM model kept as its model string (a numpy bytes array in artifacts)."""

    model_string: str
    threads: int = 1
    kind: str = "lightgbm"

    @cached_property
    def booster(self):
        import lightgbm

        return lightgbm.Booster(model_str=self.model_string)

    def scores(self, X: np.ndarray) -> np.ndarray:
        """Raw scores of the rows of ``X``, shape (n_docs,)."""
        return np.asarray(self.booster.predict(X, raw_score=True, num_threads=self.threads),
                          dtype=np.float64)

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {"model_string": np.array(self.model_string.encode("utf-8"))}

    @classmethod
    def from_arrays(cls, arrays) -> "TreeScorer":
        value = np.asarray(arrays["model_string"]).item()
        return cls(model_string=value.decode("utf-8") if isinstance(value, bytes) else str(value))


SCORERS["lightgbm"] = TreeScorer


class _Precomputed:
    """Scores computed already (LightGBM's running validation scores), as a scorer."""

    def __init__(self, scores: np.ndarray):
        self._scores = np.asarray(scores, dtype=np.float64)

    def scores(self, X: np.ndarray) -> np.ndarray:
        if len(X) != len(self._scores):
            raise ValueError(f"precomputed scores are for {len(self._scores)} rows, asked for {len(X)}")
        return self._scores


# -- training -------------------------------------------------------------------------

MIN_DATA_IN_LEAF = 20  # LightGBM's default, named because the leaf grid is cut with it

# Early stopping of every grid candidate (both tree methods): evaluate every EVAL_EVERY
# trees, stop after PATIENCE trees without a better estimate, and grow at most
# min(MAX_ROUNDS, SHRINKAGE_BUDGET / learning_rate) trees. The budget is in units of
# learning rate x trees, the distance the boosting path has travelled: it trims only the
# high learning rates (200 trees at 0.1; the low rates keep their 1000). The earlier
# settings (every 10 trees, patience 100, 1000 trees at every rate) cost 1.6x the time
# (README, "Tree PropDCG", grid cost) and selected the same LambdaRank model on MQ2008.
MAX_ROUNDS, EVAL_EVERY, PATIENCE, SHRINKAGE_BUDGET = 1000, 5, 50, 20.0


def lightgbm_params(*, learning_rate: float, num_leaves: int, seed: int, threads: int = 1,
                    objective: str = "lambdarank") -> dict:
    """LightGBM parameters of the tree methods: deterministic given ``seed`` and ``threads``.

    ``objective="none"`` is for a custom objective (Tree PropDCG): LightGBM then starts
    every score at 0 and asks the caller for gradients and curvatures at each tree.
    """
    if not learning_rate > 0:
        raise ValueError(f"learning_rate must be positive, found {learning_rate}")
    if isinstance(num_leaves, bool) or int(num_leaves) != num_leaves or num_leaves < 2:
        raise ValueError(f"num_leaves must be an integer >= 2, found {num_leaves!r}")
    if isinstance(threads, bool) or int(threads) != threads or threads < 1:
        raise ValueError(f"threads must be a positive integer, found {threads!r}")
    return {
        "objective": objective,
        "learning_rate": float(learning_rate),
        "num_leaves": int(num_leaves),
        "min_data_in_leaf": MIN_DATA_IN_LEAF,
        "feature_fraction_bynode": 0.5,
        "deterministic": True,
        "force_col_wise": True,
        "num_threads": int(threads),
        "seed": int(seed),
        "metric": "None",
        "verbosity": -1,
    }


def usable_leaves(leaves, n_rows: int) -> list[int]:
    """The leaf counts of a grid that can give different trees on ``n_rows`` rows.

    A leaf holds at least ``MIN_DATA_IN_LEAF`` rows, so no tree has more than
    ``n_rows // MIN_DATA_IN_LEAF`` leaves, and every cap at or above that grows the same
    trees (leaf-wise growth just runs out of splits first). Of those caps only the
    smallest is kept.

    Parameters
    ----------
    leaves : sequence of int
        Increasing leaf counts.
    n_rows : int
        Training rows.

    Returns
    -------
    list of int
    """
    most = max(2, n_rows // MIN_DATA_IN_LEAF)
    kept = []
    for count in leaves:
        kept.append(int(count))
        if count >= most:
            break
    return kept


@dataclass
class _TreeSets:
    """LightGBM Datasets built (binned) once and shared by every candidate of a grid."""

    train: object
    valid: object | None


def _tree_sets(X: np.ndarray, *, label: np.ndarray, group: np.ndarray | None, valid_X: np.ndarray | None,
               threads: int) -> _TreeSets:
    import lightgbm

    # Dataset construction gets the same thread count: with LightGBM's default (every core)
    # OpenMP's waiting threads compete with the 1-thread training on busy machines. Its
    # bins depend on min_data_in_leaf, so that is fixed here as in lightgbm_params.
    params = {"verbosity": -1, "num_threads": int(threads), "min_data_in_leaf": MIN_DATA_IN_LEAF}
    train = lightgbm.Dataset(X, label=label, group=group, params=params, free_raw_data=True)
    train.construct()
    valid = None
    if valid_X is not None:
        valid = lightgbm.Dataset(valid_X, label=np.zeros(len(valid_X)), reference=train, params=params)
        valid.construct()
    return _TreeSets(train, valid)


def _check_rounds(**values) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or int(value) != value or value < 1:
            raise ValueError(f"{name} must be a positive integer, found {value!r}")


def _grow(params: dict, sets: _TreeSets, *, objective: Callable | None, n_estimators: int | None,
          criterion: Callable[[np.ndarray], float] | None, max_rounds: int, eval_every: int,
          patience: int, threads: int) -> tuple[TreeScorer, dict]:
    """Boost trees, a fixed number or with early stopping on ``criterion`` (see fit_lambdarank)."""
    import lightgbm

    early = n_estimators is None
    if early and (sets.valid is None or criterion is None):
        raise ValueError("early stopping needs valid_X and criterion; otherwise give n_estimators")
    _check_rounds(max_rounds=max_rounds, eval_every=eval_every, patience=patience,
                  n_estimators=1 if n_estimators is None else n_estimators)
    booster = lightgbm.Booster(params=params, train_set=sets.train)
    if not early:
        for _ in range(int(n_estimators)):
            booster.update(fobj=objective)
        model = booster.model_to_string(num_iteration=-1)
        return TreeScorer(model, threads=threads), {
            "n_estimators": int(n_estimators), "rounds": int(n_estimators), "early_stopped": False,
            "best_criterion": float("nan"), "trace": []}

    booster.add_valid(sets.valid, "vali")

    def feval(scores, _dataset):
        return "criterion", float(criterion(np.asarray(scores, dtype=np.float64))), True

    best_value, best_rounds, rounds, trace = -np.inf, 0, 0, []
    stopped = False
    while rounds < max_rounds:
        booster.update(fobj=objective)
        rounds += 1
        if rounds % eval_every and rounds != max_rounds:
            continue
        # LightGBM keeps the validation scores up to date tree by tree; eval_valid hands
        # them over without predicting again (the same sums as predict, in the same order).
        value = booster.eval_valid(feval)[0][2]
        trace.append((rounds, value))
        if np.isfinite(value) and value > best_value:
            best_value, best_rounds = value, rounds
        if rounds - max(best_rounds, 0) >= patience:
            stopped = rounds < max_rounds
            break
    if best_rounds == 0:  # every evaluation was NaN: keep what was grown
        best_rounds = rounds
    model = booster.model_to_string(num_iteration=best_rounds)
    return TreeScorer(model, threads=threads), {
        "n_estimators": int(best_rounds), "rounds": int(rounds), "early_stopped": bool(stopped),
        "best_criterion": float(best_value), "trace": trace}


def fit_lambdarank(
    X: np.ndarray,
    click: ClickLabels,
    *,
    learning_rate: float,
    num_leaves: int,
    seed: int,
    n_estimators: int | None = None,
    valid_X: np.ndarray | None = None,
    criterion: Callable[[np.ndarray], float] | None = None,
    max_rounds: int = MAX_ROUNDS,
    eval_every: int = EVAL_EVERY,
    patience: int = PATIENCE,
    threads: int = 1,
) -> tuple[TreeScorer, dict]:
    """Boost LambdaRank trees on click labels; stop early on a validation criterion.

    Parameters
    ----------
    X : ndarray, shape (n_docs, n_features)
        Features of the split; the training rows are ``X[click.rows]``.
    click : ClickLabels
        Rows, labels and groups (``click_labels``).
    learning_rate, num_leaves : float, int
    seed : int
        LightGBM's ``seed`` (it derives every other LightGBM seed from it).
    n_estimators : int, optional
        Exactly this many trees, no early stopping.
    valid_X : ndarray, shape (n_valid_docs, n_features), optional
        Validation features; with ``criterion``, early stopping is on.
    criterion : callable scores -> float, optional
        Higher is better; given the model's scores of ``valid_X``, shape (n_valid_docs,).
    max_rounds, eval_every, patience : int
        Most trees; evaluate the criterion every ``eval_every`` trees (and at the last);
        stop once ``patience`` trees have passed without a strict improvement. The model
        keeps the trees up to the best evaluated point (the earliest of equals).
    threads : int
        LightGBM threads. With ``deterministic=True`` the model is the same on every run
        with the same seed *and* thread count; another thread count may give another
        model (floating-point sums in another order), so it is a recorded option.

    Returns
    -------
    scorer : TreeScorer
    info : dict
        ``n_estimators`` (trees kept), ``rounds`` (trees grown), ``early_stopped``,
        ``best_criterion`` and the ``trace`` of (trees, criterion) pairs.
    """
    if len(click.group) == 0:
        raise ValueError("no training query has a clicked document; LambdaRank has nothing to learn from")
    if int(click.group.sum()) != len(click.rows):
        raise ValueError(f"group sizes sum to {int(click.group.sum())}, expected {len(click.rows)} rows")
    params = lightgbm_params(learning_rate=learning_rate, num_leaves=num_leaves, seed=seed, threads=threads)
    if n_estimators is None and (valid_X is None or criterion is None):
        raise ValueError("early stopping needs valid_X and criterion; otherwise give n_estimators")
    sets = _tree_sets(X[click.rows], label=click.label, group=click.group,
                      valid_X=valid_X if n_estimators is None else None, threads=threads)
    return _grow(params, sets, objective=None, n_estimators=n_estimators, criterion=criterion,
                 max_rounds=max_rounds, eval_every=eval_every, patience=patience, threads=threads)


# -- Tree PropDCG ---------------------------------------------------------------------

HESSIAN_CHOICES = ("pairs", "constant")


class PropensityObjective:
    """LightGBM custom objective: the propensity-weighted hinge bound R(f) on the scores.

    Legend (paper Sec. 4, Eq. riskhinge; DESIGN.md "The general objective"):
        f(y), the tree ensemble's score -> ``preds`` (LightGBM's raw training scores)
        y_i, q_i, Y_i                   -> ``click_doc``, ``propensity``, the rows of ``click_query``
        lambda                          -> ``weight`` (``rank_weight("dcg" | "rbp:P" | "avgrank")``)

    **Gradient.** ``n · dR/df``, i.e. ``objectives.risk_gradient`` with ``n=1``: for a
    document y and example i with active pair (hinge > 0), c_i = lambda'(bound_i) / q_i
    is added to y's gradient and subtracted from y_i's. The factor n (the number of
    clicks) changes no minimiser and, with the curvature below, no leaf value (LightGBM's
    leaf value is -Σg / (Σh + lambda_l2), a ratio); it only keeps g and h per click of
    order lambda'/q whatever the log's size, so that LightGBM's absolute thresholds
    (``min_sum_hessian_in_leaf`` = 1e-3, split gains) mean the same thing on 200 clicks
    and on 200,000, where (1/n)-scaled values would fall below them.

    **Curvature** (``hessian="pairs"``, the default). R is piecewise linear in the scores
    inside every hinge and lambda is concave, so its true second derivative is 0 or
    negative: there is no Newton curvature to take, and LightGBM needs a positive one.
    We take, per document, the sum of the absolute values of its pair terms,

        h(y) = Σ_{i : y in A_i} c_i  +  Σ_{i : y = y_i} c_i |A_i|,

    the count of active pairs times lambda'/q. It is the Gauss–Newton curvature of the
    squared hinge ½ c_i max(0, 1 - (f(y_i) - f(y)))², whose slope equals the hinge's,
    c_i, where the pair sits at the tie f(y_i) = f(y) (every pair of the first tree), and
    it bounds the gradient: |g(y)| <= h(y) for every document, hence |Σg| <= Σh in every
    leaf. So each tree moves a leaf's scores by at most 1 (times the learning rate), the
    width of a hinge's linear piece: a step cannot jump a pair across its whole margin,
    and the step does not depend on the overall scale of the propensities or of lambda'.
    Documents in no active pair have g = h = 0 and pull no leaf either way (a floor of
    1e-9 of the initial mean curvature keeps every sum positive).

    ``hessian="constant"`` uses one number for every document instead, the mean of the
    pair curvature over the training documents at the start (all scores 0), so that both
    choices take steps of the same size at the first tree. Then a leaf's value is the
    mean gradient of its documents, in units of that constant: frequently clicked
    documents (many 1/q-weighted pairs) take larger steps than others. On validation
    clicks the pair curvature does better (README, "Tree PropDCG"), so it is the default.

    Parameters
    ----------
    offsets : ndarray, shape (n_queries + 1,)
        Query offsets of the training rows handed to LightGBM.
    click_query, click_doc : ndarray of int64, shape (n_clicks,)
        Query and row (within those training rows) of each click.
    propensity : ndarray, shape (n_clicks,)
        q_i of each click.
    weight : RankWeight or str
        lambda, e.g. ``"dcg"``.
    hessian : {"pairs", "constant"}
    """

    def __init__(self, offsets, click_query, click_doc, propensity, weight, *, hessian: str = "pairs"):
        if hessian not in HESSIAN_CHOICES:
            raise ValueError(f"hessian must be one of {', '.join(HESSIAN_CHOICES)}, found {hessian!r}")
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.click_query = np.asarray(click_query, dtype=np.int64)
        self.click_doc = np.asarray(click_doc, dtype=np.int64)
        self.propensity = np.asarray(propensity, dtype=np.float64)
        self.weight = rank_weight(weight)
        if len(self.click_doc) == 0:
            raise ValueError("no clicks: Tree PropDCG has nothing to learn from")
        self.pairs = click_pairs(self.offsets, self.click_query, self.click_doc)
        self._pair_click = self.click_doc[self.pairs[0]]
        self.hessian = hessian
        self.n_docs = int(self.offsets[-1])
        start = self.pair_curvature(np.zeros(self.n_docs))
        self.scale = float(start.mean())
        if not self.scale > 0:
            raise ValueError("no clicked document has another candidate in its query; "
                             "Tree PropDCG has no pair to order")
        self.floor = 1e-9 * self.scale

    def gradient(self, scores: np.ndarray) -> tuple[float, np.ndarray]:
        """``(n · R(f), n · dR/df)`` at ``scores``, shape (n_docs,), by ``risk_gradient``."""
        return risk_gradient(scores, self.offsets, self.click_query, self.click_doc, self.propensity,
                             self.weight, n=1, pairs=self.pairs)

    def pair_curvature(self, scores: np.ndarray) -> np.ndarray:
        """h(y) = Σ over y's active pairs of lambda'(bound_i) / q_i, shape (n_docs,)."""
        pair_example, pair_doc = self.pairs
        scores = np.asarray(scores, dtype=np.float64)
        # The same margins, bound and active set as objectives.risk_gradient (a hinge at
        # its kink inactive), computed here because that function returns only their sum.
        margin = 1.0 - (scores[self._pair_click] - scores[pair_doc])
        active = margin > 0.0
        bound = 1.0 + np.bincount(pair_example, weights=np.where(active, margin, 0.0),
                                  minlength=len(self.click_doc))
        coef = self.weight.derivative(bound) / self.propensity
        active_example = pair_example[active]
        n_active = np.bincount(active_example, minlength=len(self.click_doc))
        return (np.bincount(pair_doc[active], weights=coef[active_example], minlength=self.n_docs)
                + np.bincount(self.click_doc, weights=coef * n_active, minlength=self.n_docs))

    def curvature(self, scores: np.ndarray) -> np.ndarray:
        """The positive curvature handed to LightGBM, shape (n_docs,)."""
        if self.hessian == "constant":
            return np.full(self.n_docs, self.scale)
        return self.pair_curvature(scores) + self.floor

    def __call__(self, preds, _dataset) -> tuple[np.ndarray, np.ndarray]:
        scores = np.asarray(preds, dtype=np.float64)
        return self.gradient(scores)[1], self.curvature(scores)


def propensity_objective(queries: Queries, log: ClickLog, weight, *, hessian: str = "pairs"):
    """Tree PropDCG's training rows and objective from a click log.

    Parameters
    ----------
    queries : Queries
        The split the clicks were logged on.
    log : ClickLog
        Its clicks (queries, documents, propensities).
    weight : RankWeight or str
    hessian : {"pairs", "constant"}

    Returns
    -------
    rows : ndarray of int64, shape (n_rows,)
        Rows of ``queries.X`` given to LightGBM: every candidate of every query with a click
        (a query without one has no term in R(f)).
    objective : PropensityObjective
        Over those rows, in that order; repeated clicks (one document, one propensity)
        merged into one example of propensity q/m, which leaves n·R(f) unchanged.
    """
    click = click_labels(queries, log, labels="documents")
    if len(click.group) == 0:
        raise ValueError("no training query has a clicked document; Tree PropDCG has nothing to learn from")
    offsets = np.concatenate([[0], np.cumsum(click.group)]).astype(np.int64)
    position = np.searchsorted(click.group_query, log.query)
    doc = offsets[position] + (log.doc - np.asarray(queries.offsets, dtype=np.int64)[log.query])
    # m clicks on one document with one propensity q are m equal terms (1/q) lambda(bound):
    # one term with propensity q/m is the same sum, exactly, for R, its gradient and the
    # curvature. Over 100 passes of a fixed production ranking this merges most clicks.
    key = np.stack([doc.astype(np.float64), np.asarray(log.propensity, dtype=np.float64)], axis=1)
    unique, count = np.unique(key, axis=0, return_counts=True)
    unique_doc = unique[:, 0].astype(np.int64)
    unique_query = np.searchsorted(offsets, unique_doc, side="right") - 1
    return click.rows, PropensityObjective(offsets, unique_query, unique_doc, unique[:, 1] / count, weight,
                                           hessian=hessian)


def fit_tree_propdcg(
    X: np.ndarray,
    objective: PropensityObjective,
    *,
    learning_rate: float,
    num_leaves: int,
    seed: int,
    n_estimators: int | None = None,
    valid_X: np.ndarray | None = None,
    criterion: Callable[[np.ndarray], float] | None = None,
    max_rounds: int = MAX_ROUNDS,
    eval_every: int = EVAL_EVERY,
    patience: int = PATIENCE,
    threads: int = 1,
) -> tuple[TreeScorer, dict]:
    """Boost trees on R(f) through ``objective``; the options are ``fit_lambdarank``'s.

    Parameters
    ----------
    X : ndarray, shape (n_rows, n_features)
        The training rows of ``objective``, in its order (``X[rows]`` of
        ``propensity_objective``).
    objective : PropensityObjective

    Returns
    -------
    scorer, info
        As ``fit_lambdarank``.
    """
    if len(X) != objective.n_docs:
        raise ValueError(f"X has {len(X)} rows, the objective is over {objective.n_docs}")
    params = lightgbm_params(learning_rate=learning_rate, num_leaves=num_leaves, seed=seed, threads=threads,
                             objective="none")
    if n_estimators is None and (valid_X is None or criterion is None):
        raise ValueError("early stopping needs valid_X and criterion; otherwise give n_estimators")
    sets = _tree_sets(X, label=np.zeros(len(X)), group=None,
                      valid_X=valid_X if n_estimators is None else None, threads=threads)
    return _grow(params, sets, objective=objective, n_estimators=n_estimators, criterion=criterion,
                 max_rounds=max_rounds, eval_every=eval_every, patience=patience, threads=threads)


# -- the grid both tree methods share --------------------------------------------------

def select_trees(data, options: dict, *, name: str, X: np.ndarray, label: np.ndarray,
                 group: np.ndarray | None, objective: Callable | None, progress: Callable | None = None,
                 learning_rates=LEARNING_RATE_GRID, leaves=NUM_LEAVES_GRID):
    """Grid over learning rate x leaves, trees by early stopping, chosen on validation clicks.

    Parameters
    ----------
    data : methods.TrainingData
        ``data.estimate`` (SNIPS Avg DCG on validation clicks, seeded tie-breaks) is both the
        early-stopping criterion and the selection criterion; test labels are never read.
    options : dict
        ``learning_rate``, ``num_leaves`` (each fixes that axis), ``n_estimators`` (a fixed
        number of trees, no early stopping), ``threads``, ``max_rounds``, ``eval_every``,
        ``patience``, ``shrinkage_budget``; a missing or None value takes the default.
    name : str
        Seeds LightGBM: one seed for the whole grid, ``stream(data.seed, name)``.
    X : ndarray, shape (n_rows, n_features)
        Training rows; ``label`` shape (n_rows,), ``group`` the LightGBM query sizes or None.
    objective : callable or None
        A custom objective (``objective="none"`` in LightGBM), or None for LambdaRank.
    progress : callable, optional
        Called with each candidate's row.

    Returns
    -------
    scorer : TreeScorer
    info : dict
        ``chosen`` (learning_rate, num_leaves, n_estimators), ``validation_snips_avg_dcg``,
        ``selection`` (a row per candidate), ``lightgbm_seed``, ``early_stopping``.
    """
    threads = int(options.get("threads") or 1)
    n_estimators = options.get("n_estimators")
    max_rounds = int(options.get("max_rounds") or MAX_ROUNDS)
    eval_every = int(options.get("eval_every") or EVAL_EVERY)
    patience = int(options.get("patience") or PATIENCE)
    budget = float(options.get("shrinkage_budget") or SHRINKAGE_BUDGET)
    _check_rounds(max_rounds=max_rounds, eval_every=eval_every, patience=patience)
    if not budget > 0:
        raise ValueError(f"shrinkage_budget must be positive, found {budget}")
    rates = [float(options["learning_rate"])] if options.get("learning_rate") is not None else learning_rates
    if options.get("num_leaves") is not None:
        leaf_grid = [int(options["num_leaves"])]
    else:
        leaf_grid = usable_leaves(leaves, len(X))
    candidates = [{"learning_rate": float(r), "num_leaves": int(n)} for r in rates for n in leaf_grid]
    seed = int(stream(data.seed, name).integers(2 ** 31 - 1))
    sets = _tree_sets(X, label=label, group=group,
                      valid_X=data.dataset.vali.X if n_estimators is None else None, threads=threads)

    def criterion(scores):
        return data.estimate(_Precomputed(scores))

    def fit(params, _previous):
        base = "none" if objective is not None else "lambdarank"
        lgb_params = lightgbm_params(**params, seed=seed, threads=threads, objective=base)
        rounds = min(max_rounds, max(1, int(np.ceil(budget / params["learning_rate"] - 1e-9))))
        return _grow(lgb_params, sets, objective=objective,
                     n_estimators=None if n_estimators is None else int(n_estimators),
                     criterion=criterion, max_rounds=rounds, eval_every=eval_every, patience=patience,
                     threads=threads)

    selection = select_on_validation(candidates, fit, data.estimate, progress=progress)
    best_row = next(row for row in selection.table
                    if all(row[k] == v for k, v in selection.best_params.items()))
    chosen = {**selection.best_params, "n_estimators": best_row["n_estimators"]}
    info = {"chosen": chosen, "validation_snips_avg_dcg": selection.best_estimate,
            "selection": selection.table, "lightgbm_seed": seed,
            "early_stopping": {"max_rounds": max_rounds, "eval_every": eval_every, "patience": patience,
                               "shrinkage_budget": budget}}
    return selection.best, info


def train_lambdarank(data, options: dict, *, progress: Callable | None = None):
    """The ``lambdarank`` method: grid over learning rate and leaves, trees by early stopping.

    ``data`` is a ``methods.TrainingData``; ``options`` may hold ``labels`` ("documents" or
    "sessions") and every option of ``select_trees``. Every choice is made on validation
    clicks by ``data.estimate`` (SNIPS Avg DCG with the seeded tie-breaks); test labels
    are never read. Returns ``(scorer, info)`` as every method does.
    """
    labels = options.get("labels") or "documents"
    click = click_labels(data.dataset.train, data.train_log, labels=labels)
    if len(click.group) == 0:
        raise ValueError("no training query has a clicked document; LambdaRank has nothing to learn from")
    scorer, info = select_trees(data, options, name="lambdarank", X=data.dataset.train.X[click.rows],
                                label=click.label, group=click.group, objective=None, progress=progress)
    info.update({"labels": labels, "training_rows": int(len(click.rows)),
                 "training_groups": int(len(click.group))})
    return scorer, info


def train_tree_propdcg(data, options: dict, *, progress: Callable | None = None):
    """The ``tree-propdcg`` method: LightGBM on the propensity-weighted bound R(f).

    ``options`` may hold ``metric`` (rank weight: "dcg", "rbp:P", "avgrank"; default
    "dcg"), ``hessian`` ("pairs" or "constant", see ``PropensityObjective``) and every
    option of ``select_trees``; learning rate, leaves and trees are chosen on validation
    clicks exactly as for LambdaRank (the same grid, the same early stopping, the same
    criterion). Returns ``(scorer, info)``.
    """
    weight = rank_weight(options.get("metric") or "dcg")
    hessian = options.get("hessian") or "pairs"
    rows, objective = propensity_objective(data.dataset.train, data.train_log, weight, hessian=hessian)
    scorer, info = select_trees(data, options, name="tree-propdcg", X=data.dataset.train.X[rows],
                                label=np.zeros(len(rows)), group=None, objective=objective, progress=progress)
    info.update({"metric": weight.name, "hessian": hessian, "training_rows": int(len(rows)),
                 "training_clicks": int(len(data.train_log))})
    return scorer, info
