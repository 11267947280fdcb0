"""Coverage of the propensity bands over many small simulated single-ranker logs.

    python bench/propensity_coverage.py [--logs 200] [--queries 150] [--docs 6] [--sessions 30]
                                        [--eta 1] [--bootstrap 50] [--level 0.9] [--trees-logs 0]

Each log is a position-based-model simulation with a known (1/k)^eta: Gaussian features,
relevance sigma(x . beta - 1) (so the logistic relevance model is right), one deterministic
ranker sorting by a noisy copy of x . beta. On each log it runs

- regression EM (logistic relevance) with the band that re-runs EM on every query resample
  (``band="refit"``) and with the one-step estimating-function band (``band="one-step"``),
  on the same resamples;
- the swap estimator on a swap-k log (rank 1 traded with a uniform k in 1..docs every
  session) of the same queries and sessions;
- optionally (``--trees-logs N``, slow) EM with LightGBM relevance and the refit band on the
  first N logs whose relevance is a sine, a square and a step of the features.

and prints, per rank, how often the band at ``--level`` covers the truth, the mean width, and
the MAPE of the point estimate at ranks 2..docs. One process, one BLAS thread.

MQ2008 mode (``--workdir`` or ``--mq2008``):

    python bench/propensity_coverage.py --workdir ../ws-prop [--mq2008 ../shared/data/letor4/MQ2008]
        [--fold 1] [--logs 200] [--eta 1] [--passes 100] [--max-rank 10] [--bootstrap 100]
        [--query-sample resample|fixed] [--log-queries N]
        [--estimators harvest,em logistic,em classes,swap,randomize,em trees]
        [--trees-logs N] [--tree-bootstrap 20]

draws ``--logs`` sets of logs on Fold K's training split, as ``bench/propensity_mq2008.py``
makes them (the production ranker of seed 0, a second ranker by the same recipe, position-based
clicks with eps- 0.1), each set with its own queries (``resample``: drawn with replacement, each
copy a query of its own; ``fixed``: the split's queries, only the clicks drawn afresh), and runs
every estimator through ``cltr.estimators.estimate`` (what ``cltr propensities estimate`` runs)
with its band: harvest on the two rankers' log, em (logistic; latent classes; trees with
``--trees-logs``, on ``fixed`` queries only) on the production ranker's log, swap on a swap-k
log and on a randomize-top-K log. Per estimator and rank it prints the coverage, the mean width, the spread
(sd) of the estimates over the logs and the width over 2 z sd (about 1 where the band measures
what varies between logs), and CPU seconds per estimate, band included.
"""

import argparse
import time
from functools import partial
from pathlib import Path
from statistics import NormalDist

import numpy as np
from scipy.special import expit
from threadpoolctl import threadpool_limits

from cltr.core.interventions import intervene, swap_propensities
from cltr.core.propensity import em_propensities


def single_ranker_log(n_queries, n_docs, *, eta, sessions, rng, nonlinear=False):
    """(impression table of one deterministic ranker, features, relevance per document)."""
    n = n_queries * n_docs
    X = rng.normal(size=(n, 4))
    if nonlinear:
        score = 1.5 * np.sin(2.0 * X[:, 0]) + (X[:, 1] ** 2 - 1.0) + 1.0 * (X[:, 2] > 0.5) - 1.0
    else:
        score = X @ (rng.normal(size=4) * 1.5 / 2.0) - 1.0
    relevance = expit(score)
    base = (score + rng.normal(scale=0.5, size=n)).reshape(n_queries, n_docs)
    rank = np.empty(base.shape, dtype=np.int64)
    np.put_along_axis(rank, np.argsort(-base, axis=1), np.arange(1, n_docs + 1)[None, :], axis=1)
    rank = rank.ravel()
    table = {
        "query": np.repeat(np.arange(n_queries), n_docs),
        "doc": np.arange(n),
        "rank": rank,
        "impressions": np.full(n, sessions),
        "clicks": rng.binomial(sessions, (1.0 / rank) ** eta * relevance),
    }
    return table, X, relevance


def swap_log(table, relevance, *, eta, sessions, rng):
    """The same queries with a swap-k intervention in every session (per-session rows)."""
    n_docs_total = len(table["rank"])
    sizes = np.bincount(table["query"])
    offsets = np.r_[0, np.cumsum(sizes)]
    parts = []
    for _ in range(sessions):
        shown = intervene(table["rank"], offsets, kind="swap-k", depth=int(sizes.max()), rng=rng)
        parts.append((shown, rng.random(n_docs_total) < (1.0 / shown) ** eta * relevance))
    return {
        "query": np.tile(table["query"], sessions),
        "doc": np.tile(table["doc"], sessions),
        "rank": np.concatenate([p[0] for p in parts]).astype(np.int64),
        "impressions": np.ones(n_docs_total * sessions, dtype=np.int64),
        "clicks": np.concatenate([p[1] for p in parts]).astype(np.int64),
    }


def summarise(name, estimates, truth, seconds):
    low = np.array([e.low for e in estimates])
    high = np.array([e.high for e in estimates])
    point = np.array([e.propensity for e in estimates])
    covered = ((low <= truth) & (truth <= high)).mean(axis=0)
    width = (high - low).mean(axis=0)
    error = point[:, 1:] / truth[1:] - 1.0
    print(
        f"\n{name}: {len(estimates)} logs, {seconds / len(estimates):.2f} CPU s per estimate; "
        f"MAPE ranks 2..K {np.mean(np.abs(error)):.1%}, "
        f"mean signed {np.mean(error):+.1%}; coverage pooled over ranks 2..K {covered[1:].mean():.1%}"
    )
    print("rank      " + " ".join(f"{k:>6d}" for k in range(1, len(truth) + 1)))
    print("coverage  " + " ".join(f"{c:6.1%}" for c in covered))
    print("width     " + " ".join(f"{w:6.3f}" for w in width))
    if len(estimates) > 1:
        # the band's width against the spread of the estimates over the logs: a normal
        # band at the level is 2 z sd wide, so about 1 where the band measures what varies
        spread = point.std(axis=0, ddof=1)
        z = NormalDist().inv_cdf(0.5 + estimates[0].level / 2.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = width / (2.0 * z * spread)
        print("sd        " + " ".join(f"{v:6.3f}" for v in spread))
        print("w/(2z sd) " + " ".join(f"{v:6.2f}" for v in ratio))


# -- MQ2008 Fold K: the production rankers' logs, clicks and queries drawn afresh per log --------

MQ_ESTIMATORS = ("harvest", "em logistic", "em classes", "em trees", "swap", "randomize")


def mq2008_setup(args):
    """Fold K's training split, its relevance, and the deterministic ranks of the production
    ranker and a second one, as ``cltr produce`` / ``cltr simulate --rankers 2`` make them."""
    from cltr import cli
    from cltr.core.ranking import rank_documents
    from cltr.core.seeds import stream
    from cltr.pipeline.models import scorer_from_arrays
    from cltr.pipeline.stages import logging_rankers, production_stage
    from cltr.pipeline.workspace import Workspace

    workspace = Workspace(args.workdir)
    name = f"letor-fold{args.fold}"
    if not workspace.has_dataset(name):  # as `cltr prepare letor` prepares it
        if args.mq2008 is None:
            raise SystemExit(f"{args.workdir} holds no prepared {name}; give --mq2008 DIR")
        cli.main(
            [
                "--workdir",
                str(args.workdir),
                "-q",
                "prepare",
                "letor",
                "--mq2008",
                str(args.mq2008),
                "--fold",
                str(args.fold),
                "--name",
                name,
            ],
            standalone_mode=False,
        )
    dataset, record = workspace.load_dataset(name)
    production, _ = production_stage(workspace, name, dataset, record["fingerprint"], seed=0)
    rankers = logging_rankers(workspace, name, dataset, record["fingerprint"], production, 2)
    train = dataset.train
    offsets = np.asarray(train.offsets, dtype=np.int64)
    # the deterministic rankings clicks_stage shows (its presentation streams, click seed 0)
    ranks = [
        rank_documents(
            scorer_from_arrays(r.arrays).scores(train.X),
            offsets,
            stream(0, "presentation", "train", *(() if k == 0 else (k,))),
        )
        for k, r in enumerate(rankers)
    ]
    return train.X, train.relevant(dataset.relevant_from), offsets, ranks


def _table(doc, rank, ranker, impressions, clicks, *, query_of):
    from cltr.core.clicks import Impressions

    return Impressions(
        *(np.asarray(a, dtype=np.int64) for a in (query_of[np.asarray(doc)], doc, rank, ranker, impressions, clicks))
    )


def mq2008_logs(setup, *, eta, passes, depth, rng, resample, n_drawn=None):
    """One draw of every log the estimators read, on as many queries as the split holds, drawn with
    replacement from it (``resample``; each copy of a query a query of its own, its documents
    documents of their own: the population the query bootstrap's band is for) or the split's
    own queries: the production ranker's log, the two rankers' log (pass p by ranker p mod
    2), a swap-k and a randomize-top-``depth`` log of the production ranking. Position-based
    clicks as ``cltr simulate`` draws them (p_r = (1/r)^eta, eps+ 1, eps- 0.1), aggregated
    to the impression table (a binomial per (document, rank) cell: the sum of its sessions'
    Bernoulli clicks). Only ranks <= depth are kept: every estimator here reads ranks 1..K.
    ``n_drawn``: with ``resample``, that many queries drawn (default: as many as the split holds).
    Returns (the features of the drawn documents, {log: Impressions})."""
    from cltr.core.interventions import intervene

    X, relevant, offsets, ranks = setup
    n_queries = len(offsets) - 1
    drawn = rng.integers(0, n_queries, n_drawn or n_queries) if resample else np.arange(n_queries)
    sizes = np.diff(offsets)[drawn]
    new_offsets = np.r_[0, np.cumsum(sizes)]
    source = np.concatenate([np.arange(offsets[q], offsets[q + 1]) for q in drawn])  # new doc -> split row
    click_rate = np.where(relevant[source], 1.0, 0.1)
    examination = np.r_[0.0, (1.0 / np.arange(1, depth + 1)) ** eta]

    def deterministic(rank, sessions, ranker=0):
        top = np.flatnonzero(rank <= depth)
        clicks = rng.binomial(sessions, examination[rank[top]] * click_rate[top])
        return (top, rank[top], np.full(len(top), ranker), np.full(len(top), sessions), clicks)

    def intervened(kind):
        rank = ranks[0][source]
        cells = np.zeros((len(source), depth), dtype=np.int64)
        top = rank <= depth
        for _ in range(passes):
            shown = intervene(rank, new_offsets, kind=kind, depth=depth, rng=rng)
            cells[top, shown[top] - 1] += 1  # ranks <= depth stay within the top `depth`
        doc, k0 = np.nonzero(cells)
        impressions = cells[doc, k0]
        clicks = rng.binomial(impressions, examination[k0 + 1] * click_rate[doc])
        return table(doc, k0 + 1, np.zeros(len(doc)), impressions, clicks)

    table = partial(_table, query_of=np.repeat(np.arange(len(drawn)), sizes))
    single = table(*deterministic(ranks[0][source], passes))
    first = deterministic(ranks[0][source], passes // 2)
    second = deterministic(ranks[1][source], passes - passes // 2, 1)
    two = table(*(np.concatenate([a, b]) for a, b in zip(first, second, strict=True)))
    logs = {
        "harvest": two,
        "em logistic": single,
        "em classes": single,
        "em trees": single,
        "swap": intervened("swap-k"),
        "randomize": intervened("randomize-top-k"),
    }
    return X[source], logs


def mq2008(args):
    from cltr import estimators

    setup = mq2008_setup(args)
    methods = {
        "harvest": ("harvest", {}),
        "em logistic": ("em", {}),
        "em classes": ("em", {"relevance_model": "classes"}),
        "em trees": ("em", {"relevance_model": "trees"}),
        "swap": ("swap", {}),
        "randomize": ("swap", {}),
    }
    wanted = [e for e in MQ_ESTIMATORS if e in args.estimators]
    truth = (1.0 / np.arange(1, args.max_rank + 1)) ** args.eta
    results = {name: [] for name in wanted}
    seconds = dict.fromkeys(wanted, 0.0)
    simulate_seconds = 0.0
    wall = time.perf_counter()
    with threadpool_limits(1):
        for log in range(args.logs):
            rng = np.random.default_rng([24, round(args.eta * 100), log])
            start = time.process_time()
            X, logs = mq2008_logs(
                setup,
                eta=args.eta,
                passes=args.passes,
                depth=args.max_rank,
                rng=rng,
                resample=args.query_sample == "resample",
                n_drawn=args.log_queries,
            )
            simulate_seconds += time.process_time() - start
            for name in wanted:
                if name == "em trees" and log >= args.trees_logs:
                    continue
                method, options = methods[name]
                bootstrap = args.tree_bootstrap if name == "em trees" else args.bootstrap
                start = time.process_time()
                results[name].append(
                    estimators.estimate(
                        method,
                        logs[name],
                        X,
                        options,
                        max_rank=args.max_rank,
                        bootstrap=bootstrap,
                        level=args.level,
                        seed=log,
                    )
                )
                seconds[name] += time.process_time() - start
            if args.progress and (log + 1) % args.progress == 0:
                print(f"  {log + 1} logs, {time.perf_counter() - wall:.0f} s wall", flush=True)
    per_log = f", {args.log_queries} per log" if args.log_queries else ""
    print(
        f"MQ2008 Fold {args.fold} training split, eta {args.eta:g}, {args.logs} logs of {args.passes} passes "
        f"(queries: {args.query_sample}{per_log}), ranks 1..{args.max_rank}; {args.level:.0%} bands from "
        f"{args.bootstrap} query resamples ({args.tree_bootstrap} for em trees); "
        f"{simulate_seconds / args.logs:.2f} CPU s per simulated set of logs; "
        f"{time.perf_counter() - wall:.0f} s wall"
    )
    for name in wanted:
        if results[name]:
            bootstrap = args.tree_bootstrap if name == "em trees" else args.bootstrap
            summarise(f"{name} ({bootstrap} resamples)", results[name], truth, seconds[name])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--logs", type=int, default=200, help="simulated logs (sets of logs in MQ2008 mode)")
    parser.add_argument("--queries", type=int, default=150, help="synthetic mode: queries per log")
    parser.add_argument("--docs", type=int, default=6, help="synthetic mode: documents per query (= ranks)")
    parser.add_argument("--sessions", type=int, default=30, help="synthetic mode: sessions per query")
    parser.add_argument("--eta", type=float, default=1.0, help="the true propensity is (1/rank)^eta")
    parser.add_argument(
        "--bootstrap", type=int, default=50, help="query resamples per band (em trees: --tree-bootstrap in MQ2008 mode)"
    )
    parser.add_argument("--level", type=float, default=0.9, help="the bands' confidence level")
    parser.add_argument("--trees-logs", type=int, default=0, help="EM with trees on the first N logs only (slow)")
    parser.add_argument(
        "--mq2008",
        type=Path,
        help="MQ2008 mode: the LETOR 4.0 MQ2008 folder (Fold1..Fold5); needed unless --workdir holds the prepared fold",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        help="MQ2008 mode: the workspace of the prepared fold and its production rankers (made there if absent)",
    )
    parser.add_argument("--fold", type=int, default=1, help="MQ2008 mode: the fold")
    parser.add_argument("--passes", type=int, default=100, help="MQ2008 mode: sessions per query and log")
    parser.add_argument(
        "--max-rank", type=int, default=10, help="MQ2008 mode: K, ranks 1..K estimated; also the intervention depth"
    )
    parser.add_argument(
        "--query-sample",
        choices=("resample", "fixed"),
        default="resample",
        help="MQ2008 mode: each log's queries drawn with replacement from the split (what the "
        "query bootstrap's band is for) or the split's own queries every time (clicks alone vary)",
    )
    parser.add_argument(
        "--log-queries",
        type=int,
        help="MQ2008 mode, --query-sample resample: queries drawn per "
        "log (default: as many as the split holds); smaller logs are cheaper to bootstrap",
    )
    parser.add_argument("--tree-bootstrap", type=int, default=20, help="MQ2008 mode: query resamples of em trees' band")
    parser.add_argument(
        "--estimators",
        default=",".join(MQ_ESTIMATORS),
        help=f"MQ2008 mode: comma-separated subset of {', '.join(MQ_ESTIMATORS)}",
    )
    parser.add_argument("--progress", type=int, default=0, help="MQ2008 mode: print the wall time every N logs")
    args = parser.parse_args()
    if args.mq2008 is not None or args.workdir is not None:
        args.workdir = args.workdir or Path("cltr-bench-propensity")
        args.estimators = [e.strip() for e in args.estimators.split(",")]
        if set(args.estimators) - set(MQ_ESTIMATORS):
            parser.error(f"--estimators: unknown {', '.join(sorted(set(args.estimators) - set(MQ_ESTIMATORS)))}")
        if "em trees" in args.estimators and args.trees_logs > 0 and args.query_sample == "resample":
            # a query drawn twice sits in two cross-fitting folds: the trees then fit its
            # documents' own clicks, and EM collapses
            parser.error(
                "em trees needs --query-sample fixed: the copies of a resampled query fall in different "
                "cross-fitting folds, which fit each document's own clicks"
            )
        if args.log_queries is not None and (args.log_queries < 1 or args.query_sample != "resample"):
            parser.error("--log-queries needs --query-sample resample and a count >= 1")
        mq2008(args)
        return
    truth = (1.0 / np.arange(1, args.docs + 1)) ** args.eta
    results = {"em refit": [], "em one-step": [], "swap": [], "em trees refit": []}
    seconds = dict.fromkeys(results, 0.0)
    common = {"bootstrap": args.bootstrap, "level": args.level}
    with threadpool_limits(1):
        for log in range(args.logs):
            rng = np.random.default_rng([24, log])
            table, X, relevance = single_ranker_log(
                args.queries, args.docs, eta=args.eta, sessions=args.sessions, rng=rng
            )
            for name, band in (("em refit", "refit"), ("em one-step", "one-step")):
                start = time.process_time()
                results[name].append(em_propensities(**table, X=X, band=band, rng=[log, 1], **common))
                seconds[name] += time.process_time() - start
            swapped = swap_log(table, relevance, eta=args.eta, sessions=args.sessions, rng=rng)
            start = time.process_time()
            results["swap"].append(swap_propensities(**swapped, rng=[log, 2], **common))
            seconds["swap"] += time.process_time() - start
            if log < args.trees_logs:
                from cltr.methods.trees import soft_label_trees

                table, X, _ = single_ranker_log(
                    args.queries, args.docs, eta=args.eta, sessions=args.sessions, rng=rng, nonlinear=True
                )
                fitter = partial(
                    soft_label_trees, n_estimators=30, num_leaves=7, min_data_in_leaf=20, learning_rate=0.3
                )
                start = time.process_time()
                results["em trees refit"].append(
                    em_propensities(
                        **table, X=X, relevance_model=fitter, tol=1e-3, iterations=30, rng=[log, 3], **common
                    )
                )
                seconds["em trees refit"] += time.process_time() - start
    print(
        f"{args.logs} logs of {args.queries} queries x {args.docs} documents, {args.sessions} sessions, "
        f"eta {args.eta}; {args.level:.0%} bands from {args.bootstrap} query resamples"
    )
    for name, estimates in results.items():
        if estimates:
            summarise(name, estimates, truth, seconds[name])


if __name__ == "__main__":
    main()
