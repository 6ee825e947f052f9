"""Run snakemake on a copy of the workflow in a temporary folder, and read its dry runs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORKFLOW_FILES = ("Snakefile", "config.yaml", "config", "workflow", "envs", "slurm", "profiles")


def copy_workflow(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for name in WORKFLOW_FILES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, dest / name, dirs_exist_ok=True)
        elif source.exists():
            shutil.copy2(source, dest / name)
    return dest


def _env(extra: dict | None = None) -> dict:
    """The caller's environment without the venv's bin on PATH and without PYTHONPATH, as a user
    who never activated the venv has it (rules must find the CLI themselves), plus `extra`."""
    bin_dir = Path(sys.executable).parent
    path = os.pathsep.join(
        entry
        for entry in os.environ.get("PATH", "").split(os.pathsep)
        if entry and Path(entry).resolve() != bin_dir.resolve()
    )
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return {**env, "PATH": path, **(extra or {})}


def _command(*args: str) -> list[str]:
    return [os.path.join(Path(sys.executable).parent, "snakemake"), *args]


def snakemake(
    workdir: Path, *args: str, timeout: int = 1200, env: dict | None = None
) -> subprocess.CompletedProcess:
    """Run the venv's snakemake in `workdir` and wait for it."""
    return subprocess.run(
        _command(*args),
        cwd=workdir,
        env=_env(env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def snakemake_process(workdir: Path, *args: str, env: dict | None = None) -> subprocess.Popen:
    """Start the venv's snakemake in `workdir` without waiting (communicate() collects it)."""
    return subprocess.Popen(
        _command(*args),
        cwd=workdir,
        env=_env(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def planned_jobs(dry_run_output: str) -> dict[str, list[str]]:
    """rule name -> the first output of each job a dry run plans."""
    jobs: dict[str, list[str]] = {}
    # Jobs of a group (short-cells) are printed indented inside their group's block.
    for block in re.split(r"\n(?=[ \t]*(?:local)?rule \S+:)", dry_run_output):
        match = re.match(r"(?:local)?rule (\S+):", block.strip())
        if not match:
            continue
        output = re.search(r"^\s+output: ([^,\n]+)", block, re.M)
        jobs.setdefault(match.group(1), []).append(output.group(1) if output else "")
    return jobs


def fake_outputs(workdir: Path, summary: str, mtime: float = 1e9) -> list[str]:
    """Every file a `snakemake --summary` lists, written empty-ish with one old date (job
    manifests as empty manifests), so a later dry run sees an up-to-date tree and only the
    dates a test then moves decide what is planned. Returns the listed files."""
    files = [line.split("\t")[0] for line in summary.splitlines()[2:] if "\t" in line]
    for name in files:
        path = workdir / name
        if "." in path.name:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text('{"seeds": {}, "files": {}}' if path.name == "seeds.json" else "x")
        else:
            path.mkdir(parents=True, exist_ok=True)
        os.utime(path, (mtime, mtime))
    return files


def cut_published(study: dict) -> dict:
    """A narrowed study's `published:` values cut to its own rows and columns (config/demo.yaml's
    stand-in values name every demo task and recipe; an entry the study does not show is a
    config error)."""
    values = (study.get("published") or {}).get("values")
    if values:
        shown = {*study.get("models", ()), *study.get("tasks", ()), *study.get("recipes", ())}
        shown.add("blurb")

        def keep(key: str) -> bool:
            return all(part in shown for part in key.split(" / "))

        rows = {
            row: {col: v for col, v in cols.items() if keep(col)}
            if isinstance(cols, dict)
            else cols
            for row, cols in values.items()
            if keep(row)
        }
        rows = {row: cols for row, cols in rows.items() if cols != {}}
        if rows:
            study["published"]["values"] = rows
        else:
            del study["published"]  # nothing of it is shown
    return study
