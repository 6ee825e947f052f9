"""`train_cell(..., max_steps=N)`, the debugging override behind `blurbflow cell --max-steps N`:
exactly N optimizer steps, then an evaluation and a result written as usual, on the same schedule
as the full run (its steps are the full run's first N)."""

from __future__ import annotations

from pathlib import Path

import pytest

from blurbflow.train import device as devices
from blurbflow.train.cell import train_cell

from model_helpers import make_options, small_gad_project

PER_EPOCH = 4  # 64 training instances, batches of 16


@pytest.fixture(scope="module")
def gad(tmp_path_factory):
    return small_gad_project(tmp_path_factory.mktemp("max_steps"), (64, 32, 32))


@pytest.fixture
def optimizer_steps(monkeypatch):
    """The optimizer steps taken, counted where every batch's step goes through."""
    taken = []
    real = devices.optimizer_step

    def counted(*args):
        taken.append(1)
        return real(*args)

    monkeypatch.setattr(devices, "optimizer_step", counted)
    return taken


def run(root: Path, name: str, max_steps: int | None = None, **overrides) -> dict:
    settings = {"recipe": "standard", "lr": 1e-3, "batch_size": 16, "epochs": 2, "seed": 3}
    options = make_options(model_source=str(root / "model"), **{**settings, **overrides})
    out = root / "cells" / name / "result.json"
    return train_cell(options, root / "encoded", root / "data/small", out, max_steps=max_steps)


def test_max_steps_2_trains_exactly_2_steps_then_evaluates_and_writes_the_result(
    gad, optimizer_steps
):
    result = run(gad, "two", max_steps=2)
    assert len(optimizer_steps) == 2
    assert result["status"] == "ok" and (gad / "cells/two/result.json").exists()
    assert [(r["epoch"], r["step"]) for r in result["epochs"]] == [(1, 2)]
    assert result["selected_epoch"] == 1 and result["selected_step"] == 2
    assert "max_steps" not in result and "max_steps" not in result["options"]  # not an option
    assert not (gad / "cells/two/checkpoint.pt").exists()


def test_max_steps_at_an_epoch_end_or_beyond_the_run(gad, optimizer_steps):
    at_end = run(gad, "epoch", max_steps=PER_EPOCH)
    assert len(optimizer_steps) == PER_EPOCH
    assert [r["epoch"] for r in at_end["epochs"]] == [1] and "step" not in at_end["epochs"][0]
    optimizer_steps.clear()
    beyond = run(gad, "beyond", max_steps=100)  # the whole run: 2 epochs
    assert len(optimizer_steps) == 2 * PER_EPOCH and len(beyond["epochs"]) == 2


def test_the_steps_are_the_full_runs_first_steps(gad, optimizer_steps):
    full = run(gad, "full", eval_every_steps=3)
    short = run(gad, "short", max_steps=3, eval_every_steps=3)
    assert len(optimizer_steps) == 2 * PER_EPOCH + 3
    first = {k: v for k, v in full["epochs"][0].items() if k != "seconds"}
    assert [{k: v for k, v in r.items() if k != "seconds"} for r in short["epochs"]] == [first]
