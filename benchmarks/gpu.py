"""The GPU suite: what the engine's policies (blurbflow.train.engine) give a cell on a GPU, in one
command that writes one JSON and one markdown table (benchmarks/README.md, "GPU suite").

Parts, run in this order (`--budget-s` skips those that would start after it, and says so):
- chemprot: BERT-base (BertConfig() defaults, random weights) on ChemProt's train lengths,
  batch 32, length ≤ 128, through the project's step and predict: bf16 under each attention
  policy (torch's backends, cuDNN's off) and batch shapes (length-sorted micro-batches, one
  padded pass, widths in buckets of 64, padding-free), fp16 and fp32, our AdamW's foreach
  kernel and torch.optim.AdamW(fused=True) beside the default, no prefetch, evaluation batch
  64 and 256;
- trainer: HF Trainer on the same model, data and batch, bf16, defaults and group_by_length,
  with torch's attention backends and with cuDNN's off;
- bc5chem: BERT-base token classification on BC5-chem's real train lengths (shipped quantiles);
- encoders: ModernBERT-base and DeBERTa-v3-base (configs written in gpu_runs.py);
- cell: config/demo.yaml's ncbidisease job, seed 1, end to end (gpu_cell.py), verified;
- profile: one step under torch.profiler, and host syncs torch reports in three steps;
- ragged: cuDNN attention with TORCH_CUDNN_SDPA_AVOID_RECOMPILE=1, in a fresh process;
- compile: torch.compile (inductor) on bucketed widths, compile time reported apart.
cuDNN-on rows share one process's graph cache: a later row reuses the graphs of earlier ones.

    .venv/bin/python benchmarks/gpu.py --suite --out gpu-suite.json   # on a GPU, ≤ 6 min
    .venv/bin/python benchmarks/gpu.py --suite --smoke                # tiny models, the CPU
    .venv/bin/python benchmarks/gpu.py --lengths    # the shipped lengths, from the mirror
Without CUDA it exits 2 unless given --smoke."""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import gpu_runs as runs
import torch
import transformers
from gpu_report import markdown, targets

from blurbflow.train import device as devices

OUT = Path(__file__).resolve().parents[1] / "resources" / "benchmarks" / "gpu-suite.json"
ALL = ("chemprot", "trainer", "bc5chem", "encoders", "cell", "profile", "ragged", "compile")


def case(task="chemprot", model="bert-base", precision="bf16", **more) -> dict:
    return {"task": task, "model": model, "precision": precision, **more}


def chemprot_cases() -> tuple[list, list]:
    train, evals = [], []
    shapes = [("micro_batches", 1), ("padded", 1), ("padded", 64), ("padding_free", 1)]
    for attention in ("no_cudnn", "torch"):
        for shape, multiple in shapes:
            train.append(case(attention=attention, shapes=shape, pad_multiple=multiple))
        for shape, multiple in shapes[1:]:
            evals.append(case(attention=attention, shapes=shape, pad_multiple=multiple))
    evals.append(case(attention="no_cudnn", shapes="padded", eval_batch_size=256))
    for optimizer in ("ours-foreach", "torch-fused"):
        train.append(case(attention="no_cudnn", shapes="padded", optimizer=optimizer))
    train.append(case(attention="no_cudnn", shapes="padded", prefetch=False))
    for shape in ("padded", "padding_free"):
        train.append(case(precision="fp16", attention="no_cudnn", shapes=shape))
    train.append(case(precision="fp16", attention="torch", shapes="padded"))
    evals.append(case(precision="fp16", attention="no_cudnn", shapes="padded"))
    for shape in ("micro_batches", "padded", "padding_free"):
        train.append(case(precision="fp32", attention="no_cudnn", shapes=shape))
    evals.append(case(precision="fp32", attention="no_cudnn", shapes="padded"))
    return train, evals


def part_cases(part: str) -> tuple[list, list]:
    if part == "chemprot":
        return chemprot_cases()
    if part == "bc5chem":
        train = [case("bc5chem", attention="no_cudnn", shapes=s) for s in runs.SHAPES]
        train.append(case("bc5chem", attention="torch", shapes="padded"))
        train += [case("bc5chem", precision="fp32", shapes=s) for s in runs.SHAPES]
        return train, [case("bc5chem", shapes=s) for s in ("padded", "padding_free")]
    if part == "encoders":
        modern = [case(model="modernbert-base", shapes=s) for s in ("padded", "padding_free")]
        modern.append(case(model="modernbert-base", attention="torch", shapes="padded"))
        deberta = [case(model="deberta-v3-base", attention=a) for a in ("no_cudnn", "torch")]
        return modern + deberta, modern[:2]
    if part == "ragged":
        return [case(attention="cudnn_ragged")], [case(attention="cudnn_ragged")]
    if part == "compile" and torch.cuda.is_available():
        return [case(shapes="padded", pad_multiple=64, compile=True)], []
    return [], []


def run_part(part: str, device, args, result: dict) -> None:
    warmup, steps, batches = (1, 2, 2) if args.smoke else (10, 40, 40)
    if part == "trainer":
        from gpu_trainer import trainer_run

        for attention in ("torch", "no_cudnn"):
            for grouped in (False, True):
                row = case(attention=attention, group_by_length=grouped, shapes="hf-trainer")
                if allowed(row, device, args.smoke) and not (args.smoke and grouped):
                    result["rows"].append(trainer_run(row, device, warmup, steps, args.smoke))
    elif part == "cell":
        from gpu_cell import demo_cell

        with tempfile.TemporaryDirectory() as work:
            result["cell"] = demo_cell(Path(work), smoke=args.smoke)
    elif part == "profile":
        for shape in ("padded",) if args.smoke else ("padded", "padding_free"):
            row = case(attention="no_cudnn", shapes=shape)
            result["profile"].append(runs.profile_step(row, device, args.smoke))
            result["profile"][-1]["host_syncs"] = runs.host_syncs(row, device, args.smoke)
    elif part == "ragged" and not args.child and device.type == "cuda":
        result["rows"] += ragged_child(args)
    else:
        train, evals = part_cases(part)
        for row in train:
            if allowed(row, device, args.smoke):
                result["rows"].append(runs.train_run(row, device, warmup, steps, args.smoke))
        for row in evals:
            if allowed(row, device, args.smoke):
                size = 8 if args.smoke else row.get("eval_batch_size", 64)
                result["rows"].append(runs.eval_run(row, device, batches, size, args.smoke))


def allowed(row: dict, device, smoke: bool) -> bool:
    """Whether the device runs `row` as itself: off CUDA every precision runs as fp32 (the
    bf16 rows stand for them) and there is no cuDNN; a smoke run leaves out the variants of
    one code path (bucket widths, other optimizers and evaluation batch sizes)."""
    if device.type == "cuda":
        return True
    variant = row.get("pad_multiple", 1) > 1 or row.get("optimizer") or row.get("eval_batch_size")
    variant = variant or "prefetch" in row
    own = row["precision"] == "bf16" and row.get("attention", "no_cudnn") == "no_cudnn"
    return own and not (smoke and variant)


def ragged_child(args) -> list[dict]:
    """The ragged cuDNN rows in a fresh process, where the variable is set before any graph."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "ragged.json"
        env = {**os.environ, "TORCH_CUDNN_SDPA_AVOID_RECOMPILE": "1"}
        command = [sys.executable, __file__, "--parts", "ragged", "--child", "--out", str(out)]
        subprocess.run(command, env=env, check=True, timeout=240)
        return json.loads(out.read_text())["rows"]


def lengths(mirror: Path) -> None:
    """Print the shipped length quantiles of ChemProt and BC5-chem train, from the mirror."""
    import numpy as np

    from blurbflow.models.load import load_tokenizer
    from blurbflow.options import InputOptions
    from blurbflow.tasks import get_task
    from blurbflow.train.encode import encode_task, load_encoded

    from common import minilm_path, prepared

    for task, step in (("chemprot", 5), ("bc5chem", 1)):
        with tempfile.TemporaryDirectory() as tmp:
            encode_task(get_task(task), prepared(task, mirror), load_tokenizer(minilm_path()),
                        InputOptions(max_length=512), Path(tmp))  # fmt: skip
            found = np.array(load_encoded(Path(tmp), "train")["length"])
        quantiles = np.percentile(found, np.arange(0, 101, step), method="nearest")
        print(f"{task}: {len(found)} sentences, mean {found.mean():.1f}")
        print(tuple(int(q) for q in quantiles))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--suite", action="store_true", help="every part (default: chemprot only)")
    p.add_argument("--parts", help=f"a comma-separated subset of {','.join(ALL)}")
    p.add_argument("--smoke", action="store_true", help="tiny models, few steps, the CPU too")
    p.add_argument("--out", type=Path, default=OUT, help="the JSON; the table beside it (.md)")
    p.add_argument("--budget-s", type=float, default=330.0, help="start no part after this")
    p.add_argument("--lengths", action="store_true", help="print the shipped length quantiles")
    p.add_argument("--mirror", type=Path, default=Path(__file__).resolve().parents[2] / "shared"
                   / "blurb-raw")  # fmt: skip
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.lengths:
        lengths(args.mirror)
        return 0
    device = devices.select_device()
    if device.type != "cuda" and not args.smoke:
        print("no GPU present (torch.cuda.is_available() is False): run this on a GPU, or pass "
              "--smoke (tiny models, seconds, on the CPU)", file=sys.stderr)  # fmt: skip
        return 2
    if device.type == "cpu":
        torch.set_num_threads(1)  # tiny models: a second thread only adds contention
    parts = args.parts.split(",") if args.parts else list(ALL if args.suite else ("chemprot",))
    if unknown := set(parts) - set(ALL):
        p.error(f"--parts: unknown {', '.join(sorted(unknown))}; use {', '.join(ALL)}")
    started = time.perf_counter()
    result = {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "host": platform.node(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if device.type == "cuda" else None,
        "transformers": transformers.__version__,
        "smoke": args.smoke,
        "batch_size": runs.BATCH,
        "max_length": runs.MAX_LENGTH,
        "rows": [],
        "profile": [],
        "seconds": {},
        "skipped": [],
    }
    for part in parts:
        if time.perf_counter() - started > args.budget_s:
            result["skipped"].append(part)
        else:
            run_recorded(part, device, args, result)
        table = write(result, args, started)  # after each part: a run cut off keeps the rest
    print(table)
    print(f"wrote {args.out} and {args.out.with_suffix('.md')}")
    return 1 if result.get("errors") else 0


def run_recorded(part: str, device, args, result: dict) -> None:
    """Run `part`; off the smoke run a failure is recorded under `errors` and the next part
    runs (device time is scarce)."""
    try:
        with runs.timed(result["seconds"], part):
            run_part(part, device, args, result)
    except Exception as err:  # noqa: BLE001
        if args.smoke:
            raise
        result.setdefault("errors", {})[part] = "".join(traceback.format_exception(err)[-3:])
        print(f"part {part} failed: {err!r}", file=sys.stderr)


def write(result: dict, args, started: float) -> str:
    """The JSON and its markdown table as they stand; the table."""
    result["seconds"]["total"] = round(time.perf_counter() - started, 1)
    result["targets"] = [] if args.smoke or args.child else targets(result)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    table = markdown(result)
    args.out.with_suffix(".md").write_text(table)
    return table


if __name__ == "__main__":
    sys.exit(main())
