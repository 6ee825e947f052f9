"""What a cell's training reads, prepared once by `cell.setup` and handed to the loop
(train/fit.py) and its hooks (train/hooks.py)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from blurbflow.options import CellOptions
from blurbflow.tasks import TaskSpec
from blurbflow.train import checkpoint
from blurbflow.train.checkpoint import LoopState
from blurbflow.train.inputs import Splits
from blurbflow.train.predict import BatchFormat, make_batch


@dataclass
class CellData:
    """What the cell trains and is scored on."""

    spec: TaskSpec
    splits: Splits  # tokenized splits, frames and gold, read on first use
    train: dict  # the training instances (blurbflow.train.inputs.training_data)


@dataclass
class Optimisation:
    """The model and what steps it; the shuffler's state is the batch order (checkpointed)."""

    model: object
    optimizer: object
    scheduler: object
    device: object
    shuffler: random.Random


@dataclass
class Run:
    """Everything a cell's training reads."""

    options: CellOptions
    data: CellData
    fmt: BatchFormat
    opt: Optimisation
    cell_dir: Path
    identity: dict  # blurbflow.config.identity.cell_identity
    key: str  # the checkpoint key: options and identity
    fault: str | None = None  # blurbflow.train.faults
    precision: str | None = None  # what the device ran, set by `fit`
    policy: object | None = None  # the engine policy that ran (train/engine.py), set by `fit`
    shapes: object | None = None  # how its batches became inputs (train/shapes.py), by `fit`
    init_report: dict | None = None  # what init_from loaded (blurbflow.train.weights)

    @property
    def name(self) -> str:
        return self.options.cell_id

    @property
    def log_path(self) -> Path:
        return self.cell_dir / "train_log.jsonl"

    @property
    def lr(self) -> float:
        return max(group["lr"] for group in self.opt.optimizer.param_groups)

    def save(self, state: LoopState) -> None:
        o = self.opt
        checkpoint.save(
            self.cell_dir, self.key, state, o.model, o.optimizer, o.scheduler, o.shuffler
        )

    def batch(self, rows: list[int]) -> dict:
        return make_batch(self.data.train, rows, self.fmt)
