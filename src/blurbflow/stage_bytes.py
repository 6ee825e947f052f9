"""A stage that re-runs for a version bump (blurbflow.stage_versions) and writes the content its
readers already computed from starts no fine-tuning job.

Snakemake plans every job after a re-running stage before that stage runs. So the workflow makes
the fine-tuning jobs reading a re-running folder wait on one check that runs after all such
stages (checkpoint `stage_bytes`, workflow/rules/stage_bytes.smk). Where a folder's content is
what every job reading it recorded in its identity (blurbflow.config.identity: token ids, the
prepared splits, a built model's files), the check puts back the dates Snakemake saw before the
re-run; Snakemake, which looks at the jobs after a checkpoint again, finds them up to date. A folder
whose content changed keeps its new dates, and the jobs reading it run (re-training the seeds
whose identity changed), as do the folders made from it.

Planning (`rerun_folders`, `visible_dates`) reads only the few re-running folders' dates."""

from __future__ import annotations

import json
import os
from pathlib import Path

from blurbflow.config import CellJob, input_key
from blurbflow.config.identity import data_checksums, folder_identity, tokenized_identity
from blurbflow.util import paths
from blurbflow.util.artefacts import record_dates

TIMESTAMP = ".snakemake_timestamp"  # the date Snakemake reads for a directory output
DATA_FILES = ("train.parquet", "dev.parquet", "test.parquet", "stats.json")  # rule prepare's


def tokenized_folder(job: CellJob) -> str:
    return paths.tokenized(job.model, job.task, input_key(job.task, job.options.inputs))


def _built(config: dict) -> dict[str, str]:
    """model name -> folder, for the models the workflow builds."""
    return {n: os.path.normpath(s["path"]) for n, s in config["models"].items() if s.get("build")}


def rerun_folders(jobs: dict[str, CellJob], config: dict, outdated) -> dict[str, str]:
    """The derived folders this run re-makes because of the `outdated` ones (prepared data,
    tokenized inputs; blurbflow.plan.stages.outdated_folders), with the built models and
    tokenized folders made from them: folder -> kind (`data`, `model`, `tokenized`), in the
    order they are made."""
    study_tasks = sorted({job.task for job in jobs.values()})
    corpus = {
        folder: [paths.data(t) for t in config["models"][name].get("corpus_tasks") or study_tasks]
        for name, folder in _built(config).items()
    }
    data = {f for f in [*map(paths.data, study_tasks), *sum(corpus.values(), [])] if f in outdated}
    models = {folder for folder, sources in corpus.items() if data.intersection(sources)}
    built = _built(config)
    tokenized = {
        tokenized_folder(job)
        for job in jobs.values()
        if tokenized_folder(job) in outdated
        or paths.data(job.task) in data
        or built.get(job.model) in models
    }
    kinds = {"data": data, "model": models, "tokenized": tokenized}
    return {folder: kind for kind, found in kinds.items() for folder in sorted(found)}


def check_plan(jobs: dict[str, CellJob], config: dict, folders: dict[str, str]):
    """(the fine-tuning jobs reading a re-made folder, which wait on the check; folder -> the
    manifests of the jobs whose identity its content is part of; folder -> the re-made folders
    it is made from). Nothing re-made (every run but a version bump's): nothing to look at."""
    if not folders:
        return set(), {}, {}
    built = _built(config)
    readers: dict[str, list[str]] = {folder: [] for folder in folders}
    inputs: dict[str, list[str]] = {folder: [] for folder in folders}
    waiting = set()
    for path, job in jobs.items():
        mine = [tokenized_folder(job), paths.data(job.task), built.get(job.model)]
        for folder in mine:
            if folder in folders:
                readers[folder].append(f"{path}/seeds.json")
        if mine[0] in folders:  # (a re-made model re-makes its tokenized folders too)
            waiting.add(path)
            inputs[mine[0]] = [f for f in mine[1:] if f in folders]
    for name, folder in built.items():
        if folder in folders:
            study_tasks = sorted({job.task for job in jobs.values()})
            sources = config["models"][name].get("corpus_tasks") or study_tasks
            inputs[folder] = [paths.data(t) for t in sources if paths.data(t) in folders]
    return waiting, readers, inputs


def visible_files(folder: str, kind: str) -> list[str]:
    """The files whose dates Snakemake reads for the folder: rule prepare's outputs, or a
    directory output's timestamp."""
    if kind == "data":
        return [f"{folder}/{name}" for name in DATA_FILES]
    return [f"{folder}/{TIMESTAMP}"]


def visible_dates(folders: dict[str, str]) -> dict[str, int]:
    """file -> its mtime_ns now (before the re-run), of the files Snakemake reads the folders'
    dates from; for a directory written without a timestamp, the directory's own date."""
    dates = {}
    for folder, kind in folders.items():
        for path in visible_files(folder, kind):
            for candidate in (path, *([] if kind == "data" else [folder])):
                if os.path.exists(candidate):
                    dates[path] = os.stat(candidate).st_mtime_ns
                    break
    return dates


def _identity_parts(folder: str, kind: str) -> dict:
    """The part of a cell's identity this folder's content makes."""
    if kind == "data":
        return {"data": data_checksums(folder)}
    if kind == "model":
        return {"model": folder_identity(folder)}
    return {"tokenized": tokenized_identity(folder)}


def _recorded(manifest: str) -> dict | None:
    try:
        identity = json.loads(Path(manifest).read_text()).get("identity")
    except (OSError, ValueError, AttributeError):
        return None
    return identity if isinstance(identity, dict) else None


def check(folders: dict[str, str], readers: dict[str, list[str]], inputs: dict, dates: dict):
    """The check after the re-made folders (`folders`: folder -> kind, in the order made):
    `readers` (folder -> the manifests of the jobs reading it), `inputs` (folder -> the re-made
    folders it is made from), `dates` (`visible_dates` before the re-run). A folder whose content
    every finished reader recorded, and whose re-made inputs got their dates back, gets its own
    back. Returns {"restored": [...], "changed": [...]}."""
    restored, changed = [], []
    for folder, kind in folders.items():
        parts = _identity_parts(folder, kind)
        recorded = [_recorded(m) for m in readers.get(folder, []) if os.path.exists(m)]
        same = all(
            identity is not None and all(identity.get(k) == v for k, v in parts.items())
            for identity in recorded
        )
        files = visible_files(folder, kind)
        if same and set(inputs.get(folder, [])) <= set(restored) and all(f in dates for f in files):
            for path in files:
                os.utime(path, ns=(dates[path], dates[path]))
            if kind == "data":
                record_dates(folder)  # its record: the dates its files have now
            restored.append(folder)
            print(f"{folder}: the content its {len(recorded)} jobs computed from; dates put back")
        else:
            changed.append(folder)
            print(f"{folder}: other content than its jobs computed from; they run")
    return {"restored": restored, "changed": changed}
