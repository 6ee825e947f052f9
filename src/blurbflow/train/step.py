"""One training step of a cell (`Steps.step`), and the loss bookkeeping between steps.

A step: the batch's micro-batches' forward and backward passes (train/batching.py) in the
cell's precision (train/device.py), then clipping and the optimizer and schedule steps. Step
losses stay on the device until `Steps.sync` brings them to the host, in one transfer every
CHECK_STEPS steps, when a progress line is due and before an evaluation or a save: a `.item()`
per step would stall the GPU queue every step. A non-finite loss ends the cell as diverged at
the next sync (at most CHECK_STEPS steps late; the weights are garbage by then either way).
On the CPU the word embeddings' gradient stays sparse through a batch's micro-batches
(`sparse_embeddings`): a dense one costs every pass a zeroed vocabulary × width matrix and its
addition (MiniLM-L6: 11.7M of its 22.7M weights); sparse, a pass adds only its tokens' rows, and
the sum becomes dense once, before clipping and the optimizer step (`densify`, train/sparse.py).
How a batch becomes the passes' inputs on the device is the cell's engine policy
(train/engine.py, train/shapes.py): `prepare` builds them from the data alone, so the loop may
run it ahead (`prefetch`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Callable

import torch

from blurbflow.models import padding_free
from blurbflow.options import CellOptions
from blurbflow.train import batching, compiled, engine, shapes
from blurbflow.train import device as devices
from blurbflow.train.optim import AdamW
from blurbflow.train.progress import Progress
from blurbflow.train.run import Optimisation
from blurbflow.train.sparse import densify, sparse_embeddings

CHECK_STEPS = 50


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
        self.policy = self._apply(policy, options)
        self.shapes = shapes.for_policy(
            self.policy, self.model, self.device, pad_id, options.max_length
        )
        split = self.policy.batch_shapes in ("micro_batches", "packed")
        self.sparse = sparse_embeddings(self.model, self.device, self.batching if split else "")
        self._dense: torch.Tensor | None = None  # the sparse gradient made dense, every step
        self.packer: Callable | None = None  # rows -> one packed batch (set by fit, or None)

    def _apply(self, policy: engine.Policy, options: CellOptions) -> engine.Policy:
        """Set the model and optimizer up for `policy`; the policy with the optimizer's kernel
        as it runs (None: not blurbflow's AdamW) and, compiled, its compile cache."""
        if policy.batch_shapes == "padding_free":
            padding_free.enable(self.model)
        cache = None
        if policy.compiled:
            cache = self._compile(policy, options)
        kernel = None
        if isinstance(self.optimizer, AdamW):
            if policy.optimizer_kernel is not None:
                self.optimizer.kernel = policy.optimizer_kernel
            kernel = self.optimizer.kernel_for(self.device, torch.float32)
        return dataclasses.replace(policy, optimizer_kernel=kernel, cache=cache)

    def _compile(self, policy: engine.Policy, options: CellOptions) -> compiled.CompileCache:
        """torch.compile the model for training and evaluation alike (train/compiled.py), its
        caches in the policy's folder; the cache keyed by what decides the kernels."""
        max_length = options.max_length or self.model.config.max_position_embeddings
        pad = policy.pad_multiple if policy.bucketed else 1
        facts = {
            "policy": {k: v for k, v in policy.record().items() if k != "compile_cache"},
            "shapes": [policy.batch_shapes, pad, max_length, options.batch_size],
            "evaluation": [policy.eval_batch_size or options.eval_batch_size, options.task],
            "precision": self.precision,
        }
        key = compiled.kernel_key(self.model, self.device, facts)
        compiled.warn_recomputed_dropout(self.model, self.device)
        cache = compiled.CompileCache.begin(policy.compile_cache, key)
        compiled.compile_model(self.model, policy.compiled, policy.compile_mode, max_length, pad)
        return cache

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
        if self.shapes.graphs:  # the last step's graph outputs are dead (its loss is kept apart)
            compiled.step_begins()
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
                loss = loss.float() * weight  # a new tensor: kept, it outlives graph replays
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
