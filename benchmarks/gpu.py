"""GPU throughput of a BASE-size BERT fine-tuning ChemProt-shaped data, per precision, and a
micro-benchmark of the AdamW step on BERT-base parameter shapes.

Model: `BertConfig()` defaults (12 layers, hidden 768, vocab 30522) under transformers' sequence
classification head with ChemProt's 6 labels, initialised at random from the config (what
`models.load.load_for_task` builds for ChemProt, without downloading weights). Data: token ids
generated directly, lengths drawn from ChemProt train's WordPiece lengths (quantiles below),
truncated to 128. Batch 32, the project's recipe defaults (`CellOptions`).

Training runs the project's own step, `train.fit.Steps` (micro-batches of train/batching.py,
autocast and grad scaler of train/device.py, clipping, optimizer and schedule steps), with the
optimizer groups and AdamW built as `train.cell.build_model_and_optimizer` builds them
(`models.surgery.parameter_groups`), and again with the loop path of our AdamW and with
`torch.optim.AdamW(fused=True)` in its place (torch's always corrects bias; the cost is what is
compared). Evaluation runs `train.predict.predict` (length-sorted batches of `eval_batch_size`).
Per precision: training and evaluation samples/s over fixed steps after warm-up, and peak GPU
memory (`torch.cuda.max_memory_allocated`; on the CPU the process's max RSS, never reset).
A precision the project runs as another on this device (`device.choose_precision`: the CPU
always float32) is left out.

    .venv/bin/python benchmarks/gpu.py --out gpu.json     # on a GPU machine
    .venv/bin/python benchmarks/gpu.py --smoke            # tiny model, seconds, anywhere
    .venv/bin/python benchmarks/gpu.py --cpu --parts optim --threads 1  # BERT-base AdamW, CPU

Without CUDA it exits 2 unless given --smoke or --cpu. --smoke on the CPU uses one thread
(on a shared 2-core machine a second one mostly waits); --threads sets it.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import random
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch
import transformers
from transformers import AutoModelForSequenceClassification, BertConfig

from blurbflow.models import surgery
from blurbflow.options import CellOptions
from blurbflow.tasks import get_task
from blurbflow.train import batching
from blurbflow.train import device as devices
from blurbflow.train.fit import Optimisation, Steps
from blurbflow.train.optim import AdamW, linear_schedule
from blurbflow.train.predict import BatchFormat, make_batch, predict
from blurbflow.train.progress import Progress

RESULTS_FILE = Path(__file__).resolve().parents[1] / "resources" / "benchmarks" / "gpu.json"

# ChemProt train (18,035 sentences, entities dummified), uncased WordPiece length with [CLS] and
# [SEP] at quantiles 0, 5, ..., 100 % (mean 66.4; 6.3 % longer than 128)
CHEMPROT_LENGTHS = (11, 28, 32, 36, 39, 42, 45, 49, 52, 55, 58, 62, 65, 69, 74, 80, 87, 95, 109)
CHEMPROT_LENGTHS += (138, 352)
CHEMPROT_SIZES = {"train": 18035, "dev": 11268, "test": 15745}
MAX_LENGTH, BATCH = 128, 32
# BioM-Transformers (Alrowili & Shanker 2021): BASE on ChemProt, 3 epochs, batch 32, length 128,
# FP16, one RTX 3090, evaluation included: 3:01
REFERENCE = {
    "source": "BioM-Transformers, BASE ChemProt 3 epochs, bs 32, len 128, FP16, 1x RTX 3090",
    "wall_s": 181.0,
    "train_samples_per_s": round(3 * CHEMPROT_SIZES["train"] / 181.0, 1),
}
SPEC = get_task("chemprot")


def chemprot_like(n: int, vocab: int, seed: int) -> dict:
    """`n` instances: [CLS] random ids [SEP], ChemProt's lengths truncated to 128, random labels."""
    rng = np.random.default_rng(seed)
    q = np.linspace(0, 1, len(CHEMPROT_LENGTHS))
    lengths = np.interp(rng.random(n), q, CHEMPROT_LENGTHS).round().astype(int)
    lengths = np.minimum(lengths, MAX_LENGTH)
    low = min(1000, vocab // 2)  # above BERT's special and unused ids
    ids = [[101 % vocab, *rng.integers(low, vocab, k - 2).tolist(), 102 % vocab] for k in lengths]
    return {
        "input_ids": ids,
        "token_type_ids": [[0] * len(row) for row in ids],
        "label": rng.integers(0, len(SPEC.labels), n).tolist(),
        "length": [len(row) for row in ids],
    }


def options_for(precision: str) -> CellOptions:
    return CellOptions.from_dict(
        {
            "model": "bert-base-random",
            "model_source": "BertConfig()",
            "task": "chemprot",
            "recipe": "benchmark",
            "hparams": "gpu",
            "max_length": MAX_LENGTH,
            "batch_size": BATCH,
            "precision": precision,
        }
    )


def build_model(config: BertConfig, device: torch.device):
    torch.manual_seed(0)
    with device:  # initialised where it runs: BERT-base's init on the CPU takes seconds
        model = AutoModelForSequenceClassification.from_config(config)
    return model.to(device)


def build_optimizer(kind: str, model, o: CellOptions):
    """`ours`: as train.cell builds it (foreach on CUDA, fused on the CPU); `ours-loop`: its loop;
    `torch-fused`: torch.optim.AdamW(fused=True) on the same groups (foreach where unfused)."""
    groups = surgery.parameter_groups(model, o.lr, o.weight_decay, o.layerwise_lr_decay)
    groups = [{k: v for k, v in g.items() if k != "names"} for g in groups]
    betas = (o.adam_beta1, o.adam_beta2)
    if kind.startswith("ours"):
        kernel = "loop" if kind == "ours-loop" else None
        return AdamW(
            groups,
            lr=o.lr,
            betas=betas,
            eps=o.adam_epsilon,
            bias_correction=o.adam_bias_correction,
            kernel=kernel,
        )
    return torch_adamw(groups, o.lr, betas, o.adam_epsilon)


def torch_adamw(params, lr, betas, eps):
    try:
        return torch.optim.AdamW(params, lr=lr, betas=betas, eps=eps, fused=True)
    except (RuntimeError, ValueError):  # no fused kernel for this device
        return torch.optim.AdamW(params, lr=lr, betas=betas, eps=eps, foreach=True)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def reset_peak(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def train_run(config, precision: str, kind: str, device, warmup: int, steps: int) -> dict:
    """Samples/s of `steps` optimizer steps of the project's `Steps` after `warmup` steps."""
    o = options_for(precision)
    reset_peak(device)
    model = build_model(config, device)
    optimizer = build_optimizer(kind, model, o)
    scheduler = linear_schedule(optimizer, warmup + steps, o.warmup_ratio)
    opt = Optimisation(model, optimizer, scheduler, device, random.Random(0))
    progress = Progress("gpu-bench", 1, warmup + steps, every=float("inf"), write=lambda _: None)
    loop = Steps(opt, o, progress)
    data = chemprot_like(BATCH * (warmup + steps), config.vocab_size, seed=1)
    rows = batching.train_batches(data["length"], BATCH, random.Random(0))
    fmt = BatchFormat(pad_id=0)
    model.train()

    def make(part):
        return make_batch(data, part, fmt)

    for batch in rows[:warmup]:
        loop.step(data["length"], batch, make, lambda loss: loss)
    sync(device)
    start = time.perf_counter()
    for batch in rows[warmup:]:
        loop.step(data["length"], batch, make, lambda loss: loss)
    sync(device)
    seconds = time.perf_counter() - start
    kernel = optimizer.kernel_for(device, torch.float32) if isinstance(optimizer, AdamW) else None
    state = SimpleNamespace(losses=[], epoch=1, step=warmup + steps, scaler=None)
    error = loop.sync(state, force=True)
    result = {
        "precision": precision,
        "runs_as": loop.precision,
        "optimizer": f"ours ({kernel})" if kind == "ours" else kind,
        "optimizer_class": type(optimizer).__module__ + "." + type(optimizer).__name__,
        "batching": o.batching,
        "steps": steps,
        "samples_per_s": round(steps * BATCH / seconds, 1),
        "step_ms": round(1000 * seconds / steps, 2),
        "peak_memory_mb": devices.peak_memory_mb(device),
        "final_loss": round(state.losses[-1], 4) if state.losses else None,
        "diverged": error,
    }
    del model, optimizer, scheduler, opt, loop
    return result


def eval_run(config, precision: str, device, batches: int) -> dict:
    """Samples/s of `predict` over `batches` evaluation batches, after two warm-up batches."""
    o = options_for(precision)
    runs_as = devices.choose_precision(precision, device)
    devices.configure(device, runs_as)
    reset_peak(device)
    model = build_model(config, device)
    data = chemprot_like(o.eval_batch_size * batches, config.vocab_size, seed=2)
    warm = chemprot_like(o.eval_batch_size * 2, config.vocab_size, seed=3)
    fmt = BatchFormat(pad_id=0)
    predict(model, SPEC, warm, o.eval_batch_size, fmt, device, runs_as)
    sync(device)
    start = time.perf_counter()
    predict(model, SPEC, data, o.eval_batch_size, fmt, device, runs_as)
    sync(device)
    seconds = time.perf_counter() - start
    del model
    return {
        "precision": precision,
        "runs_as": runs_as,
        "batch_size": o.eval_batch_size,
        "samples": len(data["length"]),
        "samples_per_s": round(len(data["length"]) / seconds, 1),
        "peak_memory_mb": devices.peak_memory_mb(device),
    }


def optim_run(config, device, warmup: int, steps: int) -> list[dict]:
    """Median time of one optimizer step on the model's parameter shapes, random gradients."""
    model = build_model(config, device)
    o = options_for("fp32")
    out = []
    for kind in ("ours-loop", "ours-foreach", "ours-fused", "torch-foreach", "torch-fused"):
        reset_peak(device)
        params = [torch.nn.Parameter(p.detach().clone()) for p in model.parameters()]
        gen = torch.Generator(device).manual_seed(0)
        for p in params:
            p.grad = torch.randn(p.shape, generator=gen, device=device) * 1e-3
        groups = [{"params": params[::2], "weight_decay": 0.01}, {"params": params[1::2]}]
        if kind.startswith("ours"):
            optimizer = AdamW(groups, lr=o.lr, kernel=kind.removeprefix("ours-"))
        elif kind == "torch-foreach":
            optimizer = torch.optim.AdamW(groups, lr=o.lr, foreach=True)
        else:
            optimizer = torch_adamw(groups, o.lr, (0.9, 0.999), 1e-8)
            if not optimizer.defaults.get("fused"):
                continue  # no fused kernel here: torch-foreach is the row
        times = []
        for i in range(warmup + steps):
            sync(device)
            start = time.perf_counter()
            optimizer.step()
            sync(device)
            if i >= warmup:
                times.append(time.perf_counter() - start)
        out.append(
            {
                "optimizer": kind,
                "tensors": len(params),
                "parameters": sum(p.numel() for p in params),
                "median_step_ms": round(1000 * statistics.median(times), 3),
                "min_step_ms": round(1000 * min(times), 3),
                "steps": steps,
            }
        )
        del optimizer, params, groups
    return out


def table(rows: list[dict], columns: list[str]) -> str:
    cells = [[str(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(lines)


def estimates(train: list[dict], evals: list[dict]) -> list[dict]:
    """ChemProt, 3 epochs, at these rates: training alone, and with dev + test evaluated after
    every epoch (as the project does), beside the reference's 181 s."""
    eval_rate = {e["precision"]: e["samples_per_s"] for e in evals}
    out = []
    for t in train:
        train_s = 3 * CHEMPROT_SIZES["train"] / t["samples_per_s"]
        row = {"precision": t["precision"], "optimizer": t["optimizer"], "train_s": round(train_s)}
        if t["precision"] in eval_rate:
            scored = CHEMPROT_SIZES["dev"] + CHEMPROT_SIZES["test"]
            row["with_eval_s"] = round(train_s + 3 * scored / eval_rate[t["precision"]])
        row["reference_s"] = REFERENCE["wall_s"]
        out.append(row)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=RESULTS_FILE)
    p.add_argument("--smoke", action="store_true", help="tiny BERT, few steps, runs anywhere")
    p.add_argument("--cpu", action="store_true", help="without a GPU: run on the CPU")
    p.add_argument("--parts", default="train,eval,optim", help="any of train,eval,optim")
    p.add_argument("--precisions", default=",".join(devices.PRECISIONS))
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--steps", type=int, default=50, help="timed training steps")
    p.add_argument("--eval-batches", type=int, default=50)
    p.add_argument("--optim-steps", type=int, default=30)
    p.add_argument("--threads", type=int, help="CPU threads (default: torch's)")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = devices.select_device()
    if device.type != "cuda":
        if not (args.smoke or args.cpu):
            print(
                "no GPU present (torch.cuda.is_available() is False): run this on a GPU "
                "machine, or pass --smoke (tiny model, seconds) or --cpu (BERT-base on the CPU)",
                file=sys.stderr,
            )
            return 2
        print("no GPU present (torch.cuda.is_available() is False): running on the CPU")
    config = BertConfig(num_labels=len(SPEC.labels))
    if args.smoke:
        config = BertConfig(
            num_labels=len(SPEC.labels),
            vocab_size=1000,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
        )
        args.warmup, args.steps, args.eval_batches, args.optim_steps = 1, 3, 2, 5
        if device.type == "cpu" and not args.threads:
            torch.set_num_threads(1)  # a tiny model: a second thread only adds contention
    parts = set(args.parts.split(","))
    asked = args.precisions.split(",")
    precisions = []
    for precision in asked:
        runs_as = devices.choose_precision(precision, device)
        if runs_as != precision and (runs_as in asked or runs_as in precisions):
            print(f"{precision}: left out, the project runs it as {runs_as} on {device.type}")
            continue
        precisions.append(precision)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor()
    result = {
        "device": name or device.type,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "smoke": args.smoke,
        "model": {
            "layers": config.num_hidden_layers,
            "hidden": config.hidden_size,
            "vocab": config.vocab_size,
        },
        "batch_size": BATCH,
        "max_length": MAX_LENGTH,
        "threads": torch.get_num_threads(),
        "reference": REFERENCE,
        "train": [],
        "eval": [],
        "optim": [],
    }
    kinds = (
        ("ours", "ours-loop", "torch-fused") if device.type == "cuda" else ("ours", "torch-fused")
    )
    for precision in precisions:
        if "train" in parts:
            for kind in kinds:
                result["train"].append(
                    train_run(config, precision, kind, device, args.warmup, args.steps)
                )
        if "eval" in parts:
            result["eval"].append(eval_run(config, precision, device, args.eval_batches))
    if "optim" in parts:
        result["optim"] = optim_run(config, device, 5, args.optim_steps)
    if not args.smoke:
        result["chemprot_3_epochs"] = estimates(result["train"], result["eval"])

    print(f"device: {result['device']}; torch {torch.__version__}; {result['model']}")
    memory = "peak_memory_mb" + ("" if device.type == "cuda" else " (max RSS)")
    for key, columns in (
        (
            "train",
            ["precision", "runs_as", "optimizer", "samples_per_s", "step_ms", "peak_memory_mb"],
        ),
        ("eval", ["precision", "runs_as", "batch_size", "samples_per_s", "peak_memory_mb"]),
        ("optim", ["optimizer", "tensors", "parameters", "median_step_ms", "min_step_ms"]),
        ("chemprot_3_epochs", ["precision", "optimizer", "train_s", "with_eval_s", "reference_s"]),
    ):
        if result.get(key):
            print(f"\n{key}" + (f" ({memory})" if key in ("train", "eval") else ""))
            print(table(result[key], columns))
    print(
        f"\nreference: {REFERENCE['source']}: 3:01 "
        f"(≈ {REFERENCE['train_samples_per_s']} training samples/s including evaluation)"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
