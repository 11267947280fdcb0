"""LambdaRank (LightGBM) on click labels: the paper's gradient-boosted-tree baseline.

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
from cltr.pipeline import stream
from cltr.selection import select_on_validation

__all__ = ["ClickLabels", "click_labels", "TreeScorer", "fit_lambdarank", "train_lambdarank",
           "LEARNING_RATE_GRID", "NUM_LEAVES_GRID", "LABEL_CHOICES"]

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

def lightgbm_params(*, learning_rate: float, num_leaves: int, seed: int, threads: int = 1) -> dict:
    """LightGBM parameters of the baseline: deterministic given ``seed`` and ``threads``."""
    if not learning_rate > 0:
        raise ValueError(f"learning_rate must be positive, found {learning_rate}")
    if isinstance(num_leaves, bool) or int(num_leaves) != num_leaves or num_leaves < 2:
        raise ValueError(f"num_leaves must be an integer >= 2, found {num_leaves!r}")
    if isinstance(threads, bool) or int(threads) != threads or threads < 1:
        raise ValueError(f"threads must be a positive integer, found {threads!r}")
    return {
        "objective": "lambdarank",
        "learning_rate": float(learning_rate),
        "num_leaves": int(num_leaves),
        "feature_fraction_bynode": 0.5,
        "deterministic": True,
        "force_col_wise": True,
        "num_threads": int(threads),
        "seed": int(seed),
        "metric": "None",
        "verbosity": -1,
    }


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
    max_rounds: int = 1000,
    eval_every: int = 10,
    patience: int = 100,
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
    import lightgbm

    if len(click.group) == 0:
        raise ValueError("no training query has a clicked document; LambdaRank has nothing to learn from")
    if int(click.group.sum()) != len(click.rows):
        raise ValueError(f"group sizes sum to {int(click.group.sum())}, expected {len(click.rows)} rows")
    early = n_estimators is None
    if early and (valid_X is None or criterion is None):
        raise ValueError("early stopping needs valid_X and criterion; otherwise give n_estimators")
    for name, value in (("max_rounds", max_rounds), ("eval_every", eval_every), ("patience", patience),
                        ("n_estimators", 1 if n_estimators is None else n_estimators)):
        if isinstance(value, bool) or int(value) != value or value < 1:
            raise ValueError(f"{name} must be a positive integer, found {value!r}")
    params = lightgbm_params(learning_rate=learning_rate, num_leaves=num_leaves, seed=seed, threads=threads)
    # Dataset construction gets the same thread count: with LightGBM's default (every core)
    # OpenMP's waiting threads compete with the 1-thread training on busy machines.
    dataset_params = {"verbosity": -1, "num_threads": params["num_threads"]}
    train_set = lightgbm.Dataset(X[click.rows], label=click.label, group=click.group,
                                 params=dataset_params, free_raw_data=True)
    booster = lightgbm.Booster(params=params, train_set=train_set)
    if not early:
        for _ in range(int(n_estimators)):
            booster.update()
        model = booster.model_to_string(num_iteration=-1)
        return TreeScorer(model, threads=threads), {
            "n_estimators": int(n_estimators), "rounds": int(n_estimators), "early_stopped": False,
            "best_criterion": float("nan"), "trace": []}

    valid_set = lightgbm.Dataset(valid_X, label=np.zeros(len(valid_X)), reference=train_set,
                                 params=dataset_params)
    booster.add_valid(valid_set, "vali")

    def feval(scores, _dataset):
        return "criterion", float(criterion(np.asarray(scores, dtype=np.float64))), True

    best_value, best_rounds, rounds, trace = -np.inf, 0, 0, []
    stopped = False
    while rounds < max_rounds:
        booster.update()
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


def train_lambdarank(data, options: dict, *, progress: Callable | None = None):
    """The ``lambdarank`` method: grid over learning rate and leaves, trees by early stopping.

    ``data`` is a ``methods.TrainingData``; ``options`` may hold ``learning_rate``,
    ``num_leaves`` (each fixes that axis of the grid), ``n_estimators`` (a fixed number of
    trees: no early stopping), ``labels`` ("documents" or "sessions"), ``threads``,
    ``max_rounds``, ``eval_every`` and ``patience``. Every choice is made on validation
    clicks by ``data.estimate`` (SNIPS Avg DCG with the seeded tie-breaks); test labels
    are never read. Returns ``(scorer, info)`` as every method does.
    """
    labels = options.get("labels") or "documents"
    threads = int(options.get("threads") or 1)
    n_estimators = options.get("n_estimators")
    dataset = data.dataset
    click = click_labels(dataset.train, data.train_log, labels=labels)
    if len(click.group) == 0:
        raise ValueError("no training query has a clicked document; LambdaRank has nothing to learn from")
    rates = [float(options["learning_rate"])] if options.get("learning_rate") is not None else LEARNING_RATE_GRID
    leaves = [int(options["num_leaves"])] if options.get("num_leaves") is not None else NUM_LEAVES_GRID
    candidates = [{"learning_rate": float(r), "num_leaves": int(n)} for r in rates for n in leaves]
    # One LightGBM seed for the whole grid, derived from the experiment seed.
    seed = int(stream(data.seed, "lambdarank").integers(2 ** 31 - 1))

    def criterion(scores):
        return data.estimate(_Precomputed(scores))

    def fit(params, _previous):
        return fit_lambdarank(
            dataset.train.X, click, **params, seed=seed,
            n_estimators=None if n_estimators is None else int(n_estimators),
            valid_X=dataset.vali.X, criterion=criterion, threads=threads,
            max_rounds=int(options.get("max_rounds") or 1000),
            eval_every=int(options.get("eval_every") or 10),
            patience=int(options.get("patience") or 100))

    selection = select_on_validation(candidates, fit, data.estimate, progress=progress)
    best_row = next(row for row in selection.table
                    if all(row[k] == v for k, v in selection.best_params.items()))
    chosen = {**selection.best_params, "n_estimators": best_row["n_estimators"]}
    info = {"chosen": chosen, "validation_snips_avg_dcg": selection.best_estimate,
            "selection": selection.table, "labels": labels, "lightgbm_seed": seed,
            "training_rows": int(len(click.rows)), "training_groups": int(len(click.group))}
    return selection.best, info
