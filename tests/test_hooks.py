"""The training loop's one "evaluate now?" predicate and its hooks (train/hooks.py): called in
order, `on_loss` only where a hook overrides it, every hook seeing an error before it propagates,
and fault injection reaching the step through a hook."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from blurbflow.train import Preempted, faults
from blurbflow.train.fit import evaluate_now
from blurbflow.train.hooks import Hook, Hooks, TrainLog
from blurbflow.train.tracking import CellTracker


def test_evaluate_now_every_epoch_every_n_steps_and_after_the_last_step():
    per_epoch, last = 8, 24
    epochs = [s for s in range(1, last + 1) if evaluate_now(s, None, per_epoch, last)]
    assert epochs == [8, 16, 24]
    every3 = [s for s in range(1, last + 1) if evaluate_now(s, 3, per_epoch, last)]
    assert every3 == [3, 6, 9, 12, 15, 18, 21, 24]
    every5 = [s for s in range(1, last + 1) if evaluate_now(s, 5, per_epoch, last)]
    assert every5 == [5, 10, 15, 20, 24]  # the last step is scored whatever N is
    short = [s for s in range(1, 3) if evaluate_now(s, None, per_epoch, 2)]  # max_steps 2
    assert short == [2]


class Recording(Hook):
    def __init__(self, name, calls):
        self.name, self.calls = name, calls

    def on_evaluate(self, run, state, record, improved):
        self.calls.append((self.name, "evaluate", record["dev"], improved))

    def on_result(self, run, result):
        return {self.name: True}

    def on_end(self, result):
        self.calls.append((self.name, "end"))

    def on_error(self, error):
        self.calls.append((self.name, type(error).__name__))


class Doubling(Hook):
    def on_loss(self, state, loss):
        return loss * 2


def test_hooks_are_called_in_order_and_on_loss_only_where_overridden():
    calls = []
    hooks = Hooks([Recording("a", calls), Recording("b", calls)])
    assert hooks._loss == [] and hooks.on_loss(None, 3) == 3
    hooks.on_evaluate(None, None, {"dev": 0.5}, True)
    assert hooks.on_result(None, {}) == {"a": True, "b": True}
    hooks.on_end({})
    evaluated = [("a", "evaluate", 0.5, True), ("b", "evaluate", 0.5, True)]
    assert calls == evaluated + [("a", "end"), ("b", "end")]
    doubled = Hooks([Recording("a", []), Doubling(), Doubling()])
    assert len(doubled._loss) == 2 and doubled.on_loss(None, 3) == 12


def test_every_hook_sees_an_error_then_it_propagates():
    calls = []
    with pytest.raises(Preempted):
        with Hooks([Recording("a", calls), Recording("b", calls)]).running():
            raise Preempted("SIGTERM")
    assert calls == [("a", "Preempted"), ("b", "Preempted")]


@pytest.mark.parametrize(("error", "status"), [(Preempted, "KILLED"), (ValueError, "FAILED")])
def test_the_tracker_as_a_hook_ends_its_runs_killed_or_failed(error, status):
    ended = []
    backend = SimpleNamespace(end=ended.append)
    with pytest.raises(error):
        with Hooks([CellTracker({"b": backend})]).running():
            raise error("stop")
    assert ended == [status]


def test_the_train_log_starts_afresh_unless_resumed(tmp_path):
    log = TrainLog(tmp_path / "train_log.jsonl")
    log.on_evaluate(None, None, {"epoch": 1, "dev": 0.5}, True)
    log.on_start(None, None, resumed=True)
    assert log.path.read_text() == '{"epoch": 1, "dev": 0.5}\n'
    log.on_start(None, None, resumed=False)
    assert not log.path.exists()


def test_the_nan_fault_strikes_through_on_loss_at_epoch_2_step_0_of_a_fresh_run():
    loss = torch.tensor(0.5)
    hooks = Hooks([faults.InTraining("nan")])
    hooks.on_start(None, None, resumed=False)
    at = SimpleNamespace(epoch=faults.EPOCH, step=0)
    assert math.isnan(hooks.on_loss(at, loss).item())
    assert hooks.on_loss(SimpleNamespace(epoch=1, step=0), loss).item() == 0.5
    hooks.on_start(None, None, resumed=True)  # the retry of a preempted run finishes the cell
    assert hooks.on_loss(at, loss).item() == 0.5
