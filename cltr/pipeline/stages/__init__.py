"""The pipeline's stages as cached workspace artifacts.

``cltr produce / simulate / train / evaluate`` and every task of ``cltr figures`` go
through these functions: one code path, one cache. An artifact is found again whenever
its config is the same (for example every spec of ``cltr figures`` that trains a method
with the same options on the same clicks). Each stage's config holds the keys of the
artifacts it was computed from, and each returns ``(artifact, reused)``.

Seeds: every random draw comes from ``stream(seed, purpose...)`` (``cltr.core.seeds``).

The package, by the stages' order: ``production`` (the production ranker), ``clicks`` (simulated
click logs and the logs an artifact holds), ``files`` (click logs imported from and exported to
files), ``propensities`` (estimated from the logs) and ``training`` (models and their evaluation).
"""

# __all__, and (each imported as itself) every other name the module held before it was split,
# scorer_from_arrays included (tests import it from here)
from cltr.pipeline.models import scorer_from_arrays as scorer_from_arrays
from cltr.pipeline.stages.clicks import CLICKED_ONLY as CLICKED_ONLY
from cltr.pipeline.stages.clicks import (
    SimulationOptions,
    as_told,
    click_log_summary,
    click_logs,
    clicks_stage,
    displayed_rows,
    estimate_from_arrays,
    estimate_to_arrays,
    impressions_of,
    policy_propensities,
    simulate,
    simulated_logs,
)
from cltr.pipeline.stages.clicks import _presentation as _presentation
from cltr.pipeline.stages.clicks import _simulate_displayed as _simulate_displayed
from cltr.pipeline.stages.clicks import _simulate_sampled as _simulate_sampled
from cltr.pipeline.stages.clicks import clicked_only as clicked_only
from cltr.pipeline.stages.files import ExportOptions, ImportOptions, export_rows, import_stage, imported_clicks_stage
from cltr.pipeline.stages.files import feature_columns as feature_columns
from cltr.pipeline.stages.production import (
    ProductionOptions,
    logging_rankers,
    produce,
    production_queries,
    production_stage,
)
from cltr.pipeline.stages.propensities import ESTIMATORS as ESTIMATORS
from cltr.pipeline.stages.propensities import EstimateOptions, check_estimate, estimate_propensities, propensity_stage
from cltr.pipeline.stages.propensities import _em_checked as _em_checked
from cltr.pipeline.stages.propensities import jsonable_info as jsonable_info
from cltr.pipeline.stages.propensities import validation_tau as validation_tau
from cltr.pipeline.stages.training import (
    EvaluateOptions,
    ScoreOptions,
    TrainOptions,
    evaluation_stage,
    model_stage,
    production_test_metrics,
)

__all__ = [
    "ProductionOptions",
    "SimulationOptions",
    "ImportOptions",
    "ExportOptions",
    "EstimateOptions",
    "EvaluateOptions",
    "ScoreOptions",
    "TrainOptions",
    "production_queries",
    "produce",
    "production_stage",
    "logging_rankers",
    "simulate",
    "clicks_stage",
    "click_logs",
    "policy_propensities",
    "click_log_summary",
    "simulated_logs",
    "impressions_of",
    "displayed_rows",
    "import_stage",
    "imported_clicks_stage",
    "export_rows",
    "propensity_stage",
    "estimate_propensities",
    "check_estimate",
    "as_told",
    "estimate_to_arrays",
    "estimate_from_arrays",
    "model_stage",
    "evaluation_stage",
    "production_test_metrics",
]
