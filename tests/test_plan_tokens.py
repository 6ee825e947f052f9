"""The plan's unit of work is tokens: what a seed trains on per epoch and evaluates per
evaluation (result.json's `tokens`), else the job's tokenized cache, else its instances padded
to max_length × the share the finished cells filled. Unit tests on a synthetic run (the
helpers of test_plan); the slow test reads the finished demo."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_plan import GPU, config, finish

from blurbflow.config import cell_jobs, expand_cells, input_key
from blurbflow.plan.calibrate import EVAL_SHARE, TOKENS_PER_UNIT, sample_of, token_work, work
from blurbflow.plan.estimate import job_work, plan_config
from blurbflow.plan.lengths import task_tokens
from blurbflow.plan.remaining import Scan, scan
from blurbflow.tasks import register_tasks

from workflow_helpers import REPO

SIZES = {"m-base": "base", "m-large": "large"}


def gad_job(conf: dict):
    register_tasks(conf)
    jobs = cell_jobs(expand_cells(conf))
    return next(job for job in jobs.values() if job.task == "gad" and job.model == "m-base")


def write_meta(root: Path, job, train: tuple[int, int], dev: int, test: int) -> None:
    """A tokenized cache's meta.json as blurbflow.train.encode writes it."""
    key = input_key(job.task, job.options.inputs)
    folder = root / "resources/tokenized" / job.model / job.task / key
    folder.mkdir(parents=True)
    splits = {"train": {"instances": train[0], "tokens": train[1]}}
    splits |= {"dev": {"instances": 10, "tokens": dev}, "test": {"instances": 10, "tokens": test}}
    (folder / "meta.json").write_text(json.dumps({"splits": splits}))


def test_a_recorded_result_counts_its_tokens_and_its_evaluations():
    result = {
        "status": "ok",
        "wall_seconds": 10.0,
        "train_instances": 1000,
        "options": {"max_length": 128, "epochs": 3},
        "epochs": [{"epoch": 1}, {"epoch": 2}],  # stopped early: two epochs trained, two evals
        "tokens": {"train": 32_000, "eval": 9_000},
    }
    sample = sample_of(result, "job", "m", "gad", "base")
    assert sample.work == pytest.approx((2 * 32_000 + EVAL_SHARE * 2 * 9_000) / TOKENS_PER_UNIT)
    assert sample.fill == pytest.approx(32_000 / 1000 / 128)
    del result["tokens"]  # written before tokens were recorded: the padded unit, or the cache's
    assert sample_of(result, "job", "m", "gad", "base").work == work(2, 1000, 128)
    from_cache = sample_of(result, "job", "m", "gad", "base", (32_000, 9_000))
    assert from_cache.work == sample.work


def test_job_work_prefers_recorded_tokens_then_the_cache_then_padding(tmp_path):
    conf = config()
    job = gad_job(conf)
    epochs, length = job.options.epochs, job.options.max_length
    padded = work(epochs, 4261, length)
    nothing = Scan({}, [], {("gad", None, "train"): 4261})
    per_instance, evaluated = task_tokens("gad", length)  # measured (blurbflow.plan.lengths)
    measured = token_work(epochs, round(per_instance * 4261), epochs, evaluated)
    assert job_work(job, nothing, str(tmp_path)) == pytest.approx(measured)
    finished = {"status": "ok", "wall_seconds": 9.0, "train_instances": 9, "options": {
        "max_length": 128, "epochs": 1}}  # fmt: skip
    once = Scan({}, [sample_of(finished, "j", "m", "gad", "base")], nothing.instances)
    assert job_work(job, once, str(tmp_path)) == pytest.approx(padded)  # a cell finished: fill
    write_meta(tmp_path, job, (4261, 120_000), 15_000, 14_000)
    from_cache = token_work(epochs, 120_000, epochs, 29_000)
    assert job_work(job, nothing, str(tmp_path)) == pytest.approx(from_cache)
    key = ("m-base", "gad", length, None, "train")
    recorded = Scan({}, [], nothing.instances, {key: (100_000, 20_000)})
    assert job_work(job, recorded, str(tmp_path)) == pytest.approx(
        token_work(epochs, 100_000, epochs, 20_000)
    )


def test_a_subsample_scales_the_cached_training_tokens(tmp_path):
    conf = config()
    conf["recipes"]["short"]["train_subsample"] = 1000
    job = gad_job(conf)
    write_meta(tmp_path, job, (4000, 120_000), 15_000, 14_000)
    epochs = job.options.epochs
    assert job_work(job, Scan({}, [], {}), str(tmp_path)) == pytest.approx(
        token_work(epochs, 30_000, epochs, 29_000)
    )


def test_without_tokens_a_job_is_padded_times_the_finished_cells_fill(tmp_path):
    conf = config()
    finish(tmp_path, conf)
    for path in tmp_path.glob("results/cells/*/*/*/*/seed*/result.json"):
        result = json.loads(path.read_text())
        length = result["options"]["max_length"]
        result["tokens"] = {"train": result["train_instances"] * length // 4, "eval": 0}
        path.write_text(json.dumps(result))
    register_tasks(conf)
    found = scan(cell_jobs(expand_cells(conf)), SIZES, str(tmp_path))
    assert {s.fill for s in found.samples} == {0.25}
    job = gad_job(conf)
    blind = Scan({}, found.samples, {})  # no recorded tokens of this job, no cache
    assert job_work(job, blind, str(tmp_path)) == pytest.approx(
        0.25 * work(job.options.epochs, 4261, job.options.max_length)
    )


def test_a_plan_calibrated_on_tokens_recovers_the_rate(tmp_path):
    """Cells whose seconds follow a + b·(token work): the fit finds b per size."""
    conf = config()
    finish(tmp_path, conf)
    for path in tmp_path.glob("results/cells/*/*/*/*/seed*/result.json"):
        result = json.loads(path.read_text())
        options, size = result["options"], "large" if "m-large" in str(path) else "base"
        train = result["train_instances"] * 30
        epochs = len(result["epochs"])
        units = token_work(epochs, train, epochs, train // 2)
        result["tokens"] = {"train": train, "eval": train // 2}
        result["wall_seconds"] = {"base": 5.0, "large": 9.0}[size] + 40.0 * units
        assert options["max_length"] >= 30
        path.write_text(json.dumps(result))
    plan = plan_config(conf, str(tmp_path))
    for fit in plan["calibration"]["fits"]:
        assert fit["device"] == GPU and fit["b"] == pytest.approx(40.0, rel=1e-6), fit


@pytest.mark.slow
@pytest.mark.e2e
def test_the_demo_records_its_tokens_and_the_plan_accuracy_benchmark_reads_them(demo):
    """Every finished demo cell records the tokens its tokenized cache holds (no subsample: all
    of train; dev + test per evaluation), and benchmarks/plan_accuracy.py prints its figure."""
    results = sorted(demo.glob("results/cells/*/*/*/*/seed*/result.json"))
    assert results
    for path in results:
        result = json.loads(path.read_text())
        task = result["options"]["task"]
        (meta,) = demo.glob(f"resources/tokenized/tiny-biobert/{task}/*/meta.json")
        splits = json.loads(meta.read_text())["splits"]
        assert result["tokens"] == {
            "train": splits["train"]["tokens"],
            "eval": splits["dev"]["tokens"] + splits["test"]["tokens"],
        }, path
    run = subprocess.run(
        [sys.executable, str(REPO / "benchmarks/plan_accuracy.py"), "--root", str(demo)]
        + ["--configfile", str(demo / "config/demo.yaml"), "--repeats", "3"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert re.search(r"median over 3 seeds of the median \|error\|: calibrated \d+%", run.stdout)
