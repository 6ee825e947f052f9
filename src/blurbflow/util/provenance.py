"""Where a result came from: the code (git commit, package versions), the machine, the SLURM
job and the launch (the snakemake run's config files and `--config` overrides). Cells and jobs
record it in result.json; the report renders it for the whole study, and a failed cell's row the
command that re-runs it by hand."""

from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
from datetime import UTC, datetime
from importlib import metadata

import yaml

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
    """The host and SLURM job that ran a cell (sacct finds the job by this id), and the launch."""
    return {
        "host": platform.node(),
        "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
        "launch": launch(),
    }


# The launch: set by the workflow (workflow/rules/launch.smk) in the environment its jobs inherit
# (a SLURM job's snakemake re-reads the same files and `--config`), so recording it is no param
# and re-runs nothing.
LAUNCH_ENV = "BLURBFLOW_LAUNCH"
LAUNCHES = "results/logs/launches.jsonl"  # one line per snakemake run that started jobs
CELL_COMMAND = ".venv/bin/blurbflow cell"  # as a fresh clone has it after `make setup`


def launch_record(configfiles, overrides) -> dict:
    """{"configfiles": the files in order, relative to the workflow folder where inside it,
    "config": the `--config` overrides as Snakemake parsed them, by key}."""
    here = os.getcwd()
    files = []
    for name in configfiles:
        path = os.path.abspath(name)
        inside = os.path.commonpath([here, path]) == here
        files.append(os.path.relpath(path, here) if inside else path)
    # keys sorted: Snakemake keeps `--config` in a hash map, its order lost
    config = dict(sorted(_plain(overrides).items()))
    return {"configfiles": files, "config": json.loads(json.dumps(config))}


def _plain(value):
    """Snakemake's read-only mappings as dicts, for JSON."""
    if hasattr(value, "items"):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def launch() -> dict | None:
    """This run's launch record; None outside a workflow run (or unreadable)."""
    try:
        found = json.loads(os.environ.get(LAUNCH_ENV) or "null")
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def append_launch(path: str, record: dict, targets: list[str]) -> None:
    """One line of the launches file: when, with what config and for which targets."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    line = {"started": datetime.now(UTC).isoformat(timespec="seconds"), **record}
    with open(path, "a") as handle:
        handle.write(json.dumps({**line, "targets": targets}) + "\n")


def config_arg(key: str, value) -> str:
    """`key=value` as Snakemake's `--config` parses it back to `value` (blurbflow.train.
    debug_cell parses it with Snakemake's parser): int, float, True/False, else YAML."""
    if value is None:
        return f"{key}="
    if isinstance(value, bool | int | float):
        return f"{key}={value!r}"
    if isinstance(value, str) and _reads_as_text(value):
        return f"{key}={value}"
    text = yaml.safe_dump(value, default_flow_style=True, width=float("inf"))
    return f"{key}={text.removesuffix(YAML_END).strip()}"


YAML_END = "\n...\n"  # what safe_dump ends a lone scalar with


def _reads_as_text(value: str) -> bool:
    """Whether `--config k=value` gives back this very string (not a number, bool or YAML)."""
    for number in (int, float):
        try:
            number(value)
            return False
        except ValueError:
            pass
    if value in ("", "True", "False"):
        return False
    try:
        return yaml.load(value, Loader=yaml.BaseLoader) == value
    except yaml.YAMLError:
        return False


def launch_args(launch: dict | None) -> list[str]:
    """A launch as command-line words: `--configfile A B --config k=v …` (Snakemake's form;
    `blurbflow cell` takes the same)."""
    files = (launch or {}).get("configfiles") or []
    overrides = (launch or {}).get("config") or {}
    words = ["--configfile", *files] if files else []
    if overrides:
        words += ["--config", *(config_arg(k, v) for k, v in overrides.items())]
    return words


def cell_command(folder: str, launch: dict | None) -> str:
    """The command that re-runs the cell in `folder` by hand, with the config it ran with."""
    return shlex.join([*shlex.split(CELL_COMMAND), folder, *launch_args(launch)])


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
        "launched with": shlex.join(launch_args(launch())) or "n/a (not by snakemake)",
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
