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
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from blurbflow.metrics import also_reported, compute_metric
from blurbflow.options import CellOptions
from blurbflow.tasks import TaskSpec
from blurbflow.train import batching, checkpoint, faults, kept, packing
from blurbflow.train.checkpoint import LoopState
from blurbflow.train.inputs import Splits
from blurbflow.train.loop import Steps
from blurbflow.train.predict import BatchFormat, make_batch, predict
from blurbflow.train.progress import Progress
from blurbflow.train.tracking import CellTracker


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
    """Everything a cell's training reads, prepared once by `cell.setup`."""

    options: CellOptions
    data: CellData
    fmt: BatchFormat
    opt: Optimisation
    cell_dir: Path
    identity: dict  # blurbflow.identity.cell_identity
    key: str  # the checkpoint key: options and identity
    fault: str | None = None  # blurbflow.train.faults
    precision: str | None = None  # what the device ran, set by `fit`
    init_report: dict | None = None  # what init_from loaded (blurbflow.train.weights)
    tracker: CellTracker = field(default_factory=CellTracker)  # blurbflow.train.tracking

    @property
    def name(self) -> str:
        return self.options.cell_id

    @property
    def log_path(self) -> Path:
        return self.cell_dir / "train_log.jsonl"

    def save(self, state: LoopState) -> None:
        o = self.opt
        checkpoint.save(
            self.cell_dir, self.key, state, o.model, o.optimizer, o.scheduler, o.shuffler
        )

    def batch(self, rows: list[int]) -> dict:
        return make_batch(self.data.train, rows, self.fmt)


def stopped_early(options: CellOptions, records: list[dict]) -> bool:
    """Whether `patience` evaluations have passed since the best dev score (the first best
    counts: a tie is no improvement). Derived from the records, so a resumed run agrees."""
    patience = options.patience
    if not patience or not records:
        return False
    best = max(range(len(records)), key=lambda i: (records[i]["dev"], -i))
    return len(records) - 1 - best >= int(patience)


def fit(run: Run, state: LoopState, resumed: bool, max_steps: int | None = None) -> str | None:
    """Train from `state` to the last epoch, early stop or divergence (the error is returned).
    `max_steps`: stop after that many optimizer steps, evaluated (a debugging run).
    Raises checkpoint.Preempted after saving when SIGTERM arrives."""
    options = run.options
    epochs, batch_size = options.epochs, int(options.batch_size)
    per_epoch = math.ceil(len(run.data.train["input_ids"]) / batch_size)
    last = epochs * per_epoch if max_steps is None else min(epochs * per_epoch, int(max_steps))
    done = (state.epoch - 1) * per_epoch + state.step
    progress = Progress(run.name, epochs, per_epoch, done=done)
    steps = Steps(run.opt, options, progress, state)
    token_level = run.data.spec.kind.token_level
    if packing.packs(run.opt.model, token_level, run.opt.device, options.batching):
        lengths, pad_id = run.data.train["length"], run.fmt.pad_id
        steps.packer = lambda rows: packing.packed_batch(
            run.data.train, packing.pack(lengths, rows), pad_id
        )
    run.precision = steps.precision
    every = options.eval_every_steps
    with checkpoint.SigtermFlag() as sigterm:
        while state.epoch <= epochs and not stopped_early(options, state.records):
            started = time.monotonic()
            if error := _train_epoch(run, state, steps, sigterm, resumed, per_epoch, last):
                return error
            done = (state.epoch - 1) * per_epoch + state.step
            if stopped_early(options, state.records) or (done == last and state.step < per_epoch):
                break  # stopped within the epoch (evaluating every N steps, or max_steps)
            if not every:
                record = _evaluate(run, state, started)
                progress.line(state.epoch, state.step, steps.lr, f"dev {record['dev']:.4f}")
                state.losses = []
            if done == last:
                break  # max_steps at an epoch's end
            state.epoch, state.step, state.batches = state.epoch + 1, 0, None
            if state.epoch <= epochs and not stopped_early(options, state.records):
                run.save(state)
    return None


def _train_epoch(
    run: Run, state: LoopState, steps: Steps, sigterm, resumed: bool, per_epoch: int, last: int
) -> str | None:
    """The rest of the current epoch's batches (evaluating every `eval_every_steps` steps when
    set, and after step `last` within the epoch); the divergence error, if any."""
    run.opt.model.train()
    every, lengths = run.options.eval_every_steps, run.data.train["length"]
    started = time.monotonic()
    if state.batches is None:
        state.batches = batching.train_batches(
            lengths, int(run.options.batch_size), run.opt.shuffler
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
        steps.step(lengths, rows, run.batch, inject)
        state.step += 1
        if error := steps.sync(state):
            return error
        step = (state.epoch - 1) * per_epoch + state.step
        within = every or state.step < per_epoch  # else `fit` evaluates at the epoch's end
        if (every and step % int(every) == 0) or (step == last and within):
            if error := steps.sync(state, force=True):
                return error
            record = _evaluate(run, state, started, step)
            steps.progress.line(state.epoch, state.step, steps.lr, f"dev {record['dev']:.4f}")
            state.losses, started = [], time.monotonic()
            if stopped_early(run.options, state.records) or step == last:
                return None
            if state.step < per_epoch:  # at an epoch end, `fit` saves
                run.save(state)
            run.opt.model.train()  # predict left it in eval mode
    return steps.sync(state, force=True)


def _evaluate(run: Run, state: LoopState, started: float, step: int | None = None) -> dict:
    """Score dev and test; keep the predictions of the best and last evaluations. `step`: the
    optimizer step evaluated after (recorded when evaluating every N steps)."""
    spec, splits = run.data.spec, run.data.splits
    preds = {
        split: predict(
            run.opt.model,
            spec,
            splits.encoded(split),
            run.options.eval_batch_size,
            run.fmt,
            run.opt.device,
            run.precision,
        )
        for split in ("dev", "test")
    }
    record = {
        "epoch": state.epoch,
        **({} if step is None else {"step": step}),
        "train_loss": float(np.mean(state.losses)) if state.losses else float("nan"),
        "dev": compute_metric(spec, splits.gold("dev"), preds["dev"]),
        "test": compute_metric(spec, splits.gold("test"), preds["test"]),
        "seconds": round(time.monotonic() - started, 3),
    }
    for split in ("dev", "test"):  # extractive QA's other measures (other tasks: none)
        if scores := also_reported(spec, splits.gold(split), preds[split]):
            record[f"{split}_scores"] = scores
    improved = not state.records or record["dev"] > max(r["dev"] for r in state.records)
    if improved:
        state.best_predictions = preds
    if run.options.keep_model and (improved or run.options.selection == "last"):
        kept.save_model(run.opt.model, run.cell_dir)  # the weights the result reports
    state.records.append(record)
    state.last_predictions = preds
    with run.log_path.open("a") as log:
        log.write(json.dumps(record) + "\n")
    if run.tracker:  # at the optimizer step the scheduler has counted
        lr = max(group["lr"] for group in run.opt.optimizer.param_groups)
        run.tracker.evaluation(record, record.get("step", run.opt.scheduler.last_epoch), lr)
    return record
