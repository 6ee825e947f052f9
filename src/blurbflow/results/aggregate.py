"""Collect every cell's result.json into one frame, results/cells.parquet (DESIGN §8).

A cell that never wrote its result is a row with status "missing" and one whose file cannot be
read is "failed", so the tables and the report account for every cell the study asked for.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable

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
    parts = os.path.normpath(os.fspath(path)).split(os.sep)  # str ops: 20k paths, no Path()
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


# One encoder for every nested field (json.dumps with options builds a new one per call).
_encode_json = json.JSONEncoder(sort_keys=True, default=str, separators=(",", ":")).encode


def _row_from_result(result: dict) -> dict:
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
        row[key] = _encode_json(result.get(key))
    if row.get("status") not in ("ok", "diverged", "failed"):
        row["error"] = f"unknown status {row.get('status')!r} in result.json"
        row["status"] = "failed"
    return row


def load_cell(path: str | os.PathLike) -> dict:
    """One row for one cell's result.json, whatever state the file is in."""
    path = os.fspath(path)
    try:
        identity = identity_from_path(path)
    except ValueError:
        identity = dict.fromkeys(IDENTITY)
    base = {**identity, **_task_facts(identity["task"]), "path": path}
    try:
        with open(path, "rb") as handle:
            result = json.loads(handle.read())
        return {**base, **_row_from_result(result)}
    except FileNotFoundError:
        return {**base, "status": "missing", "error": f"no result at {path}"}
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


def _key(frame: pd.DataFrame, columns: list[str]) -> pd.Series:
    """One string per row joining `columns` (None/NaN kept distinct as 'None'), for fast
    vectorised grouping and membership tests."""
    key = frame[columns[0]].astype("object").where(frame[columns[0]].notna(), None).astype(str)
    for column in columns[1:]:
        values = frame[column].astype("object").where(frame[column].notna(), None).astype(str)
        key = key + "\x1f" + values
    return key


def select_hparams(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (model, task, recipe) keep every seed of the hparams with the best mean dev metric.

    The mean is over seeds with status ok (Gu et al. select hyperparameters on dev, averaged
    over seeds). Ties, and groups where no hparams has an ok seed, go to the first hparams in
    sorted order, so failed groups stay visible in the tables instead of vanishing. Rows keep
    their order in `frame`.
    """
    if frame.empty:
        return frame.copy()
    group = _key(frame, GROUP)
    has_hparams = frame["hparams"].notna()
    full = group + "\x1f" + frame["hparams"].astype(str)
    ok = (frame["status"] == "ok") & frame["dev"].notna() & has_hparams
    mean_dev = frame.loc[ok, "dev"].groupby(full[ok]).mean()
    candidates = pd.DataFrame(
        {"group": group[has_hparams], "full": full[has_hparams],
         "hparams": frame.loc[has_hparams, "hparams"].astype(str)}
    ).drop_duplicates("full")
    candidates["score"] = candidates["full"].map(mean_dev).astype("float64").fillna(-math.inf)
    best = candidates.sort_values(
        ["group", "score", "hparams"], ascending=[True, False, True], kind="stable"
    ).drop_duplicates("group")
    # cells whose identity could not be read (no hparams in their group) stay visible
    keep = full.isin(best["full"]) & has_hparams | ~group.isin(candidates["group"])
    return frame[keep].reset_index(drop=True)
