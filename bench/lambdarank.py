"""LightGBM on clicks (LambdaRank, Tree PropDCG): the full grid, candidate by candidate, and its time.

    python bench/lambdarank.py --mq2008 ../shared/data/letor4/MQ2008 [--fold 1] [--passes 100]
    python bench/lambdarank.py --mq2008 DIR --method tree-propdcg   (that method's grid)
    python bench/lambdarank.py --synthetic

One repetition (seed 0): production ranker, clicks (eta 1, eps_neg 0.1, 100 passes), then
the full grid (learning rate 0.001/0.01/0.1 x leaves 2..256, trees by early stopping on
validation clicks), printing each candidate's row and the grid's wall time. Every method
side by side over seeds: ``bench/compare.py``.
"""

import argparse
import time

from compare import data_arguments, load, setup, test_metrics

from cltr.methods import train


def grid(dataset, passes, threads, method="lambdarank"):
    production, data, relevant = setup(dataset, 0, passes)
    print(
        f"{len(data.train_log)} training clicks, {len(data.vali_log)} validation clicks, "
        f"{dataset.train.n_docs} training documents; LightGBM threads {threads}"
    )
    print(f"{'lr':>6} {'leaves':>6} {'trees':>5} {'grown':>5} {'vali SNIPS':>10} {'seconds':>7}")

    def show(row):
        print(
            f"{row['learning_rate']:6g} {row['num_leaves']:6d} {row['n_estimators']:5d} {row['rounds']:5d} "
            f"{row['validation_snips_avg_dcg']:10.4f} {row['seconds']:7.2f}",
            flush=True,
        )

    start = time.perf_counter()
    scorer, info = train(method, data, {"threads": threads}, progress=show)
    seconds = time.perf_counter() - start
    print(
        f"full grid ({len(info['selection'])} candidates): {seconds:.1f} s; chosen {info['chosen']}, "
        f"validation SNIPS Avg DCG {info['validation_snips_avg_dcg']:.4f}"
    )
    print(
        f"test Avg DCG: {method} {test_metrics(scorer, dataset, relevant, 0)['avg_dcg']:.4f}, "
        f"production {test_metrics(production, dataset, relevant, 0)['avg_dcg']:.4f}"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    data_arguments(parser)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--method", default="lambdarank", choices=["lambdarank", "tree-propdcg"], help="whose grid to time"
    )
    args = parser.parse_args()
    grid(load(args), args.passes, args.threads, args.method)


if __name__ == "__main__":
    main()
