"""HF `Trainer` on the suite's shapes (benchmarks/gpu.py): the same model config, generated data
and batch size as gpu_runs's BERT-base ChemProt rows, bf16 where the GPU has it, transformers'
defaults (`adamw_torch_fused`, random batches padded by its collator, here to a multiple of the
default policy's bucket, as DataCollatorWithPadding's `pad_to_multiple_of` does), under the
default policy's attention backend; optionally `torch_compile=True`. As for our rows, the same
batches run twice (two `train()` calls, one seed) and the second is timed, from its first step
to its end, by a callback. A helper of gpu.py, no benchmark."""

from __future__ import annotations

import tempfile
import time

import torch
from gpu_models import build_model, generated
from gpu_policy import BATCH
from gpu_runs import sync
from transformers import Trainer, TrainerCallback, TrainingArguments

from blurbflow.train import engine


class _Clock(TrainerCallback):
    """Seconds of each `train()` call from its first step's start to its end."""

    def __init__(self, device):
        self.device, self.start, self.passes = device, None, []

    def on_step_begin(self, args, state, control, **kwargs):
        if self.start is None:
            sync(self.device)
            self.start = time.perf_counter()

    def on_train_end(self, args, state, control, **kwargs):
        sync(self.device)
        self.passes.append(time.perf_counter() - self.start)
        self.start = None


def collator(multiple: int):
    """Rows padded to the longest, rounded up to `multiple` (DataCollatorWithPadding's
    `pad_to_multiple_of`; no tokenizer needed)."""

    def collate(rows: list[dict]) -> dict:
        width = max(len(r["input_ids"]) for r in rows)
        width = -(-width // multiple) * multiple
        ids = torch.zeros(len(rows), width, dtype=torch.long)
        mask = torch.zeros(len(rows), width, dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, : len(r["input_ids"])] = torch.tensor(r["input_ids"])
            mask[i, : len(r["input_ids"])] = 1
        labels = torch.tensor([r["labels"] for r in rows])
        return {"input_ids": ids, "attention_mask": mask, "labels": labels}

    return collate


def trainer_args(out: str, group_by_length: bool = False, **settings) -> TrainingArguments:
    """HF Trainer as the benchmarks compare against it: the recipe's AdamW settings, seed 1, and
    nothing saved, evaluated, logged or reported; `settings` add the batch, steps and device."""
    return TrainingArguments(
        output_dir=out,
        learning_rate=5e-5,
        weight_decay=0.01,
        warmup_steps=0.1,
        train_sampling_strategy="group_by_length" if group_by_length else "random",
        save_strategy="no",
        eval_strategy="no",
        logging_strategy="no",
        report_to=[],
        dataloader_num_workers=0,
        seed=1,
        disable_tqdm=True,
        **settings,
    )


def trainer_run(row: dict, device, count: int, smoke: bool = False) -> dict:
    """Samples/s of HF Trainer's second pass of `count` steps; `row["pad_multiple"]`: its
    collator's multiple, `row["attention"]`: the SDPA backends (the default policy's),
    `row["compile"]`: torch_compile=True (`eager` backend on the CPU: inductor takes minutes)."""
    model, config = build_model(row, device, smoke)
    data = generated(row["task"], BATCH * count, config.vocab_size, seed=1)
    rows = [{"input_ids": i, "labels": y} for i, y in zip(data["input_ids"], data["label"],
                                                            strict=True)]  # fmt: skip
    cuda = device.type == "cuda"
    bf16 = cuda and row["precision"] == "bf16" and torch.cuda.is_bf16_supported()
    compiled = {}
    if row.get("compile"):
        compiled = {"torch_compile": True, "torch_compile_backend": "inductor" if cuda else "eager"}
    clock = _Clock(device)
    with tempfile.TemporaryDirectory() as out:
        args = trainer_args(out, per_device_train_batch_size=BATCH, max_steps=count, bf16=bf16,
                            use_cpu=not cuda, **compiled)  # fmt: skip
        trainer = Trainer(model=model, args=args, train_dataset=rows, callbacks=[clock],
                          data_collator=collator(row["pad_multiple"]))  # fmt: skip
        with engine.attention_backends(device, row["attention"] if cuda else "torch"):
            trainer.train()
            trainer.train()  # the same seed: the same batches, every width seen once
    first, seconds = clock.passes
    return {
        **row,
        "what": "train",
        "runs_as": "bf16" if bf16 else "fp32",
        "shapes": "hf-trainer",
        "optimizer_kernel": getattr(args.optim, "value", str(args.optim)),
        "compiled": compiled.get("torch_compile_backend", False),
        "pass": 2,
        "steps": count,
        "samples_per_s": round(count * BATCH / seconds, 1),
        "step_ms": round(1000 * seconds / count, 2),
        "first_pass_extra_s": round(first - seconds, 2),
    }
