"""The tiny project through `snakemake --profile slurm` on a real single-node SLURM cluster with
accounting (.ci/slurm/up.sh; .ci/run brings it up), through the executor plugin `make setup`
installed in the venv. Skipped where no cluster answers, unless BLURBFLOW_REQUIRE_SLURM=1.

The config is that of the session's finished tiny project (`tiny_run`, run by the local
executor: 2 tasks x 2 recipes x 2 seeds, 8 cells), with config `slurm` asking for every knob
(docs/slurm.md). Data, model and tokenized inputs are copied from it; every fine-tuning job, the
aggregation steps and the export run as SLURM jobs. Fine-tuning jobs go as SLURM job arrays
(`--slurm-array-jobs finetune`: gad's two long jobs in one array; biosses' two short jobs in one
submission, alone, as groups cannot be arrays). The first run plants a failing cell (gad,
quick-llrd, seed 1); the second, fault-free run re-runs only its job and then aggregates. The
jobs of the second run show what sbatch was asked; the tables are byte-identical to
`tiny_run`'s.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tiny_project import FINISHED_RECIPES, FINISHED_TASKS, finished_config
from workflow_helpers import copy_workflow, snakemake

# in the array's second job: the plugin's array task of a later job fails too when its first
# job's outputs are missing (snakemake-executor-plugin-slurm 2.8.0)
FAILING = "tiny-biobert/gad/quick-llrd/lr0.001-bs16/seed1"
FAILING_JOB = FAILING.rsplit("/", 1)[0]  # its seeds share one job, which fails
# how sacct's Comment (`rule_finetune_wildcards_…`) ends for that job
FAILING_COMMENT = FAILING_JOB.replace("/", "_")
LONG, SHORT = "gad", "biosses"
CELLS = len(FINISHED_TASKS) * len(FINISHED_RECIPES) * 2  # 2 seeds
# QOSes, node feature and GPU type as .ci/slurm/up.sh sets them up
SLURM = {
    "account": "blurbflow",
    "partition": "debug",
    "qos": "ci-cpu",
    "gpu_qos": "ci-gpu",
    "gpu_constraint": "fakegpu",
    "gpu_request": "gres",
    "gpu_model": "fake",
    "sbatch": "--nice=1",
    "signal_lead": 90,
}


def cluster_answers() -> bool:
    if not (shutil.which("sinfo") and shutil.which("sacct")):
        return False
    probe = subprocess.run(["timeout", "10", "sinfo", "-h"], capture_output=True)
    return probe.returncode == 0


pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not cluster_answers() and os.environ.get("BLURBFLOW_REQUIRE_SLURM") != "1",
        reason="no SLURM cluster answers (.ci/slurm/up.sh brings one up)",
    ),
]


def sacct(since: str) -> dict[str, dict]:
    """Every job SLURM accounted since `since` (a cluster brought up again restarts its job ids,
    while the accounting database keeps the earlier ones): its own id (JobIDRaw: an array task's
    SLURM_JOB_ID) -> JobID (`<array>_<task>` for an array task), State, Comment, AllocTRES,
    JobName, SubmitLine."""
    fields = ["JobIDRaw", "JobID", "JobName", "Comment", "State", "AllocTRES", "SubmitLine"]
    run = subprocess.run(
        ["sacct", "-X", "-n", "-P", "-S", since, f"--format={','.join(fields)}"],
        capture_output=True,
        text=True,
        check=True,
    )
    rows = [dict(zip(fields, line.split("|"), strict=True)) for line in run.stdout.splitlines()]
    return {row["JobIDRaw"]: row for row in rows}


def scontrol() -> dict[str, dict]:
    """What slurmctld holds of each job it still knows (MinJobAge=300 s): id -> field -> value."""
    run = subprocess.run(
        ["scontrol", "-o", "show", "job"], capture_output=True, text=True, check=True
    )
    jobs = [dict(re.findall(r"(\S+?)=(\S*)", line)) for line in run.stdout.splitlines()]
    return {job["JobId"]: job for job in jobs if "JobId" in job}


def results(workdir: Path) -> dict[str, dict]:
    cells = workdir / "results/cells"
    return {
        str(path.parent.relative_to(cells)): json.loads(path.read_text())
        for path in sorted(cells.rglob("result.json"))
    }


@pytest.fixture(scope="module")
def slurm_runs(tiny_run, tmp_path_factory):
    assert cluster_answers(), "BLURBFLOW_REQUIRE_SLURM=1 but no SLURM cluster answers"
    since = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - 2))
    workdir = copy_workflow(tmp_path_factory.mktemp("slurm"))
    shutil.copytree(tiny_run / "resources", workdir / "resources")
    config = {**finished_config(), "slurm": SLURM}  # tracking: no option of a cell
    (workdir / "config/slurm-tiny.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    args = (
        "all",
        "--profile",
        "slurm",
        # the profile's first status check after 20 s (+10 s after each that finds nothing
        # finished) suits real queues; these jobs take seconds
        "--slurm-init-seconds-before-status-checks",
        "2",
        "--slurm-array-jobs",
        "finetune",
        "--configfile",
        "config/slurm-tiny.yaml",
    )
    first = snakemake(workdir, *args, env={"BLURBFLOW_FAULT": f"raise@{FAILING}"})
    after_first = results(workdir)
    report_after_first = (workdir / "results/report.html").read_text()
    second = snakemake(workdir, *args)
    shown = scontrol()  # at once: the second run's jobs are minutes old
    return {
        "local": tiny_run,
        "workdir": workdir,
        "first": first,
        "after_first": after_first,
        "report_after_first": report_after_first,
        "second": second,
        "after_second": results(workdir),
        "sacct": sacct(since),
        "scontrol": shown,
    }


def test_every_cell_ran_as_a_slurm_job_on_a_gpu(slurm_runs):
    jobs, cells = slurm_runs["sacct"], slurm_runs["after_first"]
    assert len(cells) == CELLS
    for cell, result in cells.items():
        job = jobs[result["slurm_job_id"]]
        expected = "FAILED" if cell.startswith(FAILING_JOB + "/") else "COMPLETED"
        if expected != job["State"] and _behind_the_failing_job_in_its_array(job):
            expected = "FAILED"  # its own seeds finished: the plugin fails the task afterwards
        assert job["State"] == expected, (cell, job)
        assert "gres/gpu=1" in job["AllocTRES"], job
        assert job["JobName"].startswith("blurbflow")


def _behind_the_failing_job_in_its_array(job: dict) -> bool:
    """Whether the job is an array task whose array's first job is the failing one: the plugin
    fails such a task when that job's outputs are missing (its comment names the array's first
    job). Which of the two long jobs comes first varies from run to run."""
    return "_" in job["JobID"] and job["Comment"].endswith(FAILING_COMMENT)


def test_the_failing_cell_fails_alone_and_the_report_lists_it(slurm_runs):
    first, cells = slurm_runs["first"], slurm_runs["after_first"]
    assert first.returncode != 0
    assert cells[FAILING]["status"] == "failed"
    assert cells[FAILING]["error"].startswith("InjectedFault: injected fault in " + FAILING)
    others = {cell: r["status"] for cell, r in cells.items() if cell != FAILING}
    assert set(others.values()) == {"ok"}, others  # seed 2 of the failing job included
    # the profile's retries ran the failing job three times; its finished seed was kept. The
    # first attempt was a task of the array (whose comment names the array's first job), the
    # retries single submissions.
    jobs = slurm_runs["sacct"]
    run_name = jobs[cells[FAILING]["slurm_job_id"]]["JobName"]  # one name per snakemake run
    seed2 = FAILING.replace("seed1", "seed2")
    first = cells[seed2]["slurm_job_id"]
    retries = [
        j
        for j in jobs.values()
        if j["JobName"] == run_name
        and j["Comment"].endswith(FAILING_COMMENT)
        and j["JobIDRaw"] != first
        and j["JobID"].split("_")[0] != jobs[first]["JobID"].split("_")[0]  # not of its array
    ]
    assert [j["State"] for j in [jobs[first], *retries[:2]]] == ["FAILED"] * 3
    assert "_" not in retries[0]["JobID"] and "_" not in retries[1]["JobID"]
    assert "InjectedFault" in slurm_runs["report_after_first"]


def test_the_long_jobs_went_as_one_array(slurm_runs):
    cells, jobs = slurm_runs["after_first"], slurm_runs["sacct"]
    # the first run's long cells but the failing one (its last, retried attempt)
    ids = {
        jobs[r["slurm_job_id"]]["JobID"]
        for c, r in cells.items()
        if f"/{LONG}/" in c and c != FAILING
    }
    assert len(ids) == 2 and all("_" in i for i in ids), ids  # `<array>_<task>`, one per job
    assert len({i.split("_")[0] for i in ids}) == 1, ids  # one array, one sbatch


def test_the_tables_are_byte_identical_to_the_local_executors(slurm_runs):
    ours, local = slurm_runs["workdir"] / "results/tables", slurm_runs["local"] / "results/tables"
    names = sorted(path.name for path in local.iterdir())
    assert names and names == sorted(path.name for path in ours.iterdir())
    for name in names:
        assert (ours / name).read_bytes() == (local / name).read_bytes(), name
    # the processes of the run, each job's own among them, take the config as validated and
    # its jobs from the file the first one left (blurbflow.job_cache)
    assert list((slurm_runs["workdir"] / ".snakemake/blurbflow").glob("jobs-*.pickle"))


def test_short_jobs_share_submissions(slurm_runs):
    short = {
        r["slurm_job_id"] for c, r in slurm_runs["after_first"].items() if c.split("/")[1] == SHORT
    }
    assert len(short) == 1  # 2 jobs (2 recipes) with group-components short-cells=4
    assert "short-cells" in slurm_runs["sacct"][short.pop()]["Comment"]


def test_the_rerun_completes_the_failed_cell_and_aggregates_on_the_cluster(slurm_runs):
    second, jobs = slurm_runs["second"], slurm_runs["sacct"]
    assert second.returncode == 0, second.stderr[-3000:]
    before, after = slurm_runs["after_first"], slurm_runs["after_second"]
    assert jobs[after[FAILING]["slurm_job_id"]]["State"] == "COMPLETED"
    assert after[FAILING]["status"] == "ok"
    rerun = {c for c in after if after[c]["slurm_job_id"] != before[c]["slurm_job_id"]}
    assert rerun == {FAILING}  # seed 2 of the same job was kept, nothing else re-ran
    workdir = slurm_runs["workdir"]
    cells = pd.read_parquet(workdir / "results/cells.parquet")
    assert len(cells) == CELLS and set(cells["status"]) == {"ok"}
    assert (workdir / "results/report.html").exists()
    run_name = jobs[after[FAILING]["slurm_job_id"]]["JobName"]
    comments = {j["Comment"]: j["State"] for j in jobs.values() if j["JobName"] == run_name}
    for rule in ("aggregate", "tables", "report"):
        assert comments.get(f"rule_{rule}") == "COMPLETED", comments


def test_sbatch_asked_for_the_configured_gres_qos_constraint_and_signal(slurm_runs):
    """The second run's jobs as scontrol shows them. Slurm 22.05's scontrol does not show a
    job's --signal, so that is read from the submission sacct recorded."""
    after, shown, jobs = slurm_runs["after_second"], slurm_runs["scontrol"], slurm_runs["sacct"]
    gpu_id = after[FAILING]["slurm_job_id"]
    gpu = shown[gpu_id]
    assert gpu["TresPerNode"] == "gres:gpu:fake:1", gpu
    assert "TresPerJob" not in gpu  # --gres alone, no --gpus beside it
    assert (gpu["QOS"], gpu["Features"], gpu["Nice"]) == ("ci-gpu", "fakegpu", "1"), gpu
    assert "--signal=TERM@90" in jobs[gpu_id]["SubmitLine"].split()
    run_name = jobs[gpu_id]["JobName"]
    cpu_ids = [i for i, j in jobs.items() if j["JobName"] == run_name and i != gpu_id]
    rules = {jobs[i]["Comment"] for i in cpu_ids}
    assert {"rule_aggregate", "rule_tables", "rule_report"} <= rules, rules
    for job_id in cpu_ids:
        cpu = shown[job_id]
        assert (cpu["QOS"], cpu["Features"], cpu["Nice"]) == ("ci-cpu", "(null)", "1"), cpu
        assert "TresPerNode" not in cpu and "--signal" not in jobs[job_id]["SubmitLine"]
