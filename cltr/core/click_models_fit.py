"""Click models fitted to a click log by EM, and judged by held-out log-likelihood and perplexity.

Legend (Chuklin, Markov, de Rijke, "Click Models for Web Search", 2015: Ch. 3 models, Ch. 4
estimation, Ch. 5 evaluation):
    E_r, A_r, C_r, S_r          -> examined, attractive, clicked, satisfied at rank r (latent but C)
    alpha_qd                    -> ``ClickModel.attractiveness[pair]``, pair = (query, document)
    gamma_r          (PBM)      -> ``examination[r - 1]``: P(E_r = 1)
    gamma_{r,r'}     (UBM)      -> ``examination[r - 1, r']``, r' the rank of the previous click (0: none)
    lambda_r         (DCM)      -> ``continuation[r - 1]``: P(E_{r+1} = 1 | C_r = 1)
    gamma, sigma_qd  (DBN)      -> ``continuation[0]`` and ``satisfaction[pair]``
    cascade                     -> the user scans down and stops at the first click

Models: PBM, P(C_r = 1) = gamma_r alpha_qd; UBM, P(C_r = 1 | clicks above) = gamma_{r,r'} alpha_qd;
and the cascade family, which scans down from rank 1 (E_1 = 1, C_r = E_r A_r) and moves on
with probability kappa_click after a click and kappa_skip after a skip:

    cascade  kappa_click = 0                 kappa_skip = 1
    DCM      kappa_click = lambda_r          kappa_skip = 1
    DBN      kappa_click = gamma (1 - sigma_qd)  kappa_skip = gamma

The cascade family's posterior is closed-form given the last click l of a session: ranks up
to l were examined, and below it the user either stopped or went on and clicked nothing, of
probability B_{l+1}, with B_r = (1 - alpha_r)((1 - kappa_skip_r) + kappa_skip_r B_{r+1}),
B_{K+1} = 1. The cascade model explains one click; its sessions are cut after their first
click for fitting, as is usual.

Evaluation (book Sec. 5.1-5.2), on held-out sessions: the log-likelihood
Σ_r log P(C_r = c_r | c_1..c_{r-1}) per session, and perplexity per rank
``perplexity_r = 2 ** (-mean_s log2 P(C_r = c_r))`` with the model's unconditional click
probability at r. Probabilities are clamped to [1e-10, 1 - 1e-10] so that one impossible
click (a second click under the cascade model) costs a large finite amount.

Data are a dense grid of sessions x ranks (at most K = ``max_rank``, the deepest rank); an
empty cell (a rank gap, or ranks below a short session) is transparent: never clicked,
passed over. Everything is vectorised over sessions; Python loops run over ranks and EM
iterations only. Parameters of a (query, document) unseen in training are the mean of the
fitted ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

__all__ = [
    "MODELS",
    "SessionGrid",
    "ClickModel",
    "session_grid",
    "fit_click_model",
    "click_probabilities",
    "evaluate_click_model",
    "independent_click_scores",
    "simulate_clicks_of",
    "ClickModelScores",
]

MODELS = ("pbm", "cascade", "dcm", "ubm", "dbn")
_EPS = 1e-10
_FLOOR = 1e-6  # parameters are kept in [_FLOOR, 1 - _FLOOR] so that EM never divides by zero


@dataclass(frozen=True)
class SessionGrid:
    """Sessions x ranks.

    Attributes
    ----------
    pair : ndarray of int64, shape (S, K)
        (query, document) parameter index of each cell; ``n_pairs`` for a pair without its
        own parameters (unseen in training); -1 for an empty cell.
    click : ndarray of int8, shape (S, K)
        0 in empty cells.
    n_pairs : int
    """

    pair: np.ndarray
    click: np.ndarray
    n_pairs: int

    @property
    def shown(self) -> np.ndarray:
        return self.pair >= 0

    @property
    def max_rank(self) -> int:
        return self.pair.shape[1]


@dataclass(frozen=True)
class ClickModel:
    """A fitted (or given) click model.

    Attributes
    ----------
    name : str
        One of ``MODELS``.
    pair_query, pair_doc : ndarray of int64, shape (P,)
        The (query, document) of each parameter index, sorted.
    attractiveness : ndarray of float64, shape (P + 1,)
        alpha per pair; the last entry, for unseen pairs, is the mean.
    examination : ndarray of float64, shape (K,) (PBM), (K, K) (UBM), or None
    continuation : ndarray of float64, shape (K,) (DCM lambda_r), (1,) (DBN gamma), or None
    satisfaction : ndarray of float64, shape (P + 1,) (DBN sigma), or None
    info : dict
        iterations, converged, training log-likelihood per iteration.
    """

    name: str
    pair_query: np.ndarray
    pair_doc: np.ndarray
    attractiveness: np.ndarray
    examination: np.ndarray | None = None
    continuation: np.ndarray | None = None
    satisfaction: np.ndarray | None = None
    info: dict = field(default_factory=dict)

    @property
    def max_rank(self) -> int:
        if self.examination is not None:
            return self.examination.shape[0]
        if self.continuation is not None and self.name == "dcm":
            return len(self.continuation)
        return int(self.info.get("max_rank", 0))


def _check_name(name: str) -> str:
    if name not in MODELS:
        raise ValueError(f"unknown click model {name!r}; choose one of {', '.join(MODELS)}")
    return name


def session_grid(
    session, query, doc, rank, click, *, max_rank: int | None = None, pairs: tuple[np.ndarray, np.ndarray] | None = None
) -> tuple[SessionGrid, np.ndarray, np.ndarray]:
    """Rows of a click log as a sessions x ranks grid.

    Parameters
    ----------
    session, query, doc, rank, click : array_like of int, shape (n_rows,)
        One row per displayed document (``cltr.core.clicks.Displayed`` or an imported log);
        ranks 1-based; any session labels.
    max_rank : int, optional
        Keep ranks 1..max_rank [default: the deepest rank].
    pairs : (pair_query, pair_doc), optional
        The parameter index of a fitted model (held-out data); other pairs get index P.

    Returns
    -------
    (SessionGrid, pair_query, pair_doc)
    """
    columns = [np.asarray(a) for a in (session, query, doc, rank, click)]
    if len({len(a) for a in columns}) != 1:
        raise ValueError(
            "session, query, doc, rank and click must have one length; found " + ", ".join(str(len(a)) for a in columns)
        )
    session, query, doc, rank, click = columns
    if len(rank) == 0:
        raise ValueError("the click log is empty")
    rank = rank.astype(np.int64)
    if rank.min() < 1:
        raise ValueError(f"ranks must be >= 1, found {rank.min()}")
    if not np.isin(click, (0, 1)).all():
        raise ValueError("clicks must be 0 or 1")
    depth = int(rank.max()) if max_rank is None else int(max_rank)
    keep = rank <= depth
    session, query, doc, rank, click = (a[keep] for a in (session, query, doc, rank, click))
    query = query.astype(np.int64)
    doc = doc.astype(np.int64)
    if pairs is None:
        key = np.unique(np.stack([query, doc]), axis=1)
        pair_query, pair_doc = key[0], key[1]
    else:
        pair_query, pair_doc = (np.asarray(a, dtype=np.int64) for a in pairs)
    n_pairs = len(pair_query)
    # (query, document) -> parameter index, exactly: the known pairs and the rows' pairs
    # numbered together, the known ones' numbers looked up
    both = np.concatenate([np.stack([pair_query, pair_doc]), np.stack([query, doc])], axis=1)
    _, number = np.unique(both, axis=1, return_inverse=True)
    number = number.reshape(-1)
    lookup = np.full(int(number.max()) + 1, n_pairs, dtype=np.int64)
    lookup[number[:n_pairs]] = np.arange(n_pairs)
    index = lookup[number[n_pairs:]]
    _, row_session = np.unique(session, return_inverse=True)
    row_session = row_session.reshape(-1)
    n_sessions = int(row_session.max()) + 1
    grid = np.full((n_sessions, depth), -1, dtype=np.int64)
    clicks = np.zeros((n_sessions, depth), dtype=np.int8)
    if (np.bincount(row_session * depth + rank - 1, minlength=n_sessions * depth) > 1).any():
        raise ValueError("a session shows two documents at one rank")
    grid[row_session, rank - 1] = index
    clicks[row_session, rank - 1] = click
    return SessionGrid(pair=grid, click=clicks, n_pairs=n_pairs), pair_query, pair_doc


# --------------------------------------------------------------------------- per-cell parameters


def _cells(values: np.ndarray, grid: SessionGrid, empty: float) -> np.ndarray:
    """A per-pair parameter (P + 1,) spread over the grid, ``empty`` in empty cells."""
    return np.where(grid.shown, values[np.maximum(grid.pair, 0)], empty)


def _kappas(model: ClickModel, grid: SessionGrid) -> tuple[np.ndarray, np.ndarray]:
    """(kappa_click, kappa_skip), each (S, K), of a cascade-family model; empty cells pass over (1)."""
    shape = grid.pair.shape
    if model.name == "cascade":
        kappa_click, kappa_skip = np.zeros(shape), np.ones(shape)
    elif model.name == "dcm":
        assert model.continuation is not None
        kappa_click, kappa_skip = np.broadcast_to(model.continuation, shape).copy(), np.ones(shape)
    else:  # dbn
        assert model.continuation is not None and model.satisfaction is not None
        gamma = float(model.continuation[0])
        kappa_click = gamma * (1.0 - _cells(model.satisfaction, grid, 0.0))
        kappa_skip = np.full(shape, gamma)
    kappa_skip = np.where(grid.shown, kappa_skip, 1.0)
    kappa_click = np.where(grid.shown, kappa_click, 1.0)
    return kappa_click, kappa_skip


def _last_click(click: np.ndarray) -> np.ndarray:
    """Rank of each session's last click (0: none), shape (S,)."""
    k = click.shape[1]
    return np.max(click * np.arange(1, k + 1), axis=1)


def _first_click(click: np.ndarray) -> np.ndarray:
    return np.where(click.any(axis=1), np.argmax(click, axis=1) + 1, 0)


def _cascade_posterior(alpha, kappa_click, kappa_skip, last):
    """Posterior of the cascade family given each session's last click ``last``.

    Returns
    -------
    examined : (S, K) P(E_r = 1 | clicks)
    after_last : (S,) e, the prior chance to go on after the last click (1 with none)
    tail : (S,) P(what follows the last click)
    """
    s, k = alpha.shape
    rows = np.arange(s)
    below = np.ones((s, k + 1))
    for r in range(k - 1, -1, -1):
        below[:, r] = (1.0 - alpha[:, r]) * ((1.0 - kappa_skip[:, r]) + kappa_skip[:, r] * below[:, r + 1])
    after_last = np.where(last > 0, kappa_click[rows, np.maximum(last - 1, 0)], 1.0)
    tail = 1.0 - after_last + after_last * below[rows, last]
    tail = np.maximum(tail, _EPS)
    examined = np.ones((s, k))
    running = after_last.copy()
    for r in range(k):
        after = r + 1 > last
        examined[:, r] = np.where(after, running * below[:, r] / tail, 1.0)
        running = np.where(after, running * (1.0 - alpha[:, r]) * kappa_skip[:, r], running)
    return examined, after_last, tail


def _clip(values: np.ndarray) -> np.ndarray:
    return np.clip(values, _FLOOR, 1.0 - _FLOOR)


def _per_pair(grid: SessionGrid, weights: np.ndarray, counts: np.ndarray, *, prior: np.ndarray) -> np.ndarray:
    """Σ weights / Σ counts per pair, shape (P + 1,); pairs with no count keep ``prior``; the
    unseen slot gets the mean of the estimated pairs."""
    index = grid.pair[grid.shown]
    p = grid.n_pairs + 1
    top = np.bincount(index, weights=weights[grid.shown], minlength=p)
    bottom = np.bincount(index, weights=counts[grid.shown], minlength=p)
    value = np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1.0), prior)
    value = _clip(value)
    seen = bottom[:-1] > 0
    value[-1] = value[:-1][seen].mean() if seen.any() else prior[-1]
    return value


def _previous_click(click: np.ndarray) -> np.ndarray:
    """(S, K): the rank of the last click above each cell (0: none)."""
    k = click.shape[1]
    ranks = click * np.arange(1, k + 1)
    before = np.maximum.accumulate(ranks, axis=1)
    return np.concatenate([np.zeros((click.shape[0], 1), dtype=before.dtype), before[:, :-1]], axis=1)


# --------------------------------------------------------------------------- fitting


def fit_click_model(
    name: str,
    grid: SessionGrid,
    pair_query: np.ndarray,
    pair_doc: np.ndarray,
    *,
    iterations: int = 200,
    tolerance: float = 1e-7,
) -> ClickModel:
    """Fit a click model to a session grid by expectation-maximisation.

    PBM and UBM (book Sec. 4.3): with E and A latent, a skipped cell has
    P(E = 1 | C = 0) = gamma (1 - alpha) / (1 - gamma alpha) and
    P(A = 1 | C = 0) = (1 - gamma) alpha / (1 - gamma alpha); gamma and alpha are the means of
    E and A over their cells. The cascade family (module docstring) with E latent:
    alpha = Σ c / Σ P(E = 1 | clicks); DCM's lambda_r the expected share of clicks at r the
    user went on after; DBN's sigma the expected share of a pair's clicks that satisfied, and
    gamma the expected share of unsatisfied examinations followed by one more. The cascade
    model has a closed form (one step).

    Parameters
    ----------
    name : str
        One of ``MODELS``.
    grid, pair_query, pair_doc
        From ``session_grid``.
    iterations : int, keyword-only
        At most this many EM steps.
    tolerance : float, keyword-only
        Stop when the training log-likelihood per session rises by less than this.

    Returns
    -------
    ClickModel
    """
    _check_name(name)
    k = grid.max_rank
    shown = grid.shown
    click = grid.click.astype(np.float64)
    n_pairs = grid.n_pairs
    model = ClickModel(
        name=name,
        pair_query=pair_query,
        pair_doc=pair_doc,
        attractiveness=np.full(n_pairs + 1, 0.5),
        info={"max_rank": k},
    )
    if name == "pbm":
        model = replace(model, examination=np.full(k, 0.5))
    elif name == "ubm":
        model = replace(model, examination=np.full((k, k), 0.5))
    elif name == "dcm":
        model = replace(model, continuation=np.full(k, 0.5))
    elif name == "dbn":
        model = replace(model, continuation=np.array([0.9]), satisfaction=np.full(n_pairs + 1, 0.5))
    if name == "cascade":
        first = _first_click(grid.click)
        # ranks below the first click are unobserved for the cascade model
        observed = shown & ((first[:, None] == 0) | (np.arange(1, k + 1) <= first[:, None]))
        alpha = _per_pair(grid, click * observed, observed.astype(np.float64), prior=model.attractiveness)
        fitted = replace(model, attractiveness=alpha)
        return replace(
            fitted,
            info={
                **model.info,
                "iterations": 1,
                "converged": True,
                "log_likelihood": [float(_log_likelihood(fitted, grid).mean())],
            },
        )

    history: list[float] = []
    converged = False
    previous_click = _previous_click(grid.click) if name == "ubm" else None
    rank_index = np.broadcast_to(np.arange(k), grid.pair.shape)
    for step in range(iterations):
        alpha = _cells(model.attractiveness, grid, 0.0)
        if name in ("pbm", "ubm"):
            assert model.examination is not None  # set by the start above
            if name == "pbm":
                gamma = np.broadcast_to(model.examination, grid.pair.shape)
            else:
                gamma = model.examination[rank_index, previous_click]
            skip = np.maximum(1.0 - gamma * alpha, _EPS)
            examined = np.where(click > 0, 1.0, gamma * (1.0 - alpha) / skip)
            attractive = np.where(click > 0, 1.0, (1.0 - gamma) * alpha / skip)
            attractiveness = _per_pair(grid, attractive, np.ones_like(click), prior=model.attractiveness)
            if name == "pbm":
                top = np.sum(examined * shown, axis=0)
                bottom = np.sum(shown, axis=0)
                examination = _clip(np.where(bottom > 0, top / np.maximum(bottom, 1), model.examination))
            else:
                assert previous_click is not None  # computed above for ubm
                cell = (rank_index * k + previous_click)[shown]
                top = np.bincount(cell, weights=examined[shown], minlength=k * k)
                bottom = np.bincount(cell, minlength=k * k)
                examination = _clip(
                    np.where(bottom > 0, top / np.maximum(bottom, 1), model.examination.reshape(-1))
                ).reshape(k, k)
            model = replace(model, attractiveness=attractiveness, examination=examination)
        else:
            kappa_click, kappa_skip = _kappas(model, grid)
            last = _last_click(grid.click)
            posterior, after_last, tail = _cascade_posterior(alpha, kappa_click, kappa_skip, last)
            examined = posterior * shown
            attractiveness = _per_pair(grid, click, examined, prior=model.attractiveness)
            rows = np.arange(len(last))
            is_last = np.zeros_like(click, dtype=bool)
            is_last[rows[last > 0], last[last > 0] - 1] = True
            # P(E_{l+1} = 1 | clicks): the chance the user went on after the last click
            went_on_after_last = np.where(last < k, posterior[rows, np.minimum(last, k - 1)], after_last)
            if name == "dcm":
                assert model.continuation is not None
                went_on = np.where(is_last, went_on_after_last[:, None], 1.0) * click
                top = went_on.sum(axis=0)
                bottom = click.sum(axis=0)
                continuation = _clip(np.where(bottom > 0, top / np.maximum(bottom, 1), model.continuation))
                model = replace(model, attractiveness=attractiveness, continuation=continuation)
            else:
                assert model.satisfaction is not None
                sigma = _cells(model.satisfaction, grid, 0.0)
                satisfied = np.where(is_last, sigma / tail[:, None], 0.0) * click
                satisfaction = _per_pair(grid, satisfied, click, prior=model.satisfaction)
                # gamma: unsatisfied examinations with a shown cell below, and how many went on
                has_next = np.zeros_like(shown)
                has_next[:, :-1] = shown[:, 1:]
                chance = (examined - satisfied) * shown * has_next
                went = np.zeros_like(examined)
                went[:, :-1] = examined[:, 1:]
                went *= shown * has_next
                gamma = _clip(np.array([went.sum() / max(chance.sum(), _EPS)]))
                model = replace(model, attractiveness=attractiveness, satisfaction=satisfaction, continuation=gamma)
        history.append(float(_log_likelihood(model, grid).mean()))
        if step > 0 and abs(history[-1] - history[-2]) < tolerance:
            converged = True
            break
    return replace(
        model, info={**model.info, "iterations": len(history), "converged": converged, "log_likelihood": history}
    )


# --------------------------------------------------------------------------- probabilities


def click_probabilities(model: ClickModel, grid: SessionGrid) -> tuple[np.ndarray, np.ndarray]:
    """(conditional, unconditional) click probabilities, each (S, K).

    ``conditional[s, r]`` = P(C_r = 1 | the session's clicks above r); ``unconditional[s, r]``
    = P(C_r = 1). Empty cells get 0.
    """
    _check_name(model.name)
    k = grid.max_rank
    if k > model.max_rank:
        raise ValueError(f"the model was fitted on ranks 1..{model.max_rank}; the sessions reach rank {k}")
    shown = grid.shown
    alpha = _cells(model.attractiveness, grid, 0.0)
    click = grid.click
    s = len(click)
    if model.name == "pbm":
        assert model.examination is not None
        p = model.examination[:k] * alpha
        return p * shown, p * shown
    if model.name == "ubm":
        assert model.examination is not None
        gamma = model.examination[:k, :k]
        rank_index = np.broadcast_to(np.arange(k), grid.pair.shape)
        conditional = gamma[rank_index, _previous_click(click)] * alpha
        # P(last click above r is at j), j = 0..K: a forward pass over ranks
        last = np.zeros((s, k + 1))
        last[:, 0] = 1.0
        unconditional = np.zeros((s, k))
        for r in range(k):
            chance = alpha[:, r, None] * gamma[r][None, : r + 1]  # (S, r + 1) by previous click j
            p_click = np.sum(last[:, : r + 1] * chance, axis=1)
            unconditional[:, r] = p_click
            last[:, : r + 1] *= 1.0 - chance
            last[:, r + 1] = p_click
        return conditional * shown, unconditional * shown
    kappa_click, kappa_skip = _kappas(model, grid)
    conditional = np.zeros((s, k))
    unconditional = np.zeros((s, k))
    filtered = np.ones(s)  # P(E_r = 1 | clicks above r)
    marginal = np.ones(s)  # P(E_r = 1)
    for r in range(k):
        a = alpha[:, r]
        conditional[:, r] = filtered * a
        unconditional[:, r] = marginal * a
        clicked = click[:, r] > 0
        skipped_examined = filtered * (1.0 - a)
        filtered = np.where(
            clicked, kappa_click[:, r], skipped_examined * kappa_skip[:, r] / np.maximum(1.0 - filtered * a, _EPS)
        )
        marginal = marginal * (a * kappa_click[:, r] + (1.0 - a) * kappa_skip[:, r])
    return conditional * shown, unconditional * shown


def _log_likelihood(model: ClickModel, grid: SessionGrid) -> np.ndarray:
    """Σ_r log P(C_r = c_r | clicks above r) per session, shape (S,) (natural log)."""
    conditional, _ = click_probabilities(model, grid)
    p = np.clip(np.where(grid.click > 0, conditional, 1.0 - conditional), _EPS, 1.0)
    return np.sum(np.log(p) * grid.shown, axis=1)


@dataclass(frozen=True)
class ClickModelScores:
    """Held-out fit of a click model.

    Attributes
    ----------
    log_likelihood : float
        Mean over sessions of Σ_r log P(C_r = c_r | c_<r) (natural log).
    perplexity : float
        Mean of ``perplexity_by_rank`` over the ranks shown.
    perplexity_by_rank : ndarray of float64, shape (K,)
        2 ** (-mean over sessions showing rank r of log2 P(C_r = c_r)); nan where none does.
    sessions : int
    """

    log_likelihood: float
    perplexity: float
    perplexity_by_rank: np.ndarray
    sessions: int


def evaluate_click_model(model: ClickModel, grid: SessionGrid) -> ClickModelScores:
    """Log-likelihood and per-rank perplexity (book Sec. 5.1-5.2) of ``model`` on ``grid``."""
    _, unconditional = click_probabilities(model, grid)
    p = np.clip(np.where(grid.click > 0, unconditional, 1.0 - unconditional), _EPS, 1.0)
    shown = grid.shown
    count = shown.sum(axis=0)
    mean_log2 = np.where(count > 0, np.sum(np.log2(p) * shown, axis=0) / np.maximum(count, 1), np.nan)
    by_rank = 2.0 ** (-mean_log2)
    return ClickModelScores(
        log_likelihood=float(_log_likelihood(model, grid).mean()),
        perplexity=float(np.nanmean(by_rank)),
        perplexity_by_rank=by_rank,
        sessions=len(grid.pair),
    )


def simulate_clicks_of(model: ClickModel, grid: SessionGrid, rng: np.random.Generator) -> SessionGrid:
    """The grid's sessions with clicks drawn from ``model`` (its documents and ranks kept)."""
    k = grid.max_rank
    shown = grid.shown
    alpha = _cells(model.attractiveness, grid, 0.0)
    s = len(alpha)
    click = np.zeros((s, k), dtype=np.int8)
    draw = rng.random((s, k, 2))
    if model.name == "pbm":
        assert model.examination is not None
        click[:] = (draw[:, :, 0] < model.examination[:k] * alpha) & shown
    elif model.name == "ubm":
        assert model.examination is not None
        previous = np.zeros(s, dtype=np.int64)
        for r in range(k):
            c = (draw[:, r, 0] < model.examination[r, previous] * alpha[:, r]) & shown[:, r]
            click[:, r] = c
            previous = np.where(c, r + 1, previous)
    else:
        kappa_click, kappa_skip = _kappas(model, grid)
        examined = np.ones(s, dtype=bool)
        for r in range(k):
            c = examined & (draw[:, r, 0] < alpha[:, r]) & shown[:, r]
            click[:, r] = c
            examined = examined & (draw[:, r, 1] < np.where(c, kappa_click[:, r], kappa_skip[:, r]))
    return SessionGrid(pair=grid.pair, click=click, n_pairs=grid.n_pairs)


def independent_click_scores(
    probability: np.ndarray, session: np.ndarray, rank: np.ndarray, click: np.ndarray, *, max_rank: int
) -> ClickModelScores:
    """``evaluate_click_model``'s scores for a model whose clicks are independent given the
    documents and ranks (PBM, a two-tower model), from each displayed row's click
    probability: a session's log-likelihood is Σ_r log P(C_r = c_r), and P(C_r = c_r)
    enters the perplexity at r; ranks beyond ``max_rank`` are left out.

    Parameters
    ----------
    probability : ndarray of float, shape (n_rows,)
        P(C = 1) of each row.
    session, rank, click : array_like of int, shape (n_rows,)
        Any session labels, 1-based ranks, clicks 0/1.
    """
    probability, rank, click = (np.asarray(a) for a in (probability, rank, click))
    keep = rank <= max_rank
    probability, rank, click = probability[keep], rank[keep].astype(np.int64), click[keep]
    _, row_session = np.unique(np.asarray(session)[keep], return_inverse=True)
    row_session = row_session.reshape(-1)
    n_sessions = int(row_session.max()) + 1 if len(row_session) else 0
    p = np.clip(np.where(click > 0, probability, 1.0 - probability), _EPS, 1.0)
    log_likelihood = np.bincount(row_session, weights=np.log(p), minlength=n_sessions)
    count = np.bincount(rank - 1, minlength=max_rank)
    total = np.bincount(rank - 1, weights=np.log2(p), minlength=max_rank)
    by_rank = np.where(count > 0, 2.0 ** (-total / np.maximum(count, 1)), np.nan)
    return ClickModelScores(
        log_likelihood=float(log_likelihood.mean()),
        perplexity=float(np.nanmean(by_rank)),
        perplexity_by_rank=by_rank,
        sessions=n_sessions,
    )
