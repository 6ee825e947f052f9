"""One writer per job folder (blurbflow.train.lock). Unit level: a live owner is named or waited
for, a stale lock is taken over. In real runs of the tiny project:

    run 1, seed 1 held (fault `hold`)   → its snakemake is killed with SIGKILL: the job lives on,
                                          orphaned, holding its folder's lock
    run 2 (snakemake --unlock first)    → the same job stops at once naming the orphan (pid,
                                          host); it writes no seed file
    the orphan released                 → it trains both seeds and exits
    run 3                               → takes the orphan's seeds as they are (verified, counted):
                                          no seed was trained twice
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from blurbflow.train import JobLocked
from blurbflow.train.lock import LOCK, job_lock

from tiny_project import ARGS, JOB, job_log, run_all, seed_files, tiny_project
from workflow_helpers import snakemake, snakemake_process

HOLDER = """
import sys
from blurbflow.train.lock import job_lock
with job_lock(sys.argv[1], wait=float(sys.argv[2])):
    print("locked", flush=True)
    sys.stdin.readline()
print("released", flush=True)
"""


def holder(folder: Path, wait: float = 0) -> subprocess.Popen:
    """A process that takes the job lock (waiting up to `wait` s) and holds it until told."""
    return subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(folder), str(wait)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_a_live_owner_is_named_and_the_second_process_never_enters(tmp_path):
    first = holder(tmp_path)
    assert first.stdout.readline() == "locked\n"
    owner = json.loads((tmp_path / LOCK).read_text())
    entered = []
    with pytest.raises(JobLocked, match=rf"being run by pid {first.pid} on {owner['host']}"):
        with job_lock(tmp_path, wait=0):
            entered.append(True)
    assert not entered
    first.communicate("\n", timeout=60)
    with job_lock(tmp_path, wait=0) as mine:  # released on exit
        assert json.loads((tmp_path / LOCK).read_text())["pid"] == mine["pid"] == os.getpid()
    assert (tmp_path / LOCK).read_text() == ""  # released: names no owner


def test_a_waiting_process_enters_once_the_owner_is_gone(tmp_path):
    first = holder(tmp_path)
    assert first.stdout.readline() == "locked\n"
    second = holder(tmp_path, wait=600)
    assert second.stdout.readline().startswith(f"waiting for pid {first.pid} on ")
    first.communicate("\n", timeout=60)  # the owner leaves
    assert second.stdout.readline() == "locked\n"
    second.communicate("\n", timeout=60)


def test_a_stale_lock_is_taken_over(tmp_path, capsys):
    gone = {"host": "node7", "pid": 999999, "slurm_job_id": "42", "started": "yesterday"}
    (tmp_path / LOCK).write_text(json.dumps(gone))  # its owner died: nobody holds the lock
    with job_lock(tmp_path, wait=0) as mine:
        assert json.loads((tmp_path / LOCK).read_text()) == mine
    said = capsys.readouterr().out
    assert "taking over the lock of pid 999999 on node7, SLURM job 42, since yesterday" in said


def lock_is_free(path: Path) -> bool:
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(handle, fcntl.LOCK_UN)
        return True


def wait_for(condition, what: str, limit: float = 300) -> None:
    """Poll `condition` (a wait for an event, not a timed assertion: the limit only ends a hang)."""
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def orphan(tmp_path_factory):
    workdir = tiny_project(tmp_path_factory.mktemp("lock") / "wf")
    release = workdir / "release"
    lock = workdir / JOB / LOCK
    env = {"BLURBFLOW_FAULT": "hold@*/biosses/*/seed1", "BLURBFLOW_RELEASE": str(release)}
    first = snakemake_process(workdir, *ARGS, "all", env=env)
    try:
        wait_for(lambda: lock.exists() and lock.read_text(), "the job to take its lock")
        wait_for(lambda: "held until" in job_log(workdir), "seed 1 to be held")
    finally:
        first.send_signal(signal.SIGKILL)  # the job process lives on, orphaned
        first.communicate(timeout=60)
    owner = json.loads(lock.read_text())
    found = {"workdir": workdir, "owner": owner, "before": seed_files(workdir)}
    found["unlock"] = snakemake(workdir, *ARGS, "--unlock")
    found["second"] = run_all(workdir)
    found["second_log"] = job_log(workdir)
    found["after_second"] = seed_files(workdir)
    release.touch()
    wait_for(lambda: lock_is_free(lock), "the orphan to finish")
    found["orphan"] = seed_files(workdir)
    found["third"] = run_all(workdir)
    found["third_log"] = job_log(workdir)
    found["final"] = seed_files(workdir)
    cells = pd.read_parquet(workdir / "results/cells.parquet")
    found["statuses"] = dict(zip(cells["seed"], cells["status"], strict=True))
    return found


@pytest.mark.e2e
def test_a_second_run_stops_naming_the_orphaned_job_and_writes_no_seed_file(orphan):
    assert orphan["unlock"].returncode == 0
    assert orphan["second"].returncode != 0
    owner = orphan["owner"]
    named = f"being run by pid {owner['pid']} on {owner['host']}"
    assert named in orphan["second_log"], orphan["second_log"][-2000:]
    assert "seed 1: training" not in orphan["second_log"].split(named)[-1]
    assert orphan["after_second"] == orphan["before"]  # nothing written by the second run


@pytest.mark.e2e
def test_the_orphan_finishes_and_the_next_run_trains_no_seed_twice(orphan):
    results = {key for key in orphan["orphan"] if key[1] == "result.json"}
    assert results == {("seed1", "result.json"), ("seed2", "result.json")}
    assert orphan["third"].returncode == 0, orphan["third"].stderr[-3000:]
    assert "seed 1: training" not in orphan["third_log"]  # the job is not re-run, or keeps
    assert "seed 2: training" not in orphan["third_log"]  # both seeds ("kept")
    assert orphan["final"] == orphan["orphan"]  # as the orphan wrote them
    assert orphan["statuses"] == {1: "ok", 2: "ok"}  # verified and counted
