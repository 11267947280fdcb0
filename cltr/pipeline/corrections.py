"""How a learner is told a click log: one entry per correction of the logged clicks.

The paper's learners divide each click by its observation propensity (IPS). Click models
beyond the position-based one break that weighting in known ways, and each has a
published correction: a correction turns the clicks of one split of a clicks artifact
into the ``ClickLog`` a learner trains on (and the SNIPS selection reads), usually by
replacing every click's propensity with the inverse of its corrected weight.

``cltr train METHOD --correction NAME`` and a spec's ``[clicks] correction = NAME``
select one; ``ips`` (the log's own propensities) is the default. The maths of each
correction lives in ``cltr.core``; this module only says which arrays of a clicks
artifact it reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from threadpoolctl import threadpool_limits

from cltr import clickmodels
from cltr.clickmodels import dcm
from cltr.core.cascade import cascade_propensity
from cltr.core.clicks import ClickLog, Impressions, aggregate_impressions, presented_impressions
from cltr.core.doubly_robust import dr_document_weights, fit_relevance_model, impressions_by_propensity
from cltr.core.trust import TrustBias, affine_document_weights, bayes_ips_weight, trust_from_clicks
from cltr.data.clicklog import LoggedRows

__all__ = ["Correction", "CORRECTIONS", "DEFAULT_CORRECTION", "get"]

DEFAULT_CORRECTION = "ips"


@dataclass(frozen=True)
class Correction:
    """A correction as the rest of cltr sees it.

    Attributes
    ----------
    name : str
        ``--correction NAME``.
    summary : str
        One line for ``--help``.
    apply : callable
        ``(log, clicks, split) -> ClickLog``: ``log`` is the split's log as read (a prefix
        of passes, possibly other propensities), ``clicks`` the clicks artifact (its config
        names the click model and settings; its arrays hold the presented rankings of
        simulated logs or the impression rows of imported ones), ``split`` "train" or "vali".
    methods : tuple of str, optional
        The methods it applies to, if not every method.
    context : tuple of str
        Further keyword arguments ``apply`` takes: ``"queries"`` (the split's ``Queries``),
        ``"estimate"`` (the ``propensities`` artifact the learner was told to use, or
        None), ``"dataset"`` (the ``Dataset``), ``"displayed"`` (a function of a split,
        "train" or "vali", to its ``Displayed`` rows, told as the log is, unclipped) and
        ``"clip"`` (the clipping threshold or None: a correction that takes it clips its own
        way, and its log is not clipped afterwards).
    """

    name: str
    summary: str
    apply: Callable[..., ClickLog]
    methods: tuple[str, ...] | None = None
    context: tuple[str, ...] = ()


def _as_logged(log: ClickLog, clicks, split: str) -> ClickLog:
    return log


def _cascade(log: ClickLog, clicks, split: str) -> ClickLog:
    """Each click divided by prod lambda over the clicks above it in its session (DCM logs)."""
    model = clicks.config.get("click_model")
    if model != dcm.MODEL.name:
        raise ValueError(f"correction 'cascade' needs clicks of the dcm click model (its continuation "
                         f"probabilities lambda_k); these clicks come from {model or 'an imported log'}")
    settings = dcm.MODEL.parse_settings({f.name: clicks.config[f.name] for f in dcm.DCMSettings.option_fields()
                                         if f.name in clicks.config})
    return log.with_propensity(cascade_propensity(log.session, log.rank, dcm.continuation_probability(log.rank,
                                                                                                      settings)))


def _policy_aware(log: ClickLog, clicks, split: str) -> ClickLog:
    """Each click divided by its document's examination averaged over the logging policy."""
    key = f"{split}/policy_propensity"
    if key not in clicks.arrays:
        raise ValueError("correction 'policy-aware' needs the policy propensities that `cltr simulate --top-k K "
                         "--logging-temperature T` stores (with a click model whose examination depends on the "
                         "rank alone, such as pbm); these clicks have none")
    return log.with_propensity(np.asarray(clicks.arrays[key], dtype=np.float64)[log.doc])


def _trust(rank: np.ndarray, clicks, estimate, name: str) -> TrustBias:
    """The trust-bias parameters a correction uses at these ranks: those estimated
    (``--propensities`` naming a ``trust-em`` estimate), else those of the click model that
    simulated the log."""
    if estimate is not None:
        if "trust" not in estimate.info:
            raise ValueError(f"correction {name!r} needs trust-bias parameters, and propensities {estimate.key} "
                             f"({estimate.config.get('method')}) has none: estimate them with `cltr propensities "
                             f"estimate --method trust-em`")
        return trust_from_clicks(estimate.info["trust"]["relevant_click"], estimate.info["trust"]["irrelevant_click"])
    name_of_model = clicks.config.get("click_model")
    model = clickmodels.get(name_of_model) if name_of_model else None
    if model is None or model.trust is None:
        raise ValueError(f"correction {name!r} needs trust-bias parameters: these clicks come from "
                         f"{name_of_model or 'an imported log'}, which has none; estimate them with `cltr propensities "
                         f"estimate --method trust-em` and train with --propensities estimated")
    settings = model.parse_settings({f.name: clicks.config[f.name] for f in model.settings.option_fields()
                                     if f.name in clicks.config})
    return model.trust(settings, int(rank.max()) if len(rank) else 1)


def _bayes_ips(log: ClickLog, clicks, split: str, *, estimate=None) -> ClickLog:
    """Each click weighted by Pr(R = 1 | C = 1, k) / theta_k, kept as propensity 1 / weight."""
    return log.with_propensity(1.0 / bayes_ips_weight(log.rank, _trust(log.rank, clicks, estimate, "bayes-ips")))


def _impressions(log: ClickLog, clicks, split: str, queries) -> Impressions:
    """The impressions of the log's passes: of a simulated log from its presented rankings,
    of an imported one from its rows (sessions beyond the log's first passes left out)."""
    arrays = clicks.arrays
    if f"{split}/presented_rank" in arrays:
        return presented_impressions(arrays[f"{split}/presented_rank"], arrays[f"{split}/pass_ranker"], log,
                                     queries.offsets, top_k=clicks.config.get("top_k"))
    prefix = f"{split}/rows/"
    rows = LoggedRows.from_arrays({k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)})
    session_pass, _ = rows.session_passes(queries.n_queries)
    kept = session_pass[rows.session] < log.n_passes
    return aggregate_impressions(rows.query[kept], rows.doc[kept], rows.rank[kept], rows.ranker[kept],
                                 rows.click[kept])


def _affine(log: ClickLog, clicks, split: str, *, queries, estimate=None) -> ClickLog:
    """One example per displayed document, weighted by its summed relevance estimates
    (c - beta_k) / alpha_k over its impressions (signed)."""
    table = _impressions(log, clicks, split, queries)
    trust = _trust(table.rank, clicks, estimate, "affine")
    documents, weight = affine_document_weights(table.doc, table.rank, table.impressions, table.clicks, trust)
    # a document without weight (never clicked where beta_k = 0) is no example
    keep = weight != 0
    documents, weight = documents[keep], weight[keep]
    first_rank = np.zeros(queries.n_docs, dtype=np.int64)
    first_rank[table.doc[::-1]] = table.rank[::-1]  # the rank of its first impression row
    doc_query = np.repeat(np.arange(queries.n_queries), np.diff(np.asarray(queries.offsets, dtype=np.int64)))
    # learners read the weights; the propensity 1/|w| only keeps the log's summaries finite
    return ClickLog(query=doc_query[documents], doc=documents, rank=first_rank[documents],
                    propensity=1.0 / np.abs(weight), pass_index=np.zeros(len(documents), dtype=np.int64),
                    n_passes=log.n_passes, n_queries=log.n_queries, sessions_per_query=log.sessions_per_query,
                    weight=weight)


def _relevance_model(dataset, rows):
    """The relevance model fitted on the training split's displayed rows."""
    # L-BFGS on a few dozen parameters: BLAS threads only contend (50 times slower on a busy machine)
    with threadpool_limits(1):
        return fit_relevance_model(dataset.train.X, impressions_by_propensity(rows))


def _doubly_robust(log: ClickLog, clicks, split: str, *, dataset, displayed, clip=None) -> ClickLog:
    """One example per displayed document, weighted by its doubly robust relevance estimate
    times its query's sessions (``cltr.core.doubly_robust``), the expected examination
    clipped at ``clip``.

    The relevance model is fitted on the training split's impressions, for both splits: the
    validation split's estimate then uses a model independent of its clicks (the condition
    of its unbiasedness), applied to the validation documents' features. ``click_logs``
    clips the training split only, so the validation split's DR weights are its clicks'
    policy-aware IPS weights C(d) / rho_d, whatever the training clip.
    """
    queries = getattr(dataset, split)
    table = impressions_by_propensity(displayed(split))
    sessions = (np.full(log.n_queries, log.n_passes, dtype=np.int64) if log.sessions_per_query is None
                else log.sessions_per_query)
    # unclipped, the model's term cancels exactly (the estimate is C(d) / rho_d): nothing to fit
    relevance = (np.zeros(queries.n_docs) if clip is None
                 else _relevance_model(dataset, displayed("train")).relevance(queries.X))
    documents, weight = dr_document_weights(table, relevance, sessions, clip=clip)
    # unclipped, a document never clicked weighs 0 (IPS): no example
    keep = weight > 0
    documents, weight = documents[keep], weight[keep]
    first_rank = np.zeros(queries.n_docs, dtype=np.int64)
    shown = displayed(split)
    first_rank[shown.doc[::-1]] = shown.rank[::-1]  # the rank of its first displayed row
    # learners read the weights; the propensity 1/w only keeps the log's summaries finite
    return ClickLog(query=queries.doc_query[documents], doc=documents, rank=first_rank[documents],
                    propensity=1.0 / weight, pass_index=np.zeros(len(documents), dtype=np.int64),
                    n_passes=log.n_passes, n_queries=log.n_queries, sessions_per_query=log.sessions_per_query,
                    weight=weight)


CORRECTIONS: dict[str, Correction] = {
    "ips": Correction("ips", "Divide every click by its logged propensity (the paper's IPS).", _as_logged),
    "cascade": Correction("cascade", "Cascade propensities of dcm clicks: the product of the continuation "
                                     "probabilities of the clicks above (Vardasbi et al., SIGIR 2020).", _cascade),
    "policy-aware": Correction("policy-aware", "Examination averaged over the logging policy's top-k rankings "
                                               "(Oosterhuis and de Rijke, SIGIR 2020).", _policy_aware),
    "bayes-ips": Correction("bayes-ips", "Trust bias: each click weighted by the posterior probability of relevance "
                                         "given a click at its rank over the examination propensity (Agarwal et "
                                         "al., WWW 2019).", _bayes_ips, context=("estimate",)),
    "affine": Correction("affine", "Trust bias: every displayed document weighted by its relevance estimates "
                                   "(c - beta_k) / alpha_k, signed (Vardasbi et al., CIKM 2020); gradient-based "
                                   "methods only.", _affine, methods=("deep-propdcg", "tree-propdcg"),
                         context=("queries", "estimate")),
    "dr": Correction("dr", "Doubly robust (Oosterhuis, TOIS 2023): every displayed document weighted by a "
                           "logistic click model's relevance plus its clicks' IPS correction, dividing by the "
                           "expected examination clipped at --clip (where clipped IPS is biased, DR is not when "
                           "the model is right); methods taking example weights.", _doubly_robust,
                     methods=("svm-proprank", "svm-propdcg", "deep-propdcg", "tree-propdcg"),
                     context=("dataset", "displayed", "clip")),
}


def get(name: str) -> Correction:
    if name not in CORRECTIONS:
        raise ValueError(f"unknown correction {name!r}; known: {', '.join(CORRECTIONS)}")
    return CORRECTIONS[name]
