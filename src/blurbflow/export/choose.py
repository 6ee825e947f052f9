"""Which seeds a study exports: per table entry (model, task and the recipe its table shows, at
the hyperparameters and, for a `choose` group, the recipe selected on dev, as the table selects
them) the seed with the best dev score, or every seed that finished ok.

The rule: only seeds with status `ok` and a finite dev score are candidates (diverged, failed
and rejected seeds never are: aggregation has made a seed that did not verify a failed row);
the highest dev score wins, and a tie goes to the lowest seed number. The test score plays no
part in the choice."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from blurbflow.export.check import export_plan
from blurbflow.results.layout import shown_study
from blurbflow.results.study_cells import study_cells
from blurbflow.results.tables import seed_summary
from blurbflow.tasks import get_task

TIE_RULE = "the highest dev score; a tie goes to the lowest seed number"


@dataclass
class Entry:
    """One table entry of a study and the seeds it exports."""

    study: str
    model: str
    task: str
    recipe: str  # as the table shows it (a `choose` label)
    run_recipe: str  # the recipe whose cells these are
    hparams: str | None
    seeds: list[dict]  # per seed: seed, status, dev, test, path (the result.json)
    dev: dict  # mean, std, n over the ok seeds
    test: dict
    exported: list[int] = field(default_factory=list)  # the seeds to export, best first

    def seed(self, number: int) -> dict:
        return next(s for s in self.seeds if s["seed"] == number)


def _number(value) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def best_seed(seeds: list[dict]) -> int | None:
    """The seed to export (see the module's doc); None when no seed is a candidate."""
    candidates = [
        s for s in seeds if s["status"] == "ok" and s["dev"] is not None and math.isfinite(s["dev"])
    ]
    if not candidates:
        return None
    return min(candidates, key=lambda s: (-s["dev"], s["seed"]))["seed"]


def _summary(values: list[float]) -> dict:
    summary = seed_summary(values)
    clean = {k: _number(summary[k]) for k in ("mean", "std")}
    return {**clean, "n": int(summary["n"])}


def study_entries(cells: pd.DataFrame, config: dict, name: str) -> list[Entry]:
    """The study's table entries in its order (models × tasks × shown recipes), each with the
    seeds chosen by its `export_models` (`best_seed` or `all_seeds`)."""
    study = config["studies"][name]
    select = export_plan(study)["select"]
    selected = study_cells(cells, shown_study(study))  # as results/{study}.json selects
    paths = {
        (r.model, r.task, r.recipe, r.hparams, int(r.seed)): r.path
        for r in cells[["model", "task", "recipe", "hparams", "seed", "path"]].itertuples()
        if not pd.isna(r.seed)
    }
    chosen = selected["chosen"] if "chosen" in selected else pd.Series(None, selected.index)
    selected = selected.assign(run_recipe=chosen.where(chosen.notna(), selected["recipe"]))
    entries = []
    for model in study["models"]:
        for task in study["tasks"]:
            for recipe in shown_study(study)["recipes"]:
                rows = selected[
                    (selected["model"] == model)
                    & (selected["task"] == task)
                    & (selected["recipe"] == recipe)
                ].sort_values("seed", kind="stable")
                if rows.empty:
                    continue  # outside the recipe's `recipe_scope`
                entries.append(_entry(name, rows, paths, select))
    return entries


def _entry(name: str, rows: pd.DataFrame, paths: dict, select: str) -> Entry:
    first = rows.iloc[0]
    seeds = [
        {
            "seed": int(r.seed),
            "status": r.status,
            "dev": _number(r.dev),
            "test": _number(r.test),
            "hparams": r.hparams,
            "path": paths.get((r.model, r.task, r.run_recipe, r.hparams, int(r.seed))),
        }
        for r in rows.itertuples()
    ]
    ok = [s for s in seeds if s["status"] == "ok" and s["test"] is not None]
    entry = Entry(
        study=name,
        model=first["model"],
        task=first["task"],
        recipe=first["recipe"],
        run_recipe=first["run_recipe"],
        hparams=None if pd.isna(first["hparams"]) else first["hparams"],
        seeds=seeds,
        dev=_summary([s["dev"] for s in ok if s["dev"] is not None]),
        test=_summary([s["test"] for s in ok]),
    )
    if select == "all_seeds":
        entry.exported = [s["seed"] for s in seeds if best_seed([s]) is not None]
    else:
        best = best_seed(seeds)
        entry.exported = [] if best is None else [best]
    return entry


def metric_names(config: dict, name: str, task: str) -> tuple[str, str]:
    """(dev metric, test metric): the task's own, and the study's `metric` when it shows
    another score."""
    own = get_task(task).metric
    return own, config["studies"][name].get("metric") or own
