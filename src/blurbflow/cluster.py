"""What one fine-tuning job asks a cluster for: a GPU, CPUs, memory and a time limit by model
size, task, number of seeds and how many of them share the GPU at once (blurbflow.gpu_share),
scaled by Snakemake's `attempt` so a retried (timed-out) job gets more time, and capped at the
partition's limit (config `slurm.max_runtime`): a job cut off there checkpoints on SIGTERM,
keeps its finished seeds and resumes on retry.
The table below is the default (rough GPU figures: calibrate them from the `wall_seconds` of
your results); a config's `resources` mapping overrides any entry."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from blurbflow.gpu_share import (
    CPUS_PER_CELL,
    GAIN,
    TIME_LIMIT_GAIN,
    host_bytes_per_cell,
    seed_equivalents,
)
from blurbflow.options import CellOptions
from blurbflow.tasks import get_task
from blurbflow.util.errors import ConfigError

# model size -> (cpus, mem_mb, minutes per 1,000 training instances per epoch)
SIZES = {
    "tiny": (1, 4000, 0.05),
    "small": (4, 16000, 0.1),
    "base": (8, 32000, 0.2),
    "large": (8, 64000, 0.6),
}
# the parameter count of a size class whose model's config cannot be read: BERT-tiny/-small
# (Turc et al. 2019), BERT-base and BERT-large (Devlin et al. 2019)
SIZE_PARAMS = {"tiny": 4_400_000, "small": 29_000_000, "base": 110_000_000, "large": 335_000_000}
# A counted model below these parameter counts asks the CPUs and memory of that class.
COUNTED_CLASSES = (("tiny", 20e6), ("small", 60e6))
MAX_RUNTIME = 2880  # minutes; config `slurm.max_runtime` sets the partition's real limit
# A user task without `size` before its data is prepared (then stats.json tells).
UNKNOWN_INSTANCES = 10_000
MIN_MINUTES, JOB_OVERHEAD_MINUTES, SEED_OVERHEAD_MINUTES = 15, 5, 3
# Jobs packed several to a submission (`group-components` in slurm/profile.yaml): minutes of
# GPU work each, where queue wait and start-up would otherwise dominate: tasks (or subsets) of
# at most this many training instances (BIOSSES, PubMedQA, BioASQ).
SHORT_SUBSAMPLE = 1000
SHORT_GROUP = "short-cells"


def params_label(params: float) -> str:
    """A parameter count as a model size (`109M`, `6.6B`; blurbflow.plan.params.size_key)."""
    if params >= 1e9:
        return f"{params / 1e9:.1f}B"
    if params >= 1e6:
        return f"{params / 1e6:.0f}M"
    return f"{max(params, 1e3) / 1e6:.3f}M"  # a tiny test model: 0.041M, never 0M


def label_params(size: str) -> float | None:
    """The parameter count a `params_label` size stands for; None for a size class."""
    found = re.fullmatch(r"(\d+(?:\.\d+)?)([MB])", size)
    return float(found[1]) * (1e6 if found[2] == "M" else 1e9) if found else None


def size_row(size: str, overrides: dict | None = None) -> tuple[int, int, float]:
    """(cpus, mem_mb, minutes per 1,000 instances per epoch) of a model size; a config's
    `resources` mapping overrides the table. A size given as a parameter count (`6.6B`) takes
    BASE's minutes scaled by the count (BASE: 110M), the CPUs and memory of its class by count
    (COUNTED_CLASSES: a test model of 41k parameters asks what `tiny` asks) and 8 bytes of host
    memory a parameter (loading in fp32, then moved), at least its class's."""
    table = {**SIZES, **{k: tuple(v) for k, v in (overrides or {}).items()}}
    if size not in table and (params := label_params(size)) is not None:
        row = next((name for name, below in COUNTED_CLASSES if params < below), "base")
        cpus, mem_mb, _ = table[row]
        per_thousand = table["base"][2] * params / 110e6
        return cpus, max(mem_mb, math.ceil(params * 8 / 1e6)), per_thousand
    if size not in table:
        raise KeyError(f"resources: no entry for model size {size!r}; known: {sorted(table)}")
    return table[size]


def estimated_minutes(
    options: CellOptions, size: str, overrides: dict | None = None, seeds: int = 1, cells: int = 1
) -> float:
    """A job's expected minutes, its seeds trained `cells` at a time at the prior's gain
    (blurbflow.gpu_share.GAIN): its scheduling priority (longest first, so that cores or GPUs
    do not wait on a long job started last); one at a time, also its time limit before the
    floor, the cap and `attempt`."""
    return _minutes(options, size_row(size, overrides)[2], seeds, cells, GAIN)


def _minutes(
    options: CellOptions, per_thousand: float, seeds: int, cells: int = 1, gain: float = GAIN
) -> float:
    instances = options.train_subsample or train_instances(options.task)
    length_factor = options.max_length / 256
    per_seed = (
        SEED_OVERHEAD_MINUTES + options.epochs * instances / 1000 * per_thousand * length_factor
    )
    return JOB_OVERHEAD_MINUTES + seed_equivalents(seeds, cells, gain) * per_seed


def cell_resources(
    options: CellOptions,
    size: str,
    attempt: int = 1,
    overrides: dict | None = None,
    seeds: int = 1,
    max_runtime: int = MAX_RUNTIME,
    cells: int = 1,
) -> dict:
    """Snakemake resources of one job running `seeds` cells, `cells` of them at once on its
    GPU, each in its own process (gpu, cpus_per_task, mem_mb, runtime in minutes). The time
    limit counts no gain from sharing the GPU (gpu_share.TIME_LIMIT_GAIN: as long as one seed
    after another), so no prior of the gain can cut a job short."""
    minutes = _minutes(options, size_row(size, overrides)[2], seeds, cells, TIME_LIMIT_GAIN)
    return {
        "gpu": 1,
        **size_resources(size, overrides, cells),
        "runtime": min(math.ceil(max(MIN_MINUTES, minutes)) * attempt, max_runtime),
    }


def size_resources(size: str, overrides: dict | None = None, cells: int = 1) -> dict:
    """The CPUs and memory of a job on a model of this size running `cells` processes,
    whatever its task, seeds or attempt: the size's row, or for several processes at least
    CPUS_PER_CELL and the host memory of a process (blurbflow.gpu_share) each."""
    cpus, mem_mb, _ = size_row(size, overrides)
    if cells > 1:
        params = label_params(size) or SIZE_PARAMS.get(size, SIZE_PARAMS["base"])
        cpus = max(cpus, cells * CPUS_PER_CELL)
        mem_mb = max(mem_mb, math.ceil(cells * host_bytes_per_cell(params) / 1e6))
    return {"cpus_per_task": cpus, "mem_mb": mem_mb}


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


# --- SLURM placement: config `slurm` -> the executor plugin's resources (docs/slurm.md)
SIGNAL_LEAD = 120  # seconds before the time limit a fine-tuning job gets SIGTERM (it checkpoints)
# sbatch options that the executor plugin or a key of config `slurm` already sets: `slurm.sbatch`
# may name none of them (the plugin refuses most in slurm_extra, only at submission).
_SET_BY = {
    "slurm.account": ("--account", "-A"),
    "slurm.partition / slurm.gpu_partition": ("--partition", "-p"),
    "slurm.qos / slurm.gpu_qos": ("--qos", "-q"),
    "slurm.constraint / slurm.gpu_constraint": ("--constraint", "-C"),
    "slurm.gpu_request and slurm.gpu_model": (
        "--gres",
        "--gpus",
        "-G",
        "--gpus-per-node",
        "--gpus-per-task",
    ),
    "the job's runtime (slurm.max_runtime)": ("--time", "-t"),
    "the config's `resources`": ("--mem", "--mem-per-cpu", "--cpus-per-task", "-c"),
    "the executor plugin": (
        "--job-name",
        "-J",
        "--output",
        "-o",
        "--error",
        "-e",
        "--parsable",
        "--export",
        "--comment",
        "--workdir",
        "--chdir",
        "-D",
        "--ntasks",
        "-n",
        "--ntasks-per-gpu",
        "--cpus-per-gpu",
        "--nodes",
        "-N",
        "--clusters",
        "-M",
    ),
}
SBATCH_SET_BY = {option: key for key, options in _SET_BY.items() for option in options}


def _sbatch_options(words: str) -> list[str]:
    """The option names of an sbatch argument string (`--a=b` -> `--a`, `-t10` -> `-t`)."""
    names = []
    for word in words.split():
        if word.startswith("--"):
            names.append(word.split("=", 1)[0])
        elif word.startswith("-") and len(word) > 1:
            names.append(word[:2])
    return names


def slurm_resources(slurm: dict | None) -> tuple[dict, dict]:
    """Snakemake resources the SLURM executor plugin reads, for CPU steps and for fine-tuning
    jobs, from config `slurm` (schema-checked before). Raises ConfigError naming the key where
    keys disagree. A local run ignores them."""
    slurm = slurm or {}
    lead = slurm.get("signal_lead", SIGNAL_LEAD)
    max_runtime = slurm.get("max_runtime") or MAX_RUNTIME
    if lead is not None and lead >= max_runtime * 60:
        raise ConfigError(
            f"slurm.signal_lead: {lead} s is not shorter than slurm.max_runtime "
            f"({max_runtime} min): every job would be signalled at its start"
        )
    sbatch = slurm.get("sbatch") or ""
    for option in _sbatch_options(sbatch):
        if option in SBATCH_SET_BY:
            raise ConfigError(
                f"slurm.sbatch: {option} is set by {SBATCH_SET_BY[option]}; drop it here"
            )
        if option == "--signal" and lead is not None:
            raise ConfigError(
                "slurm.sbatch: --signal is set by slurm.signal_lead; drop it here, or set "
                "slurm.signal_lead to null to give your own"
            )
    model = slurm.get("gpu_model")
    cpu = {
        "slurm_account": slurm.get("account"),
        "slurm_partition": slurm.get("partition"),
        "qos": slurm.get("qos"),
        "constraint": slurm.get("constraint"),
        "slurm_extra": sbatch,
    }
    gpu = {
        **cpu,
        "slurm_partition": slurm.get("gpu_partition") or cpu["slurm_partition"],
        "qos": slurm.get("gpu_qos") or cpu["qos"],
        "constraint": slurm.get("gpu_constraint") or cpu["constraint"],
        "slurm_extra": " ".join(
            filter(None, [sbatch, lead is not None and f"--signal=TERM@{lead}"])
        ),
    }
    if slurm.get("gpu_request", "gpus") == "gres":  # --gres=gpu[:MODEL]:1
        gpu["gres"] = f"gpu:{model}:1" if model else "gpu:1"
    else:  # --gpus=[MODEL:]1
        gpu.update(gpu=1, gpu_model=model)
    # a resource left unset is never passed: the plugin adds nothing, SLURM's default applies
    return (
        {key: value for key, value in cpu.items() if value},
        {key: value for key, value in gpu.items() if value},
    )
