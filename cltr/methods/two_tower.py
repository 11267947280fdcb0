"""The two-tower click model (as used on Baidu-ULTR by Hager et al., SIGIR 2024): a
relevance tower on the document's features and a bias tower on its displayed rank,
trained jointly on every displayed document's clicks; the relevance tower alone ranks.

Legend:
    r(x)        -> the relevance tower: linear, w · x on standardised features (default,
                   ``--tower linear``), or ``cltr.core.mlp``'s network (``--tower mlp``); no
                   constant term either way (the bias tower holds every constant)
    b_k         -> the bias tower: one logit per displayed rank k (``bias``)
    combination -> how the towers make the click probability:
                   additive (default):  P(click | x, k) = σ(r(x) + b_k)
                   multiplicative:      P(click | x, k) = σ(r(x)) · σ(b_k), the position-based
                                        model itself (examination σ(b_k) times attraction σ(r))
    loss        -> the binomial negative log-likelihood of the clicks, per impression

**The data.** ``TrainingData.displayed("train").impressions()``: every displayed
(document, rank, ranker) with its impressions n and clicks c over the whole log. The
likelihood of independent sessions depends on the log only through these counts,
n · softplus(z) - c · z summed (additive), so training reads one row per distinct
(document, rank) instead of one per session: 59 k rows for the embedded default's 5.9 M
displayed documents. Adam steps over shuffled minibatches of these rows; each step's
gradient is scaled to estimate the whole log's mean per impression.

**What the bias tower recovers** (``position_bias``, relative to rank 1). Under the
position-based model P(click) = p_k · γ(x):
- multiplicative: σ(b_k) / σ(b_1) estimates p_k / p_1 (the model is the PBM; with a
  shuffled log the towers are identified up to that scale);
- additive: exp(b_k - b_1) is an odds ratio. logit(p_k γ) = log p_k + log γ only where
  clicks are rare (p_k γ << 1), so exp(b_k - b_1) -> p_k / p_1 when click probabilities are
  small; where they are not it is smaller than p_k / p_1 (for one γ, the odds ratio is
  p_k (1 - γ) / (1 - p_k γ) with p_1 = 1): the additive model reports a steeper bias than
  the examination's, and its relevance tower absorbs the difference.
With a deterministic production ranker each document is shown at one rank only, so the
towers are told apart only because a rank holds different documents in different queries
(Hager et al. discuss this confounding); a shuffled log (the tests) identifies them.
On such a log the relevance tower also learns mostly from the top ranks: a document the
production ranker shows low has a click probability near 0 whatever its relevance, so its
gradient n σ(z) - c is near 0 too, and the order the tower gives the bulk of the candidates
is barely trained; the MLP, fitted by minibatch Adam, carries that little over to them poorly.
The linear tower (default) has d parameters, fitted with the bias tower by L-BFGS on the
whole log at each L2 penalty of ``--l2`` (``fit_linear_towers``): test Avg DCG minus
production on hard logs (eta 2, eps- 0.3, 100 passes; 300 queries, data and click seeds
0-11): linear +0.128 +0.027 +0.253 -0.008 +0.021 +0.042 +0.136 +0.155 +0.017 +0.051
+0.154 -0.040 (mean +0.078, 10 of 12 above), the MLP +0.087 -0.062 +0.193 -0.026 -0.018
-0.002 +0.052 +0.142 +0.016 -0.007 +0.106 -0.056 (mean +0.035, 6 of 12); on the embedded
default (seed 0) 0.627 (linear) and 0.595 (MLP) against production's 0.571 (unbiased-
lambdamart: 0.640). Tried and not better on the small logs: the multiplicative
combination (linear: mean +0.060), weight decay, more learning rates and patience, the
MLP started from the linear fit's bias tower. The linear tower's bias tower is less exact
where the attraction is not logistic-linear in the features (on the shuffled test logs,
20% off p_k at rank 5 where the MLP is within 7%).

Selection (linear): the fit at each penalty (strongest first, each warm-started from the
last) is scored by SNIPS Avg DCG on validation clicks (``TrainingData.estimate``); the best
is kept. Selection (MLP): each learning rate runs from the same seeded initialisation;
after every epoch the relevance tower is scored by SNIPS Avg DCG on validation clicks
(``TrainingData.estimate``) and the best (learning rate, epoch) is kept; a run stops after
``patience`` epochs without a better estimate. The log's propensities are not used.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from cltr.core.clicks import Impressions
from cltr.core.mlp import ACTIVATIONS, Adam, MLPScorer, init_mlp
from cltr.core.seeds import stream
from cltr.methods import Method, SelectionOptions, TrainingData
from cltr.options import option

__all__ = ["METHOD", "TwoTowerOptions", "click_loss", "fit_towers", "train_two_tower"]

ORDER = 75
COMBINATIONS = ("additive", "multiplicative")
TOWERS = ("mlp", "linear")
BIAS_TABLE_RANKS = 20  # ranks printed by ``cltr train``; info keeps them all


def click_loss(
    relevance: np.ndarray, bias: np.ndarray, impressions: np.ndarray, clicks: np.ndarray, *, combination: str
) -> tuple[float, np.ndarray, np.ndarray]:
    """Summed negative log-likelihood of binomial clicks and its gradients.

    Parameters
    ----------
    relevance : ndarray, shape (m,)
        r(x) of each row's document.
    bias : ndarray, shape (m,)
        b_k of each row's rank.
    impressions, clicks : ndarray, shape (m,)
        n and c of each row (0 <= c <= n).
    combination : {"additive", "multiplicative"}

    Returns
    -------
    loss : float
        Σ -[c log P + (n - c) log(1 - P)].
    grad_relevance, grad_bias : ndarray, shape (m,)
        Its derivatives with respect to each row's r and b.
    """
    # here, not at the top: scipy.special takes a quarter of a second to import and
    # `cltr --help` imports every method; once per batch, never per row
    from scipy.special import expit, log_expit

    n, c = impressions, clicks
    if combination == "additive":
        z = relevance + bias
        # n softplus(z) - c z, written with log σ so that large |z| neither overflows nor cancels
        loss = float(np.sum(-c * log_expit(z) - (n - c) * log_expit(-z)))
        grad = n * expit(z) - c
        return loss, grad, grad
    if combination != "multiplicative":
        raise ValueError(f"combination must be one of {', '.join(COMBINATIONS)}, found {combination!r}")
    log_attraction, log_examination = log_expit(relevance), log_expit(bias)
    log_click = log_attraction + log_examination
    # log(1 - P) with P = σ(r) σ(b) < 1; -expm1 keeps it exact where P is small
    log_no_click = np.log(np.maximum(-np.expm1(log_click), 1e-300))
    loss = float(np.sum(-c * log_click - (n - c) * log_no_click))
    # dP/dr = P (1 - σ(r)): d/dr [-c log P - (n - c) log(1 - P)] = (1 - σ(r)) (-c + (n - c) P / (1 - P))
    odds = np.exp(log_click - log_no_click)
    common = (n - c) * odds - c
    return loss, common * expit(-relevance), common * expit(-bias)


def _standardization(X: np.ndarray, dtype) -> dict:
    mean = X.mean(axis=0)
    std = X.std(axis=0)
    scale = np.where(std > 1e-12, 1.0 / np.where(std > 1e-12, std, 1.0), 1.0)
    return {"shift": mean.astype(dtype), "scale": scale.astype(dtype)}


def _initial_bias(impressions: Impressions, size: int, combination: str) -> np.ndarray:
    """Each rank's logit from its click-through rate, the relevance tower starting near 0
    (σ(0) = 1/2 of attraction in the multiplicative model)."""
    return _initial_bias_rows(impressions.rank - 1, impressions.impressions, impressions.clicks, size, combination)


def _initial_bias_rows(row_bias, n, c, size: int, combination: str) -> np.ndarray:
    shown = np.bincount(row_bias, weights=n, minlength=size)
    clicked = np.bincount(row_bias, weights=c, minlength=size)
    rate = np.divide(clicked, shown, out=np.full(size, 0.5), where=shown > 0)
    if combination == "multiplicative":
        rate = 2 * rate
    rate = np.clip(rate, 1e-4, 1 - 1e-4)
    return np.log(rate) - np.log1p(-rate)


@dataclass
class TwoTowerResult:
    scorer: MLPScorer
    bias: np.ndarray
    learning_rate: float
    epoch: int
    validation_snips_avg_dcg: float
    trace: list
    l2: float | None = None


def train_two_tower(
    X: np.ndarray,
    impressions: Impressions,
    options: TwoTowerOptions,
    *,
    rng: np.random.Generator,
    validate=None,
    progress=None,
) -> TwoTowerResult:
    """Fit both towers by Adam on the impressions; keep the best (learning rate, epoch).

    Parameters
    ----------
    X : ndarray, shape (n_docs, n_features)
        The split's features (``impressions.doc`` indexes its rows).
    impressions : Impressions
        Aggregated impressions and clicks per (document, rank, ranker).
    options : TwoTowerOptions
    rng : numpy.random.Generator
        Initialisation and the minibatch shuffles.
    validate : callable, optional
        ``validate(scorer) -> float`` (higher is better), after every epoch.
    progress : callable, optional
        Called with each epoch's trace row.

    Returns
    -------
    TwoTowerResult
    """
    total = float(impressions.impressions.sum())
    if total == 0 or impressions.clicks.sum() == 0:
        raise ValueError(
            "the training log has no click on a displayed document; the two-tower model has nothing to learn from"
        )
    size = int(impressions.rank.max())
    docs, row_doc = np.unique(impressions.doc, return_inverse=True)
    row_doc = row_doc.ravel()
    row_bias = (impressions.rank - 1).astype(np.int64)
    n = impressions.impressions.astype(np.float64)
    c = impressions.clicks.astype(np.float64)
    features = np.asarray(X[docs])
    if options.tower == "linear":
        return _train_linear(features, row_doc, row_bias, n, c, size, options, validate=validate, progress=progress)
    initial = init_mlp(
        features.shape[1],
        hidden=tuple(options.hidden),
        activation=options.activation,
        dtype=options.dtype,
        rng=np.random.default_rng(rng.integers(2**63)),
    )
    initial = replace(initial, **_standardization(features.astype(np.float64), initial.dtype))
    start_bias = _initial_bias(impressions, size, options.combination)
    shuffle = np.random.default_rng(rng.integers(2**63))
    shuffle_state = shuffle.bit_generator.state
    rows = len(n)
    batch = int(options.batch_rows)
    n_batches = -(-rows // batch)
    best: TwoTowerResult | None = None
    trace = []
    for lr in sorted(options.learning_rates):
        net, bias = initial.copy(), start_bias.copy()
        optimizer = Adam([*net.parameters(), bias], weight_decay=options.weight_decay, decay="decoupled")
        shuffle.bit_generator.state = shuffle_state  # every learning rate sees the same batches
        run_best, since_best = -np.inf, 0
        for epoch in range(1, int(options.epochs) + 1):
            began = time.perf_counter()
            order = shuffle.permutation(rows)
            loss = 0.0
            for part in np.array_split(order, n_batches):
                # a batch's documents scored once each, whatever their number of ranks
                batch_docs, local = np.unique(row_doc[part], return_inverse=True)
                activations = net.forward(features[batch_docs])
                relevance = activations[-1][:, 0].astype(np.float64)
                value, grad_relevance, grad_bias = click_loss(
                    relevance[local.ravel()], bias[row_bias[part]], n[part], c[part], combination=options.combination
                )
                # the batch's sum times n_batches / total estimates the log's mean gradient
                factor = n_batches / total
                grad_scores = np.bincount(local.ravel(), weights=grad_relevance, minlength=len(batch_docs)) * factor
                grads = net.backward(activations, grad_scores)
                grads.append(np.bincount(row_bias[part], weights=grad_bias, minlength=size) * factor)
                optimizer.step(grads, lr)
                loss += value / total
            diverged = not (np.isfinite(loss) and np.all(np.isfinite(bias)))
            estimate = float(validate(net)) if validate is not None and not diverged else float("nan")
            record = {
                "lr": float(lr),
                "epoch": epoch,
                "train_loss": float(loss),
                "validation_snips_avg_dcg": estimate,
                "seconds": time.perf_counter() - began,
            }
            trace.append(record)
            if progress is not None:
                progress(record)
            if diverged:
                break
            if best is None or (np.isfinite(estimate) and estimate > best.validation_snips_avg_dcg):
                best = TwoTowerResult(
                    net.copy(), bias.copy(), float(lr), epoch, estimate if np.isfinite(estimate) else -np.inf, []
                )
            if np.isfinite(estimate) and estimate > run_best:
                run_best, since_best = estimate, 0
            else:
                since_best += 1
                if since_best >= int(options.patience):
                    break
    if best is None:
        raise ValueError("training diverged in the first epoch of every learning rate; try smaller --learning-rates")
    best.trace = trace
    return best


def fit_linear_towers(
    features: np.ndarray,
    row_doc: np.ndarray,
    row_bias: np.ndarray,
    n: np.ndarray,
    c: np.ndarray,
    start: np.ndarray,
    *,
    l2: float,
    combination: str,
    max_iterations: int = 500,
) -> np.ndarray:
    """Both towers with a linear relevance tower r(x) = w · x, by L-BFGS on the whole log.

    Minimises the mean negative log-likelihood per impression plus (l2 / 2) ||w||^2 (the
    bias logits unpenalised), a smooth problem of d + K parameters (convex for the additive
    combination), so full-batch quasi-Newton converges where minibatch Adam wanders.

    Parameters
    ----------
    features : ndarray, shape (n_docs, d)
        Standardised features of the documents the rows index.
    row_doc, row_bias : ndarray of int, shape (m,)
        Each row's document (into ``features``) and rank - 1.
    n, c : ndarray, shape (m,)
        Impressions and clicks per row.
    start : ndarray, shape (d + K,)
        Initial (w, b).
    l2 : float
    combination : {"additive", "multiplicative"}

    Returns
    -------
    ndarray, shape (d + K,)
        The fitted (w, b).
    """
    # here, not at the top: scipy.optimize takes half a second to import, and `cltr --help` imports every method
    from scipy.optimize import minimize

    d, size, total = features.shape[1], len(start) - features.shape[1], float(n.sum())

    def objective(theta):
        w, bias = theta[:d], theta[d:]
        value, grad_relevance, grad_bias = click_loss(
            (features @ w)[row_doc], bias[row_bias], n, c, combination=combination
        )
        per_doc = np.bincount(row_doc, weights=grad_relevance, minlength=len(features))
        gradient = np.concatenate(
            [features.T @ per_doc / total + l2 * w, np.bincount(row_bias, weights=grad_bias, minlength=size) / total]
        )
        return value / total + 0.5 * l2 * (w @ w), gradient

    result = minimize(
        objective, start, jac=True, method="L-BFGS-B", options={"maxiter": max_iterations, "gtol": 1e-6, "ftol": 1e-10}
    )
    return result.x


def _train_linear(features, row_doc, row_bias, n, c, size, options, *, validate, progress) -> TwoTowerResult:
    """The linear tower at every penalty of ``options.l2`` (strongest first, each fit warm-
    started from the previous one); the best on validation clicks is kept."""
    standard = _standardization(features.astype(np.float64), np.float64)
    standardized = (features.astype(np.float64) - standard["shift"]) * standard["scale"]
    d = features.shape[1]
    theta = np.concatenate([np.zeros(d), _initial_bias_rows(row_bias, n, c, size, options.combination)])
    best: TwoTowerResult | None = None
    trace = []
    for l2 in sorted(options.l2, reverse=True):
        began = time.perf_counter()
        theta = fit_linear_towers(standardized, row_doc, row_bias, n, c, theta, l2=l2, combination=options.combination)
        dtype = np.dtype(options.dtype)
        scorer = MLPScorer(
            weights=(theta[:d, None].astype(dtype),),
            biases=(),
            activation="linear",
            shift=standard["shift"].astype(dtype),
            scale=standard["scale"].astype(dtype),
        )
        loss = click_loss(
            (standardized @ theta[:d])[row_doc], theta[d:][row_bias], n, c, combination=options.combination
        )[0] / float(n.sum())
        estimate = float(validate(scorer)) if validate is not None else float("nan")
        record = {
            "l2": float(l2),
            "train_loss": float(loss),
            "validation_snips_avg_dcg": estimate,
            "seconds": time.perf_counter() - began,
        }
        trace.append(record)
        if progress is not None:
            progress(record)
        if best is None or (np.isfinite(estimate) and estimate > best.validation_snips_avg_dcg):
            best = TwoTowerResult(
                scorer,
                theta[d:].copy(),
                float("nan"),
                0,
                estimate if np.isfinite(estimate) else -np.inf,
                [],
                l2=float(l2),
            )
    assert best is not None  # the first penalty is kept at least (options.l2 is never empty)
    best.trace = trace
    return best


def relative_bias(bias: np.ndarray, combination: str) -> np.ndarray:
    """The bias per rank relative to rank 1: exp(b_k - b_1) (additive: a click-odds ratio)
    or σ(b_k) / σ(b_1) (multiplicative: an examination ratio)."""
    from scipy.special import log_expit  # here, not at the top: see click_loss

    if combination == "additive":
        return np.exp(bias - bias[0])
    return np.exp(log_expit(bias) - log_expit(bias[0]))


def _sizes(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def _rates(text: str) -> list[float]:
    return [float(part) for part in text.split(",") if part.strip()]


@dataclass(frozen=True)
class TwoTowerOptions(SelectionOptions):
    tower: str = option(
        "linear",
        "The relevance tower: the MLP (Adam on minibatches), or linear in the standardised "
        "features (L-BFGS on the whole log, one fit per --l2).",
        choices=TOWERS,
    )
    l2: tuple[float, ...] = option(
        (1e-1, 1e-2, 1e-3, 1e-4),
        "L2 penalties of the linear tower's weights tried "
        "(on the mean log-likelihood per impression); the best "
        "on validation clicks is kept.",
        low=0,
        parse=_rates,
    )
    combination: str = option(
        "additive",
        "How the towers combine: additive logits σ(r(x) + b_k), or the "
        "position-based model σ(r(x))·σ(b_k) (multiplicative).",
        choices=COMBINATIONS,
    )
    hidden: tuple[int, ...] = option(
        (200,), "Hidden layer sizes of the relevance tower, e.g. 200 or 200,100.", low=1, parse=_sizes
    )
    activation: str = option("sigmoid", "Hidden activation of the relevance tower.", choices=ACTIVATIONS)
    learning_rates: tuple[float, ...] = option(
        (1e-3, 1e-2),
        "Adam learning rates tried (each from the same initialisation); the best on validation clicks is kept.",
        low=0,
        low_open=True,
        parse=_rates,
    )
    epochs: int = option(100, "Most epochs per learning rate; the best epoch on validation clicks is kept.", low=1)
    patience: int = option(
        10, "Stop a learning rate after this many epochs without a better validation estimate.", low=1
    )
    batch_rows: int = option(1024, "Impression rows (distinct document and rank) per Adam step.", low=1)
    weight_decay: float = option(0.0, "Decoupled weight decay (AdamW) of both towers.", low=0)
    dtype: str = option("float32", "Precision of the relevance tower.", choices=("float32", "float64"))
    blas_threads: int = option(1, "BLAS threads for the network's products.", low=1)

    def __post_init__(self):
        # each tower keeps the best of its grid: an empty grid has no model to keep
        for name, what in (("l2", "penalty"), ("learning_rates", "learning rate")):
            if not getattr(self, name):
                raise ValueError(f"{name} must list at least one {what}, found {getattr(self, name)!r}")


def fit_towers(data: TrainingData, impressions: Impressions, options: TwoTowerOptions, *, progress=None):
    """``train_two_tower`` on the training split as the method runs it: its seed stream, selection
    on ``data.estimate`` and ``options.blas_threads`` BLAS threads (``tree-two-tower``'s linear
    base is this fit too)."""
    from threadpoolctl import threadpool_limits  # here, not at the top: `cltr --help` imports every method

    with threadpool_limits(limits=options.blas_threads, user_api="blas"):
        return train_two_tower(
            data.dataset.train.X,
            impressions,
            options,
            rng=stream(data.seed, "two-tower"),
            validate=data.estimate,
            progress=progress,
        )


def train(data: TrainingData, options: TwoTowerOptions, *, progress=None):
    impressions = data.displayed("train").impressions()
    linear = options.tower == "linear"
    total = len(options.l2) if linear else int(options.epochs) * len(options.learning_rates)

    def report(record):
        if progress is not None:
            setting = {"l2": f"{record['l2']:g}"} if linear else {"lr": f"{record['lr']:g}"}
            progress(
                {
                    "event": "progress",
                    "unit": "fit" if linear else "epoch",
                    "total": total,
                    "advance": 1,
                    "postfix": {
                        **setting,
                        "loss": f"{record['train_loss']:.4g}",
                        "vali": f"{record['validation_snips_avg_dcg']:.4f}",
                    },
                }
            )

    result = fit_towers(data, impressions, options, progress=report)
    table = []
    for lr in () if linear else sorted(options.learning_rates):
        rows = [r for r in result.trace if r["lr"] == lr]
        best = max(
            rows, key=lambda r: r["validation_snips_avg_dcg"] if np.isfinite(r["validation_snips_avg_dcg"]) else -np.inf
        )
        table.append(
            {
                "lr": lr,
                "epoch": best["epoch"],
                "epochs_run": len(rows),
                "validation_snips_avg_dcg": best["validation_snips_avg_dcg"],
                "train_loss": best["train_loss"],
                "seconds": sum(r["seconds"] for r in rows),
            }
        )
    if linear:
        table = [
            {key: r[key] for key in ("l2", "validation_snips_avg_dcg", "train_loss", "seconds")} for r in result.trace
        ]
    chosen = {"l2": result.l2} if linear else {"lr": result.learning_rate, "epoch": result.epoch}
    info = {
        "chosen": chosen,
        "tower": options.tower,
        "validation_snips_avg_dcg": result.validation_snips_avg_dcg,
        "selection": table,
        "combination": options.combination,
        "position_bias": bias_tower_info(
            result.bias, relative_bias(result.bias, options.combination), impressions.rank - 1, impressions
        ),
        "training_rows": len(impressions.doc),
        "training_impressions": int(impressions.impressions.sum()),
        "trace": result.trace,
    }
    return result.scorer, info


def bias_tower_info(bias: np.ndarray, relative: np.ndarray, row_bias: np.ndarray, impressions: Impressions) -> dict:
    """``info["position_bias"]`` of a two-tower model: per rank its logit, its bias relative to
    rank 1, and the impressions and clicks the rank had in the training log."""
    size = len(bias)
    return {
        "rank": list(range(1, size + 1)),
        "relative": np.asarray(relative).tolist(),
        "logit": np.asarray(bias).tolist(),
        "impressions": np.bincount(row_bias, weights=impressions.impressions, minlength=size).tolist(),
        "clicks": np.bincount(row_bias, weights=impressions.clicks, minlength=size).tolist(),
    }


def bias_tower_table(info: dict, meaning: str) -> tuple:
    """The bias tower's table ``cltr train`` prints: its first ``BIAS_TABLE_RANKS`` ranks."""
    bias = info["position_bias"]
    rows = [
        {
            "rank": r,
            "bias": bias["relative"][i],
            "logit": bias["logit"][i],
            "impressions": int(bias["impressions"][i]),
            "clicks": int(bias["clicks"][i]),
        }
        for i, r in enumerate(bias["rank"][:BIAS_TABLE_RANKS])
    ]
    return (
        f"bias tower per rank ({meaning}; first {BIAS_TABLE_RANKS} ranks):",
        rows,
        ["rank", "bias", "logit", "impressions", "clicks"],
    )


def tables(info: dict) -> list:
    meaning = (
        "exp(b_k - b_1), a click-odds ratio"
        if info["combination"] == "additive"
        else "σ(b_k) / σ(b_1), an examination ratio"
    )
    selection = (
        ("penalties:", ["l2", "validation_snips_avg_dcg", "train_loss", "seconds"])
        if info.get("tower") == "linear"
        else ("learning rates:", ["lr", "epoch", "epochs_run", "validation_snips_avg_dcg", "train_loss", "seconds"])
    )
    return [(selection[0], info["selection"], selection[1]), bias_tower_table(info, meaning)]


METHOD = Method(
    name="two-tower",
    label="Two-tower",
    options=TwoTowerOptions,
    train=train,
    tables=tables,
    weighted=False,  # the bias tower is learned; no 1/q is read
    summary="Relevance tower (linear or MLP) + bias tower (a logit per rank) fitted to every impression's clicks.",
    description="The two-tower click model (as used on Baidu-ULTR, Hager et al. SIGIR 2024): a relevance tower "
    "on the features (linear by default, fitted by L-BFGS at each --l2; or the MLP of deep-propdcg, "
    "--tower mlp, fitted by Adam) and a bias tower with one logit per displayed rank, "
    "combined additively in logit space (or as the position-based model's product, --combination "
    "multiplicative) and fitted to the clicks of every displayed document (the log's "
    "impressions aggregated per document and rank). The relevance tower alone ranks. The penalty "
    "(linear) or learning rate and epoch (MLP) are chosen by SNIPS Avg DCG on validation clicks.",
    scorer="mlp",
)
