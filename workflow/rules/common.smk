# Shared state: the validated config expanded into cells, and lookups the rules use.
import gc
import inspect
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from blurbflow import stage_versions
from blurbflow.util import paths
from blurbflow.config import (
    ConfigError,
    cell_jobs,
    check_max_length,
    check_names,
    config_hash,
    expand_cells,
    input_key,
)
from blurbflow.config.init_from import source_job
from blurbflow.models.archive import archive_marker
from blurbflow.models.prefetch import marker_path, model_settings, use_offline_cache
from blurbflow.cluster import (
    MAX_RUNTIME,
    cell_resources,
    estimated_minutes,
    size_resources,
    slurm_resources,
    submission_group,
)
from blurbflow.gpu_share import MAX_CELLS
from blurbflow.plan.gpus import configured as configured_gpu
from blurbflow.plan.gpus import planned_cells
from blurbflow.plan.params import model_shape, size_key
from blurbflow.tasks import TASKS, register_tasks
from blurbflow.tasks.registry import definition, prepare_inputs
from blurbflow.config.validate import NAME_PATTERN


def job_function(func):
    """A function Snakemake calls for every job (input, params, priority, group, resources),
    its signature computed once: Snakemake inspects it on every call (inspect.signature, which
    returns a function's `__signature__` when set, PEP 362), 100,000s of times for a paper-scale
    DAG (the finetune rule's functions; the other rules have a few hundred jobs)."""
    func.__signature__ = inspect.signature(func)
    return func


try:
    check_names(config)
    # the config's own tasks, for this process; each rule's script registers them in its job
    # process from snakemake.config (workflow/scripts/)
    register_tasks(config)
    # One job per (model, task, recipe, hparams) runs its seeds (blurbflow.train.job): half the
    # jobs of one per cell, so a paper-scale DAG builds in seconds (benchmarks/dag_scale.py).
    # Expanded once per config and code; every later process (the next dry run, each SLURM
    # job's own Snakemake) loads them (blurbflow.job_cache, validate.smk).
    if PLANNED is not None:
        JOBS = PLANNED.jobs
    else:
        JOBS = cell_jobs(expand_cells(config))
        job_cache.save(PLAN_CACHE, job_cache.Planned(VALIDATED, JOBS))
except ConfigError as err:
    raise WorkflowError(f"Invalid configuration: {err}") from None

onstart:
    gc.set_threshold(*RUN_GC)  # every generation again, for the run's long life (Snakefile)
    record_launch()  # the run's config files and --config (launch.smk)

try:  # a max_length beyond a model's positions stops here, not in the first forward pass
    check_max_length(config, JOBS.values())
except ConfigError as err:
    raise WorkflowError(f"Invalid configuration: {err}") from None
STUDY_TASKS = sorted({job.task for job in JOBS.values()})
STUDY_SOURCES = sorted({source for task in STUDY_TASKS for source in TASKS[task].sources})
JOB_MANIFESTS = [f"{path}/seeds.json" for path in JOBS]
# each study's table, its numbers beside the paper's (blurbflow.results.reproduction) and its
# comparisons with their power (blurbflow.results.comparisons)
TABLE_FILES = expand(
    paths.TABLE,
    study=config["studies"],
    ext=["csv", "md", "tex", "reproduction.csv", "comparisons.csv"],
)


def table_reports(paths):
    """The tables as `snakemake --report` items, labelled by study (the longest study name a
    file starts with: names may hold dots) and file."""
    items = []
    for path in paths:
        name = os.path.basename(path)
        study = max((s for s in config["studies"] if name.startswith(f"{s}.")), key=len)
        labels = {"study": study, "file": name[len(study) + 1 :]}
        caption = "../report/tables.rst"
        items.append(report(path, caption=caption, category="Tables", labels=labels))
    return items


DATA_SOURCE = config.get("data", {}).get("source", "download")
if DATA_SOURCE == "generated":  # a task without synthetic data stops the run before any job
    from blurbflow.data.generate import check_generated

    try:
        check_generated(STUDY_TASKS)
    except ValueError as err:
        raise WorkflowError(f"Invalid configuration: {err}") from None
# Aggregation, tables and report read the config as Python values (snakemake.config in their
# scripts); its hash is their param, so they re-run when any study definition changes.
# `tracking` is left out: it only tells the fine-tuning jobs where to report (docs/tracking.md).
# `publish` neither: it only says where the exported models are uploaded (docs/models.md).
# `engine` neither: how cells compute, recorded in their result.json (docs/engine.md).
CONFIG_HASH = config_hash(
    {key: value for key, value in config.items() if key not in ("tracking", "publish", "engine")}
)
PARTIAL_CELLS = paths.PARTIAL_CELLS


# The name pattern the config is validated against: no `/`, no leading dot, nothing a shell reads.
wildcard_constraints:
    model=NAME_PATTERN,
    task=NAME_PATTERN,
    recipe=NAME_PATTERN,
    study=NAME_PATTERN,
    source=NAME_PATTERN,
    hparams=r"[A-Za-z0-9][A-Za-z0-9.+_-]*",
    seed=r"\d+",
    input_key=r"L\d+(-[A-Za-z+]+)*",


def job_of(wildcards):
    return JOBS[paths.job_folder(wildcards.model, wildcards.task, wildcards.recipe, wildcards.hparams)]


HF_CACHE = config.get("hf_cache", "resources/hf-cache")
# Jobs never reach the hub: hub models come from the cache `prefetch` filled on the login node
# (its rule alone goes online). Set here, so local jobs and SLURM jobs (which re-read this
# Snakefile) all inherit it.
use_offline_cache(HF_CACHE)
STUDY_MODELS = sorted({job.model for job in JOBS.values()})
# Prefetch markers are keyed by hub id + revision (blurbflow.models.prefetch.marker_path), not
# by the config's model name: marker file stem -> (hub id, revision). Reading the workflow
# deletes nothing; `snakemake prefetch` repairs a snapshot that lost files.
HUB_MARKERS = {
    marker_path(HF_CACHE, spec["hub_id"], spec.get("revision")).stem: (
        spec["hub_id"],
        spec.get("revision") or "main",
    )
    for spec in (config["models"][model] for model in STUDY_MODELS)
    if spec.get("hub_id") and not spec.get("path")
}


def _url_marker(spec):
    return archive_marker(HF_CACHE, spec["url"], spec.get("sha256"), spec.get("subfolder"))


# Models given by URL (blurbflow.models.archive): marker stem -> (the first model's name, its
# entry). Unpinned entries have a marker of their own that `prefetch_url` refuses to write.
URL_MARKERS = {}
for _name in STUDY_MODELS:
    if config["models"][_name].get("url"):
        _spec = config["models"][_name]
        URL_MARKERS.setdefault(_url_marker(_spec).stem, (_name, _spec))


def _model_inputs(spec):
    if spec.get("build"):
        return [spec["path"]]
    if spec.get("hub_id") and not spec.get("path"):
        return [str(marker_path(HF_CACHE, spec["hub_id"], spec.get("revision")))]
    if spec.get("url"):
        return [str(_url_marker(spec))]
    return []


_MODEL_INPUTS = {model: _model_inputs(spec) for model, spec in config["models"].items()}


def model_inputs(model):
    """A built model's folder, or a hub or URL model's prefetch marker (rules `prefetch_model`,
    `prefetch_url`); computed once per model, as every finetune job asks."""
    return list(_MODEL_INPUTS[model])


def hub_markers(model):
    """A hub or URL model's prefetch marker ([] for local and built models)."""
    return [path for path in model_inputs(model) if path.endswith(".json")]


def model_settings_dict(model):
    """The model's settings a tokenize job needs (revision, cased, add_prefix_space, …), keys
    sorted so that the params rerun trigger compares the same text for the same settings."""
    settings = model_settings(model, config["models"][model])
    return {k: v for k, v in sorted(settings.items()) if k not in ("model", "model_source")}


def versioned(params, versions):
    """A rule's params dict with the stage versions past the first (blurbflow.stage_versions):
    a bump re-runs the stage, and the dry run's reason names the number that changed."""
    bumped = stage_versions.bumped(versions)
    return {**params, "stage_versions": bumped} if bumped else params


@job_function
def tokenize_settings(wildcards):
    """The tokenize params: the model's settings and the encoder's stage versions."""
    settings = model_settings_dict(wildcards.model)
    return versioned(settings, stage_versions.tokenize_versions(TASKS[wildcards.task], settings))


def corpus_files(wildcards):
    """A built model's pre-training corpus: its `corpus_tasks` (default: every study task)."""
    tasks = config["models"][wildcards.model].get("corpus_tasks", STUDY_TASKS)
    return [f"{paths.data(task)}/train.parquet" for task in sorted(tasks)]


def model_rerun(wildcards):
    """A built model's rerun stamp (its folder damaged)."""
    return rebuild_if_damaged(paths.BUILT_MODEL.format(model=wildcards.model))


def tokenized_dir(job):
    return paths.tokenized(job.model, job.task, input_key(job.task, job.options.inputs))


# What Snakemake asks of each finetune job (params, priority, group, resources) comes from the
# job's serialised options and its model's size, worked out once per job (`job_plan`): Snakemake
# calls the rule's functions for every job of a paper-scale DAG, the group function three times
# for a job that is in none, and the resources once per attempt.
RESOURCE_TABLE = config.get("resources")  # overrides of blurbflow.cluster.SIZES
MAX_MINUTES = (config.get("slurm") or {}).get("max_runtime") or MAX_RUNTIME
_PLANS = {}
_RESOURCES = {}
_SIZES = {}
_SHAPES = {}


class JobPlan(NamedTuple):
    job: object  # blurbflow.config.CellJob
    options: dict  # as the params and result.json carry them
    size: str  # its model's size (blurbflow.plan.params.size_key)
    priority: float  # its estimated minutes: longest first
    group: str | None  # `short-cells` or none (blurbflow.cluster.submission_group)
    cells: int  # its seeds at once on its GPU, as priced (blurbflow.plan.gpus.planned_cells)


def known_size(job):
    """Whether the job's training-set size is known without its prepared data: a user task
    without `size` is estimated until its stats.json is written, so it is worked out anew."""
    return bool(job.options.train_subsample or TASKS[job.task].size)


def job_plan(wildcards):
    """The job's JobPlan, worked out on first use (each use for a job of unknown size)."""
    path = paths.job_folder(wildcards.model, wildcards.task, wildcards.recipe, wildcards.hparams)
    found = _PLANS.get(path)
    if found is None:
        job = JOBS[path]
        size = model_size(job.model)
        options = dict(sorted(job.options.to_dict().items()))
        seeds = len(job.seeds)
        cells = planned_cells(config, options, seeds, model_shape_of(job.model), None)
        priority = estimated_minutes(job.options, size, RESOURCE_TABLE, seeds, cells)
        group = submission_group(job.options)
        found = JobPlan(job, options, size, priority, group, cells)
        if known_size(job):
            _PLANS[path] = found
    return found


def model_size(model):
    """The model's size for its resources: its parameter count (`params`, config.json) or its
    `size` class (blurbflow.plan.params.size_key), read once."""
    if model not in _SIZES:
        _SIZES[model] = size_key(model, config["models"][model])[0]
    return _SIZES[model]


def model_shape_of(model):
    """What sizes the model's cells in GPU memory (blurbflow.gpu_share.Shape), read once."""
    if model not in _SHAPES:
        _SHAPES[model] = model_shape(model, config["models"][model])
    return _SHAPES[model]


def job_resources(wildcards, attempt):
    """The job's resources at this attempt (blurbflow.cluster.cell_resources), worked out once."""
    plan = job_plan(wildcards)
    key = (plan.job.path, attempt)
    found = _RESOURCES.get(key)
    if found is None:
        found = cell_resources(
            plan.job.options,
            plan.size,
            attempt,
            RESOURCE_TABLE,
            seeds=len(plan.job.seeds),
            max_runtime=MAX_MINUTES,
            cells=plan.cells,
        )
        if known_size(plan.job):
            _RESOURCES[key] = found
    return found


def _uniform_resources():
    """{resource: value} of the CPUs and memory every fine-tuning job asks where all ask the same
    (they follow the model's size and the seeds the job runs at once on its GPU: checked for
    every count it may price, so no job is evaluated here; blurbflow.cluster.size_resources).
    Main process only: a job's own Snakemake evaluates the one job."""
    if not workflow.is_main_process or not STUDY_MODELS:
        return {}
    given = (config.get("engine") or {}).get("cells_per_gpu", "auto")
    if given == "auto":  # priced for a GPU type the plan knows, else one at a time
        given = MAX_CELLS if configured_gpu(config) else 1
    most = min(int(given), max(len(j.seeds) for j in JOBS.values()))
    rows = [
        size_resources(size, RESOURCE_TABLE, cells)
        for size in {model_size(m) for m in STUDY_MODELS}
        for cells in range(1, most + 1)
    ]
    return {name: value for name, value in rows[0].items() if all(r[name] == value for r in rows)}


UNIFORM_RESOURCES = _uniform_resources()


def cell_resource(name):
    """A resource of the finetune rule: the value every job asks where it is one (Snakemake
    evaluates a function for each job: 6,230 calls in a dry run of config.yaml), else a function
    of the job and attempt. The gpu is neither: every finetune job asks for 1 (finetune.smk)."""
    if name in UNIFORM_RESOURCES:
        return UNIFORM_RESOURCES[name]

    @job_function
    def resource(wildcards, attempt):
        return job_resources(wildcards, attempt)[name]

    return resource


def _tmpdir_resource():
    """{tmpdir: this process's temporary folder} where the default is Snakemake's own (the
    expression `system_tmpdir`, which Snakemake evaluates anew for each job in the process that
    runs it; a SLURM job's own Snakemake reads this file on its node), {} where the user set
    one: the finetune and tokenize rules' 7,156 evaluations in a dry run of config.yaml."""
    try:
        builtin = workflow.resource_settings.default_resources["tmpdir"].raw == "system_tmpdir"
    except (KeyError, TypeError, AttributeError):
        return {}
    return {"tmpdir": tempfile.gettempdir()} if builtin else {}


TMPDIR = _tmpdir_resource()


# Snakemake does not pass a job's priority on to the jobs it waits for: the quick steps that
# make fine-tuning jobs ready (data, models, tokenization, a search's selection) get one above
# every fine-tuning job's.
BEFORE_FINETUNE = 10**9


@job_function
def cell_priority(wildcards):
    """Longest jobs first (their estimated minutes): the last job to finish is rarely a long one
    started late while the other cores or GPUs sit idle."""
    return job_plan(wildcards).priority


@job_function
def cell_group(wildcards):
    """Short jobs share a submission (`group-components` in slurm/profile.yaml)."""
    return job_plan(wildcards).group


def model_source(model):
    spec = config["models"][model]
    return spec.get("path") or spec.get("hub_id") or spec["url"]


# SLURM placement of every submitted job, from config `slurm` (the plugin reads these resources)
# account, partition, qos, constraint, extra sbatch options; fine-tuning jobs also their GPU
# request and the signal before their time limit (blurbflow.cluster.slurm_resources).
try:
    SLURM_CPU, SLURM_GPU = slurm_resources(config.get("slurm"))
except ConfigError as err:
    raise WorkflowError(f"Invalid configuration: {err}") from None

# Software of every rule, used with --software-deployment-method conda (Snakemake resolves a fixed
# env path once per rule, so declaring it always costs a paper-scale dry run nothing measurable).
# Its pip section installs `-e ${BLURBFLOW_ROOT}` (pip expands the variable), as the env file is
# read from a copy elsewhere.
BLURBFLOW_ENV = "../../envs/blurbflow.yaml"
os.environ.update(BLURBFLOW_ROOT=str(Path(workflow.basedir).resolve()))  # read by pip only
# Rules run workflow/scripts/*.py with `script:`: Snakemake starts them with its own interpreter
# (sys.executable, never a PATH lookup), or the conda env's python under conda deployment.


def report_requested():
    """Whether this run's targets include the report (the `onerror` handler builds it then)."""
    targets = set(workflow.dag_settings.targets or ())
    return not targets or bool(targets & {"all", "report", paths.REPORT})


# Jobs whose seed files changed since they finished (edited, replaced or deleted result.json or
# predictions.parquet; stat only, blurbflow.config.identity.stale_manifests) re-run; inside, the seeds
# that still verify are kept. So do jobs whose folder lost its manifest (aggregation removes the
# manifest of a job whose cell it rejected): Snakemake alone would not re-create a missing
# intermediate file while the tables after it are up to date. A job that never ran (no folder)
# is left to Snakemake, which plans it for its missing output. Nothing is deleted here, and only
# the main process checks (not SLURM/remote job processes); the finetune rule's inputs then
# carry the job's rerun stamp (`rerun_stamp`).
def _stale_jobs():
    import sys

    from blurbflow.config.identity import stale_manifests

    if not workflow.is_main_process:
        return set()
    missing = []
    stale = stale_manifests(JOB_MANIFESTS, missing)
    if stale:
        shown = ", ".join(sorted(stale)[:5]) + (" …" if len(stale) > 5 else "")
        print(f"seed files changed since their job finished, re-run: {shown}", file=sys.stderr)
    ran_before = {manifest for manifest in missing if os.path.isdir(os.path.dirname(manifest))}
    return set(stale) | ran_before


STALE_JOBS = _stale_jobs()


# Derived folders (prepared data, tokenized inputs, built models) whose files are no longer those
# their producer recorded (blurbflow.util.artefacts: stat, then sha256 where only the date changed; or
# flagged by a job that found them damaged): their producer re-runs through its rerun stamp, and
# the jobs after it re-run on the rebuilt copy (keeping every seed whose identity comes back
# unchanged). Nothing is deleted here; main process only.
def _derived_folders():
    """{prepared data folder: task}, {tokenized folder: task}, [built model folders]."""
    built = [spec for spec in config["models"].values() if spec.get("build")]
    tasks = set(STUDY_TASKS).union(*(spec.get("corpus_tasks", ()) for spec in built))
    tokenized = {tokenized_dir(job): job.task for job in JOBS.values()}
    return (
        {paths.data(task): task for task in sorted(tasks)},
        dict(sorted(tokenized.items())),
        [os.path.normpath(spec["path"]) for spec in built],
    )


def _damaged_folders():
    import sys

    from blurbflow.util.artefacts import damaged_folders

    if not workflow.is_main_process:
        return {}
    data, tokenized, built = _derived_folders()
    found = damaged_folders([*data, *tokenized, *built])
    for folder, problem in sorted(found.items()):
        print(f"damaged since written, rebuilt: {folder} ({problem})", file=sys.stderr)
    return found


DAMAGED_FOLDERS = _damaged_folders()


# Derived folders written by other stage versions than this code's (a release fixed a parser or
# an encoder): the version numbers in their rule's params re-run them; said here with the
# numbers (blurbflow.stage_versions). Main process only; reads each folder's small record file.
def _outdated_stages():
    import sys

    from blurbflow.plan.stages import outdated_folders

    if not workflow.is_main_process:
        return {}
    found = outdated_folders(JOBS, config)  # the same check `snakemake plan` prices
    for folder, changes in sorted(found.items()):
        changed = ", ".join(changes)
        print(f"stage version changed, re-run: {folder} ({changed})", file=sys.stderr)
    return found


OUTDATED_STAGES = _outdated_stages()  # folder -> its changes (stage_bytes.smk)


# How a finished job is made to re-run, with Snakemake's public rerun triggers only (issue 30:
# no `--forcerun`, which would also make the job a target, so `snakemake data` would train):
# when the DAG asks for a stale job or a damaged folder's producer (its input function runs),
# the main process writes the job's rerun stamp (blurbflow.util.paths.rerun_stamp; new content each
# time), an input newer than the job's outputs (or, its manifest gone, than the outputs after
# it), so Snakemake re-runs it for an updated input. A dry run plans it with a stamp in a
# temporary folder instead (removed when it ends): it leaves the project as it was. Once written, the stamp stays an input of its job (`input` trigger: the job's input
# set never changes back); a job that never had one keeps its input set, so nothing re-runs
# after updating. Deleting results/rerun/ re-runs the jobs that had a stamp (they keep their
# verified seeds).
def _written_stamps():
    found = set()
    for root, _, names in os.walk(paths.RERUN):
        found.update(f"{root}/{name}" for name in names)
    return found


RERUN_STAMPS = _written_stamps()
_STAMPED = set()  # written by this process
_DRY_RUN_FOLDER = []  # a dry run's stamps: a temporary folder, removed when it ends


def _dry_run_stamp(stamp, why):
    import atexit
    import shutil
    import tempfile

    if not _DRY_RUN_FOLDER:
        _DRY_RUN_FOLDER.append(tempfile.mkdtemp(prefix="blurbflow-dry-run-"))
        atexit.register(shutil.rmtree, _DRY_RUN_FOLDER[0], True)
    path = os.path.join(_DRY_RUN_FOLDER[0], stamp)
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write(f"{why}\n")
    return path


def rerun_stamp(folder, why=None):
    """[the rerun stamp of the job writing `folder`] if it has one, else []; with `why` (the
    reason it must re-run), written now first (in a dry run, a temporary one)."""
    stamp = paths.rerun_stamp(folder)
    if why is not None and workflow.dryrun:
        return [_dry_run_stamp(stamp, why)]
    if why is not None and stamp not in _STAMPED:
        os.makedirs(os.path.dirname(stamp), exist_ok=True)
        with open(stamp, "w") as handle:  # new content: a recorded checksum cannot match
            handle.write(f"{time.time_ns()} {why}\n")
        _STAMPED.add(stamp)
        RERUN_STAMPS.add(stamp)
    return [stamp] if stamp in RERUN_STAMPS else []


def recheck(job):
    """The job's rerun stamp (written when its seed files changed since it finished)."""
    stale = f"{job.path}/seeds.json" in STALE_JOBS
    return rerun_stamp(job.path, "seed files changed since the job finished" if stale else None)


def rebuild_if_damaged(folder):
    """The rerun stamp of the job writing `folder` (written when the folder is damaged)."""
    return rerun_stamp(folder, DAMAGED_FOLDERS.get(folder))


def prepare_input(wildcards):
    """The prepare rule's raw inputs, and its rerun stamp (its output folder damaged)."""
    return prepare_inputs(wildcards.task) + rebuild_if_damaged(paths.data(wildcards.task))


@job_function
def tokenize_rerun(wildcards):
    """The tokenize rule's rerun stamp (its output folder damaged)."""
    return rebuild_if_damaged(paths.tokenized(wildcards.model, wildcards.task, wildcards.input_key))


# One input function and one params function per finetune job: Snakemake's cost per function
# call dominates the paper-scale dry run (benchmarks/dag_scale.py). The data parquet files are
# not inputs: the tokenized folder depends on them, so a data change still re-runs the job.
@job_function
def finetune_inputs(wildcards):
    job = job_of(wildcards)
    if job.path in WAITING_JOBS:  # a re-made folder: after the check of its content
        checkpoints.stage_bytes.get()  # (stage_bytes.smk)
    inputs = {"encoded": tokenized_dir(job), "model": model_inputs(job.model)}
    if stamp := recheck(job):  # its seed files changed since it finished, or did once
        inputs["rerun"] = stamp
    if job.options.selection_file:  # `hparams_from` or reference models' choice (select.smk)
        inputs["selection"] = job.options.selection_file
    if job.options.init_from:  # the source job whose weights it starts from
        inputs["init_from"] = f"{source_job(job.options)}/seeds.json"
    return inputs


@job_function
def finetune_params(wildcards):
    plan = job_plan(wildcards)
    return {"options": plan.options, "seeds": list(plan.job.seeds), "data": paths.data(plan.job.task)}
