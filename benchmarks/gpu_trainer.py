"""HF `Trainer` on the suite's shapes (benchmarks/gpu.py): the same model config, generated data
and batch size as gpu_runs's BERT-base ChemProt runs, bf16 where the GPU has it, transformers'
defaults (`adamw_torch_fused`, random batches padded per batch by its collator) or
`group_by_length`, timed after warm-up steps by a callback. A helper of gpu.py, no benchmark."""

from __future__ import annotations

import tempfile
import time

import torch
from gpu_runs import BATCH, build_model, generated, sync
from transformers import Trainer, TrainerCallback, TrainingArguments

from blurbflow.train import engine


class _Clock(TrainerCallback):
    """Seconds from the end of step `warmup` to the end of training."""

    def __init__(self, warmup: int, device):
        self.warmup, self.device, self.start, self.end = warmup, device, None, None

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.warmup:
            sync(self.device)
            self.start = time.perf_counter()

    def on_train_end(self, args, state, control, **kwargs):
        sync(self.device)
        self.end = time.perf_counter()


def _collate(rows: list[dict]) -> dict:
    width = max(len(r["input_ids"]) for r in rows)
    ids = torch.zeros(len(rows), width, dtype=torch.long)
    mask = torch.zeros(len(rows), width, dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, : len(r["input_ids"])] = torch.tensor(r["input_ids"])
        mask[i, : len(r["input_ids"])] = 1
    labels = torch.tensor([r["labels"] for r in rows])
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def trainer_args(out: str, group_by_length: bool, **settings) -> TrainingArguments:
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


def trainer_run(case: dict, device, warmup: int, count: int, smoke: bool = False) -> dict:
    """Samples/s of HF Trainer's `count` steps after `warmup`; `case["attention"]`: torch's
    own SDPA backends or cuDNN's off (the engine's CUDA default), as for our runs."""
    model, config = build_model(case, device, smoke)
    data = generated(case["task"], BATCH * (warmup + count), config.vocab_size, seed=1)
    rows = [
        {"input_ids": i, "labels": y} for i, y in zip(data["input_ids"], data["label"], strict=True)
    ]
    cuda = device.type == "cuda"
    bf16 = cuda and case["precision"] == "bf16" and torch.cuda.is_bf16_supported()
    clock = _Clock(warmup, device)
    with tempfile.TemporaryDirectory() as out:
        args = trainer_args(
            out,
            case["group_by_length"],
            per_device_train_batch_size=BATCH,
            max_steps=warmup + count,
            bf16=bf16,
            use_cpu=not cuda,
        )
        trainer = Trainer(
            model=model,
            args=args,
            train_dataset=rows,
            data_collator=_collate,
            callbacks=[clock],
        )
        backend = case.get("attention", "torch") if cuda else "torch"
        with engine.attention_backends(device, backend):
            trainer.train()
    seconds = clock.end - clock.start
    return {
        **case,
        "what": "train",
        "runs_as": "bf16" if bf16 else "fp32",
        "optimizer_kernel": getattr(args.optim, "value", str(args.optim)),
        "samples_per_s": round(count * BATCH / seconds, 1),
        "step_ms": round(1000 * seconds / count, 2),
    }
