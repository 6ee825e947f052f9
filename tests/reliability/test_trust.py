"""Results you can trust (docs/reliability.md "Guarantees"): a cell's identity is what it computed
from, and
aggregation verifies before it counts. One copy of the finished demo, in another folder:

    moved clone                   → `snakemake -n` finds nothing to do
    a 2-model × 2-task study      → only the new model's jobs train (tiny-copy: the demo model
                                    copied to another folder under another name)
    5 planted faults in 4 jobs    → the stat check re-queues exactly those 4 jobs. With the
                                    manifests forged to match (a deleted file cannot be: that
                                    job re-runs and retrains only that seed), aggregation still
                                    rejects the other 4 cells (failed, with the reason, in the
                                    report; never in a table) and removes their jobs' manifests;
                                    the next run retrains exactly those seeds, keeping the rest
    tiny-biobert's hidden_size    → every cell of that model retrains (model content differs),
                                    tiny-copy's cells are untouched
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from markupsafe import escape

from blurbflow.config import cell_jobs, expand_cells
from blurbflow.config.identity import SEED_FILES, file_record

from workflow_helpers import planned_jobs, snakemake

pytestmark = pytest.mark.e2e
ARGS = ("--configfile", "config/trust.yaml", "--cores", "2", "all")
TB, TC = "tiny-biobert", "tiny-copy"
TASK = "ncbidisease"  # with biosses; its seeds retrain in half the time of gad's
# (model, task, seed) -> (what is planted, what the rejection says)
FAULTS = {
    (TB, TASK, 1): ("copied from the layer-specific recipe", "not the cell of its folder"),
    (TB, "biosses", 1): ("stale options", "options differ from the config's: epochs 1 → 20"),
    (TC, TASK, 1): ("test 1e9", "test 1000000000.0 is outside the entity_f1 range 0 … 100"),
    (TC, TASK, 2): ("test NaN", "test is nan, not a finite score"),
}
DELETED = (TC, "biosses", 1)  # its predictions.parquet: the stat check always sees that
CELLS = [(m, t, s) for m in (TB, TC) for t in (TASK, "biosses") for s in (1, 2)]


def trust_config(workdir: Path) -> dict:
    config = yaml.safe_load((workdir / "config/demo.yaml").read_text())
    config["models"][TC] = {"path": f"resources/models/{TC}", "size": "tiny"}
    config["studies"] = {
        "trust": {
            "title": "trust",
            "models": [TB, TC],
            "tasks": [TASK, "biosses"],
            "recipes": ["standard"],
            "seeds": 2,
            "baseline": "standard",
            "table": {"rows": "task", "columns": ["model", "recipe"]},
        }
    }
    return config


def write_config(workdir: Path, config: dict) -> None:
    (workdir / "config/trust.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


class Study:
    def __init__(self, workdir: Path, config: dict):
        self.workdir = workdir
        self.jobs = {(j.model, j.task): j for j in cell_jobs(expand_cells(config)).values()}

    def seed_dir(self, model: str, task: str, seed: int) -> Path:
        return self.workdir / self.jobs[(model, task)].path / f"seed{seed}"

    def manifest(self, model: str, task: str) -> Path:
        return self.workdir / self.jobs[(model, task)].path / "seeds.json"

    def log(self, model: str, task: str) -> str:
        job = self.jobs[(model, task)]
        path = f"results/logs/cells/{model}/{task}/{job.recipe}/{job.hparams}.log"
        return (self.workdir / path).read_text()

    def state(self) -> dict:
        return {
            "logs": {(m, t): self.log(m, t) for m, t in self.jobs},
            "mtimes": {
                (m, t, s): (self.seed_dir(m, t, s) / "result.json").stat().st_mtime_ns
                for m, t, s in CELLS
            },
            "results": {
                (m, t, s): json.loads((self.seed_dir(m, t, s) / "result.json").read_text())
                for m, t, s in CELLS
            },
        }


def plant(study: Study) -> None:
    def edit(key, **changes):
        path = study.seed_dir(*key) / "result.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))

    layer = study.seed_dir(TB, TASK, 1).parents[2] / "layer-specific"
    other = next(layer.glob("*/seed1/result.json"))  # the demo's other recipe, same task/seed
    shutil.copy(other, study.seed_dir(TB, TASK, 1) / "result.json")
    (study.seed_dir(*DELETED) / "predictions.parquet").unlink()
    stale = json.loads((study.seed_dir(TB, "biosses", 1) / "result.json").read_text())
    edit((TB, "biosses", 1), options={**stale["options"], "lr": 0.5, "epochs": 1})
    edit((TC, TASK, 1), test=1e9)
    edit((TC, TASK, 2), test=math.nan)


def forge_manifests(study: Study) -> None:
    """Make the manifests match the planted files, as if the stat check had missed them."""
    for model, task in {(m, t) for m, t, _ in [*FAULTS, DELETED]}:
        path = study.manifest(model, task)
        manifest = json.loads(path.read_text())
        for seed, records in manifest["files"].items():
            for name in SEED_FILES:
                file = study.seed_dir(model, task, int(seed)) / name
                if file.exists():
                    records[name] = file_record(file)
        path.write_text(json.dumps(manifest))


def finetune_planned(workdir: Path) -> set[str]:
    run = snakemake(workdir, "-n", *ARGS)
    assert run.returncode == 0, run.stderr[-3000:]
    return set(planned_jobs(run.stdout).get("finetune", []))


@pytest.fixture(scope="module")
def trust(demo, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("moved") / "blurbflow"
    shutil.copytree(demo, workdir, symlinks=True)  # the finished demo, in another folder
    dry_run = ("-n", "all", "--configfile", "config/demo.yaml")
    found = {"moved": snakemake(workdir, *dry_run), "original": snakemake(demo, *dry_run)}

    config = trust_config(workdir)
    write_config(workdir, config)
    shutil.copytree(workdir / f"resources/models/{TB}", workdir / f"resources/models/{TC}")
    study = Study(workdir, config)
    run = snakemake(workdir, *ARGS)
    assert run.returncode == 0, run.stderr[-5000:]
    found["trained"] = study.state()

    plant(study)
    found["stat_check"] = finetune_planned(workdir)
    forge_manifests(study)
    found["forged_check"] = finetune_planned(workdir)
    run = snakemake(workdir, *ARGS)
    assert run.returncode == 0, run.stderr[-5000:]
    found["after_stat_check"] = study.state()
    found["aggregated"] = {
        "cells": pd.read_parquet(workdir / "results/cells.parquet"),
        "table": pd.read_csv(workdir / "results/tables/trust.csv", index_col=0),
        "report": (workdir / "results/report.html").read_text(),
        "manifests": {key: study.manifest(*key).exists() for key in study.jobs},
    }
    found["rejected_check"] = finetune_planned(workdir)
    run = snakemake(workdir, *ARGS)
    assert run.returncode == 0, run.stderr[-5000:]
    found["retrained"] = study.state()
    found["retrained_cells"] = pd.read_parquet(workdir / "results/cells.parquet")
    found["up_to_date"] = snakemake(workdir, "-n", *ARGS)

    config["models"][TB]["hidden_size"] = 64  # the demo's is 128
    write_config(workdir, config)
    run = snakemake(workdir, *ARGS)
    assert run.returncode == 0, run.stderr[-5000:]
    found["rebuilt"] = study.state()
    return {"study": study, **found}


def test_moving_the_clone_retrains_nothing(trust):
    moved, original = trust["moved"], trust["original"]
    assert moved.returncode == 0 and original.returncode == 0
    # the same plan as in its first folder: nothing, unless another test changed the demo
    # (test_e2e adds a seed to one job)
    assert planned_jobs(moved.stdout) == planned_jobs(original.stdout)
    assert len(planned_jobs(moved.stdout).get("finetune", [])) <= 1


def test_the_stat_check_requeues_exactly_the_jobs_with_changed_seed_files(trust):
    study = trust["study"]

    def manifests(keys):
        return {str(study.manifest(m, t).relative_to(study.workdir)) for m, t, *_ in keys}

    faulty = manifests(FAULTS)
    assert trust["stat_check"] == faulty | manifests([DELETED]) and len(faulty) == 3
    assert trust["forged_check"] == manifests([DELETED])  # a missing file cannot be forged
    log = trust["after_stat_check"]["logs"][DELETED[:2]]
    assert "seed 1: training (predictions.parquet is missing)" in log
    assert "seed 2: kept (ok" in log
    assert trust["rejected_check"] == faulty  # aggregation removed their manifests


def test_aggregation_rejects_every_planted_fault_and_lists_why(trust):
    cells = trust["aggregated"]["cells"].set_index(["model", "task", "seed"])
    for key, (planted, reason) in FAULTS.items():
        row = cells.loc[key]
        assert row["status"] == "failed", planted
        assert row["error"].startswith("rejected: ") and reason in row["error"], row["error"]
        assert str(escape(reason)) in trust["aggregated"]["report"], planted  # as jinja2 shows it
    others = [key for key in CELLS if key not in FAULTS]
    assert all(cells.loc[key, "status"] == "ok" for key in others)  # DELETED: retrained
    manifests = trust["aggregated"]["manifests"]
    assert manifests == {key: key == DELETED[:2] for key in manifests}


def test_no_rejected_number_reaches_a_table(trust):
    table = trust["aggregated"]["table"]
    counts = {c.split(":")[0]: table[c] for c in table.columns if c.endswith(":n")}
    assert counts[f"{TB} / standard"][TASK] == 1 and counts[f"{TB} / standard"]["biosses"] == 1
    assert counts[f"{TC} / standard"][TASK] == 0 and counts[f"{TC} / standard"]["biosses"] == 2
    numbers = pd.to_numeric(table.stack(), errors="coerce").dropna()
    assert numbers.abs().max() <= 100 and not numbers.isin([1e9]).any()


def test_the_next_run_retrains_exactly_the_rejected_seeds(trust):
    before, after = trust["after_stat_check"], trust["retrained"]
    for key in CELLS:
        model, task, seed = key
        log = after["logs"][(model, task)]
        if key in FAULTS:
            assert (
                f"seed {seed}: training (" in log and after["mtimes"][key] > before["mtimes"][key]
            )
        else:
            assert after["mtimes"][key] == before["mtimes"][key], key
    assert "seed 2: kept (ok" in after["logs"][(TB, "biosses")]
    assert "seed 2: kept (ok" in after["logs"][(TB, TASK)]
    assert after["logs"][(TC, "biosses")] == before["logs"][(TC, "biosses")]  # not re-run
    assert set(trust["retrained_cells"]["status"]) == {"ok"}
    up_to_date = trust["up_to_date"]
    assert "Nothing to be done" in up_to_date.stdout + up_to_date.stderr


def test_a_new_hidden_size_retrains_every_cell_of_that_model_and_nothing_else(trust):
    before, after = trust["retrained"], trust["rebuilt"]
    for model, task, seed in CELLS:
        if model == TB:
            log = after["logs"][(model, task)]
            assert f"seed {seed}: training (its identity differs in model" in log
            old, new = (s["results"][(model, task, seed)]["identity"] for s in (before, after))
            assert old["model"] != new["model"] and old["data"] == new["data"]
        else:
            assert after["mtimes"][(model, task, seed)] == before["mtimes"][(model, task, seed)]
            assert after["logs"][(model, task)] == before["logs"][(model, task)]
