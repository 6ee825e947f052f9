"""A cross-validated task's entry (study key `cross_validation`; Bio-LM: GAD and EU-ADR).

Its cells are fold tasks (`gad-fold1` … `gad-fold10`): the tune fold's search, whose
hyperparameters and epoch count the other folds train with. Per (model, recipe, seed) the
evaluation folds' test scores become one row of the task: test = their median (or mean, as
configured), `folds` = how many finished ok, dev = the tune fold's dev at the selected point
(what selected it). Tables and statistics then treat it as any task: the seed statistic is over
these per-seed fold statistics.
"""

from __future__ import annotations

import pandas as pd

from blurbflow.config.study_plan import cross_validation
from blurbflow.tasks.crossval import PARENT, fold_tasks

KEYS = ["model", "recipe", "seed"]
SUMMED = ("gpu_hours", "wall_seconds")  # the entry's compute: every evaluation fold's


def shown_tasks(tasks: pd.Series, study: dict) -> pd.Series:
    """Each cell's task as the study shows it: a fold of a cross-validated task is that task."""
    cv_tasks = set(cross_validation(study).get("tasks", []))
    if not cv_tasks:
        return tasks
    parents = {fold: parent for fold, (parent, _) in PARENT.items() if parent in cv_tasks}
    return tasks.map(lambda task: parents.get(task, task))


def _status(statuses: pd.Series) -> str:
    """ok when a fold finished ok, else the first fold's status (diverged, failed, missing)."""
    return "ok" if (statuses == "ok").any() else str(statuses.iloc[0])


def fold_rows(selected: pd.DataFrame, study: dict) -> pd.DataFrame:
    """`selected` (hyperparameters already chosen per fold task) with each cross-validated
    task's fold cells replaced by one row per (model, recipe, seed), and a `folds` column (the
    number of evaluation folds that finished ok; NaN for other tasks)."""
    cv = cross_validation(study)
    if not cv or selected.empty:
        return selected
    rows, drop = [], selected["task"].isin([f for t in cv["tasks"] for f in fold_tasks(t)])
    for task in cv["tasks"]:
        folds = fold_tasks(task)
        tune = folds[int(cv["tune_fold"]) - 1]
        tuned = selected[selected["task"] == tune].set_index(KEYS)
        evaluated = selected[selected["task"].isin([f for f in folds if f != tune])]
        for key, part in evaluated.groupby(KEYS, sort=False):
            ok = part[(part["status"] == "ok") & part["test"].notna()]
            row = {**dict(zip(KEYS, key, strict=True)), "task": task, "hparams": "selected"}
            row.update(status=_status(part["status"]), folds=len(ok))
            for column in ("test", "chance_test", "chance_dev"):
                if column in part.columns:
                    row[column] = ok[column].agg(cv["statistic"]) if len(ok) else float("nan")
            for column in SUMMED:
                if column in part.columns:
                    row[column] = part[column].sum(min_count=1)
            row["dev"] = tuned["dev"].get(key, float("nan")) if "dev" in tuned else float("nan")
            rows.append(row)
    collapsed = pd.DataFrame(rows, columns=[*selected.columns, "folds"])
    return pd.concat([selected[~drop], collapsed], ignore_index=True)
