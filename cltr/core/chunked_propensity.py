"""Intervention harvesting (AllPairs) over an impression table cut into chunks of whole queries.

Legend (``cltr.core.propensity.harvest_propensities``; Agarwal et al., WSDM 2019):
    n_i, N = Σ_i n_i               -> ``_ranker_sessions``: sums over queries, so over chunks
    c~_k^{k,k'}, n~_k^{k,k'}       -> ``harvest_chunk_totals``: sums over (query, document)s, so over chunks
    a bootstrap replicate's totals -> ``harvest_chunk_replicates``: the chunk's columns of the query counts

Every statistic AllPairs fits is a sum over queries once the logging design (the rankers
and their sessions n_i, which weight every cell) is known. So a chunked estimate is two
maps and a fit: each chunk's sessions per ranker, summed here; each chunk's weighted
counts under the summed design (kept where the chunk lives), their (K, K) totals summed
here in chunk order; the AllPairs fit on the totals; and, for the band, one more map
that gives each chunk its columns of the query resamples. The queries are numbered in
sorted order over the chunks, as ``harvest_propensities`` numbers them, so both draw the
same resamples and give the same estimate to rounding. This module imports only numpy
and ``cltr.core``.
"""

from __future__ import annotations

import numpy as np

from cltr.core.clicks import Impressions
from cltr.core.propensity import (
    NO_INTERVENTIONS,
    PropensityEstimate,
    _allpairs_estimate,
    _check_options,
    _check_table,
    _harvest_statistics,
    _HarvestStatistics,
    _ranker_sessions,
    _rows,
)

__all__ = [
    "harvest_chunks",
    "harvest_chunk_totals",
    "harvest_chunk_replicates",
    "chunked_harvest_propensities",
    "harvest_on_chunks",
]


def harvest_chunks(t: Impressions, chunks: int) -> list[Impressions]:
    """The table's rows cut into ``chunks`` chunks of whole queries (contiguous ranges of
    sorted query ids) of about equal rows; fewer when there are fewer queries."""
    if isinstance(chunks, (bool, np.bool_)) or int(chunks) != chunks or chunks < 1:
        raise ValueError(f"chunks must be an integer >= 1, found {chunks!r}")
    order = np.argsort(t.query, kind="stable")
    sorted_query = t.query[order]
    cuts = np.searchsorted(sorted_query, sorted_query[(len(order) * np.arange(1, int(chunks))) // int(chunks)])
    bounds = np.unique(np.concatenate([[0], cuts, [len(order)]]))
    return [_rows(t, order[start:stop]) for start, stop in zip(bounds[:-1], bounds[1:], strict=True)]


def harvest_chunk_sessions(t: Impressions, max_rank: int) -> tuple[np.ndarray, np.ndarray]:
    """(ranker ids, sessions of each) of one chunk (``_ranker_sessions``)."""
    return _ranker_sessions(t, max_rank)


def harvest_chunk_statistics(
    t: Impressions, max_rank: int, rankers: np.ndarray, sessions: np.ndarray
) -> _HarvestStatistics:
    """The chunk's weighted counts under the whole log's design."""
    return _harvest_statistics(t, max_rank, design=(rankers, sessions))


def harvest_chunk_totals(stats: _HarvestStatistics) -> tuple[np.ndarray, np.ndarray, int, int]:
    """(clicks, impressions) per ordered rank pair, each (K, K), the chunk's queries and its
    (query, document)s shown at two ranks."""
    clicks, impressions = stats.totals()
    return clicks, impressions, stats.n_queries, stats.n_intervention_docs


def harvest_chunk_replicates(stats: _HarvestStatistics, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The chunk's totals under query resamples ``counts`` (B, its queries): two (B, K, K)."""
    if stats.n_queries == 0:
        k = stats.max_rank
        return np.zeros((len(counts), k, k)), np.zeros((len(counts), k, k))
    return stats.replicate_totals(counts)


def _merge_design(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    rankers = np.unique(np.concatenate([p[0] for p in parts]))
    sessions = np.zeros(len(rankers))
    for ids, counts in parts:  # in chunk order
        sessions[np.searchsorted(rankers, ids)] += counts
    return rankers, sessions


def _sum_in_order(arrays: list[np.ndarray]) -> np.ndarray:
    total = np.array(arrays[0], dtype=np.float64, copy=True)
    for a in arrays[1:]:
        total += a
    return total


def chunked_harvest_propensities(
    query,
    doc,
    rank,
    ranker,
    impressions,
    clicks,
    *,
    chunks: int,
    mapper,
    max_rank: int | None = None,
    bootstrap: int = 200,
    level: float = 0.95,
    rng,
) -> PropensityEstimate:
    """``harvest_propensities`` (same arguments, same estimate to rounding) with its counting
    done per chunk of whole queries on ``mapper`` (``cltr.core.chunked.LocalMapper``, or
    ``cltr.distributed.DaskMapper``); ``info`` adds ``chunks``."""
    t = _check_table(query, doc, rank, ranker, impressions, clicks)
    k_max = _check_options(max_rank, t.rank, bootstrap, level, minimum=2)
    if not np.any((t.rank <= k_max) & (t.impressions > 0)):
        raise ValueError(f"no row has a rank <= max_rank = {k_max} and impressions > 0")
    return harvest_on_chunks(
        mapper.scatter(harvest_chunks(t, chunks)),
        mapper=mapper,
        max_rank=k_max,
        bootstrap=bootstrap,
        level=level,
        rng=rng,
    )


def harvest_on_chunks(
    handles: list, *, mapper, max_rank: int, bootstrap: int = 200, level: float = 0.95, rng
) -> PropensityEstimate:
    """AllPairs over chunks that are already where ``mapper`` computes them: ``handles``
    holds one ``Impressions`` per chunk, checked, each of whole queries, the chunks in
    ascending ranges of query ids (so that the queries are numbered in sorted order over
    them, as ``harvest_propensities`` numbers them). ``max_rank`` >= 2 is the deepest rank
    fitted; ``bootstrap`` and ``level`` are those of ``harvest_propensities`` (checked by the
    caller). A chunk may hold no rows. ``info`` adds ``chunks``."""
    k_max = int(max_rank)
    rankers, sessions = _merge_design(mapper.gather(mapper.map(harvest_chunk_sessions, handles, max_rank=k_max)))
    if len(rankers) < 2:
        found = f"only ranker {int(rankers[0])}" if len(rankers) else "no ranker"
        raise ValueError(
            f"intervention harvesting needs logs from at least 2 rankers; found {found} "
            f"among the rows with rank <= {k_max} and impressions > 0"
        )
    stats = mapper.map(harvest_chunk_statistics, handles, max_rank=k_max, rankers=rankers, sessions=sessions)
    parts = mapper.gather(mapper.map(harvest_chunk_totals, stats))
    totals = (_sum_in_order([p[0] for p in parts]), _sum_in_order([p[1] for p in parts]))
    queries = [int(p[2]) for p in parts]
    intervention_docs = sum(int(p[3]) for p in parts)
    if intervention_docs == 0:
        raise ValueError(NO_INTERVENTIONS.format(k_max=k_max))
    starts = np.concatenate([[0], np.cumsum(queries)])

    def replicate_totals(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        columns = [counts[:, starts[k] : starts[k + 1]] for k in range(len(queries))]
        found = mapper.gather(mapper.map(harvest_chunk_replicates, stats, columns))
        return _sum_in_order([f[0] for f in found]), _sum_in_order([f[1] for f in found])

    estimate = _allpairs_estimate(
        totals,
        replicate_totals,
        n_queries=int(starts[-1]),
        intervention_docs=intervention_docs,
        rankers=rankers,
        sessions=sessions,
        bootstrap=bootstrap,
        level=level,
        rng=rng,
    )
    estimate.info["chunks"] = len(queries)
    return estimate
