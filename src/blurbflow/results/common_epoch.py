"""A study's `select: common_epoch`: the epoch chosen the papers' way, once for every seed.

Gu et al. 2021 (§6.2) tune the epoch number on dev like the learning rate: one value per
dataset, shared by the seeds. Per-seed selection (`per_seed`, the default) lets each seed keep
its own best dev evaluation, which makes test means optimistic and seed spreads narrow.

- Per (model, task, recipe, grid point) one evaluation point, (epoch, step), is chosen by the
  mean dev over the seeds that finished ok; every ok seed then reports its dev and test there.
- With `reference_models`: one point per (task, recipe, grid point), from the reference models'
  mean dev averaged over them (as their grid point is chosen), used by every model; the other
  models' `on-…` cells take the point of the grid point the reference models chose.
- The grid point is then chosen on those dev means: grid point and epoch are chosen together.
- Ranking: points more seeds (reference models) recorded first, then the higher mean dev, then
  the earlier point: with `patience`, the best point every seed reached before it stopped.
- A failed, diverged or missing seed neither votes nor reports (as with per-seed selection);
  when it finishes, the point is chosen again with it.
- Cells that keep their last evaluation (`select: last`, `train_on: train+dev`) are left as
  they are.

Nothing re-trains: every evaluation's dev and test scores (and the task's other recorded
scores, a study's `metric`) are in result.json's `epochs`, which cells.parquet carries. They
suffice: each was computed by the task's metric over the whole split's predictions as the
evaluation ran, and the statistics need one number per seed. The predictions themselves are
kept for the cell's own selected evaluation only (they re-score and verify it).
"""

from __future__ import annotations

import json
import math

import pandas as pd

from blurbflow.config.grid import REFERENCE_PREFIX
from blurbflow.results.choices import select_on_reference

PER_SEED, COMMON = "per_seed", "common_epoch"
# what re-selection reads beside the study's columns, and the point it writes (NA: not re-selected)
READS = ["epochs", "options", "selected_epoch", "selected_step"]
POINT = ["common_epoch", "common_step"]
CELL = ["model", "task", "recipe", "hparams"]
NO_STEP = -1  # a per-epoch evaluation's step, so that points sort and group


def study_select(study: dict) -> str:
    return study.get("select") or PER_SEED


def _records(text) -> list[dict]:
    try:
        records = json.loads(text) if isinstance(text, str) else []
    except ValueError:
        return []
    return records if isinstance(records, list) else []


def _selects_on_dev(text) -> bool:
    """Whether a cell's options (result.json's) select its evaluation on dev."""
    try:
        options = json.loads(text) if isinstance(text, str) else {}
    except ValueError:
        options = {}
    return options.get("train_on") != "train+dev" and options.get("select", "best_dev") != "last"


def _point(record: dict) -> tuple[int, int]:
    step = record.get("step")
    return int(record["epoch"]), NO_STEP if step is None else int(step)


def evaluations(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per evaluation with a finite dev score of every ok cell that selects on dev:
    the cell's index (`row`), its CELL keys and seed, `epoch`, `step` and `dev`."""
    ok = frame[(frame["status"] == "ok") & frame["options"].map(_selects_on_dev)]
    rows = []
    for index, text in ok["epochs"].items():
        for record in _records(text):
            dev = record.get("dev")
            if isinstance(dev, int | float) and math.isfinite(dev) and "epoch" in record:
                rows.append((index, *_point(record), float(dev)))
    long = pd.DataFrame(rows, columns=["row", "epoch", "step", "dev"])
    keys = frame.loc[long["row"], [*CELL, "seed"]].reset_index(drop=True)
    return pd.concat([long, keys], axis=1)


def choose_points(long: pd.DataFrame, by: list[str], voter: str) -> dict[tuple, tuple[int, int]]:
    """Per group of `by`, the point with the best mean dev: averaged over the seeds within each
    `voter` (a model; `seed`: each seed its own), then over the voters. Points more voters
    recorded rank first; ties go to the earlier point."""
    if long.empty:
        return {}
    per_voter = long.groupby([*by, voter, "epoch", "step"])["dev"].mean()
    votes = per_voter.groupby(level=[*by, "epoch", "step"]).agg(["mean", "size"]).reset_index()
    best = votes.sort_values(
        [*by, "size", "mean", "epoch", "step"],
        ascending=[True] * len(by) + [False, False, True, True],
        kind="stable",
    ).drop_duplicates(by)
    return {
        tuple(row[:-2]): (int(row[-2]), int(row[-1]))
        for row in best[[*by, "epoch", "step"]].itertuples(index=False)
    }


def _at(frame: pd.DataFrame, chosen: dict[int, tuple[int, int]]) -> pd.DataFrame:
    """`frame` with each chosen row's dev, test and selected point read off its record at the
    chosen point (NaN scores where the seed did not record it), and the point in POINT."""
    out = frame.copy()
    for column in POINT:
        out[column] = pd.array([pd.NA] * len(out), dtype="Int64")
    for index, (epoch, step) in chosen.items():
        found = next(
            (
                r
                for r in _records(out.at[index, "epochs"])
                if "epoch" in r and _point(r) == (epoch, step)
            ),
            {},
        )
        out.at[index, "dev"] = float(found.get("dev", math.nan))
        out.at[index, "test"] = float(found.get("test", math.nan))
        out.at[index, "selected_epoch"] = epoch
        out.at[index, "selected_step"] = None if step == NO_STEP else step
        out.at[index, "common_epoch"] = epoch
        out.at[index, "common_step"] = pd.NA if step == NO_STEP else step
    return out


def at_common_points(frame: pd.DataFrame, reference: list[str] | None = None) -> pd.DataFrame:
    """`frame` (cells with the READS columns) with every ok cell that selects on dev re-scored
    at its group's common point (see the module's doc); the other rows unchanged."""
    if frame.empty:
        return _at(frame, {})
    long = evaluations(frame)
    takers = frame[(frame["status"] == "ok") & frame["options"].map(_selects_on_dev)]
    chosen: dict[int, tuple[int, int]] = {}
    if reference:
        chosen = _on_reference(frame, takers, long, reference)
    own = choose_points(long[~long["row"].isin(list(chosen))], CELL, "seed")
    for index, *key in takers[CELL].itertuples():
        if index not in chosen and tuple(key) in own:
            chosen[index] = own[tuple(key)]
    return _at(frame, chosen)


def _on_reference(frame, takers, long, reference: list[str]) -> dict[int, tuple[int, int]]:
    """Row → point for every cell at a grid point the reference models voted on, and for the
    other models' `on-…` cells the point of the grid point the reference models chose."""
    grid = ["task", "recipe", "hparams"]
    own_grid = ~long["hparams"].astype(str).str.startswith(REFERENCE_PREFIX)
    points = choose_points(long[long["model"].isin(reference) & own_grid], grid, "model")
    at_grid = {}
    for index, *key in takers[grid].itertuples():
        if tuple(key) in points:
            at_grid[index] = points[tuple(key)]
    ref = frame[frame["model"].isin(reference)]
    picked = select_on_reference(
        _at(ref, {i: at_grid[i] for i in ref.index if i in at_grid}), reference
    )
    picked = picked[(picked["status"] == "ok") & picked["model"].isin(reference)]
    choice = picked.groupby(["task", "recipe"])["hparams"].first().to_dict()
    for index, task, recipe, hparams in takers[grid].itertuples():
        if str(hparams).startswith(REFERENCE_PREFIX):
            key = (task, recipe, choice.get((task, recipe)))
            if key in points:
                at_grid[index] = points[key]
    return at_grid


def entry_points(selected: pd.DataFrame) -> dict[tuple, tuple[int, int | None]]:
    """(model, task, recipe) → the common (epoch, step) its ok seeds report at (step None for
    an epoch's end), for the entries that have one: what the tables, results/{study}.json and
    the report show."""
    if "common_epoch" not in selected.columns:
        return {}
    ok = selected[(selected["status"] == "ok") & selected["common_epoch"].notna()]
    found = {}
    for key, part in ok.groupby(["model", "task", "recipe"], sort=False):
        points = set(zip(part["common_epoch"], part["common_step"].fillna(NO_STEP), strict=True))
        if len(points) == 1:
            epoch, step = points.pop()
            found[key] = (int(epoch), None if step == NO_STEP else int(step))
    return found


def point_text(point: tuple[int, int | None]) -> str:
    epoch, step = point
    return f"epoch {epoch}" if step is None else f"epoch {epoch}, step {step}"


def select_note(study: dict) -> str:
    """The study's epoch selection in words, for the tables' captions ('' for per-seed)."""
    if study_select(study) != COMMON:
        return ""
    on = "the reference models'" if study.get("reference_models") else "their"
    return (
        f"Each entry's seeds report at one epoch, chosen with the grid point on {on} mean dev "
        "(`select: common_epoch`; which epoch: the CSV's `epoch` column)."
    )
