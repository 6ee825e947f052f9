"""One cell: fine-tune (model, task, recipe, hparams, seed), evaluate dev and test after every
epoch, select the epoch (`best_dev` or `last`) and write result.json + predictions.parquet."""

from __future__ import annotations

import json
import math
import platform
import random
import resource
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from blurbflow.io import write_json_atomic, write_parquet_atomic
from blurbflow.tasks import TaskSpec, get_task
from blurbflow.train.encode import IGNORE, load_encoded


class Diverged(RuntimeError):
    pass


def seed_everything(seed: int) -> None:
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True, warn_only=True)


def gold_labels(spec: TaskSpec, frame: pd.DataFrame) -> list:
    """Gold in the form the task's metric takes (word-level tags, labels, scores, label sets)."""
    if spec.type in ("ner", "pico"):
        return [list(tags) for tags in frame["tags"]]
    if spec.type == "sts":
        return frame["score"].astype(float).tolist()
    if spec.type == "doccls":
        return [list(labels) for labels in frame["labels"]]
    return frame["label"].astype(str).tolist()


def decode(spec: TaskSpec, logits, data: dict, rows: list[int]) -> list:
    """Turn a batch's logits into predictions shaped like `gold_labels`."""
    import torch

    if spec.type in ("ner", "pico"):
        best = logits.argmax(-1)
        out = []
        for r, i in enumerate(rows):
            mask = torch.tensor(data["labels"][i]) != IGNORE
            tags = [spec.labels[k] for k in best[r, : len(mask)][mask].tolist()]
            out.append(tags + ["O"] * (data["n_words"][i] - len(tags)))  # words cut by truncation
        return out
    if spec.type == "sts":
        return logits.squeeze(-1).tolist()
    if spec.type == "doccls":
        return [[spec.labels[k] for k in np.flatnonzero(row)] for row in (logits > 0).tolist()]
    return [spec.labels[k] for k in logits.argmax(-1).tolist()]


def predict(model, spec: TaskSpec, data: dict, batch_size: int, pad_id: int, label_dtype) -> list:
    import torch

    from blurbflow.train.batching import collate, eval_batches

    model.eval()
    predictions: list = [None] * len(data["input_ids"])
    with torch.inference_mode():
        for rows in eval_batches(data["length"], batch_size):
            batch = collate(data, rows, pad_id, label_dtype)
            batch.pop("labels")
            logits = model(**batch).logits.float()
            for i, value in zip(rows, decode(spec, logits, data, rows), strict=True):
                predictions[i] = value
    return predictions


def _versions() -> dict:
    import torch
    import transformers

    import blurbflow

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "blurbflow": blurbflow.__version__,
    }


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
        )
        return out.stdout.strip() or None
    except OSError:
        return None


def train_cell(
    options: dict, encoded_dir: Path, data_dir: Path, result_path: Path, threads: int = 1
) -> dict:
    """Run one cell end to end; returns the result dict that was written."""
    import torch
    from tqdm import tqdm

    from blurbflow.metrics import chance_baseline, compute_metric
    from blurbflow.models import surgery
    from blurbflow.models.load import load_for_task, load_tokenizer
    from blurbflow.train.batching import collate, train_batches
    from blurbflow.train.optim import AdamW, linear_schedule

    started, clock = datetime.now(UTC), time.monotonic()
    spec = get_task(options["task"])
    seed = int(options["seed"])
    torch.set_num_threads(threads)
    seed_everything(seed)

    splits = {s: load_encoded(encoded_dir, s) for s in ("train", "dev", "test")}
    frames = {s: pd.read_parquet(Path(data_dir) / f"{s}.parquet") for s in ("dev", "test")}
    gold = {s: gold_labels(spec, frames[s]) for s in frames}
    train_gold = gold_labels(spec, pd.read_parquet(Path(data_dir) / "train.parquet"))
    label_dtype = torch.float32 if spec.type in ("sts", "doccls") else torch.long

    pad_id = load_tokenizer(options["model_source"]).pad_token_id or 0
    model = load_for_task(options["model_source"], spec, dropout=options["dropout"])
    surgery.remove_top(model, options["remove_top"])
    surgery.reinit_top(model, options["reinit_top"], seed)
    surgery.freeze_lower(model, options["freeze_lower"])
    groups = surgery.parameter_groups(
        model, options["lr"], options["weight_decay"], options["layerwise_lr_decay"]
    )
    optimizer = AdamW(
        [{k: v for k, v in g.items() if k != "names"} for g in groups],
        lr=options["lr"],
        betas=(options["adam_beta1"], options["adam_beta2"]),
        eps=options["adam_epsilon"],
        bias_correction=options["adam_bias_correction"],
    )
    batch_size = int(options["batch_size"])
    steps_per_epoch = math.ceil(len(splits["train"]["input_ids"]) / batch_size)
    scheduler = linear_schedule(
        optimizer, steps_per_epoch * options["epochs"], options["warmup_ratio"]
    )

    cell_dir = Path(result_path).parent
    cell_dir.mkdir(parents=True, exist_ok=True)
    log_path = cell_dir / "train_log.jsonl"
    log_path.unlink(missing_ok=True)
    rng = random.Random(seed)
    epochs, epoch_predictions, status, error = [], {}, "ok", None
    for epoch in range(1, options["epochs"] + 1):
        t0, losses = time.monotonic(), []
        model.train()
        batches = train_batches(splits["train"]["length"], batch_size, rng)
        try:
            for rows in tqdm(batches, desc=f"epoch {epoch}", mininterval=5, disable=None):
                loss = model(**collate(splits["train"], rows, pad_id, label_dtype)).loss
                if not torch.isfinite(loss):
                    raise Diverged(f"loss became {loss.item()} at epoch {epoch}")
                loss.backward()
                if options.get("max_grad_norm"):
                    torch.nn.utils.clip_grad_norm_(model.parameters(), options["max_grad_norm"])
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)
                losses.append(loss.item())
        except Diverged as exc:
            status, error = "diverged", str(exc)
            break
        preds = {
            s: predict(model, spec, splits[s], options["eval_batch_size"], pad_id, label_dtype)
            for s in ("dev", "test")
        }
        record = {
            "epoch": epoch,
            "train_loss": float(np.mean(losses)),
            "dev": compute_metric(spec, gold["dev"], preds["dev"]),
            "test": compute_metric(spec, gold["test"], preds["test"]),
            "seconds": round(time.monotonic() - t0, 3),
        }
        epochs.append(record)
        epoch_predictions[epoch] = preds
        with log_path.open("a") as log:
            log.write(json.dumps(record) + "\n")

    selected = None
    if epochs:
        selected = (
            epochs[-1] if options["select"] == "last" else max(epochs, key=lambda e: e["dev"])
        )
    result = {
        "cell": {k: options[k] for k in ("model", "task", "recipe", "hparams", "seed")},
        "task_type": spec.type,
        "metric": spec.metric,
        "options": options,
        "status": status,
        "error": error,
        "epochs": epochs,
        "selected_epoch": selected["epoch"] if selected else None,
        "dev": selected["dev"] if selected else None,
        "test": selected["test"] if selected else None,
        "chance_dev": chance_baseline(spec, train_gold, gold["dev"]),
        "chance_test": chance_baseline(spec, train_gold, gold["test"]),
        "wall_seconds": round(time.monotonic() - clock, 3),
        "gpu_hours": round((time.monotonic() - clock) / 3600, 6)
        if torch.cuda.is_available()
        else 0.0,
        "peak_memory_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "device": "cuda" if torch.cuda.is_available() else "cpu",
        "versions": _versions(),
        "git_commit": _git_commit(),
        "started": started.isoformat(),
        "finished": datetime.now(UTC).isoformat(),
    }
    rows = []
    if selected:
        for split, values in epoch_predictions[selected["epoch"]].items():
            ids = frames[split]["id"].astype(str).tolist()
            rows += [
                {"id": i, "split": split, "gold": json.dumps(g), "pred": json.dumps(p)}
                for i, g, p in zip(ids, gold[split], values, strict=True)
            ]
    write_parquet_atomic(
        cell_dir / "predictions.parquet",
        pd.DataFrame(rows, columns=["id", "split", "gold", "pred"]),
    )
    write_json_atomic(result_path, result)
    return result
