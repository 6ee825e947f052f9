"""Experiment tracking (docs/tracking.md): the config's `tracking` key, the tracker's guard
around its backends, and whole cells on a tiny model tracked to an MLflow file store,
TensorBoard and W&B offline: one run per cell, a metric per evaluation, a resumed cell
continuing its runs, a tracker that fails leaving the cell as it would be untracked, and a cell
without tracking importing no tracking library. The workflow against a real `mlflow server`:
test_tracking_e2e.py."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from blurbflow.config.validate import check_config
from blurbflow.tasks.crossval import PARENT
from blurbflow.train import Preempted, batching, checkpoint, tracking
from blurbflow.train.cell import train_cell
from blurbflow.train.hooks import Hooks
from blurbflow.train.tracking import CellTracker, Tracking
from blurbflow.util.errors import ConfigError

from model_helpers import make_options, small_gad_project
from tiny_project import tiny_config
from workflow_helpers import REPO

TRACKING_LIBRARIES = ("mlflow", "wandb", "tensorboard", "torch.utils.tensorboard", "tensorboardX")


# --- the config key --------------------------------------------------------------------------


def test_a_config_without_tracking_tracks_nothing():
    options = make_options()
    assert tracking.job_tracking({"studies": {}}, options) is None
    assert tracking.job_tracking({"tracking": {}}, options) is None
    assert tracking.job_tracking({"tracking": {"mlflow": False, "wandb": False}}, options) is None


def test_true_turns_a_backend_on_with_its_defaults():
    given = {"tracking": {"mlflow": True, "tensorboard": {"dir": "tb"}, "wandb": False}}
    assert tracking.settings_of(given) == {"mlflow": {}, "tensorboard": {"dir": "tb"}}


def test_the_studies_that_run_a_job_tag_it():
    fold = next(iter(PARENT))  # a cross-validation fold: its task's studies
    study = {"models": ["tiny"], "tasks": ["gad"], "recipes": ["r"]}
    config = {
        "tracking": {"tensorboard": True},
        "studies": {
            "runs": study,
            "other-recipe": {**study, "recipes": ["q"]},
            "scoped-out": {**study, "recipe_scope": {"r": {"tasks": ["hoc"]}}},
            "also": {**study, "tasks": ["hoc", "gad"]},
        },
    }
    found = tracking.job_tracking(config, make_options(), root=Path("/w"))
    assert found == Tracking({"tensorboard": {}}, ("runs", "also"), Path("/w"))
    assert tracking.studies_of(config, make_options(task=fold)) == ("runs", "also")


def _schema() -> dict:
    return yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())


def test_the_schema_takes_the_documented_shapes():
    config = tiny_config()
    config["tracking"] = {
        "mlflow": {"tracking_uri": "http://127.0.0.1:5000", "experiment": "e"},
        "tensorboard": True,
        "wandb": {"project": "p", "mode": "offline", "dir": "results/wandb"},
    }
    check_config(copy.deepcopy(config), _schema())
    config["tracking"] = {"mlflow": True, "tensorboard": {"dir": "/abs/tb"}, "wandb": True}
    check_config(config, _schema())


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"neptune": True}, r"tracking\.neptune: unknown key"),
        ({"wandb": {"mode": "online"}}, r"tracking\.wandb\.mode: 'online' is not one of"),
        ({"tensorboard": {"dir": "../elsewhere"}}, r"tracking\.tensorboard\.dir: "),
        ({"mlflow": {"uri": "x"}}, r"tracking\.mlflow: Additional properties"),
        ({"mlflow": "yes"}, r"tracking\.mlflow: 'yes' is not of type"),
    ],
)
def test_the_schema_refuses_other_shapes_naming_the_key(given, message):
    config = tiny_config()
    config["tracking"] = given
    with pytest.raises(ConfigError, match=message):
        check_config(config, _schema())


def test_the_options_become_flat_string_parameters():
    options = make_options(seed=2, init_from={"task": "gad", "recipe": "r", "hparams": "h"})
    params = tracking.cell_params(options)
    assert params["lr"] == json.dumps(options.lr) and params["task"] == "gad"
    assert params["max_length"] == "128" and params["init_from.seed"] == '"same"'
    tags = tracking.cell_tags(options, ("s", "t"))
    assert tags == {
        "cell": "tiny/gad/r/h/seed2",
        "model": "tiny",
        "task": "gad",
        "recipe": "r",
        "hparams": "h",
        "seed": "2",
        "studies": "s,t",
    }


# --- the guard around the backends -----------------------------------------------------------


class Recording:
    def __init__(self):
        self.calls = []

    def metrics(self, values, step):
        self.calls.append(("metrics", values, step))

    def result(self, values, status, step):
        self.calls.append(("result", values, status, step))

    def end(self, status):
        self.calls.append(("end", status))


class Broken(Recording):
    def metrics(self, values, step):
        raise ConnectionError("server gone")


def test_a_backend_that_raises_is_dropped_with_a_warning_and_the_others_go_on(capsys):
    kept, broken = Recording(), Broken()
    tracker = CellTracker({"mlflow": broken, "tensorboard": kept})
    record = {"epoch": 1, "dev": 0.5, "test": 0.25, "train_loss": 0.7, "dev_scores": {"f1": 0.4}}
    tracker.evaluation(record, 10, 1e-3)
    tracker.evaluation({**record, "epoch": 2}, 20, 5e-4)
    warning = capsys.readouterr().err
    assert warning.count("tracking: mlflow failed logging an evaluation") == 1
    assert "ConnectionError: server gone" in warning and "goes on without mlflow" in warning
    assert kept.calls[0] == (
        "metrics",
        {"dev": 0.5, "test": 0.25, "train_loss": 0.7, "dev_f1": 0.4, "lr": 1e-3, "epoch": 1.0},
        10,
    )
    tracker.finish({"status": "ok", "dev": 0.5, "test": float("nan"), "selected_epoch": 1})
    assert kept.calls[-2:] == [
        ("result", {"final_dev": 0.5, "selected_epoch": 1.0}, "ok", 20),
        ("end", "FINISHED"),
    ]
    assert broken.calls == [] and not tracker


@pytest.mark.parametrize(("error", "status"), [(Preempted, "KILLED"), (ValueError, "FAILED")])
def test_a_cell_that_raises_ends_its_runs_killed_or_failed(error, status):
    backend = Recording()
    with pytest.raises(error):
        with Hooks([CellTracker({"b": backend})]).running():  # as train_cell runs its hooks
            raise error("stop")
    assert backend.calls == [("end", status)]


# --- whole cells ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gad(tmp_path_factory):
    return small_gad_project(tmp_path_factory.mktemp("tracked"), (400, 100, 100))


def run(root: Path, name: str, tracked: Tracking | None = None, epochs: int = 3) -> dict:
    options = make_options(
        model_source=str(root / "model"), lr=1e-3, batch_size=16, epochs=epochs, seed=3
    )
    out = root / "cells" / name / "result.json"
    return train_cell(options, root / "encoded", root / "data/small", out, tracked=tracked)


def scalars(folder: Path, tag: str) -> list[tuple[int, float]]:
    """TensorBoard's own reading of the event files in `folder`."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(str(folder))
    accumulator.Reload()
    return [(event.step, event.value) for event in accumulator.Scalars(tag)]


def comparable(result: dict) -> list[dict]:
    return [{k: v for k, v in e.items() if k != "seconds"} for e in result["epochs"]]


@pytest.mark.slow
def test_a_resumed_cell_continues_its_tracked_runs(gad, monkeypatch):
    from mlflow.tracking import MlflowClient

    store = gad / "mlruns"
    backends = {"mlflow": {"tracking_uri": str(store)}, "tensorboard": {}, "wandb": {}}
    tracked = Tracking(backends, ("s",), gad)
    calls, real_split = {"n": 0}, batching.micro_batches

    def split_then_sigterm(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 35:  # one call a step, 25 steps an epoch: SIGTERM in epoch 2
            os.kill(os.getpid(), signal.SIGTERM)
        return real_split(*args, **kwargs)

    monkeypatch.setattr(batching, "micro_batches", split_then_sigterm)
    with pytest.raises(checkpoint.Preempted):
        run(gad, "resumed", tracked)
    cell = gad / "cells/resumed"
    ids = json.loads((cell / tracking.RUN_IDS).read_text())
    run_id = ids["mlflow"]
    client = MlflowClient(store.resolve().as_uri())
    assert client.get_run(run_id).info.status == "KILLED"
    monkeypatch.setattr(batching, "micro_batches", real_split)

    result = run(gad, "resumed", tracked)
    assert json.loads((cell / tracking.RUN_IDS).read_text()) == ids  # the same runs
    # W&B offline: one folder per process, both of the same run (`wandb sync` joins them)
    assert len(list((cell / "wandb").glob(f"offline-run-*-{ids['wandb']}"))) == 2
    (only,) = client.search_runs([client.get_experiment_by_name("blurbflow").experiment_id])
    assert only.info.run_id == run_id and only.info.status == "FINISHED"
    assert only.info.run_name == "tiny/gad/r/h/seed3" and only.data.tags["studies"] == "s"
    assert only.data.params["lr"] == "0.001" and only.data.tags["status"] == "ok"
    dev = [(m.step, m.value) for m in client.get_metric_history(run_id, "dev")]
    assert dev == [(25 * e["epoch"], e["dev"]) for e in result["epochs"]]
    assert only.data.metrics["final_test"] == pytest.approx(result["test"])
    board = scalars(cell / "tensorboard", "dev")  # both processes' events, none twice
    assert [s for s, _ in board] == [25, 50, 75]
    assert [v for _, v in board] == pytest.approx([v for _, v in dev])  # float32 in events


@pytest.mark.slow
def test_a_tracker_that_fails_leaves_the_cell_as_it_is_untracked(gad, capfd):
    reference = run(gad, "untracked", epochs=2)
    broken = {"mlflow": {"tracking_uri": "no-such-store://x"}, "tensorboard": {}}
    result = run(gad, "tracked", Tracking(broken, (), gad), epochs=2)
    assert "tracking: mlflow failed starting the run" in capfd.readouterr().err
    assert result["status"] == "ok" and comparable(result) == comparable(reference)
    cell = gad / "cells/tracked"
    assert json.loads((cell / tracking.RUN_IDS).read_text()) == {}
    assert [s for s, _ in scalars(cell / "tensorboard", "train_loss")] == [25, 50]
    assert not (gad / "cells/untracked" / tracking.RUN_IDS).exists()


DEFAULT_CELL = """
import json, sys
sys.path.insert(0, {tests!r})
from pathlib import Path
from model_helpers import make_options
from blurbflow.train.cell import train_cell
root = Path({root!r})
options = make_options(model_source=str(root / "model"), lr=1e-3, batch_size=16, epochs=1, seed=1)
train_cell(options, root / "encoded", root / "data/small", root / "cells/default/result.json")
print(json.dumps([m for m in {names!r} if m in sys.modules]))
"""


@pytest.mark.slow
def test_a_cell_without_tracking_imports_no_tracking_library(gad):
    code = DEFAULT_CELL.format(tests=str(REPO / "tests"), root=str(gad), names=TRACKING_LIBRARIES)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1]) == []
    assert not (gad / "cells/default" / tracking.RUN_IDS).exists()
