"""Every task the workflow knows: the built-in entries (BLURB's 13 in `blurbflow.tasks.builtin`,
Bio-LM's NER sets in `biolm`, the cross-validation folds in `crossval`, extractive QA in
`extractive`) plus the config's own (`tasks:` entries with a `type`, `blurbflow.tasks.custom`).

`register_tasks(config)` adds a config's own tasks to `TASKS`: the workflow does it while it is
read (common.smk), and each rule's script does it in its job process from `snakemake.config`,
the config Snakemake hands every script (locally, and on SLURM, where the job reads the same
config files again). `get_task(name, config)` looks a task up with or without registering.
"""

from __future__ import annotations

import json

import blurbflow.tasks.biolm as biolm
import blurbflow.tasks.builtin as builtin
import blurbflow.tasks.crossval as crossval
import blurbflow.tasks.extractive as extractive
from blurbflow import stage_versions
from blurbflow.tasks.builtin import HOC_HALLMARKS, NER_LABELS, PICO_LABELS
from blurbflow.tasks.custom import custom_tasks, local_files
from blurbflow.tasks.spec import Source, TaskSpec
from blurbflow.tasks.types import BLURB_TYPES, TASK_TYPES, TYPES, TaskType, get_type
from blurbflow.util import paths

# BLURB's 13 first (tables list tasks in this order), then the other papers' tasks.
ENTRIES = [*builtin.ENTRIES, *biolm.ENTRIES, *crossval.ENTRIES, *extractive.ENTRIES]
BUILTIN: dict[str, TaskSpec] = {spec.name: spec for spec in ENTRIES}
# Built-ins plus the registered user tasks (the same dict object everywhere it is imported).
TASKS: dict[str, TaskSpec] = dict(BUILTIN)

__all__ = [
    "BLURB_TYPES",
    "BUILTIN",
    "HOC_HALLMARKS",
    "NER_LABELS",
    "PICO_LABELS",
    "TASKS",
    "TASK_TYPES",
    "TYPES",
    "Source",
    "TaskSpec",
    "TaskType",
    "all_tasks",
    "definition",
    "get_task",
    "get_type",
    "prepare_inputs",
    "register_tasks",
]


def all_tasks(config: dict | None = None) -> dict[str, TaskSpec]:
    """The built-in tasks and the config's own (`tasks:` entries with a `type`)."""
    return {**BUILTIN, **custom_tasks((config or {}).get("tasks"))}


def register_tasks(config: dict) -> dict[str, TaskSpec]:
    """Make the config's own tasks (and only them: another config's are forgotten) known to
    this process."""
    tasks = custom_tasks((config or {}).get("tasks"))
    for name in [name for name in TASKS if name not in BUILTIN]:
        del TASKS[name]
    TASKS.update(tasks)
    return dict(TASKS)


def get_task(name: str, config: dict | None = None) -> TaskSpec:
    tasks = all_tasks(config) if config is not None else TASKS
    try:
        return tasks[name]
    except KeyError:
        known = ", ".join(sorted(tasks))
        raise KeyError(
            f"unknown task {name!r}; known tasks: {known} (a task of your own is a `tasks:` "
            "entry with a `type` in the config: docs/data.md 'Your own tasks')"
        ) from None


def prepare_inputs(task: str) -> list[str]:
    """What the prepare step of `task` reads: its raw source folders, or the local files of a
    task of one's own (so editing one re-runs its prepare step and everything after it)."""
    spec = get_task(task)
    if spec.parser == "local":
        return local_files(spec)
    return [paths.RAW.format(source=source) for source in spec.sources]


def definition(task: str) -> str:
    """What re-runs a task's prepare step when it changes (its params): a task of one's own as
    canonical JSON (editing it re-runs its cells), and the stage versions past the first
    (blurbflow.stage_versions: a fix in its parser); empty for a built-in task at them."""
    spec = get_task(task)
    versions = stage_versions.bumped(stage_versions.prepare_versions(spec))
    if spec.builtin:
        return f"stage versions: {stage_versions.describe(versions)}" if versions else ""
    fields = {k: v for k, v in vars(spec).items() if k not in ("raw", "builtin", "version")}
    if versions:
        fields["stage_versions"] = versions
    return json.dumps(fields, sort_keys=True, default=str)
