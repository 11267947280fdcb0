"""Learning methods: one file each, found by a registry.

A method module in this package defines ``METHOD = Method(...)``: its name, a one-line
summary, an ``Options`` dataclass (``cltr.options``: typed, defaulted, a help text per
field; the only place its defaults live) and a training function

    train(data: TrainingData, options: <its Options>, *, progress) -> (scorer, info)

``info`` records everything worth keeping: ``chosen`` (the selected hyperparameters),
``validation_snips_avg_dcg``, the ``selection`` table, solver certificates, traces.
``progress`` receives dicts: a selection row per fitted candidate, or
``{"event": "progress", "done": k, "total": n, "unit": ..., "postfix": {...}}`` for inner
units (epochs, trees). The command line (``cltr train NAME``), spec validation and the
report's labels are derived from ``METHOD``: adding a method is adding a file here.

``train`` wraps every method in the same variance control and guard (issue 22): ``clip``
("auto", None or a TAU) clips the *training* log only, the validation log keeps the
propensities as told, so that every clipping is judged by one criterion; "auto" searches
TAU on validation when the training weights' effective sample size is small
(``cltr.core.selection.ESS_FRACTION``). The model's info then holds ``clip`` (the TAU
trained with, or None), ``clip_selection`` (a row per TAU tried), ``versus_logging`` (the
chosen model against the logging ranker on the validation clicks) and ``warnings``.

Every method's options derive from ``SelectionOptions``, whose ``criterion`` says what
``TrainingData.estimate`` (and with it every selection, early stopping, the clip rule and
the guard) compares on the validation split: "snips" (SNIPS Avg DCG of the validation
clicks, clipped at their own TAU_v) or "dr" (the doubly robust estimate of Avg DCG,
``cltr.core.doubly_robust.DRValidation``). ``train`` reads it; the methods never do.

Modules without ``METHOD`` (``linear``, ``trees``) hold machinery that several methods share.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cltr.core import selection as guard
from cltr.core.clicks import ClickLog, Displayed
from cltr.core.doubly_robust import (
    DRValidation,
    RelevanceModel,
    dr_validation,
    fit_relevance_model,
    impressions_by_propensity,
)
from cltr.core.queries import Dataset
from cltr.core.ranking import dcg_gain, rank_documents, validation_estimate
from cltr.core.seeds import stream
from cltr.options import Options, option
from cltr.registry import lookup, registered

__all__ = [
    "Method",
    "SelectionOptions",
    "CRITERIA",
    "TrainingData",
    "methods",
    "get",
    "train",
    "relevance_on_displayed",
]

CRITERIA = ("snips", "dr")
"""The validation criteria: what ``TrainingData.estimate`` compares candidates by."""


@dataclass(frozen=True)
class SelectionOptions(Options):
    """The options every method shares: how its candidates are compared on validation."""

    criterion: str = option(
        "snips",
        "What hyperparameters (and --clip auto's TAU) are chosen by on the validation split: snips (SNIPS "
        "Avg DCG of the validation clicks, clipped at their own TAU_v on hard logs) or dr (doubly robust "
        "Avg DCG of every displayed validation document: a logistic click model fitted on the training "
        "clicks plus the clicks' correction, its examination clipped at the same TAU_v; unbiased there "
        "when that model is right; needs every impression). Both are the same where TAU_v is none and "
        "one deterministic ranker logged; docs/how-to/propensities.md.",
        choices=CRITERIA,
    )


@dataclass(frozen=True)
class Method:
    """A learning method as the rest of cltr sees it.

    Attributes
    ----------
    name : str
        ``cltr train NAME``, the spec's ``methods`` entry.
    label : str
        How tables and figures name it ("SVM PropDCG").
    summary : str
        One line for ``cltr train --help``.
    options : type
        Its ``Options`` dataclass.
    train : callable
        ``(data, options, *, progress) -> (scorer, info)``.
    description : str
        The long help of ``cltr train NAME --help`` (defaults to the summary).
    selects_on : str
        What its hyperparameters are chosen on: "clicks" or "labels" (the skyline).
    tables : callable, optional
        ``info -> [(title, rows, columns)]``: extra tables ``cltr train`` prints.
    weighted : bool
        Whether it reads the clicks' weights (1/q_i or a correction's); where it does not
        (naive SVM Rank, LambdaRank on click labels, the skyline on labels), clipping changes
        nothing and ``clip`` is ignored.
    tuned_once : tuple of str
        Options that a figure may choose once and then fix (a spec's ``tune = "once"``, as
        the paper tuned LambdaRank once per dataset): each names an option that fixes one
        axis of the method's grid and the ``chosen`` entry that records its choice. The
        settings left out (a tree count, an epoch) are still chosen for every model.
    scorer : str
        The kind of the models it trains (``cltr.scorers``: how a model is stored and read
        back); ``train`` checks that every model it returns is of that kind.
    corrections : tuple of str, optional
        The corrections (``--correction``) it accepts, if not every one: a method that reads
        each displayed document's propensity inside a likelihood (``tree-pbm``) weighs no
        click, so a correction of the clicks' weights would change only its selection.
    """

    name: str
    label: str
    summary: str
    options: type[Options]
    train: Callable[..., tuple[Any, dict]]
    description: str = ""
    selects_on: str = "clicks"
    tables: Callable[[dict], list] | None = field(default=None, compare=False)
    weighted: bool = True
    tuned_once: tuple[str, ...] = ()
    scorer: str = "linear"
    corrections: tuple[str, ...] | None = None

    def parse_options(self, values: dict | Options | None, *, where: str | None = None) -> Options:
        """Validated options from a dict (a spec, a caller) or an instance."""
        return self.options.parse(values, where=where or f"options of {self.name}")


def relevance_on_displayed(X: np.ndarray, displayed: Displayed) -> RelevanceModel:
    """The doubly robust relevance model (``cltr.core.doubly_robust.fit_relevance_model``)
    fitted on a split's displayed rows (``X``: that split's features), with one BLAS thread:
    L-BFGS on a few dozen weights gains nothing from more and, on a busy machine, waits on
    them. The DR criterion and the ``dr`` correction both fit it so."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        return fit_relevance_model(X, impressions_by_propensity(displayed))


@dataclass(frozen=True)
class TrainingData:
    """What a method learns from: the dataset and the train / validation click logs.

    ``train_log_at``, where given, is the training log clipped at TAU as its source makes
    it (a correction that clips itself recomputes it); ``clipped`` uses it, else
    ``ClickLog.clipped``. The validation log is clipped only at its own TAU_v
    (``cltr.core.selection.validation_clip``, from the validation clicks alone), never at the
    training TAU.

    ``guard_log``, where given, is the validation log unclipped, for ``versus_logging``: the
    clipped estimate counts a click below the rank where q = TAU_v at q / TAU_v of its weight,
    so it favours the logging ranker's own order there, and the model-against-production
    comparison must not lean to one side (selection among candidates keeps the clipped
    estimate, whose smaller variance it needs).
    """

    dataset: Dataset
    train_log: ClickLog
    vali_log: ClickLog
    seed: int = 0
    rows: Callable[[str], Displayed] | None = field(default=None, compare=False, repr=False)
    _displayed: dict = field(default_factory=dict, compare=False, repr=False)
    train_log_at: Callable[[float], ClickLog] | None = field(default=None, compare=False, repr=False)
    _varied: list = field(default_factory=list, compare=False, repr=False)
    dr: DRValidation | None = field(default=None, compare=False, repr=False)
    guard_log: ClickLog | None = field(default=None, compare=False, repr=False)

    def displayed(self, split: str) -> Displayed:
        """Every displayed document of every session of ``split`` ("train" or "vali"), for
        learners that need the non-clicked impressions too; computed once."""
        if split not in self._displayed:
            if self.rows is None:
                raise ValueError(
                    "this method needs the displayed documents of every session (impressions), and "
                    "it was given clicks only; train it through the pipeline (cltr train, "
                    "cltr.api) on a simulated log or an imported log with every impression"
                )
            self._displayed[split] = self.rows(split)
        return self._displayed[split]

    def clipped(self, tau: float) -> TrainingData:
        """The same data with the training propensities below ``tau`` raised to it (the
        training clicks and the training split's displayed rows); validation untouched."""
        log = self.train_log_at(tau) if self.train_log_at is not None else self.train_log.clipped(tau)
        rows = None
        if self.rows is not None:

            def rows(split):
                shown = self.displayed(split)
                return (
                    dataclasses.replace(shown, propensity=np.maximum(shown.propensity, tau))
                    if split == "train"
                    else shown
                )

        return dataclasses.replace(self, train_log=log, rows=rows, _displayed={})

    def with_dr_criterion(self) -> TrainingData:
        """The same data judged by the doubly robust criterion (``estimate``,
        ``paired_difference`` and ``versus_logging`` read ``dr``).

        Its terms (``cltr.core.doubly_robust.dr_validation``): every displayed validation
        document, its examination clipped at the TAU_v of the validation clicks
        (``cltr.core.selection.validation_clip``, as the SNIPS criterion clips them), and
        where TAU_v clips, the relevance model fitted on the *training* split's impressions
        (the validation clicks it corrects are independent of it, the condition of DR's
        unbiasedness). Call it before any training clipping: the model reads the training
        propensities as told."""
        try:
            shown = self.displayed("vali")
            tau = guard.validation_clip(shown.propensity[shown.click > 0])
            vali = self.dataset.vali
            relevance = np.zeros(vali.n_docs)  # unclipped, the model's term cancels exactly
            if tau is not None:
                train = self.displayed("train")
        except ValueError as error:  # a log without impressions: say which criterion needs none
            raise ValueError(f"--criterion dr: {error}; or select with --criterion snips (the clicks alone)") from error
        if tau is not None:
            relevance = relevance_on_displayed(self.dataset.train.X, train).relevance(vali.X)
        terms = dr_validation(shown, relevance, self.vali_log.query_sessions, clip=tau, base=self.dataset.dcg_base)
        return dataclasses.replace(self, dr=terms)

    def _ranks(self, scorer) -> np.ndarray:
        vali = self.dataset.vali
        return rank_documents(scorer.scores(vali.X), vali.offsets, stream(self.seed, "selection"))

    def estimate(self, scorer) -> float:
        """The validation criterion, with the same tie-breaks for every candidate: SNIPS Avg
        DCG on the validation clicks, or with ``dr`` (``with_dr_criterion``) the doubly
        robust estimate of Avg DCG on the displayed validation documents."""
        if self.dr is not None:
            return self.dr.estimate(self._ranks(scorer), base=self.dataset.dcg_base)
        return validation_estimate(
            scorer, self.dataset.vali, self.vali_log, rng=stream(self.seed, "selection"), dcg_base=self.dataset.dcg_base
        )

    def clicked_avg_dcg(self, scorer) -> float:
        """The average DCG of the clicked validation documents, every click weighted 1: the
        paper's criterion for its LambdaRank baseline (a biased one, unlike ``estimate``)."""
        log = self.vali_log.with_propensity(np.ones(len(self.vali_log)))
        return validation_estimate(
            scorer, self.dataset.vali, log, rng=stream(self.seed, "selection"), dcg_base=self.dataset.dcg_base
        )

    def alike_share(self, scorer) -> float:
        """The share of validation queries (of those whose documents differ) whose documents
        ``scorer`` scores alike (``cltr.core.selection.alike_share``): the guard's test for
        a constant model."""
        vali = self.dataset.vali
        if not self._varied:  # the features never change: computed once
            self._varied.append(guard.varied_queries(vali.X, vali.offsets))
        return guard.alike_share(scorer.scores(vali.X), vali.offsets, varied=self._varied[0])

    def paired_difference(self, scorer, reference) -> dict:
        """``scorer`` against ``reference`` on the validation clicks: ``versus_logging`` with
        ``reference``'s ranks in the logging ranker's place (the difference and its
        query-clustered standard error); with ``dr``, on its weighted documents
        (``cltr.core.selection.paired_estimate``)."""
        if self.dr is not None:
            base, dr = self.dataset.dcg_base, self.dr
            gains = [dcg_gain(self._ranks(s)[dr.documents], base) for s in (scorer, reference)]
            return guard.paired_estimate(gains[0], gains[1], dr.weight, dr.query)
        vali, log = self.dataset.vali, self.vali_log
        ranks = [
            rank_documents(s.scores(vali.X), vali.offsets, stream(self.seed, "selection"))[log.doc]
            for s in (scorer, reference)
        ]
        return guard.versus_logging(ranks[0], ranks[1], log.cost, log.query, base=self.dataset.dcg_base)

    def versus_logging(self, scorer) -> dict:
        """``scorer`` against the logging ranker on the validation clicks (``guard_log``, with
        ``unclipped``: True, where given): both SNIPS Avg DCG estimates (the model's with
        ``estimate``'s tie-breaks, the logging ranker's from the logged ranks), their
        difference and its standard error (``cltr.core.selection.versus_logging``); with
        ``dr``, both doubly robust estimates on the same document weights (the logging
        ranker's from each document's mean gain at its logged ranks,
        ``DRValidation.logged_gain``)."""
        if self.dr is not None:
            dr = self.dr
            gain = dcg_gain(self._ranks(scorer)[dr.documents], self.dataset.dcg_base)
            return guard.paired_estimate(gain, dr.logged_gain, dr.weight, dr.query)
        vali, log = self.dataset.vali, self.vali_log if self.guard_log is None else self.guard_log
        ranks = rank_documents(scorer.scores(vali.X), vali.offsets, stream(self.seed, "selection"))
        versus = guard.versus_logging(ranks[log.doc], log.rank, log.cost, log.query, base=self.dataset.dcg_base)
        return versus if self.guard_log is None else {**versus, "unclipped": True}


_REGISTRY: dict[str, Method] | None = None


def methods() -> dict[str, Method]:
    """Every method, by name, in the order of ``cltr train --help`` (the modules' ``ORDER``, then name)."""
    return registered(__name__, "METHOD", Method)


def get(name: str) -> Method:
    return lookup(methods(), name, "method")


def train(
    name: str,
    data: TrainingData,
    options: dict | Options | None = None,
    *,
    progress: Callable[[dict], None] | None = None,
    clip: str | float | None = None,
):
    """Train method ``name`` on ``data``; see the module docstring.

    Parameters
    ----------
    clip : "auto", float or None
        None: the training log as given. TAU: its propensities below TAU raised to TAU
        (``data.clipped``). "auto": no clipping when the training weights' Kish effective
        sample size is at least ``ESS_FRACTION`` of the examples (the paper's logs: one
        training); else the method is trained once unclipped and once per TAU of
        ``clip_grid`` and, of the models within one standard error of the best validation
        estimate, the most clipped is kept (``_select_clip``). The
        validation log is clipped only at its own TAU_v, never at the training TAU, so the
        estimate compares the clippings alike.
        Methods that read no weights (``Method.weighted``) ignore it.

    Returns
    -------
    scorer, info
        The method's, with ``clip``, ``clip_mode``, ``clip_selection`` (auto), the ESS
        fractions, ``versus_logging`` and ``warnings`` added (the guard,
        ``cltr.core.selection.guard_warnings``).
    """
    method = get(name)
    options = method.parse_options(options)
    clip = guard.parse_clip(clip)
    if len(data.train_log) == 0:
        raise ValueError(
            "the training click log has no clicks (no row of it has click 1): there is nothing to learn "
            "from. An imported log: check that its click column marks the clicked rows with 1, or "
            "import a log that has clicks; a simulated one: run `cltr simulate` again with more "
            "--passes or a larger --eps-pos or --eps-neg"
        )
    for split, log in (("training", data.train_log), ("validation", data.vali_log)):
        if np.isnan(log.propensity).any():
            raise ValueError(
                f"the {split} click log has no propensities (a log imported without a propensity "
                f"column): estimate them (`cltr propensities estimate`) and train with "
                f"--propensities estimated"
            )
    if not method.weighted:
        clip = None
    criterion = getattr(options, "criterion", "snips")
    if criterion == "dr":  # before any clipping: its relevance model reads the training log as told
        data = data.with_dr_criterion()
    unclipped_ess = guard.ess_fraction(data.train_log.cost)
    record: dict[str, Any] = {
        "mode": "none" if clip is None else "auto" if clip == "auto" else "fixed",
        "tau": None,
        "ess_fraction": unclipped_ess,
    }
    table = None
    if clip == "auto" and (
        unclipped_ess >= guard.ESS_FRACTION or (data.train_log.weight is not None and data.train_log_at is None)
    ):
        # enough effective clicks (or weights that clipping cannot reach): the log as told
        clip = None
    if clip == "auto":
        grid = guard.clip_grid(float(np.min(data.train_log.propensity)))
        record["grid"] = grid
        scorer, info, table, tau, warnings = _select_clip(method, data, options, grid, progress)
        record["tau"] = tau
    elif isinstance(clip, float):  # a TAU ("auto" is the only string parse_clip gives)
        scorer, info = method.train(data.clipped(clip), options, progress=progress)
        record["tau"] = clip
        warnings = []
    else:
        scorer, info = method.train(data, options, progress=progress)
        warnings = []
    trained = data if record["tau"] is None else data.clipped(record["tau"])
    info["clip"], info["clip_mode"] = record["tau"], record["mode"]
    info["validation_criterion"] = criterion
    if data.dr is not None:
        info["validation_dr_clip"] = data.dr.clip
    if table is not None:
        info["clip_selection"], info["clip_grid"] = table, record["grid"]
    info["ess_fraction"] = {
        "unclipped": unclipped_ess,
        "trained": guard.ess_fraction(trained.train_log.cost) if record["tau"] is not None else unclipped_ess,
        "validation": guard.ess_fraction(data.vali_log.cost),
    }
    if getattr(scorer, "kind", None) != method.scorer:
        # a model of another kind would be stored under, and read back as, the wrong kind
        raise TypeError(
            f"method {method.name!r} declares scorer kind {method.scorer!r} (Method.scorer) but trained "
            f"a model of kind {getattr(scorer, 'kind', None)!r}"
        )
    info["versus_logging"] = data.versus_logging(scorer)
    alike = data.alike_share(scorer)
    edges = guard.edges_of_grid(info.get("selection", []), info.get("chosen", {}))
    info["warnings"] = (
        list(info.get("warnings", []))
        + warnings
        + guard.guard_warnings(
            versus=info["versus_logging"],
            train_ess=info["ess_fraction"]["trained"] if method.weighted else None,
            n_train=len(data.train_log),
            vali_ess=info["ess_fraction"]["validation"],
            n_vali=len(data.vali_log),
            clip=record,
            edges=edges,
            alike=alike,
        )
    )
    return scorer, info


def _select_clip(method: Method, data: TrainingData, options: Options, grid: list[float], progress):
    """Train once unclipped and once per TAU of ``grid``; keep, of the models within one
    standard error of the best validation estimate, the one with the strongest clipping
    (Breiman's one-standard-error rule), never a model that scores alike.

    Why the rule: clipping trades bias for variance, and the validation estimate that
    compares the clippings is itself noisy on exactly the logs where clipping matters (a
    hard log's validation clicks have a small effective sample). Differences within their
    standard error are no evidence for the noisier model; the clipped one is the safer
    choice. The standard error is that of the paired difference of the two models'
    SNIPS estimates on the same validation clicks, clustered by query
    (``cltr.core.selection.versus_logging`` with the best model in the logging ranker's
    place). Measured on MQ2008 Fold 1 at eta 2, eps- 0.3 (seed 0): SVM PropDCG unclipped
    scores 0.5973 on validation and 0.6652 on test, clipped at 0.1 0.5894 and 0.6870."""
    infos, scorers = [], []

    def fit(params, _previous):
        tau = params["clip"]
        told = data if tau is None else data.clipped(tau)
        scorer, info = method.train(told, options, progress=progress)
        infos.append(info)
        scorers.append(scorer)
        return scorer, {"chosen": dict(info.get("chosen", {})), "ess_fraction": guard.ess_fraction(told.train_log.cost)}

    candidates = [{"clip": tau} for tau in [None, *grid]]
    start = time.perf_counter()
    selection = guard.select_on_validation(candidates, fit, data.estimate, alike=data.alike_share)
    best = candidates.index(selection.best_params)
    within = []
    for index, row in enumerate(selection.table):
        paired = data.paired_difference(scorers[index], scorers[best])
        row["difference_to_best"], row["standard_error"] = paired["difference"], paired["standard_error"]
        if index == best or (
            row.get("alike_share", 0.0) < guard.ALIKE_SHARE and paired["difference"] >= -paired["standard_error"]
        ):
            within.append(index)
    chosen = max(within, key=lambda i: candidates[i]["clip"] or 0.0)  # the strongest clipping (None: none)
    for index, row in enumerate(selection.table):
        row["kept"] = index == chosen
    info = infos[chosen]
    info["clip_seconds"] = time.perf_counter() - start
    return scorers[chosen], info, selection.table, candidates[chosen]["clip"], selection.warnings
