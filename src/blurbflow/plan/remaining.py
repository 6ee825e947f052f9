"""What a run would still train, read cheaply (no hashing unless a stale manifest's file
changed mtime, no verification of predictions): a job runs when its manifest `seeds.json` is
missing or stale (blurbflow.config.identity.stale_manifests), when its seeds differ from those the
manifest records, or when a seed still has to train; a seed trains unless its result.json is
finished (status ok or diverged) with exactly the options the config gives that seed (after
the job's `hparams_from` selection, when there is one) and, if its manifest is stale, its
files still match the manifest's records. A job whose every seed is kept still runs (and
submits), training nothing."""

from __future__ import annotations

import json
import os
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property

from blurbflow.config import CellJob, input_key
from blurbflow.config.grid import with_selection
from blurbflow.config.identity import record_matches, stale_manifests
from blurbflow.options import CellOptions, options_json
from blurbflow.plan.calibrate import Sample, recorded_tokens, sample_of
from blurbflow.record.schema import FINISHED


@dataclass(frozen=True)
class JobState:
    seeds: tuple[int, ...]  # the seeds that will train
    runs: bool  # the job runs (and is submitted), even when it trains no seed


@dataclass
class Scan:
    states: dict[str, JobState]  # job folder -> what it still does
    samples: list[Sample]  # every ok result's timing, for the calibration
    instances: dict[tuple, int]  # (task, train_subsample, train_on) -> training instances seen
    # (model, task, max_length, train_subsample, train_on) -> tokens of an epoch, an evaluation
    tokens: dict[tuple, tuple[int, int]] = field(default_factory=dict)

    def fill(self, task: str) -> float:
        """The median share of max_length the task's finished cells filled (any task's without
        its own; 1 with none: padded, as the table counts)."""
        return self._fills.get(task, self._fills.get(None, 1.0))

    @cached_property
    def _fills(self) -> dict[str | None, float]:
        """Per task, and under None over all, the median fill of the samples that record it:
        computed once, read for every job still to run."""
        by_task: dict[str | None, list[float]] = defaultdict(list)
        for sample in self.samples:
            if sample.fill is not None:
                by_task[sample.task].append(sample.fill)
                by_task[None].append(sample.fill)
        return {task: statistics.median(fills) for task, fills in by_task.items()}


def tokens_key(model: str, options: dict) -> tuple:
    """The key of Scan.tokens for a cell of `model` with these options (CellOptions.to_dict)."""
    return (
        model,
        options.get("task"),
        options.get("max_length"),
        options.get("train_subsample"),
        options.get("train_on"),
    )


def read_json(path: str) -> dict | None:
    try:
        with open(path, "rb") as handle:
            found = json.loads(handle.read())
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def selected(options: CellOptions, root: str) -> CellOptions:
    """A final job's options with its search's choice, once made (else as configured)."""
    try:
        return with_selection(options, root, missing_ok=True)
    except (ValueError, KeyError, TypeError):
        return options  # an unreadable selection: the selection step writes it again


def cached_tokens(job: CellJob, root: str) -> tuple[float, int] | None:
    """(tokens per training instance, tokens of an evaluation) from the job's tokenized cache
    (the meta.json of blurbflow.train.encode); None before the cache is written."""
    key = input_key(job.task, job.options.inputs)
    path = os.path.join(root, "resources", "tokenized", job.model, job.task, key, "meta.json")
    try:
        splits = (read_json(path) or {})["splits"]
        train = splits["train"]
        per_instance = int(train["tokens"]) / int(train["instances"])
        evaluated = sum(int(splits[split]["tokens"]) for split in ("dev", "test"))
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None
    return per_instance, evaluated


def scaled(rates: tuple[float, int], instances: int) -> tuple[int, int]:
    """(tokens of an epoch, of an evaluation) of cached_tokens' rates for the instances a cell
    trains on (a subsample: fewer)."""
    return round(rates[0] * instances), rates[1]


def scan(jobs: dict[str, CellJob], sizes: dict[str, str], root: str = ".") -> Scan:
    """Every job's state, and the timings of its finished cells. `sizes`: model -> size."""
    manifests = {path: os.path.join(root, path, "seeds.json") for path in jobs}
    missing: list[str] = []
    stale = set(stale_manifests(list(manifests.values()), missing))
    absent = set(missing)
    states, samples, instances, tokens = {}, [], {}, {}
    for path, job in jobs.items():
        manifest = manifests[path]
        recorded = {} if manifest in absent else (read_json(manifest) or {}).get("files") or {}
        expected = selected(job.options, root).to_dict()
        todo, cache = [], None
        for seed in job.seeds:
            folder = os.path.join(root, path, f"seed{seed}")
            result = read_json(os.path.join(folder, "result.json"))
            if result is None:
                todo.append(seed)
                continue
            cached = None  # a result written before result.json recorded its tokens
            if recorded_tokens(result) is None and isinstance(result.get("train_instances"), int):
                if cache is None:  # the job's tokenized cache, read once for its seeds
                    cache = cached_tokens(job, root) or ()
                cached = scaled(cache, result["train_instances"]) if cache else None
            sample = sample_of(result, path, job.model, job.task, sizes[job.model], cached)
            if sample is not None:
                samples.append(sample)
                options = result["options"]
                key = (job.task, options.get("train_subsample"), options.get("train_on"))
                instances.setdefault(key, int(result["train_instances"]))
                if (counted := recorded_tokens(result)) is not None:
                    tokens.setdefault(tokens_key(job.model, options), counted)
            finished = result.get("status") in FINISHED and isinstance(result.get("options"), dict)
            if not finished or options_json(result["options"]) != options_json(
                {**expected, "seed": seed}
            ):
                todo.append(seed)
            elif manifest in stale and not _files_match(folder, recorded.get(str(seed))):
                todo.append(seed)
        runs = bool(todo) or manifest in stale or manifest in absent
        runs = runs or set(recorded) != {str(seed) for seed in job.seeds}
        states[path] = JobState(tuple(todo), runs)
    return Scan(states, samples, instances, tokens)


def _files_match(folder: str, records) -> bool:
    """Whether a seed's files are still those its (stale) manifest recorded."""
    if not isinstance(records, dict) or not records:
        return True  # not recorded: the job's run decides; the result's own check passed
    return all(record_matches(os.path.join(folder, name), r) for name, r in records.items())
