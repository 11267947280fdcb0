"""Regression EM for the position-based model (Wang et al., WSDM 2018): ``cltr.core.propensity``."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from cltr.core.chunked_em import chunked_em_propensities
from cltr.core.propensity import em_propensities
from cltr.core.seeds import stream
from cltr.distributed import EngineOptions, engine
from cltr.estimators import Estimator
from cltr.options import option

ORDER = 20


@dataclass(frozen=True)
class EMOptions(EngineOptions):
    """The relevance model, and where the logistic model's EM runs: its E-step and sums are over
    queries, so over chunks of them (``cltr.core.chunked_em``); the tree and latent-class models
    are fitted over all documents at once and run in process only."""

    relevance_model: str = option(
        "logistic",
        "The relevance model: a ridge logistic regression, or gradient-boosted trees (LightGBM) "
        "refitted on the posterior relevance at every M-step as Wang et al. (WSDM 2018) do. On a "
        "single ranker's log each document is shown at one rank and the ranker scores the same "
        "features, so examination x relevance is told apart only by the relevance model's form: "
        "trees fitted in sample learn the position effect as relevance (EM collapses to p_k = 1), "
        "hence --cross-fit. Trees are slower (the band re-runs EM per resample). 'classes': each "
        "(query, document) has one of --classes relevance levels shared by every rank, its class "
        "probabilities a logistic regression on its features and rank; identified by each document's "
        "repeated impressions (many sessions per query), not by relevance being a function of the "
        "features; on MQ2008 single-ranker logs the least biased (docs/how-to/propensities.md). "
        "Harvest on two rankers or a swap/randomize intervention needs no relevance model.",
        choices=("logistic", "trees", "classes"),
    )
    cross_fit: int = option(
        5,
        "Trees only: folds of the queries over which the trees are cross-fitted (each query's relevance "
        "predicted by trees fitted on the other folds, so no document's own clicks fit its relevance); 1 "
        "refits on every document (in sample), which collapses on single-ranker logs. Refused with "
        "--relevance-model logistic, which fits no model to cross-fit.",
        low=1,
    )
    classes: int = option(
        2,
        "--relevance-model classes only: the number of relevance levels (2: relevant or not, as a click "
        "model with eps+ and eps- clicks them). Refused with the other relevance models.",
        low=2,
    )

    def __post_init__(self):
        if self.chunked and self.relevance_model != "logistic":
            raise ValueError(
                f"--backend {self.backend}{'' if self.chunks is None else f' --chunks {self.chunks}'} "
                f"runs regression EM with --relevance-model logistic only: the {self.relevance_model} "
                f"model is refitted by a learner over every document at once, not summed over chunks of "
                f"queries (docs/how-to/distributed.md); leave --backend and --chunks out"
            )
        # a cross-fitting the logistic model ignores would still enter the estimate's key
        if self.relevance_model != "trees" and self.cross_fit != type(self).__dataclass_fields__["cross_fit"].default:
            raise ValueError(
                f"cross_fit (--cross-fit) = {self.cross_fit} applies to relevance_model 'trees' only; "
                f"the {self.relevance_model} relevance model is one regression over every document, with "
                f"nothing to cross-fit: leave cross_fit out, or add relevance_model 'trees' "
                f"(--relevance-model trees)"
            )

        if self.relevance_model != "classes" and self.classes != type(self).__dataclass_fields__["classes"].default:
            raise ValueError(
                f"classes (--classes) = {self.classes} applies to relevance_model 'classes' only: leave "
                f"classes out, or add relevance_model 'classes' (--relevance-model classes)"
            )

    def always_keyed(self) -> tuple[str, ...]:
        # tree estimates stored before --cross-fit existed were fitted in sample and never
        # checked for a collapse: a trees estimate always names its folds, so none is reused
        return ("cross_fit",) if self.relevance_model == "trees" else ()


def estimate(table, X, options, *, max_rank, bootstrap, level, rng, seed):
    common = {"max_rank": max_rank, "bootstrap": bootstrap, "level": level, "rng": rng}
    if options.relevance_model == "trees":
        from cltr.methods.trees import soft_label_trees  # LightGBM, loaded only for trees

        fitter = partial(soft_label_trees, seed=int(stream(seed, "relevance").integers(2**31 - 1)))
        return em_propensities(
            table.query,
            table.doc,
            table.rank,
            table.impressions,
            table.clicks,
            X,
            relevance_model=fitter,
            cross_fit=options.cross_fit,
            tol=1e-4,
            **common,
        )
    if options.relevance_model == "classes":
        return em_propensities(
            table.query,
            table.doc,
            table.rank,
            table.impressions,
            table.clicks,
            X,
            relevance_model="classes",
            classes=options.classes,
            **common,
        )
    columns = (table.query, table.doc, table.rank, table.impressions, table.clicks, X)
    with engine(options) as (mapper, chunks):
        if mapper is None:
            return em_propensities(*columns, **common)
        return chunked_em_propensities(*columns, chunks=chunks, mapper=mapper, **common)


ESTIMATOR = Estimator(
    name="em",
    summary="regression EM for the position-based model with a feature-based relevance model (Wang et al., WSDM "
    "2018; one ranker suffices)",
    estimate=estimate,
    options=EMOptions,
    description="""Regression EM for the position-based model (Wang et al., WSDM 2018): the propensity of
    each rank and the relevance of each document, the relevance a function of the
    document's features, fitted together by expectation-maximisation. One logging ranker
    suffices, since the relevance model ties documents shown at different ranks together.""",
)
