"""Doubly robust (DR) estimation of relevance under the position-based model.

Legend (Oosterhuis, "Doubly-Robust Estimation for Correcting Position Bias in Click
Feedback for Unbiased Learning to Rank", ACM TOIS 2023: its DR estimator, which divides by
the *expected* examination of a document under the logging policy since the actual one is
not observed; its alpha_k is the examination p_k here and its beta_k is 0, the
position-based model):
    d, q(d)                   -> a document (a row of the split) and its query
    N_q                       -> ``sessions[q]``, the sessions of query q in the log
    k_j(d)                    -> the rank at which session j showed d
    p_k                       -> ``propensity``: the examination probability of rank k as the
                                 learner is told it (the log's, an estimate, a misspecified eta)
    c_j(d)                    -> 1 if d was clicked in session j
    gamma(d)                  -> Pr(C = 1 | E = 1, d): the click probability of d when examined,
                                 eps- + (eps+ - eps-) R(d) under the paper's click noise
    gamma_hat(d)              -> ``relevance``: the regression model's prediction of gamma(d)
    rho_d                     -> E_{logging policy}[p_{k(d)}], the expected examination of d:
                                 (1/N_q) Σ_j p_{k_j(d)} (p_k for a deterministic logging ranker;
                                 the mixture over rankers in proportion to their sessions; 0 in a
                                 session that did not display d)
    tau                       -> ``clip``

The position-based model says Pr(c_j(d) = 1) = p_{k_j(d)} gamma(d). Per document:

    IPS:         gamma_IPS(d) = (1/N_q) Σ_j c_j(d) / p_{k_j(d)}
    DR  (the paper's estimator with beta = 0, rho clipped at tau):
                 gamma_DR(d)  = (1/N_q) Σ_j [ gamma_hat(d) + (c_j(d) - p_{k_j(d)} gamma_hat(d)) / max(rho_d, tau) ]
                              = gamma_hat(d) (1 - rho_d / max(rho_d, tau)) + C(d) / (N_q max(rho_d, tau)),

with C(d) = Σ_j c_j(d) and Σ_j p_{k_j(d)} = N_q rho_d. Its expectation over the clicks is

    E[gamma_DR(d)] = gamma_hat(d) (1 - rho_d / max(rho_d, tau)) + gamma(d) rho_d / max(rho_d, tau):

- without clipping (or where rho_d >= tau) it is gamma(d) whatever gamma_hat: the direct
  term gamma_hat and its expected correction - rho_d gamma_hat / rho_d cancel. Then gamma_DR
  is C(d) / (N_q rho_d), the policy-aware IPS estimate, and with one deterministic logging
  ranker the per-click IPS above exactly: clicks alone carry no more information there;
- with clipping (rho_d < tau) it is gamma(d) when gamma_hat = gamma, whatever tau, where
  clipped IPS, E = gamma(d) rho_d / tau, is biased by the factor rho_d / tau. A wrong
  gamma_hat leaves the bias (gamma_hat - gamma)(1 - rho_d / tau), smaller than clipped
  IPS's gamma (1 - rho_d / tau) as long as |gamma_hat - gamma| < gamma;
- its variance is Var[C(d)] / (N_q max(rho_d, tau))^2: that of IPS times
  (rho_d / max(rho_d, tau))^2. Clipping buys the variance; the regression removes the bias
  clipping brings.

These hold for a gamma_hat that does not depend on the clicks it corrects (the validation
split's, fitted on the training split); fitted on the same clicks (the training split's),
a model of a few dozen parameters fitted on thousands of documents leaves a dependence of
the order of its estimation error.

As a learner's example, document d of query q weighs N_q gamma_DR(d) (``dr_document_weights``),
what Σ_j c_j(d) / p_{k_j(d)} weighs under IPS. The weight is >= 0 whenever gamma_hat(d) >= 0
(the logistic model's lies in (0, 1)): both of its terms are, since rho_d <= max(rho_d, tau)
and C(d) >= 0. So the learners that need positive weights (the Ranking SVMs) take it too.

The regression model (``fit_relevance_model``): gamma_hat(d) = sigmoid(w . x_d + b) on
standardized features, by maximum likelihood of every impression, c ~ Bernoulli(p_k gamma_hat(d)),
with the L2 penalty (l2 / 2) ||w||^2 on the mean negative log-likelihood per impression
(b unpenalized), by L-BFGS on impressions aggregated per (document, propensity).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cltr.core.clicks import Displayed
from cltr.core.ranking import DCG_BASE, dcg_gain, snips_avg_dcg

__all__ = [
    "PropensityImpressions",
    "impressions_by_propensity",
    "RelevanceModel",
    "fit_relevance_model",
    "dr_document_weights",
    "dr_estimate",
    "DRValidation",
    "dr_validation",
    "DEFAULT_L2",
]

DEFAULT_L2 = 1e-2
"""L2 penalty of the relevance model, on the mean log-likelihood per impression. Under
strong position bias the top few ranks carry most of the likelihood, so the sample that
fits the model's few dozen weights is far smaller than the impressions; among 1e-4 .. 1e-1,
1e-2 gave the likeliest held-out (validation) clicks and the best test ranking of
gamma_hat on generated data with eta 2, eps- 0.3.
"""


@dataclass(frozen=True)
class PropensityImpressions:
    """Displayed documents aggregated by (document, told propensity): what the DR estimate
    and the relevance model's likelihood read (both depend on a row's rank only through
    its propensity).

    Attributes
    ----------
    query, doc : ndarray of int64, shape (m,)
        Query (index into the split) and document (row of the split) of each row.
    propensity : ndarray of float64, shape (m,)
        p_k of the rank(s) the document was shown at, in (0, 1].
    impressions, clicks : ndarray of int64, shape (m,)
        How often the document was shown with that propensity, and clicked.
    """

    query: np.ndarray
    doc: np.ndarray
    propensity: np.ndarray
    impressions: np.ndarray
    clicks: np.ndarray

    def __len__(self) -> int:
        return len(self.doc)


def impressions_by_propensity(
    displayed: Displayed, *, needed_by: str = "the doubly robust estimate"
) -> PropensityImpressions:
    """Aggregate every displayed row by (document, propensity).

    Raises ValueError where a propensity is unknown (NaN: an imported log without them)
    or outside (0, 1]; the message says that ``needed_by`` needs them.
    """
    propensity = np.asarray(displayed.propensity, dtype=np.float64)
    bad = ~((propensity > 0) & (propensity <= 1))
    if bad.any():
        where = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{needed_by} needs the examination propensity of every displayed row in "
            f"(0, 1]; {int(bad.sum())} rows have none or another (session {int(displayed.session[where])}"
            f", rank {int(displayed.rank[where])}: {float(propensity[where])}): estimate them (`cltr "
            f"propensities estimate`) and train with --propensities estimated"
        )
    if len(propensity) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return PropensityImpressions(empty, empty, np.zeros(0), empty, empty)
    values, code = np.unique(propensity, return_inverse=True)
    doc = np.asarray(displayed.doc, dtype=np.int64)
    unique, first, inverse = np.unique(doc * len(values) + code.ravel(), return_index=True, return_inverse=True)
    return PropensityImpressions(
        query=np.asarray(displayed.query, dtype=np.int64)[first],
        doc=doc[first],
        propensity=propensity[first],
        impressions=np.bincount(inverse.ravel(), minlength=len(unique)),
        clicks=np.bincount(
            inverse.ravel(), weights=np.asarray(displayed.click, dtype=np.float64), minlength=len(unique)
        ).astype(np.int64),
    )


@dataclass(frozen=True)
class RelevanceModel:
    """gamma_hat(x) = sigmoid(((x - mean) / scale) . w + b): a document's click probability
    when examined.

    Attributes
    ----------
    mean, scale : ndarray of float64, shape (n_features,)
        The standardization of the features it was fitted on (scale 1 for a constant feature).
    w : ndarray of float64, shape (n_features,)
    b : float
    negative_log_likelihood : float
        Mean per impression at the optimum (without the penalty).
    iterations : int
    """

    mean: np.ndarray
    scale: np.ndarray
    w: np.ndarray
    b: float
    negative_log_likelihood: float
    iterations: int

    def relevance(self, X: np.ndarray) -> np.ndarray:
        """gamma_hat of every row of ``X``, shape (n,), in (0, 1)."""
        from scipy.special import expit  # here, not at the top: see fit_relevance_model

        return expit(((np.asarray(X, dtype=np.float64) - self.mean) / self.scale) @ self.w + self.b)


def _log_sigmoid(z: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -z)


def fit_relevance_model(
    X: np.ndarray, table: PropensityImpressions, *, l2: float = DEFAULT_L2, tol: float = 1e-9, max_iterations: int = 500
) -> RelevanceModel:
    """Fit gamma_hat = sigmoid(w . x + b) by maximum likelihood of the impressions.

    Each impression of document d at propensity p is a Bernoulli(p gamma_hat(d)) click, so
    a row of ``table`` (n impressions, c clicks) adds

        c log(p gamma_hat(d)) + (n - c) log(1 - p gamma_hat(d)),
        with log(1 - p sigmoid(z)) = log(1 + (1 - p) e^z) - log(1 + e^z),

    and d/dz of it is c (1 - sigmoid(z)) + (n - c) (sigmoid(z + log(1 - p)) - sigmoid(z)).
    Minimised: minus its mean per impression plus (l2 / 2) ||w||^2, by L-BFGS.

    Parameters
    ----------
    X : ndarray, shape (n_docs, n_features)
        The split's features; ``table.doc`` indexes its rows.
    table : PropensityImpressions
    l2 : float
        The penalty on w (features standardized over the fitted documents).

    Returns
    -------
    RelevanceModel
    """
    # here, not at the top: scipy.optimize takes half a second to import and scipy.special a
    # quarter, and every cltr command (`cltr --help` too) imports the corrections that import
    # this module; bound once per fit, so the optimizer's objective pays no import
    from scipy.optimize import minimize
    from scipy.special import expit

    if len(table) == 0 or table.impressions.sum() == 0:
        raise ValueError("no impressions to fit the relevance model on")
    X = np.asarray(X, dtype=np.float64)
    documents, inverse = np.unique(table.doc, return_inverse=True)
    inverse = inverse.ravel()
    features = X[documents]
    mean = features.mean(axis=0)
    scale = features.std(axis=0)
    scale[scale == 0] = 1.0
    features = (features - mean) / scale
    clicks = table.clicks.astype(np.float64)
    misses = table.impressions.astype(np.float64) - clicks
    total = float(table.impressions.sum())
    with np.errstate(divide="ignore"):
        log_unseen = np.log1p(-table.propensity)  # -inf at propensity 1: every impression examined
    # c log p is constant in (w, b): kept so the reported likelihood is the true one
    constant = float(np.sum(clicks * np.log(table.propensity)))
    n_features = X.shape[1]

    def objective(theta):
        w, b = theta[:n_features], theta[n_features]
        z = (features @ w + b)[inverse]
        sigma = expit(z)
        log_likelihood = clicks @ _log_sigmoid(z) + misses @ (np.logaddexp(0.0, z + log_unseen) - np.logaddexp(0.0, z))
        slope = clicks * (1.0 - sigma) + misses * (expit(z + log_unseen) - sigma)
        per_doc = np.bincount(inverse, weights=slope, minlength=len(documents))
        value = -(log_likelihood + constant) / total + 0.5 * l2 * (w @ w)
        gradient = np.concatenate([-(features.T @ per_doc) / total + l2 * w, [-per_doc.sum() / total]])
        return value, gradient

    rate = float(np.clip(clicks.sum() / np.sum(table.impressions * table.propensity), 1e-3, 1 - 1e-3))
    start = np.concatenate([np.zeros(n_features), [np.log(rate / (1 - rate))]])
    result = minimize(
        objective,
        start,
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": max_iterations, "gtol": tol, "ftol": tol * 1e-3},
    )
    w = result.x[:n_features]
    return RelevanceModel(
        mean=mean,
        scale=scale,
        w=w,
        b=float(result.x[n_features]),
        negative_log_likelihood=float(result.fun - 0.5 * l2 * (w @ w)),
        iterations=int(result.nit),
    )


def dr_document_weights(
    table: PropensityImpressions, relevance: np.ndarray, sessions: np.ndarray, *, clip: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The doubly robust example weight of every displayed document (Oosterhuis 2023's DR estimator):

        w_d = N_q gamma_DR(d) = N_q gamma_hat(d) (1 - rho_d / max(rho_d, tau)) + C(d) / max(rho_d, tau),
        rho_d = (1/N_q) Σ_{impressions of d} p_k,

    where an IPS learner gives d the weight Σ_{clicks of d} 1 / p_k; without ``clip`` it is
    C(d) / rho_d (IPS itself under one deterministic logging ranker). Nonnegative when
    ``relevance`` is (module docstring).

    Parameters
    ----------
    table : PropensityImpressions
        The split's displayed documents.
    relevance : ndarray, shape (n_docs,)
        gamma_hat of every document of the split (indexed by ``table.doc``).
    sessions : ndarray of int, shape (n_queries,)
        N_q: the sessions of each query in the log (indexed by ``table.query``).
    clip : float, optional
        tau in (0, 1]: rho_d below it is raised to it in the correction term.

    Returns
    -------
    documents : ndarray of int64, shape (n,)
        The displayed documents, sorted.
    weight : ndarray of float64, shape (n,)
    """
    if clip is not None and not 0 < clip <= 1:
        raise ValueError(f"the clipping threshold must lie in (0, 1], found {clip}")
    sessions = np.asarray(sessions, dtype=np.float64)
    documents, first, inverse = np.unique(table.doc, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    n = sessions[table.query[first]]
    if np.any(n <= 0):
        raise ValueError("every query with a displayed document needs a positive number of sessions")
    clicked = np.bincount(inverse, weights=table.clicks.astype(np.float64), minlength=len(documents))
    examined = np.bincount(inverse, weights=table.impressions * table.propensity, minlength=len(documents))
    rho = examined / n
    denominator = rho if clip is None else np.maximum(rho, clip)
    # rho / denominator is exactly 1 where nothing is clipped, so the direct term vanishes
    # there and the weight is the IPS weight to rounding
    direct = np.asarray(relevance, dtype=np.float64)[documents] * n * (1.0 - rho / denominator)
    return documents.astype(np.int64), direct + clicked / denominator


def dr_estimate(
    ranks: np.ndarray,
    table: PropensityImpressions,
    relevance: np.ndarray,
    sessions: np.ndarray,
    *,
    clip: float | None = None,
    base: float = DCG_BASE,
) -> float:
    """Self-normalised DR estimate of a ranking's Avg DCG on a split:

        Σ_d w_d / log_base(1 + rank(d)) / Σ_d w_d,   w_d = ``dr_document_weights``,

    the SNIPS criterion (``cltr.core.ranking.snips_avg_dcg``) with each displayed document's
    DR relevance estimate in place of its clicks over their propensities. NaN when no
    document has weight.

    Parameters
    ----------
    ranks : ndarray of int, shape (n_docs,)
        The evaluated ranking's rank of every document of the split (1-based).
    table, relevance, sessions, clip
        As ``dr_document_weights``.
    """
    documents, weight = dr_document_weights(table, relevance, sessions, clip=clip)
    return snips_avg_dcg(ranks, documents, None, base=base, weight=weight)


@dataclass(frozen=True)
class DRValidation:
    """The doubly robust validation criterion's terms, one per displayed document of the
    split: what ``cltr train --criterion dr`` compares candidates by.

    A ranking f's estimate is the self-normalised

        V(f) = Σ_d w_d g(rank_f(d)) / Σ_d w_d,   g(r) = 1 / log_base(1 + r),

    and the logging policy's, on the same weights, Σ_d w_d b_d / Σ_d w_d with
    b_d = (1/N_q) Σ_j g(k_j(d)), its mean gain over the query's sessions (0 in a session that
    did not show d): E[w_d b_d] = Σ_j gamma(d) g(k_j(d)) when E[w_d] = N_q gamma(d), the
    logging policy's expected DCG numerator.

    Attributes
    ----------
    documents, query : ndarray of int64, shape (n,)
        The displayed documents (rows of the split) and their queries.
    weight : ndarray of float64, shape (n,)
        w_d = N_q gamma_DR(d) (``dr_document_weights``).
    logged_gain : ndarray of float64, shape (n,)
        b_d.
    clip : float or None
        The tau the expected examination was clipped at.
    """

    documents: np.ndarray
    query: np.ndarray
    weight: np.ndarray
    logged_gain: np.ndarray
    clip: float | None

    def estimate(self, ranks: np.ndarray, *, base: float = DCG_BASE) -> float:
        """V(f) for a ranking's ranks of every document of the split (1-based); NaN when no
        document has weight."""
        total = float(self.weight.sum())
        if not total > 0:
            return float("nan")
        return float(self.weight @ dcg_gain(np.asarray(ranks)[self.documents], base) / total)


def dr_validation(
    displayed: Displayed,
    relevance: np.ndarray,
    sessions: np.ndarray,
    *,
    clip: float | None = None,
    base: float = DCG_BASE,
) -> DRValidation:
    """The ``DRValidation`` terms of a split's displayed rows.

    Parameters
    ----------
    displayed : Displayed
        Every displayed row of the split, with the examination propensities as told.
    relevance : ndarray, shape (n_docs,)
        gamma_hat of every document of the split: from a model fitted on *other* clicks (the
        training split's), so that it does not depend on the clicks it corrects.
    sessions : ndarray of int, shape (n_queries,)
        N_q.
    clip : float, optional
        tau (``dr_document_weights``).
    """
    table = impressions_by_propensity(displayed)
    documents, weight = dr_document_weights(table, relevance, sessions, clip=clip)
    doc = np.asarray(displayed.doc, dtype=np.int64)
    # documents is sorted and holds every displayed doc: searchsorted finds each row's entry
    where = np.searchsorted(documents, doc)
    gain = np.bincount(where, weights=dcg_gain(displayed.rank, base), minlength=len(documents))
    first = np.unique(doc, return_index=True)[1]
    query = np.asarray(displayed.query, dtype=np.int64)[first]
    return DRValidation(
        documents=documents,
        query=query,
        weight=weight,
        logged_gain=gain / np.asarray(sessions, dtype=np.float64)[query],
        clip=clip,
    )
