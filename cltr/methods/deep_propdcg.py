"""Deep PropDCG (paper Sec. 4.2): a multilayer perceptron trained on the propensity-weighted
hinge bound R(f) by Adam over minibatches of whole queries.

The network, its backward pass, the query batches and Adam are ``cltr.core.mlp``; this
file holds the training loop, its options and presets (named instances of the options), and the method: the learning
rate and epoch are chosen by SNIPS Avg DCG on validation clicks.

Legend (paper Sec. 4.2):
    weight decay        -> ``DeepOptions.weight_decay`` (``DeepOptions.decay``)
    learning rate       -> ``DeepOptions.learning_rates`` (each tried, the best kept), with a
                           piecewise-constant ``schedule`` of ``(start_epoch, multiplier)`` pairs
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace
from itertools import pairwise

import numpy as np

from cltr.core.clicks import Clicks
from cltr.core.mlp import (
    ACTIVATIONS,
    Adam,
    MLPScorer,
    _check_activation,
    _check_dtype,
    _ranges,
    click_batches,
    init_mlp,
    loss_and_gradient,
)
from cltr.core.objectives import check_signed_weights, rank_weight
from cltr.core.seeds import stream
from cltr.methods import Method, SelectionOptions, TrainingData
from cltr.options import option

ORDER = 50


def _numbers(kind):
    """A comma-separated list of ``kind`` (the command line's "200,100" or "0,1,300,0.1")."""
    return lambda text: [kind(part) for part in text.split(",") if part.strip()]


@dataclass(frozen=True)
class DeepOptions(SelectionOptions):
    """Deep PropDCG's options: every setting of its training, each with its real default
    (the ``default`` preset's).

    A preset is a named instance of this type (``PRESETS``). ``preset = NAME`` (``--preset``,
    a spec's key) starts from that instance, and the options given override its values
    (``from_dict``; a None among them is the preset's value, as ``--epochs`` left out is).
    ``lr`` fixes one base learning rate; without it each of ``learning_rates`` is tried from
    the same seeded initialisation and the best on validation clicks kept. ``schedule``
    holds ``(start_epoch, multiplier)`` pairs, flattened: from epoch ``start_epoch``
    (0-based) on, the learning rate is base · multiplier; it starts at epoch 0.
    """

    preset: str = option(
        "default",
        "Settings to start from: 'paper' is Sec. 5.4's (lr 1e-6/1e-7/1e-8, 750 "
        "epochs); 'default' is tuned on validation clicks (docs/explanation/methods.md).",
        choices=lambda: tuple(PRESETS),
    )
    hidden: tuple[int, ...] = option(
        (200,), "Hidden layer sizes, e.g. 200 or 200,100 [default: preset's].", low=1, parse=_numbers(int)
    )
    activation: str = option("sigmoid", "Hidden activation [default: preset's].", choices=ACTIVATIONS)
    epochs: int = option(
        100, "Epochs per learning rate; the best epoch on validation clicks is kept [default: preset's].", low=1
    )
    lr: float | None = option(
        None, "Base learning rate; without it the preset's rates are tried and the best kept.", low=0, low_open=True
    )
    learning_rates: tuple[float, ...] = option(
        (3e-3, 1e-2, 3e-2),
        "Base learning rates tried without --lr, each from the same seeded initialisation, "
        "e.g. 0.003,0.01 [default: preset's].",
        low=0,
        low_open=True,
        parse=_numbers(float),
    )
    schedule: tuple[float, ...] = option(
        (0.0, 1.0),
        "The learning rate's schedule as start epoch, multiplier pairs (0-based epochs, the first 0): "
        "0,1,300,0.1 runs epochs 300 on at a tenth of the base rate [default: preset's].",
        parse=_numbers(float),
    )
    batch_docs: int = option(
        1000, "About this many documents per minibatch of whole queries [default: preset's].", low=1
    )
    weight_decay: float = option(1e-6, "Weight decay coefficient [default: preset's].", low=0)
    decay: str = option(
        "decoupled",
        "L2 (added to the gradient, as the paper's torch Adam) or decoupled (AdamW) [default: preset's].",
        choices=("l2", "decoupled"),
    )
    metric: str = option("dcg", "Rank weight of the bound: dcg, rbp:P or avgrank [default: dcg].")
    dtype: str = option("float32", "Precision of the network [default: preset's].", choices=("float32", "float64"))
    patience: int | None = option(
        20,
        "Stop a learning rate after this many epochs without a better validation estimate [default: preset's].",
        low=1,
    )
    standardize: bool = option(
        False,
        "Standardise every input feature by its mean and standard deviation over the "
        "training documents of clicked queries (a constant feature gets scale 1) "
        "[default: preset's].",
    )
    blas_threads: int = option(
        1, "BLAS threads for the network's products (one is faster on small machines; bench/deep.py).", low=1
    )

    def __post_init__(self):
        self.checked()  # bad combinations fail before any work

    @classmethod
    def preset_fields(cls) -> tuple[str, ...]:
        """The settings a preset supplies (every one but the preset's name and the settings
        no preset fixes): where these are not given, the chosen preset's value stands."""
        return tuple(f.name for f in cls.option_fields() if f.name not in _NOT_PRESET)

    @classmethod
    def from_dict(cls, values=None, *, where: str = "options"):
        """The preset ``values["preset"]`` names (default: ``default``) with the other values
        given, those not None, in place of its own; validated as every ``Options``."""
        given = {name: value for name, value in dict(values or {}).items() if value is not None}
        preset = PRESETS.get(given.get("preset", "default"))
        base = {} if preset is None else _fields(preset)  # an unknown preset: refused by the check below
        return super().from_dict({**base, **given}, where=where)

    def to_dict(self) -> dict:
        """The preset's name and the values that differ from it (None: the preset's), the
        record that model keys hold; ``from_dict`` reads it back to these options."""
        preset = PRESETS.get(self.preset)
        record = {}
        for name, value in _fields(self).items():
            same = preset is not None and name not in _NOT_PRESET and value == getattr(preset, name)
            if same and name in _LATER:
                continue  # options added after the record's shape was fixed: only a change is recorded
            record[name] = None if same else list(value) if isinstance(value, tuple) else value
        return record

    def pairs(self) -> list[tuple[int, float]]:
        """``schedule`` as ``(start_epoch, multiplier)`` pairs."""
        return [
            (int(start), float(factor)) for start, factor in zip(self.schedule[::2], self.schedule[1::2], strict=True)
        ]

    def learning_rate(self, base: float, epoch: int) -> float:
        multiplier = 1.0
        for start, factor in self.pairs():
            if epoch >= start:
                multiplier = factor
        return base * multiplier

    def resolved(self) -> DeepOptions:
        """These options as training reads them: ``lr``, when given, as the one learning rate."""
        return self if self.lr is None else replace(self, lr=None, learning_rates=(float(self.lr),))

    def settings_record(self) -> dict:
        """The training settings as the model's info records them (``resolved``, the schedule as pairs)."""
        resolved = self.resolved()
        return {
            "hidden": list(resolved.hidden),
            "activation": resolved.activation,
            "epochs": resolved.epochs,
            "learning_rates": list(resolved.learning_rates),
            "schedule": [list(pair) for pair in resolved.pairs()],
            "batch_docs": resolved.batch_docs,
            "weight_decay": resolved.weight_decay,
            "decay": resolved.decay,
            "metric": resolved.metric,
            "dtype": resolved.dtype,
            "patience": resolved.patience,
            "standardize": resolved.standardize,
        }

    def checked(self) -> DeepOptions:
        """Self, after checking every field; raises ValueError saying what was expected."""
        _check_activation(self.activation)
        _check_dtype(self.dtype)
        rank_weight(self.metric)
        if not self.hidden or any(int(h) < 1 for h in self.hidden):
            raise ValueError(f"hidden must list at least one layer size >= 1, got {self.hidden!r}")
        if int(self.epochs) < 1:
            raise ValueError(f"epochs must be >= 1, got {self.epochs!r}")
        if not self.learning_rates or any(not lr > 0 for lr in self.learning_rates):
            raise ValueError(f"learning rates must be > 0, got {self.learning_rates!r}")
        starts = self.schedule[::2]
        if (
            len(self.schedule) < 2
            or len(self.schedule) % 2
            or starts[0] != 0
            or any(s != int(s) for s in starts)
            or any(b <= a for a, b in pairwise(starts))
        ):
            raise ValueError(
                f"schedule must be (start_epoch, multiplier) pairs, flattened, starting at epoch 0 "
                f"with increasing whole epochs, got {self.schedule!r}"
            )
        if int(self.batch_docs) < 1:
            raise ValueError(f"batch_docs must be >= 1, got {self.batch_docs!r}")
        if not self.weight_decay >= 0:
            raise ValueError(f"weight_decay must be >= 0, got {self.weight_decay!r}")
        if self.decay not in ("l2", "decoupled"):
            raise ValueError(f"decay must be 'l2' or 'decoupled', got {self.decay!r}")
        if self.patience is not None and int(self.patience) < 1:
            raise ValueError(f"patience must be >= 1 or None, got {self.patience!r}")
        return self


# options without a place in the record of models stored before they were options
_LATER = ("learning_rates", "schedule", "standardize")
_NOT_PRESET = ("preset", "blas_threads", "criterion")


def _fields(options: DeepOptions) -> dict:
    return {f.name: getattr(options, f.name) for f in fields(options)}


PRESETS: dict[str, DeepOptions] = {
    # The paper's own settings (Sec. 5.4): 200 sigmoid units, Adam, weight decay 1e-6 (taken
    # as L2, torch.optim.Adam's weight_decay), 1000 documents a batch, 750 epochs, learning
    # rate 1e-6 for 300 epochs, 1e-7 for 200, 1e-8 for the rest.
    "paper": DeepOptions(
        preset="paper",
        hidden=(200,),
        activation="sigmoid",
        epochs=750,
        learning_rates=(1e-6,),
        schedule=(0, 1.0, 300, 0.1, 500, 0.01),
        batch_docs=1000,
        weight_decay=1e-6,
        decay="l2",
        metric="dcg",
        dtype="float64",
        patience=None,
    ),
    # Tuned on validation clicks (SNIPS Avg DCG) of the synthetic data and MQ2008 Fold1, seeds
    # 0-3, never on test labels (docs/explanation/methods.md, "Deep PropDCG", lists what was tried). The paper's
    # step sizes barely move the weights: MQ2008 has ~10 batches an epoch, so 750 epochs at
    # 1e-6 move each weight by at most ~0.01. Larger rates with the epoch chosen on validation
    # clicks do better; the best rates were 1e-2 (sometimes 3e-3 or 3e-2), hence the grid.
    # Weight decay at 1e-6 is kept from the paper (decoupled, so it is nearly inert); 1e-2
    # decoupled was no better on validation clicks. These are the options' own defaults.
    "default": DeepOptions(),
}


def deep_settings(preset: str = "default", **overrides) -> DeepOptions:
    """The named preset with ``overrides`` (``None`` values ignored), checked and resolved
    (``lr`` as the one learning rate).

    Parameters
    ----------
    preset : {"default", "paper"}
    **overrides
        Options of ``DeepOptions``.
    """
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; known: {', '.join(PRESETS)}")
    return DeepOptions.from_dict({**overrides, "preset": preset}, where="Deep PropDCG settings").resolved()


def _standardization(X, offsets, click_query, dtype) -> dict:
    """Mean and 1/std of each feature over the documents of clicked queries, in row blocks."""
    offsets = np.asarray(offsets, dtype=np.int64)
    clicked = np.unique(np.asarray(click_query, dtype=np.int64))
    rows = _ranges(offsets[clicked], offsets[clicked + 1] - offsets[clicked])
    total = np.zeros(X.shape[1])
    square = np.zeros(X.shape[1])
    for start in range(0, len(rows), 65536):
        block = np.asarray(X[rows[start : start + 65536]], dtype=np.float64)
        total += block.sum(axis=0)
        square += np.einsum("ij,ij->j", block, block)
    mean = total / len(rows)
    std = np.sqrt(np.maximum(square / len(rows) - mean * mean, 0.0))
    scale = np.where(std > 1e-12, 1.0 / np.where(std > 1e-12, std, 1.0), 1.0)
    return {"shift": mean.astype(dtype), "scale": scale.astype(dtype)}


@dataclass(frozen=True)
class EpochRecord:
    learning_rate: float
    epoch: int
    step_learning_rate: float
    train_loss: float
    validation_snips_avg_dcg: float
    seconds: float


@dataclass
class DeepResult:
    """Outcome of ``train_deep_propdcg``: the best network over (learning rate, epoch)."""

    scorer: MLPScorer
    learning_rate: float
    epoch: int
    validation_snips_avg_dcg: float
    trace: list = field(default_factory=list)


def train_deep_propdcg(
    X: np.ndarray,
    offsets: np.ndarray,
    clicks: Clicks,
    *,
    settings: DeepOptions | None = None,
    rng: np.random.Generator,
    validate: Callable[[MLPScorer], float] | None = None,
    progress: Callable[[EpochRecord], None] | None = None,
) -> DeepResult:
    """Train the network on R(f) by Adam over minibatches of whole queries (paper Sec. 4.2).

    For each base learning rate (ascending order of ``settings.learning_rates``) the net
    starts from the same seeded initialisation; after every epoch ``validate`` scores it and
    the best (learning rate, epoch) is kept (ties: the earliest). Without ``validate`` the
    last epoch of the last learning rate is returned.

    Parameters
    ----------
    X : ndarray, shape (n_docs, n_features)
        Training features (float32 or float64; gathered per batch, never copied whole).
    offsets : ndarray, shape (n_queries + 1,)
    clicks : Clicks
        The training click log with each example's cost c_i (``Clicks.from_log``: 1/q_i, or
        signed under the affine correction).
    settings : DeepOptions, optional
        Default: the ``default`` preset.
    rng : numpy.random.Generator
        Source of the initialisation and of every epoch's shuffle.
    validate : callable, optional
        ``validate(scorer) -> float``, higher is better (SNIPS Avg DCG on validation clicks).
    progress : callable, optional
        Called with an ``EpochRecord`` after every epoch.

    Returns
    -------
    DeepResult
    """
    settings = (settings or PRESETS["default"]).resolved().checked()
    n_clicks = len(clicks)
    if n_clicks == 0:
        raise ValueError("no training clicks: Deep PropDCG needs at least one click")
    weight = rank_weight(settings.metric)
    init_rng = np.random.default_rng(rng.integers(2**63))
    shuffle_seed = np.random.default_rng(rng.integers(2**63))
    initial = init_mlp(
        X.shape[1], hidden=settings.hidden, activation=settings.activation, dtype=settings.dtype, rng=init_rng
    )
    if settings.standardize:
        initial = replace(initial, **_standardization(X, offsets, clicks.query, initial.dtype))
    shuffle_state = shuffle_seed.bit_generator.state
    best: DeepResult | None = None
    trace: list[EpochRecord] = []
    net = initial
    for base in sorted(settings.learning_rates):
        net = initial.copy()
        parameters = net.parameters()
        optimizer = Adam(parameters, weight_decay=settings.weight_decay, decay=settings.decay)
        # every learning rate sees the same sequence of shuffles
        shuffle_seed.bit_generator.state = shuffle_state
        run_best, since_best = -np.inf, 0
        for epoch in range(int(settings.epochs)):
            start = time.perf_counter()
            lr = settings.learning_rate(base, epoch)
            batches = click_batches(offsets, clicks, batch_docs=settings.batch_docs, rng=shuffle_seed)
            losses = []
            for batch in batches:
                value, grads = loss_and_gradient(
                    net, X[batch.rows], batch.offsets, batch.clicks, weight, n=n_clicks, scale=float(len(batches))
                )
                optimizer.step(grads, lr)
                losses.append(value)
            # the last step may turn the parameters non-finite after a finite loss (an
            # overflowing gradient), which the next epoch's loss would only then show
            diverged = not np.isfinite(np.mean(losses)) or not all(np.isfinite(p).all() for p in parameters)
            # a diverged net has non-finite scores, which the validation ranking refuses
            estimate = float(validate(net)) if validate is not None and not diverged else float("nan")
            record = EpochRecord(
                learning_rate=float(base),
                epoch=epoch + 1,
                step_learning_rate=float(lr),
                train_loss=float(np.mean(losses)),
                validation_snips_avg_dcg=estimate,
                seconds=time.perf_counter() - start,
            )
            trace.append(record)
            if progress is not None:
                progress(record)
            if diverged:
                break  # later epochs cannot recover
            if validate is None or best is None or (np.isfinite(estimate) and estimate > best.validation_snips_avg_dcg):
                best = DeepResult(net.copy(), float(base), epoch + 1, estimate if np.isfinite(estimate) else -np.inf)
            # patience counts from this learning rate's own best epoch
            if np.isfinite(estimate) and estimate > run_best:
                run_best, since_best = estimate, 0
            else:
                since_best += 1
                if settings.patience is not None and since_best >= int(settings.patience):
                    break
    if best is None:
        raise ValueError(
            "training diverged in the first epoch of every learning rate; "
            + _divergence_cause(clicks.cost, initial.dtype)
        )
    best.trace = trace
    return best


def _divergence_cause(cost, dtype) -> str:
    """What to tell a user whose every learning rate diverged: an extreme example weight
    (1/q of a propensity of 1e-300 overflows the loss or Adam's squared gradients, whatever
    the learning rate) when there is one, else the learning rates."""
    weight = np.abs(np.asarray(cost, dtype=np.float64))
    i = int(np.argmax(weight))
    largest, typical = float(weight[i]), float(np.median(weight))
    # Adam squares the gradient, which scales with the weight: past sqrt(max) of the net's
    # dtype it overflows, and a weight a million times the typical one swamps every other
    if largest > np.sqrt(np.finfo(dtype).max) or not largest <= 1e6 * typical:
        return (
            f"an extreme example weight is the cause: example {i} weighs {largest:.3g} where the "
            f"median weight is {typical:.3g}, which overflows the loss whatever the learning rate; clip the "
            f"propensities (--clip) or drop that click"
        )
    return "try smaller learning_rates"


def train(data: TrainingData, options: DeepOptions, *, progress=None):
    settings = options.resolved()
    split, log = data.dataset.train, data.train_log
    total = settings.epochs * len(settings.learning_rates)

    def report(record):
        if progress is not None:
            progress(
                {
                    "event": "progress",
                    "unit": "epoch",
                    "total": total,
                    "advance": 1,
                    "postfix": {
                        "lr": f"{record.learning_rate:g}",
                        "loss": f"{record.train_loss:.4g}",
                        "vali": f"{record.validation_snips_avg_dcg:.4f}",
                    },
                }
            )

    check_signed_weights(log.cost, settings.metric)
    from threadpoolctl import threadpool_limits  # here, not at the top: `cltr --help` imports every method

    with threadpool_limits(limits=options.blas_threads, user_api="blas"):
        result = train_deep_propdcg(
            split.X,
            split.offsets,
            Clicks.from_log(log),
            settings=settings,
            rng=stream(data.seed, "deep-propdcg"),
            validate=data.estimate,
            progress=report,
        )
    trace = [asdict(record) for record in result.trace]
    table = []
    for lr in sorted(settings.learning_rates):
        rows = [r for r in trace if r["learning_rate"] == lr]
        best = max(rows, key=lambda r: r["validation_snips_avg_dcg"])  # earliest of ties
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
    info = {
        "chosen": {"lr": result.learning_rate, "epoch": result.epoch},
        "validation_snips_avg_dcg": result.validation_snips_avg_dcg,
        "selection": table,
        "settings": settings.settings_record(),
        "metric": settings.metric,
        "trace": trace,
    }
    return result.scorer, info


def tables(info: dict) -> list:
    return [
        (
            "learning rates:",
            info["selection"],
            ["lr", "epoch", "epochs_run", "validation_snips_avg_dcg", "train_loss", "seconds"],
        )
    ]


METHOD = Method(
    name="deep-propdcg",
    label="Deep PropDCG",
    options=DeepOptions,
    train=train,
    tables=tables,
    tuned_once=("lr",),
    summary="An MLP on the propensity-weighted DCG bound (Adam, query batches).",
    description="Deep PropDCG (paper Sec. 4.2): a multilayer perceptron trained on the propensity-weighted DCG "
    "bound (or --metric's) by Adam over minibatches of whole queries; the learning rate and epoch "
    "are chosen by SNIPS Avg DCG on validation clicks.",
    scorer="mlp",
)
