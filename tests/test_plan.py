"""`snakemake plan` (blurbflow.plan): what is still to run, in GPU-hours and SLURM queue
entries. Unit tests on a synthetic finished run written into tmp_path (result.json files whose
wall_seconds follow a known a + b·work, and their job manifests); the slow tests run the rule
on a copied workflow and on the finished demo."""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from blurbflow import cli
from blurbflow.cluster import estimated_minutes, size_row
from blurbflow.config import cell_jobs, expand_cells
from blurbflow.config.identity import seed_records
from blurbflow.plan.calibrate import TABLE_DEVICE, Calibration, Sample, fit_line, work
from blurbflow.plan.estimate import launch_summary, plan_config, queue_entries
from blurbflow.plan.lengths import task_tokens
from blurbflow.plan.params import (
    FLOPS,
    LOAD_SECONDS_PER_PARAM,
    SEED_SECONDS,
    SIZE_PARAMS,
    config_params,
)
from blurbflow.plan.text import format_plan, launch_line

from workflow_helpers import REPO, copy_workflow, planned_jobs, snakemake

GPU = "NVIDIA H100 80GB HBM3"
TRUE = {"base": (30.0, 12.0), "large": (60.0, 36.0)}  # seconds per seed, per unit of work
CONFIG = {
    "code_version": "1",
    "models": {
        "m-base": {"path": "resources/models/m-base", "size": "base"},
        "m-large": {"path": "resources/models/m-large", "size": "large"},
    },
    "defaults": {"batch_size": 16},
    "recipes": {
        "short": {"lr": [1e-3, 5e-4], "epochs": {"default": 2, "biosses": 10}},
        "long": {"extends": "short", "epochs": {"default": 6, "biosses": 30}},
    },
    "studies": {
        "both": {
            "models": ["m-base", "m-large"],
            "tasks": ["gad", "biosses"],
            "recipes": ["short", "long"],
            "seeds": 3,
        },
        "base-gad": {"models": ["m-base"], "tasks": ["gad"], "recipes": ["short"], "seeds": 3},
    },
}


def config() -> dict:
    return json.loads(json.dumps(CONFIG))


def finish(root: Path, conf: dict, noise: float = 0.02, seed: int = 0) -> dict:
    """Every cell of `conf` finished under `root`: result.json (wall_seconds = a + b·work,
    ± noise), predictions.parquet, and each job's manifest. Returns the jobs."""
    rng = random.Random(seed)
    jobs = cell_jobs(expand_cells(conf))
    for job in jobs.values():
        a, b = TRUE[conf["models"][job.model]["size"]]
        instances = {"gad": 4261, "biosses": 64}[job.task]
        for seed_ in job.seeds:
            options = job.options.with_seed(seed_)
            units = work(options.epochs, instances, options.max_length)
            folder = root / job.path / f"seed{seed_}"
            folder.mkdir(parents=True)
            (folder / "predictions.parquet").write_bytes(b"not read by the plan")
            result = {
                "status": "ok",
                "options": options.to_dict(),
                "wall_seconds": (a + b * units) * rng.uniform(1 - noise, 1 + noise),
                "train_instances": instances,
                "epochs": [{"epoch": e} for e in range(1, options.epochs + 1)],
                "device": GPU,
            }
            (folder / "result.json").write_text(json.dumps(result))
        manifest = {
            "seeds": dict.fromkeys(map(str, job.seeds), "ok"),
            "files": seed_records(root / job.path, job.seeds),
        }
        (root / job.path / "seeds.json").write_text(json.dumps(manifest))
    return jobs


def fits(plan: dict) -> dict[str, dict]:
    return {fit["size"]: fit for fit in plan["calibration"]["fits"]}


def test_calibration_recovers_a_and_b(tmp_path):
    finish(tmp_path, config())
    plan = plan_config(config(), str(tmp_path))
    assert plan["calibration"]["cells"] == 48
    for size, (a, b) in TRUE.items():
        fit = fits(plan)[size]
        assert fit["device"] == GPU and fit["cells"] == 24
        assert fit["a"] == pytest.approx(a, rel=0.1), (size, fit)
        assert fit["b"] == pytest.approx(b, rel=0.1), (size, fit)
    for factor in plan["calibration"]["factors"]:  # the data follow the line: no task is odd
        assert factor["factor"] == pytest.approx(1.0, rel=0.1), factor


def test_a_finished_run_has_nothing_left(tmp_path):
    finish(tmp_path, config())
    plan = plan_config(config(), str(tmp_path))
    left = plan["remaining"]
    assert (left["cells"], left["jobs"], left["hours"], left["queue"]["entries"]) == (0, 0, 0, 0)
    assert all(s["jobs"] == 0 and s["hours"] == 0 for s in plan["studies"].values())
    assert plan["cells"] == 48 and plan["jobs"] == 16


def test_a_job_missing_one_seed_counts_that_seed(tmp_path):
    jobs = finish(tmp_path, config())
    path = "results/cells/m-large/gad/long/lr0.0005-bs16"
    (tmp_path / path / "seed2" / "result.json").unlink()
    plan = plan_config(config(), str(tmp_path))
    assert plan["remaining"]["cells"] == 1 and plan["remaining"]["jobs"] == 1
    entry = plan["running"][path]
    assert entry["seeds"] == [2] and entry["device"] == GPU
    options = jobs[path].options
    expected = TRUE["large"][0] + TRUE["large"][1] * work(options.epochs, 4261, 128)
    assert entry["seed_seconds"] == pytest.approx(expected, rel=0.1)
    assert plan["remaining"]["hours"] == pytest.approx(entry["seed_seconds"] / 3600)
    assert plan["models"]["m-large"]["cells"] == 1 and plan["models"]["m-base"]["cells"] == 0
    # the paper config's launch line (workflow/rules/launch.smk) says the same total
    summary = launch_summary(config(), jobs, str(tmp_path))
    assert summary == {k: v for k, v in plan["remaining"].items() if k != "queue"}
    line = launch_line(summary, "config.yaml")
    assert "(config.yaml, no --configfile given): 1 cells to train in 1 fine-tuning jobs," in line
    assert f"{plan['remaining']['hours']:,.2f} GPU-hours on {GPU} (calibrated)" in line


def test_seeds_with_other_options_a_failure_or_changed_files_count(tmp_path):
    finish(tmp_path, config())
    base = tmp_path / "results/cells/m-base/gad/short/lr0.001-bs16"
    result = json.loads((base / "seed1/result.json").read_text())
    (base / "seed1/result.json").write_text(json.dumps({**result, "status": "failed"}))
    result = json.loads((base / "seed2/result.json").read_text())
    result["options"]["warmup_ratio"] = 0.2  # trained with another option
    (base / "seed2/result.json").write_text(json.dumps(result))
    other = tmp_path / "results/cells/m-base/biosses/long/lr0.001-bs16"
    (other / "seed3/predictions.parquet").write_bytes(b"changed since the job finished")
    plan = plan_config(config(), str(tmp_path))
    running = {path: entry["seeds"] for path, entry in plan["running"].items()}
    assert running == {
        str(base.relative_to(tmp_path)): [1, 2],
        str(other.relative_to(tmp_path)): [3],
    }


def test_an_added_seed_trains_alone(tmp_path):
    finish(tmp_path, config())
    more = config()
    more["studies"]["both"]["seeds"] = 4
    plan = plan_config(more, str(tmp_path))
    assert plan["remaining"]["jobs"] == 16 and plan["remaining"]["cells"] == 16
    assert {tuple(entry["seeds"]) for entry in plan["running"].values()} == {(4,)}
    # the study that keeps three seeds shares two of those jobs but none of their work
    assert plan["studies"]["base-gad"]["cells"] == 0 and plan["studies"]["base-gad"]["jobs"] == 2


def test_totals_per_study_and_model_add_up(tmp_path):
    finish(tmp_path, config())
    for path in ("m-base/gad/short/lr0.001-bs16/seed1", "m-large/biosses/long/lr0.0005-bs16/seed3"):
        (tmp_path / "results/cells" / path / "result.json").unlink()
    plan = plan_config(config(), str(tmp_path))
    left, models, studies = plan["remaining"], plan["models"], plan["studies"]
    assert left["cells"] == 2 and left["jobs"] == 2
    assert sum(m["hours"] for m in models.values()) == pytest.approx(left["hours"])
    assert sum(m["jobs"] for m in models.values()) == left["jobs"]
    assert sum(m["cells"] for m in models.values()) == left["cells"]
    # the shared job (m-base gad short) is in both studies' lines, once in the total
    assert studies["both"]["jobs"] == 2 and studies["base-gad"]["jobs"] == 1
    assert studies["both"]["shared_jobs"] == 1 and studies["base-gad"]["shared_jobs"] == 1
    assert studies["both"]["hours"] == pytest.approx(left["hours"])
    assert (studies["both"]["total_jobs"], studies["base-gad"]["total_jobs"]) == (16, 2)


def test_nothing_run_takes_the_prior(tmp_path):
    """Before any cell: the size class's parameter count (no config.json in the folders) at the
    published rate, on the task's measured tokens (blurbflow.plan.lengths)."""
    plan = plan_config(config(), str(tmp_path))
    assert plan["remaining"]["cells"] == 48 and plan["calibration"]["cells"] == 0
    assert set(plan["remaining"]["hours_by_device"]) == {TABLE_DEVICE}
    jobs = cell_jobs(expand_cells(config()))
    instances = {"gad": 4261, "biosses": 64}
    for path, entry in plan["running"].items():
        job = jobs[path]
        params = SIZE_PARAMS[CONFIG["models"][job.model]["size"]]
        per_instance, evaluated = task_tokens(job.task, job.options.max_length)
        epochs = job.options.epochs
        trained = epochs * per_instance * instances[job.task]
        flops = params * (6 * trained + 2 * epochs * evaluated)
        seconds = SEED_SECONDS + LOAD_SECONDS_PER_PARAM * params + flops / FLOPS
        assert entry["seed_seconds"] == pytest.approx(seconds, rel=1e-4), path
        # no GPU type named: its memory unknown, the seeds are priced one after another
        assert entry["cells_per_gpu"] == 1
        assert entry["hours"] == pytest.approx(3 * seconds / 3600, rel=1e-4), path
    assert plan["models"]["m-large"]["params_source"] == "size large"
    assert "16 jobs 1 at a time; a GPU type the plan knows (engine.gpu" in format_plan(plan)


def test_a_config_json_or_params_sizes_a_model_by_its_parameter_count(tmp_path):
    """A 7B model (a folder with a Llama-7B config.json, or `params:`) is priced by its count:
    its seconds per unit of work are 6.6e9 / 110e6 times BASE's."""
    llama = {
        "model_type": "llama",
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 32,
        "vocab_size": 32000,
        "max_position_embeddings": 4096,
    }
    folder = tmp_path / "resources/models/llama-7b"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(llama))
    conf = config()
    conf["models"] = {
        "llama-7b": {"path": "resources/models/llama-7b"},
        "given": {"hub_id": "org/given", "params": 7_241_732_096},
        "m-base": {"path": "resources/models/m-base", "size": "base"},
    }
    conf["studies"] = {"s": {**CONFIG["studies"]["both"], "models": list(conf["models"])}}
    plan = plan_config(conf, str(tmp_path))
    models = plan["models"]
    assert models["llama-7b"]["params"] == config_params(llama) == 6_607_077_376
    assert (models["llama-7b"]["size"], models["llama-7b"]["params_source"]) == (
        "6.6B",
        "config.json",
    )
    assert (models["given"]["size"], models["given"]["params_source"]) == ("7.2B", "params")
    running = plan["running"]
    for path, entry in running.items():  # the token term scales with the count
        if entry["model"] == "llama-7b":
            base = running[path.replace("/llama-7b/", "/m-base/")]
            ratio = (entry["seed_seconds"] - SEED_SECONDS - 6_607_077_376 * 2e-9) / (
                base["seed_seconds"] - SEED_SECONDS - 110e6 * 2e-9
            )
            assert ratio == pytest.approx(6_607_077_376 / 110e6, rel=1e-3), path
    assert models["given"]["hours"] > models["llama-7b"]["hours"]
    assert "6.6B*" in format_plan(plan) and "sized by its parameter count" in format_plan(plan)
    # LoRA: 4 FLOPs a parameter per trained token, not 6; the time limit scales with the count
    conf["recipes"]["short"]["lora"] = {"r": 16}
    conf["recipes"]["long"]["lora"] = {"r": 16}
    lora = plan_config(conf, str(tmp_path))["models"]["llama-7b"]["hours"]
    assert 4 / 6 < lora / models["llama-7b"]["hours"] < 1
    job = next(j for j in cell_jobs(expand_cells(conf)).values() if j.model == "llama-7b")
    assert estimated_minutes(job.options, "6.6B") > estimated_minutes(job.options, "base")
    assert size_row("6.6B") == (8, 52_800, pytest.approx(0.2 * 6.6e9 / 110e6))


def test_queue_entries_pack_short_jobs_n_at_a_time(tmp_path):
    profile = tmp_path / "slurm" / "profile.yaml"
    profile.parent.mkdir()
    profile.write_text(yaml.safe_dump({"group-components": ["short-cells=3"]}))
    plan = plan_config(config(), str(tmp_path))
    queue = plan["remaining"]["queue"]
    # biosses (64 training instances) is short: 2 models × 2 recipes × 2 lrs = 8 jobs -> 3
    assert queue["grouped"] == {"short-cells": 8} and queue["submissions"] == {"short-cells": 3}
    assert queue["alone"] == 8 and queue["entries"] == 11
    assert queue_entries([None, "g", "g", "g", "g", "g"], {"g": 4})["entries"] == 1 + 2
    assert queue_entries(["g", "h"], {})["entries"] == 2  # no profile: every job alone


def test_fit_line_keeps_a_and_b_non_negative():
    xs = [1.0, 2.0, 3.0, 4.0]
    assert fit_line(xs, [10 + 2 * x for x in xs], (1, 1)) == pytest.approx((10, 2))
    a, b = fit_line(xs, [5 * x - 3 for x in xs], (1, 1))  # a < 0 unconstrained
    assert a == 0 and b > 0
    a, b = fit_line(xs, [20 - x for x in xs], (1, 1))  # b < 0 unconstrained
    assert b == 0 and a == pytest.approx(17.5)
    # one distinct work: the split of a and b is the prior's, scaled to the mean
    assert fit_line([2.0, 2.0], [12.0, 12.0], (2.0, 1.0)) == pytest.approx((6.0, 3.0))


def test_a_size_that_never_ran_is_scaled_from_one_that_did():
    samples = [
        Sample(f"j{i}", "m", "gad", "base", GPU, w, 30 + 12 * w)
        for i, w in enumerate((1.0, 2.0, 5.0, 9.0))
    ]
    calibration = Calibration(samples)
    rate = calibration.rate("large")  # the priors' ratio: 335M against 110M parameters
    assert rate.source == "scaled from base" and rate.device == GPU
    assert rate.b == pytest.approx(335 / 110 * calibration.rate("base").b)
    assert Calibration([]).rate("large").source == "prior"


def test_the_cli_prints_the_plan(tmp_path, capsys):
    finish(tmp_path, config())
    configfile = tmp_path / "plan.yaml"
    configfile.write_text(yaml.safe_dump(config()))
    code = cli.main(["plan", "--configfile", str(configfile), "--root", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    assert "still to run: 0 cells in 0 jobs" in out and "Total still to run: 0 cells" in out
    assert "Rates calibrated from 48 finished cells" in out and "base-gad" in out


@pytest.mark.slow  # runs snakemake
def test_snakemake_plan_on_a_fresh_demo(tmp_path):
    workdir = copy_workflow(tmp_path / "wf")
    run = snakemake(workdir, "plan", "--configfile", "config/demo.yaml")
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-3000:]
    assert "\ndemo " in out and "Total still to run: 20 cells in 10 jobs" in out, out[-3000:]
    assert "GPU-hours (prior)" in out and "Queue: " in out
    assert not (workdir / "results").exists() and not (workdir / "resources").exists()


@pytest.mark.slow
@pytest.mark.e2e
def test_the_plan_of_the_finished_demo_is_what_snakemake_would_run(demo):
    """On the demo (`all` finished), with its config and with a third seed: the jobs the plan
    counts are the fine-tuning jobs a dry run plans, and the seeds are the new ones."""
    conf = yaml.safe_load((demo / "config/demo.yaml").read_text())
    more = {**conf, "studies": {"demo": {**conf["studies"]["demo"], "seeds": 3}}}
    (demo / "config/plan-seed3.yaml").write_text(yaml.safe_dump(more))
    plans, planned = {}, {}
    for configfile, given in (("config/demo.yaml", conf), ("config/plan-seed3.yaml", more)):
        dry = snakemake(demo, "-n", "cells", "--configfile", configfile)
        assert dry.returncode == 0, dry.stderr[-3000:]
        jobs = planned_jobs(dry.stdout).get("finetune", [])
        planned[configfile] = {out.rsplit("/", 1)[0] for out in jobs}
        plans[configfile] = plan = plan_config(given, str(demo))
        assert set(plan["running"]) == planned[configfile], configfile
        assert all(entry["seeds"] in ([], [3]) for entry in plan["running"].values())
    # a third seed: every job that does not hold one yet (the shared demo's other tests may
    # have added it to some)
    seed3 = plans["config/plan-seed3.yaml"]["remaining"]
    assert seed3["jobs"] == len(planned["config/plan-seed3.yaml"]) > 0
    assert seed3["cells"] == seed3["jobs"]  # one new seed each
    run = snakemake(demo, "plan", "--configfile", "config/demo.yaml")
    assert run.returncode == 0, run.stderr[-3000:]
    left = plans["config/demo.yaml"]["remaining"]
    assert f"Total still to run: {left['cells']} cells in {left['jobs']} jobs" in run.stdout


def test_plan_accuracy_smoke():
    """benchmarks/plan_accuracy.py on its synthetic run: calibrated on 25% of the jobs, the
    others' times are predicted within 20% (median), far better than the table alone."""
    run = subprocess.run(
        [sys.executable, str(REPO / "benchmarks/plan_accuracy.py"), "--smoke", "--seed", "0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    found = re.search(r"median \|error\| (\d+)% \(size fit only (\d+)%, table (\d+)%\)", run.stdout)
    assert found, run.stdout
    calibrated, _, table = map(int, found.groups())
    assert calibrated <= 20 and calibrated < table, run.stdout


def test_a_model_whose_size_never_ran_is_planned_from_another_size(tmp_path):
    finish(tmp_path, config())
    shutil.rmtree(tmp_path / "results/cells/m-large")
    plan = plan_config(config(), str(tmp_path))
    large = plan["models"]["m-large"]
    assert large["rate_source"] == "scaled from base" and large["device"] == GPU
    assert large["jobs"] == 8 and plan["remaining"]["jobs"] == 8
    text = format_plan(plan)
    assert "m-large" in text and "scaled from base (24 cells)" in text
    assert f"GPU-hours on {GPU} (calibrated)" in text


def test_a_tiny_counted_model_has_a_size_row():
    """A test model of 41k parameters is `0.041M`, never `0M` (which no row would match)."""
    from blurbflow.cluster import params_label

    assert params_label(40_960) == "0.041M" and params_label(3) == "0.001M"
    cpus, mem_mb, minutes = size_row(params_label(40_960))
    assert (cpus, mem_mb) == (1, 4000)  # what `tiny` asks: the 2-CPU CI cluster can run it
    assert minutes == pytest.approx(0.2 * 41_000 / 110e6)


def test_cells_that_shared_a_gpu_calibrate_their_time_alone_and_jobs_price_seeds_at_once(
    tmp_path,
):
    """Cells that trained 2 at a time (result.json's engine.cells_sharing) took 2 / 1.5 of their
    time alone (the prior's gain): the fit recovers the same line. A job still to run trains
    its seeds K at a time on the calibrated GPU (BASE on an H100: all 3) at that gain, and the
    plan says so; `cells_per_gpu: 1` prices them one after another."""
    jobs = finish(tmp_path, config(), noise=0.0)
    for path in tmp_path.glob("results/cells/*/*/*/*/seed*/result.json"):
        result = json.loads(path.read_text())
        result["wall_seconds"] *= 2 / 1.5
        result["engine"] = {"cells_per_gpu": 2, "cells_sharing": 2.0}
        path.write_text(json.dumps(result))
    for found in jobs.values():  # as the job wrote them: its manifest records these files
        manifest = tmp_path / found.path / "seeds.json"
        records = seed_records(tmp_path / found.path, found.seeds)
        manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "files": records}))
    job = "results/cells/m-base/gad/short/lr0.001-bs16"
    for seed in jobs[job].seeds:
        (tmp_path / job / f"seed{seed}/result.json").unlink()
    plan = plan_config(config(), str(tmp_path))
    for size, (a, b) in TRUE.items():
        assert (fits(plan)[size]["a"], fits(plan)[size]["b"]) == pytest.approx((a, b), rel=1e-6)
    entry = plan["running"][job]
    assert (entry["device"], entry["cells_per_gpu"]) == (GPU, 3)
    assert plan["remaining"]["hours"] == pytest.approx(entry["seed_seconds"] * 2 / 3600)
    text = format_plan(plan)
    assert "Seeds per GPU (engine.cells_per_gpu: auto): 1 job 3 at a time;" in text
    assert "1.5x aggregate gain" in text
    one = plan_config({**config(), "engine": {"cells_per_gpu": 1}}, str(tmp_path))
    assert one["remaining"]["hours"] == pytest.approx(entry["seed_seconds"] * 3 / 3600)
    assert "1 job 1 at a time\n" in format_plan(one) + "\n"


def test_a_named_gpu_type_prices_seeds_at_once_by_its_memory(tmp_path):
    """Before any cell, on a 24 GB RTX 3090 (`slurm.gpu_model`): BASE's 3 seeds at once at 128
    tokens (GAD), 2 at BIOSSES' 512, LARGE's 2 and 1 (blurbflow.gpu_share); their time in seeds
    alone at the 1.5x gain: 3 / 1.5, 2 / 1.5 + 1, or 3."""
    site = {**config(), "slurm": {"gpu_model": "rtx3090"}}
    plan = plan_config(site, str(tmp_path))
    at_once = {"m-base": {"gad": 3, "biosses": 2}, "m-large": {"gad": 2, "biosses": 1}}
    for entry in plan["running"].values():
        assert entry["cells_per_gpu"] == at_once[entry["model"]][entry["task"]]
        alone = {3: 2.0, 2: 2 / 1.5 + 1, 1: 3.0}[entry["cells_per_gpu"]]
        assert entry["hours"] == pytest.approx(alone * entry["seed_seconds"] / 3600)
    assert "4 jobs 3 at a time, 8 jobs 2 at a time, 4 jobs 1 at a time" in format_plan(plan)
