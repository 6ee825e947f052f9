"""Shared by the data tests: writing and editing hand-made raw files, generating and preparing a
task, and the check that a failing prepare writes nothing."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from blurbflow.data.errors import DataFormatError
from blurbflow.data.generate import generate_source
from blurbflow.data.prepare import prepare_task
from blurbflow.tasks import get_task

SPLITS = ("train", "dev", "test")


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def generate_and_prepare(tmp_path_factory, task: str) -> tuple[Path, dict, dict[str, pd.DataFrame]]:
    """Generate every raw source of `task` (seed 0) and prepare it: (raw root, stats, frames)."""
    root = tmp_path_factory.mktemp(f"{task}-raw")
    for source in get_task(task).sources:
        generate_source(source, root / source, seed=0)
    out = tmp_path_factory.mktemp(f"{task}-out")
    stats = prepare_task(task, root, out)
    return root, stats, {s: pd.read_parquet(out / f"{s}.parquet") for s in SPLITS}


def replace_line(path: Path, number: int, new: str) -> str:
    """Replace line `number` (1-based) of a text file; returns the old line."""
    lines = path.read_text(encoding="utf-8").split("\n")
    old, lines[number - 1] = lines[number - 1], new
    path.write_text("\n".join(lines), encoding="utf-8")
    return old


def prepare_fails(
    task: str,
    raw_root: Path,
    out: Path,
    *fragments: str,
    line: int | None = None,
    kind: type[Exception] | None = None,
) -> Exception:
    """Preparing `task` raises `kind` (default DataFormatError) whose message holds every
    fragment (and `:{line}:` with its line, when given), and leaves `out` empty or absent."""
    with pytest.raises(kind or DataFormatError) as caught:
        prepare_task(task, raw_root, out)
    for fragment in fragments:
        assert fragment in str(caught.value), str(caught.value)
    if line is not None:
        assert caught.value.line == line and f":{line}:" in str(caught.value), str(caught.value)
    assert not out.exists() or not any(out.iterdir()), sorted(out.iterdir())
    return caught.value
