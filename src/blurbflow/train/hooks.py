"""What a cell does besides training, called by the loop (train/fit.py) at fixed points instead of
being written into it: the JSONL log (`TrainLog`, here), kept models (kept.KeptModel), tracking
(tracking.CellTracker) and fault injection (faults.InTraining). A hook overrides the points it
needs; `Hooks` calls the hooks in their list's order (cell.py builds the list).

The points, in a cell's order: `on_start` (before the first step), `on_loss` (each step's first
forward pass, before its backward pass), `on_evaluate` (after each evaluation is recorded),
`on_result` (fields for result.json, before it is written), `on_end` (after it is written) and
`on_error` (the cell raised; the error propagates after every hook saw it)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class Hook:
    """Every point does nothing; a hook overrides those it needs."""

    def on_start(self, run, state, resumed: bool) -> None:
        pass

    def on_loss(self, state, loss):
        """The loss to go on with (fault injection replaces it); `state.step`: batches done in
        the epoch before this one."""
        return loss

    def on_evaluate(self, run, state, record: dict, improved: bool) -> None:
        """`record` is state.records' last; `improved`: it is the best dev score so far."""

    def on_result(self, run, result: dict) -> dict:
        """Fields to add to result.json."""
        return {}

    def on_end(self, result: dict) -> None:
        pass

    def on_error(self, error: BaseException) -> None:
        pass


class Hooks:
    """The cell's hooks, called in order. `on_loss` runs at every step: only the hooks that
    override it are called there (none in a normal run)."""

    def __init__(self, hooks: list[Hook] | tuple[Hook, ...] = ()):
        self.hooks = list(hooks)
        self._loss = [h for h in self.hooks if type(h).on_loss is not Hook.on_loss]

    def on_start(self, run, state, resumed: bool) -> None:
        for hook in self.hooks:
            hook.on_start(run, state, resumed)

    def on_loss(self, state, loss):
        for hook in self._loss:
            loss = hook.on_loss(state, loss)
        return loss

    def on_evaluate(self, run, state, record: dict, improved: bool) -> None:
        for hook in self.hooks:
            hook.on_evaluate(run, state, record, improved)

    def on_result(self, run, result: dict) -> dict:
        fields: dict = {}
        for hook in self.hooks:
            fields.update(hook.on_result(run, result))
        return fields

    def on_end(self, result: dict) -> None:
        for hook in self.hooks:
            hook.on_end(result)

    @contextmanager
    def running(self) -> Iterator[Hooks]:
        """Each hook sees an error the cell raises (tracking ends its runs), then it goes on."""
        try:
            yield self
        except BaseException as error:
            for hook in self.hooks:
                hook.on_error(error)
            raise


class TrainLog(Hook):
    """train_log.jsonl: one line per evaluation, as result.json's `epochs` (a resumed cell goes
    on appending; one that starts afresh starts a new file)."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def on_start(self, run, state, resumed: bool) -> None:
        if not resumed:
            self.path.unlink(missing_ok=True)

    def on_evaluate(self, run, state, record: dict, improved: bool) -> None:
        with self.path.open("a") as log:
            log.write(json.dumps(record) + "\n")
