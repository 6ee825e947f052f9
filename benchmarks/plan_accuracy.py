"""How well `snakemake plan` predicts a job's time: on a finished run, calibrate the plan's rates
(blurbflow.plan.calibrate) from a random share of its jobs (default 25%) and predict the rest;
the error of a job is |predicted − actual| / actual, where actual is the sum of its seeds'
`wall_seconds` (what result.json times: a job's process start-up is not in it) and predicted is
its seeds × the calibrated seconds per seed, with the job's work as the plan knows it before
the job runs: its tokens as the calibration share's cells recorded them, else as its tokenized
cache counts them (written before any fine-tuning job runs), else its instances (prepared
stats.json or the task entry) padded to max_length. Prints the median error over the
predicted jobs, beside the table's figures alone (blurbflow.cluster.SIZES, no calibration) and
the size fit without task factors.

    .venv/bin/python benchmarks/plan_accuracy.py --root DIR --configfile FILE [--seed 0]
        [--repeats 5] [--share 0.25] [--min-cells 3] [--verbose]
    .venv/bin/python benchmarks/plan_accuracy.py --smoke   # synthetic results, seconds

`--smoke` writes a synthetic finished run into a scratch folder: two models (base, large) ×
six tasks × two recipes (one a grid of three learning rates) × three seeds: 72 jobs, each
recording its tokens (a fill of max_length per task), wall times following a + b·f·work (a, b
per size, f per task) with ±10% noise per job and per seed.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import sys
import tempfile
from collections import defaultdict

import yaml

from blurbflow.config import cell_jobs, expand_cells
from blurbflow.plan.calibrate import MIN_CELLS, Calibration, Sample
from blurbflow.plan.estimate import job_work
from blurbflow.plan.remaining import Scan, scan
from blurbflow.tasks import register_tasks


def load_run(root: str, configfile: str):
    with open(configfile) as handle:
        config = yaml.safe_load(handle)
    register_tasks(config)
    jobs = cell_jobs(expand_cells(config))
    sizes = {name: spec.get("size", "base") for name, spec in config["models"].items()}
    return config, jobs, sizes, scan(jobs, sizes, root)


def evaluate(
    config, jobs, sizes, found: Scan, root: str, seed: int, share: float, min_cells: int
) -> dict:
    """Calibrate on a random `share` of the finished jobs, predict the others."""
    by_job: dict[str, list[Sample]] = defaultdict(list)
    for sample in found.samples:
        by_job[sample.job].append(sample)
    finished = sorted(by_job)
    if len(finished) < 2:
        raise SystemExit(f"{root}: {len(finished)} finished jobs; need at least 2")
    count = min(len(finished) - 1, max(1, math.ceil(share * len(finished))))
    chosen = set(random.Random(seed).sample(finished, count))
    samples = [s for path in chosen for s in by_job[path]]
    # training-set sizes and tokens as the plan knows them before a job runs: from the
    # calibration share (the tokenized caches are read by job_work)
    seen = {k: v for k, v in found.instances.items() if any(s.task == k[0] for s in samples)}
    pairs = {(s.model, s.task) for s in samples}
    tokens = {k: v for k, v in found.tokens.items() if k[:2] in pairs}
    known = Scan({}, samples, seen, tokens)
    overrides = config.get("resources")
    models = {
        "calibrated": Calibration(samples, overrides, min_cells),
        "size fit only": _without_factors(Calibration(samples, overrides, len(samples) + 1)),
        "table": Calibration([], overrides),
    }
    errors: dict[str, list[float]] = defaultdict(list)
    rows = []
    for path in finished:
        if path in chosen:
            continue
        job = jobs[path]
        actual = sum(s.seconds for s in by_job[path])
        units = job_work(job, known, root)
        row = {"job": path, "actual": actual}
        for name, calibration in models.items():
            seconds, _, factor = calibration.seed_seconds(
                job.model, job.task, sizes[job.model], units
            )
            predicted = seconds * len(by_job[path])
            errors[name].append(abs(predicted - actual) / actual)
            row[name] = predicted
            if name == "calibrated":
                row["factor"] = factor
        rows.append(row)
    return {
        "calibration_jobs": count,
        "calibration_cells": len(samples),
        "predicted_jobs": len(rows),
        "factored": sum(1 for row in rows if row["factor"]),
        "median": {name: statistics.median(values) for name, values in errors.items()},
        "rows": rows,
    }


def _without_factors(calibration: Calibration) -> Calibration:
    calibration.factors = {}  # (no task reaches min_cells anyway)
    return calibration


def report(result: dict, seed: int, verbose: bool) -> None:
    median = result["median"]
    print(
        f"seed {seed}: calibrated on {result['calibration_jobs']} jobs "
        f"({result['calibration_cells']} cells), predicted {result['predicted_jobs']} jobs "
        f"({result['factored']} with a task factor): median |error| "
        f"{median['calibrated']:.0%} (size fit only {median['size fit only']:.0%}, "
        f"table {median['table']:.0%})"
    )
    if verbose:
        for row in result["rows"]:
            print(
                f"  {row['job']}: actual {row['actual']:.1f} s, predicted "
                f"{row['calibrated']:.1f} s (size fit only {row['size fit only']:.1f} s, "
                f"table {row['table']:.1f} s) {tuple(row['factor'])}"
            )


# -- a synthetic finished run for --smoke ---------------------------------------------------------
SMOKE_TASKS = {"gad": 1.6, "hoc": 0.8, "biosses": 0.5, "pubmedqa": 1.0, "chemprot": 1.3, "ddi": 0.9}
SMOKE_FILL = {
    "gad": 0.3,
    "hoc": 0.2,
    "biosses": 0.15,
    "pubmedqa": 0.5,
    "chemprot": 0.35,
    "ddi": 0.3,
}
SMOKE_RATES = {"base": (40.0, 9.0), "large": (70.0, 27.0)}  # seconds per seed, per unit of work


def smoke_config() -> dict:
    return {
        "code_version": "1",
        "data": {"source": "generated"},
        "models": {
            "m-base": {"path": "resources/models/m-base", "size": "base"},
            "m-large": {"path": "resources/models/m-large", "size": "large"},
        },
        "defaults": {"batch_size": 16},
        "recipes": {
            "standard": {
                "lr": [1e-3, 5e-4, 2e-4],
                "epochs": {"default": 3, "biosses": 10, "pubmedqa": 6},
            },
            "longer": {"extends": "standard", "epochs": {"default": 5, "biosses": 20}},
        },
        "studies": {
            "smoke": {
                "models": ["m-base", "m-large"],
                "tasks": list(SMOKE_TASKS),
                "recipes": ["standard", "longer"],
                "seeds": 3,
                "baseline": "standard",
                "table": {"rows": "task", "columns": ["model", "recipe"]},
            }
        },
    }


def write_smoke_run(root: str, seed: int = 0) -> str:
    """A finished synthetic run under `root`; returns its config file."""
    import json

    from blurbflow.plan.calibrate import token_work
    from blurbflow.plan.estimate import prepared_instances

    config = smoke_config()
    register_tasks(config)
    rng = random.Random(seed)
    slower: dict[str, float] = {}  # a job's node: ±10% for all its seeds
    for cell in expand_cells(config).values():
        options = cell.options
        instances = prepared_instances(cell.task, os.path.join(root, "resources", "data"))
        a, b = SMOKE_RATES[config["models"][cell.model]["size"]]
        train = round(instances * options.max_length * SMOKE_FILL[cell.task])
        evaluated = round(0.3 * train)  # dev + test
        units = token_work(options.epochs, train, options.epochs, evaluated)
        node = slower.setdefault(cell.path.rsplit("/", 1)[0], rng.uniform(0.9, 1.1))
        seconds = (a + b * SMOKE_TASKS[cell.task] * units) * node * rng.uniform(0.9, 1.1)
        result = {
            "status": "ok",
            "options": options.to_dict(),
            "wall_seconds": seconds,
            "train_instances": instances,
            "tokens": {"train": train, "eval": evaluated},
            "epochs": [{"epoch": e} for e in range(1, options.epochs + 1)],
            "device": "NVIDIA H100 80GB HBM3",
        }
        folder = os.path.join(root, cell.path)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "result.json"), "w") as handle:
            json.dump(result, handle)
    path = os.path.join(root, "smoke.yaml")
    with open(path, "w") as handle:
        yaml.safe_dump(config, handle)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=".", help="the finished run's workflow folder")
    parser.add_argument("--configfile", default="config/demo.yaml")
    parser.add_argument("--seed", type=int, default=0, help="the first sampling seed")
    parser.add_argument("--repeats", type=int, default=1, help="seeds seed, seed+1, …")
    parser.add_argument("--share", type=float, default=0.25, help="jobs to calibrate on")
    parser.add_argument(
        "--min-cells",
        type=int,
        default=MIN_CELLS,
        help=f"finished cells a task needs for its own factor (the plan's: {MIN_CELLS})",
    )
    parser.add_argument("--verbose", action="store_true", help="each predicted job")
    parser.add_argument("--smoke", action="store_true", help="a synthetic finished run")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        root, configfile = args.root, args.configfile
        if args.smoke:
            root, configfile = scratch, write_smoke_run(scratch, args.seed)
        config, jobs, sizes, found = load_run(root, configfile)
        print(
            f"{configfile} under {root}: {len(jobs)} jobs, {len(found.samples)} finished (ok) "
            f"cells; calibrating on {args.share:.0%} of the jobs"
        )
        medians = defaultdict(list)
        for seed in range(args.seed, args.seed + args.repeats):
            result = evaluate(config, jobs, sizes, found, root, seed, args.share, args.min_cells)
            report(result, seed, args.verbose)
            for name, value in result["median"].items():
                medians[name].append(value)
        if args.repeats > 1:
            print(
                f"median over {args.repeats} seeds of the median |error|: "
                + ", ".join(
                    f"{name} {statistics.median(v):.0%} ({min(v):.0%}–{max(v):.0%})"
                    for name, v in medians.items()
                )
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
