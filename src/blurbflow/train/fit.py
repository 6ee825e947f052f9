"""A cell's training: epochs of optimizer steps with dev and test scored after every epoch (or
every `eval_every_steps` optimizer steps), a checkpoint after every evaluation and on SIGTERM, so
a preempted run resumes where it stopped, and early stopping after `patience` evaluations without
a better dev score (docs/recipes.md)."""

from __future__ import annotations

import functools
import json
import math
import random
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from blurbflow.metrics import also_reported, compute_metric
from blurbflow.tasks import TaskSpec
from blurbflow.train import batching, checkpoint, faults
from blurbflow.train.checkpoint import LoopState
from blurbflow.train.inputs import Splits
from blurbflow.train.loop import Steps
from blurbflow.train.predict import make_batch, predict
from blurbflow.train.progress import Progress


@dataclass
class Run:
    """Everything a cell's training reads, prepared once by `cell.setup`."""

    name: str  # model/task/recipe/hparams/seedN
    settings: dict  # the options with every default filled: the only copy read
    spec: TaskSpec
    splits: Splits
    train: dict  # the training instances (blurbflow.train.inputs.training_data)
    cell_dir: Path
    identity: dict  # blurbflow.identity.cell_identity
    key: str  # the checkpoint key: options and identity
    model: object
    optimizer: object
    scheduler: object
    device: object
    shuffler: random.Random  # the batch order, restored with the checkpoint
    pad_id: int
    targets: object  # the label dtype
    scheme: str  # the tagging scheme the model predicts in
    entities: bool  # whether batches carry the RE entity positions
    fault: str | None = None  # blurbflow.train.faults
    precision: str | None = None  # what the device ran, set by `fit`
    init_report: dict | None = None  # what init_from loaded (blurbflow.init_from)

    @property
    def log_path(self) -> Path:
        return self.cell_dir / "train_log.jsonl"

    def save(self, state: LoopState) -> None:
        checkpoint.save(
            self.cell_dir,
            self.key,
            state,
            self.model,
            self.optimizer,
            self.scheduler,
            self.shuffler,
        )

    def batch(self, rows: list[int]) -> dict:
        return make_batch(self.train, rows, self.pad_id, self.targets, self.entities)


def stopped_early(settings: dict, records: list[dict]) -> bool:
    """Whether `patience` evaluations have passed since the best dev score (the first best
    counts: a tie is no improvement). Derived from the records, so a resumed run agrees."""
    patience = settings.get("patience")
    if not patience or not records:
        return False
    best = max(range(len(records)), key=lambda i: (records[i]["dev"], -i))
    return len(records) - 1 - best >= int(patience)


def fit(run: Run, state: LoopState, resumed: bool) -> str | None:
    """Train from `state` to the last epoch, early stop or divergence (the error is returned).
    Raises checkpoint.Preempted after saving when SIGTERM arrives."""
    epochs, batch_size = run.settings["epochs"], int(run.settings["batch_size"])
    per_epoch = math.ceil(len(run.train["input_ids"]) / batch_size)
    done = (state.epoch - 1) * per_epoch + state.step
    progress = Progress(run.name, epochs, per_epoch, done=done)
    steps = Steps(
        run.model, run.optimizer, run.scheduler, run.device, run.settings, progress, state
    )
    run.precision = steps.precision
    every = run.settings.get("eval_every_steps")
    with checkpoint.SigtermFlag() as sigterm:
        while state.epoch <= epochs and not stopped_early(run.settings, state.records):
            started = time.monotonic()
            if error := _train_epoch(run, state, steps, sigterm, resumed, per_epoch):
                return error
            if stopped_early(run.settings, state.records):
                break  # stopped within the epoch (evaluating every N steps)
            if not every:
                record = _evaluate(run, state, started)
                progress.line(state.epoch, state.step, steps.lr, f"dev {record['dev']:.4f}")
                state.losses = []
            state.epoch, state.step, state.batches = state.epoch + 1, 0, None
            if state.epoch <= epochs and not stopped_early(run.settings, state.records):
                run.save(state)
    return None


def _train_epoch(
    run: Run, state: LoopState, steps: Steps, sigterm, resumed: bool, per_epoch: int
) -> str | None:
    """The rest of the current epoch's batches (evaluating every `eval_every_steps` steps when
    set); the divergence error, if any."""
    run.model.train()
    every = run.settings.get("eval_every_steps")
    last = run.settings["epochs"] * per_epoch
    started = time.monotonic()
    if state.batches is None:
        state.batches = batching.train_batches(
            run.train["length"], int(run.settings["batch_size"]), run.shuffler
        )
    for rows in state.batches[state.step :]:
        if sigterm.raised:
            steps.sync(state, force=True)
            run.save(state)
            raise checkpoint.Preempted(
                f"SIGTERM at epoch {state.epoch} step {state.step}: checkpoint saved, "
                "the retry resumes from it"
            )
        inject = functools.partial(faults.in_training, run.fault, state.epoch, state.step, resumed)
        steps.step(run.train["length"], rows, run.batch, inject)
        state.step += 1
        if error := steps.sync(state):
            return error
        step = (state.epoch - 1) * per_epoch + state.step
        if every and (step % int(every) == 0 or step == last):
            if error := steps.sync(state, force=True):
                return error
            record = _evaluate(run, state, started, step)
            steps.progress.line(state.epoch, state.step, steps.lr, f"dev {record['dev']:.4f}")
            state.losses, started = [], time.monotonic()
            if stopped_early(run.settings, state.records):
                return None
            if state.step < per_epoch:  # at an epoch end, `fit` saves
                run.save(state)
            run.model.train()  # predict left it in eval mode
    return steps.sync(state, force=True)


def _evaluate(run: Run, state: LoopState, started: float, step: int | None = None) -> dict:
    """Score dev and test; keep the predictions of the best and last evaluations. `step`: the
    optimizer step evaluated after (recorded when evaluating every N steps)."""
    preds = {
        split: predict(
            run.model,
            run.spec,
            run.splits.encoded(split),
            run.settings["eval_batch_size"],
            run.pad_id,
            run.targets,
            run.scheme,
            run.entities,
            run.device,
            run.precision,
        )
        for split in ("dev", "test")
    }
    record = {
        "epoch": state.epoch,
        **({} if step is None else {"step": step}),
        "train_loss": float(np.mean(state.losses)) if state.losses else float("nan"),
        "dev": compute_metric(run.spec, run.splits.gold("dev"), preds["dev"]),
        "test": compute_metric(run.spec, run.splits.gold("test"), preds["test"]),
        "seconds": round(time.monotonic() - started, 3),
    }
    for split in ("dev", "test"):  # extractive QA's other measures (other tasks: none)
        if scores := also_reported(run.spec, run.splits.gold(split), preds[split]):
            record[f"{split}_scores"] = scores
    if not state.records or record["dev"] > max(r["dev"] for r in state.records):
        state.best_predictions = preds
    state.records.append(record)
    state.last_predictions = preds
    with run.log_path.open("a") as log:
        log.write(json.dumps(record) + "\n")
    return record
