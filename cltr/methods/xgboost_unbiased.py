"""XGBoost's unbiased LambdaMART (Hu, Wang, Peng, Li, WWW 2019, as XGBoost >= 2.0 ships it):
pairwise debiasing with position biases for clicked and non-clicked documents estimated
jointly with the trees; the practitioner's baseline of issue 22. An optional extra:
``pip install "cltr[xgboost]"``.

Legend (Hu et al. 2019, Sec. 4; XGBoost's ``lambdarank_obj.cc``):
    t+_i, t-_j       -> position biases of a clicked document at position i and a
                        non-clicked one at j; each pair's lambda gradient is divided by
                        t+_i · t-_j, and after every tree t+_i = (L_i / L_0)^(1/(p+1))
                        from the pair costs summed per position (eqs. 30, 31)
    p                -> ``lambdarank_bias_norm`` (``--bias-norm``, 1 as in XGBoost's click demo)
    position         -> the row's place within its group: XGBoost reads positions from
                        the order of the rows, so each group lists its session's documents
                        by displayed rank (``TrainingData.displayed`` is ordered so)
    label            -> 1 where clicked in the session
    group            -> one session with a click (``qid`` non-decreasing)

Parameters and why: ``objective="rank:ndcg"`` with ``lambdarank_unbiased=True`` (the
combination XGBoost's tutorial and click demo use; ``--objective rank:pairwise`` gives
RankNet's unscaled pairs, which XGBoost's guide also suggests for binary labels);
``lambdarank_pair_method="topk"`` with ``lambdarank_num_pair_per_sample=32`` (XGBoost's
defaults: pairs of each of the model's top 32 documents with every other one, and the
biases of positions 1..32 tracked; positions beyond the tracked ones get no correction,
and with a power-law examination bias little happens there); ``tree_method="hist"``.
Learning rate and depth are chosen over a small grid, and trees early-stopped, by SNIPS
Avg DCG on validation clicks (``TrainingData.estimate``), as every cltr method is.

The data (``cltr.methods.sessions``): sessions without a click are left out (no pair, so
no gradient and no pair cost). Identical sessions are *not* merged into weighted groups:
XGBoost's group weights scale the gradients but not the pair costs from which it
estimates t+ and t-, so merged groups would tilt the bias estimates towards rare click
patterns. Instead, when more than ``--max-sessions`` sessions have a click, a seeded
uniform sample of that many is used (the embedded default's 100 passes give about 90,000
clicked sessions, 3.7 M rows; 20,000 sessions keep each tree well under a second).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from cltr.core.seeds import stream
from cltr.core.selection import select_on_validation
from cltr.methods import Method, SelectionOptions, TrainingData
from cltr.methods.sessions import clicked_sessions, session_groups, subsample_sessions
from cltr.options import option

__all__ = ["METHOD", "XGBoostOptions", "XGBoostScorer", "xgboost_params"]

ORDER = 81
INSTALL = 'pip install "cltr[xgboost]"'
LEARNING_RATE_GRID = (0.03, 0.1, 0.3)
MAX_DEPTH_GRID = (2, 4, 6)
OBJECTIVES = ("rank:ndcg", "rank:pairwise")
PAIR_METHODS = ("topk", "mean")


def _xgboost():
    """The xgboost module, or an error that says how to install it."""
    try:
        import xgboost
    except ImportError:
        raise ValueError(f"xgboost-unbiased needs XGBoost >= 2.0, which is not installed: {INSTALL}") from None
    major = int(xgboost.__version__.split(".")[0])
    if major < 2:
        raise ValueError(
            f"xgboost-unbiased needs XGBoost >= 2.0 (lambdarank_unbiased); found {xgboost.__version__}: {INSTALL}"
        )
    return xgboost


@dataclass(frozen=True)
class XGBoostOptions(SelectionOptions):
    learning_rate: float | None = option(
        None, "Fix the learning rate [default: chosen over 0.03, 0.1, 0.3 on validation clicks].", low=0, low_open=True
    )
    max_depth: int | None = option(
        None, "Fix the tree depth [default: chosen over 2, 4, 6 on validation clicks].", low=1
    )
    n_estimators: int | None = option(
        None,
        "Grow exactly this many trees (no early stopping) [default: early "
        "stopping on validation clicks, at most --max-rounds].",
        low=1,
    )
    objective: str = option(
        "rank:ndcg",
        "XGBoost's ranking objective (LambdaMART with NDCG's pair weights, or RankNet's unweighted pairs).",
        choices=OBJECTIVES,
    )
    pair_method: str = option(
        "topk",
        "lambdarank_pair_method: topk (pairs of the model's top documents) or mean (sampled pairs per document).",
        choices=PAIR_METHODS,
    )
    pairs: int = option(
        32,
        "lambdarank_num_pair_per_sample: top documents (topk), or pairs sampled per document "
        "(mean); topk also tracks the biases of this many positions.",
        low=1,
    )
    bias_norm: float = option(
        1.0, "lambdarank_bias_norm p: each position bias is a ratio of pair costs to the power 1/(p+1).", low=0
    )
    max_sessions: int = option(20000, "Train on at most this many clicked sessions (a seeded uniform sample).", low=1)
    threads: int = option(1, "XGBoost threads.", low=1)
    max_rounds: int = option(
        500, "Most trees with early stopping (and at most --shrinkage-budget / learning rate).", low=1
    )
    shrinkage_budget: float = option(
        30.0, "Early stopping: grow at most this / learning rate trees.", low=0, low_open=True
    )
    patience: int = option(
        50, "Early stopping: stop after this many trees without a better validation estimate.", low=1
    )
    eval_every: int = option(5, "Early stopping: evaluate the validation estimate every this many trees.", low=1)


@dataclass(frozen=True)
class XGBoostScorer:
    """An XGBoost model kept as its JSON text (a numpy bytes array in artifacts)."""

    model_json: str
    n_features: int
    threads: int = 1
    kind: str = "xgboost"

    @cached_property
    def booster(self):
        booster = _xgboost().Booster()
        booster.load_model(bytearray(self.model_json.encode("utf-8")))
        booster.set_param({"nthread": self.threads})
        return booster

    def scores(self, X: np.ndarray) -> np.ndarray:
        """Raw scores (margins) of the rows of ``X``, shape (n_docs,)."""
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"the XGBoost model takes {self.n_features} features, found rows of shape {X.shape}")
        return np.asarray(self.booster.inplace_predict(X, predict_type="margin"), dtype=np.float64)

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {"model_json": np.array(self.model_json.encode("utf-8")), "n_features": np.array(self.n_features)}

    @classmethod
    def from_arrays(cls, arrays) -> XGBoostScorer:
        value = np.asarray(arrays["model_json"]).item()
        return cls(
            model_json=value.decode("utf-8") if isinstance(value, bytes) else str(value),
            n_features=int(np.asarray(arrays["n_features"])),
        )


def xgboost_params(*, learning_rate: float, max_depth: int, seed: int, options: XGBoostOptions) -> dict:
    """XGBoost's parameters for unbiased LambdaMART (see the module docs for why each)."""
    return {
        "objective": options.objective,
        "lambdarank_unbiased": True,
        "lambdarank_bias_norm": float(options.bias_norm),
        "lambdarank_pair_method": options.pair_method,
        "lambdarank_num_pair_per_sample": int(options.pairs),
        "tree_method": "hist",
        "learning_rate": float(learning_rate),
        "max_depth": int(max_depth),
        "seed": int(seed),
        "nthread": int(options.threads),
        "eval_metric": [],
        "verbosity": 0,
    }


class _Precomputed:
    def __init__(self, scores):
        self._scores = np.asarray(scores, dtype=np.float64)

    def scores(self, X):
        return self._scores


def _grow(
    xgboost,
    params: dict,
    train_matrix,
    vali_X: np.ndarray,
    *,
    n_estimators: int | None,
    criterion,
    max_rounds: int,
    options: XGBoostOptions,
) -> tuple[XGBoostScorer, dict]:
    """Boost trees, a fixed number or with early stopping on ``criterion`` (as trees._grow)."""
    n_features = int(vali_X.shape[1])
    booster = xgboost.Booster(params, [train_matrix])
    if n_estimators is not None:
        for round_ in range(int(n_estimators)):
            booster.update(train_matrix, round_)
        return XGBoostScorer(booster.save_raw("json").decode("utf-8"), n_features, options.threads), {
            "n_estimators": int(n_estimators),
            "rounds": int(n_estimators),
            "early_stopped": False,
            "trace": [],
        }
    best_value, best_rounds, rounds, trace, stopped = -np.inf, 0, 0, [], False
    while rounds < max_rounds:
        booster.update(train_matrix, rounds)
        rounds += 1
        if rounds % options.eval_every and rounds != max_rounds:
            continue
        value = criterion(booster.inplace_predict(vali_X, predict_type="margin", iteration_range=(0, rounds)))
        trace.append((rounds, value))
        if np.isfinite(value) and value > best_value:
            best_value, best_rounds = value, rounds
        if rounds - best_rounds >= options.patience:
            stopped = rounds < max_rounds
            break
    best_rounds = best_rounds or rounds
    model = booster[:best_rounds].save_raw("json").decode("utf-8")
    return XGBoostScorer(model, n_features, options.threads), {
        "n_estimators": int(best_rounds),
        "rounds": int(rounds),
        "early_stopped": bool(stopped),
        "trace": trace,
    }


def train(data: TrainingData, options: XGBoostOptions, *, progress=None):
    """Grid over learning rate and depth, trees by early stopping, on validation clicks."""
    xgboost = _xgboost()
    displayed = data.displayed("train")
    kept = subsample_sessions(
        clicked_sessions(displayed), options.max_sessions, stream(data.seed, "xgboost-unbiased", "sessions")
    )
    groups = session_groups(displayed, kept)
    if len(groups.group) == 0:
        raise ValueError("no training session has a click; unbiased LambdaMART has no pair to learn from")
    train_matrix = xgboost.DMatrix(
        data.dataset.train.X[groups.doc], label=groups.label, group=groups.group, nthread=options.threads
    )
    vali_X = np.asarray(data.dataset.vali.X)
    seed = int(stream(data.seed, "xgboost-unbiased").integers(2**31 - 1))
    rates = [options.learning_rate] if options.learning_rate is not None else LEARNING_RATE_GRID
    depths = [options.max_depth] if options.max_depth is not None else MAX_DEPTH_GRID
    candidates = [{"learning_rate": float(r), "max_depth": int(d)} for r in rates for d in depths]

    def criterion(scores):
        return data.estimate(_Precomputed(scores))

    def fit(params, _previous):
        rounds = min(
            options.max_rounds, max(1, int(np.ceil(options.shrinkage_budget / params["learning_rate"] - 1e-9)))
        )
        return _grow(
            xgboost,
            xgboost_params(**params, seed=seed, options=options),
            train_matrix,
            vali_X,
            n_estimators=options.n_estimators,
            criterion=criterion,
            max_rounds=rounds,
            options=options,
        )

    selection = select_on_validation(candidates, fit, data.estimate, progress=progress)
    best_row = next(row for row in selection.table if all(row[k] == v for k, v in selection.best_params.items()))
    chosen = {**selection.best_params, "n_estimators": best_row["n_estimators"]}
    info = {
        "chosen": chosen,
        "validation_snips_avg_dcg": selection.best_estimate,
        "selection": selection.table,
        "xgboost_seed": seed,
        "xgboost_version": xgboost.__version__,
        "parameters": {
            k: v
            for k, v in xgboost_params(**selection.best_params, seed=seed, options=options).items()
            if k != "eval_metric"
        },
        "position_bias": _position_bias(selection.best),
        **groups.info(),
    }
    return selection.best, info


def _position_bias(scorer: XGBoostScorer) -> dict:
    """The learned t+ and t- per position (XGBoost keeps them in the model's objective)."""
    import json

    objective = json.loads(scorer.booster.save_config())["learner"]["objective"]
    return {
        "t_plus": [float(v) for v in objective.get("ti+", [])],
        "t_minus": [float(v) for v in objective.get("tj-", [])],
    }


METHOD = Method(
    name="xgboost-unbiased",
    label="XGBoost unbiased LambdaMART",
    options=XGBoostOptions,
    train=train,
    tuned_once=("learning_rate", "max_depth"),
    weighted=False,  # the position biases are learned; no 1/q is read, so clipping changes nothing
    summary=f"XGBoost's unbiased LambdaMART on sessions, position biases learned jointly ({INSTALL}).",
    description="XGBoost's unbiased LambdaMART (Hu et al. 2019; objective rank:ndcg with lambdarank_unbiased): one "
    "group per session with a click, its documents in displayed order (XGBoost's positions), clicks "
    "as labels; the biases of clicked and non-clicked positions are estimated with the trees. "
    "Learning rate and depth are chosen, and trees early-stopped, by SNIPS Avg DCG on validation "
    f"clicks. An optional extra: {INSTALL}.",
    scorer="xgboost",
)
