"""The engine policy of a GPU-suite row (benchmarks/gpu.py): what a cell with the row's `engine`
settings gets on CUDA, resolved by blurbflow.train.engine as a cell's is, so the rows follow
the current defaults. Torch without transformers: the suite's parent process reads the
default from here. A helper of gpu.py, no benchmark."""

from __future__ import annotations

import dataclasses

import torch

from blurbflow.options import CellOptions
from blurbflow.options.engine import Settings
from blurbflow.train import engine

MAX_LENGTH, BATCH = 128, 32
CUDA = torch.device("cuda")  # the policies are resolved for CUDA, wherever the suite runs


def case(part: str, task="chemprot", model="bert-base", precision="bf16", **more) -> dict:
    """A row to measure; `settings`: its config's `engine:` mapping ({}: the defaults)."""
    return {"part": part, "task": task, "model": model, "precision": precision,
            "settings": {}, **more}  # fmt: skip


def options_for(task: str, precision: str, batch_size: int = BATCH) -> CellOptions:
    return CellOptions.from_dict(
        {"model": "bench", "model_source": "config", "task": task, "recipe": "gpu",
         "hparams": "gpu", "max_length": MAX_LENGTH, "batch_size": batch_size,
         "precision": precision}
    )  # fmt: skip


def policy_for(row: dict, padding_free: bool = False, smoke: bool = False) -> engine.Policy:
    """The policy of `row` on CUDA; `padding_free`: whether its model can run padding-free. In
    a smoke run on the CPU a compiled row compiles with torch's `eager` backend (inductor
    takes minutes there; the code path is the same)."""
    options = options_for(row["task"], row["precision"])
    policy = engine.resolve(
        Settings.from_config(row["settings"]),
        CUDA,
        row["precision"],
        options.batching,
        packs=False,
        padding_free=padding_free,
        max_length=MAX_LENGTH,
        eval_batch_size=options.eval_batch_size,
    )
    if smoke and policy.compiled and not torch.cuda.is_available():
        policy = dataclasses.replace(policy, compiled="eager")
    return policy
