"""Every process that reads the Snakefile needs the config's fine-tuning jobs: a dry run, a run,
and each SLURM job's own Snakemake (two per job). Expanding a paper-scale config into its cells
is most of a second; the first process to do it leaves the jobs in
`.snakemake/blurbflow/jobs-<key>.pickle`, and every later process with the same key loads them
(tens of milliseconds). The key is the config, as Snakemake holds it after validation (every
key, the `--config` ones too), and this package's code: another config or a changed module is
another key, expanded afresh. A file that cannot be read or written is expanded around, never
an error."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
from collections.abc import Callable
from pathlib import Path

FOLDER = ".snakemake/blurbflow"
KEEP = 4  # files of other keys kept: a second config's dry run leaves a running one its jobs


def _code_stamp() -> list:
    """The package's modules by size and date: a changed module is another key."""
    root = Path(__file__).parent
    return sorted(
        (str(path.relative_to(root)), stat.st_size, stat.st_mtime_ns)
        for path in root.rglob("*.py")
        if (stat := path.stat())
    )


def jobs_path(config: dict, folder: str | Path = FOLDER) -> Path:
    """The jobs file of this config and code."""
    blob = json.dumps([config, _code_stamp()], sort_keys=True, default=str)
    return Path(folder) / f"jobs-{hashlib.sha256(blob.encode()).hexdigest()[:16]}.pickle"


def load_jobs(path: Path) -> dict | None:
    """{job folder: CellJob} from the file; None when it is missing or unreadable."""
    try:
        with open(path, "rb") as handle:
            jobs = pickle.load(handle)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError):
        return None
    return jobs if isinstance(jobs, dict) else None


def save_jobs(path: Path, jobs: dict) -> None:
    """Written whole or not at all (a concurrent reader sees the old file or the new one); the
    oldest files of other keys beyond KEEP go."""
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(partial, "wb") as handle:
            pickle.dump(jobs, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(partial, path)
        others = sorted(
            (p for p in path.parent.glob("jobs-*") if p != path), key=lambda p: p.stat().st_mtime
        )
        for other in others[: max(len(others) - KEEP, 0)]:
            other.unlink(missing_ok=True)
    except OSError:
        partial.unlink(missing_ok=True)


def cached_jobs(config: dict, expand: Callable[[dict], dict], folder: str | Path = FOLDER):
    """The config's jobs: from the file of its key, else `expand(config)`, then saved."""
    path = jobs_path(config, folder)
    jobs = load_jobs(path)
    if jobs is None:
        jobs = expand(config)
        save_jobs(path, jobs)
    return jobs
