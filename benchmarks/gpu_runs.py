"""What benchmarks/gpu.py measures, one run at a time: a model built from its config (random
weights, nothing downloaded) trained through the project's own step (train/step.py's Steps,
with the engine policy given: blurbflow.train.engine) and evaluated through train.predict on
generated data whose lengths follow a real train set's. A helper of gpu.py, no benchmark."""

from __future__ import annotations

import contextlib
import gc
import random
import time
import warnings

import numpy as np
import torch
from transformers import (
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
    BertConfig,
    DebertaV2Config,
    ModernBertConfig,
)

from blurbflow.models import padding_free, surgery
from blurbflow.options import CellOptions
from blurbflow.tasks import get_task
from blurbflow.train import batching, engine, shapes
from blurbflow.train import device as devices
from blurbflow.train.optim import AdamW, linear_schedule
from blurbflow.train.predict import BatchFormat, make_batch, predict
from blurbflow.train.progress import Progress
from blurbflow.train.run import Optimisation
from blurbflow.train.step import Steps

MAX_LENGTH, BATCH = 128, 32
SHAPES = ("micro_batches", "padded", "padding_free")  # the engine's, without CPU packing
# uncased WordPiece lengths with [CLS] and [SEP] of the train sets (benchmarks/gpu.py --lengths
# computes them from ../shared/blurb-raw): ChemProt (18,035 sentences, entities dummified) at
# quantiles 0, 5, …, 100 %; BC5-chem (4,560 sentences, mean 35.7) at 0, 1, …, 100 %
CHEMPROT_LENGTHS = (11, 28, 32, 36, 39, 42, 45, 49, 52, 55, 58, 62, 65, 69, 74, 80, 87, 95, 109)
CHEMPROT_LENGTHS += (138, 352)
BC5CHEM_LENGTHS = (4, 9, 11, 12, 13, 14, 15, 16, 16, 17, 17, 18, 18, 19, 19, 20, 20, 20, 21, 21,
                   21, 22, 22, 22, 23, 23, 23, 24, 24, 25, 25, 25, 26, 26, 26, 27, 27, 27, 28, 28,
                   28, 29, 29, 29, 30, 30, 31, 31, 31, 32, 32, 32, 33, 33, 33, 34, 34, 35, 35, 35,
                   36, 36, 37, 37, 38, 38, 39, 39, 40, 40, 41, 41, 42, 42, 43, 44, 44, 45, 46, 47,
                   47, 48, 49, 50, 51, 52, 53, 54, 55, 57, 59, 60, 63, 65, 66, 69, 73, 78, 84, 99,
                   239)  # fmt: skip
TASKS = {"chemprot": CHEMPROT_LENGTHS, "bc5chem": BC5CHEM_LENGTHS}
SPEC = {"chemprot": get_task("chemprot"), "bc5chem": get_task("bc5chem")}
LABELS = {"chemprot": len(SPEC["chemprot"].labels), "bc5chem": 3}  # BIO tags of one type
SMOKE = dict(vocab_size=1000, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
             intermediate_size=64)  # fmt: skip


def config_of(model: str, labels: int, smoke: bool = False):
    """The model's config with the published checkpoint's values (written here: no hub), or a
    tiny one of the same architecture (`smoke`)."""
    if model == "bert-base":
        return BertConfig(num_labels=labels, **(SMOKE if smoke else {}))
    if model == "modernbert-base":  # answerdotai/ModernBERT-base's config.json
        sizes = dict(vocab_size=50368, hidden_size=768, intermediate_size=1152,
                     num_hidden_layers=22, num_attention_heads=12, local_attention=128,
                     max_position_embeddings=8192)  # fmt: skip
        if smoke:
            sizes.update(SMOKE, intermediate_size=64, local_attention=16, num_hidden_layers=3)
            sizes.update(pad_token_id=0, bos_token_id=1, eos_token_id=2, cls_token_id=1)
            sizes.update(sep_token_id=2)
        return ModernBertConfig(
            num_labels=labels, global_attn_every_n_layers=3, global_rope_theta=160000.0,
            local_rope_theta=10000.0, classifier_pooling="mean", norm_eps=1e-5, **sizes
        )  # fmt: skip
    if model == "deberta-v3-base":  # microsoft/deberta-v3-base's config.json
        sizes = dict(vocab_size=128100, hidden_size=768, num_hidden_layers=12,
                     num_attention_heads=12, intermediate_size=3072)  # fmt: skip
        if smoke:
            sizes.update(SMOKE)
        return DebertaV2Config(
            num_labels=labels, relative_attention=True, position_buckets=256,
            norm_rel_ebd="layer_norm", share_att_key=True, pos_att_type=["p2c", "c2p"],
            layer_norm_eps=1e-7, max_relative_positions=-1, position_biased_input=False,
            type_vocab_size=0, max_position_embeddings=512, **sizes
        )  # fmt: skip
    raise ValueError(f"unknown model {model!r}")


def generated(task: str, n: int, vocab: int, seed: int) -> dict:
    """`n` instances: [CLS] random ids [SEP] with the task's train lengths cut at MAX_LENGTH,
    random labels (one per instance; per token for bc5chem, [CLS]/[SEP] unlabelled)."""
    rng = np.random.default_rng(seed)
    quantiles = TASKS[task]
    lengths = np.interp(rng.random(n), np.linspace(0, 1, len(quantiles)), quantiles)
    lengths = np.minimum(lengths.round().astype(int), MAX_LENGTH)
    low = min(1000, vocab // 2)  # above BERT's special and unused ids
    ids = [[101 % vocab, *rng.integers(low, vocab, k - 2).tolist(), 102 % vocab] for k in lengths]
    data = {"input_ids": ids, "length": [len(row) for row in ids]}
    if task == "bc5chem":
        data["labels"] = [[-100, *rng.integers(0, 3, len(r) - 2).tolist(), -100] for r in ids]
        data["n_words"] = [len(r) - 2 for r in ids]
    else:
        data["label"] = rng.integers(0, LABELS[task], n).tolist()
    return data


def options_for(task: str, precision: str) -> CellOptions:
    return CellOptions.from_dict(
        {"model": "bench", "model_source": "config", "task": task, "recipe": "gpu",
         "hparams": "gpu", "max_length": MAX_LENGTH, "batch_size": BATCH, "precision": precision}
    )  # fmt: skip


def build_model(case: dict, device: torch.device, smoke: bool):
    config = config_of(case["model"], LABELS[case["task"]], smoke)
    auto = AutoModelForTokenClassification if case["task"] == "bc5chem" else None
    torch.manual_seed(0)
    with device:  # initialised where it runs: BERT-base's init on the CPU takes seconds
        model = (auto or AutoModelForSequenceClassification).from_config(config)
    return model.to(device), config


def policy_of(case: dict, device: torch.device) -> engine.Policy:
    kernel = {"ours-foreach": "foreach", "ours-loop": "loop"}.get(case.get("optimizer", ""))
    return engine.Policy(
        attention_backend=case.get("attention", "no_cudnn") if device.type == "cuda" else "torch",
        batch_shapes=case.get("shapes", "padded"),
        pad_multiple=int(case.get("pad_multiple", 1)),
        optimizer_kernel=kernel,
        compiled=engine.compile_backend(case.get("compile", False)),  # True: inductor
        prefetch=case.get("prefetch", device.type == "cuda"),
    )


def optimizer_of(kind: str, model, o: CellOptions):
    """Our AdamW as train.cell builds it, or torch.optim.AdamW(fused=True) on the same groups."""
    groups = surgery.parameter_groups(model, o.lr, o.weight_decay, o.layerwise_lr_decay)
    groups = [{k: v for k, v in g.items() if k != "names"} for g in groups]
    betas, eps = (o.adam_beta1, o.adam_beta2), o.adam_epsilon
    if kind == "torch-fused":
        return torch.optim.AdamW(groups, lr=o.lr, betas=betas, eps=eps, fused=True)
    return AdamW(groups, lr=o.lr, betas=betas, eps=eps, bias_correction=o.adam_bias_correction)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def fresh(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def train_steps(case: dict, device, smoke: bool, count: int):
    """(the Steps of `case`, its data, a function running `count` steps from step k)."""
    o = options_for(case["task"], case["precision"])
    model, config = build_model(case, device, smoke)
    optimizer = optimizer_of(case.get("optimizer", "ours"), model, o)
    opt = Optimisation(model, optimizer, linear_schedule(optimizer, count, 0.1), device, None)
    progress = Progress("gpu", 1, count, every=float("inf"), write=lambda _: None)
    pad = getattr(config, "pad_token_id", None) or 0
    steps = Steps(opt, o, progress, policy=policy_of(case, device), pad_id=pad)
    data = generated(case["task"], BATCH * count, config.vocab_size, seed=1)
    rows = batching.train_batches(data["length"], BATCH, random.Random(0))
    fmt = BatchFormat(pad_id=pad)
    model.train()

    def run(batches):
        prepare = lambda r: steps.prepare(data["length"], r, lambda p: make_batch(data, p, fmt))  # noqa: E731
        for r, ready in shapes.ahead(batches, prepare, steps.policy.prefetch):
            steps.step(data["length"], r, None, lambda loss: loss, prepared=ready)

    return steps, rows, run


def train_run(case: dict, device, warmup: int, count: int, smoke: bool = False) -> dict:
    """Samples/s of `count` steps after `warmup` (compile and first shapes included there)."""
    fresh(device)
    with engine.attention_backends(device, policy_of(case, device).attention_backend):
        started = time.perf_counter()
        steps, rows, run = train_steps(case, device, smoke, warmup + count)
        run(rows[:warmup])
        sync(device)
        warm_s = time.perf_counter() - started
        start = time.perf_counter()
        run(rows[warmup:])
        sync(device)
        seconds = time.perf_counter() - start
    losses = torch.stack(steps.pending).float().tolist() if steps.pending else []
    return {
        **case,
        "what": "train",
        "runs_as": steps.precision,
        "batch_shapes": steps.policy.batch_shapes,
        "optimizer_kernel": steps.policy.optimizer_kernel or case.get("optimizer"),
        "samples_per_s": round(count * BATCH / seconds, 1),
        "step_ms": round(1000 * seconds / count, 2),
        "warmup_s": round(warm_s, 2),
        "peak_memory_mb": devices.peak_memory_mb(device),
        "final_loss": round(losses[-1], 4) if losses else None,
    }


def eval_run(case: dict, device, batches: int, size: int, smoke: bool = False) -> dict:
    """Samples/s of `predict` over `batches` batches of `size` after two warm-up batches."""
    fresh(device)
    precision = devices.choose_precision(case["precision"], device)
    devices.configure(device, precision)
    policy = policy_of(case, device)
    with engine.attention_backends(device, policy.attention_backend):
        model, config = build_model(case, device, smoke)
        pad = getattr(config, "pad_token_id", None) or 0
        if policy.batch_shapes == "padding_free":
            padding_free.enable(model)
        shaped = shapes.for_policy(policy, model, device, pad, MAX_LENGTH)
        spec, fmt = SPEC[case["task"]], BatchFormat(pad_id=pad)
        data = generated(case["task"], size * batches, config.vocab_size, seed=2)
        warm = generated(case["task"], size * 2, config.vocab_size, seed=3)
        predict(model, spec, warm, size, fmt, device, precision, shaped)
        sync(device)
        start = time.perf_counter()
        predict(model, spec, data, size, fmt, device, precision, shaped)
        sync(device)
        seconds = time.perf_counter() - start
    return {
        **case,
        "what": "eval",
        "runs_as": precision,
        "eval_batch_size": size,
        "samples_per_s": round(len(data["length"]) / seconds, 1),
        "peak_memory_mb": devices.peak_memory_mb(device),
    }


def host_syncs(case: dict, device, smoke: bool = False) -> int | None:
    """Host synchronisations torch reports (set_sync_debug_mode) in three steps after warm-up;
    None off CUDA."""
    if device.type != "cuda":
        return None
    with engine.attention_backends(device, policy_of(case, device).attention_backend):
        steps, rows, run = train_steps(case, device, smoke, 6)
        run(rows[:3])
        sync(device)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode("warn")
            try:
                run(rows[3:])
            finally:
                torch.cuda.set_sync_debug_mode(0)
    return sum("synchroniz" in str(w.message) for w in caught)


def profile_step(case: dict, device, smoke: bool = False) -> dict:
    """One step under torch.profiler after warm-up: wall time, the device's busy time, kernel
    launches and the heaviest operators (what holds a step back)."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with engine.attention_backends(device, policy_of(case, device).attention_backend):
        steps, rows, run = train_steps(case, device, smoke, 6)
        run(rows[:5])
        sync(device)
        with profile(activities=activities) as prof:
            start = time.perf_counter()
            run(rows[5:])
            sync(device)
            wall = time.perf_counter() - start
    events = prof.key_averages()
    on_device = [e for e in events if getattr(e, "self_device_time_total", 0) > 0]
    busy = sum(e.self_device_time_total for e in on_device) / 1e3
    kernels = sum(e.count for e in on_device)
    top = sorted(events, key=lambda e: e.self_cpu_time_total, reverse=True)[:6]
    heavy = sorted(on_device, key=lambda e: e.self_device_time_total, reverse=True)[:6]
    return {
        **case,
        "step_ms": round(1000 * wall, 2),
        "device_busy_ms": round(busy, 2),
        "device_ops": kernels,
        "top_host_ops_ms": {e.key: round(e.self_cpu_time_total / 1e3, 2) for e in top},
        "top_device_ops_ms": {e.key[:60]: round(e.self_device_time_total / 1e3, 2) for e in heavy},
    }


@contextlib.contextmanager
def timed(log: dict, name: str):
    start = time.perf_counter()
    try:
        yield
    finally:
        log[name] = round(time.perf_counter() - start, 1)
