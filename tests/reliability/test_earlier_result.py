"""No result is lost to a failed retrain (blurbflow.record.earlier). In real runs of the tiny
project:

    hidden_size 32 → 48, seed 1 raises   → both seeds retrain (model identity); seed 1's earlier
                                           result moves to seed1/earlier/ beside the failure, not
                                           counted, listed in the report; seed 2's retrain
                                           finishes and replaces its earlier result
    hidden_size back to 32               → seed 1's earlier result verifies again: restored and
                                           kept, not retrained; the table is the first run's
"""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest

from blurbflow.record import earlier

from tiny_project import job_log, result, run_all, seed_dir, tiny_config, tiny_project, write_config

FAULT = {"BLURBFLOW_FAULT": "raise@*/biosses/*/seed1"}


def seed_bytes(workdir, seed: int, folder: str = "") -> dict:
    where = seed_dir(workdir, seed) / folder
    return {name: (where / name).read_bytes() for name in ("result.json", "predictions.parquet")}


def test_moves_aside_and_back_are_whole_even_when_interrupted(tmp_path):
    seed = tmp_path / "seed1"
    seed.mkdir()
    (seed / "result.json").write_text('{"status": "ok", "test": 81.5, "finished": "then"}')
    (seed / "predictions.parquet").write_text("p")
    (seed / "checkpoint.pt").write_text("c")  # a retrain's own: stays
    assert earlier.keep_aside(seed) == ["predictions.parquet", "result.json"]
    assert sorted(p.name for p in seed.iterdir()) == ["checkpoint.pt", earlier.EARLIER]
    assert "kept aside, not counted: " in earlier.describe(seed)
    assert "(ok, test 81.5, finished then)" in earlier.describe(seed)
    (seed / "result.json").write_text('{"status": "failed"}')  # the retrain failed
    assert earlier.restore(seed) and earlier.describe(seed) is None
    assert json.loads((seed / "result.json").read_text())["test"] == 81.5
    # interrupted while moving aside: result.json moved, predictions not yet
    earlier.earlier_dir(seed).mkdir()
    os.replace(seed / "result.json", earlier.earlier_dir(seed) / "result.json")
    assert earlier.restore(seed)
    assert {p.name for p in seed.iterdir()} == {
        "result.json",
        "predictions.parquet",
        "checkpoint.pt",
    }
    assert not earlier.restore(seed)  # nothing kept aside


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    workdir = tiny_project(tmp_path_factory.mktemp("earlier") / "wf")
    first = run_all(workdir)
    assert first.returncode == 0, first.stderr[-3000:]
    found = {
        "workdir": workdir,
        "table": (workdir / "results/tables/s.csv").read_text(),
        "seed1": seed_bytes(workdir, 1),
    }

    write_config(workdir, tiny_config(hidden_size=48))
    found["failed_run"] = run_all(workdir, env=FAULT)
    found["failed"] = {
        "log": job_log(workdir),
        "result": result(workdir, 1),
        "earlier": seed_bytes(workdir, 1, earlier.EARLIER),
        "seed2_earlier": earlier.earlier_dir(seed_dir(workdir, 2)).exists(),
        "report": (workdir / "results/report.html").read_text(),
        "cells": pd.read_parquet(workdir / "results/cells.partial.parquet"),
    }

    write_config(workdir, tiny_config(hidden_size=32))
    found["restored_run"] = run_all(workdir)
    found["restored"] = {
        "log": job_log(workdir),
        "seed1": seed_bytes(workdir, 1),
        "earlier": earlier.earlier_dir(seed_dir(workdir, 1)).exists(),
        "table": (workdir / "results/tables/s.csv").read_text(),
    }
    return found


@pytest.mark.e2e
def test_a_failed_retrain_keeps_the_earlier_result_beside_the_failure(runs):
    assert runs["failed_run"].returncode != 0
    failed = runs["failed"]
    assert "seed 1: training (its identity differs in model" in failed["log"]
    assert "seed 1: earlier result kept aside until the retrain finishes" in failed["log"]
    assert failed["result"]["status"] == "failed"
    assert failed["result"]["error"].startswith("InjectedFault")
    assert failed["earlier"] == runs["seed1"]  # the very files of the first run
    assert not failed["seed2_earlier"]  # a retrain that finished replaces its earlier result


@pytest.mark.e2e
def test_the_report_lists_the_kept_result_and_no_table_counts_it(runs):
    failed = runs["failed"]
    cells = failed["cells"].set_index("seed")
    assert cells.loc[1, "status"] == "failed" and cells.loc[2, "status"] == "ok"
    assert cells.loc[1, "error"].startswith("InjectedFault")
    assert "earlier result kept aside, not counted: results/cells/" in cells.loc[1, "error"]
    assert "earlier result kept aside, not counted" in failed["report"]
    assert "seed1/earlier/result.json (ok, test" in failed["report"]


@pytest.mark.e2e
def test_the_earlier_result_is_restored_when_its_identity_comes_back(runs):
    run = runs["restored_run"]
    assert run.returncode == 0, run.stderr[-3000:]
    restored = runs["restored"]
    assert "seed 1: kept (ok" in restored["log"] and "seed 1: training" not in restored["log"]
    assert restored["seed1"] == runs["seed1"] and not restored["earlier"]
    assert "seed 2: training (its identity differs in model" in restored["log"]
    assert restored["table"] == runs["table"]  # CPU training is deterministic: seed 2 too
