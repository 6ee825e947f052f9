"""The training loop's steps under fp16: the gradient scaler's state goes into the checkpoint and
comes back on resume (a CPU GradScaler stands in for CUDA's, same state and arithmetic)."""

from __future__ import annotations

import random

import torch

from blurbflow.train import checkpoint
from blurbflow.train import device as devices
from blurbflow.train.batching import collate
from blurbflow.train.checkpoint import LoopState
from blurbflow.train.loop import Steps
from blurbflow.train.optim import AdamW, linear_schedule
from blurbflow.train.progress import Progress

from model_helpers import tiny_classifier

DATA = {"input_ids": [[2, 5, 6, 3], [2, 7, 3], [2, 8, 9, 10, 11, 3]], "label": [0, 1, 1]}
DATA["length"] = [len(x) for x in DATA["input_ids"]]
SETTINGS = {"precision": "fp16", "batching": "random", "max_grad_norm": 1.0}


def parts():
    model = tiny_classifier(layers=1)
    optimizer = AdamW(model.parameters(), lr=1e-3)
    return model, optimizer, linear_schedule(optimizer, 20, 0.0)


def steps_of(model, optimizer, scheduler, state=None):
    progress = Progress("c", 1, 20, clock=lambda: 0.0, write=lambda line: None)
    return Steps(model, optimizer, scheduler, torch.device("cpu"), SETTINGS, progress, state)


def train(steps, state, n):
    for _ in range(n):
        steps.step(DATA["length"], [0, 1, 2], lambda rows: collate(DATA, rows, 0, torch.long),
                   lambda loss: loss)
        state.step += 1
        steps.sync(state)


def test_fp16_scaler_state_is_checkpointed_and_restored(monkeypatch, tmp_path):
    def scaler(precision):  # what a CUDA GPU gets for fp16; growth every 2 finite steps
        return torch.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=2)

    monkeypatch.setattr(devices, "grad_scaler", scaler)
    model, optimizer, scheduler = parts()
    steps, state = steps_of(model, optimizer, scheduler), LoopState()
    assert steps.scaler is not None and steps.scaler.get_scale() == 1024.0
    train(steps, state, 3)
    assert state.scaler is None  # read only by a forced sync: a scale read is a device sync
    steps.sync(state, force=True)  # as the loop does before every save
    assert state.scaler["scale"] == 2048.0 and state.scaler["_growth_tracker"] == 1
    shuffler = random.Random(1)
    checkpoint.save(tmp_path, "key", state, model, optimizer, scheduler, shuffler)

    model2, optimizer2, scheduler2 = parts()
    resumed = checkpoint.load(tmp_path, "key", model2, optimizer2, scheduler2, random.Random(9))
    assert resumed.scaler == state.scaler
    steps2 = steps_of(model2, optimizer2, scheduler2, resumed)
    assert steps2.scaler.get_scale() == 2048.0
    assert steps2.scaler.state_dict() == steps.scaler.state_dict()
    rng = torch.get_rng_state()  # the checkpoint's (dropout): both runs go on from it alike
    train(steps, state, 1)
    torch.set_rng_state(rng)
    train(steps2, resumed, 1)
    assert steps.scaler.get_scale() == steps2.scaler.get_scale() == 4096.0
    for a, b in zip(model.parameters(), model2.parameters(), strict=True):
        assert torch.equal(a, b)
    fresh = steps_of(*parts())  # no state: the scaler starts afresh
    assert fresh.scaler.get_scale() == 1024.0


def test_a_disabled_or_absent_scaler_leaves_no_state(tmp_path):
    model, optimizer, scheduler = parts()
    steps, state = steps_of(model, optimizer, scheduler), LoopState()
    assert steps.precision == "fp32" and steps.scaler is None  # fp16 asked, CPU: fp32
    train(steps, state, 1)
    steps.sync(state, force=True)
    assert state.scaler is None
    checkpoint.save(tmp_path, "key", state, model, optimizer, scheduler, random.Random(1))
    resumed = checkpoint.load(tmp_path, "key", *parts(), random.Random(1))
    assert resumed.scaler is None and steps_of(*parts(), resumed).scaler is None
