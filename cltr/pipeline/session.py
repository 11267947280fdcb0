"""Which artifacts a piece of work uses: a session over one workspace.

Every stage reads what the stage before it wrote. A ``Session`` answers which dataset,
production ranker, click log, propensities or model that is: the one named by key, else
the current one (``Workspace.current``), else one made with default settings, said as
such, so that ``cltr train svm-proprank`` works on a fresh machine. It also prepares what
a run needs on the way: the embedded synthetic dataset on first use, a spec's generated
dataset, and the other LETOR folds of a prepared fold.

The command line (``cltr.cli``) and the Python API use the same session; neither
duplicates these rules. Nothing here prints or draws: what a session has to say goes to
``say`` (the command line prints it; by default it is logged), and progress goes to the
callbacks of ``progress`` (none by default).

Errors are ``SessionError`` (a ``ValueError``: a missing or mismatched artifact, an
unprepared dataset), or ``RequestError`` when the request contradicts itself or cannot
fit (a usage error on the command line, exit status 2).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from pathlib import Path

import numpy as np

from cltr import methods
from cltr.core.queries import Dataset, default_passes, describe_split, label_counts
from cltr.core.ranking import DCG_BASE
from cltr.data.click_artifact import SPLITS, ClicksArtifact
from cltr.datasets import DCG_LOGS
from cltr.options import Options, option
from cltr.pipeline.stages import (
    ProductionOptions,
    SimulationOptions,
    TrainOptions,
    clicks_stage,
    evaluation_stage,
    logging_rankers,
    model_stage,
    production_stage,
)
from cltr.pipeline.workspace import Artifact, Workspace, check_name

log = logging.getLogger(__name__)

DEFAULT_DATASET = "synthetic"
"""The embedded dataset: generated with default settings the first time it is asked for."""


@dataclasses.dataclass(frozen=True)
class RunOptions(Options):
    """What ``cltr run`` trains after producing and simulating with default settings."""

    method_names: tuple[str, ...] = option(
        ("svm-rank", "svm-proprank", "svm-propdcg"),
        "Methods to train (repeat the option).",
        choices=methods.methods,
        flag="--method",
        repeat=True,
    )


def _dataset_name(text: str) -> str:
    return check_name(text, "dataset")


@dataclasses.dataclass(frozen=True)
class PrepareOptions(Options):
    """Where ``cltr prepare LOADER`` stores a dataset, and its metric's convention (the
    loader's own options are its ``Options``); ``for_loader`` gives the loader's name as
    the default name."""

    name: str | None = option(
        None, "Name to store it under [default: the loader's name].", parse=_dataset_name, metavar="NAME"
    )
    dcg_log: str = option(
        "e",
        "Base of the log in Avg DCG's gain 1/log(1 + rank): e (the paper's) or 2. It only "
        "scales every Avg DCG; comparisons and model selection are the same either way.",
        choices=tuple(DCG_LOGS),
    )

    @classmethod
    def for_loader(cls, loader: str) -> type[PrepareOptions]:
        """The options of ``cltr prepare LOADER``: the dataset is stored as ``LOADER``
        unless named."""
        return cls.narrowed(f"PrepareOptions[{loader}]", name={"default": loader, "help": "Name to store it under."})


def _options(options_type, options, changes: dict, where: str):
    """``options`` (an instance, a mapping or None for the defaults) with ``changes``
    applied, validated."""
    base = options_type.parse(options or {}, where=where)
    return type(base).from_dict({**base.to_dict(), **changes}, where=where) if changes else base


def train_options(training: TrainOptions | dict | None, changes: dict) -> TrainOptions:
    """``Session.train``'s ``TrainOptions``: ``training`` with ``changes`` on top, where the
    clipping may also be given as the API has always taken it, None for no clipping or a
    number for TAU (the options hold the command line's text: "none", "0.1")."""

    def as_text(clip):
        if clip is None:
            return "none"
        return repr(float(clip)) if isinstance(clip, (int, float)) and not isinstance(clip, bool) else clip

    if isinstance(training, dict) and "clip" in training:
        training = {**training, "clip": as_text(training["clip"])}
    if "clip" in changes:
        changes = {**changes, "clip": as_text(changes["clip"])}
    return _options(TrainOptions, training, changes, "train")


class SessionError(ValueError):
    """An artifact or dataset a request needs is missing or does not match (exit status 1)."""


class RequestError(SessionError):
    """The request contradicts itself, or cannot be met as given (a usage error, exit status 2)."""


class SessionProgress:
    """The progress callbacks a session hands to long steps; every one None here (no
    progress shown). The command line gives bars and log lines."""

    def clicks(self) -> Callable[[str, int, int], None] | None:
        """``(split, passes done, passes)`` of a click simulation."""
        return None

    def reading(self) -> Callable[[str, int, int], None] | None:
        """``(path, bytes read, bytes)`` of a dataset file being read."""
        return None


def check_relevant_documents(dataset: Dataset) -> None:
    """Refuse a dataset with a split that has no relevant document: its metrics (or, for
    train, the production ranker) would be undefined."""
    for split, queries in dataset.splits().items():
        if not queries.relevant(dataset.relevant_from).any():
            raise SessionError(
                f"the {split} split of {dataset.name!r} has no relevant document at relevant_from = "
                f"{dataset.relevant_from} (label counts {label_counts(queries.labels)}): its metrics would be "
                "undefined; give a lower --relevant-from, or other files"
            )


class Session:
    """A workspace and the rules that pick each stage's upstream artifacts.

    Parameters
    ----------
    workdir : path, optional
        The workspace root (default: $CLTR_WORKDIR, else ./cltr-work).
    say : callable, optional
        Receives each line the session has to say (a default artifact being made, a
        dataset being generated); default: logged at INFO by ``cltr.pipeline.session``.
    progress : SessionProgress, optional
        Progress callbacks for long steps (default: none).
    """

    def __init__(
        self,
        workdir: Path | str | None = None,
        *,
        say: Callable[[str], None] | None = None,
        progress: SessionProgress | None = None,
    ):
        self.workspace = Workspace(workdir)
        self.say = say or log.info
        self.progress = progress or SessionProgress()

    # -- datasets -----------------------------------------------------------------------
    def write_dataset(self, name: str, dataset: Dataset) -> dict:
        """Store a dataset whose every split has a relevant document; its record."""
        check_relevant_documents(dataset)
        summary = {split: describe_split(q, dataset.relevant_from) for split, q in dataset.splits().items()}
        return self.workspace.save_dataset(name, dataset, {"summary": summary})

    def dataset(self, name: str) -> tuple[Dataset, str]:
        """The prepared dataset and its fingerprint; the synthetic default is made on demand."""
        if not self.workspace.has_dataset(name):
            if name != DEFAULT_DATASET:
                interrupted = self.workspace.dataset_path(name).exists()
                raise SessionError(
                    f"dataset {name!r} is not prepared in {self.workspace.root}"
                    + (
                        f" (an interrupted `cltr prepare` left {self.workspace.dataset_path(name)} without its record)"
                        if interrupted
                        else ""
                    )
                    + f"; run `cltr prepare synthetic|letor|yahoo|svmlight ... --name {name}` first (see "
                    f"`cltr prepare --help`); prepared: {', '.join(self.workspace.datasets()) or 'none'}"
                )
            from cltr.data.synthetic import make_synthetic

            self.say(f"dataset {name!r} is not prepared yet: generating it with default settings")
            self.write_dataset(name, make_synthetic())
        dataset, record = self.workspace.load_dataset(name)
        return dataset, record["fingerprint"]

    def ensure_dataset(self, spec) -> None:
        """Generate an experiment spec's synthetic dataset when missing; other datasets must
        be prepared."""
        if self.workspace.has_dataset(spec.dataset):
            return
        if spec.dataset != DEFAULT_DATASET and not spec.synthetic:
            raise SessionError(
                f"dataset {spec.dataset!r} is not prepared in {self.workspace.root}; run `cltr prepare ...` first"
            )
        from cltr.data.synthetic import make_synthetic

        self.say(f"dataset {spec.dataset!r} is not prepared yet: generating it ({spec.synthetic or 'defaults'})")
        self.write_dataset(spec.dataset, make_synthetic(**spec.synthetic))

    def fold_datasets(self, base: str, folds: list[int]) -> list[str]:
        """The prepared dataset of each fold: ``base`` for its own fold, ``{base}-fold{K}`` for the
        others, prepared like ``base`` (its MQ2008/MQ2007 directories, relevance threshold and DCG
        log base) when missing, so that every fold follows one metric convention."""
        workspace = self.workspace
        if not workspace.has_dataset(base):
            raise SessionError(
                f"--folds runs the folds of a LETOR dataset prepared as {base!r}, which is not prepared in "
                f"{workspace.root}: run `cltr prepare letor --mq2008 DIR --name {base}` first (Fold 1); "
                f"the other folds are prepared like it"
            )
        record = workspace.dataset_record(base)
        meta = record.get("meta", {})
        if meta.get("source") != "LETOR 4.0":
            raise SessionError(
                f"--folds needs a LETOR 4.0 dataset (`cltr prepare letor`); {base!r} is "
                f"{meta.get('source', 'not one')}: give --dataset letor"
            )
        directories = meta.get("directories")
        names = []
        for fold in folds:
            name = base if meta.get("fold") == fold else f"{base}-fold{fold}"
            names.append(name)
            if workspace.has_dataset(name):
                other = workspace.dataset_record(name)
                found = (other.get("meta", {}).get("fold"), other["relevant_from"], other.get("dcg_base", DCG_BASE))
                wanted = (fold, record["relevant_from"], record.get("dcg_base", DCG_BASE))
                if found != wanted:
                    raise SessionError(
                        f"{name!r} holds fold {found[0]} with relevant = label >= {found[1]} and DCG log base "
                        f"{found[2]:g}, but the run needs fold {fold} prepared like {base!r} (label >= "
                        f"{wanted[1]}, base {wanted[2]:g}): re-prepare it with `cltr prepare letor --fold {fold} "
                        f"--name {name} ...`"
                    )
                continue
            if directories is None:
                raise SessionError(
                    f"the record of {base!r} does not say where its folds lie (prepared by an "
                    f"older cltr): prepare it again with `cltr prepare letor --mq2008 DIR`"
                )
            from cltr.data.loaders import load_letor

            self.say(f"preparing {name!r}: LETOR 4.0 Fold{fold} like {base!r} (from {directories['mq2008']})")
            loaded = load_letor(
                directories["mq2008"],
                mq2007_dir=directories["mq2007"],
                fold=fold,
                relevant_from=record["relevant_from"],
                progress=self.progress.reading(),
            )
            self.write_dataset(name, dataclasses.replace(loaded, dcg_base=record.get("dcg_base", DCG_BASE)))
        return names

    # -- which artifact ---------------------------------------------------------------------
    def upstream(self, dataset_name: str, stage: str, key: str | None, make_default: Callable[[], Artifact]):
        """The artifact of ``stage`` named by ``key``, or the current one, or a default one."""
        key = key or self.workspace.current(dataset_name).get(stage)
        if key is not None:
            artifact = self.workspace.load(dataset_name, stage, key)
            if artifact is None:
                raise SessionError(
                    f"no {stage} artifact {key!r} for dataset {dataset_name!r} in {self.workspace.root}; "
                    f"known: {', '.join(self.workspace.keys(dataset_name, stage)) or 'none'}"
                )
            return artifact
        if stage == "clicks":
            self.refuse_substitute(dataset_name)
        self.say(f"no {stage} artifact for dataset {dataset_name!r} yet: making one with default settings")
        return make_default()

    def production(self, dataset_name: str, key: str | None = None) -> Artifact:
        """The production ranker ``key``, else the current one, else one with default settings."""
        return self.upstream(dataset_name, "production", key, lambda: self.produce(dataset_name)[0])

    def clicks(self, dataset_name: str, key: str | None = None) -> Artifact:
        """The click log ``key``, else the current one, else one simulated with default settings
        (never in place of an imported log: ``refuse_substitute``)."""
        return self.upstream(dataset_name, "clicks", key, lambda: self.simulate(dataset_name)[0])

    def model(self, dataset_name: str, key: str | None = None) -> Artifact:
        """The model ``key``, else the current one, else svm-proprank with default settings."""
        return self.upstream(dataset_name, "models", key, lambda: self.train(dataset_name, "svm-proprank", {})[0])

    def refuse_substitute(self, dataset_name: str) -> None:
        """A dataset with an imported log but no complete click log: never simulate one in
        its place (the user's log would be silently replaced)."""
        current = self.workspace.current(dataset_name)
        imported = {split: current[f"imports/{split}"] for split in ("train", "vali") if f"imports/{split}" in current}
        if not imported:
            return
        if len(imported) == 2:
            raise SessionError(
                f"dataset {dataset_name!r} has imported train and vali logs but no click log combining them (an "
                f"interrupted import?): import one of them again with `cltr clicks import LOG --dataset "
                f"{dataset_name} --split vali`"
            )
        ((have, key),) = imported.items()
        missing = "vali" if have == "train" else "train"
        raise SessionError(
            f"dataset {dataset_name!r} has an imported {have} log ({key}) but no {missing} log, and cltr will not "
            f"simulate clicks in place of a log you imported: import the {missing} split's log with "
            f"`cltr clicks import LOG --dataset {dataset_name} --split {missing}` (the vali log serves model "
            f"selection), or name a simulated log with --clicks KEY"
        )

    def propensities(self, dataset_name: str, clicks: Artifact, which: str | None) -> Artifact | None:
        """The propensities a learner uses: None (the log's own), or a propensities artifact.

        ``which``: "logged", "estimated" (the current estimate of this click log), a key, or
        None (the log's own where it has them, else the current estimate)."""
        stored = ClicksArtifact.of(clicks)  # an import in chunks keeps its propensities with its counts
        has_own = not any(np.isnan(stored.split(split).logged_propensity).any() for split in SPLITS)
        if which == "logged" or (which is None and has_own):
            if not has_own:
                raise RequestError(
                    f"this click log has no propensity column; use --propensities estimated "
                    f"(after `cltr propensities estimate --dataset {dataset_name} --clicks "
                    f"{clicks.key}`)"
                )
            return None
        if which in (None, "estimated"):
            key = self.workspace.current(dataset_name).get("propensities")
            artifact = self.workspace.load(dataset_name, "propensities", key) if key else None
            if artifact is None or artifact.config["clicks"] != clicks.key:
                raise SessionError(
                    f"no propensities estimated for click log {clicks.key}: run "
                    f"`cltr propensities estimate --dataset {dataset_name} --clicks {clicks.key}` "
                    f"first"
                )
            return artifact
        artifact = self.workspace.load(dataset_name, "propensities", which)
        if artifact is None:
            raise SessionError(
                f"no propensities artifact {which!r} for dataset {dataset_name!r}; known: "
                f"{', '.join(self.workspace.keys(dataset_name, 'propensities')) or 'none'}"
            )
        return artifact

    def find_model(self, key: str, dataset: str | None = None) -> tuple[str, Artifact]:
        """A model artifact by key, in ``dataset`` or any prepared dataset; (dataset name, artifact)."""
        root = self.workspace.root
        names = [dataset] if dataset else []
        names += sorted(p.name for p in root.iterdir() if p.is_dir() and p.name != "datasets") if root.is_dir() else []
        for name in dict.fromkeys(names):
            artifact = self.workspace.load(name, "models", key)
            if artifact is not None:
                return name, artifact
        raise SessionError(f"no model {key!r} in {root}; `cltr train` prints each model's key")

    # -- the stages, each made current ------------------------------------------------------
    def produce(self, dataset_name: str, options: ProductionOptions | dict | None = None, *, seed: int = 0, **changes):
        """Train (or reuse) the production ranker and make it current; (artifact, reused).

        ``options``: its ``ProductionOptions`` (or their mapping; default: the defaults),
        ``changes``: options by name on top (``fraction=0.05``)."""
        settings = _options(ProductionOptions, options, changes, "produce")
        dataset, fingerprint = self.dataset(dataset_name)
        artifact, reused = production_stage(
            self.workspace, dataset_name, dataset, fingerprint, fraction=settings.fraction, C=settings.C, seed=seed
        )
        self.workspace.set_current(dataset_name, "production", artifact.key)
        return artifact, reused

    def simulate(
        self,
        dataset_name: str,
        options: SimulationOptions | dict | None = None,
        *,
        production_key: str | None = None,
        settings=None,
        seed: int = 0,
        **changes,
    ):
        """Simulate (or reuse) a click log on the production ranker's rankings and make it
        current; (artifact, reused).

        ``options``: its ``SimulationOptions`` (or their mapping; default: the defaults),
        ``changes``: options by name on top (``passes=10``); ``settings``: the click model's
        own (its settings type, or a mapping)."""
        simulation = _options(SimulationOptions, options, changes, "simulate")
        dataset, fingerprint = self.dataset(dataset_name)
        production = self.production(dataset_name, production_key)
        loggers: Artifact | list[Artifact] = production
        if simulation.rankers > 1:
            loggers = logging_rankers(
                self.workspace, dataset_name, dataset, fingerprint, production, simulation.rankers
            )
        passes = simulation.passes or default_passes(dataset_name, dataset.meta)
        artifact, reused = clicks_stage(
            self.workspace,
            dataset_name,
            dataset,
            loggers,
            settings or {},
            model=simulation.click_model,
            passes=passes,
            seed=seed,
            top_k=simulation.top_k,
            logging_temperature=simulation.logging_temperature,
            intervention=simulation.intervention,
            intervention_depth=simulation.intervention_depth,
            progress=self.progress.clicks(),
        )
        self.workspace.set_current(dataset_name, "clicks", artifact.key)
        return artifact, reused

    def train(
        self,
        dataset_name: str,
        method: str,
        options,
        training: TrainOptions | dict | None = None,
        *,
        clicks_key: str | None = None,
        seed: int = 0,
        progress=None,
        remember: bool = True,
        **changes,
    ):
        """Train (or reuse) a model; ``remember``: make it the current model.

        ``options``: the method's own; ``training``: how it is told the clicks, its
        ``TrainOptions`` (or their mapping; default: the defaults), ``changes``: those options
        by name on top (``clip="none"``, ``correction="cascade"``)."""
        told = train_options(training, changes)
        dataset, _ = self.dataset(dataset_name)
        clicks = self.clicks(dataset_name, clicks_key)
        propensity = self.propensities(dataset_name, clicks, told.propensities)
        artifact, reused = model_stage(
            self.workspace,
            dataset_name,
            dataset,
            clicks,
            method,
            options,
            seed=seed,
            propensity=propensity,
            clip=told.clip,
            correction=told.correction,
            progress=progress,
        )
        if remember:
            self.workspace.set_current(dataset_name, "models", artifact.key)
        return artifact, reused

    def evaluate(self, dataset_name: str, model_key: str | None = None, seed: int = 0):
        """Evaluate (or reuse the evaluation of) a model on the test split; (evaluation, model, reused)."""
        dataset, _ = self.dataset(dataset_name)
        model = self.model(dataset_name, model_key)
        clicks = self.workspace.load(dataset_name, "clicks", model.config["clicks"])
        if clicks is None:
            raise SessionError(
                f"model {model.key} was trained on click log {model.config['clicks']}, which is not "
                f"in the workspace {self.workspace.root} (or not complete)"
            )
        artifact, reused = evaluation_stage(self.workspace, dataset_name, dataset, model, clicks, seed=seed)
        return artifact, model, reused


# Peak memory per simulated click, the drawn (pass, document) pairs, their concatenation,
# the log's five columns and the saved artifact (measured on a 40-query dataset: 200,000
# passes, 6.05 M clicks, 257 MB above the 180 MB of 1,000 passes, 42 bytes a click; 86 from
# 1,000 to 20,000 passes, where fixed buffers weigh more).
_BYTES_PER_CLICK = 64
_PILOT_PASSES = 2


class _RankedBy:
    """A stand-in production ranker scoring a split by given values (the pilot's, before
    any ranker is trained)."""

    def __init__(self, values: np.ndarray):
        self.values = np.asarray(values, dtype=np.float64)

    def scores(self, X) -> np.ndarray:
        return self.values


def check_simulation_fits(
    dataset: Dataset, model: str, settings, *, passes: int, seed: int, top_k: int, logging_temperature: float
) -> None:
    """Refuse (``RequestError``), before any work, a number of passes whose click log cannot
    fit in memory (``--passes 100000`` ended in a MemoryError).

    Where even a click on every displayed document of every pass would fit, nothing more is
    done. Otherwise the clicks a pass makes are counted on a pilot of two passes of the click
    model, over the ideal ranking (labels as scores) and over a random one (no production
    ranker exists yet), the larger count kept; a logging temperature adds the ranks of every
    pass, (passes, n_docs) int32 per split.
    """
    from cltr.core.resources import exceeds_memory
    from cltr.pipeline.stages import simulate

    splits = {split: getattr(dataset, split) for split in ("train", "vali")}
    displayed = sum(int(np.minimum(np.diff(q.offsets), top_k).sum()) if top_k else q.n_docs for q in splits.values())
    ranks = 4.0 * passes * sum(q.n_docs for q in splits.values()) if logging_temperature else 0.0
    if exceeds_memory(float(passes) * displayed * _BYTES_PER_CLICK + ranks) is None:
        return
    per_pass = 0.0
    for split, queries in splits.items():
        relevant = queries.relevant(dataset.relevant_from)
        counts = [
            len(
                simulate(
                    queries,
                    relevant,
                    [_RankedBy(values)],
                    model,
                    settings,
                    passes=_PILOT_PASSES,
                    seed=seed,
                    split=split,
                    top_k=top_k or None,
                )[0]
            )
            for values in (queries.labels, np.zeros(queries.n_docs))
        ]
        per_pass += max(counts) / _PILOT_PASSES
    shortfall = exceeds_memory(passes * per_pass * _BYTES_PER_CLICK + ranks)
    if shortfall:
        raise RequestError(
            f"--passes {passes:,}: a log of about {passes * per_pass:,.0f} clicks (about {per_pass:,.0f} a pass on "
            f"train and vali, counted on a pilot of {_PILOT_PASSES} passes){' and every pass ranking' if ranks else ''}"
            f" would need {shortfall}; simulate fewer passes"
        )
