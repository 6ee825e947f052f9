"""Collect every cell's result.json into one frame, results/cells.parquet (DESIGN §8).

A cell that never wrote its result is a row with status "missing" and one whose file cannot be
read is "failed", so the tables and the report account for every cell the study asked for.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from blurbflow.io import write_parquet_atomic
from blurbflow.tasks.registry import TASKS

IDENTITY = ["model", "task", "recipe", "hparams", "seed"]
GROUP = ["model", "task", "recipe"]  # hparams are selected within each group
STATUSES = ("ok", "diverged", "failed", "missing")
NUMERIC = [
    "dev", "test", "chance_dev", "chance_test", "wall_seconds", "gpu_hours", "peak_memory_mb",
]
TEXT = ["task_type", "metric", "status", "error", "device", "started", "finished", "git_commit"]
JSON_COLUMNS = ["options", "epochs", "versions"]  # nested fields, kept as JSON strings
COLUMNS = [
    *IDENTITY, "task_type", "metric", "status", "error", "dev", "test", "selected_epoch",
    "chance_dev", "chance_test", "wall_seconds", "gpu_hours", "peak_memory_mb", "device",
    "started", "finished", "git_commit", *JSON_COLUMNS, "path",
]


def identity_from_path(path: str | os.PathLike) -> dict:
    """Parse `.../{model}/{task}/{recipe}/{hparams}/seed{seed}/result.json`."""
    parts = Path(path).parts
    if len(parts) < 6 or not parts[-2].startswith("seed"):
        raise ValueError(
            f"{path}: expected .../{{model}}/{{task}}/{{recipe}}/{{hparams}}/seed{{N}}/result.json"
        )
    model, task, recipe, hparams, seed_dir = parts[-6:-1]
    return {
        "model": model, "task": task, "recipe": recipe, "hparams": hparams,
        "seed": int(seed_dir.removeprefix("seed")),
    }


def _number(value) -> float:
    """Float or NaN: JSON null, missing and non-numeric values all become NaN."""
    try:
        return float(value) if value is not None else math.nan
    except (TypeError, ValueError):
        return math.nan


def _task_facts(task: str | None) -> dict:
    spec = TASKS.get(task or "")
    return {"task_type": spec.type, "metric": spec.metric} if spec else {}


def _row_from_result(result: dict, path: Path) -> dict:
    if not isinstance(result, dict) or not isinstance(result.get("cell"), dict):
        raise ValueError("no 'cell' object with the cell's identity")
    row = {key: result["cell"].get(key) for key in IDENTITY}
    row["seed"] = int(row["seed"])
    row.update(_task_facts(row["task"]))
    row.update({key: result[key] for key in TEXT if result.get(key) is not None})
    row.update({key: _number(result.get(key)) for key in NUMERIC})
    selected = result.get("selected_epoch")
    row["selected_epoch"] = int(selected) if selected is not None else None
    for key in JSON_COLUMNS:
        row[key] = json.dumps(result.get(key), sort_keys=True, default=str)
    if row.get("status") not in ("ok", "diverged", "failed"):
        row["error"] = f"unknown status {row.get('status')!r} in result.json"
        row["status"] = "failed"
    return row


def load_cell(path: str | os.PathLike) -> dict:
    """One row for one cell's result.json, whatever state the file is in."""
    path = Path(path)
    try:
        identity = identity_from_path(path)
    except ValueError:
        identity = dict.fromkeys(IDENTITY)
    base = {**identity, **_task_facts(identity["task"]), "path": str(path)}
    if not path.exists():
        return {**base, "status": "missing", "error": f"no result at {path}"}
    try:
        result = json.loads(path.read_text(encoding="utf-8"))
        return {**base, **_row_from_result(result, path)}
    except (OSError, ValueError, TypeError, KeyError) as error:
        return {**base, "status": "failed", "error": f"unreadable {path}: {error}"}


def load_cells(paths: Iterable[str | os.PathLike]) -> pd.DataFrame:
    """One row per cell (see COLUMNS), in the order of `paths`."""
    frame = pd.DataFrame([load_cell(path) for path in paths], columns=COLUMNS)
    return normalise_types(frame)


def normalise_types(frame: pd.DataFrame) -> pd.DataFrame:
    """Stable dtypes so parquet files of different runs concatenate and compare."""
    frame = frame.copy()
    frame["seed"] = frame["seed"].astype("Int64")
    frame["selected_epoch"] = frame["selected_epoch"].astype("Int64")
    for column in NUMERIC:
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("float64")
    for column in IDENTITY[:4] + TEXT + JSON_COLUMNS + ["path"]:
        frame[column] = frame[column].astype("object").where(frame[column].notna(), None)
    return frame


def write_cells(frame: pd.DataFrame, path: str | os.PathLike) -> None:
    write_parquet_atomic(path, frame)


def select_hparams(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (model, task, recipe) keep every seed of the hparams with the best mean dev metric.

    The mean is over seeds with status ok (Gu et al. select hyperparameters on dev, averaged
    over seeds). Ties, and groups where no hparams has an ok seed, go to the first hparams in
    sorted order, so failed groups stay visible in the tables instead of vanishing.
    """
    if frame.empty:
        return frame.copy()
    ok = frame[(frame["status"] == "ok") & frame["dev"].notna()]
    mean_dev = ok.groupby([*GROUP, "hparams"])["dev"].mean()
    keep = []
    for (model, task, recipe), group in frame.groupby(GROUP, sort=False, dropna=False):
        candidates = sorted(group["hparams"].dropna().unique())
        scores = [mean_dev.get((model, task, recipe, h), -math.inf) for h in candidates]
        if not candidates:  # cells whose identity could not be read: keep them visible
            keep.append(group)
            continue
        best = candidates[scores.index(max(scores))]
        keep.append(group[group["hparams"] == best])
    return pd.concat(keep).reset_index(drop=True) if keep else frame.iloc[:0].copy()
