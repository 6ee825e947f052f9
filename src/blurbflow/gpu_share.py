"""How many of a fine-tuning job's seeds train at once on its one GPU, each in its own process
(engine `cells_per_gpu`; blurbflow.train.concurrent runs them), and what that costs and gains.
Torch-free: the job, its SLURM resources (blurbflow.cluster) and `snakemake plan` read it.

`auto` is 1 on the CPU. On CUDA it is a memory rule: a cell holds its model's fp32 weights,
gradients and AdamW's two moments (16 bytes a parameter; 4, or 2 in bf16, for LoRA's frozen
weights, which have neither), the activations its recipe's batch keeps for the backward pass
(34 bytes a token, hidden unit and layer in 16-bit: Korthikanti et al. 2022, "Reducing
Activation Recomputation in Large Transformer Models", §4.1, without the attention scores that
SDPA never keeps; twice that in fp32) and one process's CUDA context and allocator slack;
HEADROOM of the GPU's memory is shared out, at most MAX_CELLS, never more than the seeds left,
nor more processes than the job's host memory and CPUs hold (CPUS_PER_CELL each). The plan and
the SLURM resources price the GPU type they know (a finished cell's, `engine.gpu` or
`slurm.gpu_model`); without one they price one seed at a time, and the job, on whatever GPU
it lands, runs as many as that GPU and its allocation hold.
BERT-base at batch 32 and 128 tokens: 3.0 GB besides the context by this rule, a peak of
3,153 MiB (3.3 GB) measured on the H200 (benchmarks/results/gpu-suite-h200-2026-11-28.json);
4.7 GB with the context: 4 at once on any GPU of 24 GB or more.

GAIN is a prior, not a measurement: the aggregate training throughput of two or more cells on
one GPU against one cell alone. A BERT-base step keeps the H200 busy about a quarter of its
time (docs/engine.md "On a GPU": the step is launch-bound), so another process's kernels have
room; 1.5 is assumed until the GPU suite's runs of 1, 2 and 4 processes (benchmarks/gpu.py)
measure it, as blurbflow.plan.gpus keeps its per-GPU priors. The plan and the jobs' expected
minutes take it; SLURM time limits take none (TIME_LIMIT_GAIN: K seeds at once are priced as
long as K one after another), so a job is never cut short when the prior is too optimistic."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass

GAIN = 1.5  # prior: ≥ 2 cells sharing a GPU train 1.5x as many samples a second as one alone
TIME_LIMIT_GAIN = 1.0  # what SLURM time limits assume: no gain
MAX_CELLS = 4  # `auto`'s cap: beyond it the seeds of a job rarely fill a round
HEADROOM = 0.8  # the share of GPU (and host) memory `auto` fills
PARAM_BYTES, FROZEN_BYTES = 16, 4  # a trained parameter; a frozen one (LoRA) in fp32
ACTIVATION_BYTES = 34  # a token × hidden unit × layer, 16-bit, kept for the backward pass
CONTEXT_BYTES = 3 * 2**29  # 1.5 GiB a process: CUDA context, cuBLAS workspaces, cached blocks
# host side, per process: torch, CUDA's libraries and transformers (a prior), and the model
# read in fp32 before it moves to the GPU (blurbflow.cluster's 8 bytes a parameter)
PROCESS_HOST_MB, HOST_BYTES_PER_PARAM = 3000, 8
CPUS_PER_CELL = 2  # the Python thread that drives the GPU, and the one preparing the next batch
# GPU memory by type (vendors' data sheets; the smaller variant where there are two), for
# the plan's GPU type (blurbflow.options.engine.GPU_PEAK_TFLOPS names them)
GPU_MEMORY_GB = {
    "v100": 16,
    "a10": 24,
    "l4": 24,
    "a40": 48,
    "rtx3090": 24,
    "rtx4090": 24,
    "a100": 40,
    "l40s": 48,
    "h100": 80,
    "h200": 141,
}
# gated feed-forward (3 matrices) and rotary positions (no position table)
GATED = {"llama", "mistral", "mixtral", "qwen2", "qwen3", "gemma", "gemma2", "phi3", "modernbert"}


def config_params(config: dict) -> int | None:
    """The parameter count of a transformer encoder or decoder from its config.json fields
    (embeddings, attention, feed-forward; no output vocabulary projection: a classifier does not
    use it); None when the fields are not there."""
    try:
        hidden = int(config.get("hidden_size") or config.get("d_model") or config["n_embd"])
        layers = int(config.get("num_hidden_layers") or config["n_layer"])
        vocab = int(config["vocab_size"])
    except (KeyError, TypeError, ValueError):
        return None
    inner = int(config.get("intermediate_size") or config.get("n_inner") or 4 * hidden)
    heads = int(config.get("num_attention_heads") or config.get("n_head") or 1)
    head_dim = int(config.get("head_dim") or hidden // heads)
    kv_heads = int(config.get("num_key_value_heads") or heads)
    embedding = int(config.get("embedding_size") or hidden)  # ELECTRA/ALBERT factorised
    positions = 0 if config.get("model_type") in GATED or config.get("rope_theta") else 1
    embeddings = (vocab + positions * int(config.get("max_position_embeddings") or 0)) * embedding
    embeddings += embedding * hidden if embedding != hidden else 0
    attention = 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim
    gated = config.get("model_type") in GATED
    feed_forward = (3 if gated else 2) * hidden * inner
    return embeddings + layers * (attention + feed_forward)


def read_config(folder: str | os.PathLike) -> dict | None:
    """A model folder's config.json, or None."""
    try:
        with open(os.path.join(folder, "config.json")) as handle:
            found = json.load(handle)
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


@dataclass(frozen=True)
class Shape:
    """What sizes a cell's memory: its model's parameters and hidden size × layers."""

    params: int
    width: int


def shape_of(config: dict | None, params: int | None = None) -> Shape | None:
    """The shape from a config.json (`params`: a count given instead); without config.json
    fields the width is estimated from the count (0.05 · N^(2/3): BERT-base 11,480 for 9,216,
    BERT-large 24,100 for 24,576); None when neither tells the count."""
    params = params or (config_params(config) if config else None)
    if not params:
        return None
    config = config or {}
    try:
        hidden = int(config.get("hidden_size") or config.get("d_model") or config["n_embd"])
        width = hidden * int(config.get("num_hidden_layers") or config["n_layer"])
    except (KeyError, TypeError, ValueError):
        width = round(0.05 * params ** (2 / 3))
    return Shape(int(params), width)


def cell_gpu_bytes(shape: Shape, options: dict) -> int:
    """GPU memory one training cell of these options (CellOptions.to_dict) holds."""
    if options.get("lora"):
        weights = shape.params * (2 if options.get("frozen_dtype") == "bf16" else FROZEN_BYTES)
    else:
        weights = shape.params * PARAM_BYTES
    tokens = int(options.get("batch_size") or 32) * int(options.get("max_length") or 512)
    per_token = ACTIVATION_BYTES * shape.width * (2 if options.get("precision") == "fp32" else 1)
    return weights + tokens * per_token + CONTEXT_BYTES


def host_bytes_per_cell(params: int) -> int:
    """Host memory one cell's process holds."""
    return PROCESS_HOST_MB * 10**6 + HOST_BYTES_PER_PARAM * int(params)


def fitting(memory: float, per_cell: float) -> int:
    """How many cells of `per_cell` bytes fit in HEADROOM of `memory` (at least 1)."""
    return max(1, math.floor(HEADROOM * memory / per_cell))


def cells_at_once(
    setting: int | str, seeds: int, gpu_bytes: float | None, per_cell: float | None
) -> int:
    """K for a job with `seeds` to train: a number as given; `auto` by GPU memory (None: no
    GPU, or a model whose size is unknown: 1), at most MAX_CELLS, and the fewest that train
    the seeds in as many rounds (5 seeds 3 and 2, not 4 and one alone); never more than
    `seeds`."""
    if setting != "auto":
        return max(1, min(int(setting), seeds))
    if gpu_bytes is None or not per_cell or seeds < 2:
        return 1
    cells = min(MAX_CELLS, fitting(gpu_bytes, per_cell), seeds)
    return math.ceil(seeds / math.ceil(seeds / cells))


def gpu_bytes(name: str | None) -> int | None:
    """The memory of a GPU type of the table (blurbflow.options.engine.known_gpu's names)."""
    return GPU_MEMORY_GB[name] * 10**9 if name in GPU_MEMORY_GB else None


def gain(cells: float, prior: float = GAIN) -> float:
    """Aggregate throughput of `cells` on one GPU against one alone (1 alone; `prior` from 2
    on, joined linearly between for a time-averaged share)."""
    return 1.0 + (prior - 1.0) * min(1.0, max(0.0, cells - 1.0))


def seed_equivalents(seeds: int, cells: int, prior: float = GAIN) -> float:
    """The GPU time of `seeds` trained `cells` at a time, in seeds trained alone: full rounds
    at `cells`, the rest together."""
    seeds, cells = int(seeds), max(1, int(cells))
    full, rest = divmod(seeds, cells)
    total = full * cells / gain(cells, prior)
    return total + (rest / gain(rest, prior) if rest else 0.0)
