"""A recipe's hyperparameter grid, and hyperparameters handed over from a search.

`lr`, `batch_size` and the technique hyperparameters `reinit_top`, `layerwise_lr_decay` and
`freeze_lower` may be lists: their product is the grid, chosen on dev. Each point is one
`{hparams}` folder, `lr3e-05-bs16` plus a tag per listed technique axis (`-reinit2`).

A recipe with `hparams_from: [recipes]` has no grid of its own: it runs once, in the folder
`selected`, with the lr, batch size, technique settings and epoch count that the listed
recipes' cells of the same model and task selected on dev (blurbflow.results.handover). The
workflow's `select_hparams` rule writes that choice to `selection_file(...)`, an input of the
job, so a changed search re-runs the final model (docs/fidelity.md, "Epoch number").
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

from blurbflow.options import CellOptions
from blurbflow.util import paths
from blurbflow.util.errors import ConfigError

GRID_KEYS = ("lr", "batch_size", "reinit_top", "layerwise_lr_decay", "freeze_lower")
# How a technique axis shows in the hparams folder name, only when the recipe lists it: a recipe
# without lists keeps `lr{lr}-bs{bs}`, so existing results stay where they are.
AXIS_TAGS = {"reinit_top": "reinit", "layerwise_lr_decay": "llrd", "freeze_lower": "freeze"}
# What a `hparams_from` recipe takes from the search (None in its options until then).
SELECTED_KEYS = (*GRID_KEYS, "epochs")
SELECTED = "selected"  # the hparams folder of a `hparams_from` recipe
# Keys a `hparams_from` recipe may set differently from the recipes it takes them from.
OWN_KEYS = (*SELECTED_KEYS, "train_on", "select", "hparams_from", "description")


def _as_list(value) -> list:
    return list(value) if isinstance(value, list | tuple) else [value]


def _axis_text(value) -> str:
    if value is None:
        return "off"
    return f"{value:g}" if isinstance(value, int | float) else str(value)


def hparams_name(lr: float, batch_size: int, axes: dict | None = None) -> str:
    """`lr3e-05-bs16`, then `-reinit2`, `-llrd0.8`, `-freezehalf` for the technique axes the
    recipe lists (`axes`: name → this point's value)."""
    tags = "".join(f"-{AXIS_TAGS[k]}{_axis_text(v)}" for k, v in (axes or {}).items())
    return f"lr{lr:g}-bs{batch_size}{tags}"


def grid_points(resolved: dict) -> list[tuple[float, int, dict]]:
    """The recipe's grid: (lr, batch size, listed technique axes → value) per point; one point
    (None, None, {}) for a `hparams_from` recipe."""
    if resolved.get("hparams_from"):
        return [(None, None, {})]
    listed = [k for k in AXIS_TAGS if isinstance(resolved.get(k), list | tuple)]
    points = []
    for lr, bs, *values in itertools.product(
        _as_list(resolved["lr"]),
        _as_list(resolved["batch_size"]),
        *(resolved[k] for k in listed),
    ):
        points.append((lr, bs, dict(zip(listed, values, strict=True))))
    return points


def hparams_sources(resolved: dict) -> list[str]:
    return _as_list(resolved.get("hparams_from") or [])


def selection_file(model: str, task: str, recipe: str) -> str:
    return paths.SELECTION.format(model=model, task=task, recipe=recipe)


# A study's `reference_models` (Gu et al. 2021): only they train the recipe's grid; every other
# model trains the point they chose on dev, in the hparams folder `on-{models joined by +}`.
REFERENCE_PREFIX = "on-"


def reference_name(models) -> str:
    return REFERENCE_PREFIX + "+".join(models)


def reference_file(models, task: str, recipe: str) -> str:
    return paths.REFERENCE.format(models="+".join(models), task=task, recipe=recipe)


# study keys `select: common_epoch` is refused with, and why (results/common_epoch.py)
COMMON_EXCLUDES = {
    "cross_validation": "the evaluation folds keep their last epoch",
    "export_models": "a kept model is its seed's own selected evaluation",
}


def check_selects(studies: dict) -> None:
    """Each study's `select: common_epoch` refuses COMMON_EXCLUDES and adaptive seeds (the
    point would move as seeds are added); studies sharing a reference choice agree on it."""
    for name, study in studies.items():
        if study.get("select") != "common_epoch":
            continue
        where = f"studies.{name}.select: common_epoch"
        for key, why in COMMON_EXCLUDES.items():
            if study.get(key):
                raise ConfigError(f"{where}: not with `{key}` ({why}); remove one of them")
        seeds = study.get("seeds")
        entries = [seeds, *seeds.values()] if isinstance(seeds, dict) else []
        if any(isinstance(entry, dict) and "adaptive" in entry for entry in entries):
            raise ConfigError(f"{where}: not with adaptive seeds (the point moves as they come)")
    reference_selects(studies)


def reference_selects(studies: dict) -> dict[str, str]:
    """Reference selection file → how its study chooses the epoch (`select`, default
    `per_seed`; results/common_epoch.py), for the `select_reference` rule. Studies sharing a
    file share the point it names (their other models' `on-…` cells), so they must agree."""
    found: dict[str, tuple[str, str]] = {}
    for name, study in studies.items():
        models = study.get("reference_models")
        select = study.get("select") or "per_seed"
        for task, recipe in itertools.product(study["tasks"] if models else [], study["recipes"]):
            path = reference_file(models, task, recipe)
            other, chosen = found.setdefault(path, (name, select))
            if chosen != select:
                raise ConfigError(
                    f"studies.{name}.select: {select}, but studies.{other} ({chosen}) shares its "
                    f"reference choice {path}; give both studies the same `select`"
                )
    return {path: select for path, (_, select) in found.items()}


def check_hparams_from(config: dict, name: str, resolve) -> None:
    """A `hparams_from` recipe names other recipes without `hparams_from`, whose options are
    its own but for what the search selects (OWN_KEYS): the final model is the searched recipe
    trained again, e.g. on train+dev. `resolve(config, name)` resolves a recipe."""
    where = f"recipes.{name}.hparams_from"
    final = resolve(config, name)
    for source in hparams_sources(final):
        if source == name:
            raise ConfigError(f"{where}: a recipe cannot take its hyperparameters from itself")
        searched = resolve(config, source)  # names an unknown recipe with the closest one
        if searched.get("hparams_from"):
            raise ConfigError(
                f"{where}: {source!r} takes its own hyperparameters from a search; name the "
                "recipes that search instead"
            )
        differ = sorted(
            k
            for k in set(final) | set(searched)
            if k not in OWN_KEYS and final.get(k) != searched.get(k)
        )
        if differ:
            shown = ", ".join(f"{k} {searched.get(k)!r} vs {final.get(k)!r}" for k in differ[:4])
            raise ConfigError(
                f"{where}: {source!r} differs in {shown}; a final recipe repeats the searched "
                f"recipe but for {', '.join(SELECTED_KEYS)} and train_on (extend the same base)"
            )


def check_sources_run(cells: dict, studies: dict) -> None:
    """Every cell of a `hparams_from` recipe has cells of at least one of its sources for the
    same model and task (in any study), else the study that asks for it is named."""
    ran = {(c.model, c.task, c.recipe) for c in cells.values()}
    for cell in cells.values():
        sources = cell.options.hparams_from
        task = cell.options.hparams_task or cell.task  # cross-validation: the tune fold
        if not sources or any((cell.model, task, s) in ran for s in sources):
            continue
        study = next((n for n, s in studies.items() if cell.recipe in s.get("recipes", [])), "?")
        raise ConfigError(
            f"studies.{study}: recipe {cell.recipe!r} takes its hyperparameters from "
            f"{', '.join(sources)}, which no study runs for {cell.model} on {cell.task}; add "
            f"one of them to studies.{study}.recipes"
        )


def search_jobs(jobs: dict) -> dict[str, list]:
    """selection file → the jobs (blurbflow.config.CellJob) of the search it selects from."""
    wanted: dict[tuple, list[str]] = {}
    found: dict[str, list] = {}
    for job in jobs.values():
        path = job.options.selection_file
        task = job.options.hparams_task or job.task  # cross-validation: the tune fold
        for source in job.options.hparams_from or []:
            paths = wanted.setdefault((job.model, task, source), [])
            if path not in paths:  # the folds of one tune fold share its selection
                paths.append(path)
            found.setdefault(path, [])
    for job in jobs.values():  # a reference selection: the reference models' grid jobs
        if job.options.hparams_models:
            path = job.options.selection_file
            found.setdefault(path, [])
            for model in job.options.hparams_models:
                paths = wanted.setdefault((model, job.task, job.recipe), [])
                if path not in paths:  # every other model of the study shares it
                    paths.append(path)
    for job in jobs.values():
        if job.options.hparams_models:
            continue
        for path in wanted.get((job.model, job.task, job.recipe), []):
            found[path].append(job)
    return found


def with_selection(
    options: CellOptions, root: str | os.PathLike = ".", missing_ok: bool = False
) -> CellOptions:
    """A final cell's options with what its selection file chose (others: unchanged). The
    file is missing before the search ran: an error naming the fix, or with `missing_ok` the
    options as the config gives them (aggregation of a failed run)."""
    if not options.selection_file:
        return options
    path = Path(root, options.selection_file)
    try:
        selection = json.loads(path.read_text())
        chosen, source = selection["options"], selection["from"]
    except FileNotFoundError:
        if missing_ok:
            return options
        raise FileNotFoundError(
            f"{path}: no hyperparameter selection for this "
            f"{', '.join(options.hparams_from or options.hparams_models)} search yet; run the "
            f"`{'select_reference' if options.hparams_models else 'select_hparams'}` step "
            "(snakemake does) after the search"
        ) from None
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path}: not a selection file ({error}); delete it") from None
    # a search hands over its epoch count too; reference models only the grid point
    expected = GRID_KEYS if options.hparams_models else SELECTED_KEYS
    if not isinstance(chosen, dict) or set(chosen) != set(expected):
        found = sorted(chosen) if isinstance(chosen, dict) else chosen
        raise ValueError(f"{path}: options {found}, expected {list(expected)}")
    return options.replace(**chosen, selected_from=f"{source['recipe']}/{source['hparams']}")
