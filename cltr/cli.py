"""The ``cltr`` command line: click commands only; the work is done in ``pipeline``/``methods``.

Every stage reads what the stage before it wrote in the workspace. When an upstream
artifact is missing, the stage builds it with default settings and says so, so that
``cltr train svm-proprank`` works on a fresh machine.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path

import click

from cltr import __version__
from cltr.datasets import Dataset, default_passes, describe_split, load_dataset, load_letor, load_yahoo, make_synthetic, save_dataset
from cltr.methods import METHODS
from cltr.objectives import rank_weight
from cltr.pipeline import ClickSettings
from cltr.selection import parse_grid
from cltr.stages import clicks_stage, evaluation_stage, model_stage, production_stage
from cltr.workspace import Workspace, atomic_write

DEFAULT_DATASET = "synthetic"


# -- printing ----------------------------------------------------------------------------

def echo_table(rows: list[dict], columns: list[str] | None = None) -> None:
    """Print rows as an aligned plain-text table."""
    if not rows:
        return
    columns = columns or list(rows[0])

    def cell(value):
        if isinstance(value, float):
            return f"{value:.4g}" if abs(value) < 1e4 else f"{value:.3e}"
        return str(value)

    text = [[cell(row.get(c, "")) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in text)) for i, c in enumerate(columns)]
    click.echo("  ".join(c.rjust(w) for c, w in zip(columns, widths)))
    for r in text:
        click.echo("  ".join(v.rjust(w) for v, w in zip(r, widths)))


def progress_bar(total: int, description: str, unit: str = "pass"):
    """A tqdm bar on stderr (with its ETA) that stays silent when stderr is not a terminal."""
    from tqdm import tqdm

    return tqdm(total=total, desc=description, unit=unit, leave=False, file=sys.stderr,
                disable=None)


# -- the session: workspace plus the resolution of upstream artifacts -------------------

class Session:
    def __init__(self, workdir: Path):
        self.workspace = Workspace(workdir)

    # datasets
    def write_dataset(self, name: str, dataset: Dataset) -> dict:
        path = self.workspace.dataset_path(name)
        save_dataset(dataset, path)
        summary = {split: describe_split(q, dataset.relevant_from) for split, q in dataset.splits().items()}
        record = {"name": name, "fingerprint": _sha256(path), "relevant_from": dataset.relevant_from,
                  "summary": summary, "meta": dataset.meta, "cltr_version": __version__,
                  "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        with atomic_write(path.with_suffix(".json"), "w") as stream_:
            json.dump(record, stream_, indent=2, sort_keys=True, default=str)
        return record

    def dataset(self, name: str) -> tuple[Dataset, str]:
        """The prepared dataset and its fingerprint; the synthetic default is made on demand."""
        path = self.workspace.dataset_path(name)
        if not path.exists():
            if name != DEFAULT_DATASET:
                raise click.ClickException(
                    f"dataset {name!r} is not prepared in {self.workspace.root}; run "
                    f"`cltr prepare {name} ...` first (see `cltr prepare --help`)")
            click.echo(f"dataset {name!r} is not prepared yet: generating it with default settings")
            self.write_dataset(name, make_synthetic())
        record = json.loads(path.with_suffix(".json").read_text())
        return load_dataset(path), record["fingerprint"]

    def upstream(self, dataset_name: str, stage: str, key: str | None, make_default):
        """The artifact of ``stage`` named by ``key``, or the current one, or a default one."""
        key = key or self.workspace.current(dataset_name).get(stage)
        if key is not None:
            artifact = self.workspace.load(dataset_name, stage, key)
            if artifact is None:
                raise click.ClickException(
                    f"no {stage} artifact {key!r} for dataset {dataset_name!r} in {self.workspace.root}; "
                    f"known: {', '.join(self.workspace.keys(dataset_name, stage)) or 'none'}")
            return artifact
        click.echo(f"no {stage} artifact for dataset {dataset_name!r} yet: making one with default settings")
        return make_default()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream_:
        for block in iter(lambda: stream_.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _errors_as_usage(function):
    """Turn the library's ValueErrors (bad input) into clean one-line CLI errors."""
    import functools

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except (ValueError, FileNotFoundError) as error:
            raise click.ClickException(str(error)) from error

    return wrapper


# -- commands ------------------------------------------------------------------------

@click.group(context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path), envvar="CLTR_WORKDIR",
              default="cltr-work", help="Workspace directory holding every artifact ($CLTR_WORKDIR).")
@click.version_option(__version__, prog_name="cltr")
@click.pass_context
def main(ctx: click.Context, workdir: Path) -> None:
    """Counterfactual learning-to-rank from simulated clicks (Agarwal et al., SIGIR 2019).

    \b
    The pipeline, each stage reusing what the one before wrote in the workspace:
      cltr prepare   synthetic | letor | yahoo
      cltr produce   the production ranker (Ranking SVM on 1% of training queries)
      cltr simulate  position-biased clicks on its rankings
      cltr train     svm-rank | svm-proprank | svm-propdcg | deep-propdcg | lambdarank |
                     tree-propdcg | skyline
                     (see `cltr train --help`)
      cltr evaluate  Avg DCG, Avg Rank, nDCG@10 on the test set
      cltr figures   the paper's Table 2 and figures (`cltr figures --help`)
    `cltr run` does all of it on the embedded synthetic dataset.
    """
    ctx.obj = Session(workdir)


dataset_option = click.option("--dataset", default=DEFAULT_DATASET,
                              help="Name of a prepared dataset in the workspace.")
seed_option = click.option("--seed", type=int, default=0, help="Seed of every random draw of this stage.")


@main.group()
def prepare() -> None:
    """Load or generate a dataset and store it, checked, in the workspace."""


def _report_prepared(record: dict) -> None:
    click.echo(f"prepared {record['name']!r} (relevant = label >= {record['relevant_from']})")
    rows = [{"split": split, **values} for split, values in record["summary"].items()]
    echo_table(rows)
    for note in record["meta"].get("notes", []):
        click.echo(f"note: {note}")


@prepare.command("synthetic")
@click.option("--queries", "n_queries", type=click.IntRange(min=3), default=None,
              help="Number of queries over all splits [default: the generator's].")
@click.option("--features", "n_features", type=click.IntRange(min=1), default=None,
              help="Number of features [default: the generator's, LETOR's 46].")
@click.option("--seed", type=int, default=0, help="Seed of the generator.")
@click.option("--name", default=DEFAULT_DATASET, help="Name to store it under.")
@click.pass_obj
@_errors_as_usage
def prepare_synthetic(session: Session, n_queries, n_features, seed, name) -> None:
    """The embedded default: a seeded LETOR-shaped dataset with partly non-linear relevance."""
    options = {k: v for k, v in {"n_queries": n_queries, "n_features": n_features}.items() if v is not None}
    _report_prepared(session.write_dataset(name, make_synthetic(seed=seed, **options)))


@prepare.command("letor")
@click.option("--mq2008", type=click.Path(exists=True, file_okay=False, path_type=Path), required=True,
              help="MQ2008 directory holding Fold1..Fold5 (plain, .gz, .bz2 or .xz files).")
@click.option("--mq2007", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="MQ2007 directory; its FoldK train split is added to the training set.")
@click.option("--fold", type=click.IntRange(1, 5), default=1, help="Which fold.")
@click.option("--relevant-from", type=int, default=1, help="Labels at least this are relevant.")
@click.option("--name", default="letor", help="Name to store it under.")
@click.pass_obj
@_errors_as_usage
def prepare_letor(session: Session, mq2008, mq2007, fold, relevant_from, name) -> None:
    """LETOR 4.0 as in the paper: MQ2007+MQ2008 train, MQ2008 vali and test."""
    dataset = load_letor(mq2008, mq2007_dir=mq2007, fold=fold, relevant_from=relevant_from)
    _report_prepared(session.write_dataset(name, dataset))


@prepare.command("yahoo")
@click.option("--root", type=click.Path(exists=True, file_okay=False, path_type=Path), required=True,
              help="Directory holding set1.train.txt, set1.valid.txt, set1.test.txt.")
@click.option("--relevant-from", type=int, default=3, help="Labels at least this are relevant.")
@click.option("--name", default="yahoo", help="Name to store it under.")
@click.pass_obj
@_errors_as_usage
def prepare_yahoo(session: Session, root, relevant_from, name) -> None:
    """Yahoo! Learning to Rank Challenge, set 1 (700 features, labels 0-4)."""
    _report_prepared(session.write_dataset(name, load_yahoo(root, relevant_from=relevant_from)))


def _produce(session: Session, dataset_name: str, *, fraction=0.01, C=1.0, seed=0):
    dataset, fingerprint = session.dataset(dataset_name)
    artifact, reused = production_stage(session.workspace, dataset_name, dataset, fingerprint,
                                        fraction=fraction, C=C, seed=seed)
    session.workspace.set_current(dataset_name, "production", artifact.key)
    return artifact, reused


@main.command("produce")
@dataset_option
@click.option("--fraction", type=click.FloatRange(0, 1, min_open=True), default=0.01,
              help="Share of training queries with labels the production ranker sees.")
@click.option("-C", "C", type=click.FloatRange(0, min_open=True), default=1.0,
              help="Regularisation constant of the production Ranking SVM.")
@seed_option
@click.pass_obj
@_errors_as_usage
def produce_command(session: Session, dataset, fraction, C, seed) -> None:
    """Train the production ranker: a Ranking SVM on a seeded FRACTION of the training queries."""
    artifact, reused = _produce(session, dataset, fraction=fraction, C=C, seed=seed)
    info = artifact.info
    click.echo(f"production ranker {artifact.key}{' (reused)' if reused else ''}: "
               f"{info['n_queries']} training queries, {info['n_relevant']} relevant documents, "
               f"solver gap {info['gap']:.1e} after {info['iterations']} iterations")
    click.echo(f"test Avg DCG {info['test']['avg_dcg']:.4f}  Avg Rank {info['test']['avg_rank']:.2f}  "
               f"nDCG@10 {info['test']['ndcg@10']:.4f}")


def _simulate(session: Session, dataset_name: str, *, production_key=None, settings: ClickSettings | None = None,
              seed=0):
    dataset, _ = session.dataset(dataset_name)
    production = session.upstream(dataset_name, "production", production_key,
                                  lambda: _produce(session, dataset_name)[0])
    settings = settings or ClickSettings(passes=default_passes(dataset_name, dataset.meta))
    bars = {}

    def progress(split, done, total):
        bar = bars.get(split) or bars.setdefault(split, progress_bar(total, f"clicks on {split}"))
        bar.update(done - bar.n)
        if done == total:
            bar.close()

    artifact, reused = clicks_stage(session.workspace, dataset_name, dataset, production, settings, seed=seed,
                                    progress=progress)
    session.workspace.set_current(dataset_name, "clicks", artifact.key)
    return artifact, reused


@main.command("simulate")
@dataset_option
@click.option("--eta", type=click.FloatRange(min=0), default=1.0,
              help="Severity of position bias: rank r is observed with probability (1/r)^eta.")
@click.option("--eps-neg", type=click.FloatRange(0, 1), default=0.1,
              help="Click probability of an observed irrelevant document (noise).")
@click.option("--eps-pos", type=click.FloatRange(0, 1), default=1.0,
              help="Click probability of an observed relevant document.")
@click.option("--passes", type=click.IntRange(min=1), default=None,
              help="Sessions per query [default: 10 for Yahoo, 100 otherwise].")
@click.option("--eta-model", type=click.FloatRange(min=0), default=None,
              help="The eta of the logged propensities, if it differs from the true one (misspecification).")
@click.option("--production", "production_key", default=None,
              help="Key of the production ranker to present [default: the last produced].")
@seed_option
@click.pass_obj
@_errors_as_usage
def simulate_command(session: Session, dataset, eta, eps_neg, eps_pos, passes, eta_model, production_key,
                     seed) -> None:
    """Simulate position-based-model clicks on the production ranker's rankings of train and vali."""
    dataset_obj, _ = session.dataset(dataset)
    settings = ClickSettings(eta=eta, eps_pos=eps_pos, eps_neg=eps_neg,
                             passes=passes or default_passes(dataset, dataset_obj.meta), eta_model=eta_model)
    artifact, reused = _simulate(session, dataset, production_key=production_key, settings=settings, seed=seed)
    click.echo(f"click log {artifact.key}{' (reused)' if reused else ''} "
               f"(production ranker {artifact.config['production']}, {settings.passes} passes)")
    echo_table([{"split": split, **artifact.info[split]} for split in ("train", "vali")],
               ["split", "sessions", "clicks", "irrelevant_click_share", "clicks_per_query",
                "mean_propensity", "min_propensity"])


def _train(session: Session, dataset_name: str, method: str, options: dict, *, clicks_key=None, seed=0,
           verbose=True, progress=None):
    dataset, _ = session.dataset(dataset_name)
    clicks = session.upstream(dataset_name, "clicks", clicks_key, lambda: _simulate(session, dataset_name)[0])

    def report(row):
        if verbose:
            echo_table([row], [c for c in row if c not in ("lower_bound", "solver_seconds", "ccp_trace", "trace")])

    artifact, reused = model_stage(session.workspace, dataset_name, dataset, clicks, method, options, seed=seed,
                                   progress=progress or report)
    session.workspace.set_current(dataset_name, "models", artifact.key)
    return artifact, reused


@main.group("train")
def train_group() -> None:
    """Train a method on the training clicks; hyperparameters not given are chosen on
    validation clicks (SNIPS Avg DCG), never on test labels.

    \b
    svm-rank      linear Ranking SVM on clicks, every click weighted 1 (biased)
    svm-proprank  propensity-weighted Ranking SVM: unbiased bound on Avg Rank
    svm-propdcg   the DCG (or --metric) bound by the convex-concave procedure
    deep-propdcg  a neural network (MLP) on the same bound, by Adam over query batches
    lambdarank    LightGBM LambdaRank on click labels (clicked at least once = relevant)
    tree-propdcg  LightGBM trees on the propensity-weighted DCG bound (custom objective)
    skyline       Ranking SVM on the labelled training set: an oracle reference, C
                  chosen on validation labels
    Each method's own options: `cltr train METHOD --help`.
    """


def method_command(name: str, **kwargs):
    """A `cltr train NAME` subcommand with the options every method shares."""
    def decorate(function):
        function = click.option("--clicks", "clicks_key", default=None,
                                help="Key of the click log [default: the last simulated].")(function)
        function = seed_option(function)
        function = dataset_option(function)
        function = _errors_as_usage(function)
        function = click.pass_obj(function)
        return train_group.command(name, **kwargs)(function)
    return decorate


def svm_options(function):
    """-C, --grid and --tol of every linear SVM method."""
    function = click.option("--tol", type=click.FloatRange(0, min_open=True), default=1e-3,
                            help="Relative duality gap the SVM solver must certify.")(function)
    function = click.option("--grid", default=None,
                            help="C grid as 'a,b,c' or 'low:high:count' (log spaced) "
                                 "[default: 1e-3 ... 1e3, 7 values].")(function)
    return click.option("-C", "C", type=click.FloatRange(0, min_open=True), default=None,
                        help="Regularisation constant; without it, C is chosen on validation clicks "
                             "over --grid.")(function)


def _svm_options(C, grid, tol) -> dict:
    return {"C": C, "grid": parse_grid(grid) if grid else None, "tol": tol}


def _describe_chosen(info: dict) -> str:
    return ", ".join(f"{k} = {v:g}" if isinstance(v, float) else f"{k} = {v}"
                     for k, v in info.get("chosen", {}).items())


def _train_and_report(session: Session, dataset: str, method: str, options: dict, clicks_key, seed, *,
                      progress=None) -> dict:
    """Train (or reuse), print the model's key and chosen hyperparameters; return its info."""
    artifact, reused = _train(session, dataset, method, options, clicks_key=clicks_key, seed=seed,
                              progress=progress)
    info = artifact.info
    click.echo(f"model {artifact.key}{' (reused)' if reused else ''}: {method}, {_describe_chosen(info)}, "
               f"validation SNIPS Avg DCG {info['validation_snips_avg_dcg']:.4f}")
    return info


@method_command("svm-rank", short_help="Ranking SVM on clicks, every click weighted 1 (biased).")
@svm_options
def train_svm_rank(session: Session, dataset, C, grid, tol, clicks_key, seed) -> None:
    """Naive Ranking SVM on clicks: every click weighted 1, so it learns the position bias too."""
    _train_and_report(session, dataset, "svm-rank", _svm_options(C, grid, tol), clicks_key, seed)


@method_command("svm-proprank", short_help="Propensity-weighted Ranking SVM (Avg Rank bound).")
@svm_options
def train_svm_proprank(session: Session, dataset, C, grid, tol, clicks_key, seed) -> None:
    """SVM PropRank: clicks weighted by 1/propensity, an unbiased bound on Avg Rank
    (the same as `svm-propdcg --metric avgrank`, which is a single solve)."""
    _train_and_report(session, dataset, "svm-proprank", _svm_options(C, grid, tol), clicks_key, seed)


@method_command("svm-propdcg", short_help="DCG (or --metric) bound by the convex-concave procedure.")
@svm_options
@click.option("--metric", default="dcg",
              help="Rank weight of the bound: dcg, rbp:P (e.g. rbp:0.8) or avgrank.")
@click.option("--max-ccp-iter", type=click.IntRange(min=1), default=20, help="Most CCP steps.")
@click.option("--ccp-tol", type=click.FloatRange(0, min_open=True), default=1e-4,
              help="Stop when the true objective improves by less than this, relatively.")
@click.option("--init", type=click.Choice(["zero", "proprank"]), default="zero",
              help="The CCP's starting point: w = 0 or the SVM PropRank solution.")
def train_svm_propdcg(session: Session, dataset, C, grid, tol, metric, max_ccp_iter, ccp_tol, init,
                      clicks_key, seed) -> None:
    """SVM PropDCG (paper Sec. 4.1): the propensity-weighted DCG bound (or --metric's),
    minimised by the convex-concave procedure over weighted Ranking SVMs."""
    rank_weight(metric)  # a bad --metric fails before any work
    options = {**_svm_options(C, grid, tol), "metric": metric, "max_ccp_iter": max_ccp_iter,
               "ccp_tol": ccp_tol, "init": init}
    info = _train_and_report(session, dataset, "svm-propdcg", options, clicks_key, seed)
    chosen = next(row for row in info["selection"] if row["C"] == info["C"])
    click.echo(f"CCP trace at C = {info['C']:g}:")
    echo_table(chosen["ccp_trace"], ["iteration", "objective", "surrogate", "train_snips_avg_dcg",
                                     "inner_iterations", "inner_gap", "seconds"])


def _int_list(values) -> list[int] | None:
    """--hidden given repeatedly and/or as comma lists: '200' '100' or '200,100'."""
    sizes = []
    for value in values:
        for part in str(value).split(","):
            if part.strip():
                try:
                    sizes.append(int(part))
                except ValueError:
                    raise click.BadParameter(f"expected whole numbers such as 200 or 200,100, got {value!r}",
                                             param_hint="--hidden") from None
    if any(size < 1 for size in sizes):
        raise click.BadParameter(f"layer sizes must be >= 1, got {sizes}", param_hint="--hidden")
    return sizes or None


@method_command("deep-propdcg", short_help="An MLP on the propensity-weighted DCG bound (Adam, query batches).")
@click.option("--preset", type=click.Choice(["default", "paper"]), default="default",
              help="Settings to start from: 'paper' is Sec. 5.4's (lr 1e-6/1e-7/1e-8, 750 epochs); "
                   "'default' is tuned on validation clicks (README, 'Deep PropDCG').")
@click.option("--hidden", multiple=True,
              help="Hidden layer sizes: repeat the option or give a comma list (200,100) [default: 200].")
@click.option("--activation", type=click.Choice(["sigmoid", "tanh", "relu", "linear"]), default=None,
              help="Hidden activation [default: sigmoid].")
@click.option("--epochs", type=click.IntRange(min=1), default=None,
              help="Epochs per learning rate; the best epoch on validation clicks is kept [default: preset's].")
@click.option("--lr", type=click.FloatRange(0, min_open=True), default=None,
              help="Base learning rate; without it the preset's rates are tried and the best kept.")
@click.option("--batch-docs", type=click.IntRange(min=1), default=None,
              help="About this many documents per minibatch of whole queries [default: 1000].")
@click.option("--weight-decay", type=click.FloatRange(min=0), default=None,
              help="Weight decay coefficient [default: 1e-6].")
@click.option("--decay", type=click.Choice(["l2", "decoupled"]), default=None,
              help="L2 (added to the gradient, as the paper's torch Adam) or decoupled (AdamW).")
@click.option("--metric", default=None, help="Rank weight of the bound: dcg, rbp:P or avgrank [default: dcg].")
@click.option("--dtype", type=click.Choice(["float32", "float64"]), default=None,
              help="Precision of the network [default: preset's].")
@click.option("--patience", type=click.IntRange(min=1), default=None,
              help="Stop a learning rate after this many epochs without a better validation estimate.")
def train_deep_propdcg(session: Session, dataset, preset, hidden, activation, epochs, lr, batch_docs,
                       weight_decay, decay, metric, dtype, patience, clicks_key, seed) -> None:
    """Deep PropDCG (paper Sec. 4.2): a multilayer perceptron trained on the propensity-weighted
    DCG bound (or --metric's) by Adam over minibatches of whole queries; the learning rate
    and epoch are chosen by SNIPS Avg DCG on validation clicks."""
    from cltr.deep import deep_settings

    given = {"hidden": _int_list(hidden), "activation": activation, "epochs": epochs, "lr": lr,
             "batch_docs": batch_docs, "weight_decay": weight_decay, "decay": decay, "metric": metric,
             "dtype": dtype, "patience": patience}
    options = {"preset": preset, **{k: v for k, v in given.items() if v is not None}}
    settings = deep_settings(**options)  # bad settings fail before any work
    with progress_bar(settings.epochs * len(settings.learning_rates), "deep-propdcg", unit="epoch") as bar:
        def progress(row):
            if row.get("event") == "epoch":
                bar.update(1)
                bar.set_postfix(lr=f"{row['learning_rate']:g}", loss=f"{row['train_loss']:.4g}",
                                vali=f"{row['validation_snips_avg_dcg']:.4f}")

        info = _train_and_report(session, dataset, "deep-propdcg", options, clicks_key, seed, progress=progress)
    echo_table(info["selection"], ["lr", "epoch", "epochs_run", "validation_snips_avg_dcg", "train_loss",
                                   "seconds"])


def tree_options(function):
    """Options shared by the LightGBM methods (lambdarank, tree-propdcg)."""
    for decorator in reversed([
        click.option("--learning-rate", type=click.FloatRange(0, min_open=True), default=None,
                     help="Fix the learning rate [default: chosen over 0.001, 0.01, 0.1 on validation clicks]."),
        click.option("--num-leaves", type=click.IntRange(min=2), default=None,
                     help="Fix the leaves per tree [default: chosen over 2, 4, ..., 256 on validation clicks, "
                          "up to the first count the training rows cannot fill, 20 rows a leaf]."),
        click.option("--n-estimators", type=click.IntRange(min=1), default=None,
                     help="Grow exactly this many trees (no early stopping) [default: early stopping on "
                          "validation clicks, at most --max-rounds]."),
        click.option("--threads", type=click.IntRange(min=1), default=1,
                     help="LightGBM threads (part of the model's identity: deterministic per seed and count)."),
        click.option("--max-rounds", type=click.IntRange(min=1), default=1000,
                     help="Most trees with early stopping (and at most --shrinkage-budget / learning rate)."),
        click.option("--shrinkage-budget", type=click.FloatRange(0, min_open=True), default=20.0,
                     help="Early stopping: grow at most this / learning rate trees (200 at 0.1)."),
        click.option("--patience", type=click.IntRange(min=1), default=50,
                     help="Early stopping: stop after this many trees without a better validation estimate."),
        click.option("--eval-every", type=click.IntRange(min=1), default=5,
                     help="Early stopping: evaluate the validation estimate every this many trees."),
    ]):
        function = decorator(function)
    return function


def _tree_options(learning_rate, num_leaves, n_estimators, threads, max_rounds, shrinkage_budget, patience,
                  eval_every) -> dict:
    return {"learning_rate": learning_rate, "num_leaves": num_leaves, "n_estimators": n_estimators,
            "threads": threads, "max_rounds": max_rounds, "shrinkage_budget": shrinkage_budget,
            "patience": patience, "eval_every": eval_every}


@method_command("lambdarank", short_help="LightGBM LambdaRank on click labels (trees, early stopping).")
@tree_options
@click.option("--labels", type=click.Choice(["documents", "sessions"]), default="documents",
              help="documents: one group per query, relevant iff clicked at least once; sessions: "
                   "one group per session with a click, relevant iff clicked in it.")
def train_lambdarank_command(session: Session, dataset, learning_rate, num_leaves, n_estimators, threads,
                             max_rounds, shrinkage_budget, patience, eval_every, labels, clicks_key, seed) -> None:
    """LambdaRank (LightGBM) with clicks as labels, as the paper's baseline: with --labels
    documents a document is relevant iff clicked at least once in the log; queries (or
    sessions) without a click are left out, having no pair to order. Learning rate and
    leaves are chosen, and the number of trees early-stopped, by SNIPS Avg DCG on
    validation clicks; no split uses more than half of the features."""
    options = {**_tree_options(learning_rate, num_leaves, n_estimators, threads, max_rounds, shrinkage_budget,
                               patience, eval_every), "labels": labels}
    _train_and_report(session, dataset, "lambdarank", options, clicks_key, seed)


@method_command("tree-propdcg", short_help="LightGBM on the propensity-weighted DCG bound (custom objective).")
@tree_options
@click.option("--metric", default="dcg",
              help="Rank weight of the bound: dcg, rbp:P (e.g. rbp:0.8) or avgrank.")
@click.option("--hessian", type=click.Choice(["pairs", "constant"]), default="pairs",
              help="Curvature given to LightGBM: per document, its active pairs' lambda'/q summed "
                   "(pairs), or one constant.")
def train_tree_propdcg_command(session: Session, dataset, learning_rate, num_leaves, n_estimators, threads,
                               max_rounds, shrinkage_budget, patience, eval_every, metric, hessian, clicks_key,
                               seed) -> None:
    """Tree PropDCG: gradient-boosted trees (LightGBM) fitted to the propensity-weighted
    hinge bound R(f) on DCG (or --metric), the paper's objective, through a custom
    objective whose gradient is dR/dscores. Learning rate and leaves are chosen, and the
    number of trees early-stopped, by SNIPS Avg DCG on validation clicks, as for lambdarank."""
    rank_weight(metric)  # a bad --metric fails before any work
    options = {**_tree_options(learning_rate, num_leaves, n_estimators, threads, max_rounds, shrinkage_budget,
                               patience, eval_every), "metric": metric, "hessian": hessian}
    _train_and_report(session, dataset, "tree-propdcg", options, clicks_key, seed)


@method_command("skyline", short_help="Oracle: Ranking SVM on the labelled training set (C on validation labels).")
@click.option("-C", "C", type=click.FloatRange(0, min_open=True), default=None,
              help="Regularisation constant; without it, C is chosen over --grid by Avg DCG on the "
                   "validation split's labels.")
@click.option("--grid", default=None,
              help="C grid as 'a,b,c' or 'low:high:count' (log spaced) [default: 1e-3 ... 1e3, 7 values].")
@click.option("--tol", type=click.FloatRange(0, min_open=True), default=1e-3,
              help="Relative duality gap the SVM solver must certify.")
def train_skyline(session: Session, dataset, C, grid, tol, clicks_key, seed) -> None:
    """Skyline: the linear Ranking SVM on the full-information (binarized, labelled) training
    set, an oracle reference line for the click learners. Its C is chosen on the validation
    split's *labels* (Avg DCG) - the one place labels are used for selection; the test set
    is never looked at."""
    _train_and_report(session, dataset, "skyline", _svm_options(C, grid, tol), clicks_key, seed)


def _evaluate(session: Session, dataset_name: str, model_key=None, seed=0):
    dataset, _ = session.dataset(dataset_name)
    model = session.upstream(dataset_name, "models", model_key,
                             lambda: _train(session, dataset_name, "svm-proprank", {})[0])
    clicks = session.workspace.load(dataset_name, "clicks", model.config["clicks"])
    artifact, reused = evaluation_stage(session.workspace, dataset_name, dataset, model, clicks, seed=seed)
    return artifact, model, reused


@main.command("evaluate")
@dataset_option
@click.option("--model", "model_key", default=None, help="Key of the model [default: the last trained].")
@click.option("--production", "production", is_flag=True,
              help="Evaluate the production ranker (the last produced) instead of a trained model.")
@seed_option
@click.pass_obj
@_errors_as_usage
def evaluate_command(session: Session, dataset, model_key, production, seed) -> None:
    """Avg DCG, Avg Rank and nDCG@10 on the test set, and the SNIPS Avg DCG on validation clicks."""
    if production:
        artifact = session.upstream(dataset, "production", None, lambda: _produce(session, dataset)[0])
        test = artifact.info["test"]
        click.echo(f"production ranker {artifact.key} (C = {artifact.config['C']:g}, "
                   f"{artifact.info['n_queries']} labelled training queries) on {dataset!r}:")
        echo_table([{"test Avg DCG": test["avg_dcg"], "test Avg Rank": test["avg_rank"],
                     "test nDCG@10": test["ndcg@10"]}])
        return
    artifact, model, _ = _evaluate(session, dataset, model_key, seed)
    info = artifact.info
    click.echo(f"model {model.key} ({info['method']}, {_describe_chosen(model.info)}) on {dataset!r}:")
    echo_table([{"test Avg DCG": info["avg_dcg"], "test Avg Rank": info["avg_rank"],
                 "test nDCG@10": info["ndcg@10"], "vali SNIPS Avg DCG": info["validation_snips_avg_dcg"]}])


@main.command("run")
@dataset_option
@click.option("--method", "methods", multiple=True, type=click.Choice(sorted(METHODS)),
              default=("svm-rank", "svm-proprank", "svm-propdcg"), help="Methods to train (repeat the option).")
@seed_option
@click.pass_obj
@_errors_as_usage
def run_command(session: Session, dataset, methods, seed) -> None:
    """The whole path with default settings: produce, simulate, train, evaluate."""
    start = time.perf_counter()
    production, _ = _produce(session, dataset, seed=seed)
    clicks, _ = _simulate(session, dataset, production_key=production.key, seed=seed)
    rows = [{"method": "production", "chosen": f"C = {production.config['C']:g}", **production.info["test"]}]
    for method in methods:
        where = "labels (an oracle reference)" if method == "skyline" else "clicks"
        click.echo(f"training {method} (hyperparameters selected on validation {where})")
        model, _ = _train(session, dataset, method, {}, clicks_key=clicks.key, seed=seed, verbose=False)
        evaluation, _, _ = _evaluate(session, dataset, model.key, seed)
        rows.append({"method": method, "chosen": _describe_chosen(model.info),
                     **{k: evaluation.info[k] for k in ("avg_dcg", "avg_rank", "ndcg@10")}})
    click.echo(f"test metrics on {dataset!r} ({clicks.info['train']['clicks']} training clicks, "
               f"{time.perf_counter() - start:.1f} s):")
    echo_table(rows, ["method", "chosen", "avg_dcg", "avg_rank", "ndcg@10"])


# -- figures ---------------------------------------------------------------------------


@main.command("figures")
@click.argument("name")
@click.option("--dataset", default=None,
              help="Prepared dataset to run on [default: the spec's, the embedded synthetic one].")
@click.option("--reps", type=click.IntRange(min=1), default=None, help="Repetitions [default: the spec's].")
@click.option("--n-jobs", type=click.IntRange(min=1), default=None,
              help="Tasks run in parallel [default: one per CPU core]; results do not depend on it.")
@click.option("--backend", type=click.Choice(["loky", "dask"]), default="loky",
              help="Local processes (loky) or a dask.distributed cluster (pip install 'cltr[dask]').")
@click.option("--scheduler", default=None,
              help="dask scheduler address, e.g. tcp://host:8786 [default: a local cluster of --n-jobs "
                   "workers]. Workers must see the same --workdir.")
@click.option("--quick", is_flag=True, help="The spec's reduced version (fewer repetitions and points).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default="results",
              help="Directory for NAME.csv, NAME.md, NAME.tex, NAME.png and NAME.pdf.")
@click.option("--specs", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Directory of experiment specs [default: the project's experiments/].")
@click.pass_obj
@_errors_as_usage
def figures_command(session: Session, name, dataset, reps, n_jobs, backend, scheduler, quick, out, specs) -> None:
    """Regenerate a table or figure of the paper: NAME is a spec in experiments/ or `all`.

    \b
    table2          Table 2: the five methods, Tree PropDCG, production and skyline
    learning-curve  Figure 1: Avg DCG against training clicks
    rank-curve      Figure 2: Avg Rank against training clicks
    eta             Figure 3: Avg DCG as position bias grows
    noise           Figure 4: Avg DCG as click noise grows
    misspec         Figure 5: Avg DCG under misspecified propensities
    ccp             Figure 6: CCP objective and training DCG per iteration
    deep            Figure 7: Deep PropDCG against SVM PropDCG
    smoke           a tiny version of everything (CI)
    Every (point, repetition) is a cached task: an interrupted run resumes where it stopped.
    """
    from cltr.experiments import SPEC_DIR, load_spec, run_experiment, spec_names
    from cltr.report import table_rows, write_outputs

    directory = specs or SPEC_DIR
    n_jobs = n_jobs or os.cpu_count() or 1
    names = [n for n in spec_names(directory) if n != "smoke"] if name == "all" else [name]
    for spec_name in names:
        spec = load_spec(spec_name, directory).resolved(dataset=dataset, reps=reps, quick=quick)
        _ensure_dataset(session, spec)
        click.echo(f"{spec.name} ({spec.artifact}) on {spec.dataset!r}: {spec.reps} repetition(s)")
        start = time.perf_counter()
        with progress_bar(0, spec.name, unit="task") as bar:
            def progress(done, total):
                bar.total = total
                bar.update(done - bar.n)

            frame, counts = run_experiment(spec, session.workspace.root, n_jobs=n_jobs, backend=backend,
                                           scheduler=scheduler, progress=progress)
        paths = write_outputs(frame, spec, out)
        click.echo(f"{counts['tasks']} tasks ({counts['computed']} computed, {counts['reused']} reused) in "
                   f"{time.perf_counter() - start:.1f} s; wrote {', '.join(str(p) for p in paths.values())}")
        echo_table(table_rows(frame, spec))


def _ensure_dataset(session: Session, spec) -> None:
    """Generate the spec's synthetic dataset when missing; other datasets must be prepared."""
    if session.workspace.has_dataset(spec.dataset):
        return
    if spec.dataset != DEFAULT_DATASET and not spec.synthetic:
        raise click.ClickException(
            f"dataset {spec.dataset!r} is not prepared in {session.workspace.root}; run `cltr prepare ...` first")
    click.echo(f"dataset {spec.dataset!r} is not prepared yet: generating it ({spec.synthetic or 'defaults'})")
    session.write_dataset(spec.dataset, make_synthetic(**spec.synthetic))
