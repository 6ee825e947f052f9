"""Every process that reads the Snakefile validates the config and expands it into fine-tuning
jobs: a dry run, a run, and each SLURM job's own Snakemake (two per job). For a paper-scale
config that is most of a second. The first process to do it leaves both, the config as validated
(the schema's defaults filled in) and its jobs, in `.snakemake/blurbflow/jobs-<key>.pickle`;
every later process with the same key loads them (tens of milliseconds) and only re-runs the
checks that read the file system. The key is the config as given (every key, the `--config`
ones too) and the code that validates and expands it (this package and the workflow's rules and
schema, by size and date): another config or a changed file is another key. A file that cannot
be read or written is worked around, never an error. Loading resolves only the package's own
classes (blurbflow.util.pickles): a planted file that names anything else is refused, not run."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
from pathlib import Path
from typing import NamedTuple

from blurbflow.util.pickles import PackageUnpickler

FOLDER = ".snakemake/blurbflow"
KEEP = 4  # files of other keys kept: a second config's dry run leaves a running one its jobs
PACKAGE = Path(__file__).parent


class Planned(NamedTuple):
    config: dict  # the config as validated: the schema's defaults filled in
    jobs: dict  # job folder -> blurbflow.config.CellJob


def _stamp(folders) -> list:
    """Every file under `folders` by size and date (caches left out): a change is another key."""
    return sorted(
        (str(path), stat.st_size, stat.st_mtime_ns)
        for folder in folders
        for path in Path(folder).rglob("*")
        if "__pycache__" not in path.parts and path.is_file() and (stat := path.stat())
    )


def cache_path(config: dict, code: list, folder: str | Path = FOLDER) -> Path:
    """The file of this config (as given, before validation) and `code` (folders whose files
    validate or expand it; this package is always one)."""
    blob = json.dumps([config, _stamp([PACKAGE, *code])], sort_keys=True, default=str)
    return Path(folder) / f"jobs-{hashlib.sha256(blob.encode()).hexdigest()[:16]}.pickle"


def load(path: Path) -> Planned | None:
    """What an earlier process left under this key; None when missing, unreadable, or naming
    anything but the package's own data classes."""
    try:
        with open(path, "rb") as handle:
            found = PackageUnpickler(handle).load()
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError):
        return None
    return Planned(*found) if isinstance(found, tuple) and len(found) == 2 else None


def save(path: Path, planned: Planned) -> None:
    """Written whole or not at all (a concurrent reader sees the old file or the new one); the
    oldest files of other keys beyond KEEP go."""
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(partial, "wb") as handle:
            pickle.dump(tuple(planned), handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(partial, path)
        others = sorted(
            (p for p in path.parent.glob("jobs-*") if p != path), key=lambda p: p.stat().st_mtime
        )
        for other in others[: max(len(others) - KEEP, 0)]:
            other.unlink(missing_ok=True)
    except OSError:
        partial.unlink(missing_ok=True)
