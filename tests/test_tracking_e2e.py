"""Experiment tracking through the workflow (issue 24; docs/tracking.md): the tiny project
(tests/tiny_project.py: one task, one recipe, 2 seeds, 2 epochs) with MLflow against a real
`mlflow server` on loopback, TensorBoard and W&B offline. The runs are read back with MLflow's
client, the event files with TensorBoard's own reader; the W&B offline files exist and name the
cell. Turning tracking off afterwards re-runs nothing."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tiny_project import JOB, MODEL, TASK, result, run_all, seed_dir, tiny_config, write_config
from workflow_helpers import copy_workflow

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
MLFLOW = Path(sys.executable).parent / "mlflow"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def mlflow_server(tmp_path):
    """`mlflow server` on 127.0.0.1 with a SQLite store; its URI. Stopped afterwards."""
    port = free_port()
    log = (tmp_path / "mlflow-server.log").open("w")
    server = subprocess.Popen(
        [
            str(MLFLOW),
            "server",
            "--backend-store-uri",
            f"sqlite:///{tmp_path / 'mlflow.db'}",
            "--artifacts-destination",
            str(tmp_path / "mlflow-artifacts"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        cwd=tmp_path,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its workers with it: stopped as one group below
    )
    uri = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(f"{uri}/health", timeout=2) as answer:
                if answer.status == 200:
                    break
        except OSError:
            pass
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            pytest.fail(
                f"mlflow server did not start: {(tmp_path / 'mlflow-server.log').read_text()}"
            )
        time.sleep(0.5)
    yield uri
    os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=5)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
    log.close()


def cells_files(workdir: Path) -> dict:
    return {p: p.stat().st_mtime_ns for p in (workdir / "results/cells").rglob("*") if p.is_file()}


def test_each_cell_is_one_tracked_run_in_mlflow_tensorboard_and_wandb(tmp_path, mlflow_server):
    from mlflow.tracking import MlflowClient
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    workdir = copy_workflow(tmp_path / "project")
    config = tiny_config()
    config["tracking"] = {
        "mlflow": {"tracking_uri": mlflow_server, "experiment": "tiny"},
        "tensorboard": True,
        "wandb": {"project": "tiny", "mode": "offline"},
    }
    write_config(workdir, config)
    first = run_all(workdir)
    assert first.returncode == 0, first.stderr[-5000:]
    log = (workdir / f"results/logs/cells/{MODEL}/{TASK}/quick/lr0.001-bs16.log").read_text()
    assert "tracking:" not in log  # no backend failed

    client = MlflowClient(mlflow_server)
    experiment = client.get_experiment_by_name("tiny")
    runs = {r.data.tags["seed"]: r for r in client.search_runs([experiment.experiment_id])}
    assert sorted(runs) == ["1", "2"]  # one run per cell
    job = JOB.removeprefix("results/cells/")
    for seed in (1, 2):
        tracked, expected = runs[str(seed)], result(workdir, seed)
        cell = f"{job}/seed{seed}"
        assert tracked.info.run_name == cell and tracked.info.status == "FINISHED"
        assert {k: tracked.data.tags[k] for k in ("cell", "model", "task", "recipe")} == {
            "cell": cell,
            "model": MODEL,
            "task": TASK,
            "recipe": "quick",
        }
        assert (
            tracked.data.tags["hparams"] == "lr0.001-bs16" and tracked.data.tags["studies"] == "s"
        )
        assert tracked.data.params["lr"] == "0.001" and tracked.data.params["epochs"] == "2"
        history = {
            name: [(m.step, m.value) for m in client.get_metric_history(tracked.info.run_id, name)]
            for name in ("dev", "test", "train_loss", "lr")
        }
        assert [v for _, v in history["dev"]] == [e["dev"] for e in expected["epochs"]]
        assert [v for _, v in history["test"]] == [e["test"] for e in expected["epochs"]]
        steps = [s for s, _ in history["dev"]]
        assert len(steps) == 2 and 0 < steps[0] < steps[1]  # optimizer steps, one per epoch
        assert all([s for s, _ in history[k]] == steps for k in ("train_loss", "lr"))
        assert tracked.data.metrics["final_test"] == pytest.approx(expected["test"])
        assert tracked.data.tags["status"] == "ok"

        folder = seed_dir(workdir, seed)
        events = EventAccumulator(str(folder / "tensorboard"))
        events.Reload()
        board = events.Scalars("dev")
        assert [e.step for e in board] == steps
        assert [e.value for e in board] == pytest.approx([v for _, v in history["dev"]])
        assert {"test", "train_loss", "lr", "final/final_test"} <= set(events.Tags()["scalars"])

        wandb_id = json.loads((folder / "tracking.json").read_text())["wandb"]
        (offline,) = (folder / "wandb").glob(f"offline-run-*-{wandb_id}")
        (records,) = offline.glob(f"run-{wandb_id}.wandb")
        assert cell.encode() in records.read_bytes()  # the run's name: the cell

    # tracking is no option of a cell: turned off, nothing re-runs
    before = cells_files(workdir)
    del config["tracking"]
    write_config(workdir, config)
    second = run_all(workdir)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "Nothing to be done" in second.stdout + second.stderr
    assert cells_files(workdir) == before
