"""The smallest whole project, for end-to-end reliability tests that need their own runs: the demo's
generated data for one task (biosses), a 1-layer, 32-wide BERT built without pre-training and a
2-epoch recipe with 2 seeds: `snakemake all` in about 20 s on 2 cores.

`finished_config` is the one finished run the session shares (`tiny_run` in conftest.py) between
the tests that only read a finished project; a test that runs snakemake on it again works on
its own copy (`copy_finished`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

from workflow_helpers import REPO, copy_workflow, snakemake

ARGS = ("--configfile", "config/tiny.yaml", "--cores", "2")
MODEL, TASK = "tiny-biobert", "biosses"
JOB = f"results/cells/{MODEL}/{TASK}/quick/lr0.001-bs16"  # job_path(TASK)
FINISHED_TASKS = ("biosses", "gad")
FINISHED_RECIPES = ("quick", "quick-llrd")


def tiny_config(hidden_size: int = 32) -> dict:
    config = yaml.safe_load((REPO / "config/demo.yaml").read_text())
    config["models"][MODEL].update(
        hidden_size=hidden_size, num_layers=1, pretrain_epochs=0, corpus_tasks=[TASK]
    )
    config["recipes"] = {"quick": {"lr": 1e-3, "epochs": 2}}
    config["studies"] = {
        "s": {"title": "s", "models": [MODEL], "tasks": [TASK], "recipes": ["quick"], "seeds": 2}
    }
    return config


def finished_config(tracking: dict | None = None) -> dict:
    """The shared finished run's config: two tasks, biosses (the pair encoder, in the model's
    pre-training corpus; short jobs) and gad (its own parser, outside it; long jobs), two
    recipes; both seeds keep their models; the study exports each entry's best seed and
    publishes as a dry run; `tracking` as given."""
    config = tiny_config()
    config["recipes"]["quick"]["keep_model"] = True
    config["recipes"]["quick-llrd"] = {"extends": "quick", "layerwise_lr_decay": 0.8}
    config["studies"]["s"].update(
        tasks=list(FINISHED_TASKS), recipes=list(FINISHED_RECIPES), export_models="best_seed"
    )
    config["publish"] = {"repo_prefix": "me/bf-", "dry_run": True}
    if tracking:
        config["tracking"] = tracking
    return config


def copy_finished(workdir: Path, dest: Path) -> Path:
    """A copy of a finished project (dates kept: up to date as it was) without its `tracking`,
    which is no option of a cell (nothing re-runs for it) and must not reach the shared
    trackers from a copy."""
    shutil.copytree(workdir, dest, symlinks=True)
    config = read_config(dest)
    config.pop("tracking", None)
    write_config(dest, config)
    return dest


def read_config(workdir: Path) -> dict:
    return yaml.safe_load((workdir / "config/tiny.yaml").read_text())


def write_config(workdir: Path, config: dict) -> None:
    (workdir / "config/tiny.yaml").write_text(yaml.safe_dump(config))


def tiny_project(dest: Path, **settings) -> Path:
    """A copy of the workflow in `dest` with config/tiny.yaml (nothing run yet)."""
    workdir = copy_workflow(dest)
    write_config(workdir, tiny_config(**settings))
    return workdir


def run_all(workdir: Path, *extra: str, env: dict | None = None):
    return snakemake(workdir, *ARGS, *extra, "all", env=env)


def job_path(task: str = TASK, recipe: str = "quick") -> str:
    return f"results/cells/{MODEL}/{task}/{recipe}/lr0.001-bs16"


def seed_dir(workdir: Path, seed: int, task: str = TASK, recipe: str = "quick") -> Path:
    return workdir / job_path(task, recipe) / f"seed{seed}"


def job_log(workdir: Path, task: str = TASK, recipe: str = "quick") -> str:
    path = workdir / f"results/logs/cells/{MODEL}/{task}/{recipe}/lr0.001-bs16.log"
    return path.read_text(errors="replace")


def result(workdir: Path, seed: int, task: str = TASK, recipe: str = "quick") -> dict:
    return json.loads((seed_dir(workdir, seed, task, recipe) / "result.json").read_text())


def seed_files(workdir: Path) -> dict:
    """(seed, file name) -> (bytes, mtime_ns) of every file in the job's seed folders."""
    return {
        (path.parent.name, path.name): (path.read_bytes(), path.stat().st_mtime_ns)
        for path in sorted((workdir / JOB).glob("seed*/*"))
        if path.is_file()
    }
