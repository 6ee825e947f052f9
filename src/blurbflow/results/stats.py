"""Statistics a study's table alone does not show (docs/results.md): each recipe against the study's
baseline over seeds, how often fine-tuning fails per recipe, and the compute spent.

The test. For every (model, task) the per-seed test scores of a recipe and of the baseline,
each at its own dev-selected hyperparameters, are two independent samples: seeds are not
paired (seed 3 of one recipe shares nothing meaningful with seed 3 of another once the options
differ). The primary test is Welch's two-sided t-test on those scores: it compares means, which
is what the tables report, and it does not assume equal variances — the point of a stabilising
recipe is a different spread, so Student's pooled-variance test would be wrong exactly where it
matters. With 5–10 seeds the t-test's normality assumption cannot be checked and a collapsed
seed makes a sample skewed, so the Mann–Whitney U test (two-sided; scipy's exact distribution
for small untied samples) is reported beside it as a rank-based check that one outlier cannot
drive. Both use every seed that finished ok, collapsed ones included (a collapse is a real
outcome of the recipe); diverged seeds have no score and show in the failure rate. p-values are
also given Holm–Bonferroni adjusted over all the comparisons of a study, since a study makes
many of them at once.

The failure rate. A run failed when it diverged (NaN/inf loss) or finished with a dev score at or
below the task's chance level (`chance_dev`: the best constant predictor) or with no dev score:
the degenerate runs of Mosbach et al. and Tinn et al. Cells that crashed (status `failed`) or
never ran (`missing`) are pipeline problems, not fine-tuning outcomes, and are left out of the
rate (the report lists them).
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from blurbflow.results.choices import recipe_members, shown_study
from blurbflow.results.folds import shown_tasks
from blurbflow.results.study_cells import in_study, ordered_tasks, seed_scores, study_cells

TEST_COLUMNS = [
    "model",
    "task",
    "recipe",
    "baseline",
    "n",
    "n_baseline",
    "mean",
    "mean_baseline",
    "std",
    "std_baseline",
    "delta",
    "p_value",
    "p_holm",
    "p_mannwhitney",
]
FAILURE_COLUMNS = [
    "recipe",
    "runs",
    "diverged",
    "collapsed",
    "failure_rate",
    "runs_all",
    "diverged_all",
    "collapsed_all",
    "failure_rate_all",
    "crashed",
    "missing",
]
TIME_COLUMNS = [
    "model",
    "task",
    "runs",
    "median_seconds",
    "per_epoch_seconds",
    "total_seconds",
    "device",
]


def welch_p(sample: Sequence[float], baseline: Sequence[float]) -> float:
    """Two-sided Welch's t-test p-value; NaN with fewer than two values on a side or when both
    samples are the same constant (scipy gives 0 for two different constants)."""
    # here, not at the top: scipy.stats takes 2.4 s to import and every `snakemake` start
    # imports this package (workflow/rules/validate.smk), which needs no p-value
    from scipy.stats import ttest_ind

    if len(sample) < 2 or len(baseline) < 2:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(ttest_ind(sample, baseline, equal_var=False).pvalue)


def mannwhitney_p(sample: Sequence[float], baseline: Sequence[float]) -> float:
    """Two-sided Mann–Whitney U p-value (exact when small and untied); NaN with fewer than two
    values on a side."""
    from scipy.stats import mannwhitneyu  # here: see welch_p

    if len(sample) < 2 or len(baseline) < 2:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(mannwhitneyu(sample, baseline, alternative="two-sided").pvalue)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values (NaN stays NaN and does not count as a comparison)."""
    values = np.asarray(p_values, dtype="float64")
    adjusted = np.full(values.shape, np.nan)
    present = np.flatnonzero(~np.isnan(values))
    m = len(present)
    running = 0.0
    for rank, index in enumerate(present[np.argsort(values[present], kind="stable")]):
        running = max(running, min(1.0, (m - rank) * values[index]))
        adjusted[index] = running
    return adjusted.tolist()


def _std(values: Sequence[float]) -> float:
    return float(np.std(values, ddof=1)) if len(values) > 1 else math.nan


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else math.nan


def baseline_tests(
    cells: pd.DataFrame, study: dict, selected: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Each recipe against the study's baseline recipe, per (model, task): means and sample stds
    of the ok seeds' test scores, their difference, Welch's t-test p-value, its Holm-adjusted
    value over the study's comparisons, and the Mann–Whitney U p-value (see the module doc).
    A `choose` group is compared as the one recipe its table shows."""
    study = shown_study(study)
    baseline = study.get("baseline")
    if not baseline or baseline not in study["recipes"] or len(study["recipes"]) < 2:
        return pd.DataFrame(columns=TEST_COLUMNS)
    scores = seed_scores(study_cells(cells, study) if selected is None else selected)
    rows = []
    for model in study["models"]:
        for task in ordered_tasks(study["tasks"]):
            base = scores.get((model, task, baseline), [])
            for recipe in study["recipes"]:
                if recipe == baseline:
                    continue
                other = scores.get((model, task, recipe), [])
                rows.append(
                    {
                        "model": model,
                        "task": task,
                        "recipe": recipe,
                        "baseline": baseline,
                        "n": len(other),
                        "n_baseline": len(base),
                        "mean": _mean(other),
                        "mean_baseline": _mean(base),
                        "std": _std(other),
                        "std_baseline": _std(base),
                        "delta": _mean(other) - _mean(base) if other and base else math.nan,
                        "p_value": welch_p(other, base),
                        "p_mannwhitney": mannwhitney_p(other, base),
                    }
                )
    frame = pd.DataFrame(rows, columns=TEST_COLUMNS)
    frame["p_holm"] = holm(frame["p_value"].tolist()) if len(frame) else []
    return frame


def failed_runs(cells: pd.DataFrame) -> pd.Series:
    """Mask of runs that diverged or are degenerate: dev at or below chance, or no dev score
    (only among finished runs, status ok or diverged)."""
    diverged = cells["status"] == "diverged"
    ok = cells["status"] == "ok"
    dev, chance = cells["dev"], cells["chance_dev"]
    collapsed = ok & (dev.isna() | (chance.notna() & (dev <= chance)))
    return diverged | collapsed


def _failure_counts(cells: pd.DataFrame) -> dict[str, float]:
    finished = cells[cells["status"].isin(["ok", "diverged"])]
    diverged = int((finished["status"] == "diverged").sum())
    collapsed = int(failed_runs(finished).sum()) - diverged
    runs = len(finished)
    return {
        "runs": runs,
        "diverged": diverged,
        "collapsed": collapsed,
        "failure_rate": 100.0 * (diverged + collapsed) / runs if runs else math.nan,
    }


def failure_rates(
    cells: pd.DataFrame, study: dict, selected: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Per recipe: the failure rate (% of finished runs that diverged or collapsed) at the
    hyperparameters the table reports, and over every run of the grid (`*_all`); plus the cells
    that crashed or never ran (left out of the rate). A `choose` label's `*_all` counts every
    run of its group."""
    study = shown_study(study)
    everything = cells[in_study(cells, study)]
    selected = study_cells(cells, study) if selected is None else selected
    rows = []
    for recipe in study["recipes"]:
        at_selected = _failure_counts(selected[selected["recipe"] == recipe])
        all_runs = everything[everything["recipe"].isin(recipe_members(study, recipe))]
        overall = _failure_counts(all_runs)
        rows.append(
            {
                "recipe": recipe,
                **at_selected,
                **{f"{key}_all": value for key, value in overall.items()},
                "crashed": int((all_runs["status"] == "failed").sum()),
                "missing": int((all_runs["status"] == "missing").sum()),
            }
        )
    return pd.DataFrame(rows, columns=FAILURE_COLUMNS)


def compute_spent(cells: pd.DataFrame, study: dict) -> dict[str, float]:
    """GPU-hours and wall-clock hours of every cell of the study (all hyperparameters; a cell
    shared with another study counts in both), and the number of cells."""
    everything = cells[in_study(cells, study)]
    return {
        "cells": len(everything),
        "gpu_hours": float(everything["gpu_hours"].sum()) if len(everything) else 0.0,
        "wall_hours": float(everything["wall_seconds"].sum()) / 3600 if len(everything) else 0.0,
    }


def _seconds_per_epoch(epochs) -> float:
    """A run's evaluated time (training plus its dev/test evaluations, summed over its
    evaluation records) over the epochs it reached; NaN without timed records."""
    records = json.loads(epochs) if isinstance(epochs, str) else epochs
    timed = [
        r
        for r in records or []
        if isinstance(r, dict)
        and isinstance(r.get("seconds"), int | float)
        and math.isfinite(r["seconds"])
    ]
    if not timed:
        return math.nan
    reached = max(int(r.get("epoch") or 1) for r in timed)
    return sum(r["seconds"] for r in timed) / reached


def fine_tuning_times(cells: pd.DataFrame, study: dict) -> pd.DataFrame:
    """Per (model, task) of the study, the time of one fine-tuning run, as BioM-Transformers
    reports it: the median wall-clock seconds of a run (its result's `wall_seconds`, setup and
    evaluations included) over the ok runs of every seed and hyperparameter setting (`runs`),
    the median over those runs of seconds per epoch, the total seconds of every cell of the
    study for that pair (as `compute_spent` counts them), and the devices the runs ran on."""
    wanted = ["model", "task", "recipe", "seed", "status", "wall_seconds", "epochs", "device"]
    light = cells[[c for c in wanted if c in cells.columns]]
    light = light[in_study(light, study)]
    light = light.assign(task=shown_tasks(light["task"], study))  # a fold counts as its task
    groups = dict(list(light.groupby(["model", "task"], sort=False))) if len(light) else {}
    rows = []
    for model in study["models"]:
        for task in ordered_tasks(study["tasks"]):
            group = groups.get((model, task), light.iloc[:0])
            ok = group[(group["status"] == "ok") & group["wall_seconds"].notna()]
            per_epoch = (
                pd.Series([_seconds_per_epoch(e) for e in ok["epochs"]], dtype="float64")
                if "epochs" in ok.columns
                else pd.Series(dtype="float64")
            ).dropna()
            devices = ok["device"].dropna() if "device" in ok.columns else []
            rows.append(
                {
                    "model": model,
                    "task": task,
                    "runs": len(ok),
                    "median_seconds": float(ok["wall_seconds"].median()) if len(ok) else math.nan,
                    "per_epoch_seconds": float(per_epoch.median()) if len(per_epoch) else math.nan,
                    "total_seconds": float(group["wall_seconds"].sum()),
                    "device": ", ".join(sorted({str(d) for d in devices})),
                }
            )
    return pd.DataFrame(rows, columns=TIME_COLUMNS)
