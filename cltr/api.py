"""A Python API over the same functions as the command line.

Estimators following scikit-learn's parameter conventions, one per method::

    from cltr import api
    data = api.load_letor("MQ2008", fold=1)                      # or api.load_prepared("letor")
    train = api.read_click_log("train.tsv", data.train)           # a logged click table
    vali = api.read_click_log("vali.tsv", data.vali)
    estimate = api.estimate_propensities(train, data.train, method="harvest")
    model = api.PropDCG(C=0.1).fit(data, train, vali=vali, propensities=estimate)
    scores = model.predict(data.test.X)
    print(api.evaluate(model, data))                              # as `cltr evaluate` prints

``fit`` takes the training data (a ``Dataset``, whose train split and metric convention
it uses; or a ``Queries``, or ``X`` and ``offsets``) and its clicks: a ``ClickLog``, a
``LoggedRows`` from ``read_click_log``, or the arrays ``click_query``, ``click_doc``,
``propensity``. Hyperparameters left unset are chosen by SNIPS Avg DCG on ``vali`` (the
validation clicks, with their split), or on the training clicks when no ``vali`` is given.
Training goes through ``cltr.methods.train``, the function ``cltr train`` calls, so the
same data, options and seed give the same model. ``evaluate`` reads the relevance
threshold and DCG log base of the ``Dataset`` it is given, as every cltr command does.

``Session(workdir)`` reaches a workspace's artifacts as the commands do: the current (or
named, or default-made) production ranker, click log, propensities and model of a prepared
dataset (``Session().clicks("letor")``), and ``produce``, ``simulate``, ``train`` and
``evaluate`` that store and reuse them exactly as ``cltr produce``, ``simulate``, ``train``
and ``evaluate`` do.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import os
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from cltr import datasets, methods
from cltr.core.clicks import ClickLog
from cltr.core.queries import Dataset, Queries
from cltr.core.ranking import evaluate as _evaluate
from cltr.core.seeds import stream
from cltr.data.clicklog import LoggedRows, read_click_log, write_click_log
from cltr.data.loaders import load_letor, load_yahoo
from cltr.data.synthetic import make_synthetic
from cltr.methods import TrainingData
from cltr.pipeline.session import RunOptions, Session
from cltr.pipeline.stages import EstimateOptions, ProductionOptions, SimulationOptions, as_told
from cltr.pipeline.stages import estimate_propensities as _estimate
from cltr.pipeline.stages.propensities import validation_tau
from cltr.pipeline.workspace import Workspace

__all__ = [
    "Estimator",
    "SVMRank",
    "PropRank",
    "PropDCG",
    "DeepPropDCG",
    "LambdaRank",
    "TreePropDCG",
    "Skyline",
    "read_click_log",
    "write_click_log",
    "estimate_propensities",
    "evaluate",
    "load_letor",
    "load_yahoo",
    "make_synthetic",
    "load_dataset",
    "load_prepared",
    "Session",
    "ProductionOptions",
    "SimulationOptions",
    "EstimateOptions",
    "RunOptions",
]


def _queries(data, offsets=None) -> Queries:
    if isinstance(data, Queries):
        return data
    X = np.ascontiguousarray(data)
    if offsets is None:
        raise ValueError("give a Queries split, or X together with its query offsets")
    offsets = np.asarray(offsets, dtype=np.int64)
    n_docs = int(offsets[-1])
    if len(X) != n_docs:
        raise ValueError(f"X has {len(X)} rows, the offsets describe {n_docs} documents")
    return Queries(X=X, labels=np.zeros(n_docs, dtype=np.int64), qid=np.arange(len(offsets) - 1), offsets=offsets)


def _click_log(clicks, queries: Queries, *, click_query=None, click_doc=None, propensity=None) -> ClickLog:
    if isinstance(clicks, LoggedRows):
        return clicks.click_log(queries.n_queries)
    if isinstance(clicks, ClickLog):
        return clicks
    if clicks is not None:
        click_query, click_doc, propensity = clicks
    if click_doc is None:
        raise ValueError("give the clicks: a ClickLog, a LoggedRows, or click_query, click_doc, propensity")
    click_doc = np.asarray(click_doc, dtype=np.int64)
    if click_query is None:
        click_query = queries.doc_query[click_doc]
    ranks = np.zeros(len(click_doc), dtype=np.int64)
    return ClickLog(
        query=np.asarray(click_query, dtype=np.int64),
        doc=click_doc,
        rank=ranks,
        propensity=np.ones(len(click_doc)) if propensity is None else np.asarray(propensity, float),
        pass_index=np.zeros(len(click_doc), dtype=np.int64),
        n_passes=1,
        n_queries=queries.n_queries,
    )


def _defaults(method: str) -> dict[str, Any]:
    """Each option of ``method`` with its default as a parameter: the options type's, or None
    (the chosen preset's value) for the settings a preset supplies (``preset_fields``)."""
    options_type: Any = methods.get(method).options
    from_preset = set(options_type.preset_fields()) if hasattr(options_type, "preset_fields") else set()
    return {f.name: None if f.name in from_preset else f.default for f in options_type.option_fields()}


def _same(value, default) -> bool:
    """``value`` is ``default`` (a list given for a tuple option is the same sequence)."""
    if isinstance(value, list):
        value = tuple(value)
    try:
        return type(value) is type(default) and bool(value == default)
    except (TypeError, ValueError):  # e.g. an array, whose == is elementwise
        return False


_WHY_NOT_CHECK_ESTIMATOR = """

    scikit-learn conventions: ``__init__`` stores each option unchanged as an attribute of
    its name (validation happens in ``fit``, naming the option), ``get_params`` /
    ``set_params`` read and write them, so ``sklearn.base.clone`` and parameter searches
    work, and ``check_estimator``'s checks of construction, parameters, cloning and repr
    pass. Its checks that call ``fit(X, y)`` cannot hold: a ranking estimator learns from
    query groups (``offsets``) and a click log, not from one target per row, so ``fit``
    refuses a bare ``(X, y)``.
"""


class Estimator(BaseEstimator):
    """A learning method as an estimator: ``Estimator(**options).fit(...).predict(X)``.

    The parameters are the method's options type's fields, with its defaults (``get_params()``
    lists them); an unknown name raises ``ValueError`` naming the valid ones, a bad value
    raises ``ValueError`` at ``fit``.
    """

    method: str = ""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if not cls.method:
            return
        # the signature scikit-learn reads (get_params, clone, repr) is the options type's fields
        parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        parameters += [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default)
            for name, default in _defaults(cls.method).items()
        ]

        def __init__(self, **params):
            Estimator.__init__(self, **params)

        __init__.__signature__ = inspect.Signature(parameters)
        __init__.__doc__ = f"Store the options of {cls.method} unchanged (validated by ``fit``)."
        cls.__init__ = __init__
        if cls.__doc__:  # (none under python -OO)
            cls.__doc__ = cls.__doc__.rstrip() + _WHY_NOT_CHECK_ESTIMATOR

    def __init__(self, **params):
        names = self._get_param_names()
        self._refuse_unknown(params)
        defaults = _defaults(self.method)
        for name in names:
            setattr(self, name, params.get(name, defaults[name]))

    def _refuse_unknown(self, params: dict) -> None:
        options_type: Any = methods.get(self.method).options
        names = [f.name for f in options_type.option_fields()]  # declaration order
        unknown = sorted(set(params) - set(names))
        if unknown:
            hints = [
                f"{name!r}"
                + (f" (did you mean {close[0]!r}?)" if (close := difflib.get_close_matches(name, names, n=1)) else "")
                for name in unknown
            ]
            raise ValueError(
                f"{type(self).__name__}: unknown option{'s' if len(unknown) > 1 else ''} "
                f"{', '.join(hints)}; valid: {', '.join(names)}"
            )

    def set_params(self, **params) -> Estimator:
        self._refuse_unknown(params)
        return super().set_params(**params)

    def _options(self):
        """The parameters as the method's validated options (``ValueError`` naming a bad one).

        A parameter at its default is left out, as an option not given on the command line:
        where a method has presets (Deep PropDCG's ``preset``), the settings a preset supplies
        default to None, the chosen preset's value (a value given wins, even one equal to
        another preset's)."""
        method = methods.get(self.method)
        defaults = _defaults(self.method)
        given = {
            name: value
            for name, value in self.get_params(deep=False).items()
            if not (name in defaults and _same(value, defaults[name]))
        }
        return method.parse_options(given, where=type(self).__name__)

    def fit(
        self,
        X,
        clicks=None,
        *,
        offsets=None,
        click_query=None,
        click_doc=None,
        propensity=None,
        vali=None,
        propensities=None,
        clip: str | float | None = "auto",
        relevant_from: int | None = None,
        seed: int = 0,
        progress=None,
    ) -> Estimator:
        """Train on ``clicks`` logged on the training split ``X``.

        Parameters
        ----------
        X : Dataset, Queries, or ndarray of shape (n_docs, n_features) with ``offsets``
            A ``Dataset``: its train split, its validation split (for ``vali`` given as
            clicks alone) and its metric convention (relevance threshold, DCG log base).
        clicks : ClickLog, LoggedRows or (click_query, click_doc, propensity), optional
            Or give the arrays as keywords (``click_query`` may be omitted).
        vali : clicks, or (Queries, clicks), optional
            The validation clicks (on the ``Dataset``'s vali split), or a split and its
            clicks, for model selection.
        propensities : PropensityEstimate, optional
            Divide by its per-rank estimate instead of the logged propensities.
        clip : "auto", "none", None or float
            Raise the training propensities below TAU = ``clip`` to it; "auto" (the default):
            no clipping where the training weights' effective sample size is large, else
            TAU chosen on the validation clicks (``cltr.methods.train``); None or "none": no
            clipping. The training clip never touches the validation clicks; on a hard log
            (their own effective sample size small) they are clipped at their own TAU_v, as
            ``cltr train`` clips them (``cltr.core.selection.validation_clip``; ``info_
            ["validation_clip"]``), and the comparison with the logging ranker reads them
            unclipped.
        relevant_from : int, optional
            The skyline (which learns from ``X.labels``) only, and only when ``X`` is not a
            ``Dataset`` (whose threshold it takes).
        seed : int
            Seeds every draw (tie-breaks, initialisation), as ``cltr train --seed``.
        """
        options = self._options()
        dataset = X if isinstance(X, Dataset) else None
        if dataset is not None and relevant_from is not None and relevant_from != dataset.relevant_from:
            raise ValueError(
                f"relevant_from = {relevant_from} contradicts the dataset's {dataset.relevant_from}; give one"
            )
        if dataset is None and self.method == "skyline" and relevant_from is None:
            raise ValueError(
                "the skyline learns from labels: give the Dataset (its relevance threshold), or relevant_from"
            )
        if (
            dataset is None
            and np.ndim(X) == 2
            and offsets is None
            and clicks is not None
            and np.ndim(clicks) == 1
            and not isinstance(clicks, tuple)
        ):
            raise ValueError(
                "a ranking estimator learns from query groups and clicks, not from fit(X, y): give "
                "X with its query offsets and the click log"
            )
        train = dataset.train if dataset is not None else _queries(X, offsets)
        train_log = _click_log(clicks, train, click_query=click_query, click_doc=click_doc, propensity=propensity)
        if vali is None:
            vali_split, vali_log = train, train_log
        elif isinstance(vali, tuple) and len(vali) == 2 and isinstance(vali[0], Queries):
            vali_split = vali[0]
            vali_log = _click_log(vali[1], vali_split)
        elif dataset is not None:
            vali_split = dataset.vali
            vali_log = _click_log(vali, vali_split)
        else:
            raise ValueError("vali: give (validation Queries, their clicks), or fit on a Dataset")
        logs = [as_told(log, propensities) for log in (train_log, vali_log)]
        # a hard log's validation clicks are clipped at TAU_v and the guard reads them
        # unclipped, as in `cltr train` (model_stage), so that both choose the same model
        tau_v = validation_tau(logs[1])
        guard_log = None
        if tau_v is not None:
            guard_log, logs[1] = logs[1], logs[1].clipped(tau_v)
        # relevant_from serves the skyline only (refused above when missing); the DCG base only
        # scales the reported validation estimate, never the chosen model
        training = (
            Dataset(
                name="api",
                train=train,
                vali=vali_split,
                test=vali_split,
                relevant_from=relevant_from if relevant_from is not None else 1,
            )
            if dataset is None
            else dataclasses.replace(dataset, train=train, vali=vali_split, test=vali_split)
        )
        self.scorer_, self.info_ = methods.train(
            self.method,
            TrainingData(training, logs[0], logs[1], seed, guard_log=guard_log),
            options,
            progress=progress,
            clip=clip,
        )
        self.info_["validation_clip"] = tau_v
        return self

    def predict(self, X) -> np.ndarray:
        """Scores of the rows of ``X`` (a matrix or a ``Queries``), shape (n_docs,)."""
        if getattr(self, "scorer_", None) is None:  # NotFittedError is a ValueError
            raise NotFittedError(f"{type(self).__name__} is not fitted yet; call fit first")
        return self.scorer_.scores(X.X if isinstance(X, Queries) else np.asarray(X))


if Estimator.__doc__:
    Estimator.__doc__ = Estimator.__doc__.rstrip() + _WHY_NOT_CHECK_ESTIMATOR


class SVMRank(Estimator):
    """Naive Ranking SVM on clicks (every click weighted 1)."""

    method = "svm-rank"


class PropRank(Estimator):
    """SVM PropRank: the propensity-weighted Ranking SVM."""

    method = "svm-proprank"


class PropDCG(Estimator):
    """SVM PropDCG: the DCG bound by the convex-concave procedure."""

    method = "svm-propdcg"


class DeepPropDCG(Estimator):
    """Deep PropDCG: an MLP on the DCG bound.

    ``preset="paper"`` starts from the paper's settings (``cltr.methods.deep_propdcg.PRESETS``);
    a setting left at None is the chosen preset's, one given overrides it.
    """

    method = "deep-propdcg"


class LambdaRank(Estimator):
    """LightGBM LambdaRank on click labels."""

    method = "lambdarank"


class TreePropDCG(Estimator):
    """LightGBM on the propensity-weighted DCG bound."""

    method = "tree-propdcg"


class Skyline(Estimator):
    """Ranking SVM on the labelled training split (``X.labels``), C on validation labels."""

    method = "skyline"


def estimate_propensities(
    log: LoggedRows, queries: Queries, settings: EstimateOptions | dict | None = None, *, seed: int = 0, **options
):
    """Propensity per rank from a logged click table, as ``cltr propensities estimate``.

    Parameters
    ----------
    settings : EstimateOptions or dict, optional
        The estimator (``method``: a name of ``cltr.estimators.estimators()``, as
        ``--method`` takes it; every one is on the docs' estimators reference page), the
        ranks estimated (``max_rank``) and the bootstrap band (``bootstrap``, ``level``),
        as ``cltr propensities estimate`` takes them [default: its defaults].
    seed : int
        Seeds the bootstrap and the estimator's draws, as ``--seed``.
    **options
        ``EstimateOptions``' fields by name (``method="em"``; they override ``settings``),
        and the estimator's own options (em's ``relevance_model="trees"``); an unknown
        name is an error naming the valid ones.

    Returns
    -------
    cltr.core.propensity.PropensityEstimate
    """
    names = EstimateOptions.__dataclass_fields__
    chosen = EstimateOptions.parse(settings or {}, where="estimate_propensities")
    changes = {name: options.pop(name) for name in list(options) if name in names}
    if changes:
        chosen = chosen.replace(**changes)
    return _estimate(log.impressions(), queries.X, **chosen.to_dict(), seed=seed, **options)


def evaluate(model, data: Dataset, *, split: str = "test", seed: int = 0) -> dict:
    """Avg DCG, Avg Rank and nDCG@10 (both averages) of a fitted estimator (or scorer) on a
    split of ``data``, in its convention, as ``cltr evaluate`` computes them.

    Parameters
    ----------
    model : Estimator or scorer
    data : Dataset
        Its relevance threshold (``relevant_from``) and DCG log base (``dcg_base``) are
        the convention: the ones stored with the prepared dataset, not defaults of this
        function. To evaluate under another, replace them on the dataset
        (``dataclasses.replace(data, relevant_from=1)``).
    split : str
        "test" (``cltr evaluate``'s), "vali" or "train".
    seed : int
        Seeds the tie-breaks, as ``cltr evaluate --seed``.

    Returns
    -------
    dict
        ``avg_dcg``, ``avg_rank``, ``ndcg@10`` (over all queries, 0 for a query without a
        relevant document, as trec_eval) and ``ndcg@10_relevant_queries``.
    """
    if not isinstance(data, Dataset):
        raise ValueError(
            "evaluate takes the Dataset (api.evaluate(model, data)), whose relevance threshold and DCG "
            f"log base are the convention; found {type(data).__name__}"
        )
    splits = data.splits()
    if split not in splits:
        raise ValueError(f"split must be one of {', '.join(splits)}, found {split!r}")
    scorer = getattr(model, "scorer_", None) if isinstance(model, Estimator) else model
    if scorer is None:
        raise NotFittedError(f"{type(model).__name__} is not fitted yet; call fit first")
    queries = splits[split]
    return _evaluate(
        scorer, queries, queries.relevant(data.relevant_from), rng=stream(seed, "evaluate"), dcg_base=data.dcg_base
    )


def load_dataset(loader: str, *, name: str | None = None, dcg_log: str = "e", **options) -> Dataset:
    """The dataset ``cltr prepare LOADER`` would store, without a workspace.

    Parameters
    ----------
    loader : str
        A dataset loader of ``cltr.datasets.loaders()``: ``synthetic``, ``letor``,
        ``svmlight``, ``yahoo``, or any added one.
    name : str, optional
        The dataset's name (``--name``; default: the loader's); it decides the default
        passes of a loader that declares none.
    dcg_log : {"e", "2"}
        The log base of Avg DCG's gain (``--dcg-log``).
    **options
        The loader's options, named as its reference page lists them (``mq2008=``,
        ``fold=``, ``relevant_from=``, ...): an unknown name is an error naming the valid
        ones, a bad value one naming what must hold.

    Examples
    --------
    >>> from cltr import api
    >>> data = api.load_dataset("synthetic", n_queries=30, seed=1)
    >>> data.train.n_features, data.meta["default_passes"]
    (46, 100)
    """
    return datasets.load(loader, options, name=name, dcg_log=dcg_log)


def load_prepared(name: str, workdir: str | os.PathLike | None = None) -> Dataset:
    """The dataset ``cltr prepare ... --name NAME`` stored in the workspace ``workdir``
    (default: $CLTR_WORKDIR, else ./cltr-work), with its metric convention."""
    return Workspace(None if workdir is None else os.fspath(workdir)).load_dataset(name)[0]
