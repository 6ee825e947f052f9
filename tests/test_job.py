"""One job = the seeds of one (model, task, recipe, hparams): batching, keeping finished seeds,
fault plans, short-job grouping and value errors of the config."""

from __future__ import annotations

import copy
import json
import logging
import sys

import pandas as pd
import pytest
import yaml
from results_helpers import load_cells

from blurbflow.cluster import cell_resources, is_short
from blurbflow.config import cell_jobs, expand_cells
from blurbflow.config.schema import check_values
from blurbflow.options import UNSET, CellOptions
from blurbflow.record.schema import CELL_KEYS, Result
from blurbflow.train import faults
from blurbflow.train.job import failure_result, finished_result, seed_log, write_traceback
from blurbflow.util.errors import ConfigError

from model_helpers import make_options
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
    assert biosses.seeds == (1, 4, 7) and biosses.options.seed is UNSET
    assert "seed" not in biosses.options.to_dict()
    for cell in cells.values():
        job = jobs[cell.path.rsplit("/", 1)[0]]
        assert job.options.with_seed(cell.seed) == cell.options
        assert {**job.options.to_dict(), "seed": cell.seed} == cell.options.to_dict()


def _result(tmp_path, status="ok", **options):
    """A finished cell's folder (result.json + predictions.parquet) of a biosses cell."""
    from blurbflow.config.identity import file_sha256
    from blurbflow.metrics import pearson

    cell = dict(CELL)
    folder = tmp_path / "m/biosses/r/h/seed1"
    folder.mkdir(parents=True, exist_ok=True)
    gold, pred = [1.0, 2.0, 3.0, 4.0], [1.5, 1.8, 3.5, 3.9]
    pd.DataFrame(
        {
            "id": list("abcd"),
            "split": "test",
            "gold": [json.dumps(g) for g in gold],
            "pred": [json.dumps(p) for p in pred],
        }
    ).to_parquet(folder / "predictions.parquet")
    result = {
        "cell": cell,
        "status": status,
        "options": cell_options(**options).to_dict(),
        "identity": IDENTITY,
        "dev": 50.0,
        "test": pearson(gold, pred),
        "predictions_sha256": file_sha256(folder / "predictions.parquet"),
    }
    (folder / "result.json").write_text(json.dumps(result))
    return folder / "result.json"


IDENTITY = {"model": {"commit": None, "sha256": "a"}, "tokenized": "t", "data": {"test": "d"}}
CELL = {"model": "m", "task": "biosses", "recipe": "r", "hparams": "h", "seed": 1}


def cell_options(**changes) -> CellOptions:
    """The options of the biosses cell CELL (lr 1e-3), with `changes`."""
    return make_options(**{**CELL, "lr": 1e-3, **changes})


def test_a_finished_seed_of_the_same_options_and_identity_is_kept(tmp_path):
    path = _result(tmp_path)
    assert finished_result(path, cell_options(lr=0.001), IDENTITY)[0]["status"] == "ok"
    kept, why = finished_result(_result(tmp_path, "diverged"), cell_options(), IDENTITY)
    assert kept is not None and why is None


@pytest.mark.parametrize(
    ("status", "options", "identity", "why"),
    [
        ("ok", {"lr": 2e-3}, IDENTITY, "its options differ from the config's: lr 0.001 → 0.002"),
        ("ok", {"seed": 2}, IDENTITY, "its options differ from the config's: seed 1 → 2"),
        ("failed", {}, IDENTITY, "status 'failed' is not a finished run"),
        ("ok", {}, {**IDENTITY, "tokenized": "u"}, "identity differs in tokenized content"),
        ("ok", {}, {**IDENTITY, "data": {"test": "e"}}, "identity differs in data content"),
    ],
)
def test_other_options_identity_or_a_failure_are_trained_again_saying_why(
    tmp_path, status, options, identity, why
):
    kept, reason = finished_result(_result(tmp_path, status), cell_options(**options), identity)
    assert kept is None and why in reason


def test_unreadable_or_missing_results_are_trained_again(tmp_path):
    assert finished_result(tmp_path / "none.json", cell_options()) == (None, "no result.json")
    (tmp_path / "bad.json").write_text('{"status": "ok", "opt')  # a torn write
    why = finished_result(tmp_path / "bad.json", cell_options())[1]
    assert why == "unreadable result.json (JSONDecodeError)"


def test_a_failed_seed_writes_the_failed_form_of_the_result_schema(tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    try:
        raise ValueError("\x1b[31mbad batch\x1b[0m")
    except ValueError as error:
        result = failure_result(cell_options(), error)
    assert set(result) == {
        "cell",
        "options",
        "status",
        "error",
        "traceback",
        "finished",
        "host",
        "slurm_job_id",
        "launch",
    } and set(result) <= set(Result.__annotations__)
    assert result["cell"] == {k: CELL[k] for k in CELL_KEYS} and result["slurm_job_id"] == "4242"
    assert result["error"] == "ValueError: bad batch"  # terminal colours removed
    assert result["options"] == cell_options().to_dict()  # serialised, as result.json holds it
    path = tmp_path / "results/cells/m/biosses/r/h/seed1/result.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(result))
    row = load_cells([path]).iloc[0]
    assert row["status"] == "failed" and row["error"] == "ValueError: bad batch"
    assert pd.isna(row["test"]) and row["task_type"] == "sts"


def test_fault_plans_match_cells_by_pattern():
    plan = "nan@*/gad/*/seed1; raise@m/hoc/standard/*/seed2"
    assert faults.planned("m/gad/standard/lr1e-05-bs32/seed1", plan) == "nan"
    assert faults.planned("m/hoc/standard/lr1e-05-bs32/seed2", plan) == "raise"
    assert faults.planned("m/hoc/standard/lr1e-05-bs32/seed1", plan) is None
    assert faults.planned("anything", "") is None
    with pytest.raises(ValueError, match="BLURBFLOW_FAULT: 'explode@x'"):
        faults.planned("x", "explode@x")


def test_short_jobs_are_the_small_tasks_and_low_resource_subsets():
    assert is_short(make_options(task="biosses")) and is_short(make_options(task="pubmedqa"))
    assert is_short(make_options(task="chemprot", train_subsample=500))
    assert not is_short(make_options(task="chemprot"))
    assert not is_short(make_options(task="jnlpba"))


def test_a_job_asks_time_for_all_its_seeds():
    options = make_options(task="jnlpba", epochs=20, max_length=512)
    one = cell_resources(options, "base", seeds=1)["runtime"]
    five = cell_resources(options, "base", seeds=5)["runtime"]
    assert five > 4 * one - 10
    assert cell_resources(options, "base", 2, seeds=5)["runtime"] == 2 * five


@pytest.mark.parametrize(
    ("where", "value", "message"),
    [
        (
            "lr",
            -1e-5,
            "recipes.standard.lr: -1e-05 is less than or equal to the minimum of 0; "
            "expected a learning rate above 0",
        ),
        ("lr", "fast", "recipes.standard.lr: 'fast' is not valid"),
        (
            "batch_size",
            0,
            "recipes.standard.batch_size: 0 is less than the minimum of 1; "
            "expected a whole number ≥ 1",
        ),
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


def test_a_failed_seed_keeps_its_whole_traceback_beside_the_short_one(tmp_path):
    def deep(n):
        if n == 0:
            raise ValueError("\x1b[31mat the bottom\x1b[0m")
        deep(n - 1)

    try:
        try:
            deep(12)
        except ValueError as inner:
            raise RuntimeError("while training") from inner
    except RuntimeError as error:
        path = write_traceback(tmp_path / "seed1", error)
        short = "".join(failure_result(cell_options(), error)["traceback"])
    full = path.read_text()
    assert path == tmp_path / "seed1/traceback.txt" and full.endswith(short)
    assert "deep(12)" in full and "deep(12)" not in short  # the first frames too
    assert "ValueError: at the bottom" in full and "direct cause" in full  # the chain, uncoloured


def test_what_a_seed_prints_goes_to_its_own_log_and_to_the_job_log(tmp_path, capsys):
    for seed in (1, 2):
        with seed_log(tmp_path / f"seed{seed}"):
            print(f"seed {seed} says")
            print(f"seed {seed} warns", file=sys.stderr)
    job = capsys.readouterr()
    assert job.out == "seed 1 says\nseed 2 says\n" and "seed 2 warns" in job.err
    one = (tmp_path / "seed1/train.log").read_text()
    assert "seed 1 says" in one and "seed 1 warns" in one and "seed 2" not in one
    with seed_log(tmp_path / "seed1"):  # a retry appends
        print("again")
    assert (tmp_path / "seed1/train.log").read_text().startswith(one)


def test_logging_handlers_write_to_the_seed_training_now_and_never_to_a_closed_log(
    tmp_path, capsys
):
    """A library's handler made while seed 1 trains (transformers makes its own on first import,
    with the sys.stderr of that moment) and one made before any seed: each seed's log gets its
    own records, the job's stream all of them, and nothing writes to seed 1's closed log."""
    early, late = logging.getLogger("early-library"), logging.getLogger("late-library")
    early.addHandler(logging.StreamHandler())  # holds the job's sys.stderr itself
    try:
        for seed in (1, 2):
            with seed_log(tmp_path / f"seed{seed}"):
                if not late.handlers:
                    late.addHandler(logging.StreamHandler())  # holds seed 1's sys.stderr
                late.warning("late loads seed %s", seed)
                early.warning("early loads seed %s", seed)
        late.warning("after the seeds")
    finally:
        for logger in (early, late):
            logger.handlers.clear()
    job = capsys.readouterr().err
    assert "Logging error" not in job and "Traceback" not in job, job
    for seed, other in ((1, 2), (2, 1)):
        log = (tmp_path / f"seed{seed}/train.log").read_text()
        assert f"late loads seed {seed}" in log and f"early loads seed {seed}" in log
        assert f"seed {other}" not in log and "after the seeds" not in log
    assert job.count("loads seed") == 4 and "after the seeds" in job
