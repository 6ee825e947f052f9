"""Evaluation every N optimizer steps and early stopping, on whole cells of a tiny model built
from generated BIOSSES data (its Pearson score moves at every evaluation): the selected step is
the best dev evaluation (its predictions are the cell's test predictions), `patience` stops
training, and a SIGTERM between two evaluations resumes to the uninterrupted run's result."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pandas as pd
import pytest

from blurbflow.config import cell_options
from blurbflow.data.generate import generate_source
from blurbflow.data.prepare import prepare_task
from blurbflow.metrics import compute_metric
from blurbflow.models.build import build_demo_model
from blurbflow.models.load import load_tokenizer
from blurbflow.options import UNSET, InputOptions
from blurbflow.report.curves import _dev_by_epoch
from blurbflow.tasks import get_task
from blurbflow.train import batching, checkpoint
from blurbflow.train.cell import train_cell
from blurbflow.train.encode import encode_task
from blurbflow.train.fit import stopped_early
from blurbflow.util.errors import ConfigError

from model_helpers import make_options

PER_EPOCH = 8  # 64 training instances, batches of 8


@pytest.fixture(scope="module")
def sts(tmp_path_factory):
    root = tmp_path_factory.mktemp("early")
    generate_source("biosses", root / "raw/biosses")
    prepare_task("biosses", root / "raw", root / "data/biosses")
    data = root / "data/biosses"
    build_demo_model(
        [data / "train.parquet"], root / "model", hidden_size=32, pretrain_epochs=0, vocab_size=600
    )
    tokenizer = load_tokenizer(str(root / "model"))
    encode_task(
        get_task("biosses"), data, tokenizer, InputOptions(max_length=128), root / "encoded"
    )
    return root


def run(root: Path, name: str, **overrides) -> dict:
    settings = {"lr": 3e-4, "batch_size": 8, "epochs": 3, "max_length": 128, "seed": 5}
    options = make_options(
        model_source=str(root / "model"),
        task="biosses",
        recipe="steps",
        **{**settings, **overrides},
    )
    out = root / "cells" / name / "result.json"
    return train_cell(options, root / "encoded", root / "data/biosses", out)


def comparable(result: dict) -> dict:
    records = [{k: v for k, v in e.items() if k != "seconds"} for e in result["epochs"]]
    return {"records": records, "step": result["selected_step"], "test": result["test"]}


def test_the_selected_step_is_the_best_dev_evaluation_and_gives_the_test_predictions(sts):
    result = run(sts, "every3", eval_every_steps=3)
    records = result["epochs"]
    # every 3 steps of 24 (8 an epoch), with the epoch each step fell in
    assert [(r["epoch"], r["step"]) for r in records] == [
        (1, 3),
        (1, 6),
        (2, 9),
        (2, 12),
        (2, 15),
        (3, 18),
        (3, 21),
        (3, 24),
    ]
    assert len({r["dev"] for r in records}) > 1  # the choice is not trivial
    best = max(records, key=lambda r: r["dev"])
    assert result["selected_step"] == best["step"] and result["selected_epoch"] == best["epoch"]
    assert (result["dev"], result["test"]) == (best["dev"], best["test"])
    frame = pd.read_parquet(sts / "cells/every3/predictions.parquet")
    test = frame[frame["split"] == "test"]
    gold, pred = [json.loads(g) for g in test["gold"]], [json.loads(p) for p in test["pred"]]
    scored = compute_metric(get_task("biosses"), gold, pred)
    assert scored == pytest.approx(best["test"])
    log_text = (sts / "cells/every3/train_log.jsonl").read_text()
    log = [json.loads(line) for line in log_text.splitlines()]
    assert [r["step"] for r in log] == list(range(3, 25, 3))


def test_without_eval_every_steps_a_cell_evaluates_once_per_epoch(sts):
    result = run(sts, "epochs")
    assert [r["epoch"] for r in result["epochs"]] == [1, 2, 3]
    assert all("step" not in r for r in result["epochs"]) and result["selected_step"] is None


def first_stop(records: list[dict], patience: int) -> tuple[int, int] | None:
    """(best index, stop index) where a run's dev first goes `patience` evaluations without
    improving on its best, or None when it never does."""
    best = 0
    for i, record in enumerate(records):
        if record["dev"] > records[best]["dev"]:
            best = i
        if i - best >= patience:
            return best, i
    return None


def test_patience_stops_after_that_many_evaluations_without_a_better_dev_score(sts):
    full = run(sts, "full", eval_every_steps=2)["epochs"]
    assert len(full) == 3 * PER_EPOCH // 2
    # The largest patience this trajectory triggers before its end (the curve's shape depends on
    # the machine's float arithmetic; any plateau or dip gives patience 1 something to stop on).
    found = [(p, first_stop(full, p)) for p in (3, 2, 1)]
    early = [(p, s) for p, s in found if s and s[1] < len(full) - 1]
    assert early, f"dev never stopped improving: {[round(r['dev'], 2) for r in full]}"
    patience, (best, stop) = early[0]
    stopped = run(sts, f"patience{patience}", eval_every_steps=2, patience=patience)
    drop = [{k: v for k, v in r.items() if k != "seconds"} for r in stopped["epochs"]]
    assert drop == [{k: v for k, v in r.items() if k != "seconds"} for r in full[: stop + 1]]
    assert stopped["selected_step"] == full[best]["step"] and stopped["test"] == full[best]["test"]


def test_patience_counts_evaluations_since_the_first_best():
    records = [{"dev": d} for d in (0.5, 0.7, 0.7, 0.6)]
    assert stopped_early(make_options(patience=2), records[:3]) is False
    assert stopped_early(make_options(patience=2), records) is True  # a tie is no improvement
    assert stopped_early(make_options(patience=None), records) is False
    assert stopped_early(make_options(), records) is False  # not set: UNSET
    assert stopped_early(make_options(patience=1), []) is False


def test_sigterm_between_evaluations_resumes_to_the_uninterrupted_result(sts, monkeypatch):
    reference = run(sts, "reference", eval_every_steps=3)
    calls = {"n": 0}
    real_split = batching.micro_batches

    def split_then_sigterm(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 13:  # one call a step: epoch 2, between the evaluations at 12 and 15
            os.kill(os.getpid(), signal.SIGTERM)
        return real_split(*args, **kwargs)

    monkeypatch.setattr(batching, "micro_batches", split_then_sigterm)
    with pytest.raises(checkpoint.Preempted, match=r"SIGTERM at epoch 2 step 5\b"):
        run(sts, "interrupted", eval_every_steps=3)
    cell = sts / "cells/interrupted"
    assert (cell / checkpoint.CHECKPOINT).exists() and not (cell / "result.json").exists()
    monkeypatch.setattr(batching, "micro_batches", real_split)
    resumed = run(sts, "interrupted", eval_every_steps=3)
    assert comparable(resumed) == comparable(reference)
    assert not (cell / checkpoint.CHECKPOINT).exists()
    log = [json.loads(line) for line in (cell / "train_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == list(range(3, 25, 3))  # none scored twice


def test_the_report_curves_place_step_evaluations_on_the_epoch_axis():
    records = [
        {"epoch": 1, "step": 3, "dev": 1.0},
        {"epoch": 1, "step": 6, "dev": 2.0},
        {"epoch": 2, "step": 12, "dev": 3.0},
    ]
    assert _dev_by_epoch(json.dumps(records)) == [(0.5, 1.0), (1.0, 2.0), (2.0, 3.0)]
    assert _dev_by_epoch(json.dumps([{"epoch": 1, "dev": 4.0}])) == [(1, 4.0)]


def test_the_options_join_the_cell_only_when_a_recipe_sets_them():
    config = {
        "models": {"m": {"path": "resources/models/m"}},
        "recipes": {
            "plain": {},
            "steps": {"eval_every_steps": 200, "patience": 3},
            "final": {"patience": 3, "train_on": "train+dev"},
        },
    }
    plain = cell_options(config, "m", "gad", "plain", 1e-5, 16)
    assert plain.eval_every_steps is UNSET and plain.patience is UNSET
    serialised = plain.to_dict()
    assert "eval_every_steps" not in serialised and "patience" not in serialised  # same identity
    steps = cell_options(config, "m", "gad", "steps", 1e-5, 16)
    assert (steps.eval_every_steps, steps.patience) == (200, 3)
    assert (steps.to_dict()["eval_every_steps"], steps.to_dict()["patience"]) == (200, 3)
    with pytest.raises(ConfigError, match=r"recipes\.final\.patience: early stopping needs"):
        cell_options(config, "m", "gad", "final", 1e-5, 16)
