"""`blurbflow cell`: a cell made to fail (BLURBFLOW_FAULT) is re-run by hand under pdb, which stops
in the frame that raised; `--max-steps` trains that many steps; each seed of a job has its own
log and a failed one its whole traceback; a debug run leaves results/cells alone. One snakemake
run of the tiny project's job (data, model, tokenized inputs, the job), then a second without
the fault that keeps the finished seed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from blurbflow.config.identity import stale_manifests
from blurbflow.train.debug_cell import CellNotRunnable, parse_folder

from tiny_project import ARGS, JOB, MODEL, TASK, seed_dir, tiny_project
from workflow_helpers import snakemake

pytestmark = pytest.mark.slow
FAULT = {"BLURBFLOW_FAULT": f"raise@{MODEL}/{TASK}/quick/*/seed1"}
CONFIG = ("--configfile", "config/tiny.yaml")
DEBUG_SEED1 = "results/debug/cells/" + JOB.removeprefix("results/cells/") + "/seed1"


def blurbflow(workdir: Path, *args: str, stdin: str = "", env: dict | None = None):
    return subprocess.run(
        [sys.executable, "-m", "blurbflow", *args],
        cwd=workdir,
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=600,
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """The tiny project: `blurbflow cell` before anything was built, then the job with seed 1
    made to fail."""
    workdir = tiny_project(tmp_path_factory.mktemp("debug"))
    before = blurbflow(workdir, "cell", f"{JOB}/seed1", *CONFIG)
    run = snakemake(workdir, *ARGS, f"{JOB}/seeds.json", env=FAULT)
    return workdir, before, run


def test_missing_inputs_name_the_snakemake_command_that_builds_them(project):
    workdir, before, _ = project
    assert before.returncode == 2, before.stderr
    assert "no prepared data" in before.stderr
    # the target before `--config`, which would take it as a key=value
    command = f".venv/bin/snakemake resources/tokenized/{MODEL}/{TASK}/L"
    assert command in before.stderr and " --cores 1 --configfile config/tiny.yaml" in before.stderr


def test_each_seed_has_its_own_log_and_a_failed_seed_its_whole_traceback(project):
    workdir, _, run = project
    assert run.returncode != 0  # seed 1 failed: the job fails
    one, two = (seed_dir(workdir, s) / "train.log" for s in (1, 2))
    assert "seed 1: training" in one.read_text() and "seed 1: failed" in one.read_text()
    assert "seed 2" not in one.read_text() and "seed 1" not in two.read_text()
    assert "seed 2: ok" in two.read_text()
    job_log = (workdir / f"results/logs/cells/{MODEL}/{TASK}/quick/lr0.001-bs16.log").read_text()
    assert "seed 1: failed" in job_log and "seed 2: ok" in job_log  # the job log keeps all
    full = (seed_dir(workdir, 1) / "traceback.txt").read_text()
    result = json.loads((seed_dir(workdir, 1) / "result.json").read_text())
    short = "".join(result["traceback"])
    assert result["status"] == "failed" and full.endswith(short)
    assert full.startswith("Traceback (most recent call last):")
    for frame in ("train/seed_run.py", "train/cell.py", "in setup", "in before_training"):
        assert frame in full
    assert not (seed_dir(workdir, 2) / "traceback.txt").exists()


def test_pdb_stops_in_the_frame_that_raised(project):
    workdir, _, _ = project
    real = (seed_dir(workdir, 1) / "result.json").read_bytes()
    stdin = "where\np kind\np cell_id\nq\n"
    debug = blurbflow(workdir, "cell", f"{JOB}/seed1", *CONFIG, "--pdb", stdin=stdin, env=FAULT)
    out = debug.stdout
    assert "InjectedFault: injected fault" in debug.stderr
    # pdb marks the current frame with "> ": the function that raised, the last of `where`
    frames = [line for line in out.splitlines() if line.replace("(Pdb) ", "").startswith("> ")]
    assert frames and all("faults.py" in f and "before_training()" in f for f in frames), out
    assert "'raise'" in out and f"'{MODEL}/{TASK}/quick/lr0.001-bs16/seed1'" in out
    assert debug.returncode == 1
    assert (seed_dir(workdir, 1) / "result.json").read_bytes() == real  # results left alone
    assert (workdir / DEBUG_SEED1).is_dir()


def test_a_job_folder_without_a_seed_runs_its_first_seed_and_stops_at_max_steps(project):
    """No --configfile: the config files and --config its run recorded in result.json."""
    workdir, _, _ = project
    debug = blurbflow(workdir, "cell", JOB, "--max-steps", "2")
    assert debug.returncode == 0, debug.stderr[-3000:]
    assert "(--configfile config/tiny.yaml; recorded in result.json)" in debug.stdout
    result = json.loads((workdir / DEBUG_SEED1 / "result.json").read_text())
    assert result["status"] == "ok" and result["cell"]["seed"] == 1
    assert result["train_instances"] > 2 * 16  # more than 2 steps in an epoch
    assert [(e["epoch"], e.get("step")) for e in result["epochs"]] == [(1, 2)]
    log = [json.loads(line) for line in (workdir / DEBUG_SEED1 / "train_log.jsonl").open()]
    assert [record.get("step") for record in log] == [2]
    assert not (workdir / JOB / "seeds.json").exists()  # the job is still to run


def test_a_rerun_keeps_the_finished_seed_and_the_extra_files_do_not_make_it_stale(project):
    workdir, _, _ = project
    rerun = snakemake(workdir, *ARGS, f"{JOB}/seeds.json")
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    two = (seed_dir(workdir, 2) / "train.log").read_text()
    assert two.count("== ") == 1  # kept, not trained again
    assert not (seed_dir(workdir, 1) / "traceback.txt").exists()  # the failure's is gone
    assert json.loads((seed_dir(workdir, 1) / "result.json").read_text())["status"] == "ok"
    assert stale_manifests([str(workdir / JOB / "seeds.json")]) == []
    dry = snakemake(workdir, *ARGS, "-n", f"{JOB}/seeds.json")
    assert "Nothing to be done" in dry.stdout + dry.stderr


@pytest.mark.parametrize(
    ("folder", "expected"),
    [
        ("results/cells/m/t/r/h/seed3", ("results/cells/m/t/r/h", 3)),
        ("./results/cells/m/t/r/h/", ("results/cells/m/t/r/h", None)),
    ],
)
def test_a_cell_folder_is_a_job_folder_and_maybe_a_seed(folder, expected):
    assert parse_folder(folder) == expected


@pytest.mark.parametrize("folder", ["results/cells/m/t/r", "results/debug/m/t/r/h/seed1", "x"])
def test_other_folders_are_refused_naming_the_layout(folder):
    with pytest.raises(CellNotRunnable, match="expected results/cells/<model>"):
        parse_folder(folder)


def test_the_report_shows_how_to_debug_a_failed_cell():
    from blurbflow.report.render import _problems

    row = {"model": "m", "task": "t", "recipe": "r", "hparams": "h", "seed": 1, "error": "E"}
    cells = pd.DataFrame(
        [
            {**row, "status": "failed", "path": "./results/cells/m/t/r/h/seed1/result.json"},
            {**row, "seed": 2, "status": "ok", "path": "results/cells/m/t/r/h/seed2/result.json"},
        ]
    )
    (listed,) = _problems(cells)["listed"]
    assert listed["debug"] == ".venv/bin/blurbflow cell results/cells/m/t/r/h/seed1"
    launch = {"configfiles": ["a.yaml", "b c.yaml"], "config": {"model": "x/y", "n": 3}}
    (listed,) = _problems(cells.assign(launch=json.dumps(launch)))["listed"]
    assert listed["debug"] == (
        ".venv/bin/blurbflow cell results/cells/m/t/r/h/seed1"
        " --configfile a.yaml 'b c.yaml' --config model=x/y n=3"
    )


VALUES = ["path/to/my-model", "org/name@v1.0", "http://127.0.0.1:8000", "~/m", "a b", "it's"]
VALUES += [3, 1e-05, True, None, {"repo_prefix": "my-org/p-", "dry_run": "true"}, ["1", "b"]]


@pytest.mark.parametrize("value", VALUES)
def test_a_recorded_override_prints_as_snakemake_parses_it_back(value):
    from snakemake.cli import parse_config

    from blurbflow.util.provenance import config_arg

    assert parse_config([config_arg("key", value)]) == {"key": value}


def test_the_launch_is_the_given_one_else_the_recorded_one_else_config_yaml(tmp_path):
    from blurbflow.train.debug_cell import choose_launch

    job = tmp_path / "results/cells/m/t/r/h"
    recorded = {"configfiles": ["a.yaml", "b.yaml"], "config": {"model": "x", "opts": {"q": "1"}}}
    (job / "seed2").mkdir(parents=True)
    (job / "seed2/result.json").write_text(json.dumps({"status": "failed", "launch": recorded}))
    given = choose_launch(str(job), 2, ["c.yaml"], ["model=y"])
    assert given == ({"configfiles": ["c.yaml"], "config": {"model": "y"}}, "given")
    launch, source = choose_launch(str(job), None, None, ["opts={r: 2}"])  # merged over it
    assert launch == {
        "configfiles": ["a.yaml", "b.yaml"],
        "config": {**recorded["config"], "opts": {"q": "1", "r": "2"}},
    }
    assert source == "recorded in result.json"
    assert choose_launch(str(job), 1, None, None)[0] == {
        "configfiles": ["config.yaml"],
        "config": {},
    }


def test_an_init_from_cell_finds_its_source_weights_from_its_scratch_folder(tmp_path, monkeypatch):
    from blurbflow.config.init_from import WEIGHTS, source_weights
    from blurbflow.train.debug_cell import DebugCell, prepare_out

    from model_helpers import make_options

    monkeypatch.chdir(tmp_path)
    init = {"task": "gad", "recipe": "src", "hparams": "lr0.001-bs8", "seed": "same"}
    options = make_options(recipe="inter", init_from=init, seed=2)
    out = Path("results/debug/cells/tiny/gad/inter/h/seed2")
    cell = DebugCell(None, options, Path("enc"), Path("data"), out)
    with pytest.raises(CellNotRunnable, match="results/cells/tiny/gad/src/lr0.001-bs8/seeds.json"):
        prepare_out(cell, {"configfiles": ["my.yaml"], "config": {}})
    real = Path("results/cells/tiny/gad/src/lr0.001-bs8/seed2", WEIGHTS)
    real.parent.mkdir(parents=True)
    real.write_bytes(b"weights")
    (out / "stale.txt").write_text("an earlier debug run's")
    prepare_out(cell, {"configfiles": ["my.yaml"], "config": {}})
    assert not (out / "stale.txt").exists()  # emptied
    assert source_weights(options, out).read_bytes() == b"weights"
    assert source_weights(options, out).resolve() == real.resolve()
