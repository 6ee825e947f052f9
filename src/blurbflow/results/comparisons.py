"""A study's comparisons with their power (docs/results.md "Power"): each recipe against the
study's baseline (the comparisons of results/stats.py) and each pair of models for the same
task and recipe, on the per-seed test scores at the selected hyperparameters; per comparison
the difference with its 95% interval, the minimal detectable difference, the seeds per side
that would detect the study's `delta`, the label (results/power.py) and each side's failures.
Written as `results/tables/{study}.comparisons.csv` beside the study's table."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pandas as pd

from blurbflow.util.io import write_text_atomic
from blurbflow.results.choices import shown_study
from blurbflow.results.power import compare
from blurbflow.results.stats import failed_runs
from blurbflow.results.study_cells import DIMS, ordered_tasks, seed_scores, study_cells

DEFAULT_DELTA = 1.0  # test points (x100); a study's `delta` replaces it
SUFFIX = ".comparisons.csv"  # results/tables/{study}.comparisons.csv
KINDS = ("recipe", "model")  # what differs between the two sides
COLUMNS = [
    "kind",
    "task",
    "model",
    "recipe",
    "reference_model",
    "reference_recipe",
    "n",
    "n_reference",
    "mean",
    "mean_reference",
    "difference",
    "low",
    "high",
    "df",
    "p_welch",
    "p_tost",
    "delta",
    "mde",
    "seeds_needed",
    "label",
    "runs",
    "failed",
    "runs_reference",
    "failed_reference",
]


def study_delta(study: dict) -> float:
    """The study's `delta` (default 1.0 test points)."""
    delta = float(study.get("delta", DEFAULT_DELTA))
    if not delta > 0:
        raise ValueError(f"study delta {delta!r} must be a number above 0")
    return delta


def failure_counts(selected: pd.DataFrame) -> dict[tuple, tuple[int, int]]:
    """(model, task, recipe) → (finished runs, failed runs: diverged, or dev at or below chance
    or missing) at the selected hyperparameters, as results/stats.py counts failures."""
    finished = selected[selected["status"].isin(["ok", "diverged"])]
    if not len(finished):
        return {}
    flagged = finished.assign(_failed=failed_runs(finished))
    grouped = flagged.groupby(list(DIMS), sort=False)["_failed"]
    return {key: (len(group), int(group.sum())) for key, group in grouped}


def comparison_pairs(study: dict) -> list[tuple[tuple, tuple, str]]:
    """(compared (model, recipe), reference (model, recipe), kind) per task, in table order
    (also the comparisons adaptive seeds decide, results/rounds.py)."""
    pairs = []
    baseline = study.get("baseline")
    if baseline in study["recipes"]:
        for model in study["models"]:
            for recipe in study["recipes"]:
                if recipe != baseline:
                    pairs.append(((model, recipe), (model, baseline), "recipe"))
    for recipe in study["recipes"]:
        for first, second in itertools.combinations(study["models"], 2):
            pairs.append(((second, recipe), (first, recipe), "model"))
    return pairs


def study_comparisons(
    cells: pd.DataFrame, study: dict, selected: pd.DataFrame | None = None
) -> pd.DataFrame:
    """One row per comparison and task (COLUMNS): recipe − baseline for the same model, and
    later − earlier model (the study's order) for the same recipe. A `choose` group is compared
    as the one recipe its table shows; a BLURB score is not compared (its seeds are not paired
    across tasks, so it has no per-seed spread)."""
    study = shown_study(study)
    delta = study_delta(study)
    selected = study_cells(cells, study) if selected is None else selected
    scores, failures = seed_scores(selected), failure_counts(selected)
    rows = []
    for task in ordered_tasks(study["tasks"]):
        for (model, recipe), (ref_model, ref_recipe), kind in comparison_pairs(study):
            sample = scores.get((model, task, recipe), [])
            reference = scores.get((ref_model, task, ref_recipe), [])
            runs, failed = failures.get((model, task, recipe), (0, 0))
            runs_ref, failed_ref = failures.get((ref_model, task, ref_recipe), (0, 0))
            result = compare(sample, reference, delta)
            rows.append(
                {
                    "kind": kind,
                    "task": task,
                    "model": model,
                    "recipe": recipe,
                    "reference_model": ref_model,
                    "reference_recipe": ref_recipe,
                    "n": len(sample),
                    "n_reference": len(reference),
                    "mean": sum(sample) / len(sample) if sample else None,
                    "mean_reference": sum(reference) / len(reference) if reference else None,
                    **result,
                    "delta": delta,
                    "runs": runs,
                    "failed": failed,
                    "runs_reference": runs_ref,
                    "failed_reference": failed_ref,
                }
            )
    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame["seeds_needed"] = frame["seeds_needed"].astype("Int64")  # empty: none within reach
    return frame


def label_counts(frame: pd.DataFrame) -> dict[str, int]:
    """How many comparisons carry each label."""
    counts = frame["label"].value_counts()
    return {name: int(counts.get(name, 0)) for name in ("different", "equivalent", "undecided")}


def write_comparisons(frame: pd.DataFrame, stem: str | os.PathLike) -> Path:
    """Write `{stem}.comparisons.csv` (beside the study's `{stem}.csv`) atomically; missing
    values are empty fields."""
    path = Path(stem)
    path = path.with_name(f"{path.name}{SUFFIX}")
    write_text_atomic(path, frame.to_csv(index=False))
    return path
