"""Shared fixtures, each run at most once per test session however many tests choose it.
`demo`: the whole demo through snakemake (~7 minutes), for the end-to-end tests (test_e2e.py)
and the browser test of its report (test_report_browser.py).
`tiny_run`: the tiny project finished with every tracker on (tiny_project.finished_config,
~1 minute), for the tests that need a finished run: export, tracking, the job logs, the SLURM
run's inputs and the tables it must match. A test that runs snakemake in it again takes
`copy_finished(tiny_run, tmp_path / ...)` instead."""

from __future__ import annotations

import pytest

from blurbflow.tasks.registry import register_tasks

from mlflow_helpers import mlflow_server
from tiny_project import finished_config, run_all, tiny_project, write_config
from workflow_helpers import copy_workflow, snakemake


@pytest.fixture(autouse=True)
def _user_tasks_stay_in_their_test():
    """A unit test's own tasks (registered in this process) must not reach later tests."""
    yield
    register_tasks({})  # forget the test's own tasks


@pytest.fixture(scope="session")
def demo(tmp_path_factory):
    workdir = copy_workflow(tmp_path_factory.mktemp("demo"))
    run = snakemake(workdir, "--configfile", "config/demo.yaml", "--cores", "2", "all")
    assert run.returncode == 0, run.stderr[-5000:]
    return workdir


@pytest.fixture(scope="session")
def mlflow_uri(tmp_path_factory):
    """A real `mlflow server` on loopback for the session."""
    with mlflow_server(tmp_path_factory.mktemp("mlflow")) as uri:
        yield uri


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory, mlflow_uri):
    """The tiny project on two tasks after `snakemake all`, tracked by MLflow (experiment
    `tiny` on `mlflow_uri`), TensorBoard and W&B offline. Read it; never run snakemake in it."""
    workdir = tiny_project(tmp_path_factory.mktemp("tiny-run"))
    tracking = {
        "mlflow": {"tracking_uri": mlflow_uri, "experiment": "tiny"},
        "tensorboard": True,
        "wandb": {"project": "tiny", "mode": "offline"},
    }
    write_config(workdir, finished_config(tracking))
    run = run_all(workdir)
    assert run.returncode == 0, run.stderr[-5000:]
    return workdir
