"""One Tree PBM candidate's boosting path on a hard log of the embedded default, tree by tree:
what each early-stopping criterion would have read (the validation clicks' SNIPS Avg DCG
clipped at TAU_v, as every selection reads it; the same unclipped; the PBM log-likelihood per
impression of the displayed validation documents, ``--stopping likelihood``) beside the test
Avg DCG (cltr/methods/tree_pbm.py, docs/explanation/methods.md).

    python bench/stopping_path.py [--seed 0] [--eta 2] [--eps-neg 0.3] [--learning-rate 0.1]
        [--num-leaves 256] [--trees 200] [--every 20] [--workdir cltr-bench-hard-logs]

The log is ``bench/hard_logs.py --synthetic``'s (one production ranker, seed 0; 100 passes
drawn with the click seed; the same workspace reuses both), the trees those of ``cltr train
tree-pbm --learning-rate R --num-leaves L`` on it (same seed and parameters), not stopped.
Measured (2026-11-26, ``--seed 0``; TAU_v 0.003), the defaults (256 leaves), then ``--num-leaves 4
--every 40``, first and last lines of each:

    trees  snips@TAU_v  snips  log-lik  test
       20       0.4794 0.3833 -0.040393 0.6275      (256 leaves)
      200       0.5042 0.3889 -0.041290 0.6204
       40       0.4923 0.3960 -0.040284 0.6486      (4 leaves)
      200       0.4938 0.3951 -0.040080 0.6714
"""

from __future__ import annotations

import argparse
from pathlib import Path

import lightgbm as lgb
import numpy as np

from cltr import cli
from cltr.core.doubly_robust import impressions_by_propensity
from cltr.core.ranking import evaluate
from cltr.core.seeds import stream
from cltr.methods import TrainingData
from cltr.methods.tree_pbm import PBMObjective, TreePBMOptions, held_out_likelihood
from cltr.methods.trees import _Precomputed, _tree_sets, lightgbm_params
from cltr.pipeline.stages import clicks_stage, production_stage
from cltr.pipeline.stages.clicks import click_logs, displayed_rows
from cltr.pipeline.stages.propensities import validation_tau
from cltr.pipeline.workspace import Workspace


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0, help="click seed (the model's seed too, as hard_logs.py)")
    parser.add_argument("--eta", type=float, default=2.0)
    parser.add_argument("--eps-neg", type=float, default=0.3)
    parser.add_argument("--learning-rate", type=float, default=0.1)
    parser.add_argument("--num-leaves", type=int, default=256)
    parser.add_argument("--trees", type=int, default=200)
    parser.add_argument("--every", type=int, default=20, help="print every this many trees")
    parser.add_argument("--workdir", type=Path, default=Path("cltr-bench-hard-logs"))
    args = parser.parse_args()
    workspace, name = Workspace(args.workdir), "synthetic"
    if not workspace.has_dataset(name):
        cli.main(["--workdir", str(args.workdir), "-q", "prepare", "synthetic"], standalone_mode=False)
    dataset, record = workspace.load_dataset(name)
    production, _ = production_stage(workspace, name, dataset, record["fingerprint"], seed=0)
    clicks, _ = clicks_stage(
        workspace, name, dataset, production, {"eta": args.eta, "eps_neg": args.eps_neg}, passes=100, seed=args.seed
    )
    _, plain_vali = click_logs(clicks)
    tau_v = validation_tau(plain_vali)
    train_log, vali_log = click_logs(clicks, dataset=dataset, validation_clip=tau_v)
    _, unclipped_vali = click_logs(clicks, dataset=dataset)

    def rows(split):
        return displayed_rows(clicks, split, dataset)

    clipped = TrainingData(dataset, train_log, vali_log, args.seed, rows=rows)
    unclipped = TrainingData(dataset, train_log, unclipped_vali, args.seed, rows=rows)
    train_rows = impressions_by_propensity(clipped.displayed("train"))
    likelihood = held_out_likelihood(impressions_by_propensity(clipped.displayed("vali")))
    seed = int(stream(args.seed, "tree-pbm").integers(2**31 - 1))  # select_trees' seed for tree-pbm
    params = {
        **lightgbm_params(
            learning_rate=args.learning_rate, num_leaves=args.num_leaves, seed=seed, threads=1, objective="none"
        ),
        "lambda_l2": TreePBMOptions().leaf_l2,
    }
    sets = _tree_sets(
        dataset.train.X[train_rows.doc],
        label=np.zeros(len(train_rows.doc)),
        group=None,
        valid_X=None,
        threads=1,
    )
    booster = lgb.Booster(params=params, train_set=sets.train)
    objective = PBMObjective(train_rows)
    relevant = dataset.test.relevant(dataset.relevant_from)
    print(f"TAU_v {tau_v}; learning rate {args.learning_rate}, {args.num_leaves} leaves")
    print("trees  snips@TAU_v  snips  log-lik  test")
    for tree in range(1, args.trees + 1):
        booster.update(fobj=objective)
        if tree % args.every:
            continue
        vali_scores = booster.predict(dataset.vali.X, raw_score=True)
        vali = _Precomputed(vali_scores)
        test = _Precomputed(booster.predict(dataset.test.X, raw_score=True))
        avg_dcg = evaluate(test, dataset.test, relevant, rng=stream(args.seed, "evaluate"), dcg_base=dataset.dcg_base)
        print(
            f"{tree:5d}  {clipped.estimate(vali):11.4f} {unclipped.estimate(vali):6.4f} "
            f"{likelihood(vali_scores):8.6f} {avg_dcg['avg_dcg']:.4f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
