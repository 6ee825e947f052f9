"""`results/{study}.json`: a study's numbers in one machine-readable file (docs/results.md
"Study results"), written by the tables rule beside the tables.

Per table column (model × recipe, a `choose` group by its label) and task: the seeds' test
scores at the hyperparameters selected on dev (as the table selects them), their mean, sample
std, median, IQR, count (every statistic of results/statistics.py's registry) and diverged
seeds; per column the BLURB score (the macro average over task types of the study's tasks, of
the means and of the medians: each statistic that feeds BLURB). With them: the config hash
(sha256 of the canonical JSON of everything in the config the study's cells depend on, see
`study_config`), the blurbflow and package versions and the git commit of the code that wrote
it; `reproduction`: the counts of the study's reproduction verdicts (results/reproduction.py:
entries, published, reproduced, differs, inconclusive, not comparable, not printed). Missing
numbers (no finished seed, NaN) are `null`."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
from pathlib import Path

import pandas as pd

from blurbflow.util.io import write_text_atomic
from blurbflow.metrics.blurb import blurb_label, blurb_score
from blurbflow.util.provenance import REPORT_PACKAGES, git, git_commit, package_version
from blurbflow.results.common_epoch import COMMON, entry_points, study_select
from blurbflow.results.layout import shown_study
from blurbflow.results.reproduction import reproduction_rows, reproduction_summary
from blurbflow.results.statistics import REGISTRY
from blurbflow.results.study_cells import diverged_counts, ordered_tasks, seed_scores, study_cells
from blurbflow.results.tables import seed_summary, study_statistic
from blurbflow.tasks import get_task

FORMAT = 1  # the file's layout version: bumped when a key changes meaning


def _as_list(value) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def used_recipes(config: dict, recipes) -> list[str]:
    """`recipes` and every recipe they build on (`extends`, `hparams_from`, `init_from`)."""
    defined, found, todo = config.get("recipes") or {}, [], list(recipes)
    while todo:
        name = todo.pop(0)
        if name in found or name not in defined:
            continue
        found.append(name)
        recipe = defined[name] or {}
        todo += _as_list(recipe.get("extends")) + _as_list(recipe.get("hparams_from"))
        todo += _as_list((recipe.get("init_from") or {}).get("recipe"))
    return sorted(found)


def study_config(config: dict, name: str) -> dict:
    """The parts of the config the study's cells and table depend on: the study, its models'
    entries (a `--config model=…` candidate's hub id or path included), the recipes it uses and
    those they build on, `defaults`, its tasks' entries, `data` and `code_version`."""
    study = config["studies"][name]
    tasks, recipes = config.get("tasks") or {}, config.get("recipes") or {}
    used = sorted({*study["recipes"], *used_recipes(config, study["recipes"])})
    return {
        "study": study,
        "models": {m: (config.get("models") or {}).get(m) for m in study["models"]},
        "recipes": {r: recipes.get(r) for r in used},
        "defaults": config.get("defaults") or {},
        "tasks": {t: tasks[t] for t in study["tasks"] if t in tasks},
        "data": config.get("data") or {},
        "code_version": str(config.get("code_version", "1")),
    }


def canonical_json(value) -> str:
    """Sorted keys, no spaces, UTF-8 as is: the same config always gives the same text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def study_config_hash(config: dict, name: str) -> str:
    return hashlib.sha256(canonical_json(study_config(config, name)).encode()).hexdigest()


def _number(value) -> float | int | None:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return None
    return value


def _entry(scores: list[float], diverged: int, point: tuple | None = None) -> dict:
    """An entry's statistics and scores; `point`: the common (epoch, step) its seeds report at
    (`select: common_epoch`; the key is left out otherwise)."""
    summary = seed_summary(scores)
    cast = {"float64": lambda v: _number(float(v)), "int64": int}
    entry = {
        **{name: cast[s.dtype](summary[name]) for name, s in REGISTRY.items()},
        "diverged": int(diverged),
        "scores": [_number(float(s)) for s in scores],
    }
    if point is not None:
        entry["evaluation"] = {"epoch": point[0], "step": point[1]}
    return entry


def _blurb(tasks: list[str], entries: dict[str, dict], statistic: str) -> dict:
    def score(stat: str):
        values = {t: entries[t][stat] for t in tasks}
        if any(v is None for v in values.values()):
            return None  # a task without results: no BLURB score (never fewer tasks silently)
        return _number(float(blurb_score(values)))

    blurb = {"label": blurb_label(tasks)}
    blurb.update({name: score(name) for name, s in REGISTRY.items() if s.blurb})
    return {**blurb, "score": blurb[statistic], "n": min(entries[t]["n"] for t in tasks)}


def study_results(
    cells: pd.DataFrame,
    config: dict,
    name: str,
    selected: pd.DataFrame | None = None,
    reproduction: pd.DataFrame | None = None,
) -> dict:
    """The content of `results/{name}.json` (see the module's doc). `selected`: the study's
    cells already through `study_cells` (of its shown study), and `reproduction` its
    `reproduction_rows`, when the caller has them."""
    raw = config["studies"][name]
    study = shown_study(raw)
    selected = study_cells(cells, study) if selected is None else selected
    scores, diverged = seed_scores(selected), diverged_counts(selected)
    common = study_select(study) == COMMON
    points = entry_points(selected) if common else {}
    statistic = study_statistic(study)
    tasks = ordered_tasks(study["tasks"])
    metric = study.get("metric")
    columns = []
    for model, recipe in itertools.product(study["models"], study["recipes"]):
        keys = {task: (model, task, recipe) for task in tasks}
        entries = {
            task: _entry(scores.get(k, []), diverged.get(k, 0), points.get(k, (None, None)))
            if common
            else _entry(scores.get(k, []), diverged.get(k, 0))
            for task, k in keys.items()
        }
        columns.append(
            {
                "model": model,
                "recipe": recipe,
                "tasks": entries,
                "blurb": _blurb(tasks, entries, statistic),
            }
        )
    if reproduction is None:
        reproduction = reproduction_rows(cells, name, raw, selected)
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return {
        "format": FORMAT,
        "study": name,
        "title": raw.get("title", name),
        "statistic": statistic,
        "select": study_select(study),
        "tasks": tasks,
        "metrics": {task: metric or get_task(task).metric for task in tasks},
        "models": {m: (config.get("models") or {}).get(m) for m in study["models"]},
        "columns": columns,
        "reproduction": reproduction_summary(reproduction),
        "config_hash": study_config_hash(config, name),
        "blurbflow_version": package_version("blurbflow"),
        "versions": {p: package_version(p) for p in REPORT_PACKAGES},
        "git_commit": git_commit(),
        "git_dirty": bool(dirty),
    }


def write_study_results(results: dict, path: str | os.PathLike) -> None:
    """Write `results` as indented JSON (strict: no NaN), atomically."""
    text = json.dumps(results, indent=1, ensure_ascii=False, allow_nan=False, default=str)
    write_text_atomic(Path(path), text + "\n")
