"""Snakemake validates the config before any job runs and names what is wrong; reading the
workflow has no side effects; editing a rule's script or moving the clone re-queues nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from workflow_helpers import copy_workflow, planned_jobs, snakemake

pytestmark = pytest.mark.slow  # every test runs snakemake


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return copy_workflow(tmp_path_factory.mktemp("config-checks"))


def _dry_run_with(workdir, name, edit):
    config = yaml.safe_load((workdir / "config/demo.yaml").read_text())
    edit(config)
    (workdir / "config" / name).write_text(yaml.safe_dump(config))
    run = snakemake(workdir, "-n", "--configfile", f"config/{name}")
    return run.returncode, run.stdout + run.stderr


def test_demo_config_dry_run_plans_every_cell(workdir):
    run = snakemake(workdir, "-n", "--configfile", "config/demo.yaml")
    assert run.returncode == 0, run.stderr
    assert "finetune               10" in run.stdout  # 20 cells, 2 seeds a job


def test_misspelt_recipe_key_fails_naming_it(workdir):
    run = _dry_run_with(
        workdir, "typo.yaml", lambda c: c["recipes"]["standard"].update(layerwise_lr_decy=0.9)
    )
    returncode, output = run
    assert returncode != 0 and "rule finetune" not in output
    assert (
        "recipes.standard.layerwise_lr_decy: unknown key (did you mean 'layerwise_lr_decay'?)"
        in output
    )


def test_unknown_recipe_in_study_fails_naming_it(workdir):
    run = _dry_run_with(
        workdir, "unknown.yaml", lambda c: c["studies"]["demo"].update(recipes=["standard", "llrd"])
    )
    returncode, output = run
    assert returncode != 0 and "studies.demo.recipes: unknown recipe 'llrd'" in output


def test_negative_learning_rate_fails_naming_it(workdir):
    run = _dry_run_with(workdir, "negative.yaml", lambda c: c["recipes"]["standard"].update(lr=-1))
    returncode, output = run
    assert returncode != 0
    assert "recipes.standard.lr: -1 is less than or equal to the minimum of 0" in output


def test_wildcards_only_match_safe_names(workdir):
    """The rules' wildcards follow the config's name pattern: a target whose model part starts
    with a dot (or holds a space) has no rule, the valid name plans its build."""
    ok = snakemake(
        workdir, "-n", "resources/models/tiny-biobert", "--configfile", "config/demo.yaml"
    )
    assert ok.returncode == 0, ok.stderr[-3000:]
    assert "rule build_demo_model:" in ok.stdout
    for target in ("resources/models/.tiny-biobert", "resources/models/tiny biobert"):
        run = snakemake(workdir, "-n", target, "--configfile", "config/demo.yaml")
        assert run.returncode != 0 and "build_demo_model" not in run.stdout
        assert "MissingRuleException" in run.stdout + run.stderr


def test_a_table_hiding_a_varying_dimension_fails_the_dry_run_with_the_key_path(workdir):
    """The demo study has two recipes; a table without a recipe column would mix them. Caught
    while the workflow is read, before any job (not at the `tables` job after training)."""

    def hide_recipe(config):
        config["studies"]["demo"]["table"] = {"rows": "task", "columns": ["model"]}

    returncode, output = _dry_run_with(workdir, "hidden.yaml", hide_recipe)
    assert returncode != 0 and "rule " not in output and "Job stats" not in output
    assert "studies.demo.table: study table must show recipe (several values)" in output


def _tree(root: Path) -> dict[str, tuple]:
    """Every path under root with its size and mtime, but Snakemake's own bookkeeping
    (.snakemake/: locks, io cache), which is not the project's files."""
    return {
        str(path.relative_to(root)): (path.is_dir(), path.lstat().st_size, path.lstat().st_mtime_ns)
        for path in root.rglob("*")
        if path.relative_to(root).parts[0] != ".snakemake"
    }


def _write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """A workflow copy where one task was generated and prepared by a real run."""
    workdir = copy_workflow(tmp_path_factory.mktemp("prepared"))
    run = snakemake(workdir, PREPARED, "--cores", "2", "--configfile", "config/demo.yaml")
    assert run.returncode == 0, run.stderr[-3000:]
    return workdir


PREPARED = "resources/data/biosses/stats.json"


def test_a_dry_run_writes_and_deletes_nothing(prepared):
    """On a tree with real outputs, a stale job (a manifest whose seed file is gone), a job
    without a manifest, leftover partial files and a foreign prefetch marker, dry runs of
    every target change no file or folder outside Snakemake's own .snakemake/."""
    job = prepared / "results/cells/tiny-biobert/gad/standard/lr0.001-bs16"
    record = {"size": 1, "mtime_ns": 1, "sha256": "0" * 64}
    _write_json(job / "seeds.json", {"files": {"1": {"result.json": record}}})
    _write_json(job / "seed2/result.json", {"status": "ok"})  # seed 2: no manifest entry
    (prepared / "resources/raw/gad.part").write_text("a killed download's leftover")
    _write_json(prepared / "resources/hf-cache/.prefetched/other--model@main.json", {"x": 1})
    before = _tree(prepared)
    for target in ("all", "data", "cells", "prefetch"):
        run = snakemake(prepared, "-n", target, "--configfile", "config/demo.yaml")
        assert run.returncode == 0, (target, run.stderr[-3000:])
        assert _tree(prepared) == before, target
    assert "seed files changed since their job finished" in run.stderr  # the stale job was seen


def test_editing_a_script_or_moving_the_clone_re_queues_nothing(prepared):
    """Snakemake compares a `script:` by its date under the `code` trigger; the workflow profile
    leaves that trigger out, so an edited script comment (or a clone moved, or a fresh checkout
    with new dates) re-queues no job. Params still re-queue: a new data seed regenerates."""
    script = prepared / "workflow/scripts/prepare.py"
    script.write_text(script.read_text() + "# an edited comment\n")
    moved = prepared.with_name(prepared.name + "-moved")
    prepared.rename(moved)
    try:
        run = snakemake(moved, "-n", PREPARED, "--configfile", "config/demo.yaml")
        assert run.returncode == 0, run.stderr[-3000:]
        assert planned_jobs(run.stdout) == {}, run.stdout[-3000:]
        # the check is real: with the code trigger back on, the edit re-queues prepare
        triggers = ["--rerun-triggers", "code", "mtime", "params", "input", "software-env"]
        run = snakemake(moved, "-n", PREPARED, "--configfile", "config/demo.yaml", *triggers)
        assert set(planned_jobs(run.stdout)) == {"prepare"}, run.stdout[-3000:]
        config = yaml.safe_load((moved / "config/demo.yaml").read_text())
        config["data"]["generated_seed"] = 7
        (moved / "config/seed7.yaml").write_text(yaml.safe_dump(config))
        run = snakemake(moved, "-n", PREPARED, "--configfile", "config/seed7.yaml")
        assert set(planned_jobs(run.stdout)) == {"generate_raw", "prepare"}, run.stdout[-3000:]
    finally:
        moved.rename(prepared)
