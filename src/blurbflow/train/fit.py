"""A cell's training loop, whole: `fit` runs epochs of optimizer steps (`Steps.step`), scores
dev and test when `evaluate_now` says (after every epoch, or every `eval_every_steps` steps, and
after the last step), saves a checkpoint after every evaluation and on SIGTERM, so a preempted
run resumes where it stopped, and stops early after `patience` evaluations without a better dev
score (docs/recipes.md). The JSONL log, kept models, tracking and fault injection are hooks
(train/hooks.py), called at fixed points, not written into the loop.

One step (`Steps`, train/step.py): the batch's passes, clipping, the optimizer and schedule
steps; losses reach the host every CHECK_STEPS steps. How a batch becomes model inputs on the
device is the cell's engine policy (train/engine.py, train/shapes.py); with `prefetch` the next
batch is prepared while this one computes.
"""

from __future__ import annotations

import functools
import math
import time

import numpy as np

from blurbflow.metrics import also_reported, compute_metric
from blurbflow.models import padding_free
from blurbflow.options import CellOptions
from blurbflow.train import batching, checkpoint, engine, packing, shapes
from blurbflow.train import device as devices
from blurbflow.train.checkpoint import LoopState
from blurbflow.train.hooks import Hooks
from blurbflow.train.predict import predict
from blurbflow.train.progress import Progress
from blurbflow.train.run import CellData, Optimisation, Run  # noqa: F401  (the loop's inputs)
from blurbflow.train.step import CHECK_STEPS, Steps  # noqa: F401  (benchmarks patch Steps.step)


def evaluate_now(step: int, every: int | None, per_epoch: int, last: int) -> bool:
    """Whether dev and test are scored after optimizer step `step` (counted from the run's
    start): every `every` steps when set, else at each epoch's end; always after the last."""
    return step == last or step % int(every or per_epoch) == 0


def stopped_early(options: CellOptions, records: list[dict]) -> bool:
    """Whether `patience` evaluations have passed since the best dev score (the first best
    counts: a tie is no improvement). Derived from the records, so a resumed run agrees."""
    patience = options.patience
    if not patience or not records:
        return False
    best = max(range(len(records)), key=lambda i: (records[i]["dev"], -i))
    return len(records) - 1 - best >= int(patience)


def fit(
    run: Run,
    state: LoopState,
    resumed: bool,
    hooks: Hooks | None = None,
    max_steps: int | None = None,
) -> str | None:
    """Train from `state` to the last step, an early stop or a divergence (its error returned).
    `max_steps`: stop after that many steps (a debugging run). Raises checkpoint.Preempted after
    saving when SIGTERM arrives."""
    options, hooks = run.options, hooks or Hooks()
    batch_size, every = int(options.batch_size), options.eval_every_steps
    per_epoch = math.ceil(len(run.data.train["input_ids"]) / batch_size)
    last = options.epochs * per_epoch
    last = last if max_steps is None else min(last, int(max_steps))
    steps, lengths = _steps(run, state, per_epoch), run.data.train["length"]
    prefetch = steps.policy.prefetch
    first_loss = functools.partial(hooks.on_loss, state)  # reads state.step when called
    hooks.on_start(run, state, resumed)
    with checkpoint.SigtermFlag() as sigterm:
        while state.epoch <= options.epochs:
            run.opt.model.train()
            started = time.monotonic()
            if state.batches is None:  # a new epoch (a resumed one goes on with its order)
                state.batches = batching.train_batches(lengths, batch_size, run.opt.shuffler)
            prepare = functools.partial(steps.prepare, lengths, make=run.batch)
            for rows, prepared in shapes.ahead(state.batches[state.step :], prepare, prefetch):
                if sigterm.raised:  # only between steps: the state saved is a step boundary
                    steps.sync(state, force=True)
                    run.save(state)
                    raise checkpoint.Preempted(
                        f"SIGTERM at epoch {state.epoch} step {state.step}: checkpoint saved, "
                        "the retry resumes from it"
                    )
                steps.step(lengths, rows, run.batch, first_loss, prepared=prepared)
                state.step += 1
                step = (state.epoch - 1) * per_epoch + state.step
                due = evaluate_now(step, every, per_epoch, last)
                if error := steps.sync(state, force=due):
                    return error
                if not due:
                    continue
                # the step is recorded where it is not an epoch's end (every N steps, max_steps)
                record = evaluate(
                    run, state, started, hooks, step if every or step % per_epoch else None
                )
                steps.progress.line(state.epoch, state.step, steps.lr, f"dev {record['dev']:.4f}")
                state.losses, started = [], time.monotonic()
                if step == last or stopped_early(options, state.records):
                    return None
                if state.step < per_epoch:  # at an epoch's end the save comes below
                    run.save(state)
                run.opt.model.train()  # predict left it in eval mode
            if error := steps.sync(state, force=True):  # the scaler's state for the save
                return error
            state.epoch, state.step, state.batches = state.epoch + 1, 0, None
            run.save(state)  # the next epoch's order is drawn after: a resume draws the same
    return None


def _steps(run: Run, state: LoopState, per_epoch: int) -> Steps:
    """The cell's step under its engine policy (train/engine.py): packed rows where the model
    packs on the CPU (train/packing.py), padded micro-batches, one padded pass or padding-free;
    its precision and policy are the run's."""
    done = (state.epoch - 1) * per_epoch + state.step  # a resumed run's ETA counts from here
    progress = Progress(run.name, run.options.epochs, per_epoch, done=done)
    model, device, options = run.opt.model, run.opt.device, run.options
    token_level, lengths = run.data.spec.kind.token_level, run.data.train["length"]
    packs = packing.packs(model, token_level, device, options.batching)
    policy = engine.resolve(
        engine.current(),
        device,
        devices.choose_precision(options.precision, device),
        options.batching,
        packs,
        padding_free.supports(model),
        max_length=options.max_length,
        eval_batch_size=options.eval_batch_size,
    )
    steps = Steps(run.opt, options, progress, state, policy=policy, pad_id=run.fmt.pad_id)
    if steps.policy.batch_shapes == "packed":
        first = packing.first_position(model)
        steps.packer = lambda rows: packing.packed_batch(
            run.data.train, packing.pack(lengths, rows), run.fmt.pad_id, first=first
        )
    run.precision, run.policy, run.shapes = steps.precision, steps.policy, steps.shapes
    return steps


def evaluate(run: Run, state: LoopState, started: float, hooks: Hooks, step: int | None) -> dict:
    """Score dev and test, keep the predictions of the best and last evaluations, then the
    hooks see the record. `step`: the optimizer step, recorded when not an epoch's end."""
    spec, splits = run.data.spec, run.data.splits
    size = (run.policy and run.policy.eval_batch_size) or run.options.eval_batch_size
    preds = {
        split: predict(
            run.opt.model,
            spec,
            splits.encoded(split),
            size,
            run.fmt,
            run.opt.device,
            run.precision,
            run.shapes,
        )
        for split in ("dev", "test")
    }
    if run.policy is not None and run.policy.cache is not None:
        run.policy.cache.evaluated()  # a compiled cell's kernels, for the next cell to load
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
    state.records.append(record)
    state.last_predictions = preds
    hooks.on_evaluate(run, state, record, improved)
    return record
