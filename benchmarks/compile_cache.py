"""Time to a compiled cell's first optimizer step with its compile cache cold, warm in the same
folder, and warm from the artifacts alone in a fresh folder (blurbflow.train.compiled), each in a
fresh interpreter as a job would start: the project's own Steps and predict on a model built from
its config (random weights), padded batches in buckets of 64, `compile: true`. On the CPU a real
small BERT (MiniLM-L6's config, fp32, `compile_mode: default`); on a GPU BERT-base (bf16,
`reduce-overhead`: CUDA graphs).

    .venv/bin/python benchmarks/compile_cache.py [--out compile-cache.json]
    .venv/bin/python benchmarks/compile_cache.py --smoke  # a tiny BERT on the CPU, cold and warm

`measure()` is what benchmarks/gpu.py's suite calls; `--out` holds the rows so far after each."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STARTS = ("cold", "warm", "artifacts")
BUCKET, MAX_LENGTH, BATCH, EVAL_BATCH = 64, 128, 32, 128


def model_config(model: str):
    """The config a measurement builds its model from."""
    from gpu_models import config_of
    from transformers import AutoConfig

    from common import minilm_path

    if model == "minilm":
        return AutoConfig.from_pretrained(minilm_path(), num_labels=6)
    return config_of("bert-base", 6, smoke=model == "tiny")


def child(model: str, folder: str, spawned: float) -> dict:
    """One fresh interpreter: build, compile and run one training step and one evaluation."""
    import random

    import torch
    from transformers import AutoModelForSequenceClassification

    from blurbflow.options import CellOptions
    from blurbflow.tasks import get_task
    from blurbflow.train import engine
    from blurbflow.train.optim import AdamW, linear_schedule
    from blurbflow.train.predict import BatchFormat, make_batch, predict
    from blurbflow.train.progress import Progress
    from blurbflow.train.run import Optimisation
    from blurbflow.train.step import Steps

    imported = time.time()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cuda = device.type == "cuda"
    config = model_config(model)
    torch.manual_seed(0)
    with device:
        built = AutoModelForSequenceClassification.from_config(config)
    options = CellOptions.from_dict(
        {"model": model, "model_source": "config", "task": "chemprot", "recipe": "r",
         "hparams": "h", "max_length": MAX_LENGTH, "batch_size": BATCH, "precision": "bf16"}
    )  # fmt: skip
    policy = engine.Policy(
        attention_backend="no_cudnn" if cuda else "torch",
        batch_shapes="padded",
        pad_multiple=BUCKET,
        compiled="inductor",
        compile_mode="reduce-overhead" if cuda else "default",
        compile_cache=folder,
    )
    optimizer = AdamW(built.parameters(), lr=1e-5)
    opt = Optimisation(built, optimizer, linear_schedule(optimizer, 10, 0.1), device, None)
    progress = Progress("bench", 1, 10, every=float("inf"), write=lambda line: None)
    rng = random.Random(0)
    lengths = [rng.randint(20, MAX_LENGTH) for _ in range(BATCH + EVAL_BATCH)]
    low = min(1000, config.vocab_size // 2)  # above BERT's special and unused ids
    ids = [[101 % low, *(rng.randrange(low, config.vocab_size) for _ in range(n - 2)), 102 % low]
           for n in lengths]  # fmt: skip
    data = {"input_ids": ids, "length": lengths, "label": [i % 6 for i in range(len(ids))]}
    fmt = BatchFormat(pad_id=0)

    def sync():
        if cuda:
            torch.cuda.synchronize(device)

    with engine.attention_backends(device, policy.attention_backend):
        steps = Steps(opt, options, progress, policy=policy)
        ready = time.time()
        built.train()
        batch = list(range(BATCH))
        steps.step(lengths, batch, lambda rows: make_batch(data, rows, fmt), lambda loss: loss)
        sync()
        stepped = time.time()
        scored = {k: v[BATCH:] for k, v in data.items()}
        predict(built, get_task("chemprot"), scored, EVAL_BATCH, fmt, device, steps.precision,
                steps.shapes)  # fmt: skip
        sync()
        evaluated = time.time()
        steps.policy.cache.evaluated()
    return {
        "device": torch.cuda.get_device_name(device) if cuda else "cpu",
        "torch": torch.__version__,
        "precision": steps.precision,
        "compile_mode": policy.compile_mode,
        "imports_s": round(imported - spawned, 2),
        "first_step_s": round(stepped - ready, 2),
        "to_first_step_s": round(stepped - spawned, 2),
        "first_eval_s": round(evaluated - stepped, 2),
        **steps.policy.cache.record(),
    }


def run_child(model: str, folder: Path) -> dict:
    """child() in a fresh interpreter."""
    spawned = time.time()
    args = [sys.executable, __file__, "--child", json.dumps([model, str(folder), spawned])]
    proc = subprocess.run(args, capture_output=True, text=True, cwd=Path(__file__).parent)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(model: str = "minilm", out: Path | None = None, starts=STARTS) -> list[dict]:
    """Rows for `model` (minilm, bert-base or tiny): cold in a new folder, warm in it, then from
    its artifacts in another new folder; `out`: the JSON rewritten after each row."""
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="compile-cache-") as tmp:
        first, fresh = Path(tmp) / "first", Path(tmp) / "fresh"
        for start in starts:
            if start == "artifacts":
                shutil.copytree(first / "artifacts", fresh / "artifacts")
            row = run_child(model, fresh if start == "artifacts" else first)
            rows.append({"model": model, "measured": start, **row})
            if out is not None:
                out.write_text(json.dumps({"rows": rows}, indent=1) + "\n")
    return rows


def table(rows: list[dict]) -> str:
    lines = [
        f"{rows[0]['model']} on {rows[0]['device']} ({rows[0]['precision']}, "
        f"{rows[0]['compile_mode']}), torch {rows[0]['torch']}: seconds",
        f"{'cache':<10} {'recorded':<10} {'to first step':>14} {'first step':>11} "
        f"{'compile':>8} {'first eval':>11}",
    ]
    for r in rows:
        lines.append(
            f"{r['measured']:<10} {r['start']!s:<10} {r['to_first_step_s']:>14.2f} "
            f"{r['first_step_s']:>11.2f} {r['compile_seconds']:>8.2f} {r['first_eval_s']:>11.2f}"
        )
    return "\n".join(lines)


def main() -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        print(json.dumps(child(*json.loads(sys.argv[2]))))
        return
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--smoke", action="store_true", help="a tiny BERT: the code path, no figure")
    p.add_argument("--model", choices=("minilm", "bert-base", "tiny"), default=None)
    p.add_argument("--out", type=Path, default=None, help="the rows as JSON, after each")
    args = p.parse_args()
    import torch

    model = args.model or ("tiny" if args.smoke else "bert-base")
    if args.model is None and not args.smoke and not torch.cuda.is_available():
        model = "minilm"
    # the smoke leaves out the artifacts: on the CPU they rebuild every C++ kernel, as cold
    # (tests/test_compile_cache.py runs that path)
    print(table(measure(model, args.out, STARTS[:2] if args.smoke else STARTS)))


if __name__ == "__main__":
    main()
