"""Snakemake validates the config before any job runs and names what is wrong."""

from __future__ import annotations

import pytest
import yaml

from workflow_helpers import copy_workflow, snakemake


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
