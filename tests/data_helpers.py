"""Shared by the data tests: writing hand-made raw files, generating and preparing a task."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

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
