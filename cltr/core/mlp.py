"""A multilayer perceptron scorer, its backward pass on the R(f) bound, query batches and Adam.

Legend (paper Sec. 4.2, Eq. deeppropdcg):
    f_w(x, y), the network's score       -> ``MLPScorer.scores(X)[doc]``
    w, the network's weights              -> ``MLPScorer.weights`` / ``.biases``
    lambda(r) = -1/log(1 + r) (DCG)      -> ``objectives.rank_weight(...)``
    R(f_w), the training objective        -> ``objectives.risk`` of the network's scores
    query instance (x_i, y_i, q_i)        -> one example of a ``Clicks`` (query, doc, cost 1/q_i);
                                             all clicks of a query share a batch

The risk and its gradient with respect to the *scores* come from ``objectives.risk_gradient``
(shared by every scorer); this module only backpropagates that gradient through the net. The
examples come as one ``cltr.core.clicks.Clicks`` value, as in ``objectives`` (whose module
docstring says why it holds the merged cost c_i and not a propensity); a batch carries the
``Clicks`` of its own queries, re-indexed locally.
Deep PropDCG's training loop, settings and presets are ``cltr.methods.deep_propdcg``.

Network: ``len(hidden)`` fully connected layers with the chosen activation, then a linear
output unit without bias (a constant added to every score changes no ranking, and the
risk's gradient sums to zero over a query, so such a bias would never move).

Minibatches: every epoch the queries that have at least one click are shuffled (from the
seed) and cut into batches of about ``batch_docs`` documents (a query joins the batch in
which its first document falls, so a batch may exceed ``batch_docs`` by one query). Each
candidate of a batch is scored once per step. A step minimises

    loss_b = B · (1/n) Σ_{i in batch b} (1/q_i) · lambda(1 + Σ_y hinge_iy)

with n the number of training clicks and B the number of batches in the epoch: the sum of
the clicks' terms over the whole epoch is R(f) (the risk's 1/n normalisation), and the
factor B makes each step's loss an estimate of R(f) itself, so its size (and so the balance
against L2 weight decay) does not depend on the batch size. The training loss reported per
epoch is the mean of the step losses.

Adam (Kingma and Ba, 2015) with bias correction; weight decay either ``"l2"`` (added to
the gradient, as ``torch.optim.Adam(weight_decay=...)`` does: the paper's preset) or
``"decoupled"`` (AdamW: w <- w - lr · wd · w, outside the adaptive scaling). Decay applies
to every parameter, biases included, as in those optimisers. The learning rate follows a
piecewise-constant schedule: ``(start_epoch, multiplier)`` pairs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import pairwise

import numpy as np

from cltr.core.clicks import Clicks
from cltr.core.objectives import RankWeight, risk_gradient

__all__ = [
    "ACTIVATIONS",
    "MLPScorer",
    "init_mlp",
    "loss_and_gradient",
    "Batch",
    "click_batches",
    "Adam",
]

ACTIVATIONS = ("sigmoid", "tanh", "relu", "linear")
_DTYPES = {"float32": np.float32, "float64": np.float64}


def _activate(z: np.ndarray, activation: str) -> np.ndarray:
    """Apply the activation in place (z is a fresh matmul result) and return it."""
    if activation == "sigmoid":
        # sigma(z) = (1 + tanh(z/2)) / 2: numpy's vectorised tanh is 2.8x (float64) to 6.6x (float32) faster
        # than scipy's expit on a (1000, 200) layer. The two agree within one unit in the last place of 1
        # (2.2e-16 in float64, 1.2e-7 in float32); far left (z < -37 in float64) this gives exactly 0 where
        # expit gives a tiny positive number, which changes no score or gradient visibly
        z *= 0.5
        np.tanh(z, out=z)
        z *= 0.5
        z += 0.5
        return z
    if activation == "tanh":
        return np.tanh(z, out=z)
    if activation == "relu":
        return np.maximum(z, 0, out=z)
    return z


def _activation_slope(a: np.ndarray, activation: str) -> np.ndarray:
    """The activation's derivative written in terms of its output a (no pre-activations kept)."""
    if activation == "sigmoid":
        return a * (1 - a)
    if activation == "tanh":
        return 1 - a * a
    if activation == "relu":
        return (a > 0).astype(a.dtype)
    return np.ones_like(a)


def _check_activation(activation: str) -> str:
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {', '.join(ACTIVATIONS)}, got {activation!r}")
    return activation


def _check_dtype(dtype) -> np.dtype:
    name = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    if name not in _DTYPES:
        raise ValueError(f"dtype must be float32 or float64, got {dtype!r}")
    return np.dtype(_DTYPES[name])


# --------------------------------------------------------------------------- the network


@dataclass(frozen=True)
class MLPScorer:
    """f(x, y): a multilayer perceptron scoring every document independently.

    Attributes
    ----------
    weights : tuple of ndarray
        ``weights[l]`` of shape (fan_in, fan_out) for the hidden layers, then the output
        weights of shape (last_hidden, 1) (or (n_features, 1) without hidden layers).
    biases : tuple of ndarray
        ``biases[l]`` of shape (fan_out,), one per hidden layer (the output has none).
    activation : str
        One of ``ACTIVATIONS``.
    shift, scale : ndarray of shape (n_features,), optional
        Input standardisation, x -> (x - shift) · scale, fixed before training (not learnt).
    kind : str
        ``"mlp"`` (its entry in ``cltr.scorers``).
    """

    weights: tuple
    biases: tuple
    activation: str = "sigmoid"
    shift: np.ndarray | None = None
    scale: np.ndarray | None = None
    kind: str = "mlp"

    @property
    def dtype(self) -> np.dtype:
        return self.weights[0].dtype

    @property
    def hidden(self) -> tuple[int, ...]:
        return tuple(int(w.shape[1]) for w in self.weights[:-1])

    def parameters(self) -> list[np.ndarray]:
        """Every parameter array, in the order ``loss_and_gradient`` returns gradients."""
        return [*self.weights[:-1], *self.biases, self.weights[-1]]

    def with_parameters(self, parameters: list[np.ndarray]) -> MLPScorer:
        layers = len(self.biases)
        return replace(
            self, weights=(*parameters[:layers], parameters[-1]), biases=tuple(parameters[layers : 2 * layers])
        )

    def copy(self) -> MLPScorer:
        return self.with_parameters([p.copy() for p in self.parameters()])

    def forward(self, X: np.ndarray) -> list[np.ndarray]:
        """Activations of every layer: ``[X, h_1, ..., h_L, scores[:, None]]``, in the net's dtype.

        Parameters
        ----------
        X : ndarray, shape (n_docs, n_features)
        """
        X = np.asarray(X, dtype=self.dtype)
        if self.shift is not None:
            X = (X - self.shift) * self.scale
        out = [X]
        for w, b in zip(self.weights[:-1], self.biases, strict=True):
            z = out[-1] @ w
            z += b
            out.append(_activate(z, self.activation))
        out.append(out[-1] @ self.weights[-1])
        return out

    def backward(self, activations: list[np.ndarray], grad_scores: np.ndarray) -> list[np.ndarray]:
        """Gradients of a loss with respect to ``parameters()``, given dloss/dscores.

        Parameters
        ----------
        activations : list of ndarray
            ``forward(X)`` of the same rows.
        grad_scores : ndarray, shape (n_docs,)
        """
        delta = np.asarray(grad_scores, dtype=self.dtype)[:, None]
        layers = len(self.biases)
        grad_w: dict[int, np.ndarray] = {}
        grad_b: dict[int, np.ndarray] = {}
        grad_w[layers] = activations[layers].T @ delta
        # one output: delta (n, 1) times the output weights (h, 1) is an outer product; the
        # broadcast multiply computes the same single products (up to the sign of an exact
        # zero: the trained models' files are byte-identical) about 4x faster than a matmul
        # with an inner dimension of 1 (0.06 against 0.22 ms for a 1,000 x 200 float32 batch,
        # one thread; 7% of a default Deep PropDCG training)
        out_weights = self.weights[layers]
        delta = delta * out_weights.T if out_weights.shape[1] == 1 else delta @ out_weights.T
        for layer in range(layers - 1, -1, -1):
            a = activations[layer + 1]
            delta *= _activation_slope(a, self.activation)
            grad_w[layer] = activations[layer].T @ delta
            grad_b[layer] = delta.sum(axis=0)
            if layer > 0:  # no gradient with respect to the input features is needed
                delta = delta @ self.weights[layer].T
        return [
            *(grad_w[layer] for layer in range(layers)),
            *(grad_b[layer] for layer in range(layers)),
            grad_w[layers],
        ]

    def scores(self, X: np.ndarray, *, block: int = 65536) -> np.ndarray:
        """Scores of the rows of ``X``, shape (n_docs,), float64; computed in blocks of rows
        so that a large float32 X is never copied whole."""
        X = np.asarray(X)
        out = np.empty(X.shape[0], dtype=np.float64)
        for start in range(0, X.shape[0], block):
            out[start : start + block] = self.forward(X[start : start + block])[-1][:, 0]
        return out

    def to_arrays(self) -> dict[str, np.ndarray]:
        arrays = {f"W{layer}": w for layer, w in enumerate(self.weights)}
        arrays.update({f"b{layer}": b for layer, b in enumerate(self.biases)})
        arrays["activation"] = np.array(self.activation)
        if self.shift is not None:
            arrays.update(shift=self.shift, scale=self.scale)
        return arrays

    @classmethod
    def from_arrays(cls, arrays) -> MLPScorer:
        layers = sum(1 for name in arrays if str(name).startswith("b"))
        weights = tuple(np.asarray(arrays[f"W{layer}"]) for layer in range(layers + 1))
        biases = tuple(np.asarray(arrays[f"b{layer}"]) for layer in range(layers))
        shift = np.asarray(arrays["shift"]) if "shift" in arrays else None
        scale = np.asarray(arrays["scale"]) if "scale" in arrays else None
        return cls(
            weights=weights,
            biases=biases,
            activation=_check_activation(str(arrays["activation"])),
            shift=shift,
            scale=scale,
        )


def init_mlp(
    n_features: int,
    *,
    hidden: tuple[int, ...] = (200,),
    activation: str = "sigmoid",
    dtype="float64",
    rng: np.random.Generator,
) -> MLPScorer:
    """A freshly initialised network: Glorot-uniform weights (He-uniform for relu), zero biases.

    Parameters
    ----------
    n_features : int
        Input width d.
    hidden : tuple of int
        Units of each hidden layer; ``()`` is the linear model.
    activation : str
        One of ``ACTIVATIONS``.
    dtype : str or dtype
        float32 or float64, for the parameters and all computation.
    rng : numpy.random.Generator
        Source of the initial weights.

    Returns
    -------
    MLPScorer
    """
    activation = _check_activation(activation)
    dtype = _check_dtype(dtype)
    hidden = tuple(int(h) for h in hidden)
    if n_features < 1 or any(h < 1 for h in hidden):
        raise ValueError(f"n_features and every hidden size must be >= 1, got {n_features} and {hidden}")
    sizes = (int(n_features), *hidden, 1)
    weights, biases = [], []
    for layer, (fan_in, fan_out) in enumerate(pairwise(sizes)):
        if activation == "relu" and layer < len(hidden):
            limit = np.sqrt(6.0 / fan_in)
        else:
            limit = np.sqrt(6.0 / (fan_in + fan_out))
        if activation == "sigmoid" and layer < len(hidden):
            limit *= 4.0  # Glorot and Bengio's factor for the logistic sigmoid
        weights.append(rng.uniform(-limit, limit, size=(fan_in, fan_out)).astype(dtype))
        if layer < len(hidden):
            biases.append(np.zeros(fan_out, dtype=dtype))
    return MLPScorer(weights=tuple(weights), biases=tuple(biases), activation=activation)


def loss_and_gradient(
    net: MLPScorer,
    X: np.ndarray,
    offsets: np.ndarray,
    clicks: Clicks,
    weight: RankWeight | str,
    *,
    n: int | None = None,
    scale: float = 1.0,
) -> tuple[float, list[np.ndarray]]:
    """scale · R(f_w) on the given rows and its gradient with respect to every parameter.

    Parameters
    ----------
    net : MLPScorer
    X : ndarray, shape (n_docs, n_features)
        The rows of the queries concerned (a whole split or one batch).
    offsets, clicks, weight, n
        As in ``objectives.risk``, relative to these rows.
    scale : float
        Multiplies the value and the gradients (the batch factor B of the module docstring).

    Returns
    -------
    value : float
    grads : list of ndarray
        Shapes of ``net.parameters()``, in the net's dtype.
    """
    activations = net.forward(X)
    value, grad_scores = risk_gradient(activations[-1][:, 0], offsets, clicks, weight, n=n)
    if scale != 1.0:
        grad_scores *= scale
    return float(value * scale), net.backward(activations, grad_scores)


# --------------------------------------------------------------------------- batches of whole queries


@dataclass(frozen=True)
class Batch:
    """Whole queries, re-indexed locally; ``rows`` are their documents' rows in the split.

    Attributes
    ----------
    rows : ndarray of int64, shape (m,)
    offsets : ndarray of int64, shape (n_batch_queries + 1,)
    clicks : Clicks
        The batch's k clicks: local query and local row of each, and its cost (where the
        log's clicks had costs).
    """

    rows: np.ndarray
    offsets: np.ndarray
    clicks: Clicks


def _ranges(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Concatenation of arange(s, s + k) over (s, k), without a Python loop."""
    total = int(sizes.sum())
    first = np.cumsum(sizes) - sizes
    return np.arange(total, dtype=np.int64) + np.repeat(starts - first, sizes)


def click_batches(
    offsets: np.ndarray,
    clicks: Clicks,
    *,
    batch_docs: int,
    rng: np.random.Generator | None,
) -> list[Batch]:
    """One epoch's minibatches: the clicked queries shuffled and cut at about ``batch_docs`` documents.

    Parameters
    ----------
    offsets : ndarray, shape (n_queries + 1,)
    clicks : Clicks
        The click log (``clicks.doc`` are rows of the split); the costs, where present,
        are carried into the batches.
    batch_docs : int
        Target documents per batch (>= 1); a query is never split.
    rng : numpy.random.Generator or None
        Shuffles the queries; ``None`` keeps query order.

    Returns
    -------
    list of Batch
        Every click appears in exactly one batch.
    """
    if isinstance(batch_docs, (bool, np.bool_)) or int(batch_docs) < 1:
        raise ValueError(f"batch_docs must be an integer >= 1, got {batch_docs!r}")
    offsets = np.asarray(offsets, dtype=np.int64)
    click_query, click_doc, cost = clicks.query, clicks.doc, clicks.cost
    n_queries = len(offsets) - 1
    # a log's clicks come in query order, and then the stable sort is the identity (every epoch)
    in_order = len(click_query) < 2 or bool(np.all(click_query[1:] >= click_query[:-1]))
    by_query = np.arange(len(click_query)) if in_order else np.argsort(click_query, kind="stable")
    clicks_per_query = np.bincount(click_query, minlength=n_queries)
    click_start = np.cumsum(clicks_per_query) - clicks_per_query
    queries = np.flatnonzero(clicks_per_query)
    if rng is not None:
        queries = rng.permutation(queries)
    sizes = offsets[queries + 1] - offsets[queries]
    batch_of = (np.cumsum(sizes) - sizes) // int(batch_docs)
    cuts = np.flatnonzero(np.diff(batch_of)) + 1
    batches = []
    for part in np.split(np.arange(len(queries)), cuts):
        q = queries[part]
        q_sizes = sizes[part]
        local_offsets = np.concatenate([[0], np.cumsum(q_sizes)])
        rows = _ranges(offsets[q], q_sizes)
        taken = by_query[_ranges(click_start[q], clicks_per_query[q])]
        local_query = np.repeat(np.arange(len(q), dtype=np.int64), clicks_per_query[q])
        local_doc = click_doc[taken] - offsets[q][local_query] + local_offsets[local_query]
        batches.append(
            Batch(
                rows=rows,
                offsets=local_offsets,
                clicks=Clicks(local_query, local_doc, None if cost is None else cost[taken]),
            )
        )
    return batches


# --------------------------------------------------------------------------- Adam


class Adam:
    """Adam with bias correction and weight decay, over a list of parameter arrays (in place).

    Parameters
    ----------
    parameters : list of ndarray
        Updated in place by ``step``.
    weight_decay : float
        Coefficient wd >= 0.
    decay : {"l2", "decoupled"}
        ``"l2"``: g <- g + wd·w before the moments (torch.optim.Adam); ``"decoupled"``:
        w <- w - lr·wd·w outside the adaptive scaling, applied just before the Adam step as
        torch.optim.AdamW does (Loshchilov and Hutter, 2019).
    beta1, beta2, epsilon : float
        Adam's constants (0.9, 0.999, 1e-8).
    """

    def __init__(
        self,
        parameters: list[np.ndarray],
        *,
        weight_decay: float = 0.0,
        decay: str = "l2",
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float = 1e-8,
    ):
        if decay not in ("l2", "decoupled"):
            raise ValueError(f"decay must be 'l2' or 'decoupled', got {decay!r}")
        if not weight_decay >= 0:
            raise ValueError(f"weight_decay must be >= 0, got {weight_decay!r}")
        self.parameters = parameters
        self.weight_decay, self.decay = float(weight_decay), decay
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.first = [np.zeros_like(p) for p in parameters]
        self.second = [np.zeros_like(p) for p in parameters]
        self.steps = 0

    def step(self, grads: list[np.ndarray], lr: float) -> None:
        self.steps += 1
        correction1 = 1.0 - self.beta1**self.steps
        correction2 = 1.0 - self.beta2**self.steps
        step_size = lr / correction1
        for p, g, m, v in zip(self.parameters, grads, self.first, self.second, strict=True):
            if self.weight_decay and self.decay == "l2":
                g = g + self.weight_decay * p
            m *= self.beta1
            m += (1.0 - self.beta1) * g
            v *= self.beta2
            v += (1.0 - self.beta2) * (g * g)
            denominator = np.sqrt(v / correction2)
            denominator += self.epsilon
            if self.weight_decay and self.decay == "decoupled":
                p -= (lr * self.weight_decay) * p
            p -= step_size * m / denominator
