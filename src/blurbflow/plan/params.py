"""A model's size for `snakemake plan`: its parameter count, and the seconds a unit of work costs
at that count before any cell has finished (the prior blurbflow.plan.calibrate starts from).

The count is the model entry's `params`, else computed from its config.json (the local folder,
or the prefetched snapshot in the hub cache), else the typical count of its `size` class. The
prior prices a token by the floating-point operations a transformer spends on it (Kaplan et al.
2020, "Scaling Laws for Neural Language Models", §2.1: 2·N a forward pass; the backward pass
twice that) at one effective rate, FLOPS: a trained token 6·N (forward, gradients of the
activations, gradients of the weights), 4·N under LoRA (the frozen weights get no gradient), +2·N
with gradient checkpointing (the forward again); an evaluated token 2·N. Attention's share
(∝ length, about 5 % at 512 tokens for BASE) is left out.

FLOPS comes from the one published timing of a BLURB task with its hardware stated:
BioM-Transformers (Alrowili & Shanker 2021, Table 3): a BASE model (110 M parameters) on
ChemProt, 3 epochs at batch 32 and length 128, FP16, one RTX 3090, 3:01 with evaluation. Counting
18,035 training instances padded to 128 (the TensorFlow scripts pad every instance to the
length) for 3 epochs and one evaluation of dev + test (27,013 instances) gives
110e6 · (6 · 6,925,440 + 2 · 3,457,664) / 181 s = 29.5 TFLOP/s (benchmarks/gpu.py's REFERENCE is
the same run). A newer GPU is faster: the config's GPU type picks its own rate
(blurbflow.plan.gpus), the first finished cells replace the prior (blurbflow.plan.calibrate),
and `resources` in the config overrides a size class's rate."""

from __future__ import annotations

import os

from blurbflow.cluster import SIZE_PARAMS, params_label
from blurbflow.gpu_share import (  # noqa: F401 (config.json's count is read from here too)
    GATED,
    Shape,
    config_params,
    read_config,
    shape_of,
)

REFERENCE_PARAMS = 110_000_000
REFERENCE_TOKENS = (3 * 18_035 * 128, 27_013 * 128)  # trained, evaluated (padded to 128)
REFERENCE_SECONDS = 181.0
FLOPS = REFERENCE_PARAMS * (6 * REFERENCE_TOKENS[0] + 2 * REFERENCE_TOKENS[1]) / REFERENCE_SECONDS
FLOPS_SOURCE = (
    f"{FLOPS / 1e12:.1f} TFLOP/s: BioM-Transformers (Alrowili & Shanker 2021) Table 3, BASE "
    "ChemProt 3 epochs, bs 32, len 128, FP16, 1x RTX 3090, 3:01"
)
# seconds per seed besides the tokens: reading the model (2 bytes a parameter at 1 GB/s) and
# the inputs, writing predictions (an assumption; finished cells replace it)
SEED_SECONDS, LOAD_SECONDS_PER_PARAM = 30.0, 2e-9


def model_config(name: str, entry: dict, root: str = ".") -> dict | None:
    """The model's config.json: its local folder's, or a prefetched hub (or URL) model's."""
    if entry.get("path"):
        return read_config(os.path.join(root, entry["path"]))
    if entry.get("hub_id") or entry.get("url"):
        return _cached_config(name, entry)
    return None


def model_params(name: str, entry: dict, root: str = ".") -> tuple[int, str]:
    """(parameter count, where it comes from: `params`, `config.json` or `size <class>`)."""
    return _params(entry, None if entry.get("params") else model_config(name, entry, root))


def _params(entry: dict, config: dict | None) -> tuple[int, str]:
    if entry.get("params"):
        return int(entry["params"]), "params"
    counted = config_params(config) if config else None
    if counted:
        return counted, "config.json"
    size = entry.get("size", "base")
    return SIZE_PARAMS.get(size, SIZE_PARAMS["base"]), f"size {size}"


def _cached_config(name: str, entry: dict) -> dict | None:
    """The config.json of a prefetched hub (or URL) model; None before prefetch."""
    from blurbflow.models.prefetch import model_folder, model_settings
    from blurbflow.options import ModelOptions

    try:
        return read_config(model_folder(ModelOptions(**model_settings(name, entry))))
    except Exception:  # not cached yet (ModelNotCached), an unreadable marker: the size class
        return None


def size_key(name: str, entry: dict, root: str = ".") -> tuple[str, int, str]:
    """(the model's size for the plan and its resources, its parameter count, the count's
    source): a counted model's size is its count (`109M`, `6.6B`: blurbflow.cluster
    .params_label), any other's its `size` class."""
    params, source = model_params(name, entry, root)
    if source.startswith("size "):
        return entry.get("size", "base"), params, source
    return params_label(params), params, source


def model_shape(name: str, entry: dict, root: str = ".") -> Shape:
    """What sizes the model's cells in GPU memory (blurbflow.gpu_share): its count as
    `model_params` gives it, its hidden size × layers from config.json where it is there."""
    config = model_config(name, entry, root)
    return shape_of(config, _params(entry, config)[0])


def token_flops(options: dict) -> float:
    """FLOPs per parameter of a trained token for these cell options (CellOptions.to_dict):
    6, 4 under LoRA, +2 with gradient checkpointing. An evaluated token: a third of 6."""
    checkpointing = 2.0 if options.get("gradient_checkpointing") else 0.0
    return (4.0 if options.get("lora") else 6.0) + checkpointing


def prior(params: int, tokens_per_unit: int, flops: float = FLOPS) -> tuple[float, float]:
    """(seconds per seed, seconds per unit of work) at `flops` (a GPU type's:
    blurbflow.plan.gpus) for a model of `params`: a unit is `tokens_per_unit` trained tokens of
    full fine-tuning (6 FLOPs a parameter each)."""
    return SEED_SECONDS + LOAD_SECONDS_PER_PARAM * params, 6.0 * params * tokens_per_unit / flops
