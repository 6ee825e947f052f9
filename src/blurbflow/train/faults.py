"""Fault injection for the reliability suite (tests/reliability): `BLURBFLOW_FAULT` names
faults and the cells they hit, e.g. `nan@*/gad/*/seed1;sigkill@*/biosses/*/seed2`.

Kinds: `raise` (an exception before training), `hold` (waits before training until the file
`BLURBFLOW_RELEASE` names exists: a job that is still running when a test wants it), `nan` (the
loss becomes NaN), `sigterm` and `sigkill` (the process signals itself). The in-training faults
fire at the first step of epoch 2 and only in a run that did not resume from a checkpoint, so a
retry finishes the cell; they reach the loop as a hook (`InTraining`, train/hooks.py). Unset in
normal runs, where this module does nothing and the loop calls no hook at a step.
"""

from __future__ import annotations

import fnmatch
import os
import signal
import time

from blurbflow.train.hooks import Hook

KINDS = ("raise", "hold", "nan", "sigterm", "sigkill")
EPOCH = 2


class InjectedFault(RuntimeError):
    """The `raise` fault."""


def planned(cell_id: str, spec: str | None = None) -> str | None:
    """The fault planned for a cell (`model/task/recipe/hparams/seedN`), if any."""
    spec = os.environ.get("BLURBFLOW_FAULT", "") if spec is None else spec
    for entry in filter(None, (part.strip() for part in spec.split(";"))):
        kind, _, pattern = entry.partition("@")
        if kind not in KINDS or not pattern:
            raise ValueError(
                f"BLURBFLOW_FAULT: {entry!r} is not <kind>@<cell pattern> with kind one of "
                f"{', '.join(KINDS)}"
            )
        if fnmatch.fnmatchcase(cell_id, pattern):
            return kind
    return None


def before_training(kind: str | None, cell_id: str) -> None:
    if kind == "raise":
        raise InjectedFault(f"injected fault in {cell_id} (BLURBFLOW_FAULT)")
    if kind == "hold":
        release = os.environ.get("BLURBFLOW_RELEASE")
        if not release:
            raise ValueError("BLURBFLOW_FAULT hold@…: set BLURBFLOW_RELEASE to a file to wait for")
        print(f"{cell_id}: held until {release} exists (BLURBFLOW_FAULT)", flush=True)
        while not os.path.exists(release):
            time.sleep(0.2)


def in_training(kind: str | None, epoch: int, step: int, resumed: bool, loss):
    """The loss to use at this step, after any signal this step is planned to deliver."""
    if kind is None or resumed or epoch != EPOCH or step != 0:
        return loss
    if kind == "sigterm":
        os.kill(os.getpid(), signal.SIGTERM)  # handled by the loop: checkpoint, then exit 143
    elif kind == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif kind == "nan":
        return loss * float("nan")
    return loss


class InTraining(Hook):
    """The planned fault (`kind`) at its step, through the loop's `on_loss` point."""

    def __init__(self, kind: str | None):
        self.kind, self.resumed = kind, False

    def on_start(self, run, state, resumed: bool) -> None:
        self.resumed = resumed

    def on_loss(self, state, loss):
        return in_training(self.kind, state.epoch, state.step, self.resumed, loss)
