"""What a reader needs to trust a report: which config, code, packages, machine and dates."""

from __future__ import annotations

import os
import platform
import subprocess
from datetime import UTC, datetime
from importlib import metadata

PACKAGES = (
    "blurbflow",
    "torch",
    "transformers",
    "tokenizers",
    "snakemake",
    "seqeval",
    "scipy",
    "pandas",
)


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], capture_output=True, text=True, timeout=5)
    except OSError:
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _memory_gib() -> str:
    try:
        return f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB"
    except (ValueError, OSError, AttributeError):
        return "unknown"


def collect_provenance(config: dict, config_hash: str, cells) -> dict:
    """A flat key → value mapping rendered as the report's provenance table."""
    dirty = _git("status", "--porcelain", "--untracked-files=no")
    started = cells["started"].dropna() if "started" in cells else []
    finished = cells["finished"].dropna() if "finished" in cells else []
    devices = sorted(set(cells["device"].dropna())) if "device" in cells else []
    provenance = {
        "config hash": config_hash,
        "code version (config)": config.get("code_version", "1"),
        "git commit": (_git("rev-parse", "HEAD") or "unknown")
        + (" (uncommitted changes)" if dirty else ""),
        "data source": (config.get("data") or {}).get("source", "download"),
        "first cell started": min(started) if len(started) else "n/a",
        "last cell finished": max(finished) if len(finished) else "n/a",
        "report generated": datetime.now(UTC).isoformat(timespec="seconds"),
        "cell devices": ", ".join(devices) or "n/a",
        "report host": f"{platform.node()} ({platform.machine()}, {os.cpu_count()} CPUs, "
        f"{_memory_gib()} memory, {platform.system()} {platform.release()})",
        "python": platform.python_version(),
    }
    provenance.update({f"package {name}": _version(name) for name in PACKAGES})
    return provenance
