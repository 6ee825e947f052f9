"""The one check of a result.json, used both by a job deciding to keep a finished seed and by
aggregation deciding to count it: its cell is the cell of its folder, its options are the
options the config gives that cell, its identity is the one the job computed or recorded, its
scores are finite and in the metric's range, and its predictions exist, are the file the job
wrote and re-score to its test metric. `verify_result` returns why not, or None."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from blurbflow.config.identity import file_sha256, identity_difference
from blurbflow.config.init_from import WEIGHTS, with_source_weights
from blurbflow.options import CellOptions, options_json
from blurbflow.record.schema import CELL_KEYS, FINISHED, identity_from_path
from blurbflow.tasks.registry import TASKS

RANGES = {"pearson": (-100.0, 100.0)}  # every other metric (F1, accuracy) is 0 … 100
PREDICTIONS = "predictions.parquet"
TOLERANCE = 1e-6  # re-scored test vs the reported one (both computed by the same code)


def metric_range(metric: str) -> tuple[float, float]:
    return RANGES.get(metric, (0.0, 100.0))


def cell_from_path(path: str | os.PathLike) -> dict | None:
    try:
        return identity_from_path(path)
    except ValueError:
        return None


def options_difference(recorded, options: CellOptions) -> str | None:
    """'lr 0.5 → 0.001, epochs 1 → 4' for the keys whose values differ; None if the same."""
    if not isinstance(recorded, dict):
        return "no options recorded"
    expected = options.to_dict()
    if options_json(recorded) == options_json(expected):
        return None
    keys = sorted(set(recorded) | set(expected), key=str)
    changed = [k for k in keys if json.dumps(recorded.get(k)) != json.dumps(expected.get(k))]
    shown = ", ".join(f"{k} {recorded.get(k)!r} → {expected.get(k)!r}" for k in changed[:6])
    return shown + (f" (+{len(changed) - 6} more)" if len(changed) > 6 else "")


def score_problem(result: dict, metric: str) -> str | None:
    """dev and test must be finite numbers in the metric's range (a diverged run may lack
    them)."""
    low, high = metric_range(metric)
    for key in ("dev", "test"):
        value = result.get(key)
        if value is None and result.get("status") == "diverged":
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"{key} is {value!r}, not a number"
        if not math.isfinite(value):
            return f"{key} is {value}, not a finite score"
        if not low <= value <= high:
            return f"{key} {value} is outside the {metric} range {low:g} … {high:g}"
    return None


def rescore_test(predictions: str | os.PathLike, task: str) -> float | None:
    """The task's metric of the test rows of a predictions.parquet (None when it has none)."""
    import pyarrow.parquet as pq

    from blurbflow.metrics import compute_metric

    table = pq.read_table(predictions, columns=["split", "gold", "pred"]).to_pydict()
    rows = [i for i, split in enumerate(table["split"]) if split == "test"]
    if not rows:
        return None
    gold = [json.loads(table["gold"][i]) for i in rows]
    pred = [json.loads(table["pred"][i]) for i in rows]
    return compute_metric(TASKS[task], gold, pred)


def weights_problem(path, result: dict, options: CellOptions) -> str | None:
    """A cell that dependants start from (`keep_weights`) must hold the weights it saved."""
    if not options.keep_weights:
        return None
    weights = Path(path).parent / WEIGHTS
    if not weights.is_file():
        return f"{WEIGHTS} is missing (dependants start from it: init_from)"
    if file_sha256(weights) != result.get("weights_sha256"):
        return f"{WEIGHTS} is not the file the job wrote (sha256 differs)"
    return None


def verify_result(
    path: str | os.PathLike,
    result,
    options: CellOptions,
    identity: dict | None = None,
    predictions_sha256: str | None = None,
    rescore: bool = True,
) -> str | None:
    """Why the result.json at `path` (parsed: `result`) must not be kept or counted for a cell
    whose options are `options` (seed included); None when it verifies. `identity`: the cell's
    identity as the job computed or recorded it (not compared when None);
    `predictions_sha256`: the digest the job's manifest recorded for its predictions."""
    if not isinstance(result, dict):
        return "not a JSON object"
    if result.get("status") not in FINISHED:
        return f"status {result.get('status')!r} is not a finished run"
    cell, folder = result.get("cell"), cell_from_path(path)
    if (
        not isinstance(cell, dict)
        or folder is None
        or any(str(cell.get(k)) != str(folder[k]) for k in CELL_KEYS)
    ):
        found = "/".join(str(cell.get(k)) for k in CELL_KEYS) if isinstance(cell, dict) else cell
        return f"it holds cell {found}, not the cell of its folder (copied from another cell?)"
    problem = options_difference(result.get("options"), options)
    if problem:
        return f"its options differ from the config's: {problem}"
    problem = weights_problem(path, result, options)
    if problem:
        return problem
    if identity is not None:
        try:  # init_from: the source weights on disk now, not those the job once saw
            identity = with_source_weights(identity, options, Path(path).parent)
        except FileNotFoundError as error:
            return f"the weights it started from are gone: {error}"
        problem = identity_difference(result.get("identity"), identity)
        if problem:
            return f"its identity {problem} from what the job computed"
    spec = TASKS.get(str(cell["task"]))
    if spec is None:
        return f"unknown task {cell['task']!r}"
    problem = score_problem(result, spec.metric)
    if problem:
        return problem
    predictions = Path(path).parent / PREDICTIONS
    if not predictions.is_file():
        return f"{PREDICTIONS} is missing"
    digest = file_sha256(predictions)
    for recorded in (result.get("predictions_sha256"), predictions_sha256):
        if recorded is not None and recorded != digest:
            return f"{PREDICTIONS} is not the file the job wrote (sha256 differs)"
    if rescore and result.get("test") is not None:
        try:
            value = rescore_test(predictions, spec.name)
        except Exception as error:  # unreadable or not this task's predictions
            return f"{PREDICTIONS} cannot be re-scored: {type(error).__name__}: {error}"
        if value is None or abs(value - result["test"]) > TOLERANCE * max(1.0, abs(value)):
            return f"test {result['test']} but its predictions score {value}"
    return None
