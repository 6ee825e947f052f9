"""One job = the seeds of one (model, task, recipe, hparams): batching, keeping finished seeds,
fault plans, short-job grouping and value errors of the config."""

from __future__ import annotations

import copy
import json

import pytest
import yaml

from blurbflow.cluster import cell_resources, is_short
from blurbflow.config import ConfigError, cell_jobs, check_values, expand_cells
from blurbflow.train import faults
from blurbflow.train.job import finished_result

from workflow_helpers import REPO

DEMO = yaml.safe_load((REPO / "config/demo.yaml").read_text())
SCHEMA = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())


def test_jobs_batch_the_seeds_of_each_hparams_folder():
    config = copy.deepcopy(DEMO)
    config["studies"]["demo"]["seeds"] = {"default": 2, "biosses": [1, 4, 7]}
    cells = expand_cells(config)
    jobs = cell_jobs(cells)
    assert len(jobs) == 10 and sum(len(j.seeds) for j in jobs.values()) == len(cells) == 22
    biosses = jobs["results/cells/tiny-biobert/biosses/standard/lr0.001-bs16"]
    assert biosses.seeds == (1, 4, 7) and "seed" not in biosses.options
    for cell in cells.values():
        job = jobs[cell.path.rsplit("/", 1)[0]]
        assert {**job.options, "seed": cell.seed} == cell.options


def _result(tmp_path, status="ok", **options):
    path = tmp_path / "seed1" / "result.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"status": status, "options": {"lr": 1e-3, "seed": 1, **options}}))
    return path


def test_a_finished_seed_of_the_same_options_is_kept(tmp_path):
    path = _result(tmp_path)
    assert finished_result(path, {"seed": 1, "lr": 0.001})["status"] == "ok"
    assert finished_result(_result(tmp_path, "diverged"), {"seed": 1, "lr": 1e-3}) is not None


@pytest.mark.parametrize(
    ("status", "options"),
    [
        ("ok", {"seed": 1, "lr": 2e-3}),
        ("ok", {"seed": 2, "lr": 1e-3}),
        ("failed", {"seed": 1, "lr": 1e-3}),
    ],
)
def test_other_options_or_a_failure_are_trained_again(tmp_path, status, options):
    assert finished_result(_result(tmp_path, status), options) is None


def test_unreadable_or_missing_results_are_trained_again(tmp_path):
    assert finished_result(tmp_path / "none.json", {}) is None
    (tmp_path / "bad.json").write_text('{"status": "ok", "opt')  # a torn write
    assert finished_result(tmp_path / "bad.json", {}) is None


def test_fault_plans_match_cells_by_pattern():
    plan = "nan@*/gad/*/seed1; raise@m/hoc/standard/*/seed2"
    assert faults.planned("m/gad/standard/lr1e-05-bs32/seed1", plan) == "nan"
    assert faults.planned("m/hoc/standard/lr1e-05-bs32/seed2", plan) == "raise"
    assert faults.planned("m/hoc/standard/lr1e-05-bs32/seed1", plan) is None
    assert faults.planned("anything", "") is None
    with pytest.raises(ValueError, match="BLURBFLOW_FAULT: 'explode@x'"):
        faults.planned("x", "explode@x")


def test_short_jobs_are_the_small_tasks_and_low_resource_subsets():
    assert is_short({"task": "biosses"}) and is_short({"task": "pubmedqa"})
    assert is_short({"task": "chemprot", "train_subsample": 500})
    assert not is_short({"task": "chemprot"}) and not is_short({"task": "jnlpba"})


def test_a_job_asks_time_for_all_its_seeds():
    options = {"task": "jnlpba", "epochs": 20, "max_length": 512}
    one = cell_resources(options, "base", seeds=1)["runtime"]
    five = cell_resources(options, "base", seeds=5)["runtime"]
    assert five > 4 * one - 10
    assert cell_resources(options, "base", 2, seeds=5)["runtime"] == 2 * five


@pytest.mark.parametrize(
    ("where", "value", "message"),
    [
        ("lr", -1e-5, "recipes.standard.lr: -1e-05 is less than or equal to the minimum of 0; "
                      "expected a learning rate above 0"),
        ("lr", "fast", "recipes.standard.lr: 'fast' is not valid"),
        ("batch_size", 0, "recipes.standard.batch_size: 0 is less than the minimum of 1; "
                          "expected a whole number ≥ 1"),
        ("warmup_ratio", 2, "recipes.standard.warmup_ratio: 2 is greater than the maximum of 1"),
    ],
)
def test_bad_values_are_named_by_key_path_with_what_is_expected(where, value, message):
    config = copy.deepcopy(DEMO)
    config["recipes"]["standard"][where] = value
    with pytest.raises(ConfigError) as error:
        check_values(config, SCHEMA)
    assert str(error.value).startswith(message)
    check_values(DEMO, SCHEMA)  # the demo and the default config are valid
    check_values(yaml.safe_load((REPO / "config.yaml").read_text()), SCHEMA)
