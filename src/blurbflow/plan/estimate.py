"""The plan: for every job still to run, its seeds × seconds per seed (blurbflow.plan.calibrate)
as device-hours (a fine-tuning job holds one GPU; cells calibrated on a CPU count CPU-hours and
say so), its seeds sharing the GPU K at a time at the prior's gain (blurbflow.gpu_share; K:
blurbflow.plan.gpus.planned_cells), summed per study, per model and in total, with the SLURM
submissions they make: jobs of group `short-cells` (blurbflow.cluster.submission_group) go
`group-components` to a submission (slurm/profile.yaml), every other job alone."""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from dataclasses import dataclass

import yaml

from blurbflow.cluster import JOB_OVERHEAD_MINUTES, submission_group
from blurbflow.cluster import train_instances as task_instances
from blurbflow.config import CellJob, cell_jobs, expand_cells
from blurbflow.gpu_share import GAIN, seed_equivalents
from blurbflow.plan import gpus
from blurbflow.plan import params as sizing
from blurbflow.plan.before import study_jobs
from blurbflow.plan.calibrate import Calibration, token_work, work
from blurbflow.plan.lengths import estimated_tokens, task_tokens
from blurbflow.plan.remaining import Scan, cached_tokens, scaled, scan, tokens_key
from blurbflow.plan.stages import affected_jobs, outdated_folders

PROFILE = "slurm/profile.yaml"


def group_components(profile: str) -> dict[str, int]:
    """`group-components` of a Snakemake profile (`[short-cells=4]`) as {group: jobs}; {} when
    the file is absent."""
    try:
        with open(profile) as handle:
            given = (yaml.safe_load(handle) or {}).get("group-components") or []
    except FileNotFoundError:
        return {}
    if isinstance(given, dict):
        return {str(k): int(v) for k, v in given.items()}
    entries = [given] if isinstance(given, str) else given
    pairs = (str(entry).split("=", 1) for entry in entries)
    return {name.strip(): int(count) for name, count in pairs}


def queue_entries(groups: list[str | None], components: dict[str, int]) -> dict:
    """SLURM submissions of jobs with these groups: a group's jobs `components` at a time."""
    counts: dict[str | None, int] = defaultdict(int)
    for group in groups:
        counts[group] += 1
    alone = counts.pop(None, 0)
    packed = {g: math.ceil(n / max(1, components.get(g, 1))) for g, n in counts.items()}
    return {
        "entries": alone + sum(packed.values()),
        "alone": alone,
        "grouped": dict(counts),
        "submissions": packed,
        "components": {g: components.get(g, 1) for g in counts},
    }


def prepared_instances(task: str, data_root: str) -> int:
    """The training-set size of the prepared data (stats.json), else blurbflow.cluster's
    (the task entry's `size`, or a guess): the prepared data is what the cells will train on
    (the demo's generated sets are smaller than the real ones)."""
    try:
        with open(os.path.join(data_root, task, "stats.json")) as handle:
            return int(json.load(handle)["splits"]["train"]["instances"])
    except (OSError, ValueError, KeyError, TypeError):
        return task_instances(task, data_root)


def job_work(job: CellJob, found: Scan, root: str) -> float:
    """One seed's work (an upper bound when the recipe stops early), from its tokens: as the
    model's finished cells of the task recorded them, else as its tokenized cache counts them
    (blurbflow.train.encode's meta.json), else — before any cell has finished — as the prepared
    data's words or the task's measured length estimate them (blurbflow.plan.lengths), else its
    instances padded to max_length × the share of max_length the finished cells filled. A
    trained token costs less under LoRA, more with gradient checkpointing (params.token_flops)."""
    options = job.options
    data_root = os.path.join(root, "resources", "data")
    instances = _instances(job, found, data_root)
    epochs = options.epochs or 0
    per_epoch = math.ceil(instances / options.batch_size) if options.batch_size else 1
    every = options.eval_every_steps
    evaluations = epochs * max(1, per_epoch // every) if every else epochs
    tokens = found.tokens.get(tokens_key(job.model, options.to_dict()))
    if tokens is None:
        rates = cached_tokens(job, root)
        if rates is None and not found.samples:  # the prior: no finished cell's fill yet
            rates = estimated_tokens(job.task, data_root, options.max_length) or task_tokens(
                job.task, options.max_length
            )
        tokens = scaled(rates, instances) if rates else None
    how = {"lora": options.lora, "gradient_checkpointing": options.gradient_checkpointing}
    scale = sizing.token_flops(how) / 6.0
    if tokens is not None:
        return token_work(epochs, tokens[0], evaluations, tokens[1], scale)
    return work(epochs, instances, options.max_length, scale) * found.fill(job.task)


def _instances(job: CellJob, found: Scan, data_root: str) -> int:
    options = job.options
    instances = found.instances.get((job.task, options.train_subsample, options.train_on))
    if instances is None:
        instances = prepared_instances(job.task, data_root)
        if options.train_subsample:
            instances = min(instances, options.train_subsample)
    return instances


def plan_config(config: dict, root: str = ".", profile: str | None = None) -> dict:
    """The plan of a config (its user tasks registered) whose results are under `root`."""
    jobs = cell_jobs(expand_cells(config))
    folders = outdated_folders(jobs, config, root)
    affected = affected_jobs(jobs, config, folders)
    left = still_to_run(config, jobs, root, affected)
    running, bumps = left.running, {}
    for path in affected:  # its seeds re-train if the rebuilt inputs differ: at most all
        seeds, entry = len(jobs[path].seeds), running[path]
        equivalents = seed_equivalents(seeds, entry["room"])
        bumps[path] = {"seeds": seeds, "hours": entry["seed_seconds"] * equivalents / 3600}
    profile = profile or os.path.join(root, PROFILE)
    components = group_components(profile)
    queue = queue_entries([job["group"] for job in running.values()], components)
    queue.update(profile=profile, profile_found=os.path.isfile(profile))
    return {
        "cells": sum(len(job.seeds) for job in jobs.values()),
        "jobs": len(jobs),
        "remaining": _summary(running.values(), set(running)) | {"queue": queue},
        "studies": _studies(config, running),
        "models": _models(running, jobs, left.sized, left.calibration),
        "calibration": _calibration(left.calibration),
        "prior": gpu.describe if (gpu := gpus.configured(config)) else sizing.FLOPS_SOURCE,
        "prior_gpu": gpu.name if gpu else gpus.DEFAULT,  # whose rate the prior assumes
        "cells_per_gpu": (config.get("engine") or {}).get("cells_per_gpu", "auto"),
        "gain": GAIN,
        "running": running,
        "stage_versions": {  # blurbflow.plan.stages: the cost of a version bump
            "folders": folders,
            "jobs": len(bumps),
            "cells": sum(b["seeds"] for b in bumps.values()),
            "hours": sum(b["hours"] for b in bumps.values()),
        },
    }


@dataclass
class StillToRun:
    running: dict[str, dict]  # job folder -> its model, task, seeds to train, hours, group
    sized: dict[str, tuple]  # model -> blurbflow.plan.params.size_key
    calibration: Calibration


def still_to_run(
    config: dict, jobs: dict[str, CellJob], root: str = ".", affected=frozenset()
) -> StillToRun:
    """The jobs that run (and `affected`, whose inputs a stage version rebuilds), each with
    the seeds it trains and their calibrated device-hours."""
    sized = {name: sizing.size_key(name, spec, root) for name, spec in config["models"].items()}
    shapes = {name: sizing.model_shape(name, spec, root) for name, spec in config["models"].items()}
    sizes = {name: key for name, (key, _, _) in sized.items()}
    found = scan(jobs, sizes, root)
    counts = {key: params for key, params, _ in sized.values()}
    gpu = gpus.configured(config)
    flops = gpu.flops if gpu else sizing.FLOPS
    calibration = Calibration(found.samples, config.get("resources"), params=counts, flops=flops)
    running = {}
    for path, state in found.states.items():
        if not state.runs and path not in affected:
            continue
        job = jobs[path]
        seconds, rate, factor = calibration.seed_seconds(
            job.model, job.task, sizes[job.model], job_work(job, found, root)
        )
        options = job.options.to_dict()  # K with every seed to train: its room on the GPU
        room = gpus.planned_cells(config, options, len(job.seeds), shapes[job.model], rate.device)
        cells = max(1, min(room, len(state.seeds)))
        running[path] = {
            "model": job.model,
            "task": job.task,
            "seeds": list(state.seeds),
            "seed_seconds": seconds,
            "hours": seconds * seed_equivalents(len(state.seeds), cells) / 3600,
            "cells_per_gpu": cells,  # seeds at once on its GPU
            "room": room,
            "device": rate.device,
            "cells": rate.cells,  # finished cells behind its rate; 0: the table's
            "factor": list(factor),  # [factor, cells, level] or []
            "group": submission_group(job.options),
        }
    return StillToRun(running, sized, calibration)


def launch_summary(config: dict, jobs: dict[str, CellJob], root: str = ".") -> dict:
    """What a launch of `jobs` still trains: the plan's total without its per-study shares and
    stage-version check, cheap enough to say before the first job (workflow/rules/launch.smk)."""
    running = still_to_run(config, jobs, root).running
    return _summary(running.values(), set(running))


def _summary(entries, paths: set[str]) -> dict:
    by_device: dict[str, float] = defaultdict(float)
    cells, at_once = 0, defaultdict(int)
    for entry in entries:
        by_device[entry["device"]] += entry["hours"]
        cells += len(entry["seeds"])
        if entry["seeds"]:
            at_once[entry["cells_per_gpu"]] += 1
    return {
        "cells": cells,
        "jobs": len(paths),
        "hours": sum(by_device.values()),
        "hours_by_device": dict(by_device),
        "startup_hours": len(paths) * JOB_OVERHEAD_MINUTES / 60,
        "checking_jobs": sum(1 for entry in entries if not entry["seeds"]),
        "cells_per_gpu": dict(sorted(at_once.items(), reverse=True)),  # K -> jobs
    }


def _studies(config: dict, running: dict) -> dict:
    """Each study's share: its own seeds of the jobs still to run (a job several studies share
    is in each of their lines, once in the total)."""
    owned = study_jobs(config)
    owners: dict[str, int] = defaultdict(int)
    for mine in owned.values():
        for path in mine:
            owners[path] += 1
    studies = {}
    for name, mine in owned.items():
        entries = []
        for path, job in mine.items():
            if path in running:
                entry, seeds = running[path], set(job.seeds)
                kept = [s for s in entry["seeds"] if s in seeds]
                share = len(kept) / len(entry["seeds"]) if entry["seeds"] else 0.0
                entries.append({**entry, "seeds": kept, "hours": entry["hours"] * share})
        studies[name] = _summary(entries, {p for p in mine if p in running}) | {
            "total_cells": sum(len(job.seeds) for job in mine.values()),
            "total_jobs": len(mine),
            "shared_jobs": sum(1 for p in mine if p in running and owners[p] > 1),
        }
    return studies


def _models(running: dict, jobs: dict, sized: dict, calibration: Calibration) -> dict:
    models = {}
    for model in sorted({job.model for job in jobs.values()}):
        mine = {p: e for p, e in running.items() if e["model"] == model}
        size, params, source = sized[model]
        rate = calibration.rate(size)
        models[model] = _summary(mine.values(), set(mine)) | {
            "size": size,
            "params": params,
            "params_source": source,
            "device": rate.device,
            "rate_cells": rate.cells,
            "rate_source": rate.source,
            "factored_jobs": sum(1 for e in mine.values() if e["factor"]),
        }
    return models


def _calibration(calibration: Calibration) -> dict:
    factors = []
    for key, (factor, cells) in calibration.factors.items():
        device, *model, task = key
        factors.append({"device": device, "model": model[0] if model else None, "task": task})
        factors[-1].update(factor=factor, cells=cells)
    return {
        "cells": calibration.samples,
        "fits": [
            {"size": size, "device": device, "a": r.a, "b": r.b, "cells": r.cells}
            | {"chosen": calibration.device.get(size) == device}
            for (size, device), r in sorted(calibration.fits.items())
        ],
        "factors": factors,
    }
