"""Which cells a study has: its models, tasks, recipes (each only where its `recipe_scope` runs
it) and seeds, at the hyperparameters selected on dev, and their per-seed test scores. The tables,
the statistics and the report all read a study's cells through here (docs/results.md)."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

import pandas as pd

from blurbflow.config.grid import REFERENCE_PREFIX, reference_name
from blurbflow.metrics.blurb import BLURB_TYPES
from blurbflow.results.aggregate import best_grid_points
from blurbflow.results.choices import (
    choose_recipes,
    run_recipes,
    scope_mask,
    select_on_reference,
)
from blurbflow.results.common_epoch import COMMON, READS, at_common_points, study_select
from blurbflow.results.folds import fold_rows, shown_tasks
from blurbflow.results.layout import DIMS
from blurbflow.config.study_plan import cross_validation, study_seeds
from blurbflow.tasks.registry import get_task


def seeds_of(study: dict, task: str | None = None) -> list[int] | None:
    """The study's seeds (of `task`; blurbflow.config.study_plan.study_seeds), or None when it names none
    (every seed counts)."""
    return None if study.get("seeds") is None else study_seeds(study, task)


def ordered_tasks(tasks: Sequence[str]) -> list[str]:
    """Tasks grouped by BLURB type order, keeping the study's order within a type."""
    return sorted(tasks, key=lambda task: BLURB_TYPES.index(get_task(task).type))


def in_study(cells: pd.DataFrame, study: dict) -> pd.Series:
    """Mask of the study's cells (every status and hyperparameters; every recipe of a `choose`
    group, each only where its `recipe_scope` runs it)."""
    shown = shown_tasks(cells["task"], study)  # a cross-validated task's folds are that task
    keep = (
        cells["model"].isin(study["models"])
        & shown.isin(study["tasks"])
        & ~cells["task"].isin(cross_validation(study).get("tasks", []))
        & cells["recipe"].isin(run_recipes(study))
        & scope_mask(cells.assign(task=shown), study)
    )
    # a model trained at its reference models' choice belongs to the studies of those models
    if "hparams" in cells:
        chosen = cells["hparams"].astype(str).str.startswith(REFERENCE_PREFIX)
        own = cells["hparams"] == reference_name(study.get("reference_models") or [])
        keep &= ~chosen | own
    seeds = study.get("seeds")
    if isinstance(seeds, dict):
        allowed = pd.Series(False, index=cells.index)
        for task in study["tasks"]:
            allowed |= (shown == task) & cells["seed"].isin(study_seeds(study, task))
        keep &= allowed
    elif seeds is not None:
        keep &= cells["seed"].isin(study_seeds(study))
    return keep.fillna(False).astype(bool)


# The columns the per-study tables and statistics read: filtering 20k rows of these is several
# times cheaper than of every column (options, per-epoch records, versions, paths …).
STUDY_COLUMNS = [
    "model",
    "task",
    "recipe",
    "hparams",
    "seed",
    "status",
    "dev",
    "test",
    "chance_dev",
    "chance_test",
    "gpu_hours",
    "wall_seconds",
]


def study_cells(cells: pd.DataFrame, study: dict) -> pd.DataFrame:
    """The study's cells (every status), at the hyperparameters selected on dev over the
    study's seeds (on its `reference_models` when it names them), each `choose` group reduced
    to its recipe best on dev (see `results.choices`), a cross-validated task's folds reduced
    to one row per seed (`results.folds`); only the STUDY_COLUMNS that `cells` has (and
    `chosen` with groups, `folds` with cross-validation, the common point with `select:
    common_epoch`: results.common_epoch.POINT)."""
    light = cells[[c for c in study_columns(study) if c in cells.columns]]
    light = light[in_study(light, study)]
    reference, metric = study.get("reference_models"), study.get("metric")
    if study_select(study) == COMMON:  # one evaluation for every seed (results/common_epoch.py)
        light = at_common_points(light, reference)
        dropped = [c for c in READS if c in light and (c not in SCORE_COLUMNS or not metric)]
        light = light.drop(columns=dropped)
    selected = select_on_reference(light, reference) if reference else best_grid_points(light)
    if metric:
        selected = with_study_metric(selected, metric)
    return choose_recipes(fold_rows(selected, study), study)


SCORE_COLUMNS = ["metric", "epochs", "selected_epoch", "selected_step"]


def study_columns(study: dict) -> list[str]:
    """The columns `study_cells` reads for `study`: STUDY_COLUMNS, and the per-evaluation
    records where the study shows another `metric` or selects a common epoch."""
    wanted = STUDY_COLUMNS + (SCORE_COLUMNS if study.get("metric") else [])
    if study_select(study) == COMMON:
        wanted += [c for c in READS if c not in wanted]
    return wanted


def _selected_score(row, metric: str) -> float:
    """`metric`'s test score at the cell's selected evaluation (result.json's `epochs` record
    with the selected epoch and step), NaN where it was not recorded."""
    if row["metric"] == metric:
        return row["test"]
    try:
        records = json.loads(row["epochs"]) or []
    except (TypeError, ValueError):
        return math.nan
    step = None if pd.isna(row["selected_step"]) else int(row["selected_step"])
    for record in records:
        if record.get("epoch") == row["selected_epoch"] and record.get("step") == step:
            value = (record.get("test_scores") or {}).get(metric)
            return math.nan if value is None else float(value)
    return math.nan


def with_study_metric(selected: pd.DataFrame, metric: str) -> pd.DataFrame:
    """`selected` with its test scores replaced by `metric` (a study's `metric`: another score
    the same evaluations recorded). Epochs and hyperparameters stay those chosen on the task's
    own dev metric; an ok cell that did not record it (written before it was) has no score."""
    if not len(selected):
        return selected
    out = selected.copy()
    out["test"] = [_selected_score(row, metric) for _, row in out.iterrows()]
    return out.drop(columns=[c for c in SCORE_COLUMNS if c in out.columns])


def seed_scores(selected: pd.DataFrame) -> dict[tuple, list[float]]:
    """(model, task, recipe) → the test scores of its ok seeds, in seed order."""
    ok = selected[(selected["status"] == "ok") & selected["test"].notna()]
    if not len(ok):
        return {}
    ok = ok.sort_values("seed", kind="stable")
    return {key: list(group) for key, group in ok.groupby(list(DIMS), sort=False)["test"]}


def diverged_counts(selected: pd.DataFrame) -> dict[tuple, int]:
    """(model, task, recipe) → how many of its seeds diverged (counted, never averaged in)."""
    bad = selected[selected["status"] == "diverged"]
    return {key: len(group) for key, group in bad.groupby(list(DIMS), sort=False)}
