"""One cell: fine-tune (model, task, recipe, hparams, seed), evaluate dev and test after every
epoch (or every `eval_every_steps` steps), select the evaluation (`best_dev` or `last`) and write
result.json + predictions.parquet.

`train_cell` is setup (inputs, model, checkpoint) → fit (the training loop, train/fit.py, with the
cell's hooks: JSONL log, kept model, tracking, fault injection; train/hooks.py) → finish (select
the evaluation, write the result). The options are one typed object
(blurbflow.options.CellOptions), recorded as they serialise (docs/recipes.md, docs/results.md).
"""

from __future__ import annotations

import hashlib
import math
import random
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import torch

from blurbflow.config.identity import cell_identity
from blurbflow.config.init_from import source_weights, with_source_weights
from blurbflow.metrics import chance_baseline
from blurbflow.models import attention, surgery
from blurbflow.models.load import load_for_task
from blurbflow.models.lora import apply_large_options
from blurbflow.models.pooling import pooling_used
from blurbflow.models.prefetch import model_commit, model_folder
from blurbflow.options import CellOptions, options_json
from blurbflow.record.schema import Result, cell_key
from blurbflow.tasks import TaskSpec, get_task
from blurbflow.train import checkpoint, engine, faults, kept, tagging, tracking
from blurbflow.train.device import peak_memory_mb, select_device
from blurbflow.train.encode import load_meta
from blurbflow.train.fit import fit
from blurbflow.train.hooks import Hook, Hooks, TrainLog
from blurbflow.train.inputs import Splits, check_encoded, entity_pooling, token_ids, training_data
from blurbflow.train.optim import AdamW, linear_schedule
from blurbflow.train.predict import BatchFormat, label_dtype, write_predictions
from blurbflow.train.run import CellData, Optimisation, Run
from blurbflow.train.weights import load_matching, save_weights
from blurbflow.util.io import write_json_atomic
from blurbflow.util.provenance import code_versions, git_commit, where_run


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # CPU kernels used here are deterministic without more flags


def build_model_and_optimizer(
    options: CellOptions,
    spec: TaskSpec,
    n_train: int,
    num_tokens: int | None = None,
    device=None,
    init_weights: Path | None = None,
    report: dict | None = None,
):
    """The model with the recipe's head and surgery applied (on `device`), its optimizer and LR
    schedule. `num_tokens`: the tokenizer's size when tokens were added (entity markers).
    `init_weights`: fine-tuned weights to start from (init_from), loaded before the surgery so
    that e.g. `reinit_top` re-initialises loaded layers; `report` receives what was loaded."""
    o = options
    labels = None
    if spec.kind.token_level:
        labels = tagging.scheme_labels(spec.type, spec.labels, o.inputs.tagging)
    model = load_for_task(
        str(model_folder(o.model_options)),
        spec,
        dropout=o.dropout,
        labels=labels,
        head=o.head,
        pooling=entity_pooling(spec, o),
        num_tokens=num_tokens,
        trust_remote_code=bool(o.trust_remote_code),
        sequence_pooling=o.pooling or None,
        untrained_pooler=bool(o.untrained_pooler),
    )
    if init_weights is not None:
        loaded = load_matching(model, init_weights)
        print(
            f"init_from: loaded {loaded['loaded']} tensors from {init_weights}; fresh: "
            f"{', '.join(loaded['fresh']) or 'none'}",
            flush=True,
        )
        if report is not None:
            report.update(loaded)
    surgery.remove_top(model, o.remove_top)
    surgery.reinit_top(model, o.reinit_top, int(o.seed))
    surgery.freeze_lower(model, o.freeze_lower)
    model = apply_large_options(model, o, spec.kind.token_level, device)  # lora (models/lora.py)
    if device is not None:
        model.to(device)
    groups = surgery.parameter_groups(model, o.lr, o.weight_decay, o.layerwise_lr_decay)
    optimizer = AdamW(
        [{k: v for k, v in g.items() if k != "names"} for g in groups],
        lr=o.lr,
        betas=(o.adam_beta1, o.adam_beta2),
        eps=o.adam_epsilon,
        bias_correction=o.adam_bias_correction,
    )
    steps = math.ceil(n_train / int(o.batch_size)) * o.epochs
    return model, optimizer, linear_schedule(optimizer, steps, o.warmup_ratio)


def setup(
    options: CellOptions,
    encoded: Path,
    data: Path,
    cell_dir: Path,
    threads: int,
    identity: dict | None,
) -> Run:
    """Check the inputs, then build the training instances and the model (after seeding)."""
    fault = faults.planned(options.cell_id)
    faults.before_training(fault, options.cell_id)
    spec = get_task(options.task)
    torch.set_num_threads(threads)
    seed_everything(int(options.seed))
    meta = load_meta(encoded)
    check_encoded(meta, spec, options, encoded)
    splits = Splits(spec, encoded, data)
    from_splits = {"train": splits.encoded("train")}
    if options.train_on == "train+dev":
        from_splits["dev"] = splits.encoded("dev")
    train = training_data(from_splits, options)
    pad_id, num_tokens = token_ids(meta, spec, options, encoded)
    if identity is None:
        identity = cell_identity(options, encoded, data)
    # init_from: the source weights' sha256 (FileNotFoundError naming the source job)
    identity = with_source_weights(identity, options, cell_dir)
    init = source_weights(options, cell_dir) if options.init_from else None
    report: dict = {}
    device = select_device()
    model, optimizer, scheduler = build_model_and_optimizer(
        options, spec, len(train["input_ids"]), num_tokens, device, init, report
    )
    if getattr(model.config, "pad_token_id", None) is None:  # a decoder's classifier finds the
        model.config.pad_token_id = pad_id  # last real token by it (Llama's tokenizer has none)
    cell_dir.mkdir(parents=True, exist_ok=True)
    return Run(
        options=options,
        data=CellData(spec, splits, train),
        fmt=BatchFormat(
            pad_id,
            label_dtype(spec),
            options.inputs.tagging if spec.kind.token_level else "BIO",
            entity_pooling(spec, options) != "cls",
        ),
        opt=Optimisation(model, optimizer, scheduler, device, random.Random(int(options.seed))),
        cell_dir=cell_dir,
        identity=identity,
        # a checkpoint resumes only for the same options and the same model, tokens and data
        key=options_json({"options": options.to_dict(), "identity": identity}),
        fault=fault,
        init_report=report or None,
    )


def selected_epoch(run: Run, state: checkpoint.LoopState) -> tuple[dict | None, dict | None]:
    """The record of the selected evaluation and its predictions (None, None when none ran)."""
    if not state.records:
        return None, None
    if run.options.selection == "last":
        return state.records[-1], state.last_predictions
    return max(state.records, key=lambda e: e["dev"]), state.best_predictions


def _weights_fields(run: Run) -> dict:
    """init_from: what this cell loaded; keep_weights: its saved weights' sha256. They are the
    weights after the last step, what fine-tuning continues from (with `select: best_dev` the
    source's reported scores may come from an earlier evaluation)."""
    fields = {}
    if run.init_report:
        fields["init_loaded"] = {k: run.init_report[k] for k in ("loaded", "fresh", "unused")}
    if run.options.keep_weights:
        fields["weights_sha256"] = save_weights(run.opt.model, run.cell_dir)
    return fields


def _tokens(run: Run) -> dict[str, int]:
    """Tokens of one training epoch and of one evaluation (every split evaluated), unpadded:
    what blurbflow.plan calibrates its seconds per token on."""
    counted = {"train": sum(len(ids) for ids in run.data.train["input_ids"])}
    counted["eval"] = sum(
        sum(len(ids) for ids in run.data.splits.encoded(split)["input_ids"])
        for split in ("dev", "test")  # every evaluation scores both (train/fit.py's evaluate)
    )
    return counted


def finish(
    run: Run,
    state: checkpoint.LoopState,
    error: str | None,
    start: tuple[datetime, float],
    result_path: Path,
    hooks: Hooks | None = None,
) -> Result:
    """Write predictions.parquet, then result.json (with the predictions' digest and the hooks'
    fields: a kept model's), and remove the checkpoint. `start`: the start's date and monotonic
    clock."""
    started, clock = start
    selected, predictions = selected_epoch(run, state)
    spec, gold, train, options = run.data.spec, run.data.splits.gold, run.data.train, run.options
    chance = {s: chance_baseline(spec, gold("train"), gold(s)) for s in ("dev", "test")}
    seconds = time.monotonic() - clock  # predictions and result.json are written after
    device = run.opt.device
    result: Result = {
        "cell": cell_key(options),
        "task_type": spec.type,
        "metric": spec.metric,
        "options": options.to_dict(),
        "identity": run.identity,
        "model_commit": model_commit(options.model_options),
        "status": "diverged" if error else "ok",
        "error": error,
        "epochs": state.records,
        "selected_epoch": selected["epoch"] if selected else None,
        "selected_step": selected.get("step") if selected else None,
        "selection": options.selection,
        "train_instances": len(train["input_ids"]),
        "tokens": _tokens(run),
        "train_ids_sha": hashlib.sha256("\n".join(train["id"]).encode()).hexdigest()[:16],
        "dev": selected["dev"] if selected else None,
        "test": selected["test"] if selected else None,
        "chance_dev": chance["dev"],
        "chance_test": chance["test"],
        "wall_seconds": round(seconds, 3),
        "gpu_hours": round(seconds / 3600, 6) if torch.cuda.is_available() else 0.0,
        "peak_memory_mb": peak_memory_mb(device),
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "precision": run.precision,  # what the GPU ran, for the `precision` asked
        "pooling": pooling_used(run.opt.model, spec.kind.token_level, spec.kind.target == "span"),
        "attn_implementation": attention.used(run.opt.model),
        **engine.result_fields(run.policy),  # the engine policy that ran
        **where_run(),
        "versions": code_versions(),
        "git_commit": git_commit(),
        "started": started.isoformat(),
        "finished": datetime.now(UTC).isoformat(),
        "predictions_sha256": write_predictions(run.data.splits, predictions, run.cell_dir),
        **_weights_fields(run),
    }
    if hooks is not None:
        result.update(hooks.on_result(run, result))
    write_json_atomic(result_path, result)
    checkpoint.remove(run.cell_dir)
    return result


def cell_hooks(run: Run, data_dir: Path, tracker: tracking.CellTracker) -> list[Hook]:
    """What the loop calls out to, in this order at each point (train/hooks.py)."""
    hooks: list[Hook] = []
    if run.options.keep_model:
        hooks.append(kept.KeptModel(run.options, run.cell_dir, data_dir))
    hooks += [TrainLog(run.log_path), tracker]
    if run.fault is not None:
        hooks.append(faults.InTraining(run.fault))
    return hooks


def train_cell(
    options: CellOptions,
    encoded_dir: Path,
    data_dir: Path,
    result_path: Path,
    threads: int = 1,
    identity: dict | None = None,
    tracked: tracking.Tracking | None = None,
    max_steps: int | None = None,
) -> Result:
    """Run one cell end to end (resuming from its checkpoint if one was written for the same
    options and identity); returns the result written to result_path. `identity`: the job's
    blurbflow.config.identity.cell_identity (computed here when None); `tracked`: the experiment
    trackers the config turns on (blurbflow.train.tracking; None: none). `max_steps` (debugging,
    not an option nor recorded): evaluate and finish after that many optimizer steps, started
    afresh (no checkpoint read). Raises checkpoint.Preempted after saving when SIGTERM arrives."""
    start = datetime.now(UTC), time.monotonic()
    run = setup(options, encoded_dir, data_dir, Path(result_path).parent, threads, identity)
    o = run.opt
    state = None
    if max_steps is None:
        state = checkpoint.load(
            run.cell_dir, run.key, o.model, o.optimizer, o.scheduler, o.shuffler
        )
    resumed = state is not None
    state = state or checkpoint.LoopState()
    tracker = tracking.open_cell(tracked, options, run.cell_dir, resumed, o.scheduler.last_epoch)
    hooks = Hooks(cell_hooks(run, data_dir, tracker))
    # a cell that raises ends its tracked runs KILLED or FAILED; SDPA backends as `engine` says
    with hooks.running(), engine.attention_backends(o.device):
        error = fit(run, state, resumed, hooks, max_steps)
        result = finish(run, state, error, start, result_path, hooks)
        hooks.on_end(result)
    return result
