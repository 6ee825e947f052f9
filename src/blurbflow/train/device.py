"""Where and in what arithmetic a cell computes (recipe option `precision`).

CUDA when present, else the CPU in float32 (CPU runs stay bit-for-bit reproducible). On a GPU:
`bf16` autocasts to bfloat16 where the GPU does it natively (Ampere and later); elsewhere it falls
back to float16 with a gradient scaler, as `fp16` always does (bfloat16 emulated on older GPUs is
slower than float32). `fp32` is plain float32 with TF32 matmuls off, the arithmetic of the papers'
V100-era float32 runs. `bf16` is the default: about twice float32's speed on current GPUs, and
float32's exponent range, so there is no loss scaling and no float16 overflow that could pass for
the fine-tuning instability the stability studies measure.
"""

from __future__ import annotations

import contextlib
import resource

import torch

PRECISIONS = ("bf16", "fp16", "fp32")
AUTOCAST = {"bf16": torch.bfloat16, "fp16": torch.float16}


def select_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def choose_precision(requested: str, device: torch.device) -> str:
    """The arithmetic a cell asking for `requested` gets on `device`."""
    if requested not in PRECISIONS:
        raise ValueError(f"precision: unknown {requested!r}; use one of {', '.join(PRECISIONS)}")
    if device.type != "cuda" or requested == "fp32":
        return "fp32"
    if requested == "bf16" and torch.cuda.is_bf16_supported(including_emulation=False):
        return "bf16"
    return "fp16"


def configure(device: torch.device, precision: str) -> None:
    """TF32 matmuls for the float32 parts of mixed precision; off for true float32."""
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = precision != "fp32"
        torch.backends.cudnn.allow_tf32 = precision != "fp32"


def grad_scaler(precision: str):
    """float16's loss scaler (gradients would underflow without it); None otherwise."""
    return torch.amp.GradScaler("cuda") if precision == "fp16" else None


def autocast(device: torch.device, precision: str | None = None):
    precision = precision or choose_precision("bf16", device)
    if device.type == "cuda" and precision in AUTOCAST:
        return torch.autocast("cuda", dtype=AUTOCAST[precision])
    return contextlib.nullcontext()


def backward(loss: torch.Tensor, scaler) -> None:
    (scaler.scale(loss) if scaler is not None else loss).backward()


def optimizer_step(model, optimizer, scaler, max_grad_norm: float | None) -> None:
    """Clip (on unscaled gradients) and step; the scaler skips steps with inf/NaN gradients."""
    if scaler is not None:
        scaler.unscale_(optimizer)
    if max_grad_norm:
        clip_gradients(list(model.parameters()), max_grad_norm)
    if scaler is not None:
        scaler.step(optimizer)
        scaler.update()
    else:
        optimizer.step()


def host_reads_free(device: torch.device) -> bool:
    """Whether reading a value of `device` on the host costs nothing (the CPU's own memory); on
    a GPU it waits for every queued kernel, so a step never does it (tests/test_host_syncs.py)."""
    return device.type == "cpu"


def clip_gradients(params: list[torch.Tensor], max_norm: float) -> None:
    """torch's clip_grad_norm_, which always multiplies every gradient by min(1, max/norm) so a
    GPU need not wait to read the norm; where the gradients live on the CPU the norm is read
    anyway, and the multiplication (a pass over every gradient) is skipped when it is by 1.
    MiniLM-L6, 2 threads: 5.7 ms a step instead of 11.8."""
    grads = [p.grad for p in params if p.grad is not None]
    if not grads or not host_reads_free(grads[0].device):
        torch.nn.utils.clip_grad_norm_(params, max_norm)
        return
    norm = torch.nn.utils.get_total_norm(grads)
    if max_norm / (float(norm) + 1e-6) < 1.0:  # torch's coefficient, clamped at 1
        torch.nn.utils.clip_grads_with_norm_(params, max_norm, norm)


def to_device(batch: dict, device: torch.device) -> dict:
    """The batch on `device`, copied from pinned memory (the host does not wait)."""
    from blurbflow.models.padding_free import to_device as tensor_to

    if device.type == "cpu":
        return batch
    return {k: tensor_to(v, device) for k, v in batch.items()}


def peak_memory_mb(device: torch.device) -> float:
    if device.type == "cuda":
        return round(torch.cuda.max_memory_allocated(device) / 2**20, 1)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
