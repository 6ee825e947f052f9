"""What a study's table reports, selected on dev the way the papers select it.

- Per (model, task, recipe), the grid point (lr, batch size and any technique axis such as the
  re-initialised depth) with the best mean dev over seeds (`aggregate.best_grid_points`).
- `reference_models` (Gu et al. 2021 §6.2): one grid point per (task, recipe), the best mean
  dev averaged over the reference models (BERT and BioBERT), applied to every model.
- `choose: {label: [recipes]}` (Tinn et al. 2023 Table 9's "optimal"): per (model, task), the
  recipe of the group with the best mean dev at its selected point becomes the column `label`;
  the `chosen` column keeps which recipe it was.
- `recipe_scope: {recipe: {tasks, models}}`: a recipe runs only there (`config.runs_on`).

Dev only ever selects; test is reported at the selection.
"""

from __future__ import annotations

import math

import pandas as pd

from blurbflow.config.grid import reference_name
from blurbflow.results.aggregate import best_grid_points
from blurbflow.results.layout import shown_study  # noqa: F401 (its importers read it here)


def recipe_members(study: dict, recipe: str) -> list[str]:
    """The recipes that ran for a shown recipe: a `choose` label's group, else itself."""
    return list((study.get("choose") or {}).get(recipe, [recipe]))


def run_recipes(study: dict) -> list[str]:
    """Every recipe whose cells the study uses (shown or not)."""
    return list(dict.fromkeys(m for r in study["recipes"] for m in recipe_members(study, r)))


def scope_mask(cells: pd.DataFrame, study: dict) -> pd.Series:
    """False for cells of a recipe outside its `recipe_scope` (another study's runs)."""
    keep = pd.Series(True, index=cells.index)
    for recipe, scope in (study.get("recipe_scope") or {}).items():
        outside = pd.Series(False, index=cells.index)
        for key, dim in (("tasks", "task"), ("models", "model")):
            if key in scope:
                outside |= ~cells[dim].isin(scope[key])
        keep &= ~((cells["recipe"] == recipe) & outside)
    return keep


def select_on_reference(frame: pd.DataFrame, reference: list[str]) -> pd.DataFrame:
    """Every model at the grid point of its (task, recipe) chosen on the reference models:
    each model's mean dev over ok seeds, averaged over the reference models (a point that
    more of them ran wins first). Groups no reference model finished select per model."""
    if frame.empty:
        return frame.copy()
    ok = (
        (frame["status"] == "ok")
        & frame["dev"].notna()
        & frame["hparams"].notna()
        & frame["model"].isin(reference)
    )
    if not ok.any():
        return best_grid_points(frame)
    per_model = frame[ok].groupby(["task", "recipe", "hparams", "model"])["dev"].mean()
    points = per_model.groupby(level=["task", "recipe", "hparams"]).agg(["mean", "size"])
    points = (
        points.reset_index()
        .sort_values(
            ["task", "recipe", "size", "mean", "hparams"],
            ascending=[True, True, False, False, True],
            kind="stable",
        )
        .drop_duplicates(["task", "recipe"])
    )
    chosen = {
        (t, r): h
        for t, r, h in zip(points["task"], points["recipe"], points["hparams"], strict=True)
    }
    group = list(zip(frame["task"], frame["recipe"], strict=True))
    decided = pd.Series([g in chosen for g in group], index=frame.index)
    at_point = pd.Series(
        [chosen.get(g) == h for g, h in zip(group, frame["hparams"], strict=True)],
        index=frame.index,
    )
    # models besides the reference ones trained only the chosen point (blurbflow.config.study_plan)
    trained_at_choice = frame["hparams"] == reference_name(reference)
    keep = decided & (at_point | trained_at_choice | frame["hparams"].isna())
    rest = best_grid_points(frame[~decided])
    return pd.concat([frame[keep], rest]).reset_index(drop=True)


def choose_recipes(selected: pd.DataFrame, study: dict) -> pd.DataFrame:
    """Per (model, task) and `choose` label, keep the group's recipe with the best mean dev
    (over ok seeds, at its selected point) and relabel it; `chosen` names it. Ties and groups
    with no ok seed go to the first recipe in the group's order that has cells. Each group
    chooses on its own: a recipe in two groups can be the choice of both (its cells then show
    under both labels); where `recipe_scope` leaves a group one recipe for a model and task,
    that recipe is the entry (Tinn et al. Table 9's "Standard": `standard` for the BASE model,
    the improved optimisation for the LARGE ones)."""
    groups = study.get("choose") or {}
    if not groups or selected.empty:
        return selected
    selected = selected.copy()
    selected["chosen"] = None
    grouped = {m for members in groups.values() for m in members}
    parts = [selected[~selected["recipe"].isin(grouped)]]
    for label, members in groups.items():
        part = selected[selected["recipe"].isin(members)]
        if part.empty:
            continue
        ok = part[(part["status"] == "ok") & part["dev"].notna()]
        mean_dev = ok.groupby(["model", "task", "recipe"])["dev"].mean().to_dict()
        for (model, task), cells in part.groupby(["model", "task"], sort=False):
            present = [m for m in members if (cells["recipe"] == m).any()]
            best = max(
                present,
                key=lambda m: (mean_dev.get((model, task, m), -math.inf), -members.index(m)),
            )
            kept = cells[cells["recipe"] == best].copy()
            kept["chosen"] = best
            kept["recipe"] = label
            parts.append(kept)
    return pd.concat(parts).sort_index(kind="stable").reset_index(drop=True)
