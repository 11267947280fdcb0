"""LightGBM, shared by the tree methods (LambdaRank, Tree PropDCG): the scorer, the
parameters, binned Datasets, boosting with early stopping, and the learning rate x leaves
grid chosen on validation clicks.

This is the only module that imports ``lightgbm``, and it does so inside functions, so
that importing ``cltr`` (and its command line) stays fast and works without it until a
tree model is trained or loaded.

Early stopping of every grid candidate: evaluate every ``eval_every`` trees, stop after
``patience`` trees without a better estimate, and grow at most
min(``max_rounds``, ``shrinkage_budget`` / learning rate) trees. The budget is in units of
learning rate x trees, the distance the boosting path has travelled: it trims only the
high learning rates (200 trees at 0.1; the low rates keep their 1000).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from cltr.core.seeds import stream
from cltr.core.selection import select_on_validation
from cltr.methods import SelectionOptions
from cltr.options import option

if TYPE_CHECKING:  # imported where trees are grown: not at the CLI's startup
    import lightgbm

__all__ = [
    "TreeScorer",
    "TreeOptions",
    "lightgbm_params",
    "usable_leaves",
    "select_trees",
    "candidate_key",
    "state_of_choice",
    "LEARNING_RATE_GRID",
    "NUM_LEAVES_GRID",
    "MIN_DATA_IN_LEAF",
    "LeafPenaltyOptions",
    "expit",
    "floored_curvature",
    "selection_table",
    "linear_scores",
]

LEARNING_RATE_GRID = (0.001, 0.01, 0.1)
NUM_LEAVES_GRID = tuple(2**k for k in range(1, 9))  # 2, 4, ..., 256


@dataclass(frozen=True)
class TreeOptions(SelectionOptions):
    """The options every LightGBM method shares."""

    learning_rate: float | None = option(
        None,
        "Fix the learning rate [default: chosen over 0.001, 0.01, 0.1 on validation clicks].",
        low=0,
        low_open=True,
    )
    num_leaves: int | None = option(
        None,
        "Fix the leaves per tree [default: chosen over 2, 4, ..., 256 on "
        "validation clicks, up to the first count the training rows cannot "
        "fill, 20 rows a leaf].",
        low=2,
    )
    n_estimators: int | None = option(
        None,
        "Grow exactly this many trees (no early stopping) [default: early "
        "stopping on validation clicks, at most --max-rounds].",
        low=1,
    )
    threads: int = option(
        1, "LightGBM threads (part of the model's identity: deterministic per seed and count).", low=1
    )
    max_rounds: int = option(
        1000, "Most trees with early stopping (and at most --shrinkage-budget / learning rate).", low=1
    )
    shrinkage_budget: float = option(
        20.0, "Early stopping: grow at most this / learning rate trees (200 at 0.1).", low=0, low_open=True
    )
    patience: int = option(
        50, "Early stopping: stop after this many trees without a better validation estimate.", low=1
    )
    eval_every: int = option(5, "Early stopping: evaluate the validation estimate every this many trees.", low=1)


@dataclass(frozen=True)
class LeafPenaltyOptions(TreeOptions):
    """TreeOptions with a leaf penalty: the custom likelihood objectives' (rows shown deep have
    tiny curvature)."""

    leaf_l2: float = option(
        1.0,
        "L2 penalty on the trees' leaf values (LightGBM's lambda_l2): a leaf's value is "
        "-Σg / (Σh + this); rows shown deep have tiny curvature, so one click there can set a large value.",
        low=0,
    )


def expit(z: np.ndarray) -> np.ndarray:
    """σ(z) = (1 + tanh(z / 2)) / 2: no overflow for large |z| and no scipy import; exact to
    about 1e-16 absolute, not relative (σ(-30) to 2e-4 of itself, 0 below z = -37)."""
    return 0.5 * np.tanh(0.5 * z) + 0.5


def floored_curvature(hess: np.ndarray) -> np.ndarray:
    """A custom objective's curvature with a floor of 1e-12 of its mean added: a row whose
    curvature vanishes (a saturated probability, a well separated pair) keeps every leaf's sum
    positive for LightGBM's -Σg / (Σh + lambda_l2) where lambda_l2 is 0."""
    return hess + 1e-12 * max(float(hess.mean()), 1e-300)


def selection_table(info: dict) -> tuple:
    """The grid of ``select_trees`` as ``cltr train`` prints it (a ``Method.tables`` entry)."""
    return (
        "candidates (learning rate x leaves; trees chosen on validation):",
        info["selection"],
        ["learning_rate", "num_leaves", "validation_snips_avg_dcg", "n_estimators", "rounds", "seconds"],
    )


@dataclass(frozen=True)
class TreeScorer:
    """A LightGBM model kept as its model string (a numpy bytes array in artifacts).

    ``known``: the rows whose scores are known already and those scores (``(X, scores)``),
    which ``scores`` hands back for that very array instead of predicting again: early
    stopping leaves the validation split's scores at the best iteration, and selection,
    its guard and the report each ask for them (a prediction over the validation split
    costs about as much as a few trees). Not part of the model: not stored, not compared.

    ``linear`` and ``offset``: a linear model the trees were boosted from (LightGBM's
    ``init_score``), added to their raw score: f(x) = trees(x) + linear · x + offset. None for
    trees boosted from 0, whose stored arrays are the model string alone.
    """

    model_string: str
    threads: int = 1
    kind: str = "lightgbm"
    known: tuple[np.ndarray, np.ndarray] | None = field(default=None, compare=False, repr=False)
    linear: tuple[float, ...] | None = None
    offset: float = 0.0

    @cached_property
    def booster(self):
        import lightgbm

        return lightgbm.Booster(model_str=self.model_string)

    def scores(self, X: np.ndarray) -> np.ndarray:
        """Raw scores of the rows of ``X``, shape (n_docs,)."""
        if self.known is not None and X is self.known[0]:
            return self.known[1].copy()
        scores = np.asarray(self.booster.predict(X, raw_score=True, num_threads=self.threads), dtype=np.float64)
        if self.linear is not None:
            scores += linear_scores(X, self.linear, self.offset)
        return scores

    def to_arrays(self) -> dict[str, np.ndarray]:
        arrays = {"model_string": np.array(self.model_string.encode("utf-8"))}
        if self.linear is not None:
            arrays["linear"] = np.asarray(self.linear, dtype=np.float64)
            arrays["offset"] = np.array(float(self.offset))
        return arrays

    @classmethod
    def from_arrays(cls, arrays) -> TreeScorer:
        value = np.asarray(arrays["model_string"]).item()
        linear = tuple(float(v) for v in np.asarray(arrays["linear"])) if "linear" in arrays else None
        offset = float(np.asarray(arrays["offset"])) if "offset" in arrays else 0.0
        return cls(
            model_string=value.decode("utf-8") if isinstance(value, bytes) else str(value), linear=linear, offset=offset
        )


def linear_scores(X: np.ndarray, linear, offset: float) -> np.ndarray:
    """linear · x + offset of every row of ``X``, in float64: the base a ``TreeScorer``'s trees
    were boosted from, computed the same way for LightGBM's ``init_score`` and for prediction."""
    return np.asarray(X, dtype=np.float64) @ np.asarray(linear, dtype=np.float64) + float(offset)


class _Precomputed:
    """Scores computed already (LightGBM's running validation scores), as a scorer."""

    def __init__(self, scores: np.ndarray):
        self._scores = np.asarray(scores, dtype=np.float64)

    def scores(self, X: np.ndarray) -> np.ndarray:
        if len(X) != len(self._scores):
            raise ValueError(f"precomputed scores are for {len(self._scores)} rows, asked for {len(X)}")
        return self._scores


MIN_DATA_IN_LEAF = 20  # LightGBM's default, named because the leaf grid is cut with it


def lightgbm_params(
    *, learning_rate: float, num_leaves: int, seed: int, threads: int = 1, objective: str = "lambdarank"
) -> dict:
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

    train: lightgbm.Dataset
    valid: lightgbm.Dataset | None
    valid_X: np.ndarray | None = None  # the rows of ``valid``, as given


# The binned Datasets of the last few training matrices of this process. A figure's tasks train
# several tree models on one matrix (corrections of one log, repetitions and methods at many
# passes), and binning costs about 30 trees' worth; a Dataset serves any number of Boosters
# one after another (every candidate of a grid already shares one), and its bins depend only
# on what the key holds.
_SETS: OrderedDict[bytes, _TreeSets] = OrderedDict()
_SETS_KEPT = 2


def _digest(*arrays: np.ndarray | int | None) -> bytes:
    """A digest of the arrays' dtypes, shapes and bytes (None and ints as such)."""
    digest = hashlib.blake2b(digest_size=16)
    for array in arrays:
        if array is None or isinstance(array, int):
            digest.update(repr(array).encode())
            continue
        array = np.ascontiguousarray(array)
        digest.update(f"{array.dtype.str}{array.shape}".encode())
        digest.update(array.data)
    return digest.digest()


def _tree_sets(
    X: np.ndarray,
    *,
    label: np.ndarray,
    group: np.ndarray | None,
    valid_X: np.ndarray | None,
    threads: int,
    weight: np.ndarray | None = None,
    position: np.ndarray | None = None,
    init_score: tuple[np.ndarray | None, np.ndarray | None] = (None, None),
) -> _TreeSets:
    key = _digest(X, label, group, weight, position, valid_X, int(threads), *init_score)
    if key in _SETS:
        _SETS.move_to_end(key)
        return replace(_SETS[key], valid_X=valid_X)
    sets = _built_sets(
        X,
        label=label,
        group=group,
        valid_X=valid_X,
        threads=threads,
        weight=weight,
        position=position,
        init_score=init_score,
    )
    _SETS[key] = replace(sets, valid_X=None)  # the binned Datasets only: the cache holds no caller's array
    while len(_SETS) > _SETS_KEPT:
        _SETS.popitem(last=False)
    return sets


def _built_sets(
    X: np.ndarray,
    *,
    label: np.ndarray,
    group: np.ndarray | None,
    valid_X: np.ndarray | None,
    threads: int,
    weight: np.ndarray | None,
    position: np.ndarray | None,
    init_score: tuple[np.ndarray | None, np.ndarray | None],
) -> _TreeSets:
    import lightgbm

    # Dataset construction gets the same thread count: with LightGBM's default (every core)
    # OpenMP's waiting threads compete with the 1-thread training on busy machines. Its
    # bins depend on min_data_in_leaf, so that is fixed here as in lightgbm_params.
    params = {"verbosity": -1, "num_threads": int(threads), "min_data_in_leaf": MIN_DATA_IN_LEAF}
    train = lightgbm.Dataset(
        X,
        label=label,
        group=group,
        weight=weight,
        position=position,
        init_score=init_score[0],
        params=params,
        free_raw_data=True,
    )
    train.construct()
    valid = None
    if valid_X is not None:
        valid = lightgbm.Dataset(
            valid_X, label=np.zeros(len(valid_X)), reference=train, init_score=init_score[1], params=params
        )
        valid.construct()
    return _TreeSets(train, valid, valid_X)


def _grow(
    params: dict,
    sets: _TreeSets,
    *,
    objective: Callable | None,
    n_estimators: int | None,
    criterion: Callable[[np.ndarray], float] | None,
    max_rounds: int,
    eval_every: int,
    patience: int,
    threads: int,
) -> tuple[TreeScorer, dict]:
    """Boost trees, a fixed number or with early stopping on ``criterion`` (see fit_lambdarank)."""
    import lightgbm

    booster = lightgbm.Booster(params=params, train_set=sets.train)
    if n_estimators is not None:  # else early stopping
        for _ in range(int(n_estimators)):
            booster.update(fobj=objective)
        model = booster.model_to_string(num_iteration=-1)
        return TreeScorer(model, threads=threads), {
            "n_estimators": int(n_estimators),
            "rounds": int(n_estimators),
            "early_stopped": False,
            "best_criterion": float("nan"),
            "trace": [],
        }

    assert sets.valid is not None  # early stopping is on validation rows: _tree_sets got valid_X
    booster.add_valid(sets.valid, "vali")

    latest: list[np.ndarray] = []  # the validation scores of the last evaluation

    def feval(scores, _dataset):
        latest[:] = [np.array(scores, dtype=np.float64)]
        return "criterion", float(criterion(latest[0])), True

    best_value, best_rounds, rounds, trace = -np.inf, 0, 0, []
    best_scores = None
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
            best_value, best_rounds, best_scores = value, rounds, latest[0]
        if rounds - max(best_rounds, 0) >= patience:
            stopped = rounds < max_rounds
            break
    if best_rounds == 0:  # every evaluation was NaN: keep what was grown
        best_rounds, best_scores = rounds, None
    model = booster.model_to_string(num_iteration=best_rounds)
    known = None if best_scores is None or sets.valid_X is None else (sets.valid_X, best_scores)
    return TreeScorer(model, threads=threads, known=known), {
        "n_estimators": int(best_rounds),
        "rounds": int(rounds),
        "early_stopped": bool(stopped),
        "best_criterion": float(best_value),
        "trace": trace,
    }


def candidate_key(params: dict) -> tuple[float, int]:
    """A grid candidate of ``select_trees`` as a key: its (learning rate, leaves)."""
    return float(params["learning_rate"]), int(params["num_leaves"])


def state_of_choice(runs: dict, chosen: dict):
    """What a custom objective learned beside the trees (position biases) as it stood behind
    the chosen candidate's last tree: ``runs`` maps each ``candidate_key`` to one state per
    tree grown, ``chosen`` is ``select_trees``' choice (with its ``n_estimators``)."""
    return runs[candidate_key(chosen)][int(chosen["n_estimators"]) - 1]


def select_trees(
    data,
    options: TreeOptions,
    *,
    name: str,
    X: np.ndarray,
    label: np.ndarray,
    group: np.ndarray | None,
    objective: Callable | None,
    progress: Callable | None = None,
    learning_rates=LEARNING_RATE_GRID,
    leaves=NUM_LEAVES_GRID,
    estimate: Callable | None = None,
    criterion_name: str = "validation_snips_avg_dcg",
    weight: np.ndarray | None = None,
    position: np.ndarray | None = None,
    extra_params: dict | None = None,
    stopping: Callable[[np.ndarray], float] | None = None,
    base: tuple[tuple[float, ...], float] | None = None,
):
    """Grid over learning rate x leaves, trees by early stopping, chosen on validation clicks.

    Parameters
    ----------
    data : methods.TrainingData
        ``data.estimate`` (SNIPS Avg DCG on validation clicks, seeded tie-breaks) is both the
        early-stopping criterion and the selection criterion unless ``estimate`` is given;
        test labels are never read.
    options : TreeOptions
        ``learning_rate``, ``num_leaves`` (each fixes that axis), ``n_estimators`` (a fixed
        number of trees, no early stopping) and the early-stopping settings.
    name : str
        Seeds LightGBM: one seed for the whole grid, ``stream(data.seed, name)``.
    X : ndarray, shape (n_rows, n_features)
        Training rows; ``label`` shape (n_rows,), ``group`` the LightGBM query sizes or None.
    objective : callable or None
        A custom objective (``objective="none"`` in LightGBM), or None for LambdaRank.
    progress : callable, optional
        Called with each candidate's row.
    estimate : callable, optional
        Another validation criterion (scorer -> float), named ``criterion_name`` in the table.
    weight, position : ndarray, shape (n_rows,), optional
        LightGBM's row weights and positions (``Dataset(position=...)``: LambdaRank then
        learns an additive bias per position alongside the trees; LightGBM >= 4.1).
    extra_params : dict, optional
        More LightGBM parameters (e.g. ``lambdarank_position_bias_regularization``).
    stopping : callable, optional
        The early-stopping criterion of every candidate, from the validation split's scores
        (higher is better; each row's ``best_criterion``) [default: the selection criterion].
        The candidates are still compared by ``estimate``, each at its stopped tree count.
    base : (linear, offset), optional
        Boost from a linear model instead of 0: every training and validation row starts at
        linear · x + offset (LightGBM's ``init_score``), and the scorer adds it to the trees.

    Returns
    -------
    scorer : TreeScorer
    info : dict
        ``chosen`` (learning_rate, num_leaves, n_estimators), ``validation_snips_avg_dcg``,
        ``selection`` (a row per candidate), ``lightgbm_seed``, ``early_stopping``.
    """
    threads, n_estimators = options.threads, options.n_estimators
    rates = [options.learning_rate] if options.learning_rate is not None else learning_rates
    leaf_grid = [options.num_leaves] if options.num_leaves is not None else usable_leaves(leaves, len(X))
    candidates = [{"learning_rate": float(r), "num_leaves": int(n)} for r in rates for n in leaf_grid]
    seed = int(stream(data.seed, name).integers(2**31 - 1))
    valid_X = data.dataset.vali.X if n_estimators is None else None
    init_score: tuple[np.ndarray | None, np.ndarray | None] = (None, None)
    if base is not None:
        init_score = (linear_scores(X, *base), None if valid_X is None else linear_scores(valid_X, *base))
    sets = _tree_sets(
        X,
        label=label,
        group=group,
        weight=weight,
        position=position,
        valid_X=valid_X,
        threads=threads,
        init_score=init_score,
    )

    estimate = estimate or data.estimate

    def criterion(scores):
        return estimate(_Precomputed(scores))

    def fit(params, _previous):
        lgb_objective = "none" if objective is not None else "lambdarank"
        lgb_params = {
            **lightgbm_params(**params, seed=seed, threads=threads, objective=lgb_objective),
            **(extra_params or {}),
        }
        rounds = min(
            options.max_rounds, max(1, int(np.ceil(options.shrinkage_budget / params["learning_rate"] - 1e-9)))
        )
        if hasattr(objective, "start"):  # an objective with state (jointly learned biases) restarts per candidate
            objective.start(params)
        scorer, row = _grow(
            lgb_params,
            sets,
            objective=objective,
            n_estimators=n_estimators,
            criterion=stopping or criterion,
            max_rounds=rounds,
            eval_every=options.eval_every,
            patience=options.patience,
            threads=threads,
        )
        # LightGBM's validation scores include the init score, so ``known`` is the whole model's
        return (scorer, row) if base is None else (replace(scorer, linear=base[0], offset=base[1]), row)

    selection = select_on_validation(
        candidates, fit, estimate, progress=progress, criterion=criterion_name, alike=data.alike_share
    )
    best_row = next(row for row in selection.table if all(row[k] == v for k, v in selection.best_params.items()))
    chosen = {**selection.best_params, "n_estimators": best_row["n_estimators"]}
    info = {
        "chosen": chosen,
        criterion_name: selection.best_estimate,
        "selection": selection.table,
        "lightgbm_seed": seed,
        "warnings": selection.warnings,
        "early_stopping": {
            "max_rounds": options.max_rounds,
            "eval_every": options.eval_every,
            "patience": options.patience,
            "shrinkage_budget": options.shrinkage_budget,
        },
    }
    return selection.best, info


def soft_label_trees(
    features: np.ndarray,
    label: np.ndarray,
    weight: np.ndarray,
    *,
    n_estimators: int = 60,
    learning_rate: float = 0.1,
    num_leaves: int = 15,
    min_data_in_leaf: int = 50,
    seed: int = 0,
    threads: int = 1,
    predict: np.ndarray | None = None,
) -> np.ndarray:
    """Gradient-boosted trees of a soft binary label: regression EM's relevance M-step
    (Wang et al., WSDM 2018; ``cltr.core.propensity.em_propensities(relevance_model=...)``).

    Fits LightGBM's cross-entropy objective, which takes labels in [0, 1] (the posterior
    relevance), weighted by ``weight``, from scratch, and returns the fitted log-odds at
    the training rows. Lives here because this is the one module that imports lightgbm.

    Parameters
    ----------
    features : ndarray, shape (n, d)
    label : ndarray of float, shape (n,)
        Soft labels in [0, 1].
    weight : ndarray of float, shape (n,)
        Non-negative row weights (a (query, document)'s impressions).
    n_estimators, learning_rate, num_leaves, min_data_in_leaf, seed, threads
        The boosting: fixed capacity (no early stopping: EM has no held-out clicks), the
        same every M-step, deterministic given ``seed`` and ``threads``.
    predict : ndarray, shape (m, d), optional
        Rows to predict instead of the training rows (EM's cross-fitting: held-out queries).

    Returns
    -------
    ndarray of float64, shape (n,) or (m,)
        The raw scores (log-odds of relevance) at ``features``, or at ``predict``.
    """
    import lightgbm

    params = {
        **lightgbm_params(
            learning_rate=learning_rate, num_leaves=num_leaves, seed=seed, threads=threads, objective="cross_entropy"
        ),
        "min_data_in_leaf": int(min_data_in_leaf),
        "min_sum_hessian_in_leaf": 1e-6,
        "feature_fraction_bynode": 1.0,
    }
    data = lightgbm.Dataset(
        np.asarray(features, dtype=np.float64),
        label=np.asarray(label, dtype=np.float64),
        weight=np.asarray(weight, dtype=np.float64),
        params={"verbosity": -1},
    )
    booster = lightgbm.train(params, data, num_boost_round=int(n_estimators))
    at = features if predict is None else predict
    return np.asarray(booster.predict(np.asarray(at, dtype=np.float64), raw_score=True), dtype=np.float64)
