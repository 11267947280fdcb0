"""Speed and quality of Deep PropDCG (`cltr.deep`).

    python bench/deep.py [--mq2008 ../shared/data/letor4/MQ2008] [--threads 1 2] [--epochs 5]
    python bench/deep.py --yahoo [--threads 1 2] [--epochs 2]
    python bench/deep.py --compare [--seeds 6] [--skip-mq2008 | --skip-synthetic] [--synthetic-queries 2000]

Speed (default): MQ2008 Fold1 with production-ranker clicks (eta 1, eps_neg 0.1, 100 passes,
seed 0); the `default` preset's network (200 sigmoid units, float32, ~1000 documents a
batch) trained for ``--epochs`` epochs at its middle learning rate with no validation, per
BLAS thread count. Prints seconds per epoch (mean over epochs after the first), documents
scored per second (each candidate of a clicked query is scored, and backpropagated, once
per epoch) and the peak resident memory. ``--yahoo``: the same on a generated Yahoo-shaped
problem (20,000 queries x 24 documents x 700 float32 features, 10 passes; bench/solver.py's
generator).

``--compare``: per seed, a fresh production ranker and clicks (as bench/compare.py), then
SVM PropDCG (C over the default grid) and Deep PropDCG (`default` preset), both selected on
validation clicks; prints mean and standard deviation of test Avg DCG over the seeds on
MQ2008 Fold1 and on the embedded synthetic dataset (or a larger one, ``--synthetic-queries``).
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from cltr.core.clicks import Clicks
from cltr.core.ranking import evaluate
from cltr.core.seeds import stream
from cltr.data.loaders import load_letor
from cltr.data.synthetic import make_synthetic
from cltr.methods import TrainingData, train
from cltr.methods.deep_propdcg import deep_settings, train_deep_propdcg
from cltr.pipeline.stages import produce, simulated_logs

sys.path.insert(0, str(Path(__file__).resolve().parent))
from solver import make_click_problem  # noqa: E402

MQ2008 = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "letor4" / "MQ2008"


def peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # kilobytes on Linux


def clicks_on(dataset, seed, passes=100):
    production, _ = produce(dataset, seed=seed)
    relevant = {s: q.relevant(dataset.relevant_from) for s, q in dataset.splits().items()}
    logs = simulated_logs(dataset, production, passes=passes, seed=seed)
    return logs, relevant


def time_epochs(name, X, offsets, clicks: Clicks, *, epochs, threads):
    settings = deep_settings("default")
    settings = deep_settings(
        "default", epochs=epochs, patience=None, lr=sorted(settings.learning_rates)[len(settings.learning_rates) // 2]
    )
    clicked = np.unique(clicks.query)
    docs = int(np.sum(offsets[clicked + 1] - offsets[clicked]))
    print(
        f"{name}: {len(offsets) - 1:,} queries, {offsets[-1]:,} documents x {X.shape[1]} features "
        f"({X.dtype.name}), {len(clicks):,} clicks on {len(clicked):,} queries "
        f"({docs:,} documents scored per epoch); network {settings.hidden} {settings.activation} "
        f"{settings.dtype}, ~{settings.batch_docs} documents a batch"
    )
    print(f"{'threads':>7} {'s/epoch':>9} {'docs/s':>11} {'first epoch s':>13} {'train loss':>22}")
    for count in threads:
        with threadpool_limits(limits=count, user_api="blas"):
            result = train_deep_propdcg(X, offsets, clicks, settings=settings, rng=np.random.default_rng(0))
        seconds = [r.seconds for r in result.trace]
        steady = float(np.mean(seconds[1:])) if len(seconds) > 1 else seconds[0]
        losses = f"{result.trace[0].train_loss:.4g} -> {result.trace[-1].train_loss:.4g}"
        print(f"{count:7d} {steady:9.3f} {docs / steady:11,.0f} {seconds[0]:13.3f} {losses:>22}", flush=True)
    print(f"peak resident memory (ru_maxrss): {peak_gib():.2f} GiB")


def speed_mq2008(path, epochs, threads):
    dataset = load_letor(path, fold=1)
    logs, _ = clicks_on(dataset, 0)
    log = logs["train"]
    time_epochs(
        "MQ2008 Fold1, 100 passes",
        dataset.train.X,
        dataset.train.offsets,
        Clicks.from_log(log),
        epochs=epochs,
        threads=threads,
    )


def speed_yahoo(epochs, threads):
    start = time.perf_counter()
    problem = make_click_problem(
        20000, 24, 700, passes=10, dtype=np.float32, relevant_share=0.1, noise=1.0, eta=1.0, eps_neg=0.1, seed=0
    )
    print(f"generated in {time.perf_counter() - start:.1f} s")
    time_epochs(
        "Yahoo-shaped, 10 passes",
        problem["X"],
        problem["offsets"],
        Clicks(problem["click_query"], problem["click_doc"], problem["cost"]),
        epochs=epochs,
        threads=threads,
    )


def compare(name, dataset, seeds):
    rows = []
    for seed in range(seeds):
        logs, relevant = clicks_on(dataset, seed)
        data = TrainingData(dataset, logs["train"], logs["vali"], seed)
        row = {}
        for method in ("svm-propdcg", "deep-propdcg"):
            start = time.perf_counter()
            scorer, info = train(method, data, {})
            row[method] = evaluate(
                scorer, dataset.test, relevant["test"], rng=stream(seed, "evaluate"), dcg_base=dataset.dcg_base
            )["avg_dcg"]
            row[f"{method} s"] = time.perf_counter() - start
            row[f"{method} chosen"] = info["chosen"]
        rows.append(row)
        print(
            f"  seed {seed}: {len(logs['train']):,} clicks; "
            + "  ".join(
                f"{m} {row[m]:.4f} ({row[m + ' chosen']}, {row[m + ' s']:.0f} s)"
                for m in ("svm-propdcg", "deep-propdcg")
            ),
            flush=True,
        )
    print(f"{name}, {seeds} seeds: test Avg DCG mean +- std (ddof 1)")
    for method in ("svm-propdcg", "deep-propdcg"):
        values = [r[method] for r in rows]
        print(f"  {method:>13}  {np.mean(values):.4f} +- {np.std(values, ddof=1):.4f}")
    gains = [r["deep-propdcg"] - r["svm-propdcg"] for r in rows]
    print(
        f"  {'deep - svm':>13}  {np.mean(gains):+.4f} +- {np.std(gains, ddof=1):.4f}; "
        f"deep better on {sum(g > 0 for g in gains)} of {seeds} seeds",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mq2008", default=str(MQ2008), help="MQ2008 directory with Fold1..Fold5")
    parser.add_argument("--yahoo", action="store_true", help="time the Yahoo-shaped problem")
    parser.add_argument("--compare", action="store_true", help="test Avg DCG of Deep vs SVM PropDCG")
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--skip-mq2008", action="store_true")
    parser.add_argument("--skip-synthetic", action="store_true")
    parser.add_argument(
        "--synthetic-queries",
        type=int,
        default=None,
        help="queries of the synthetic dataset (default: the embedded one's 300)",
    )
    parser.add_argument("--epochs", type=int, help="epochs timed (default 5, yahoo 2)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="BLAS threads (default 1 2)")
    args = parser.parse_args()
    if args.compare:
        if not args.skip_mq2008:
            compare("MQ2008 Fold1", load_letor(args.mq2008, fold=1), args.seeds)
        if not args.skip_synthetic:
            options = {} if args.synthetic_queries is None else {"n_queries": args.synthetic_queries}
            compare(f"synthetic ({args.synthetic_queries or 300} queries)", make_synthetic(**options), args.seeds)
    elif args.yahoo:
        speed_yahoo(args.epochs or 2, args.threads)
    else:
        speed_mq2008(args.mq2008, args.epochs or 5, args.threads)


if __name__ == "__main__":
    main()
