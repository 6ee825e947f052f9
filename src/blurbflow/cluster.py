"""What one fine-tuning job asks a cluster for: a GPU, CPUs, memory and a time limit by model
size, task and number of seeds, scaled by Snakemake's `attempt` so a retried (timed-out) job
gets more time, and capped at the partition's limit (config `slurm.max_runtime`): a job cut off
there checkpoints on SIGTERM, keeps its finished seeds and resumes on retry.
The table below is the default (rough GPU figures: calibrate them from the `wall_seconds` of
your results); a config's `resources` mapping overrides any entry."""

from __future__ import annotations

import math

from blurbflow.tasks import get_task

# model size -> (cpus, mem_mb, minutes per 1,000 training instances per epoch)
SIZES = {
    "tiny": (1, 4000, 0.05),
    "small": (4, 16000, 0.1),
    "base": (8, 32000, 0.2),
    "large": (8, 64000, 0.6),
}
MAX_RUNTIME = 2880  # minutes; config `slurm.max_runtime` sets the partition's real limit
# typical training-set sizes, to turn epochs into minutes before any data is prepared
TRAIN_INSTANCES = {
    "bc5chem": 4560,
    "bc5disease": 4560,
    "ncbidisease": 5424,
    "bc2gm": 12574,
    "jnlpba": 18607,
    "ebmpico": 33000,
    "chemprot": 18035,
    "ddi": 25296,
    "gad": 4261,
    "biosses": 64,
    "hoc": 1295,
    "pubmedqa": 450,
    "bioasq": 670,
}
MIN_MINUTES, JOB_OVERHEAD_MINUTES, SEED_OVERHEAD_MINUTES = 15, 5, 3
# Jobs packed several to a submission (`group-components` in slurm/profile.yaml): minutes of
# GPU work each, where queue wait and start-up would otherwise dominate.
SHORT_TASKS = ("biosses", "pubmedqa", "bioasq")
SHORT_SUBSAMPLE = 1000
SHORT_GROUP = "short-cells"


def cell_resources(
    options: dict,
    size: str,
    attempt: int = 1,
    overrides: dict | None = None,
    seeds: int = 1,
    max_runtime: int = MAX_RUNTIME,
) -> dict:
    """Snakemake resources of one job running `seeds` cells one after the other (gpu,
    cpus_per_task, mem_mb, runtime in minutes)."""
    table = {**SIZES, **{k: tuple(v) for k, v in (overrides or {}).items()}}
    if size not in table:
        raise KeyError(f"resources: no entry for model size {size!r}; known: {sorted(table)}")
    cpus, mem_mb, per_thousand = table[size]
    task = get_task(options["task"]).name
    instances = options.get("train_subsample") or TRAIN_INSTANCES[task]
    length_factor = options.get("max_length", 512) / 256
    per_seed = (
        SEED_OVERHEAD_MINUTES
        + options["epochs"] * instances / 1000 * per_thousand * length_factor
    )
    minutes = JOB_OVERHEAD_MINUTES + seeds * per_seed
    return {
        "gpu": 1,
        "cpus_per_task": cpus,
        "mem_mb": mem_mb,
        "runtime": min(math.ceil(max(MIN_MINUTES, minutes)) * attempt, max_runtime),
    }


def is_short(options: dict) -> bool:
    """BIOSSES, the QA tasks and low-resource subsets: minutes per seed even on large models."""
    subsample = options.get("train_subsample")
    low_resource = subsample is not None and subsample <= SHORT_SUBSAMPLE
    return options["task"] in SHORT_TASKS or low_resource
