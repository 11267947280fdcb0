"""Why the latent-class EM's refit band under-covered: its replicates three ways, on the same resamples.

    python bench/propensity_classes_band.py --workdir ../ws-prop [--eta 1.5] [--first 1] [--logs 24]
                                            [--bootstrap 30] [--cold 3]

On MQ2008 single-ranker logs drawn as ``bench/propensity_coverage.py`` draws them (its seeds:
log i of eta e is ``[24, round(100 e), i]``, all the split's 471 queries resampled), it fits
``em --relevance-model classes`` (logistic EM's start and every start of ``classes_starts``) and
draws ``--bootstrap`` query resamples (seed i), each replicate

- ``scaled``: a query drawn m times as one copy with its counts times m (``_em_resample``),
  warm-started at the full-data fit (the band before ``_em_resample_copies``);
- ``copies``: m copies of its documents (``_em_resample_copies``), warm-started;
- ``cold``: copies, the whole estimate re-run (every start), on the first ``--cold`` resamples.

It prints per rank the replicates' mean minus the estimate and their sd over the sd of the
estimates over the logs (both relative to the truth (1/r)^eta), and how far ``cold`` lands
from ``copies`` on the same resample. One process, one BLAS thread.
"""

import argparse
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from cltr.core.propensity import em as E
from cltr.core.propensity import em_classes as C
from cltr.core.propensity.estimate import _check_table, _query_resamples


def full_fit(d):
    logistic = E._em_fit(d, iterations=100, tol=1e-6, l2=1.0, newton_steps=1)[0]
    return C.classes_fit(d, classes=2, iterations=100, tol=1e-6, l2=1.0, logistic_theta=logistic)


def main():
    import propensity_coverage as pc  # bench/, the same logs

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=Path("../ws-prop"), help="workspace of the prepared Fold 1")
    parser.add_argument("--mq2008", type=Path, help="the LETOR 4.0 MQ2008 folder, where --workdir lacks the fold")
    parser.add_argument("--eta", type=float, default=1.5, help="the true propensity is (1/rank)^eta")
    parser.add_argument("--first", type=int, default=1, help="index of the first log")
    parser.add_argument("--logs", type=int, default=24, help="logs")
    parser.add_argument("--bootstrap", type=int, default=30, help="query resamples per log")
    parser.add_argument("--cold", type=int, default=3, help="resamples per log also re-run from every start")
    args = parser.parse_args()
    setup = pc.mq2008_setup(argparse.Namespace(workdir=args.workdir, fold=1, mq2008=args.mq2008))
    truth = (1.0 / np.arange(1, 11)) ** args.eta
    estimates, reps = [], {k: [] for k in ("scaled", "copies", "cold")}
    with threadpool_limits(1):
        for log in range(args.first, args.first + args.logs):
            rng = np.random.default_rng([24, round(args.eta * 100), log])
            X, logs = pc.mq2008_logs(setup, eta=args.eta, passes=100, depth=10, rng=rng, resample=True)
            t = logs["em classes"]
            data = E._em_data(_check_table(t.query, t.doc, t.rank, None, t.impressions, t.clicks), X, 10)
            theta, levels, W, *_ = full_fit(data)
            estimates.append(theta / theta[0])
            counts = _query_resamples(data.n_queries, args.bootstrap, log)
            per = {k: np.full((args.bootstrap, 10), np.nan) for k in reps}
            for b in range(args.bootstrap):
                scaled = E._em_resample(data, counts[b])[0]
                copies = E._em_resample_copies(data, counts[b])
                for k, d in (("scaled", scaled), ("copies", copies)):
                    r = C.classes_fit(d, classes=2, iterations=100, tol=1e-6, l2=1.0, start=(theta, levels, W))
                    per[k][b] = r[0] / r[0][0]
                if b < args.cold:
                    r = full_fit(copies)
                    per["cold"][b] = r[0] / r[0][0]
            for k in reps:
                reps[k].append(per[k])
            print(f"  log {log}", flush=True)
    P = np.array(estimates)
    sd = P.std(axis=0, ddof=1)
    sd[0] = np.nan  # p_1 = 1 always
    np.set_printoptions(precision=3, suppress=True, linewidth=160)
    print(f"eta {args.eta:g}, logs {args.first}..{args.first + args.logs - 1}, {args.bootstrap} resamples; ranks 2..10")
    print("estimate - truth, mean over logs (relative)  ", (P / truth - 1.0).mean(axis=0)[1:])
    for k in ("scaled", "copies"):
        R = np.array(reps[k])
        print(f"{k:7s} replicates' mean - estimate (relative)", ((np.nanmean(R, axis=1) - P) / truth).mean(axis=0)[1:])
        print(f"{k:7s} replicates' sd / sd over logs       ", (np.nanstd(R, axis=1, ddof=1).mean(axis=0) / sd)[1:])
    cold, warm = np.array(reps["cold"])[:, : args.cold], np.array(reps["copies"])[:, : args.cold]
    gap = np.max(np.abs(cold - warm) / truth, axis=2)
    print(
        f"cold re-run against warm start, {gap.size} resamples: {np.sum(gap > 0.01)} differ by > 1% of the truth at "
        f"some rank, {np.sum(gap > 0.05)} by > 5% (largest {gap.max():.1%}); per rank the largest",
        np.max(np.abs(cold - warm) / truth, axis=(0, 1))[1:],
    )


if __name__ == "__main__":
    main()
