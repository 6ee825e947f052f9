"""The smallest whole project, for end-to-end reliability tests that need their own runs: the demo's
generated data for one task (biosses), a 1-layer, 32-wide BERT built without pre-training and a
2-epoch recipe with 2 seeds: `snakemake all` in about 20 s on 2 cores."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from workflow_helpers import REPO, copy_workflow, snakemake

ARGS = ("--configfile", "config/tiny.yaml", "--cores", "2")
MODEL, TASK = "tiny-biobert", "biosses"
JOB = f"results/cells/{MODEL}/{TASK}/quick/lr0.001-bs16"


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


def write_config(workdir: Path, config: dict) -> None:
    (workdir / "config/tiny.yaml").write_text(yaml.safe_dump(config))


def tiny_project(dest: Path, **settings) -> Path:
    """A copy of the workflow in `dest` with config/tiny.yaml (nothing run yet)."""
    workdir = copy_workflow(dest)
    write_config(workdir, tiny_config(**settings))
    return workdir


def run_all(workdir: Path, *extra: str, env: dict | None = None):
    return snakemake(workdir, *ARGS, *extra, "all", env=env)


def seed_dir(workdir: Path, seed: int) -> Path:
    return workdir / JOB / f"seed{seed}"


def job_log(workdir: Path) -> str:
    path = workdir / f"results/logs/cells/{MODEL}/{TASK}/quick/lr0.001-bs16.log"
    return path.read_text(errors="replace")


def result(workdir: Path, seed: int) -> dict:
    return json.loads((seed_dir(workdir, seed) / "result.json").read_text())


def seed_files(workdir: Path) -> dict:
    """(seed, file name) -> (bytes, mtime_ns) of every file in the job's seed folders."""
    return {
        (path.parent.name, path.name): (path.read_bytes(), path.stat().st_mtime_ns)
        for path in sorted((workdir / JOB).glob("seed*/*"))
        if path.is_file()
    }
