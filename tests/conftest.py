"""Shared fixtures. `demo`: the whole demo run once through snakemake per test session, shared
by the end-to-end tests (test_e2e.py) and the browser test of its report
(test_report_browser.py), so the ~7 minute run happens once however many of them are chosen."""

from __future__ import annotations

import pytest

from blurbflow.tasks.registry import register_tasks

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
