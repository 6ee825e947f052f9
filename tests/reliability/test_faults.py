"""Faults injected into real runs of the workflow (guarantees 1–4 and 7 of docs/reliability.md
"Guarantees").

One snakemake run of a small study (4 tasks × 2 seeds, the demo's data and model copied from the
shared demo run) with faults planned through BLURBFLOW_FAULT (blurbflow.train.faults):

    pubmedqa seed 1: NaN loss         → diverged, the job goes on
    pubmedqa seed 2: SIGTERM, epoch 2 → checkpoint, exit 143; the re-run resumes it
    ncbidisease seed 1: raises        → failed with its error, seed 2 still runs, the job fails
    biosses seed 2: SIGKILL           → no result.json; the re-run trains it again
    hoc: nothing                      → finishes

Then a second, fault-free run re-runs what did not finish, while a third run on the same folder
is refused by Snakemake's lock.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from blurbflow.config import input_key
from blurbflow.options import CellOptions
from blurbflow.train.cell import train_cell

from workflow_helpers import copy_workflow, snakemake, snakemake_process

pytestmark = pytest.mark.e2e
FAULTS = ";".join(
    [
        "nan@*/pubmedqa/*/seed1",
        "sigterm@*/pubmedqa/*/seed2",
        "raise@*/ncbidisease/*/seed1",
        "sigkill@*/biosses/*/seed2",
    ]
)
TASKS = ["pubmedqa", "ncbidisease", "biosses", "hoc"]
HPARAMS = "lr0.001-bs16"


def cell_dir(workdir: Path, task: str, seed: int) -> Path:
    return workdir / f"results/cells/tiny-biobert/{task}/quick/{HPARAMS}/seed{seed}"


def job_log(workdir: Path, task: str) -> str:
    return (workdir / f"results/logs/cells/tiny-biobert/{task}/quick/{HPARAMS}.log").read_text()


def read_result(workdir: Path, task: str, seed: int) -> dict | None:
    path = cell_dir(workdir, task, seed) / "result.json"
    return json.loads(path.read_text()) if path.exists() else None


def snapshot(workdir: Path) -> dict:
    """What a run left: results, checkpoints, logs, the report and the aggregated cells."""
    # a failed run's report reads the partial table (the onerror handler in report.smk)
    table = workdir / "results/cells.parquet"
    cells = pd.read_parquet(table if table.exists() else workdir / "results/cells.partial.parquet")
    return {
        "results": {(t, s): read_result(workdir, t, s) for t in TASKS for s in (1, 2)},
        "checkpoints": {
            (t, s)
            for t in TASKS
            for s in (1, 2)
            if (cell_dir(workdir, t, s) / "checkpoint.pt").exists()
        },
        "logs": {t: job_log(workdir, t) for t in TASKS},
        "report": (workdir / "results/report.html").read_text(),
        "table": (workdir / "results/tables/faults.csv").read_text(),
        "status": {(r.task, r.seed): r.status for r in cells.itertuples()},
        "errors": {(r.task, r.seed): r.error for r in cells.itertuples()},
    }


@pytest.fixture(scope="module")
def runs(demo, tmp_path_factory):
    workdir = copy_workflow(tmp_path_factory.mktemp("faults"))
    shutil.copytree(demo / "resources", workdir / "resources")  # data, model, tokenized inputs
    config = yaml.safe_load((workdir / "config/demo.yaml").read_text())
    # 3 epochs where a fault strikes in training (at epoch 2); 1 where it strikes before
    # (ncbidisease) or never (hoc)
    epochs = {"default": 3, "ncbidisease": 1, "hoc": 1}
    config["recipes"]["quick"] = {"extends": "standard", "epochs": epochs}
    config["studies"] = {
        "faults": {
            "title": "faults",
            "models": ["tiny-biobert"],
            "tasks": TASKS,
            "recipes": ["quick"],
            "seeds": 2,
        }
    }
    (workdir / "config/faults.yaml").write_text(yaml.safe_dump(config))
    args = ("--configfile", "config/faults.yaml", "--cores", "2", "--keep-going", "all")

    first = snakemake(workdir, *args, env={"BLURBFLOW_FAULT": FAULTS})
    after_first = snapshot(workdir)

    second = snakemake_process(workdir, *args)
    locks = workdir / ".snakemake/locks"
    deadline = time.monotonic() + 120
    while not any(locks.glob("*")) and second.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    concurrent = snakemake(workdir, *args)
    second_out, second_err = second.communicate(timeout=1200)
    after_second = snapshot(workdir)
    up_to_date = snakemake(workdir, "-n", *args)
    return {
        "workdir": workdir,
        "config": config,
        "first": first,
        "first_state": after_first,
        "second_rc": second.returncode,
        "second_log": second_out + second_err,
        "concurrent": concurrent,
        "final": after_second,
        "up_to_date": up_to_date,
    }


def test_the_faulty_run_fails_but_builds_the_report(runs):
    assert runs["first"].returncode != 0
    state = runs["first_state"]
    assert state["status"] == {
        ("pubmedqa", 1): "diverged",
        ("pubmedqa", 2): "missing",
        ("ncbidisease", 1): "failed",
        ("ncbidisease", 2): "ok",
        ("biosses", 1): "ok",
        ("biosses", 2): "missing",
        ("hoc", 1): "ok",
        ("hoc", 2): "ok",
    }


def test_sigterm_checkpoints_and_the_rerun_resumes_to_the_uninterrupted_result(
    runs, tmp_path, monkeypatch
):
    """Guarantee 1."""
    first = runs["first_state"]
    assert ("pubmedqa", 2) in first["checkpoints"] and first["results"][("pubmedqa", 2)] is None
    assert "SIGTERM at epoch 2" in first["logs"]["pubmedqa"]
    resumed = runs["final"]["results"][("pubmedqa", 2)]
    assert resumed["status"] == "ok" and not runs["final"]["checkpoints"]

    workdir, options = runs["workdir"], CellOptions.from_dict(resumed["options"])
    monkeypatch.chdir(workdir)  # the model path in the options is relative to the workflow
    key = input_key("pubmedqa", options.inputs)
    encoded = Path("resources/tokenized/tiny-biobert/pubmedqa") / key
    plain = train_cell(options, encoded, Path("resources/data/pubmedqa"), tmp_path / "result.json")
    assert comparable(plain) == comparable(resumed)
    theirs = pd.read_parquet(cell_dir(workdir, "pubmedqa", 2) / "predictions.parquet")
    assert theirs.equals(pd.read_parquet(tmp_path / "predictions.parquet"))


def comparable(result: dict) -> dict:
    epochs = [{k: v for k, v in epoch.items() if k != "seconds"} for epoch in result["epochs"]]
    return {"epochs": epochs, **{k: result[k] for k in ("status", "selected_epoch", "dev", "test")}}


def test_sigkill_leaves_no_result_and_the_rerun_trains_the_cell(runs):
    """Guarantee 2."""
    first, workdir = runs["first_state"], runs["workdir"]
    assert first["results"][("biosses", 2)] is None
    assert first["errors"][("biosses", 2)].startswith("no result at")  # missing, not unreadable
    leftovers = [p for p in (workdir / "results").rglob("*.tmp")]
    assert leftovers == []
    for path in (workdir / "results/cells").rglob("result.json"):
        json.loads(path.read_text())  # every result on disk is whole
    assert runs["final"]["results"][("biosses", 2)]["status"] == "ok"
    assert "seed 1: kept (ok" in runs["final"]["logs"]["biosses"]


def test_nan_loss_is_diverged_counted_in_the_table_and_flagged_in_the_report(runs):
    """Guarantee 3."""
    for state in (runs["first_state"], runs["final"]):
        result = state["results"][("pubmedqa", 1)]
        assert result["status"] == "diverged" and "nan" in result["error"]
        assert state["status"][("pubmedqa", 1)] == "diverged"
        assert "diverged" in state["report"] and "loss became nan" in state["report"]
    table = pd.read_csv(runs["workdir"] / "results/tables/faults.csv", index_col=0)
    pubmedqa = table.loc["pubmedqa"]
    assert pubmedqa["tiny-biobert / quick:diverged"] == 1  # counted beside the 1 ok seed
    assert pubmedqa["tiny-biobert / quick:n"] == 1
    assert "[1 diverged]" in (runs["workdir"] / "results/tables/faults.md").read_text()
    # the diverged seed is kept by the re-run, not retrained
    assert "seed 1: kept (diverged" in runs["final"]["logs"]["pubmedqa"]
    assert all(
        runs["final"]["status"][(t, s)] == "ok"
        for t in TASKS
        for s in (1, 2)
        if (t, s) != ("pubmedqa", 1)
    )


def test_an_exception_fails_its_cell_only_and_the_report_lists_its_error(runs):
    """Guarantee 4."""
    first = runs["first_state"]
    result = first["results"][("ncbidisease", 1)]
    assert result["status"] == "failed" and result["error"].startswith("InjectedFault:")
    assert "injected fault in tiny-biobert/ncbidisease/quick" in first["report"]
    assert "InjectedFault" in first["report"]
    assert first["results"][("ncbidisease", 2)]["status"] == "ok"  # the same job's next seed
    assert first["status"][("hoc", 1)] == first["status"][("hoc", 2)] == "ok"
    # the re-run retrains the failed seed and keeps the finished one
    assert "seed 2: kept (ok" in runs["final"]["logs"]["ncbidisease"]
    assert runs["final"]["results"][("ncbidisease", 1)]["status"] == "ok"


def test_the_rerun_touches_only_unfinished_jobs(runs):
    assert runs["second_rc"] == 0, runs["second_log"][-3000:]
    assert runs["final"]["logs"]["hoc"] == runs["first_state"]["logs"]["hoc"]  # not re-run
    assert "Nothing to be done" in runs["up_to_date"].stdout + runs["up_to_date"].stderr


def test_a_second_snakemake_on_the_same_folder_is_refused(runs):
    """Guarantee 7."""
    concurrent = runs["concurrent"]
    assert concurrent.returncode != 0
    assert "cannot be locked" in concurrent.stdout + concurrent.stderr
    assert runs["second_rc"] == 0  # the first run finished undisturbed
