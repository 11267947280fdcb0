"""Trust bias: its click model, the Bayes-IPS and affine corrections, and the EM estimate of
its parameters from logs of several rankers.

Legend (Agarwal, Wang, Li, Bendersky, Najork, WWW 2019, "Addressing Trust Bias for
Unbiased Learning-to-Rank": the TrustPBM and Bayes-IPS; Vardasbi, Oosterhuis, de Rijke,
CIKM 2020, "When Inverse Propensity Scoring does not Work: Affine Corrections for Unbiased
Learning to Rank": the affine estimator):
    k                                  -> ``rank``, 1-based; ranks beyond K share rank K's values
    theta_k = Pr(E = 1 | k)            -> ``TrustBias.examination[k - 1]``
    eps+_k = Pr(C = 1 | E = 1, R = 1, k) -> ``TrustBias.relevant_trust[k - 1]``
    eps-_k = Pr(C = 1 | E = 1, R = 0, k) -> ``TrustBias.irrelevant_trust[k - 1]``
    c+_k = theta_k eps+_k, c-_k = theta_k eps-_k
                                       -> ``relevant_click``, ``irrelevant_click``: what clicks
                                          identify (Pr(C = 1 | k, R) = c-_k + R (c+_k - c-_k))
    alpha_k = c+_k - c-_k, beta_k = c-_k -> ``alpha``, ``beta`` (affine: Pr(C | k, R) = alpha_k R + beta_k)
    Pr(R = 1 | C = 1, k)                -> ``posterior_relevance``: eps+_k / (eps+_k + eps-_k)

The TrustPBM (WWW 2019): a document at rank k is examined with theta_k; an examined
relevant document is clicked with eps+_k, an examined irrelevant one with eps-_k (users
trust the top ranks, so eps-_k falls with k). The position-based model of the paper is the
special case of constant eps+ and eps-.

Corrections, per click or impression of a document at rank k (``n_sessions`` sessions):
- IPS (the paper): a click weighs 1 / theta_k. Its expectation per displayed document is
  eps+_k R + eps-_k (1 - R): biased by the trust of the rank.
- Bayes-IPS (WWW 2019): a click weighs Pr(R = 1 | C = 1, k) / theta_k. Its expectation is
  eps+_k (eps+_k R + eps-_k (1 - R)) / (eps+_k + eps-_k): still biased (Vardasbi et al.
  2020 prove that no per-click weight removes trust bias), but irrelevant clicks at the
  trusted top ranks count less.
- Affine (CIKM 2020): a displayed document's relevance is estimated by (c - beta_k) /
  alpha_k from its click c, whose expectation is R exactly: every impression weighs
  -beta_k / alpha_k and every click 1 / alpha_k, so weights may be negative.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from cltr.core.propensity import PropensityEstimate

__all__ = [
    "TrustBias",
    "bayes_ips_weight",
    "affine_document_weights",
    "weighted_estimate",
    "TrustEstimate",
    "trust_from_clicks",
    "trust_em",
]


@dataclass(frozen=True, eq=False)
class TrustBias:
    """The TrustPBM's parameters for ranks 1..K; deeper ranks take rank K's.

    Attributes
    ----------
    examination, relevant_trust, irrelevant_trust : ndarray of float64, shape (K,)
        theta_k, eps+_k and eps-_k for k = 1..K: theta_k in (0, 1], 0 <= eps-_k < eps+_k <= 1
        (a relevant document must be clicked more than an irrelevant one at every rank, or
        clicks say nothing about relevance there and alpha_k would not be positive).
    """

    examination: np.ndarray
    relevant_trust: np.ndarray
    irrelevant_trust: np.ndarray

    def __post_init__(self) -> None:
        arrays = [
            np.asarray(getattr(self, name), dtype=np.float64)
            for name in ("examination", "relevant_trust", "irrelevant_trust")
        ]
        shapes = {a.shape for a in arrays}
        if len(shapes) != 1 or arrays[0].ndim != 1 or not len(arrays[0]):
            raise ValueError(
                f"examination, relevant_trust and irrelevant_trust must be flat arrays of one "
                f"length >= 1, found shapes {[a.shape for a in arrays]}"
            )
        theta, plus, minus = arrays
        checks = ((theta > 0) & (theta <= 1), (minus >= 0) & (plus <= 1), plus > minus)
        # NaN and infinities fail these comparisons too
        conditions = ("0 < theta_k <= 1", "0 <= eps-_k and eps+_k <= 1", "eps+_k > eps-_k")
        for ok, what in zip(checks, conditions, strict=True):
            if not np.all(ok):
                k = int(np.flatnonzero(~ok)[0]) + 1
                raise ValueError(
                    f"trust-bias parameters must satisfy {what}; rank {k} has theta = {theta[k - 1]:g}, "
                    f"eps+ = {plus[k - 1]:g}, eps- = {minus[k - 1]:g}"
                )
        for name, a in zip(("examination", "relevant_trust", "irrelevant_trust"), arrays, strict=True):
            object.__setattr__(self, name, a)

    @property
    def max_rank(self) -> int:
        return len(self.examination)

    def _at(self, values: np.ndarray, rank) -> np.ndarray:
        rank = np.asarray(rank, dtype=np.int64)
        if rank.size and rank.min() < 1:
            raise ValueError(f"ranks must be >= 1, found {rank.min()}")
        return values[np.minimum(rank, self.max_rank) - 1]

    def relevant_click(self, rank) -> np.ndarray:
        """c+_k = theta_k eps+_k, the click probability of a relevant document at each rank."""
        return self._at(self.examination * self.relevant_trust, rank)

    def irrelevant_click(self, rank) -> np.ndarray:
        """c-_k = theta_k eps-_k."""
        return self._at(self.examination * self.irrelevant_trust, rank)

    def click_probability(self, rank, relevant) -> np.ndarray:
        """Pr(C = 1 | k, R) per document: c+_k if relevant else c-_k, shape of ``rank``."""
        return np.where(np.asarray(relevant, dtype=bool), self.relevant_click(rank), self.irrelevant_click(rank))

    def alpha(self, rank) -> np.ndarray:
        """alpha_k = theta_k (eps+_k - eps-_k) > 0 (Vardasbi et al. 2020, the affine slope)."""
        return self._at(self.examination * (self.relevant_trust - self.irrelevant_trust), rank)

    def beta(self, rank) -> np.ndarray:
        """beta_k = theta_k eps-_k (Vardasbi et al. 2020, the affine offset)."""
        return self.irrelevant_click(rank)

    def posterior_relevance(self, rank) -> np.ndarray:
        """Pr(R = 1 | C = 1, k) = eps+_k / (eps+_k + eps-_k): Bayes' rule with a uniform prior
        on relevance, so that it depends on the rank alone (WWW 2019's Bayes-IPS)."""
        return self._at(self.relevant_trust / (self.relevant_trust + self.irrelevant_trust), rank)


def bayes_ips_weight(rank, trust: TrustBias) -> np.ndarray:
    """Bayes-IPS weight of a click at each rank (Agarwal et al., WWW 2019):

        w_k = Pr(R = 1 | C = 1, k) / theta_k = eps+_k / ((eps+_k + eps-_k) theta_k),

    shape of ``rank``; always positive, so a click log keeps it as propensity 1 / w_k.
    """
    return trust.posterior_relevance(rank) / trust._at(trust.examination, rank)


def affine_document_weights(doc, rank, impressions, clicks, trust: TrustBias) -> tuple[np.ndarray, np.ndarray]:
    """Signed per-document weights of the affine estimator (Vardasbi et al., CIKM 2020):

        w_d = Σ_{rows of d} (clicks - impressions · beta_k) / alpha_k,

    the summed relevance estimates (c - beta_k) / alpha_k of every impression of document d
    (E[w_d] = R_d · impressions of d, whatever the ranks). Rows are aggregated impressions
    (``cltr.core.clicks.Impressions``), one per (document, rank, ranker).

    Parameters
    ----------
    doc, rank, impressions, clicks : ndarray of int, shape (m,)
    trust : TrustBias

    Returns
    -------
    documents : ndarray of int64, shape (n,)
        The distinct documents, sorted.
    weight : ndarray of float64, shape (n,)
        Their weights, of either sign.
    """
    doc = np.asarray(doc, dtype=np.int64)
    row = (
        np.asarray(clicks, dtype=np.float64) - np.asarray(impressions, dtype=np.float64) * trust.beta(rank)
    ) / trust.alpha(rank)
    documents, inverse = np.unique(doc, return_inverse=True)
    return documents, np.bincount(inverse.reshape(-1), weights=row, minlength=len(documents))


def weighted_estimate(values, weight, *, n_sessions: int) -> float:
    """(1 / n_sessions) Σ_i weight_i · values_i: the counterfactual estimate of a per-session
    additive metric from weighted examples (IPS when weight_i = 1 / q_i; paper Eq. lossips).

    Unbiased for Σ_d R_d · value(d) per session when E[Σ_{examples of d} weight] = R_d per
    session, as for the affine weights under trust bias (and IPS under the position-based
    model without noise).
    """
    if n_sessions <= 0:
        raise ValueError(f"n_sessions must be positive, found {n_sessions}")
    return float(np.sum(np.asarray(values, dtype=np.float64) * np.asarray(weight, dtype=np.float64)) / n_sessions)


# --------------------------------------------------------------------------- estimation


@dataclass(frozen=True, eq=False)
class TrustEstimate:
    """c+_k and c-_k estimated by ``trust_em``, with bootstrap bands.

    Clicks identify only c+_k = theta_k eps+_k and c-_k = theta_k eps-_k (every click
    probability is theta_k times a trust), which is all the affine correction needs. To give
    Bayes-IPS and IPS a theta_k, ``trust_bias`` attributes the decay of c+_k over ranks to
    examination (``trust_from_clicks``).

    Attributes
    ----------
    rank : ndarray of int64, shape (K,)
    relevant_click, irrelevant_click : ndarray of float64, shape (K,)
    prior : ndarray of float64, shape (K,)
        Estimated share of relevant documents among those whose top rank is k
        (``info["relevant_share"]``: among all).
    level : float
        Coverage of the bootstrap bands.
    replicates : ndarray of float64, shape (B, 2, K)
        (c+, c-) of each bootstrap replicate (queries resampled); B = 0 without a bootstrap.
    info : dict
        Iterations, convergence, log-likelihood, documents and queries used.
    """

    rank: np.ndarray
    relevant_click: np.ndarray
    irrelevant_click: np.ndarray
    prior: np.ndarray
    level: float
    replicates: np.ndarray
    info: dict = field(default_factory=dict)

    def trust_bias(self) -> TrustBias:
        return trust_from_clicks(self.relevant_click, self.irrelevant_click)

    def band(self, values: np.ndarray, of_replicate) -> tuple[np.ndarray, np.ndarray]:
        """Percentile band of a statistic: ``of_replicate(c+, c-)`` over the replicates,
        widened to contain ``values`` (the statistic of the fit); nan without a bootstrap."""
        if not len(self.replicates):
            return np.full(len(self.rank), np.nan), np.full(len(self.rank), np.nan)
        statistic = np.stack([of_replicate(plus, minus) for plus, minus in self.replicates])
        tail = (1.0 - self.level) / 2.0
        low, high = np.quantile(statistic, [tail, 1.0 - tail], axis=0)
        return np.minimum(low, values), np.maximum(high, values)

    def propensity_estimate(self) -> PropensityEstimate:
        """The examination theta_k = c+_k / c+_1 of ``trust_bias`` as a ``PropensityEstimate``
        (what IPS divides by), with c+_k, c-_k, their bands and the prior under
        ``info["trust"]`` in plain Python types."""
        examination = self.relevant_click / self.relevant_click[0]
        low, high = self.band(examination, lambda plus, minus: plus / plus[0])
        bands = {}
        for name, values, index in (
            ("relevant_click", self.relevant_click, 0),
            ("irrelevant_click", self.irrelevant_click, 1),
        ):
            lo, hi = self.band(values, lambda plus, minus, index=index: (plus, minus)[index])
            bands.update({name: values.tolist(), f"{name}_low": lo.tolist(), f"{name}_high": hi.tolist()})
        return PropensityEstimate(
            rank=self.rank,
            propensity=examination,
            low=low,
            high=high,
            level=self.level,
            method="trust-em",
            info={**self.info, "trust": {**bands, "prior": self.prior.tolist()}},
        )


def trust_from_clicks(relevant_click, irrelevant_click) -> TrustBias:
    """TrustPBM parameters with c+_k and c-_k as given (shape (K,)), attributing the decay
    of c+_k over ranks to examination: theta_k = c+_k / c+_1, eps+_k = c+_1,
    eps-_k = c-_k c+_1 / c+_k (clicks cannot tell theta_k from eps+_k apart)."""
    plus = np.asarray(relevant_click, dtype=np.float64)
    minus = np.asarray(irrelevant_click, dtype=np.float64)
    top = plus[0]
    return TrustBias(
        examination=plus / top, relevant_trust=np.full(len(plus), top), irrelevant_trust=minus * top / plus
    )


def _em_rows(doc, rank, impressions, clicks) -> dict:
    """The EM's per-row arrays (each row's document index, 0-based rank and counts) and
    each document's top (smallest) 0-based rank, which indexes its prior."""
    documents, row_doc = np.unique(np.asarray(doc, dtype=np.int64), return_inverse=True)
    row_doc, row_rank = row_doc.reshape(-1), np.asarray(rank, dtype=np.int64) - 1
    top = np.full(len(documents), np.iinfo(np.int64).max)
    np.minimum.at(top, row_doc, row_rank)
    return {
        "row_doc": row_doc,
        "n_docs": len(documents),
        "row_rank": row_rank,
        "doc_top": top,
        "impressions": np.asarray(impressions, dtype=np.float64),
        "clicks": np.asarray(clicks, dtype=np.float64),
    }


def _document_loglik(rows: dict, click_probability: np.ndarray) -> np.ndarray:
    """Σ over a document's rows of log Binomial(clicks; impressions, p_k), without the binomial coefficient."""
    # scipy here and in _em_fit, not at the top: scipy.special takes a quarter of a second to
    # import and `cltr --help` imports this module; once per call, never per row
    from scipy.special import xlog1py, xlogy

    p = click_probability[rows["row_rank"]]
    c, n = rows["clicks"], rows["impressions"]
    return np.bincount(rows["row_doc"], weights=xlogy(c, p) + xlog1py(n - c, -p), minlength=rows["n_docs"])


def _em_fit(rows: dict, doc_weight: np.ndarray, max_rank: int, *, iterations: int, tol: float, start=None):
    """EM for a two-component mixture per document: relevant (clicks ~ Bin(n, c+_k)) with
    prior pi_j, irrelevant (Bin(n, c-_k)), j the document's top rank; returns (c+, c-, pi,
    log-likelihood, iterations, converged, the posteriors rho_d)."""
    from scipy.special import expit, logsumexp

    row_doc, row_rank, c, n = rows["row_doc"], rows["row_rank"], rows["clicks"], rows["impressions"]
    top = rows["doc_top"]
    floor = 1e-9  # keeps log p finite on ranks without a click
    if start is None:
        # start from a split that already separates: a document clicked more than its ranks'
        # average is probably relevant (label switching cannot happen from there)
        rate = np.bincount(row_rank, weights=c, minlength=max_rank) / np.maximum(
            np.bincount(row_rank, weights=n, minlength=max_rank), 1.0
        )
        excess = np.bincount(row_doc, weights=c - n * rate[row_rank], minlength=rows["n_docs"])
        responsibility = np.where(excess > 0, 0.9, 0.1)
    else:
        responsibility = None
    plus, minus, prior = start if start is not None else (None, None, None)
    previous = -np.inf
    converged = False
    for iteration in range(1, iterations + 1):  # noqa: B007 (its last value is the count returned)
        if responsibility is not None:
            weight = (doc_weight * responsibility)[row_doc]
            other = (doc_weight * (1.0 - responsibility))[row_doc]
            plus = np.bincount(row_rank, weights=weight * c, minlength=max_rank) / np.maximum(
                np.bincount(row_rank, weights=weight * n, minlength=max_rank), floor
            )
            minus = np.bincount(row_rank, weights=other * c, minlength=max_rank) / np.maximum(
                np.bincount(row_rank, weights=other * n, minlength=max_rank), floor
            )
            plus, minus = np.clip(plus, floor, 1 - floor), np.clip(minus, floor, 1 - floor)
            # the logging rankers show relevant documents high: one prior per top rank, else
            # documents shown only deep would borrow the top's share of relevant ones
            prior = np.clip(
                np.bincount(top, weights=doc_weight * responsibility, minlength=max_rank)
                / np.maximum(np.bincount(top, weights=doc_weight, minlength=max_rank), floor),
                floor,
                1 - floor,
            )
        # given as start, or set by the M-step: without a start the posteriors exist from the outset
        assert plus is not None and minus is not None and prior is not None
        relevant = np.log(prior[top]) + _document_loglik(rows, plus)
        irrelevant = np.log1p(-prior[top]) + _document_loglik(rows, minus)
        loglik = float(np.sum(doc_weight * logsumexp(np.stack([relevant, irrelevant]), axis=0)))
        responsibility = expit(relevant - irrelevant)
        if loglik - previous <= tol * abs(loglik):
            converged = True
            break
        previous = loglik
    return plus, minus, prior, loglik, iteration, converged, responsibility


def trust_em(
    query,
    doc,
    rank,
    impressions,
    clicks,
    *,
    max_rank: int | None = None,
    min_clicks: float = 10.0,
    iterations: int = 500,
    tol: float = 1e-9,
    bootstrap: int = 100,
    level: float = 0.95,
    rng=None,
) -> TrustEstimate:
    """Estimate c+_k and c-_k from aggregated impressions by EM (after Agarwal et al., WWW 2019).

    The WWW 2019 paper fits the TrustPBM by EM on logs where documents move between ranks
    (swap interventions); here the movement comes from whatever the log holds, typically
    several logging rankers (``cltr simulate --rankers K``), so that one document's clicks
    at several ranks tie the ranks' parameters together. Relevance is a latent *binary
    property of each document*, fixed across its sessions (R_d ~ Bernoulli(pi)), rather than
    redrawn per click as in the paper's EM: with per-click relevance the likelihood only
    depends on c-_k + gamma_d (c+_k - c-_k), which any affine change of the gamma_d leaves
    unchanged, so c+ and c- would not be identified. With a binary R_d a document's many
    sessions separate the two components:

        Pr(clicks of d) = pi_j Π_rows Bin(c; n, c+_k) + (1 - pi_j) Π_rows Bin(c; n, c-_k).

    E-step: the posterior rho_d = Pr(R_d = 1 | clicks of d). M-step (closed form):
    c+_k = Σ rho_d c / Σ rho_d n over the rows at rank k, c-_k likewise with 1 - rho_d,
    pi_j = mean rho_d over the documents whose top rank is j (the logging rankers show
    relevant documents high, so one prior for all would be too high for documents shown only
    deep and pull c+ down there). The likelihood never decreases.

    Parameters
    ----------
    query, doc, rank, impressions, clicks : ndarray of int, shape (m,)
        One row per (document, rank, ranker), as ``cltr.core.clicks.Impressions``.
    max_rank : int, optional
        Estimate ranks 1..K from the rows at those ranks [default: the deepest rank shown];
        ``TrustBias`` extends rank K's values to deeper ranks. (Pooling the deeper rows
        into rank K instead would give it an average over ranks whose clicks fall further.)
        K is lowered to the rank above the first whose relevant documents got fewer than
        ``min_clicks`` clicks (in expectation under the posteriors), and refitted.
    min_clicks : float
        The support a rank needs (``info["requested_max_rank"]`` keeps the K asked for).
    iterations, tol : EM's limits: stop when the log-likelihood rises by less than
        ``tol`` relatively.
    bootstrap : int
        Replicates of the percentile band (queries resampled with replacement; 0: none).
    level : float
    rng : numpy Generator, SeedSequence or int, needed when ``bootstrap > 0``.

    Returns
    -------
    TrustEstimate
    """
    query = np.asarray(query, dtype=np.int64)
    rank = np.asarray(rank, dtype=np.int64)
    impressions = np.asarray(impressions, dtype=np.int64)
    clicks = np.asarray(clicks, dtype=np.int64)
    if not len(query) == len(doc) == len(rank) == len(impressions) == len(clicks) or not len(query):
        raise ValueError("query, doc, rank, impressions and clicks must be non-empty arrays of one length")
    if rank.min() < 1 or impressions.min() < 0 or np.any(clicks < 0) or np.any(clicks > impressions):
        raise ValueError("ranks must be >= 1 and 0 <= clicks <= impressions on every row")
    max_rank = int(rank.max()) if max_rank is None else int(max_rank)
    if max_rank < 1:
        raise ValueError(f"max_rank must be >= 1, found {max_rank}")
    if isinstance(bootstrap, bool) or int(bootstrap) < 0 or not 0 < level < 1:
        raise ValueError(f"bootstrap must be >= 0 and level in (0, 1), found {bootstrap!r}, {level!r}")
    requested = max_rank
    while True:
        shown = rank <= max_rank
        rows = _em_rows(np.asarray(doc)[shown], rank[shown], impressions[shown], clicks[shown])
        plus, minus, prior, loglik, used, converged, posterior = _em_fit(
            rows, np.ones(rows["n_docs"]), max_rank, iterations=iterations, tol=tol
        )
        # a rank whose clicks hardly come from relevant documents says nothing about c+_k
        # there (its estimate would be noise, or the floor): estimate down to the rank above
        relevant_clicks = np.bincount(
            rows["row_rank"], weights=posterior[rows["row_doc"]] * rows["clicks"], minlength=max_rank
        )
        supported = relevant_clicks >= min_clicks
        if supported.all():
            break
        if not supported[0]:
            raise ValueError(
                f"fewer than {min_clicks} clicks on relevant documents at rank 1: too few sessions to "
                f"estimate trust bias"
            )
        max_rank = int(np.argmin(supported))
    doc_query = np.zeros(rows["n_docs"], dtype=np.int64)
    doc_query[rows["row_doc"]] = query[shown]
    replicates = np.empty((0, 2, max_rank))
    if bootstrap:
        if rng is None:
            raise ValueError("the bootstrap needs rng: a numpy Generator, SeedSequence or int seed")
        generator = np.random.default_rng(rng)
        queries, doc_cluster = np.unique(doc_query, return_inverse=True)
        counts = generator.multinomial(len(queries), np.full(len(queries), 1.0 / len(queries)), size=int(bootstrap))
        replicates = np.empty((int(bootstrap), 2, max_rank))
        for b in range(int(bootstrap)):
            # warm-started from the full fit: the replicate's optimum is near it
            fit = _em_fit(
                rows,
                counts[b][doc_cluster.reshape(-1)].astype(np.float64),
                max_rank,
                iterations=iterations,
                tol=tol,
                start=(plus, minus, prior),
            )
            replicates[b] = fit[0], fit[1]
    info = {
        "iterations": used,
        "converged": converged,
        "log_likelihood": loglik,
        "documents": rows["n_docs"],
        "queries": int(len(np.unique(doc_query))),
        "bootstrap": int(bootstrap),
        "requested_max_rank": requested,
        "relevant_share": float(posterior.mean()),
    }
    return TrustEstimate(
        rank=np.arange(1, max_rank + 1),
        relevant_click=plus,
        irrelevant_click=minus,
        prior=prior,
        level=float(level),
        replicates=replicates,
        info=info,
    )
