"""Propensity estimators on real MQ2008 single-ranker logs: error against (1/r)^eta, band
coverage and seconds, and the ``propensity`` figure series for single-ranker logs.

    python bench/propensity_mq2008.py --mq2008 ../shared/data/letor4/MQ2008 [--fold 1]
        [--workdir ../ws-prop] [--etas 0.5,1,1.5,2] [--seeds 5] [--max-rank 10] [--level 0.9]
        [--bootstrap 100] [--tree-bootstrap 20] [--estimators harvest,em logistic,...]
        [--out docs/results/data/propensity-single-ranker]
    python bench/propensity_mq2008.py --mq2008 DIR --diagnose [--etas 1] [--iterations 15]
    python bench/propensity_mq2008.py --mq2008 DIR --why [--etas 1] [--seeds 1]

Per eta and click seed, on MQ2008 Fold K's training split (the production ranker of seed 0,
a Ranking SVM on 1% of the queries, as ``cltr produce`` trains it; 100 passes of
position-based clicks with eps- 0.1, as ``cltr simulate`` draws them):

- ``em logistic``, ``em trees`` and ``em classes``: regression EM on the production ranker's
  log alone, exactly as ``cltr propensities estimate --method em [--relevance-model
  trees|classes]`` runs it (refit bootstrap band over queries);
- ``swap`` on a swap-k log (``cltr simulate --intervention swap-k --intervention-depth K``)
  and ``randomize`` (the same estimator) on a randomize-top-k log, same seed;
- ``harvest`` on a log of two production rankers (``cltr simulate --rankers 2``: the same
  recipe on a second 1% sample), the reference that needs a second ranker.

Prints per eta the signed relative error p_hat_r / (1/r)^eta - 1 per rank (mean over seeds),
the MAPE and mean signed error at ranks 2..K, how often the ``--level`` band covers the truth
at ranks 2..K (seeds x ranks cells), and CPU seconds per estimate (band included). Writes
OUT.csv (one row per estimator, eta, seed and rank) and OUT.png (the figure).

``--diagnose`` instead follows tree EM step by step from the logistic EM fit (E-step, theta
M-step, LightGBM refit of the posterior relevance, no Newton step), printing the marginal
log-likelihood and the error per rank at each step: where the likelihood keeps rising while
the error grows, the relevance model is absorbing the position effect.

``--why`` prints, per rank, the true mean relevance of the documents the ranker shows there
against the logistic EM fit's, their ratio's error (to first order minus theta_k's error), and
the estimate with the true relevance plugged in (the error of the clicks' noise alone), and
the marginal log-likelihood of logistic EM's fit against the latent-class model's.

Clicks, rankers and the prepared dataset are cached in the workspace (``cltr``'s stages), so
a rerun only re-estimates. One BLAS thread.
"""

from __future__ import annotations

import argparse
import csv
import time
from functools import partial
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from cltr import cli
from cltr.pipeline.stages import clicks_stage, estimate_propensities, impressions_of, logging_rankers, production_stage
from cltr.pipeline.workspace import Workspace

ESTIMATORS = ("harvest", "em logistic", "em trees", "em classes", "swap", "randomize")
COLOURS = {
    "harvest": "black",
    "em logistic": "tab:blue",
    "em trees": "tab:green",
    "em classes": "tab:purple",
    "swap": "tab:red",
    "randomize": "tab:orange",
}


def logs_for(workspace, name, dataset, rankers, eta, seed, depth):
    """The click artifacts each estimator reads, for one eta and click seed."""
    settings = {"eta": eta, "eps_neg": 0.1}
    common = {"passes": 100, "seed": seed}
    single, _ = clicks_stage(workspace, name, dataset, rankers[0], settings, **common)
    swap, _ = clicks_stage(
        workspace, name, dataset, rankers[0], settings, **common, intervention="swap-k", intervention_depth=depth
    )
    randomize, _ = clicks_stage(
        workspace,
        name,
        dataset,
        rankers[0],
        settings,
        **common,
        intervention="randomize-top-k",
        intervention_depth=depth,
    )
    two, _ = clicks_stage(workspace, name, dataset, list(rankers), settings, **common)
    return {
        "harvest": (two, "harvest", "logistic"),
        "em logistic": (single, "em", "logistic"),
        "em trees": (single, "em", "trees"),
        "em classes": (single, "em", "classes"),
        "swap": (swap, "swap", "logistic"),
        "randomize": (randomize, "swap", "logistic"),
    }


def run(args, workspace, name, dataset, rankers) -> list[dict]:
    rows = []
    for eta in args.etas:
        truth = (1.0 / np.arange(1, args.max_rank + 1)) ** eta
        for seed in range(args.seeds):
            for estimator, (clicks, method, relevance) in logs_for(
                workspace, name, dataset, rankers, eta, seed, args.max_rank
            ).items():
                if estimator not in args.estimators:
                    continue
                table = impressions_of(clicks, "train", dataset)
                bootstrap = args.tree_bootstrap if estimator == "em trees" else args.bootstrap
                start = time.process_time()
                estimate = estimate_propensities(
                    table,
                    dataset.train.X,
                    method=method,
                    max_rank=args.max_rank,
                    bootstrap=bootstrap,
                    level=args.level,
                    seed=seed,
                    relevance_model=relevance,
                )
                seconds = time.process_time() - start
                for k in range(args.max_rank):
                    rows.append(
                        {
                            "estimator": estimator,
                            "eta": eta,
                            "seed": seed,
                            "rank": k + 1,
                            "truth": truth[k],
                            "propensity": estimate.propensity[k],
                            "low": estimate.low[k],
                            "high": estimate.high[k],
                            "bootstrap": bootstrap,
                            "seconds": seconds,
                        }
                    )
                error = estimate.propensity[1:] / truth[1:] - 1.0
                print(
                    f"eta {eta:g} seed {seed} {estimator:12s} {seconds:6.1f} s  MAPE {np.mean(np.abs(error)):6.1%}"
                    f"  signed {np.mean(error):+6.1%}",
                    flush=True,
                )
    return rows


def summarise(rows, etas, level) -> None:
    for eta in etas:
        mine = [r for r in rows if r["eta"] == eta]
        ranks = sorted({r["rank"] for r in mine})[1:]
        seeds = len({r["seed"] for r in mine})
        print(
            f"\neta {eta:g}, {seeds} click seeds, ranks {ranks[0]}..{ranks[-1]}: signed error per rank "
            f"(mean over seeds), MAPE, mean signed, {level:.0%} band coverage (seeds x ranks), CPU s per estimate"
        )
        print(f"{'estimator':12s} " + " ".join(f"{k:>6d}" for k in ranks) + "    MAPE  signed  cover      s")
        for estimator in ESTIMATORS:
            cells = [r for r in mine if r["estimator"] == estimator and r["rank"] > 1]
            if not cells:
                continue
            error = np.array([r["propensity"] / r["truth"] - 1.0 for r in cells])
            rank = np.array([r["rank"] for r in cells])
            covered = np.mean([r["low"] <= r["truth"] <= r["high"] for r in cells])
            seconds = np.mean([r["seconds"] for r in mine if r["estimator"] == estimator and r["rank"] == 1])
            per_rank = [error[rank == k].mean() for k in ranks]
            print(
                f"{estimator:12s} "
                + " ".join(f"{e:+6.1%}" for e in per_rank)
                + f"  {np.mean(np.abs(error)):6.1%}  {np.mean(error):+6.1%}  {covered:5.1%}  {seconds:5.1f}"
            )


def figure(rows, etas, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(etas) + 1, figsize=(3.6 * (len(etas) + 1), 3.6), constrained_layout=True)
    limit = 0.6
    for ax, eta in zip(axes[:-1], etas, strict=True):
        for estimator in ESTIMATORS:
            cells = [r for r in rows if r["eta"] == eta and r["estimator"] == estimator]
            if not cells:
                continue
            ranks = np.array(sorted({r["rank"] for r in cells}))
            error = np.array([[r["propensity"] / r["truth"] - 1.0 for r in cells if r["rank"] == k] for k in ranks])
            mape = np.mean(np.abs(error[1:]))
            label = f"{estimator} ({mape:.0%})" + (" off scale" if np.max(np.abs(error)) > limit else "")
            ax.plot(
                ranks,
                np.clip(error.mean(axis=1), -limit, limit),
                marker="o",
                ms=3,
                color=COLOURS[estimator],
                label=label,
            )
            ax.fill_between(
                ranks,
                np.clip(error.min(axis=1), -limit, limit),
                np.clip(error.max(axis=1), -limit, limit),
                color=COLOURS[estimator],
                alpha=0.12,
                lw=0,
            )
        ax.axhline(0.0, color="grey", lw=0.8)
        ax.set_ylim(-limit, limit)
        ax.set_title(f"eta {eta:g}")
        ax.set_xlabel("rank")
        ax.legend(fontsize=7, title="estimator (MAPE 2..K)", title_fontsize=7)
    axes[0].set_ylabel("estimate / (1/r)^eta - 1")
    ax = axes[-1]
    seconds = [np.mean([r["seconds"] for r in rows if r["estimator"] == e and r["rank"] == 1]) for e in ESTIMATORS]
    ax.barh(range(len(ESTIMATORS)), seconds, color=[COLOURS[e] for e in ESTIMATORS])
    ax.set_yticks(range(len(ESTIMATORS)), ESTIMATORS)
    ax.set_xscale("log")
    ax.set_xlabel("CPU s per estimate, band included")
    ax.set_title("time")
    seeds = len({r["seed"] for r in rows})
    fig.suptitle(
        f"Propensities from single-ranker logs, MQ2008 (harvest: two rankers); relative error per rank, "
        f"mean and min-max over {seeds} click seeds"
    )
    fig.savefig(path, dpi=110)
    plt.close(fig)


def diagnose(args, workspace, name, dataset, rankers) -> None:
    from cltr.core import propensity as P
    from cltr.methods.trees import soft_label_trees

    for eta in args.etas:
        truth = (1.0 / np.arange(1, args.max_rank + 1)) ** eta
        clicks, _ = clicks_stage(workspace, name, dataset, rankers[0], {"eta": eta, "eps_neg": 0.1}, passes=100, seed=0)
        t = impressions_of(clicks, "train", dataset)
        data = P._em_data(
            P._check_table(t.query, t.doc, t.rank, None, t.impressions, t.clicks), dataset.train.X, args.max_rank
        )
        theta, coef, *_ = P._em_fit(data, iterations=100, tol=1e-6, l2=1.0, newton_steps=1)
        logits = data.features @ coef
        fit = partial(soft_label_trees, seed=1)
        print(
            f"\neta {eta:g}, seed 0: tree EM steps from the logistic EM fit (no Newton step); signed error "
            f"per rank 2..{args.max_rank}"
        )

        def show(step, theta, logits, data=data, truth=truth):
            error = (theta / theta[0])[1:] / truth[1:] - 1.0
            loglik = P._em_loglik(data, theta, np.zeros(0), logits, np.zeros(0))
            print(
                f"{step:>8}  loglik {loglik:12.1f}  MAPE {np.mean(np.abs(error)):6.1%}  signed {np.mean(error):+6.1%}"
                f"  " + " ".join(f"{e:+.2f}" for e in error),
                flush=True,
            )

        show("logistic", theta, logits)
        for step in range(1, args.iterations + 1):
            theta, logits = P._em_tree_step(data, theta, logits, fit)
            show(step, theta, logits)


def why(args, workspace, name, dataset, rankers) -> None:
    """Why logistic EM is biased on one ranker's log: per rank k, the mean relevance of the
    documents shown there, true (eps+ = 1 for label 2, eps- = 0.1) and as the logistic EM fit has
    it. On such a log theta_k is fitted to rank k's click rate over the fitted mean relevance
    there, so (fitted / true, relative to rank 1) - 1 is, to first order, minus theta_k's error.
    Also the estimate with the true relevance plugged in (theta_k = click rate / true mean
    relevance): the error the clicks' noise alone leaves."""
    from scipy.special import expit

    from cltr.core import propensity as P

    for eta in args.etas:
        truth = (1.0 / np.arange(1, args.max_rank + 1)) ** eta
        for seed in range(args.seeds):
            clicks, _ = clicks_stage(
                workspace, name, dataset, rankers[0], {"eta": eta, "eps_neg": 0.1}, passes=100, seed=seed
            )
            t = impressions_of(clicks, "train", dataset)
            table = P._check_table(t.query, t.doc, t.rank, None, t.impressions, t.clicks)
            data = P._em_data(table, dataset.train.X, args.max_rank)
            theta, coef, _, converged, _ = P._em_fit(data, iterations=100, tol=1e-6, l2=1.0, newton_steps=1)
            pen = P._penalty(data.features.shape[1], 1.0)
            # the unit's document, as _em_data numbers them (one row per unit and rank here)
            keep = (table.rank <= args.max_rank) & (table.impressions > 0)
            _, qi = P._factorize(table.query[keep])
            docs, di = P._factorize(table.doc[keep])
            units, _ = P._factorize(qi * np.int64(len(docs)) + di)
            relevance = np.where(dataset.train.relevant(2)[docs[units % len(docs)]], 1.0, 0.1)
            k0, n = data.cell_rank0, data.cell_impressions

            def per_rank(values, k0=k0, n=n, data=data):
                return np.bincount(k0, weights=n * values[data.cell_unit], minlength=args.max_rank) / np.bincount(
                    k0, weights=n, minlength=args.max_rank
                )

            true_mean = per_rank(relevance)
            fitted_mean = per_rank(expit(data.features @ coef))
            ctr = np.bincount(k0, weights=data.cell_clicks, minlength=args.max_rank) / np.bincount(
                k0, weights=n, minlength=args.max_rank
            )
            oracle = (ctr / true_mean) / (ctr[0] / true_mean[0])
            misfit = (fitted_mean / fitted_mean[0]) / (true_mean / true_mean[0]) - 1.0
            em_error = (theta / theta[0])[1:] / truth[1:] - 1.0
            oracle_error = oracle[1:] / truth[1:] - 1.0
            print(
                f"\neta {eta:g} seed {seed}, ranks 2..{args.max_rank} (logistic EM converged: {converged}; "
                f"impressions per (query, document) and rank: {data.cell_impressions.min():g}.."
                f"{data.cell_impressions.max():g})"
            )
            print("  true mean relevance      " + " ".join(f"{v:6.3f}" for v in true_mean[1:]))
            print("  logistic fit's           " + " ".join(f"{v:6.3f}" for v in fitted_mean[1:]))
            print("  misfit, fitted/true - 1  " + " ".join(f"{v:+6.1%}" for v in misfit[1:]))
            print(
                "  logistic EM error        "
                + " ".join(f"{v:+6.1%}" for v in em_error)
                + f"   MAPE {np.mean(np.abs(em_error)):5.1%}"
            )
            print(
                "  true relevance plugged in"
                + " ".join(f"{v:+6.1%}" for v in oracle_error)
                + f"   MAPE {np.mean(np.abs(oracle_error)):5.1%}"
            )
            # the two relevance models' marginal log-likelihoods of the same click counts (binomial
            # coefficients left out of both): which one a likelihood choice would take
            from cltr.core.propensity import em_classes

            c_theta, levels, W, *_ = em_classes.classes_fit(
                data, classes=2, iterations=100, tol=1e-6, l2=1.0, logistic_theta=theta
            )
            prior = em_classes.prior_features(data)
            logistic = P._em_loglik(data, theta, coef, data.features @ coef, pen)
            latent = em_classes.classes_loglik(data, prior, c_theta, levels, W, P._penalty(prior.shape[1], 1.0))
            latent_error = (c_theta / c_theta[0])[1:] / truth[1:] - 1.0
            print(
                f"  marginal log-likelihood: logistic {logistic:.1f}, latent classes {latent:.1f} (its MAPE "
                f"{np.mean(np.abs(latent_error)):.1%})",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--mq2008",
        type=Path,
        help="the LETOR 4.0 MQ2008 folder (Fold1..Fold5); needed unless the workspace holds the prepared fold",
    )
    parser.add_argument("--fold", type=int, default=1)
    parser.add_argument("--workdir", type=Path, default=Path("cltr-bench-propensity"))
    parser.add_argument("--etas", default="0.5,1,1.5,2", help="comma-separated true etas")
    parser.add_argument("--seeds", type=int, default=5, help="click seeds 0..SEEDS-1")
    parser.add_argument("--max-rank", type=int, default=10, help="K: ranks 1..K estimated; also the intervention depth")
    parser.add_argument("--level", type=float, default=0.9)
    parser.add_argument("--bootstrap", type=int, default=100, help="query resamples of every band but tree EM's")
    parser.add_argument("--tree-bootstrap", type=int, default=20, help="query resamples of tree EM's (refit) band")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("docs/results/data/propensity-single-ranker"),
        help="writes OUT.csv and OUT.png",
    )
    parser.add_argument(
        "--estimators", default=",".join(ESTIMATORS), help=f"comma-separated subset of {', '.join(ESTIMATORS)}"
    )
    parser.add_argument("--diagnose", action="store_true", help="follow tree EM step by step instead (no files)")
    parser.add_argument("--iterations", type=int, default=15, help="tree EM steps of --diagnose")
    parser.add_argument(
        "--why",
        action="store_true",
        help="instead, per rank, the true mean relevance against the "
        "logistic EM fit's, and the estimate with the true relevance plugged in (no files)",
    )
    parser.add_argument("--replot", action="store_true", help="redraw OUT.png from OUT.csv and print its tables")
    args = parser.parse_args()
    args.etas = [float(e) for e in args.etas.split(",")]
    args.estimators = [e.strip() for e in args.estimators.split(",")]
    if set(args.estimators) - set(ESTIMATORS):
        parser.error(
            f"--estimators: unknown {', '.join(sorted(set(args.estimators) - set(ESTIMATORS)))}; known: "
            f"{', '.join(ESTIMATORS)}"
        )
    if args.replot:
        with open(args.out.with_suffix(".csv"), newline="") as stream:
            rows = [
                {
                    k: v if k == "estimator" else int(v) if k in ("seed", "rank", "bootstrap") else float(v)
                    for k, v in row.items()
                }
                for row in csv.DictReader(stream)
            ]
        etas = sorted({r["eta"] for r in rows})
        summarise(rows, etas, args.level)
        figure(rows, etas, args.out.with_suffix(".png"))
        return
    workspace = Workspace(args.workdir)
    name = f"letor-fold{args.fold}"
    if not workspace.has_dataset(name):  # as `cltr prepare letor` prepares it
        if args.mq2008 is None:
            parser.error(f"{args.workdir} holds no prepared {name}; give --mq2008 DIR")
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
    # the second ranker as `cltr simulate --rankers 2` makes it: the same recipe on another sample
    rankers = logging_rankers(workspace, name, dataset, record["fingerprint"], production, 2)
    with threadpool_limits(1):
        if args.diagnose:
            diagnose(args, workspace, name, dataset, rankers)
            return
        if args.why:
            why(args, workspace, name, dataset, rankers)
            return
        start = time.perf_counter()
        rows = run(args, workspace, name, dataset, rankers)
    summarise(rows, args.etas, args.level)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out.with_suffix(".csv"), "w", newline="") as stream:
        writer = csv.DictWriter(stream, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    figure(rows, args.etas, args.out.with_suffix(".png"))
    print(
        f"\n{time.perf_counter() - start:.0f} s wall; wrote {args.out.with_suffix('.csv')} and "
        f"{args.out.with_suffix('.png')}"
    )


if __name__ == "__main__":
    main()
