"""The optimizer steps of a cell's training loop: one batch = its micro-batches' forward and
backward passes (train/batching.py) in the cell's precision (train/device.py), then clipping and
the optimizer and schedule steps. On the CPU the word embeddings' gradient stays sparse through a
batch's passes (`sparse_embeddings`).

Step losses stay on the device until `sync`, which brings them to the host in one transfer every
CHECK_STEPS steps, when a progress line is due and at the end of an epoch: a `.item()` per step
would stall the GPU queue every step. A non-finite loss still ends the cell as diverged, found at
the next sync (at most CHECK_STEPS steps late; the weights are garbage by then either way).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from blurbflow.options import CellOptions
from blurbflow.train import batching
from blurbflow.train import device as devices
from blurbflow.train.progress import Progress

CHECK_STEPS = 50


def sparse_embeddings(model, device: torch.device, batching_mode: str):
    """The input word embeddings' weight when its gradient is kept sparse through a batch's
    micro-batches, else None. On the CPU a dense one costs every pass a zeroed vocabulary × width
    matrix and its addition to the gradient (MiniLM-L6: 11.7M of its 22.7M weights); sparse, a
    pass adds only its tokens' rows, and the sum becomes dense once, before clipping and the
    optimizer step (`Steps.step`). Only where nothing else uses the weight (no tied output
    layer)."""
    if device.type != "cpu" or batching_mode != "bucketed":
        return None
    try:
        embeddings = model.get_input_embeddings()
    except (AttributeError, NotImplementedError):
        return None
    if not isinstance(embeddings, torch.nn.Embedding) or embeddings.max_norm is not None:
        return None
    weight = embeddings.weight
    uses = sum(p is weight for _, p in model.named_parameters(remove_duplicate=False))
    if not weight.requires_grad or uses != 1:
        return None
    embeddings.sparse = True
    return weight


class Steps:
    def __init__(self, opt, options: CellOptions, progress: Progress, state=None):
        """`opt`: the cell's fit.Optimisation (model, optimizer, scheduler, device); `state`: the
        checkpoint.LoopState the loop goes on from (a resumed fp16 run gets its loss scale back:
        a fresh scale of 2**16 would skip steps until it backed off again)."""
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
        self.sparse = sparse_embeddings(self.model, self.device, self.batching)
        self._dense: torch.Tensor | None = None  # the sparse gradient made dense, every step
        self.packer: Callable | None = None  # rows -> one packed batch (set by fit, or None)

    def step(
        self, lengths: list[int], rows: list[int], make: Callable, first_loss: Callable
    ) -> None:
        """Train on the batch `rows`; `make(rows)` builds a padded batch, `first_loss(loss)` may
        replace the first micro-batch's loss (fault injection)."""
        if self.packer is not None:  # one pass over packed rows (train/packing.py)
            parts, weights = [self.packer(rows)], [1.0]
        else:
            split = batching.micro_batches(
                lengths, rows, self.batching, pass_tokens=self.pass_tokens
            )
            parts = [make(p) for p in split]
            weights = batching.label_weights(parts)
        total = None
        for weight, part in zip(weights, parts, strict=True):
            if not weight:
                continue  # nothing labelled in it: no loss to learn from (and 0/0 = NaN)
            with devices.autocast(self.device, self.precision):
                loss = self.model(**devices.to_device(part, self.device)).loss
            if total is None:
                loss = first_loss(loss)
            loss = loss.float() * weight
            devices.backward(loss, self.scaler)
            total = loss.detach() if total is None else total + loss.detach()
        self._densify()
        devices.optimizer_step(self.model, self.optimizer, self.scaler, self.max_grad_norm)
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        if total is not None:
            self.pending.append(total)
        self.progress.update(samples=len(rows))

    def _densify(self) -> None:
        """The word embeddings' sparse gradient summed into one dense buffer, reused by every
        step (a fresh vocabulary × width tensor per step would be paged in again each time)."""
        grad = None if self.sparse is None else self.sparse.grad
        if grad is None or not grad.is_sparse:
            return
        grad = grad.coalesce()
        if self._dense is None:
            self._dense = torch.zeros_like(self.sparse)
        else:
            self._dense.zero_()
        self.sparse.grad = self._dense.index_add_(0, grad.indices()[0], grad.values())

    @property
    def lr(self) -> float:
        return max(group["lr"] for group in self.optimizer.param_groups)

    def sync(self, state, force: bool = False) -> str | None:
        """Bring pending losses into `state.losses` when due (or `force`), write a progress line
        when one is due; returns the divergence error, or None."""
        if not (force or len(self.pending) >= CHECK_STEPS or self.progress.due()):
            return None
        if force and self.scaler is not None:  # forced before every checkpoint save
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
