"""Aggregation + tables + report for 20,000 synthetic cell results (issue 5: ≤ 20 s here).

Writes realistic result.json files (the fields and sizes `blurbflow finetune` writes: options,
per-epoch records, versions) for paper-like studies — 8 models, all 13 tasks, 20 recipes, the
Gu grid of 6 hyperparameters, 5 or 10 seeds — with some cells diverged, collapsed to chance,
crashed, unreadable or missing, into a temporary folder; then times the three workflow steps
as the rules run them: `aggregate` (load_cells + write cells.parquet), `tables` (read the
parquet, one table per study in CSV/Markdown/LaTeX) and `report` (read the parquet, render
report.html).

    .venv/bin/python benchmarks/aggregate.py [--cells 20000] [--keep DIR]
    .venv/bin/python benchmarks/aggregate.py --smoke  # 2 models x 2 tasks x 2 seeds a study
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
import time
from pathlib import Path

import pandas as pd

from blurbflow.config import expand_cells
from blurbflow.record.schema import cell_key
from blurbflow.report.render import render_report
from blurbflow.results.aggregate import write_cells
from blurbflow.results.formats import write_table
from blurbflow.results.tables import study_table
from blurbflow.tasks import TASKS
from blurbflow.util.provenance import collect_provenance

from common import load_cells

ALL_TASKS = list(TASKS)
SMALL = ("biosses", "pubmedqa", "bioasq")
SEEDS = {"default": 5, "biosses": 10, "pubmedqa": 10, "bioasq": 10}
BASE = ["pubmedbert", "biobert", "scibert", "bert", "bluebert", "roberta"]
LARGE = ["pubmedbert-large", "pubmedelectra-large", "biobert-large", "roberta-large"]
GRID = {"lr": [1e-5, 3e-5, 5e-5], "batch_size": [16, 32]}


def synthetic_config(smoke: bool = False) -> dict:
    """Paper-like studies whose union is a little over 20,000 cells (smoke: every study on its
    first 2 models and 2 tasks, 2 seeds)."""
    recipes = {"standard": {**GRID, "epochs": {"default": 20, "biosses": 30}}}
    recipes["improved"] = {"extends": "standard", "epochs": {"default": 20, "biosses": 60}}
    options = {
        "freeze": {"freeze_lower": "half"},
        "llrd9": {"layerwise_lr_decay": 0.9},
        "llrd8": {"layerwise_lr_decay": 0.8},
        "reinit": {"reinit_top": 1},
        "no-bias": {"adam_bias_correction": False},
        "bioul": {"tagging": "BIOUL"},
        "io": {"tagging": "IO"},
        "bilstm": {"head": "bilstm"},
        "sub100": {"train_subsample": 100},
        "sub500": {"train_subsample": 500},
        "sub1000": {"train_subsample": 1000},
        "remove2": {"remove_top": 2},
        "remove4": {"remove_top": 4},
        "remove6": {"remove_top": 6},
        "short": {"epochs": {"default": 20, "biosses": 30}},
    }
    for name, option in options.items():
        recipes[name] = {"extends": "improved", **option}
    for re_input in ("dummify", "markers", "original"):
        # entity_start reads the marker tokens: refused with any other input (check_options)
        for pooling in ("mention", "entity_start") if re_input == "markers" else ("mention",):
            recipes[f"re-{re_input}-{pooling}"] = {
                "extends": "standard",
                "re_input": re_input,
                "re_pooling": pooling,
            }
    layer = ["improved", "freeze", "llrd9", "llrd8", "reinit"]

    def study(title, models, tasks, recipe_list, seeds, rows, columns):
        return {
            "title": title,
            "models": models,
            "tasks": tasks,
            "recipes": recipe_list,
            "seeds": seeds,
            "baseline": recipe_list[0],
            "table": {"rows": rows, "columns": columns},
        }

    re_recipes = ["standard", *[r for r in recipes if r.startswith("re-")]]
    studies = {
        "blurb-base": study(
            "BLURB, BASE models", BASE, ALL_TASKS, ["standard"], SEEDS, "task", ["model"]
        ),
        "blurb-large": study(
            "BLURB, LARGE models",
            LARGE,
            ALL_TASKS,
            ["standard", "llrd9"],
            SEEDS,
            "task",
            ["model", "recipe"],
        ),
        "layers-base": study(
            "Layer-specific, BASE", BASE, list(SMALL), layer, 10, "recipe", ["model", "task"]
        ),
        "layers-large": study(
            "Layer-specific, LARGE", LARGE, list(SMALL), layer, 10, "recipe", ["model", "task"]
        ),
        "optim": study(
            "BIOSSES optimisation",
            BASE + LARGE,
            ["biosses"],
            ["improved", "short", "no-bias"],
            10,
            "recipe",
            ["model"],
        ),
        "tagging": study(
            "NER tagging",
            BASE[:4],
            ALL_TASKS[:5],
            ["standard", "bioul", "io"],
            5,
            "task",
            ["model", "recipe"],
        ),
        "head": study(
            "NER head",
            BASE[:2],
            ALL_TASKS[:5],
            ["standard", "bilstm"],
            5,
            "task",
            ["model", "recipe"],
        ),
        "re": study(
            "RE input x pooling",
            BASE[:2],
            ["chemprot", "ddi"],
            re_recipes,
            5,
            "recipe",
            ["model", "task"],
        ),
        "low-resource": study(
            "Subsampled RE",
            BASE[:4],
            ["chemprot", "ddi"],
            ["improved", "sub1000", "sub500", "sub100"],
            5,
            "recipe",
            ["model", "task"],
        ),
        "pruning": study(
            "Removing top layers",
            LARGE[:2],
            list(SMALL),
            ["improved", "remove2", "remove4", "remove6"],
            10,
            "recipe",
            ["model", "task"],
        ),
    }
    for entry in studies.values() if smoke else ():
        entry.update(models=entry["models"][:2], tasks=entry["tasks"][:2], seeds=2)
    models = {
        m: {"hub_id": f"org/{m}", "size": "large" if m in LARGE else "base"} for m in BASE + LARGE
    }
    return {"models": models, "recipes": recipes, "studies": studies}


QUALITY = {"ner": 88.0, "pico": 73.0, "re": 78.0, "sts": 88.0, "doccls": 82.0, "qa": 70.0}
CHANCE = {"ner": 0.0, "pico": 0.0, "re": 0.0, "sts": 0.0, "doccls": 30.0, "qa": 55.0}


def synthetic_result(cell, rng: random.Random) -> dict | str:
    """One result.json like `train_cell` writes, with realistic failure modes."""
    spec = TASKS[cell.task]
    options = cell.options
    epochs = int(options.epochs)
    quality = QUALITY[spec.type] + rng.gauss(0, 1.5) - 20 * abs(options.lr - 3e-5) * 1e4 / 10
    chance = CHANCE[spec.type]
    roll = rng.random()
    status, error = "ok", None
    collapse = roll < 0.04 + (0.08 if "large" in cell.model and cell.task in SMALL else 0)
    if 0.985 < roll < 0.995:
        status, error = "diverged", f"loss became nan at epoch {rng.randint(1, epochs)}"
    elif roll >= 0.995:
        status = "failed"
        error = (
            'Traceback (most recent call last):\n  File "cell.py", line 301, in train\n'
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
        )
    records = []
    for epoch in range(1, epochs + 1):
        if status == "diverged" and epoch > 2:
            break
        # a collapsed run predicts a constant: chance level on dev (or a little under it)
        dev = chance - abs(rng.gauss(0, 0.3)) if collapse else quality - 8 * 0.7**epoch
        records.append(
            {
                "epoch": epoch,
                "train_loss": round(0.9 * 0.8**epoch, 4),
                "dev": round(dev + (0 if collapse else rng.gauss(0, 0.8)), 3),
                "test": round(dev + rng.gauss(0, 0.9), 3),
                "seconds": round(rng.uniform(20, 400), 2),
            }
        )
    best = max(records, key=lambda r: r["dev"]) if records and status == "ok" else None
    wall = sum(r["seconds"] for r in records) + rng.uniform(10, 30)
    return {
        "cell": cell_key(options),
        "task_type": spec.type,
        "metric": spec.metric,
        "options": options.to_dict(),
        "status": status,
        "error": error,
        "epochs": records,
        "selected_epoch": best["epoch"] if best else None,
        "selection": "best_dev",
        "train_instances": 4000,
        "train_ids_sha": "0123456789abcdef",
        "dev": best["dev"] if best else None,
        "test": best["test"] if best else None,
        "chance_dev": chance,
        "chance_test": chance,
        "wall_seconds": round(wall, 3),
        "gpu_hours": round(wall / 3600, 6),
        "peak_memory_mb": round(rng.uniform(3000, 30000), 1),
        "device": "NVIDIA H100 80GB HBM3",
        "versions": {
            "python": "3.11.7",
            "torch": "2.13.0",
            "transformers": "5.23.0",
            "blurbflow": "0.1.0",
            "numpy": "2.4.6",
        },
        "git_commit": "ff53261c0ffee",
        "started": "2026-11-20T10:00:00+00:00",
        "finished": "2026-11-20T10:05:00+00:00",
    }


def write_results(
    root: Path, n_files: int, seed: int = 0, smoke: bool = False
) -> tuple[dict, list[Path]]:
    """The config and every expected result path; `n_files` of them written (a few
    unreadable), the rest left missing."""
    config = synthetic_config(smoke)
    cells = list(expand_cells(config).values())
    if len(cells) < n_files:
        raise SystemExit(f"the synthetic studies have {len(cells)} cells < {n_files}")
    rng = random.Random(seed)
    paths = []
    for i, cell in enumerate(cells):
        path = root / cell.path / "result.json"
        paths.append(path)
        if i >= n_files:
            continue  # missing: the study asks for it, nothing ran
        path.parent.mkdir(parents=True, exist_ok=True)
        if i % 2500 == 1234 % max(n_files, 1):  # (one in a smoke run too)
            path.write_text('{"cell": {"model": ')  # a truncated file
            continue
        path.write_text(json.dumps(synthetic_result(cell, rng), indent=2, sort_keys=True))
    return config, paths


def run(root: Path, config: dict, paths: list[Path]) -> dict[str, float]:
    results = root / "results"
    timings = {}
    start = time.perf_counter()
    frame = load_cells(paths)
    write_cells(frame, results / "cells.parquet")
    timings["aggregate"] = time.perf_counter() - start

    start = time.perf_counter()
    cells = pd.read_parquet(results / "cells.parquet")
    for name, study in config["studies"].items():
        write_table(study_table(cells, name, study), results / "tables" / name)
    timings["tables"] = time.perf_counter() - start

    start = time.perf_counter()
    cells = pd.read_parquet(results / "cells.parquet")
    provenance = collect_provenance(config, "benchmark", cells)
    render_report(cells, config["studies"], results / "report.html", provenance)
    timings["report"] = time.perf_counter() - start
    timings["total"] = sum(timings.values())
    timings["statuses"] = frame["status"].value_counts().to_dict()
    timings["report_mb"] = (results / "report.html").stat().st_size / 1e6
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=20_000, help="result.json files to write")
    parser.add_argument("--keep", type=Path, help="write into this folder and keep it")
    parser.add_argument("--smoke", action="store_true", help="1,392 cells (1,300 written)")
    args = parser.parse_args()
    if args.smoke:
        args.cells = min(args.cells, 1300)
    root = args.keep or Path(tempfile.mkdtemp(prefix="blurbflow-aggregate-"))
    try:
        start = time.perf_counter()
        config, paths = write_results(root, args.cells, smoke=args.smoke)
        print(
            f"wrote {args.cells} result.json files ({len(paths)} cells expected) "
            f"in {time.perf_counter() - start:.1f} s under {root}"
        )
        timings = run(root, config, paths)
        print(f"statuses: {timings.pop('statuses')}; report {timings.pop('report_mb'):.1f} MB")
        for step, seconds in timings.items():
            print(f"{step:>10}: {seconds:6.2f} s")
        verdict = "ok" if timings["total"] <= 20 else "OVER the 20 s budget"
        print(
            f"aggregation + tables + report of {len(paths)} cells: "
            f"{timings['total']:.1f} s ({verdict})"
        )
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
