"""Collect every cell's result.json into one frame, results/cells.parquet, whose columns are
the fields record/schema.py marks as columns (in its order).

A cell that never wrote its result is a row with status "missing" and one whose file cannot be
read is "failed", so the tables and the report account for every cell the study asked for.
`aggregate` verifies each finished cell first (blurbflow.record.verify, against the config's
options and its job's manifest): one that does not verify is a `failed` row whose error starts
with "rejected: " and says why — never a table number — and its job's manifest is removed so
that the next run retrains it.

Re-scoring: the sha256 of every result.json and predictions.parquet is checked against the
manifest always, so the files are those the job wrote after computing (or, for a kept seed,
re-scoring) the test metric from those very predictions. Re-scoring every cell again here costs
hours at paper scale (seqeval on NER test sets: seconds per cell; benchmarks/verify_scale.py),
so by default only cells without a manifest record (the partial report of a failed run) are
re-scored; `rescore=True` (`blurbflow aggregate --rescore`) re-scores all of them.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path

import pandas as pd

from blurbflow.config import expand_cells
from blurbflow.config.grid import with_selection
from blurbflow.util.io import write_parquet_atomic
from blurbflow.options import CellOptions
from blurbflow.record.earlier import describe as describe_earlier
from blurbflow.record.schema import (
    CELL_KEYS,
    COLUMNS,
    FINISHED,
    INTEGER_COLUMNS,
    JSON_COLUMNS,
    NUMERIC,
    OPTION_COLUMNS,
    TEXT_COLUMNS,
    Result,
    identity_from_path,
)
from blurbflow.record.verify import verify_result
from blurbflow.tasks.registry import TASKS

IDENTITY = list(CELL_KEYS)  # the cell's key columns, first in the frame
GROUP = ["model", "task", "recipe"]  # hparams are selected within each group


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


def _row_from_result(result: Result) -> dict:
    if not isinstance(result, dict) or not isinstance(result.get("cell"), dict):
        raise ValueError("no 'cell' object with the cell's identity")
    row = {key: result["cell"].get(key) for key in IDENTITY}
    row["seed"] = int(row["seed"])
    row.update(_task_facts(row["task"]))
    row.update({key: result[key] for key in TEXT_COLUMNS if result.get(key) is not None})
    row.update({key: _number(result.get(key)) for key in NUMERIC})
    for key in INTEGER_COLUMNS:
        row[key] = int(result[key]) if result.get(key) is not None else None
    for key in JSON_COLUMNS:
        row[key] = _encode_json(result.get(key))
    options = result.get("options")
    row.update(_option_columns(options if isinstance(options, dict) else {}))
    if row.get("status") not in (*FINISHED, "failed"):
        row["error"] = f"unknown status {row.get('status')!r} in result.json"
        row["status"] = "failed"
    return row


def _option_columns(options: dict) -> dict:
    return {key: options[key] for key in OPTION_COLUMNS if options.get(key) is not None}


def with_earlier(row: dict) -> dict:
    """A failed or missing row names the earlier result its seed kept aside (blurbflow.record.
    earlier): listed in the report, never counted."""
    if row.get("status") in ("failed", "missing"):
        line = describe_earlier(os.path.dirname(row["path"]))
        if line:
            row["error"] = f"{row.get('error') or ''}\n{line}".lstrip()
    return row


def load_cell(
    path: str | os.PathLike,
    options: CellOptions | None = None,
    manifest: dict | None = None,
    rescore: bool | None = None,
) -> dict:
    """One row for one cell's result.json, whatever state the file is in. With the `options`
    the config gives the cell, a finished result is verified first (with its job's `manifest`
    when there is one) and a rejected one becomes a failed row saying why. A row without a
    readable result takes its option columns (`head`) from `options`."""
    row = with_earlier(_load_cell(os.fspath(path), options, manifest, rescore))
    if options is not None:
        for key in OPTION_COLUMNS:  # getattr: to_dict per cell is slower at 40k cells
            if row.get(key) is None:
                row[key] = getattr(options, key)
    return row


def _load_cell(path: str, options, manifest, rescore) -> dict:
    try:
        identity = identity_from_path(path)
    except ValueError:
        identity = dict.fromkeys(IDENTITY)
    base = {**identity, **_task_facts(identity["task"]), "path": path}
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
        result = json.loads(raw)
        row = {**base, **_row_from_result(result)}
    except FileNotFoundError:
        return {**base, "status": "missing", "error": f"no result at {path}"}
    except (OSError, ValueError, TypeError, KeyError) as error:
        return {**base, "status": "failed", "error": f"unreadable {path}: {error}"}
    if options is not None and row["status"] in ("ok", "diverged"):
        problem = _verify(path, raw, result, options, manifest, rescore)
        if problem:  # counted as the cell of its folder, whatever the file claims
            row.update(identity, **_task_facts(identity["task"]))
            row.update(status="failed", error=f"{REJECTED}{problem}")
    return row


REJECTED = "rejected: "


def _verify(path, raw: bytes, result: dict, options: CellOptions, manifest, rescore: bool | None):
    identity, predictions = None, None
    if rescore is None:  # re-score only what no manifest vouches for
        rescore = manifest is None
    if manifest is not None:  # absent only in the report of a failed run
        records = (manifest.get("files") or {}).get(str(options.seed))
        if not isinstance(records, dict):
            return "its job's manifest does not list this seed"
        if hashlib.sha256(raw).hexdigest() != records.get("result.json", {}).get("sha256"):
            return "result.json is not the file its job wrote (changed since)"
        identity = manifest.get("identity") or {}
        predictions = records.get("predictions.parquet", {}).get("sha256")
    return verify_result(path, result, options, identity, predictions, rescore)


def _read_manifest(job_dir: str) -> dict | None:
    try:
        with open(os.path.join(job_dir, "seeds.json"), "rb") as handle:
            manifest = json.loads(handle.read())
        return manifest if isinstance(manifest, dict) else {}
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}  # unreadable: every seed is rejected, the job re-runs


def aggregate(
    config: dict,
    root: str | os.PathLike = ".",
    rescore: bool | None = None,
    drop: bool = True,
    adaptive: dict | None = None,
    studies: list[str] | None = None,
) -> pd.DataFrame:
    """Every cell of the config's studies (or of `studies`), verified (see the module's doc);
    with `drop`, the manifest of each job with a rejected seed is removed so that the next run
    retrains it. `adaptive`: the seeds each adaptive cell has (blurbflow.config.expand_cells)."""
    rows, manifests = [], {}
    root = "" if os.fspath(root) == "." else os.fspath(root)  # keep paths as the rules write them
    for folder, cell in expand_cells(config, studies, adaptive).items():
        job = os.path.join(root, folder.rsplit("/", 1)[0])
        if job not in manifests:
            manifests[job] = _read_manifest(job)
        path = os.path.join(root, folder, "result.json")
        options = with_selection(cell.options, root, missing_ok=True)  # `hparams_from`
        rows.append(load_cell(path, options, manifests[job], rescore))
    frame = normalise_types(pd.DataFrame(rows, columns=COLUMNS))
    if drop:
        rejected = frame.loc[frame["error"].fillna("").str.startswith(REJECTED), "path"]
        for job in sorted({os.path.dirname(os.path.dirname(p)) for p in rejected}):
            Path(job, "seeds.json").unlink(missing_ok=True)
    return frame


def normalise_types(frame: pd.DataFrame) -> pd.DataFrame:
    """Stable dtypes so parquet files of different runs concatenate and compare."""
    frame = frame.copy()
    for column in ["seed", *INTEGER_COLUMNS]:
        frame[column] = frame[column].astype("Int64")
    for column in NUMERIC:
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("float64")
    for column in IDENTITY[:4] + TEXT_COLUMNS + JSON_COLUMNS + OPTION_COLUMNS + ["path"]:
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


def best_grid_points(frame: pd.DataFrame) -> pd.DataFrame:
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
        {
            "group": group[has_hparams],
            "full": full[has_hparams],
            "hparams": frame.loc[has_hparams, "hparams"].astype(str),
        }
    ).drop_duplicates("full")
    candidates["score"] = candidates["full"].map(mean_dev).astype("float64").fillna(-math.inf)
    best = candidates.sort_values(
        ["group", "score", "hparams"], ascending=[True, False, True], kind="stable"
    ).drop_duplicates("group")
    # cells whose identity could not be read (no hparams in their group) stay visible
    keep = full.isin(best["full"]) & has_hparams | ~group.isin(candidates["group"])
    return frame[keep].reset_index(drop=True)
