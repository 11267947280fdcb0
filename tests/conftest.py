"""Fixtures and helpers shared by the whole suite (the one conftest; DESIGN.md, "Tests").

- ``invoke(*args, workdir=None, expect=0)``: the command line through click's CliRunner,
  returning its Result (the exit code checked against ``expect``);
- ``letor4`` / ``mq2008``: the real LETOR 4.0 data in ../shared/data/letor4, or a skip;
- ``synthetic_dataset``: the embedded default synthetic dataset (300 queries, seed 0);
- ``make_training_data``: production ranker, train/vali clicks and ``TrainingData`` on a
  dataset, drawn as the pipeline's stages draw them; ``noise_free_clicks`` and
  ``biased_clicks`` are two of them on ``synthetic_dataset``, computed once per session;
  ``avg_dcg_of``: test-set Avg DCG with the pipeline's tie-breaks;
- ``toy_queries``, ``toy_log``, ``tiny_click_problem``: hand-made containers and problems;
- ``write_file``, ``make_letor_tree``: (compressed) SVMlight files and LETOR-shaped trees;
- ``tiny_specs``, ``tiny_spec_text``, ``run_tiny``: a tiny ``cltr figures`` spec and its run;
  ``tiny_run``: a workspace where it ran once, computed once per session.

The suite runs with one BLAS thread (OPENBLAS_NUM_THREADS=1 unless set; see below).
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
from pathlib import Path

# One BLAS thread in the test process and in the processes it starts (the CLI in a
# subprocess, loky and dask workers), unless whoever runs the tests sets OPENBLAS_NUM_THREADS:
# the suite's linear algebra is small, and on CI's two shared cores OpenBLAS's threads wait
# on each other (np.linalg.lstsq on 15,000 x 47 took 0.45 s with two threads on a loaded
# machine, 0.012 s with one; tests/core/test_svm.py 3.7 s of CPU, 0.5 s with one). OpenBLAS
# reads the variable as it loads, so it is set before numpy's import.
_ONE_BLAS_THREAD = "OPENBLAS_NUM_THREADS" not in os.environ
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from click.testing import CliRunner, Result  # noqa: E402

if _ONE_BLAS_THREAD:
    from threadpoolctl import threadpool_limits

    threadpool_limits(1, user_api="blas")  # a copy a plugin loaded before this file

LETOR4 = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "letor4"


# -- the command line ---------------------------------------------------------------------


def _invoke(*args, workdir: Path | str | None = None, expect: int | None = 0) -> Result:
    """Run ``cltr [--workdir WORKDIR] ARGS...`` in-process and return click's Result.

    ``expect`` is the exit code the call must end with (its output is shown when it does
    not); None accepts any. Exceptions other than click's propagate, with their traceback.
    """
    from cltr.cli import main

    prefix = [] if workdir is None else ["--workdir", str(workdir)]
    result = CliRunner().invoke(main, [*prefix, *map(str, args)], prog_name="cltr", catch_exceptions=False)
    if expect is not None:
        assert result.exit_code == expect, f"exit code {result.exit_code}, expected {expect}:\n{result.output}"
    return result


@pytest.fixture(scope="session")
def invoke():
    """``invoke(*args, workdir=None, expect=0) -> click.testing.Result``."""
    return _invoke


# -- real data ------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def letor4() -> Path:
    """../shared/data/letor4 (MANIFEST.md there), or skip."""
    if not LETOR4.is_dir():
        pytest.skip(f"real LETOR 4.0 data not found at {LETOR4}")
    return LETOR4


@pytest.fixture(scope="session")
def mq2008(letor4) -> Path:
    """The MQ2008 directory holding Fold1..Fold5, or skip."""
    path = letor4 / "MQ2008"
    if not (path / "Fold1").is_dir():
        pytest.skip(f"real LETOR 4.0 MQ2008 data not found at {path}")
    return path


# -- synthetic data and clicks -------------------------------------------------------------


def _make_training_data(dataset, *, seed: int = 0, passes: int = 20, fraction: float = 0.01, **click_settings):
    """``(production, TrainingData, test_relevant)``: the production ranker (Ranking SVM
    on ``fraction`` of the training queries) and position-based-model clicks on train
    and vali presented in its order, as ``clicks_stage`` draws them."""
    from cltr.methods import TrainingData
    from cltr.pipeline.stages import produce, simulated_logs

    production, _ = produce(dataset, seed=seed, fraction=fraction)
    logs = simulated_logs(dataset, production, passes=passes, seed=seed, model="pbm", settings=click_settings)
    return (
        production,
        TrainingData(dataset, logs["train"], logs["vali"], seed),
        dataset.test.relevant(dataset.relevant_from),
    )


@pytest.fixture(scope="session")
def make_training_data():
    """``make_training_data(dataset, *, seed=0, passes=20, fraction=0.01, **pbm_settings)``
    -> ``(production, TrainingData, test_relevant)``."""
    return _make_training_data


def _shuffled_sessions(
    *,
    n_queries: int = 40,
    docs: int = 8,
    passes: int = 200,
    eta: float = 1.0,
    eps_pos: float = 1.0,
    eps_neg: float = 0.1,
    noise: float | None = None,
    seed: int = 0,
):
    """``(TrainingData, examination)``: position-based-model clicks (p_k = (1/k)^eta) on
    sessions that each show their query's documents in a fresh order, with every
    displayed document (``TrainingData.displayed``). Features are 3 normal columns, a
    document relevant iff x_0 + x_1 / 2 > 0.3; every split is the same queries. The order
    of a session is uniformly random (``noise`` None) or sorted by x_0 + x_1 / 2 plus
    ``noise`` times Gumbel noise (relevant documents more often on top)."""
    from cltr.core.clicks import ClickLog, Displayed
    from cltr.core.queries import Dataset
    from cltr.methods import TrainingData

    rng = np.random.default_rng(seed)
    queries = _toy_queries([docs] * n_queries, n_features=3, seed=seed)
    score = queries.X[:, 0] + queries.X[:, 1] / 2
    relevant = score > 0.3
    queries = type(queries)(X=queries.X, labels=relevant.astype(np.int64), qid=queries.qid, offsets=queries.offsets)
    sessions = passes * n_queries
    key = (
        rng.random((sessions, docs))
        if noise is None
        else -(np.tile(score.reshape(n_queries, docs), (passes, 1)) + noise * rng.gumbel(size=(sessions, docs)))
    )
    rank = np.argsort(np.argsort(key, axis=1), axis=1).ravel() + 1
    query = np.repeat(np.tile(np.arange(n_queries), passes), docs)
    doc = query * docs + np.tile(np.arange(docs), sessions)
    examination = (1.0 / np.arange(1, docs + 1)) ** eta
    attraction = np.where(relevant[doc], eps_pos, eps_neg)
    click = rng.random(len(doc)) < examination[rank - 1] * attraction
    session = np.repeat(np.arange(sessions), docs)
    rows = Displayed.from_columns(
        session=session,
        query=query,
        doc=doc,
        rank=rank,
        click=click,
        propensity=examination[rank - 1],
        ranker=np.zeros(len(doc)),
    )
    clicked = rows.click == 1
    log = ClickLog(
        query=rows.query[clicked],
        doc=rows.doc[clicked],
        rank=rows.rank[clicked],
        propensity=rows.propensity[clicked],
        pass_index=rows.session[clicked] // n_queries,
        n_passes=passes,
        n_queries=n_queries,
    )
    dataset = Dataset("shuffled", queries, queries, queries, relevant_from=1)
    return TrainingData(dataset, log, log, seed, rows=lambda split: rows), examination


@pytest.fixture(scope="session")
def shuffled_sessions():
    """``shuffled_sessions(*, n_queries=40, docs=8, passes=200, eta=1.0, eps_pos=1.0,
    eps_neg=0.1, noise=None, seed=0) -> (TrainingData, examination)``: a log whose sessions
    show their documents in random orders, for learners that estimate the position bias."""
    return _shuffled_sessions


@pytest.fixture(scope="session")
def synthetic_dataset():
    """A small synthetic dataset (300 queries of 5 to 120 documents, relevant = label >= 1,
    seed 0): the embedded default's generator at a sixth of its size (and twice the
    relevant documents), so that the tests that train on it take seconds."""
    from cltr.data.synthetic import make_synthetic

    return make_synthetic(n_queries=300, docs=(5, 120), relevant_from=1)


@pytest.fixture(scope="session")
def noise_free_clicks(synthetic_dataset):
    """20 passes of clicks without noise (eps_neg 0) on a production ranker trained on 5%
    of the queries: ``(dataset, production, TrainingData, test_relevant)``."""
    production, data, test_relevant = _make_training_data(
        synthetic_dataset, seed=0, passes=20, fraction=0.05, eps_neg=0.0
    )
    return synthetic_dataset, production, data, test_relevant


@pytest.fixture(scope="session")
def biased_clicks(synthetic_dataset):
    """20 passes of position-biased, noisy clicks (eta 1, eps_neg 0.1) on the default
    production ranker: ``(dataset, production, TrainingData, test_relevant)``."""
    production, data, test_relevant = _make_training_data(synthetic_dataset, seed=0, passes=20, eta=1.0, eps_neg=0.1)
    return synthetic_dataset, production, data, test_relevant


@pytest.fixture
def avg_dcg_of():
    """``avg_dcg_of(scorer, dataset, relevant, seed=0)``: test-set Avg DCG with the pipeline's tie-breaks."""
    from cltr.core.ranking import evaluate
    from cltr.core.seeds import stream

    def dcg(scorer, dataset, relevant, seed=0):
        return evaluate(scorer, dataset.test, relevant, rng=stream(seed, "evaluate"), dcg_base=dataset.dcg_base)[
            "avg_dcg"
        ]

    return dcg


@pytest.fixture(params=[False, True], ids=["numpy", "numba"])
def compiled(request, monkeypatch):
    """Runs a test twice: with the numpy computations (``CLTR_NO_NUMBA=1``), then with the
    compiled kernels of ``cltr.core.kernels`` (skipped without numba); the value says which."""
    if request.param:
        pytest.importorskip("numba")
        monkeypatch.delenv("CLTR_NO_NUMBA", raising=False)
    else:
        monkeypatch.setenv("CLTR_NO_NUMBA", "1")
    return request.param


@pytest.fixture
def printed_avg_dcg():
    """``printed_avg_dcg(output)``: the test Avg DCG that ``cltr evaluate`` printed (the first
    number under its "test Avg DCG" header)."""

    def read(output: str) -> float:
        lines = output.splitlines()
        header = next(i for i, line in enumerate(lines) if line.lstrip().startswith("test Avg DCG"))
        return float(lines[header + 1].split()[0])

    return read


@pytest.fixture
def hard_log(invoke, printed_avg_dcg):
    """``hard_log(workdir, seed=0) -> (production, model)``: the learned-bias and likelihood
    methods' CLI hard log in ``workdir`` (the default's data on 300 queries, 30 passes of eta 2,
    eps- 0.3 clicks, data and click seed ``seed``) and a function that returns the production
    ranker's and the last trained model's test Avg DCG as ``cltr evaluate`` prints them."""

    def make(workdir, seed: int = 0):
        invoke("prepare", "synthetic", "--queries", 300, "--seed", seed, workdir=workdir)
        invoke("simulate", "--eta", 2, "--eps-neg", 0.3, "--passes", 30, "--seed", seed, workdir=workdir)

        def scores() -> tuple[float, float]:
            production = printed_avg_dcg(invoke("evaluate", "--production", workdir=workdir).output)
            return production, printed_avg_dcg(invoke("evaluate", workdir=workdir).output)

        return scores

    return make


# -- hand-made problems and containers -----------------------------------------------------


def _tiny_click_problem(seed=0, *, sizes=(4, 5, 3, 6), n_features=3, n_clicks=9):
    """``(X, offsets, click_query, click_doc, propensity)``: random features, clicks sorted
    by query (repeats allowed), propensities in [0.2, 1]."""
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    X = rng.random((offsets[-1], n_features))
    click_query = np.sort(rng.integers(0, len(sizes), n_clicks))
    click_doc = offsets[click_query] + (rng.random(n_clicks) * np.diff(offsets)[click_query]).astype(int)
    propensity = rng.uniform(0.2, 1.0, n_clicks)
    return X, offsets, click_query, click_doc, propensity


@pytest.fixture
def tiny_click_problem():
    """``tiny_click_problem(seed=0, *, sizes=(4, 5, 3, 6), n_features=3, n_clicks=9)``
    -> ``(X, offsets, click_query, click_doc, propensity)``."""
    return _tiny_click_problem


def _toy_queries(sizes, *, n_features: int = 2, seed: int | None = None, labels=None, qid_start: int = 1):
    """``Queries`` with the given sizes: features ``arange`` (or standard normal with a
    ``seed``), labels 0 unless given, qids from ``qid_start``."""
    from cltr.core.queries import Queries

    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n_docs = int(offsets[-1])
    if seed is None:
        X = np.arange(n_docs * n_features, dtype=np.float64).reshape(n_docs, n_features)
    else:
        X = np.random.default_rng(seed).normal(size=(n_docs, n_features))
    labels = np.zeros(n_docs, dtype=np.int64) if labels is None else np.asarray(labels, dtype=np.int64)
    return Queries(
        X=X, labels=labels, qid=np.arange(qid_start, qid_start + len(sizes), dtype=np.int64), offsets=offsets
    )


def _toy_log(query, doc, *, n_queries: int, propensity=None, pass_index=None, n_passes: int = 1):
    """A ``ClickLog`` of the given clicks (rank 1 each; propensity 1 unless given)."""
    from cltr.core.clicks import ClickLog

    n = len(doc)
    return ClickLog(
        query=np.array(query, dtype=np.int64),
        doc=np.array(doc, dtype=np.int64),
        rank=np.ones(n, dtype=np.int64),
        propensity=np.ones(n) if propensity is None else np.array(propensity, dtype=np.float64),
        pass_index=np.zeros(n, dtype=np.int64) if pass_index is None else np.array(pass_index, dtype=np.int64),
        n_passes=n_passes,
        n_queries=n_queries,
    )


@pytest.fixture
def toy_queries():
    """``toy_queries(sizes, *, n_features=2, seed=None, labels=None, qid_start=1) -> Queries``."""
    return _toy_queries


@pytest.fixture
def toy_log():
    """``toy_log(query, doc, *, n_queries, propensity=None, pass_index=None, n_passes=1) -> ClickLog``."""
    return _toy_log


# -- files ------------------------------------------------------------------------------------

_WRITERS = {"": open, ".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}


def _write(path: Path, text: str) -> Path:
    """Write ``text`` to ``path``, compressed as its suffix says (.gz, .bz2, .xz or plain)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with _WRITERS[path.suffix if path.suffix in _WRITERS else ""](path, "wb") as stream:
        stream.write(text.encode())
    return path


@pytest.fixture
def write_file():
    """``write_file(path, text) -> path``, compressed by the path's suffix."""
    return _write


def _letor_text(rng, qids, n_features=46, docs=4):
    lines = []
    for q in qids:
        for d in range(docs):
            values = " ".join(f"{j}:{v:.6f}" for j, v in enumerate(rng.random(n_features), start=1))
            lines.append(f"{rng.integers(0, 3)} qid:{q} {values} #docid = GX{q:03d}-{d:02d} inc = 1 prob = 0.5")
    return "\n".join(lines) + "\n"


def _make_letor_tree(root: Path, *, fold=1, suffix="", qid_start=10000, widths=None, seed=0) -> Path:
    """A LETOR 4.0-shaped directory: ``FoldK/{train,vali,test}.txt[suffix]`` with 3, 2 and 2
    queries of 4 documents, 46 features (or ``widths[split]``), labels 0..2."""
    rng = np.random.default_rng(seed)
    widths = widths or {}
    for i, split in enumerate(("train", "vali", "test")):
        qids = range(qid_start + 10 * i, qid_start + 10 * i + (3 if split == "train" else 2))
        _write(root / f"Fold{fold}" / f"{split}.txt{suffix}", _letor_text(rng, qids, widths.get(split, 46)))
    return root


@pytest.fixture
def make_letor_tree():
    """``make_letor_tree(root, *, fold=1, suffix="", qid_start=10000, widths=None, seed=0) -> root``."""
    return _make_letor_tree


# -- experiment specs -------------------------------------------------------------------------

TINY_SPEC = """
name = "tiny"
artifact = "test"
description = "fast methods on a tiny dataset"
kind = "curve"
dataset = "tiny"
methods = ["svm-rank", "svm-proprank"]
references = ["production"]
reps = 2
seed = 11
x = "passes"
values = [2, 4, 8]
plot_x = "train_clicks"
[synthetic]
n_queries = 40
[clicks]
eta = 1.0
eps_neg = 0.1
[options.svm-rank]
grid = [0.1, 10.0]
[options.svm-proprank]
grid = [0.1, 10.0]
"""


@pytest.fixture
def tiny_spec_text() -> str:
    """``TINY_SPEC``, for variations of it."""
    return TINY_SPEC


@pytest.fixture
def tiny_specs(tmp_path) -> Path:
    """A spec directory holding ``tiny.toml`` (``TINY_SPEC``: two fast methods, 2 repetitions,
    3 pass counts, 40 synthetic queries)."""
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "tiny.toml").write_text(TINY_SPEC)
    return specs


def _run_tiny(specs: Path, workdir: Path, *extra) -> str:
    """``cltr figures tiny`` into WORKDIR/results; the CSV's text."""
    _invoke("figures", "tiny", "--specs", specs, "--out", Path(workdir) / "results", *extra, workdir=workdir)
    return (Path(workdir) / "results" / "tiny.csv").read_text()


@pytest.fixture
def run_tiny():
    """``run_tiny(specs, workdir, *extra) -> str``: ``cltr figures tiny``, the CSV's text."""
    return _run_tiny


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory) -> Path:
    """A workspace where ``cltr figures tiny`` (``TINY_SPEC``) ran once, uninterrupted, with
    its outputs in ``results/`` (tiny.csv, .md, .tex, .png, .pdf): the reference of the tests
    that resume, kill or vary a run, computed once. Read it, never write to it."""
    root = tmp_path_factory.mktemp("tiny-run")
    specs = root / "specs"
    specs.mkdir()
    (specs / "tiny.toml").write_text(TINY_SPEC)
    _run_tiny(specs, root)
    return root
