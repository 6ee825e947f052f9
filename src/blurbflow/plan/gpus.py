"""The plan's prior per GPU type: the effective rate at which a type runs the reference job of
blurbflow.plan.params (BASE on ChemProt, 3 epochs, batch 32, length 128, dev and test scored),
in that module's FLOP/s. The config's `engine.gpu`, else the profile's GPU type
(`slurm.gpu_model`, the gres type) where the table knows it, picks the row; without either the
plan keeps the RTX 3090's published rate, as before.

Measured: the RTX 3090 (BioM-Transformers, Table 3: 181 s, FP16) and the H200 (92 s:
benchmarks/gpu.py on 2026-11-28 with this engine's CUDA policy, bf16, cuDNN attention off,
torch's fused AdamW, from its measured training and evaluation rates; docs/engine.md "On a
GPU"). Every other row is scaled from those two by its dense 16-bit tensor-core peak (the
vendors' data sheets, FP32 accumulation) through the power law that joins them: rate ∝
peak^0.26, since fine-tuning at batch 32 is bound by kernel launches, not arithmetic (the H200
has 14× the 3090's peak and runs the job 2× as fast). Finished cells replace the prior
(blurbflow.plan.calibrate).

How many of a job's seeds the plan and the job's resources price at once on its GPU
(`planned_cells`): engine.cells_per_gpu, on `auto` by the memory (blurbflow.gpu_share) of the
GPU its rate comes from, else of the configured type; 1 without a GPU type whose memory the
table knows, and where its cells were calibrated on the CPU."""

from __future__ import annotations

import math
from dataclasses import dataclass

from blurbflow import gpu_share
from blurbflow.options.engine import GPU_PEAK_TFLOPS, known_gpu
from blurbflow.plan import params as sizing

# seconds of the reference job, where measured: (seconds, source)
MEASURED = {
    "rtx3090": (sizing.REFERENCE_SECONDS, "BioM-Transformers Table 3, FP16"),
    "h200": (92.0, "benchmarks/gpu.py on an H200, 2026-11-28, bf16 (docs/engine.md)"),
}
DEFAULT = "rtx3090"  # the row of blurbflow.plan.params.FLOPS: the prior when none is configured
PEAK_TFLOPS = GPU_PEAK_TFLOPS  # the table lives with the settings that name a GPU type


@dataclass(frozen=True)
class Gpu:
    name: str
    flops: float  # the reference job's work / its seconds (blurbflow.plan.params.FLOPS's unit)
    measured: bool
    source: str

    @property
    def describe(self) -> str:
        how = "measured" if self.measured else "scaled from the RTX 3090 and H200 by peak"
        return f"{self.flops / 1e12:.1f} TFLOP/s on {self.name} ({how}: {self.source})"


def _rate(seconds: float) -> float:
    return sizing.FLOPS * sizing.REFERENCE_SECONDS / seconds


def _exponent() -> float:
    (low, high) = ("rtx3090", "h200")
    gain = MEASURED[low][0] / MEASURED[high][0]
    return math.log(gain) / math.log(PEAK_TFLOPS[high] / PEAK_TFLOPS[low])


EXPONENT = _exponent()


def row(name: str) -> Gpu:
    """The row of a known GPU type (`known` resolves a site's name)."""
    if name in MEASURED:
        seconds, source = MEASURED[name]
        return Gpu(name, _rate(seconds), True, source)
    base = _rate(MEASURED["rtx3090"][0])
    flops = base * (PEAK_TFLOPS[name] / PEAK_TFLOPS["rtx3090"]) ** EXPONENT
    return Gpu(name, flops, False, f"{PEAK_TFLOPS[name]:g} TFLOP/s peak")


known = known_gpu  # a site's or torch's name for a GPU type -> the table's, or None


def configured(config: dict) -> Gpu | None:
    """The prior's GPU: `engine.gpu` (a name the table does not know is an error naming the
    key), else `slurm.gpu_model` where the table knows it; None: the published RTX 3090 rate."""
    given = (config.get("engine") or {}).get("gpu")
    if given:
        name = known(given)
        if name is None:
            raise ValueError(
                f"engine.gpu: {given!r} is no GPU type the plan knows; use one of "
                f"{', '.join(PEAK_TFLOPS)} (the nearest, for `snakemake plan`)"
            )
        return row(name)
    name = known((config.get("slurm") or {}).get("gpu_model"))
    return row(name) if name else None


def planned_cells(
    config: dict, options: dict, seeds: int, shape: gpu_share.Shape | None, device: str | None
) -> int:
    """K for a job of `seeds` seeds still to train with these options (CellOptions.to_dict)
    on a model of `shape`, its cells priced on `device` (a finished cell's device name, the
    plan's TABLE_DEVICE or None: the configured GPU type)."""
    setting = (config.get("engine") or {}).get("cells_per_gpu", "auto")
    if setting == "auto" and device == "cpu":
        return 1
    name = known(device)
    if name not in gpu_share.GPU_MEMORY_GB:
        found = configured(config)
        name = found.name if found else None
    per_cell = gpu_share.cell_gpu_bytes(shape, options) if shape else None
    return gpu_share.cells_at_once(setting, seeds, gpu_share.gpu_bytes(name), per_cell)
