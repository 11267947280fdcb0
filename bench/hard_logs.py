"""Every method at its defaults on easy and hard click logs, over click seeds, with paired
statistics against the production ranker and the tree libraries' own debiasing.

    python bench/hard_logs.py --mq2008 ../shared/data/letor4/MQ2008 [--fold 1] [--seeds 6]
        [--logs 1:0.1,2:0.3] [--methods a,b,...] [--workdir DIR] [--out results/hard_logs.csv]
    python bench/hard_logs.py --synthetic [...]

Per log (eta:eps_neg) and click seed: one production ranker (seed 0, the same for every
log, as a deployed ranker is), 100 passes of position-based clicks drawn with that seed,
then every method trained exactly as ``cltr train METHOD`` trains it at its defaults
(the same stages, the same workspace cache: an interrupted run resumes), evaluated on the
test labels. Prints each run, the mean and standard deviation per method and log, and
paired tests (t and Wilcoxon over seeds) of every method against production and of cltr's
best own method against each library baseline.

A method entry may carry options, ``METHOD@name=value@name=value`` (e.g.
``svm-propdcg@criterion=dr``): a column of its own, also paired against ``METHOD`` at its
defaults when that runs too.
"""

from __future__ import annotations

import argparse
import csv
import time
import tomllib
from pathlib import Path

import numpy as np

from cltr import cli
from cltr import methods as registry
from cltr.core.statistics import paired_tests
from cltr.pipeline.stages import clicks_stage, evaluation_stage, model_stage, production_stage
from cltr.pipeline.workspace import Workspace

LIBRARY = ("xgboost-unbiased", "lightgbm-position")
NOT_COUNTERFACTUAL = ("skyline", "svm-rank", "lambdarank", *LIBRARY)


def parse_logs(text: str) -> list[tuple[float, float]]:
    logs = []
    for item in text.split(","):
        eta, eps = item.split(":")
        logs.append((float(eta), float(eps)))
    return logs


def method_options(entry: str) -> tuple[str, dict]:
    """``METHOD@name=value...`` -> (METHOD, its options as the spec's strings give them)."""
    method, *settings = entry.split("@")
    options = {}
    for setting in settings:
        key, _, value = setting.partition("=")
        options[key] = registry.get(method).parse_options({key: _literal(value)}).to_dict()[key] if value else value
    return method, options


def _literal(text: str):
    """A setting's value as a spec would hold it: a TOML number or boolean, else the string."""
    try:
        return tomllib.loads(f"value = {text}")["value"]
    except tomllib.TOMLDecodeError:
        return text


def run(workspace: Workspace, name: str, dataset, fingerprint: str, logs, seeds, method_names, out: Path):
    production, _ = production_stage(workspace, name, dataset, fingerprint, seed=0)
    rows = []
    for eta, eps in logs:
        for seed in seeds:
            clicks, _ = clicks_stage(
                workspace, name, dataset, production, {"eta": eta, "eps_neg": eps}, passes=100, seed=seed
            )
            row = {
                "eta": eta,
                "eps_neg": eps,
                "seed": seed,
                "production": production.info["test"]["avg_dcg"],
                "train_clicks": clicks.info["train"]["clicks"],
            }
            for method in method_names:
                start = time.perf_counter()
                model, reused = model_stage(workspace, name, dataset, clicks, *method_options(method), seed=seed)
                seconds = time.perf_counter() - start
                evaluation, _ = evaluation_stage(workspace, name, dataset, model, clicks, seed=seed)
                row[method] = evaluation.info["avg_dcg"]
                row[f"{method} seconds"] = float("nan") if reused else seconds
                row[f"{method} chosen"] = " ".join(f"{k}={v}" for k, v in model.info.get("chosen", {}).items())
            rows.append(row)
            print(
                f"eta {eta:g} eps- {eps:g} seed {seed}: production {row['production']:.4f}  "
                + "  ".join(f"{m} {row[m]:.4f}" for m in method_names),
                flush=True,
            )
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="") as stream:
        writer = csv.DictWriter(stream, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return rows


def report(rows, logs, method_names) -> None:
    for eta, eps in logs:
        mine = [r for r in rows if r["eta"] == eta and r["eps_neg"] == eps]
        production = np.array([r["production"] for r in mine])
        print(
            f"\neta {eta:g}, eps- {eps:g}: {len(mine)} click seeds, "
            f"{np.mean([r['train_clicks'] for r in mine]):.0f} training clicks on average; "
            f"production {production[0]:.4f}"
        )
        print(
            f"{'method':>20}  {'test Avg DCG':>16}  {'vs production':>14}  {'p (t)':>8}  {'wins':>5}  "
            f"{'train s':>8}  chosen (seed 0)"
        )
        for method in method_names:
            values = np.array([r[method] for r in mine])
            test = paired_tests(production, values)
            seconds = (
                np.nanmean([r[f"{method} seconds"] for r in mine])
                if any(np.isfinite(r[f"{method} seconds"]) for r in mine)
                else float("nan")
            )
            print(
                f"{method:>20}  {values.mean():.4f} ± {values.std(ddof=1) if len(values) > 1 else 0:.4f}  "
                f"{values.mean() - production.mean():+14.4f}  {test['p_t']:8.2g}  "
                f"{int(np.sum(values > production)):>2}/{len(values)}  {seconds:8.1f}  {mine[0][method + ' chosen']}"
            )
        for variant in method_names:
            base = variant.split("@")[0]
            if variant != base and base in method_names:
                a, b = np.array([r[base] for r in mine]), np.array([r[variant] for r in mine])
                test = paired_tests(a, b)
                print(
                    f"{variant} vs {base}: {b.mean() - a.mean():+.4f} (paired t p {test['p_t']:.2g}, Wilcoxon p "
                    f"{test['p_wilcoxon']:.2g}, {int(np.sum(b > a))}/{len(a)} seeds better, "
                    f"{int(np.sum(b == a))} equal)"
                )
        own = [m for m in method_names if m.split("@")[0] not in NOT_COUNTERFACTUAL]
        libraries = [m for m in method_names if m.split("@")[0] in LIBRARY]
        if not own or not libraries:
            continue
        best = max(own, key=lambda m: np.mean([r[m] for r in mine]))
        for library in libraries:
            a = np.array([r[library] for r in mine])
            b = np.array([r[best] for r in mine])
            test = paired_tests(a, b)
            print(
                f"best own {best} vs {library}: {b.mean() - a.mean():+.4f} (paired t p {test['p_t']:.2g}, "
                f"Wilcoxon p {test['p_wilcoxon']:.2g}, {int(np.sum(b > a))}/{len(a)} seeds better)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--mq2008", type=Path)
    source.add_argument("--synthetic", action="store_true")
    parser.add_argument("--fold", type=int, default=1)
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument(
        "--first-seed",
        type=int,
        default=0,
        help="run seeds FIRST .. FIRST + SEEDS - 1 (to split a run over processes sharing one --workdir)",
    )
    parser.add_argument("--logs", default="1:0.1,2:0.3", help="eta:eps_neg pairs, comma-separated")
    parser.add_argument(
        "--methods",
        default=None,
        help="comma-separated, each METHOD or METHOD@name=value@... [default: every registered method at its defaults]",
    )
    parser.add_argument("--workdir", type=Path, default=Path("cltr-bench-hard-logs"))
    parser.add_argument("--out", type=Path, default=Path("results/hard_logs.csv"))
    args = parser.parse_args()
    workspace = Workspace(args.workdir)
    if args.mq2008 is not None:
        name = f"letor-fold{args.fold}"
        prepare = ["prepare", "letor", "--mq2008", str(args.mq2008), "--fold", str(args.fold), "--name", name]
    else:
        name, prepare = "synthetic", ["prepare", "synthetic"]
    if not workspace.has_dataset(name):  # as `cltr prepare` prepares it (the metric convention included)
        cli.main(["--workdir", str(args.workdir), "-q", *prepare], standalone_mode=False)
    dataset, record = workspace.load_dataset(name)
    method_names = args.methods.split(",") if args.methods else list(registry.methods())
    logs = parse_logs(args.logs)
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    rows = run(workspace, name, dataset, record["fingerprint"], logs, seeds, method_names, args.out)
    report(rows, logs, method_names)


if __name__ == "__main__":
    main()
