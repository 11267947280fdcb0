"""Trust bias: the affine correction (Vardasbi et al., CIKM 2020): ``cltr.core.trust``."""

from __future__ import annotations

import numpy as np

from cltr.core.clicks import ClickLog, Impressions, aggregate_impressions, presented_impressions
from cltr.core.trust import affine_document_weights
from cltr.data.click_artifact import ClicksArtifact
from cltr.pipeline.corrections import Correction
from cltr.pipeline.corrections.trust_parameters import trust_parameters

ORDER = 50


def _impressions(log: ClickLog, clicks, split: str, queries) -> Impressions:
    """The impressions of the log's passes: of a simulated log from its presented rankings,
    of an imported one from its rows (sessions beyond the log's first passes left out)."""
    stored = ClicksArtifact.of(clicks).split(split)
    if stored.presented is not None:
        return presented_impressions(
            stored.presented.rank, stored.presented.pass_ranker, log, queries.offsets, top_k=clicks.config.get("top_k")
        )
    if stored.aggregated is not None:  # an import in chunks: its counts, one pass
        return stored.aggregated.impressions_table()
    rows = stored.logged_rows(split)
    session_pass, _ = rows.session_passes(queries.n_queries)
    kept = session_pass[rows.session] < log.n_passes
    return aggregate_impressions(rows.query[kept], rows.doc[kept], rows.rank[kept], rows.ranker[kept], rows.click[kept])


def apply(log: ClickLog, clicks, split: str, *, queries, estimate=None) -> ClickLog:
    """One example per displayed document, weighted by its summed relevance estimates
    (c - beta_k) / alpha_k over its impressions (signed)."""
    table = _impressions(log, clicks, split, queries)
    trust = trust_parameters(table.rank, clicks, estimate, "affine")
    documents, weight = affine_document_weights(table.doc, table.rank, table.impressions, table.clicks, trust)
    # a document without weight (never clicked where beta_k = 0) is no example
    keep = weight != 0
    documents, weight = documents[keep], weight[keep]
    first_rank = np.zeros(queries.n_docs, dtype=np.int64)
    first_rank[table.doc[::-1]] = table.rank[::-1]  # the rank of its first impression row
    sizes: np.ndarray = np.diff(np.asarray(queries.offsets, dtype=np.int64))
    doc_query = np.repeat(np.arange(queries.n_queries), sizes)
    # learners read the weights; the propensity 1/|w| only keeps the log's summaries finite
    return ClickLog(
        query=doc_query[documents],
        doc=documents,
        rank=first_rank[documents],
        propensity=1.0 / np.abs(weight),
        pass_index=np.zeros(len(documents), dtype=np.int64),
        n_passes=log.n_passes,
        n_queries=log.n_queries,
        sessions_per_query=log.sessions_per_query,
        weight=weight,
    )


CORRECTION = Correction(
    "affine",
    "Trust bias: every displayed document weighted by its relevance estimates "
    "(c - beta_k) / alpha_k, signed (Vardasbi et al., CIKM 2020); gradient-based "
    "methods only.",
    apply,
    methods=("deep-propdcg", "tree-propdcg"),
    context=("queries", "estimate"),
)
