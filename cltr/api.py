"""A Python API over the same functions as the command line.

Estimators with a scikit-learn-like contract, one per method::

    from cltr import api
    data = api.load_letor("MQ2008", fold=1)                      # or api.make_synthetic()
    train = api.read_click_log("train.tsv", data.train)           # a logged click table
    vali = api.read_click_log("vali.tsv", data.vali)
    estimate = api.estimate_propensities(train, data.train, method="harvest")
    model = api.PropDCG(C=0.1).fit(data.train, train, vali=(data.vali, vali), propensities=estimate)
    scores = model.predict(data.test.X)

``fit`` takes the training split (a ``Queries``, or ``X`` and ``offsets``) and its clicks:
a ``ClickLog``, a ``LoggedRows`` from ``read_click_log``, or the arrays ``click_query``,
``click_doc``, ``propensity``. Hyperparameters left unset are chosen by SNIPS Avg DCG on
``vali`` (a split and its clicks), or on the training clicks when no ``vali`` is given.
Training goes through ``cltr.methods.train``, the function ``cltr train`` calls, so the
same data, options and seed give the same model.
"""

from __future__ import annotations

import numpy as np

from cltr import methods
from cltr.core.clicks import ClickLog
from cltr.core.queries import Dataset, Queries
from cltr.core.ranking import DCG_BASE, evaluate as _evaluate
from cltr.core.seeds import stream
from cltr.data.clicklog import LoggedRows, read_click_log, write_click_log
from cltr.data.loaders import load_letor, load_yahoo
from cltr.data.synthetic import make_synthetic
from cltr.methods import TrainingData
from cltr.pipeline.stages import as_told
from cltr.pipeline.stages import estimate_propensities as _estimate

__all__ = ["Estimator", "SVMRank", "PropRank", "PropDCG", "DeepPropDCG", "LambdaRank", "TreePropDCG", "Skyline",
           "read_click_log", "write_click_log", "estimate_propensities", "evaluate", "load_letor",
           "load_yahoo", "make_synthetic"]


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
    return ClickLog(query=np.asarray(click_query, dtype=np.int64), doc=click_doc, rank=ranks,
                    propensity=np.ones(len(click_doc)) if propensity is None else np.asarray(propensity, float),
                    pass_index=np.zeros(len(click_doc), dtype=np.int64), n_passes=1, n_queries=queries.n_queries)


class Estimator:
    """A learning method as an estimator: ``Estimator(**options).fit(...).predict(X)``.

    The options are the method's options type's fields (``get_params()`` lists them with
    their values); an unknown name or a bad value raises ``ValueError`` at construction.
    """

    method: str = ""

    def __init__(self, **params):
        self._options = methods.get(self.method).parse_options(params, where=type(self).__name__)
        self.scorer_ = None
        self.info_ = None

    def get_params(self, deep: bool = True) -> dict:
        return self._options.to_dict()

    def set_params(self, **params) -> "Estimator":
        self._options = methods.get(self.method).parse_options({**self._options.to_dict(), **params},
                                                               where=type(self).__name__)
        return self

    def __repr__(self) -> str:
        defaults = methods.get(self.method).options()
        changed = {k: v for k, v in self._options.to_dict().items() if getattr(defaults, k) != getattr(self._options, k)}
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in changed.items())})"

    def fit(self, X, clicks=None, *, offsets=None, click_query=None, click_doc=None, propensity=None, vali=None,
            propensities=None, clip: float | None = None, relevant_from: int = 1, seed: int = 0,
            progress=None) -> "Estimator":
        """Train on ``clicks`` logged on the split ``X``.

        Parameters
        ----------
        X : Queries, or ndarray of shape (n_docs, n_features) with ``offsets``
        clicks : ClickLog, LoggedRows or (click_query, click_doc, propensity), optional
            Or give the arrays as keywords (``click_query`` may be omitted).
        vali : (Queries, clicks), optional
            The validation split and its clicks, for model selection.
        propensities : PropensityEstimate, optional
            Divide by its per-rank estimate instead of the logged propensities.
        clip : float, optional
            Raise propensities below ``clip`` to it.
        relevant_from : int
            For the skyline only (it learns from ``X.labels``).
        seed : int
            Seeds every draw (tie-breaks, initialisation), as ``cltr train --seed``.
        """
        train = _queries(X, offsets)
        train_log = _click_log(clicks, train, click_query=click_query, click_doc=click_doc, propensity=propensity)
        if vali is None:
            vali_split, vali_log = train, train_log
        else:
            vali_split = _queries(vali[0])
            vali_log = _click_log(vali[1], vali_split)
        logs = [as_told(log, propensities, clip) for log in (train_log, vali_log)]
        dataset = Dataset(name="api", train=train, vali=vali_split, test=vali_split, relevant_from=relevant_from)
        self.scorer_, self.info_ = methods.train(self.method, TrainingData(dataset, logs[0], logs[1], seed),
                                                 self._options, progress=progress)
        return self

    def predict(self, X) -> np.ndarray:
        """Scores of the rows of ``X`` (a matrix or a ``Queries``), shape (n_docs,)."""
        if self.scorer_ is None:
            raise ValueError(f"{type(self).__name__} is not fitted yet; call fit first")
        return self.scorer_.scores(X.X if isinstance(X, Queries) else np.asarray(X))


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
    """Deep PropDCG: an MLP on the DCG bound."""
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


def estimate_propensities(log: LoggedRows, queries: Queries, *, method: str = "harvest", max_rank: int | None = None,
                          bootstrap: int = 100, level: float = 0.95, seed: int = 0):
    """Propensity per rank from a logged click table, as ``cltr propensities estimate``."""
    return _estimate(log.impressions(), queries.X, method=method, max_rank=max_rank, bootstrap=bootstrap,
                     level=level, seed=seed)


def evaluate(model, queries: Queries, *, relevant_from: int = 1, dcg_base: float = DCG_BASE, seed: int = 0) -> dict:
    """Avg DCG, Avg Rank and nDCG@10 of a fitted estimator (or scorer) on a labelled split
    (relevant = label >= ``relevant_from``; Avg DCG's gain 1/log_dcg_base(1 + rank))."""
    scorer = model.scorer_ if isinstance(model, Estimator) else model
    return _evaluate(scorer, queries, queries.relevant(relevant_from), rng=stream(seed, "evaluate"), dcg_base=dcg_base)
