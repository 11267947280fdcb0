"""How closely harvesting recovers the generator's position bias from preprocessed Baidu-ULTR files.

For each seed: ``write_preprocessed`` (150 queries x 70 sessions, Baidu-ULTR's bias at
positions 1-10), ``load_baidu_ultr`` with ``--rank-gaps drop``, then intervention harvesting
on the train split's click log. Prints the largest absolute error over ranks 1-10 per seed:
the spread that ``tests/data/test_baidu_preprocessed.py`` sets its tolerance (0.08) from.

    python bench/baidu_preprocessed.py [--seeds 12] [--queries 150] [--sessions 70]
"""

from __future__ import annotations

import argparse
import tempfile

import numpy as np

from cltr import api
from cltr.data.baidu_generator import BAIDU_PROPENSITY, write_preprocessed
from cltr.data.baidu_preprocessed import load_baidu_ultr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=12)
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--sessions", type=int, default=70, help="sessions per query")
    args = parser.parse_args()
    errors = []
    print("seed  largest error  at rank")
    for seed in range(args.seeds):
        with tempfile.TemporaryDirectory() as folder:
            truth = write_preprocessed(folder, n_queries=args.queries, sessions_per_query=args.sessions, seed=seed)
            data = load_baidu_ultr(f"{folder}/part-1_split-*.feather", truth.annotations, f"{folder}/logs", seed=seed)
            log = api.read_click_log(data.meta["click_logs"]["train"], data.train)
            estimate = api.estimate_propensities(log, data.train, method="harvest", bootstrap=0, max_rank=10)
        found = np.array([row["propensity"] for row in estimate.to_rows()])
        error = np.abs(found - BAIDU_PROPENSITY)
        errors.append(error.max())
        print(f"{seed:4d}  {error.max():13.3f}  {int(error.argmax()) + 1:7d}")
    print(f"over {args.seeds} seeds: {min(errors):.3f} to {max(errors):.3f}")


if __name__ == "__main__":
    main()
