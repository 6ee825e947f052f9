"""Every path template of a project, relative to its root (the folder snakemake runs in): the
rules' inputs and outputs (workflow/rules/) and the modules that name a job's folder use these,
so a folder is named in one place. `{…}` fields are Snakemake wildcards in the rules and
`str.format` fields in Python. Changing one renames users' finished outputs: they would re-run."""

from __future__ import annotations

import os

# Data: a raw source as downloaded, then a task's prepared splits (docs/data.md)
RAW = "resources/raw/{source}"
DATA = "resources/data/{task}"
# a model the workflow builds itself (`build:`, rule build_demo_model)
BUILT_MODELS = "resources/models"
BUILT_MODEL = BUILT_MODELS + "/{model}"
# a task encoded for one tokenizer and input options (blurbflow.config.input_key)
TOKENIZED = "resources/tokenized/{model}/{task}/{input_key}"
# compiled kernels every job of a run shares (`engine.compile_cache: auto`; train/compiled.py)
COMPILE_CACHE = "resources/compile-cache"

# Fine-tuning: a (model, task, recipe) cell folder, and in it one job per grid point, whose
# seeds live in seed{N}/; the job's manifest and an adaptive round's marker (n: its seeds)
CELLS = "results/cells"
RECIPE = CELLS + "/{model}/{task}/{recipe}"
JOB = RECIPE + "/{hparams}"
SEED = JOB + "/seed{seed}"
JOB_MANIFEST = JOB + "/seeds.json"
ROUND_MARKER = JOB + "/seeds-n{n}.json"
ADAPTIVE_ROUND = "results/adaptive/{study}/round{round}.json"
# the grid point a `hparams_from` recipe takes, and the one reference models chose (`+`-joined)
SELECTION = "results/selection/{model}/{task}/{recipe}.json"
REFERENCE = "results/selection/reference/{models}/{task}/{recipe}.json"

# Results: every cell's row, a study's tables (ext: csv, md, tex, reproduction.csv,
# comparisons.csv) and its JSON, the report
CELLS_TABLE = "results/cells.parquet"
PARTIAL_CELLS = "results/cells.partial.parquet"  # what a failed run aggregated (onerror)
TABLES = "results/tables"
TABLE = TABLES + "/{study}.{ext}"
STUDY_RESULTS = "results/{study}.json"
REPORT = "results/report.html"
# a study's kept models (export_models) and where they were uploaded (publish_models)
EXPORTED = "results/models/{study}"
PUBLISHED = "results/published/{study}.json"

# Logs of the jobs that write the folders above
LOGS = "results/logs"
JOB_LOG = LOGS + "/cells/{model}/{task}/{recipe}/{hparams}.log"
ROUND_LOG = LOGS + "/cells/{model}/{task}/{recipe}/{hparams}.n{n}.log"
TOKENIZE_LOG = LOGS + "/tokenize/{model}/{task}/{input_key}.log"
PREPARE_LOG = LOGS + "/prepare/{task}.log"
RAW_LOG = LOGS + "/raw/{source}.log"
MODEL_LOG = LOGS + "/models/{model}.log"

# A rerun stamp: written when a finished job must run again (its seed files changed, its output
# folder is damaged), an input of that job from then on (workflow/rules/common.smk `rerun_stamp`)
RERUN = "results/rerun"
# which re-made folders got their dates back (blurbflow.stage_bytes, checkpoint stage_bytes)
STAGE_BYTES = "results/stage-bytes.json"


def job_folder(model: str, task: str, recipe: str, hparams: str) -> str:
    return JOB.format(model=model, task=task, recipe=recipe, hparams=hparams)


def tokenized(model: str, task: str, input_key: str) -> str:
    return TOKENIZED.format(model=model, task=task, input_key=input_key)


def data(task: str) -> str:
    return DATA.format(task=task)


def rerun_stamp(folder: str) -> str:
    """The rerun stamp of the job writing `folder`: the folder's path under RERUN (an absolute
    path or `..` kept inside it)."""
    parts = os.path.normpath(folder).split(os.sep)
    return "/".join([RERUN, *("__" if part == ".." else part for part in parts if part)])
