# Shared state: the validated config expanded into cells, and lookups the rules use.
import base64
import json

from blurbflow.config import (
    ConfigError,
    cell_jobs,
    check_names,
    config_hash,
    expand_cells,
    input_key,
    options_json,
)
from blurbflow.models.prefetch import drop_stale_markers, use_offline_cache
from blurbflow.cluster import MAX_RUNTIME, SHORT_GROUP, cell_resources, is_short
from blurbflow.tasks import TASKS

try:
    check_names(config)
    CELLS = expand_cells(config)
except ConfigError as err:
    raise WorkflowError(f"Invalid configuration: {err}") from None

# One job per (model, task, recipe, hparams) runs its seeds (blurbflow.train.job): half the
# jobs of one per cell, so a paper-scale DAG builds in seconds (benchmarks/dag_scale.py).
JOBS = cell_jobs(CELLS)
STUDY_TASKS = sorted({cell.task for cell in CELLS.values()})
STUDY_SOURCES = sorted({source for task in STUDY_TASKS for source in TASKS[task].sources})
JOB_MANIFESTS = [f"{path}/seeds.json" for path in JOBS]
TABLE_FILES = expand(
    "results/tables/{study}.{ext}", study=config["studies"], ext=["csv", "md", "tex"]
)
DATA_SOURCE = config.get("data", {}).get("source", "download")
# The whole config as one param: aggregation re-runs when any study definition changes.
# base64: Snakemake formats shell strings, so braces inside config text must not reach it.
CONFIG_B64 = base64.b64encode(json.dumps(config, sort_keys=True, default=str).encode())
CONFIG_JSON = f"b64:{CONFIG_B64.decode()}"
CONFIG_HASH = config_hash(config)
PARTIAL_CELLS = "results/cells.partial.parquet"  # what a failed run aggregated (onerror)


wildcard_constraints:
    model="[^/]+",
    task="[^/]+",
    recipe="[^/]+",
    hparams="[^/]+",
    seed=r"\d+",
    input_key=r"L\d+(-[A-Za-z+]+)*",


def job_of(wildcards):
    return JOBS[
        f"results/cells/{wildcards.model}/{wildcards.task}/{wildcards.recipe}/{wildcards.hparams}"
    ]


HF_CACHE = config.get("hf_cache", "resources/hf-cache")
# Jobs never reach the hub: hub models come from the cache `prefetch` filled on the login node
# (its rule alone goes online). Set here, so local jobs and SLURM jobs (which re-read this
# Snakefile) all inherit it.
use_offline_cache(HF_CACHE)
drop_stale_markers(HF_CACHE)
STUDY_MODELS = sorted({cell.model for cell in CELLS.values()})


def model_inputs(model):
    """A built model's folder, or a hub model's prefetch marker (the `prefetch_model` rule)."""
    spec = config["models"][model]
    if spec.get("build"):
        return [spec["path"]]
    return [f"{HF_CACHE}/.prefetched/{model}.json"] if spec.get("hub_id") else []


def corpus_files(wildcards):
    """A built model's pre-training corpus: its `corpus_tasks` (default: every study task)."""
    tasks = config["models"][wildcards.model].get("corpus_tasks", STUDY_TASKS)
    return expand("resources/data/{task}/train.parquet", task=sorted(tasks))


def tokenized_dir(wildcards):
    job = job_of(wildcards)
    return f"resources/tokenized/{job.model}/{job.task}/{input_key(job.task, job.options)}"


def cell_resource(name):
    """A resource callable for the finetune rule (blurbflow.cluster.cell_resources)."""

    def resource(wildcards, attempt):
        job = job_of(wildcards)
        size = config["models"][job.model].get("size", "base")
        return cell_resources(
            job.options,
            size,
            attempt,
            config.get("resources"),
            seeds=len(job.seeds),
            max_runtime=(config.get("slurm") or {}).get("max_runtime") or MAX_RUNTIME,
        )[name]

    return resource


def cell_group(wildcards):
    """Short jobs share a submission (`group-components` in slurm/profile.yaml)."""
    return SHORT_GROUP if is_short(job_of(wildcards).options) else None


def model_source(model):
    spec = config["models"][model]
    return spec.get("path") or spec["hub_id"]


# SLURM placement of every submitted rule (config `slurm`; the plugin reads these resources).
_SLURM = config.get("slurm") or {}
SLURM_CPU = {
    key: value
    for key, value in (
        ("slurm_account", _SLURM.get("account")),
        ("slurm_partition", _SLURM.get("partition")),
    )
    if value
}
SLURM_GPU = {**SLURM_CPU}
if _SLURM.get("gpu_partition"):
    SLURM_GPU["slurm_partition"] = _SLURM["gpu_partition"]

# Software of every rule (used with --software-deployment-method conda).
BLURBFLOW_ENV = "../../envs/blurbflow.yaml"


def report_requested():
    """Whether this run's targets include the report (the `onerror` handler builds it then)."""
    targets = set(workflow.dag_settings.targets or ())
    return not targets or bool(targets & {"all", "report", "results/report.html"})
