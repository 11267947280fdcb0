"""Put one method's rows of a fresh figure run in place of its rows in a stored figure, redraw
the figure from the merged rows, and print how that method pairs with every other.

    python bench/merge_figure_rows.py --figure docs/results/data/robustness-default.csv \
        --fresh FRESH/robustness.csv --method tree-two-tower --spec robustness \
        --workdir FRESH/cltr-work [--dataset synthetic] --out OUT

FRESH is a run of a copy of the spec naming the method alone (``methods = [METHOD]``,
``compare_to = []``: ``cltr figures SPEC --specs DIR``), in a fresh workspace: what a figure
needs when one method changes and computing every method again would take hours. The fresh
run's references (production, skyline) are compared row by row with the stored figure's, and
so are the training clicks of every run: a paired comparison of the method with another one
is a comparison on the same log only where those agree, and the counts say where they do.
Writes OUT/SPEC.csv, .md (with the spec's paired tests per point), .tex, .png and .pdf from the
merged rows (``cltr.pipeline.report.write_outputs``, as ``cltr figures`` writes them).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

KEYS = ["repetition", "point_eps_neg", "point_eta", "method"]


def merged_rows(stored: pd.DataFrame, fresh: pd.DataFrame, method: str, keys=KEYS) -> pd.DataFrame:
    """``stored`` with ``method``'s rows taken from ``fresh``, in ``stored``'s row order."""
    if not (stored.method == method).any():
        raise ValueError(f"the stored figure has no row of {method!r}")
    replacement = fresh[fresh.method == method].set_index(keys)
    mine = stored[stored.method == method].set_index(keys)
    missing = mine.index.difference(replacement.index)
    if len(missing):
        raise ValueError(f"the fresh run lacks {len(missing)} of {method!r}'s runs, e.g. {missing[0]}")
    rows = pd.concat([stored[stored.method != method], replacement.loc[mine.index].reset_index()[stored.columns]])
    return rows.set_index(keys).loc[stored.set_index(keys).index].reset_index()[stored.columns]


def agreement(stored: pd.DataFrame, fresh: pd.DataFrame, method: str, keys=KEYS) -> dict:
    """Per method present in both runs: rows, rows with the same test Avg DCG to the last digit,
    the largest and the mean difference (fresh - stored), rows higher in the fresh run, and rows
    whose training clicks agree."""
    report = {}
    for name in sorted(set(fresh.method) & set(stored.method)):
        a = stored[stored.method == name].set_index(keys).sort_index()
        b = fresh[fresh.method == name].set_index(keys).reindex(a.index)
        report[name] = {
            "rows": len(a),
            "identical": int((a["avg_dcg"] == b["avg_dcg"]).sum()),
            "largest_difference": float(np.nanmax(np.abs(a["avg_dcg"] - b["avg_dcg"]))),
            "mean_difference": float(np.nanmean(b["avg_dcg"] - a["avg_dcg"])),
            "higher": int((b["avg_dcg"] > a["avg_dcg"]).sum()),
            "same_clicks": int((a["train_clicks"] == b["train_clicks"]).sum()),
        }
    return report


def main() -> None:
    from cltr.core.statistics import paired_tests
    from cltr.pipeline.experiments import load_spec
    from cltr.pipeline.report import write_outputs
    from cltr.pipeline.workspace import Workspace

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--figure", type=Path, required=True, help="the stored figure's CSV")
    parser.add_argument("--fresh", type=Path, required=True, help="the fresh run's CSV")
    parser.add_argument("--method", required=True)
    parser.add_argument("--spec", required=True, help="the figure's spec (its name in experiments/)")
    parser.add_argument("--workdir", type=Path, required=True, help="the fresh run's workspace (dataset record)")
    parser.add_argument("--dataset", default=None, help="the dataset [default: the spec's]")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    stored, fresh = pd.read_csv(args.figure), pd.read_csv(args.fresh)
    for name, row in agreement(stored, fresh, args.method).items():
        print(
            f"{name}: {row['rows']} rows, {row['identical']} identical, largest difference "
            f"{row['largest_difference']:.6f}, mean (fresh - stored) {row['mean_difference']:+.4f}, higher in "
            f"{row['higher']}; training clicks the same in {row['same_clicks']}"
        )
    merged = merged_rows(stored, fresh, args.method)
    spec = load_spec(args.spec).resolved(dataset=args.dataset)
    records = {spec.dataset: Workspace(args.workdir).dataset_record(spec.dataset)}
    paths = write_outputs(merged, spec, args.out, records=records)
    print("wrote", ", ".join(str(p) for p in paths.values()))

    table = merged.pivot_table(index=KEYS[:3], columns="method", values="avg_dcg")
    print(f"\n{args.method} against every other method over all {len(table)} runs (paired):")
    for other in table.columns.drop(args.method):
        test = paired_tests(table[other].to_numpy(), table[args.method].to_numpy())
        print(
            f"  vs {other:20s} {test['mean_difference']:+.4f}  better in {test['wins']}/{test['n']}  "
            f"t p {test['p_t']:.2g}  Wilcoxon p {test['p_wilcoxon']:.2g}"
        )
    print(f"\nmeans per point:\n{table.groupby(level=[1, 2]).mean().round(4).to_string()}")


if __name__ == "__main__":
    main()
