"""What a stage-version bump (blurbflow.stage_versions) costs before it runs: the derived folders
written by other numbers than this code's, and the fine-tuning jobs after them. Those jobs run
again; their seeds re-train only where the rebuilt files differ (content identity), so their
GPU-hours are an upper bound, and none are spent where the bytes come out the same."""

from __future__ import annotations

import os

from blurbflow.config import CellJob, input_key
from blurbflow.models.prefetch import model_settings
from blurbflow.stage_versions import outdated, prepare_versions, tokenize_versions
from blurbflow.tasks import get_task
from blurbflow.util import paths


def outdated_folders(jobs: dict[str, CellJob], config: dict, root: str = ".") -> dict[str, list]:
    """Prepared data and tokenized folders of these jobs (and of the built models' corpora)
    whose recorded stage versions are not this code's: folder -> changes."""
    tasks = {job.task for job in jobs.values()}
    for spec in config["models"].values():
        if spec.get("build"):
            tasks.update(spec.get("corpus_tasks") or ())
    folders = {paths.data(t): ("stats.json", prepare_versions(get_task(t))) for t in tasks}
    settings = {name: model_settings(name, spec) for name, spec in config["models"].items()}
    for job in jobs.values():
        folder = paths.tokenized(job.model, job.task, input_key(job.task, job.options.inputs))
        versions = tokenize_versions(get_task(job.task), settings[job.model])
        folders[folder] = ("meta.json", versions)
    found = outdated((os.path.join(root, f), *found) for f, found in sorted(folders.items()))
    return {os.path.relpath(folder, root): changed for folder, changed in found.items()}


def affected_jobs(jobs: dict[str, CellJob], config: dict, folders: dict[str, list]) -> set[str]:
    """The jobs that read an outdated folder, or a built model pre-trained on outdated data."""
    study_tasks = sorted({job.task for job in jobs.values()})
    rebuilt = {
        name
        for name, spec in config["models"].items()
        if spec.get("build")
        and any(paths.data(t) in folders for t in spec.get("corpus_tasks") or study_tasks)
    }
    return {
        path
        for path, job in jobs.items()
        if job.model in rebuilt
        or paths.data(job.task) in folders
        or paths.tokenized(job.model, job.task, input_key(job.task, job.options.inputs)) in folders
    }
