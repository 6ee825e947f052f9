"""A cell's training loop, whole: `fit` runs epochs of optimizer steps (`Steps.step`), scores
dev and test when `evaluate_now` says (after every epoch, or every `eval_every_steps` steps, and
after the last step), saves a checkpoint after every evaluation and on SIGTERM, so a preempted
run resumes where it stopped, and stops early after `patience` evaluations without a better dev
score (docs/recipes.md). The JSONL log, kept models, tracking and fault injection are hooks
(train/hooks.py), called at fixed points, not written into the loop.

One step: the batch's micro-batches' forward and backward passes (train/batching.py) in the
cell's precision (train/device.py), then clipping and the optimizer and schedule steps. Step
losses stay on the device until `Steps.sync` brings them to the host, in one transfer every
CHECK_STEPS steps, when a progress line is due and before an evaluation or a save: a `.item()`
per step would stall the GPU queue every step. A non-finite loss ends the cell as diverged at
the next sync (at most CHECK_STEPS steps late; the weights are garbage by then either way).
On the CPU the word embeddings' gradient stays sparse through a batch's micro-batches
(`sparse_embeddings`): a dense one costs every pass a zeroed vocabulary × width matrix and its
addition (MiniLM-L6: 11.7M of its 22.7M weights); sparse, a pass adds only its tokens' rows, and
the sum becomes dense once, before clipping and the optimizer step (`densify`, train/sparse.py).
How a batch becomes model inputs on the device (micro-batches, packed rows, one padded pass,
padding-free) is the cell's engine policy (train/engine.py, train/shapes.py); with `prefetch` the
next batch is prepared while this one computes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import time
from collections.abc import Callable

import numpy as np
import torch

from blurbflow.metrics import also_reported, compute_metric
from blurbflow.models import padding_free
from blurbflow.options import CellOptions
from blurbflow.train import batching, checkpoint, engine, packing, shapes
from blurbflow.train import device as devices
from blurbflow.train.checkpoint import LoopState
from blurbflow.train.hooks import Hooks
from blurbflow.train.optim import AdamW
from blurbflow.train.predict import predict
from blurbflow.train.progress import Progress
from blurbflow.train.run import CellData, Optimisation, Run  # noqa: F401  (the loop's inputs)
from blurbflow.train.sparse import densify, sparse_embeddings

CHECK_STEPS = 50


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


class Steps:
    def __init__(
        self,
        opt: Optimisation,
        options: CellOptions,
        progress: Progress,
        state=None,
        policy: engine.Policy | None = None,
        pad_id: int = 0,
    ):
        """`opt`: the cell's model, optimizer, scheduler and device; `state`: the LoopState the
        loop goes on from (a resumed fp16 run gets its loss scale back: a fresh scale of 2**16
        would skip steps until it backed off again); `policy`: the engine's (None: resolved
        from the job's settings, without packing); `pad_id`: what widened batches pad with."""
        self.model, self.optimizer, self.scheduler = opt.model, opt.optimizer, opt.scheduler
        self.device, self.progress = opt.device, progress
        self.precision = devices.choose_precision(options.precision, self.device)
        devices.configure(self.device, self.precision)
        self.scaler = devices.grad_scaler(self.precision)
        if self.scaler is not None and state is not None and state.scaler:
            self.scaler.load_state_dict(state.scaler)
        self.batching, self.max_grad_norm = options.batching, options.max_grad_norm
        self.pending: list[torch.Tensor] = []
        hidden = int(getattr(self.model.config, "hidden_size", 768))
        self.pass_tokens = batching.pass_cost(self.device.type, hidden)
        if policy is None:
            policy = engine.resolve(
                engine.current(),
                self.device,
                self.precision,
                self.batching,
                packs=False,
                padding_free=padding_free.supports(self.model),
            )
        self.policy = self._apply(policy)
        self.shapes = shapes.for_policy(
            self.policy, self.model, self.device, pad_id, options.max_length
        )
        split = self.policy.batch_shapes in ("micro_batches", "packed")
        self.sparse = sparse_embeddings(self.model, self.device, self.batching if split else "")
        self._dense: torch.Tensor | None = None  # the sparse gradient made dense, every step
        self.packer: Callable | None = None  # rows -> one packed batch (set by fit, or None)

    def _apply(self, policy: engine.Policy) -> engine.Policy:
        """Set the model and optimizer up for `policy`; the policy with the optimizer's kernel
        as it runs (None: not blurbflow's AdamW)."""
        if policy.batch_shapes == "padding_free":
            padding_free.enable(self.model)
        if policy.compiled:
            self.model.compile(backend=policy.compiled)
        kernel = None
        if isinstance(self.optimizer, AdamW):
            if policy.optimizer_kernel is not None:
                self.optimizer.kernel = policy.optimizer_kernel
            kernel = self.optimizer.kernel_for(self.device, torch.float32)
        return dataclasses.replace(policy, optimizer_kernel=kernel)

    def prepare(self, lengths: list[int], rows: list[int], make: Callable) -> list[tuple]:
        """The batch `rows` as its passes' (weight, inputs on the device, packing or None):
        packed rows (train/packing.py), length-sorted micro-batches, or one pass; `make(rows)`
        builds a padded batch. Reads the data only, so it may run ahead (shapes.ahead)."""
        if self.packer is not None:  # one pass over packed rows (train/packing.py)
            parts, weights = [self.packer(rows)], [1.0]
        else:
            mode = self.batching if self.policy.batch_shapes == "micro_batches" else "random"
            split = batching.micro_batches(lengths, rows, mode, pass_tokens=self.pass_tokens)
            parts = [make(p) for p in split]
            weights = batching.label_weights(parts)
        # a pass with nothing labelled has no loss to learn from (and 0/0 = NaN)
        return [
            (weight, *self.shapes.inputs(part))
            for weight, part in zip(weights, parts, strict=True)
            if weight
        ]

    def step(
        self,
        lengths: list[int],
        rows: list[int],
        make: Callable,
        first_loss: Callable,
        prepared: Callable | None = None,
    ) -> None:
        """Train on the batch `rows`; `make(rows)` builds a padded batch, `first_loss(loss)` may
        replace the first micro-batch's loss (the hooks' `on_loss`: fault injection);
        `prepared()`: the batch's `prepare`, when made ahead."""
        passes = prepared() if prepared is not None else self.prepare(lengths, rows, make)
        total = None
        for weight, inputs, packed in passes:
            running = (
                padding_free.running(self.model, packed) if packed else contextlib.nullcontext()
            )
            with running:  # the backward too: a checkpointed layer runs its forward again
                with devices.autocast(self.device, self.precision):
                    loss = self.model(**inputs).loss
                if total is None:
                    loss = first_loss(loss)
                loss = loss.float() * weight
                devices.backward(loss, self.scaler)
            total = loss.detach() if total is None else total + loss.detach()
        self._dense = densify(self.sparse, self._dense)
        devices.optimizer_step(self.model, self.optimizer, self.scaler, self.max_grad_norm)
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        if total is not None:
            self.pending.append(total)
        self.progress.update(samples=len(rows))

    @property
    def lr(self) -> float:
        return max(group["lr"] for group in self.optimizer.param_groups)

    def sync(self, state, force: bool = False) -> str | None:
        """Bring pending losses into `state.losses` when due (or `force`), write a progress line
        when one is due; returns the divergence error, or None."""
        if not (force or len(self.pending) >= CHECK_STEPS or self.progress.due()):
            return None
        if force and self.scaler is not None:  # forced before every evaluation and save
            state.scaler = self.scaler.state_dict()  # reads the scale: a sync, so only here
        values = torch.stack(self.pending).tolist() if self.pending else []
        self.pending = []
        state.losses.extend(values)
        self.progress.update(losses=values)
        bad = next((v for v in values if not math.isfinite(v)), None)
        if bad is not None:
            return f"loss became {bad} at epoch {state.epoch} (by step {state.step})"
        if self.progress.due():
            self.progress.line(state.epoch, state.step, self.lr)
        return None
