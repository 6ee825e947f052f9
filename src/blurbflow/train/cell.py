"""One cell: fine-tune (model, task, recipe, hparams, seed), evaluate dev and test after every
epoch, select the epoch (`best_dev` or `last`) and write result.json + predictions.parquet.

Training-data options (DESIGN §6): `train_on: train+dev` trains on both splits; nothing is then
held out for selection, so the selection is forced to `last` (dev and test are still scored every
epoch; dev is then seen in training). `train_subsample: N` keeps N training instances drawn with
`subsample_seed` (default 0), independent of the cell's seed, so every seed sees the same subset.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import platform
import random
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from blurbflow.identity import file_sha256
from blurbflow.io import write_json_atomic, write_parquet_atomic
from blurbflow.models.prefetch import model_commit, model_folder
from blurbflow.tasks import TaskSpec, get_task
from blurbflow.train import faults, tagging
from blurbflow.train.encode import IGNORE, load_encoded, load_meta


def seed_everything(seed: int) -> None:
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # CPU kernels used here are deterministic without more flags


def gold_labels(spec: TaskSpec, frame: pd.DataFrame) -> list:
    """Gold in the form the task's metric takes (word-level tags, labels, scores, label sets)."""
    if spec.type in ("ner", "pico"):
        return [list(tags) for tags in frame["tags"]]
    if spec.type == "sts":
        return frame["score"].astype(float).tolist()
    if spec.type == "doccls":
        return [list(labels) for labels in frame["labels"]]
    return frame["label"].astype(str).tolist()


def decode(spec: TaskSpec, logits, data: dict, rows: list[int], scheme: str = "BIO") -> list:
    """Turn a batch's logits into predictions shaped like `gold_labels` (word tags predicted in
    the `tagging` scheme are decoded back to the prepared format first)."""
    import torch

    if spec.type in ("ner", "pico"):
        labels = tagging.scheme_labels(spec.type, spec.labels, scheme)
        best = logits.argmax(-1)
        out = []
        for r, i in enumerate(rows):
            mask = torch.tensor(data["labels"][i]) != IGNORE
            tags = [labels[k] for k in best[r, : len(mask)][mask].tolist()]
            tags += ["O"] * (data["n_words"][i] - len(tags))  # words cut by truncation
            out.append(tagging.to_gold_format(tags, scheme, spec.type))
        return out
    if spec.type == "sts":
        return logits.squeeze(-1).tolist()
    if spec.type == "doccls":
        return [[spec.labels[k] for k in np.flatnonzero(row)] for row in (logits > 0).tolist()]
    return [spec.labels[k] for k in logits.argmax(-1).tolist()]


def make_batch(
    data: dict, rows: list[int], pad_id: int, label_dtype, entities: bool = False
) -> dict:
    """The padded batch; with `entities`, the RE entity positions that `re_pooling` reads."""
    import torch

    from blurbflow.train import batching

    batch = batching.collate(data, rows, pad_id, label_dtype)
    if entities:
        batch["entity_spans"] = torch.tensor(
            [[data["e1_span"][i], data["e2_span"][i]] for i in rows], dtype=torch.long
        )
        batch["entity_starts"] = torch.tensor(
            [[data["e1_pos"][i], data["e2_pos"][i]] for i in rows], dtype=torch.long
        )
    return batch


def predict(
    model,
    spec: TaskSpec,
    data: dict,
    batch_size: int,
    pad_id: int,
    label_dtype,
    scheme: str = "BIO",
    entities: bool = False,
    device=None,
    precision: str | None = None,
) -> list:
    import torch

    from blurbflow.train.batching import eval_batches
    from blurbflow.train.device import autocast, to_device

    model.eval()
    predictions: list = [None] * len(data["input_ids"])
    with torch.inference_mode():
        for rows in eval_batches(data["length"], batch_size):
            batch = make_batch(data, rows, pad_id, label_dtype, entities)
            batch.pop("labels")
            device = device or torch.device("cpu")
            with autocast(device, precision):
                logits = model(**to_device(batch, device)).logits.float().cpu()
            for i, value in zip(rows, decode(spec, logits, data, rows, scheme), strict=True):
                predictions[i] = value
    return predictions


def with_defaults(options: dict) -> dict:
    """The options with every recipe key present (callers may pass fewer)."""
    from blurbflow.config import GU_DEFAULTS

    return {**GU_DEFAULTS, **options}


def training_data(splits: dict[str, dict], options: dict) -> dict[str, list]:
    """The training instances of the cell: train (or train+dev), then the fixed subsample."""
    options = with_defaults(options)
    train = splits["train"]
    if options["train_on"] == "train+dev":
        dev = splits["dev"]
        train = {k: list(v) + list(dev[k]) for k, v in train.items()}
    elif options["train_on"] != "train":
        raise ValueError(f"train_on: unknown {options['train_on']!r}; use train or train+dev")
    wanted = options["train_subsample"]
    if wanted is not None:
        size = len(train["input_ids"])
        if not 0 < int(wanted) <= size:
            raise ValueError(
                f"train_subsample={wanted}: task {options.get('task')} has {size} training "
                f"instances (train_on: {options['train_on']}); use 1 … {size}"
            )
        rng = random.Random(int(options["subsample_seed"]))
        keep = sorted(rng.sample(range(size), int(wanted)))
        train = {k: [v[i] for i in keep] for k, v in train.items()}
    return train


def entity_pooling(spec: TaskSpec, options: dict) -> str:
    return with_defaults(options)["re_pooling"] if spec.type == "re" else "cls"


def uses_markers(spec: TaskSpec, options: dict) -> bool:
    return spec.type == "re" and with_defaults(options)["re_input"] == "markers"


def check_encoded(meta: dict, spec: TaskSpec, options: dict, encoded_dir: Path) -> None:
    """The tokenized data must have been made with the cell's input options."""
    options = with_defaults(options)
    for name, value in (meta.get("inputs") or {}).items():
        if options.get(name) != value:
            raise ValueError(
                f"{encoded_dir} was tokenized with {name}={value!r} but the cell asks for "
                f"{name}={options.get(name)!r}; tokenize again for these options"
            )
    pooling = entity_pooling(spec, options)
    if pooling == "entity_start" and options["re_input"] != "markers":
        raise ValueError(
            f"task {spec.name}: re_pooling='entity_start' reads the [E1]/[E2] marker tokens, so it "
            f"needs re_input: markers (got {options['re_input']!r}); use re_pooling: max or cls"
        )
    missing = sum(s.get("entities_not_found", 0) for s in meta.get("splits", {}).values())
    if pooling != "cls" and missing:
        raise ValueError(
            f"task {spec.name}: re_pooling={pooling!r} needs both entities in every instance, "
            f"but {missing} entity positions were not found with re_input="
            f"{options['re_input']!r}; use re_pooling: cls for {spec.name}"
        )


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


def build_model_and_optimizer(
    options: dict, spec: TaskSpec, n_train: int, num_tokens: int | None = None, device=None
):
    """The model with the recipe's head and surgery applied (on `device`), its optimizer and LR
    schedule. `num_tokens`: the tokenizer's size when tokens were added (entity markers)."""
    from blurbflow.models import surgery
    from blurbflow.models.load import load_for_task
    from blurbflow.train.optim import AdamW, linear_schedule

    source = str(model_folder(options))
    options = with_defaults(options)
    labels = None
    if spec.type in ("ner", "pico"):
        labels = tagging.scheme_labels(spec.type, spec.labels, options["tagging"])
    model = load_for_task(
        source,
        spec,
        dropout=options["dropout"],
        labels=labels,
        head=options["head"],
        pooling=entity_pooling(spec, options),
        num_tokens=num_tokens,
        trust_remote_code=bool(options.get("trust_remote_code", False)),
    )
    surgery.remove_top(model, options["remove_top"])
    surgery.reinit_top(model, options["reinit_top"], int(options["seed"]))
    surgery.freeze_lower(model, options["freeze_lower"])
    if device is not None:
        model.to(device)
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
    steps = math.ceil(n_train / int(options["batch_size"])) * options["epochs"]
    return model, optimizer, linear_schedule(optimizer, steps, options["warmup_ratio"])


def where_run() -> dict:
    """The host and SLURM job that ran a cell (sacct finds the job by this id)."""
    return {"host": platform.node(), "slurm_job_id": os.environ.get("SLURM_JOB_ID")}


def cell_id(options: dict) -> str:
    return "/".join(str(options[k]) for k in ("model", "task", "recipe", "hparams")) + (
        f"/seed{options['seed']}"
    )


def train_cell(
    options: dict,
    encoded_dir: Path,
    data_dir: Path,
    result_path: Path,
    threads: int = 1,
    identity: dict | None = None,
) -> dict:
    """Run one cell end to end (resuming from its checkpoint if one was written for the same
    options and identity); returns the result written to result_path. `identity`: the job's
    blurbflow.identity.cell_identity (computed here when None). Raises checkpoint.Preempted
    after saving when SIGTERM arrives."""
    import torch

    from blurbflow.config import options_json
    from blurbflow.metrics import chance_baseline, compute_metric
    from blurbflow.models.load import load_tokenizer, tokenizer_settings
    from blurbflow.train import batching, checkpoint
    from blurbflow.train.device import peak_memory_mb, select_device
    from blurbflow.train.loop import Steps
    from blurbflow.train.progress import Progress

    started, clock = datetime.now(UTC), time.monotonic()
    fault = faults.planned(cell_id(options))
    faults.before_training(fault, cell_id(options))
    spec = get_task(options["task"])
    settings = with_defaults(options)
    torch.set_num_threads(threads)
    seed_everything(int(options["seed"]))

    meta = load_meta(encoded_dir)
    check_encoded(meta, spec, settings, encoded_dir)

    # Only what the first step needs is read up front; evaluation data loads at the first eval.
    @functools.cache
    def encoded(split: str) -> dict:
        return load_encoded(encoded_dir, split)

    @functools.cache
    def frame(split: str) -> pd.DataFrame:
        return pd.read_parquet(Path(data_dir) / f"{split}.parquet")

    @functools.cache
    def gold(split: str) -> list:
        return gold_labels(spec, frame(split))

    splits = {"train": encoded("train")}
    if settings["train_on"] == "train+dev":
        splits["dev"] = encoded("dev")
    train_data = training_data(splits, settings)
    scheme = settings["tagging"] if spec.type in ("ner", "pico") else "BIO"
    entities = entity_pooling(spec, settings) != "cls"
    select = "last" if settings["train_on"] == "train+dev" else settings["select"]
    label_dtype = torch.float32 if spec.type in ("sts", "doccls") else torch.long
    pad_id, num_tokens = meta.get("pad_id"), None
    if pad_id is None or uses_markers(spec, settings):
        tokenizer = load_tokenizer(
            model_folder(options),
            entity_markers=uses_markers(spec, settings),
            **tokenizer_settings(options),
        )
        pad_id = tokenizer.pad_token_id or 0
    if uses_markers(spec, settings):
        from blurbflow.models.load import add_entity_markers

        expected, markers = meta.get("added_tokens"), add_entity_markers(tokenizer)
        if expected and expected != markers:
            raise ValueError(
                f"{encoded_dir}: entity marker ids {expected} differ from the model tokenizer's "
                f"{markers}; tokenize again with this model's tokenizer"
            )
        num_tokens = len(tokenizer)
    device = select_device()
    model, optimizer, scheduler = build_model_and_optimizer(
        options, spec, len(train_data["input_ids"]), num_tokens, device
    )

    cell_dir = Path(result_path).parent
    cell_dir.mkdir(parents=True, exist_ok=True)
    log_path = cell_dir / "train_log.jsonl"
    if identity is None:
        from blurbflow.identity import cell_identity

        identity = cell_identity(options, encoded_dir, data_dir)
    # a checkpoint resumes only for the same options and the same model, tokens and data
    key = options_json({"options": options, "identity": identity})
    shuffler = random.Random(int(options["seed"]))
    state = checkpoint.load(cell_dir, key, model, optimizer, scheduler, shuffler)
    resumed = state is not None
    if state is None:
        state = checkpoint.LoopState()
        log_path.unlink(missing_ok=True)
    status, error = "ok", None

    def save():
        checkpoint.save(cell_dir, key, state, model, optimizer, scheduler, shuffler)

    per_epoch = math.ceil(len(train_data["input_ids"]) / int(options["batch_size"]))
    done = (state.epoch - 1) * per_epoch + state.step
    progress = Progress(cell_id(options), options["epochs"], per_epoch, done=done)
    steps = Steps(model, optimizer, scheduler, device, settings, progress)

    def make(rows):
        return make_batch(train_data, rows, pad_id, label_dtype, entities)

    with checkpoint.SigtermFlag() as sigterm:
        while state.epoch <= options["epochs"]:
            t0 = time.monotonic()
            model.train()
            if state.batches is None:
                state.batches = batching.train_batches(
                    train_data["length"], int(options["batch_size"]), shuffler
                )
            for rows in state.batches[state.step :]:
                if sigterm.raised:
                    steps.sync(state, force=True)
                    save()
                    raise checkpoint.Preempted(
                        f"SIGTERM at epoch {state.epoch} step {state.step}: checkpoint saved, "
                        "the retry resumes from it"
                    )
                inject = functools.partial(
                    faults.in_training, fault, state.epoch, state.step, resumed
                )
                steps.step(train_data["length"], rows, make, inject)
                state.step += 1
                if error := steps.sync(state):
                    break
            if error or (error := steps.sync(state, force=True)):
                status = "diverged"
                break
            preds = {
                s: predict(
                    model,
                    spec,
                    encoded(s),
                    options["eval_batch_size"],
                    pad_id,
                    label_dtype,
                    scheme,
                    entities,
                    device,
                    steps.precision,
                )
                for s in ("dev", "test")
            }
            record = {
                "epoch": state.epoch,
                "train_loss": float(np.mean(state.losses)),
                "dev": compute_metric(spec, gold("dev"), preds["dev"]),
                "test": compute_metric(spec, gold("test"), preds["test"]),
                "seconds": round(time.monotonic() - t0, 3),
            }
            if not state.records or record["dev"] > max(r["dev"] for r in state.records):
                state.best_predictions = preds
            state.records.append(record)
            state.last_predictions = preds
            with log_path.open("a") as log:
                log.write(json.dumps(record) + "\n")
            progress.line(state.epoch, state.step, steps.lr, f"dev {record['dev']:.4f}")
            state.epoch, state.step, state.batches, state.losses = state.epoch + 1, 0, None, []
            if state.epoch <= options["epochs"]:
                save()

    epochs = state.records
    selected, predictions = None, None
    if epochs:
        if select == "last":
            selected, predictions = epochs[-1], state.last_predictions
        else:
            selected, predictions = max(epochs, key=lambda e: e["dev"]), state.best_predictions
    result = {
        "cell": {k: options[k] for k in ("model", "task", "recipe", "hparams", "seed")},
        "task_type": spec.type,
        "metric": spec.metric,
        "options": options,
        "identity": identity,
        "model_commit": model_commit(options),
        "status": status,
        "error": error,
        "epochs": epochs,
        "selected_epoch": selected["epoch"] if selected else None,
        "selection": select,
        "train_instances": len(train_data["input_ids"]),
        "train_ids_sha": hashlib.sha256("\n".join(train_data["id"]).encode()).hexdigest()[:16],
        "dev": selected["dev"] if selected else None,
        "test": selected["test"] if selected else None,
        "chance_dev": chance_baseline(spec, gold("train"), gold("dev")),
        "chance_test": chance_baseline(spec, gold("train"), gold("test")),
        "wall_seconds": round(time.monotonic() - clock, 3),
        "gpu_hours": round((time.monotonic() - clock) / 3600, 6)
        if torch.cuda.is_available()
        else 0.0,
        "peak_memory_mb": peak_memory_mb(device),
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "precision": steps.precision,  # what the GPU ran, for the `precision` asked
        **where_run(),
        "versions": _versions(),
        "git_commit": _git_commit(),
        "started": started.isoformat(),
        "finished": datetime.now(UTC).isoformat(),
    }
    rows = []
    for split, values in (predictions or {}).items():
        ids = frame(split)["id"].astype(str).tolist()
        rows += [
            {"id": i, "split": split, "gold": json.dumps(g), "pred": json.dumps(p)}
            for i, g, p in zip(ids, gold(split), values, strict=True)
        ]
    write_parquet_atomic(
        cell_dir / "predictions.parquet",
        pd.DataFrame(rows, columns=["id", "split", "gold", "pred"]),
    )
    result["predictions_sha256"] = file_sha256(cell_dir / "predictions.parquet")
    write_json_atomic(result_path, result)
    checkpoint.remove(cell_dir)
    return result
