"""Experiment tracking through the workflow (docs/tracking.md): the session's finished tiny
project (`tiny_run`: two tasks, two recipes, 2 seeds, 2 epochs) ran with MLflow against a real
`mlflow server` on loopback, TensorBoard and W&B offline. The runs are read back with MLflow's
client, the event files with TensorBoard's own reader; the W&B offline files exist and name the
cell. A second run with tracking off, on a copy, does nothing."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from tiny_project import (
    FINISHED_RECIPES,
    FINISHED_TASKS,
    MODEL,
    copy_finished,
    job_log,
    job_path,
    result,
    run_all,
    seed_dir,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def cells_files(workdir: Path) -> dict:
    return {p: p.stat().st_mtime_ns for p in (workdir / "results/cells").rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    ("task", "recipe"), list(itertools.product(FINISHED_TASKS, FINISHED_RECIPES))
)
def test_each_cell_is_one_tracked_run_in_mlflow_tensorboard_and_wandb(
    tiny_run, mlflow_uri, task, recipe
):
    from mlflow.tracking import MlflowClient
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    workdir = tiny_run
    assert "tracking:" not in job_log(workdir, task, recipe)  # no backend failed

    client = MlflowClient(mlflow_uri)
    experiment = client.get_experiment_by_name("tiny")
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 2 * len(FINISHED_TASKS) * len(FINISHED_RECIPES)  # one run per cell
    runs = {
        r.data.tags["seed"]: r
        for r in runs
        if (r.data.tags["task"], r.data.tags["recipe"]) == (task, recipe)
    }
    assert sorted(runs) == ["1", "2"]
    job = job_path(task, recipe).removeprefix("results/cells/")
    for seed in (1, 2):
        tracked, expected = runs[str(seed)], result(workdir, seed, task, recipe)
        cell = f"{job}/seed{seed}"
        assert tracked.info.run_name == cell and tracked.info.status == "FINISHED"
        assert {k: tracked.data.tags[k] for k in ("cell", "model", "task", "recipe")} == {
            "cell": cell,
            "model": MODEL,
            "task": task,
            "recipe": recipe,
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

        folder = seed_dir(workdir, seed, task, recipe)
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


def test_a_second_run_with_tracking_off_does_nothing(tiny_run, tmp_path):
    """Tracking is no option of a cell: turned off (copy_finished drops it), nothing re-runs;
    and a finished run, export and dry-run publish included, has nothing left to do."""
    workdir = copy_finished(tiny_run, tmp_path / "copy")
    before = cells_files(workdir)
    second = run_all(workdir)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "Nothing to be done" in second.stdout + second.stderr
    assert cells_files(workdir) == before
