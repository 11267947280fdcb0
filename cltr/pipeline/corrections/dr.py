"""Doubly robust (Oosterhuis, TOIS 2023): ``cltr.core.doubly_robust``."""

from __future__ import annotations

import numpy as np

from cltr.core.clicks import ClickLog
from cltr.core.doubly_robust import dr_document_weights, impressions_by_propensity
from cltr.methods import relevance_on_displayed
from cltr.pipeline.corrections import Correction

ORDER = 60


def apply(log: ClickLog, clicks, split: str, *, dataset, displayed, clip=None) -> ClickLog:
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
    # unclipped, the model's term cancels exactly (the estimate is C(d) / rho_d): nothing to fit
    relevance = (
        np.zeros(queries.n_docs)
        if clip is None
        else relevance_on_displayed(dataset.train.X, displayed("train")).relevance(queries.X)
    )
    documents, weight = dr_document_weights(table, relevance, log.query_sessions, clip=clip)
    # unclipped, a document never clicked weighs 0 (IPS): no example
    keep = weight > 0
    documents, weight = documents[keep], weight[keep]
    first_rank = np.zeros(queries.n_docs, dtype=np.int64)
    shown = displayed(split)
    first_rank[shown.doc[::-1]] = shown.rank[::-1]  # the rank of its first displayed row
    # learners read the weights; the propensity 1/w only keeps the log's summaries finite
    return ClickLog(
        query=queries.doc_query[documents],
        doc=documents,
        rank=first_rank[documents],
        propensity=1.0 / weight,
        pass_index=np.zeros(len(documents), dtype=np.int64),
        n_passes=log.n_passes,
        n_queries=log.n_queries,
        sessions_per_query=log.sessions_per_query,
        weight=weight,
    )


CORRECTION = Correction(
    "dr",
    "Doubly robust (Oosterhuis, TOIS 2023): every displayed document weighted by a "
    "logistic click model's relevance plus its clicks' IPS correction, dividing by the "
    "expected examination clipped at --clip (where clipped IPS is biased, DR is not when "
    "the model is right); methods taking example weights.",
    apply,
    methods=("svm-proprank", "svm-propdcg", "deep-propdcg", "tree-propdcg"),
    context=("dataset", "displayed", "clip"),
)
