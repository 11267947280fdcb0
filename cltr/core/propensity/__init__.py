"""Observation propensities estimated from click logs: intervention harvesting and regression EM.

Legend (position-based model; Agarwal, Zaitsev, Wang, Li, Najork, Joachims, WSDM 2019,
"Estimating Position Bias without Intrusive Interventions": interventional sets, harvested
counts and the AllPairs extremum estimator; Wang, Golbandi, Bendersky, Metzler, Najork,
WSDM 2018, "Position Bias Estimation for Unbiased Learning to Rank in Personal Search":
regression EM):
    k, k'                        -> ``rank``, 1-based, at most ``K = max_rank``
    p_k = Pr(E = 1 | k)          -> ``PropensityEstimate.propensity[k - 1]``, relative to p_1
    rel(q, d)                    -> relevance of a (query, document), Pr(C = 1 | q, d, k) = p_k rel(q, d)
    f_i, n_i, N = Σ_i n_i         -> ``ranker`` i; sessions it logged; all sessions
    S_{k,k'}                     -> (query, document)s shown at k by one ranker and at k' by another
    w(q, d, k)                   -> N / Σ_i n_i 1[rk(d | f_i(q)) = k]  (harvest weight)
    c~_k^{k,k'}, n~_k^{k,k'}     -> weighted clicks and impressions at k of S_{k,k'}
                                    (``pair_clicks[k-1, k'-1]``, ``pair_impressions[k-1, k'-1]``)
    c_{k,k'} = c_{k',k}          -> relevance parameter of a rank pair (profiled out in closed form)
    theta_k, gamma(q, d)         -> EM's examination and relevance probabilities; the estimate
                                    reports p_k = theta_k / theta_1
    gamma(q, d) = sigma(x_d . w) -> EM's feature-based relevance (logistic, standardised x)

The input is an aggregated impression table: flat int64 arrays of one length m, one row per
distinct (query, document, rank, ranker) with the times the document was shown there
(``impressions``) and clicked there (``clicks``). Everything is vectorised over rows; the only
Python loops run over rank offsets (at most K), row chunks, Newton/EM iterations and
bootstrap replicates. Bootstrap bands resample queries (the clusters) with replacement.

The package: ``estimate`` (the estimate, input checks, the query bootstrap), ``harvest``
(intervention harvesting, AllPairs) and ``em`` (regression EM and its identification check).
"""

# __all__, and (each imported as itself) the other names of the former module that other modules
# (chunked_propensity.py, interventions.py, pipeline/stages.py), the tests and the benches use
from cltr.core.propensity.em import ALTERNATIVES as ALTERNATIVES
from cltr.core.propensity.em import FALL_RATIO as FALL_RATIO
from cltr.core.propensity.em import FALL_Z as FALL_Z
from cltr.core.propensity.em import FLAT_SPREAD as FLAT_SPREAD
from cltr.core.propensity.em import IDENTIFICATION_VERSION as IDENTIFICATION_VERSION
from cltr.core.propensity.em import RANK_VARIATION as RANK_VARIATION
from cltr.core.propensity.em import _cross_fitted as _cross_fitted
from cltr.core.propensity.em import _em_data as _em_data
from cltr.core.propensity.em import _em_derivatives as _em_derivatives
from cltr.core.propensity.em import _em_fit as _em_fit
from cltr.core.propensity.em import _em_loglik as _em_loglik
from cltr.core.propensity.em import _em_start as _em_start
from cltr.core.propensity.em import _em_step as _em_step
from cltr.core.propensity.em import _em_tree_step as _em_tree_step
from cltr.core.propensity.em import _penalty as _penalty
from cltr.core.propensity.em import em_identification as em_identification
from cltr.core.propensity.em import em_identification_of as em_identification_of
from cltr.core.propensity.em import em_propensities
from cltr.core.propensity.em import rank_variation as rank_variation
from cltr.core.propensity.estimate import PropensityEstimate
from cltr.core.propensity.estimate import _check_options as _check_options
from cltr.core.propensity.estimate import _check_table as _check_table
from cltr.core.propensity.estimate import _factorize as _factorize
from cltr.core.propensity.estimate import _percentile_band as _percentile_band
from cltr.core.propensity.estimate import _query_resamples as _query_resamples
from cltr.core.propensity.estimate import _rows as _rows
from cltr.core.propensity.harvest import NO_INTERVENTIONS as NO_INTERVENTIONS
from cltr.core.propensity.harvest import _allpairs_estimate as _allpairs_estimate
from cltr.core.propensity.harvest import _allpairs_profile as _allpairs_profile
from cltr.core.propensity.harvest import _harvest_statistics as _harvest_statistics
from cltr.core.propensity.harvest import _HarvestStatistics as _HarvestStatistics
from cltr.core.propensity.harvest import _pair_relevance as _pair_relevance
from cltr.core.propensity.harvest import _ranker_sessions as _ranker_sessions
from cltr.core.propensity.harvest import harvest_propensities

__all__ = ["PropensityEstimate", "em_propensities", "harvest_propensities"]
