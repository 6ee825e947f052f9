"""A SLURM job's own Snakemake reads the Snakefile again before it starts its script, and
expanding every study of a paper-scale config into its cells took most of that start-up (docs/
slurm.md "Before a job's script starts"). The main process leaves its fine-tuning jobs (each one's
options and seeds, as the rule's params carry them) in a hand-off file keyed by the config and
this package's code; a job process that runs only fine-tuning jobs takes its own from there, and
expands the config itself wherever the file, or its job in it, is missing."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from blurbflow.config import CellJob
from blurbflow.options import CellOptions
from blurbflow.util import paths

HANDOFF_FOLDER = ".snakemake/blurbflow"


def _code_stamp() -> list:
    """The package's modules by size and date: a changed module is another key."""
    root = Path(__file__).parent
    return sorted(
        (str(path.relative_to(root)), stat.st_size, stat.st_mtime_ns)
        for path in root.rglob("*.py")
        if (stat := path.stat())
    )


def handoff_path(config: dict, folder: str | Path = HANDOFF_FOLDER) -> Path:
    """The hand-off file of this config (every key, as the job process receives it) and code."""
    blob = json.dumps([config, _code_stamp()], sort_keys=True, default=str)
    return Path(folder) / f"jobs-{hashlib.sha256(blob.encode()).hexdigest()[:16]}.json"


def write_handoff(path: Path, jobs: dict) -> None:
    """The main process: its fine-tuning jobs (job folder -> options, seeds), once per key,
    written whole or not at all; hand-off files of other keys go. Where it cannot be written,
    the jobs expand the config themselves."""
    if path.exists():
        return
    data = {
        key: {"options": job.options.to_dict(), "seeds": list(job.seeds)}
        for key, job in jobs.items()
    }
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(json.dumps(data, sort_keys=True))
        os.replace(partial, path)
        for other in path.parent.glob("jobs-*.json"):
            if other != path:
                other.unlink(missing_ok=True)
    except OSError:
        partial.unlink(missing_ok=True)


def target_jobs(argv: list[str]) -> list[tuple[str, dict]]:
    """A job process's `--target-jobs RULE:KEY=VALUE,… …` from its command line, as (rule,
    wildcards) pairs (Snakemake fills `workflow.dag_settings` only after reading the Snakefile);
    [] without them."""
    if "--target-jobs" not in argv:
        return []
    found = []
    for entry in argv[argv.index("--target-jobs") + 1 :]:
        if entry.startswith("-"):
            break
        rule, _, wildcards = entry.partition(":")
        pairs = [item.partition("=") for item in wildcards.split(",") if item]
        if any(not sep for _, sep, _ in pairs):
            return []
        found.append((rule, {key: value for key, _, value in pairs}))
    return found


def read_handoff(path: Path, targets) -> dict | None:
    """A job process: its target fine-tuning jobs (Snakemake's `--target-jobs`, as (rule,
    wildcards) pairs) as the main process planned them, as {job folder: CellJob}; None where
    a target is no fine-tuning job, or the file or a target in it is missing (the caller then
    expands the config itself)."""

    wanted = {}
    for rule, wildcards in targets:
        if rule != "finetune":
            return None
        try:
            parts = [wildcards[key] for key in ("model", "task", "recipe", "hparams")]
        except KeyError:
            return None
        wanted[paths.job_folder(*parts)] = parts
    if not wanted:
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not set(wanted) <= set(data):
        return None
    return {
        key: CellJob(
            *parts,
            CellOptions.from_dict(data[key]["options"], where=key),
            tuple(data[key]["seeds"]),
        )
        for key, parts in wanted.items()
    }
