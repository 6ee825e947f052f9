"""Derived artefacts verify before use. The steps that write prepared data, tokenized caches and
built models record each file's sha256, size and mtime in the folder's `blurbflow-files.json`
(with the rule that writes it); whatever reads the folder checks it first, so a damaged file
re-runs its producer and never reaches a cell:

- the workflow, each time it is read (`damaged`, cheap: stat, then the sha256 only of a file
  whose size is the same but whose date changed): such a folder's producer is forced;
- the job that reads it (`verify`, strict: every sha256, which the cell's identity hashes anyway)
  fails before any seed with the file and the rule that rebuilds it, and flags the record
  `damaged`, so that the next workflow read re-runs that rule even when the date was kept; when
  all match it records the files' dates as they are now (Snakemake touches a rule's outputs).

A folder without a record (written before records were) is not checked."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from blurbflow.util.digests import file_sha256
from blurbflow.util.io import write_json_atomic

RECORD = "blurbflow-files.json"
# What each kind of derived folder holds and which rule writes it.
PRODUCERS = {"data": "prepare", "tokenized": "tokenize", "model": "build_demo_model"}


class DamagedArtefact(ValueError):
    """A derived file is not the one its producer wrote; names it and what rebuilds it."""


def file_record(path: str | os.PathLike) -> dict:
    stat = os.stat(path)
    return {"sha256": file_sha256(path), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def write_record(folder: str | os.PathLike, kind: str, names: Iterable[str] | None = None) -> dict:
    """Record `names` (default: every file of `folder` but Snakemake's and ours) of a folder
    that the rule of `kind` (PRODUCERS) has just written."""
    folder = Path(folder)
    if names is None:
        names = [
            p.relative_to(folder).as_posix()
            for p in folder.rglob("*")
            if p.is_file() and p.name not in (RECORD, ".snakemake_timestamp")
        ]
    record = {
        "producer": PRODUCERS[kind],
        "files": {name: file_record(folder / name) for name in sorted(names)},
    }
    write_json_atomic(folder / RECORD, record)
    return record


def read_record(folder: str | os.PathLike) -> dict | None:
    """The folder's record; None when it has none; {} when it is unreadable."""
    try:
        with open(Path(folder, RECORD), "rb") as handle:
            record = json.loads(handle.read())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def _file_problem(path: str, record, strict: bool) -> str | None:
    try:
        stat = os.stat(path)
    except OSError:
        return f"{path} is missing"
    if not isinstance(record, dict):
        return f"{path} has no valid record"
    if stat.st_size != record.get("size"):
        return f"{path} is damaged: {stat.st_size} bytes, {record.get('size')} when written"
    if not strict and stat.st_mtime_ns == record.get("mtime_ns"):
        return None
    if file_sha256(path, fresh=strict) != record.get("sha256"):
        return f"{path} is damaged: its sha256 differs from the one recorded when written"
    return None


def damaged(folder: str | os.PathLike, strict: bool = False) -> str | None:
    """What is wrong with a recorded folder (None when it verifies or has no record): a file
    missing, resized, or (checked when `strict`, else only when its date changed) of another
    sha256; or the record flagged `damaged` by a job that found it so."""
    record = read_record(folder)
    if record is None:
        return None
    files = record.get("files")
    if not isinstance(files, dict) or not files:
        return f"{Path(folder, RECORD)} is unreadable"
    if record.get("damaged"):
        return str(record["damaged"])
    prefix = os.path.join(os.fspath(folder), "")
    for name, entry in files.items():
        problem = _file_problem(prefix + name, entry, strict)
        if problem:
            return problem
    return None


def verify(folder: str | os.PathLike, what: str) -> None:
    """A job's check of a folder it reads (every sha256): DamagedArtefact naming the file and the
    rule that rebuilds it; the record is flagged so that the next workflow read re-runs that
    rule (whose output this folder is) even when the file's date was kept."""
    problem = damaged(folder, strict=True)
    record = read_record(folder) or {}
    if problem is None:
        _redate(folder, record)
        return
    producer = record.get("producer", "its producer")
    if isinstance(record.get("files"), dict) and not record.get("damaged"):
        write_json_atomic(Path(folder, RECORD), {**record, "damaged": problem})
    raise DamagedArtefact(
        f"{what}: {problem}. Nothing was read from it; rule {producer} rebuilds it: run "
        "snakemake again (it re-runs that rule, then this job)"
    )


def record_dates(folder: str | os.PathLike) -> None:
    """A folder whose files' dates were put back (blurbflow.stage_bytes): its record takes them,
    so the workflow's check stays stat-only."""
    record = read_record(folder)
    if record and isinstance(record.get("files"), dict):
        _redate(folder, record)


def _redate(folder, record: dict) -> None:
    """Every digest matched: record the dates the files have now (Snakemake touches a rule's
    output files after the job), so the workflow's check is stat-only again."""
    files = record.get("files") or {}
    dates = {name: os.stat(Path(folder, name)).st_mtime_ns for name in files}
    if any(entry.get("mtime_ns") != dates[name] for name, entry in files.items()):
        files = {name: {**entry, "mtime_ns": dates[name]} for name, entry in files.items()}
        write_json_atomic(Path(folder, RECORD), {**record, "files": files})


def damaged_folders(folders: Iterable[str]) -> dict[str, str]:
    """folder -> problem for the recorded folders among `folders` that do not verify (cheap)."""
    found = {}
    for folder in folders:
        problem = damaged(folder)
        if problem:
            found[folder] = problem
    return found
