"""What one fine-tuning job asks a cluster for: a GPU, CPUs, memory and a time limit by model
size, task and number of seeds, scaled by Snakemake's `attempt` so a retried (timed-out) job
gets more time, and capped at the partition's limit (config `slurm.max_runtime`): a job cut off
there checkpoints on SIGTERM, keeps its finished seeds and resumes on retry.
The table below is the default (rough GPU figures: calibrate them from the `wall_seconds` of
your results); a config's `resources` mapping overrides any entry."""

from __future__ import annotations

import json
import math
from pathlib import Path

from blurbflow.options import CellOptions
from blurbflow.tasks import get_task

# model size -> (cpus, mem_mb, minutes per 1,000 training instances per epoch)
SIZES = {
    "tiny": (1, 4000, 0.05),
    "small": (4, 16000, 0.1),
    "base": (8, 32000, 0.2),
    "large": (8, 64000, 0.6),
}
MAX_RUNTIME = 2880  # minutes; config `slurm.max_runtime` sets the partition's real limit
# A user task without `size` before its data is prepared (then stats.json tells).
UNKNOWN_INSTANCES = 10_000
MIN_MINUTES, JOB_OVERHEAD_MINUTES, SEED_OVERHEAD_MINUTES = 15, 5, 3
# Jobs packed several to a submission (`group-components` in slurm/profile.yaml): minutes of
# GPU work each, where queue wait and start-up would otherwise dominate: tasks (or subsets) of
# at most this many training instances (BIOSSES, PubMedQA, BioASQ).
SHORT_SUBSAMPLE = 1000
SHORT_GROUP = "short-cells"


def size_row(size: str, overrides: dict | None = None) -> tuple[int, int, float]:
    """(cpus, mem_mb, minutes per 1,000 instances per epoch) of a model size; a config's
    `resources` mapping overrides the table."""
    table = {**SIZES, **{k: tuple(v) for k, v in (overrides or {}).items()}}
    if size not in table:
        raise KeyError(f"resources: no entry for model size {size!r}; known: {sorted(table)}")
    return table[size]


def estimated_minutes(
    options: CellOptions, size: str, overrides: dict | None = None, seeds: int = 1
) -> float:
    """A job's expected minutes: its time limit before the floor, the cap and `attempt`, and
    its scheduling priority (longest first, so that cores or GPUs do not wait on a long job
    started last)."""
    return _minutes(options, size_row(size, overrides)[2], seeds)


def _minutes(options: CellOptions, per_thousand: float, seeds: int) -> float:
    instances = options.train_subsample or train_instances(options.task)
    length_factor = options.max_length / 256
    per_seed = (
        SEED_OVERHEAD_MINUTES + options.epochs * instances / 1000 * per_thousand * length_factor
    )
    return JOB_OVERHEAD_MINUTES + seeds * per_seed


def cell_resources(
    options: CellOptions,
    size: str,
    attempt: int = 1,
    overrides: dict | None = None,
    seeds: int = 1,
    max_runtime: int = MAX_RUNTIME,
) -> dict:
    """Snakemake resources of one job running `seeds` cells one after the other (gpu,
    cpus_per_task, mem_mb, runtime in minutes)."""
    cpus, mem_mb, per_thousand = size_row(size, overrides)
    minutes = _minutes(options, per_thousand, seeds)
    return {
        "gpu": 1,
        "cpus_per_task": cpus,
        "mem_mb": mem_mb,
        "runtime": min(math.ceil(max(MIN_MINUTES, minutes)) * attempt, max_runtime),
    }


def train_instances(task: str, data_root: str = "resources/data") -> int:
    """The task's training-set size: its entry's `size`, else the prepared stats.json, else a
    rough guess (a user task whose data is not prepared yet)."""
    spec = get_task(task)
    if spec.size:
        return int(spec.size)
    stats = Path(data_root) / task / "stats.json"
    try:
        return int(json.loads(stats.read_text())["splits"]["train"]["instances"])
    except (OSError, ValueError, KeyError, TypeError):
        return UNKNOWN_INSTANCES


def is_short(options: CellOptions) -> bool:
    """Small tasks (BIOSSES, the QA tasks) and low-resource subsets: minutes per seed even on
    large models."""
    instances = options.train_subsample or train_instances(options.task)
    return instances <= SHORT_SUBSAMPLE


def submission_group(options: CellOptions) -> str | None:
    """`short-cells` for a short job that waits on no other fine-tuning job. A job after a
    hyperparameter selection (`hparams_from`) or another cell's weights (`init_from`) submits
    alone: with its sources in the same group (search → selection → final model), the group
    would wait on itself, which Snakemake refuses."""
    if options.selection_file or options.init_from:
        return None
    return SHORT_GROUP if is_short(options) else None
