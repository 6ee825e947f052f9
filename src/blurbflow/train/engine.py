"""How a cell computes on its device: the config's `engine` settings (docs/engine.md "On a
GPU"), resolved per cell into the `Policy` that runs and that result.json records.

No setting is a cell option: each changes how a batch is computed, not which batches, so the
numbers differ by kernel rounding at most and editing them re-runs nothing (as the model
entry's `attn_implementation`). `auto`, the default of each, is today's policy on the CPU,
unchanged to the bit, and on CUDA what the H200 figures of docs/engine.md support:
- attention `no_cudnn`: cuDNN's SDPA backend off inside the cell (it builds a graph per input
  shape; flash and memory-efficient SDPA remain): bf16 training 160.8 -> 652.6 samples/s;
- shapes `padded` in bf16/fp16 (one padded pass per batch, not length-sorted micro-batches:
  650.4 against 538.6 samples/s on BC5-chem lengths); fp32 keeps micro-batches;
- optimizer `fused` (torch's fused AdamW kernel, the project's update: blurbflow.train.optim);
- prefetch on (the next batch built and copied while the GPU computes);
- padded widths in buckets of 64 (`pad_multiple`): ChemProt bf16 training 664 -> 771 samples/s,
  evaluation 3,475 -> 6,770 (H200, 2026-11-28, benchmarks/README.md "GPU suite");
- evaluation batches of ~32k tokens (`eval_batch_size`: 256 at 128 tokens, never below the
  recipe's): 3,475 -> 15,073 samples/s at 256 against 64, and no more memory than the recipe's
  64 at 512 tokens.
Opt-in, slower or unmeasured on that run: `padding_free` shapes (150 against 664 samples/s),
`cudnn_ragged` attention (544), a compiled model (`compile`: 1,249 samples/s after 36 s of
compilation per process; its shapes, CUDA graphs and shared compile cache: train/compiled.py)."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field

import torch

from blurbflow.options.engine import (  # noqa: F401 (the choices are read from here too)
    ATTENTION,
    KERNELS,
    SHAPES,
    Settings,
)
from blurbflow.train.compiled import GRAPH_MODES
from blurbflow.util import paths

RAGGED_ENV = "TORCH_CUDNN_SDPA_AVOID_RECOMPILE"
BUCKET = 64  # `pad_multiple: auto` on CUDA for padded batches
EVAL_TOKENS = 256 * 128  # `eval_batch_size: auto` on CUDA: tokens per evaluation batch


_settings = Settings()


def use(given: dict | None) -> None:
    """Set the job's engine settings (steps.finetune, from the config's `engine`)."""
    global _settings
    _settings = Settings.from_config(given)


def current() -> Settings:
    return _settings


@dataclass(frozen=True)
class Policy:
    """What a cell runs; result.json records `attention_backend`, `batch_shapes` and the rest
    under `engine`."""

    attention_backend: str  # torch (its own choice), no_cudnn, cudnn_ragged
    batch_shapes: str  # micro_batches, packed (CPU token tasks), padded, padding_free
    pad_multiple: int = 1
    optimizer_kernel: str | None = None  # None: the optimizer's own default for the device
    compiled: bool | str = False  # False, or the torch.compile backend
    compile_mode: str = "default"  # torch.compile's mode where compiled
    prefetch: bool = False
    eval_batch_size: int | None = None  # None: the recipe's
    compile_cache: str | None = None  # where compiled: the cache folder (None: torch's own)
    # the compiled cell's cache as it runs (blurbflow.train.compiled.CompileCache), set by Steps
    cache: object | None = field(default=None, compare=False, repr=False)

    @property
    def bucketed(self) -> bool:
        """Whether batches come in a few bucket widths: one padded pass, widths rounded up."""
        return self.batch_shapes == "padded" and self.pad_multiple > 1

    @property
    def graphs(self) -> bool:
        """Whether the compiled model replays CUDA graphs (on CUDA; elsewhere inductor runs
        without them and what the graphs need costs nothing)."""
        return self.compiled == "inductor" and self.compile_mode in GRAPH_MODES

    def record(self) -> dict:
        fields = {
            "pad_multiple": self.pad_multiple,
            "optimizer_kernel": self.optimizer_kernel,
            "compiled": self.compiled,
            "compile_mode": self.compile_mode,
            "prefetch": self.prefetch,
            "eval_batch_size": self.eval_batch_size,
        }
        if self.compiled:  # where its kernels came from (blurbflow.train.compiled)
            fields["compile_cache"] = self.cache.record() if self.cache else None
        return fields


def result_fields(policy: Policy | None) -> dict:
    """result.json's fields of the policy that ran (none when no step was set up)."""
    if policy is None:
        return {}
    return {
        "attention_backend": policy.attention_backend,
        "batch_shapes": policy.batch_shapes,
        "engine": policy.record(),
    }


def resolve(
    settings: Settings,
    device: torch.device,
    precision: str,
    batching: str,
    packs: bool,
    padding_free: bool,
    max_length: int | None = None,
    eval_batch_size: int | None = None,
) -> Policy:
    """The policy of a cell on `device` running `precision`; `batching`: the recipe's option
    (`random`: one pass per batch), `packs`: whether its model packs token batches on the
    CPU (blurbflow.train.packing), `padding_free`: whether it can run padding-free
    (blurbflow.models.padding_free.supports); `max_length` and `eval_batch_size`: the
    recipe's, for `eval_batch_size: auto` (without them, the recipe's batch)."""
    cuda = device.type == "cuda"
    attention = attention_backend(settings, device)
    shapes = settings.shapes
    if shapes == "auto":
        shapes = "padded" if cuda and precision in ("bf16", "fp16") else "micro_batches"
    if (batching == "random" and shapes == "micro_batches") or (
        shapes == "padding_free" and not padding_free
    ):
        shapes = "padded"  # `random` computes a batch in one pass, padded or padding-free
    if shapes == "micro_batches" and packs:
        shapes = "packed"
    prefetch = cuda if settings.prefetch == "auto" else bool(settings.prefetch)
    kernel = None if settings.optimizer == "auto" else settings.optimizer
    return Policy(
        attention_backend=attention,
        batch_shapes=shapes,
        pad_multiple=pad_multiple(settings, cuda, shapes),
        optimizer_kernel=kernel,
        compiled=compile_backend(settings.compile),
        compile_mode=settings.compile_mode if settings.compile else "default",
        prefetch=prefetch,
        eval_batch_size=evaluation_batch(settings, cuda, max_length, eval_batch_size),
        compile_cache=compile_cache(settings) if settings.compile else None,
    )


def pad_multiple(settings: Settings, cuda: bool, shapes: str) -> int:
    """The bucket width the cell's batches are padded to a multiple of (1: none)."""
    if settings.pad_multiple != "auto":
        return int(settings.pad_multiple or 1)
    return BUCKET if cuda and shapes == "padded" else 1


def evaluation_batch(
    settings: Settings, cuda: bool, max_length: int | None, recipe_batch: int | None
) -> int | None:
    """The evaluation batch size the cell runs (None: the recipe's)."""
    if settings.eval_batch_size != "auto":
        return settings.eval_batch_size
    if not cuda or not max_length or not recipe_batch:
        return None
    return max(recipe_batch, EVAL_TOKENS // max_length)


def attention_backend(settings: Settings, device: torch.device) -> str:
    """The SDPA backends a cell on `device` runs with (the CPU has one choice: torch's)."""
    if device.type != "cuda":
        return "torch"
    return "no_cudnn" if settings.attention == "auto" else settings.attention


def compile_cache(settings: Settings) -> str | None:
    """The compile cache folder, relative to the run's folder (None: torch's own)."""
    given = settings.compile_cache
    return paths.COMPILE_CACHE if given == "auto" else given


def compile_backend(given: bool | str) -> bool | str:
    """torch.compile's backend for the setting `compile` (False: not compiled)."""
    if given is True:
        return "inductor"
    return given or False


@contextlib.contextmanager
def attention_backends(device: torch.device, backend: str | None = None):
    """The cell's SDPA backends on CUDA: cuDNN's off (`no_cudnn`), or on with its ragged,
    graph-reusing path (`cudnn_ragged`: TORCH_CUDNN_SDPA_AVOID_RECOMPILE=1, read by torch when a
    cuDNN attention graph is first built in the process); restored after. The CPU has no
    cuDNN attention: nothing changes there. `backend`: None, the job's settings'."""
    backend = backend or attention_backend(_settings, device)
    if device.type != "cuda" or backend == "torch":
        yield
        return
    before = torch.backends.cuda.cudnn_sdp_enabled()
    env = os.environ.get(RAGGED_ENV)
    ragged = backend == "cudnn_ragged"
    torch.backends.cuda.enable_cudnn_sdp(ragged)
    if ragged:
        os.environ[RAGGED_ENV] = "1"
    try:
        yield
    finally:
        torch.backends.cuda.enable_cudnn_sdp(before)
        if ragged and env is None:
            os.environ.pop(RAGGED_ENV, None)
