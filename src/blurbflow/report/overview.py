"""The report's overview: for a study spanning several task types, one BLURB table row per
(model, recipe) entry, with the mean per task type and the BLURB score."""

from __future__ import annotations

import math

import pandas as pd

from blurbflow.metrics.blurb import blurb_label, types_present
from blurbflow.results.choices import shown_study
from blurbflow.results.statistics import summarise
from blurbflow.results.study_cells import seed_scores, study_cells
from blurbflow.tasks.registry import get_task


def blurb_overview(
    cells: pd.DataFrame, study: dict, selected: pd.DataFrame | None = None
) -> pd.DataFrame:
    """The overview's BLURB table of a study spanning several task types: one row per
    (model, recipe) entry, one column per task type (the mean over that type's tasks of the
    per-task mean over seeds, or median with `statistic: median`), then the BLURB score (the
    mean of the type columns) and `n`, the fewest ok seeds behind any task. Empty when the
    study has one task type."""
    study = shown_study(study)
    types = types_present(study["tasks"])
    if len(types) < 2:
        return pd.DataFrame()
    scores = seed_scores(study_cells(cells, study) if selected is None else selected)
    label = blurb_label(study["tasks"])
    # the study's statistic over seeds (mean, or median as Bio-LM reports)
    statistic = study.get("statistic", "mean")
    rows, index = [], []
    for model in study["models"]:
        for recipe in study["recipes"]:
            by_type: dict[str, list[float]] = {t: [] for t in types}
            counts = []
            for task in study["tasks"]:
                values = scores.get((model, task, recipe), [])
                counts.append(len(values))
                value = float(summarise(values)[statistic]) if values else math.nan
                by_type[get_task(task).type].append(value)
            row = {t: sum(v) / len(v) for t, v in by_type.items()}
            row[label] = sum(row.values()) / len(types)  # NaN if any task has no ok seed
            row["n"] = min(counts)
            rows.append(row)
            index.append(entry_label(study, model, recipe))
    frame = pd.DataFrame(rows, index=pd.Index(index, name="entry"))
    frame.attrs["blurb"] = label
    return frame


def entry_label(study: dict, model: str, recipe: str) -> str:
    """'model / recipe', naming only the dimensions the study varies (the model if neither)."""
    parts = [v for v, d in ((model, "models"), (recipe, "recipes")) if len(study[d]) > 1]
    return " / ".join(parts) or model
