"""Hyperparameters handed from a search to a final model (recipe key `hparams_from`).

Tinn et al. 2023 train BIOSSES's final model on train+dev "after hyperparameter search is done",
with the searched setting. The workflow's `select_hparams` rule (workflow/rules/select.smk) reads
the finished train-only cells of the source recipes for one model and task and writes the choice
to `results/selection/{model}/{task}/{recipe}.json`; the final job takes that file as an input
and `blurbflow.config.grid.with_selection` turns its options into the ones it trains with, records
and verifies.

The choice, on dev only: per source recipe the grid point with the best mean dev over its ok
seeds (`best_grid_points`), then the recipe whose point is best (ties: the first listed). The
epoch count is the median, rounded up, of the epochs those seeds selected on dev (best epoch
within the budget): the final model trains that many epochs, its schedule spread over them.
"""

from __future__ import annotations

import json
import math
import os
import statistics

import pandas as pd

from blurbflow.config.grid import GRID_KEYS, SELECTED_KEYS
from blurbflow.util.io import write_json_atomic
from blurbflow.options import CellOptions
from blurbflow.results.aggregate import (
    COLUMNS,
    _read_manifest,
    best_grid_points,
    load_cell,
    normalise_types,
)
from blurbflow.results.choices import choose_recipes, select_on_reference
from blurbflow.results.common_epoch import COMMON, PER_SEED, at_common_points


def search_cells(sources: list[dict], root: str | os.PathLike = ".") -> pd.DataFrame:
    """The cells of the search's jobs (`{"job": folder, "options": …, "seeds": […]}`), each
    verified against its options and its job's manifest as aggregation verifies it."""
    rows = []
    for source in sources:
        job = os.path.join(root, source["job"])
        manifest = _read_manifest(job)
        for seed in source["seeds"]:
            path = os.path.join(job, f"seed{seed}", "result.json")
            options = CellOptions.from_dict(source["options"], where=source["job"])
            rows.append(load_cell(path, options.with_seed(seed), manifest))
    return normalise_types(pd.DataFrame(rows, columns=COLUMNS))


def _finished(cells: pd.DataFrame, where: tuple[str, str], what: str) -> pd.DataFrame:
    """The ok cells with a dev score; none is an error naming the group and `what` it lacks."""
    ok = cells[(cells["status"] == "ok") & cells["dev"].notna()]
    if ok.empty:
        group = "/".join(str(cells[k].iloc[0]) for k in where) if len(cells) else "?"
        raise ValueError(
            f"{group}: no finished cell of {what} ({len(cells)} cells, none ok); see those "
            "jobs' logs under results/logs/cells"
        )
    return ok


def choose_setting(cells: pd.DataFrame, recipes: list[str]) -> dict:
    """The setting the search selected: `from` (recipe, hparams) and the `options` a final
    model takes (SELECTED_KEYS). Only the choice: the dev scores behind it are in the log and
    cells.parquet, so new seeds that confirm the choice leave the file's content as it was."""
    _finished(cells, ("model", "task"), f"{', '.join(recipes)} to select hyperparameters from")
    best = choose_recipes(best_grid_points(cells), {"choose": {"search": list(recipes)}})
    best = best[(best["status"] == "ok") & best["dev"].notna()]
    first = best.iloc[0]
    options = json.loads(first["options"])
    chosen = {key: options.get(key) for key in SELECTED_KEYS}
    epochs = [int(e) for e in best["selected_epoch"].dropna()]
    if epochs:  # the best epoch on dev of each seed at the chosen point
        chosen["epochs"] = math.ceil(statistics.median(epochs))
    return {
        "from": {"recipe": str(first["chosen"]), "hparams": str(first["hparams"])},
        "options": chosen,
    }


def select_for_final(sources: list[dict], recipes: list[str], out: str | os.PathLike) -> dict:
    """The `select_hparams` step: choose from the search's cells, log the evidence, write
    `out` (Snakemake records its checksum: the same choice re-runs nothing downstream)."""
    cells = search_cells(sources)
    selection = choose_setting(cells, recipes)
    ok = cells[(cells["status"] == "ok") & cells["dev"].notna()]
    for (recipe, hparams), part in ok.groupby(["recipe", "hparams"]):
        epochs = part["selected_epoch"].tolist()
        print(
            f"{recipe}/{hparams}: mean dev {part['dev'].mean():.4f} over {len(part)} seeds, "
            f"best epochs {epochs}"
        )
    print(f"{len(cells) - len(ok)} of {len(cells)} cells not ok")
    print(json.dumps(selection, indent=2))
    write_json_atomic(out, selection)
    return selection


def choose_on_reference(cells: pd.DataFrame, reference: list[str], select: str = PER_SEED) -> dict:
    """The grid point a study's reference models chose on dev (blurbflow.results.choices, as
    the study's table chooses it; with `select: common_epoch` on the dev at one epoch for every
    seed, results.common_epoch): `from` (recipe, hparams, models) and the grid `options`."""
    models = ", ".join(reference)
    _finished(cells, ("task", "recipe"), f"the reference models {models} to choose a point from")
    if select == COMMON:
        cells = at_common_points(cells, reference)
    chosen = select_on_reference(cells, reference)
    chosen = chosen[(chosen["status"] == "ok") & chosen["dev"].notna()]
    first = chosen.iloc[0]
    options = json.loads(first["options"])
    return {
        "from": {
            "recipe": str(first["recipe"]),
            "hparams": str(first["hparams"]),
            "models": list(reference),
        },
        "options": {key: options.get(key) for key in GRID_KEYS},
    }


def select_for_models(
    sources: list[dict], reference: list[str], out: str | os.PathLike, select: str = PER_SEED
) -> dict:
    """The `select_reference` step: the point the reference models chose, for every other
    model of the study (written like `select_for_final`'s file). With `select: common_epoch`
    the log names each grid point's common evaluation; the file holds only the grid point, so
    a moved epoch re-trains nothing."""
    cells = search_cells(sources)
    selection = choose_on_reference(cells, reference, select)
    if select == COMMON:
        cells = at_common_points(cells, reference)
    ok = cells[(cells["status"] == "ok") & cells["dev"].notna()]
    for (model, hparams), part in ok.groupby(["model", "hparams"]):
        at = f" at epoch {part['selected_epoch'].iloc[0]}" if select == COMMON else ""
        print(f"{model}/{hparams}: mean dev {part['dev'].mean():.4f} over {len(part)} seeds{at}")
    print(f"{len(cells) - len(ok)} of {len(cells)} cells not ok")
    print(json.dumps(selection, indent=2))
    write_json_atomic(out, selection)
    return selection
