"""Where a result came from: the code (git commit, package versions), the machine and the SLURM
job. Cells and jobs record it in result.json; the report renders it for the whole study."""

from __future__ import annotations

import os
import platform
import subprocess
from datetime import UTC, datetime
from importlib import metadata

CELL_PACKAGES = ("torch", "transformers", "blurbflow")  # recorded in every result.json
REPORT_PACKAGES = (
    "blurbflow",
    "torch",
    "transformers",
    "tokenizers",
    "snakemake",
    "seqeval",
    "scipy",
    "pandas",
)


def package_version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def git(*args: str) -> str | None:
    """Output of `git ARGS` in the working directory; None outside a repository or without git."""
    try:
        out = subprocess.run(["git", *args], capture_output=True, text=True, timeout=5)
    except OSError:
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def git_commit() -> str | None:
    return git("rev-parse", "HEAD")


def code_versions() -> dict:
    """The versions a cell ran with (result.json `versions`)."""
    return {
        "python": platform.python_version(),
        **{name: package_version(name) for name in CELL_PACKAGES},
    }


def where_run() -> dict:
    """The host and SLURM job that ran a cell (sacct finds the job by this id)."""
    return {"host": platform.node(), "slurm_job_id": os.environ.get("SLURM_JOB_ID")}


def _memory_gib() -> str:
    try:
        return f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB"
    except (ValueError, OSError, AttributeError):
        return "unknown"


def collect_provenance(config: dict, config_hash: str, cells) -> dict:
    """The report's provenance table: a flat key → value mapping."""
    dirty = git("status", "--porcelain", "--untracked-files=no")
    started = cells["started"].dropna() if "started" in cells else []
    finished = cells["finished"].dropna() if "finished" in cells else []
    devices = sorted(set(cells["device"].dropna())) if "device" in cells else []
    provenance = {
        "config hash": config_hash,
        "code version (config)": config.get("code_version", "1"),
        "git commit": (git_commit() or "unknown") + (" (uncommitted changes)" if dirty else ""),
        "data source": (config.get("data") or {}).get("source", "download"),
        "first cell started": min(started) if len(started) else "n/a",
        "last cell finished": max(finished) if len(finished) else "n/a",
        "report generated": datetime.now(UTC).isoformat(timespec="seconds"),
        "cell devices": ", ".join(devices) or "n/a",
        "report host": f"{platform.node()} ({platform.machine()}, {os.cpu_count()} CPUs, "
        f"{_memory_gib()} memory, {platform.system()} {platform.release()})",
        "python": platform.python_version(),
    }
    provenance.update({f"package {name}": package_version(name) for name in REPORT_PACKAGES})
    return provenance
