"""A training step never waits on the host (train/step.py): between the planned syncs (every
CHECK_STEPS steps, before an evaluation or a save) no operation reads a device value. On a GPU
each such read stalls the launch queue (benchmarks/gpu.py's sync check counts them with torch's
sync debug mode); here, on the CPU, a dispatch mode counts the operations that would, with the
step running its GPU code path (a host read is not free: train/device.py host_reads_free)."""

from __future__ import annotations

import random

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from transformers import BertConfig, BertForSequenceClassification, BertForTokenClassification

from blurbflow.options import CellOptions
from blurbflow.train import batching, engine, shapes
from blurbflow.train import device as devices
from blurbflow.train.optim import AdamW, linear_schedule
from blurbflow.train.predict import BatchFormat, make_batch
from blurbflow.train.progress import Progress
from blurbflow.train.run import Optimisation
from blurbflow.train.step import Steps

aten = torch.ops.aten
# operations whose result the host must wait for: a scalar read (.item(), float(), bool()), or an
# output whose size depends on the values
HOST_READS = {aten._local_scalar_dense, aten.nonzero, aten.masked_select, aten.unique_consecutive}
SIZES = dict(vocab_size=90, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
             intermediate_size=64)  # fmt: skip


class HostReads(TorchDispatchMode):
    """Counts the operations of HOST_READS dispatched inside it."""

    def __init__(self):
        super().__init__()
        self.seen: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.overloadpacket in HOST_READS:
            self.seen.append(str(func))
        return func(*args, **(kwargs or {}))


def data(count: int, task: str) -> dict:
    gen = random.Random(0)
    lengths = [gen.randint(4, 40) for _ in range(count)]
    ids = [[1 + gen.randrange(80) for _ in range(n)] for n in lengths]
    if task == "tokens":
        return {
            "input_ids": ids,
            "length": lengths,
            "labels": [[gen.randrange(3)] * n for n in lengths],
        }
    return {"input_ids": ids, "length": lengths, "label": [gen.randrange(3) for _ in lengths]}


def gpu_path_steps(monkeypatch, task: str, bias_correction: bool):
    """A tiny BERT's Steps under CUDA's default policy (padded batches in buckets, the host-built
    mask, fused AdamW), with every host read priced as on a GPU."""
    monkeypatch.setattr(devices, "host_reads_free", lambda device: False)
    monkeypatch.setattr(shapes, "uses_host_mask", lambda model, device: True)
    torch.manual_seed(0)
    kind = BertForTokenClassification if task == "tokens" else BertForSequenceClassification
    model = kind(BertConfig(**SIZES, num_labels=3, attn_implementation="sdpa"))
    model.train()
    options = CellOptions.from_dict(
        {"model": "tiny", "model_source": "config", "task": "ncbidisease", "recipe": "r",
         "hparams": "h", "max_length": 64, "batch_size": 8, "precision": "bf16"}
    )  # fmt: skip
    optimizer = AdamW(model.parameters(), lr=1e-3, bias_correction=bias_correction)
    schedule = linear_schedule(optimizer, 20, 0.1)
    opt = Optimisation(model, optimizer, schedule, torch.device("cpu"), random.Random(0))
    policy = engine.Policy("no_cudnn", "padded", pad_multiple=64)
    progress = Progress("t", 1, 20, every=float("inf"), write=lambda _: None)
    steps = Steps(opt, options, progress, policy=policy)
    rows = data(8 * 12, task)
    batches = batching.train_batches(rows["length"], 8, random.Random(0))
    fmt = BatchFormat(pad_id=0)

    # the batches built from the data on the host before (the prefetch thread's work)
    made = [steps.prepare(rows["length"], b, lambda p: make_batch(rows, p, fmt)) for b in batches]

    def run(planted=lambda loss: loss):
        for batch, ready in zip(batches, made, strict=True):
            steps.step(rows["length"], batch, None, planted, prepared=lambda ready=ready: ready)

    return steps, run


@pytest.mark.parametrize(("task", "bias_correction"), [("tokens", False), ("sequence", True)])
def test_a_training_step_reads_nothing_on_the_host(monkeypatch, task, bias_correction):
    steps, run = gpu_path_steps(monkeypatch, task, bias_correction)
    with HostReads() as reads:
        run()
    assert reads.seen == []
    assert len(steps.pending) == 12  # the losses wait on the device for the planned sync


def test_the_counter_sees_a_planted_host_read(monkeypatch):
    """The check is not vacuous: a step that reads its loss on the host is caught, once a step."""
    steps, run = gpu_path_steps(monkeypatch, "sequence", False)
    with HostReads() as reads:
        run(planted=lambda loss: loss * (1.0 if loss.item() < 1e9 else 0.0))
    assert reads.seen == ["aten._local_scalar_dense.default"] * 12
