"""What benchmarks/gpu.py measures in one process: a model (gpu_models.py) trained through the
project's own step (train/step.py's Steps, under the policy the engine resolves for the row's
`engine` settings: blurbflow.train.engine) as train/fit.py runs it, then evaluated through
train.predict with the cell's shapes, as fit's evaluation does.

Steady state: each row runs the same batches twice in its process and reports the second pass;
the first pass's extra time (first use of each width, graph capture, compilation) is reported
apart. A helper of gpu.py, no benchmark."""

from __future__ import annotations

import contextlib
import gc
import random
import time

import torch
from gpu_models import SPEC, build_model, generated
from gpu_policy import BATCH, options_for, policy_for

from blurbflow.models import padding_free, surgery
from blurbflow.train import batching, engine, shapes
from blurbflow.train import device as devices
from blurbflow.train.checkpoint import LoopState
from blurbflow.train.optim import AdamW, linear_schedule
from blurbflow.train.predict import BatchFormat, make_batch, predict
from blurbflow.train.progress import Progress
from blurbflow.train.run import Optimisation
from blurbflow.train.step import Steps


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed_pass(device, work) -> float:
    sync(device)
    start = time.perf_counter()
    work()
    sync(device)
    return time.perf_counter() - start


class Session:
    """A row's model, our AdamW as train.cell builds it, its Steps, and `run(batches)`: the
    steps as train/fit.py runs them (prefetch, the planned loss syncs every CHECK_STEPS)."""

    def __init__(self, row: dict, device, smoke: bool, count: int):
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats(device)
        o = options_for(row["task"], row["precision"], BATCH)
        self.row, self.device = row, device
        self.model, self.config = build_model(row, device, smoke)
        groups = surgery.parameter_groups(self.model, o.lr, o.weight_decay, o.layerwise_lr_decay)
        groups = [{k: v for k, v in g.items() if k != "names"} for g in groups]
        optimizer = AdamW(groups, lr=o.lr, betas=(o.adam_beta1, o.adam_beta2), eps=o.adam_epsilon,
                          bias_correction=o.adam_bias_correction)  # fmt: skip
        opt = Optimisation(self.model, optimizer, linear_schedule(optimizer, 2 * count, 0.1),
                           device, random.Random(0))  # fmt: skip
        progress = Progress("gpu", 1, count, every=float("inf"), write=lambda _: None)
        pad = getattr(self.config, "pad_token_id", None) or 0
        policy = policy_for(row, padding_free.supports(self.model), smoke)
        self.steps = Steps(opt, o, progress, policy=policy, pad_id=pad)
        self.data = generated(row["task"], BATCH * count, self.config.vocab_size, seed=1)
        rows = batching.train_batches(self.data["length"], BATCH, random.Random(0))
        self.batches = rows[:count]
        self.state, self.fmt, self.synced_at = LoopState(), BatchFormat(pad_id=pad), []
        self.model.train()

    @property
    def policy(self) -> engine.Policy:
        return self.steps.policy

    def run(self, batches=None, each=None) -> None:
        """Train on `batches` (all); `each(i)`: a context around step i (the sync check)."""
        steps, lengths, batches = self.steps, self.data["length"], batches or self.batches
        make = lambda p: make_batch(self.data, p, self.fmt)  # noqa: E731
        prepare = lambda r: steps.prepare(lengths, r, make)  # noqa: E731
        for i, (rows, ready) in enumerate(shapes.ahead(batches, prepare, steps.policy.prefetch)):
            with each(i) if each else contextlib.nullcontext():
                steps.step(lengths, rows, None, lambda loss: loss, prepared=ready)
                self.state.step += 1
                before = len(self.state.losses)
                if error := steps.sync(self.state):
                    raise RuntimeError(error)
            if len(self.state.losses) > before:
                self.synced_at.append(i)

    def final_loss(self) -> float | None:
        self.steps.sync(self.state, force=True)
        return round(self.state.losses[-1], 4) if self.state.losses else None

    def fields(self) -> dict:
        """The row's record of the policy that ran (result.json's fields)."""
        return {"runs_as": self.steps.precision, **engine.result_fields(self.policy)}


def train_run(session: Session, barrier=None) -> dict:
    """Samples/s of the second of two passes over the session's batches; `barrier()`: called
    between them (concurrent processes start their timed pass together)."""
    device, count = session.device, len(session.batches)
    with engine.attention_backends(device, session.policy.attention_backend):
        first = timed_pass(device, session.run)
        if barrier is not None:
            barrier()
        began = time.time()  # the wall clock: concurrent processes compare their passes
        seconds = timed_pass(device, session.run)
        ended = time.time()
    return {
        **session.row,
        "what": "train",
        **session.fields(),
        "pass": 2,
        "steps": count,
        "samples_per_s": round(count * BATCH / seconds, 1),
        "step_ms": round(1000 * seconds / count, 2),
        "first_pass_extra_s": round(first - seconds, 2),
        "peak_memory_mb": devices.peak_memory_mb(device),
        "final_loss": session.final_loss(),
        "wall": [round(began, 4), round(ended, 4)],
    }


def eval_run(session: Session, batches: int) -> dict:
    """Samples/s of the second of two `predict` passes over the same data with the trained
    session's model and shapes (fit's evaluation), at the policy's evaluation batch size."""
    device, row, policy = session.device, session.row, session.policy
    size = policy.eval_batch_size or options_for(row["task"], row["precision"]).eval_batch_size
    data = generated(row["task"], size * batches, session.config.vocab_size, seed=2)
    spec, steps = SPEC[row["task"]], session.steps
    score = lambda: predict(session.model, spec, data, size, session.fmt, device,  # noqa: E731
                            steps.precision, steps.shapes)  # fmt: skip
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    with engine.attention_backends(device, policy.attention_backend):
        first = timed_pass(device, score)
        seconds = timed_pass(device, score)
    return {
        **row,
        "what": "eval",
        **session.fields(),
        "pass": 2,
        "eval_batch_size": size,
        "samples_per_s": round(len(data["length"]) / seconds, 1),
        "first_pass_extra_s": round(first - seconds, 2),
        "peak_memory_mb": devices.peak_memory_mb(device),
    }
