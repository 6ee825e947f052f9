"""The workflow uses Snakemake's public interface only (issue 30): no `workflow._…` attribute, no
`snakemake.common` internals. A finished job re-runs through a rerun stamp (an input written when
its seed files changed; workflow/rules/common.smk) and Snakemake's mtime trigger; pinned here on
the smoke config with the stand-in steps of benchmarks/dag_scale.py (every output written at
once, no training): the changed job, and only it, is planned; a run that does not need it
(`snakemake data`) and a dry run write nothing; once it has re-run, nothing is left to do."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
import yaml

import blurbflow
from blurbflow.config import cell_jobs, expand_cells
from blurbflow.util import paths

from workflow_helpers import REPO, copy_workflow, planned_jobs, snakemake

sys.path.insert(0, str(REPO / "benchmarks"))
from dag_scale import STAND_IN, STAND_IN_INIT, smoke_config  # noqa: E402

PRIVATE = re.compile(r"workflow\._|snakemake\.common")


def test_the_workflow_names_no_private_snakemake_api():
    files = [REPO / "Snakefile", *sorted((REPO / "workflow").rglob("*"))]
    found = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in files
        if path.is_file() and path.suffix in ("", ".smk", ".py")
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if PRIVATE.search(line)
    ]
    assert found == []


def test_a_rerun_stamp_stays_under_its_folder():
    assert paths.rerun_stamp("results/cells/m/t/r/h") == "results/rerun/results/cells/m/t/r/h"
    assert paths.rerun_stamp("/abs/models/x/") == "results/rerun/abs/models/x"
    assert paths.rerun_stamp("../models/x") == "results/rerun/__/models/x"
    job = paths.job_folder("m", "t", "r", "h")
    assert paths.JOB_MANIFEST.format(model="m", task="t", recipe="r", hparams="h") == (
        f"{job}/seeds.json"
    )


@pytest.mark.e2e
def test_a_changed_seed_file_re_runs_its_job_only_when_asked_and_once(tmp_path):
    config = smoke_config(yaml.safe_load((REPO / "config.yaml").read_text()))
    workdir = copy_workflow(tmp_path / "wf")
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    stand_in = tmp_path / "stand-in" / "blurbflow"
    stand_in.mkdir(parents=True)
    real = str(Path(blurbflow.__file__).parent)
    (stand_in / "__init__.py").write_text(STAND_IN_INIT.format(real=real))
    (stand_in / "steps.py").write_text(STAND_IN)
    env = {"PYTHONPATH": str(stand_in.parent)}

    def run(*args):
        done = snakemake(workdir, *args, "--cores", "2", env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        return done

    launched = run("all").stderr
    # config.yaml with no --configfile: before its first job, one line of what it trains
    jobs = cell_jobs(expand_cells(config))
    cells = sum(len(one.seeds) for one in jobs.values())
    line = f"launching the paper config (config.yaml, no --configfile given): {cells:,} cells to"
    assert f"{line} train in {len(jobs):,} fine-tuning jobs, " in launched, launched[-3000:]
    assert "Nothing to be done" in run("-n", "all").stdout
    job = sorted(jobs)[0]
    (workdir / job / "seed1/result.json").write_text('{"edited": true}')
    stamp = workdir / paths.rerun_stamp(job)

    assert "launching" not in run("data").stderr  # does not ask for the job: no stamp, no cell
    assert not stamp.exists()
    launches = (workdir / "results/logs/launches.jsonl").read_text().splitlines()
    recorded = [{k: v for k, v in json.loads(line).items() if k != "started"} for line in launches]
    # the runs that started jobs (`data` had nothing to do), their config files and --config
    assert recorded == [{"configfiles": ["config.yaml"], "config": {}, "targets": ["all"]}]
    dry = run("-n", "all")
    assert f"seed files changed since their job finished, re-run: {job}" in dry.stderr
    assert planned_jobs(dry.stdout)["finetune"] == [f"{job}/seeds.json"]
    assert not stamp.exists()  # a dry run plans it with a temporary stamp: the project as it was

    done = run("all")
    assert planned_jobs(done.stdout + done.stderr)["finetune"] == [f"{job}/seeds.json"]
    assert stamp.exists()
    # the stamp stays the job's input (its input set does not change back): nothing to do
    assert "Nothing to be done" in run("-n", "all").stdout
