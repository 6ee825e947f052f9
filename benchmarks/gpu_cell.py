"""One real demo cell end to end for the suite (benchmarks/gpu.py): config/demo.yaml's job of
`task` under `standard`, with its data generated and prepared, its tiny model built (on that
task's train set) and its inputs tokenized as the workflow's rules do (blurbflow.steps), then
trained through the finetune step (`blurbflow.steps.finetune`: the job, its lock, its
manifest) with the engine's settings, and its result.json verified (blurbflow.record.verify).
No Snakemake: the steps the rules call, in order. A helper of gpu.py, no benchmark."""

from __future__ import annotations

import contextlib
import io
import json
import os
import time
from pathlib import Path

import yaml

from blurbflow import steps
from blurbflow.config import cell_jobs, expand_cells
from blurbflow.record.verify import verify_result
from blurbflow.tasks import get_task

REPO = Path(__file__).resolve().parents[1]


def demo_cell(work: Path, task: str = "ncbidisease", smoke: bool = False) -> dict:
    """Train seed 1 of the demo's `task` × standard job in `work` (its relative paths resolve
    there); the result's device, precision, engine policy, scores and whether it verifies."""
    config = yaml.safe_load((REPO / "config" / "demo.yaml").read_text())
    entry = next(iter(config["models"].values()))
    if smoke:  # a smaller model, fewer epochs
        entry.update(hidden_size=32, num_layers=1, pretrain_epochs=0)
        config["recipes"]["standard"]["epochs"] = {"default": 1}
    jobs = cell_jobs(expand_cells(config))
    path, job = next((p, j) for p, j in jobs.items() if f"/{task}/standard/" in p)
    options = job.options
    started, here = time.perf_counter(), Path.cwd()
    work.mkdir(parents=True, exist_ok=True)
    os.chdir(work)
    quiet = io.StringIO()
    try:
        with contextlib.redirect_stdout(quiet):
            spec = get_task(task)
            for source in spec.sources:
                steps.generate(source, f"raw/{source}")
            steps.prepare(task, "raw", f"data/{task}")
            # the demo's model, pre-trained on this task's train set only (seconds, not minutes)
            steps.build_model(entry, [f"data/{task}/train.parquet"], options.model_source)
            encoded = f"encoded/{task}"
            steps.tokenize(spec.name, f"data/{task}", options.model_source, encoded,
                           max_length=options.max_length, model_name=options.model)  # fmt: skip
            ready = time.perf_counter()
            manifest = Path(path) / "seeds.json"
            steps.finetune(options, [1], encoded, f"data/{task}", str(manifest), config=config)
        result_path = Path(path) / "seed1" / "result.json"
        result = json.loads(result_path.read_text())
        problem = verify_result(result_path, result, options.with_seed(1))
    finally:
        os.chdir(here)
    return {
        "cell": path + "/seed1",
        "status": result["status"],
        "device": result["device"],
        "precision": result["precision"],
        "attention_backend": result.get("attention_backend"),
        "batch_shapes": result.get("batch_shapes"),
        "engine": result.get("engine"),
        "epochs": len(result["epochs"]),
        "dev": result["dev"],
        "test": result["test"],
        "wall_seconds": result["wall_seconds"],
        "setup_s": round(ready - started, 1),
        "verified": problem is None,
        "verify_problem": problem,
    }
