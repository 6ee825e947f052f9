"""The config's `engine` settings as typed values, checked when the config is read (torch-free:
reading the workflow never imports torch). blurbflow.train.engine resolves them per cell into
the policy that runs; docs/engine.md "On a GPU" says what each does and why its default.

Every choice is listed here once: the config's schema, the reference page and the checks read
these tuples, so a typo (`compile: inductr`, `gpu: z999`) stops the dry run naming the key and
the choices instead of failing on every GPU later."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from importlib.metadata import entry_points

from blurbflow.util.errors import ConfigError

ATTENTION = ("auto", "torch", "no_cudnn", "cudnn_ragged")
SHAPES = ("auto", "micro_batches", "padded", "padding_free")
KERNELS = ("auto", "loop", "foreach", "fused")
# torch.compile's backends that train a model (torch._dynamo.list_backends(exclude_tags=())
# without its debugging and testing ones; tests/test_engine_settings.py checks them against
# the installed torch); a package may register more (entry points `torch_dynamo_backends`)
COMPILE_BACKENDS = (
    "inductor",
    "cudagraphs",
    "eager",
    "aot_eager",
    "aot_eager_decomp_partition",
    "aot_eager_default_partitioner",
    "aot_ts",
    "ts",
    "openxla",
    "tvm",
)
# torch.compile's modes (torch._inductor.list_mode_options()); reduce-overhead replays CUDA
# graphs, one per input shape: the bucket widths (`pad_multiple`) keep them few
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
# GPU types the plan prices (dense 16-bit tensor-core TFLOP/s, FP32 accumulation, from the
# vendors' data sheets; blurbflow.plan.gpus), and names sites write for some of them
GPU_PEAK_TFLOPS = {
    "v100": 125.0,
    "a10": 125.0,
    "l4": 121.0,
    "a40": 149.7,
    "rtx3090": 71.0,
    "rtx4090": 165.2,
    "a100": 312.0,
    "l40s": 362.0,
    "h100": 989.0,
    "h200": 989.0,
}
GPU_ALIASES = {"3090": "rtx3090", "4090": "rtx4090"}


def compile_backends() -> tuple[str, ...]:
    """The backends `compile` may name: torch's, and those installed packages register."""
    plugins = tuple(e.name for e in entry_points(group="torch_dynamo_backends"))
    return COMPILE_BACKENDS + tuple(p for p in plugins if p not in COMPILE_BACKENDS)


def known_gpu(given: str | None) -> str | None:
    """The table's name for a GPU type as a site or torch writes it (`a100`,
    `nvidia_h100_80gb_hbm3`, `NVIDIA H200`, `rtx_3090`), or None."""
    if not given:
        return None
    text = re.sub(r"[^a-z0-9]", "", str(given).lower())
    for name in sorted({*GPU_PEAK_TFLOPS, *GPU_ALIASES}, key=len, reverse=True):
        if name in text:
            return GPU_ALIASES.get(name, name)
    return None


@dataclass(frozen=True)
class Settings:
    """The config's `engine` mapping (workflow/schemas/config.schema.yaml describes each)."""

    attention: str = "auto"
    shapes: str = "auto"
    pad_multiple: int | str = "auto"
    eval_batch_size: int | str | None = "auto"
    optimizer: str = "auto"
    compile: bool | str = False  # true: torch.compile's default backend (inductor); or a name
    compile_mode: str = "default"
    compile_cache: str | None = "auto"  # auto: resources/compile-cache; null: torch's own
    cells_per_gpu: int | str = "auto"  # seeds of a job run at once on its one GPU
    prefetch: str | bool = "auto"
    gpu: str | None = None  # the plan's GPU type (blurbflow.plan.gpus); the cell ignores it

    @classmethod
    def from_config(cls, given: dict | None) -> Settings:
        """The settings of `engine:`; a ConfigError naming the key and the choices."""
        given = dict(given or {})
        known = sorted(f.name for f in dataclasses.fields(cls))
        if unknown := sorted(set(given) - set(known)):
            raise ConfigError(
                f"engine: unknown key(s) {', '.join(unknown)}; use {', '.join(known)}"
            )
        choices = {
            "attention": ATTENTION,
            "shapes": SHAPES,
            "optimizer": KERNELS,
            "compile_mode": COMPILE_MODES,
        }
        for key, allowed in choices.items():
            if key in given and given[key] not in allowed:
                raise ConfigError(
                    f"engine.{key}: unknown {given[key]!r}; use one of {', '.join(allowed)}"
                )
        backend = given.get("compile", False)
        if not isinstance(backend, bool) and backend not in compile_backends():
            raise ConfigError(
                f"engine.compile: {backend!r} is no torch.compile backend; use true (inductor), "
                f"false or one of {', '.join(compile_backends())}"
            )
        mode = given.get("compile_mode", "default")
        if mode != "default" and isinstance(backend, str) and backend != "inductor":
            raise ConfigError(
                f"engine.compile_mode: {mode!r} is a mode of inductor's; use compile: true "
                f"(inductor), or compile_mode: default with compile: {backend!r}"
            )
        for key in ("pad_multiple", "eval_batch_size", "cells_per_gpu"):
            value = given.get(key)
            if value not in (None, "auto") and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise ConfigError(f"engine.{key}: {value!r} is not auto or a whole number ≥ 1")
        if given.get("cells_per_gpu", "auto") is None:
            raise ConfigError("engine.cells_per_gpu: null; use auto or a whole number ≥ 1")
        cache = given.get("compile_cache", "auto")
        if cache is not None and (not isinstance(cache, str) or not cache.strip()):
            raise ConfigError(
                f"engine.compile_cache: {cache!r}; use auto, a folder, or null (torch's own)"
            )
        if given.get("prefetch", "auto") not in ("auto", True, False):
            raise ConfigError(f"engine.prefetch: {given['prefetch']!r}; use auto, true or false")
        gpu = given.get("gpu")
        if gpu is not None and known_gpu(gpu) is None:
            raise ConfigError(
                f"engine.gpu: {gpu!r} is no GPU type the plan knows; use one of "
                f"{', '.join(GPU_PEAK_TFLOPS)} (the nearest, for `snakemake plan`)"
            )
        return cls(**given)
